"""LinPriv, reconstructed (OFUL on a Laplace tree's release of Σ x r): calibration, exact limit, regret."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.stats

import jaxpriv as jp
from jaxpriv import theory
from jaxpriv.bandits.linpriv import LinPrivParams, linpriv
from jaxpriv.envs.linear_bandits import ContextualBanditParams, contextual_linear_bandit
from jaxpriv.mechanisms import TreeParams, binary_tree, release_variance
from jaxpriv.testing import ks_critical_value, ks_one_sample, mean_with_stderr, rollout

K, D = 5, 3


def _nothing(t, action, feedback, info, learner_state, env_state):
    return None


def test_release_noise_is_the_trees_laplace_and_exact_without_noise():
    # θ* = 0 and noise-free rewards: Σ x r = 0, so at t = 64 = 2^6 (one closed node) the release is one node's
    # noise, Lap(b) per coordinate with b = D_tree · 2√d / ε, D_tree = ceil(log2 64) + 1 = 7 (L1 sensitivity 2√d).
    horizon, seeds, eps = 64, 1500, 2.0
    env = contextual_linear_bandit(K, D)
    ep = ContextualBanditParams(theta=jnp.zeros(D), noise_stddev=0.0)
    grid = LinPrivParams(epsilon=jnp.array([eps, jnp.inf]))
    st = rollout(linpriv(K, D, horizon), env, jp.SimParams(grid, ep), jax.random.key(1), horizon, seeds=seeds,
                 record=_nothing).learner_state  # fmt: skip
    noise = np.asarray(st.released[0], np.float64).ravel()
    b = 7 * 2 * math.sqrt(D) / eps
    var = release_variance(binary_tree(horizon, D, "laplace", "replace"), TreeParams(eps, sensitivity=math.sqrt(D)), 64)
    assert float(np.max(var)) == pytest.approx(2 * b**2, rel=1e-6)  # the tree's exact variance is this calibration's
    crit = ks_critical_value(noise.size)
    assert ks_one_sample(noise, scipy.stats.laplace(scale=b).cdf) < crit
    assert ks_one_sample(noise, scipy.stats.laplace(scale=b / 1.5).cdf) > crit  # power: a third less noise
    assert np.all(np.asarray(st.released[1]) == 0.0)  # ε = inf: the exact statistic (here 0)


def test_infinite_epsilon_releases_the_exact_statistic_and_regret_sanity():
    # One compiled sweep over ε ∈ {inf, 1}: at ε = inf the release is Σ x r exactly (r = <θ*, x>, noise-free,
    # so Σ x r = (V - λI) θ* when every context lies in the unit ball); regret is below the rectified bound,
    # and the noise costs regret (paired).
    horizon, seeds = 600, 24
    env = contextual_linear_bandit(K, D)
    theta = jnp.array([0.6, 0.8, 0.0])
    # contexts inside the unit ball (so the policy's clipping leaves them as the env plays them)
    ep = ContextualBanditParams(theta=theta, context_mean=0.5 / math.sqrt(D), context_stddev=0.1, noise_stddev=0.0)
    grid = LinPrivParams(epsilon=jnp.array([jnp.inf, 1.0]))
    out = rollout(linpriv(K, D, horizon), env, jp.SimParams(grid, ep), jax.random.key(2), horizon, seeds=seeds)
    st = out.learner_state
    exact = np.einsum("sde,e->sd", np.asarray(st.gram[0], np.float64) - np.eye(D), np.asarray(theta, np.float64))
    np.testing.assert_allclose(np.asarray(st.released[0], np.float64), exact, atol=2e-3)
    regret = np.asarray(out.records.regret, np.float64).sum(axis=-1)  # [2, seeds]
    assert np.all(regret[0] <= theory.linpriv_regret_bound(horizon, D, math.inf))
    assert np.all(regret[1] <= theory.linpriv_regret_bound(horizon, D, 1.0))
    m, se = mean_with_stderr(regret[1] - regret[0])
    assert m > 3 * se, (m, se)


def test_bound_has_the_rectified_order():
    # The private term of the rectified bound grows like d^{3/2} (sqrt(d) γ · sqrt(d) potential, γ ∝ d).
    t = 10**6
    priv = [theory.linpriv_regret_bound(t, d, 1.0) - theory.linpriv_regret_bound(t, d, math.inf) for d in (4, 16)]
    assert priv[1] / priv[0] == pytest.approx(4**1.5, rel=0.15)
    assert theory.linpriv_regret_bound(t, 4, 2.0) < theory.linpriv_regret_bound(t, 4, 1.0)


def test_budget_and_opt_outs_are_refused():
    learner = linpriv(K, D, 100)
    with pytest.raises(ValueError, match="epsilon"):
        learner.check(LinPrivParams(0.0))
    with pytest.raises(ValueError, match="delta"):
        learner.check(LinPrivParams(1.0, delta=2.0))
    with pytest.raises(ValueError, match="epsilon"):
        linpriv(K, D, 100, clip=False).check(LinPrivParams(1.0))
    linpriv(K, D, 100, clip=False).check(LinPrivParams(jnp.inf))
    assert linpriv(K, D, 100, clip=False, private=False).spec.private is False
    assert learner.spec.private and learner.spec.name == "linpriv"
