"""Lazy-DP-TS (Hu & Hegde, UAI 2022) and Anytime-Lazy-UCB (Hu, Huang & Mehta 2021), both ε-DP: the lazy
release's Laplace noise, the pseudo-code step by step, regret, clipping and budget refusal."""

import math

import jax
import jax.numpy as jnp
import jax.scipy.stats as jss
import numpy as np
import pytest

import jaxpriv as jp
from jaxpriv.bandits import (
    AdaPUCBParams,
    AnytimeLazyUCBParams,
    LazyDPTSParams,
    anytime_lazy_ucb,
    anytime_lazy_ucb_index,
    lazy_dp_ts,
    lazy_dp_ts_posterior,
    lazy_dp_ts_sample,
)
from jaxpriv.envs import BernoulliParams, bernoulli_bandit
from jaxpriv.testing import ks_critical_value, ks_one_sample, mean_with_stderr
from jaxpriv.theory import anytime_lazy_ucb_regret_bound

POLICIES = [(lazy_dp_ts, LazyDPTSParams), (anytime_lazy_ucb, AnytimeLazyUCBParams)]
IDS = ["lazy_dp_ts", "anytime_lazy_ucb"]
MEANS = np.array([0.9, 0.5, 0.1], np.float32)
K = MEANS.size
ENV = bernoulli_bandit(K)


# --- the released statistic: one Lap(1/ε) on each closed batch's sum ---------------------------------------


def _release_record(t, action, feedback, info, learner_state, env_state):
    """At a step that closes the pulled arm's batch (its buffer is empty after the update): the release's
    error on the batch *sum*, (μ̃ - exact mean) O, and the batch size O."""
    a = action
    closed = learner_state.fresh[a] == 0
    error = (learner_state.released[a] - learner_state.exact[a]) * learner_state.used[a].astype(jnp.float32)
    return closed, error, learner_state.used[a]


@pytest.mark.parametrize("factory,params_cls", POLICIES, ids=IDS)
def test_released_batch_sums_carry_laplace_noise_of_scale_one_over_epsilon(factory, params_cls):
    epsilon, seeds, T = 0.7, 400, 600
    policy = factory(K)
    one = jp.SimParams(params_cls(epsilon), BernoulliParams(MEANS))
    keys = jax.random.split(jax.random.key(3), seeds)

    def releases(key):
        return jp.sim.rollout(policy, ENV, one, key, T, record=_release_record).records

    closed, error, used = (np.asarray(x) for x in jp.sim.map_seeds(releases, keys))
    errors = error[closed].astype(np.float64)
    sizes = used[closed]
    assert errors.size > 6000
    assert set(np.unique(sizes)) <= {2**k for k in range(12)} and sizes.max() >= 32  # batches 1, 2, 4, ...
    b = 1.0 / epsilon  # Lap(1/ε) on the sum = Lap(1/(ε O)) on the mean
    crit = ks_critical_value(errors.size)
    assert ks_one_sample(errors, lambda v: jss.laplace.cdf(v, 0.0, b)) < crit
    assert ks_one_sample(errors, lambda v: jss.laplace.cdf(v, 0.0, 0.8 * b)) > crit  # 20% less noise: rejected
    # The same draws do not look like the mean's Laplace scale if the count were ignored (Lap(1/ε) on the mean).
    big = sizes >= 8
    assert ks_one_sample(errors[big] / sizes[big], lambda v: jss.laplace.cdf(v, 0.0, b)) > crit


@pytest.mark.parametrize("factory,params_cls", POLICIES, ids=IDS)
def test_rewards_are_clipped_and_nonfinite_ones_counted(factory, params_cls):
    policy = factory(2, private=False)
    state = policy.init(jax.random.key(0), params_cls(math.inf))
    key = jax.random.key(1)
    for reward in (5.0, math.nan):  # arm 0's batches of size 1 and 2 close
        state = policy.update(key, state, jnp.int32(0), jnp.float32(reward), jnp.int32(1))
    assert float(state.released[0]) == 1.0 and int(state.used[0]) == 1  # 5 clipped to 1
    state = policy.update(key, state, jnp.int32(0), jnp.float32(-3.0), jnp.int32(3))
    assert float(state.released[0]) == 0.0 and int(state.used[0]) == 2  # NaN -> 0, -3 -> 0
    assert int(policy.nonfinite(state)) == 1


# --- the pseudo-code, step by step ------------------------------------------------------------------------


