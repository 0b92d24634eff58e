"""Issue 35 ("Trust II"), parts 2 and 3: params classes by declaration, and privacy opt-outs that leave a trace.

Part 2. Every component declares its one params class (``Spec.params``, issue 37; ``declare(init, params=...)``
before), and the engine, ``jaxpriv.tune``, ``mechanisms.prefix_sums`` and the episode simulators refuse any
other, a subclass or a field-for-field copy included, before compiling. Before, the check read ``init``'s
annotation, which the shared skeletons of the episodic UCBs, GOPE and OFUL lack: ``ucb`` ran on AdaC-UCB's
params (as UCB), ``gope`` on AdaC-GOPE's, ``rs_oful`` on AdaC-OFUL's, ``adap_ucb`` / ``adap_klucb`` on DP-UCB's
and LDP-UCB's (α silently 3.0), and ``adac_gope_var`` on ``AdaCGOPEParams`` while the phase simulator runs
whitened AdaC-GOPE for that class.

Part 3. A configuration whose guarantee does not hold (unclipped rewards, a no-noise ablation, the paper's
calibration of AdaC-GOPE, an episode simulator's reward-sum hook) refuses a finite budget unless built with
``private=False``; it then declares itself not private, and ``Result.private`` / ``EpisodeResult.private`` /
a study's ``settings.json`` say so.

Every test here failed before the change (checked on the commit before it).
"""

import inspect
import json
import re
from typing import NamedTuple

import jax.numpy as jnp
import numpy as np
import pytest

import jaxpriv as jp
from jaxpriv import bandits, envs, mechanisms, oco, sets, stats, tune
from jaxpriv._base import Env, Learner, Mechanism, spec_of
from jaxpriv.bandits.episodic import (
    simulate_dp_se_epochs,
    simulate_episodes,
    simulate_gope_phases,
    simulate_ucb_episodes,
)
from jaxpriv.experiments import registry, study
from jaxpriv.testing import learner_examples

T, K, D = 20, 3, 2
MEANS = np.array([0.2, 0.5, 0.7], np.float32)
BERNOULLI = envs.BernoulliParams(MEANS)
ACTIONS = np.eye(K, D, dtype=np.float32) + np.float32(0.1)
LINEAR = envs.LinearBanditParams(ACTIONS, np.array([1.0, 0.0], np.float32), 1.0)
CONTEXT = envs.ContextualBanditParams(theta=np.zeros(D, np.float32))
BALL, SIMPLEX = sets.l2_ball(D), sets.simplex(D)


def _refused(fn, *patterns):
    """``fn()`` raises a ``ValueError`` whose message matches every pattern (nothing runs: refused before compiling)."""
    with pytest.raises(ValueError) as err:
        fn()
    for pattern in patterns:
        assert re.search(pattern, str(err.value)), (pattern, str(err.value))
    return str(err.value)


def _bernoulli_run(learner, lp):
    return jp.run(learner, envs.bernoulli_bandit(K), jp.SimParams(lp, BERNOULLI), 0, T)


# --- part 2: another algorithm's params class is refused ---------------------------------------------------------


def test_ucb_refuses_adac_ucbs_params():
    """Before: ``ucb(3)`` with ``AdaCUCBParams(rho=0.01)`` ran as UCB (the issue's regret 19.2 against 30.4)."""
    _refused(lambda: _bernoulli_run(bandits.ucb(K), bandits.AdaCUCBParams(rho=0.01)), r"AdaCUCBParams", r"UCBParams")


