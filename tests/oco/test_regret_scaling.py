"""Regret scaling over horizons 2^8 … 2^14, fitted on log-log axes, and measured regret below the bounds.

One compiled run at the longest horizon per learner, with checkpoints at the powers of two:
the engine reports each prefix's regret against that prefix's own comparator, so the shorter
horizons are read off the checkpoints (the learners here are anytime, or swept over the
horizon-dependent tuning in one grid so each horizon gets its own H).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxpriv as jp
from jaxpriv import envs, mechanisms, oco, sets, theory
from jaxpriv.testing import mean_with_stderr

HORIZONS = [2**k for k in range(8, 15)]
T_MAX = HORIZONS[-1]
DEPTH = mechanisms.tree_depth(T_MAX)

pytestmark = pytest.mark.slow


def loglog_slope(values):
    return float(np.polyfit(np.log(HORIZONS), np.log(values), 1)[0])


def test_ftal_and_pftal_on_a_strongly_convex_stream_grow_polylogarithmically():
    c = sets.l2_ball(3, 1.0)
    env = envs.quadratic_stream(c)  # z_radius = 1: gradients H||w - z|| <= 2 = L
    ep = envs.QuadraticParams(1.0, jnp.array([0.4, -0.3, 0.2]), 0.5)
    r = jp.sweep(oco.ftal(c), env, jp.SimParams(oco.FTALParams(1.0), ep), jax.random.key(0), T_MAX, 32, HORIZONS)
    mean, se = mean_with_stderr(np.asarray(r.regret))
    assert loglog_slope(mean) < 0.3
    assert np.all(mean + 3 * se < np.asarray(theory.ftal_regret_bound(np.array(HORIZONS), 2.0, 1.0, 1.0)))
    eps = jnp.array([1.0, 10.0])
    lp = oco.PFTALParams(epsilon=eps, lipschitz=2.0, strong_convexity=1.0)
    r = jp.sweep(oco.pftal(T_MAX, c), env, jp.SimParams(lp, ep), jax.random.key(0), T_MAX, 32, HORIZONS)
    for i, e in enumerate([1.0, 10.0]):
        mean, se = mean_with_stderr(np.asarray(r.regret[i]))
        assert loglog_slope(mean) < 0.3, mean
        var = mechanisms.node_variance("gamma", e, 4.0, DEPTH, 3)  # depth D(T_MAX), replace-one sensitivity 2L
        bound = np.array([float(theory.pftal_regret_bound(T, 3, 2.0, 1.0, 1.0, var, DEPTH)) for T in HORIZONS])
        assert np.all(mean + 3 * se < bound), (mean, bound)


def test_ogd_and_regularised_pftal_on_experts_grow_like_sqrt_t():
    p = 4
    env = envs.experts_stream(p)  # equal means: the best expert is the minimum of p random walks
    ep = envs.ExpertsParams(0.5)
    s = sets.simplex(p)
    lip = float(np.sqrt(p))
    r = jp.sweep(
        oco.ogd(s, "sqrt"), env, jp.SimParams(oco.OGDParams(lipschitz=lip), ep), jax.random.key(1), T_MAX, 64, HORIZONS
    )
    mean, se = mean_with_stderr(np.asarray(r.regret))
    assert abs(loglog_slope(mean) - 0.5) < 0.15, mean
    assert np.all(mean + 3 * se < np.asarray(theory.ogd_regret_bound(np.array(HORIZONS), lip, s.diameter)))
    # Private experts at ε = 1: one grid point per horizon, each with Theorem 11's H for that horizon.
    h = jnp.stack([theory.regularized_pftal_strength(T, p, lip, 1.0, 1.0, depth=DEPTH) for T in HORIZONS])
    lp = oco.PrivateExpertsParams(epsilon=jnp.ones(len(HORIZONS)), strong_convexity=h)
    r = jp.sweep(oco.private_experts(T_MAX, p), env, jp.SimParams(lp, ep), jax.random.key(1), T_MAX, 64, HORIZONS)
    per_t = np.stack([np.asarray(r.regret[k, :, k]) for k in range(len(HORIZONS))], axis=1)
    mean, se = mean_with_stderr(per_t)
    assert abs(loglog_slope(mean) - 0.5) < 0.15, mean
    bound = np.array(
        [float(theory.private_experts_regret_bound(T, p, h[k], 1.0, depth=DEPTH)) for k, T in enumerate(HORIZONS)]
    )
    assert np.all(mean + 3 * se < bound)


def test_ogd_and_regularised_pftal_on_logistic_regression_grow_like_sqrt_t():
    dim, radius = 3, 3.0
    c = sets.l2_ball(dim, radius)
    env = envs.classification_stream(c, T_MAX, "logistic", solver_steps=200)
    ep = envs.ClassificationParams(jnp.array([1.0, -0.5, 0.3]), 0.1)
    r = jp.sweep(
        oco.ogd(c, "sqrt"), env, jp.SimParams(oco.OGDParams(lipschitz=1.0), ep), jax.random.key(2), T_MAX, 16, HORIZONS
    )
    assert float(np.max(r.gap)) < 0.05  # the comparator is solved: regret is exact to 0.05
    mean, se = mean_with_stderr(np.asarray(r.regret + r.gap))
    assert abs(loglog_slope(mean) - 0.5) < 0.15, mean
    assert np.all(mean + 3 * se < np.asarray(theory.ogd_regret_bound(np.array(HORIZONS), 1.0, c.diameter)))
    # Regularised PFTAL (no noise: the regularised FTAL limit), Theorem 11's H per horizon.
    h = jnp.stack([theory.regularized_pftal_strength(T, dim, 1.0, radius, jnp.inf, depth=DEPTH) for T in HORIZONS])
    lp = oco.RegularizedPFTALParams(jnp.inf, lipschitz=1.0, strong_convexity=h)
    r = jp.sweep(oco.regularized_pftal(T_MAX, c), env, jp.SimParams(lp, ep), jax.random.key(2), T_MAX, 8, HORIZONS)
    per_t = np.stack([np.asarray(r.regret[k, :, k] + r.gap[k, :, k]) for k in range(len(HORIZONS))], axis=1)
    mean, se = mean_with_stderr(per_t)
    assert abs(loglog_slope(mean) - 0.5) < 0.15, mean
    bound = np.array(
        [
            float(theory.regularized_pftal_regret_bound(T, dim, 1.0, h[k], radius, jnp.inf, depth=DEPTH))
            for k, T in enumerate(HORIZONS)
        ]
    )
    assert np.all(mean + 3 * se < bound)
