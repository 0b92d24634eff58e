"""DP-UCB (central, per-arm prefix sums) and LDP-UCB (local Laplace): noise, bonus coverage, decisions, regret."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxpriv as jp
from jaxpriv.bandits.dp_ucb import (
    DPUCBParams,
    arm_mechanism,
    dp_ucb,
    dp_ucb_bonus,
    dp_ucb_index,
    dp_ucb_regret_bound,
    noise_table,
)
from jaxpriv.bandits.ldp_ucb import LDPUCBParams, ldp_ucb, ldp_ucb_bonus, ldp_ucb_regret_bound
from jaxpriv.envs.bandits import PAPER_MEANS, BernoulliParams, bernoulli_bandit
from jaxpriv.mechanisms import (
    GAUSSIAN,
    LAPLACE,
    TreeParams,
    binary_tree,
    calibrated_sensitivity,
    honaker_tree,
    release_variance,
    sqrt_factorization,
    window_tree,
)
from jaxpriv.testing import mean_with_stderr, variance_with_stderr

T = 64  # the horizon of the per-arm streams
LAPLACE_HONAKER = honaker_tree(T, 1, "laplace", "replace")
SQRT = sqrt_factorization(T, 1)  # Gaussian, add/remove neighbours


def _unit_params(mechanism, budget):
    """The mechanism's params at the learner's calibration (Δ = 1/2 for replace, 1 for add/remove)."""
    table = noise_table(mechanism, T)
    field = table.noise.budget
    return TreeParams(**{field: budget}, sensitivity=table.sensitivity)


def _stream(learner, params, key, mu, horizon=T, action=0):
    """Pull one arm ``horizon`` times on Bernoulli(mu) rewards: its released sums and counts after each pull."""
    k_init, k_r, k_u = jax.random.split(key, 3)
    state = learner.init(k_init, params)
    rewards = (jax.random.uniform(k_r, (horizon,)) < mu).astype(jnp.float32)

    def body(state, t):
        state = learner.update(jax.random.fold_in(k_u, t), state, jnp.int32(action), rewards[t - 1], t)[0]
        return state, (state.sums[action], state.counts[action], rewards[t - 1])

    return jax.lax.scan(body, state, jnp.arange(1, horizon + 1, dtype=jnp.int32))


def _streams(learner, params, seeds, mu=0.5, horizon=T):
    keys = jax.random.split(jax.random.key(7), seeds)
    state, (sums, counts, rewards) = jax.jit(jax.vmap(lambda k: _stream(learner, params, k, mu, horizon)))(keys)
    return state, np.asarray(sums, np.float64), np.asarray(counts), np.asarray(rewards, np.float64)


# --- the released statistics carry the calibrated noise --------------------------------------------------


@pytest.mark.parametrize(
    ("mechanism", "budget"),
    [(None, 2.0), (LAPLACE_HONAKER, 2.0), (SQRT, 0.5)],
    ids=["laplace_tree", "laplace_honaker", "gaussian_sqrt"],
)
def test_released_sums_have_the_mechanisms_exact_variance(mechanism, budget):
    mech = arm_mechanism(T, None, mechanism)
    gaussian = noise_table(mech, T).noise is GAUSSIAN
    learner = dp_ucb(2, T, mechanism=mechanism)
    params = DPUCBParams(rho=budget) if gaussian else DPUCBParams(epsilon=budget)
    _, sums, counts, rewards = _streams(learner, params, seeds=4000)
    assert np.all(counts == np.arange(1, T + 1))
    error = sums - np.cumsum(rewards, axis=1)  # [seeds, T]: the release noise at counts 1..T
    var = release_variance(mech, _unit_params(mech, budget), np.arange(1, T + 1))
    if mech.info.name != "sqrt_factorization":  # trees: calibrated to a replace-one change of 1 per node
        assert float(calibrated_sensitivity(mech, _unit_params(mech, budget))) == pytest.approx(1.0)
    z = []
    for n in (1, 2, 3, 7, 8, 31, 48, 63, 64):
        v, se = variance_with_stderr(error[:, n - 1], mean=0.0)
        assert abs(v - var[n - 1]) < 5 * se, (n, v, var[n - 1], se)
        z.append((v, se, var[n - 1]))
    # pooled over counts: the calibrated variance fits, a 20% smaller noise scale (0.64 variance) does not
    ratio = np.mean([v / w for v, _, w in z])
    ratio_se = math.sqrt(np.sum([(se / w) ** 2 for _, se, w in z])) / len(z)
    assert abs(ratio - 1.0) < 4 * ratio_se
    assert abs(ratio - 0.64) > 10 * ratio_se


def test_default_tree_is_the_papers_laplace_tree():
    # Laplace node noise of scale D/ε (D = ceil(log2 T) + 1 levels), replace-one sensitivity 1
    table = noise_table(arm_mechanism(T), T)
    depth = math.ceil(math.log2(T)) + 1
    assert table.noise is LAPLACE and table.sensitivity == 0.5
    assert table.node_scale == pytest.approx(depth)  # at ε = 1
    assert table.stddev[16] ** 2 == pytest.approx(2 * depth**2)  # one node at n = 16
    assert table.stddev[15] ** 2 == pytest.approx(4 * 2 * depth**2)  # four nodes at n = 15


def test_ldp_rewards_carry_laplace_noise_of_scale_one_over_epsilon():
    eps = 0.7
    learner = ldp_ucb(2)
    state = learner.init(jax.random.key(0), LDPUCBParams(epsilon=eps))
    keys = jax.random.split(jax.random.key(1), 20_000)
    upd = jax.jit(jax.vmap(lambda *a: learner.update(*a)[0], in_axes=(0, None, None, None, None)))
    for reward, clipped in ((0.3, 0.3), (1.7, 1.0), (-2.0, 0.0)):
        out = upd(keys, state, jnp.int32(1), jnp.float32(reward), jnp.int32(1))
        x = np.asarray(out.sums[:, 1], np.float64)
        assert np.all(np.asarray(out.sums[:, 0]) == 0.0) and np.all(np.asarray(out.counts[:, 1]) == 1)
        mean, se = mean_with_stderr(x)
        assert abs(mean - clipped) < 5 * se
        v, vse = variance_with_stderr(x, mean=clipped)
        assert abs(v - 2 / eps**2) < 5 * vse
        assert abs(v - 0.64 * 2 / eps**2) > 5 * vse  # a 20% smaller scale is detected
    # infinite budget: the reward itself
    state = learner.init(jax.random.key(0), LDPUCBParams(epsilon=jnp.inf))
    out = learner.update(jax.random.key(2), state, jnp.int32(0), jnp.float32(0.25), jnp.int32(1))[0]
    assert float(out.sums[0]) == 0.25


# --- the bonus covers the sampling error and the release noise ----------------------------------------


def _coverage(sums, counts, bonus, mu):
    dev = np.abs(sums / counts - mu)
    return dev > bonus  # [seeds, T]


@pytest.mark.parametrize(
    ("mechanism", "params"),
    [
        (None, DPUCBParams(epsilon=1.0)),
        (None, DPUCBParams(epsilon=8.0)),
        (LAPLACE_HONAKER, DPUCBParams(epsilon=1.0)),
        ("gaussian", DPUCBParams(rho=0.5)),
        (None, DPUCBParams(epsilon=jnp.inf)),
    ],
    ids=["tree_eps1", "tree_eps8", "honaker_eps1", "gaussian_tree_rho", "no_noise"],
)
def test_dp_ucb_bonus_coverage(mechanism, params):
    noise = "gaussian" if mechanism == "gaussian" else None
    mechanism = None if mechanism == "gaussian" else mechanism
    learner = dp_ucb(2, T, noise=noise, mechanism=mechanism)
    seeds, mu = 2000, 0.5
    state, sums, counts, _ = _streams(learner, params, seeds, mu)
    table = noise_table(arm_mechanism(T, noise, mechanism), T)
    # the learner's own bonus at counts 1..T: its index with zero sums (alpha = 1: failure probability 1/t)
    probe = jax.tree.map(lambda x: x[0], state)._replace(
        counts=jnp.arange(1, T + 1, dtype=jnp.int32), sums=jnp.zeros(T), alpha=jnp.float32(1.0)
    )
    budget = float(params.epsilon if params.epsilon is not None else params.rho)
    finite, small_budget = bool(np.isfinite(budget)), budget <= 1.0
    failures = {}
    for t in (2, 5, 20):
        bonus = np.asarray(dp_ucb_index(probe, t, table))
        fail = _coverage(sums, counts, bonus[None, :], mu)
        delta = 1.0 / t
        slack = 3 * math.sqrt(delta * (1 - delta) / seeds)
        assert fail.mean() <= delta, (t, fail.mean())  # over all (seed, count)
        assert fail.mean(0).max() <= delta + slack, (t, fail.mean(0).max())  # at every count
        failures[t] = fail.mean()
        if finite and t == 20 and small_budget:  # power: the noise term is needed, the sampling term fails
            sampling = np.asarray(dp_ucb_bonus(counts[0], t, 1.0, 0.0, 0.0))
            assert _coverage(sums, counts, sampling[None, :], mu).mean() > 2 * delta
    assert failures[2] >= failures[5] >= failures[20]
    if noise == "gaussian" or not finite:  # these bounds are close to tight: half the bonus fails
        half = 0.5 * np.asarray(dp_ucb_index(probe, 20, table))
        assert _coverage(sums, counts, half[None, :], mu).mean() > 0.05


@pytest.mark.parametrize("eps", [0.5, 2.0, jnp.inf])
def test_ldp_ucb_bonus_coverage(eps):
    learner = ldp_ucb(2)
    seeds, mu = 2000, 0.3
    _, sums, counts, _ = _streams(learner, LDPUCBParams(epsilon=eps), seeds, mu)
    for t in (2, 5, 20):
        delta = 1.0 / t
        bonus = np.asarray(ldp_ucb_bonus(counts[0], t, 1.0, eps))
        fail = _coverage(sums, counts, bonus[None, :], mu)
        assert fail.mean() <= delta, (t, fail.mean())
        assert fail.mean(0).max() <= delta + 3 * math.sqrt(delta * (1 - delta) / seeds)
    half = 0.5 * np.asarray(ldp_ucb_bonus(counts[0], 20, 1.0, eps))
    assert _coverage(sums, counts, half[None, :], mu).mean() > 0.05  # power: half the bonus fails
    if np.isfinite(eps):
        sampling = np.asarray(ldp_ucb_bonus(counts[0], 20, 1.0, jnp.inf))  # power: the noise term is needed
        assert _coverage(sums, counts, sampling[None, :], mu).mean() > 0.05


def test_bonus_formulas():
    n, t, alpha = np.array([1.0, 4.0, 100.0]), 50, 3.0
    log_t = math.log(2) + alpha * math.log(t)
    np.testing.assert_allclose(dp_ucb_bonus(n, t, alpha, 0.0, 0.0), np.sqrt(log_t / (2 * n)), rtol=1e-6)
    v, b = 7.0, 1.5
    want = (np.sqrt(2 * (n / 4 + v) * log_t) + b * log_t) / n
    np.testing.assert_allclose(dp_ucb_bonus(n, t, alpha, v, b), want, rtol=1e-6)
    eps = 0.4
    want = np.sqrt(2 * (0.25 + 2 / eps**2) * log_t / n) + log_t / (eps * n)
    np.testing.assert_allclose(ldp_ucb_bonus(n, t, alpha, eps), want, rtol=1e-6)


# --- decisions: noise off = UCB; the index uses the mechanism's variance ---------------------------------


def _trajectory(learner, params, table_rewards, key):
    """Actions of ``learner`` on a reward table ``[T, K]`` (the reward of the arm played at t is row t)."""
    horizon = table_rewards.shape[0]
    state = learner.init(key, params)

    def body(state, t):
        k_act, k_upd = jax.random.split(jax.random.fold_in(key, t))
        a = learner.act(k_act, state, t)
        state = learner.update(k_upd, state, a, table_rewards[t - 1, a], t)[0]
        return state, a

    return jax.lax.scan(body, state, jnp.arange(1, horizon + 1, dtype=jnp.int32))[1]


def _numpy_ucb(rewards, alpha):
    """Step-by-step UCB with the DP-UCB bonus's sampling term ``sqrt(L_t/(2n))``, ``L_t = log 2 + α log t``."""
    horizon, k = rewards.shape
    sums, counts, actions = np.zeros(k, np.float32), np.zeros(k, np.float32), []
    for t in range(1, horizon + 1):
        if t <= k:
            a = t - 1
        else:
            log_t = np.float32(math.log(2.0)) + np.float32(alpha) * np.log(np.float32(t))
            index = sums / counts + np.sqrt(np.float32(2.0) * log_t * (np.float32(0.25) * counts)) / counts
            a = int(np.argmax(index))
        actions.append(a)
        sums[a] += rewards[t - 1, a]
        counts[a] += 1
    return np.array(actions)


