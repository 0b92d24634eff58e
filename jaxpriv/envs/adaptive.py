"""An adaptive adversary: quadratic losses whose targets push against the learner's past points."""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from jaxpriv import declare
from jaxpriv._base import Env, PRNGKey, Spec, static_args
from jaxpriv.envs._comparator import exact_comparator
from jaxpriv.envs.quadratic import (
    QuadraticStats,
    check_quadratic_params,
    quadratic_best_relative,
    quadratic_feedback,
    target_radius,
)
from jaxpriv.mechanisms import clip_l2
from jaxpriv.sets import ConstraintSet, require_projection


class AdaptiveParams(NamedTuple):
    """Params of the adaptive quadratic adversary.

    Attributes:
      strong_convexity: ``H > 0``.
      center: ``[d]`` (or a scalar, broadcast), the target before the push.
      push: ``>= 0``, how hard the target moves against the running mean of the learner's points.
      spread: ``>= 0``, per-coordinate standard deviation of the target's noise.
    """

    strong_convexity: ArrayLike = 1.0
    center: ArrayLike = 0.0
    push: ArrayLike = 1.0
    spread: ArrayLike = 0.1


class AdaptiveState(NamedTuple):
    strong_convexity: jax.Array  # shape=()
    center: jax.Array  # shape=[d]
    push: jax.Array  # shape=()
    spread: jax.Array  # shape=()
    mean_w: jax.Array  # shape=[d], running mean of the learner's points w_1..w_{t-1}
    reference: jax.Array  # shape=[d], c = Π_C(center), the fixed point of the relative regret


@declare.env("adaptive_quadratic", params=AdaptiveParams)
def adaptive_quadratic(constraint: ConstraintSet, z_radius: float | None = None) -> Env:
    """An adaptive adversary: ``f_t(w) = (H/2)||w - z_t||²`` with ``z_t`` chosen from the learner's past points.

    ``z_t = clip(center - push · mean(w_1..w_{t-1}) + spread·N(0, I), z_radius)``
    (``mean = 0`` at ``t = 1``): the target moves against where the learner
    has been, so a learner's losses depend on its own earlier points. The
    regret guarantees of PFTAL (Smith & Thakurta 2013, Theorem 4) and of OGD
    hold against adaptive adversaries like this one; the privacy guarantee of
    PFTAL does too (Appendix B.1, adaptive composition).

    Targets are clipped to ``||z_t||_2 <= z_radius`` (as documented: scaled back
    onto the ball). The losses are ``H``-strongly convex and
    ``L = H (||C|| + z_radius)``-Lipschitz on ``C``. The comparator is exact
    on the realised targets (the same closed form as ``quadratic_stream``, in the
    engine's ``relative`` mode with the fixed point ``c = Π_C(center)``).

    Args:
      constraint: the set the learner plays in.
      z_radius: the L2 bound of the targets (default: the set's radius).

    Returns:
      An ``Env`` with params ``AdaptiveParams``.
    """
    require_projection(constraint)
    dim = constraint.dim
    z_radius = target_radius(constraint, z_radius)

    def check(params: AdaptiveParams) -> None:
        check_quadratic_params(params, dim, ("push", "spread"))

    def reset_fn(key: PRNGKey, params: AdaptiveParams) -> AdaptiveState:
        del key
        return AdaptiveState(
            strong_convexity=jnp.asarray(params.strong_convexity, jnp.float32),
            center=jnp.broadcast_to(jnp.asarray(params.center, jnp.float32), (dim,)),
            push=jnp.asarray(params.push, jnp.float32),
            spread=jnp.asarray(params.spread, jnp.float32),
            mean_w=jnp.zeros((dim,), jnp.float32),
            reference=constraint.project(jnp.broadcast_to(jnp.asarray(params.center, jnp.float32), (dim,))),
        )

    def step_fn(key: PRNGKey, state: AdaptiveState, action: jax.Array, t: jax.Array):
        w = jnp.asarray(action, jnp.float32)
        noise = state.spread * jax.random.normal(key, (dim,), jnp.float32)
        z = clip_l2(state.center - state.push * state.mean_w + noise, z_radius)
        grad, info = quadratic_feedback(w, z, state.strong_convexity, state.reference)
        mean_w = state.mean_w + (w - state.mean_w) / jnp.asarray(t, jnp.float32)
        return state._replace(mean_w=mean_w), grad, info

    def best_relative(state: AdaptiveState, stats: QuadraticStats, t: jax.Array) -> jax.Array:
        return quadratic_best_relative(constraint, state.strong_convexity, stats, t, state.reference)

    comparator = exact_comparator(best_relative)
    spec = Spec(static=static_args(z_radius=z_radius), action_shape=(dim,), ndims=(("center", 1),))  # resolved
    return Env(reset_fn, step_fn, comparator, check, relative=True, exact=True, spec=spec)
