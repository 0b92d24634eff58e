"""AdaP-KLUCB's regret against ε with the lower bound: [N22] (Azize & Basu 2022) Figure 3.

Bernoulli bandit ``μ = (0.8, 0.1, 0.1, 0.1, 0.1)``, AdaP-KLUCB (``α = 3.1``) at ``T = 10⁷`` over a grid of
ε, 20 runs, by the exact episode-level simulator (``bandits.simulate_ucb_episodes``: one compiled call over
the whole ε grid, the same seed keys at every ε, so neighbouring budgets are compared on common random
numbers), beside the problem-dependent lower bound of [N22] Theorem 3 for Bernoulli arms
(``bandits.adap_lower_bound``):

    ``Σ_{Δ_a > 0} Δ_a log T / min(kl(μ_a, μ*), 6 ε Δ_a)``.

The bound has two regimes, and so does the regret: in the high-privacy regime (``6εΔ_a < kl(μ_a, μ*)``)
the bound is ``Σ log T / (6ε)``, inversely proportional to ε; in the low-privacy regime it is the
Lai–Robbins bound ``Σ Δ_a log T / kl(μ_a, μ*)``, independent of ε. They meet at
``ε* = kl(μ_a, μ*) / (6 Δ_a)`` (``≈ 0.27`` here, all sub-optimal arms alike; [N22] reads the transition
at ``ε ≈ 0.3`` from its figure). AdaP-KLUCB's own index has its knee at ``kl / Δ_a ≈ 1.64``, six times
later (``theoretical_knee(constant=1)``): measured at ``T = 10⁷`` (20 runs, 2 CPU cores, 6 s), its regret
halves with each doubling of ε up to ``ε ≈ 2`` and is within 1.3-4× of the non-private run beyond;
the measured knee is ``1.34``. The measured knee is where the regret's high-privacy asymptote
``B/ε`` (``B`` the median of ``ε·Regret`` over the smallest budgets) meets its ε = ∞ plateau ``A`` (the
non-private run: AdaP-KLUCB at ``ε = ∞``, the same episodes and forgetting, no noise): ``ε_knee = B / A``.

Writes ``baselines_epsilon.png``, ``baselines_epsilon_results.npz``, ``baselines_epsilon_settings.json``
and ``baselines_epsilon_table.csv``.
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any, NamedTuple

import jax.numpy as jnp
import numpy as np

from jaxpriv import _validate, bandits, plot
from jaxpriv._base import as_key
from jaxpriv.experiments._outputs import mean_se, write_settings, write_table

__all__ = ["EPSILONS", "MEANS", "EpsilonSweep", "knee", "sweep_epsilon", "theoretical_knee"]

MEANS = (0.8, 0.1, 0.1, 0.1, 0.1)
ALPHA = 3.1
#: The budgets; the last (``inf``) is the non-private limit of the same algorithm.
EPSILONS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 1.0, 2.0, 5.0, 10.0, math.inf)
FULL_HORIZON = 10**7
FULL_SEEDS = 20
REDUCED_HORIZON = 10**5
REDUCED_SEEDS = 20
#: The budgets whose ``ε·Regret`` estimates the high-privacy constant ``B`` (``knee``).
HIGH_PRIVACY = 0.05


class EpsilonSweep(NamedTuple):
    """The outputs of ``sweep_epsilon``.

    Attributes:
      table: one dict per ε: ``epsilon``, ``mean``, ``se`` (final regret over the runs), ``lower_bound``,
        ``ratio`` (mean over the bound), ``diff_to_nonprivate`` and ``diff_to_nonprivate_se`` (paired
        per-seed differences to the ``ε = ∞`` run).
      knee: ``{"measured": ε_knee, "theory": ε*, "index": kl/Δ}`` (module docstring, ``theoretical_knee``).
      files: the written paths: ``figure``, ``npz``, ``json``, ``csv``.
      summary: the JSON record written to ``baselines_epsilon_settings.json`` (with the versions).
    """

    table: list[dict[str, Any]]
    knee: dict[str, float]
    files: dict[str, Path]
    summary: dict[str, Any]


def theoretical_knee(means: tuple[float, ...] = MEANS, constant: float = 6.0) -> float:
    """``max_a kl(μ_a, μ*) / (c Δ_a)``: the ε above which every term ``Δ_a / min(kl, c ε Δ_a)`` is ε-free.

    ``c = 6`` is Theorem 3's lower bound. ``c = 1`` is AdaP-KLUCB's own index: a sub-optimal arm's
    privacy shift ``α log t / (ε n)`` falls below its gap ``Δ_a`` after ``n ≈ α log t / (ε Δ_a)`` samples,
    its KL term after ``n ≈ α log t / kl(μ_a, μ*)``, so privacy stops mattering at ``ε ≈ kl / Δ_a``
    (Theorem 8's ``C₂``, which the paper leaves unspecified, is about 1).
    """
    mu = np.asarray(means, np.float64)
    best = mu.max()
    sub = mu[mu < best]
    kl = sub * np.log(sub / best) + (1 - sub) * np.log((1 - sub) / (1 - best))
    return float(np.max(kl / (constant * (best - sub))))


def knee(epsilons: np.ndarray, finals: np.ndarray, high_privacy: float = HIGH_PRIVACY) -> float:
    """Where ``B/ε`` meets the plateau ``A``: ``B = median(ε·mean regret)`` over ``ε <= high_privacy``,
    ``A`` = the mean regret at ``ε = ∞`` (or at the largest ε if the grid has no ``inf``).

    Args:
      epsilons: ``[G]`` budgets.
      finals: ``[G, seeds]`` final regrets.
      high_privacy: the budgets used for ``B``.
    """
    eps = np.asarray(epsilons, np.float64)
    m = np.asarray(finals, np.float64).mean(axis=1)
    small = np.isfinite(eps) & (eps <= high_privacy)
    if not small.any():
        raise ValueError(f"the grid needs a budget <= {high_privacy}, got {eps.tolist()}")
    plateau = m[~np.isfinite(eps)][0] if (~np.isfinite(eps)).any() else m[np.argmax(eps)]
    return float(np.median(eps[small] * m[small]) / plateau)


def _plot(path: Path, eps: np.ndarray, finals: np.ndarray, lower: np.ndarray, horizon: int, runs: int) -> None:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.4, 4.4), dpi=120)
    ax = fig.add_subplot()
    artists = plot.final_vs_budget(eps, {"AdaP-KLUCB": finals}, bounds={"AdaP-KLUCB": lower}, ax=ax)
    artists[-1].set_label("lower bound ([N22] Thm 3)")
    ax.axvline(theoretical_knee(), color="0.5", lw=0.8, ls="-.", label="ε* = kl / (6Δ) (lower bound's knee)")
    ax.axvline(theoretical_knee(constant=1.0), color="0.3", lw=0.8, ls=":", label="kl / Δ (the index's knee)")
    ax.legend(fontsize=8)
    ax.set_title(f"μ = {MEANS}, T = {horizon:.0e}, {runs} runs (common seed keys); ±1.96 SE", fontsize=8)
    fig.tight_layout()
    fig.savefig(path)


def sweep_epsilon(
    out: str | Path,
    full_scale: bool = False,
    seeds: int | None = None,
    key: int = 0,
    *,
    horizon: int | None = None,
    epsilons: tuple[float, ...] = EPSILONS,
    verbose: bool = False,
) -> EpsilonSweep:
    """Run [N22] Figure 3: AdaP-KLUCB's final regret against ε, with Theorem 3's lower bound.

    Args:
      out: the output folder (created if needed).
      full_scale: ``T = 10⁷``, 20 runs (the paper's). Default: reduced, ``T = 10⁵``, 20 runs.
      seeds: override the number of runs (``>= 2``).
      key: the integer seed of ``jax.random.key``, shared by every ε.
      horizon: override ``T``.
      epsilons: the budgets (``inf`` allowed: the non-private limit); at least one ``<= HIGH_PRIVACY``.
      verbose: print one line per ε.

    Returns:
      An ``EpsilonSweep`` with the table, the knees, the written paths and the JSON summary.

    Examples:
      >>> from jaxpriv.experiments.baselines_epsilon import sweep_epsilon
      >>> res = sweep_epsilon("/tmp/jaxpriv_eps", seeds=4)  # doctest: +SKIP
      >>> round(res.knee["theory"], 3)  # doctest: +SKIP
      0.273
    """
    runs = (FULL_SEEDS if full_scale else REDUCED_SEEDS) if seeds is None else seeds
    if isinstance(runs, bool) or not isinstance(runs, (int, np.integer)) or runs < 2:
        raise ValueError(f"seeds must be an integer >= 2, got {seeds!r}")
    T = (FULL_HORIZON if full_scale else REDUCED_HORIZON) if horizon is None else horizon
    if isinstance(T, bool) or not isinstance(T, (int, np.integer)) or T < 2 * len(MEANS):
        raise ValueError(f"horizon must be an integer >= {2 * len(MEANS)}, got {horizon!r}")
    runs, T = int(runs), int(T)
    eps = np.asarray(epsilons, np.float64)
    if eps.ndim != 1 or not np.all(eps > 0) or not np.any(np.isfinite(eps) & (eps <= HIGH_PRIVACY)):
        raise ValueError(f"epsilons must be > 0 with one <= {HIGH_PRIVACY}, got {epsilons!r}")
    key = _validate.seed("key", key)  # every bit counts: jax.random.key would keep the low 32
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)

    t0 = time.perf_counter()
    params = bandits.AdaPKLUCBParams(epsilon=jnp.asarray(eps, jnp.float32), alpha=ALPHA)
    res = bandits.simulate_ucb_episodes(params, MEANS, as_key(key), T, runs, [T])
    finals = np.asarray(res.regret, np.float64)[..., -1]  # [G, seeds]
    wall = time.perf_counter() - t0
    lower = np.array([bandits.adap_lower_bound(MEANS, T, float(e)) for e in eps])
    free = np.flatnonzero(~np.isfinite(eps))
    table = []
    for g, e in enumerate(eps):
        m, se = mean_se(finals[g])
        row = {"epsilon": float(e), "mean": float(m), "se": float(se), "lower_bound": float(lower[g])}
        row["ratio"] = float(m) / float(lower[g])
        if free.size:
            d, d_se = mean_se(finals[g] - finals[free[0]])
            row["diff_to_nonprivate"], row["diff_to_nonprivate_se"] = float(d), float(d_se)
        table.append(row)
        if verbose:
            print(f"  eps={e:<6g} regret {float(m):10.1f} +- {float(se):7.1f}  lower bound {lower[g]:9.1f}", flush=True)
    knees = {"measured": knee(eps, finals), "theory": theoretical_knee(), "index": theoretical_knee(constant=1.0)}

    files = {
        "figure": out / "baselines_epsilon.png",
        "npz": out / "baselines_epsilon_results.npz",
        "json": out / "baselines_epsilon_settings.json",
        "csv": out / "baselines_epsilon_table.csv",
    }
    _plot(files["figure"], eps, finals, lower, T, runs)
    np.savez_compressed(files["npz"], epsilons=eps, final_regret=finals, lower_bound=lower, means=np.asarray(MEANS))
    write_table(out, files["csv"].name, table)
    summary = {
        "command": "baselines --experiment epsilon",
        "reference": "[N22] Azize & Basu 2022, Figure 3",
        "full_scale": bool(full_scale),
        "horizon": T,
        "runs": runs,
        "key": int(key),
        "common_random_numbers": "one simulate_ucb_episodes call over the eps grid: seed keys split(key(key), runs)",
        "means": list(MEANS),
        "alpha": ALPHA,
        "simulator": "bandits.simulate_ucb_episodes (exact Binomial episodes, Laplace release)",
        "lower_bound": "bandits.adap_lower_bound: sum Delta log T / min(kl(mu_a, mu*), 6 eps Delta) ([N22] Thm 3)",
        "knee": knees,
        "knee_definition": f"B / A: B = median(eps * regret) over eps <= {HIGH_PRIVACY}, A = regret at eps = inf",
        "wall_time_s": wall,
        "table": table,
    }
    write_settings(out, summary, name=files["json"].name)
    return EpsilonSweep(table, knees, files, json.loads(files["json"].read_text()))
