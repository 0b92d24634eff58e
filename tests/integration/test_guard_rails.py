"""Guard rails: horizons are declared and enforced, non-finite inputs follow one documented rule, integer keys."""

import re
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxpriv as jp
from jaxpriv import bandits, envs, mechanisms, oco, sets
from jaxpriv._base import Env, EnvInfo, update_with_info
from jaxpriv.testing import variance_with_stderr


def _names_both(excinfo, a: int, b: int) -> bool:
    numbers = {int(n) for n in re.findall(r"\d+", str(excinfo.value))}
    return {a, b} <= numbers


# --- horizons refused before compiling ---------------------------------------------------------------


def test_prefix_sums_refuses_a_stream_longer_than_the_tree():
    mech = mechanisms.binary_tree(8, 1, "gaussian")
    xs = np.ones((40, 1), np.float32)
    with pytest.raises(ValueError, match="horizon") as e:
        mechanisms.prefix_sums(mech, mechanisms.TreeParams(rho=float("inf")), xs, jax.random.key(0))
    assert _names_both(e, 40, 8)
    # At the horizon it is exact (the capacity is not the problem: the declared horizon is).
    out = mechanisms.prefix_sums(mech, mechanisms.TreeParams(rho=float("inf")), xs[:8], 0)
    np.testing.assert_array_equal(np.asarray(out)[:, 0], np.arange(1, 9))


def _quadratic(d=2):
    ball = sets.l2_ball(d)
    return ball, envs.quadratic_stream(ball), envs.QuadraticParams(1.0, jnp.full(d, 0.2), 0.3)


@pytest.mark.parametrize("driver", ["run", "sweep"])
def test_run_and_sweep_refuse_a_horizon_past_the_learners(driver):
    ball, env, env_p = _quadratic()
    params = jp.SimParams(oco.PFTALParams(epsilon=1.0, lipschitz=2.0), env_p)
    learner = oco.pftal(64, ball)
    assert learner.horizon == 64
    call = jp.run if driver == "run" else jp.sweep
    with pytest.raises(ValueError, match="learner") as e:
        call(learner, env, params, jax.random.key(0), 200)
    assert _names_both(e, 200, 64)
    for other in (oco.ftal(ball, 64), oco.mi_ogd(ball, 64), oco.regularized_pftal(64, ball)):
        assert other.horizon == 64
    assert oco.private_experts(64, 3).horizon == 64
    assert oco.ftal(ball).horizon is None and oco.ogd(ball).horizon is None  # anytime: no horizon
    # A shorter run is fine.
    assert jp.run(learner, env, params, jax.random.key(0), 32).regret.shape == (32,)


def test_run_refuses_a_horizon_past_the_environments():
    ball = sets.l2_ball(2)
    env = envs.classification_stream(ball, horizon=16, solver_steps=4)
    assert env.horizon == 16
    params = jp.SimParams(oco.OGDParams(1.0, 1.0), envs.ClassificationParams())
    with pytest.raises(ValueError, match="environment") as e:
        jp.run(oco.ogd(ball, "sqrt"), env, params, 0, 20)
    assert _names_both(e, 20, 16)


def test_episode_simulator_refuses_more_rounds_than_its_policy():
    K, d = 4, 2
    actions = np.eye(K, d, dtype=np.float32) + 0.1
    policy = bandits.gope(K, d, 1000)
    assert policy.horizon == 1000
    env_p = envs.LinearBanditParams(actions, np.array([1.0, 0.0], np.float32), 1.0)
    params = bandits.GOPEParams(actions=actions)
    with pytest.raises(ValueError, match="policy") as e:
        bandits.simulate_gope_phases(params, env_p, 0, 5000, seeds=2, policy=policy)
    assert _names_both(e, 5000, 1000)
    ucb_policy = bandits.adac_ucb(3, 100)
    assert ucb_policy.horizon is None  # AdaC-UCB is anytime
    res = bandits.simulate_ucb_episodes(
        bandits.AdaCUCBParams(rho=1.0), [0.7, 0.5, 0.3], 0, 500, seeds=2, policy=ucb_policy
    )
    assert res.regret.shape[0] == 2


# --- past the horizon inside compiled code: NaN, never a plausible number ---------------------------


def _step_by_hand(mech, params, xs, key):
    state = mech.init(key, params)

    def body(state, t):
        state, release, bad = mech.step(jax.random.fold_in(key, t), state, xs[t - 1], t)
        return state, (release, bad)

    _, (releases, bad) = jax.lax.scan(body, state, jnp.arange(1, xs.shape[0] + 1, dtype=jnp.int32))
    return jnp.sum(bad), releases


