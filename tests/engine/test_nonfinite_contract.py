"""Every learner of jaxpriv.oco and jaxpriv.bandits reports the inputs it zeroed in its Info (issue 46).

``update -> (state, info)``: the step's ``info.nonfinite`` counts the inputs the learner or its mechanism
replaced by zero (a mechanism's ``step`` returns its count: ``Mechanism.returns_count``), and no state keeps a
counter, neither a learner's nor the mechanism's nested in it (``_fields_named_nonfinite``). The count must be
the exact number of bad inputs fed, stepped by hand with NaN / inf feedback and through ``jaxpriv.run``; the
engine never searches a state (a learner built by hand that declares neither an Info nor a count reports 0,
and so does a user's mechanism in the older form that declares no count).
"""

import inspect
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxpriv as jp
from jaxpriv import bandits, mechanisms, oco, sets
from jaxpriv._base import Env, EnvInfo, Learner, Mechanism, NoInfo, nonfinite_inputs, update_with_info
from jaxpriv.envs.linear_bandits import ContextualFeedback
from jaxpriv.envs.regression import RegressionFeedback

T = 12  # the learners' horizon; the hand-stepped and simulated streams are this long
D = 2  # the dimension of the full-information and bandit-feedback learners
K = 3  # arms / actions of the bandit policies
BAD_STEPS = (2, 5, 9)  # NaN at 2 and 9, +inf at 5
HUGE_STEP = 7  # private bandit FTAL: a finite loss whose one-point estimate overflows (the tree zeroes it)
ACTIONS = np.eye(K, D, dtype=np.float32) + np.float32(0.1)


def _bad_value(t: Any, value: Any) -> Any:
    """``value`` with NaN at steps 2 and 9 and +inf at step 5 (``t`` a Python or a traced int)."""
    value = jnp.asarray(value, jnp.float32)
    value = jnp.where(t == BAD_STEPS[1], jnp.inf, value)
    return jnp.where((t == BAD_STEPS[0]) | (t == BAD_STEPS[2]), jnp.nan, value)


def _gradient(t, action, dim):
    """A linear loss's gradient, NaN / inf in one entry at the bad steps."""
    del action
    g = jnp.linspace(0.2, 0.5, dim, dtype=jnp.float32)
    return g.at[0].set(_bad_value(t, g[0]))


def _loss(t, action, dim, huge=False):
    """A loss value at the played point, NaN / inf at the bad steps (and 3e38 at ``HUGE_STEP`` when ``huge``)."""
    del dim
    value = 0.5 + 0.1 * jnp.sum(jnp.asarray(action, jnp.float32))
    if huge:
        value = jnp.where(t == HUGE_STEP, jnp.float32(3e38), value)
    return _bad_value(t, value)


def _reward(t, action, dim):
    """A reward in [0, 1], NaN / inf at the bad steps."""
    del dim
    return _bad_value(t, 0.25 + 0.25 * (jnp.asarray(action) == 0))


def _contextual(t, action, dim):
    """OFUL's feedback: the played vector, a reward NaN / inf at the bad steps, the same action set next."""
    del dim
    actions = jnp.asarray(ACTIONS)
    vec = actions[jnp.clip(jnp.asarray(action, jnp.int32), 0, K - 1)]
    return ContextualFeedback(_bad_value(t, 0.3 * jnp.sum(vec)), vec, actions)


class Case(NamedTuple):
    build: Callable[[], Learner]
    params: Any
    feedback: Callable[..., Any]  # (t, action, dim) -> feedback
    dim: int = D
    zeroes: bool = True  # whether the learner replaces non-finite feedback by zero (and counts it)
    expected: int | None = None  # the exact count after the T hand-made steps, when known


_BALL = sets.l2_ball(D)
_SIMPLEX = sets.simplex(D)
_N_BAD = len(BAD_STEPS)


def _fields_named_nonfinite(state: Any) -> list[str]:
    """The paths of every field named ``nonfinite`` in a state, at any depth (none is left: issue 46)."""
    paths = []
    for path, _ in jax.tree_util.tree_flatten_with_path(state)[0]:
        if any(isinstance(k, jax.tree_util.GetAttrKey) and k.name == "nonfinite" for k in path):
            paths.append(jax.tree_util.keystr(path))
    return paths


def _undeclared(mechanism: Mechanism) -> Mechanism:
    """A user's mechanism in the older form (``step -> (state, release)``) that declares no count: it counts 0."""
    return mechanism._replace(step=lambda *a: mechanism.step(*a)[:2], returns_count=False)


def _older_form(mechanism: Mechanism) -> Mechanism:
    """A user's mechanism in the older form (deprecated): ``step -> (state, release)``, its counter in its state."""

    def init(key, params):
        return mechanism.init(key, params), jnp.zeros((), jnp.int32)

    def step(key, state, x, t):
        inner, release, bad = mechanism.step(key, state[0], x, t)
        return (inner, state[1] + bad), release

    return mechanism._replace(init=init, step=step, nonfinite=lambda state: state[1], returns_count=False)


