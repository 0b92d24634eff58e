"""The episode-level GOPE / AdaC-GOPE simulator against the step-level reference."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxpriv as jp
from jaxpriv.bandits.adac_gope import AdaCGOPEParams, adac_gope
from jaxpriv.bandits.episodic.gope import clipped_gaussian_moments, simulate_gope_phases
from jaxpriv.bandits.gope import GOPEParams
from jaxpriv.envs.linear_bandits import LinearBanditParams, linear_bandit
from jaxpriv.testing import ks_two_sample, mean_with_stderr, rollout

# Four arms in R^2, θ* = e_1, gaps just above the elimination thresholds 2β_ℓ = 1/2, 1/4, 1/8 (×1.08):
# whether an arm survives a phase depends on the noise of the phase's estimate, so the regret
# distribution is sensitive to the reward-sum distribution.
GAPS = np.array([0.0, 0.135, 0.27, 0.54])
_ANG = np.arccos(1 - GAPS)
ACTIONS = np.stack([np.cos(_ANG), np.sin(_ANG) * np.array([1, 1, -1, 1])], 1).astype(np.float32)
INSTANCE = LinearBanditParams(ACTIONS, np.array([1.0, 0.0], np.float32), 1.0)
K, D, T, SEEDS = 4, 2, 30_000, 400
PARAMS = AdaCGOPEParams(ACTIONS, rho=1.0, delta=0.1)


def snap(a, b, rtol=1e-4):
    """Map two samples onto shared atoms: values within ``rtol`` are the same atom.

    The regret of GOPE takes few values (sums of integer pull counts times gaps); float32
    summation in two different orders splits an atom into near-identical values, which a
    KS test would read as a difference.
    """
    pooled = np.sort(np.concatenate([a, b]))
    new = np.concatenate([[True], np.diff(pooled) > rtol * np.maximum(1.0, np.abs(pooled[1:]))])
    reps = pooled[new]

    def ids(v):
        return np.searchsorted(reps, v + rtol * np.maximum(1.0, np.abs(v)), side="right")

    return ids(a), ids(b)


def _step_regret(t, action, feedback, info, learner_state, env_state):
    return info.regret


def step_level(clip):
    """Final regret and phases started, from the step-level policy (the engine's key derivation).

    One rollout gives both: its per-step regrets (seed ``i`` of ``jp.sweep`` with the same key, summed here in
    float64 instead of the engine's Kahan sum: within 2e-4 of the sweep's final regret, measured, inside
    ``snap``'s atoms) and the final learner state. A sweep and a rollout simulated the 400 x 30000 steps twice.
    """
    learner, env = adac_gope(K, D, T, clip=clip, private=clip), linear_bandit(K, D)  # unclipped: not private
    params = jp.SimParams(PARAMS, INSTANCE)
    out = rollout(learner, env, params, jax.random.key(0), T, seeds=SEEDS, record=_step_regret)
    regret = np.asarray(out.records, np.float64).sum(-1)
    agent = out.learner_state
    phases = agent.num_closed + np.any(np.asarray(agent.pulled) > 0, axis=-1).astype(np.int32)
    return regret, np.asarray(phases)


@pytest.fixture(scope="module")
def reference():
    return step_level(clip=False)


def _wrong_scale(factor):
    def sums(key, means, stddev, pulls):
        n = pulls.astype(jnp.float32)
        return n * means + factor * stddev * jnp.sqrt(n) * jax.random.normal(key, means.shape)

    return sums


def _wrong_n2(key, means, stddev, pulls):  # variance n² σ² (one draw scaled by n): a classic bug
    n = pulls.astype(jnp.float32)
    return n * means + stddev * n * jax.random.normal(key, means.shape)


def test_fast_path_matches_step_level_in_distribution(reference):
    step_regret, step_phases = reference
    fast = simulate_gope_phases(PARAMS, INSTANCE, jax.random.key(5), T, SEEDS, [T], clip=False, private=False)
    fast_regret = np.asarray(fast.regret[:, -1], np.float64)
    stat, crit = ks_two_sample(*snap(step_regret, fast_regret))
    assert stat < crit, (stat, crit)
    m1, s1 = mean_with_stderr(step_regret)
    m2, s2 = mean_with_stderr(fast_regret)
    assert abs(m1 - m2) < 4 * np.hypot(s1, s2)
    # The same number of phases (distribution; here both are deterministic).
    fast_phases = np.asarray(fast.episodes[:, -1])
    np.testing.assert_array_equal(np.bincount(step_phases, minlength=10), np.bincount(fast_phases, minlength=10))
    assert np.all(np.asarray(fast.pulls).sum(-1) == T)
    np.testing.assert_allclose(
        np.asarray(fast.pulls, np.float64) @ GAPS, fast_regret, rtol=1e-5
    )  # regret = Σ_a Δ_a N_a(T)


@pytest.mark.parametrize("wrong", [_wrong_scale(2.0), _wrong_scale(0.5), _wrong_n2], ids=["2sd", "half_sd", "n2"])
def test_a_wrong_reward_sum_distribution_is_detected(reference, wrong):
    step_regret, _ = reference
    fast = simulate_gope_phases(
        PARAMS, INSTANCE, jax.random.key(5), T, SEEDS, [T], clip=False, reward_sums=wrong, private=False
    )
    stat, crit = ks_two_sample(*snap(step_regret, np.asarray(fast.regret[:, -1], np.float64)))
    assert stat > crit, (stat, crit)


@pytest.mark.slow
def test_fast_path_matches_step_level_with_clipped_rewards():
    # Clipped rewards: exact sums up to 64 pulls, moment-matched Gaussian beyond (CLT).
    step_regret, step_phases = step_level(clip=True)
    fast = simulate_gope_phases(PARAMS, INSTANCE, jax.random.key(5), T, SEEDS, [T], clip=True)
    stat, crit = ks_two_sample(*snap(step_regret, np.asarray(fast.regret[:, -1], np.float64)))
    assert stat < crit, (stat, crit)
    fast_phases = np.asarray(fast.episodes[:, -1])
    np.testing.assert_array_equal(np.bincount(step_phases, minlength=10), np.bincount(fast_phases, minlength=10))


def test_clipped_gaussian_moments_match_monte_carlo():
    mus = jnp.array([-1.5, -0.3, 0.0, 0.4, 0.9, 2.0])
    m1, var = clipped_gaussian_moments(mus, 1.0)
    z = jax.random.normal(jax.random.key(0), (200_000, 1))
    x = np.asarray(jnp.clip(mus[None, :] + z, -1, 1), np.float64)
    se_m = x.std(0) / np.sqrt(x.shape[0])
    assert np.all(np.abs(x.mean(0) - np.asarray(m1)) < 5 * se_m)
    c = (x - x.mean(0)) ** 2
    se_v = c.std(0) / np.sqrt(x.shape[0])
    assert np.all(np.abs(c.mean(0) - np.asarray(var)) < 5 * se_v)
    m0, v0 = clipped_gaussian_moments(jnp.array([0.3, 1.7]), 0.0)
    np.testing.assert_allclose(np.asarray(m0), [0.3, 1.0])
    np.testing.assert_allclose(np.asarray(v0), [0.0, 0.0])


def test_fast_path_checkpoints_grid_and_bad_input():
    # Checkpoints are monotone, the grid is zipped with common seeds, and T = 10^7 is O(log T) phases.
    rhos = jnp.array([0.1, 1e9], jnp.float32)
    res = simulate_gope_phases(PARAMS._replace(rho=rhos), INSTANCE, jax.random.key(1), 10**7, 8, "log")
    reg = np.asarray(res.regret)
    assert reg.shape[:2] == (2, 8)
    assert np.all(np.diff(reg, axis=-1) >= -1e-3)
    assert np.all(np.asarray(res.episodes[..., -1]) <= 13)
    np.testing.assert_array_equal(np.asarray(res.pulls).sum(-1), 10**7)
    base = simulate_gope_phases(GOPEParams(ACTIONS, 0.1), INSTANCE, jax.random.key(1), 10**7, 8, "log")
    np.testing.assert_array_equal(np.asarray(base.episodes), np.asarray(res.episodes[1]))
    with pytest.raises(ValueError, match="rho"):
        simulate_gope_phases(PARAMS._replace(rho=0.0), INSTANCE, jax.random.key(1), 100, 2)
    with pytest.raises(ValueError, match="delta"):
        simulate_gope_phases(PARAMS._replace(delta=1.0), INSTANCE, jax.random.key(1), 100, 2)
    with pytest.raises(ValueError, match="horizon"):
        simulate_gope_phases(PARAMS, INSTANCE, jax.random.key(1), 3, 2)
    with pytest.raises(ValueError, match="instance"):
        simulate_gope_phases(PARAMS, INSTANCE, jax.random.key(1), 100, 2, instance="bad")
