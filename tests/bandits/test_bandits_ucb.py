"""AdaC-UCB and episodic UCB (step level): noise calibration, index, doubling, regret, bad input."""

import math

import jax
import jax.numpy as jnp
import jax.scipy.stats as jss
import numpy as np
import pytest
from _episodes import closing_state

import jaxpriv as jp
from jaxpriv.bandits import (
    AdaCUCBParams,
    EpisodicUCBState,
    UCBParams,
    adac_ucb,
    adac_ucb_index,
    adac_ucb_noise_stddev,
    adac_ucb_regret_bound,
    ucb,
    ucb_index,
)
from jaxpriv.bandits.episodic import simulate_ucb_episodes
from jaxpriv.envs.bandits import PAPER_MEANS, BernoulliParams, bernoulli_bandit
from jaxpriv.testing import ks_critical_value, ks_one_sample, mean_with_stderr, variance_with_stderr

K = len(PAPER_MEANS)
ENV = bernoulli_bandit(K)


# --- the released statistic: one Gaussian draw of the spec's variance per closed episode -----------


@pytest.mark.parametrize("rho", [0.1, 2.0])
def test_released_mean_has_the_spec_variance(rho):
    # Arm 0's episode of length 4 closes with rewards summing to 3: the released
    # statistic is 3/4 + N(0, 1/(2 rho n^2)) with n = 4 (spec eq. (5.4)).
    learner = adac_ucb(2)
    state = closing_state(learner, AdaCUCBParams(rho=rho), [7, 1], 4, 3, 2.0)
    keys = jax.random.split(jax.random.key(1), 20_000)
    update = jax.vmap(lambda *a: learner.update(*a)[0], in_axes=(0, None, None, None, None))
    out = update(keys, state, jnp.int32(0), jnp.float32(1.0), jnp.int32(20))
    released = np.asarray(out.means[:, 0], np.float64)
    assert np.all(np.asarray(out.lengths[:, 0]) == 4)
    assert np.all(np.asarray(out.means[:, 1]) == 0.0)  # the other arm's statistic is untouched
    sigma2 = 1.0 / (2 * rho * 16)
    assert float(adac_ucb_noise_stddev(rho, 4)) ** 2 == pytest.approx(sigma2, rel=1e-6)
    mean, se = mean_with_stderr(released)
    assert abs(mean - 0.75) < 5 * se
    var, var_se = variance_with_stderr(released, mean=0.75)
    assert abs(var - sigma2) < 5 * var_se
    for wrong in (0.8, 1.25):  # a 20% error in the variance is detected
        assert abs(var - wrong * sigma2) > 5 * var_se
    crit = ks_critical_value(released.size)
    sd = math.sqrt(sigma2)
    assert ks_one_sample(released, lambda v: jss.norm.cdf(v, 0.75, sd)) < crit
    for wrong in (0.9, 1.1):
        assert ks_one_sample(released, lambda v, w=wrong: jss.norm.cdf(v, 0.75, w * sd)) > crit


def test_initial_pull_noise_and_the_half_count_convention():
    # After the initial pull n_a = 1 ("samples", [STD]) or the paper's 0.5 ("half").
    rho = 0.5
    keys = jax.random.split(jax.random.key(2), 20_000)
    for init_count, n in (("samples", 1.0), ("half", 0.5)):
        learner = adac_ucb(2, init_count=init_count)
        state = learner.init(jax.random.key(0), AdaCUCBParams(rho=rho))
        out = jax.vmap(lambda *a, up=learner.update: up(*a)[0], in_axes=(0, None, None, None, None))(
            keys, state, jnp.int32(0), jnp.float32(1.0), jnp.int32(1)
        )
        var, se = variance_with_stderr(np.asarray(out.means[:, 0]), mean=1.0)
        assert abs(var - 1.0 / (2 * rho * n * n)) < 5 * se, init_count


def test_infinite_rho_and_nonprivate_release_the_exact_mean():
    for learner, params in ((adac_ucb(2), AdaCUCBParams(rho=jnp.inf)), (ucb(2), UCBParams())):
        state = closing_state(learner, params, [7, 1], 4, 3, 2.0)
        out = learner.update(jax.random.key(3), state, jnp.int32(0), jnp.float32(1.0), jnp.int32(20))[0]
        assert float(out.means[0]) == 0.75


