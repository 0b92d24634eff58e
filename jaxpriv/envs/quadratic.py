"""Strongly convex quadratic loss streams ``f_t(w) = (H/2)||w - z_t||²``."""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from jaxpriv import _rng, _validate, declare
from jaxpriv._base import Env, EnvInfo, PRNGKey, Spec, static_args
from jaxpriv._reduce import reduce_last
from jaxpriv.envs._comparator import exact_comparator
from jaxpriv.mechanisms import clip_l2
from jaxpriv.sets import ConstraintSet, require_projection

Z_DISTS = ("iid", "drift", "alternating")


class QuadraticParams(NamedTuple):
    """Params of the quadratic stream.

    Attributes:
      strong_convexity: ``H > 0``.
      center: ``[d]``, the mean of ``z_t`` before clipping.
      spread: ``>= 0``, the standard deviation of ``z_t`` around ``center`` per coordinate.
      drift: ``>= 0``, for ``z_dist="drift"``: the per-coordinate standard deviation
        of each step of the random walk followed by the mean (ignored otherwise).
    """

    strong_convexity: ArrayLike = 1.0
    center: ArrayLike = 0.0
    spread: ArrayLike = 0.3
    drift: ArrayLike = 0.05


class QuadraticState(NamedTuple):
    strong_convexity: jax.Array  # shape=()
    center: jax.Array  # shape=[d], the current mean of z_t (moves for z_dist="drift")
    spread: jax.Array  # shape=()
    drift: jax.Array | float = 0.0  # shape=(), step size of the mean's random walk
    reference: jax.Array | float = 0.0  # shape=[d], the fixed point c of the relative regret (Env.relative)


class QuadraticStats(NamedTuple):
    z: jax.Array  # shape=[d], z_t (summed by the engine)


def quadratic_best_relative(
    constraint: ConstraintSet, strong_convexity: jax.Array, stats: QuadraticStats, t: jax.Array, reference: jax.Array
) -> jax.Array:
    """``min_{w∈C} sum_{s<=t} f_s(w) - f_s(c)`` for ``f_s = (H/2)||w - z_s||²`` and a fixed point ``c``.

    ``sum_s f_s(w) - f_s(c) = (H t/2)(||w - m||² - ||c - m||²)`` with ``m = S/t``,
    minimised at ``Π_C(m)``: only ``S = sum z_s`` is needed and nothing of
    order ``t`` cancels (the engine's ``Env.relative`` mode).
    """
    tf = jnp.asarray(t, jnp.float32)
    mean = stats.z / tf
    best = constraint.project(mean)
    return 0.5 * strong_convexity * tf * (jnp.sum((best - mean) ** 2) - jnp.sum((reference - mean) ** 2))


def target_radius(constraint: ConstraintSet, z_radius: float | None) -> float:
    """The L2 bound of the targets: ``z_radius``, or the set's radius; finite and > 0."""
    z_radius = constraint.radius if z_radius is None else float(z_radius)
    if not 0 < z_radius < float("inf"):
        raise ValueError(f"z_radius must be a finite number > 0, got {z_radius!r}")
    return z_radius


def check_quadratic_params(params: Any, dim: int, nonnegative: tuple[str, ...]) -> None:
    """A quadratic stream's params: ``H > 0`` (finite), the fields named in ``nonnegative`` ``>= 0``, and a finite
    centre, a scalar or of trailing shape ``(dim,)`` (``quadratic_stream``'s and ``adaptive_quadratic``'s check)."""
    _validate.positive("strong_convexity", params.strong_convexity, allow_inf=False)
    for name in nonnegative:
        _validate.nonnegative(name, getattr(params, name))
    _validate.finite("center", params.center)
    if jnp.ndim(params.center) >= 1:
        _validate.trailing_shape("center", params.center, (dim,))


def quadratic_feedback(
    w: jax.Array, z: jax.Array, strong_convexity: jax.Array, reference: jax.Array
) -> tuple[jax.Array, EnvInfo]:
    """The gradient and ``EnvInfo`` of ``f(w) = (H/2)||w - z||²``, the regret relative to ``f(c)``.

    The loss's and the relative regret's sums over the coordinates are one reduction (of the stacked
    ``[2, d]`` terms): on the CPU two reductions are two passes that each recompute ``z`` (from the
    step's random words) and the learner's action from their inputs. XLA's cost analysis of the CPU
    sweep (d = 10): OGD 2787 -> 2360 B per seed-step, PFTAL 5710 -> 4856 (issue 36). The two sums are
    one variadic reduction (``lax.reduce`` over the pair): the stacked ``[2, d]`` terms are no longer
    written and read back (OGD 2415 -> 2255, PFTAL 4826 -> 4666 B, issue 47). The same sums in the same
    order (bit for bit in the sweeps checked); inside the engine's fused step the compiler may round
    them differently in the last bit. Above ``_reduce.ONE_PASS_MAX`` coordinates, two sums (vectorised
    loops: faster there, ``jaxpriv._reduce``).
    """
    diff = w - z
    c = reference
    sums = reduce_last((diff * diff, (w - c) * (w + c - 2.0 * z)), ("sum", "sum"))  # ||w - z||², f_t(w) - f_t(c)
    loss = 0.5 * strong_convexity * sums[0]
    grad = strong_convexity * diff
    relative = 0.5 * strong_convexity * sums[1]
    return grad, EnvInfo(loss=loss, regret=relative, stats=QuadraticStats(z))


