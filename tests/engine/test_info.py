"""The engine owns a learner's diagnostics: ``update -> (state, Info)``, reduced over time as the Info's class says."""

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxpriv as jp
from jaxpriv import envs, oco, sets
from jaxpriv._base import Env, EnvInfo, Learner, NoInfo, fold_info, reductions
from jaxpriv.testing import carry_bytes

T = 8
CKPTS = [1, 3, 4, 8]


class ToyInfo(NamedTuple):
    ones: jax.Array  # 1 at every step: its sum is t
    neg_t: jax.Array  # -t: its maximum is -1
    t: jax.Array  # t: its last value is t
    pair: jax.Array  # [t, 2t] (a field with a shape): its sum is [t(t+1)/2, t(t+1)]
    reductions = reductions(ones="sum", neg_t="max", t="last", pair="sum")


def _toy(returns_info: bool = True) -> Learner:
    def update(key, state, action, feedback, t):
        del key, action, feedback
        tf = jnp.asarray(t, jnp.float32)
        info = ToyInfo(jnp.int32(1), -tf, jnp.asarray(t, jnp.int32), jnp.stack([tf, 2 * tf]))
        return state + 1.0, info

    return Learner(lambda key, p: jnp.float32(0.0), lambda key, s, t: s, update, returns_info=returns_info)


def _env() -> Env:
    def step(key, state, action, t):
        del key
        return state, jnp.float32(0.0), EnvInfo(loss=jnp.float32(action), regret=jnp.float32(0.0))

    return Env(lambda key, p: jnp.float32(0.0), step)


def _expected(steps):
    t = np.asarray(steps, np.float64)
    return t, -np.ones_like(t), t, np.stack([t * (t + 1) / 2, t * (t + 1)], axis=-1)


def test_run_sweep_segments_and_rollout_report_the_info_reduced_as_declared():
    params = jp.SimParams(None, None)
    want = _expected(CKPTS)
    one = jp.run(_toy(), _env(), params, 0, T, checkpoints=CKPTS)
    whole = jp.sweep(_toy(), _env(), params, 0, T, seeds=3, checkpoints=CKPTS)
    segmented = jp.sweep(_toy(), _env(), params, 0, T, seeds=3, checkpoints=CKPTS, segment=3)
    for field, expected in zip(ToyInfo._fields, want, strict=True):
        np.testing.assert_array_equal(np.asarray(getattr(one.info, field)), expected, err_msg=field)
        for result in (whole, segmented):
            got = np.asarray(getattr(result.info, field))
            np.testing.assert_array_equal(got, np.broadcast_to(expected, got.shape), err_msg=field)
    assert int(one.nonfinite_inputs) == 0  # the Info has no `nonfinite` field
    # rollout returns the Info of every step, not reduced; folding it gives the run's last checkpoint
    out = jp.sim.rollout(_toy(), _env(), params, 0, T)
    np.testing.assert_array_equal(np.asarray(out.info.t), np.arange(1, T + 1))
    folded = jax.tree.map(lambda x: x[0], out.info)
    for t in range(1, T):
        folded = fold_info(folded, jax.tree.map(lambda x, t=t: x[t], out.info))
    for field, expected in zip(ToyInfo._fields, _expected([T]), strict=True):
        np.testing.assert_array_equal(np.asarray(getattr(folded, field)), expected[0], err_msg=field)


def test_a_record_of_seven_arguments_receives_the_learners_info():
    params = jp.SimParams(None, None)

    def record(t, action, feedback, info, learner_state, env_state, learner_info):
        return learner_info.t - t, learner_info.pair  # the step's own Info (t's last value is t)

    def six(t, action, feedback, info, learner_state, env_state):
        return t

    out = jp.sim.rollout(_toy(), _env(), params, 0, T, record=record)
    np.testing.assert_array_equal(np.asarray(out.records[0]), np.zeros(T))
    np.testing.assert_array_equal(np.asarray(out.records[1]), np.asarray(out.info.pair))
    np.testing.assert_array_equal(
        np.asarray(jp.sim.rollout(_toy(), _env(), params, 0, T, record=six).records), 1 + np.arange(T)
    )
    # the older form (update returns the state alone): the seventh argument is None
    old = jp.sim.rollout(_toy(False)._replace(update=lambda *a: _toy().update(*a)[0]), _env(), params, 0, T,
                         record=lambda t, a, f, i, ls, es, li: jnp.int32(li is None))  # fmt: skip
    np.testing.assert_array_equal(np.asarray(old.records), np.ones(T))


def test_a_learner_without_diagnostics_carries_nothing():
    """``NoInfo``: no field, so nothing is folded, carried or written; ``Result.info`` is ``NoInfo()``."""
    ogd = oco.ogd(sets.l2_ball(2))
    env = envs.quadratic_stream(sets.l2_ball(2))
    params = jp.SimParams(oco.OGDParams(), envs.QuadraticParams())
    assert jp.run(ogd, env, params, 0, T).info == NoInfo()
    plain = ogd._replace(update=lambda *a: ogd.update(*a)[0], returns_info=False)
    assert carry_bytes(ogd, env, params, T) == carry_bytes(plain, env, params, T)


def test_the_form_is_declared_and_an_info_must_say_how_it_is_reduced():
    params = jp.SimParams(None, None)
    # the older form: update -> state, no Info
    plain = _toy()._replace(update=lambda *a: _toy().update(*a)[0], returns_info=False)
    assert jp.run(plain, _env(), params, 0, T).info is None

    class Bare(NamedTuple):
        x: jax.Array

    bare = _toy()._replace(update=lambda k, s, a, f, t: (s + 1.0, Bare(jnp.float32(1.0))))
    with pytest.raises(ValueError, match="reductions"):
        jp.run(bare, _env(), params, 0, T)
    with pytest.raises(ValueError, match=r"returns_info=True.*\(state, info\)"):
        jp.run(plain._replace(returns_info=True), _env(), params, 0, T)
    with pytest.raises(ValueError, match="reduction of Info field 'x'"):
        reductions(x="mean")


class WideInfo(NamedTuple):
    even: jax.Array  # bool, 1 byte: not packed in the checkpoint rows (rows of its own)
    t: jax.Array
    reductions = reductions(even="last", t="max")


def test_an_info_with_a_field_not_4_bytes_wide_keeps_rows_of_its_own():
    def update(key, state, action, feedback, t):
        return state, WideInfo(t % 2 == 0, jnp.asarray(t, jnp.int32))

    toy = _toy()._replace(update=update)
    out = jp.run(toy, _env(), jp.SimParams(None, None), 0, T, checkpoints=CKPTS)
    np.testing.assert_array_equal(np.asarray(out.info.even), np.asarray(CKPTS) % 2 == 0)
    np.testing.assert_array_equal(np.asarray(out.info.t), CKPTS)