@pytest.mark.parametrize("mechanism", [None, LAPLACE_HONAKER, "gaussian", SQRT, "ldp"])
def test_noise_off_decisions_equal_numpy_ucb(mechanism):
    horizon, k = T, 4
    rng = np.random.default_rng(3)
    rewards = (rng.random((horizon, k)) < np.array([0.7, 0.5, 0.45, 0.2])).astype(np.float32)
    if mechanism == "ldp":
        learner, params = ldp_ucb(k, tie_break="first"), LDPUCBParams(epsilon=jnp.inf, alpha=2.5)
    elif mechanism == "gaussian":
        learner, params = dp_ucb(k, horizon, noise="gaussian", tie_break="first"), DPUCBParams(rho=jnp.inf, alpha=2.5)
    elif mechanism is SQRT:
        learner, params = dp_ucb(k, horizon, mechanism=SQRT, tie_break="first"), DPUCBParams(rho=jnp.inf, alpha=2.5)
    else:
        learner = dp_ucb(k, horizon, mechanism=mechanism, tie_break="first")
        params = DPUCBParams(epsilon=jnp.inf, alpha=2.5)
    got = np.asarray(jax.jit(lambda r: _trajectory(learner, params, r, jax.random.key(0)))(jnp.asarray(rewards)))
    want = _numpy_ucb(rewards, 2.5)
    np.testing.assert_array_equal(got, want)
    assert len(set(want[k:].tolist())) > 1  # not a trivial trajectory


