"""The explicit contracts of ``jaxpriv._base``: the protocols' fields and signatures, the mechanisms' declared
description (``Mechanism.info``) and zeroed-input count (``step`` returns it: ``Mechanism.returns_count``; the
older form's ``Mechanism.nonfinite``), the one input guard and the one Kahan accumulator."""

import inspect
import typing

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxpriv import _base
from jaxpriv import mechanisms as M
from jaxpriv._base import (
    Env,
    Learner,
    Mechanism,
    PrefixSumInfo,
    mechanism_step_count,
    nonfinite_field,
    nonfinite_inputs,
)
from jaxpriv._kahan import KahanSum, kahan_add, kahan_init
from jaxpriv.mechanisms._variance import register

T, D = 12, 3

FACTORIES = {
    "binary_tree": (lambda: M.binary_tree(T, D, "laplace", "replace"), M.TreeParams(epsilon=1.0, sensitivity=2.0)),
    "honaker_tree": (lambda: M.honaker_tree(T, D, "gamma"), M.TreeParams(epsilon=1.0, sensitivity=2.0)),
    "sqrt_factorization": (lambda: M.sqrt_factorization(T, D), M.TreeParams(rho=0.5, sensitivity=2.0)),
    "blt": (lambda: M.blt(T, D, neighbouring="replace"), M.TreeParams(rho=0.5, sensitivity=2.0)),
    "window_tree": (lambda: M.window_tree(T, D, 4), M.WindowTreeParams(epsilon=1.0, sensitivity=2.0)),
}


def _stream():
    xs = np.array(jax.random.normal(jax.random.key(5), (T, D)) * 2.0, np.float32)
    xs[2, 1] = np.nan
    xs[6] = np.inf
    return xs


# ----------------------------------------------------------------------------- the protocols


def test_protocol_fields_keep_their_order_and_defaults():
    assert Mechanism._fields == ("init", "step", "check", "horizon", "nonfinite", "info", "spec", "returns_count")
    mech_defaults = {"check": None, "horizon": None, "nonfinite": None, "info": None, "spec": None}
    assert Mechanism._field_defaults == mech_defaults | {"returns_count": False}
    assert Learner._fields == ("init", "act", "update", "check", "horizon", "nonfinite", "spec", "returns_info")
    defaults = {"check": None, "horizon": None, "nonfinite": None, "spec": None, "returns_info": False}
    assert Learner._field_defaults == defaults
    assert Env._fields == ("reset", "step", "comparator", "check", "relative", "horizon", "exact", "spec")
    assert Env._field_defaults == {
        "comparator": None,
        "check": None,
        "relative": False,
        "horizon": None,
        "exact": False,
        "spec": None,
    }
    # positional construction, as every factory and test writes it
    mech = Mechanism(len, len, None, 8)
    assert (mech.horizon, mech.nonfinite, mech.info, mech.returns_count) == (8, None, None, False)


def test_the_fields_are_typed_by_documented_protocols():
    hints = {cls: typing.get_type_hints(cls, vars(_base)) for cls in (Mechanism, Learner, Env)}
    assert hints[Mechanism]["init"] is _base.InitFn
    assert hints[Mechanism]["step"] is _base.MechanismStepFn
    assert hints[Mechanism]["check"] == _base.CheckFn | None
    assert hints[Mechanism]["nonfinite"] == _base.NonfiniteFn | None
    assert hints[Mechanism]["info"] == PrefixSumInfo | None
    assert hints[Mechanism]["spec"] == hints[Learner]["spec"] == hints[Env]["spec"] == _base.Spec | None
    assert (hints[Learner]["act"], hints[Learner]["update"]) == (_base.ActFn, _base.UpdateFn)
    assert (hints[Env]["reset"], hints[Env]["step"]) == (_base.ResetFn, _base.EnvStepFn)
    assert hints[Env]["comparator"] == _base.ComparatorFn | None
    protocols = (_base.InitFn, _base.MechanismStepFn, _base.ActFn, _base.UpdateFn, _base.ResetFn, _base.EnvStepFn)
    for proto in (*protocols, _base.ComparatorFn, _base.CheckFn, _base.NonfiniteFn):
        assert issubclass(proto, typing.Protocol) and proto.__doc__ and proto.__call__.__doc__


@pytest.mark.parametrize("name", FACTORIES)
def test_factories_functions_take_the_protocol_arguments(name):
    mech = FACTORIES[name][0]()
    inspect.signature(mech.init).bind("key", "params")
    inspect.signature(mech.step).bind("key", "state", "x", "t")
    inspect.signature(mech.check).bind("params")
    assert mech.returns_count and mech.nonfinite is None


# ----------------------------------------------------------------------------- Mechanism.info


@pytest.mark.parametrize("name", FACTORIES)
def test_every_factory_declares_its_description_as_a_field(name):
    mech = FACTORIES[name][0]()
    assert isinstance(mech.info, PrefixSumInfo)
    assert M.describe(mech) is mech.info
    assert (mech.info.name, mech.info.horizon, mech.info.dim) == (name, T, D)


