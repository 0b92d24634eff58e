"""Strongly convex quadratic loss streams ``f_t(w) = (H/2)||w - z_t||²``."""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from jaxpriv import _validate
from jaxpriv._base import Env, EnvInfo, PRNGKey
from jaxpriv.sets import ConstraintSet


class QuadraticParams(NamedTuple):
    """Params of the quadratic stream.

    Attributes:
      strong_convexity: ``H > 0``.
      center: ``[d]``, the mean of ``z_t`` before clipping.
      spread: ``>= 0``, the standard deviation of ``z_t`` around ``center`` per coordinate.
    """

    strong_convexity: ArrayLike = 1.0
    center: ArrayLike = 0.0
    spread: ArrayLike = 0.3

    NDIMS = {"center": 1}


class QuadraticState(NamedTuple):
    strong_convexity: jax.Array  # shape=()
    center: jax.Array  # shape=[d]
    spread: jax.Array  # shape=()


class QuadraticStats(NamedTuple):
    z: jax.Array  # shape=[d], z_t (summed by the engine)
    z_sq: jax.Array  # shape=(), ||z_t||² (summed by the engine)


def quadratic_stream(constraint: ConstraintSet, z_radius: float | None = None) -> Env:
    """Oblivious i.i.d. quadratic losses ``f_t(w) = (H/2)||w - z_t||²`` on a constraint set.

    ``z_t = clip(center + spread·N(0, I), z_radius)``, drawn independently of
    the learner (common random numbers across learners and privacy levels).
    The feedback is the gradient ``H (w_t - z_t)``; on a set of radius ``R``
    the losses are ``H``-strongly convex and ``L = H (R + z_radius)``-Lipschitz.

    The comparator is exact: ``sum_s f_s(w) = (H/2) sum ||z_s||² - H<w, S> +
    (H t/2)||w||²`` with ``S = sum z_s``, minimised over ``C`` at
    ``Π_C(S/t)``.

    Args:
      constraint: the set the learner plays in (used for the comparator).
      z_radius: the L2 bound of ``z_t`` (default: the set's radius).

    Returns:
      An ``Env`` with params ``QuadraticParams``.
    """
    dim = constraint.dim
    z_radius = constraint.radius if z_radius is None else float(z_radius)
    if not 0 < z_radius < float("inf"):
        raise ValueError(f"z_radius must be a finite number > 0, got {z_radius!r}")

    def check(params: QuadraticParams) -> None:
        _validate.positive("strong_convexity", params.strong_convexity, allow_inf=False)
        _validate.nonnegative("spread", params.spread)
        if jnp.ndim(params.center) >= 1:
            _validate.trailing_shape("center", params.center, (dim,))

    def reset_fn(key: PRNGKey, params: QuadraticParams) -> QuadraticState:
        del key
        return QuadraticState(
            strong_convexity=jnp.asarray(params.strong_convexity, jnp.float32),
            center=jnp.broadcast_to(jnp.asarray(params.center, jnp.float32), (dim,)),
            spread=jnp.asarray(params.spread, jnp.float32),
        )

    def step_fn(key: PRNGKey, state: QuadraticState, action: jax.Array, t: jax.Array):
        del t
        w = jnp.asarray(action, jnp.float32)
        z = state.center + state.spread * jax.random.normal(key, (dim,), jnp.float32)
        norm = jnp.sqrt(jnp.sum(z * z))
        z = z * jnp.minimum(1.0, z_radius / jnp.maximum(norm, 1e-30))
        diff = w - z
        loss = 0.5 * state.strong_convexity * jnp.sum(diff * diff)
        grad = state.strong_convexity * diff
        info = EnvInfo(loss=loss, regret=jnp.zeros((), jnp.float32), stats=QuadraticStats(z, jnp.sum(z * z)))
        return state, grad, info

    def comparator(state: QuadraticState, stats: QuadraticStats, t: jax.Array) -> jax.Array:
        t = jnp.asarray(t, jnp.float32)
        mean = stats.z / t
        best = constraint.project(mean)
        # (H/2)[sum||z||² - t||mean||²] + (H t/2)||best - mean||², written to limit cancellation.
        spread = stats.z_sq - t * jnp.sum(mean * mean)
        gap = best - mean
        return 0.5 * state.strong_convexity * (jnp.maximum(spread, 0.0) + t * jnp.sum(gap * gap))

    return Env(reset_fn, step_fn, comparator, check)
