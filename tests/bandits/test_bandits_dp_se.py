"""DP-SE (``jaxpriv.bandits.dp_se``): calibration, a NumPy reference of the pseudo-code, the epoch-level fast path."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxpriv as jp
from jaxpriv import _rng
from jaxpriv._base import split_step_key
from jaxpriv.bandits import _sampling
from jaxpriv.bandits.dp_se import DPSEParams, dp_se, dp_se_regret_bound, dp_se_reps
from jaxpriv.bandits.episodic.dp_se import simulate_dp_se_epochs
from jaxpriv.envs.bandits import PAPER_MEANS, BernoulliParams, bernoulli_bandit
from jaxpriv.testing import ks_critical_value, ks_two_sample, mean_with_stderr, rollout

# --- a step-by-step NumPy reference of the pseudo-code -------------------------------------------------------


def _reference(table, epsilon, beta, horizon, noise_of):
    """DP-SE on a reward table ``[T, K]`` in float64; ``noise_of(t)`` gives the unit Laplace draws at round ``t``.

    Returns the arms played, ``[T]``.
    """
    K = table.shape[1]
    active = list(range(K))
    e, j, sums, actions = 1, 0, np.zeros(K), []

    def reps(e, m):
        base = math.log(m) + 2 * math.log(e) + math.log(1 / beta)
        r = max(32 * (base + math.log(8)) * 4.0**e, 8 * (base + math.log(4)) * 2.0**e / epsilon) + 1
        return math.floor(min(r, horizon // m + 1))

    R = reps(1, K)
    for t in range(1, horizon + 1):
        arm = active[j % len(active)]
        actions.append(arm)
        sums[arm] += min(max(table[t - 1, arm], 0.0), 1.0)
        j += 1
        if len(active) > 1 and j == len(active) * R:
            noise = noise_of(t)
            mu = {a: sums[a] / R + noise[a] / (epsilon * R) for a in active}
            base = math.log(len(active)) + 2 * math.log(e) + math.log(1 / beta)
            h = math.sqrt((base + math.log(8)) / (2 * R))
            c = (base + math.log(4)) / (R * epsilon)
            best = max(mu.values())
            active = [a for a in active if not best - mu[a] > 2 * (h + c)]
            e, j, sums = e + 1, 0, np.zeros(K)
            R = reps(e, len(active))
    return np.asarray(actions)


def _scan_on_table(learner, params, table, key):
    """The learner on a fixed reward table, update keys ``split_step_key(key, t)[2]``; returns actions and state."""
    table = jnp.asarray(table, jnp.float32)

    def body(state, t):
        k_act, _, k_upd = split_step_key(key, t)
        action = learner.act(k_act, state, t)
        state = learner.update(k_upd, state, action, table[t - 1, action], t)[0]
        return state, action

    T = table.shape[0]
    state, actions = jax.jit(lambda s: jax.lax.scan(body, s, jnp.arange(1, T + 1, dtype=jnp.int32)))(
        learner.init(key, params)
    )
    return np.asarray(actions), state


@pytest.mark.parametrize("epsilon", [np.inf, 2.0, 0.3, 0.05])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_decisions_equal_the_numpy_reference(epsilon, seed):
    # Same rewards and, with noise on, the same Laplace numbers: the same arms at every round.
    K, T, beta = 3, 12_000, 0.5
    rng = np.random.default_rng(seed)
    means = np.array([0.7, 0.6, 0.45])
    table = (rng.random((T, K)) < means).astype(np.float64)
    key = jax.random.key(100 + seed)
    learner = dp_se(K, T)
    actions, state = _scan_on_table(learner, DPSEParams(epsilon=epsilon, beta=beta), table, key)

    def noise_of(t):
        return np.asarray(_rng.laplace(split_step_key(key, jnp.int32(t))[2], (K,), jnp.float32), np.float64)

    expected = _reference(table, float(epsilon), beta, T, noise_of)
    np.testing.assert_array_equal(actions, expected)
    assert int(state.epochs) >= 1  # at least one elimination round was compared


def test_the_reference_comparison_has_power():
    # A threshold 10% tighter changes the decisions on the same inputs.
    K, T, beta = 3, 12_000, 0.5
    rng = np.random.default_rng(0)
    table = (rng.random((T, K)) < np.array([0.7, 0.6, 0.45])).astype(np.float64)
    actions, _ = _scan_on_table(dp_se(K, T), DPSEParams(epsilon=np.inf, beta=beta), table, jax.random.key(0))
    ref = _reference(table, np.inf, beta / 1e3, T, lambda t: np.zeros(K))  # a different beta: other R_e, thresholds
    assert np.any(actions != ref)


def test_schedule_matches_the_authors_formula():
    # R_e = floor(max(32 log(8|S|e²/δ)/Δ_e², 8 log(4|S|e²/δ)/(ε Δ_e)) + 1) (adac.md §7).
    T = 10**7
    for e, m, eps in [(1, 5, 1.0), (3, 4, 0.01), (2, 2, np.inf), (6, 3, 0.5)]:
        d = 2.0**-e
        want = math.floor(max(32 * math.log(8 * m * e * e * T) / d**2, 8 * math.log(4 * m * e * e * T) / (eps * d)) + 1)
        got = int(dp_se_reps(e, m, 1.0 / eps, math.log(T), T))
        assert abs(got - min(want, T // m + 1)) <= max(1, want * 1e-6), (e, m, eps, got, want)


# --- privacy calibration ---------------------------------------------------------------------------------------


def test_released_epoch_means_have_the_calibrated_laplace_noise():
    # Constant rewards 0.5: after epoch 1 the released means are 0.5 + Lap(1/(ε R_1)) exactly.
    K, eps, beta, S = 2, 0.7, 0.5, 4000
    learner = dp_se(K, 10_000)
    params = DPSEParams(epsilon=eps, beta=beta)
    R1 = int(dp_se_reps(1, K, 1 / eps, -math.log(beta), 10_000))
    table = np.full((K * R1, K), 0.5)

    keys = jax.random.split(jax.random.key(7), S)
    rel, epochs = _released_batch(learner, params, table, keys)
    assert np.all(epochs == 1)
    x = (np.asarray(rel, np.float64) - 0.5).ravel()
    crit = ks_critical_value(x.size)

    def ks(scale):
        xs = np.sort(x)
        cdf = np.where(xs < 0, 0.5 * np.exp(xs / scale), 1 - 0.5 * np.exp(-xs / scale))
        n = xs.size
        return max(np.max(np.arange(1, n + 1) / n - cdf), np.max(cdf - np.arange(n) / n))

    scale = 1.0 / (eps * R1)
    assert ks(scale) < crit
    assert ks(0.8 * scale) > crit  # 20% less noise is rejected
    assert ks(1.2 * scale) > crit


def _released_batch(learner, params, table, keys):
    table = jnp.asarray(table, jnp.float32)
    T = table.shape[0]

    def one(key):
        def body(state, t):
            k_act, _, k_upd = split_step_key(key, t)
            action = learner.act(k_act, state, t)
            return learner.update(k_upd, state, action, table[t - 1, action], t)[0], None

        state, _ = jax.lax.scan(body, learner.init(key, params), jnp.arange(1, T + 1, dtype=jnp.int32))
        return state.released, state.epochs

    rel, epochs = jax.jit(jax.vmap(one))(keys)
    return np.asarray(rel), np.asarray(epochs)


def test_epsilon_inf_releases_exact_means():
    K, beta = 2, 0.5
    learner = dp_se(K, 10_000)
    R1 = int(dp_se_reps(1, K, 0.0, -math.log(beta), 10_000))
    table = np.tile(np.array([[0.25, 0.75]]), (K * R1, 1))
    _, state = _scan_on_table(learner, DPSEParams(epsilon=jnp.inf, beta=beta), table, jax.random.key(0))
    np.testing.assert_allclose(np.asarray(state.released), [0.25, 0.75], rtol=1e-6)
    assert int(state.epochs) == 1 and np.asarray(state.active).tolist() == [False, True]


# --- budget and arguments --------------------------------------------------------------------------------------


def test_budget_is_required():
    learner = dp_se(3, 100)
    with pytest.raises(ValueError, match="epsilon"):
        learner.check(DPSEParams())
    with pytest.raises(ValueError, match="epsilon"):
        learner.init(jax.random.key(0), DPSEParams(beta=0.1))
    with pytest.raises(ValueError, match="epsilon"):
        jp.sweep(learner, bernoulli_bandit(3), jp.SimParams(DPSEParams(), BernoulliParams()), jax.random.key(0), 100, 2)
    with pytest.raises(ValueError, match="epsilon"):
        simulate_dp_se_epochs(DPSEParams(), (0.5, 0.4, 0.3), jax.random.key(0), 100, 2)
    for bad in (0.0, -1.0, np.nan):
        with pytest.raises(ValueError, match="epsilon"):
            learner.check(DPSEParams(epsilon=bad))
    for bad in (0.0, 1.0, 2.0):
        with pytest.raises(ValueError, match="beta"):
            learner.check(DPSEParams(epsilon=1.0, beta=bad))
    learner.check(DPSEParams(epsilon=np.inf))  # the explicit non-private limit
    with pytest.raises(ValueError, match="horizon"):
        dp_se(5, 3)
    with pytest.raises(ValueError, match="horizon"):
        jp.sweep(learner, bernoulli_bandit(3), jp.SimParams(DPSEParams(1.0), BernoulliParams()), 0, 200, 2)


# --- the epoch-level fast path against the step level ------------------------------------------------------------

FAST_MEANS = (0.7, 0.57, 0.45)  # gap 0.13: near the epoch-1 threshold 2h_1 = 0.125 (power)
FAST_T, FAST_S = 20_000, 400
FAST_EPS = jnp.array([0.05, 1.0, jnp.inf], jnp.float32)
FAST_CKPTS = [3000, 9000, FAST_T]


def _regret_and_epochs(t, action, reward, info, state, env_state):
    return info.regret, state.epochs


def _step_level(params, key, horizon, seeds, means):
    """The engine's runs (``jaxpriv.testing.rollout``: ``jaxpriv.sweep``'s seeds), recording regret and epochs."""
    K = len(means)
    p = jp.SimParams(params, BernoulliParams(means))
    out = rollout(dp_se(K, horizon), bernoulli_bandit(K), p, key, horizon, seeds=seeds, record=_regret_and_epochs)
    regret, epochs = out.records
    return np.cumsum(np.asarray(regret, np.float64), axis=-1), np.asarray(epochs)


@pytest.fixture(scope="module")
def step_reference():
    return _step_level(DPSEParams(epsilon=FAST_EPS), jax.random.key(0), FAST_T, FAST_S, FAST_MEANS)


def _fast(reward_sum=None, key=1):
    kw = {} if reward_sum is None else {"reward_sum": reward_sum, "private": False}  # a hook: not private
    return simulate_dp_se_epochs(
        DPSEParams(epsilon=FAST_EPS), FAST_MEANS, jax.random.key(key), FAST_T, FAST_S, FAST_CKPTS, **kw
    )


def test_step_level_helper_is_the_engine():
    regret, _ = _step_level(DPSEParams(epsilon=FAST_EPS), jax.random.key(3), 3000, 4, FAST_MEANS)
    res = jp.sweep(
        dp_se(3, 3000),
        bernoulli_bandit(3),
        jp.SimParams(DPSEParams(epsilon=FAST_EPS), BernoulliParams(FAST_MEANS)),
        jax.random.key(3),
        3000,
        4,
        checkpoints=None,
    )
    np.testing.assert_allclose(regret, np.asarray(res.regret, np.float64), rtol=1e-6)


def test_fast_path_and_step_level_agree_in_distribution(step_reference):
    regret, epochs = step_reference
    fast = _fast()
    for g in range(len(FAST_EPS)):
        for j, c in enumerate(FAST_CKPTS):
            # Rounded: float32 gaps summed per step and per epoch differ in the last bits.
            stat, crit = ks_two_sample(
                np.round(regret[g, :, c - 1], 2), np.round(np.asarray(fast.regret[g, :, j], np.float64), 2)
            )
            assert stat < crit, (float(FAST_EPS[g]), c, stat, crit)
            stat, crit = ks_two_sample(epochs[g, :, c - 1], np.asarray(fast.episodes[g, :, j]))
            assert stat < crit, ("epochs", float(FAST_EPS[g]), c, stat, crit)
            a, sa = mean_with_stderr(epochs[g, :, c - 1].astype(np.float64))
            b, sb = mean_with_stderr(np.asarray(fast.episodes[g, :, j], np.float64))
            assert abs(a - b) < 4 * math.hypot(sa, sb) + 1e-9
    np.testing.assert_array_equal(np.asarray(fast.pulls).sum(-1), FAST_T)


def _shrunk_means(key, n, mean):
    # Wrong mean: the gaps shrunk by 30% (a plausible bug: the wrong success probability).
    return _sampling.binomial(key, n, 0.5 + 0.7 * (mean - 0.5))


def _no_variance(key, n, mean):
    # Wrong distribution with the right mean: the expected sum, without its Binomial spread.
    del key
    return jnp.round(n.astype(jnp.float32) * mean)


@pytest.mark.parametrize("wrong", [_shrunk_means, _no_variance], ids=["wrong_mean", "no_variance"])
def test_the_two_sample_test_rejects_a_wrong_reward_sum(step_reference, wrong):
    regret, epochs = step_reference
    fast = _fast(wrong)
    stats = [
        ks_two_sample(np.round(x[g, :, c - 1], 2), np.round(np.asarray(y[g, :, j], np.float64), 2))
        for x, y in ((regret, fast.regret), (epochs, fast.episodes))
        for g in range(len(FAST_EPS))
        for j, c in enumerate(FAST_CKPTS)
    ]
    assert any(stat > crit for stat, crit in stats), stats


@pytest.mark.parametrize("means,horizon", [((0.0, 1.0, 0.0, 1.0), 4000), ((1.0, 0.0, 0.0), 2500)])
def test_deterministic_rewards_give_identical_paths(means, horizon):
    # Rewards 0/1 and no noise: both simulators make the same decisions; every checkpoint (inside an epoch,
    # at its close, and in an epoch cut by the horizon) agrees exactly, as do the pulls.
    params = DPSEParams(epsilon=jnp.inf, beta=0.5)
    regret, epochs = _step_level(
        DPSEParams(epsilon=jnp.asarray([jnp.inf]), beta=0.5), jax.random.key(4), horizon, 2, means
    )
    fast = simulate_dp_se_epochs(params, means, jax.random.key(5), horizon, 2, None)
    np.testing.assert_array_equal(np.asarray(fast.regret, np.float64), regret[0])
    np.testing.assert_array_equal(np.asarray(fast.episodes), epochs[0])
    assert int(np.asarray(fast.episodes).max()) >= 1


def test_grid_points_reuse_the_seed_keys():
    key = jax.random.key(6)
    # The same budgets in the other order (one compilation): a budget's numbers do not depend on its grid position.
    grid = simulate_dp_se_epochs(DPSEParams(epsilon=jnp.array([0.2, 5.0])), PAPER_MEANS, key, 50_000, 16)
    swapped = simulate_dp_se_epochs(DPSEParams(epsilon=jnp.array([5.0, 0.2])), PAPER_MEANS, key, 50_000, 16)
    np.testing.assert_array_equal(np.asarray(grid.regret[1]), np.asarray(swapped.regret[0]))
    np.testing.assert_array_equal(np.asarray(grid.regret[0]), np.asarray(swapped.regret[1]))
    assert not np.array_equal(np.asarray(grid.regret[0]), np.asarray(grid.regret[1]))


# --- regret ----------------------------------------------------------------------------------------------------


def test_step_level_regret_under_the_bound(step_reference):
    regret, _ = step_reference
    for g, eps in enumerate(np.asarray(FAST_EPS, np.float64)):
        mean, se = mean_with_stderr(regret[g, :, -1])
        assert mean + 3 * se < dp_se_regret_bound(FAST_MEANS, FAST_T, float(eps)), (eps, mean)


@pytest.mark.parametrize("horizon", [10**5, 10**7])
def test_paper_setting_regret_under_the_bound(horizon):
    eps = jnp.array([0.01, 0.1, 1.0, jnp.inf], jnp.float32)
    res = simulate_dp_se_epochs(DPSEParams(epsilon=eps), PAPER_MEANS, jax.random.key(8), horizon, 200, [horizon])
    np.testing.assert_array_equal(np.asarray(res.pulls).sum(-1), horizon)
    for g, e in enumerate(np.asarray(eps, np.float64)):
        mean, se = mean_with_stderr(np.asarray(res.regret[g, :, -1], np.float64))
        bound = dp_se_regret_bound(PAPER_MEANS, horizon, float(e))
        assert mean + 3 * se < bound, (e, mean, bound)
    # Smaller epsilon costs more regret (the K log T / ε term).
    final = np.asarray(res.regret[:, :, -1]).mean(-1)
    assert final[0] > final[1] > final[3]


def test_regret_bound_values():
    # Non-private, one suboptimal arm of gap 1/2: e_a = 1, R_1 = floor(32 log(16 T) 4 + 1) pulls.
    T = 1000
    want = 0.5 * math.floor(32 * math.log(16 * T) * 4 + 1) + math.pi**2 / 12 / T * T * 0.5
    assert dp_se_regret_bound((1.0, 0.5), T, math.inf) == pytest.approx(min(want, 0.5 * T + math.pi**2 / 24))
    big = dp_se_regret_bound((0.9, 0.5), 10**6, math.inf)
    assert dp_se_regret_bound((0.9, 0.5), 10**6, 0.001) > big  # privacy term bites for small ε
    with pytest.raises(ValueError):
        dp_se_regret_bound((0.9, 0.5), 100, 0.0)
