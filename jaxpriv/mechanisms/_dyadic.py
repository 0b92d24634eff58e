"""Dyadic (binary-tree) prefix sums on the shared clock: the core of the tree mechanism, branch-free.

At step ``t`` (1-based) the node of level ``i = trailing_zeros(t)`` closes: it absorbs the
most recently closed nodes of the levels below (the block ``(t - 2^i, t - 1]``) and ``x_t``.
The prefix sum at ``t`` is the sum of the released nodes at the set bits of ``t``. Because ``t``
is the same for every seed (an unbatched scalar under ``vmap``), everything that depends on the
level is scalar arithmetic on the clock, and each step reads three rows and writes two, ``O(d)``
whatever the depth ``D``, with no branch (a ``lax.switch`` over levels is a conditional launch per
step on a GPU) and no pass over the other rows. Rows are written and read with
``jaxpriv._inplace.set_row`` / ``get_row``, which stay in-place updates under the engine's ``vmap``.

Two structures of ``D + 1`` rows (row ``D`` is always zero), side by side in one array:

* ``runs`` (the exact node sums): when level ``k`` closes at ``s``, row ``k`` becomes
  ``node_k + runs[k + 1]`` if bit ``k + 1`` of ``s`` is set, else ``node_k``: the sum of the nodes
  of the run of consecutive set bits of ``s`` that starts at ``k``. At ``t`` with ``i >= 1`` the bits
  ``0..i-1`` of ``t - 1`` are set and bit ``i`` is clear, so ``runs[0]`` (written at ``t - 1``) is
  the sum of the nodes of levels ``0..i-1``: what node ``i`` absorbs. Each sum adds at most ``D``
  node sums of small blocks, so the rounding error stays ``O(log t)`` ulps, as with the tree's
  level-by-level sum (a running sum would drift ``O(t)`` ulps).
* ``suffix`` (the released prefix sums): for a set bit ``j`` of ``t``, ``suffix[j]`` is the sum of
  the released nodes at the set bits ``>= j`` of ``t``; rows at clear bits are stale and never
  read. At ``t`` the bits above ``i`` are those of ``t - 1``, so the release is ``suffix[k] +
  node_i`` (plus its noise) with ``k`` the next set bit of ``t`` above ``i`` (row ``D`` when there is
  none), and it is written to row ``i``.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxpriv._inplace import get_row, set_row, set_rows


class DyadicSums(NamedTuple):
    """Open dyadic sums over ``D`` levels, in one array so that a step writes one block.

    Attributes:
      rows: ``[2(D + 1), d]``; rows ``2k`` and ``2k + 1`` are ``runs_k`` and ``suffix_k``. ``runs_k``,
        written when level ``k`` last closed (at ``s``), is the sum of the exact nodes at the run of
        consecutive set bits of ``s`` from ``k`` up. ``suffix_k``, at a set bit ``k`` of the current
        ``t``, is the sum of the released nodes at the set bits ``>= k`` (stale at clear bits);
        ``suffix`` at ``trailing_zeros(t)`` is the release at ``t``. Level ``D`` is always zero.
        Keeping both structures in one array keeps XLA from copying an array to order a read of one
        after the write of the other.
      pending: ``[2, d]``, the two rows of the level that closed at the last step, not yet in ``rows``:
        a step first writes the previous step's rows (``pending`` is a loop-carried buffer, so the
        write is a plain in-place copy of ``2d`` numbers), then reads, then leaves its own rows pending.
        Written in the same step as they are computed, the update would fuse the whole step's
        arithmetic (the noise draw included) into XLA's in-place update, which the CPU runs as a scalar
        loop: 2-4x slower per step (measured, one core, d = 10).
    """

    rows: jax.Array
    pending: jax.Array


def dyadic_init(depth: int, dim: int, dtype=jnp.float32) -> DyadicSums:
    """Empty sums over ``depth`` levels of ``dim`` columns."""
    return DyadicSums(jnp.zeros((2 * (depth + 1), dim), dtype), jnp.zeros((2, dim), dtype))


def trailing_zeros(t: jax.Array) -> jax.Array:
    """The level that closes at ``t >= 1``: the number of trailing zero bits of ``t``."""
    t = jnp.asarray(t, jnp.int32)
    return 31 - jax.lax.clz(t & -t)


def _bit(t: jax.Array, k: jax.Array) -> jax.Array:
    """Whether bit ``k`` of ``t`` is set (``0 <= k <= 31``)."""
    return (jax.lax.shift_right_logical(t, k) & 1) == 1


def _higher(t: jax.Array, depth: int) -> jax.Array:
    """The next set bit of ``t`` above its lowest, or ``depth`` (the zero level) when there is none."""
    rest = t & (t - 1)  # t without its lowest set bit
    return jnp.where(rest == 0, depth, trailing_zeros(rest))


def _flushed(sums: DyadicSums, t: jax.Array) -> jax.Array:
    """``rows`` with the previous step's pending rows written (at ``t = 1``: zeros into the zero level ``D``)."""
    depth = sums.rows.shape[-2] // 2 - 1
    previous = jnp.where(t > 1, trailing_zeros(jnp.maximum(t - 1, 1)), depth)
    return set_rows(sums.rows, sums.pending, 2 * previous)


def dyadic_step(
    sums: DyadicSums, x: jax.Array, t: jax.Array, noise: jax.Array | None = None
) -> tuple[DyadicSums, jax.Array]:
    """Add ``x_t``; return the new sums and the prefix sum of the released nodes at ``t``.

    Steps are consecutive (``t = 1, 2, ...``, as the engine and ``prefix_sums`` run them): a step
    writes the previous step's two rows, reads three (``runs_0``, ``runs_{i+1}``, ``suffix_k``) and
    leaves level ``i``'s two rows pending.

    Args:
      sums: the current sums.
      x: ``[d]``, the input at ``t``.
      t: the 1-based step, ``1 <= t < 2^D``.
      noise: ``[d]`` added to the closing node when it is released (``None``: no noise).

    Returns:
      ``(sums, release)``: with ``noise=None`` the release is the exact
      ``sum_{s<=t} x_s`` (rounding error ``O(log t)`` ulps).
    """
    t = jnp.asarray(t, jnp.int32)
    rows = _flushed(sums, t)
    depth = rows.shape[-2] // 2 - 1
    level = trailing_zeros(t)
    below = jnp.where(level > 0, get_row(rows, jnp.int32(0)), 0)  # the nodes of levels < i, closed since
    node = x.astype(rows.dtype) + below
    above = jnp.where(_bit(t, level + 1), get_row(rows, 2 * level + 2), 0)  # the rest of t's run of set bits
    released = node if noise is None else node + noise
    value = get_row(rows, 2 * _higher(t, depth) + 1) + released
    return DyadicSums(rows, jnp.stack([node + above, value], axis=-2)), value


def dyadic_total(sums: DyadicSums, t: jax.Array) -> jax.Array:
    """The release of the step ``t`` that produced ``sums`` (its pending suffix row)."""
    del t
    return sums.pending[..., 1, :]


def suffix_step(suffix: jax.Array, released: jax.Array, t: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Add the node released at ``t`` to the suffix sums ``[D + 1, d]``; return them and the sum of released nodes.

    One row read (the next set bit of ``t`` above its lowest, or the zero row ``D``)
    and one row written (the lowest set bit): ``O(d)`` per step whatever ``D``.
    """
    t = jnp.asarray(t, jnp.int32)
    value = get_row(suffix, _higher(t, suffix.shape[-2] - 1)) + released
    return set_row(suffix, value, trailing_zeros(t)), value
