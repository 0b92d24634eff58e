"""The demo: PFTAL against FTAL and OGD over privacy levels on a strongly convex quadratic stream.

``jaxpriv demo`` calls ``run_demo``; so can a notebook. It writes ``results.npz``
(regret at checkpoints), ``settings.json`` (settings, versions, timings and the
final-regret table) and ``regret.png`` into one folder, and prints the table.
"""

from __future__ import annotations

import json
import platform
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

DEFAULT_EPSILONS = (0.1, 1.0, 10.0, float("inf"))


class DemoResult(NamedTuple):
    """What ``run_demo`` returns.

    Attributes:
      out: the output folder.
      steps: ``[m]``, the checkpoints.
      regret: name -> ``[G, S, m]`` regret (``G = len(epsilons)`` for PFTAL, 1 for the non-private learners).
      rows: the final-regret table (one dict per algorithm and ε), as in ``settings.json``.
    """

    out: Path
    steps: np.ndarray
    regret: dict[str, np.ndarray]
    rows: list[dict[str, Any]]


def fmt_eps(e: float) -> str:
    """``"inf"`` or the shortest ``%g`` form."""
    return "inf" if np.isinf(e) else f"{e:g}"


def _pftal_params(noise: str, budgets: Any, lipschitz: float, strength: float) -> Any:
    """PFTAL's params with the grid as the budget of ``noise``'s family: ε (gamma, laplace) or ρ (gaussian)."""
    from jaxpriv import oco

    if noise == "gaussian":
        return oco.PFTALParams(rho=budgets, lipschitz=lipschitz, strong_convexity=strength)
    return oco.PFTALParams(epsilon=budgets, lipschitz=lipschitz, strong_convexity=strength)


