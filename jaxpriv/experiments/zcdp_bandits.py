"""Reproduce Section VII of Azize & Basu (SaTML 2024): private vs non-private bandits over ρ and T.

For each setting of Section VII (docs/algorithms/zcdp_bandits.md, 'Decoding choices') the private
algorithm and its non-private counterpart are run on shared seeds, over the union of the paper's ρ grids,
for the longest horizon; the algorithms are anytime, so the regret at every
shorter horizon is read off checkpoints of the same runs. Two figures per
setting, as in the paper's Figure 4 (thesis Figs 5.4–5.6):

* ``<setting>_regret_gap.png``: ``Reg_priv(T) - Reg_nonpriv(T)`` against ρ
  (log axis), one curve per horizon ``T``;
* ``<setting>_price_of_privacy.png``: ``PoP(t) = (Reg_priv - Reg_nonpriv)/Reg_nonpriv``
  against ``t`` (log axis), one curve per ρ;

plus the raw results (``<setting>_results.npz``: per-seed regret at every
checkpoint) and ``<setting>_settings.json`` (the scale, grids, key, versions,
wall time and a summary table).

Settings are registered by name (``register_setting``); this module registers
``"finite"`` (AdaC-UCB vs episodic UCB on the Bernoulli bandit, simulated
episode by episode) and imports ``zcdp_bandits_linear``, which registers
``"linear"`` and ``"contextual"``. ``reproduce(name, out_dir)`` runs the reduced scale,
``full_scale=True`` the paper's (100 runs, ``T`` up to ``10⁷``).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, NamedTuple

import jax.numpy as jnp
import numpy as np

from jaxpriv import _validate, plot, stats
from jaxpriv._base import PRNGKey, as_key
from jaxpriv.bandits.adac_ucb import AdaCUCBParams
from jaxpriv.bandits.episodic import simulate_ucb_episodes
from jaxpriv.bandits.ucb import UCBParams
from jaxpriv.envs.bandits import PAPER_MEANS
from jaxpriv.experiments._outputs import write_settings
from jaxpriv.experiments._zcdp_common import SETTINGS, Scale, Setting, SettingRuns, Simulator, register_setting
from jaxpriv.sim import log_checkpoints

# The registry and its types live in ``_zcdp_common`` (shared with ``zcdp_bandits_linear``); re-exported here.
__all__ = [
    "SETTINGS",
    "Reproduction",
    "Scale",
    "Setting",
    "SettingRuns",
    "Simulator",
    "register_setting",
    "reproduce",
    "reproduce_settings",
]


class Reproduction(NamedTuple):
    """The outputs of ``reproduce``.

    Attributes:
      setting: the setting's name.
      files: paths of the two figures, the ``.npz`` and the ``.json``.
      summary: the JSON record (scale, versions, wall time, gap and PoP tables).
    """

    setting: str
    files: dict[str, Path]
    summary: dict[str, Any]


def _plot(
    path_gap: Path,
    path_pop: Path,
    setting: Setting,
    scale: Scale,
    rhos: np.ndarray,
    steps: np.ndarray,
    gap_runs: np.ndarray,
    pop: np.ndarray,
) -> None:
    """The gap against ρ (one line per horizon, ±2 paired SE) and the price of privacy against ``t`` (per ρ).

    ``gap_runs``: ``[G, S, m]`` per-seed ``Reg_priv - Reg_nonpriv`` (shared seeds): its standard error over the
    seeds is the paired one.
    """
    from matplotlib.figure import Figure  # no pyplot: no backend is selected

    fig = Figure(figsize=(5.2, 3.8), dpi=120)
    ax = fig.add_subplot()
    left = np.array([np.argmin(np.abs(rhos - r)) for r in scale.rhos])
    gaps = {f"T = {T:.0e}": gap_runs[left, :, int(np.searchsorted(steps, T))] for T in scale.horizons}
    plot.final_vs_budget(rhos[left], gaps, ax=ax, band=2.0, xlabel="ρ (zCDP budget)", logy=False)
    ax.axhline(0.0, color="0.6", lw=0.8)
    ax.set_ylabel("Reg_priv(T) − Reg_nonpriv(T) (±2 paired SE)")
    ax.set_title(f"{setting.private_name} − {setting.nonprivate_name}", fontsize=9)
    fig.suptitle(setting.title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path_gap)

    fig = Figure(figsize=(5.2, 3.8), dpi=120)
    ax = fig.add_subplot()
    cols = steps <= scale.pop_horizon
    for r in scale.pop_rhos:
        g = int(np.argmin(np.abs(rhos - r)))
        ax.plot(steps[cols], pop[g, cols], label=f"ρ = {r:g}")
    ax.axhline(0.0, color="0.6", lw=0.8)
    ax.set_xscale("log")
    ax.set_xlabel("t")
    ax.set_ylabel("PoP = (Reg_priv − Reg_nonpriv) / Reg_nonpriv", fontsize=8)
    ax.set_title(f"{setting.private_name} vs {setting.nonprivate_name}", fontsize=9)
    ax.legend(fontsize=8)
    fig.suptitle(setting.title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path_pop)


def reproduce(
    setting: str,
    out_dir: str | Path,
    full_scale: bool = False,
    seeds: int | None = None,
    key: int = 0,
) -> Reproduction:
    """Run one setting of the paper's Section VII and write its figures and raw results.

    Args:
      setting: a registered setting: ``"finite"`` (AdaC-UCB vs episodic UCB), and
        ``"linear"`` / ``"contextual"`` where registered.
      out_dir: the output folder (created if needed).
      full_scale: the paper's scale (100 runs, ``T`` up to ``10⁷``) instead of the reduced one.
      seeds: override the number of runs.
      key: the integer seed of ``jax.random.key``; private and non-private runs share it.

    Returns:
      A ``Reproduction`` with the written paths and the JSON summary.

    Examples:
      >>> from jaxpriv.experiments.zcdp_bandits import reproduce
      >>> out = reproduce("finite", "/tmp/jaxpriv_finite", seeds=4)  # doctest: +SKIP
      >>> sorted(out.files)  # doctest: +SKIP
      ['json', 'npz', 'pop', 'regret_gap']
    """
    if setting not in SETTINGS:
        raise ValueError(f"setting must be one of {tuple(sorted(SETTINGS))}, got {setting!r}")
    spec = SETTINGS[setting]
    scale = spec.full if full_scale else spec.reduced
    runs = scale.runs if seeds is None else int(seeds)
    if runs < 2:
        raise ValueError(f"seeds must be an integer >= 2, got {seeds!r}")
    key = _validate.seed("key", key)  # every bit counts: jax.random.key would keep the low 32
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)

    rhos = np.array(sorted(set(scale.rhos) | set(scale.pop_rhos)), np.float64)
    horizon = max(max(scale.horizons), scale.pop_horizon)
    checkpoints = tuple(sorted(set(log_checkpoints(horizon, 60)) | set(scale.horizons) | {scale.pop_horizon}))

    start = time.perf_counter()
    res = spec.simulate(as_key(key), rhos, horizon, checkpoints, runs)
    wall = time.perf_counter() - start

    steps = np.asarray(res.steps, np.int64)
    priv = np.asarray(res.private, np.float64)
    base = np.asarray(res.nonprivate, np.float64)
    # The private and non-private runs share their seed keys (common random numbers): the gap's
    # standard error is that of the paired differences, not of two independent means (which, with
    # regrets far larger than their gap, gave error bars of +-13,000 around gaps of tens).
    gap_runs = priv - base[None]  # [G, S, m]
    gap, gap_se = stats.paired_difference(priv, base[None], axis=1)
    base_mean = base.mean(0)
    with np.errstate(divide="ignore", invalid="ignore"):
        pop = np.where(base_mean[None] > 0, gap / base_mean[None], np.nan)

    files = {
        "regret_gap": out / f"{setting}_regret_gap.png",
        "pop": out / f"{setting}_price_of_privacy.png",
        "npz": out / f"{setting}_results.npz",
        "json": out / f"{setting}_settings.json",
    }
    _plot(files["regret_gap"], files["pop"], spec, scale, rhos, steps, gap_runs, pop)
    np.savez_compressed(
        files["npz"],
        steps=steps,
        rhos=rhos,
        private_regret=priv.astype(np.float32),
        nonprivate_regret=base.astype(np.float32),
        horizons=np.asarray(scale.horizons),
        pop_rhos=np.asarray(scale.pop_rhos),
    )

    def col(t: int) -> int:
        return int(np.searchsorted(steps, t))

    summary = {
        "setting": setting,
        "title": spec.title,
        "private": spec.private_name,
        "nonprivate": spec.nonprivate_name,
        "full_scale": bool(full_scale),
        "runs": runs,
        "key": int(key),
        "rhos": [float(r) for r in rhos],
        "horizons": [int(t) for t in scale.horizons],
        "pop_rhos": [float(r) for r in scale.pop_rhos],
        "pop_horizon": int(scale.pop_horizon),
        "config": spec.config,
        "wall_time_s": wall,
        "nonprivate_regret": {str(T): float(base_mean[col(T)]) for T in scale.horizons},
        "regret_gap": {
            f"rho={r:g}": {str(T): [float(gap[g, col(T)]), float(gap_se[g, col(T)])] for T in scale.horizons}
            for g, r in enumerate(rhos)
        },
        "price_of_privacy": {
            f"rho={r:g}": {str(T): float(pop[g, col(T)]) for T in sorted(set(scale.horizons) | {scale.pop_horizon})}
            for g, r in enumerate(rhos)
        },
    }
    write_settings(out, summary, name=files["json"].name)
    return Reproduction(setting, files, json.loads(files["json"].read_text()))  # with the versions it wrote


def reproduce_settings(
    names: list[str] | str = "all",
    out_dir: str | Path | None = None,
    full_scale: bool = False,
    seeds: int | None = None,
    key: int = 0,
) -> list[Reproduction]:
    """``reproduce`` for several settings (``"all"``: every registered one), printing progress (``jaxpriv bandits``).

    Args:
      names: a setting name, a list of names, or ``"all"``.
      out_dir: the output folder (default ``jaxpriv-out/bandits-<time>``).
      full_scale, seeds, key: as in ``reproduce``.

    Returns:
      One ``Reproduction`` per setting.
    """
    out = Path(out_dir) if out_dir else Path("jaxpriv-out") / time.strftime("bandits-%Y%m%d-%H%M%S")
    if names == "all":
        names = sorted(SETTINGS)
    elif isinstance(names, str):
        names = [names]
    scale = "full (the paper's)" if full_scale else "reduced"
    reps = []
    for i, name in enumerate(names, 1):
        print(f"[{i}/{len(names)}] setting {name!r}, {scale} scale ...", flush=True)
        t0 = time.perf_counter()
        rep = reproduce(name, out, full_scale=full_scale, seeds=seeds, key=key)
        print(f"    {time.perf_counter() - t0:.1f} s: " + ", ".join(str(p) for p in rep.files.values()), flush=True)
        reps.append(rep)
    return reps


# --- the finite-armed setting (Section VII) -------------------------------------------------------------

FINITE_BETA = 1.0  # the paper's experiments (thesis p.125)


def _simulate_finite(
    key: PRNGKey, rhos: np.ndarray, horizon: int, checkpoints: tuple[int, ...], seeds: int
) -> SettingRuns:
    """AdaC-UCB over the ρ grid and episodic UCB, episode by episode, on the same seed keys."""
    priv = simulate_ucb_episodes(
        AdaCUCBParams(rho=jnp.asarray(rhos, jnp.float32), beta=FINITE_BETA),
        PAPER_MEANS,
        key,
        horizon,
        seeds,
        checkpoints,
    )
    base = simulate_ucb_episodes(UCBParams(beta=FINITE_BETA), PAPER_MEANS, key, horizon, seeds, checkpoints)
    return SettingRuns(np.asarray(priv.steps), np.asarray(priv.regret), np.asarray(base.regret))


FINITE = register_setting(
    Setting(
        name="finite",
        title="Bernoulli bandit, μ = (0.75, 0.625, 0.5, 0.375, 0.25)",
        private_name="AdaC-UCB",
        nonprivate_name="UCB (adaptive episodes, forgetting)",
        full=Scale(
            rhos=(0.01, 0.1, 1.0, 10.0, 100.0, 500.0, 1000.0),
            horizons=(10**5, 10**6, 10**7),
            pop_rhos=(0.1, 0.5, 1.0),
            pop_horizon=10**7,
            runs=100,
        ),
        reduced=Scale(
            rhos=(0.01, 0.1, 1.0, 10.0, 100.0, 500.0, 1000.0),
            horizons=(10**4, 10**5, 10**6),
            pop_rhos=(0.1, 0.5, 1.0),
            pop_horizon=10**6,
            runs=100,
        ),
        simulate=_simulate_finite,
        config={
            "means": list(PAPER_MEANS),
            "beta": FINITE_BETA,
            "simulator": "episode-level (exact Binomial episode sums), jaxpriv.bandits.episodic.ucb",
            "index": "eq. (5.4), log(t_l); noise once per closed episode; n_a = samples in the last episode",
            "clip_rewards": "Bernoulli rewards lie in [0, 1]: clipping is a no-op",
        },
    )
)


# Registers "linear" and "contextual" in the shared registry, after "finite" (the registry's order).
from jaxpriv.experiments import zcdp_bandits_linear  # noqa: E402, F401
