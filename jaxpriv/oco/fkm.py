"""Bandit gradient descent of Flaxman, Kalai & McMahan 2005 (non-private baseline)."""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxpriv import _validate, declare, theory
from jaxpriv._base import Learner, NonfiniteInfo, PRNGKey, Spec, poison_past_horizon, zero_nonfinite
from jaxpriv.oco import one_point
from jaxpriv.sets import ConstraintSet


class FKMParams(NamedTuple):
    """Params of FKM bandit gradient descent.

    Attributes:
      loss_bound: ``B > 0``, ``|f_t| <= B`` on ``C`` (used by the default ``β`` and ``η`` only).
      lipschitz: ``L > 0`` of the losses (used by the default ``β`` only).
      exploration: ``β ∈ (0, r)``; ``nan`` (default): ``theory.fkm_exploration``, ``∝ T^{-1/4}``.
      learning_rate: ``η > 0``; ``nan`` (default): ``theory.fkm_learning_rate``, ``Dβ/(pB sqrt T)``.
    """

    loss_bound: ArrayLike = 1.0
    lipschitz: ArrayLike = 1.0
    exploration: ArrayLike = float("nan")
    learning_rate: ArrayLike = float("nan")


class FKMState(NamedTuple):
    y: jax.Array  # shape=[d], the centre y_t, in the shrunk set
    sphere_key: jax.Array  # the directions' key: u_t = one_point.direction_at(sphere_key, t)
    direction: jax.Array  # shape=[d], u_t: the direction of the next played point
    exploration: jax.Array  # shape=(), β
    learning_rate: jax.Array  # shape=(), η
    shrink: jax.Array  # shape=(), s: the shrunk set is c + s(C - c)


def _example(horizon: int, dim: int) -> declare.ExampleRun:
    """``fkm`` at one small configuration (``jaxpriv.testing.learner_examples``)."""
    from jaxpriv.envs._settings import setting

    s = setting("bandit_feedback", dim)
    return fkm(horizon, s.constraint), s.env, FKMParams(4.0, 2.0), s.params


@declare.learner("fkm", params=FKMParams, example=_example)
def fkm(horizon: int, constraint: ConstraintSet) -> Learner:
    """FKM bandit gradient descent: projected gradient descent on one-point gradient estimates.

    Play ``ŵ_t = y_t + βu_t`` (``u_t`` uniform on the unit sphere), see only
    ``f_t(ŵ_t)``, and step ``y_{t+1} = Π_{(1-ξ)C}(y_t - η (p/β) f_t(ŵ_t) u_t)`` with
    ``ξ = β/r`` (FKM05, algorithm BGD; the shrunk set is ``c + (1 - ξ)(C - c)``
    about the inner centre ``c``, so ``ŵ_t ∈ C``). ``y_1 = c``.

    Regret: ``theory.fkm_regret_bound``, ``D²/(2η) + (η/2)T(pB/β)² + (3β + ξR_c) L T``,
    ``O(T^{3/4})`` at the defaults (FKM05, Theorem 2), against adaptive adversaries.

    A non-finite loss value is replaced by 0 and counted in the step's Info (``NonfiniteInfo.nonfinite``).

    Args:
      horizon: ``T``, for the default ``β`` and ``η``; declared.
      constraint: the set ``C``; needs a projection and an inner ball (``sets.bandit_radii``).

    Returns:
      A ``Learner`` with params ``FKMParams``; feedback is the loss value at the played point.

    Raises:
      ValueError: a set without projection or inner ball; ``check``: ``β ∉ (0, r)``,
        ``η <= 0``, ``B <= 0``, ``L <= 0``.

    References:
      Flaxman, Kalai, McMahan. Online convex optimization in the bandit setting:
      gradient descent without a gradient. SODA 2005.
    """
    horizon = _validate.horizon(horizon)
    r, outer = one_point.require_inner_ball(constraint)
    p = one_point.sphere_dim(constraint)
    diameter = constraint.diameter

    def check(params: FKMParams) -> None:
        _validate.positive("loss_bound", params.loss_bound, allow_inf=False)
        _validate.positive("lipschitz", params.lipschitz, allow_inf=False)
        beta = _validate._concrete(params.exploration)
        if beta is not None and np.any(~np.isnan(beta) & ~((beta > 0) & (beta < r))):
            raise ValueError(
                f"exploration must be in (0, r) with r = {r:g} the set's inner radius, or nan; got {beta!r}"
            )
        eta = _validate._concrete(params.learning_rate)
        if eta is not None and np.any(~np.isnan(eta) & ~((eta > 0) & np.isfinite(eta))):
            raise ValueError(f"learning_rate must be in (0, inf) or nan (the default step), got {eta!r}")

    def init_fn(key: PRNGKey, params: FKMParams) -> FKMState:
        bound = jnp.asarray(params.loss_bound, jnp.float32)
        beta = jnp.asarray(params.exploration, jnp.float32)
        default_beta = theory.fkm_exploration(horizon, p, params.lipschitz, bound, diameter, r, outer)
        beta = jnp.where(jnp.isnan(beta), default_beta, beta)
        eta = jnp.asarray(params.learning_rate, jnp.float32)
        eta = jnp.where(jnp.isnan(eta), theory.fkm_learning_rate(horizon, p, bound, diameter, beta), eta)
        y1 = jnp.asarray(constraint.inner_center, jnp.float32)
        u1 = one_point.direction_at(key, jnp.int32(1), constraint)
        return FKMState(y1, key, u1, beta, eta, one_point.shrink_factor(beta, r))

    def act_fn(key: PRNGKey, state: FKMState, t: jax.Array) -> jax.Array:
        del key
        return poison_past_horizon(state.y + state.exploration * state.direction, t, horizon)

    def update_fn(
        key: PRNGKey, state: FKMState, action: jax.Array, loss: jax.Array, t: jax.Array
    ) -> tuple[FKMState, NonfiniteInfo]:
        del key, action
        value, bad = zero_nonfinite(jnp.asarray(loss, jnp.float32))
        g = one_point.one_point_gradient(value, state.direction, state.exploration, p)
        y = one_point.project_shrunk(constraint, state.y - state.learning_rate * g, state.shrink)
        u = one_point.direction_at(state.sphere_key, t + 1, constraint)
        return state._replace(y=y, direction=u), NonfiniteInfo(bad)

    spec = Spec(private=False)
    return Learner(init_fn, act_fn, update_fn, check, horizon, spec=spec, returns_info=True)
