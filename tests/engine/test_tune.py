"""jaxpriv.tune: per-seed pathwise gradients against central finite differences with common random numbers.

The finite differences use the same seed keys at ``θ - h``, ``θ`` and ``θ + h`` (one grid call, h = 0.5% of
θ), so each seed's difference quotient estimates that seed's derivative with no Monte-Carlo noise: the two
agree up to the O(h²) truncation, float32 rounding (about 1e-7·|J|/h, below 1e-4 relative here) and the few
seeds whose run crosses a kink of a clip or a projection inside ``[θ - h, θ + h]``. Tolerance: the seed-mean
gradients agree within 2% of |FD| (plus 1e-3), and half of the seeds agree within 1% each (measured: 0.4%,
0.05%, 0.006% for L, H, η). A gradient that drops the noise's dependence on L misses by far more (it has
the wrong sign here).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxpriv as jp
from jaxpriv import bandits, envs, oco, sets, tune

T, D, SEEDS = 256, 3, 16
BALL = sets.l2_ball(D)
ENV = envs.quadratic_stream(BALL)
ENV_P = envs.QuadraticParams(1.0, jnp.full(D, 0.5 / np.sqrt(D)), 0.3)
PFTAL = oco.pftal(T, BALL)


def _fd_check(learner, params, path, theta):
    """Gradient at ``theta`` and per-seed central differences from one grid call: ``(grad, fd, per-seed rel err)``."""
    h = 0.005 * theta
    grid = jnp.asarray([theta - h, theta, theta + h], jnp.float32)
    est = tune.value_and_grad(learner, ENV, tune.set_path(params, path, grid), path, 7, T, seeds=SEEDS)
    v = est.per_seed_value
    fd = (v[2] - v[0]) / (float(grid[2]) - float(grid[0]))  # [S], per seed (common random numbers)
    g = est.per_seed_grad[path][1]
    return float(g.mean()), float(fd.mean()), np.abs(g - fd) / np.maximum(np.abs(fd), 1e-6)


def _assert_matches(grad, fd, rel_err, rel=0.02):
    assert abs(grad - fd) <= rel * abs(fd) + 1e-3, (grad, fd)
    assert np.median(rel_err) <= rel / 2, rel_err
    assert abs(fd) > 0.1  # the check has something to check


PFTAL_P = jp.SimParams(oco.PFTALParams(epsilon=10.0, lipschitz=0.5, strong_convexity=1.0), ENV_P)


def test_gradient_in_the_clipping_bound_matches_finite_differences():
    grad, fd, err = _fd_check(PFTAL, PFTAL_P, "learner.lipschitz", 0.5)
    _assert_matches(grad, fd, err)


def _noise_scale_without_gradient(learner):
    """PFTAL whose tree noise scale ∝ L/ε is a constant to autodiff: the same runs, a wrong gradient."""

    def init_fn(key, params):
        state = learner.init(key, params)
        return state._replace(tree=state.tree._replace(scale=jax.lax.stop_gradient(state.tree.scale)))

    return learner._replace(init=init_fn)


def test_a_gradient_without_the_noise_term_fails_the_same_check():
    grad, fd, err = _fd_check(_noise_scale_without_gradient(PFTAL), PFTAL_P, "learner.lipschitz", 0.5)
    assert abs(grad - fd) > 10 * (0.02 * abs(fd) + 1e-3), (grad, fd)  # the check above would reject it
    assert np.median(err) > 0.2


def test_gradient_in_the_regulariser_matches_finite_differences():
    learner = oco.regularized_pftal(T, BALL)
    params = jp.SimParams(oco.RegularizedPFTALParams(epsilon=10.0, lipschitz=2.0, strong_convexity=0.3), ENV_P)
    grad, fd, err = _fd_check(learner, params, "learner.strong_convexity", 0.3)
    _assert_matches(grad, fd, err)


def test_gradient_in_a_step_size_matches_finite_differences():
    learner = oco.mi_ogd(BALL, T)
    params = jp.SimParams(oco.MIOGDParams(mutual_information=1.0, lipschitz=2.0, learning_rate=0.05), ENV_P)
    grad, fd, err = _fd_check(learner, params, "learner.learning_rate", 0.05)
    _assert_matches(grad, fd, err)


def test_minimize_finds_the_interior_optimum_of_the_clipping_bound_with_fewer_seed_steps_than_a_grid():
    # PFTAL at eps = 10: a small L clips (slow, biased progress), a large L adds noise ∝ L. Start at the
    # losses' Lipschitz bound L = 2; 15 Adam steps of 32 seeds (480 runs) against a 24-point grid of 64
    # seeds (1536 runs). The found L is scored on the grid's own seeds (paired): within 10% of the grid's best.
    params = PFTAL_P._replace(learner=PFTAL_P.learner._replace(lipschitz=2.0))
    found = tune.minimize(PFTAL, ENV, params, "learner.lipschitz", 1, T, steps=15, seeds=32)
    grid = np.geomspace(0.05, 2.0, 24)
    lips = jnp.asarray(np.append(grid, found.value["learner.lipschitz"]), jnp.float32)
    res = jp.sweep(PFTAL, ENV, tune.set_path(params, "learner.lipschitz", lips), 99, T, seeds=64, checkpoints=[T])
    mean, _ = jp.summarize(res.regret[..., -1], axis=-1)
    best = int(np.argmin(mean[:-1]))
    assert 0 < best < len(grid) - 1  # an interior optimum
    assert mean[-1] <= 1.10 * mean[best], (found.value, grid[best], mean[-1], mean[best])
    assert mean[-1] < 0.5 * mean[len(grid) - 1]  # far better than the start
    assert found.seed_steps < len(grid) * 64 * T
    assert found.trajectory["learner.lipschitz"].shape == (16,) and found.objective.shape == (15,)


def test_new_values_reuse_the_compiled_estimator():
    before = jp.sim.compile_count("tune")
    for lip in (0.3, 0.7):
        tune.value_and_grad(PFTAL, ENV, tune.set_path(PFTAL_P, "learner.lipschitz", lip), "learner.lipschitz", 0, T, 32)
    after = jp.sim.compile_count("tune")
    assert after - before <= 1  # at most one new shape (32 seeds, no grid), then reused


def test_piecewise_constant_and_bad_requests_are_clear_errors():
    policy = bandits.ucb(5)
    bern = envs.bernoulli_bandit(5)
    params = jp.SimParams(bandits.UCBParams(beta=1.0), envs.BernoulliParams(envs.PAPER_MEANS))
    with pytest.raises(ValueError, match="piecewise constant"):
        tune.value_and_grad(policy, bern, params, "learner.beta", 0, 64)
    with pytest.raises(ValueError, match="has no field 'lipshitz'"):
        tune.value_and_grad(PFTAL, ENV, PFTAL_P, "learner.lipshitz", 0, T)
    with pytest.raises(ValueError, match="strong_convexity"):
        tune.value_and_grad(
            PFTAL, ENV, tune.set_path(PFTAL_P, "learner.strong_convexity", -1.0), "learner.epsilon", 0, T
        )
    with pytest.raises(ValueError, match="starting value"):
        tune.minimize(PFTAL, ENV, tune.set_path(PFTAL_P, "learner.lipschitz", 0.0), "learner.lipschitz", 0, T)
    ogd = oco.ogd(BALL)  # the 1/(Ht) schedule does not use its lipschitz leaf
    with pytest.raises(ValueError, match="exactly zero"):
        tune.value_and_grad(ogd, ENV, jp.SimParams(oco.OGDParams(), ENV_P), "learner.lipschitz", 0, 32, seeds=2)