@pytest.mark.parametrize(
    "policy, lp",
    [
        (bandits.adap_ucb, bandits.DPUCBParams(epsilon=1.0, alpha=3.1)),
        (bandits.adap_ucb, bandits.LDPUCBParams(epsilon=1.0, alpha=3.1)),
        (bandits.adap_klucb, bandits.DPUCBParams(epsilon=1.0, alpha=3.1)),
        (bandits.adap_klucb, bandits.LDPUCBParams(epsilon=1.0, alpha=3.1)),
    ],
    ids=["adap_ucb-DPUCB", "adap_ucb-LDPUCB", "adap_klucb-DPUCB", "adap_klucb-LDPUCB"],
)
def test_adap_policies_refuse_the_dp_and_ldp_ucb_params(policy, lp):
    """Before: accepted, with α silently 3.0 (their own default) instead of the 3.1 given."""
    own = "AdaPUCBParams" if policy is bandits.adap_ucb else "AdaPKLUCBParams"
    _refused(lambda: _bernoulli_run(policy(K), lp), type(lp).__name__, own, policy.__name__)


def test_gope_refuses_the_private_gope_params():
    lp = bandits.AdaCGOPEParams(ACTIONS, rho=0.01)
    run = lambda: jp.run(bandits.gope(K, D, T), envs.linear_bandit(K, D), jp.SimParams(lp, LINEAR), 0, T)
    _refused(run, "AdaCGOPEParams", r"takes GOPEParams")


def test_rs_oful_refuses_adac_ofuls_params():
    params = jp.SimParams(bandits.AdaCOFULParams(rho=0.01), CONTEXT)
    _refused(
        lambda: jp.run(bandits.rs_oful(K, D, T), envs.contextual_linear_bandit(K, D), params, 0, T),
        "AdaCOFULParams",
        "RSOFULParams",
    )


def test_adac_gope_var_phases_are_its_own_at_both_levels():
    """AdaC-GOPE-Var takes AdaC-GOPE's params (issue 37): the learner, not its params class, names the algorithm.
    Its phases are its own fast path's (``simulate_episodes``); the params-class entry point, which builds
    AdaC-GOPE (whitened noise) for these params, refuses to stand in for it: a step-vs-episode comparison
    would compare two algorithms."""
    lp = bandits.AdaCGOPEParams(ACTIONS, rho=1.0)
    policy = bandits.adac_gope_var(K, D, 200)
    assert jp.run(policy, envs.linear_bandit(K, D), jp.SimParams(lp, LINEAR), 0, T).private is True
    _refused(
        lambda: simulate_gope_phases(lp, LINEAR, 0, 200, seeds=2, policy=policy),
        r"AdaC-GOPE \(adac_gope, whitened.*adac_gope_var.*simulate_episodes",
    )
    res = simulate_episodes(policy, lp, LINEAR, 0, 200, seeds=2)
    assert res.private is True
    assert spec_of(policy).fast_path != spec_of(bandits.adac_gope(K, D, 200)).fast_path  # the noise placement


def test_the_episode_simulators_refuse_a_policy_of_another_algorithm():
    _refused(
        lambda: simulate_ucb_episodes(bandits.AdaCUCBParams(rho=1.0), MEANS, 0, 100, seeds=2, policy=bandits.ucb(K)),
        r"AdaC-UCB.*takes UCBParams",
    )
    _refused(
        lambda: simulate_dp_se_epochs(bandits.DPSEParams(epsilon=1.0), MEANS, 0, 100, 2, policy=bandits.dp_ucb(K, 100)),
        r"DP-SE.*takes DPUCBParams",
    )


class _SubAdaCUCB(bandits.AdaCUCBParams):
    """A subclass: the same fields, another class (it would have passed ``isinstance``)."""


class _CopyOGD(NamedTuple):
    """A field-for-field copy of ``OGDParams``."""

    strong_convexity: float = 1.0
    lipschitz: float = 1.0


class _SubOGD(oco.OGDParams):
    pass


def test_a_subclass_or_a_field_for_field_copy_is_refused():
    _refused(lambda: _bernoulli_run(bandits.adac_ucb(K), _SubAdaCUCB(rho=1.0)), r"subclass", "AdaCUCBParams")
    env, ep = envs.quadratic_stream(BALL), envs.QuadraticParams(center=np.array([0.2, 0.1], np.float32))
    _refused(lambda: jp.run(oco.ogd(BALL), env, jp.SimParams(_CopyOGD(), ep), 0, T), r"same fields", "OGDParams")
    _refused(lambda: jp.run(oco.ogd(BALL), env, jp.SimParams(_SubOGD(), ep), 0, T), r"subclass", "OGDParams")


