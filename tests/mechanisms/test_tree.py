"""The binary-tree mechanism: calibration, exactness, clipping, bad input."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxpriv import mechanisms as M
from jaxpriv.testing import mean_with_stderr, variance_with_stderr

T, D_IN = 64, 3
DEPTH = M.tree_depth(T)  # ceil(log2 64) + 1 = 7
STEPS = (1, 7, 15, 16, 31, 32, 63, 64)  # powers of two, 2^k - 1, and between
N = 12_000


def _releases(noise, params, xs, n=N):
    tree = M.binary_tree(T, D_IN, noise)
    keys = jax.random.split(jax.random.key(11), n)
    return np.asarray(jax.vmap(lambda k: M.prefix_sums(tree, params, xs, k))(keys))


def _stream():
    x = jax.random.normal(jax.random.key(3), (T, D_IN)) * 0.2
    return np.asarray(x, np.float32)


def test_depth():
    assert M.tree_depth(1) == 1
    assert M.tree_depth(2) == 2
    assert M.tree_depth(64) == 7
    assert M.tree_depth(65) == 8


@pytest.mark.parametrize(
    ("noise", "params", "node_var"),
    [
        ("gamma", M.TreeParams(epsilon=2.0, sensitivity=1.5), (D_IN + 1) * (DEPTH * 1.5 / 2.0) ** 2),
        ("laplace", M.TreeParams(epsilon=2.0, sensitivity=1.5), 2 * (DEPTH * 1.5 / 2.0) ** 2),
        ("gaussian", M.TreeParams(rho=0.5, sensitivity=1.5), DEPTH * 1.5**2 / (2 * 0.5)),
    ],
)
def test_release_is_unbiased_with_popcount_variance(noise, params, node_var):
    xs = _stream()
    exact = np.cumsum(xs.astype(np.float64), 0)
    out = _releases(noise, params, xs)
    np.testing.assert_allclose(
        float(M.node_variance(noise, params.rho if noise == "gaussian" else params.epsilon, 1.5, DEPTH, D_IN)),
        node_var,
        rtol=1e-6,
    )
    for t in STEPS:
        err = out[:, t - 1, :] - exact[t - 1]
        mean = err.mean()
        expected = bin(t).count("1") * node_var
        assert abs(mean) < 5 * np.sqrt(expected / err.size), (noise, t, mean)
        var, var_se = variance_with_stderr(err, mean=0.0)
        assert abs(var - expected) < 5 * var_se, (noise, t, var, expected)
        # Power: one node more or one node less, or the wrong family constant, must be rejected.
        for wrong in ((bin(t).count("1") + 1) * node_var, 0.85 * expected, 1.15 * expected):
            assert abs(var - wrong) > 5 * var_se, (noise, t, var, wrong)


def test_infinite_budget_is_exactly_cumsum():
    xs = np.asarray(jax.random.randint(jax.random.key(0), (T, D_IN), -5, 6), np.float32) / 8.0
    for noise in M.NOISE_FAMILIES:
        tree = M.binary_tree(T, D_IN, noise)
        params = M.TreeParams(**{M.budget_field(noise): jnp.inf}, sensitivity=100.0)
        out = M.prefix_sums(tree, params, xs, jax.random.key(1))
        np.testing.assert_array_equal(np.asarray(out), np.cumsum(xs, 0))


def test_non_power_of_two_horizon_is_exact():
    xs = np.ones((13, 2), np.float32)
    out = M.prefix_sums(M.binary_tree(13, 2), M.TreeParams(epsilon=jnp.inf, sensitivity=2.0), xs, jax.random.key(0))
    np.testing.assert_array_equal(np.asarray(out), np.cumsum(xs, 0))


def test_inputs_are_clipped_in_the_family_norm():
    xs = np.zeros((4, 2), np.float32)
    xs[1] = [3.0, 4.0]  # L2 norm 5, L1 norm 7
    for noise, clipped in (("gamma", [0.6, 0.8]), ("gaussian", [0.6, 0.8]), ("laplace", [3 / 7, 4 / 7])):
        tree = M.binary_tree(4, 2, noise)
        out = M.prefix_sums(tree, M.TreeParams(**{M.budget_field(noise): jnp.inf}), xs, jax.random.key(0))
        np.testing.assert_allclose(np.asarray(out)[-1], clipped, rtol=1e-6)


def test_noise_is_fresh_and_reproducible():
    tree = M.binary_tree(16, 2)
    xs = np.zeros((16, 2), np.float32)
    p = M.TreeParams(epsilon=1.0)
    a = M.prefix_sums(tree, p, xs, jax.random.key(0))
    b = M.prefix_sums(tree, p, xs, jax.random.key(0))
    c = M.prefix_sums(tree, p, xs, jax.random.key(1))
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert not np.allclose(np.asarray(a), np.asarray(c))


def test_gamma_norm_radius_distribution():
    # ||n|| ~ Gamma(d, 1): mean d, variance d.
    d = 4
    n = jax.vmap(lambda k: M.gamma_norm(k, (d,)))(jax.random.split(jax.random.key(5), 40_000))
    r = np.linalg.norm(np.asarray(n, np.float64), axis=-1)
    mean, se = mean_with_stderr(r)
    assert abs(mean - d) < 5 * se
    var, var_se = variance_with_stderr(r)
    assert abs(var - d) < 5 * var_se


def test_accounting():
    np.testing.assert_allclose(float(M.dp_to_zcdp(2.0)), 2.0)
    rho, delta = 0.5, 1e-5
    np.testing.assert_allclose(float(M.zcdp_to_dp(rho, delta)), rho + 2 * np.sqrt(rho * np.log(1 / delta)), rtol=1e-6)
    np.testing.assert_allclose(float(M.gaussian_stddev(0.5, 2.0)), 2.0, rtol=1e-6)
    np.testing.assert_allclose(float(M.gaussian_node_stddev(0.5, 1.0, 4)), 2.0, rtol=1e-6)
    assert float(M.gamma_node_scale(jnp.inf, 1.0, 5)) == 0.0
    # traceable: vmaps over a budget grid
    out = jax.vmap(lambda r: M.zcdp_to_dp(r, delta))(jnp.array([0.1, 1.0]))
    assert out.shape == (2,)


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda: M.binary_tree(0, 2), "horizon"),
        (lambda: M.binary_tree(8, 0), "dim"),
        (lambda: M.binary_tree(8, 2, "cauchy"), "noise"),
        (lambda: M.binary_tree(8.5, 2), "horizon"),
        (
            lambda: M.prefix_sums(M.binary_tree(4, 1), M.TreeParams(epsilon=0.0), np.ones((4, 1)), jax.random.key(0)),
            "epsilon",
        ),
        (
            lambda: M.prefix_sums(M.binary_tree(4, 1), M.TreeParams(epsilon=-1.0), np.ones((4, 1)), jax.random.key(0)),
            "epsilon",
        ),
        (
            lambda: M.prefix_sums(
                M.binary_tree(4, 1, "gaussian"), M.TreeParams(rho=0.0), np.ones((4, 1)), jax.random.key(0)
            ),
            "rho",
        ),
        (
            lambda: M.prefix_sums(
                M.binary_tree(4, 1), M.TreeParams(epsilon=1.0, sensitivity=-1.0), np.ones((4, 1)), jax.random.key(0)
            ),
            "sensitivity",
        ),
    ],
)
def test_bad_input_raises(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_dtypes_stay_float32_under_x64():
    with jax.enable_x64(True):
        tree = M.binary_tree(8, 2)
        s0 = tree.init(jax.random.key(0), M.TreeParams(epsilon=1.0))
        s1, out, bad = jax.jit(tree.step)(jax.random.key(1), s0, np.ones(2), np.int64(3))
        assert jax.tree.map(lambda a: a.dtype, s0) == jax.tree.map(lambda a: a.dtype, s1)
        assert out.dtype == jnp.float32 and bad.dtype == jnp.int32
        out = M.prefix_sums(tree, M.TreeParams(epsilon=1.0), np.ones((8, 2)), jax.random.key(0))
        assert out.dtype == jnp.float32
