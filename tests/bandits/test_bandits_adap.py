"""AdaP-UCB and AdaP-KLUCB (ε-global DP, Laplace): noise calibration, indices, the paper's pseudo-code,
regret, the episode-level fast path, grid invariance, and budget refusal."""

import math

import jax
import jax.numpy as jnp
import jax.scipy.stats as jss
import numpy as np
import pytest
from _episodes import closing_state

import jaxpriv as jp
from jaxpriv.bandits import AdaCUCBParams, _sampling
from jaxpriv.bandits._episodic_ucb import EpisodicUCBState
from jaxpriv.bandits.adap_klucb import (
    AdaPKLUCBParams,
    adap_klucb,
    adap_klucb_index,
    adap_lower_bound,
    bernoulli_kl,
    kl_upper_bound,
)
from jaxpriv.bandits.adap_ucb import (
    AdaPUCBParams,
    adap_noise_scale,
    adap_ucb,
    adap_ucb_index,
    adap_ucb_regret_bound,
)
from jaxpriv.bandits.episodic import simulate_ucb_episodes
from jaxpriv.envs.bandits import PAPER_MEANS, BernoulliParams, bernoulli_bandit
from jaxpriv.testing import ks_critical_value, ks_one_sample, ks_two_sample, mean_with_stderr, variance_with_stderr

K = len(PAPER_MEANS)
ENV = bernoulli_bandit(K)
POLICIES = [(adap_ucb, AdaPUCBParams), (adap_klucb, AdaPKLUCBParams)]
IDS = ["adap_ucb", "adap_klucb"]


def _laplace_cdf(loc, scale):
    return lambda v: jss.laplace.cdf(v, loc, scale)


# --- the released statistic: one Laplace draw of scale 1/(ε n) per closed episode ----------------------


@pytest.mark.parametrize("factory,params_cls", POLICIES, ids=IDS)
@pytest.mark.parametrize("epsilon", [0.2, 1.0])
def test_released_mean_has_the_calibrated_laplace_noise(factory, params_cls, epsilon):
    # Arm 0's episode of length 4 closes with rewards summing to 3: the released statistic is
    # 3/4 + Lap(1/(ε n)) with n = ½ N_a = 4 ([N22] §4: Lap(2/(ε N_a(t_ℓ - 1))) with N_a = 8).
    learner = factory(2)
    state = closing_state(learner, params_cls(epsilon=epsilon), [7, 1], 4, 3, 2.0)
    keys = jax.random.split(jax.random.key(1), 20_000)
    update = jax.vmap(lambda *a: learner.update(*a)[0], in_axes=(0, None, None, None, None))
    out = update(keys, state, jnp.int32(0), jnp.float32(1.0), jnp.int32(20))
    released = np.asarray(out.means[:, 0], np.float64)
    assert np.all(np.asarray(out.lengths[:, 0]) == 4)
    assert np.all(np.asarray(out.means[:, 1]) == 0.0)  # the other arm's statistic is untouched
    b = 1.0 / (epsilon * 4)
    assert float(adap_noise_scale(epsilon, 4)) == pytest.approx(b, rel=1e-6)
    mean, se = mean_with_stderr(released)
    assert abs(mean - 0.75) < 5 * se
    var, var_se = variance_with_stderr(released, mean=0.75)
    assert abs(var - 2 * b * b) < 5 * var_se
    assert abs(var - 2 * (0.8 * b) ** 2) > 5 * var_se  # a 20% smaller scale is detected
    crit = ks_critical_value(released.size)
    assert ks_one_sample(released, _laplace_cdf(0.75, b)) < crit
    for wrong in (0.8, 1.2):  # ±20% in the scale is rejected
        assert ks_one_sample(released, _laplace_cdf(0.75, wrong * b)) > crit
    # The family: a Gaussian of the same variance is rejected.
    assert ks_one_sample(released, lambda v: jss.norm.cdf(v, 0.75, math.sqrt(2) * b)) > crit