def test_gaussian_mechanism_index_uses_its_own_variance():
    k, rho, t = 3, 0.3, 40
    learners = {
        "sqrt": (dp_ucb(k, T, mechanism=SQRT, tie_break="first"), SQRT),
        "tree": (dp_ucb(k, T, noise="gaussian", tie_break="first"), binary_tree(T, 1, "gaussian", "replace")),
    }
    rng = np.random.default_rng(0)
    rewards = jnp.asarray((rng.random((T, k)) < 0.5).astype(np.float32))
    indices = {}
    for name, (learner, mech) in learners.items():
        state = learner.init(jax.random.key(0), DPUCBParams(rho=rho))
        update = jax.jit(lambda *a, up=learner.update: up(*a)[0])
        for s, a in enumerate([0, 1, 2, 0, 0, 1, 0, 0, 0, 2, 0, 1, 1]):
            state = update(jax.random.key(s), state, jnp.int32(a), rewards[s, a], jnp.int32(s + 1))
        counts = np.asarray(state.counts)
        var = release_variance(mech, _unit_params(mech, rho), counts)  # the mechanism's own oracle
        want = np.asarray(state.sums) / counts + np.asarray(dp_ucb_bonus(counts, t, 3.0, var, 0.0))
        got = np.asarray(dp_ucb_index(state, t, noise_table(mech, T)))
        np.testing.assert_allclose(got, want, rtol=1e-5)
        assert int(learner.act(jax.random.key(9), state, jnp.int32(t))) == int(np.argmax(want))
        indices[name] = want - np.asarray(state.sums) / counts
    assert not np.allclose(indices["sqrt"], indices["tree"], rtol=1e-3)  # the variances differ: power


