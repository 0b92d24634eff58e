"""Window privacy: regret against the window ``W`` and against ``ln T`` (WDP-COCOP, WDP-COCOL and baselines).

``run(out)`` sweeps the window on shared seeds (one compiled call per ``W``, as ``W`` fixes the
tree's shape; the seeds and the ε value are traced), on the quadratic stream
``f_t(x) = (μ/2)||x - z_t||²`` over the probability simplex, and compares

* WDP-COCOP (``oco.wdp_cocop``, one projection per step) and WDP-COCOL (``oco.wdp_cocol``,
  one local-linear-oracle call per step) at every ``W``;
* PFTAL (``oco.pftal``, full-stream ε-DP: ``W = T``) at the same ε;
* the non-private versions: FTAL, the Garber–Hazan online algorithm, plain online Frank–Wolfe.

It writes ``results.npz`` (per-seed regret at every checkpoint, per learner and window),
``settings.json`` (the settings, versions, wall time and a table of final regrets), ``summary.csv``
(that table: final regret, mean ± standard error, per learner and window) and ``window.png``
(left: mean regret at ``T`` against ``W``, PFTAL and the non-private learners as horizontal lines;
right: mean regret against ``t`` on a log axis, one curve per learner and ``W``).
CLI: ``jaxpriv window`` (reduced scale by default, well under a minute on a laptop CPU).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import jax
import numpy as np

import jaxpriv as jp
from jaxpriv import envs, mechanisms, oco, plot, sets
from jaxpriv.experiments._outputs import mean_se, write_settings, write_table


def run(
    out: str | Path,
    horizon: int = 2048,
    dim: int = 5,
    windows: tuple[int, ...] = (2, 16, 128),
    epsilon: float = 1.0,
    noise: str = "gamma",
    delta: float = 1e-5,
    seeds: int = 16,
    key: int = 0,
) -> dict[str, Any]:
    """Run the window sweep and write ``results.npz``, ``settings.json``, ``summary.csv`` and ``window.png``.

    Args:
      out: the output folder (created).
      horizon: ``T``.
      dim: ``d`` of the simplex.
      windows: the windows ``W`` (powers of two; ``W >= T`` is full-stream privacy).
      epsilon: ε of window ε-DP (``"gamma"``) or of window (ε, δ)-DP (``"gaussian"``); PFTAL uses
        the same ε (``"gamma"``) or ρ = ε²/2 (``"gaussian"``, its zCDP tree).
      noise: ``"gamma"`` or ``"gaussian"``.
      delta: δ of the Gaussian option.
      seeds: runs per learner (the same seeds for all).
      key: the base seed.

    Returns:
      The summary written to ``settings.json`` (final mean regret and standard error per run).
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    simplex = sets.simplex(dim)
    env = envs.quadratic_stream(simplex)
    mu, lip = 1.0, 2.0  # ||∇f|| = μ||x - z|| <= μ(||C|| + ||z||) = 2 on the simplex, ||z|| <= 1
    center = np.zeros(dim, np.float32)
    center[: min(dim, 3)] = [0.6, 0.3, 0.1][: min(dim, 3)]
    env_p = envs.QuadraticParams(mu, center, 0.3)
    ckpts = jp.log_checkpoints(horizon, 40)
    family = mechanisms.noise_family(noise, mechanisms.WINDOW_NOISE_FAMILIES)
    noise = family.name  # saved in settings.json and printed as the name
    wdp = oco.WDPParams(epsilon, None if family.pure else delta, lip, mu)  # δ only for (ε, δ)-DP

    def sweep(learner: Any, params: Any) -> np.ndarray:
        r = jp.sweep(learner, env, jp.SimParams(params, env_p), key, horizon, seeds=seeds, checkpoints=ckpts)
        return np.asarray(jax.block_until_ready(r.regret))

    results: dict[str, np.ndarray] = {}
    for w in windows:
        results[f"WDP-COCOP W={w}"] = sweep(oco.wdp_cocop(horizon, simplex, w, noise), wdp)
        results[f"WDP-COCOL W={w}"] = sweep(oco.wdp_cocol(horizon, simplex, w, noise), wdp)
    pftal_noise = family.name  # the whole-stream tree of the same family
    # PFTAL gets exactly its family's budget: ε (Gamma tree) or ρ = ε²/2 (its zCDP Gaussian tree).
    pftal_p = oco.PFTALParams(*((epsilon, None) if family.pure else (None, 0.5 * epsilon**2)), lip, mu)
    results["PFTAL (W=T)"] = sweep(oco.pftal(horizon, simplex, pftal_noise), pftal_p)
    results["FTAL"] = sweep(oco.ftal(simplex, horizon), oco.FTALParams(mu))
    results["Garber-Hazan"] = sweep(oco.garber_hazan(horizon, simplex), oco.GarberHazanParams(lip, mu))
    results["online Frank-Wolfe"] = sweep(oco.online_frank_wolfe(simplex, horizon), oco.OFWParams(mu))

    summary = {}
    for name, regret in results.items():
        mean, se = mean_se(regret, axis=-2)  # over the seeds, at every checkpoint
        summary[name] = {"mean_final_regret": float(mean[-1]), "stderr": float(se[-1])}
    wall = time.perf_counter() - t0
    np.savez(out / "results.npz", steps=np.asarray(ckpts), **{k.replace(" ", "_"): v for k, v in results.items()})
    write_table(out, "summary.csv", [{"learner": name, **row} for name, row in summary.items()])
    settings = {
        "horizon": horizon,
        "dim": dim,
        "windows": list(windows),
        "epsilon": epsilon,
        "noise": noise,
        "delta": delta,
        "seeds": seeds,
        "key": key,
        "loss": "f_t(x) = (mu/2)||x - z_t||^2 on the simplex, mu = 1, z_t ~ N(c, 0.3^2 I) clipped to the unit ball",
        "lipschitz": lip,
        "wall_s": wall,
        "final_regret": summary,
    }
    write_settings(out, settings)
    _figure(out / "window.png", np.asarray(ckpts), results, windows, horizon, dim, epsilon, noise, seeds)
    return summary


