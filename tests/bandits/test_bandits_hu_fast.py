"""Anytime-Lazy-UCB's exact event simulator (``jaxpriv.bandits.episodic.lazy``) against its step-level policy."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxpriv as jp
from jaxpriv.bandits import AnytimeLazyUCBParams, _sampling, anytime_lazy_ucb, lazy_dp_ts, simulate_episodes
from jaxpriv.bandits.episodic.lazy import max_events
from jaxpriv.envs.bandits import PAPER_MEANS, BernoulliParams, bernoulli_bandit
from jaxpriv.testing import ks_two_sample, mean_with_stderr, rollout


def _regret_and_releases(t, action, reward, info, state, env_state):
    return info.regret, jnp.sum(state.epochs)


def _step_level(learner, means, epsilon, key, horizon, seeds):
    """The engine's runs: cumulative pseudo-regret and the releases made (``sum(epochs)``) per step, ``[seeds, T]``."""
    K = len(means)
    params = jp.SimParams(AnytimeLazyUCBParams(epsilon=epsilon), BernoulliParams(jnp.asarray(means, jnp.float32)))
    out = rollout(learner, bernoulli_bandit(K), params, key, horizon, seeds=seeds, record=_regret_and_releases)
    regret, releases = out.records
    return np.cumsum(np.asarray(regret, np.float64), axis=-1), np.asarray(releases)


T, S, EPS = 2000, 400, 1.0
CKPTS = (150, T)


@pytest.fixture(scope="module")
def reference():
    return _step_level(anytime_lazy_ucb(5), PAPER_MEANS, EPS, jax.random.key(0), T, S)


def _fast(epsilon=EPS, reward_sum=None, key=1):
    kw = {} if reward_sum is None else {"reward_sum": reward_sum, "private": False}
    return simulate_episodes(
        anytime_lazy_ucb(5), AnytimeLazyUCBParams(epsilon=epsilon), PAPER_MEANS, jax.random.key(key), T, S, CKPTS, **kw
    )


def _ks_rejections(reference, fast):
    regret, releases = reference
    out = []
    for j, c in enumerate(CKPTS):
        for ref, got in ((regret, fast.regret), (releases, fast.episodes)):
            stat, crit = ks_two_sample(ref[:, c - 1], np.asarray(got[:, j], np.float64))
            out.append((stat, crit))
    return out


def test_event_simulator_and_step_level_agree_in_distribution(reference):
    fast = _fast()
    assert fast.private is True
    for stat, crit in _ks_rejections(reference, fast):
        assert stat < crit, (stat, crit)
    regret, _ = reference
    a, sa = mean_with_stderr(regret[:, -1])
    b, sb = mean_with_stderr(np.asarray(fast.regret[:, -1], np.float64))
    assert abs(a - b) < 4 * math.hypot(sa, sb)
    np.testing.assert_array_equal(np.asarray(fast.pulls).sum(-1), T)


def _shrunk_means(key, n, mean):
    # Wrong mean: the gaps halved (the wrong success probability).
    return _sampling.binomial(key, n, 0.5 + 0.5 * (mean - 0.5))


@pytest.mark.parametrize("wrong", ["reward_mean", "epsilon"])
def test_the_comparison_rejects_a_wrong_simulator(reference, wrong):
    # Power: the same statistics reject a simulator with the gaps halved, or with 1/ε, the constant of both the
    # release noise and the index's privacy width, 50% larger.
    fast = _fast(reward_sum=_shrunk_means) if wrong == "reward_mean" else _fast(epsilon=EPS / 1.5)
    stats = _ks_rejections(reference, fast)
    assert any(stat > crit for stat, crit in stats), stats


def test_deterministic_rewards_give_identical_paths():
    # Rewards 0/1, no noise and first-index ties: both simulators take the same decisions, leader changes between
    # releases included (the zero arms' widths overtake the one arms'); every step's regret and releases agree.
    # (Without the overtaking search the first two instances fail.) One K and T: one compilation each side.
    learner = anytime_lazy_ucb(3, tie_break="first", private=False)
    for means in ((1.0, 0.0, 0.0), (1.0, 1.0, 0.0), (0.0, 1.0, 1.0)):
        regret, releases = _step_level(learner, means, jnp.inf, jax.random.key(4), 600, 2)
        fast = simulate_episodes(learner, AnytimeLazyUCBParams(epsilon=jnp.inf), means, jax.random.key(5), 600, 2, None)
        assert fast.private is False
        np.testing.assert_array_equal(np.asarray(fast.regret, np.float64), regret, err_msg=str(means))
        np.testing.assert_array_equal(np.asarray(fast.episodes), releases, err_msg=str(means))


def test_the_paper_horizon_runs_over_an_epsilon_grid_and_counts_every_round():
    res = simulate_episodes(
        anytime_lazy_ucb(5),
        AnytimeLazyUCBParams(epsilon=jnp.array([0.5, 2.0])),
        PAPER_MEANS,
        jax.random.key(6),
        10**7,
        4,
    )
    assert np.asarray(res.regret).shape == (2, 4, len(res.steps))
    np.testing.assert_array_equal(np.asarray(res.pulls).sum(-1), 10**7)
    assert np.all(np.diff(np.asarray(res.regret), axis=-1) >= 0)
    assert int(np.asarray(res.episodes).max()) <= 5 * (10**7).bit_length()
    assert max_events(5, 10**7) == 605


def test_refusals():
    ucb = anytime_lazy_ucb(3, private=False)
    with pytest.raises(ValueError, match="tie_break='random'"):
        simulate_episodes(ucb, AnytimeLazyUCBParams(epsilon=jnp.inf), (0.5, 0.4, 0.3), jax.random.key(0), 100, 2)
    with pytest.raises(ValueError, match="private=False"):
        simulate_episodes(
            anytime_lazy_ucb(3),
            AnytimeLazyUCBParams(epsilon=1.0),
            (0.5, 0.4, 0.3),
            jax.random.key(0),
            100,
            2,
            reward_sum=_shrunk_means,
        )
    with pytest.raises(ValueError, match="num_arms=3"):
        simulate_episodes(
            anytime_lazy_ucb(3), AnytimeLazyUCBParams(epsilon=1.0), (0.5, 0.4, 0.3), jax.random.key(0), 2, 2
        )
    with pytest.raises(ValueError, match="no exact episode simulator"):
        simulate_episodes(lazy_dp_ts(3), AnytimeLazyUCBParams(epsilon=1.0), (0.5, 0.4, 0.3), jax.random.key(0), 100, 2)


def test_a_run_stopped_short_of_the_horizon_raises(monkeypatch):
    # The scan's length is the event bound plus slack; a simulator that ran out of events must not return a
    # regret of fewer than T rounds: with the bound lowered so that the scan has 5 steps, T = 1999 is not reached.
    import sys

    policy_module = sys.modules["jaxpriv.bandits.anytime_lazy_ucb"]  # the policy's file holds its event simulator
    monkeypatch.setattr(policy_module, "max_events", lambda num_arms, horizon: 5 - num_arms * horizon.bit_length())
    with pytest.raises(RuntimeError, match="stopped after"):
        simulate_episodes(
            anytime_lazy_ucb(5), AnytimeLazyUCBParams(epsilon=1.0), PAPER_MEANS, jax.random.key(0), 1999, 2
        )