def _example(t, action, dim):
    """PQFTL's feedback: an example ``(x, y)``, ``y`` NaN / inf at the bad steps."""
    x = jnp.linspace(0.3, 0.6, dim, dtype=jnp.float32)
    return RegressionFeedback(x, _bad_value(t, 0.2 + 0.1 * jnp.sum(jnp.asarray(action, jnp.float32))))


def _costs(t, action, dim):
    """DNPR's feedback: a cost vector in [0, 1]^p, one entry NaN / inf at the bad steps."""
    del action
    c = jnp.linspace(0.1, 0.9, dim, dtype=jnp.float32)
    return c.at[0].set(_bad_value(t, c[0]))


CASES: dict[str, Case] = {
    # jaxpriv.oco, full information (feedback: the gradient)
    "ogd": Case(lambda: oco.ogd(_BALL), oco.OGDParams(), _gradient, zeroes=False),
    "ftal": Case(lambda: oco.ftal(_BALL, T), oco.FTALParams(), _gradient, zeroes=False),
    "online_frank_wolfe": Case(lambda: oco.online_frank_wolfe(_BALL, T), oco.OFWParams(), _gradient, zeroes=False),
    "garber_hazan": Case(lambda: oco.garber_hazan(T, _SIMPLEX), oco.GarberHazanParams(), _gradient, zeroes=False),
    "mi_ogd": Case(lambda: oco.mi_ogd(_BALL, T), oco.MIOGDParams(1.0, 1.0), _gradient, expected=_N_BAD),
    "pftal": Case(lambda: oco.pftal(T, _BALL), oco.PFTALParams(epsilon=1.0), _gradient, expected=_N_BAD),
    "pftal[blt]": Case(
        lambda: oco.pftal(T, _BALL, mechanism=mechanisms.blt(T, D, "gaussian", neighbouring="replace")),
        oco.PFTALParams(rho=1.0),
        _gradient,
        expected=_N_BAD,
    ),
    # A user's mechanism in the older form, its counter in its state (deprecated, still counted exactly).
    "pftal[older-form mechanism]": Case(
        lambda: oco.pftal(T, _BALL, mechanism=_older_form(mechanisms.honaker_tree(T, D, neighbouring="replace"))),
        oco.PFTALParams(epsilon=1.0),
        _gradient,
        expected=_N_BAD,
    ),
    # The tree zeroes the bad gradients, but declares no count: nothing is reported (no search of the state).
    "pftal[undeclared mechanism]": Case(
        lambda: oco.pftal(T, _BALL, mechanism=_undeclared(mechanisms.honaker_tree(T, D, neighbouring="replace"))),
        oco.PFTALParams(epsilon=1.0),
        _gradient,
        zeroes=False,
    ),
    "regularized_pftal": Case(
        lambda: oco.regularized_pftal(T, _BALL), oco.RegularizedPFTALParams(epsilon=1.0), _gradient, expected=_N_BAD
    ),
    "private_experts": Case(
        lambda: oco.private_experts(T, 3), oco.PrivateExpertsParams(epsilon=1.0), _gradient, dim=3, expected=_N_BAD
    ),
    "wdp_cocop": Case(lambda: oco.wdp_cocop(T, _BALL, 4), oco.WDPParams(epsilon=1.0), _gradient, expected=_N_BAD),
    "wdp_cocol": Case(lambda: oco.wdp_cocol(T, _SIMPLEX, 4), oco.WDPParams(epsilon=1.0), _gradient, expected=_N_BAD),
    "dp_ftrl": Case(lambda: oco.dp_ftrl(T, _BALL), oco.DPFTRLParams(epsilon=1.0), _gradient, expected=_N_BAD),
    "pocp": Case(lambda: oco.pocp(T, _BALL), oco.POCPParams(epsilon=1.0, delta=1e-3), _gradient, expected=_N_BAD),
    # the example / cost vector zeroed by the learner before its tree: counted once
    "pqftl": Case(lambda: oco.pqftl(T, _BALL), oco.PQFTLParams(1.0, 1e-3), _example, expected=_N_BAD),
    "dnpr_experts": Case(
        lambda: oco.dnpr_experts(T, 3), oco.DNPRExpertsParams(epsilon=1.0), _costs, dim=3, expected=_N_BAD
    ),
    # jaxpriv.oco, bandit feedback (feedback: the loss value)
    "fkm": Case(lambda: oco.fkm(T, _BALL), oco.FKMParams(), _loss, expected=_N_BAD),
    "bandit_ftal": Case(lambda: oco.bandit_ftal(T, _BALL), oco.BanditFTALParams(), _loss, expected=_N_BAD),
    "mi_bandit_ogd": Case(
        lambda: oco.mi_bandit_ogd(T, _BALL), oco.MIBanditOGDParams(mutual_information=1.0), _loss, expected=_N_BAD
    ),
    # Its own counter (the three bad loss values) plus the tree's (the overflowed estimate at HUGE_STEP).
    "private_bandit_ftal": Case(
        lambda: oco.private_bandit_ftal(T, _BALL),
        oco.PrivateBanditFTALParams(epsilon=1.0),
        lambda t, a, d: _loss(t, a, d, huge=True),
        expected=_N_BAD + 1,
    ),
    # jaxpriv.bandits (feedback: the reward)
    "ucb": Case(lambda: bandits.ucb(K, T), bandits.UCBParams(), _reward, expected=_N_BAD),
    "adac_ucb": Case(lambda: bandits.adac_ucb(K, T), bandits.AdaCUCBParams(rho=1.0), _reward, expected=_N_BAD),
    "adap_ucb": Case(lambda: bandits.adap_ucb(K, T), bandits.AdaPUCBParams(epsilon=1.0), _reward, expected=_N_BAD),
    "adap_klucb": Case(
        lambda: bandits.adap_klucb(K, T), bandits.AdaPKLUCBParams(epsilon=1.0), _reward, expected=_N_BAD
    ),
    "dp_ucb": Case(lambda: bandits.dp_ucb(K, T), bandits.DPUCBParams(epsilon=1.0), _reward, expected=_N_BAD),
    "dp_ts": Case(lambda: bandits.dp_ts(K, T), bandits.DPTSParams(epsilon=1.0), _reward, expected=_N_BAD),
    "lazy_dp_ts": Case(lambda: bandits.lazy_dp_ts(K, T), bandits.LazyDPTSParams(epsilon=1.0), _reward, expected=_N_BAD),
    "anytime_lazy_ucb": Case(
        lambda: bandits.anytime_lazy_ucb(K, T), bandits.AnytimeLazyUCBParams(epsilon=1.0), _reward, expected=_N_BAD
    ),
    "ldp_ucb": Case(lambda: bandits.ldp_ucb(K, T), bandits.LDPUCBParams(epsilon=1.0), _reward, expected=_N_BAD),
    "dp_se": Case(lambda: bandits.dp_se(K, T), bandits.DPSEParams(epsilon=1.0), _reward, expected=_N_BAD),
    "gope": Case(lambda: bandits.gope(K, D, T), bandits.GOPEParams(actions=ACTIONS), _reward, expected=_N_BAD),
    "adac_gope_var": Case(
        lambda: bandits.adac_gope_var(K, D, T),
        bandits.AdaCGOPEParams(actions=ACTIONS, rho=1.0),
        _reward,
        expected=_N_BAD,
    ),
    "adac_gope": Case(
        lambda: bandits.adac_gope(K, D, T), bandits.AdaCGOPEParams(actions=ACTIONS, rho=1.0), _reward, expected=_N_BAD
    ),
    "rs_oful": Case(lambda: bandits.rs_oful(K, D, T), bandits.RSOFULParams(), _contextual, expected=_N_BAD),
    "adac_oful": Case(
        lambda: bandits.adac_oful(K, D, T), bandits.AdaCOFULParams(rho=1.0), _contextual, expected=_N_BAD
    ),
    "private_linucb": Case(
        lambda: bandits.private_linucb(K, D, T), bandits.PrivateLinUCBParams(rho=1.0), _contextual, expected=_N_BAD
    ),
    "linpriv": Case(lambda: bandits.linpriv(K, D, T), bandits.LinPrivParams(epsilon=1.0), _contextual, expected=_N_BAD),
    "hanna_gope": Case(
        lambda: bandits.hanna_gope(K, D, T),
        bandits.HannaGOPEParams(actions=ACTIONS, epsilon=1.0),
        _reward,
        expected=_N_BAD,
    ),
    "li_zhou_ji_gope": Case(
        lambda: bandits.li_zhou_ji_gope(K, D, T),
        bandits.LiZhouJiGOPEParams(actions=ACTIONS, epsilon=1.0, dp_delta=1e-3),
        _reward,
        expected=_N_BAD,
    ),
}