def _figure(
    path: Path,
    steps: np.ndarray,
    results: dict[str, np.ndarray],
    windows: tuple[int, ...],
    horizon: int,
    dim: int,
    epsilon: float,
    noise: str,
    seeds: int,
) -> None:
    """``window.png``: mean final regret against ``W`` (left) and mean regret against ``t`` (right), 95% bands."""
    from matplotlib.figure import Figure  # no pyplot: no backend is selected

    fig = Figure(figsize=(11, 4.4), dpi=120)
    left, right = fig.subplots(1, 2)
    finals = {name: np.stack([results[f"{name} W={w}"][:, -1] for w in windows]) for name in ("WDP-COCOP", "WDP-COCOL")}
    plot.final_vs_budget(np.asarray(windows, np.float64), finals, ax=left, xlabel="window W")
    for name in ("PFTAL (W=T)", "FTAL", "Garber-Hazan", "online Frank-Wolfe"):  # no window: horizontal lines
        plot.final_vs_budget([np.inf], {name: results[name][None, :, -1]}, ax=left, xlabel="window W")
    left.set_xscale("log", base=2)
    left.set_ylabel(f"mean regret at T={horizon}")
    left.set_title(f"simplex d={dim}, {noise} noise, eps={epsilon:g}, {seeds} seeds", fontsize=9)
    left.legend(fontsize=7)
    plot.regret_vs_t(steps, results, ax=right, logy=False, ylabel="mean regret")
    for line, name in zip(right.get_lines(), results, strict=True):
        line.set_linestyle("-" if name.startswith("WDP-COCOP") else "--" if name.startswith("WDP-COCOL") else ":")
    right.set_xlabel("t (log scale: a straight line is ln t growth)")
    right.legend(fontsize=6, ncol=2)
    fig.tight_layout()
    fig.savefig(path)
