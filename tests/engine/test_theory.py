"""Regret-bound functions: exact formulas, optimal tuning, consistency between them."""

import jax.numpy as jnp
import numpy as np
import pytest

from jaxpriv import mechanisms, theory


def test_ogd_bounds_have_the_stated_constants():
    T = np.array([16.0, 1024.0])
    np.testing.assert_allclose(theory.ogd_regret_bound(T, 2.0, 3.0), 1.5 * 3.0 * 2.0 * np.sqrt(T), rtol=1e-6)
    sc = theory.ogd_regret_bound(T, 2.0, strong_convexity=0.5, schedule="strongly_convex")
    np.testing.assert_allclose(sc, 4.0 * (1 + np.log(T)) / 1.0, rtol=1e-6)
    with pytest.raises(ValueError, match="schedule"):
        theory.ogd_regret_bound(T, 1.0, schedule="adagrad")


def test_ftal_bound_is_pftals_without_noise():
    for T in (100, 4096):
        np.testing.assert_allclose(
            theory.ftal_regret_bound(T, 2.0, 0.7, 1.5),
            theory.pftal_gamma_regret_bound(T, 3, 2.0, 0.7, 1.5, jnp.inf),
            rtol=1e-6,
        )
        g = 2.0 + 0.7 * 1.5
        np.testing.assert_allclose(theory.ftal_regret_bound(T, 2.0, 0.7, 1.5), 2 * g * g * (1 + np.log(T)) / 0.7, 1e-6)


@pytest.mark.parametrize(("noise", "budget"), [("gamma", 0.5), ("gamma", 5.0), ("gamma", jnp.inf), ("gaussian", 0.1)])
@pytest.mark.parametrize("horizon", [256, 65536])
def test_theorem_11_strength_minimises_the_bound(noise, budget, horizon):
    dim, lip, radius = 4, 1.3, 2.0
    h_star = float(theory.regularized_pftal_strength(horizon, dim, lip, radius, budget, noise))
    hs = h_star * np.geomspace(0.2, 5.0, 41)
    bounds = np.asarray(
        theory.regularized_pftal_regret_bound(horizon, dim, lip, jnp.asarray(hs), radius, budget, noise)
    )
    at_star = float(theory.regularized_pftal_regret_bound(horizon, dim, lip, h_star, radius, budget, noise))
    assert at_star <= bounds.min() * (1 + 1e-5)
    assert bounds[0] > at_star * 1.01 and bounds[-1] > at_star * 1.01  # a real minimum, not a plateau


def test_theorem_11_strength_scales_like_the_paper():
    # H ~ sqrt(p log^{2.5} T / (εT)) up to constants once T >> κ (before, H saturates at L/(2R)):
    # the ratio stays within a narrow band over a 64-fold range of horizons.
    ratios = []
    for T in (2**24, 2**27, 2**30):
        h = float(theory.regularized_pftal_strength(T, 10, 1.0, 1.0, 1.0))
        ratios.append(h / np.sqrt(10 * np.log2(T) ** 2.5 / T))
    assert max(ratios) / min(ratios) < 1.25
    assert float(theory.regularized_pftal_strength(2**8, 10, 1.0, 1.0, 1.0)) <= 0.5  # L/(2R)
    # and the bound at the optimal H grows like sqrt(T) up to polylog factors
    b = [
        float(
            theory.regularized_pftal_regret_bound(
                T, 10, 1.0, theory.regularized_pftal_strength(T, 10, 1.0, 1.0, 1.0), 1.0, 1.0
            )
        )
        for T in (2**26, 2**30)
    ]
    slope = np.log(b[1] / b[0]) / np.log(2**4)
    assert 0.5 < slope < 0.8


def test_private_experts_bound_is_regularised_pftal_with_sqrt_p_and_unit_radius():
    h = 0.05
    np.testing.assert_allclose(
        theory.private_experts_regret_bound(1000, 9, h, 2.0),
        theory.regularized_pftal_regret_bound(1000, 9, 3.0, h, 1.0, 2.0),
        rtol=1e-6,
    )


def test_mi_theorem_2_bound_at_its_step_size():
    T, d, L, B = 1000, 5, 1.5, 2.0
    sigma = jnp.array([0.0, 0.3, 2.0])
    bound = theory.mi_ogd_regret_bound(T, d, L, B, sigma)
    np.testing.assert_allclose(bound, B * np.sqrt((L**2 + d * np.asarray(sigma) ** 2) * T), rtol=1e-6)
    eta = theory.mi_ogd_learning_rate(T, d, L, B, sigma)
    for factor in (0.5, 2.0):  # Theorem 2's η minimises the bound
        assert np.all(np.asarray(theory.mi_ogd_regret_bound(T, d, L, B, sigma, factor * eta)) > np.asarray(bound))
    # In terms of the MI budget: less information allowed, a larger bound.
    c = jnp.array([0.01, 0.1, 1.0])
    b_c = theory.mi_ogd_regret_bound(T, d, L, B, mechanisms.mutual_information_to_stddev(c, L, d))
    assert np.all(np.diff(np.asarray(b_c)) < 0)
