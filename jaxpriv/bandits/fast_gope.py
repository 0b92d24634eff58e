"""Episode-level simulator of GOPE / AdaC-GOPE: one scan step per phase.

Within a phase of (AdaC-)GOPE the actions do not depend on the phase's rewards
(Step 2 of Algorithm 8 fixes ``T_ℓ(a)`` before the phase starts), and the phase
only uses its rewards through the per-arm sums ``S_a = Σ_{t in phase, a_t = a} r_t``.
So a whole phase can be simulated at once by drawing ``S_a`` from its exact
distribution. With Gaussian rewards ``r = <θ*, a> + σ η`` and ``n_a`` pulls,
``S_a ~ N(n_a <θ*, a>, n_a σ²)`` exactly (``clip=False``, the paper's setup).
With clipped rewards (``clip=True``), ``S_a`` is a sum of ``n_a`` i.i.d.
clipped Gaussians: it is drawn exactly (``n_a`` draws, masked) when
``n_a <= exact_pulls``, and from the Gaussian with the clipped reward's exact
mean and variance otherwise (CLT; Berry–Esseen error ``O(n_a^{-1/2})`` in
Kolmogorov distance, ``< 0.06`` at ``n_a = 64`` and shrinking after): an
*approximation*, documented as such.

The pseudo-regret is exact in both cases: support arms are played in index
order (as in the step-level policy), so the number of pulls of arm ``a`` by
any round ``s`` of the phase is ``clip(s - t_start - off_a, 0, n_a)``; the last
phase is truncated at ``T``. ``T = 10^7`` costs ``O(log T)`` scan steps.

The phase arithmetic (design, ``c_ℓ``, ``T_ℓ(a)``, least squares, noise,
elimination) is the one of the step-level policies (``_gope_core``): same
algorithm, two simulators. The step-level policies are the reference.
"""

from __future__ import annotations

from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import ndtr

from jaxpriv import _validate
from jaxpriv._base import PRNGKey
from jaxpriv.bandits import _gope_core as core
from jaxpriv.envs.linear_bandits import LinearBanditParams, unit_sphere
from jaxpriv.sim import _canonical, _grid_axes, _normalise_checkpoints

__all__ = ["FastGOPEResult", "clipped_gaussian_moments", "gope_fast", "sweep_gope_fast"]


class FastGOPEResult(NamedTuple):
    """Output of the episode-level simulator.

    Attributes:
      steps: ``[m]`` int32, the checkpoints ``t``.
      regret: ``[..., m]``, the cumulative pseudo-regret at the checkpoints.
      num_phases: ``[...]`` int32, the phases started within ``T``.
      num_closed: ``[...]`` int32, the phases completed (closed) within ``T``.
    """

    steps: jax.Array
    regret: jax.Array
    num_phases: jax.Array
    num_closed: jax.Array