def _factories() -> set[str]:
    """Every learner factory the two packages export: the functions of their ``__all__`` that return a ``Learner``."""
    names = set()
    for module in (oco, bandits):
        for name in module.__all__:
            fn = getattr(module, name)
            if inspect.isfunction(fn) and inspect.signature(fn).return_annotation in ("Learner", Learner):
                names.add(name)
    return names


def test_every_learner_factory_has_a_case():
    assert _factories() == {name.split("[")[0] for name in CASES}


def _step_by_hand(case: Case) -> tuple[Learner, Any, int]:
    """The learner, its final state and its declared count (its Info's ``nonfinite`` summed, or from its state)."""
    learner = case.build()
    state = learner.init(jax.random.key(0), case.params)
    act, update = jax.jit(learner.act), jax.jit(lambda *a: update_with_info(learner, *a))
    summed = 0
    for t in range(1, T + 1):  # a short Python loop over hand-made steps, each compiled once
        key = jax.random.key(t)
        action = act(key, state, jnp.int32(t))
        state, info = update(key, state, action, case.feedback(t, action, case.dim), jnp.int32(t))
        summed += int(getattr(info, "nonfinite", 0))  # NoInfo: a learner that zeroes nothing
    declared = summed if learner.returns_info else int(nonfinite_inputs(learner, state))
    return learner, state, declared