def run_demo(
    out: str | Path | None = None,
    horizon: int = 2**14,
    seeds: int = 100,
    dim: int = 3,
    epsilons: Sequence[float] = DEFAULT_EPSILONS,
    noise: str = "gamma",
    chunk: int | None = None,
    seed: int = 0,
) -> DemoResult:
    """PFTAL (over ``epsilons``) vs FTAL vs OGD on ``f_t(w) = (H/2)||w - z_t||²`` in the unit ball.

    Args:
      out: the output folder (default ``jaxpriv-out/demo-<time>``).
      horizon: ``T``.
      seeds: the number of runs (shared by every learner and ε: common random numbers).
      dim: ``d``.
      epsilons: PFTAL's ε grid (ρ for ``noise="gaussian"``); ``inf`` is the non-private limit.
      noise: the tree's noise family.
      chunk: run the seeds in batches of this size.
      seed: the integer seed of ``jax.random.key``.

    Returns:
      A ``DemoResult``; the files are written under ``out``.
    """
    import jax
    import jax.numpy as jnp

    import jaxpriv as jp
    from jaxpriv import envs, oco, plot, sets, theory

    out = Path(out) if out else Path("jaxpriv-out") / time.strftime("demo-%Y%m%d-%H%M%S")
    out.mkdir(parents=True, exist_ok=True)
    T, d, S = horizon, dim, seeds
    eps = np.array(epsilons, np.float32)
    H, spread = 1.0, 0.3
    center = np.full(d, 0.4 / np.sqrt(d), np.float32)
    ball = sets.l2_ball(d)
    env = envs.quadratic_stream(ball)
    env_p = envs.QuadraticParams(H, center, spread)
    lipschitz = H * (ball.radius + ball.radius)  # ||H(w - z)|| <= H(||C|| + ||z||), ||z|| <= 1
    ckpts = jp.log_checkpoints(T, 120)
    key = jax.random.key(seed)
    print(
        f"jaxpriv {jp.__version__} demo: d={d}, T={T}, {S} seeds, eps={[fmt_eps(e) for e in eps]}, "
        f"noise={noise}, backend={jax.default_backend()}"
    )
    print(f"  loss stream: f_t(w) = (H/2)||w - z_t||^2, H={H}, z_t ~ N(c, {spread}^2 I) clipped to the unit ball")

    runs = {
        "OGD (eta=1/(Ht))": (oco.ogd(ball), oco.OGDParams(H)),
        "FTAL": (oco.ftal(ball), oco.FTALParams(H)),
        "PFTAL": (oco.pftal(T, ball, noise), _pftal_params(noise, eps, lipschitz, H)),
    }
    results, timings, warnings_seen = {}, {}, {}
    for i, (name, (learner, params)) in enumerate(runs.items(), 1):
        grid = len(eps) if name == "PFTAL" else 1
        print(f"[{i}/{len(runs)}] {name}: {grid} x {S} seeds x T={T} ...", end=" ", flush=True)
        t0 = time.perf_counter()
        r = jp.sweep(learner, env, jp.SimParams(params, env_p), key, T, seeds=S, checkpoints=ckpts, chunk=chunk)
        regret = np.asarray(jax.block_until_ready(r.regret))
        timings[name] = time.perf_counter() - t0
        results[name] = regret if name == "PFTAL" else regret[None]
        print(f"{timings[name]:.1f} s ({grid * S * T / timings[name]:.2e} seed-steps/s incl. compile)")
        warning = r.nonfinite_warning()
        if warning:
            warnings_seen[name] = warning
            print(f"    {name}: {warning}", file=sys.stderr)

    bound = np.asarray(theory.pftal_gamma_regret_bound(T, d, lipschitz, H, ball.radius, jnp.asarray(eps)))
    rows = []
    for name, regret in results.items():
        for g in range(regret.shape[0]):
            e = eps[g] if name == "PFTAL" else np.inf
            final = regret[g, :, -1].astype(np.float64)
            row = {
                "algorithm": name,
                "epsilon": fmt_eps(e) if name == "PFTAL" else "- (non-private)",
                "mean": float(final.mean()),
                "se": float(final.std(ddof=1) / np.sqrt(S)),
            }
            if name == "PFTAL" and noise == "gamma":
                row["theorem4_bound"] = float(bound[g])
            rows.append(row)

    print(f"\nFinal regret at T={T} (mean +- standard error over {S} seeds)")
    print(f"{'algorithm':<18} {'epsilon':>16} {'regret':>22} {'Thm 4 bound':>14}")
    for row in rows:
        b = f"{row['theorem4_bound']:.4g}" if "theorem4_bound" in row else ""
        print(f"{row['algorithm']:<18} {row['epsilon']:>16} {row['mean']:>12.4g} +- {row['se']:<7.2g} {b:>14}")

    steps = np.asarray(ckpts)
    np.savez_compressed(
        out / "results.npz", steps=steps, epsilon=eps, **{name.split(" ")[0].lower(): v for name, v in results.items()}
    )
    settings = {
        "command": "demo",
        "seed": seed,
        "horizon": T,
        "dim": d,
        "seeds": S,
        "epsilon": [float(e) for e in eps],
        "noise": noise,
        "strong_convexity": H,
        "center": center.tolist(),
        "spread": spread,
        "lipschitz": lipschitz,
        "constraint": "l2_ball(radius=1)",
        "checkpoints": len(ckpts),
        "jaxpriv": jp.__version__,
        "jax": jax.__version__,
        "backend": jax.default_backend(),
        "python": platform.python_version(),
        "seconds": timings,
        "nonfinite_warnings": warnings_seen,
        "table": rows,
        "arrays": "results.npz: steps[m], epsilon[E], ogd[1,S,m], ftal[1,S,m], pftal[E,S,m] (regret at steps)",
    }
    (out / "settings.json").write_text(json.dumps(settings, indent=2))
    curves = {"OGD": (steps, results["OGD (eta=1/(Ht))"][0]), "FTAL": (steps, results["FTAL"][0])}
    for g, e in enumerate(eps):
        curves[f"PFTAL eps={fmt_eps(e)}"] = (steps, results["PFTAL"][g])
    plot.regret_curves(curves, out / "regret.png", title=f"Quadratic stream, d={d}, {S} seeds (mean, 95% band)")
    print(f"\nwrote {out}/results.npz, {out}/settings.json, {out}/regret.png")
    return DemoResult(out, steps, results, rows)
