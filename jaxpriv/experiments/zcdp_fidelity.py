"""Where the zCDP linear bandits pay for privacy: the regret gap decomposed into noise and exploration.

For each setting of ``zcdp_bandits_linear`` (same instances, same seeds), the regret
gap ``Reg_priv(T) - Reg_nonpriv(T)`` (paired mean ± standard error) of:

* contextual (AdaC-OFUL − RS-OFUL), for each radius (``"robust"``, ``"self_normalized"``):
  ``both`` (AdaC-OFUL), ``noise`` (the noise with RS-OFUL's radius, ``ablation="noise"``),
  ``radius`` (the enlarged radius without the noise, ``ablation="radius"``);
* linear (AdaC-GOPE − GOPE), for each phase-length rule (``"paper"``, ``"joint"``):
  ``both``, ``noise`` (the noise with GOPE's phase lengths), ``exploration`` (the longer
  phases without the noise).

The ablations are diagnostics. The ``noise`` rows keep the noise and so the ρ-zCDP guarantee; the
``radius`` and ``exploration`` rows add no noise and run with ``private=False`` (not private: the
JSON's ``private`` says so per row). Horizons are read off the checkpoints of one
run to the longest horizon (the ``"robust"`` radius uses ``log(T/δ)`` of that horizon).

Usage: ``python -m jaxpriv.experiments.zcdp_fidelity [--full] [--out DIR]`` prints the
markdown tables and writes ``zcdp_fidelity.json``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxpriv import stats
from jaxpriv.bandits.adac_gope import AdaCGOPEParams
from jaxpriv.bandits.adac_oful import AdaCOFULParams, adac_oful
from jaxpriv.bandits.episodic import simulate_gope_phases
from jaxpriv.bandits.gope import GOPEParams
from jaxpriv.bandits.oful import RSOFULParams, rs_oful
from jaxpriv.envs.linear_bandits import ContextualBanditParams, contextual_linear_bandit, sample_linear_instance
from jaxpriv.experiments.zcdp_bandits_linear import CONTEXT_ACTION_BOUND
from jaxpriv.sim import SimParams, sweep

__all__ = ["decompose_contextual", "decompose_linear", "main"]

#: (rule, ablation) rows of each setting's table.
CONTEXTUAL_ROWS = (
    ("robust", None),
    ("robust", "noise"),
    ("robust", "radius"),
    ("self_normalized", None),
    ("self_normalized", "radius"),
)
LINEAR_ROWS = (
    ("paper", None),
    ("paper", "noise"),
    ("paper", "exploration"),
    ("joint", None),
    ("joint", "noise"),
    ("joint", "exploration"),
)


def _gaps(private: np.ndarray, base: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``[G, H]`` paired mean and standard error from ``private [G, S, H]`` and ``base [S, H]`` (shared seeds)."""
    return stats.paired_difference(private, np.asarray(base)[None], axis=1)


def decompose_contextual(
    rhos: Sequence[float], horizons: Sequence[int], seeds: int, key: jax.Array | None = None
) -> dict[str, Any]:
    """AdaC-OFUL − RS-OFUL gaps for each (radius, ablation) of ``CONTEXTUAL_ROWS``; K = 10, d = 3, clipped."""
    key = jax.random.key(0) if key is None else key
    num_actions, dim, t_max = 10, 3, max(horizons)
    env = contextual_linear_bandit(num_actions, dim, random_theta=True)
    ep = ContextualBanditParams(theta=jnp.zeros((dim,), jnp.float32))
    ckpts = sorted(horizons)
    base = sweep(
        rs_oful(num_actions, dim, t_max),
        env,
        SimParams(RSOFULParams(action_bound=CONTEXT_ACTION_BOUND), ep),
        key,
        t_max,
        seeds,
        ckpts,
    ).regret
    lp = AdaCOFULParams(rho=jnp.asarray(rhos, jnp.float32), action_bound=CONTEXT_ACTION_BOUND)
    rows, private = {}, {}
    for radius, ablation in CONTEXTUAL_ROWS:
        learner = adac_oful(num_actions, dim, t_max, radius=radius, ablation=ablation, private=ablation != "radius")
        res = sweep(learner, env, SimParams(lp, ep), key, t_max, seeds, ckpts)
        rows[f"{radius}/{ablation or 'both'}"] = _gaps(res.regret, base)
        private[f"{radius}/{ablation or 'both'}"] = res.private
    return {"nonprivate": np.asarray(base, np.float64).mean(0), "rows": rows, "private": private}