@pytest.mark.parametrize("name", FACTORIES)
def test_a_mechanism_with_a_wrapped_step_keeps_its_description(name):
    build, params = FACTORIES[name]
    mech = build()
    calls = []

    def wrapper(*args):
        calls.append(1)
        return mech.step(*args)

    wrapped = mech._replace(step=wrapper)
    assert M.describe(wrapped) is M.describe(mech)
    steps = np.arange(1, T + 1)
    np.testing.assert_array_equal(M.release_variance(wrapped, params, steps), M.release_variance(mech, params, steps))
    np.testing.assert_array_equal(M.calibrated_sensitivity(wrapped, params), M.calibrated_sensitivity(mech, params))
    xs = _stream()
    with pytest.warns(RuntimeWarning, match="2 input"):
        got = M.prefix_sums(wrapped, params, xs, 4, with_nonfinite=True)
    with pytest.warns(RuntimeWarning, match="2 input"):
        want = M.prefix_sums(mech, params, xs, 4, with_nonfinite=True)
    assert calls  # the wrapper ran (traced once)
    np.testing.assert_array_equal(np.asarray(got.releases), np.asarray(want.releases))
    assert got.nonfinite_inputs == want.nonfinite_inputs == 2
    with pytest.raises(ValueError, match=rf"xs must have shape \[T, {D}\]"):  # the dim check reads the description
        M.prefix_sums(wrapped, params, np.ones((T, D + 1)), 0)


def test_describe_refuses_a_mechanism_without_a_description_and_register_attaches_one():
    tree = M.binary_tree(T, D)
    bare = Mechanism(tree.init, lambda *a: tree.step(*a), tree.check, tree.horizon, returns_count=True)
    with pytest.raises(ValueError, match=r"prefix-sum Mechanism.*without a PrefixSumInfo"):
        M.describe(bare)
    with pytest.raises(ValueError, match="prefix-sum Mechanism"):
        M.describe(object())
    described = register(bare, M.describe(tree))
    assert M.describe(described) is tree.info and described[:4] == bare[:4]
    with pytest.raises(ValueError, match="prefix-sum Mechanism"):
        M.describe(bare)  # register returns a new mechanism and records nothing anywhere


# ----------------------------------------------------------------------------- the zeroed-input count


@pytest.mark.parametrize("name", FACTORIES)
def test_every_mechanism_returns_its_zeroed_input_count_and_keeps_no_counter(name):
    build, params = FACTORIES[name]
    mech = build()
    assert mech.returns_count and mech.nonfinite is None
    state = mech.init(jax.random.key(0), params)
    assert "nonfinite" not in type(state)._fields
    counts = []
    for t, x in enumerate(_stream()[:8], start=1):
        state, _, bad = mech.step(jax.random.key(t), state, x, jnp.int32(t))
        assert bad.dtype == jnp.int32 and bad.shape == ()
        counts.append(int(bad))
    assert counts == [0, 0, 1, 0, 0, 0, 1, 0]  # the NaN at step 3, the inf row at step 7
    assert int(nonfinite_inputs(mech, state)) == 0  # nothing declared on the state


def _older_form(mech):
    """A user's mechanism in the older form (deprecated): ``step -> (state, release)``, a counter in its state."""

    def init(key, params):
        return mech.init(key, params), jnp.zeros((), jnp.int32)

    def step(key, state, x, t):
        inner, release, bad = mech.step(key, state[0], x, t)
        return (inner, state[1] + bad), release

    return Mechanism(init, step, mech.check, mech.horizon, nonfinite=lambda s: s[1], info=mech.info)


def test_mechanism_step_count_steps_either_form_to_the_same_numbers():
    build, params = FACTORIES["binary_tree"]
    mech = build()
    old = _older_form(mech)
    new_state, old_state = mech.init(jax.random.key(0), params), old.init(jax.random.key(0), params)
    for t, x in enumerate(_stream()[:8], start=1):
        key, clock = jax.random.key(t), jnp.int32(t)
        new_state, want, bad = mechanism_step_count(mech, key, new_state, x, clock)
        old_state, got, old_bad = mechanism_step_count(old, key, old_state, x, clock)
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
        assert int(old_bad) == int(bad) and old_bad.dtype == bad.dtype == jnp.int32
    assert int(nonfinite_inputs(old, old_state)) == 2
    # the drivers count the older form too: prefix_sums reports the count the state declares
    with pytest.warns(RuntimeWarning, match="2 input"):
        got = M.prefix_sums(old, params, _stream(), 4, with_nonfinite=True)
    with pytest.warns(RuntimeWarning, match="2 input"):
        want = M.prefix_sums(mech, params, _stream(), 4, with_nonfinite=True)
    np.testing.assert_array_equal(np.asarray(got.releases), np.asarray(want.releases))
    assert got.nonfinite_inputs == want.nonfinite_inputs == 2
    # undeclared (no nonfinite function): 0 counted, the same releases
    undeclared = old._replace(nonfinite=None)
    assert M.prefix_sums(undeclared, params, _stream(), 4, with_nonfinite=True).nonfinite_inputs == 0


