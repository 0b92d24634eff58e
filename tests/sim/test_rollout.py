"""``jaxpriv.sim.rollout`` and ``map_seeds``: one seed through the engine's own keys and transition.

A rollout with key ``k`` is the run of ``jaxpriv.run`` with key ``k`` (and of ``sweep``'s seed ``i``
with ``k = split(key, seeds)[i]``): its per-step losses and regrets, added with the engine's Kahan
compensation, are ``run``'s cumulative ones bit for bit, and its final states are the engine's
carry's (the learner's up to float32 rounding). ``jit`` and ``vmap`` (``map_seeds``, in one batch or
in chunks) leave it as it is.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxpriv as jp
from jaxpriv import bandits, envs, oco, sets, sim
from jaxpriv._base import engine_jit
from jaxpriv._kahan import kahan_add, kahan_init
from jaxpriv.sim import _scan

T = 48
BALL = sets.l2_ball(3)
OCO = (
    oco.pftal(T, BALL),
    envs.quadratic_stream(BALL),
    jp.SimParams(
        oco.PFTALParams(epsilon=1.0, lipschitz=2.0), envs.QuadraticParams(1.0, jnp.array([0.3, 0.2, -0.1]), 0.3)
    ),
)
BANDIT = (
    bandits.ucb(4, T),
    envs.bernoulli_bandit(4),
    jp.SimParams(bandits.UCBParams(), envs.BernoulliParams(jnp.array([0.2, 0.5, 0.4, 0.7]))),
)
CASES = {"oco": OCO, "bandit": BANDIT}


def _kahan_cumsum(x: jax.Array) -> np.ndarray:
    """The engine's running sum (float32, Kahan-compensated) of per-step values, at every step."""

    def body(acc, v):
        acc = tuple(kahan_add(acc, jnp.asarray(v, jnp.float32)))
        return acc, acc[0]

    _, out = jax.lax.scan(body, tuple(kahan_init(jnp.zeros((), jnp.float32))), x)
    return np.asarray(out)


def _bits(tree):
    return [np.asarray(jax.random.key_data(x) if jnp.issubdtype(x.dtype, jax.dtypes.prng_key) else x)
            for x in jax.tree.leaves(tree)]  # fmt: skip


def _assert_same(a, b):
    assert jax.tree.structure(a) == jax.tree.structure(b)
    for x, y in zip(_bits(a), _bits(b), strict=True):
        np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_rollout_is_the_run_with_the_same_key(case):
    learner, env, params = CASES[case]
    key = jax.random.key(3)
    r = jp.run(learner, env, params, key, T, checkpoints=None)
    out = sim.rollout(learner, env, params, key, T)
    assert out.records.loss.shape == (T,) and out.records.action.shape[0] == T
    np.testing.assert_array_equal(_kahan_cumsum(out.records.loss), np.asarray(r.loss))
    if env.comparator is None:  # a bandit: the regret is the sum of the per-step pseudo-regrets
        np.testing.assert_array_equal(_kahan_cumsum(out.records.regret), np.asarray(r.regret))
    # The final states: those of the engine's carry after the same steps.
    canon = sim.canonical_params(params)

    @engine_jit  # the engine's compiler options, as rollout's and run's
    def engine(key):
        carry = _scan._init_carry(learner, env, (T,), key, canon)
        return _scan._advance(learner, env, (T,), T, carry, jnp.int32(0))

    carry = engine(key)
    _assert_same(out.env_state, carry.env_state)
    # The learner's state: the same up to float32 rounding (XLA compiles two programs; its sums may
    # round one ulp apart where the actions and losses above agree bit for bit).
    for x, y in zip(_bits(out.learner_state), _bits(carry.agent), strict=True):
        np.testing.assert_allclose(x, y, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("case", sorted(CASES))
def test_rollouts_over_seeds_are_the_sweep(case):
    learner, env, params = CASES[case]
    key, seeds = jax.random.key(11), 4  # the 4 seeds of the test below: its batched rollout, compiled once
    swept = jp.sweep(learner, env, params, key, T, seeds=seeds, checkpoints=None)
    keys = jax.random.split(key, seeds)  # seed i of sweep: split(key, seeds)[i]
    outs = sim.map_seeds(lambda k: sim.rollout(learner, env, params, k, T), keys)
    assert outs.records.loss.shape == (seeds, T)
    loss = np.stack([_kahan_cumsum(x) for x in outs.records.loss])
    np.testing.assert_allclose(loss, np.asarray(swept.loss), rtol=1e-6, atol=1e-5)
    if case == "bandit":  # integer arms: the same plays exactly, hence the same pseudo-regret
        regret = np.stack([_kahan_cumsum(x) for x in outs.records.regret])
        np.testing.assert_array_equal(regret, np.asarray(swept.regret))


@pytest.mark.parametrize("case", sorted(CASES))
def test_jit_vmap_and_chunks_leave_a_rollout_as_it_is(case):
    learner, env, params = CASES[case]
    keys = jax.random.split(jax.random.key(5), 4)
    alone = [sim.rollout(learner, env, params, k, T) for k in keys]
    jitted = jax.jit(lambda k: sim.rollout(learner, env, params, k, T))(keys[1])
    _assert_same(jitted, alone[1])
    batched = sim.map_seeds(lambda k: sim.rollout(learner, env, params, k, T), keys)
    chunked = sim.map_seeds(lambda k: sim.rollout(learner, env, params, k, T), keys, chunk=2)
    for i, one in enumerate(alone):
        for many in (batched, chunked):
            got = jax.tree.map(lambda x, i=i: x[i], many)
            if case == "bandit":
                _assert_same(got, one)  # integer plays and counts: no rounding to differ by
            else:
                np.testing.assert_array_equal(
                    np.asarray(got.records.action).shape, np.asarray(one.records.action).shape
                )
                for x, y in zip(_bits(got), _bits(one), strict=True):
                    np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-6)


