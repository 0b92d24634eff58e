"""JKT12's PQFTL, reconstructed, and the regression stream's comparator."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.stats

import jaxpriv as jp
from jaxpriv import envs, sets
from jaxpriv.envs.regression import ball_least_squares
from jaxpriv.mechanisms import analytic_gaussian_sigma, tree_depth
from jaxpriv.oco.pqftl import PQFTLParams, pqftl
from jaxpriv.testing import ks_critical_value, ks_one_sample, mean_with_stderr, rollout

D = 3
BALL = sets.l2_ball(D)


def test_comparator_is_the_least_squares_minimum_on_the_ball():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(50, D)) / math.sqrt(D)
    y = x @ np.array([2.0, -1.5, 1.0]) + 0.1 * rng.normal(size=50)  # the unconstrained minimiser lies outside
    a, b, c = x.T @ x, x.T @ y, float(y @ y)
    w, value, gap = jax.jit(ball_least_squares, static_argnums=3)(
        jnp.asarray(a, jnp.float32), jnp.asarray(b, jnp.float32), jnp.float32(c), 1.0
    )
    # reference: projected gradient descent in float64, many steps
    ref = np.zeros(D)
    step = 0.5 / np.linalg.eigvalsh(a).max()
    for _ in range(20000):
        ref = ref - step * 2 * (a @ ref - b)
        ref = ref / max(1.0, np.linalg.norm(ref))
    best = ref @ a @ ref - 2 * b @ ref + c
    assert np.linalg.norm(np.asarray(w)) <= 1 + 1e-6
    assert float(value) >= best - 1e-3 * abs(best) and float(value) - float(gap) <= best + 1e-3 * abs(best)
    np.testing.assert_allclose(np.asarray(w), ref, atol=2e-3)
    assert float(gap) < 1e-3 * abs(best)


def _record(t, action, feedback, info, learner_state, env_state):
    return action, feedback.x, feedback.y, info.loss


def test_release_calibration_the_non_private_transcription_and_regret():
    # One compiled rollout over ε ∈ {1, inf}. At t = T = 512 = 2^9 the release of b = Σ y x carries one node's
    # noise: N(0, σ²) per coordinate, σ the analytic Gaussian for sensitivity 2√2 √D (D = 10 levels) at (ε, δ).
    horizon, seeds, eps, delta = 512, 400, 1.0, 1e-5
    env = envs.regression_stream(BALL)
    ep = envs.RegressionParams(np.array([0.5, -0.3, 0.2], np.float32), 0.1)
    grid = PQFTLParams(jnp.array([eps, jnp.inf]), delta)
    out = rollout(pqftl(horizon, BALL), env, jp.SimParams(grid, ep), jax.random.key(3), horizon, seeds=seeds,
                  record=_record)  # fmt: skip
    w, x, y, loss = (np.asarray(v, np.float64) for v in out.records)  # [2, S, T, ...]
    sigma = float(analytic_gaussian_sigma(eps, delta, 2 * math.sqrt(2) * math.sqrt(tree_depth(horizon))))
    exact_b = np.einsum("gst,gstd->gsd", y, x)
    noise = np.asarray(out.learner_state.cross, np.float64)[0] - exact_b[0]
    crit = ks_critical_value(noise.size)
    assert ks_one_sample(noise.ravel(), scipy.stats.norm(scale=sigma).cdf) < crit
    assert ks_one_sample(noise.ravel(), scipy.stats.norm(scale=sigma / 1.3).cdf) > crit  # power
    np.testing.assert_allclose(np.asarray(out.learner_state.cross, np.float64)[1], exact_b[1], atol=1e-3)
    # ε = inf: w_{t+1} = Π_C((A_t + λ₀ I)^{-1} b_t), λ₀ = 1, transcribed step by step for 3 runs
    for s in range(3):
        a, b = np.eye(D), np.zeros(D)
        for t in range(horizon - 1):
            a += np.outer(x[1, s, t], x[1, s, t])
            b += y[1, s, t] * x[1, s, t]
            nxt = np.linalg.solve(a, b)
            nxt /= max(1.0, np.linalg.norm(nxt))
            np.testing.assert_allclose(w[1, s, t + 1], nxt, atol=1e-4)
    total = loss.sum(-1)  # the same stream (common keys): the paired difference of the losses is the regret's
    m, se = mean_with_stderr(total[0] - total[1])
    assert m > 3 * se, (m, se)  # the noise (and its shift) costs loss


def test_gradient_feedback_is_the_losss_gradient_on_the_same_draws():
    ep = envs.RegressionParams(np.array([0.5, -0.3, 0.2], np.float32), 0.1)
    examples, gradients = envs.regression_stream(BALL), envs.regression_stream(BALL, feedback="gradient")
    w, key, t = jnp.array([0.1, 0.2, -0.3]), jax.random.key(5), jnp.int32(1)
    _, fb, info = examples.step(key, examples.reset(key, ep), w, t)
    _, grad, info_g = gradients.step(key, gradients.reset(key, ep), w, t)
    expected = 2.0 * (np.dot(np.asarray(fb.x), np.asarray(w)) - float(fb.y)) * np.asarray(fb.x)
    np.testing.assert_allclose(np.asarray(grad), expected, rtol=1e-5, atol=1e-7)
    assert float(info_g.loss) == float(info.loss)  # the same example
    with pytest.raises(ValueError, match="feedback must be one of"):
        envs.regression_stream(BALL, feedback="gradients")
