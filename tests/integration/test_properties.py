"""Property-based tests (hypothesis) of the privacy-critical constructors, params and helpers.

Random valid configurations keep their invariants (the calibrated noise scale is the formula
of the claimed guarantee; clipped inputs have norm <= the bound), and random invalid ones
raise ``ValueError`` before anything is compiled. Example counts are bounded for CI.
"""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxpriv import mechanisms as M
from jaxpriv import oco, sets

FAST = settings(max_examples=40, deadline=None)
FAMILIES = st.sampled_from(M.NOISE_FAMILIES)
BUDGETS = st.floats(1e-3, 1e3)
SENSITIVITIES = st.floats(0.0, 100.0)


def _factories(noise: str) -> list:
    """Every prefix-sum factory that takes ``TreeParams`` and supports ``noise``."""
    out = [M.binary_tree, M.honaker_tree]
    if noise == "gaussian":
        out += [M.sqrt_factorization, M.blt]
    return out


def _expected_scale(noise: str, budget: float, sens: float, depth: int) -> float:
    """The per-node scale of the tree of Smith & Thakurta (Alg. 2): ε/D per node, or ρ/D (Gaussian)."""
    if noise == "gaussian":
        return sens * math.sqrt(depth / (2.0 * budget))  # σ of a ρ/D-zCDP Gaussian node
    return depth * sens / budget  # Gamma / Laplace scale D·s/ε


@FAST
@given(FAMILIES, BUDGETS, SENSITIVITIES, st.integers(1, 2**20), st.sampled_from(M.NEIGHBOURING))
def test_tree_noise_scale_is_the_formula_of_the_claimed_guarantee(noise, budget, sens, horizon, neighbouring):
    tree = M.binary_tree(horizon, 2, noise, neighbouring)
    params = M.TreeParams(**{M.budget_field(noise): budget}, sensitivity=sens)
    if M.component_delta_floor(tree, params) > M.SAMPLER_DELTA_MAX:  # the samplers' δ floor: refused by check
        with pytest.raises(ValueError, match="SAMPLER_DELTA_MAX"):
            tree.check(params)
    else:
        tree.check(params)
    state = tree.init(jax.random.key(0), params)
    s = sens * (2.0 if neighbouring == "replace" else 1.0)
    expected = _expected_scale(noise, budget, s, M.tree_depth(horizon))
    assert float(state.scale) == pytest.approx(expected, rel=2e-6, abs=1e-30)


@FAST
@given(FAMILIES, st.data())
def test_a_missing_or_wrong_family_budget_is_refused_by_check_and_init(noise, data):
    factory = data.draw(st.sampled_from(_factories(noise)))
    mech = factory(16, 2, noise) if factory in (M.binary_tree, M.honaker_tree) else factory(16, 2)
    other = "epsilon" if noise == "gaussian" else "rho"
    own = M.budget_field(noise)
    bad = data.draw(
        st.sampled_from(
            [
                M.TreeParams(sensitivity=1.0),  # no budget at all
                M.TreeParams(**{other: 1.0}),  # another family's budget only
                M.TreeParams(**{own: 1.0, other: 1.0}),  # both
            ]
        )
    )
    with pytest.raises(ValueError, match=own):
        mech.check(bad)
    with pytest.raises(ValueError, match=own):  # init refuses too, even traced (None is static)
        jax.eval_shape(mech.init, jax.random.key(0), bad)


@FAST
@given(
    FAMILIES,
    st.one_of(
        st.floats(max_value=0.0),
        st.just(float("nan")),
        st.floats(1e-300, 9.9e-31),
        st.just("1.0"),
    ),
)
def test_invalid_budget_values_are_refused_before_compiling(noise, value):
    params = M.TreeParams(**{M.budget_field(noise): value})
    with pytest.raises(ValueError, match=M.budget_field(noise)):
        M.binary_tree(8, 1, noise).check(params)


@FAST
@given(FAMILIES, BUDGETS, st.sampled_from([sets.l2_ball(3), sets.simplex(3)]))
def test_pftal_takes_exactly_its_familys_budget(noise, budget, constraint):
    learner = oco.pftal(32, constraint, noise)
    own, other = M.budget_field(noise), ("epsilon" if noise == "gaussian" else "rho")
    good = oco.PFTALParams(**{own: budget}, lipschitz=1.0, strong_convexity=1.0)
    if M.component_delta_floor(learner, good) > M.SAMPLER_DELTA_MAX:  # the samplers' δ floor: refused
        with pytest.raises(ValueError, match="SAMPLER_DELTA_MAX"):
            learner.check(good)
    else:
        learner.check(good)
    state = learner.init(jax.random.key(0), good)
    clip = math.sqrt(3) if noise == "laplace" else 1.0
    expected = _expected_scale(noise, budget, 2.0 * clip, M.tree_depth(32))  # replace-one: 2L
    assert float(state.tree.scale) == pytest.approx(expected, rel=2e-6)
    for bad in (good._replace(**{own: None}), good._replace(**{other: budget})):
        with pytest.raises(ValueError, match=own):
            learner.check(bad)
        with pytest.raises(ValueError, match=own):
            learner.init(jax.random.key(0), bad)


VECTORS = st.lists(st.floats(-1.0, 1.0), min_size=1, max_size=6).filter(lambda v: any(abs(x) > 1e-3 for x in v))


