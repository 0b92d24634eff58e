"""The demo: PFTAL against FTAL and OGD over privacy levels on a strongly convex quadratic stream.

``jaxpriv demo`` calls ``run_demo``; so can a notebook. It writes ``results.npz``
(regret at checkpoints), ``settings.json`` (settings, versions, timings, the samplers'
δ floor per budget and the final-regret table), ``summary.csv`` (the final-regret table: mean ± standard error)
and ``regret.png`` into one folder, and prints the table.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

import jaxpriv as jp
from jaxpriv import _validate, envs, mechanisms, oco, plot, sets, theory
from jaxpriv._base import as_key
from jaxpriv.experiments._outputs import mean_se, write_settings, write_table

DEFAULT_EPSILONS = (0.1, 1.0, 10.0, float("inf"))
OGD, FTAL, PFTAL = "OGD (eta=1/(Ht))", "FTAL", "PFTAL"


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


def _pftal_params(noise: mechanisms.NoiseFamily | str, budgets: Any, lipschitz: float, strength: float) -> Any:
    """PFTAL's params with the grid as the budget of ``noise``'s family: ε (gamma, laplace) or ρ (gaussian)."""
    budget = {mechanisms.noise_family(noise).budget: budgets}
    return oco.PFTALParams(**budget, lipschitz=lipschitz, strong_convexity=strength)


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
      seed: the integer seed in ``[0, 2**64)`` (``jaxpriv._base.as_key``: the key ``jaxpriv.sweep`` makes of it).

    Returns:
      A ``DemoResult``; the files are written under ``out``.

    Raises:
      ValueError: a horizon of ``2**31 - 1`` or more, a seed outside ``[0, 2**64)``, or a budget PFTAL refuses
        (e.g. one whose samplers' δ floor exceeds ``mechanisms.SAMPLER_DELTA_MAX``), before anything runs.
    """
    horizon = _validate.horizon(horizon)
    seed = _validate.seed("seed", seed)
    out = Path(out) if out else Path("jaxpriv-out") / time.strftime("demo-%Y%m%d-%H%M%S")
    out.mkdir(parents=True, exist_ok=True)
    eps = np.array(epsilons, np.float32)
    stream = _stream(dim)
    ckpts = jp.log_checkpoints(horizon, 120)
    print(
        f"jaxpriv {jp.__version__} demo: d={dim}, T={horizon}, {seeds} seeds, eps={[fmt_eps(e) for e in eps]}, "
        f"noise={noise}, backend={jax.default_backend()}"
    )
    print(
        f"  loss stream: f_t(w) = (H/2)||w - z_t||^2, H={stream.strength}, z_t ~ N(c, {stream.spread}^2 I) "
        "clipped to the unit ball"
    )
    learners = {
        OGD: (oco.ogd(stream.ball), oco.OGDParams(stream.strength), 1),
        FTAL: (oco.ftal(stream.ball), oco.FTALParams(stream.strength), 1),
        PFTAL: (
            oco.pftal(horizon, stream.ball, noise),
            _pftal_params(noise, eps, stream.lipschitz, stream.strength),
            len(eps),
        ),
    }
    for learner, params, _ in learners.values():  # every refusal (a budget above the samplers' floor) before any run
        learner.check(params)
    runs = _sweep_learners(learners, stream, as_key(seed), horizon, seeds, ckpts, chunk)
    floors = mechanisms.sampler_settings({name: (lr, p) for name, (lr, p, _) in learners.items()}, len(eps))
    rows = _table(runs.regret, eps, noise, stream, horizon)
    _print_table(rows, horizon, seeds)
    settings = {
        "command": "demo",
        "seed": seed,
        "horizon": horizon,
        "dim": dim,
        "seeds": seeds,
        "epsilon": [float(e) for e in eps],
        "noise": noise,
        "strong_convexity": stream.strength,
        "center": stream.center.tolist(),
        "spread": stream.spread,
        "lipschitz": stream.lipschitz,
        "constraint": "l2_ball(radius=1)",
        "checkpoints": len(ckpts),
        "seconds": runs.seconds,
        "nonfinite_warnings": runs.warnings,
        # the δ the float32 samplers' bounded support adds to PFTAL's guarantee at each budget (null: no tree of
        # those samplers), the stated δ each finite budget was checked against, and the supports
        "sampler_delta_floor": floors["floor"],
        "sampler_delta_max": floors["delta_max"],
        "sampler_support": floors["support"],
        "table": rows,
        "arrays": "results.npz: steps[m], epsilon[E], ogd[1,S,m], ftal[1,S,m], pftal[E,S,m] (regret at steps)",
    }
    steps = np.asarray(ckpts)
    _write(out, steps, eps, runs.regret, rows, settings, f"Quadratic stream, d={dim}, {seeds} seeds (mean, 95% band)")
    return DemoResult(out, steps, runs.regret, rows)


class _Stream(NamedTuple):
    """The demo's loss stream: ``f_t(w) = (H/2)||w - z_t||²`` in the unit ball of dimension ``d``."""

    ball: Any
    env: Any
    params: Any
    strength: float  # H
    center: np.ndarray  # shape=[d], the mean of z_t
    spread: float  # the standard deviation of z_t around the center
    lipschitz: float  # the gradient bound on the ball