def test_tree_stepped_past_its_horizon_releases_nan():
    mech = mechanisms.binary_tree(8, 1, "gaussian")
    xs = jnp.ones((40, 1))
    _, out = jax.jit(_step_by_hand, static_argnums=0)(
        mech, mechanisms.TreeParams(rho=float("inf")), xs, jax.random.key(0)
    )
    out = np.asarray(out)[:, 0]
    np.testing.assert_array_equal(out[:8], np.arange(1, 9))
    assert np.all(np.isnan(out[8:]))  # t = 9..40: before, t = 16 gave 8 and t = 17 gave 9


def test_learners_stepped_past_their_horizon_play_nan_or_an_invalid_arm():
    ball = sets.l2_ball(2)
    for learner, params in (
        (oco.ftal(ball, 4), oco.FTALParams()),
        (oco.pftal(4, ball), oco.PFTALParams(epsilon=float("inf"))),
        (oco.mi_ogd(ball, 4), oco.MIOGDParams(float("inf"))),
    ):
        state = learner.init(jax.random.key(0), params)
        act, update = jax.jit(learner.act), jax.jit(partial(update_with_info, learner))
        for t in range(1, 7):  # a short Python loop over hand-made steps, each compiled once
            w = act(jax.random.key(t), state, jnp.int32(t))
            state, _ = update(jax.random.key(t), state, w, jnp.array([0.1, -0.2]), jnp.int32(t))
            assert bool(jnp.all(jnp.isfinite(state.w))) == (t <= 4), (learner, t)
    # A bandit policy built for T answers arm -1 past it; the bandit environments answer NaN to it.
    K, d = 3, 2
    actions = np.eye(K, d, dtype=np.float32)
    gope = bandits.gope(K, d, 10)
    state = gope.init(jax.random.key(0), bandits.GOPEParams(actions=actions))
    assert int(gope.act(jax.random.key(1), state, jnp.int32(10))) >= 0
    assert int(gope.act(jax.random.key(1), state, jnp.int32(11))) == -1
    env = envs.bernoulli_bandit(3)
    es = env.reset(jax.random.key(0), envs.BernoulliParams(jnp.array([0.9, 0.5, 0.1])))
    for bad in (-1, 3):
        _, reward, info = env.step(jax.random.key(1), es, jnp.int32(bad), jnp.int32(1))
        assert np.isnan(float(reward)) and np.isnan(float(info.regret))


# --- the tree at every step, for horizons around a power of two --------------------------------------


@pytest.mark.parametrize("horizon", [15, 16, 17])
@pytest.mark.parametrize("noise", ["gamma", "laplace", "gaussian"])
def test_tree_exact_and_noised_at_every_step(horizon, noise):
    dim, sens, n = 2, 1.5, 6000
    xs = np.asarray(jax.random.normal(jax.random.key(3), (horizon, dim)) * 0.3, np.float32)
    exact = np.cumsum(xs.astype(np.float64), 0)
    mech = mechanisms.binary_tree(horizon, dim, noise)
    keys = jax.random.split(jax.random.key(7), n)

    def releases(params):  # [n, T, d]; the budget is traced: one compiled program for both budgets below
        return np.asarray(jax.vmap(lambda k: mechanisms.prefix_sums(mech, params, xs, k))(keys))

    # rho = inf / epsilon = inf: exactly the running sum at every t (on every key).
    free = mechanisms.TreeParams(**{mechanisms.budget_field(noise): np.inf}, sensitivity=sens)
    np.testing.assert_allclose(releases(free), np.broadcast_to(exact, (n, *exact.shape)), rtol=1e-5, atol=1e-5)
    budget = 0.5 if noise == "gaussian" else 2.0
    params = mechanisms.TreeParams(**{mechanisms.budget_field(noise): budget}, sensitivity=sens)
    node_var = float(mechanisms.node_variance(noise, budget, sens, mechanisms.tree_depth(horizon), dim))
    out = releases(params)
    for t in range(1, horizon + 1):
        err = out[:, t - 1, :] - exact[t - 1]
        expected = bin(t).count("1") * node_var
        var, se = variance_with_stderr(err, mean=0.0)
        assert abs(var - expected) < 5 * se, (t, var, expected)
        for wrong in (expected + node_var, expected - node_var):  # one node more or less is rejected
            if wrong > 0:
                assert abs(var - wrong) > 5 * se, (t, var, wrong)


