"""DNPR10's experts, reconstructed (follow the noisy leader on a Laplace tree + one FTPL draw)."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.stats

import jaxpriv as jp
from jaxpriv import envs
from jaxpriv.oco.dnpr_experts import DNPRExpertsParams, dnpr_experts, dnpr_perturbation_range
from jaxpriv.testing import ks_critical_value, ks_one_sample, mean_with_stderr, rollout

P = 4


def _plays(t, action, feedback, info, learner_state, env_state):
    return action


def test_tree_noise_is_laplace_for_a_whole_replaced_cost_vector():
    # The alternating stream is deterministic: after t = 32 = 2^5 rounds the release minus the exact centred
    # counts is one node's noise, Lap(D p / ε) per coordinate, D = ceil(log2 32) + 1 = 6 (L1 sensitivity p).
    horizon, seeds, eps = 32, 1000, 2.0
    env = envs.experts_stream(P, pattern="alternating")
    out = rollout(dnpr_experts(horizon, P), env, jp.SimParams(DNPRExpertsParams(jnp.array([eps, jnp.inf])),
                  envs.ExpertsParams()), jax.random.key(1), horizon, seeds=seeds, record=_plays)  # fmt: skip
    exact = np.array([16.0, 16.0, 32.0, 32.0]) - horizon / 2.0  # expert 0 at even t, 1 at odd t, the rest always
    noise = (np.asarray(out.learner_state.released[0], np.float64) - exact).ravel()
    b = 6 * P / eps
    crit = ks_critical_value(noise.size)
    assert ks_one_sample(noise, scipy.stats.laplace(scale=b).cdf) < crit
    assert ks_one_sample(noise, scipy.stats.laplace(scale=b / 1.5).cdf) > crit  # power: a third less noise
    np.testing.assert_array_equal(np.asarray(out.learner_state.released[1]), np.broadcast_to(exact, (seeds, P)))
    # ε = inf: follow the perturbed leader exactly (a NumPy transcription of the rule, step by step)
    perturb = np.asarray(out.learner_state.perturbation[1], np.float64)
    assert np.all((perturb >= 0) & (perturb <= dnpr_perturbation_range(horizon, P)))
    costs = np.ones((horizon, P))
    costs[:, 0] = (np.arange(1, horizon + 1) % 2 == 0).astype(float)
    costs[:, 1] = 1.0 - costs[:, 0]
    before = np.vstack([np.zeros(P), np.cumsum(costs - 0.5, axis=0)[:-1]])  # counts after rounds 0..T-1
    leader = np.argmin(before[None] + perturb[:, None, :], axis=-1)  # [seeds, T]
    np.testing.assert_array_equal(np.argmax(np.asarray(out.records[1]), axis=-1), leader)


def test_regret_grows_with_the_privacy_noise_and_stays_sublinear_on_the_alternating_stream():
    # FTL pays ≈ T on the alternating stream; FTPL's one-time perturbation keeps it near 2 sqrt(2pT)
    horizon, seeds = 2048, 32
    env = envs.experts_stream(P, pattern="alternating")
    res = jp.sweep(dnpr_experts(horizon, P), env, jp.SimParams(DNPRExpertsParams(jnp.array([jnp.inf, 0.5])),
                   envs.ExpertsParams()), jax.random.key(2), horizon, seeds, checkpoints=[horizon])  # fmt: skip
    regret = np.asarray(res.regret[..., -1], np.float64)  # [2, seeds]
    assert np.all(regret[0] <= 2 * math.sqrt(2 * P * horizon) + 6 * math.sqrt(horizon))  # FTPL: KV05's bound + slack
    assert np.all(regret < 0.5 * horizon)  # far from FTL's ≈ T/2 extra
    m, se = mean_with_stderr(regret[1] - regret[0])
    assert m > 3 * se, (m, se)


def test_budget_is_checked():
    learner = dnpr_experts(64, P)
    with pytest.raises(ValueError, match="epsilon"):
        learner.check(DNPRExpertsParams(0.0))
    learner.check(DNPRExpertsParams(jnp.inf))
    assert learner.spec.private and learner.spec.name == "dnpr_experts"