def test_tune_refuses_another_params_class():
    """Before: ``jaxpriv.tune`` called the components' checks only; a subclass ran (the engine's isinstance)."""
    env, ep = envs.quadratic_stream(BALL), envs.QuadraticParams(center=np.array([0.2, 0.1], np.float32))
    params = jp.SimParams(_SubOGD(), ep)
    wrt = "learner.strong_convexity"
    _refused(lambda: tune.value_and_grad(oco.ogd(BALL), env, params, wrt, 0, 8, seeds=2), "subclass")


def test_prefix_sums_refuses_another_params_class():
    class SubTree(mechanisms.TreeParams):
        pass

    tree = mechanisms.binary_tree(8, 1)
    xs = np.ones((8, 1), np.float32)
    _refused(lambda: mechanisms.prefix_sums(tree, SubTree(epsilon=1.0), xs, 0), "subclass", "TreeParams")


def test_the_episode_simulators_refuse_a_subclass():
    """Before: their ``isinstance`` dispatch ran the parent's algorithm for any subclass."""

    class SubUCB(bandits.UCBParams):
        pass

    class SubGOPE(bandits.AdaCGOPEParams):
        pass

    class SubDPSE(bandits.DPSEParams):
        pass

    _refused(lambda: simulate_ucb_episodes(SubUCB(), MEANS, 0, 100, seeds=2), "exactly", "SubUCB")
    _refused(lambda: simulate_gope_phases(SubGOPE(ACTIONS, rho=1.0), LINEAR, 0, 200, seeds=2), "exactly", "SubGOPE")
    _refused(lambda: simulate_dp_se_epochs(SubDPSE(epsilon=1.0), MEANS, 0, 100, seeds=2), "exactly", "SubDPSE")


def test_a_users_component_without_a_spec_takes_any_params_class():
    """Users' own components: without a ``Spec`` nothing is checked (no annotation is read, issue 37)."""
    base = oco.ogd(BALL)

    def init(key, params: oco.OGDParams):  # the annotation is documentation only
        return base.init(key, params)

    learner = base._replace(init=init, spec=None)
    assert spec_of(learner).params is None and spec_of(learner).private is None
    env, ep = envs.quadratic_stream(BALL), envs.QuadraticParams(center=np.array([0.2, 0.1], np.float32))
    sub = jp.run(learner, env, jp.SimParams(_SubOGD(), ep), 0, T)  # a subclass runs: no spec, no check
    res = jp.run(learner, env, jp.SimParams(oco.OGDParams(), ep), 0, T)
    np.testing.assert_array_equal(np.asarray(sub.regret), np.asarray(res.regret))
    assert res.private is None  # undeclared: the engine does not guess
    # The same learner with its spec refuses the subclass.
    _refused(lambda: jp.run(base, env, jp.SimParams(_SubOGD(), ep), 0, T), "subclass", "OGDParams")


# --- every factory declares its params class -------------------------------------------------------------------

#: Every registered learner, built (``jaxpriv.testing.learner_examples``: one example of each, shared with the
#: step-cost tests), beside its factory.
_EXAMPLES = learner_examples(64, 3)
LEARNER_BUILDS = {
    name: (entry.factory, lambda name=name: _EXAMPLES[name][0]) for name, entry in registry.LEARNERS.items()
}
#: The non-private learners: they declare ``private=False`` (``Result.private`` is ``False``).
NOT_PRIVATE = {"ftal", "ogd", "bandit_ftal", "fkm", "online_frank_wolfe", "garber_hazan", "ucb", "gope", "rs_oful"}

