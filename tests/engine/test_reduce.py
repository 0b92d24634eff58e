"""``jaxpriv._reduce.reduce_last``: one variadic pass for short rows, one reduction each for long rows (issue 47)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxpriv import _reduce


def _reductions(fn, x):
    """The reduction equations of ``fn(x)``'s jaxpr: (primitive name, number of outputs)."""
    eqns = jax.make_jaxpr(fn)(x).jaxpr.eqns
    return [(e.primitive.name, len(e.outvars)) for e in eqns if e.primitive.name.startswith("reduce")]


@pytest.mark.parametrize("d", [3, _reduce.ONE_PASS_MAX, _reduce.ONE_PASS_MAX + 1, 100])
def test_short_rows_in_one_pass_long_rows_one_reduction_each(d):
    x = jax.random.normal(jax.random.key(d), (4, d), jnp.float32).at[1, 0].set(jnp.inf)

    def fn(v):
        return _reduce.reduce_last((jnp.isfinite(v), v * v, jnp.abs(v)), ("all", "sum", "max"))

    finite, sq, peak = fn(x)
    x64 = np.asarray(x, np.float64)
    np.testing.assert_array_equal(np.asarray(finite), np.isfinite(x64).all(-1))
    ok = np.isfinite(x64).all(-1)
    np.testing.assert_allclose(np.asarray(sq)[ok], (x64 * x64).sum(-1)[ok], rtol=d * 2e-7)
    np.testing.assert_array_equal(np.asarray(peak), np.abs(np.asarray(x)).max(-1))
    kinds = _reductions(fn, x)
    if d <= _reduce.ONE_PASS_MAX:
        assert kinds == [("reduce", 3)], kinds
    else:
        assert sorted(kinds) == [("reduce_and", 1), ("reduce_max", 1), ("reduce_sum", 1)], kinds
