"""Accounting: exact Gaussian δ(ε), the analytic Gaussian calibration, zCDP conversions and their input checks.

Every calibration is checked against the exact privacy curve of the Gaussian mechanism
(Balle & Wang 2018, Thm 8), computed on the host in float64: the claim must hold
(true δ <= claimed δ) and, for the exact calibrations, not be wasted (true δ >= δ/2).
"""

import sys

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.optimize import minimize_scalar

from jaxpriv import mechanisms as M
from jaxpriv.mechanisms import _accounting

EPS_GRID = np.geomspace(0.01, 100.0, 25)
DELTAS = (1e-3, 1e-5, 1e-8)
DEPTHS = (1, 2, 4, 7)


def _mp_delta(sigma, sensitivity, epsilon):
    """Reference δ(ε) in 60-digit arithmetic (no cancellation issues at any ε)."""
    mpmath = pytest.importorskip("mpmath")  # installed with dp-accounting (the [accounting] extra)
    mpmath.mp.dps = 60
    mu = mpmath.mpf(sensitivity) / mpmath.mpf(sigma)
    eps = mpmath.mpf(epsilon)
    phi = lambda x: mpmath.ncdf(x)
    return float(phi(mu / 2 - eps / mu) - mpmath.exp(eps) * phi(-mu / 2 - eps / mu))


# --- the exact δ(ε) of the Gaussian mechanism --------------------------------------------------------


def test_gaussian_delta_is_balle_wang_theorem_8():
    sigma = np.array([0.05, 0.3, 1.0, 2.0, 7.0, 40.0])
    for eps in (0.0, 0.1, 1.0, 5.0, 30.0):
        ours = M.gaussian_delta(sigma, 1.0, eps)
        ref = np.array([_mp_delta(s, 1.0, eps) for s in sigma])
        np.testing.assert_allclose(ours, ref, rtol=1e-9, atol=1e-300)
    # ε = 0: the total variation distance of N(0, σ²) and N(Δ, σ²), 2Φ(Δ/2σ) - 1.
    np.testing.assert_allclose(M.gaussian_delta(sigma, 1.0, 0.0), 2 * _ndtr(0.5 / sigma) - 1, rtol=1e-12)
    # Scale invariance: only μ = Δ/σ matters.
    np.testing.assert_allclose(M.gaussian_delta(2 * sigma, 2.0, 1.0), M.gaussian_delta(sigma, 1.0, 1.0), rtol=1e-12)


def _ndtr(x):
    from scipy.special import ndtr

    return ndtr(x)


def test_gaussian_delta_is_stable_at_large_epsilon():
    """Large ε with μ² ~ ε: δ = Φ(a)(1 - e^r), r small; the naive difference of two tiny numbers loses it."""
    for mu in (20.0, 60.0, 100.0, 400.0):
        sigma, eps = 1 / mu, mu * (5 + mu / 2)  # a = μ/2 - ε/μ = -5: δ ~ 1e-7 while ε reaches 8e4
        ref = _mp_delta(sigma, 1.0, eps)
        assert ref > 1e-300
        assert float(M.gaussian_delta(sigma, 1.0, eps)) == pytest.approx(ref, rel=1e-8)


def test_gaussian_delta_limits():
    assert float(M.gaussian_delta(1.0, 0.0, 1.0)) == 0.0  # no sensitivity
    assert float(M.gaussian_delta(np.inf, 1.0, 1.0)) == 0.0  # infinite noise
    assert float(M.gaussian_delta(1.0, 1.0, np.inf)) == 0.0
    assert float(M.gaussian_delta(0.0, 1.0, 5.0)) == 1.0  # deterministic release
    # Decreasing in σ and in ε.
    assert np.all(np.diff(M.gaussian_delta(np.geomspace(0.1, 10, 50), 1.0, 1.0)) < 0)
    assert np.all(np.diff(M.gaussian_delta(1.0, 1.0, np.linspace(0, 10, 50))) < 0)