def test_initial_pull_noise_and_the_half_count_convention():
    # After the initial pull n_a = 1 ("samples", [STD]) or the paper's ½N_a = 0.5 ("half").
    epsilon = 0.5
    keys = jax.random.split(jax.random.key(2), 20_000)
    for init_count, n in (("samples", 1.0), ("half", 0.5)):
        learner = adap_ucb(2, init_count=init_count)
        state = learner.init(jax.random.key(0), AdaPUCBParams(epsilon=epsilon))
        out = jax.vmap(lambda *a, up=learner.update: up(*a)[0], in_axes=(0, None, None, None, None))(
            keys, state, jnp.int32(0), jnp.float32(1.0), jnp.int32(1)
        )
        released = np.asarray(out.means[:, 0])
        crit = ks_critical_value(released.size)
        assert ks_one_sample(released, _laplace_cdf(1.0, 1.0 / (epsilon * n))) < crit, init_count
        assert ks_one_sample(released, _laplace_cdf(1.0, 0.8 / (epsilon * n))) > crit, init_count


def test_infinite_epsilon_releases_the_exact_mean_and_noise_is_drawn_once_per_episode():
    for factory, params_cls in POLICIES:
        learner = factory(2)
        state = closing_state(learner, params_cls(epsilon=jnp.inf), [7, 1], 4, 3, 2.0)
        out = learner.update(jax.random.key(3), state, jnp.int32(0), jnp.float32(1.0), jnp.int32(20))[0]
        assert float(out.means[0]) == 0.75
        # Mid-episode updates leave the released statistics unchanged (no redraw).
        state = closing_state(learner, params_cls(epsilon=0.1), [7, 1], 4, 1, 1.0)
        state = state._replace(means=jnp.array([0.3, 0.6], jnp.float32))
        out = learner.update(jax.random.key(4), state, jnp.int32(0), jnp.float32(1.0), jnp.int32(20))[0]
        np.testing.assert_array_equal(np.asarray(out.means), np.asarray(state.means))


def test_rewards_are_clipped_to_the_unit_interval():
    # The sensitivity 1/n assumes rewards in [0, 1]: they are clipped inside, always.
    for factory, params_cls in POLICIES:
        learner = factory(2)
        state = learner.init(jax.random.key(0), params_cls(epsilon=jnp.inf))
        for reward, expect in ((5.0, 1.0), (-3.0, 0.0), (jnp.nan, 0.0)):
            out = learner.update(jax.random.key(1), state, jnp.int32(0), jnp.float32(reward), jnp.int32(1))[0]
            assert float(out.means[0]) == expect


# --- the indices --------------------------------------------------------------------------------------


def test_ucb_index_matches_eq_7():
    means, n, t, eps, alpha = np.array([0.5, 0.2, 0.9]), np.array([2.0, 1.0, 16.0]), 7, 0.5, 3.1
    want = means + np.sqrt(alpha * np.log(2 * t) / (2 * n)) + alpha * np.log(t) / (eps * n)
    np.testing.assert_allclose(np.asarray(adap_ucb_index(means, n, t, eps, alpha)), want, rtol=1e-6)
    want_inf = means + np.sqrt(alpha * np.log(2 * t) / (2 * n))
    np.testing.assert_allclose(np.asarray(adap_ucb_index(means, n, t, jnp.inf, alpha)), want_inf, rtol=1e-6)


def _kl64(p, q):
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.where(p > 0, p * np.log(p / q), 0.0)
        b = np.where(p < 1, (1 - p) * np.log((1 - p) / (1 - q)), 0.0)
    return a + b


_GRID = np.linspace(0.0, 1.0, 2_000_001)  # spacing 5e-7


def _brute_force(p, c):
    """max{q ∈ [0, 1] : kl(p, q) <= c} on a fine grid (float64)."""
    ok = (_kl64(p, _GRID) <= c) & (_GRID >= p)
    return _GRID[np.nonzero(ok)[0].max()]


def test_kl_ucb_index_against_brute_force():
    ps = [0.0, 0.003, 0.3, 0.5, 0.77, 0.99, 1.0]
    cs = [1e-4, 0.01, 0.3, 2.0, 20.0]
    pp, cc = np.meshgrid(ps, cs)
    got = np.asarray(kl_upper_bound(pp.ravel(), cc.ravel()), np.float64)
    want = np.array([_brute_force(p, c) for p, c in zip(pp.ravel(), cc.ravel(), strict=True)])
    # The grid answer is within one spacing below the exact maximum; the bisection is within float32.
    np.testing.assert_allclose(got, want, atol=2e-6)
    assert np.all(got >= want - 1e-6)  # optimistic: never below the exact maximum
    assert np.all(got <= 1.0) and np.all(got >= pp.ravel())
    # bernoulli_kl against float64 away from the edges.
    q = np.array([0.01, 0.5, 0.9, 0.999])
    np.testing.assert_allclose(np.asarray(bernoulli_kl(0.3, q)), _kl64(0.3, q), rtol=1e-5)


