"""Dyadic (binary-tree) prefix sums on the shared clock: the core of the tree mechanism.

At step ``t`` (1-based) the node of level ``i = trailing_zeros(t)`` closes: it
absorbs the (still current) nodes of the levels below and ``x_t``. The prefix
sum at ``t`` is the sum of the released nodes at the set bits of ``t``. Because
``t`` is the same for every seed (an unbatched scalar under ``vmap``), the level
``i`` selects a branch (``lax.switch``) instead of masking every level: the work
per step is ``O((i + 1) d)``, ``O(d)`` amortised, instead of ``O(d log T)``.

The released prefix sum is kept as suffix sums: ``suffix[j]`` is the sum of
the released nodes at the set bits ``>= j`` of ``t`` (row ``D``, always zero,
closes the list). When level ``i`` closes at ``t``, the bits of ``t`` above ``i``
are those of ``t - 1``, so rows ``> i`` are unchanged and rows ``0..i`` all
become ``suffix[i + 1] + node_i``: the release. The branch of level ``i`` sums
the ``i`` levels below, reads one row and writes ``i + 1`` rows, all static
slices: ``O((i + 1) d)`` work, ``O(d)`` amortised (level ``i`` closes at a
fraction ``2^-(i+1)`` of the steps), and one branch per step.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp


class DyadicSums(NamedTuple):
    """Open dyadic sums over ``D`` levels.

    Attributes:
      exact: ``[D, d]``, the most recently closed node of each level (exact sums).
      suffix: ``[D + 1, d]``; row ``j`` is the sum of the released nodes at the set bits
        ``>= j`` of the current ``t``; row ``D`` is always zero. Row 0 is the release at ``t``.
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


def release_rows(suffix: jax.Array, released: jax.Array, i: int) -> tuple[jax.Array, jax.Array]:
    """Level ``i`` closes: rows ``0..i`` become ``suffix[i + 1] + released`` (static slices)."""
    value = suffix[i + 1] + released
    return suffix.at[: i + 1].set(jnp.broadcast_to(value, (i + 1, *value.shape))), value


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

    def close(i: int):
        # t is shared by all seeds (unbatched under vmap), so the level picks a branch
        # in which every slice is static: no dynamic slice for XLA to fuse into consumers.
        def branch(exact, suffix, x, *noise):
            node = x + jnp.sum(exact[:i], axis=0) if i else x
            suffix, value = release_rows(suffix, node + noise[0] if noise else node, i)
            return DyadicSums(exact.at[i].set(node), suffix), value

        return branch

    branches = [close(i) for i in range(sums.exact.shape[0])]
    extra = () if noise is None else (noise,)
    return jax.lax.switch(trailing_zeros(t), branches, sums.exact, sums.suffix, x, *extra)
