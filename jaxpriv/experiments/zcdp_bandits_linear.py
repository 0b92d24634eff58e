"""The paper's §VII experiments for the linear and contextual settings (thesis §5.5.2).

Two settings, each comparing the private algorithm with its non-private
counterpart on shared seeds (common random numbers) over a grid of ρ:

* ``"linear"``: AdaC-GOPE vs GOPE on ``K = 10`` actions and θ* drawn on the unit
  sphere of ``R^3`` (a fresh instance per run), ``δ = 0.001``, ``N(0, 1)`` reward
  noise; simulated by the exact episode-level fast path (``jaxpriv.bandits.episodic.gope``), one
  scan step per phase. GOPE does not use ``T``, so one run to the longest
  horizon gives the regret at every shorter horizon exactly.
* ``"contextual"``: AdaC-OFUL vs RS-OFUL, ``K = 10`` fresh actions per round
  ``~ N((1/√3)·1, 0.1·I_3)``, θ* on the sphere per run, ``C = 1``, ``λ = 0.1``,
  ``δ = 0.001``, ``N(0, 1)`` noise; simulated step by step (``jaxpriv.sweep``),
  one run per horizon of the left panel (the ``"robust"`` radius uses ``log(T/δ)``); the
  right panel uses the checkpoints of the longest run.

Each setting gives the paper's two views: the regret gap
``Reg_priv(T) - Reg_nonpriv(T)`` against ρ for several horizons, and the price
of privacy ``PoP(t) = (Reg_priv(t) - Reg_nonpriv(t)) / Reg_nonpriv(t)`` against
``t`` for several ρ; figures as PNG, raw results as ``.npz`` and a ``.json`` summary.

Scale: ``full=True`` is the paper's (100 runs; horizons and ρ grids read from the thesis's figures,
docs/algorithms/zcdp_bandits.md, 'Decoding choices');
the default reduced scale runs on a 2-core CPU in a few minutes.

Privacy hygiene: ``clip=True`` (default) runs the private-safe algorithms
(rewards clipped to ``[-1, 1]``, actions normalised); ``clip=False`` is the
paper's unclipped Gaussian setup, run with ``private=False`` (the settings say
``"private": false``: the guarantee needs bounded rewards).
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxpriv import plot, stats
from jaxpriv.bandits.adac_gope import AdaCGOPEParams
from jaxpriv.bandits.adac_oful import AdaCOFULParams, adac_oful
from jaxpriv.bandits.episodic import simulate_gope_phases
from jaxpriv.bandits.gope import GOPEParams
from jaxpriv.bandits.oful import RSOFULParams, rs_oful
from jaxpriv.envs.linear_bandits import ContextualBanditParams, contextual_linear_bandit, sample_linear_instance
from jaxpriv.experiments import _zcdp_common as common
from jaxpriv.experiments._outputs import write_settings
from jaxpriv.sim import SimParams, log_checkpoints, sweep

__all__ = ["SETTINGS", "SettingConfig", "SettingResult", "contextual_config", "linear_config", "run_setting"]

#: The contextual actions' public norm bound used by the private-safe run (clipping):
#: ``‖a‖ <= 1 + sqrt(0.1)·4.75 ≈ 2.5`` except with probability ~1e-4 per action.
CONTEXT_ACTION_BOUND = 2.5


class SettingConfig(NamedTuple):
    """One setting's experiment (Section VII).

    Attributes:
      name: ``"linear"`` or ``"contextual"``.
      rhos: the ρ grid of the left panel.
      horizons: the horizons ``T`` of the left panel.
      pop_rhos: the ρ values of the right panel (a subset of ``rhos``).
      pop_horizon: the last ``t`` of the right panel.
      seeds: runs per point.
      clip: the privacy-hygiene switch.
      radius: AdaC-OFUL's radius (``adac_oful(radius=...)``; contextual setting).
      phase_length: AdaC-GOPE's phase-length rule (``adac_gope(phase_length=...)``; linear setting).
    """

    name: str
    rhos: tuple[float, ...]
    horizons: tuple[int, ...]
    pop_rhos: tuple[float, ...]
    pop_horizon: int
    seeds: int
    clip: bool = True
    radius: str = "self_normalized"
    phase_length: str = "joint"


def linear_config(full: bool = False, seeds: int | None = None, clip: bool = True) -> SettingConfig:
    """Spec §6.2/§6.4, Fig 5.5: ρ ∈ {0.01, 0.1, 0.5, 1, 10, 100, 1000}, T ∈ {10⁴, 10⁵, 10⁶}, PoP to 10⁷.

    Reduced: 30 runs, PoP to 10⁶ (the fast path makes even the full scale cheap).
    """
    rhos = (0.01, 0.1, 0.5, 1.0, 10.0, 100.0, 1000.0)
    pop = (0.01, 0.1, 1.0)
    if full:
        return SettingConfig("linear", rhos, (10**4, 10**5, 10**6), pop, 10**7, seeds or 100, clip)
    return SettingConfig("linear", rhos, (10**4, 10**5, 10**6), pop, 10**6, seeds or 30, clip)


def contextual_config(full: bool = False, seeds: int | None = None, clip: bool = True) -> SettingConfig:
    """Spec §6.3/§6.4, Fig 5.6: ρ ∈ {0.1, 0.5, 1, 10, 100, 500, 1000}, T ∈ {10³, 10⁴, 10⁵}, PoP to 10⁵.

    Reduced: 20 runs, ρ ∈ {0.1, 0.5, 1, 10, 1000}, T ∈ {10³, 10⁴}, PoP to 10⁴.
    """
    if full:
        rhos = (0.1, 0.5, 1.0, 10.0, 100.0, 500.0, 1000.0)
        return SettingConfig("contextual", rhos, (10**3, 10**4, 10**5), (0.1, 0.5, 1.0), 10**5, seeds or 100, clip)
    rhos = (0.1, 0.5, 1.0, 10.0, 1000.0)
    return SettingConfig("contextual", rhos, (10**3, 10**4), (0.1, 0.5, 1.0), 10**4, seeds or 20, clip)


class SettingResult(NamedTuple):
    """Raw and summarised results of one setting.

    Attributes:
      config: the ``SettingConfig``.
      gap: ``[H, G]``, mean ``Reg_priv(T) - Reg_nonpriv(T)`` per horizon and ρ.
      gap_stderr: ``[H, G]``, its standard error over runs (paired differences).
      regret_private: ``[H, G]``, mean private regret at each horizon.
      regret_nonprivate: ``[H]``, mean non-private regret at each horizon.
      steps: ``[m]``, the checkpoints of the right panel.
      pop: ``[P, m]``, the price of privacy at the checkpoints for each of ``pop_rhos``.
      curves_private: ``[G, seeds, m]``, private regret at the checkpoints (longest run).
      curves_nonprivate: ``[seeds, m]``, non-private regret at the checkpoints (longest run).
      seconds: wall-clock seconds of the simulations (compilation included).
      gap_runs: ``[H, G, seeds]``, per-run ``Reg_priv(T) - Reg_nonpriv(T)`` (shared seeds: ``gap`` and
        ``gap_stderr`` are its mean and standard error over the runs).
    """

    config: SettingConfig
    gap: np.ndarray
    gap_stderr: np.ndarray
    regret_private: np.ndarray
    regret_nonprivate: np.ndarray
    steps: np.ndarray
    pop: np.ndarray
    curves_private: np.ndarray
    curves_nonprivate: np.ndarray
    seconds: float
    gap_runs: np.ndarray | None = None


def _summaries(cfg: SettingConfig, at_h: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, ...]:
    """Gap mean/SE, mean regrets and per-run gaps ``[H, G, S]`` from per-horizon ``(private [G, S], nonprivate [S])``.

    Both arms share the seed keys (common random numbers): the gap's standard error is the paired one, that of
    the per-run differences (``stats.paired_difference``), not ``sqrt(SE_priv² + SE_nonpriv²)``.
    """
    gap, err, priv, nonpriv, runs = [], [], [], [], []
    for p, n in at_h:
        g, e = stats.paired_difference(p, n[None, :], axis=-1)
        gap.append(g)
        err.append(e)
        priv.append(p.mean(-1))
        nonpriv.append(n.mean())
        runs.append(p - n[None, :])
    return np.array(gap), np.array(err), np.array(priv), np.array(nonpriv), np.array(runs)


def _pop(cfg: SettingConfig, curves_p: np.ndarray, curves_n: np.ndarray) -> np.ndarray:
    idx = [cfg.rhos.index(r) for r in cfg.pop_rhos]
    mp = curves_p[idx].mean(1)
    mn = curves_n.mean(0)
    return (mp - mn[None, :]) / np.maximum(mn[None, :], 1e-12)


def _run_linear(cfg: SettingConfig, key: jax.Array) -> SettingResult:
    t_max = max(max(cfg.horizons), cfg.pop_horizon)
    ckpts = sorted(set(log_checkpoints(t_max, 60)) | set(cfg.horizons))
    template = sample_linear_instance(jax.random.key(0))  # shapes only: instance="random" redraws per run
    rhos = jnp.asarray(cfg.rhos, jnp.float32)
    t0 = time.perf_counter()
    priv = simulate_gope_phases(
        AdaCGOPEParams(template.actions, rhos),
        template,
        key,
        t_max,
        cfg.seeds,
        ckpts,
        clip=cfg.clip,
        instance="random",
        phase_length=cfg.phase_length,
        private=cfg.clip,  # unclipped (the paper's setup) voids the guarantee: run as not private
    )
    nonpriv = simulate_gope_phases(
        GOPEParams(template.actions), template, key, t_max, cfg.seeds, ckpts, clip=cfg.clip, instance="random"
    )
    rp, rn = np.asarray(priv.regret, np.float64), np.asarray(nonpriv.regret, np.float64)
    seconds = time.perf_counter() - t0
    steps = np.asarray(priv.steps)
    at_h = [(rp[..., steps.tolist().index(h)], rn[..., steps.tolist().index(h)]) for h in cfg.horizons]
    gap, err, mp, mn, runs = _summaries(cfg, at_h)
    keep = steps <= cfg.pop_horizon
    pop = _pop(cfg, rp[..., keep], rn[..., keep])
    return SettingResult(cfg, gap, err, mp, mn, steps[keep], pop, rp, rn, seconds, runs)


def _run_contextual(cfg: SettingConfig, key: jax.Array) -> SettingResult:
    num_actions, dim = 10, 3
    env = contextual_linear_bandit(num_actions, dim, random_theta=True)
    ep = ContextualBanditParams(theta=jnp.zeros((dim,), jnp.float32))
    bound = CONTEXT_ACTION_BOUND if cfg.clip else 1.0
    rhos = jnp.asarray(cfg.rhos, jnp.float32)
    horizons = sorted(set(cfg.horizons) | {cfg.pop_horizon})
    at_h, curves = [], None
    t0 = time.perf_counter()
    for horizon in horizons:  # a handful of static horizons: one compilation each
        ckpts = "log" if horizon == max(horizons) else [horizon]
        priv = sweep(
            adac_oful(num_actions, dim, horizon, cfg.clip, cfg.radius, private=cfg.clip),
            env,
            SimParams(AdaCOFULParams(rho=rhos, action_bound=bound), ep),
            key,
            horizon,
            cfg.seeds,
            ckpts,
        )
        nonpriv = sweep(
            rs_oful(num_actions, dim, horizon, cfg.clip),
            env,
            SimParams(RSOFULParams(action_bound=bound), ep),
            key,
            horizon,
            cfg.seeds,
            ckpts,
        )
        rp, rn = np.asarray(priv.regret, np.float64), np.asarray(nonpriv.regret, np.float64)
        if horizon in cfg.horizons:
            at_h.append((rp[..., -1], rn[..., -1]))
        if horizon == max(horizons):
            curves = (np.asarray(priv.steps), rp, rn)
    seconds = time.perf_counter() - t0
    gap, err, mp, mn, runs = _summaries(cfg, at_h)
    steps, rp, rn = curves
    keep = steps <= cfg.pop_horizon
    pop = _pop(cfg, rp[..., keep], rn[..., keep])
    return SettingResult(cfg, gap, err, mp, mn, steps[keep], pop, rp, rn, seconds, runs)


def _figures(res: SettingResult, out: Path) -> list[str]:
    """``{name}_gap_vs_rho.png`` (the gap against ρ per horizon, ±2 paired SE) and ``{name}_pop_vs_t.png``."""
    from matplotlib.figure import Figure  # no pyplot: no backend is selected

    cfg = res.config
    paths = []
    fig = Figure(figsize=(5, 3.6))
    ax = fig.add_subplot()
    if res.gap_runs is not None:
        gaps = {f"T = {h:.0e}": res.gap_runs[i] for i, h in enumerate(cfg.horizons)}
        plot.final_vs_budget(cfg.rhos, gaps, ax=ax, band=2.0, xlabel="ρ (zCDP budget)", logy=False)
    else:  # a SettingResult built by hand, without the runs: the summaries' paired SE
        for i, h in enumerate(cfg.horizons):
            ax.errorbar(cfg.rhos, res.gap[i], yerr=2 * res.gap_stderr[i], marker="o", capsize=2, label=f"T = {h:.0e}")
        ax.set_xscale("log")
        ax.legend()
    ax.set_yscale("symlog", linthresh=max(1.0, float(np.abs(res.gap).min())))
    ax.axhline(0.0, color="k", lw=0.5)
    ax.set_ylabel("Reg_private − Reg_non-private")
    ax.set_title(f"{cfg.name}: regret gap vs ρ ({cfg.seeds} runs, ±2 paired s.e.)")
    fig.tight_layout()
    path = out / f"{cfg.name}_gap_vs_rho.png"
    fig.savefig(path, dpi=120)
    paths.append(str(path))

    fig = Figure(figsize=(5, 3.6))
    ax = fig.add_subplot()
    for i, rho in enumerate(cfg.pop_rhos):
        ax.plot(res.steps, res.pop[i], label=f"ρ = {rho:g}")
    ax.set_xscale("log")
    ax.axhline(0.0, color="k", lw=0.5)
    ax.set_xlabel("t")
    ax.set_ylabel("price of privacy (Reg_p − Reg_np) / Reg_np")
    ax.set_title(f"{cfg.name}: price of privacy vs t")
    ax.legend()
    fig.tight_layout()
    path = out / f"{cfg.name}_pop_vs_t.png"
    fig.savefig(path, dpi=120)
    paths.append(str(path))
    return paths


def _save(res: SettingResult, out: Path) -> dict[str, Any]:
    cfg = res.config
    np.savez_compressed(
        out / f"{cfg.name}.npz",
        rhos=np.asarray(cfg.rhos),
        horizons=np.asarray(cfg.horizons),
        pop_rhos=np.asarray(cfg.pop_rhos),
        gap=res.gap,
        gap_stderr=res.gap_stderr,
        regret_private=res.regret_private,
        regret_nonprivate=res.regret_nonprivate,
        steps=res.steps,
        pop=res.pop,
        curves_private=res.curves_private,
        curves_nonprivate=res.curves_nonprivate,
    )
    summary = {
        "setting": cfg.name,
        "algorithms": ["AdaC-GOPE", "GOPE"] if cfg.name == "linear" else ["AdaC-OFUL", "RS-OFUL"],
        "simulator": "episode-level (episodic.gope)" if cfg.name == "linear" else "step-level (jaxpriv.sweep)",
        "seeds": cfg.seeds,
        "clip": cfg.clip,
        "private": bool(cfg.clip),  # the private algorithm's guarantee holds only with clipped rewards and actions
        **({"phase_length": cfg.phase_length} if cfg.name == "linear" else {"radius": cfg.radius}),
        "rhos": list(cfg.rhos),
        "horizons": list(cfg.horizons),
        "regret_nonprivate": dict(zip(map(str, cfg.horizons), res.regret_nonprivate.round(3).tolist(), strict=True)),
        "gap": {
            str(h): dict(zip(map(str, cfg.rhos), row.round(3).tolist(), strict=True))
            for h, row in zip(cfg.horizons, res.gap, strict=True)
        },
        "gap_stderr": {
            str(h): dict(zip(map(str, cfg.rhos), row.round(3).tolist(), strict=True))
            for h, row in zip(cfg.horizons, res.gap_stderr, strict=True)
        },
        "pop_at_last_t": dict(zip(map(str, cfg.pop_rhos), res.pop[:, -1].round(5).tolist(), strict=True)),
        "pop_horizon": int(res.steps[-1]),
        "seconds": round(res.seconds, 2),
        "device": str(jax.devices()[0]),
    }
    write_settings(out, summary, name=f"{cfg.name}.json")
    return summary


SETTINGS = {"linear": (linear_config, _run_linear), "contextual": (contextual_config, _run_contextual)}


def run_setting(
    name: str,
    out_dir: str | Path | None = None,
    full: bool = False,
    seeds: int | None = None,
    clip: bool = True,
    key: jax.Array | None = None,
    config: SettingConfig | None = None,
    radius: str = "self_normalized",
    phase_length: str = "joint",
) -> SettingResult:
    """Run one setting, and write its two figures, ``.npz`` and ``.json`` under ``out_dir`` (if given).

    Args:
      name: ``"linear"`` or ``"contextual"``.
      out_dir: where to write ``{name}_gap_vs_rho.png``, ``{name}_pop_vs_t.png``,
        ``{name}.npz`` and ``{name}.json``; ``None`` writes nothing.
      full: the paper's scale (Section VII) instead of the reduced one.
      seeds: override the number of runs.
      clip: the privacy-hygiene switch (``False``: the paper's unclipped setup).
      key: the base PRNG key (default ``jax.random.key(0)``).
      config: a custom ``SettingConfig`` (overrides ``full``/``seeds``/``clip``/``radius``/``phase_length``).
      radius: AdaC-OFUL's radius, ``"self_normalized"`` (default) or ``"robust"``.
      phase_length: AdaC-GOPE's phase-length rule, ``"joint"`` (default) or ``"paper"``.

    Returns:
      A ``SettingResult``.
    """
    if name not in SETTINGS:
        raise ValueError(f"name must be one of {tuple(SETTINGS)}, got {name!r}")
    make, runner = SETTINGS[name]
    cfg = config or make(full=full, seeds=seeds, clip=clip)._replace(radius=radius, phase_length=phase_length)
    res = runner(cfg, jax.random.key(0) if key is None else key)
    if out_dir is not None:
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        _figures(res, out)
        _save(res, out)
    return res


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m jaxpriv.experiments.zcdp_bandits_linear [--setting linear|contextual|both] [--full] ...``."""
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--setting", default="both", choices=("linear", "contextual", "both"))
    ap.add_argument("--full", action="store_true", help="the paper's scale (100 runs, T up to 10^7 / 10^5)")
    ap.add_argument("--seeds", type=int, default=None)
    ap.add_argument("--unclipped", action="store_true", help="the paper's unclipped Gaussian setup")
    ap.add_argument("--radius", default="self_normalized", choices=("self_normalized", "robust"))
    ap.add_argument("--phase-length", default="joint", choices=("joint", "paper"))
    ap.add_argument("--out", default="results/bandits_linear")
    args = ap.parse_args(argv)
    names = ("linear", "contextual") if args.setting == "both" else (args.setting,)
    for name in names:
        res = run_setting(
            name,
            args.out,
            full=args.full,
            seeds=args.seeds,
            clip=not args.unclipped,
            radius=args.radius,
            phase_length=args.phase_length,
        )
        print(json.dumps(json.loads((Path(args.out) / f"{name}.json").read_text()), indent=1))
        print(f"{name}: {res.seconds:.1f} s")


if __name__ == "__main__":
    main()


# --- registration in the settings of jaxpriv.experiments.zcdp_bandits (``reproduce("linear")``, ``("contextual")``) ---


def _simulate_linear(key: jax.Array, rhos: np.ndarray, horizon: int, checkpoints: tuple[int, ...], seeds: int):
    """AdaC-GOPE over the ρ grid and GOPE, phase by phase, fresh instance per run, same seed keys."""
    template = sample_linear_instance(jax.random.key(0))  # shapes only: instance="random" redraws per run
    priv = simulate_gope_phases(
        AdaCGOPEParams(template.actions, jnp.asarray(rhos, jnp.float32)),
        template,
        key,
        horizon,
        seeds,
        checkpoints,
        instance="random",
    )
    base = simulate_gope_phases(
        GOPEParams(template.actions), template, key, horizon, seeds, checkpoints, instance="random"
    )
    return common.SettingRuns(np.asarray(priv.steps), np.asarray(priv.regret), np.asarray(base.regret))


def _simulate_contextual(key: jax.Array, rhos: np.ndarray, horizon: int, checkpoints: tuple[int, ...], seeds: int):
    """AdaC-OFUL over the ρ grid and RS-OFUL, step by step, θ* per run, same seed keys (common contexts)."""
    num_actions, dim = 10, 3
    env = contextual_linear_bandit(num_actions, dim, random_theta=True)
    ep = ContextualBanditParams(theta=jnp.zeros((dim,), jnp.float32))
    lp = AdaCOFULParams(rho=jnp.asarray(rhos, jnp.float32), action_bound=CONTEXT_ACTION_BOUND)
    priv = sweep(adac_oful(num_actions, dim, horizon), env, SimParams(lp, ep), key, horizon, seeds, checkpoints)
    base_lp = RSOFULParams(action_bound=CONTEXT_ACTION_BOUND)
    base = sweep(rs_oful(num_actions, dim, horizon), env, SimParams(base_lp, ep), key, horizon, seeds, checkpoints)
    return common.SettingRuns(np.asarray(priv.steps), np.asarray(priv.regret), np.asarray(base.regret))


def _register() -> None:
    lin_full, lin_red = linear_config(full=True), linear_config()
    ctx_full, ctx_red = contextual_config(full=True), contextual_config()

    def scale(cfg: SettingConfig) -> common.Scale:
        return common.Scale(cfg.rhos, cfg.horizons, cfg.pop_rhos, cfg.pop_horizon, cfg.seeds)

    if "linear" not in common.SETTINGS:
        common.register_setting(
            common.Setting(
                name="linear",
                title="Linear bandit, K = 10 actions and θ* on the unit sphere of R³",
                private_name="AdaC-GOPE",
                nonprivate_name="GOPE",
                full=scale(lin_full),
                reduced=scale(lin_red),
                simulate=_simulate_linear,
                config={
                    "K": 10,
                    "d": 3,
                    "delta": 0.001,
                    "reward_noise": "N(0, 1)",
                    "instance": "actions and θ* uniform on the sphere, drawn per run",
                    "simulator": "episode-level (one scan step per phase), jaxpriv.bandits.episodic.gope",
                    "noise": "V^{-1/2} N(0, (2/ρ) max(g², d/c) I) (calibration='safe')",
                    "phase_length": "joint: c = (c0 + sqrt(c0² + 8 d c0/ρ))/2, c0 = GOPE's (8d/β²) log(4/δ_K,ℓ) "
                    "(adac_gope default; eq. (5.6) is phase_length='paper')",
                    "clip": "rewards clipped to [-1, 1] (private-safe); per-arm sums exact up to 64 pulls, "
                    "moment-matched Gaussian beyond; the unclipped paper setup: zcdp_bandits_linear --unclipped",
                },
            )
        )
    if "contextual" not in common.SETTINGS:
        common.register_setting(
            common.Setting(
                name="contextual",
                title="Linear contextual bandit, 10 fresh actions ~ N((1/√3)·1, 0.1·I₃) per round",
                private_name="AdaC-OFUL",
                nonprivate_name="RS-OFUL",
                full=scale(ctx_full),
                reduced=scale(ctx_red),
                simulate=_simulate_contextual,
                config={
                    "K": 10,
                    "d": 3,
                    "C": 1.0,
                    "lambda": 0.1,
                    "delta": 0.001,
                    "reward_noise": "N(0, 1)",
                    "simulator": "step-level, jaxpriv.sweep; shorter horizons read off checkpoints of the longest run",
                    "radius": "self_normalized: sqrt(1 + c/λ_min(V_τ)) R sqrt(2 log(1/δ) + log det(V_τ + cI) "
                    "- d log λ) + sqrt(λ) S, c = 2ℓ/(ρR²) (adac_oful default; the robust choice is radius='robust')",
                    "clip": "rewards clipped to [-1, 1], actions a/L shrunk to the unit ball, "
                    f"L = {CONTEXT_ACTION_BOUND}",
                    "round_1": "played uniformly at random (A_1 arrives with the first feedback)",
                },
            )
        )


_register()
