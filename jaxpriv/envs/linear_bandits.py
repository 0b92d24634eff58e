"""Stochastic linear bandits: a fixed finite action set, and fresh action sets each round.

Both environments report the pseudo-regret ``max_b <θ*, b> - <θ*, a_t>`` of the
round (Azize & Basu, SaTML 2024, §IV; thesis eq. (5.3)), so the engine's
cumulative regret is ``sum_t Δ_{a_t}``; the loss is ``-reward``.

Actions are indices into the round's action set (int32 scalars). The learner of
the fixed-set environment knows the action set (it is public: the learner's
params carry it too). The contextual environment reveals each round's action
set through its feedback, see ``contextual_linear_bandit``.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxpriv import _validate, declare
from jaxpriv._base import Env, EnvInfo, PRNGKey, Spec, nan_unless_valid_arm


def unit_sphere(key: PRNGKey, shape: tuple[int, ...], dim: int) -> jax.Array:
    """``shape + (dim,)`` points uniform on the unit sphere of ``R^dim`` (normalised Gaussians)."""
    x = jax.random.normal(key, (*shape, dim), jnp.float32)
    return x / jnp.linalg.norm(x, axis=-1, keepdims=True)


# --- fixed finite action set ------------------------------------------------------------------------


class LinearBanditParams(NamedTuple):
    """Params of ``linear_bandit``.

    Attributes:
      actions: ``[K, d]``, the action vectors (rows).
      theta: ``[d]``, the unknown parameter θ* (ignored when the env draws θ* per run).
      noise_stddev: ``>= 0``, the standard deviation σ of the Gaussian reward noise.
    """

    actions: ArrayLike
    theta: ArrayLike
    noise_stddev: ArrayLike = 1.0


class LinearBanditState(NamedTuple):
    actions: jax.Array  # shape=[K, d]
    theta: jax.Array  # shape=[d]
    means: jax.Array  # shape=[K], <θ*, a>
    noise_stddev: jax.Array  # shape=()


def sample_linear_instance(
    key: PRNGKey, num_actions: int = 10, dim: int = 3, noise_stddev: float = 1.0
) -> LinearBanditParams:
    """The paper's linear instance (Section VII): actions and θ* uniform on the unit sphere.

    Args:
      key: a PRNG key.
      num_actions: ``K`` (the paper: 10).
      dim: ``d`` (the paper: 3).
      noise_stddev: the reward noise σ (the paper: 1).

    Returns:
      ``LinearBanditParams`` with ``actions[K, d]`` and ``theta[d]`` on the unit sphere.
    """
    num_actions = _validate.positive_int("num_actions", num_actions, minimum=2)
    dim = _validate.positive_int("dim", dim)
    k_a, k_t = jax.random.split(key)
    return LinearBanditParams(
        actions=unit_sphere(k_a, (num_actions,), dim),
        theta=unit_sphere(k_t, (), dim),
        noise_stddev=jnp.float32(noise_stddev),
    )


def _check_common(name: str, value: ArrayLike) -> None:
    v = _validate._concrete(value)
    if v is not None and not np.all(np.isfinite(v)):
        raise ValueError(f"{name} must be finite, got {value!r}")


@declare.env("linear_bandit", params=LinearBanditParams)
def linear_bandit(num_actions: int, dim: int, random_theta: bool = False) -> Env:
    """Stochastic linear bandit with a fixed finite action set ``A = {a_1..a_K} ⊂ R^d``.

    Round ``t``: the learner plays an index ``i``; the reward is
    ``<θ*, a_i> + σ η_t`` with ``η_t ~ N(0, 1)``. One ``η_t`` is drawn per round
    whatever the action (common random numbers across learners and privacy
    levels). The regret increment is the pseudo-regret ``max_b <θ*, b> - <θ*, a_i>``.

    Args:
      num_actions: ``K >= 2``.
      dim: ``d >= 1``.
      random_theta: draw θ* uniformly on the unit sphere at ``reset`` (a new θ*
        per run, from the run's key) instead of using ``params.theta``.

    Returns:
      An ``Env`` with params ``LinearBanditParams``; feedback is the reward.

    References:
      Azize & Basu, Concentrated Differential Privacy for Bandits, SaTML 2024, §IV-A, §VII.
    """
    num_actions = _validate.positive_int("num_actions", num_actions, minimum=2)
    dim = _validate.positive_int("dim", dim)

    def check(params: LinearBanditParams) -> None:
        _validate.trailing_shape("actions", params.actions, (num_actions, dim))
        _check_common("actions", params.actions)
        if not random_theta:
            _validate.trailing_shape("theta", params.theta, (dim,))
            _check_common("theta", params.theta)
        _validate.nonnegative("noise_stddev", params.noise_stddev)

    def reset_fn(key: PRNGKey, params: LinearBanditParams) -> LinearBanditState:
        actions = jnp.asarray(params.actions, jnp.float32)
        if random_theta:
            theta = unit_sphere(key, (), dim)
        else:
            theta = jnp.broadcast_to(jnp.asarray(params.theta, jnp.float32), (dim,))
        return LinearBanditState(actions, theta, actions @ theta, jnp.asarray(params.noise_stddev, jnp.float32))

    def step_fn(key: PRNGKey, state: LinearBanditState, action: jax.Array, t: jax.Array):
        del t
        mean = state.means[action]
        reward = mean + state.noise_stddev * jax.random.normal(key, (), jnp.float32)
        reward, regret = nan_unless_valid_arm((reward, jnp.max(state.means) - mean), action, num_actions)
        return state, reward, EnvInfo(loss=-reward, regret=regret, stats=())

    spec = Spec(
        num_arms=num_actions,
        action_shape=(),
        ndims=(("actions", 2), ("theta", 1)),
    )
    return Env(reset_fn, step_fn, None, check, spec=spec)


# --- fresh action sets each round -------------------------------------------------------------------


class ContextualBanditParams(NamedTuple):
    """Params of ``contextual_linear_bandit``.

    Attributes:
      theta: ``[d]``, θ* (ignored when the env draws θ* per run).
      context_mean: ``[d]`` or scalar, the mean μ of every action vector; ``None``
        means the paper's ``(1/√d)·1``.
      context_stddev: ``>= 0``, the per-coordinate standard deviation of the
        action vectors (the paper: ``sqrt(0.1)``, i.e. covariance ``0.1·I``).
      noise_stddev: ``>= 0``, the Gaussian reward noise σ (the paper: 1).
    """

    theta: ArrayLike
    context_mean: ArrayLike | None = None
    context_stddev: ArrayLike = float(np.sqrt(0.1))
    noise_stddev: ArrayLike = 1.0


class ContextualBanditState(NamedTuple):
    theta: jax.Array  # shape=[d]
    context_mean: jax.Array  # shape=[d]
    context_stddev: jax.Array  # shape=()
    noise_stddev: jax.Array  # shape=()
    actions: jax.Array  # shape=[K, d], the action set A_t of the coming round


class ContextualFeedback(NamedTuple):
    """What a learner observes after round ``t`` of ``contextual_linear_bandit``.

    Attributes:
      reward: shape=(), ``r_t``.
      action_vector: shape=[d], ``a_t``, the vector of the played index in ``A_t``.
      next_actions: shape=[K, d], ``A_{t+1}``, the action set of the next round.
    """

    reward: jax.Array
    action_vector: jax.Array
    next_actions: jax.Array


@declare.env("contextual_linear_bandit", params=ContextualBanditParams)
def contextual_linear_bandit(num_actions: int, dim: int, random_theta: bool = False) -> Env:
    """Linear contextual bandit: ``K`` fresh actions each round, i.i.d. ``N(μ, s²·I_d)``.

    The paper's setting 3 (§VII; docs/algorithms/zcdp_bandits.md, 'Decoding choices'): ``K = 10``, ``d = 3``,
    ``μ = (1/√d)·1``, ``s² = 0.1``, reward ``<θ*, a_t> + σ η_t`` with ``η_t ~ N(0, 1)``
    and θ* on the unit sphere. The contexts are public (thesis Remark 5.13).

    **How the learner sees ``A_t`` before acting.** The ``Learner`` protocol's
    ``act(key, state, t)`` cannot see the environment's state, so the action
    set travels in the feedback: ``reset`` draws ``A_1``; ``step`` at round
    ``t`` plays index ``action`` in ``A_t``, then draws ``A_{t+1}`` and returns
    ``ContextualFeedback(reward, a_t, A_{t+1})``. A learner stores
    ``next_actions`` in its state and acts on it at ``t + 1``. Round 1 is
    therefore played blind (the learner has not seen ``A_1``): the policies
    of this package play a uniformly random index at ``t = 1``; this costs at
    most one round of regret. ``action_vector`` tells the learner which vector
    it played at ``t = 1`` too.

    The regret increment is ``max_{b ∈ A_t} <θ*, b> - <θ*, a_t>``. The reward
    noise ``η_t`` and ``A_{t+1}`` are drawn whatever the action (common random
    numbers across learners and privacy levels).

    Args:
      num_actions: ``K >= 2``.
      dim: ``d >= 1``.
      random_theta: draw θ* uniformly on the unit sphere at ``reset`` (per run).

    Returns:
      An ``Env`` with params ``ContextualBanditParams``; feedback ``ContextualFeedback``.

    References:
      Azize & Basu, Concentrated Differential Privacy for Bandits, SaTML 2024, §IV-B, §VII.
    """
    num_actions = _validate.positive_int("num_actions", num_actions, minimum=2)
    dim = _validate.positive_int("dim", dim)
    default_mean = 1.0 / np.sqrt(dim)

    def check(params: ContextualBanditParams) -> None:
        if not random_theta:
            _validate.trailing_shape("theta", params.theta, (dim,))
            _check_common("theta", params.theta)
        if params.context_mean is not None:
            _check_common("context_mean", params.context_mean)
            if np.ndim(params.context_mean) >= 1:
                _validate.trailing_shape("context_mean", params.context_mean, (dim,))
        _validate.nonnegative("context_stddev", params.context_stddev)
        _validate.nonnegative("noise_stddev", params.noise_stddev)

    def draw_actions(key: PRNGKey, mean: jax.Array, stddev: jax.Array) -> jax.Array:
        return mean + stddev * jax.random.normal(key, (num_actions, dim), jnp.float32)

    def reset_fn(key: PRNGKey, params: ContextualBanditParams) -> ContextualBanditState:
        k_theta, k_ctx = jax.random.split(key)
        if random_theta:
            theta = unit_sphere(k_theta, (), dim)
        else:
            theta = jnp.broadcast_to(jnp.asarray(params.theta, jnp.float32), (dim,))
        mean = default_mean if params.context_mean is None else params.context_mean
        mean = jnp.broadcast_to(jnp.asarray(mean, jnp.float32), (dim,))
        stddev = jnp.asarray(params.context_stddev, jnp.float32)
        return ContextualBanditState(
            theta, mean, stddev, jnp.asarray(params.noise_stddev, jnp.float32), draw_actions(k_ctx, mean, stddev)
        )

    def step_fn(key: PRNGKey, state: ContextualBanditState, action: jax.Array, t: jax.Array):
        del t
        # One normal draw for the reward noise and the next action set (one PRNG call per round).
        z = jax.random.normal(key, (num_actions * dim + 1,), jnp.float32)
        means = state.actions @ state.theta
        vec = state.actions[action]
        reward = means[action] + state.noise_stddev * z[0]
        nxt = state.context_mean + state.context_stddev * z[1:].reshape(num_actions, dim)
        reward, regret = nan_unless_valid_arm((reward, jnp.max(means) - means[action]), action, num_actions)
        info = EnvInfo(loss=-reward, regret=regret, stats=())
        return state._replace(actions=nxt), ContextualFeedback(reward, vec, nxt), info

    spec = Spec(
        num_arms=num_actions,
        action_shape=(),
        ndims=(("theta", 1), ("context_mean", 1)),
    )
    return Env(reset_fn, step_fn, None, check, spec=spec)
