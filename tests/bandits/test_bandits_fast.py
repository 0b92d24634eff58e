"""The episode-level simulator against the step-level reference, and its exact Binomial sampler."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxpriv as jp
from jaxpriv.bandits import AdaCUCBParams, UCBParams, _sampling, adac_ucb, ucb
from jaxpriv.bandits.episodic import simulate_ucb_episodes
from jaxpriv.envs.bandits import PAPER_MEANS, BernoulliParams, bernoulli_bandit
from jaxpriv.testing import ks_critical_value, ks_two_sample, mean_with_stderr, rollout


def _regret_and_episodes(t, action, reward, info, state, env_state):
    return info.regret, state.episodes


def _step_level(learner, num_arms, params, key, horizon, seeds):
    """The engine's runs (``jaxpriv.testing.rollout``: ``jaxpriv.sweep``'s seeds), also recording the episode count.

    Returns cumulative pseudo-regret and ``state.episodes`` per step, shaped ``[G, seeds, T]``.
    """
    out = rollout(learner, bernoulli_bandit(num_arms), params, key, horizon, seeds=seeds, record=_regret_and_episodes)
    regret, episodes = out.records
    return np.cumsum(np.asarray(regret, np.float64), axis=-1), np.asarray(episodes)


T, S = 2000, 500
CKPTS = [300, T]
RHOS = jnp.array([0.3, jnp.inf], jnp.float32)


@pytest.fixture(scope="module")
def reference():
    params = jp.SimParams(AdaCUCBParams(rho=RHOS), BernoulliParams())
    regret, episodes = _step_level(adac_ucb(5), 5, params, jax.random.key(0), T, S)
    return regret, episodes


def _fast(reward_sum=None, key=1):
    kw = {} if reward_sum is None else {"reward_sum": reward_sum, "private": False}  # a hook: not private
    return simulate_ucb_episodes(AdaCUCBParams(rho=RHOS), PAPER_MEANS, jax.random.key(key), T, S, CKPTS, **kw)


def test_step_level_helper_is_the_engine():
    params = jp.SimParams(AdaCUCBParams(rho=RHOS), BernoulliParams())
    regret, _ = _step_level(adac_ucb(5), 5, params, jax.random.key(3), 400, 8)
    res = jp.sweep(adac_ucb(5), bernoulli_bandit(5), params, jax.random.key(3), 400, 8, checkpoints=None)
    np.testing.assert_allclose(regret, np.asarray(res.regret, np.float64), rtol=1e-6)


def test_fast_path_and_step_level_agree_in_distribution(reference):
    regret, episodes = reference
    fast = _fast()
    cols = [c - 1 for c in CKPTS]
    for g in range(len(RHOS)):
        for j, c in enumerate(cols):
            stat, crit = ks_two_sample(regret[g, :, c], np.asarray(fast.regret[g, :, j]))
            assert stat < crit, (float(RHOS[g]), CKPTS[j], stat, crit)
            stat, crit = ks_two_sample(episodes[g, :, c], np.asarray(fast.episodes[g, :, j]))
            assert stat < crit, ("episodes", float(RHOS[g]), CKPTS[j], stat, crit)
            # The same number of episodes on average (they are nearly deterministic: ~log2 N_a per arm).
            a, sa = mean_with_stderr(episodes[g, :, c])
            b, sb = mean_with_stderr(np.asarray(fast.episodes[g, :, j], np.float64))
            assert abs(a - b) < 4 * math.hypot(sa, sb) + 1e-9
    np.testing.assert_array_equal(np.asarray(fast.pulls).sum(-1), T)


def _shrunk_means(key, n, mean):
    # Wrong mean: the gaps halved (a plausible bug: the wrong success probability).
    return _sampling.binomial(key, n, 0.5 + 0.5 * (mean - 0.5))


def _no_variance(key, n, mean):
    # Wrong distribution with the right mean: the expected sum, without its Binomial spread.
    del key
    return jnp.round(n.astype(jnp.float32) * mean)


@pytest.mark.parametrize("wrong", [_shrunk_means, _no_variance], ids=["wrong_mean", "no_variance"])
def test_the_two_sample_test_rejects_a_wrong_reward_sum(reference, wrong):
    regret, _ = reference
    fast = _fast(wrong)
    cols = [c - 1 for c in CKPTS]
    stats = [
        ks_two_sample(regret[g, :, c], np.asarray(fast.regret[g, :, j]))
        for g in range(len(RHOS))
        for j, c in enumerate(cols)
    ]
    assert any(stat > crit for stat, crit in stats), stats


def test_deterministic_rewards_give_identical_paths():
    # One instance (a second one, two arms at T = 37, was the same path: initial pulls, doubling episodes of the
    # best arm, a last episode cut by the horizon; every step of this run is compared).
    means, horizon = (1.0, 0.0, 0.0), 300
    # With rewards 0/1 and deterministic tie-breaking the two simulators make the same decisions;
    # every checkpoint (inside an episode, and a truncated last episode) must agree exactly.
    K = len(means)
    for learner, params in (
        (ucb(K, tie_break="first"), UCBParams()),
        (adac_ucb(K, tie_break="first"), AdaCUCBParams(rho=jnp.inf)),
    ):
        step_params = jp.SimParams(jax.tree.map(lambda v: jnp.asarray([v]), params), BernoulliParams(means))
        regret, episodes = _step_level(learner, K, step_params, jax.random.key(4), horizon, 3)
        fast = simulate_ucb_episodes(params, means, jax.random.key(5), horizon, 3, None, tie_break="first")
        np.testing.assert_array_equal(np.asarray(fast.regret, np.float64), regret[0])
        np.testing.assert_array_equal(np.asarray(fast.episodes), episodes[0])


def test_grid_points_reuse_the_seed_keys():
    key = jax.random.key(6)
    # The same budgets in the other order (one compilation): a budget's numbers do not depend on its grid position
    # (a grid point against a lone budget: test_bandits_adap.py's epsilon-grid test, for the same simulator).
    grid = simulate_ucb_episodes(AdaCUCBParams(rho=jnp.array([0.2, 5.0])), PAPER_MEANS, key, 5000, 16)
    swapped = simulate_ucb_episodes(AdaCUCBParams(rho=jnp.array([5.0, 0.2])), PAPER_MEANS, key, 5000, 16)
    np.testing.assert_array_equal(np.asarray(grid.regret[1]), np.asarray(swapped.regret[0]))
    np.testing.assert_array_equal(np.asarray(grid.regret[0]), np.asarray(swapped.regret[1]))
    assert not np.array_equal(np.asarray(grid.regret[0]), np.asarray(grid.regret[1]))


@pytest.mark.slow
def test_chunking_does_not_change_the_numbers():
    key = jax.random.key(6)
    one = simulate_ucb_episodes(AdaCUCBParams(rho=5.0), PAPER_MEANS, key, 5000, 16)
    chunked = simulate_ucb_episodes(AdaCUCBParams(rho=5.0), PAPER_MEANS, key, 5000, 16, chunk=5)
    np.testing.assert_array_equal(np.asarray(chunked.regret), np.asarray(one.regret))


def test_paper_horizon_runs_and_counts_every_round():
    res = simulate_ucb_episodes(AdaCUCBParams(rho=jnp.array([0.01, 1.0])), PAPER_MEANS, jax.random.key(7), 10**7, 8)
    np.testing.assert_array_equal(np.asarray(res.pulls).sum(-1), 10**7)
    assert np.all(np.diff(np.asarray(res.regret), axis=-1) >= 0)
    assert int(np.asarray(res.episodes).max()) < 5 * (10**7).bit_length()


# --- the exact Binomial sampler -----------------------------------------------------------------------


def _binomial_cdf(n, p, ks):
    logpmf = np.array(
        [
            math.lgamma(n + 1)
            - math.lgamma(k + 1)
            - math.lgamma(n - k + 1)
            + k * math.log(p)
            + (n - k) * math.log1p(-p)
            for k in ks
        ]
    )
    return np.cumsum(np.exp(logpmf))


@pytest.mark.parametrize("n,p", [(7, 0.625), (40, 0.25), (10_000, 0.375), (5_000_000, 0.625), (10_000_000, 0.25)])
def test_binomial_sampler_matches_the_exact_distribution(n, p):
    size = 200_000
    x = np.asarray(_sampling.binomial(jax.random.key(n), jnp.full((size,), n), p), np.float64)
    sd = math.sqrt(n * p * (1 - p))
    lo, hi = max(0, int(n * p - 9 * sd)), min(n, int(n * p + 9 * sd) + 1)
    ks = np.arange(lo, hi + 1)
    cdf = _binomial_cdf(n, p, ks)
    emp = np.searchsorted(np.sort(x), ks, side="right") / size
    crit = ks_critical_value(size)
    assert np.max(np.abs(emp - cdf)) < crit
    mean, se = mean_with_stderr(x)
    assert abs(mean - n * p) < 5 * se
    # Power: the same test rejects a 1% shift of p.
    assert np.max(np.abs(emp - _binomial_cdf(n, p * 1.01, ks))) > crit


def test_binomial_sampler_edge_cases():
    n = jnp.array([0, 0, 5, 5, 3, 16_000_000], jnp.int32)
    p = jnp.array([0.0, 1.0, 0.0, 1.0, 0.5, 1.0], jnp.float32)
    out = np.asarray(_sampling.binomial(jax.random.key(0), n, p))
    np.testing.assert_array_equal(out[[0, 1, 2, 3, 5]], [0, 0, 0, 5, 16_000_000])
    assert 0 <= out[4] <= 3
    assert out.dtype == np.int32


def test_an_episode_simulator_takes_exactly_its_params_classes():
    # one check for the UCB family's and GOPE's simulators (episodic._sweep.factory_of): a subclass is refused
    class Sub(AdaCUCBParams):
        pass

    with pytest.raises(ValueError, match=r"AdaCUCBParams, AdaPUCBParams, AdaPKLUCBParams or UCBParams \(exactly"):
        simulate_ucb_episodes(Sub(rho=1.0), PAPER_MEANS, jax.random.key(0), 16, seeds=2)
    from jaxpriv.bandits import GOPEParams
    from jaxpriv.bandits.episodic import simulate_gope_phases

    class SubGOPE(GOPEParams):
        pass

    with pytest.raises(ValueError, match=r"AdaCGOPEParams or GOPEParams \(exactly: .*; AdaC-GOPE-Var: "):
        simulate_gope_phases(SubGOPE(np.eye(3, dtype=np.float32)), None, jax.random.key(0), 16)