# --- regret: under the derived bound, falling as the budget grows ----------------------------------------

MEANS = (0.9, 0.6, 0.3)
REGRET_T = 512


def _regret_grid(learner, params, seeds=48):
    env = bernoulli_bandit(len(MEANS))
    res = jp.sweep(
        learner,
        env,
        jp.SimParams(params, BernoulliParams(MEANS)),
        jax.random.key(11),
        REGRET_T,
        seeds=seeds,
        checkpoints=[REGRET_T],
    )
    return np.asarray(res.regret, np.float64)[..., -1]  # [grid, seeds]


@pytest.mark.parametrize("kind", ["dp", "ldp"])
def test_regret_under_the_bound_and_falling_with_epsilon(kind):
    eps = np.array([0.25, 1.0, 4.0, np.inf], np.float32)
    if kind == "dp":
        learner, params = dp_ucb(len(MEANS), REGRET_T), DPUCBParams(epsilon=jnp.asarray(eps))
    else:
        learner, params = ldp_ucb(len(MEANS)), LDPUCBParams(epsilon=jnp.asarray(eps))
    regret = _regret_grid(learner, params)
    mean, se = mean_with_stderr(regret, axis=1)
    for i, e in enumerate(eps):
        if kind == "dp":
            bound = dp_ucb_regret_bound(MEANS, REGRET_T, DPUCBParams(epsilon=float(e)))
        else:
            bound = ldp_ucb_regret_bound(MEANS, REGRET_T, LDPUCBParams(epsilon=float(e)))
        assert mean[i] + 3 * se[i] <= bound, (e, mean[i], se[i], bound)
    # paired over shared seeds: each larger budget lowers the regret, the extremes by many SEs
    for i in range(len(eps) - 1):
        d_mean, d_se = mean_with_stderr(regret[i] - regret[i + 1])
        assert d_mean > -2 * d_se, (eps[i], eps[i + 1], d_mean, d_se)
    d_mean, d_se = mean_with_stderr(regret[0] - regret[-1])
    assert d_mean > 5 * d_se