def test_klucb_index_shifts_by_the_privacy_term_then_clips():
    # μ̆ = Clip_{0,1}(μ̃ + α log t/(ε n)), index = max{q: kl(μ̆, q) <= α log t / n}.
    means, n, t, alpha = np.array([0.2, 0.5, -0.4, 0.97]), np.array([64.0, 128.0, 256.0, 512.0]), 900, 3.1
    for eps in (0.5, 4.0, np.inf):
        shifted = np.clip(means + alpha * np.log(t) / (eps * n), 0, 1)
        want = [_brute_force(p, alpha * np.log(t) / m) for p, m in zip(shifted, n, strict=True)]
        got = np.asarray(adap_klucb_index(means, n, t, eps, alpha), np.float64)
        np.testing.assert_allclose(got, want, atol=2e-6)


# --- Algorithm 1 of [N22], step by step in NumPy, against the JAX policy --------------------------------


def _np_ucb_index(m, n, t, eps, alpha):
    priv = 0.0 if math.isinf(eps) else alpha * math.log(t) / (eps * n)
    return m + math.sqrt(alpha * math.log(2 * t) / (2 * n)) + priv


def _np_klucb_index(m, n, t, eps, alpha):
    priv = 0.0 if math.isinf(eps) else alpha * math.log(t) / (eps * n)
    p, c = min(max(m + priv, 0.0), 1.0), alpha * math.log(t) / n
    if p >= 1.0:
        return 1.0
    lo, hi = p, 1.0
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if _kl64(p, mid) <= c else (lo, mid)
    return hi


def _reference(table, index, eps, alpha, released=None):
    """Algorithm 1 [N22]: play each arm once (line 3); episode ℓ starts at t_ℓ = t + 1 (line 5), plays
    A_ℓ = argmax_a I_a(t_ℓ - 1) (line 6) until N_a doubles (line 7). I_a uses only the mean of the last
    episode of a, of ½N_a samples (n_a = 1 after the initial pull). ``released[t-1][a]``: the noisy mean
    released when a's episode closes at round t (None: the exact mean, ε = inf)."""
    T, num_arms = table.shape
    counts, mean, n = np.zeros(num_arms, int), np.zeros(num_arms), np.zeros(num_arms)
    actions, t = [], 0
    for a in range(num_arms):
        t += 1
        counts[a], n[a], actions = 1, 1, [*actions, a]
        mean[a] = table[t - 1, a] if released is None else released[t - 1][a]
    while t < T:
        t_l = t + 1
        # float64 indices rounded to float32, the library's precision: the KL-UCB index is often within
        # 1e-10 of 1, which float32 rounds to 1 (a tie, broken to the first arm).
        a = int(np.argmax([np.float32(index(mean[b], n[b], t_l, eps, alpha)) for b in range(num_arms)]))
        length, total, played = counts[a], 0.0, 0
        while played < length and t < T:
            t += 1
            total, played = total + table[t - 1, a], played + 1
            actions.append(a)
        counts[a] += played
        if played == length:
            mean[a] = total / length if released is None else released[t - 1][a]
            n[a] = length
    return actions