ENV_BUILDS = {
    "quadratic_stream": (envs.quadratic_stream, lambda: envs.quadratic_stream(BALL)),
    "adaptive_quadratic": (envs.adaptive_quadratic, lambda: envs.adaptive_quadratic(BALL)),
    "experts_stream": (envs.experts_stream, lambda: envs.experts_stream(3)),
    "classification_stream": (
        envs.classification_stream,
        lambda: envs.classification_stream(BALL, horizon=16, solver_steps=4),
    ),
    "bernoulli_bandit": (envs.bernoulli_bandit, lambda: envs.bernoulli_bandit(K)),
    "linear_bandit": (envs.linear_bandit, lambda: envs.linear_bandit(K, D)),
    "contextual_linear_bandit": (envs.contextual_linear_bandit, lambda: envs.contextual_linear_bandit(K, D)),
    "regression_stream": (envs.regression_stream, lambda: envs.regression_stream(BALL)),
}

MECHANISM_BUILDS = {
    "binary_tree": (mechanisms.binary_tree, lambda: mechanisms.binary_tree(T, D), mechanisms.TreeParams),
    "honaker_tree": (mechanisms.honaker_tree, lambda: mechanisms.honaker_tree(T, D), mechanisms.TreeParams),
    "sqrt_factorization": (
        mechanisms.sqrt_factorization,
        lambda: mechanisms.sqrt_factorization(T, D, "gaussian"),
        mechanisms.TreeParams,
    ),
    "blt": (mechanisms.blt, lambda: mechanisms.blt(T, D), mechanisms.TreeParams),
    "window_tree": (mechanisms.window_tree, lambda: mechanisms.window_tree(T, D, 4), mechanisms.WindowTreeParams),
}


def _public_factories(module, returns) -> set:
    """The functions of ``module.__all__`` annotated to return ``returns`` (a component NamedTuple)."""
    out = set()
    for name in module.__all__:
        obj = getattr(module, name)
        if inspect.isfunction(obj) and inspect.signature(obj).return_annotation in (returns.__name__, returns):
            out.add(obj)
    return out


def test_every_factory_declares_its_params_class():
    """Every factory the registry names (and every public one) has a spec: its name, params class and privacy."""
    for table, builds in ((registry.LEARNERS, LEARNER_BUILDS), (registry.ENVS, ENV_BUILDS)):
        library = {c.factory for c in table.values() if c.factory.__module__.startswith("jaxpriv.")}
        assert library <= {factory for factory, _ in builds.values()}, "a registered factory without a case here"
        for name, (factory, build) in builds.items():
            assert table[name].factory is factory, name
            built = build()
            assert built.spec is not None and built.spec.name == name, name
            # None: the registry reads the class from the built component's spec (private_linucb: it depends on
            # the static ``noise``), so the two cannot disagree
            assert table[name].params in (None, built.spec.params), name
            if table is registry.LEARNERS:
                assert built.spec.private is (name not in NOT_PRIVATE), name
            hash(built.spec)  # plain hashable values: the engine's compile cache hashes the component
    assert set(registry.MECHANISMS) <= set(MECHANISM_BUILDS)
    for name, (factory, build, params_class) in MECHANISM_BUILDS.items():
        assert registry.MECHANISMS.get(name, factory) is factory, name
        built = build()
        assert built.spec.name == name and built.spec.params is params_class and built.spec.private is True, name
    assert _public_factories(oco, Learner) | _public_factories(bandits, Learner) == {
        f for f, _ in LEARNER_BUILDS.values()
    }
    # The one wrapper: the wrapped environment's params class is kept in its spec.
    assert _public_factories(envs, Env) <= {f for f, _ in ENV_BUILDS.values()} | {envs.bandit_feedback}
    assert envs.bandit_feedback(envs.quadratic_stream(BALL)).spec.params is envs.QuadraticParams
    assert _public_factories(mechanisms, Mechanism) <= {f for f, _, _ in MECHANISM_BUILDS.values()}


def test_a_learner_on_a_non_private_mechanism_is_not_private():
    """A learner declares its guarantee through its mechanism's: a mechanism declaring none private makes it not."""
    tree = mechanisms.binary_tree(T, D, neighbouring="replace")
    not_private = tree._replace(spec=tree.spec._replace(private=False))
    assert oco.pftal(T, BALL, mechanism=tree).spec.private is True
    assert oco.pftal(T, BALL, mechanism=not_private).spec.private is False


