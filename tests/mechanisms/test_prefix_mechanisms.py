"""Prefix-sum mechanisms beyond the tree (Honaker, square root, BLT) and the exact variance oracle."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxpriv import mechanisms as M
from jaxpriv._base import Mechanism
from jaxpriv.testing import variance_with_stderr

T, D_IN, N = 40, 2, 20_000  # a non-power-of-two horizon
STEPS = (1, 7, 8, 15, 16, 31, 32, 40)  # powers of two, 2^k - 1, and the horizon
EPS_P = M.TreeParams(epsilon=2.0, sensitivity=1.5)
RHO_P = M.TreeParams(rho=0.5, sensitivity=1.5)

CASES = [
    ("binary_tree", "gamma", EPS_P),
    ("binary_tree", "laplace", EPS_P),
    ("binary_tree", "gaussian", RHO_P),
    ("honaker_tree", "gamma", EPS_P),
    ("honaker_tree", "laplace", EPS_P),
    ("honaker_tree", "gaussian", RHO_P),
    ("sqrt_factorization", "gaussian", RHO_P),
    ("blt", "gaussian", RHO_P),
]


def _build(name, noise, horizon=T, dim=D_IN, neighbouring="add_remove"):
    return getattr(M, name)(horizon, dim, noise, neighbouring=neighbouring)


def _stream(horizon=T, dim=D_IN):
    return np.asarray(jax.random.normal(jax.random.key(3), (horizon, dim)) * 0.2, np.float32)


def _releases(mechanism, params, xs, n=N, seed=11):
    keys = jax.random.split(jax.random.key(seed), n)
    return np.asarray(jax.vmap(lambda k: M.prefix_sums(mechanism, params, xs, k))(keys))


@pytest.mark.parametrize(("name", "noise", "params"), CASES)
def test_release_is_unbiased_with_the_oracle_variance(name, noise, params):
    mech = _build(name, noise)
    xs = _stream()
    exact = np.cumsum(xs.astype(np.float64), 0)
    out = _releases(mech, params, xs)
    oracle = M.release_variance(mech, params, np.array(STEPS))
    for t, expected in zip(STEPS, oracle, strict=True):
        err = out[:, t - 1, :] - exact[t - 1]
        assert abs(err.mean()) < 5 * np.sqrt(expected / err.size), (name, noise, t)
        var, se = variance_with_stderr(err, mean=0.0)
        assert abs(var - expected) < 5 * se, (name, noise, t, var, expected)
        # Power: an oracle off by 10% is rejected by the same test.
        for wrong in (0.9 * expected, 1.1 * expected):
            assert abs(var - wrong) > 5 * se, (name, noise, t, var, wrong)


def test_the_oracles_reproduce_the_published_worst_case_variances():
    # unit sensitivity, rho = 1/2, add/remove: 110 (tree), 64 (Honaker), ((ln T + 3.35)/pi)^2 (square root)
    p = M.TreeParams(rho=0.5, sensitivity=1.0)
    horizon = 2**10
    t = np.arange(1, horizon + 1)
    worst = {
        name: float(M.release_variance(_build(name, "gaussian", horizon, 1), p, t).max())
        for name in ("binary_tree", "honaker_tree", "sqrt_factorization")
    }
    assert worst["binary_tree"] == pytest.approx(110.0, rel=1e-2)
    assert worst["honaker_tree"] == pytest.approx(64.0, rel=1e-2)
    assert worst["sqrt_factorization"] == pytest.approx(10.7, rel=1e-2)
    assert worst["sqrt_factorization"] == pytest.approx(((np.log(horizon) + 3.35) / np.pi) ** 2, rel=1e-3)


def test_honaker_exact_small_cases_against_the_dense_least_squares_estimate():
    p = M.TreeParams(rho=0.5, sensitivity=1.0)
    assert float(M.release_variance(M.honaker_tree(4, 1, "gaussian"), p, 4)) == pytest.approx(12 / 7, rel=1e-12)
    assert float(M.release_variance(M.honaker_tree(8, 1, "gaussian"), p, 8)) == pytest.approx(32 / 15, rel=1e-12)
    for horizon in (4, 8, 16):
        # every node of the complete tree over T = 2^k leaves, i.i.d. noise: the GLS estimate of the root
        design = np.concatenate(list(_nodes(horizon)))
        a = np.ones(horizon)
        gls = a @ np.linalg.solve(design.T @ design, a) * M.tree_depth(horizon)
        got = float(M.release_variance(M.honaker_tree(horizon, 1, "gaussian"), p, horizon))
        assert got == pytest.approx(gls, rel=1e-10), horizon
        assert got < float(M.release_variance(M.binary_tree(horizon, 1, "gaussian"), p, horizon))


def _nodes(horizon):
    """Indicator rows of every node of the complete binary tree over ``horizon = 2^k`` leaves."""
    for h in range(horizon.bit_length()):
        for b in range(horizon >> h):
            block = np.zeros((1, horizon))
            block[0, b * 2**h : (b + 1) * 2**h] = 1.0
            yield block


def test_sqrt_coefficients_and_release_against_float64_dense_matrices():
    horizon = 16
    c = M.sqrt_coefficients(horizon)
    lower = np.array([[c[i - j] if i >= j else 0.0 for j in range(horizon)] for i in range(horizon)])
    np.testing.assert_allclose(lower @ lower, np.tril(np.ones((horizon, horizon))), atol=1e-14)
    mech = M.sqrt_factorization(horizon, 3, neighbouring="replace")
    p = M.TreeParams(rho=0.7, sensitivity=1.3)
    col = np.max(np.linalg.norm(lower, axis=0))
    assert float(M.calibrated_sensitivity(mech, p)) == pytest.approx(2 * 1.3 * col, rel=1e-12)
    sigma2 = (2 * 1.3 * col) ** 2 / (2 * 0.7)
    np.testing.assert_allclose(
        M.release_variance(mech, p, np.arange(1, horizon + 1)), sigma2 * np.sum(lower**2, 1), rtol=1e-12
    )
    # The stream releases A x + L z exactly, z being the noise the state keeps.
    xs = _stream(horizon, 3)

    def body(state, t):
        return mech.step(jax.random.fold_in(jax.random.key(0), t), state, jnp.asarray(xs)[t - 1], t)[:2]

    state, releases = jax.jit(lambda s: jax.lax.scan(body, s, jnp.arange(1, horizon + 1)))(mech.init(None, p))
    assert float(state.scale) ** 2 == pytest.approx(sigma2, rel=1e-5)
    expected = np.cumsum(xs.astype(np.float64), 0) + lower @ np.asarray(state.history, np.float64)
    np.testing.assert_allclose(np.asarray(releases), expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(("name", "noise"), [(n, f) for n, f, _ in CASES if n != "binary_tree"])  # tree: test_tree.py
def test_infinite_budget_is_exact_and_inputs_are_clipped(name, noise):
    xs = np.asarray(jax.random.randint(jax.random.key(0), (13, D_IN), -5, 6), np.float32) / 8.0
    mech = _build(name, noise, 13)
    free = M.TreeParams(**{M.budget_field(noise): jnp.inf}, sensitivity=100.0)
    np.testing.assert_array_equal(np.asarray(M.prefix_sums(mech, free, xs, 1)), np.cumsum(xs, 0))
    assert float(np.max(M.release_variance(mech, free, np.arange(1, 14)))) == 0.0
    big = np.tile(np.array([[3.0, -4.0]], np.float32), (13, 1))  # L2 norm 5, L1 norm 7
    out = np.asarray(M.prefix_sums(mech, free._replace(sensitivity=1.0), big, 1))
    clipped = big[0] / (7.0 if noise == "laplace" else 5.0)
    np.testing.assert_allclose(out, np.cumsum(np.tile(clipped, (13, 1)), 0), rtol=1e-6)


@pytest.mark.parametrize("name", ["honaker_tree", "sqrt_factorization", "blt"])
def test_guard_rails(name):
    mech = _build(name, "gaussian", 8)
    p = M.TreeParams(rho=jnp.inf, sensitivity=1.0)
    state = mech.init(jax.random.key(0), p)
    state, v, bad = mech.step(jax.random.key(1), state, jnp.array([jnp.nan, 1.0]), jnp.int32(1))
    assert int(bad) == 1 and "nonfinite" not in type(state)._fields
    np.testing.assert_array_equal(np.asarray(v), [0.0, 0.0])
    _, v, _ = mech.step(jax.random.key(2), state, jnp.ones(2), jnp.int32(9))
    assert np.all(np.isnan(np.asarray(v)))
    with pytest.raises(ValueError, match="stream length 9 exceeds"):
        M.prefix_sums(mech, p, np.ones((9, 2)), 0)
    with pytest.raises(ValueError, match="rho"):
        M.prefix_sums(mech, M.TreeParams(rho=0.0), np.ones((8, 2)), 0)
    with pytest.raises(ValueError, match=r"t must be integers in \[1, 8\]"):
        M.release_variance(mech, p, 9)


def test_bad_input_is_refused_before_compiling():
    with pytest.raises(ValueError, match="noise must be one of \\('gaussian',\\)"):
        M.sqrt_factorization(8, 2, "laplace")
    with pytest.raises(ValueError, match=r"horizon \* dim must be <= 16777216.*1024 MiB per seed"):
        M.sqrt_factorization(2**20, 256)
    with pytest.raises(ValueError, match="noise must be one of \\('gaussian',\\)"):
        M.blt(8, 2, "laplace")
    for buffers in (0, 9, 2.5, True):
        with pytest.raises(ValueError, match=r"buffers must be an integer in \[1, 8\]"):
            M.blt(8, 2, buffers=buffers)
    with pytest.raises(ValueError, match=r"horizon must be an integer in \[1, 16777216\] for blt"):
        M.blt(2**24 + 1, 1)
    with pytest.raises(ValueError, match="noise must be one of"):
        M.honaker_tree(8, 2, "poisson")
    with pytest.raises(ValueError, match="neighbouring must be one of"):
        M.honaker_tree(8, 2, neighbouring="swap")
    with pytest.raises(ValueError, match="prefix-sum Mechanism"):
        M.release_variance(Mechanism(lambda k, p: 0, lambda k, s, x, t: (s, x)), M.TreeParams(), 1)
