"""Dyadic (binary-tree) prefix sums on the shared clock: the core of the tree mechanism.

At step ``t`` (1-based) the node of level ``i = trailing_zeros(t)`` closes: it
absorbs the (still current) nodes of the levels below and ``x_t``. The prefix
sum at ``t`` is the sum of the released nodes at the set bits of ``t``. Because
``t`` is the same for every seed (an unbatched scalar under ``vmap``), the level
``i`` selects a branch (``lax.switch``) instead of masking every level: the work
per step is ``O((i + 1) d)``, ``O(d)`` amortised, instead of ``O(d log T)``.

The released prefix sum is kept as suffix sums over the set bits: for a set
bit ``j`` of ``t``, ``suffix[j]`` is the sum of the released nodes at the set
bits ``>= j`` of ``t``; rows at clear bits are stale and never read. At step
``t`` the bits above ``i`` are those of ``t - 1``, so the release is
``suffix[k] + node_i`` with ``k`` the next set bit of ``t`` above ``i`` (row
``D``, always zero, when there is none): row ``k`` was written when level
``k`` last closed and only levels below ``i`` have closed since. The release
is written to row ``i`` alone: one row read and one row written per step,
``O(d)`` whatever ``D``.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp


class DyadicSums(NamedTuple):
    """Open dyadic sums over ``D`` levels.

    Attributes:
      exact: ``[D, d]``, the most recently closed node of each level (exact sums).
      suffix: ``[D + 1, d]``; at a set bit ``j`` of the current ``t``, the sum of the
        released nodes at the set bits ``>= j`` (rows at clear bits are stale); row
        ``D`` is always zero. Row ``trailing_zeros(t)`` is the release at ``t``.
    """

    exact: jax.Array
    suffix: jax.Array


def dyadic_init(depth: int, dim: int, dtype=jnp.float32) -> DyadicSums:
    """Empty sums over ``depth`` levels of ``dim`` columns."""
    return DyadicSums(jnp.zeros((depth, dim), dtype), jnp.zeros((depth + 1, dim), dtype))


def trailing_zeros(t: jax.Array) -> jax.Array:
    """The level that closes at ``t >= 1``: the number of trailing zero bits of ``t``."""
    t = jnp.asarray(t, jnp.int32)
    return 31 - jax.lax.clz(t & -t)


def _sum_below(exact: jax.Array, level: jax.Array) -> jax.Array:
    """``sum(exact[:level])`` with a static slice per level: ``O(level·d)`` work."""

    def below(i: int):
        return lambda e: jnp.sum(e[:i], axis=0) if i else jnp.zeros_like(e[0])

    return jax.lax.switch(level, [below(i) for i in range(exact.shape[0])], exact)


def dyadic_step(
    sums: DyadicSums, x: jax.Array, t: jax.Array, noise: jax.Array | None = None
) -> tuple[DyadicSums, jax.Array]:
    """Add ``x_t``; return the new sums and the prefix sum of the released nodes at ``t``.

    Args:
      sums: the current sums.
      x: ``[d]``, the input at ``t``.
      t: the 1-based step, ``1 <= t < 2^D``.
      noise: ``[d]`` added to the closing node when it is released (``None``: no noise).

    Returns:
      ``(sums, release)``: with ``noise=None`` the release is the exact
      ``sum_{s<=t} x_s`` (rounding error ``O(log t)`` ulps).
    """
    level = trailing_zeros(t)
    node = x + _sum_below(sums.exact, level)
    released = node if noise is None else node + noise
    exact = jax.lax.dynamic_update_slice_in_dim(sums.exact, node[None], level, axis=0)
    suffix, value = suffix_step(sums.suffix, released, t)
    return DyadicSums(exact, suffix), value


def suffix_step(suffix: jax.Array, released: jax.Array, t: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Add the node released at ``t`` to the suffix sums ``[D + 1, d]``; return them and the sum of released nodes.

    One row read (the next set bit of ``t`` above its lowest, or the zero row ``D``)
    and one row written (the lowest set bit): ``O(d)`` per step whatever ``D``.
    """
    depth = suffix.shape[0] - 1
    t = jnp.asarray(t, jnp.int32)
    rest = t & (t - 1)  # t without its lowest set bit
    higher = jnp.where(rest == 0, depth, trailing_zeros(rest))
    # The row is read in a branch (a static slice each), not by a dynamic slice: XLA fuses a
    # dynamic slice into every consumer of the sum and then copies the whole buffer to keep
    # the write below in place (measured: two copies of [D + 1, d] per step).
    value = jax.lax.switch(higher, [lambda s, k=k: s[k] for k in range(depth + 1)], suffix) + released
    suffix = jax.lax.dynamic_update_slice_in_dim(suffix, value[None], trailing_zeros(t), axis=0)
    return suffix, value