@pytest.mark.parametrize("name", sorted(CASES))
def test_info_counts_the_zeroed_inputs(name):
    case = CASES[name]
    learner, state, declared = _step_by_hand(case)
    # declared in its Info (update -> (state, info)), never by a function of its state; no counter in its state
    assert learner.returns_info and learner.nonfinite is None, name
    if "older-form" not in name:  # a user's mechanism in the older form keeps its counter (a tuple: unnamed)
        assert _fields_named_nonfinite(state) == [], name
    if case.zeroes:
        assert declared > 0, name
        if case.expected is not None:
            assert declared == case.expected, name
    else:
        assert declared == 0, name


def test_private_bandit_ftal_counts_its_own_inputs_and_its_trees():
    _, state, declared = _step_by_hand(CASES["private_bandit_ftal"])
    assert declared == _N_BAD + 1  # the loss values, and the one-point estimate that overflowed (the tree's count)
    older = CASES["private_bandit_ftal"]._replace(
        build=lambda: oco.private_bandit_ftal(
            T, _BALL, mechanism=_older_form(mechanisms.binary_tree(T, D, neighbouring="replace"))
        )
    )
    _, state, declared = _step_by_hand(older)
    assert int(state.sums[1]) == 1 and declared == _N_BAD + 1  # the older form's counter holds the tree's one


def test_a_mechanism_zeroes_what_its_learner_passes_on_and_counts_it_once():
    """linpriv feeds ``x·r`` to its tree: a non-finite action vector is zeroed (and counted) by the tree."""
    case = CASES["linpriv"]

    def feedback(t, action, dim):
        fb = _contextual(jnp.int32(0), action, dim)  # a finite reward
        bad = (t == BAD_STEPS[0]) | (t == BAD_STEPS[2])
        return fb._replace(action_vector=jnp.where(bad, jnp.nan, fb.action_vector))

    _, _, declared = _step_by_hand(case._replace(feedback=feedback))
    assert declared == 2


def _stream(case: Case) -> Env:
    """An environment whose feedback is ``case.feedback`` (NaN / inf at the bad steps); the loss stays finite."""

    def reset(key, params):
        del key, params
        return ()

    def step(key, state, action, t):
        del key
        return state, case.feedback(t, action, case.dim), EnvInfo(loss=jnp.float32(0.5), regret=jnp.float32(0.0))

    return Env(reset, step)


# One per kind of feedback and of declaration (none zeroed, a mechanism, an undeclared one, both counts, a core).
RUN_CASES = (
    "ftal",
    "pftal",
    "pftal[undeclared mechanism]",
    "pftal[older-form mechanism]",
    "wdp_cocol",
    "private_bandit_ftal",
    "adac_ucb",
    "adac_oful",
)


@pytest.mark.parametrize("name", RUN_CASES)
def test_run_reports_the_same_nonfinite_inputs(name):
    case = CASES[name]
    learner = case.build()
    env = _stream(case)
    params = jp.SimParams(case.params, None)
    declared = jp.run(learner, env, params, 3, T)
    # the engine does not search the state: the older form without a declared count, or without the Info
    plain = learner._replace(update=lambda *a: update_with_info(learner, *a)[0], returns_info=False)
    undeclared = jp.run(plain._replace(nonfinite=None), env, params, 3, T)
    assert declared.info is not None and undeclared.info is None
    if "nonfinite" in type(declared.info)._fields:
        assert int(declared.info.nonfinite[-1]) == int(declared.nonfinite_inputs)  # the sum's last checkpoint
    else:  # a learner that zeroes nothing and owns no mechanism returns NoInfo (no field, nothing carried)
        assert declared.info == NoInfo() and not case.zeroes
    assert int(undeclared.nonfinite_inputs) == 0
    assert int(declared.nonfinite_inputs) == (case.expected if case.zeroes else 0)
    np.testing.assert_array_equal(np.asarray(declared.regret), np.asarray(undeclared.regret))
    np.testing.assert_array_equal(np.asarray(declared.loss), np.asarray(undeclared.loss))
