"""The BLT factorization: float64 algebra against dense matrices, its stream, its variance against the square root.

Unbiasedness, the Monte Carlo variance against the oracle (with power against a 10%-off oracle),
ρ = ∞, clipping, guard rails and bad input are in test_prefix_mechanisms.py (``"blt"`` is one of its cases).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxpriv import _rng
from jaxpriv import mechanisms as M


def _toeplitz(first_column: np.ndarray) -> np.ndarray:
    n = len(first_column)
    i, j = np.indices((n, n))
    return np.where(i >= j, first_column[np.clip(i - j, 0, n - 1)], 0.0)


@pytest.mark.parametrize(("horizon", "buffers"), [(16, 2), (64, 4)])
def test_sensitivity_variance_and_release_against_float64_dense_matrices(horizon, buffers):
    coeffs = M.blt_coefficients(horizon, buffers)
    assert np.all((coeffs.decay > 0) & (coeffs.decay < 1)) and np.all(coeffs.weight < 0)
    theta, beta = M.blt_dense(coeffs, horizon)
    c_inv = _toeplitz(theta)
    encoder = np.linalg.inv(c_inv)  # C
    prefix = np.tril(np.ones((horizon, horizon)))
    decoder = prefix @ c_inv  # B
    np.testing.assert_allclose(decoder @ encoder, prefix, atol=1e-10)  # A = B C
    np.testing.assert_allclose(decoder, _toeplitz(beta), atol=1e-12)
    col_norm = np.max(np.linalg.norm(encoder, axis=0))
    assert col_norm == pytest.approx(np.linalg.norm(encoder[:, 0]), rel=1e-12)  # the first column is the longest
    col2, rows2 = M.blt_norms(coeffs, horizon)
    assert col2 == pytest.approx(col_norm**2, rel=1e-10)
    np.testing.assert_allclose(rows2, np.sum(decoder**2, 1), rtol=1e-10)

    mech = M.blt(horizon, 3, neighbouring="replace", buffers=buffers)
    p = M.TreeParams(rho=0.7, sensitivity=1.3)
    assert float(M.calibrated_sensitivity(mech, p)) == pytest.approx(2 * 1.3 * col_norm, rel=1e-10)
    sigma2 = (2 * 1.3 * col_norm) ** 2 / (2 * 0.7)
    np.testing.assert_allclose(
        M.release_variance(mech, p, np.arange(1, horizon + 1)), sigma2 * np.sum(decoder**2, 1), rtol=1e-10
    )
    # The float32 stream releases A x + B z, z_t = σ·normal(key_t) (the mechanism's sampler, jaxpriv._rng):
    # the buffers and the noise sum are exact.
    xs = np.asarray(jax.random.normal(jax.random.key(3), (horizon, 3)) * 0.2, np.float32)
    keys = jax.vmap(lambda t: jax.random.fold_in(jax.random.key(0), t))(jnp.arange(1, horizon + 1))

    def body(state, kt):
        key, t = kt
        return mech.step(key, state, jnp.asarray(xs)[t - 1], t)[:2]

    state0 = mech.init(None, p)
    _, releases = jax.jit(lambda s: jax.lax.scan(body, s, (keys, jnp.arange(1, horizon + 1))))(state0)
    assert float(state0.scale) ** 2 == pytest.approx(sigma2, rel=1e-5)
    z = float(state0.scale) * np.asarray(jax.vmap(lambda k: _rng.normal(k, (3,)))(keys), np.float64)
    expected = np.cumsum(xs.astype(np.float64), 0) + decoder @ z
    np.testing.assert_allclose(np.asarray(releases), expected, rtol=1e-5, atol=2e-5 * np.sqrt(sigma2 * horizon))
    # a 10% error in one buffer's weight would be visible
    off = M.BLTCoefficients(coeffs.decay, coeffs.weight * np.where(np.arange(buffers) == 0, 1.1, 1.0))
    assert np.max(np.abs(_toeplitz(M.blt_dense(off, horizon)[1]) @ z - decoder @ z)) > 1e-3


def test_worst_variance_is_within_one_percent_of_the_square_root():
    # unit sensitivity, rho = 1/2, add/remove; the square root's worst variances are 10.71 and 17.27
    p = M.TreeParams(rho=0.5, sensitivity=1.0)
    for horizon, sqrt_worst in ((2**10, 10.71), (2**14, 17.27)):
        t = np.arange(1, horizon + 1)
        sqrt = M.release_variance(M.sqrt_factorization(horizon, 1), p, t)
        blt = M.release_variance(M.blt(horizon, 1), p, t)
        assert float(sqrt.max()) == pytest.approx(sqrt_worst, abs=5e-3)
        assert float(blt.max()) == float(blt[-1])  # the worst step is the last
        assert float(sqrt.max()) <= float(blt.max()) < 1.01 * float(sqrt.max()), horizon
        # a single buffer is far from it (the test can tell)
        one = float(M.release_variance(M.blt(horizon, 1, buffers=1), p, horizon))
        assert one > 1.05 * float(sqrt.max())


def test_the_state_is_buffers_times_d_and_float32_under_x64():
    mech = M.blt(2**14, 5, buffers=3)
    with jax.enable_x64(True):
        state = mech.init(None, M.TreeParams(rho=0.5, sensitivity=1.0))
        state, v, bad = jax.jit(mech.step)(jax.random.key(0), state, jnp.ones(5), jnp.int32(1))
    assert bad.dtype == jnp.int32 and int(bad) == 0
    assert state.buffers.shape == (3, 5) and state.noise.shape == (5,)
    assert state.buffers.dtype == state.noise.dtype == v.dtype == jnp.float32
    assert M.describe(mech).name == "blt"
    assert M.blt_coefficients(2**14, 3) is M.blt_coefficients(2**14, 3)  # optimised once per (T, buffers)