@FAST
@given(VECTORS, st.integers(-30, 38), st.floats(1e-3, 1e3), st.sampled_from(["l2", "l1"]))
def test_clipped_inputs_have_norm_at_most_the_bound_at_every_scale(v, exponent, bound, norm):
    x = np.asarray(v, np.float64) * 10.0**exponent
    x32 = np.asarray(x, np.float32)
    if not np.all(np.isfinite(x32)):
        return
    clip = M.clip_l2 if norm == "l2" else M.clip_l1
    out = np.asarray(clip(jnp.asarray(x32), jnp.float32(bound)), np.float64)
    size = (lambda y: np.linalg.norm(y)) if norm == "l2" else (lambda y: np.abs(y).sum())
    assert np.all(np.isfinite(out))
    assert size(out) <= bound * (1 + 1e-5)
    x64 = x32.astype(np.float64)
    if size(x64) <= bound * (1 - 1e-5):
        # inside the bound: untouched (a float32 subnormal entry may be flushed to zero by XLA's CPU)
        np.testing.assert_allclose(out, x64, rtol=0, atol=float(np.finfo(np.float32).tiny))
    elif size(x64) > bound * (1 + 1e-5):
        # clipped to the bound, along the same direction (the float32 overflow of ||x||² once gave 0)
        assert size(out) == pytest.approx(bound, rel=1e-4)
        cos = np.dot(out, x64) / (np.linalg.norm(out) * np.linalg.norm(x64))
        assert cos == pytest.approx(1.0, abs=1e-5)


@FAST
@given(st.floats(1e-3, 1e3), st.integers(1, 64))
def test_mi_ogd_refuses_an_unset_mutual_information_and_takes_inf_explicitly(budget, horizon):
    learner = oco.mi_ogd(sets.l2_ball(2), horizon)
    with pytest.raises(ValueError, match="mutual_information"):
        learner.check(oco.MIOGDParams(lipschitz=1.0))
    learner.check(oco.MIOGDParams(budget, lipschitz=1.0))
    free = learner.init(jax.random.key(0), oco.MIOGDParams(float("inf"), lipschitz=1.0))
    assert float(free.stddev) == 0.0


@FAST
@given(
    st.floats(0.01, 200.0),
    st.sampled_from([1e-3, 1e-5, 1e-8]),
    st.sampled_from([1, 2, 8, 64]),
    st.sampled_from(["composition", "paper"]),
    st.floats(0.1, 10.0),
)
def test_the_true_delta_of_every_gaussian_window_tree_claim_is_at_most_the_claim(eps, delta, window, cal, sens):
    # The exact delta(eps) of the Gaussian mechanism (Balle & Wang 2018, Thm 8) that the k_W nodes one
    # input enters form: sensitivity sqrt(k_W) * s, per-node noise sigma (read from the state init computes).
    horizon = 128
    tree = M.window_tree(horizon, 2, window, "gaussian", calibration=cal)
    params = M.WindowTreeParams(epsilon=eps, delta=delta, sensitivity=sens)
    tree.check(params)
    sigma = float(tree.init(jax.random.key(0), params).scale)
    depth = M.window_depth(window, horizon)
    true_delta = float(M.gaussian_delta(sigma, math.sqrt(depth) * sens, eps))
    assert true_delta <= delta, (sigma, true_delta, delta)
    if cal == "composition":  # calibrated exactly: not wastefully large either
        assert true_delta >= 0.5 * delta


@FAST
@given(
    st.one_of(st.floats(max_value=-1e-9), st.just(float("nan")), st.just("0.5")),
    st.sampled_from(["dp_to_zcdp", "zcdp_to_dp_rho", "zcdp_to_dp_delta"]),
)
def test_accounting_conversions_refuse_invalid_inputs(value, which):
    with pytest.raises(ValueError):
        if which == "dp_to_zcdp":
            M.dp_to_zcdp(value)
        elif which == "zcdp_to_dp_rho":
            M.zcdp_to_dp(value, 1e-5)
        else:
            M.zcdp_to_dp(1.0, value)


@FAST
@given(st.one_of(st.floats(1.0, 10.0), st.just(0.0), st.floats(-5.0, -1e-9)))
def test_zcdp_to_dp_refuses_delta_outside_the_open_unit_interval(delta):
    with pytest.raises(ValueError, match="delta"):
        M.zcdp_to_dp(1.0, delta)


def _fingerprint(learner, env, params, horizon):
    from jaxpriv.sim import _resume

    return _resume.fingerprint(
        learner, env, horizon=horizon, seeds=2, chunk=None, segment=None, checkpoints=(horizon,),
        keys=jax.random.split(jax.random.key(0), 2), params=params,
    )


@settings(max_examples=12, deadline=None)
@given(
    st.sampled_from(M.NOISE_FAMILIES),
    st.sampled_from(M.NOISE_FAMILIES),
    st.floats(0.5, 4.0),
    st.floats(0.5, 4.0),
)
def test_a_changed_static_argument_changes_the_fingerprint(noise_a, noise_b, radius_a, radius_b):
    from jaxpriv import envs

    def build(noise, radius):
        ball = sets.l2_ball(3, radius)
        env = envs.quadratic_stream(ball)
        lp = oco.PFTALParams(**{M.budget_field(noise): 1.0}, lipschitz=2.0)
        params = (lp, envs.QuadraticParams(1.0, jnp.zeros(3), 0.3))
        from jaxpriv.sim import SimParams, canonical_params

        return oco.pftal(16, ball, noise), env, canonical_params(SimParams(*params))

    a = _fingerprint(*build(noise_a, radius_a), 16)
    b = _fingerprint(*build(noise_b, radius_b), 16)
    same = noise_a == noise_b and np.float32(radius_a) == np.float32(radius_b)
    assert (a == b) == same