# --- non-finite inputs -------------------------------------------------------------------------------


@pytest.mark.parametrize("noise", ["gamma", "laplace", "gaussian"])
def test_nonfinite_input_is_replaced_by_zero_and_counted(noise):
    T, dim = 20, 3
    xs = np.asarray(jax.random.normal(jax.random.key(1), (T, dim)), np.float32)
    bad = xs.copy()
    bad[4] = [np.nan, 0.5, 0.5]
    bad[9] = [np.inf, -1.0, 0.0]
    bad[13] = [-np.inf, np.inf, np.nan]
    zeroed = xs.copy()
    zeroed[[4, 9, 13]] = 0.0
    mech = mechanisms.binary_tree(T, dim, noise)
    params = mechanisms.TreeParams(**{mechanisms.budget_field(noise): 1.0}, sensitivity=1.0)
    key = jax.random.key(5)
    count_bad, out_bad = jax.jit(_step_by_hand, static_argnums=0)(mech, params, jnp.asarray(bad), key)
    count_zero, out_zero = jax.jit(_step_by_hand, static_argnums=0)(mech, params, jnp.asarray(zeroed), key)
    assert np.all(np.isfinite(np.asarray(out_bad)))
    np.testing.assert_array_equal(np.asarray(out_bad), np.asarray(out_zero))  # every step, same key
    assert int(count_bad) == 3 and int(count_zero) == 0  # the counts the step returned


def _faulty_linear_env(dim: int, bad_grad_at: int, bad_loss_at: int) -> Env:
    """A linear loss <g, w> with g fixed; the gradient is NaN at one step and the loss inf at another."""
    g = jnp.linspace(0.2, 0.5, dim)

    def reset(key, params):
        del key, params
        return ()

    def step(key, state, action, t):
        del key
        grad = jnp.where(t == bad_grad_at, jnp.nan, g)
        loss = jnp.where(t == bad_loss_at, jnp.inf, jnp.dot(g, action))
        return state, grad, EnvInfo(loss=loss, regret=loss, stats=())

    return Env(reset, step)


def test_engine_reports_nonfinite_inputs_and_steps():
    ball = sets.l2_ball(2)
    env = _faulty_linear_env(2, bad_grad_at=5, bad_loss_at=7)
    params = jp.SimParams(oco.PFTALParams(epsilon=1.0, lipschitz=1.0), None)
    res = jp.sweep(oco.pftal(32, ball), env, params, 3, 32, seeds=4, checkpoints=None)
    np.testing.assert_array_equal(np.asarray(res.nonfinite_inputs), 1)
    np.testing.assert_array_equal(np.asarray(res.nonfinite_steps), 1)
    assert np.all(np.isfinite(np.asarray(res.regret)))
    # The excluded step contributes nothing: the per-step loss at t = 7 is exactly 0.
    np.testing.assert_array_equal(np.asarray(res.per_step_loss())[:, 6], 0.0)
    # A healthy run reports zeros.
    clean = jp.run(oco.pftal(32, ball), _faulty_linear_env(2, 0, 0), params, 3, 32)
    assert int(clean.nonfinite_inputs) == 0 and int(clean.nonfinite_steps) == 0
    # The warning the CLI prints names both counts, and a healthy run gives none.
    warning = res.nonfinite_warning()
    assert warning is not None and "4 mechanism inputs" in warning and "4 environment steps" in warning
    assert "(in 4 of 4 runs)" in warning
    assert clean.nonfinite_warning() is None


# --- keys ----------------------------------------------------------------------------------------------


def test_integer_keys_are_turned_into_keys():
    ball, env, env_p = _quadratic()
    learner = oco.pftal(16, ball)
    params = jp.SimParams(oco.PFTALParams(epsilon=1.0, lipschitz=2.0), env_p)
    a = jp.run(learner, env, params, 3, 16)
    b = jp.run(learner, env, params, jax.random.key(3), 16)
    np.testing.assert_array_equal(np.asarray(a.regret), np.asarray(b.regret))
    c = jp.sweep(learner, env, params, np.int64(3), 16, seeds=2)
    d = jp.sweep(learner, env, params, jax.random.key(3), 16, seeds=2)
    np.testing.assert_array_equal(np.asarray(c.regret), np.asarray(d.regret))
    for bad in ("0", 1.5, True, jax.random.split(jax.random.key(0), 2)):
        with pytest.raises(ValueError, match="key"):
            jp.run(learner, env, params, bad, 16)