@declare.env("quadratic_stream", params=QuadraticParams)
def quadratic_stream(constraint: ConstraintSet, z_radius: float | None = None, z_dist: str = "iid") -> Env:
    """Oblivious quadratic losses ``f_t(w) = (H/2)||w - z_t||²`` on a constraint set.

    ``z_t`` is drawn independently of the learner (common random numbers across
    learners and privacy levels) and clipped to the declared bound
    ``||z_t||_2 <= z_radius`` (a draw outside it is scaled back onto it):

    * ``"iid"``: ``z_t = clip(center + spread·N(0, I))``;
    * ``"drift"``: the mean follows a random walk, ``m_1 = center``,
      ``m_{t+1} = clip(m_t + drift·N(0, I))``, and ``z_t = clip(m_t + spread·N(0, I))``;
    * ``"alternating"``: an oblivious adversary, ``z_t = clip((-1)^(t+1) center + spread·N(0, I))``
      (``+center`` at odd steps, ``-center`` at even steps: the follow-the-leader
      worst case when ``spread = 0``).

    The feedback is the gradient ``H (w_t - z_t)``; on a set of radius ``R``
    the losses are ``H``-strongly convex and ``L = H (R + z_radius)``-Lipschitz.

    The comparator is exact whatever the distribution: ``Π_C(S/t)`` with
    ``S = sum z_s`` the realised sum. The environment is ``relative``
    (``jaxpriv.Env``): it reports ``f_t(w_t) - f_t(c)`` for the fixed point
    ``c = Π_C(center)`` (``Π_C(0)`` for ``"alternating"``) and the comparator
    ``min_w sum_s f_s(w) - f_s(c)`` (``quadratic_best_relative``), so the
    regret stays float32-accurate over long horizons.

    Args:
      constraint: the set the learner plays in (used for the comparator).
      z_radius: the L2 bound of ``z_t`` (default: the set's radius).
      z_dist: ``"iid"``, ``"drift"`` or ``"alternating"``.

    Returns:
      An ``Env`` with params ``QuadraticParams``.
    """
    require_projection(constraint)
    dim = constraint.dim
    z_radius = target_radius(constraint, z_radius)
    z_dist = _validate.choice("z_dist", z_dist, Z_DISTS)

    def check(params: QuadraticParams) -> None:
        check_quadratic_params(params, dim, ("spread", "drift"))

    def reset_fn(key: PRNGKey, params: QuadraticParams) -> QuadraticState:
        del key
        center = jnp.broadcast_to(jnp.asarray(params.center, jnp.float32), (dim,))
        reference = constraint.project(jnp.zeros_like(center) if z_dist == "alternating" else center)
        return QuadraticState(
            strong_convexity=jnp.asarray(params.strong_convexity, jnp.float32),
            center=jnp.broadcast_to(jnp.asarray(params.center, jnp.float32), (dim,)),
            spread=jnp.asarray(params.spread, jnp.float32),
            drift=jnp.asarray(params.drift, jnp.float32),
            reference=reference,
        )

    def step_fn(key: PRNGKey, state: QuadraticState, action: jax.Array, t: jax.Array):
        w = jnp.asarray(action, jnp.float32)
        # iid / alternating draw z_t from the step key itself (the stream of earlier versions);
        # the drifting mean takes a second key for its walk.
        k_z, k_walk = _rng.split(key) if z_dist == "drift" else (key, key)
        mean = state.center
        if z_dist == "alternating":
            mean = jnp.where(jnp.asarray(t, jnp.int32) % 2 == 1, 1.0, -1.0) * mean
        z = clip_l2(mean + state.spread * _rng.normal(k_z, (dim,), jnp.float32), z_radius)
        if z_dist == "drift":
            walk = clip_l2(state.center + state.drift * _rng.normal(k_walk, (dim,), jnp.float32), z_radius)
            state = state._replace(center=walk)
        grad, info = quadratic_feedback(w, z, state.strong_convexity, state.reference)
        return state, grad, info

    def best_relative(state: QuadraticState, stats: QuadraticStats, t: jax.Array) -> jax.Array:
        return quadratic_best_relative(constraint, state.strong_convexity, stats, t, state.reference)

    comparator = exact_comparator(best_relative)
    spec = Spec(static=static_args(z_radius=z_radius), action_shape=(dim,), ndims=(("center", 1),))  # resolved
    return Env(reset_fn, step_fn, comparator, check, relative=True, exact=True, spec=spec)
