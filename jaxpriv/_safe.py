"""Functions whose values are the plain code's and whose derivatives, to any order, are finite.

A ``jnp.where`` sends the branch it discards a zero cotangent; where that branch divides by a norm of
zero (or by a norm floored at ``tiny``, whose square is 0 in float32), the zero meets ``inf`` and gives
``0 · inf = NaN`` in every derivative (issue 45: ``jax.grad`` of PFTAL's loss through ``rollout`` was
NaN, and second order through the clipping still was). Guarding the plain code with more ``where``s
changes its compiled program (XLA no longer rewrites ``Δ / sqrt(s)`` as ``Δ · rsqrt(s)``, float32
rounding moves by ~1e-7), so the plain code stays as it is and ``smooth_derivatives`` takes its
derivatives from a second formulation of the same function written for differentiation.

Why the rule does not call the function for its primal output (as JAX's tutorial suggests): inside
``lax.scan``, the second differentiation of a ``custom_jvp`` rule's primal output drops the rule and
differentiates the plain code (JAX 0.10: ``grad(grad(...))`` of a scan over such a function is NaN,
while the same code unrolled is not). The primal output here is the plain value plus the smooth
formulation minus its own value held constant (an exact zero), so every order of differentiation, in a
scan or not, sees the smooth formulation.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp


def smooth_derivatives(smooth: Callable[..., Any]) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorate ``plain`` (positional array arguments) to differentiate as ``smooth``, to every order.

    Not differentiated, the decorated function is ``plain``: the same values and the same compiled
    program. Differentiated, its tangents are ``smooth``'s (``jax.jvp``), and its primal output is
    ``plain``'s value plus ``smooth(x) - stop_gradient(smooth(x))`` (zero, up to the sign of a zero
    output), whose derivatives are again ``smooth``'s. ``smooth`` must equal ``plain`` mathematically
    and be finite (with finite derivatives) wherever ``plain`` is.

    Args:
      smooth: the formulation whose derivatives are used.
    """

    def decorate(plain: Callable[..., Any]) -> Callable[..., Any]:
        fn = jax.custom_jvp(plain)

        def rule(primals: tuple[Any, ...], tangents: tuple[Any, ...]) -> tuple[Any, Any]:
            value = plain(*jax.lax.stop_gradient(primals))  # never differentiated (an outer order's neither)
            smooth_value, tangent = jax.jvp(smooth, primals, tangents)
            zero = jax.tree.map(lambda s: s - jax.lax.stop_gradient(s), smooth_value)
            out = jax.tree.map(lambda v, z: jax.lax.stop_gradient(v) + z, value, zero)
            return out, tangent

        fn.defjvp(rule)
        return fn

    return decorate


def _smooth_sqrt(x: jax.Array) -> jax.Array:
    positive = x > 0
    return jnp.where(positive, jnp.sqrt(jnp.where(positive, x, 1)), 0)


@smooth_derivatives(_smooth_sqrt)
def safe_sqrt(x: jax.Array) -> jax.Array:
    """``jnp.sqrt(x)`` whose derivatives at ``x <= 0`` are 0 instead of ``inf`` / NaN (every order)."""
    return jnp.sqrt(x)
