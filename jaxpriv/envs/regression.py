"""Online linear regression on an i.i.d. stream, with the least-squares comparator over an L2 ball."""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from jaxpriv import _rng, _validate, declare
from jaxpriv._base import Env, EnvInfo, PRNGKey, Spec
from jaxpriv.mechanisms import clip_l2
from jaxpriv.sets import ConstraintSet

__all__ = [
    "RegressionFeedback",
    "RegressionParams",
    "RegressionState",
    "RegressionStats",
    "ball_least_squares",
    "regression_stream",
]

#: Bisection steps of the comparator's Lagrange multiplier (its bracket shrinks by 2^-40).
BISECTION_STEPS = 40


class RegressionParams(NamedTuple):
    """Params of ``regression_stream``.

    Attributes:
      w_star: ``[d]``, the true weights (the stream's mean response is ``<x, w*>``).
      noise_stddev: ``σ >= 0`` of the Gaussian response noise (responses are then clipped to ``[-1, 1]``).
    """

    w_star: ArrayLike
    noise_stddev: ArrayLike = 0.1


class RegressionState(NamedTuple):
    w_star: jax.Array  # shape=[d]
    noise_stddev: jax.Array  # shape=()


class RegressionFeedback(NamedTuple):
    """What the learner sees at step ``t``: the example ``(x_t, y_t)``."""

    x: jax.Array  # shape=[d]
    y: jax.Array  # shape=()


class RegressionStats(NamedTuple):
    """The summed sufficient statistics of the losses: ``Σ x xᵀ``, ``Σ y x``, ``Σ y²``."""

    gram: jax.Array  # shape=[d, d]
    cross: jax.Array  # shape=[d]
    yy: jax.Array  # shape=()


def ball_least_squares(
    gram: jax.Array, cross: jax.Array, yy: jax.Array, radius: float
) -> tuple[jax.Array, jax.Array, jax.Array]:
    """``min_{‖w‖ <= R} F(w) = wᵀAw - 2bᵀw + c``: ``(w, F(w), certified gap)``.

    ``A = Q diag(λ) Qᵀ``, ``β = Qᵀb``; ``w(μ) = Q β/(λ + μ)``. ``μ = 0`` if ``‖w(0)‖ <= R`` (``A`` definite),
    else the root of ``‖w(μ)‖ = R`` by bisection on ``[0, ‖b‖/R]`` (``‖w(‖b‖/R)‖ <= R`` for ``A ⪰ 0``); ``w``
    is then scaled into the ball. The gap is ``F(w) - g(μ)`` with ``g(μ) = c - Σ β²/(λ + μ) - μR²`` the
    Lagrange dual (a lower bound on the minimum for every ``μ >= 0`` with ``A + μI ≻ 0``): the minimum lies in
    ``[F(w) - gap, F(w)]``.
    """
    lam, q = jnp.linalg.eigh(0.5 * (gram + gram.T))
    lam = jnp.maximum(lam, 0.0)
    beta = q.T @ cross
    r2 = radius**2

    def norm2(mu):
        return jnp.sum(beta**2 / jnp.maximum(lam + mu, 1e-30) ** 2)

    def body(_, bracket):
        lo, hi = bracket
        mid = 0.5 * (lo + hi)
        big = norm2(mid) > r2
        return jnp.where(big, mid, lo), jnp.where(big, hi, mid)

    hi0 = jnp.linalg.norm(cross) / radius + 1e-30
    _, hi = jax.lax.fori_loop(0, BISECTION_STEPS, body, (jnp.zeros((), hi0.dtype), hi0))
    inside = (lam[0] > 0) & (norm2(0.0) <= r2)
    mu = jnp.where(inside, 0.0, hi)
    w = q @ (beta / jnp.maximum(lam + mu, 1e-30))
    w = w / jnp.maximum(1.0, jnp.linalg.norm(w) / radius)
    value = w @ gram @ w - 2.0 * cross @ w + yy
    dual = yy - jnp.sum(beta**2 / jnp.maximum(lam + mu, 1e-30)) - mu * r2
    return w, value, jnp.maximum(value - dual, 0.0)


