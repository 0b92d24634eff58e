"""AdaC-GOPE and GOPE phase by phase, named by their params class (deprecated).

The simulator itself is the policies' own (``jaxpriv.bandits._gope_core.simulate``, in their
``Spec.fast_path``; its reward-sum samplers ``gaussian_reward_sums`` and ``clipped_gaussian_moments``
are re-exported here), run by ``jaxpriv.sweep(learner, env, params, ..., simulator="episodes")`` or
``jaxpriv.bandits.simulate_episodes(learner, ...)``. ``simulate_gope_phases(params, ...)`` builds the
learner its params class names and runs it that way; it is kept for existing code.
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp

from jaxpriv import _validate
from jaxpriv._base import Learner, PRNGKey, check_horizon, spec_of
from jaxpriv.bandits import _gope_core as core
from jaxpriv.bandits._fast_path import check_policy
from jaxpriv.bandits._gope_core import (
    HOOK,
    INSTANCES,
    RewardSums,
    clipped_gaussian_moments,
    gaussian_reward_sums,
    simulate,
)
from jaxpriv.bandits.adac_gope import AdaCGOPEParams, adac_gope
from jaxpriv.bandits.episodic._sweep import factory_of, simulate_episodes
from jaxpriv.bandits.gope import GOPEParams, gope
from jaxpriv.envs.linear_bandits import LinearBanditParams
from jaxpriv.sim import Result

__all__ = [
    "HOOK",
    "INSTANCES",
    "RewardSums",
    "clipped_gaussian_moments",
    "gaussian_reward_sums",
    "simulate",
    "simulate_gope_phases",
]


#: The one table of the old entry point: params class -> the step-level factory it names.
_FACTORIES = {AdaCGOPEParams: adac_gope, GOPEParams: gope}


def simulate_gope_phases(
    params: AdaCGOPEParams | GOPEParams,
    env_params: LinearBanditParams,
    key: PRNGKey,
    horizon: int,
    seeds: int = 100,
    checkpoints: Any = "log",
    *,
    clip: bool = True,
    calibration: str = "safe",
    instance: str = "fixed",
    design_tol: float = 1e-3,
    design_iters: int = 5000,
    exact_pulls: int = 64,
    chunk: int | None = None,
    reward_sums: RewardSums | None = None,
    policy: Learner | None = None,
    ablation: str | None = None,
    phase_length: str = "joint",
    private: bool = True,
) -> Result:
    """AdaC-GOPE (``AdaCGOPEParams``) or GOPE (``GOPEParams``), phase by phase.

    One scan step per phase (``O(log T)`` steps), vmapped over seeds and over a
    params grid with common random numbers (``episode_sweep``). The algorithm
    is that of ``adac_gope`` / ``gope`` built with the same static options (looked up once from
    the params class), run by its own fast path (``simulate_episodes``); each
    support arm's reward sum is drawn from its distribution (module docstring:
    exact without ``clip``) and the regret is exact. AdaC-GOPE-Var takes ``AdaCGOPEParams`` too:
    simulate it with ``simulate_episodes(adac_gope_var(K, d, T, ...), params, env_params, ...)``.

    Args:
      params: ``AdaCGOPEParams`` (AdaC-GOPE) or ``GOPEParams``, exactly: any other class (a
        subclass) is refused; a leaf with a leading grid axis (e.g. ``rho=[G]``) is swept.
      env_params: ``LinearBanditParams`` (the true actions, θ*, noise σ).
      key: the base key; seed ``i`` uses ``split(key, seeds)[i]``.
      horizon: ``T >= K``.
      seeds: the number of runs.
      checkpoints: ``None``, ``"log"`` or a sequence of steps; ``T`` is always included.
      clip, calibration, design_tol, design_iters: as in ``adac_gope``. ``clip=False`` (and ``calibration="paper"``)
        void the guarantee: a finite ``rho`` then needs ``private=False``.
      instance: ``"fixed"`` (the params' actions and θ*), ``"random_theta"``
        (θ* per run on the sphere, as ``linear_bandit(random_theta=True)``) or
        ``"random"`` (actions and θ* per run on the sphere, the paper's §VII;
        the learner's ``actions`` are then replaced by the run's).
      exact_pulls: with ``clip``, sums of at most this many pulls are drawn exactly.
      chunk: run the seeds in batches of this size.
      reward_sums: ``(key, means[K], stddev, pulls[K]) -> sums[K]`` (a test hook;
        default ``gaussian_reward_sums``). A hook's sums are not clipped per reward, so the
        guarantee does not hold: a finite ``rho`` then needs ``private=False``.
      policy: optional, the step-level ``adac_gope`` / ``gope`` these phases stand
        in for; a ``horizon`` past the one it was built for raises ``ValueError``
        naming both (its phase lengths are capped at its own horizon), and so does a
        policy of another factory or params class (another algorithm: ``adac_gope_var``, whose
        phases ``simulate_episodes(policy, ...)`` runs).
      phase_length: AdaC-GOPE's phase-length rule, ``"joint"`` (default) or ``"paper"`` (see ``adac_gope``).
      ablation: ``None``, or, with ``AdaCGOPEParams``, ``"noise"`` (private) / ``"exploration"``
        (no noise: needs ``private=False`` at a finite ``rho``); see ``adac_gope``.
      private: ``False`` runs an opt-out above (``clip=False``, ``ablation="exploration"``,
        ``calibration="paper"``, a ``reward_sums`` hook) at a finite ``rho``, the result marked
        not private (``Result.private``).

    Returns:
      A ``Result``: ``regret[..., m]``, ``episodes[..., m]`` (phases
      started at or before each checkpoint), ``pulls[..., K]`` (``N_a(T)``), and
      ``private``, whether the simulated policy's guarantee holds.
    """
    num_actions, dim = (int(s) for s in jnp.shape(params.actions)[-2:])
    horizon = _validate.horizon(horizon)
    factory = factory_of(params, _FACTORIES, "; AdaC-GOPE-Var: simulate_episodes(adac_gope_var(...), ...)")
    core.ablation_parts(factory is adac_gope, ablation)
    if factory is adac_gope:
        learner = adac_gope(
            num_actions, dim, horizon, clip, calibration, design_tol, design_iters, ablation, phase_length,
            private=private,
        )  # fmt: skip
    else:
        learner = gope(num_actions, dim, horizon, clip, design_tol, design_iters)
    check_horizon(horizon, policy, "policy")
    check_policy(learner, policy, dict(spec_of(learner).fast_path.options)["simulates"])
    return simulate_episodes(
        learner,
        params,
        env_params,
        key,
        horizon,
        seeds,
        checkpoints,
        instance=instance,
        exact_pulls=exact_pulls,
        chunk=chunk,
        reward_sums=reward_sums,
        private=private,
    )