def decompose_linear(
    rhos: Sequence[float], horizons: Sequence[int], seeds: int, key: jax.Array | None = None
) -> dict[str, Any]:
    """AdaC-GOPE − GOPE gaps for each (phase length, ablation) of ``LINEAR_ROWS``; fresh instance per run."""
    key = jax.random.key(0) if key is None else key
    template = sample_linear_instance(jax.random.key(0))
    t_max, ckpts = max(horizons), sorted(horizons)
    base = simulate_gope_phases(
        GOPEParams(template.actions), template, key, t_max, seeds, ckpts, instance="random"
    ).regret
    params = AdaCGOPEParams(template.actions, jnp.asarray(rhos, jnp.float32))
    rows, private = {}, {}
    for rule, ablation in LINEAR_ROWS:
        res = simulate_gope_phases(
            params, template, key, t_max, seeds, ckpts, instance="random", phase_length=rule, ablation=ablation,
            private=ablation != "exploration",
        )  # fmt: skip
        rows[f"{rule}/{ablation or 'both'}"] = _gaps(res.regret, base)
        private[f"{rule}/{ablation or 'both'}"] = res.private
    return {"nonprivate": np.asarray(base, np.float64).mean(0), "rows": rows, "private": private}


def _table(name: str, result: dict[str, Any], rhos: Sequence[float], horizons: Sequence[int]) -> str:
    lines = []
    for h, horizon in enumerate(sorted(horizons)):
        lines.append(f"\n{name}, T = {horizon}, non-private regret {result['nonprivate'][h]:.1f}\n")
        lines.append("| choice / part | " + " | ".join(f"ρ = {r:g}" for r in rhos) + " |")
        lines.append("|---|" + "---:|" * len(rhos))
        for label, (mean, se) in result["rows"].items():
            cells = " | ".join(f"{m:.1f} ± {s:.1f}" for m, s in zip(mean[:, h], se[:, h], strict=True))
            lines.append(f"| {label} | {cells} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    """Print both decomposition tables (reduced scale, or ``--full``) and write them as JSON."""
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--full", action="store_true", help="contextual to T = 10^5 (20 runs), linear to 10^6 (100 runs)")
    ap.add_argument("--setting", default="both", choices=("linear", "contextual", "both"))
    ap.add_argument("--out", default="results/zcdp_fidelity")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    record: dict[str, Any] = {}
    if args.setting in ("contextual", "both"):
        rhos, horizons = (0.1, 1.0, 10.0, 100.0, 1000.0), (10**3, 10**4) + ((10**5,) if args.full else ())
        t0 = time.perf_counter()
        res = decompose_contextual(rhos, horizons, 20)
        print(_table("contextual (AdaC-OFUL − RS-OFUL)", res, rhos, horizons), flush=True)
        record["contextual"] = _record(res, rhos, horizons, 20, time.perf_counter() - t0)
    if args.setting in ("linear", "both"):
        rhos, horizons = (0.01, 0.1, 1.0, 10.0, 100.0, 1000.0), (10**4, 10**5) + ((10**6,) if args.full else ())
        t0 = time.perf_counter()
        res = decompose_linear(rhos, horizons, 100)
        print(_table("linear (AdaC-GOPE − GOPE)", res, rhos, horizons), flush=True)
        record["linear"] = _record(res, rhos, horizons, 100, time.perf_counter() - t0)
    (out / "zcdp_fidelity.json").write_text(json.dumps(record, indent=1))


def _record(res: dict[str, Any], rhos: Sequence[float], horizons: Sequence[int], seeds: int, wall: float):
    return {
        "rhos": list(rhos),
        "horizons": sorted(horizons),
        "seeds": seeds,
        "wall_time_s": round(wall, 1),
        "nonprivate": res["nonprivate"].round(2).tolist(),
        "gap_mean": {k: m.round(2).tolist() for k, (m, _) in res["rows"].items()},
        "gap_stderr": {k: s.round(2).tolist() for k, (_, s) in res["rows"].items()},
        "private": res["private"],  # whether each row's guarantee holds (the no-noise ablations: false)
    }


if __name__ == "__main__":
    main()
