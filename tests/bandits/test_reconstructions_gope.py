"""Hanna et al. and Li–Zhou–Ji, reconstructed (GOPE with noise on the per-action sums): calibration, limits, regret."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.stats

import jaxpriv as jp
from jaxpriv import theory
from jaxpriv.bandits import _gope_core as core
from jaxpriv.bandits import design
from jaxpriv.bandits.adac_gope import AdaCGOPEParams
from jaxpriv.bandits.episodic import simulate_episodes
from jaxpriv.bandits.gope import GOPEParams, gope
from jaxpriv.bandits.hanna_gope import HannaGOPEParams, hanna_gope
from jaxpriv.bandits.li_zhou_ji_gope import LiZhouJiGOPEParams, li_zhou_ji_gope
from jaxpriv.envs.linear_bandits import linear_bandit, sample_linear_instance
from jaxpriv.mechanisms import analytic_gaussian_sigma
from jaxpriv.testing import ks_critical_value, ks_one_sample

K, D = 10, 3
INSTANCE = sample_linear_instance(jax.random.key(1), K, D)

# One dimension, two arms: the G-optimal design is one point (a = 1), so with noise-free rewards the release of
# the phase is θ̃ - θ* = Z / T_1(a), Z the noise on that arm's sum: its exact law is the calibration's.
LINE = jnp.array([[1.0], [-0.5]])


def _released_noise(learner, params, seeds, key):
    """The learner's state after ``init`` (its first plan) and ``Z`` of ``seeds`` releases of its phase 1."""
    state = jax.jit(learner.init)(jax.random.key(0), params)
    alloc = np.asarray(state.alloc)
    assert alloc[1] == 0 and alloc[0] > 0  # one support point
    n = float(alloc[0])
    placement = dict(learner.spec.static)["noise_placement"]

    def release(k):
        return core.close_phase(
            k, state.actions, active=state.active, pulls=state.alloc, reward_sums=jnp.array([0.5 * n, 0.0]),
            phase=state.phase, c=state.c, rho=state.rho, private=True, calibration="safe",
            noise_placement=placement, scale=state.scale,
        ).theta_tilde[0]  # fmt: skip

    theta = jax.jit(jax.vmap(release))(jax.random.split(key, seeds))
    return (np.asarray(theta, np.float64) - 0.5) * n, state


def test_hanna_noise_is_laplace_two_over_epsilon():
    eps, seeds = 0.7, 4000
    z, state = _released_noise(hanna_gope(2, 1, 4000), HannaGOPEParams(LINE, eps), seeds, jax.random.key(2))
    b = 2.0 / eps  # sensitivity 2 of a reward sum (rewards in [-1, 1]), pure ε-DP
    assert float(state.scale) == pytest.approx(b, rel=1e-6)
    crit = ks_critical_value(seeds)
    assert ks_one_sample(z, scipy.stats.laplace(scale=b).cdf) < crit
    assert ks_one_sample(z, scipy.stats.laplace(scale=b / 1.5).cdf) > crit  # power: a third less noise (D = 0.074)
    assert ks_one_sample(z, scipy.stats.norm(scale=b * math.sqrt(2)).cdf) > crit  # and the same-variance Gaussian


def test_li_zhou_ji_noise_is_the_exact_analytic_gaussian():
    eps, dp_delta, seeds = 0.7, 1e-5, 4000
    learner = li_zhou_ji_gope(2, 1, 4000)
    z, state = _released_noise(learner, LiZhouJiGOPEParams(LINE, eps, dp_delta), seeds, jax.random.key(3))
    sigma = float(analytic_gaussian_sigma(eps, dp_delta, 2.0))  # the exact (float64) calibration, Δ = 2
    assert float(state.scale) >= sigma * (1 - 1e-6)
    assert float(state.scale) == pytest.approx(sigma, rel=1e-4)
    crit = ks_critical_value(seeds)
    assert ks_one_sample(z, scipy.stats.norm(scale=sigma).cdf) < crit
    assert ks_one_sample(z, scipy.stats.norm(scale=sigma / 1.3).cdf) > crit  # power (D = 0.063)


def test_infinite_epsilon_without_pruning_is_gope_bit_for_bit():
    # (li_zhou_ji_gope shares this path: at ε = inf its σ is 0, as Hanna's b; its state's scale is checked above)
    horizon, seeds = 3000, 4
    env = linear_bandit(K, D)
    runs = [
        jp.sweep(learner, env, jp.SimParams(params, INSTANCE), jax.random.key(6), horizon, seeds, checkpoints=None)
        for learner, params in (
            (gope(K, D, horizon), GOPEParams(INSTANCE.actions)),
            (hanna_gope(K, D, horizon, small_support=False), HannaGOPEParams(INSTANCE.actions, jnp.inf)),
        )
    ]
    for other in runs[1:]:
        np.testing.assert_array_equal(np.asarray(other.regret), np.asarray(runs[0].regret))
        np.testing.assert_array_equal(np.asarray(other.loss), np.asarray(runs[0].loss))