def _reference_step(buffers, epochs, released, used, a, reward, noise):
    """Lines 3-4 of both boxes: add the (clipped) reward to Ψ_a; at |Ψ_a| = 2^{r_a} release its mean plus the
    policy's recorded noise, O_a = |Ψ_a|, r_a += 1, Ψ_a = ∅. Returns whether a batch closed."""
    buffers[a].append(min(max(reward, 0.0), 1.0))
    if len(buffers[a]) == 2 ** epochs[a]:
        released[a] = np.float32(np.mean(buffers[a], dtype=np.float64) + noise)
        used[a], epochs[a], buffers[a] = len(buffers[a]), epochs[a] + 1, []
        return True
    return False


@pytest.mark.parametrize("epsilon", [math.inf, 0.8])
@pytest.mark.parametrize("name", IDS)
def test_decisions_match_the_pseudo_code(name, epsilon):
    # ε = inf (private=False): no noise, the reference decides from the rewards alone. ε = 0.8: the reference
    # adds the Laplace draw the policy made (read from its state) to its own batch mean.
    T, num_arms = 300, 3
    rng = np.random.default_rng(0)
    table = (rng.uniform(size=(T, num_arms)) * np.array([0.9, 0.8, 0.7])).astype(np.float32).astype(np.float64)
    private = not math.isinf(epsilon)
    if name == "lazy_dp_ts":
        learner, params = lazy_dp_ts(num_arms, private=private), LazyDPTSParams(epsilon)
    else:
        learner, params = anytime_lazy_ucb(num_arms, tie_break="first", private=private), AnytimeLazyUCBParams(epsilon)
    act, update = jax.jit(learner.act), jax.jit(learner.update)
    state = learner.init(jax.random.key(0), params)
    buffers, epochs = [[] for _ in range(num_arms)], [0] * num_arms
    released, used = np.zeros(num_arms, np.float32), np.zeros(num_arms, np.int64)
    key, closes = jax.random.key(7), 0
    for t in range(1, T + 1):
        k_act, k_upd, key = jax.random.split(key, 3)
        # Line 2: the reference's choice from its own statistics.
        log_t = math.log(t)
        if name == "lazy_dp_ts":
            n = used.astype(np.float64)
            shift = 3 * log_t / (epsilon * np.maximum(n, 1))
            mu = np.where(used > 0, np.clip(released + shift, 0, 1), 0.0)
            a_ref, b_ref = mu * n + 1, (1 - mu) * n + 1
            got_a, got_b = lazy_dp_ts_posterior(state.released, state.used, t, epsilon)
            np.testing.assert_allclose(np.asarray(got_a), a_ref, rtol=1e-5)
            np.testing.assert_allclose(np.asarray(got_b), b_ref, rtol=1e-5)
            want = int(np.argmax(np.asarray(lazy_dp_ts_sample(k_act, got_a, got_b))))
        else:
            n = np.maximum(used, 1).astype(np.float64)
            index = released + np.sqrt(1.5 * log_t / n) + 3 * log_t / (epsilon * n)
            index = np.where(used > 0, index.astype(np.float32), np.inf)
            want = int(np.argmax(index))
            np.testing.assert_allclose(
                np.asarray(anytime_lazy_ucb_index(state.released, state.used, t, epsilon)), index, rtol=1e-6
            )
        a = int(act(k_act, state, jnp.int32(t)))
        assert a == want, (t, a, want)
        state = update(k_upd, state, jnp.int32(a), jnp.float32(table[t - 1, a]), jnp.int32(t))
        noise = float(state.released[a]) - float(state.exact[a])  # the policy's draw (0 when ε = inf)
        closes += _reference_step(buffers, epochs, released, used, a, table[t - 1, a], noise)
        np.testing.assert_allclose(np.asarray(state.released), released, atol=1e-5)
        assert np.array_equal(np.asarray(state.used), used) and np.array_equal(np.asarray(state.epochs), epochs)
        assert np.array_equal(np.asarray(state.fresh), [len(b) for b in buffers])
    assert closes >= 10 and len(set(np.flatnonzero(used))) == num_arms
    if private:
        assert np.any(np.abs(np.asarray(state.released - state.exact)) > 1e-3)  # the noise is on


# --- regret --------------------------------------------------------------------------------------------------

REG_T, REG_S, REG_EPS = 4096, 200, (1.0, 4.0)
CKPTS = [256, 1024, REG_T]


@pytest.fixture(scope="module")
def ucb_runs():
    params = jp.SimParams(AnytimeLazyUCBParams(jnp.array(REG_EPS)), BernoulliParams(MEANS))
    res = jp.sweep(anytime_lazy_ucb(K), ENV, params, jax.random.key(10), REG_T, REG_S, CKPTS)
    assert res.private is True
    return np.asarray(res.steps), np.asarray(res.regret, np.float64)


