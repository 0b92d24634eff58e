"""The pure-DP baselines side by side: [N22] (Azize & Basu 2022) Figure 2.

Bernoulli bandit ``μ = (0.75, 0.625, 0.5, 0.375, 0.25)``, ``ε = 1``; the regret against ``t`` of

* AdaP-KLUCB and AdaP-UCB (``α = 3.1``), episode level (``bandits.simulate_ucb_episodes``, exact);
* DP-SE (``β = 1/T``), epoch level (``bandits.simulate_dp_se_epochs``, exact);
* DP-UCB with the binary tree and with Honaker's estimator (Laplace noise, ``α = 3``), step level;
* LDP-UCB (``ε``-local DP, ``α = 3``), step level;
* AdaC-UCB at the matched ``ρ = ε²/2`` (``β = 1``, its paper's experiments), episode level.

Every algorithm runs on the same base key and seed count: seed ``i`` uses ``split(key, seeds)[i]`` in
both the episode-level simulators and ``jaxpriv.sweep`` (common random numbers; the two kinds of
simulator consume their keys differently, so the pairing is exact between the episode-level
algorithms and between the step-level ones, and nominal across the two). The standard error of a
difference to AdaP-KLUCB is that of the per-seed paired differences.

Full scale is the paper's: ``T = 10⁷``, 20 runs. The step-level algorithms (DP-UCB, LDP-UCB) cost
``O(T)`` sequential steps per run: measured on 2 CPU cores at ``T = 10⁶`` with 20 runs, 14.7 s for
DP-UCB (tree), 73.8 s for DP-UCB (Honaker: its online re-estimation costs ``O(log T)`` per step) and
8.3 s for LDP-UCB; at ``T = 10⁷`` that is about 2.5, 12 and 1.5 minutes. Full scale therefore caps
DP-UCB (Honaker) at ``FULL_CAPS`` (``T = 10⁶``) and says so in the settings, the table (its ``T``
column) and the figure's legend; the table compares every algorithm at each horizon used. An
algorithm that is not anytime (DP-SE, and DP-UCB, whose tree depth depends on ``T``) is run again
at the shorter horizon for that comparison rather than read off a checkpoint of its longer run.

Writes ``baselines_regret.png`` (regret against ``t`` on linear and log axes, and each full-horizon
algorithm minus AdaP-KLUCB with the paired-SE band, all through ``jaxpriv.plot``), ``baselines_results.npz``,
``baselines_settings.json`` and ``baselines_table.csv`` (``jaxpriv.experiments._outputs``).

Measured at full scale (2 CPU cores, 412 s, key 0; ratio to AdaP-KLUCB ± its paired delta-method SE):
AdaP-KLUCB 1856 ± 41; AdaP-UCB 1.23 ± 0.04; LDP-UCB 2.03 ± 0.06; DP-SE 2.30 ± 0.07; DP-UCB (tree)
4.29 ± 0.09; DP-UCB (Honaker, ``T = 10⁶``) 3.08 ± 0.08; AdaC-UCB (ρ = ε²/2) 0.21 ± 0.01. [N22]'s
"almost 10×" (AdaP-* below DP-SE and DP-UCB) is not reproduced: not a horizon effect (the regrets'
slopes in ``log t`` over ``10⁵..10⁷``: 147, 196 and 223 for AdaP-KLUCB, AdaP-UCB and DP-SE), not the
privacy cost (without noise, ``ε = ∞``: AdaP-UCB 1166, DP-SE 4078, a ratio of 3.5), and not the
DPBAI code's cumulative-count averaging in DP-SE (a NumPy simulation of it: 4293 ± 31 against
4370 ± 24 without it, 200 runs). The DP-UCB here uses a bonus from the tree's exact variance, tighter
than the papers' ``√8 log^{1.5} T log(2/γ)/(εN)``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

import jaxpriv
from jaxpriv import _validate, bandits, envs, mechanisms, plot
from jaxpriv._base import as_key
from jaxpriv.experiments._outputs import mean_se, write_settings, write_table
from jaxpriv.sim import log_checkpoints

__all__ = [
    "ALGORITHMS",
    "EPSILON",
    "FULL_CAPS",
    "MEANS",
    "Algorithm",
    "Comparison",
    "compare",
]

MEANS = (0.75, 0.625, 0.5, 0.375, 0.25)
EPSILON = 1.0
ALPHA = 3.1  # AdaP-UCB / AdaP-KLUCB, [N22] experiments
DP_UCB_ALPHA = 3.0  # DP-UCB / LDP-UCB: the library's default (their regret bound needs α > 2)
ADAC_BETA = 1.0  # AdaC-UCB: Azize & Basu (SaTML 2024) experiments
REFERENCE = "AdaP-KLUCB"

FULL_HORIZON = 10**7
FULL_SEEDS = 20
#: Full scale's horizon caps (the module docstring gives the measured costs).
FULL_CAPS = {"DP-UCB (Honaker)": 10**6}
REDUCED_HORIZON = 10**4
REDUCED_SEEDS = 20


class Algorithm(NamedTuple):
    """One compared algorithm.

    Attributes:
      name: the label (table, figure).
      level: ``"episode"`` / ``"epoch"`` (exact fast simulators, any horizon) or ``"step"`` (``jaxpriv.sweep``).
      anytime: whether the run does not depend on its horizon (its regret at ``t`` is that of a run to ``t``).
      config: what it runs with (for the settings file).
      run: ``(key, horizon, seeds, checkpoints) -> regret [seeds, m]``.
    """

    name: str
    level: str
    anytime: bool
    config: dict[str, Any]
    run: Callable[[jax.Array, int, int, tuple[int, ...]], np.ndarray]


def _episodes(params: Any) -> Callable[..., np.ndarray]:
    def run(key: jax.Array, horizon: int, seeds: int, checkpoints: tuple[int, ...]) -> np.ndarray:
        return np.asarray(bandits.simulate_ucb_episodes(params, MEANS, key, horizon, seeds, checkpoints).regret)

    return run


def _dp_se(key: jax.Array, horizon: int, seeds: int, checkpoints: tuple[int, ...]) -> np.ndarray:
    params = bandits.DPSEParams(epsilon=EPSILON, beta=None)  # β = 1/T
    return np.asarray(bandits.simulate_dp_se_epochs(params, MEANS, key, horizon, seeds, checkpoints).regret)


def _steps(make: Callable[[int], Any], params: Any) -> Callable[..., np.ndarray]:
    def run(key: jax.Array, horizon: int, seeds: int, checkpoints: tuple[int, ...]) -> np.ndarray:
        K = len(MEANS)
        sim = jaxpriv.SimParams(params, envs.BernoulliParams(jnp.asarray(MEANS, jnp.float32)))
        res = jaxpriv.sweep(make(horizon), envs.bernoulli_bandit(K), sim, key, horizon, seeds, checkpoints)
        return np.asarray(res.regret)

    return run


def _honaker(horizon: int) -> Any:
    return bandits.dp_ucb(len(MEANS), horizon, mechanism=mechanisms.honaker_tree(horizon, 1, "laplace", "replace"))


ALGORITHMS: tuple[Algorithm, ...] = (
    Algorithm(
        "AdaP-KLUCB",
        "episode",
        True,
        {"epsilon": EPSILON, "alpha": ALPHA, "simulator": "bandits.simulate_ucb_episodes (exact Binomial episodes)"},
        _episodes(bandits.AdaPKLUCBParams(epsilon=EPSILON, alpha=ALPHA)),
    ),
    Algorithm(
        "AdaP-UCB",
        "episode",
        True,
        {"epsilon": EPSILON, "alpha": ALPHA, "simulator": "bandits.simulate_ucb_episodes (exact Binomial episodes)"},
        _episodes(bandits.AdaPUCBParams(epsilon=EPSILON, alpha=ALPHA)),
    ),
    Algorithm(
        "AdaC-UCB (rho=eps^2/2)",
        "episode",
        True,
        {
            "rho": EPSILON**2 / 2,
            "beta": ADAC_BETA,
            "privacy": "rho-zCDP (matched to eps-DP by rho = eps^2/2)",
            "simulator": "bandits.simulate_ucb_episodes (exact Binomial episodes)",
        },
        _episodes(bandits.AdaCUCBParams(rho=EPSILON**2 / 2, beta=ADAC_BETA)),
    ),
    Algorithm(
        "DP-SE",
        "epoch",
        False,
        {"epsilon": EPSILON, "beta": "1/T", "simulator": "bandits.simulate_dp_se_epochs (exact Binomial epochs)"},
        _dp_se,
    ),
    Algorithm(
        "DP-UCB (tree)",
        "step",
        False,
        {
            "epsilon": EPSILON,
            "alpha": DP_UCB_ALPHA,
            "mechanism": "binary_tree(T, 1, 'laplace'), node noise Lap(D/eps), D = ceil(log2 T) + 1",
            "bonus": "Bernstein (sub-gamma) with the tree's exact release variance (bandits.dp_ucb_bonus)",
            "simulator": "jaxpriv.sweep (step level)",
        },
        _steps(lambda T: bandits.dp_ucb(len(MEANS), T), bandits.DPUCBParams(epsilon=EPSILON, alpha=DP_UCB_ALPHA)),
    ),
    Algorithm(
        "DP-UCB (Honaker)",
        "step",
        False,
        {
            "epsilon": EPSILON,
            "alpha": DP_UCB_ALPHA,
            "mechanism": "honaker_tree(T, 1, 'laplace', 'replace')",
            "bonus": "Bernstein (sub-gamma) with the mechanism's exact release variance",
            "simulator": "jaxpriv.sweep (step level)",
        },
        _steps(_honaker, bandits.DPUCBParams(epsilon=EPSILON, alpha=DP_UCB_ALPHA)),
    ),
    Algorithm(
        "LDP-UCB",
        "step",
        True,
        {
            "epsilon": EPSILON,
            "alpha": DP_UCB_ALPHA,
            "privacy": "eps-local DP (Laplace on every reward)",
            "simulator": "jaxpriv.sweep (step level)",
        },
        _steps(lambda T: bandits.ldp_ucb(len(MEANS), T), bandits.LDPUCBParams(epsilon=EPSILON, alpha=DP_UCB_ALPHA)),
    ),
)


class Comparison(NamedTuple):
    """The outputs of ``compare``.

    Attributes:
      table: one dict per (algorithm, horizon): ``algorithm``, ``T``, ``mean``, ``se`` (regret at ``T``
        over the runs), ``ratio`` (mean over AdaP-KLUCB's mean at the same ``T``), ``ratio_se`` (delta
        method on the paired runs), ``diff`` and ``diff_se`` (mean and SE of the paired per-seed
        differences to AdaP-KLUCB).
      files: the written paths: ``figure``, ``npz``, ``json``, ``csv``.
      summary: the JSON record written to ``baselines_settings.json`` (with the versions).
    """

    table: list[dict[str, Any]]
    files: dict[str, Path]
    summary: dict[str, Any]


def _rows(
    names: list[str],
    horizons: np.ndarray,
    steps: np.ndarray,
    regret: np.ndarray,
    reruns: dict[tuple[str, int], np.ndarray],
) -> list[dict[str, Any]]:
    """Table rows at every distinct horizon, for the algorithms that reach it (paired with AdaP-KLUCB).

    ``reruns[(name, T)]``: the final regrets of a non-anytime algorithm run again to ``T``.
    """
    ref = names.index(REFERENCE)
    rows = []
    for T in sorted({int(h) for h in horizons}, reverse=True):
        j = int(np.searchsorted(steps, T))
        base = regret[ref, :, j].astype(np.float64)
        base_mean = float(base.mean())
        for a, name in enumerate(names):
            if horizons[a] < T:
                continue
            x = reruns.get((name, T), regret[a, :, j]).astype(np.float64)
            m, se = mean_se(x)
            d, d_se = mean_se(x - base)
            ratio = float(m) / base_mean if base_mean > 0 else float("nan")
            # The ratio's SE by the delta method on paired runs: SE of mean(x - R·base) over mean(base).
            _, r_se = mean_se(x - ratio * base)
            rows.append(
                {
                    "algorithm": name,
                    "T": T,
                    "mean": float(m),
                    "se": float(se),
                    "ratio": ratio,
                    "ratio_se": float(r_se) / base_mean if base_mean > 0 else float("nan"),
                    "diff": float(d),
                    "diff_se": float(d_se),
                }
            )
    return rows


def _plot(path: Path, names: list[str], horizons: np.ndarray, steps: np.ndarray, regret: np.ndarray, runs: int) -> None:
    from matplotlib.figure import Figure  # no pyplot, no backend: jaxpriv.plot draws on the given axes

    fig = Figure(figsize=(15.0, 4.4), dpi=110)
    axes = fig.subplots(1, 3)
    full = {}
    for a, name in enumerate(names):
        cols = steps <= horizons[a]
        label = name if horizons[a] == horizons.max() else f"{name}, T = {int(horizons[a]):.0e}"
        for ax, logy in zip(axes[:2], (False, True), strict=True):
            plot.regret_vs_t(steps[cols], {label: regret[a][:, cols]}, ax=ax, logy=logy)
        if horizons[a] == horizons.max():
            full[name] = regret[a]
    axes[1].set_ylim(bottom=1.0)
    axes[1].get_legend().remove()
    # The differences to AdaP-KLUCB, per seed on the shared seed keys: the band is the paired SE.
    plot.paired_difference(steps, full, REFERENCE, ax=axes[2])
    for ax in axes:
        ax.legend(fontsize=6)
    axes[1].get_legend().remove()
    fig.suptitle(
        f"Bernoulli μ = {MEANS}, ε = {EPSILON:g}; mean ± 1.96 SE over {runs} runs (common seed keys)", fontsize=9
    )
    fig.tight_layout()
    fig.savefig(path)


def compare(
    out: str | Path,
    full_scale: bool = False,
    seeds: int | None = None,
    key: int = 0,
    *,
    horizon: int | None = None,
    step_horizon: int | None = None,
    verbose: bool = False,
) -> Comparison:
    """Run the pure-DP comparison of [N22] Figure 2 and write its figure, raw results, settings and table.

    Args:
      out: the output folder (created if needed).
      full_scale: ``T = 10⁷``, 20 runs, DP-UCB (Honaker) capped at ``FULL_CAPS`` (module docstring).
        Default: reduced, ``T = 10⁴``, 20 runs.
      seeds: override the number of runs (``>= 2``).
      key: the integer seed of ``jax.random.key``, shared by every algorithm.
      horizon: override ``T`` (the exact fast simulators run to it).
      step_horizon: the horizon of every step-level algorithm (at most ``T``; default ``T``, with the
        ``FULL_CAPS`` at full scale).
      verbose: print one line per algorithm.

    Returns:
      A ``Comparison`` with the table, the written paths and the JSON summary.

    Examples:
      >>> from jaxpriv.experiments.baselines import compare
      >>> res = compare("/tmp/jaxpriv_baselines", seeds=4)  # doctest: +SKIP
      >>> [row["algorithm"] for row in res.table][:2]  # doctest: +SKIP
      ['AdaP-KLUCB', 'AdaP-UCB']
    """
    runs = (FULL_SEEDS if full_scale else REDUCED_SEEDS) if seeds is None else seeds
    if isinstance(runs, bool) or not isinstance(runs, (int, np.integer)) or runs < 2:
        raise ValueError(f"seeds must be an integer >= 2, got {seeds!r}")
    runs = int(runs)
    T = (FULL_HORIZON if full_scale else REDUCED_HORIZON) if horizon is None else horizon
    if isinstance(T, bool) or not isinstance(T, (int, np.integer)) or T < 2 * len(MEANS):
        raise ValueError(f"horizon must be an integer >= {2 * len(MEANS)}, got {horizon!r}")
    T = int(T)
    caps = {name: min(T, cap) for name, cap in FULL_CAPS.items()} if full_scale else {}
    if step_horizon is not None:
        if (
            isinstance(step_horizon, bool)
            or not isinstance(step_horizon, (int, np.integer))
            or not len(MEANS) <= step_horizon <= T
        ):
            raise ValueError(f"step_horizon must be an integer in [{len(MEANS)}, horizon={T}], got {step_horizon!r}")
        caps = {alg.name: int(step_horizon) for alg in ALGORITHMS if alg.level == "step"}
    key = _validate.seed("key", key)  # every bit counts: jax.random.key would keep the low 32
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)

    base_key = as_key(key)
    names = [alg.name for alg in ALGORITHMS]
    horizons = np.array([caps.get(alg.name, T) for alg in ALGORITHMS], np.int64)
    steps = np.asarray(sorted(set(log_checkpoints(T, 60)) | {int(h) for h in horizons}), np.int64)
    regret = np.full((len(ALGORITHMS), runs, steps.size), np.nan, np.float32)
    walls = {}
    start = time.perf_counter()
    for a, alg in enumerate(ALGORITHMS):
        t0 = time.perf_counter()
        cols = steps <= horizons[a]
        reg = alg.run(base_key, int(horizons[a]), runs, tuple(int(s) for s in steps[cols]))
        regret[a, :, cols] = np.asarray(reg, np.float32).T
        walls[alg.name] = time.perf_counter() - t0
        if verbose:
            m, se = mean_se(regret[a, :, int(cols.sum()) - 1].astype(np.float64))
            print(
                f"  {alg.name:<24} T={int(horizons[a]):>9} regret {float(m):10.1f} +- {float(se):7.1f}"
                f"  ({walls[alg.name]:.1f} s)",
                flush=True,
            )
    # A non-anytime algorithm compared at a shorter horizon is run again to it, not read off a checkpoint.
    reruns = {}
    for h in sorted({int(h) for h in horizons if h < T}):
        for a, alg in enumerate(ALGORITHMS):
            if not alg.anytime and horizons[a] > h:
                t0 = time.perf_counter()
                reruns[(alg.name, h)] = np.asarray(alg.run(base_key, h, runs, (h,)), np.float32)[:, -1]
                walls[f"{alg.name}, T={h}"] = time.perf_counter() - t0
    wall = time.perf_counter() - start

    table = _rows(names, horizons, steps, regret, reruns)
    files = {
        "figure": out / "baselines_regret.png",
        "npz": out / "baselines_results.npz",
        "json": out / "baselines_settings.json",
        "csv": out / "baselines_table.csv",
    }
    _plot(files["figure"], names, horizons, steps, regret, runs)
    np.savez_compressed(
        files["npz"],
        steps=steps,
        algorithms=np.asarray(names),
        horizons=horizons,
        regret=regret,  # [algorithm, seed, checkpoint]; NaN past an algorithm's horizon
        means=np.asarray(MEANS),
        rerun_algorithms=np.asarray([name for name, _ in reruns], dtype=str),
        rerun_horizons=np.asarray([h for _, h in reruns], np.int64),
        rerun_regret=np.asarray(list(reruns.values()), np.float32).reshape(len(reruns), runs),
    )
    write_table(out, files["csv"].name, table)
    summary = {
        "command": "baselines",
        "reference": "[N22] Azize & Basu 2022, Figure 2",
        "full_scale": bool(full_scale),
        "horizon": T,
        "capped": {
            name: f"run to T = {int(h)}, not {T} (step level; see the module docstring for the measured cost)"
            for name, h in zip(names, horizons, strict=True)
            if h < T
        },
        "reruns": "non-anytime algorithms (DP-SE, DP-UCB) compared at a shorter horizon are run again to it",
        "runs": runs,
        "key": int(key),
        "common_random_numbers": "every algorithm uses seed keys split(key(key), runs)",
        "means": list(MEANS),
        "epsilon": EPSILON,
        "algorithms": {
            alg.name: {"level": alg.level, "horizon": int(h), **alg.config}
            for alg, h in zip(ALGORITHMS, horizons, strict=True)
        },
        "wall_time_s": wall,
        "wall_time_per_algorithm_s": walls,
        "table": table,
    }
    write_settings(out, summary, name=files["json"].name)
    return Comparison(table, files, json.loads(files["json"].read_text()))