def test_noise_is_drawn_once_per_closed_episode():
    # Mid-episode updates leave the released statistics unchanged (no redraw).
    learner = adac_ucb(2)
    state = closing_state(learner, AdaCUCBParams(rho=0.1), [7, 1], 4, 1, 1.0)
    state = state._replace(means=jnp.array([0.3, 0.6], jnp.float32))
    out = learner.update(jax.random.key(4), state, jnp.int32(0), jnp.float32(1.0), jnp.int32(20))[0]
    np.testing.assert_array_equal(np.asarray(out.means), np.asarray(state.means))
    assert int(out.played) == 2


# --- index and bonus --------------------------------------------------------------------------------


def test_index_matches_hand_computed_values():
    # Eq. (5.4): mu + sqrt((1/(2n) + 1/(rho n^2)) beta log t), t = 7, beta = 1, rho = 0.5:
    #   arm 0: 0.5 + sqrt((1/4 + 1/2) log 7) = 1.7080697876329352
    #   arm 1: 0.2 + sqrt((1/2 + 2) log 7)   = 2.405623579090114
    got = adac_ucb_index([0.5, 0.2], [2, 1], 7, 1.0, 0.5)
    np.testing.assert_allclose(np.asarray(got), [1.7080697876329352, 2.405623579090114], rtol=1e-6)
    # beta = 2, rho = 2, n = 4, t = 100: 0.3 + sqrt((1/8 + 1/32) 2 log 100) = 1.4996314780470203
    assert float(adac_ucb_index([0.3], [4], 100, 2.0, 2.0)[0]) == pytest.approx(1.4996314780470203, rel=1e-6)
    # Non-private (spec §3.3): mu + sqrt(beta log t / (2n)): 0.5 + sqrt(log 7 / 4), 0.2 + sqrt(log 7 / 2).
    np.testing.assert_allclose(
        np.asarray(ucb_index([0.5, 0.2], [2, 1], 7, 1.0)), [1.1974794170897292, 1.1863848511243755], rtol=1e-6
    )
    at_inf = adac_ucb_index([0.5, 0.2], [2, 1], 7, 1.0, jnp.inf)
    np.testing.assert_allclose(np.asarray(at_inf), np.asarray(ucb_index([0.5, 0.2], [2, 1], 7, 1.0)))


def test_act_plays_the_argmax_of_the_index_at_an_episode_start():
    learner = adac_ucb(2)
    state = learner.init(jax.random.key(0), AdaCUCBParams(rho=0.5))
    state = state._replace(
        counts=jnp.array([4, 2], jnp.int32),
        means=jnp.array([0.5, 0.2], jnp.float32),
        lengths=jnp.array([2, 1], jnp.int32),
    )
    # Indices 1.708 and 2.406 (above): arm 1, although its mean is lower.
    assert int(learner.act(jax.random.key(1), state, jnp.int32(7))) == 1
    state = state._replace(means=jnp.array([1.2, 0.2], jnp.float32))  # 2.408 > 2.406
    assert int(learner.act(jax.random.key(1), state, jnp.int32(7))) == 0
    # Mid-episode the current arm is kept whatever the indices.
    state = state._replace(arm=jnp.int32(1), length=jnp.int32(4), played=jnp.int32(1))
    assert int(learner.act(jax.random.key(1), state, jnp.int32(7))) == 1


def test_ties_are_broken_uniformly_at_random():
    learner = ucb(3)
    state = learner.init(jax.random.key(0), UCBParams())
    state = state._replace(counts=jnp.ones(3, jnp.int32), lengths=jnp.ones(3, jnp.int32), means=jnp.zeros(3))
    keys = jax.random.split(jax.random.key(5), 3000)
    arms = np.asarray(jax.vmap(learner.act, in_axes=(0, None, None))(keys, state, jnp.int32(4)))
    freq = np.bincount(arms, minlength=3) / arms.size
    assert np.all(np.abs(freq - 1 / 3) < 5 * math.sqrt((1 / 3) * (2 / 3) / arms.size))
    first = ucb(3, tie_break="first")
    assert int(first.act(jax.random.key(0), state, jnp.int32(4))) == 0