def test_anytime_lazy_ucb_regret_is_below_its_bound(ucb_runs):
    steps, regret = ucb_runs
    for g, eps in enumerate(REG_EPS):
        mean, se = mean_with_stderr(regret[g])
        bounds = np.array([anytime_lazy_ucb_regret_bound(MEANS, int(t), eps) for t in steps])
        assert np.all(mean + 3 * se < bounds), (eps, mean, se, bounds)
    # The bound is not vacuous here: below the regret of uniform play at T.
    uniform = REG_T * float(np.mean(MEANS.max() - MEANS))
    assert anytime_lazy_ucb_regret_bound(MEANS, REG_T, 1.0) < uniform
    # Privacy costs regret: ε = 1 above ε = 4.
    a, b = regret[0, :, -1], regret[1, :, -1]
    assert a.mean() - b.mean() > 4 * math.sqrt(a.var(ddof=1) / REG_S + b.var(ddof=1) / REG_S)


def test_regret_bound_hand_values_and_argument_checks():
    # Two arms, gap 0.5, T = e^2 (log T = 2), ε = inf: u = least n with sqrt(3/n) <= 1/4, i.e. 48; m = 64.
    T = int(math.exp(2)) + 1  # 8: log 8 = 2.079; sqrt(1.5 * 2.079 / n) <= 0.25 -> n >= 49.9 -> u = 50, m = 64
    tail = sum(3 * (math.floor(math.log2(t)) + 1) / t**3 for t in range(3, T + 1))
    assert anytime_lazy_ucb_regret_bound([0.75, 0.25], T, math.inf) == pytest.approx(0.5 * min(T, 127 + tail))
    assert anytime_lazy_ucb_regret_bound([0.5, 0.5], 100, 1.0) == 0.0
    for bad in ((1.5, 0.2), (), (math.nan, 0.1)):
        with pytest.raises(ValueError, match="means"):
            anytime_lazy_ucb_regret_bound(bad, 100, 1.0)
    with pytest.raises(ValueError, match="epsilon"):
        anytime_lazy_ucb_regret_bound(MEANS, 100, 0.0)


def test_lazy_dp_ts_regret_grows_slowly_and_privacy_costs_regret():
    # Theorem 4's constants are not available (no numeric bound): regret grows much slower than linearly
    # (R(4T')/R(T') < 2, where linear regret gives 4), and a smaller ε costs regret.
    T, seeds = 2048, 100
    params = jp.SimParams(LazyDPTSParams(jnp.array([0.5, 8.0])), BernoulliParams(MEANS))
    res = jp.sweep(lazy_dp_ts(K), ENV, params, jax.random.key(11), T, seeds, [512, T])
    regret = np.asarray(res.regret, np.float64)
    for g in range(2):
        assert regret[g, :, 1].mean() < 2 * regret[g, :, 0].mean(), regret[g].mean(axis=0)
    a, b = regret[0, :, -1], regret[1, :, -1]
    assert a.mean() - b.mean() > 4 * math.sqrt(a.var(ddof=1) / seeds + b.var(ddof=1) / seeds)
    assert regret[:, :, -1].mean() < 0.25 * T * float(np.mean(MEANS.max() - MEANS))


# --- budgets -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("factory,params_cls", POLICIES, ids=IDS)
def test_the_check_refuses_every_budget_without_the_guarantee(factory, params_cls):
    with pytest.raises(TypeError):
        params_cls()  # epsilon has no default
    run = lambda policy, p: jp.run(policy, ENV, jp.SimParams(p, BernoulliParams(MEANS)), jax.random.key(0), 10)
    for bad in (0.0, -1.0, math.inf, math.nan, "1.0", None, 1e-40):
        with pytest.raises(ValueError, match="epsilon"):
            run(factory(K), params_cls(epsilon=bad))
    with pytest.raises(ValueError, match="epsilon"):
        factory(K).init(jax.random.key(0), params_cls(epsilon=None))  # also inside init (a static check)
    with pytest.raises(ValueError, match="AdaPUCBParams"):
        run(factory(K), AdaPUCBParams(1.0))  # another ε-DP policy's params: another class, refused
    with pytest.raises(ValueError, match="epsilon"):
        run(factory(K), params_cls(epsilon=np.array([1.0, math.inf])))  # one grid point without privacy
    # The explicit non-private opt-out: epsilon = inf runs, declared not private.
    assert factory(K).spec.private is True and run(factory(K), params_cls(1.0)).private is True
    assert run(factory(K, private=False), params_cls(math.inf)).private is False
    with pytest.raises(ValueError, match="epsilon"):
        run(factory(K, private=False), params_cls(0.0))
    with pytest.raises(ValueError, match="num_arms"):
        factory(1)
    with pytest.raises(ValueError, match="private"):
        factory(K, private="yes")
