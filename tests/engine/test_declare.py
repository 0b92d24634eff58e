"""The declaration (``jaxpriv.declare``): every built-in's ``Spec`` is what it was before the declaration filled it."""

from __future__ import annotations

import json

import pytest

from tests.engine._static_cases import EXPECTED, cases, describe

_EXPECTED = json.loads(EXPECTED.read_text())


@pytest.mark.parametrize("label", sorted(_EXPECTED))
def test_spec_static_frozen(label: str) -> None:
    """Name, params class, privacy, arms, ndims and ``Spec.static`` (values and order) equal the frozen table."""
    spec = cases()[label]().spec
    assert describe(spec) == _EXPECTED[label]


def test_every_case_is_frozen() -> None:
    assert sorted(cases()) == sorted(_EXPECTED)


def test_a_declaration_records_the_call_and_fills_the_spec(scratch_declarations):
    """Arguments bound to the signature with defaults, the factory's own entries in place, OMIT, spec=None."""
    import jaxpriv as jp
    from jaxpriv import declare, mechanisms, sets
    from jaxpriv.oco import PFTALParams

    def toy_bound(params, env_params, spec, horizon):
        return horizon * declare.arguments(spec)["constraint"].radius

    @declare.learner("toy", params=PFTALParams, bound=toy_bound, mechanism_dim="constraint")
    def toy(horizon: int, constraint, noise=None, scale: float = 2.0, *, hidden: int = 0) -> jp.Learner:
        own = jp._base.static_args(noise="gamma" if noise is None else noise, hidden=declare.OMIT, extra=(1, 2))
        return jp.Learner(None, None, None, spec=jp.Spec(private=True, static=own))

    ball = sets.l2_ball(3, 2.0)
    spec = toy(8, ball).spec
    assert spec.name == "toy" and spec.params is PFTALParams and spec.private is True
    assert [k for k, _ in spec.static] == ["horizon", "constraint", "noise", "scale", "extra"]
    assert dict(spec.static)["noise"] == "gamma" and dict(spec.static)["extra"] == (1, 2)
    entry = declare.declarations("learner")["toy"]
    assert entry.required == ("horizon", "constraint") and entry.defaults["scale"] == 2.0
    assert entry.bound(None, None, spec, 10) == 20.0
    assert declare.mechanism_dim(entry, {"horizon": 8, "constraint": ball}) == 3
    with pytest.raises(ValueError, match="already registered"):
        declare.learner("toy")(toy)

    @declare.env("toy_env")
    def toy_env(k: int = 3) -> jp.Env:
        return jp.Env(None, None, None)  # no spec: it gets one

    assert toy_env().spec == jp.Spec("toy_env", None, static=(("k", 3),))
    tree = mechanisms.honaker_tree(16, 2, neighbouring="replace")  # a recorded mechanism is built again
    assert declare.rebuild(tree.spec).spec == tree.spec


def test_a_registry_bound_of_the_old_form_is_still_taken(scratch_declarations):
    from jaxpriv import oco, sets
    from jaxpriv.experiments import registry

    def old(lp, ep, static, horizon, constraint):  # (lp, ep, static, horizon, constraint), before the declaration
        return float(horizon * constraint.dim + (static["noise"] == "gamma"))

    entry = registry.register_learner("old_pftal", oco.pftal, bound=old)
    learner = entry.factory(4, sets.l2_ball(3))
    assert learner.spec.name == "pftal" and entry.bound(None, None, learner.spec, 4) == 13.0


def test_the_learner_examples_are_the_declarations_examples(scratch_declarations):
    """``testing.learner_examples`` is read off the declarations: a learner declared with an ``example`` is in it,
    built by its example, and every built-in learner declares one."""
    from jaxpriv import declare, oco
    from jaxpriv.experiments import registry
    from jaxpriv.testing import learner_examples, setting

    builtin = {n for n, e in registry.LEARNERS.items() if e.factory.__module__.startswith("jaxpriv.")}
    assert builtin and all(registry.LEARNERS[n].example is not None for n in builtin)

    def toy_example(horizon: int, dim: int) -> declare.ExampleRun:
        s = setting("ball", dim)
        return toy(s.constraint, horizon), s.env, oco.FTALParams(0.5), s.params

    @declare.learner("toy_ftal", params=oco.FTALParams, example=toy_example)
    def toy(constraint, horizon: int | None = None):
        return oco.ftal(constraint, horizon)

    learner, env, params = learner_examples(8, 2)["toy_ftal"]
    assert learner.spec.name == "ftal" and learner.horizon == 8 and env.spec.name == "quadratic_stream"
    assert params.learner == oco.FTALParams(0.5) and params.env.center.shape == (2,)
    with pytest.raises(ValueError, match="example must be callable"):
        declare.learner("toy_bad", example=3)(toy)
    with pytest.raises(ValueError, match="kind must be one of"):
        setting("sphere", 2)
