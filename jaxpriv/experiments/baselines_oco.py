"""DP-FTRL against PFTAL on the quadratic and logistic streams, with the tree and with BLT.

Two learners that both follow a leader on privately prefix-summed gradients, differing in the leader:

* PFTAL (Smith & Thakurta 2013, ``oco.pftal``): follow the approximate leader on quadratic surrogates,
  for ``H``-strongly convex losses (``O(log^{2.5} T / ε)`` regret with the tree);
* DP-FTRL (Kairouz et al. 2021, ``oco.dp_ftrl``): a fixed quadratic regulariser, any convex Lipschitz
  loss, its ``λ`` tuned by its regret bound (``O(sqrt T)``-type regret).

Each with two prefix-sum mechanisms at a matched budget:

* the tree: ``binary_tree(T, d, "gamma", "replace")``, ε-DP (Gamma-norm node noise; the papers' tree);
* BLT: ``blt(T, d, "gaussian", "replace")``, ρ-zCDP with ``ρ = ε²/2``. ε-DP implies ``ε²/2``-zCDP
  (Bun & Steinke 2016, Prop. 1.4), so the BLT run gets the zCDP budget that the tree's ε-DP guarantee
  itself provides: the comparison favours neither (a zCDP budget has no exact ε-DP equivalent the other
  way; ρ-zCDP gives ``(ρ + 2 sqrt(ρ log(1/δ)), δ)``-DP only).

Streams (``d = 5``, the unit ``ℓ2`` ball):

* ``"quadratic"``: ``f_t(w) = (H/2)||w - z_t||²``, ``H = 1``, ``z_t ~ N(0.1·1, 0.3² I)`` clipped to the
  ball; ``L = H (||C|| + ||z||) = 2``;
* ``"logistic"``: online logistic regression on synthetic data (``envs.classification_stream``), ``L = 1``;
  not strongly convex: PFTAL is run with an assumed ``H = 0.1`` (as ``benchmarks/mechanisms.py``), i.e.
  outside its theorem; the regret is reported as an upper bound (regret + the comparator's certified gap).

Every learner runs on the same base key and seed count (``jaxpriv.sweep``: the stream's data and the
noise keys of seed ``i`` are the same for the four learners: common random numbers), over the ε grid
in one compiled call each; the table's differences DP-FTRL − PFTAL carry the standard errors of the
per-seed paired differences.

Writes ``baselines_oco.png``, ``baselines_oco_results.npz``, ``baselines_oco_settings.json``,
``baselines_oco_table.csv``.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

import jaxpriv
from jaxpriv import _validate, envs, mechanisms, oco, plot, sets
from jaxpriv._base import as_key
from jaxpriv.experiments._outputs import mean_se, write_settings, write_table
from jaxpriv.sim import log_checkpoints

__all__ = ["EPSILONS", "LEARNERS", "MECHANISMS", "STREAMS", "OCOComparison", "compare_oco"]

DIM = 5
EPSILONS = (0.1, 1.0, 10.0)
#: The ε of the regret-against-t panels.
SHOWN_EPSILON = 1.0
STREAMS = ("quadratic", "logistic")
LEARNERS = ("PFTAL", "DP-FTRL")
MECHANISMS = ("tree (eps-DP)", "BLT (rho=eps^2/2)")
QUAD_H = 1.0
LOGISTIC_ASSUMED_H = 0.1
FULL_HORIZON = 2**13
FULL_SEEDS = 50
REDUCED_HORIZON = 2**10
REDUCED_SEEDS = 20


class OCOComparison(NamedTuple):
    """The outputs of ``compare_oco``.

    Attributes:
      table: one dict per (stream, mechanism, ε): ``PFTAL`` and ``DP-FTRL`` final regret mean and SE, and
        ``diff``/``diff_se``: DP-FTRL − PFTAL, mean and SE of the per-seed paired differences.
      files: the written paths: ``figure``, ``npz``, ``json``, ``csv``.
      summary: the JSON record written to ``baselines_oco_settings.json`` (with the versions).
    """

    table: list[dict[str, Any]]
    files: dict[str, Path]
    summary: dict[str, Any]


def _stream(name: str, horizon: int) -> tuple[Any, Any, float, float]:
    """``(env, env params, L, H for PFTAL)``."""
    ball = sets.l2_ball(DIM)
    if name == "quadratic":
        env = envs.quadratic_stream(ball)
        ep = envs.QuadraticParams(QUAD_H, np.full(DIM, 0.1, np.float32), 0.3)
        return env, ep, QUAD_H * (ball.radius + ball.radius), QUAD_H
    env = envs.classification_stream(ball, horizon, "logistic")
    return env, envs.ClassificationParams(), 1.0, LOGISTIC_ASSUMED_H


def _mechanism(name: str, horizon: int) -> tuple[Any, str]:
    """``(mechanism, budget field)``."""
    if name == MECHANISMS[0]:
        return mechanisms.binary_tree(horizon, DIM, "gamma", "replace"), "epsilon"
    return mechanisms.blt(horizon, DIM, "gaussian", "replace"), "rho"


def _run(learner: str, mech_name: str, stream: str, eps: np.ndarray, key: jax.Array, horizon: int, seeds: int, ckpts):
    env, ep, lip, h = _stream(stream, horizon)
    mech, field = _mechanism(mech_name, horizon)
    budget = jnp.asarray(eps if field == "epsilon" else eps**2 / 2, jnp.float32)
    ball = sets.l2_ball(DIM)
    if learner == "PFTAL":
        lrn, lp = oco.pftal(horizon, ball, mechanism=mech), oco.PFTALParams(lipschitz=lip, strong_convexity=h)
    else:
        lrn, lp = oco.dp_ftrl(horizon, ball, mechanism=mech), oco.DPFTRLParams(lipschitz=lip)
    lp = lp._replace(**{field: budget})
    res = jaxpriv.sweep(lrn, env, jaxpriv.SimParams(lp, ep), key, horizon, seeds, ckpts)
    regret = np.asarray(res.regret, np.float64)
    if res.gap is not None:  # the logistic comparator's certified gap: regret + gap bounds the exact regret
        regret = regret + np.asarray(res.gap, np.float64)
    return regret  # [G, seeds, m]


def _plot(path: Path, steps: np.ndarray, eps: np.ndarray, regret: dict, horizon: int, runs: int) -> None:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(11.0, 8.0), dpi=110)
    axes = fig.subplots(2, 2)
    g = int(np.argmin(np.abs(eps - SHOWN_EPSILON)))
    for col, stream in enumerate(STREAMS):
        curves = {f"{lr}, {m}": regret[(stream, lr, m)][g] for m in MECHANISMS for lr in LEARNERS}
        plot.regret_vs_t(steps, curves, ax=axes[0, col])
        axes[0, col].set_title(f"{stream}: regret, ε = {eps[g]:g}", fontsize=9)
        # DP-FTRL − PFTAL per mechanism against ε: the per-seed differences [G, seeds], so the band is paired
        diffs = {m: regret[(stream, "DP-FTRL", m)][..., -1] - regret[(stream, "PFTAL", m)][..., -1] for m in MECHANISMS}
        plot.final_vs_budget(eps, diffs, ax=axes[1, col], xlabel="ε (BLT at ρ = ε²/2)", logy=False)
        axes[1, col].axhline(0.0, color="0.4", lw=0.8)
        axes[1, col].set_ylabel("final regret: DP-FTRL − PFTAL (paired)")
        axes[1, col].set_title(f"{stream}: paired difference ± 1.96 SE", fontsize=9)
    fig.suptitle(f"d = {DIM}, T = {horizon}, {runs} runs (common seed keys)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path)


def compare_oco(
    out: str | Path,
    full_scale: bool = False,
    seeds: int | None = None,
    key: int = 0,
    *,
    horizon: int | None = None,
    epsilons: tuple[float, ...] = EPSILONS,
    verbose: bool = False,
) -> OCOComparison:
    """Run DP-FTRL and PFTAL with the tree and with BLT on both streams; write figure, results, settings, table.

    Args:
      out: the output folder (created if needed).
      full_scale: ``T = 2¹³``, 50 runs. Default: reduced, ``T = 2¹⁰``, 20 runs.
      seeds: override the number of runs (``>= 2``).
      key: the integer seed of ``jax.random.key``, shared by every learner.
      horizon: override ``T``.
      epsilons: the ε grid (the BLT runs at ``ρ = ε²/2``).
      verbose: print one line per run.

    Returns:
      An ``OCOComparison`` with the table, the written paths and the JSON summary.

    Examples:
      >>> from jaxpriv.experiments.baselines_oco import compare_oco
      >>> res = compare_oco("/tmp/jaxpriv_oco", seeds=4, horizon=256)  # doctest: +SKIP
    """
    runs = (FULL_SEEDS if full_scale else REDUCED_SEEDS) if seeds is None else seeds
    if isinstance(runs, bool) or not isinstance(runs, (int, np.integer)) or runs < 2:
        raise ValueError(f"seeds must be an integer >= 2, got {seeds!r}")
    T = (FULL_HORIZON if full_scale else REDUCED_HORIZON) if horizon is None else horizon
    if isinstance(T, bool) or not isinstance(T, (int, np.integer)) or T < 2:
        raise ValueError(f"horizon must be an integer >= 2, got {horizon!r}")
    runs, T = int(runs), int(T)
    eps = np.asarray(epsilons, np.float64)
    if eps.ndim != 1 or eps.size == 0 or not np.all(np.isfinite(eps) & (eps > 0)):
        raise ValueError(f"epsilons must be finite and > 0, got {epsilons!r}")
    key = _validate.seed("key", key)  # every bit counts: jax.random.key would keep the low 32
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)

    ckpts = log_checkpoints(T, 16)
    base_key = as_key(key)
    regret: dict[tuple[str, str, str], np.ndarray] = {}
    walls = {}
    start = time.perf_counter()
    for stream in STREAMS:
        for mech in MECHANISMS:
            for learner in LEARNERS:
                t0 = time.perf_counter()
                regret[(stream, learner, mech)] = _run(learner, mech, stream, eps, base_key, T, runs, ckpts)
                walls[f"{stream}, {learner}, {mech}"] = time.perf_counter() - t0
                if verbose:
                    m, se = mean_se(regret[(stream, learner, mech)][..., -1], axis=1)
                    cells = ", ".join(f"{a:.1f}+-{b:.1f}" for a, b in zip(m, se, strict=True))
                    print(f"  {stream:<9} {learner:<7} {mech:<18} {cells} ({time.perf_counter() - t0:.1f} s)")
    wall = time.perf_counter() - start
    steps = np.asarray(ckpts, np.int64)

    table = []
    for stream in STREAMS:
        for mech in MECHANISMS:
            p, f = regret[(stream, "PFTAL", mech)][..., -1], regret[(stream, "DP-FTRL", mech)][..., -1]
            for g, e in enumerate(eps):
                pm, ps = mean_se(p[g])
                fm, fs = mean_se(f[g])
                d, d_se = mean_se(f[g] - p[g])
                row = {"stream": stream, "mechanism": mech, "epsilon": float(e)}
                row |= {"PFTAL": float(pm), "PFTAL_se": float(ps), "DP-FTRL": float(fm), "DP-FTRL_se": float(fs)}
                table.append(row | {"diff": float(d), "diff_se": float(d_se)})

    files = {
        "figure": out / "baselines_oco.png",
        "npz": out / "baselines_oco_results.npz",
        "json": out / "baselines_oco_settings.json",
        "csv": out / "baselines_oco_table.csv",
    }
    _plot(files["figure"], steps, eps, regret, T, runs)
    arrays = {f"{s}|{lr}|{m}": r for (s, lr, m), r in regret.items()}  # [G, seeds, m]
    np.savez_compressed(files["npz"], steps=steps, epsilons=eps, **arrays)
    write_table(out, files["csv"].name, table)
    summary = {
        "command": "baselines --experiment oco",
        "reference": "DP-FTRL (Kairouz et al. 2021) against PFTAL (Smith & Thakurta 2013)",
        "full_scale": bool(full_scale),
        "horizon": T,
        "dim": DIM,
        "runs": runs,
        "key": int(key),
        "common_random_numbers": "every learner uses seed keys split(key(key), runs) in jaxpriv.sweep",
        "budget_matching": "tree: eps-DP (Gamma node noise); BLT: rho-zCDP with rho = eps^2/2 (eps-DP implies it)",
        "mechanisms": {
            MECHANISMS[0]: "mechanisms.binary_tree(T, d, 'gamma', 'replace')",
            MECHANISMS[1]: "mechanisms.blt(T, d, 'gaussian', 'replace')",
        },
        "streams": {
            "quadratic": f"H = {QUAD_H}, z ~ N(0.1, 0.3^2) clipped to the unit ball, L = 2",
            "logistic": f"classification_stream(logistic, synthetic), L = 1, PFTAL's assumed H = {LOGISTIC_ASSUMED_H}; "
            "regret + the comparator's certified gap",
        },
        "dp_ftrl_regularization": "tuned by its regret bound (DPFTRLParams.regularization = nan)",
        "epsilons": eps.tolist(),
        "wall_time_s": wall,
        "wall_time_per_run_s": walls,
        "table": table,
    }
    write_settings(out, summary, name=files["json"].name)
    return OCOComparison(table, files, json.loads(files["json"].read_text()))