def test_regret_bound_constants():
    # non-private limit: n* is the least n with sqrt(L_T/(2n)) < gap/2, i.e. floor(2 L_T/gap²) + 1
    alpha, horizon = 3.0, 1000
    log_t = math.log(2) + alpha * math.log(horizon)
    gaps = np.array([0.3, 0.6])
    tail = 3 ** (2 - alpha) / (alpha - 2)
    want = float(np.sum(gaps * (np.floor(2 * log_t / gaps**2) + 1 + tail)))
    assert dp_ucb_regret_bound(MEANS, horizon, DPUCBParams(epsilon=np.inf)) == pytest.approx(want)
    assert ldp_ucb_regret_bound(MEANS, horizon, LDPUCBParams(epsilon=np.inf)) == pytest.approx(want)
    # monotone in the budget, and below the closed-form corollary
    bounds = [dp_ucb_regret_bound(MEANS, 10**6, DPUCBParams(epsilon=e)) for e in (0.5, 2.0, 8.0, np.inf)]
    assert bounds == sorted(bounds, reverse=True)
    eps, horizon = 1.0, 10**6
    log_t = math.log(2) + alpha * math.log(horizon)
    depth = math.ceil(math.log2(horizon)) + 1
    b = depth / eps
    v = 2 * depth * b**2
    gaps = np.array([0.3, 0.6])
    corollary = float(np.sum(8 * log_t / gaps + 4 * (math.sqrt(2 * v * log_t) + b * log_t) + gaps * (1 + tail)))
    assert dp_ucb_regret_bound(MEANS, horizon, DPUCBParams(epsilon=eps)) <= corollary
    with pytest.raises(ValueError, match="alpha must be > 2"):
        dp_ucb_regret_bound(MEANS, horizon, DPUCBParams(epsilon=1.0, alpha=2.0))


# --- compiled sweeps: a budget grid equals one point at a time ----------------------------------------


@pytest.mark.parametrize("kind", ["dp", "ldp"])
def test_budget_grid_equals_one_at_a_time(kind):
    eps = [0.5, 3.0, np.inf]
    make = (lambda: dp_ucb(len(MEANS), 128)) if kind == "dp" else (lambda: ldp_ucb(len(MEANS)))
    cls = DPUCBParams if kind == "dp" else LDPUCBParams
    learner, env = make(), bernoulli_bandit(len(MEANS))
    sim = jp.SimParams(cls(epsilon=jnp.asarray(eps, jnp.float32)), BernoulliParams(MEANS))
    grid = jp.sweep(learner, env, sim, jax.random.key(5), 128, seeds=8, checkpoints=[32, 128])
    for i, e in enumerate(eps):
        one = jp.sweep(
            learner,
            env,
            jp.SimParams(cls(epsilon=e), BernoulliParams(MEANS)),
            jax.random.key(5),
            128,
            seeds=8,
            checkpoints=[32, 128],
        )
        np.testing.assert_allclose(np.asarray(grid.regret[i]), np.asarray(one.regret), rtol=1e-6, atol=1e-4)