# --- episodes: the worked example of the thesis's Figure 5.1 ----------------------------------------

# Rewards r_1..r_12 chosen so that UCB (beta = 1) plays the arms of Figure 5.1 (K = 2):
# arm 1 gets r1, then r3, then r4 r5, then r7..r10; arm 2 gets r2, then r6, then r11 r12.
FIG51_REWARDS = [1.0, 0.5, 1.0, 0.6, 0.6, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
FIG51_ARMS = [0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 1, 1]
FIG51_STARTS = [3, 4, 6, 7, 11]  # t_1 .. t_5


@pytest.mark.parametrize(
    "learner,params",
    [(ucb(2), UCBParams()), (adac_ucb(2), AdaCUCBParams(rho=1e12))],
    ids=["ucb", "adac_ucb"],
)
def test_episodes_double_as_in_the_worked_example(learner, params):
    act, update = jax.jit(learner.act), jax.jit(lambda *a: learner.update(*a)[0])
    state = learner.init(jax.random.key(0), params)
    key = jax.random.key(6)
    arms, starts = [], []
    for t, reward in enumerate(FIG51_REWARDS, start=1):
        if t == 7:
            # At t_4 = 7 arm 1's index uses only (r4, r5), arm 2's only r6.
            np.testing.assert_allclose(np.asarray(state.means), [0.6, 0.0], atol=1e-5)
            np.testing.assert_array_equal(np.asarray(state.lengths), [2, 1])
            np.testing.assert_array_equal(np.asarray(state.counts), [4, 2])
        k_act, k_upd, key = jax.random.split(key, 3)
        before = int(state.episodes)
        a = int(act(k_act, state, jnp.int32(t)))
        state = update(k_upd, state, jnp.int32(a), jnp.float32(reward), jnp.int32(t))
        arms.append(a)
        if int(state.episodes) > before:
            starts.append(t)
            # Per-arm doubling: the episode's length is N_a(t_l - 1).
            assert int(state.length) == int(state.counts[a]) - 1
    assert arms == FIG51_ARMS
    assert starts == FIG51_STARTS
    np.testing.assert_array_equal(np.asarray(state.counts), [8, 4])
    assert int(state.episodes) == 5


def test_state_is_a_namedtuple_of_fixed_dtypes():
    learner = adac_ucb(K)
    state = learner.init(jax.random.key(0), AdaCUCBParams(rho=1.0))
    assert isinstance(state, EpisodicUCBState)
    with jax.enable_x64(True):
        s1 = jax.jit(lambda *a: learner.update(*a)[0])(
            jax.random.key(1), state, jnp.int32(0), np.float64(1.0), jnp.int32(1)
        )
    assert jax.tree.map(lambda x: x.dtype, s1) == jax.tree.map(lambda x: x.dtype, state)


# --- regret ------------------------------------------------------------------------------------------


# One step-level sweep pair (every step recorded) serves the two short-horizon checks: rho = inf is the
# non-private counterpart bit for bit, rho = 1e9 matches it in distribution, rho = 0.01 costs regret.
SHORT_T, SHORT_S = 2000, 300
SHORT_RHO = jnp.array([jnp.inf, 1e9, 0.01], jnp.float32)


@pytest.fixture(scope="module")
def short_runs():
    key = jax.random.key(7)
    priv = jp.sweep(
        adac_ucb(K), ENV, jp.SimParams(AdaCUCBParams(rho=SHORT_RHO), BernoulliParams()), key, SHORT_T, SHORT_S, None
    )
    base = jp.sweep(ucb(K), ENV, jp.SimParams(UCBParams(), BernoulliParams()), key, SHORT_T, SHORT_S, None)
    return priv, base


def test_very_large_rho_matches_the_nonprivate_counterpart(short_runs):
    priv, base = short_runs
    b = np.asarray(base.regret[:, -1], np.float64)
    for g, should_match in ((1, True), (2, False)):
        a = np.asarray(priv.regret[g, :, -1], np.float64)
        se = math.sqrt(a.var(ddof=1) / SHORT_S + b.var(ddof=1) / SHORT_S)
        diff = a.mean() - b.mean()
        if should_match:
            assert abs(diff) < 4 * se
        else:  # the test has power: a small rho costs regret
            assert diff > 4 * se


# One episode-level sweep (exact, see tests/bandits/test_bandits_fast.py) serves the long-horizon checks:
# rho = inf is the non-private counterpart bit for bit (the fast path maps UCBParams to it).
LONG_T, LONG_S = 10**6, 1000
LONG_CKPTS = sorted(set(jp.log_checkpoints(LONG_T, 40)) | {10**3, 10**4, 10**5})
LONG_RHO = jnp.array([jnp.inf, 1e9, 0.1, 0.5, 1.0, 0.5], jnp.float32)
LONG_BETA = jnp.array([1.0, 1.0, 1.0, 1.0, 1.0, 4.0], jnp.float32)


@pytest.fixture(scope="module")
def long_runs():
    res = simulate_ucb_episodes(
        AdaCUCBParams(LONG_RHO, LONG_BETA), PAPER_MEANS, jax.random.key(8), LONG_T, LONG_S, LONG_CKPTS
    )
    return np.asarray(res.steps), np.asarray(res.regret, np.float64)


def test_nonprivate_counterpart_is_adac_ucb_at_infinite_rho_bit_for_bit(short_runs):
    # Justifies the fast path's mapping of UCBParams to AdaCUCBParams(rho=inf): every step of every seed.
    priv, base = short_runs
    np.testing.assert_array_equal(np.asarray(priv.regret[0]), np.asarray(base.regret))
    np.testing.assert_array_equal(np.asarray(priv.loss[0]), np.asarray(base.loss))


def test_regret_is_below_theorem_5_6_step_level():
    beta, T, S = 4.0, 20_000, 50  # Theorem 5.6 needs beta > 3; the bound is below T max(gap) from T ~ 15000
    rhos = (0.5, float("inf"))
    params = jp.SimParams(AdaCUCBParams(jnp.array(rhos), beta), BernoulliParams())
    res = jp.sweep(adac_ucb(K, T), ENV, params, jax.random.key(10), T, S, [1000, 5000, T])
    for g, rho in enumerate(rhos):
        mean, se = mean_with_stderr(np.asarray(res.regret[g]))
        bounds = np.array([adac_ucb_regret_bound(PAPER_MEANS, int(t), rho, beta) for t in np.asarray(res.steps)])
        assert np.all(mean + 3 * se <= bounds)
        assert bounds[-1] < T * (max(PAPER_MEANS) - min(PAPER_MEANS))  # not vacuous at T


def test_very_large_rho_matches_nonprivate_at_long_horizon(long_runs):
    _, regret = long_runs
    b, a, small = regret[0, :, -1], regret[1, :, -1], regret[2, :, -1]
    se = math.sqrt(a.var(ddof=1) / LONG_S + b.var(ddof=1) / LONG_S)
    assert abs(a.mean() - b.mean()) < 4 * se
    assert small.mean() - b.mean() > 4 * math.sqrt(small.var(ddof=1) / LONG_S + b.var(ddof=1) / LONG_S)


def test_price_of_privacy_falls_as_the_horizon_grows(long_runs):
    steps, regret = long_runs
    cols = [int(np.searchsorted(steps, h)) for h in (10**3, 10**4, 10**5, 10**6)]
    b = regret[0][:, cols]
    for g in (2, 3):  # rho = 0.1, 0.5 (at rho = 1 the PoP is within noise of 0 from T = 1e3 on)
        a = regret[g][:, cols]
        pop = (a.mean(0) - b.mean(0)) / b.mean(0)
        se = np.sqrt(a.var(0, ddof=1) / LONG_S + b.var(0, ddof=1) / LONG_S) / b.mean(0)  # delta method
        assert (pop[0] - pop[-1]) / math.hypot(se[0], se[-1]) > 3, (float(LONG_RHO[g]), pop, se)
        if g == 2:  # at rho = 0.1 the fall is visible decade by decade up to 1e5
            assert np.all(np.diff(pop[:3]) < 0), pop


def test_regret_is_below_theorem_5_6_at_long_horizons_and_the_check_has_power(long_runs):
    steps, regret = long_runs
    beta, rho = float(LONG_BETA[-1]), float(LONG_RHO[-1])
    mean, se = mean_with_stderr(regret[-1])
    bounds = np.array([adac_ucb_regret_bound(PAPER_MEANS, int(t), rho, beta) for t in steps])
    assert np.all(mean + 3 * se <= bounds)
    # A broken simulation (the arms' rewards reversed) violates the bound: the check can fail.
    reversed_means = jnp.asarray(PAPER_MEANS[::-1], jnp.float32)

    def wrong_sum(key, n, mean):
        arm = jnp.argmin(jnp.abs(jnp.asarray(PAPER_MEANS, jnp.float32) - mean))
        return jax.random.binomial(key, n.astype(jnp.float32), reversed_means[arm])

    bad = simulate_ucb_episodes(
        AdaCUCBParams(rho, beta),
        PAPER_MEANS,
        jax.random.key(11),
        LONG_T,
        20,
        [LONG_T],
        reward_sum=wrong_sum,
        private=False,
    )
    assert float(np.mean(np.asarray(bad.regret[:, -1]))) > bounds[-1]


def test_bound_needs_beta_above_three():
    with pytest.raises(ValueError, match="beta"):
        adac_ucb_regret_bound(PAPER_MEANS, 100, 1.0, 1.0)


# --- bad input ---------------------------------------------------------------------------------------


def test_bad_static_input_raises_value_error_naming_the_argument():
    for factory in (adac_ucb, ucb):
        with pytest.raises(ValueError, match="num_arms"):
            factory(1)
        with pytest.raises(ValueError, match="horizon"):
            factory(5, horizon=4)
        with pytest.raises(ValueError, match="init_count"):
            factory(5, init_count="quarter")
        with pytest.raises(ValueError, match="tie_break"):
            factory(5, tie_break="last")
    with pytest.raises(ValueError, match="num_arms"):
        bernoulli_bandit(1)
    with pytest.raises(ValueError, match="horizon"):
        simulate_ucb_episodes(AdaCUCBParams(rho=1.0), PAPER_MEANS, jax.random.key(0), 4)


@pytest.mark.parametrize("rho", [0.0, -1.0, float("nan")])
def test_bad_rho_raises_value_error_naming_rho(rho):
    with pytest.raises(ValueError, match="rho"):
        jp.run(adac_ucb(K), ENV, jp.SimParams(AdaCUCBParams(rho=rho), BernoulliParams()), jax.random.key(0), 10)
    with pytest.raises(ValueError, match="rho"):
        simulate_ucb_episodes(AdaCUCBParams(rho=jnp.array([1.0, rho])), PAPER_MEANS, jax.random.key(0), 10)


def test_bad_params_raise_value_error():
    with pytest.raises(ValueError, match="beta"):
        jp.run(ucb(K), ENV, jp.SimParams(UCBParams(beta=0.0), BernoulliParams()), jax.random.key(0), 10)
    for bad_means in ([0.5, 1.2, 0.1], [0.5, -0.1, 0.1], [0.5, 0.1]):
        with pytest.raises(ValueError, match="means"):
            params = jp.SimParams(UCBParams(), BernoulliParams(bad_means))
            jp.run(ucb(3), bernoulli_bandit(3), params, jax.random.key(0), 10)


def test_rewards_are_clipped_by_default():
    # A reward outside [0, 1] would break the sensitivity 1/n; clipping is the default.
    for clip, expect in ((True, 1.0), (False, 5.0)):
        learner = ucb(2, clip_rewards=clip)
        state = learner.init(jax.random.key(0), UCBParams())
        state = learner.update(jax.random.key(1), state, jnp.int32(0), jnp.float32(5.0), jnp.int32(1))[0]
        assert float(state.means[0]) == expect