def test_the_record_hook_and_map_seeds_over_a_grid():
    learner, env, params = OCO

    def record(t, action, feedback, info, learner_state, env_state):
        return t, jnp.linalg.norm(action), info.loss

    out = sim.rollout(learner, env, params, 0, T, record=record)
    t, norm, loss = out.records
    np.testing.assert_array_equal(np.asarray(t), np.arange(1, T + 1))
    assert norm.shape == (T,) and np.all(np.asarray(norm) <= 1.0 + 1e-6)
    np.testing.assert_array_equal(np.asarray(loss), np.asarray(sim.rollout(learner, env, params, 0, T).records.loss))
    # A grid through map_seeds: fn(key, one grid point's params).
    grid = jp.SimParams(params.learner._replace(epsilon=jnp.array([0.5, 5.0])), envs.QuadraticParams())
    axes, size = sim.grid_axes(grid, allow_grid=True)
    keys = jax.random.split(jax.random.key(0), 3)
    seen = sim.map_seeds(lambda k, p: p.learner.epsilon + 0.0 * jax.random.uniform(k), keys, grid, axes=axes)
    assert size == 2 and seen.shape == (2, 3)
    np.testing.assert_array_equal(np.asarray(seen), [[0.5] * 3, [5.0] * 3])


def test_rollout_runs_the_engines_eager_checks():
    learner = oco.ogd(sets.l2_ball(3))
    env = envs.quadratic_stream(sets.l2_ball(2))
    params = jp.SimParams(oco.OGDParams(), envs.QuadraticParams())
    with pytest.raises(ValueError, match="shape"):
        sim.rollout(learner, env, params, 0, T)
    with pytest.raises(ValueError, match="horizon"):
        sim.rollout(*OCO[:2], OCO[2], 0, 0)
    with pytest.raises(ValueError, match="record"):
        sim.rollout(*OCO, 0, T, record="loss")
    with pytest.raises(ValueError, match="SimParams"):
        sim.rollout(*OCO[:2], OCO[2].learner, 0, T)


def test_a_rollout_compiles_once_per_signature():
    learner, env, params = BANDIT
    sim.rollout(learner, env, params, 0, T)
    before = sim.compile_count("rollout")
    sim.rollout(learner, env, params, 1, T)
    assert sim.compile_count("rollout") == before