# --- budgets and arguments refused ------------------------------------------------------------------------


def test_missing_or_wrong_budget_is_refused():
    env = bernoulli_bandit(3)
    laplace, gaussian = dp_ucb(3, 32), dp_ucb(3, 32, mechanism=SQRT)
    for learner, params, match in [
        (laplace, DPUCBParams(), "needs epsilon"),
        (laplace, DPUCBParams(rho=1.0), "needs epsilon"),
        (laplace, DPUCBParams(epsilon=1.0, rho=1.0), "needs epsilon"),
        (gaussian, DPUCBParams(epsilon=1.0), "needs rho"),
        (gaussian, DPUCBParams(), "needs rho"),
        (laplace, DPUCBParams(epsilon=0.0), "epsilon"),
        (laplace, DPUCBParams(epsilon=-1.0), "epsilon"),
        (gaussian, DPUCBParams(rho=0.0), "rho"),
        (laplace, DPUCBParams(epsilon=1.0, alpha=0.0), "alpha"),
        (ldp_ucb(3), LDPUCBParams(), "needs epsilon"),
        (ldp_ucb(3), LDPUCBParams(epsilon=0.0), "epsilon"),
    ]:
        with pytest.raises(ValueError, match=match):
            learner.check(params)
        with pytest.raises(ValueError, match=match):
            jp.run(learner, env, jp.SimParams(params, BernoulliParams((0.5, 0.4, 0.3))), jax.random.key(0), 16)
    with pytest.raises(ValueError, match="needs epsilon"):  # init refuses too, under jit
        jax.jit(laplace.init)(jax.random.key(0), DPUCBParams(rho=1.0))
    with pytest.raises(ValueError, match="needs epsilon"):
        jax.jit(ldp_ucb(3).init)(jax.random.key(0), LDPUCBParams())


def test_bad_mechanisms_are_refused():
    with pytest.raises(ValueError, match="dim=1"):
        dp_ucb(3, 32, mechanism=binary_tree(32, 2, "laplace"))
    with pytest.raises(ValueError, match="horizon must be >= 64"):
        dp_ucb(3, 64, mechanism=binary_tree(32, 1, "laplace"))
    with pytest.raises(ValueError, match="one of"):
        dp_ucb(3, 32, mechanism=window_tree(32, 1, 4))
    with pytest.raises(ValueError, match="noise must be None or 'gaussian'"):
        dp_ucb(3, 32, noise="laplace", mechanism=SQRT)
    with pytest.raises(ValueError, match="horizon must be >= num_arms"):
        dp_ucb(5, 4)
    with pytest.raises(ValueError, match="exceeds"):
        jp.run(
            dp_ucb(3, 16),
            bernoulli_bandit(3),
            jp.SimParams(DPUCBParams(epsilon=1.0), BernoulliParams(MEANS)),
            jax.random.key(0),
            32,
        )


def test_nonfinite_rewards_are_zeroed_and_counted():
    for learner, params in ((dp_ucb(2, 8), DPUCBParams(epsilon=jnp.inf)), (ldp_ucb(2), LDPUCBParams(epsilon=jnp.inf))):
        state, update = learner.init(jax.random.key(0), params), jax.jit(learner.update)
        state, bad = update(jax.random.key(1), state, jnp.int32(0), jnp.float32(jnp.nan), jnp.int32(1))
        state, fine = update(jax.random.key(2), state, jnp.int32(1), jnp.float32(5.0), jnp.int32(2))
        assert (int(bad.nonfinite), int(fine.nonfinite)) == (1, 0)  # the step's Info
        np.testing.assert_array_equal(np.asarray(state.sums), [0.0, 1.0])  # NaN -> 0, 5 -> clipped to 1


def test_runs_in_the_engine_with_the_paper_means():
    res = jp.run(
        dp_ucb(5, 256),
        bernoulli_bandit(5),
        jp.SimParams(DPUCBParams(epsilon=1.0), BernoulliParams()),
        jax.random.key(0),
        256,
        checkpoints=[256],
    )
    assert np.isfinite(float(res.regret[-1])) and int(res.nonfinite_inputs) == 0
    assert 0 <= float(res.regret[-1]) <= 256 * (max(PAPER_MEANS) - min(PAPER_MEANS))