@pytest.mark.parametrize("factory,index", [(adap_ucb, _np_ucb_index), (adap_klucb, _np_klucb_index)], ids=IDS)
@pytest.mark.parametrize("epsilon", [math.inf, 1.0])
def test_decisions_match_the_papers_pseudo_code(factory, index, epsilon):
    # ε = inf: no noise, identical decisions from the rewards alone. ε = 1: the reference reads the
    # means the policy released (its Laplace draws) and recomputes everything else, the index's
    # privacy term included.
    T, num_arms, alpha = 400, 3, 3.1
    rng = np.random.default_rng(0)
    table = rng.uniform(size=(T, num_arms)).astype(np.float32) * np.array([0.9, 0.8, 0.7], np.float32)
    table = table.astype(np.float64)
    learner = factory(num_arms, tie_break="first")
    params_cls = AdaPUCBParams if factory is adap_ucb else AdaPKLUCBParams
    act, update = jax.jit(learner.act), jax.jit(lambda *a: learner.update(*a)[0])
    state = learner.init(jax.random.key(0), params_cls(epsilon=epsilon, alpha=alpha))
    key, actions, released = jax.random.key(7), [], []
    for t in range(1, T + 1):
        k_act, k_upd, key = jax.random.split(key, 3)
        a = int(act(k_act, state, jnp.int32(t)))
        state = update(k_upd, state, jnp.int32(a), jnp.float32(table[t - 1, a]), jnp.int32(t))
        actions.append(a)
        released.append(np.asarray(state.means, np.float64))
    want = _reference(table, index, epsilon, alpha, None if math.isinf(epsilon) else released)
    assert actions == want
    assert len(set(actions[num_arms:])) > 1  # the instance exercises the choice


# --- regret ------------------------------------------------------------------------------------------


REG_T, REG_S = 2**14, 100
REG_EPS = (0.5, 1.0, math.inf)
REG_CKPTS = [2**10, 2**12, REG_T]


@pytest.fixture(scope="module")
def regret_runs():
    key = jax.random.key(10)
    ucb = jp.sweep(
        adap_ucb(K),
        ENV,
        jp.SimParams(AdaPUCBParams(jnp.array(REG_EPS)), BernoulliParams()),
        key,
        REG_T,
        REG_S,
        REG_CKPTS,
    )
    kl = jp.sweep(
        adap_klucb(K), ENV, jp.SimParams(AdaPKLUCBParams(1.0), BernoulliParams()), key, REG_T, REG_S, REG_CKPTS
    )
    return np.asarray(ucb.steps), np.asarray(ucb.regret, np.float64), np.asarray(kl.regret, np.float64)


def test_adap_ucb_regret_is_below_theorem_7(regret_runs):
    steps, regret, _ = regret_runs
    for g, eps in enumerate(REG_EPS):
        mean, se = mean_with_stderr(regret[g])
        bounds = np.array([adap_ucb_regret_bound(PAPER_MEANS, int(t), eps, 3.1) for t in steps])
        assert np.all(mean + 3 * se < bounds), (eps, mean, se, bounds)
    # Privacy costs regret: ε = 0.5 above ε = inf.
    a, b = regret[0, :, -1], regret[2, :, -1]
    assert a.mean() - b.mean() > 4 * math.sqrt(a.var(ddof=1) / REG_S + b.var(ddof=1) / REG_S)


def test_theorem_7_check_has_power():
    # On a well-separated instance the bound is far from vacuous, and a broken simulation
    # (each arm's rewards drawn from the other arm's mean) violates it.
    means, eps, T = (0.9, 0.1), 1.0, REG_T
    bound = adap_ucb_regret_bound(means, T, eps, 3.1)
    assert bound < 0.1 * T * 0.8
    ok = simulate_ucb_episodes(AdaPUCBParams(eps), means, jax.random.key(11), T, 50, [T])
    mean, se = mean_with_stderr(np.asarray(ok.regret[:, -1]))
    assert mean + 3 * se < bound

    def swapped(key, n, mean):
        return _sampling.binomial(key, n, 1.0 - mean)

    bad = simulate_ucb_episodes(
        AdaPUCBParams(eps), means, jax.random.key(11), T, 50, [T], reward_sum=swapped, private=False
    )
    assert float(np.mean(np.asarray(bad.regret[:, -1]))) > bound


def test_klucb_regret_is_below_ucb_at_epsilon_one(regret_runs):
    # [N22] Figure 2's ordering on its means at ε = 1 (there at T = 1e7; here at T = 2^14).
    _, ucb, kl = regret_runs
    a, b = ucb[1, :, -1], kl[:, -1]
    se = math.sqrt(a.var(ddof=1) / REG_S + b.var(ddof=1) / REG_S)
    assert a.mean() - b.mean() > 3 * se, (a.mean(), b.mean(), se)