def _stream(dim: int) -> _Stream:
    """The quadratic stream of the demo in dimension ``dim``."""
    strength, spread = 1.0, 0.3
    center = np.full(dim, 0.4 / np.sqrt(dim), np.float32)
    ball = sets.l2_ball(dim)
    lipschitz = strength * (ball.radius + ball.radius)  # ||H(w - z)|| <= H(||C|| + ||z||), ||z|| <= 1
    env = envs.quadratic_stream(ball)
    return _Stream(ball, env, envs.QuadraticParams(strength, center, spread), strength, center, spread, lipschitz)


class _Runs(NamedTuple):
    """What ``_sweep_learners`` measured: regret ``[G, S, m]``, seconds and non-finite warnings per learner."""

    regret: dict[str, np.ndarray]
    seconds: dict[str, float]
    warnings: dict[str, str]


def _sweep_learners(
    learners: dict[str, tuple[Any, Any, int]],
    stream: _Stream,
    key: jax.Array,
    horizon: int,
    seeds: int,
    checkpoints: Any,
    chunk: int | None,
) -> _Runs:
    """Sweep every ``(learner, params, grid size)`` on the same seeds (``key``), printing progress.

    The non-private learners (no grid) get a grid axis of length 1 in the returned regret.
    """
    regret, seconds, warnings = {}, {}, {}
    for i, (name, (learner, params, grid)) in enumerate(learners.items(), 1):
        print(f"[{i}/{len(learners)}] {name}: {grid} x {seeds} seeds x T={horizon} ...", end=" ", flush=True)
        t0 = time.perf_counter()
        r = jp.sweep(
            learner, stream.env, jp.SimParams(params, stream.params), key, horizon, seeds=seeds,
            checkpoints=checkpoints, chunk=chunk,
        )  # fmt: skip
        values = np.asarray(jax.block_until_ready(r.regret))
        seconds[name] = time.perf_counter() - t0
        regret[name] = values if name == PFTAL else values[None]
        print(f"{seconds[name]:.1f} s ({grid * seeds * horizon / seconds[name]:.2e} seed-steps/s incl. compile)")
        warning = r.nonfinite_warning()
        if warning:
            warnings[name] = warning
            print(f"    {name}: {warning}", file=sys.stderr)
    return _Runs(regret, seconds, warnings)


def _table(
    regret: dict[str, np.ndarray], eps: np.ndarray, noise: str, stream: _Stream, horizon: int
) -> list[dict[str, Any]]:
    """The final-regret table: one row per learner and ε, mean ± SE over the seeds, Theorem 4's bound for PFTAL."""
    ball, lipschitz, strength = stream.ball, stream.lipschitz, stream.strength
    bound = np.asarray(
        theory.pftal_gamma_regret_bound(horizon, ball.dim, lipschitz, strength, ball.radius, jnp.asarray(eps))
    )
    rows = []
    for name, values in regret.items():
        mean, se = mean_se(values[..., -1], axis=-1)  # final regret over the seeds, per grid point
        for g in range(values.shape[0]):
            row = {
                "algorithm": name,
                "epsilon": fmt_eps(eps[g]) if name == PFTAL else "- (non-private)",
                "mean": float(mean[g]),
                "se": float(se[g]),
            }
            if name == PFTAL and mechanisms.noise_family(noise) is mechanisms.GAMMA:  # Theorem 4: the Gamma tree
                row["theorem4_bound"] = float(bound[g])
            rows.append(row)
    return rows


def _print_table(rows: list[dict[str, Any]], horizon: int, seeds: int) -> None:
    """Print the final-regret table."""
    print(f"\nFinal regret at T={horizon} (mean +- standard error over {seeds} seeds)")
    print(f"{'algorithm':<18} {'epsilon':>16} {'regret':>22} {'Thm 4 bound':>14}")
    for row in rows:
        b = f"{row['theorem4_bound']:.4g}" if "theorem4_bound" in row else ""
        print(f"{row['algorithm']:<18} {row['epsilon']:>16} {row['mean']:>12.4g} +- {row['se']:<7.2g} {b:>14}")


def _write(
    out: Path,
    steps: np.ndarray,
    eps: np.ndarray,
    regret: dict[str, np.ndarray],
    rows: list[dict[str, Any]],
    settings: dict[str, Any],
    title: str,
) -> None:
    """Write ``results.npz``, ``summary.csv``, ``settings.json`` and ``regret.png`` under ``out``."""
    arrays = {name.split(" ")[0].lower(): v for name, v in regret.items()}  # ogd, ftal, pftal
    np.savez_compressed(out / "results.npz", steps=steps, epsilon=eps, **arrays)
    write_table(out, "summary.csv", rows)
    write_settings(out, settings)
    curves = {"OGD": regret[OGD][0], "FTAL": regret[FTAL][0]}
    for g, e in enumerate(eps):
        curves[f"PFTAL eps={fmt_eps(e)}"] = regret[PFTAL][g]
    from matplotlib.figure import Figure  # no pyplot: no backend is selected

    fig = Figure(figsize=(6.4, 4.4), dpi=120)
    ax = fig.add_subplot()
    plot.regret_vs_t(steps, curves, ax=ax)
    ax.get_lines()[0].set_linestyle("--")  # OGD: it can coincide exactly with FTAL
    ax.legend(fontsize=8)
    ax.set_title(title)
    fig.tight_layout()
    fig.savefig(out / "regret.png")
    print(f"\nwrote {out}/results.npz, {out}/settings.json, {out}/summary.csv, {out}/regret.png")