def test_nonfinite_inputs_reads_the_declaration_only_and_an_undeclared_component_reports_zero():
    tree = _older_form(M.binary_tree(T, D))
    state = tree.init(jax.random.key(0), M.TreeParams(epsilon=1.0))
    state = (state[0], jnp.int32(3))
    undeclared = tree._replace(nonfinite=None)
    assert int(nonfinite_inputs(undeclared, state)) == 0  # no search of the state
    assert int(nonfinite_field(type("S", (), {"nonfinite": 4})())) == 4  # the older form's field reader
    # a learner whose state holds its mechanism's state under another name, and its own counter
    learner_state = {"tree": state, "own": jnp.int32(2)}
    learner = Learner(None, None, None, nonfinite=lambda s: s["own"] + tree.nonfinite(s["tree"]))
    assert int(nonfinite_inputs(learner, learner_state)) == 5
    # batched states (one row per seed): the declared count is summed
    batched = jax.vmap(lambda n: (state[0], n))(jnp.arange(4, dtype=jnp.int32))
    assert int(nonfinite_inputs(tree, batched)) == 6
    per_seed = jax.vmap(lambda s: nonfinite_inputs(tree, s))(batched)
    np.testing.assert_array_equal(np.asarray(per_seed), [0, 1, 2, 3])


# ----------------------------------------------------------------------------- the input guard


@pytest.mark.parametrize("norm", ["l1", "l2"])
def test_guard_input_zeroes_a_nonfinite_input_then_clips_in_its_norm(norm):
    bound = jnp.float32(2.0)
    clip = M.clip_l1 if norm == "l1" else M.clip_l2
    for x in ([3.0, -4.0, 0.5], [0.1, 0.2, -0.3], [1e30, 1e30, 1.0], [1.0, jnp.nan, 2.0], [jnp.inf, 0.0, 0.0]):
        got, bad = M.guard_input(jnp.asarray(x), bound, norm, jnp.float32)
        finite = bool(np.all(np.isfinite(x)))
        want = clip(jnp.asarray(x, jnp.float32), bound) if finite else jnp.zeros(3, jnp.float32)
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
        assert got.dtype == jnp.float32 and bad.dtype == jnp.int32 and int(bad) == (not finite)
    assert M.input_norm("laplace") == "l1" and M.input_norm("gamma") == M.input_norm("gaussian") == "l2"
    with pytest.raises(ValueError, match="norm must be one of"):
        M.guard_input(jnp.ones(2), bound, "linf", jnp.float32)


# ----------------------------------------------------------------------------- the Kahan accumulator


def _by_hand(xs):
    def body(carry, x):
        total, comp = carry
        y = x - comp
        s = total + y
        return (s, (s - total) - y), None

    zero = jnp.zeros_like(xs[0])
    return jax.lax.scan(body, (zero, zero), xs)[0]


def test_kahan_add_is_the_hand_written_compensated_sum_bit_for_bit():
    xs = jax.random.uniform(jax.random.key(1), (4096, 5), jnp.float32) * 10.0 + 0.1
    got = jax.jit(lambda xs: jax.lax.scan(lambda acc, x: (kahan_add(acc, x), None), kahan_init(xs[0]), xs)[0])(xs)
    want = jax.jit(_by_hand)(xs)
    assert isinstance(got, KahanSum)
    np.testing.assert_array_equal(np.asarray(got.total), np.asarray(want[0]))
    np.testing.assert_array_equal(np.asarray(got.compensation), np.asarray(want[1]))
    exact = np.sum(np.asarray(xs, np.float64), 0)
    naive = np.cumsum(np.asarray(xs), 0, dtype=np.float32)[-1]  # sequential float32 sum
    assert np.max(np.abs(np.asarray(got.total) - exact)) < np.max(np.abs(naive - exact))


def test_kahan_add_on_pytrees_and_plain_pairs():
    tree = {"a": jnp.zeros(2), "b": (jnp.zeros(()), jnp.zeros(3))}
    acc = kahan_init(tree)
    assert jax.tree.structure(acc.total) == jax.tree.structure(tree)
    for i in range(5):
        acc = kahan_add(acc, jax.tree.map(lambda z, i=i: z + 0.1 * (i + 1), tree))
    np.testing.assert_allclose(np.asarray(acc.total["b"][1]), 1.5, rtol=1e-7)
    plain = kahan_add((jnp.float32(1.0), jnp.float32(0.0)), jnp.float32(2.0))  # any (total, compensation) pair
    assert isinstance(plain, KahanSum) and float(plain.total) == 3.0 and float(plain.compensation) == 0.0