def test_bounds_hand_values_and_argument_checks():
    # Theorem 7 at means (0.9, 0.5, 0.1), T = 1000, ε = 0.2, α = 4: gaps 0.4, 0.8, min with ε = 0.2 both.
    want = 2 * (16 * 4 * math.log(1000) / 0.2 + 4.0)
    assert adap_ucb_regret_bound((0.9, 0.5, 0.1), 1000, 0.2, 4.0) == pytest.approx(want, rel=1e-12)
    # Theorem 3, Bernoulli: Σ Δ log T / min(kl(μ_a, μ*), 6 ε Δ).
    kl = 0.1 * math.log(0.1 / 0.8) + 0.9 * math.log(0.9 / 0.2)
    for eps in (0.05, 1.0, math.inf):
        want = 0.7 * math.log(1000) / min(kl, 6 * eps * 0.7)
        assert adap_lower_bound((0.8, 0.1), 1000, eps) == pytest.approx(want, rel=1e-12)
    with pytest.raises(ValueError, match="alpha"):
        adap_ucb_regret_bound(PAPER_MEANS, 100, 1.0, 3.0)
    with pytest.raises(ValueError, match="epsilon"):
        adap_lower_bound(PAPER_MEANS, 100, 0.0)


# --- the episode-level fast path against the step level ------------------------------------------------

FP_T = 2000
# Runs per policy. AdaP-UCB: 500 (its power check, eps / 2, gives D = 0.22 against the critical 0.123; at 250 it
# would be 0.216 against 0.174, too close). AdaP-KLUCB: 250, its step costs 5x AdaP-UCB's: eps / 2 gives
# D = 0.44 against the critical 0.174 (D's SE about sqrt(2 * 0.25 / 250) = 0.045: about 6 SEs, power ~ 1), and
# eps / 1.25 still D = 0.32 (measured at seeds 20 and 21). Checked on a scratch copy of the fast path calibrated at
# eps / 1.5: this test fails at 250 runs (D = 0.384 at T). (Twice the release noise alone, its index unchanged, passes
# at 500 runs as at 250: the index's bonus dominates AdaP-KLUCB's regret.)
FP_S = {"adap_ucb": 500, "adap_klucb": 250}
FP_CKPTS = [300, FP_T]
FP_EPS = jnp.array([0.3, jnp.inf], jnp.float32)


@pytest.mark.parametrize("factory,params_cls", POLICIES, ids=IDS)
def test_fast_path_and_step_level_agree_in_distribution(factory, params_cls):
    params = jp.SimParams(params_cls(epsilon=FP_EPS), BernoulliParams())
    seeds = FP_S[factory.__name__]
    step = jp.sweep(factory(K), ENV, params, jax.random.key(20), FP_T, seeds, FP_CKPTS)
    # The fast path's grid carries a third point, half the first budget (twice the noise), for the power check
    # below: one compilation (a grid point's numbers are those of a run at that budget alone, with the same keys).
    fast_eps = jnp.concatenate([FP_EPS, FP_EPS[:1] / 2])
    fast = simulate_ucb_episodes(params_cls(epsilon=fast_eps), PAPER_MEANS, jax.random.key(21), FP_T, seeds, FP_CKPTS)
    np.testing.assert_array_equal(np.asarray(fast.pulls).sum(-1), FP_T)
    for g in range(len(FP_EPS)):
        for j in range(len(FP_CKPTS)):
            stat, crit = ks_two_sample(np.asarray(step.regret[g, :, j]), np.asarray(fast.regret[g, :, j]))
            assert stat < crit, (float(FP_EPS[g]), FP_CKPTS[j], stat, crit)
    # Power: the same test rejects the fast path at half the budget (twice the noise).
    stat, crit = ks_two_sample(np.asarray(step.regret[0, :, -1]), np.asarray(fast.regret[-1, :, -1]))
    assert stat > crit, (stat, crit)


