"""Components say what they are (issue 37): every registered component has a ``Spec``, and it is what is read.

Before, the facts the engine needs travelled through side channels: attributes stuck on functions
(``declare``), the annotation of ``init``, a walk of closure cells for a fingerprint's static arguments,
``NDIMS`` class attributes on params classes and a search of the state for fields named ``nonfinite``.
"""

import jax
import numpy as np
import pytest

import jaxpriv as jp
from jaxpriv import _base, bandits, envs, mechanisms, oco, sets, sim
from jaxpriv.experiments import registry
from jaxpriv.sim import _resume
from jaxpriv.testing import learner_examples

T, K, D = 32, 3, 2
BALL = sets.l2_ball(D)
BERNOULLI = envs.BernoulliParams(np.array([0.2, 0.5, 0.7], np.float32))

_EXAMPLES = learner_examples(64, 3)

ENVS = {
    "quadratic_stream": lambda: envs.quadratic_stream(BALL),
    "adaptive_quadratic": lambda: envs.adaptive_quadratic(BALL),
    "experts_stream": lambda: envs.experts_stream(3),
    "classification_stream": lambda: envs.classification_stream(BALL, horizon=16, solver_steps=4),
    "bernoulli_bandit": lambda: envs.bernoulli_bandit(K),
    "linear_bandit": lambda: envs.linear_bandit(K, D),
    "contextual_linear_bandit": lambda: envs.contextual_linear_bandit(K, D),
    "regression_stream": lambda: envs.regression_stream(BALL),
}

MECHANISMS = {
    "binary_tree": lambda: mechanisms.binary_tree(T, D),
    "honaker_tree": lambda: mechanisms.honaker_tree(T, D),
    "sqrt_factorization": lambda: mechanisms.sqrt_factorization(T, D),
    "blt": lambda: mechanisms.blt(T, D),
    "window_tree": lambda: mechanisms.window_tree(T, D, 4),
}


def _check_spec(component, name, params_class):
    spec = component.spec
    assert isinstance(spec, jp.Spec), name
    assert spec.name == name and spec.params is params_class, name
    assert spec.static and all(isinstance(k, str) for k, _ in spec.static), name
    hash(spec)  # plain hashable values: the engine's compile cache hashes the component
    assert {field for field, _ in spec.ndims} <= set(params_class._fields), name
    assert not hasattr(params_class, "NDIMS"), name  # the ranks live in the spec of the component that takes them


@pytest.mark.parametrize("name", sorted(registry.LEARNERS))
def test_every_registered_learner_has_a_spec(name):
    learner = _EXAMPLES[name][0]
    # a registry entry without a params class (None) takes the built learner's own (private_linucb)
    _check_spec(learner, name, registry.LEARNERS[name].params or learner.spec.params)
    assert learner.spec.private in (True, False), name
    # its diagnostics (the zeroed inputs) in its Info: update -> (state, info), none in its state (issue 46)
    assert learner.returns_info and learner.nonfinite is None, name
    state = jax.eval_shape(learner.init, jax.random.key(0), _EXAMPLES[name][2].learner)
    # nor in a mechanism's state nested inside it: no field of any depth is named nonfinite
    paths = [jax.tree_util.keystr(path) for path, _ in jax.tree_util.tree_flatten_with_path(state)[0]]
    assert not [p for p in paths if "nonfinite" in p], (name, paths)


@pytest.mark.parametrize("name", sorted(registry.ENVS))
def test_every_registered_env_has_a_spec(name):
    assert set(registry.ENVS) == set(ENVS)
    _check_spec(ENVS[name](), name, registry.ENVS[name].params)


@pytest.mark.parametrize("name", sorted(MECHANISMS))
def test_every_mechanism_has_a_spec(name):
    assert set(registry.MECHANISMS) <= set(MECHANISMS)
    mech = MECHANISMS[name]()
    params_class = mechanisms.WindowTreeParams if name == "window_tree" else mechanisms.TreeParams
    _check_spec(mech, name, params_class)
    assert mech.spec.private is True and mech.returns_count and mech.nonfinite is None  # step returns its count


def test_ucb_refuses_adac_ucbs_params():
    """``ucb``'s init has no annotation; its spec names ``UCBParams`` and the engine refuses any other class."""
    with pytest.raises(ValueError, match=r"AdaCUCBParams.*ucb.*UCBParams"):
        jp.run(bandits.ucb(K), envs.bernoulli_bandit(K), jp.SimParams(bandits.AdaCUCBParams(rho=1.0), BERNOULLI), 0, T)


def test_a_wrapper_keeps_the_spec_through_replace():
    env = envs.quadratic_stream(BALL)
    assert env._replace(step=lambda *a: env.step(*a)).spec is env.spec
    wrapped = envs.bandit_feedback(env)
    assert wrapped.spec.params is envs.QuadraticParams and wrapped.spec.ndims == env.spec.ndims
    assert wrapped.spec.action_shape == (D,) and dict(wrapped.spec.static)["env"] == env.spec


def test_the_static_arguments_are_the_specs():
    """The fingerprint's static arguments are read from the spec (no walk of closure cells)."""
    learner = oco.pftal(T, BALL, "laplace")
    static = _resume.static_arguments(learner)
    assert static["noise"] == "laplace" and static["horizon"] == T and static["constraint.radius"] == 1.0
    assert static["mechanism.name"] == "binary_tree" and static["mechanism.noise"] == "laplace"
    # A component without a spec has none: the traced computation alone decides.
    assert _resume.static_arguments(learner._replace(spec=None)) == {}


def test_grid_detection_reads_the_specs_ranks():
    env = envs.quadratic_stream(BALL)
    params = jp.SimParams(oco.OGDParams(), envs.QuadraticParams(1.0, np.zeros(D, np.float32), 0.3))
    axes, size = sim.grid_axes(params, allow_grid=True, ndims=sim.spec_ndims(oco.ogd(BALL), env))
    assert size is None and axes.env.center is None  # a [d] centre is one point, not a grid
    grid = params._replace(env=params.env._replace(center=np.zeros((4, D), np.float32)))
    axes, size = sim.grid_axes(grid, allow_grid=True, ndims=sim.spec_ndims(oco.ogd(BALL), env))
    assert size == 4 and axes.env.center == 0


def test_no_component_declares_on_its_functions():
    """The ``_jaxpriv_*`` attributes and their readers are gone."""
    for name in ("declare", "declared", "declared_params", "declared_private", "expected_params_class"):
        assert not hasattr(_base, name), name
    assert not hasattr(_base, "count_nonfinite")
    learner = _EXAMPLES["adac_ucb"][0]
    for fn in (learner.init, learner.act, learner.update):
        assert not [a for a in dir(fn) if a.startswith("_jaxpriv_")]