def test_pruned_design_keeps_the_information_matrix_on_a_small_support():
    for k, d in ((40, 4),):
        x = sample_linear_instance(jax.random.key(k), k, d).actions
        w0 = jax.jit(design.g_optimal_design)(x).weights
        w = np.asarray(jax.jit(design.prune_support)(x, w0))
        assert np.sum(w > core.SUPPORT_TOL) <= d * (d + 1) // 2 < np.sum(np.asarray(w0) > core.SUPPORT_TOL)
        assert np.all(w >= 0) and np.sum(w) <= float(np.sum(w0)) * (1 + 1e-6)
        xs = np.asarray(x, np.float64)
        v0 = (xs * np.asarray(w0, np.float64)[:, None]).T @ xs
        v1 = (xs * w[:, None]).T @ xs
        np.testing.assert_allclose(v1, v0, atol=1e-5 * np.abs(v0).max())


def test_phase_constant_matches_theory_and_is_gopes_without_noise():
    for laplace in (True, False):
        for scale in (0.0, 0.3, 4.0):
            for phase in (1, 3):
                c = float(core.sums_phase_constant(phase, 0.001, K, D, support=5, scale=scale, laplace=laplace))
                ref = theory.sums_gope_phase_constant(phase, K, D, 0.001, scale, laplace, 5)
                assert c == pytest.approx(ref, rel=1e-5)
                c0 = core.phase_constant(phase, jnp.inf, 0.001, K, D, private=False)
                if scale == 0:
                    assert c == float(c0)  # exactly GOPE's
                else:
                    assert c > float(c0)
    # Laplace's sub-exponential regime: at a small ε the linear term c₂ is the binding one
    b = 2.0 / 0.01
    c = theory.sums_gope_phase_constant(1, K, D, 0.001, b, True, 1)
    assert c == pytest.approx(4 * math.sqrt(2) * b * D * math.log(4 * K * 2 / 0.001) / 0.5)


@pytest.mark.parametrize("which", ["hanna"])  # Laplace: the sub-exponential argument (li_zhou_ji_gope: the study)
def test_regret_is_below_the_elimination_bound(which):
    horizon, seeds, eps = 20_000, 40, 1.0
    inst = INSTANCE._replace(noise_stddev=1.0)
    if which == "hanna":
        learner, params = hanna_gope(K, D, horizon), HannaGOPEParams(INSTANCE.actions, eps)
        scale, laplace = 2.0 / eps, True
    else:
        learner, params = li_zhou_ji_gope(K, D, horizon), LiZhouJiGOPEParams(INSTANCE.actions, eps, 1e-5)
        scale, laplace = float(analytic_gaussian_sigma(eps, 1e-5, 2.0)), False
    res = simulate_episodes(learner, params, inst, jax.random.key(9), horizon, seeds, [horizon])
    assert res.private is True
    regret = np.asarray(res.regret[:, -1], np.float64)
    bound = theory.sums_gope_regret_bound(horizon, K, D, 0.001, scale, laplace)
    assert np.all(regret <= bound), (regret.max(), bound)
    assert regret.mean() > 0.02 * bound  # the bound is not vacuous by orders of magnitude


def test_budgets_and_opt_outs_are_refused_before_compiling():
    h = hanna_gope(K, D, 100)
    with pytest.raises(ValueError, match="epsilon"):
        h.check(HannaGOPEParams(INSTANCE.actions, 0.0))
    with pytest.raises(ValueError, match="epsilon"):
        hanna_gope(K, D, 100, clip=False).check(HannaGOPEParams(INSTANCE.actions, 1.0))
    hanna_gope(K, D, 100, clip=False).check(HannaGOPEParams(INSTANCE.actions, jnp.inf))
    assert hanna_gope(K, D, 100, clip=False, private=False).spec.private is False
    lzj = li_zhou_ji_gope(K, D, 100)
    with pytest.raises(ValueError, match="dp_delta"):
        lzj.check(LiZhouJiGOPEParams(INSTANCE.actions, 1.0, 1.5))
    with pytest.raises(ValueError, match="epsilon"):
        lzj.check(LiZhouJiGOPEParams(INSTANCE.actions, -1.0, 1e-5))
    with pytest.raises(ValueError, match="small_support"):
        core.phased_elimination(K, D, 100, private=True, small_support=True)
    with pytest.raises(ValueError, match="params"):
        simulate_episodes(h, AdaCGOPEParams(INSTANCE.actions, 1.0), INSTANCE, jax.random.key(0), 100, 2)
    assert h.spec.name == "hanna_gope" and lzj.spec.name == "li_zhou_ji_gope"
    assert h.spec.private and lzj.spec.private
