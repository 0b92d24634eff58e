"""Dyadic (binary-tree) prefix sums on the shared clock: the core of the tree mechanism.

At step ``t`` (1-based) the node of level ``i = trailing_zeros(t)`` closes: it
absorbs the (still current) nodes of the levels below and ``x_t``. The prefix
sum at ``t`` is the sum of the released nodes at the set bits of ``t``. Because
``t`` is the same for every seed (an unbatched scalar under ``vmap``), the level
``i`` selects a branch (``lax.switch``) instead of masking every level: the work
per step is ``O((i + 1) d)``, ``O(d)`` amortised, instead of ``O(d log T)``.

The released prefix sum is kept as suffix sums over the set bits: ``suffix[j]``
is the sum of the released nodes at the set bits ``>= j`` of ``t``. At step
``t`` the bits above ``i`` are those of ``t - 1``, bit ``i`` is set and the
bits below are clear, so ``suffix[j] = suffix[i + 1] + node_i`` for every
``j <= i`` and the rows above ``i`` do not change.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp


class DyadicSums(NamedTuple):
    """Open dyadic sums over ``D`` levels.

    Attributes:
      exact: ``[D, d]``, the most recently closed node of each level (exact sums).
      suffix: ``[D + 1, d]``, sums of the released nodes at the set bits ``>= j``
        of the current ``t``; row ``D`` is always zero. ``suffix[0]`` is the release.
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
    value = jax.lax.dynamic_index_in_dim(sums.suffix, level + 1, axis=0, keepdims=False) + released
    rows = jnp.arange(sums.suffix.shape[0], dtype=jnp.int32)[:, None]
    suffix = jnp.where(rows <= level, value, sums.suffix)
    return DyadicSums(exact, suffix), value
