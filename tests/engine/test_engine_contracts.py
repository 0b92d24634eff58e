"""The engine's side of the contracts: comparators return ``(best, gap)``, named checkpoint rows, one Kahan
accumulator, declared non-finite counts, and a public compile counter."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxpriv as jp
from jaxpriv import _kahan, envs, oco, sets, sim
from jaxpriv._base import Env, EnvInfo
from jaxpriv.sim import _scan

BALL = sets.l2_ball(2)
QP = envs.QuadraticParams(1.0, jnp.array([0.4, -0.3]), 0.3)
OGD_P = oco.OGDParams(1.0, 2.0)
T = 64


def _exact_envs():
    return {
        "quadratic iid": (envs.quadratic_stream(BALL), QP),
        "quadratic drift": (envs.quadratic_stream(BALL, z_dist="drift"), QP),
        "quadratic alternating": (envs.quadratic_stream(BALL, z_dist="alternating"), QP),
        "adaptive": (envs.adaptive_quadratic(BALL), envs.AdaptiveParams(1.0, jnp.array([0.4, -0.3]))),
        "bandit feedback": (envs.bandit_feedback(envs.quadratic_stream(BALL)), QP),
    }


def _stats_sum(env, params, horizon=8):
    """The summed ``EnvInfo.stats`` of ``horizon`` steps at the origin (what the engine hands the comparator)."""
    state = env.reset(jax.random.key(0), params)
    total = None
    for t in range(1, horizon + 1):
        state, _, info = env.step(jax.random.key(t), state, jnp.zeros(BALL.dim), jnp.int32(t))
        total = info.stats if total is None else jax.tree.map(jnp.add, total, info.stats)
    return state, total


# --- 1. every comparator returns (best, gap) ------------------------------------------------------------------


@pytest.mark.parametrize("name", list(_exact_envs()))
def test_closed_form_comparators_return_a_zero_gap_and_their_envs_say_exact(name):
    env, params = _exact_envs()[name]
    state, stats = _stats_sum(env, params)
    best, gap = env.comparator(state, stats, jnp.int32(8))
    assert best.shape == gap.shape == () and gap.dtype == jnp.float32 and float(gap) == 0.0
    assert env.exact is True
    res = jp.run(oco.ogd(BALL), env, jp.SimParams(OGD_P, params), 0, 16, [4, 16])
    assert res.gap is None  # an exact comparator's gaps are not reported


def test_experts_comparator_returns_the_best_expert_and_a_zero_gap():
    env = envs.experts_stream(3)
    best, gap = env.comparator(None, jnp.array([5.0, 2.0, 7.0]), jnp.int32(9))
    assert float(best) == 2.0 and float(gap) == 0.0 and env.exact


def test_the_numerical_comparator_returns_its_certified_gap_and_its_env_is_not_exact():
    env = envs.classification_stream(BALL, 32, "hinge", solver_steps=50)
    state = env.reset(jax.random.key(0), envs.ClassificationParams())
    best, gap = env.comparator(state, (), jnp.int32(32))
    assert best.shape == gap.shape == () and float(gap) >= 0.0
    assert not env.exact


def _with_comparator(base: Env, comparator, exact: bool = False) -> Env:
    return base._replace(comparator=comparator, exact=exact)


def test_a_comparator_not_said_exact_has_its_gaps_reported_as_returned():
    base = envs.quadratic_stream(BALL)

    def comparator(state, stats, t):  # the closed form, with a made-up certified gap of t / 4
        best, _ = base.comparator(state, stats, t)
        return best, jnp.asarray(t, jnp.float32) * 0.25

    params, key, ckpts = jp.SimParams(OGD_P, QP), jax.random.key(3), [5, 20, T]
    res = jp.run(oco.ogd(BALL), _with_comparator(base, comparator), params, key, T, ckpts)
    ref = jp.run(oco.ogd(BALL), base, params, key, T, ckpts)
    np.testing.assert_array_equal(np.asarray(res.gap), np.asarray(ckpts, np.float32) / 4)
    for field in ("regret", "loss", "best"):  # the gap changes nothing else
        np.testing.assert_array_equal(np.asarray(getattr(res, field)), np.asarray(getattr(ref, field)))
    # The same closed form wrapped by exact_comparator, its env said exact: no gap reported.
    exact = envs.exact_comparator(lambda state, stats, t: base.comparator(state, stats, t)[0])
    again = jp.run(oco.ogd(BALL), _with_comparator(base, exact, exact=True), params, key, T, ckpts)
    assert again.gap is None
    np.testing.assert_array_equal(np.asarray(again.regret), np.asarray(ref.regret))


def test_the_engine_no_longer_inspects_what_a_comparator_returns():
    assert not hasattr(sim, "_kahan_add")
    assert _scan._reports_gap(envs.quadratic_stream(BALL)) is False
    assert _scan._reports_gap(envs.classification_stream(BALL, 8)) is True
    assert _scan._reports_gap(envs.bernoulli_bandit(3)) is False


# --- 2. the checkpoint rows are named ---------------------------------------------------------------------------


def test_the_carry_records_named_checkpoint_rows_that_are_the_result():
    env, learner, ckpts = envs.quadratic_stream(BALL), oco.ogd(BALL), (3, 10, T)
    params = sim.canonical_params(jp.SimParams(OGD_P, QP))
    key = jax.random.key(5)
    carry = _scan._init_carry(learner, env, ckpts, key, params)
    assert carry.rows.shape == (len(ckpts) + 1, len(sim.CheckpointRows._fields))  # one row per checkpoint + scratch
    assert carry.rows.dtype == jnp.float32
    carry = jax.jit(_scan._advance, static_argnums=(0, 1, 2, 3))(learner, env, ckpts, T, carry, jnp.int32(0))
    res = jp.run(learner, env, params, key, T, ckpts)
    rows = sim.CheckpointRows.of(carry.rows)
    assert all(x.shape == (3,) for x in rows)
    for field in sim.CheckpointRows._fields[:3]:
        np.testing.assert_array_equal(np.asarray(getattr(rows, field)), np.asarray(getattr(res, field)))
    np.testing.assert_array_equal(np.asarray(res.best), np.asarray(res.loss - res.regret))


# --- 3. one Kahan accumulator ----------------------------------------------------------------------------------


def _fixed_loss_env(values: np.ndarray) -> Env:
    """Losses ``values[t - 1]`` whatever the action (no comparator: regret = the same running sum)."""
    table = jnp.asarray(values, jnp.float32)

    def reset(key, params):
        del key, params
        return ()

    def step(key, state, action, t):
        del key
        loss = table[t - 1]
        return state, jnp.zeros_like(action), EnvInfo(loss, loss)

    return Env(reset, step)


def test_the_engine_sums_with_the_compensated_sum_of_jaxpriv_kahan_bit_for_bit():
    horizon = 4096
    values = (np.float32(0.1) * (1 + np.arange(horizon, dtype=np.float32) * np.float32(1e-3))).astype(np.float32)
    res = jp.run(oco.ogd(BALL), _fixed_loss_env(values), jp.SimParams(OGD_P, None), 0, horizon)
    # The same formula by hand in float32: y = x - c; s' = s + y; c' = (s' - s) - y.
    s = c = np.float32(0.0)
    want = np.empty(horizon, np.float32)
    for i, x in enumerate(values):
        y = np.float32(x - c)
        s_new = np.float32(s + y)
        c = np.float32(np.float32(s_new - s) - y)
        s = want[i] = s_new
    np.testing.assert_array_equal(np.asarray(res.loss), want)
    np.testing.assert_array_equal(np.asarray(res.regret), want)
    # ... which is what _kahan.kahan_add computes, and not the naive float32 running sum.
    acc = _kahan.kahan_init(jnp.zeros((), jnp.float32))
    for x in values[:50]:
        acc = _kahan.kahan_add(acc, jnp.float32(x))
    assert np.float32(acc.total) == want[49]
    assert not np.array_equal(np.cumsum(values, dtype=np.float32), want)


# --- 4. zeroed inputs are counted through the learner's declaration -------------------------------------------------


def test_nonfinite_inputs_use_the_learners_declaration():
    env, params = envs.quadratic_stream(BALL), jp.SimParams(OGD_P, QP)
    ogd = oco.ogd(BALL)
    # the older form, still accepted (deprecated): update returns the state alone and a function counts from it
    declared_seven = ogd._replace(
        update=lambda *a: ogd.update(*a)[0], returns_info=False, nonfinite=lambda state: jnp.int32(7)
    )
    assert int(jp.run(declared_seven, env, params, 0, 8).nonfinite_inputs) == 7
    res = jp.sweep(declared_seven, env, params, 0, 8, seeds=3, segment=3)  # the driver too
    np.testing.assert_array_equal(np.asarray(res.nonfinite_inputs), [7, 7, 7])


def test_nonfinite_inputs_are_the_declared_count_and_zero_for_an_undeclared_learner():
    base = envs.quadratic_stream(BALL)

    def step(key, state, action, t):  # a NaN gradient every 5th step; the loss stays finite
        state, grad, info = base.step(key, state, action, t)
        return state, jnp.where(t % 5 == 0, jnp.nan, grad), info

    env = base._replace(step=step)  # keeps the spec (the centre's rank, the params class)
    learner = oco.pftal(40, BALL)
    params = jp.SimParams(oco.PFTALParams(epsilon=1.0, lipschitz=2.0), QP)
    res = jp.run(learner, env, params, 0, 40)
    assert int(res.nonfinite_inputs) == 40 // 5 and int(res.nonfinite_steps) == 0
    # A learner that reports neither an Info nor a count: the state is not searched (PFTAL's update returns
    # (state, Info) since issue 46; this copy drops the Info and says so).
    bare = learner._replace(nonfinite=None, update=lambda *a: learner.update(*a)[0], returns_info=False)
    undeclared = jp.run(bare, env, params, 0, 40)
    assert int(undeclared.nonfinite_inputs) == 0
    np.testing.assert_array_equal(np.asarray(undeclared.regret), np.asarray(res.regret))


# --- 5. compile counts through a public function ---------------------------------------------------------------


def _params(h):
    return jp.SimParams(oco.OGDParams(jnp.asarray(h, jnp.float32), 2.0), QP)


def test_compile_count_sees_new_shapes_and_not_new_values():
    env, learner = envs.quadratic_stream(BALL), oco.ogd(BALL)
    jp.sweep(learner, env, _params([1.0, 2.0]), 0, 24, seeds=2)
    before, sweeps = sim.compile_count(), sim.compile_count("sweep")
    jp.sweep(learner, env, _params([3.0, 4.0]), 1, 24, seeds=2)  # new values and key, same shapes
    assert sim.compile_count() == before
    jp.sweep(learner, env, _params([3.0, 4.0, 5.0]), 1, 24, seeds=2)  # a longer grid: a new shape
    assert sim.compile_count("sweep") == sweeps + 1 and sim.compile_count() == before + 1
    with pytest.raises(ValueError):  # refused before compiling
        jp.sweep(learner, env, _params([1.0, 2.0]), 0, 24, seeds=0)
    assert sim.compile_count() == before + 1


def test_compile_count_by_kind_and_its_errors():
    env, learner = envs.quadratic_stream(BALL), oco.ogd(BALL)
    runs, driver = sim.compile_count("run"), sim.compile_count("driver")
    jp.run(learner, env, _params(1.0), 0, 17)
    jp.run(learner, env, _params(2.0), 1, 17)
    assert sim.compile_count("run") == runs + 1
    jp.sweep(learner, env, _params([1.0, 2.0]), 0, 17, seeds=2, segment=5)  # start, 2 segment lengths, outputs
    assert sim.compile_count("driver") == driver + 4
    assert set(sim.COMPILED_KINDS) == {"run", "sweep", "driver", "tune", "rollout"}
    assert sim.compile_count() == sum(sim.compile_count(k) for k in sim.COMPILED_KINDS)
    with pytest.raises(ValueError, match="kind must be one of"):
        sim.compile_count("sweeps")
    with pytest.raises(ValueError, match="kind must be one of"):
        sim.counts_compiles("jit")
