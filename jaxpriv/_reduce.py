"""Several reductions over the last axis of one row: one variadic reduction for a short row, one each for a long one.

XLA's CPU compile emits a variadic ``lax.reduce`` (several outputs from one loop) as one kernel that reads its
inputs once, where separate reductions are a kernel each that re-reads them (recomputing the arithmetic behind
them: a draw, a clipped gradient). But it does not vectorise a variadic reduction's loop: the loop is scalar, one
add per entry and output in a chain, while a single reduction's loop is vector code. Short rows favour the one
pass, long rows the separate reductions. Measured in one process (issue 47, one pinned core, 1024 seeds,
T = 2048, the compiled sweeps of both forms timed alternated, the machine otherwise near idle), the one pass's
speed relative to separate reductions: OGD at d = 10 / 16 / 24 / 32 / 48 / 64: 1.30 / 1.24 / 1.18 / 1.07 / 0.88 /
0.83; PFTAL (Gaussian tree) at d = 3 / 10 / 100: 1.23 / 1.26 / 0.90. Rows of up to ``ONE_PASS_MAX`` entries take
the one pass.

The same operations in both forms; within each reduction XLA may add in another order in the two forms (the
vectorised loop adds in lanes), so a long row's sums can differ in the last bits from the one pass.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

#: The longest row (entries on the reduced axis) reduced in one variadic pass; longer rows: one reduction per output.
ONE_PASS_MAX = 32

Kind = Literal["sum", "max", "all"]

# Per kind: the variadic form's combination and start (an identity for the terms given: ``max`` is of
# magnitudes, from 0), and the single reduction of a long row.
_KINDS = {
    "sum": (lax.add, lambda dtype: np.zeros((), dtype), jnp.sum),
    "max": (lax.max, lambda dtype: np.zeros((), dtype), jnp.max),
    "all": (lax.bitwise_and, lambda dtype: np.ones((), dtype), jnp.all),
}


def reduce_last(terms: Sequence[jax.Array], kinds: Sequence[Kind]) -> tuple[jax.Array, ...]:
    """Each of ``terms`` (one shape) reduced over its last axis: ``"sum"``, ``"max"`` (of magnitudes, >= 0) or
    ``"all"`` (booleans).

    One variadic reduction when the last axis has at most ``ONE_PASS_MAX`` entries, else ``jnp.sum`` /
    ``jnp.max`` / ``jnp.all`` each.
    """
    axis = terms[0].ndim - 1
    if terms[0].shape[axis] > ONE_PASS_MAX:
        return tuple(_KINDS[k][2](t, axis=axis) for t, k in zip(terms, kinds, strict=True))
    ops = [_KINDS[k][0] for k in kinds]
    inits = tuple(_KINDS[k][1](t.dtype) for t, k in zip(terms, kinds, strict=True))

    def combine(a: tuple[jax.Array, ...], b: tuple[jax.Array, ...]) -> tuple[jax.Array, ...]:
        return tuple(op(x, y) for op, x, y in zip(ops, a, b, strict=True))

    return tuple(lax.reduce(tuple(terms), inits, combine, (axis,)))
