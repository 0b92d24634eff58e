"""AdaC-GOPE against AdaC-GOPE-Var: the seed paper's appendix experiment (thesis Remark C.12, Fig. C.1;
docs/algorithms/baselines.md, 'Decoding choices').

The linear setting of the paper's Section VII: ``K = 10`` actions and θ* drawn on the unit sphere of ``R^3``
(a fresh instance per run), ``δ = 0.001``, ``N(0, 1)`` reward noise, ρ ∈ {0.001, 0.01, 0.1, 1}, horizon
``10⁶``. The two algorithms differ only in where the Gaussian noise goes: AdaC-GOPE adds
``V^{-1/2} N(0, σ_ℓ² I)`` to the whitened least-squares estimate, AdaC-GOPE-Var adds ``N(0, 2/ρ)`` to
each support action's reward sum (same phase lengths, design and elimination). The thesis reports
AdaC-GOPE lower, most visibly at small ρ.

Both run through their exact phase-level simulator (each policy's own fast path,
``bandits.episodic.simulate_episodes(adac_gope(...) / adac_gope_var(...), AdaCGOPEParams(...), ...)``)
over the ρ grid in one compiled call each, on
the same seed keys: seed ``i`` draws the same instance for both, and the same reward sums where their
phases coincide (common random numbers). Plotted: regret against ``t`` per ρ, and the paired
difference Var − AdaC-GOPE with the standard error of the per-seed differences.

Privacy hygiene: ``clip=True`` (default) runs the private-safe algorithms (rewards clipped to
``[-1, 1]``, actions normalised), as the library's linear experiment does.

Writes ``baselines_gope.png``, ``baselines_gope_results.npz``, ``baselines_gope_settings.json``,
``baselines_gope_table.csv``.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxpriv import _validate, plot
from jaxpriv._base import as_key
from jaxpriv.bandits.adac_gope import AdaCGOPEParams, adac_gope
from jaxpriv.bandits.adac_gope_var import adac_gope_var
from jaxpriv.bandits.episodic import simulate_episodes
from jaxpriv.envs.linear_bandits import sample_linear_instance
from jaxpriv.experiments._outputs import mean_se, write_settings, write_table
from jaxpriv.sim import log_checkpoints

__all__ = ["RHOS", "GOPEComparison", "compare_gope"]

RHOS = (0.001, 0.01, 0.1, 1.0)
NUM_ACTIONS, DIM = 10, 3
FULL_HORIZON = 10**6
FULL_SEEDS = 100
REDUCED_HORIZON = 10**5
REDUCED_SEEDS = 50


class GOPEComparison(NamedTuple):
    """The outputs of ``compare_gope``.

    Attributes:
      table: one dict per ρ: ``AdaC-GOPE`` and ``AdaC-GOPE-Var`` final regret mean and SE, ``diff`` /
        ``diff_se`` (Var − AdaC-GOPE, mean and SE of the paired per-seed differences) and ``ratio``.
      files: the written paths: ``figure``, ``npz``, ``json``, ``csv``.
      summary: the JSON record written to ``baselines_gope_settings.json`` (with the versions).
    """

    table: list[dict[str, Any]]
    files: dict[str, Path]
    summary: dict[str, Any]


def _plot(path: Path, steps: np.ndarray, rhos: np.ndarray, base: np.ndarray, var: np.ndarray, runs: int) -> None:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(11.0, 4.4), dpi=110)
    left, right = fig.subplots(1, 2)
    curves = {}
    for g, r in enumerate(rhos):
        curves[f"AdaC-GOPE, ρ = {r:g}"] = base[g]
        curves[f"AdaC-GOPE-Var, ρ = {r:g}"] = var[g]
    plot.regret_vs_t(steps, curves, ax=left)
    for g, r in enumerate(rhos):  # the mean of the per-seed differences, paired-SE band
        plot.price_of_privacy(steps, var[g], base[g], ax=right, label=f"ρ = {r:g}")
    right.axhline(0.0, color="0.4", lw=0.8)
    right.set_ylabel("regret: AdaC-GOPE-Var − AdaC-GOPE (paired)")
    fig.suptitle(f"K = {NUM_ACTIONS}, d = {DIM}, fresh instance per run; {runs} runs (common seed keys)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path)


def compare_gope(
    out: str | Path,
    full_scale: bool = False,
    seeds: int | None = None,
    key: int = 0,
    *,
    horizon: int | None = None,
    rhos: tuple[float, ...] = RHOS,
    clip: bool = True,
    verbose: bool = False,
) -> GOPEComparison:
    """Run AdaC-GOPE and AdaC-GOPE-Var over the ρ grid; write the figure, raw results, settings and table.

    Args:
      out: the output folder (created if needed).
      full_scale: ``T = 10⁶``, 100 runs (the thesis's horizon). Default: reduced, ``T = 10⁵``, 50 runs.
      seeds: override the number of runs (``>= 2``).
      key: the integer seed of ``jax.random.key``, shared by both algorithms.
      horizon: override ``T``.
      rhos: the ρ grid.
      clip: the private-safe setup (default) or the paper's unclipped Gaussian rewards (not private:
        the settings say ``"private": false``).
      verbose: print one line per ρ.

    Returns:
      A ``GOPEComparison`` with the table, the written paths and the JSON summary.

    Examples:
      >>> from jaxpriv.experiments.baselines_gope import compare_gope
      >>> res = compare_gope("/tmp/jaxpriv_gope", seeds=4, horizon=10_000)  # doctest: +SKIP
    """
    runs = (FULL_SEEDS if full_scale else REDUCED_SEEDS) if seeds is None else seeds
    if isinstance(runs, bool) or not isinstance(runs, (int, np.integer)) or runs < 2:
        raise ValueError(f"seeds must be an integer >= 2, got {seeds!r}")
    T = (FULL_HORIZON if full_scale else REDUCED_HORIZON) if horizon is None else horizon
    if isinstance(T, bool) or not isinstance(T, (int, np.integer)) or T < NUM_ACTIONS:
        raise ValueError(f"horizon must be an integer >= {NUM_ACTIONS}, got {horizon!r}")
    runs, T = int(runs), int(T)
    rho = np.asarray(rhos, np.float64)
    if rho.ndim != 1 or rho.size == 0 or not np.all(rho > 0):
        raise ValueError(f"rhos must be > 0, got {rhos!r}")
    key = _validate.seed("key", key)  # every bit counts: jax.random.key would keep the low 32
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)

    template = sample_linear_instance(jax.random.key(0), NUM_ACTIONS, DIM)  # shapes only: redrawn per run
    ckpts = log_checkpoints(T, 40)
    grid = jnp.asarray(rho, jnp.float32)
    key_ = as_key(key)
    t0 = time.perf_counter()
    # clip=False (the paper's unclipped rewards) voids the guarantee: run it as not private, and say so below
    params = AdaCGOPEParams(template.actions, grid)
    res_base, res_var = (
        simulate_episodes(
            factory(NUM_ACTIONS, DIM, T, clip, private=clip), params, template, key_, T, runs, ckpts, instance="random"
        )
        for factory in (adac_gope, adac_gope_var)
    )
    base, var = np.asarray(res_base.regret, np.float64), np.asarray(res_var.regret, np.float64)
    wall = time.perf_counter() - t0
    steps = np.asarray(res_base.steps, np.int64)

    table = []
    for g, r in enumerate(rho):
        bm, bs = mean_se(base[g, :, -1])
        vm, vs = mean_se(var[g, :, -1])
        d, d_se = mean_se(var[g, :, -1] - base[g, :, -1])
        row = {"rho": float(r), "AdaC-GOPE": float(bm), "AdaC-GOPE_se": float(bs)}
        row |= {"AdaC-GOPE-Var": float(vm), "AdaC-GOPE-Var_se": float(vs), "diff": float(d), "diff_se": float(d_se)}
        table.append(row | {"ratio": float(vm) / float(bm)})
        if verbose:
            print(
                f"  rho={r:<6g} AdaC-GOPE {float(bm):9.1f} +- {float(bs):6.1f}"
                f"  Var {float(vm):9.1f} +- {float(vs):6.1f}"
                f"  diff {float(d):8.1f} +- {float(d_se):6.1f}",
                flush=True,
            )

    files = {
        "figure": out / "baselines_gope.png",
        "npz": out / "baselines_gope_results.npz",
        "json": out / "baselines_gope_settings.json",
        "csv": out / "baselines_gope_table.csv",
    }
    _plot(files["figure"], steps, rho, base, var, runs)
    np.savez_compressed(files["npz"], steps=steps, rhos=rho, adac_gope=base, adac_gope_var=var)
    write_table(out, files["csv"].name, table)
    summary = {
        "command": "baselines --experiment gope",
        "reference": "thesis Remark C.12 / Fig. C.1 (A. Azize, PhD thesis, Universite de Lille, 2024)",
        "full_scale": bool(full_scale),
        "horizon": T,
        "runs": runs,
        "key": int(key),
        "clip": bool(clip),
        "private": {"AdaC-GOPE": res_base.private, "AdaC-GOPE-Var": res_var.private},  # false when unclipped
        "setup": f"K = {NUM_ACTIONS}, d = {DIM}, actions and theta* on the sphere per run, delta = 0.001, N(0,1) noise",
        "common_random_numbers": "both simulate_episodes calls use seed keys split(key(key), runs)",
        "simulator": "bandits.episodic.simulate_episodes (exact phase-level: each policy's own fast path)",
        "rhos": rho.tolist(),
        "wall_time_s": wall,
        "table": table,
    }
    write_settings(out, summary, name=files["json"].name)
    return GOPEComparison(table, files, json.loads(files["json"].read_text()))