def clipped_gaussian_moments(mean: jax.Array, stddev: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Mean and variance of ``clip(mean + stddev·Z, -1, 1)``, ``Z ~ N(0, 1)``, in closed form."""
    mu = jnp.asarray(mean, jnp.float32)
    s = jnp.asarray(stddev, jnp.float32)
    safe = jnp.maximum(s, 1e-12)
    a = (-1.0 - mu) / safe
    b = (1.0 - mu) / safe
    pa, pb = ndtr(a), ndtr(b)
    phi_a = jnp.exp(-0.5 * a * a) / jnp.sqrt(2.0 * jnp.pi)
    phi_b = jnp.exp(-0.5 * b * b) / jnp.sqrt(2.0 * jnp.pi)
    mid = pb - pa
    m1 = -pa + (1.0 - pb) + mu * mid + s * (phi_a - phi_b)
    m2 = pa + (1.0 - pb) + mu**2 * mid + 2.0 * mu * s * (phi_a - phi_b) + s**2 * (mid + a * phi_a - b * phi_b)
    clipped = jnp.clip(mu, -1.0, 1.0)
    m1 = jnp.where(s > 0, m1, clipped)
    var = jnp.where(s > 0, jnp.maximum(m2 - m1**2, 0.0), 0.0)
    return m1, var


def _reward_sums(
    key: PRNGKey, means: jax.Array, stddev: jax.Array, pulls: jax.Array, clip: bool, exact_pulls: int
) -> jax.Array:
    """Per-arm sums of ``pulls[a]`` rewards ``means[a] + stddev·η`` (clipped to [-1, 1] if ``clip``)."""
    n = pulls.astype(jnp.float32)
    k_clt, k_exact = jax.random.split(key)
    z = jax.random.normal(k_clt, means.shape, jnp.float32)
    if not clip:
        return n * means + stddev * jnp.sqrt(n) * z
    m1, var = clipped_gaussian_moments(means, stddev)
    clt = n * m1 + jnp.sqrt(n * var) * z
    draws = jnp.clip(means[:, None] + stddev * jax.random.normal(k_exact, (*means.shape, exact_pulls)), -1.0, 1.0)
    used = jnp.arange(exact_pulls)[None, :] < pulls[:, None]
    exact = jnp.sum(jnp.where(used, draws, 0.0), axis=1)
    return jnp.where(pulls <= exact_pulls, exact, clt)


def gope_fast(
    num_actions: int,
    dim: int,
    horizon: int,
    private: bool,
    clip: bool = True,
    calibration: str = "safe",
    random_theta: bool = False,
    checkpoints: Any = "log",
    design_tol: float = 1e-3,
    design_iters: int = 1000,
    exact_pulls: int = 64,
    reward_sums: Any = None,
):
    """The episode-level simulator of ``gope`` (``private=False``) or ``adac_gope``.

    Args:
      num_actions: ``K >= 2``.
      dim: ``d``.
      horizon: ``T >= K``.
      private: AdaC-GOPE (``True``) or GOPE.
      clip, calibration, design_tol, design_iters: as in ``adac_gope``.
      random_theta: draw θ* per run on the unit sphere (as ``linear_bandit(random_theta=True)``).
      checkpoints: ``None`` (every step: only for small ``T``), ``"log"`` or a sequence.
      exact_pulls: with ``clip``, per-arm sums of at most this many pulls are drawn exactly.
      reward_sums: optional replacement ``(key, means, stddev, pulls) -> sums``
        for the reward-sum sampler (tests use it to check that a wrong
        distribution is detected).

    Returns:
      ``(simulate, steps)``: ``simulate(key, learner_params, env_params) ->
      (regret[m], num_phases, num_closed)`` for one run (jit/vmap it), where
      ``learner_params`` is a ``GOPEParams`` / ``AdaCGOPEParams`` and
      ``env_params`` a ``LinearBanditParams``; ``steps`` the checkpoints.
    """
    num_actions = _validate.positive_int("num_actions", num_actions, minimum=2)
    dim = _validate.positive_int("dim", dim)
    horizon = _validate.positive_int("horizon", horizon)
    if horizon < num_actions:
        raise ValueError(f"horizon must be >= num_actions={num_actions}, got {horizon}")
    calibration = _validate.choice("calibration", calibration, core.CALIBRATIONS)
    exact_pulls = _validate.positive_int("exact_pulls", exact_pulls)
    steps = _normalise_checkpoints(horizon, checkpoints)
    ckpts = np.asarray(steps, np.int64)
    num_scan = core.max_phases(horizon) + 1
    sampler = reward_sums or partial(_reward_sums, clip=clip, exact_pulls=exact_pulls)

    def simulate(key: PRNGKey, lp: Any, ep: LinearBanditParams):
        k_env, k_run = jax.random.split(key)
        env_actions = jnp.asarray(ep.actions, jnp.float32)
        theta = unit_sphere(k_env, (), dim) if random_theta else jnp.asarray(ep.theta, jnp.float32)
        means = env_actions @ theta
        gaps = jnp.max(means) - means
        stddev = jnp.asarray(ep.noise_stddev, jnp.float32)
        x = core.normalise_actions(lp.actions, lp.action_bound, clip)
        rho = jnp.asarray(lp.rho, jnp.float32) if private else jnp.asarray(jnp.inf, jnp.float32)
        delta = jnp.asarray(lp.delta, jnp.float32)
        ck = jnp.asarray(ckpts, jnp.int32)

        def body(carry, ell):
            active, t_used, reg, started_n, closed_n = carry
            k_sum, k_noise = jax.random.split(jax.random.fold_in(k_run, ell))
            started = t_used < horizon
            plan = core.plan_phase(
                x, active, ell, rho, delta, num_actions, horizon, private, design_tol, design_iters, run=started
            )
            alloc = jnp.where(started, plan.alloc, 0)
            off = jnp.cumsum(alloc) - alloc
            left = horizon - t_used
            n = jnp.clip(left - off, 0, alloc)
            complete = started & (jnp.sum(alloc) <= left)
            by_ckpt = jnp.clip(ck[:, None] - t_used - off[None, :], 0, n[None, :]).astype(jnp.float32)
            reg = reg + by_ckpt @ gaps
            sums = sampler(k_sum, means, stddev, n)
            rel = core.close_phase(k_noise, x, active, n, sums, ell, plan.c, rho, private, calibration)
            active = jnp.where(complete, rel.active, active)
            carry = (
                active,
                t_used + jnp.sum(n),
                reg,
                started_n + started.astype(jnp.int32),
                closed_n + complete.astype(jnp.int32),
            )
            return carry, None

        init = (
            jnp.ones((num_actions,), bool),
            jnp.zeros((), jnp.int32),
            jnp.zeros((len(steps),), jnp.float32),
            jnp.zeros((), jnp.int32),
            jnp.zeros((), jnp.int32),
        )
        phases = jnp.arange(1, num_scan + 1, dtype=jnp.int32)
        (_, _, reg, started_n, closed_n), _ = jax.lax.scan(body, init, phases)
        return reg, started_n, closed_n

    return simulate, steps


def sweep_gope_fast(
    simulate: Any,
    steps: tuple[int, ...],
    learner_params: Any,
    env_params: LinearBanditParams,
    key: PRNGKey,
    seeds: int = 100,
    per_seed_instance: Any = None,
) -> FastGOPEResult:
    """Many seeds and a grid of learner params in one compiled call (common random numbers).

    Swept learner leaves carry a leading grid axis (as in ``jaxpriv.sim.sweep``:
    zipped, same seed keys at every grid point).

    Args:
      simulate, steps: from ``gope_fast``.
      learner_params: ``GOPEParams`` / ``AdaCGOPEParams``, optionally with a grid axis.
      env_params: ``LinearBanditParams`` (no grid axis).
      key: base key; seed ``i`` uses ``split(key, seeds)[i]``.
      seeds: number of runs.
      per_seed_instance: optional ``key -> (actions[K, d], theta[d])``: a fresh
        instance per seed (drawn from ``fold_in(seed_key, 1)``), used by both
        the learner (actions) and the environment (paper §VII: arms drawn per run).

    Returns:
      A ``FastGOPEResult`` with leading axes ``[grid, seeds]`` (or ``[seeds]``).
    """
    seeds = _validate.positive_int("seeds", seeds)
    axes, size = _grid_axes(learner_params, allow_grid=True, path="learner_params")
    lp = _canonical(learner_params)
    ep = _canonical(env_params)
    keys = jax.random.split(key, seeds)
    out = _sweep_jit(simulate, axes if size else None, per_seed_instance, keys, lp, ep)
    return FastGOPEResult(jnp.asarray(steps, jnp.int32), *out)


@partial(jax.jit, static_argnums=(0, 1, 2))
def _sweep_jit(simulate, axes, per_seed_instance, keys, lp, ep):
    def one(k, p):
        if per_seed_instance is None:
            return simulate(k, p, ep)
        actions, theta = per_seed_instance(jax.random.fold_in(k, 1))
        return simulate(k, p._replace(actions=actions), ep._replace(actions=actions, theta=theta))

    def over_seeds(p):
        return jax.vmap(one, in_axes=(0, None))(keys, p)

    if axes is None:
        return over_seeds(lp)
    return jax.vmap(over_seeds, in_axes=(axes,))(lp)
