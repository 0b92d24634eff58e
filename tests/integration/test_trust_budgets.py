"""Regression tests of issue 23's budget and prefix-sum cases: an unset budget never means "no privacy"."""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxpriv as jp
from jaxpriv import bandits, envs, mechanisms, oco, sets

BALL = sets.l2_ball(3)
ENV = envs.quadratic_stream(BALL)
ENV_P = envs.QuadraticParams(1.0, jnp.array([0.2, 0.2, 0.1]), 0.3)


def test_a_gaussian_pftal_given_epsilon_is_refused_not_run_without_noise():
    # Before: rho kept its default inf and the run equalled FTAL bit for bit.
    learner = oco.pftal(64, BALL, noise="gaussian")
    params = jp.SimParams(oco.PFTALParams(epsilon=1.0, lipschitz=2.0), ENV_P)
    with pytest.raises(ValueError, match=r"pftal with noise='gaussian' is ρ-zCDP and needs rho.*got epsilon=1\.0"):
        jp.run(learner, ENV, params, 0, 64)


def test_a_gaussian_tree_given_epsilon_is_refused_by_prefix_sums():
    tree = mechanisms.binary_tree(8, 2, "gaussian")
    with pytest.raises(ValueError, match="needs rho"):
        mechanisms.prefix_sums(tree, mechanisms.TreeParams(epsilon=1.0), np.ones((8, 2)), 0)
    with pytest.raises(ValueError, match="needs rho"):  # also when init is traced by hand
        jax.jit(tree.init)(jax.random.key(0), mechanisms.TreeParams(epsilon=1.0))


def test_no_budget_is_refused_and_inf_is_the_explicit_non_private_limit():
    for learner, params in (
        (oco.pftal(32, BALL), oco.PFTALParams(lipschitz=2.0)),
        (oco.mi_ogd(BALL, 32), oco.MIOGDParams(lipschitz=2.0)),
        (bandits.adac_ucb(3), bandits.AdaCUCBParams()),
    ):
        with pytest.raises(ValueError, match="no budget"):
            learner.check(params)
    free = jp.run(oco.pftal(32, BALL), ENV, jp.SimParams(oco.PFTALParams(jnp.inf, lipschitz=2.0), ENV_P), 0, 32)
    ftal = jp.run(oco.ftal(BALL, 32), ENV, jp.SimParams(oco.FTALParams(1.0), ENV_P), 0, 32)
    np.testing.assert_array_equal(free.regret, ftal.regret)


@pytest.mark.parametrize("eps", [1e-50, 1e-34, 1e-300])  # below pftal's floor here (about 1e-33), issue 35
def test_a_budget_float32_cannot_represent_is_refused_before_compiling(eps):
    with pytest.raises(ValueError, match="float32"):
        jp.run(oco.pftal(32, BALL), ENV, jp.SimParams(oco.PFTALParams(eps, lipschitz=2.0), ENV_P), 0, 32)


def test_gamma_pftal_at_tiny_epsilon_is_as_noisy_as_at_small_epsilon():
    # Before: the squared norm of the noisy leader overflowed float32, the projection returned 0 and the
    # regret at eps = 1e-19..1e-30 (about 3) was far below that of eps = 1e-10 (about 35).
    horizon = 256
    eps = jnp.array([1e-10, 1e-19, 1e-25, 1e-30])
    params = jp.SimParams(oco.PFTALParams(epsilon=eps, lipschitz=2.0), ENV_P)
    res = jp.sweep(oco.pftal(horizon, BALL), ENV, params, 0, horizon, seeds=64, checkpoints=[horizon])
    final = np.asarray(res.regret[..., -1], np.float64)  # [eps, seed]
    mean = final.mean(axis=1)
    se = final.std(axis=1, ddof=1) / np.sqrt(final.shape[1])
    # At these budgets the noise dominates and the points are uniform-direction boundary points: the
    # regret distribution does not depend on eps, so every row is within 4 SE of the eps = 1e-10 row.
    for i in range(1, len(eps)):
        assert abs(mean[i] - mean[0]) < 4 * np.hypot(se[i], se[0]), (eps[i], mean)
    assert mean[0] > 10 * 3.0


def test_prefix_sums_refuses_bad_streams_before_compiling():
    tree = mechanisms.binary_tree(8, 2, "gamma")
    p = mechanisms.TreeParams(epsilon=1.0)
    for xs, what in (
        (np.ones((8, 3)), r"\[T, 2\]"),  # wrong dimension
        (np.ones((0, 2)), "T >= 1"),  # zero rows
        (np.ones(8), r"\[T, d\]"),  # not 2-D
        (np.array([["a", "b"]] * 8), "numeric"),  # strings
    ):
        with pytest.raises(ValueError, match=what):
            mechanisms.prefix_sums(tree, p, xs, 0)


def test_prefix_sums_reports_the_inputs_it_zeroed():
    tree = mechanisms.binary_tree(8, 2, "gamma")
    xs = np.ones((8, 2), np.float32)
    xs[2, 0] = np.nan
    xs[5, 1] = np.inf
    with pytest.warns(RuntimeWarning, match="2 input"):
        free = mechanisms.TreeParams(epsilon=jnp.inf, sensitivity=10.0)
        out = mechanisms.prefix_sums(tree, free, xs, 0, with_nonfinite=True)
    assert out.nonfinite_inputs == 2
    clean = xs.copy()
    clean[[2, 5]] = 0.0
    np.testing.assert_array_equal(out.releases, np.cumsum(clean, 0))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a clean stream: no warning
        mechanisms.prefix_sums(tree, mechanisms.TreeParams(epsilon=jnp.inf), clean, 0)