# --- part 3: privacy opt-outs ------------------------------------------------------------------------------------


def test_dp_se_without_clipping_refuses_a_finite_epsilon_unless_declared_not_private():
    """Before: ``dp_se(..., clip_rewards=False)`` released unclipped rewards under ε = 1, reported as any other run."""
    _refused(
        lambda: _bernoulli_run(bandits.dp_se(K, T, clip_rewards=False), bandits.DPSEParams(epsilon=1.0)),
        r"clip_rewards=False",
        r"ε-DP",
        r"private=False",
        r"epsilon=inf",
    )
    res = _bernoulli_run(bandits.dp_se(K, T, clip_rewards=False, private=False), bandits.DPSEParams(epsilon=1.0))
    assert res.private is False
    assert _bernoulli_run(bandits.dp_se(K, T, clip_rewards=False), bandits.DPSEParams(epsilon=np.inf)).private is False
    # The paper-faithful default is unchanged, and says it is private.
    assert _bernoulli_run(bandits.dp_se(K, T), bandits.DPSEParams(epsilon=1.0)).private is True


def test_adac_gope_var_without_clipping_refuses_a_finite_rho():
    lp = bandits.AdaCGOPEParams(ACTIONS, rho=1.0)
    env = envs.linear_bandit(K, D)
    unclipped = bandits.adac_gope_var(K, D, T, clip=False)
    _refused(lambda: jp.run(unclipped, env, jp.SimParams(lp, LINEAR), 0, T), "clip=False")
    res = jp.run(bandits.adac_gope_var(K, D, T, clip=False, private=False), env, jp.SimParams(lp, LINEAR), 0, T)
    assert res.private is False


def test_adac_gope_exploration_ablation_adds_no_noise_and_is_refused_at_rho_001():
    """Before: ``adac_gope(ablation="exploration")`` with ρ = 0.01 ran without any noise, reported as AdaC-GOPE."""
    lp = bandits.AdaCGOPEParams(ACTIONS, rho=0.01)
    env = envs.linear_bandit(K, D)
    learner = bandits.adac_gope(K, D, T, ablation="exploration")
    _refused(lambda: learner.check(lp), r"ablation='exploration'", "no noise")
    _refused(lambda: jp.run(learner, env, jp.SimParams(lp, LINEAR), 0, T), "ablation='exploration'")
    diagnostic = bandits.adac_gope(K, D, T, ablation="exploration", private=False)
    assert jp.run(diagnostic, env, jp.SimParams(lp, LINEAR), 0, T).private is False
    # The noise ablation keeps AdaC-GOPE's calibrated noise: still private, no private=False needed.
    assert bandits.adac_gope(K, D, T, ablation="noise").spec.private is True
    # And the paper's calibration, exact only for an exact G-optimal design, is an opt-out too.
    _refused(lambda: bandits.adac_gope(K, D, T, calibration="paper").check(lp), "calibration='paper'")


@pytest.mark.parametrize(
    "build, lp",
    [
        (lambda **kw: bandits.adac_ucb(K, clip_rewards=False, **kw), bandits.AdaCUCBParams(rho=0.01)),
        (lambda **kw: bandits.adac_gope(K, D, T, clip=False, **kw), bandits.AdaCGOPEParams(ACTIONS, rho=0.01)),
        (lambda **kw: bandits.adac_oful(K, D, T, clip=False, **kw), bandits.AdaCOFULParams(rho=0.01)),
        (lambda **kw: bandits.adac_oful(K, D, T, ablation="radius", **kw), bandits.AdaCOFULParams(rho=0.01)),
    ],
    ids=["adac_ucb-unclipped", "adac_gope-unclipped", "adac_oful-unclipped", "adac_oful-radius"],
)
def test_the_other_opt_outs_refuse_a_finite_budget(build, lp):
    _refused(lambda: build().check(lp), "private=False", "ρ-zCDP")
    assert build().spec.private is False
    built = build(private=False)
    built.check(lp)  # accepted, declared not private
    assert built.spec.private is False
    build().check(lp._replace(rho=np.inf))  # an infinite budget claims nothing: accepted