def test_gaussian_delta_matches_dp_accounting():
    dpa = pytest.importorskip("dp_accounting")
    from dp_accounting.pld import privacy_loss_mechanism as plm

    for sigma in (0.5, 1.0, 3.0):
        loss = plm.GaussianPrivacyLoss(sigma, 1.0, pessimistic_estimate=False)
        for eps in (0.1, 1.0, 3.0):
            assert float(M.gaussian_delta(sigma, 1.0, eps)) == pytest.approx(loss.get_delta_for_epsilon(eps), rel=1e-9)
        for delta in DELTAS:
            eps = dpa.get_epsilon_gaussian(sigma, delta)
            assert float(M.gaussian_delta(sigma, 1.0, eps)) == pytest.approx(delta, rel=1e-6)


# --- the analytic Gaussian calibration -----------------------------------------------------------


def test_analytic_gaussian_sigma_is_the_smallest_valid_sigma():
    eps, delta = np.meshgrid(np.geomspace(1e-3, 1e4, 36), np.array([1e-30, *DELTAS, 0.1, 0.5, 0.9]))
    sigma = M.analytic_gaussian_sigma(eps, delta)
    assert np.all(M.gaussian_delta(sigma, 1.0, eps) <= delta)  # valid (rounded up)
    assert np.all(M.gaussian_delta(sigma * (1 - 1e-9), 1.0, eps) > delta)  # and the smallest
    np.testing.assert_allclose(M.analytic_gaussian_sigma(eps, delta, 3.0), 3.0 * sigma, rtol=1e-15)
    assert float(M.analytic_gaussian_sigma(np.inf, 1e-5)) == 0.0
    assert float(M.analytic_gaussian_sigma(1.0, 1e-5, 0.0)) == 0.0
    # ε = 0 is fine: 2Φ(1/(2σ)) - 1 = δ.
    assert float(M.gaussian_delta(M.analytic_gaussian_sigma(0.0, 1e-5), 1.0, 0.0)) == pytest.approx(1e-5, rel=1e-9)


def test_analytic_gaussian_sigma_matches_dp_accounting():
    dpa = pytest.importorskip("dp_accounting")
    for eps in (0.05, 0.5, 1.0, 8.4, 50.0):
        for delta in DELTAS:
            assert float(M.analytic_gaussian_sigma(eps, delta)) == pytest.approx(
                dpa.get_sigma_gaussian(eps, delta), rel=1e-8
            )


def test_traced_calibration_is_never_below_the_exact_sigma_and_compiles_once():
    """``analytic_gaussian_stddev`` under jit + vmap: true δ <= δ on a wide grid, >= δ/2 on the usual grid."""
    # Traced (compiled) at most once: new privacy values of the same shape must not recompile.
    chex.clear_trace_counter()
    fn = jax.jit(jax.vmap(chex.assert_max_traces(_accounting.analytic_gaussian_stddev, n=1)))
    eps, delta = np.meshgrid(EPS_GRID, np.array(DELTAS))
    sigma = np.asarray(fn(jnp.asarray(eps.ravel()), jnp.asarray(delta.ravel())), np.float64)
    true = M.gaussian_delta(sigma, 1.0, eps.ravel())
    assert np.all((true <= delta.ravel()) & (true >= 0.5 * delta.ravel())), (true / delta.ravel()).min()
    wide_eps, wide_delta = np.meshgrid(np.geomspace(1e-4, 1e5, 25), np.array([1e-30, 1e-12, 0.999]))
    sigma = np.asarray(fn(jnp.asarray(wide_eps.ravel()), jnp.asarray(wide_delta.ravel())), np.float64)
    true = M.gaussian_delta(sigma, 1.0, wide_eps.ravel())
    assert np.all(true <= wide_delta.ravel()), (true / wide_delta.ravel()).max()
    # Far from the usual grid float32 cannot resolve the curve's last digits: σ stays valid, within 20% of exact.
    exact = M.analytic_gaussian_sigma(wide_eps.ravel(), wide_delta.ravel())
    assert np.all(sigma <= 1.2 * exact), (sigma / exact).max()
    assert float(_accounting.analytic_gaussian_stddev(jnp.inf, 1e-5)) == 0.0


# --- the window tree's Gaussian calibrations against the exact curve ------------------------------------