def test_deterministic_rewards_give_identical_paths():
    # One instance (a second one, two arms at T = 37, was the same path: initial pulls, doubling episodes of the
    # best arm, a last episode cut by the horizon; every step of this run is compared).
    means, horizon = (1.0, 0.0, 0.0), 300
    # Rewards 0/1, ε = inf and deterministic tie-breaking: both simulators make the same decisions.
    num_arms = len(means)
    for factory, params_cls in POLICIES:
        params = params_cls(epsilon=jnp.inf)
        step_params = jp.SimParams(jax.tree.map(lambda v: jnp.asarray([v]), params), BernoulliParams(means))
        env = bernoulli_bandit(num_arms)
        step = jp.sweep(factory(num_arms, tie_break="first"), env, step_params, jax.random.key(4), horizon, 3, None)
        fast = simulate_ucb_episodes(params, means, jax.random.key(5), horizon, 3, None, tie_break="first")
        np.testing.assert_array_equal(np.asarray(fast.regret, np.float64), np.asarray(step.regret[0], np.float64))


# --- a sweep over an ε grid is one ε at a time -----------------------------------------------------------


@pytest.mark.parametrize("factory,params_cls", POLICIES, ids=IDS)
def test_epsilon_grid_gives_the_numbers_of_one_epsilon_at_a_time(factory, params_cls):
    key, T, S = jax.random.key(30), 600, 8
    grid = (0.2, 1.0, math.inf)
    learner = factory(K)  # one learner object: the three one-epsilon sweeps share one compiled program
    swept = jp.sweep(learner, ENV, jp.SimParams(params_cls(jnp.array(grid)), BernoulliParams()), key, T, S, None)
    fast = simulate_ucb_episodes(params_cls(jnp.array(grid)), PAPER_MEANS, key, T, S)
    for g, eps in enumerate(grid):
        one = jp.sweep(learner, ENV, jp.SimParams(params_cls(eps), BernoulliParams()), key, T, S, None)
        np.testing.assert_array_equal(np.asarray(swept.regret[g]), np.asarray(one.regret))
        one_fast = simulate_ucb_episodes(params_cls(eps), PAPER_MEANS, key, T, S)
        np.testing.assert_array_equal(np.asarray(fast.regret[g]), np.asarray(one_fast.regret))


def test_state_is_the_episodic_state_with_fixed_dtypes():
    for factory, params_cls in POLICIES:
        learner = factory(K)
        state = learner.init(jax.random.key(0), params_cls(epsilon=1.0))
        assert isinstance(state, EpisodicUCBState)
        assert float(state.unit_stddev) == 1.0 and float(state.beta) == pytest.approx(3.1)
        with jax.enable_x64(True):
            s1 = jax.jit(lambda *a, up=learner.update: up(*a)[0])(
                jax.random.key(1), state, jnp.int32(0), np.float64(1.0), jnp.int32(1)
            )
        assert jax.tree.map(lambda x: x.dtype, s1) == jax.tree.map(lambda x: x.dtype, state)


# --- budgets ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("factory,params_cls", POLICIES, ids=IDS)
def test_missing_or_wrong_budget_is_refused(factory, params_cls):
    with pytest.raises(TypeError):
        params_cls()  # epsilon has no default
    run = lambda p: jp.run(factory(K), ENV, jp.SimParams(p, BernoulliParams()), jax.random.key(0), 10)
    with pytest.raises(ValueError, match="epsilon"):
        run(params_cls(epsilon=None))
    with pytest.raises(ValueError, match="epsilon"):
        factory(K).init(jax.random.key(0), params_cls(epsilon=None))  # also inside init (a static check)
    with pytest.raises(ValueError, match=r"AdaCUCBParams.*takes AdaP(KL)?UCBParams"):
        run(AdaCUCBParams(rho=1.0))  # AdaC-UCB's params (a zCDP budget, not an ε): another class, refused
    with pytest.raises(ValueError, match="epsilon"):
        simulate_ucb_episodes(params_cls(epsilon=None), PAPER_MEANS, jax.random.key(0), 10)
    for bad in (0.0, -1.0, float("nan"), "1.0"):
        with pytest.raises(ValueError, match="epsilon"):
            run(params_cls(epsilon=bad))
        with pytest.raises(ValueError, match="epsilon"):
            simulate_ucb_episodes(params_cls(epsilon=bad), PAPER_MEANS, jax.random.key(0), 10)
    with pytest.raises(ValueError, match="alpha"):
        run(params_cls(epsilon=1.0, alpha=0.0))
    with pytest.raises(ValueError, match="num_arms"):
        factory(1)
    with pytest.raises(ValueError, match="horizon"):
        factory(5, horizon=4)