def test_the_episode_simulators_hooks_are_opt_outs():
    """Before: the ``reward_sum`` / ``reward_sums`` hooks fed unclipped sums into the private release silently."""

    def ucb_sum(key, n, mean):
        return n.astype(jnp.float32) * 3.0  # rewards of 3: outside [0, 1]

    def dp_se_sums(key, n, means):
        return n.astype(jnp.float32) * 3.0 + 0.0 * means

    def gope_sums(key, means, stddev, pulls):
        return pulls.astype(jnp.float32) * (means + 5.0)

    ucb_params = bandits.AdaCUCBParams(rho=0.01)
    _refused(lambda: simulate_ucb_episodes(ucb_params, MEANS, 0, 100, 2, reward_sum=ucb_sum), "reward_sum", "ρ-zCDP")
    res = simulate_ucb_episodes(ucb_params, MEANS, 0, 100, 2, reward_sum=ucb_sum, private=False)
    assert res.private is False
    assert simulate_ucb_episodes(ucb_params, MEANS, 0, 100, 2).private is True
    assert simulate_ucb_episodes(bandits.UCBParams(), MEANS, 0, 100, 2).private is False

    dp_se_params = bandits.DPSEParams(epsilon=1.0)
    _refused(lambda: simulate_dp_se_epochs(dp_se_params, MEANS, 0, 100, 2, reward_sum=dp_se_sums), "reward_sum")
    assert simulate_dp_se_epochs(dp_se_params, MEANS, 0, 100, 2, reward_sum=dp_se_sums, private=False).private is False

    gope_params = bandits.AdaCGOPEParams(ACTIONS, rho=0.01)
    _refused(lambda: simulate_gope_phases(gope_params, LINEAR, 0, 200, 2, reward_sums=gope_sums), "reward_sums")
    _refused(lambda: simulate_gope_phases(gope_params, LINEAR, 0, 200, 2, clip=False), "clip=False")
    _refused(lambda: simulate_gope_phases(gope_params, LINEAR, 0, 200, 2, ablation="exploration"), "exploration")
    res = simulate_gope_phases(gope_params, LINEAR, 0, 200, 2, clip=False, private=False)
    assert res.private is False


def test_the_engine_records_the_declaration_in_every_result():
    """``run``, ``sweep`` (one call, the driver, statistics) all carry ``private``; before: no such field."""
    learner, lp = bandits.dp_se(K, T, clip_rewards=False, private=False), bandits.DPSEParams(epsilon=[0.5, 1.0])
    params = jp.SimParams(lp, BERNOULLI)
    env = envs.bernoulli_bandit(K)
    assert jp.sweep(learner, env, params, 0, T, seeds=2).private is False
    assert jp.sweep(learner, env, params, 0, T, seeds=2, segment=10).private is False
    assert jp.sweep(learner, env, params, 0, T, seeds=2, stats=stats.Stats()).private is False
    assert _bernoulli_run(bandits.adac_ucb(K), bandits.AdaCUCBParams(rho=1.0)).private is True
    assert _bernoulli_run(bandits.ucb(K), bandits.UCBParams()).private is False


def test_a_studys_settings_say_private_false(tmp_path):
    """A study of an opt-out built with ``private = false``: its settings.json says so."""
    text = f"""
name = "unclipped"
horizon = {T}
seeds = 2

[learner]
name = "dp_se"
num_arms = {K}
clip_rewards = false
private = false
[learner.params]
epsilon = 1.0

[env]
name = "bernoulli_bandit"
num_arms = {K}
[env.params]
means = [0.2, 0.5, 0.7]
"""
    path = tmp_path / "study.toml"
    path.write_text(text)
    res = study.run_study(path, tmp_path / "out", progress=False)
    settings = json.loads(res.files["json"].read_text())
    assert settings["private"] is False
    assert next(iter(res.results().values())).private is False