@declare.env("regression_stream", params=RegressionParams)
def regression_stream(constraint: ConstraintSet, feedback: str = "example") -> Env:
    """Online linear regression: ``f_t(w) = (<x_t, w> - y_t)²`` on an L2 ball (JKT12's PQFTL setting).

    ``x_t = clip_l2(g/√d, 1)``, ``g ~ N(0, I_d)``, i.i.d. (oblivious); ``y_t = clip(<x_t, w*> + σ η, -1, 1)``.
    So ``‖x_t‖ <= 1`` and ``|y_t| <= 1``: the bounds private learners clip to. The feedback is the example
    ``(x_t, y_t)`` (``RegressionFeedback``); the losses' statistics ``(x xᵀ, y x, y²)`` are summed by the
    engine, and the comparator solves ``min_{‖w‖ <= R} Σ_s f_s(w)`` (``ball_least_squares``) with a certified
    Lagrange-dual gap.

    With ``feedback="gradient"`` the feedback is instead the loss's gradient at the played point,
    ``2(<x_t, w_t> - y_t) x_t`` (norm ``<= 2(R + 1)``), for the learners that take gradients (PFTAL, POCP); the
    draws are the same (the stream is oblivious: the same seed keys give the same examples for either feedback).
    The losses are convex, not strongly convex (the Hessian ``2 x_t x_tᵀ`` has rank one; its mean is ``(2/d) I``
    before clipping): a strongly convex learner runs outside its theorem here.

    Args:
      constraint: an ``l2_ball`` (its radius is the comparator's ``R``).
      feedback: ``"example"`` (``(x_t, y_t)``) or ``"gradient"``.

    Returns:
      An ``Env`` with params ``RegressionParams``.
    """
    if constraint.name != "l2_ball":
        raise ValueError(
            f"constraint must be an l2_ball (the comparator is least squares on a ball), got {constraint.name!r}"
        )
    dim, radius = constraint.dim, float(constraint.radius)
    feedback = _validate.choice("feedback", feedback, ("example", "gradient"))

    def check(params: RegressionParams) -> None:
        _validate.finite("w_star", params.w_star)
        _validate.trailing_shape("w_star", params.w_star, (dim,))
        _validate.nonnegative("noise_stddev", params.noise_stddev)

    def reset_fn(key: PRNGKey, params: RegressionParams) -> RegressionState:
        del key
        return RegressionState(jnp.asarray(params.w_star, jnp.float32), jnp.asarray(params.noise_stddev, jnp.float32))

    def step_fn(key: PRNGKey, state: RegressionState, action: jax.Array, t: jax.Array):
        del t
        k_x, k_y = _rng.split(key)
        x = clip_l2(_rng.normal(k_x, (dim,), jnp.float32) / jnp.sqrt(float(dim)), 1.0)
        y = jnp.clip(x @ state.w_star + state.noise_stddev * _rng.normal(k_y, (), jnp.float32), -1.0, 1.0)
        w = jnp.asarray(action, jnp.float32)
        loss = (x @ w - y) ** 2
        stats = RegressionStats(jnp.outer(x, x), y * x, y * y)
        given = RegressionFeedback(x, y) if feedback == "example" else 2.0 * (x @ w - y) * x
        return state, given, EnvInfo(loss=loss, regret=jnp.zeros((), jnp.float32), stats=stats)

    def comparator(state: RegressionState, stats: RegressionStats, t: jax.Array) -> tuple[jax.Array, jax.Array]:
        del state, t
        _, value, gap = ball_least_squares(stats.gram, stats.cross, stats.yy, radius)
        return value, gap

    spec = Spec(action_shape=(dim,), ndims=(("w_star", 1),))
    return Env(reset_fn, step_fn, comparator, check, spec=spec)
