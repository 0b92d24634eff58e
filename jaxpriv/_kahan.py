"""Compensated (Kahan) summation over pytrees: float32 running sums that stay accurate over long horizons.

The one accumulator of jaxpriv (the engine's running loss / regret / statistics sums, the
window tree's exact sum, the episodic UCB's episode reward sums). Pure functions on a
``KahanSum(total, compensation)`` pair of pytrees of the same structure; each leaf is
updated with exactly

    ``y = x - c``;  ``s' = s + y``;  ``c' = (s' - s) - y``

in the leaves' dtype: the same operations, in the same order, as the formula written out
by hand, so replacing a hand-written accumulator by this one leaves its numbers bit for bit.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp


class KahanSum(NamedTuple):
    """A compensated running sum.

    Attributes:
      total: the running sum (a pytree of arrays).
      compensation: the rounding error of ``total`` still to subtract (same structure
        as ``total``; zero at the start).
    """

    total: Any
    compensation: Any


def kahan_init(like: Any) -> KahanSum:
    """An empty sum shaped like ``like`` (a pytree of arrays): zero total, zero compensation."""
    zeros = jax.tree.map(jnp.zeros_like, like)
    return KahanSum(zeros, zeros)


def _add_leaf(total: jax.Array, compensation: jax.Array, x: jax.Array) -> tuple[jax.Array, jax.Array]:
    y = x - compensation
    new_compensation = ((total + y) - total) - y
    # The new total is ``total + y``, written so that it reads the new compensation: ``where(~(c' > inf), y,
    # 0)`` is ``y`` for every ``c'`` (NaN included), but XLA cannot drop it. So the kernel that writes the
    # total in place runs after the one that computes the compensation from the old total, and neither the
    # old total is copied nor ``total + y`` written out and read back (a sum of ``[d]`` in a scan: 489 -> 409
    # B per seed-step on XLA's CPU compile, issue 47). The same operations in the same order: bit for bit.
    return total + jnp.where(~(new_compensation > jnp.inf), y, 0.0), new_compensation


def kahan_add(acc: tuple[Any, Any], x: Any) -> KahanSum:
    """``acc + x`` with Kahan compensation, leaf by leaf.

    Args:
      acc: a ``KahanSum`` (or any ``(total, compensation)`` pair of pytrees of the same structure).
      x: the term to add, a pytree with the structure of ``acc.total`` (leaves broadcast as
        in ``total + x``).

    Returns:
      The updated ``KahanSum``; ``total`` holds the sum.
    """
    total, compensation = acc
    pairs = jax.tree.map(_add_leaf, total, compensation, x)
    treedef = jax.tree.structure(total)
    leaves = treedef.flatten_up_to(pairs)
    return KahanSum(treedef.unflatten([p[0] for p in leaves]), treedef.unflatten([p[1] for p in leaves]))
