"""Row reads and writes at a shared (unbatched) index that stay in place under ``vmap``.

The engine batches a one-seed step over seeds with ``vmap``, and the step is written for one seed.
JAX batches ``lax.dynamic_update_slice`` by turning it into a ``scatter`` (even when the index is
the same for every seed), which XLA emits as a select over the whole array fused with the update:
a pass over every row of every seed's array at every step instead of a write of one row (measured on
an H200: ~175 µs per update at 10⁶ seeds for a ``[S, 12, 10]`` tree, four of them per PFTAL step).
``dynamic_slice`` likewise becomes a ``gather``.

``set_row`` and ``get_row`` are the same operations with their own batching rule: under ``vmap``
with an unbatched index they stay one ``dynamic_update_slice`` / ``dynamic_slice`` of the batched
array (the batch axes first, the row axis at a scalar index), which XLA updates in place and which
touches one row per seed. A batched index falls back to JAX's own rule. Derivatives (``jvp``,
``grad``, ``jacfwd``, under ``vmap`` or not) use the plain operations: the same values, JAX's rules.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax
from jax.custom_batching import custom_vmap


def _plain_set(array: jax.Array, rows: jax.Array, index: jax.Array) -> jax.Array:
    return lax.dynamic_update_slice_in_dim(array, rows.astype(array.dtype), index, array.ndim - 2)


def _plain_get(array: jax.Array, index: jax.Array) -> jax.Array:
    return lax.dynamic_index_in_dim(array, index, array.ndim - 2, keepdims=False)


def _broadcast(x: jax.Array, batched: bool, size: int) -> jax.Array:
    return x if batched else jnp.broadcast_to(x, (size, *x.shape))


@custom_vmap
def _set(array: jax.Array, row: jax.Array, index: jax.Array) -> jax.Array:
    return _plain_set(array, row, index)


@_set.def_vmap
def _set_vmap(size: int, batched: list[bool], array: jax.Array, row: jax.Array, index: jax.Array):
    array_b, row_b, index_b = batched
    if index_b:  # one index per seed: JAX's scatter
        return jax.vmap(_plain_set, (0 if array_b else None, 0 if row_b else None, 0))(array, row, index), True
    # The batch axis leads both; the row axis stays second to last, so a nested vmap batches this call again.
    return _set(_broadcast(array, array_b, size), _broadcast(row, row_b, size), index), True


@custom_vmap
def _get(array: jax.Array, index: jax.Array) -> jax.Array:
    return _plain_get(array, index)


@_get.def_vmap
def _get_vmap(size: int, batched: list[bool], array: jax.Array, index: jax.Array):
    array_b, index_b = batched
    if index_b:
        return jax.vmap(_plain_get, (0 if array_b else None, 0))(array, index), True
    return _get(array, index), array_b


@jax.custom_jvp
def set_rows(array: jax.Array, rows: jax.Array, index: jax.Array) -> jax.Array:
    """``array`` with rows ``index .. index + n - 1`` (of its second-to-last axis) replaced; in place under ``vmap``.

    Args:
      array: ``[..., R, d]``.
      rows: ``[..., n, d]`` with ``n <= R``, cast to ``array``'s dtype.
      index: an int32 scalar in ``[0, R - n]`` (clamped into range as ``lax.dynamic_update_slice`` does).
    """
    return _set(array, rows, index)


@set_rows.defjvp
def _set_rows_jvp(primals, tangents):
    array, rows, index = primals
    d_array, d_rows, _ = tangents
    return set_rows(array, rows, index), _plain_set(d_array, d_rows, index)


def set_row(array: jax.Array, row: jax.Array, index: jax.Array) -> jax.Array:
    """``array`` (``[..., R, d]``) with row ``index`` replaced by ``row`` (``[..., d]``); in place under ``vmap``."""
    return set_rows(array, row[..., None, :], index)


@jax.custom_jvp
def get_row(array: jax.Array, index: jax.Array) -> jax.Array:
    """Row ``index`` of ``array``'s second-to-last axis, ``[..., d]``; one ``dynamic_slice`` under ``vmap``."""
    return _get(array, index)


@get_row.defjvp
def _get_row_jvp(primals, tangents):
    array, index = primals
    d_array, _ = tangents
    return get_row(array, index), _plain_get(d_array, index)