@pytest.mark.parametrize("depth", DEPTHS)
def test_composition_calibration_meets_the_claim_for_sensitivity_sqrt_k(depth):
    """The k_W nodes of one input are one Gaussian mechanism of sensitivity sqrt(k_W)·s: δ/2 <= true δ <= δ."""
    s = 0.8
    eps, delta = np.meshgrid(EPS_GRID, np.array(DELTAS))
    sigma = np.asarray(M.window_node_scale("gaussian", eps, delta, s, depth, "composition"), np.float64)
    true = M.gaussian_delta(sigma, np.sqrt(depth) * s, eps)
    assert np.all(true <= delta), (true / delta).max()
    assert np.all(true >= 0.5 * delta), (true / delta).min()
    np.testing.assert_allclose(M.window_gaussian_delta(eps, delta, depth, "composition"), true, rtol=1e-4)
    # Power: the former formula σ = sqrt(k) s sqrt(2 ln(1.25/δ))/ε (valid for ε < 1) fails this check.
    old = np.sqrt(depth) * s * np.sqrt(2 * np.log(1.25 / delta)) / eps
    assert np.any(M.gaussian_delta(old, np.sqrt(depth) * s, eps) > delta)
    assert np.all(M.gaussian_delta(old, np.sqrt(depth) * s, eps)[eps < 1] <= delta[eps < 1])


def test_former_composition_formula_fails_from_epsilon_8_4_at_delta_1e_5():
    eps = np.linspace(1.0, 20.0, 1901)
    old = np.sqrt(2 * np.log(1.25 / 1e-5)) / eps
    first = eps[M.gaussian_delta(old, 1.0, eps) > 1e-5][0]
    assert 8.3 < first < 8.5


@pytest.mark.parametrize("depth", DEPTHS)
def test_paper_calibration_meets_the_claim_on_the_grid_and_is_refused_where_it_does_not(depth):
    eps, delta = np.meshgrid(EPS_GRID, np.array(DELTAS))
    sigma = np.asarray(M.window_node_scale("gaussian", eps, delta, 1.0, depth), np.float64)
    true = M.gaussian_delta(sigma, np.sqrt(depth), eps)
    assert np.all(true <= delta)  # Lemma 3's σ holds on ε in [0.01, 100] (it is far larger than needed)
    for d in (*DELTAS, 0.5):
        eps_max = M.paper_calibration_max_epsilon(d, depth)
        assert eps_max > (100.0 if d < 0.01 else 30.0)
        assert M.window_gaussian_delta(eps_max * 0.999, d, depth, "paper") <= d
        assert M.window_gaussian_delta(eps_max * 1.01, d, depth, "paper") > d
        tree = M.window_tree(2 ** (depth - 1) * 4, 1, 2 ** (depth - 1), "gaussian")
        assert M.window_depth(2 ** (depth - 1), 2 ** (depth - 1) * 4) == depth
        tree.check(M.WindowTreeParams(eps_max * 0.999, d))
        with pytest.raises(ValueError, match="calibration='composition'"):
            tree.check(M.WindowTreeParams(eps_max * 1.01, d))


# --- conversions: inputs checked, closed forms traceable, the tight conversion ---------------------------


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda: M.dp_to_zcdp(-1.0), "epsilon"),
        (lambda: M.dp_to_zcdp(float("nan")), "epsilon"),
        (lambda: M.dp_to_zcdp("1.0"), "epsilon"),
        (lambda: M.dp_to_zcdp(np.array([1.0, -0.5])), "epsilon"),
        (lambda: M.zcdp_to_dp(1.0, 1.0), "delta"),
        (lambda: M.zcdp_to_dp(1.0, 0.0), "delta"),
        (lambda: M.zcdp_to_dp(1.0, 1.5), "delta"),
        (lambda: M.zcdp_to_dp(1.0, -0.1), "delta"),
        (lambda: M.zcdp_to_dp(1.0, float("nan")), "delta"),
        (lambda: M.zcdp_to_dp(1.0, np.array([1e-5, 1.0])), "delta"),
        (lambda: M.zcdp_to_dp(-1.0, 1e-5), "rho"),
        (lambda: M.zcdp_to_dp(float("nan"), 1e-5), "rho"),
        (lambda: M.zcdp_to_dp_tight(-1.0, 1e-5), "rho"),
        (lambda: M.zcdp_to_dp_tight(1.0, 1.0), "delta"),
        (lambda: M.zcdp_to_dp_tight(1.0, 0.0), "delta"),
        (lambda: M.gaussian_delta(-1.0, 1.0, 1.0), "sigma"),
        (lambda: M.gaussian_delta(1.0, -1.0, 1.0), "sensitivity"),
        (lambda: M.gaussian_delta(1.0, 1.0, -1.0), "epsilon"),
        (lambda: M.analytic_gaussian_sigma(-1.0, 1e-5), "epsilon"),
        (lambda: M.analytic_gaussian_sigma(1.0, 0.0), "delta"),
        (lambda: M.analytic_gaussian_sigma(1.0, 1e-5, -2.0), "sensitivity"),
        (lambda: M.analytic_gaussian_stddev(0.0, 1e-5), "epsilon"),
        (lambda: M.analytic_gaussian_stddev(1.0, 1.0), "delta"),
        (lambda: M.gaussian_stddev(-0.5, 1.0), "rho"),
        (lambda: M.gamma_node_scale(-1.0, 1.0, 3), "epsilon"),
        (lambda: M.gaussian_node_stddev(0.5, -1.0, 3), "sensitivity"),
    ],
)
def test_invalid_conversion_inputs_raise_naming_the_argument(call, name):
    with pytest.raises(ValueError, match=f"^{name} must"):
        call()


