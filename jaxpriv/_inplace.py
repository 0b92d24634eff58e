"""Row reads and writes at a shared (unbatched) index that stay in place under ``vmap``.

The engine batches a one-seed step over seeds with ``vmap``, and the step is written for one seed.
JAX batches ``lax.dynamic_update_slice`` by turning it into a ``scatter`` (even when the index is
the same for every seed), which XLA emits as a select over the whole array fused with the update:
a pass over every row of every seed's array at every step instead of a write of one row (measured on
an H200: ~175 µs per update at 10⁶ seeds for a ``[S, 12, 10]`` tree, four of them per PFTAL step).
``dynamic_slice`` likewise becomes a ``gather``.

``set_rows`` / ``set_row`` and ``get_row`` are the same operations as two primitives of their own
(``set_rows_p``, ``get_rows_p``, lowered to ``dynamic_update_slice`` / ``dynamic_slice`` on the
second-to-last axis, whatever the leading axes) with their own batching rule: under ``vmap`` with an
unbatched index they bind the same primitive on the batched array (the batch axis first, the row
axis at a scalar index), which XLA updates in place and which touches one row per seed. A batched
index falls back to JAX's own rule (a ``scatter`` / ``gather``).

Derivatives compose to any order (``jax.hessian``, ``grad(grad)``, ``jacfwd(jacrev)``, under ``vmap``
or not): both primitives are linear in their arrays, so a JVP is the primitive itself applied to
the tangents, and each transposes into the other (a write's cotangent is the cotangent with the
rows zeroed and the rows read; a read's is a write of the cotangent into zeros). Every rule binds
only these two primitives, at a scalar index that no transformation batches, so nothing recurses.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from jax import lax
from jax.extend.core import Primitive
from jax.interpreters import ad, batching, mlir


def _plain_set(array: jax.Array, rows: jax.Array, index: jax.Array) -> jax.Array:
    return lax.dynamic_update_slice_in_dim(array, rows, index, array.ndim - 2)


def _plain_get(array: jax.Array, index: jax.Array, *, n: int) -> jax.Array:
    return lax.dynamic_slice_in_dim(array, index, n, array.ndim - 2)


set_rows_p = Primitive("jaxpriv_set_rows")
get_rows_p = Primitive("jaxpriv_get_rows")


# --- evaluation and lowering: the plain operations on the last two axes ---------------------------

set_rows_p.def_impl(_plain_set)
get_rows_p.def_impl(_plain_get)
set_rows_p.def_abstract_eval(lambda array, rows, index: array)
get_rows_p.def_abstract_eval(lambda array, index, *, n: array.update(shape=(*array.shape[:-2], n, array.shape[-1])))
mlir.register_lowering(set_rows_p, mlir.lower_fun(_plain_set, multiple_results=False))
mlir.register_lowering(get_rows_p, mlir.lower_fun(_plain_get, multiple_results=False))


# --- batching: the batch axis in front of the same primitive (an unbatched index) ------------------


def _set_batch(args: Any, dims: Any) -> tuple[jax.Array, int]:
    array, rows, index = args
    array_d, rows_d, index_d = dims
    if index_d is not None:  # one index per seed: JAX's scatter
        return jax.vmap(_plain_set, (array_d, rows_d, index_d))(array, rows, index), 0
    size = next(x.shape[d] for x, d in ((array, array_d), (rows, rows_d)) if d is not None)
    array = batching.bdim_at_front(array, array_d, size)
    rows = batching.bdim_at_front(rows, rows_d, size)
    return set_rows_p.bind(array, rows, index), 0


def _get_batch(args: Any, dims: Any, *, n: int) -> tuple[jax.Array, int]:
    array, index = args
    array_d, index_d = dims
    if index_d is not None:  # one index per seed: JAX's gather
        return jax.vmap(lambda a, i: _plain_get(a, i, n=n), (array_d, index_d))(array, index), 0
    return get_rows_p.bind(jnp.moveaxis(array, array_d, 0), index, n=n), 0


batching.primitive_batchers[set_rows_p] = _set_batch
batching.primitive_batchers[get_rows_p] = _get_batch


# --- derivatives: linear in the arrays; each primitive transposes into the other -------------------


def _set_jvp(primals: Any, tangents: Any) -> tuple[jax.Array, Any]:
    array, rows, index = primals
    d_array, d_rows, _ = tangents
    out = set_rows_p.bind(array, rows, index)
    if type(d_array) is ad.Zero and type(d_rows) is ad.Zero:
        return out, ad.Zero.from_primal_value(out)
    d_array = ad.instantiate_zeros(d_array)
    d_rows = ad.instantiate_zeros(d_rows)
    return out, set_rows_p.bind(d_array, d_rows, index)


def _get_jvp(primals: Any, tangents: Any, *, n: int) -> tuple[jax.Array, Any]:
    array, index = primals
    d_array, _ = tangents
    out = get_rows_p.bind(array, index, n=n)
    if type(d_array) is ad.Zero:
        return out, ad.Zero.from_primal_value(out)
    return out, get_rows_p.bind(d_array, index, n=n)


def _aval(x: Any) -> Any:
    return x.aval if ad.is_undefined_primal(x) else jax.typeof(x)


def _set_transpose(ct: Any, array: Any, rows: Any, index: jax.Array) -> list[Any]:
    if ad.is_undefined_primal(index):
        raise ValueError("jaxpriv._inplace.set_rows is not linear in its index")
    rows_aval = _aval(rows)
    ct_array = ct_rows = None
    if ad.is_undefined_primal(array):
        if type(ct) is ad.Zero:
            ct_array = ad.Zero(array.aval)
        else:
            ct_array = set_rows_p.bind(ct, jnp.zeros(rows_aval.shape, rows_aval.dtype), index)
    if ad.is_undefined_primal(rows):
        if type(ct) is ad.Zero:
            ct_rows = ad.Zero(rows.aval)
        else:
            ct_rows = get_rows_p.bind(ct, index, n=rows_aval.shape[-2])
    return [ct_array, ct_rows, None]


def _get_transpose(ct: Any, array: Any, index: jax.Array, *, n: int) -> list[Any]:
    if ad.is_undefined_primal(index):
        raise ValueError("jaxpriv._inplace.get_row is not linear in its index")
    if type(ct) is ad.Zero:
        return [ad.Zero(array.aval), None]
    aval = array.aval
    return [set_rows_p.bind(jnp.zeros(aval.shape, aval.dtype), ct, index), None]


ad.primitive_jvps[set_rows_p] = _set_jvp
ad.primitive_jvps[get_rows_p] = _get_jvp
ad.primitive_transposes[set_rows_p] = _set_transpose
ad.primitive_transposes[get_rows_p] = _get_transpose


# --- the functions the mechanisms call ------------------------------------------------------------


def set_rows(array: jax.Array, rows: jax.Array, index: jax.Array) -> jax.Array:
    """``array`` with rows ``index .. index + n - 1`` (of its second-to-last axis) replaced; in place under ``vmap``.

    Args:
      array: ``[..., R, d]``.
      rows: ``[..., n, d]`` with ``n <= R``, cast to ``array``'s dtype.
      index: an int32 scalar in ``[0, R - n]`` (clamped into range as ``lax.dynamic_update_slice`` does).
    """
    array = jnp.asarray(array)
    rows = jnp.asarray(rows).astype(array.dtype)
    return set_rows_p.bind(array, rows, jnp.asarray(index))


def set_row(array: jax.Array, row: jax.Array, index: jax.Array) -> jax.Array:
    """``array`` (``[..., R, d]``) with row ``index`` replaced by ``row`` (``[..., d]``); in place under ``vmap``."""
    return set_rows(array, jnp.asarray(row)[..., None, :], index)


def get_row(array: jax.Array, index: jax.Array) -> jax.Array:
    """Row ``index`` of ``array``'s second-to-last axis, ``[..., d]``; one ``dynamic_slice`` under ``vmap``."""
    array = jnp.asarray(array)
    return lax.squeeze(get_rows_p.bind(array, jnp.asarray(index), n=1), (array.ndim - 2,))


def computed_once(x: jax.Array) -> jax.Array:
    """``x`` itself, exact for every ``x`` (``±inf`` kept, NaN stays NaN), which XLA's CPU compile then computes once.

    ``x / (1 + 0·min(|x|, 1))``: the divisor is exactly 1 for every non-NaN ``x``. XLA treats the division as
    expensive and does not duplicate it into the kernels that read ``x``, so ``x`` is written once and each
    consumer reads it, instead of fusing the arithmetic behind ``x`` into every consumer, each of which then
    re-reads all of its inputs. (``jaxpriv._rng.computed_once`` is the same for the samplers' finite draws.)
    Derivatives are those of ``x``.
    """
    return x / (1.0 + 0.0 * jnp.minimum(jnp.abs(x), 1.0))
