"""Noise families are objects (issue 37): ``NoiseFamily``, ``GAMMA`` / ``LAPLACE`` / ``GAUSSIAN``, ``noise_family``."""

import copy
import pickle

import jax
import numpy as np
import pytest

from jaxpriv import mechanisms as M
from jaxpriv import oco, sets

FAMILIES = (M.GAMMA, M.LAPLACE, M.GAUSSIAN)


def test_one_instance_per_family_named_as_before():
    assert tuple(f.name for f in FAMILIES) == M.NOISE_FAMILIES == ("gamma", "laplace", "gaussian")
    for f in FAMILIES:
        assert M.noise_family(f.name) is f and M.noise_family(f) is f
        assert str(f) == f.name and f"{f}" == f.name  # printed (and saved) as the name
        assert pickle.loads(pickle.dumps(f)) is f and copy.deepcopy(f) is f


def test_attributes_are_what_the_comparisons_asked():
    assert [f.budget for f in FAMILIES] == ["epsilon", "epsilon", "rho"]
    assert [f.guarantee for f in FAMILIES] == ["ε-DP", "ε-DP", "ρ-zCDP"]
    assert [f.pure for f in FAMILIES] == [True, True, False]
    assert [f.norm for f in FAMILIES] == [2, 1, 2]
    assert [f.input_norm for f in FAMILIES] == ["l2", "l1", "l2"]
    assert [f.sub_gaussian for f in FAMILIES] == [False, False, True]
    assert [f.unit_variance(4) for f in FAMILIES] == [5.0, 2.0, 1.0]
    for f in FAMILIES:  # the public helpers read the same attributes, from a family or its name
        assert M.budget_field(f) == M.budget_field(f.name) == f.budget
        assert M.input_norm(f) == M.input_norm(f.name) == f.input_norm


@pytest.mark.parametrize("family, dim", [(M.GAMMA, 1), (M.GAMMA, 5), (M.LAPLACE, 1), (M.LAPLACE, 5), (M.GAUSSIAN, 5)])
def test_unit_variance_is_the_samplers_variance(family, dim):
    """The mean of ``||x||²/d`` over ``n`` i.i.d. unit draws estimates the per-coordinate variance.

    Its standard error is estimated from the same draws; the tolerance is 5 of them (a false alarm
    has probability below 1e-6), and the test first checks that it has power: the tolerance is at
    most 10% of the constant, so a constant 20% off (e.g. ``d`` for ``d + 1``, or 2.4 for 2) fails.
    """
    n = 200_000
    x = np.asarray(family.sample(jax.random.key(7), (n, dim)), np.float64)
    assert x.shape == (n, dim) and family.sample(jax.random.key(7), (3, dim)).dtype == np.float32
    per_draw = np.sum(x * x, axis=1) / dim  # E = unit variance (each coordinate has mean 0)
    estimate = per_draw.mean()
    tolerance = 5.0 * per_draw.std(ddof=1) / np.sqrt(n)
    expected = family.unit_variance(dim)
    assert tolerance <= 0.1 * expected, "too few draws to tell a 20% wrong constant"
    assert abs(estimate - expected) <= tolerance, (estimate, expected, tolerance)
    for wrong in (0.8 * expected, 1.2 * expected):  # the power the assertion above has, at these draws
        assert abs(estimate - wrong) > tolerance


def test_scaled_variance_adds_no_multiplication_by_one():
    assert M.GAUSSIAN.scaled_variance(3.0, 7) == 9.0
    assert M.LAPLACE.scaled_variance(3.0, 7) == 18.0 and M.GAMMA.scaled_variance(3.0, 7) == 72.0
    jaxpr = str(jax.make_jaxpr(lambda s: M.GAUSSIAN.scaled_variance(s, 7))(1.0))
    assert "mul" not in jaxpr  # the traced computation (and the engine's fingerprints) stay as before issue 37


@pytest.mark.parametrize("bad", ["normal", "Gaussian", "gamma_norm", "", None, 1, ("gaussian",)])
def test_noise_family_refuses_anything_else(bad):
    with pytest.raises(ValueError, match=r"noise must be one of \('gamma', 'laplace', 'gaussian'\), got"):
        M.noise_family(bad)
    with pytest.raises(ValueError, match="noise must be one of"):
        M.binary_tree(8, 2, bad)