def test_conversion_limits_and_traced_inputs():
    assert float(M.dp_to_zcdp(0.0)) == 0.0
    assert float(M.dp_to_zcdp(jnp.inf)) == np.inf
    assert float(M.zcdp_to_dp(0.0, 1e-5)) == 0.0
    assert float(M.zcdp_to_dp(np.inf, 1e-5)) == np.inf
    np.testing.assert_array_equal(M.zcdp_to_dp_tight([0.0, np.inf], 1e-5), [0.0, np.inf])
    # Inside jit the (tracer) inputs are not checked: the closed forms stay traceable and vmap.
    assert float(jax.jit(M.dp_to_zcdp)(-1.0)) == 0.5
    out = jax.jit(jax.vmap(M.zcdp_to_dp))(jnp.array([0.1, 1.0]), jnp.array([1e-5, 1e-3]))
    np.testing.assert_allclose(out, [0.1 + 2 * np.sqrt(0.1 * np.log(1e5)), 1.0 + 2 * np.sqrt(np.log(1e3))], rtol=1e-6)


def _cks_prop12(rho, delta):
    """Canonne, Kamath & Steinke 2020, Prop. 12, minimised over continuous α > 1 (an independent reference)."""
    f = lambda a: a * rho + np.log1p(-1 / a) - np.log(delta * a) / (a - 1)
    star = 1 + np.sqrt(np.log(1 / delta) / rho)
    res = minimize_scalar(
        lambda la: f(1 + np.exp(la)), bounds=(np.log(star - 1) - 5, np.log(star - 1) + 5), method="bounded"
    )
    return max(res.fun, 0.0)


def test_tight_zcdp_conversion_is_below_the_closed_form_and_matches_known_values():
    pytest.importorskip("dp_accounting")
    rho, delta = np.meshgrid(np.geomspace(1e-3, 100.0, 16), np.array([*DELTAS, 0.1]))
    tight = M.zcdp_to_dp_tight(rho, delta)
    closed = np.asarray(M.zcdp_to_dp(rho, delta), np.float64)
    assert np.all(tight < closed * (1 - 1e-4)), (tight / closed).max()
    ref = np.vectorize(_cks_prop12)(rho, delta)
    np.testing.assert_allclose(tight, ref, rtol=2e-4)
    # A Gaussian mechanism with σ = 1/sqrt(2ρ) is ρ-zCDP: no conversion can beat its exact ε.
    import dp_accounting

    exact = np.vectorize(lambda r, d: dp_accounting.get_epsilon_gaussian(1 / np.sqrt(2 * r), d))(rho, delta)
    assert np.all(exact <= tight)
    # Known value: ρ = 1/2 (σ = 1), δ = 1e-5: 5.2985 from the closed form, 4.7284 through RDP.
    assert float(M.zcdp_to_dp(0.5, 1e-5)) == pytest.approx(5.2985, abs=1e-4)
    assert float(M.zcdp_to_dp_tight(0.5, 1e-5)) == pytest.approx(4.7284, abs=1e-4)


def test_tight_conversion_without_dp_accounting_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "dp_accounting", None)  # import dp_accounting -> ImportError
    with pytest.raises(ImportError, match=r"pip install jaxpriv\[accounting\]"):
        M.zcdp_to_dp_tight(0.5, 1e-5)