def test_a_family_outside_a_factorys_families_is_refused_by_name_or_object():
    for noise in ("laplace", M.LAPLACE):
        with pytest.raises(ValueError, match=r"noise must be one of \('gamma', 'gaussian'\)"):
            M.window_tree(8, 2, 4, noise=noise)
    for noise in ("gamma", M.GAMMA):
        with pytest.raises(ValueError, match=r"noise must be one of \('gaussian',\)"):
            M.sqrt_factorization(8, 2, noise=noise)
        with pytest.raises(ValueError, match=r"noise must be one of \('gaussian',\)"):
            M.blt(8, 2, noise=noise)


def test_name_and_object_give_bit_identical_releases():
    xs = np.random.default_rng(0).normal(size=(16, 3))
    for family in FAMILIES:
        params = M.TreeParams(**{family.budget: 2.0})
        for factory in (M.binary_tree, M.honaker_tree):
            by_name, by_object = factory(16, 3, family.name), factory(16, 3, family)
            assert M.describe(by_name).noise is family and M.describe(by_object).noise is family  # the object
            assert dict(by_object.spec.static)["noise"] == family.name  # saved by name
            a = np.asarray(M.prefix_sums(by_name, params, xs, jax.random.key(3)))
            b = np.asarray(M.prefix_sums(by_object, params, xs, jax.random.key(3)))
            assert a.tobytes() == b.tobytes()
    window = M.WindowTreeParams(epsilon=1.0, delta=1e-5)
    a = M.prefix_sums(M.window_tree(16, 3, 4, noise="gaussian"), window, xs, jax.random.key(3))
    b = M.prefix_sums(M.window_tree(16, 3, 4, noise=M.GAUSSIAN), window, xs, jax.random.key(3))
    assert np.asarray(a).tobytes() == np.asarray(b).tobytes()


def test_a_learner_built_from_the_object_is_the_learner_built_from_the_name():
    from jaxpriv import envs
    from jaxpriv.sim import SimParams, sweep

    ball = sets.l2_ball(3)
    env = envs.quadratic_stream(ball)
    env_p = envs.QuadraticParams(1.0, np.full(3, 0.1, np.float32), 0.3)
    params = SimParams(oco.PFTALParams(rho=0.5, lipschitz=2.0), env_p)
    runs = [
        sweep(oco.pftal(16, ball, noise), env, params, jax.random.key(1), 16, seeds=3)
        for noise in ("gaussian", M.GAUSSIAN)
    ]
    assert np.asarray(runs[0].regret).tobytes() == np.asarray(runs[1].regret).tobytes()
    with pytest.raises(ValueError, match="noise must be None or 'gamma'"):
        oco.pftal(16, ball, M.GAUSSIAN, mechanism=M.binary_tree(16, 3, M.GAMMA, neighbouring="replace"))


def _zeros(key, shape, dtype=np.float32):
    del key
    return jax.numpy.zeros(shape, dtype)


@pytest.mark.parametrize("family", FAMILIES, ids=lambda f: f.name)
def test_a_counterfeit_family_is_refused_before_compiling(family):
    """A ``NoiseFamily`` with a family's name but not the instance (here: a sampler that draws zeros) is refused
    by identity, by ``noise_family`` and by every factory that takes ``noise=`` (issue 45: ``pftal`` ran it with
    no noise while ``Result.private`` was True)."""
    import dataclasses

    fake = dataclasses.replace(family, sampler=_zeros)
    assert fake.name == family.name and fake is not family
    with pytest.raises(ValueError, match="another NoiseFamily object named"):
        M.noise_family(fake)
    ball = sets.l2_ball(3)
    factories = [
        lambda: M.binary_tree(8, 2, fake),
        lambda: M.honaker_tree(8, 2, fake),
        lambda: oco.pftal(8, ball, fake),
        lambda: oco.dp_ftrl(8, ball, fake),
        lambda: oco.regularized_pftal(8, ball, noise=fake),
        lambda: oco.private_experts(8, 3, fake),
    ]
    if family is not M.LAPLACE:
        factories += [lambda: M.window_tree(8, 2, 4, noise=fake), lambda: oco.wdp_cocop(8, ball, 4, noise=fake)]
    if family is M.GAUSSIAN:
        factories += [lambda: M.sqrt_factorization(8, 2, noise=fake), lambda: M.blt(8, 2, noise=fake)]
    for build in factories:
        with pytest.raises(ValueError, match="another NoiseFamily object named"):
            build()
