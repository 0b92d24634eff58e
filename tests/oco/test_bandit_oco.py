"""Bandit-feedback convex learners: the one-point estimator, played points in C, Algorithm 3 at ε = ∞,
regret slopes of Theorem 6's presets, regret below the theorems' bounds, MI accounting, bad input."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxpriv as jp
from jaxpriv import envs, mechanisms, oco, sets, theory
from jaxpriv._base import EnvInfo
from jaxpriv.oco import one_point
from jaxpriv.testing import mean_with_stderr, rollout

SETS = [sets.l2_ball(3), sets.box(3, -0.5, 1.0), sets.simplex(3), sets.l1_ball(3)]


def _action(t, action, feedback, info, learner_state, env_state):
    return action


def played_points(learner, env, params, horizon, seeds, seed=0):
    """The points a learner plays over whole runs, ``[grid..., seeds, T, d]`` (float64).

    The engine's runs (``jaxpriv.testing.rollout``: ``jaxpriv.sweep``'s seeds), recording the actions;
    params leaves with a leading grid axis are swept as in ``jaxpriv.sweep``.
    """
    out = rollout(learner, env, params, jax.random.key(seed), horizon, seeds=seeds, record=_action)
    return np.asarray(out.records, np.float64)


def outside(c, w):
    """How far ``w`` (float64) lies outside ``C`` in the set's own inequalities (<= 0: inside), and the slack."""
    if c.name == "l2_ball":
        return np.linalg.norm(w, axis=-1) - c.radius
    if c.name == "l1_ball":
        return np.abs(w).sum(-1) - c.radius
    if c.name == "box":
        return np.maximum(-0.5 - w, w - 1.0).max(-1)
    return (-w).max(-1)  # simplex: w >= 0 (the hull's equation is checked separately)


# --- the one-point estimator -------------------------------------------------------------------------


def _estimates(c, loss, w, beta, n, factor=None):
    """``n`` one-point estimates at ``w`` (float64); ``factor(p, beta)`` replaces ``p/β`` (a wrong constant)."""
    p = one_point.sphere_dim(c)
    keys = jax.random.split(jax.random.key(7), n)
    u = jax.vmap(lambda k: one_point.sample_direction(k, c))(keys)
    values = jax.vmap(loss)(w + beta * u)
    if factor is None:
        g = jax.vmap(lambda v, e: one_point.one_point_gradient(v, e, jnp.float32(beta), p))(values, u)
    else:
        g = factor(p, beta) * values[:, None] * u
    return np.asarray(g, np.float64)


def _max_z(g, expected):
    mean, se = mean_with_stderr(g, axis=0)
    return np.max(np.abs(mean - expected) / se)


A = np.array([1.0, -0.5, 0.25, 0.8])
Z = np.array([0.4, -0.2, 0.1, 0.3])
ESTIMATOR_CASES = [
    # linear f(w) = <a, w> + 0.3: ∇f̂ = a; on the simplex the estimate lives in the hull's tangent space: a - mean(a)
    ("linear_ball", sets.l2_ball(4), lambda x: jnp.dot(jnp.asarray(A, jnp.float32), x) + 0.3, A),
    ("linear_simplex", sets.simplex(4), lambda x: jnp.dot(jnp.asarray(A, jnp.float32), x) + 0.3, A - A.mean()),
    # quadratic f = (H/2)||w - z||²: f̂ = f + const, so ∇f̂ = H(w - z) exactly
    ("quadratic_ball", sets.l2_ball(4), lambda x: 0.75 * jnp.sum((x - jnp.asarray(Z, jnp.float32)) ** 2), None),
]


@pytest.mark.parametrize(("name", "c", "loss", "grad"), ESTIMATOR_CASES, ids=[c[0] for c in ESTIMATOR_CASES])
def test_one_point_estimate_is_unbiased_for_the_smoothed_gradient_and_wrong_factors_fail(name, c, loss, grad):
    n, beta = 200_000, 0.5
    w = jnp.full((4,), 0.25 if c.name == "simplex" else 0.1, jnp.float32)
    expected = grad if grad is not None else 1.5 * (np.asarray(w, np.float64) - Z)
    crit = 4.5  # per coordinate; 4 coordinates: a false alarm has probability < 3e-5
    assert _max_z(_estimates(c, loss, w, beta, n), expected) < crit
    # The same test rejects the estimate with a wrong constant: 1 instead of p, β² instead of β.
    assert _max_z(_estimates(c, loss, w, beta, n, lambda p, b: 1.0 / b), expected) > crit
    assert _max_z(_estimates(c, loss, w, beta, n, lambda p, b: p / b**2), expected) > crit
    # Directions are unit vectors (in the simplex's hull: sum u = 0).
    u = jax.vmap(lambda k: one_point.sample_direction(k, c))(jax.random.split(jax.random.key(1), 100))
    np.testing.assert_allclose(np.linalg.norm(np.asarray(u, np.float64), axis=1), 1.0, rtol=1e-6)
    if c.name == "simplex":
        np.testing.assert_allclose(np.asarray(u).sum(1), 0.0, atol=1e-6)


# --- sets: inner balls ---------------------------------------------------------------------------------


@pytest.mark.parametrize("c", [*SETS, sets.simplex(5, 2.0), sets.box(4, 0.0, 3.0)], ids=lambda c: c.name)
def test_inner_ball_lies_in_the_set_and_is_the_largest_one_and_the_outer_radius_is_exact(c):
    r, outer = sets.bandit_radii(c)
    centre = np.asarray(c.inner_center, np.float64)
    d = c.dim
    g = np.random.default_rng(0).standard_normal((20_000, d))
    if c.name == "simplex":
        g -= g.mean(1, keepdims=True)
        assert centre.sum() == pytest.approx(c.radius)  # in the hull {sum w = total}
    u = g / np.linalg.norm(g, axis=1, keepdims=True)
    proj = lambda x: np.asarray(c.project(jnp.asarray(x, jnp.float32)), np.float64)
    on_sphere = centre + r * u
    assert np.max(np.linalg.norm(proj(on_sphere) - on_sphere, axis=1)) < 1e-5 * max(r, 1.0)
    # Largest: 1% more radius leaves C in the worst direction (towards a facet).
    worst = np.linalg.norm(proj(centre + 1.01 * r * u) - (centre + 1.01 * r * u), axis=1).max()
    assert worst > 1e-3 * r
    # R_c: the farthest point of C from the centre (a vertex for the polytopes; the sphere for the ball).
    far = np.linalg.norm(proj(centre + 100.0 * outer * u) - centre, axis=1).max()
    assert far == pytest.approx(outer, rel=2e-3)
    assert far <= outer * (1 + 1e-6)


# --- played points stay in C ---------------------------------------------------------------------------


def _far_quadratic(c):
    """A quadratic stream whose optimum lies on the boundary: the played points are pushed against it."""
    env = envs.bandit_feedback(envs.quadratic_stream(c, z_radius=3.0))
    return env, envs.QuadraticParams(1.0, jnp.array([2.0, -1.5, 1.0]), 0.5)


@pytest.mark.parametrize("c", SETS, ids=lambda c: c.name)
def test_every_played_point_lies_in_c_over_whole_runs_for_both_presets(c):
    """Algorithm 3 at both presets' β (one grid; the presets differ only in their defaults: the slope
    test checks that each preset's learner takes the β used here), FKM on the ball and MI bandit OGD
    on the simplex (the same shrunk projection and directions), under tree / channel noise that
    throws the leader point around."""
    T, seeds = 400, 8
    env, ep = _far_quadratic(c)
    r, _ = sets.bandit_radii(c)
    p = one_point.sphere_dim(c)
    betas = jnp.stack([theory.bandit_ftal_exploration(T, p, r, preset) for preset in ("oblivious", "adaptive")])
    lp = oco.PrivateBanditFTALParams(epsilon=2.0, loss_bound=20.0, exploration=betas)
    runs = {"private_bandit_ftal": (oco.private_bandit_ftal(T, c), lp)}
    if c.name == "l2_ball":
        runs["fkm"] = (oco.fkm(T, c), oco.FKMParams(loss_bound=20.0, lipschitz=5.0))
    if c.name == "simplex":
        runs["mi_bandit_ogd"] = (oco.mi_bandit_ogd(T, c), oco.MIBanditOGDParams(1.0, loss_bound=20.0, lipschitz=5.0))
    for name, (learner, lp) in runs.items():
        w = played_points(learner, env, jp.SimParams(lp, ep), T, seeds)
        assert np.all(np.isfinite(w)), name
        gap = outside(c, w)
        assert np.all(gap <= 0.0), (name, gap.max())  # exactly inside, in float64, on the float32 points
        if c.name == "simplex":
            # The hull's equation holds to float32 rounding of the projection: the tree's noise puts the
            # leader point at |y| ~ 100, whose projection rounds at ulp(100) ~ 8e-6 per coordinate.
            assert np.max(np.abs(w.sum(-1) - 1.0)) < 1e-4, name
        # Power: the runs press against the boundary (closer than β/10), so a learner that did not
        # shrink its set by β/r would leave C (on the simplex, the facet distance is β·sqrt(1/(p(p+1)))-scaled).
        beta = (
            np.asarray(betas)
            if name == "private_bandit_ftal"
            else float(learner.init(jax.random.key(0), jp.sim.canonical_params(lp)).exploration)
        )
        assert np.all((0 < beta) & (beta < r))
        scale = 1.0 / np.sqrt(p * (p + 1)) if c.name == "simplex" else 1.0
        closest = gap.max(axis=(-2, -1))  # per grid point
        assert np.all(closest > -0.1 * beta * scale), (name, closest, beta)


# --- Algorithm 3 at ε = ∞ is bandit FTAL -----------------------------------------------------------------

EXACT_CASES = [
    (sets.l2_ball(3), "gamma", "oblivious"),
    (sets.simplex(3), "gaussian", "adaptive"),
    (sets.box(3, -0.5, 1.0), "laplace", "general_convex"),
]


@pytest.mark.parametrize(("c", "noise", "preset"), EXACT_CASES, ids=lambda x: getattr(x, "name", x))
def test_private_bandit_ftal_at_infinite_budget_is_bandit_ftal_bit_for_bit(c, noise, preset):
    T = 200
    env = envs.bandit_feedback(envs.quadratic_stream(c))
    ep = envs.QuadraticParams(1.3, jnp.array([0.6, -0.2, 0.1]), 0.2)
    # |f| <= (H/2)(2R)² < 10: the clip is inactive
    pp = oco.PrivateBanditFTALParams(**{mechanisms.budget_field(noise): jnp.inf}, loss_bound=10.0)
    private = oco.private_bandit_ftal(T, c, noise, preset)
    # Every step of two seeds, through sweep: for this learner its compiled program costs about half of jaxpriv.run's
    # (measured 2026-11-30 under the suite's XLA flags; not so for every learner); jaxpriv.run's own program is
    # compared with sweep's below (gamma).
    a = jp.sweep(private, env, jp.SimParams(pp, ep), 0, T, seeds=2, checkpoints=None)
    b = jp.sweep(oco.bandit_ftal(T, c, preset), env, jp.SimParams(oco.BanditFTALParams(), ep), 0, T, 2, None)
    np.testing.assert_array_equal(a.loss, b.loss)
    np.testing.assert_array_equal(a.regret, b.regret)
    # Power: a finite budget changes the points (the budget is traced: the same compiled sweep as a's).
    pp = pp._replace(**{mechanisms.budget_field(noise): 10.0})
    n = jp.sweep(private, env, jp.SimParams(pp, ep), 0, T, seeds=2, checkpoints=None)
    assert not np.array_equal(n.loss[0], b.loss[0]) and not np.array_equal(n.loss[1], b.loss[1])
    if noise == "gamma":  # vmap (sweep) and a single jitted run give the same numbers for the same key
        swept = jp.sweep(private, env, jp.SimParams(pp, ep), 4, T, seeds=2, checkpoints=None)
        for i, key in enumerate(jax.random.split(jax.random.key(4), 2)):
            single = jp.run(private, env, jp.SimParams(pp, ep), key, T, checkpoints=None)
            np.testing.assert_allclose(single.regret, swept.regret[i], rtol=1e-5, atol=1e-4)


# --- regret: Theorem 6's exponents, privacy levels, bounds ------------------------------------------------


def test_regret_slopes_match_theorem_6_exponents_for_both_presets():
    """Log-log slope of the regret over T = 2^9..2^15 at each preset's β, on a fixed linear loss.

    Experts stream with deterministic costs (0, 1, 1) on the simplex: the optimum is a vertex, the
    loss is 0 there, so the one-point estimates have small variance, and the regret is dominated by
    the shrinking term ξ(1 - 1/p)T with ξ = p'/T^a: slope 1 - a, i.e. 2/3 (oblivious, β ∝ p/T^{1/3}) and
    3/4 (adaptive, β ∝ p/T^{1/4}). At ε = ∞ (bit for bit bandit FTAL; the tree's noise adds the
    log^{2.5}T factor of Theorem 6, which a four-point fit cannot separate from the power). Tolerance:
    the two exponents differ by 1/12; each fitted slope must lie within 0.04 of its own exponent,
    hence farther than 0.04 from the other (the test tells the presets apart). β of every horizon is
    the preset's (checked against the learners' own defaults), given as one grid (one compilation).
    """
    c = sets.simplex(3)
    p, r = one_point.sphere_dim(c), c.inner_radius
    horizons = [2**9, 2**11, 2**13, 2**15]
    exponents = {"oblivious": 2.0 / 3.0, "adaptive": 0.75}
    betas = []
    for preset in exponents:
        for T in horizons:
            beta = float(theory.bandit_ftal_exploration(T, p, r, preset))
            state = oco.private_bandit_ftal(T, c, preset=preset).init(
                jax.random.key(0), jp.sim.canonical_params(oco.PrivateBanditFTALParams(1.0))
            )
            assert float(state.exploration) == pytest.approx(beta, rel=1e-6)
            betas.append(beta)
    learner = oco.private_bandit_ftal(horizons[-1], c)
    lp = oco.PrivateBanditFTALParams(jnp.inf, strong_convexity=1.0, exploration=jnp.asarray(betas))
    env = envs.bandit_feedback(envs.experts_stream(3))
    res = jp.sweep(
        learner, env, jp.SimParams(lp, envs.ExpertsParams(jnp.array([0.0, 1.0, 1.0]))), 3, horizons[-1], 4, horizons
    )
    regret = np.asarray(res.regret)  # [2 presets × 4 horizons, seeds, 4 checkpoints]
    for i, (preset, exponent) in enumerate(exponents.items()):
        means = np.array([regret[4 * i + j, :, j].mean() for j in range(4)])
        slope = np.polyfit(np.log(horizons), np.log(means), 1)[0]
        other = exponents["adaptive" if preset == "oblivious" else "oblivious"]
        assert abs(slope - exponent) < 0.04, (preset, slope, means)
        assert abs(slope - other) > 0.04, (preset, slope)


def _quadratic_constants(c, z_radius, h):
    """``(L, B)`` of ``f = (H/2)||w - z||²`` on ``C`` with ``||z|| <= z_radius``."""
    reach = c.radius + z_radius
    return h * reach, 0.5 * h * reach**2


def test_private_bandit_ftal_regret_falls_as_epsilon_grows_and_sits_below_theorem_6():
    T, seeds, h = 2**12, 16, 1.0
    c = sets.l2_ball(2)
    r, outer = sets.bandit_radii(c)
    lip, bound = _quadratic_constants(c, c.radius, h)
    eps = np.array([0.5, 5.0, np.inf], np.float32)
    env = envs.bandit_feedback(envs.quadratic_stream(c))  # oblivious: z_t does not depend on the points
    ep = envs.QuadraticParams(h, jnp.array([0.5, 0.3]), 0.2)
    lp = oco.PrivateBanditFTALParams(epsilon=jnp.asarray(eps), loss_bound=bound, strong_convexity=h)
    res = jp.sweep(oco.private_bandit_ftal(T, c, "gamma", "oblivious"), env, jp.SimParams(lp, ep), 0, T, seeds, [T])
    mean, se = mean_with_stderr(np.asarray(res.regret[:, :, -1]), axis=1)
    assert np.all(mean[:-1] - mean[1:] > 3 * np.hypot(se[:-1], se[1:])), (mean, se)
    beta = theory.bandit_ftal_exploration(T, 2, r, "oblivious")
    bounds = np.asarray(
        theory.private_bandit_ftal_regret_bound(
            T, 2, lip, h, bound, c.radius, r, outer, beta, jnp.asarray(eps), adversary="oblivious"
        )
    )
    assert np.all(mean + 3 * se < bounds), (mean, bounds)
    assert int(np.sum(res.nonfinite_inputs)) == 0


def test_adaptive_preset_against_the_adaptive_adversary_sits_below_theorem_6():
    T, seeds, h = 2**11, 16, 1.0
    c = sets.box(2, -1.0, 1.0)
    r, outer = sets.bandit_radii(c)
    lip, bound = _quadratic_constants(c, 1.0, h)
    eps = jnp.array([1.0, jnp.inf])
    env = envs.bandit_feedback(envs.adaptive_quadratic(c, z_radius=1.0))
    ep = envs.AdaptiveParams(h, jnp.array([0.4, -0.3]), 1.0, 0.1)
    lp = oco.PrivateBanditFTALParams(epsilon=eps, loss_bound=bound, strong_convexity=h)
    res = jp.sweep(oco.private_bandit_ftal(T, c, "gamma", "adaptive"), env, jp.SimParams(lp, ep), 1, T, seeds, [T])
    mean, se = mean_with_stderr(np.asarray(res.regret[:, :, -1]), axis=1)
    beta = theory.bandit_ftal_exploration(T, 2, r, "adaptive")
    bounds = np.asarray(theory.private_bandit_ftal_regret_bound(T, 2, lip, h, bound, c.radius, r, outer, beta, eps))
    assert np.all(mean + 3 * se < bounds), (mean, bounds)
    assert mean[0] > mean[1] + 3 * np.hypot(se[0], se[1])


def test_general_convex_preset_on_linear_losses_sits_below_theorem_17():
    T, seeds, p = 2**11, 16, 3
    c = sets.simplex(p)
    r, outer = sets.bandit_radii(c)
    eps = jnp.array([1.0, jnp.inf])
    env = envs.bandit_feedback(envs.experts_stream(p))
    ep = envs.ExpertsParams(jnp.array([0.3, 0.6, 0.7]))
    learner = oco.private_bandit_ftal(T, c, "gamma", "general_convex")
    res = jp.sweep(learner, env, jp.SimParams(oco.PrivateBanditFTALParams(epsilon=eps), ep), 2, T, seeds, [T])
    mean, se = mean_with_stderr(np.asarray(res.regret[:, :, -1]), axis=1)
    # costs in {0,1}^p: |f| <= 1 on the simplex, L = sqrt(p); directions in the hull: p' = p - 1.
    bounds = np.asarray(
        theory.private_bandit_ftal_general_convex_regret_bound(
            T, p, np.sqrt(p), 1.0, c.radius, r, outer, eps, sphere_dim=p - 1
        )
    )
    assert np.all(mean + 3 * se < bounds), (mean, bounds)
    state = learner.init(jax.random.key(0), jp.sim.canonical_params(oco.PrivateBanditFTALParams(epsilon=1.0)))
    np.testing.assert_allclose(state.strong_convexity, T**-0.25, rtol=1e-6)  # H = 0, λ = T^{-1/4}
    np.testing.assert_allclose(state.regularization, T**-0.25, rtol=1e-6)


def test_fkm_and_mi_bandit_ogd_sit_below_their_bounds_and_privacy_costs_regret():
    T, seeds, h = 2**11, 16, 1.0
    c = sets.l2_ball(2)
    r, outer = sets.bandit_radii(c)
    lip, bound = _quadratic_constants(c, c.radius, h)
    env = envs.bandit_feedback(envs.quadratic_stream(c))
    ep = envs.QuadraticParams(h, jnp.array([0.5, 0.3]), 0.2)
    fk = jp.sweep(oco.fkm(T, c), env, jp.SimParams(oco.FKMParams(bound, lip), ep), 0, T, seeds, [T])
    beta = theory.fkm_exploration(T, 2, lip, bound, c.diameter, r, outer)
    fkm_bound = float(theory.fkm_regret_bound(T, 2, lip, bound, c.diameter, r, outer, beta))
    mean, se = mean_with_stderr(np.asarray(fk.regret[:, -1]), axis=0)
    assert mean + 3 * se < fkm_bound, (mean, fkm_bound)

    budgets = jnp.array([0.005, 0.1, jnp.inf])
    lp = oco.MIBanditOGDParams(budgets, bound, lip)
    res = jp.sweep(oco.mi_bandit_ogd(T, c), env, jp.SimParams(lp, ep), 0, T, seeds, [T])
    mean, se = mean_with_stderr(np.asarray(res.regret[:, :, -1]), axis=1)
    assert np.all(mean[:-1] - mean[-1] > 3 * np.hypot(se[:-1], se[-1])), (mean, se)  # privacy costs regret
    delta = theory.mi_bandit_ogd_exploration(T, 2, lip, bound, c.radius, r, outer, budgets)
    sigma = mechanisms.bandit_mutual_information_to_stddev(budgets, bound, lip, delta, 2, 2)
    thm4 = np.asarray(theory.mi_bandit_ogd_regret_bound(T, 2, lip, bound, c.radius, sigma, delta, None, 2, r, outer))
    assert np.all(mean + 3 * se < thm4), (mean, thm4)
    state = oco.mi_bandit_ogd(T, c).init(
        jax.random.key(0), jp.sim.canonical_params(lp._replace(mutual_information=0.1))
    )
    np.testing.assert_allclose(state.stddev, sigma[1], rtol=1e-5)  # Theorem 3's σ for the budget
    np.testing.assert_allclose(
        state.learning_rate,
        theory.mi_bandit_ogd_learning_rate(T, 2, lip, bound, c.radius, sigma[1], delta[1]),
        rtol=1e-5,
    )


def test_mi_bandit_accounting_inverts_exactly_and_is_theorem_3():
    d, p, F, L = 4, 4, 2.0, 1.5
    delta = jnp.array([0.05, 0.2, 0.5])
    sigma = jnp.array([0.3, 3.0, 30.0])
    c = mechanisms.bandit_stddev_to_mutual_information(sigma, F, L, delta, d, p)
    dd, ss = np.asarray(delta, np.float64), np.asarray(sigma, np.float64)
    np.testing.assert_allclose(c, 0.5 * d * np.log(1 + d * (F / dd + L) ** 2 / ss**2), rtol=1e-5)  # Theorem 3
    np.testing.assert_allclose(mechanisms.bandit_mutual_information_to_stddev(c, F, L, delta, d, p), sigma, rtol=2e-6)
    target = jnp.array([1e-3, 0.5, 8.0])
    back = mechanisms.bandit_stddev_to_mutual_information(
        mechanisms.bandit_mutual_information_to_stddev(target, F, L, delta, d, p), F, L, delta, d, p
    )
    np.testing.assert_allclose(back, target, rtol=2e-6)
    assert float(mechanisms.bandit_mutual_information_to_stddev(jnp.inf, F, L, 0.1, d, p)) == 0.0


# --- theory ------------------------------------------------------------------------------------------------


def test_theorem_6_bound_is_the_proof_expression():
    T, d, L, H, B, R, r, Rc, beta, eps = 4096, 3, 2.0, 0.5, 1.5, 1.0, 0.5, 1.2, 0.1, 2.0
    depth = mechanisms.tree_depth(T)
    est = d * B / beta
    G = est + H * R
    var = (d + 1) * (depth * 2 * est / eps) ** 2  # Gamma tree, replace-one sensitivity 2pB/β
    harmonic = 1 + np.log(T)
    xi = 1 - (1 - beta / r) * (1 - one_point.SHRINK_MARGIN)
    common = (
        3 * beta * L * T + xi * Rc * L * T + 2 * G**2 * harmonic / H + 2 * np.sqrt(depth * d * var) * G * harmonic / H
    )
    got = theory.private_bandit_ftal_regret_bound(T, d, L, H, B, R, r, Rc, beta, eps, adversary="oblivious")
    assert float(got) == pytest.approx(common, rel=1e-5)
    got = theory.private_bandit_ftal_regret_bound(T, d, L, H, B, R, r, Rc, beta, eps, adversary="adaptive")
    assert float(got) == pytest.approx(common + 2 * est * R * np.sqrt(T), rel=1e-5)
    # Theorem 6's rates at the presets: T^{2/3} (oblivious) and T^{3/4} (adaptive) up to log factors.
    for preset, adversary, a in (("oblivious", "oblivious", 2 / 3), ("adaptive", "adaptive", 0.75)):
        b = [
            float(
                theory.private_bandit_ftal_regret_bound(
                    t,
                    d,
                    L,
                    H,
                    B,
                    R,
                    1.0,
                    1.0,
                    theory.bandit_ftal_exploration(t, d, 1.0, preset),
                    jnp.inf,
                    "gamma",
                    adversary,
                )
            )
            for t in (2**30, 2**40)
        ]
        # The (1 + ln T) factors add at most 1/(1 + ln T) ≈ 0.04 to the local slope at T ~ 2^35.
        slope = np.log(b[1] / b[0]) / np.log(2**10)
        assert a - 0.01 < slope < a + 0.045, (preset, slope)
    with pytest.raises(ValueError, match="adversary"):
        theory.private_bandit_ftal_regret_bound(T, d, L, H, B, R, r, Rc, beta, adversary="greedy")


def test_default_exploration_minimises_the_fkm_and_mi_bounds():
    T, d, L, F, R, r, Rc = 10**6, 3, 1.0, 2.0, 1.0, 1.0, 1.0
    beta = float(theory.fkm_exploration(T, d, L, F, 2 * R, r, Rc))
    delta = float(theory.mi_bandit_ogd_exploration(T, d, L, F, R, r, Rc, 0.5))
    sigma = lambda x: mechanisms.bandit_mutual_information_to_stddev(0.5, F, L, x, d, d)
    for factor in (0.8, 1.25):
        assert float(theory.fkm_regret_bound(T, d, L, F, 2 * R, r, Rc, beta * factor)) > float(
            theory.fkm_regret_bound(T, d, L, F, 2 * R, r, Rc, beta)
        )
        mi = lambda x: float(theory.mi_bandit_ogd_regret_bound(T, d, L, F, R, sigma(x), x, None, d, r, Rc))
        assert mi(delta * factor) > mi(delta)


# --- the bandit-feedback wrapper, non-finite losses, bad input ------------------------------------------


def test_bandit_feedback_reveals_the_loss_value_and_keeps_the_stream_and_the_comparator():
    c = sets.l2_ball(3)
    full = envs.quadratic_stream(c)
    env = envs.bandit_feedback(full)
    ep = envs.QuadraticParams(1.0, jnp.array([0.2, 0.1, 0.0]), 0.3)
    state = full.reset(jax.random.key(0), ep)
    w = jnp.array([0.3, -0.2, 0.5])
    s1, g, info = full.step(jax.random.key(5), state, w, jnp.int32(3))
    s2, value, info2 = env.step(jax.random.key(5), state, w, jnp.int32(3))
    assert float(value) == float(info.loss) == float(info2.loss)
    assert np.shape(value) == () and g.shape == (3,)
    jax.tree.map(np.testing.assert_array_equal, (s1, info), (s2, info2))
    assert env.comparator is full.comparator and env.relative == full.relative and env.check is full.check


def test_nonfinite_loss_values_are_zeroed_and_counted_and_the_regret_stays_finite():
    c = sets.l2_ball(2)
    base = envs.bandit_feedback(envs.quadratic_stream(c))

    def step_fn(key, state, action, t):
        state, value, info = base.step(key, state, action, t)
        bad = t % 7 == 0
        value = jnp.where(bad, jnp.nan, value)
        return state, value, EnvInfo(jnp.where(bad, jnp.nan, info.loss), info.regret, info.stats)

    env = base._replace(step=step_fn)  # keeps the spec (the centre's rank) and the exact comparator
    T = 140
    ep = envs.QuadraticParams(1.0, jnp.array([0.3, 0.2]), 0.2)
    learners = [
        (oco.private_bandit_ftal(T, c), oco.PrivateBanditFTALParams(epsilon=1.0, loss_bound=2.0)),
        (oco.mi_bandit_ogd(T, c), oco.MIBanditOGDParams(1.0, 2.0, 2.0)),
    ]
    for learner, lp in learners:
        res = jp.run(learner, env, jp.SimParams(lp, ep), 0, T)
        assert int(res.nonfinite_inputs) == T // 7
        assert int(res.nonfinite_steps) == T // 7
        assert np.all(np.isfinite(np.asarray(res.regret)))


NO_INNER = sets.l2_ball(3)._replace(inner_radius=None)


@pytest.mark.parametrize(
    ("make", "arg"),
    [
        (lambda: oco.private_bandit_ftal(16, NO_INNER), "constraint"),
        (lambda: oco.bandit_ftal(16, sets.simplex(1)), "constraint"),
        (lambda: oco.fkm(16, NO_INNER), "constraint"),
        (lambda: oco.mi_bandit_ogd(16, sets.box(2)._replace(project=None)), "constraint"),
        (lambda: oco.private_bandit_ftal(16, sets.l2_ball(2), preset="greedy"), "preset"),
        (lambda: oco.bandit_ftal(0, sets.l2_ball(2)), "horizon"),
        (lambda: envs.bandit_feedback(oco.fkm(16, sets.l2_ball(2))), "env"),
    ],
)
def test_bad_static_input_raises_value_error_naming_the_argument(make, arg):
    with pytest.raises(ValueError, match=arg):
        make()


BALL = sets.l2_ball(2, 2.0)  # inner radius r = 2


@pytest.mark.parametrize(
    ("learner", "params", "arg"),
    [
        (oco.private_bandit_ftal(16, BALL), oco.PrivateBanditFTALParams(1.0, exploration=0.0), "exploration"),
        (oco.private_bandit_ftal(16, BALL), oco.PrivateBanditFTALParams(1.0, exploration=2.0), "exploration"),
        (oco.private_bandit_ftal(16, BALL), oco.PrivateBanditFTALParams(1.0, exploration=-0.5), "exploration"),
        (oco.private_bandit_ftal(16, BALL), oco.PrivateBanditFTALParams(1.0, loss_bound=0.0), "loss_bound"),
        (oco.private_bandit_ftal(16, BALL), oco.PrivateBanditFTALParams(1.0, loss_bound=-1.0), "loss_bound"),
        (oco.private_bandit_ftal(16, BALL), oco.PrivateBanditFTALParams(0.0), "epsilon"),
        (oco.private_bandit_ftal(16, BALL), oco.PrivateBanditFTALParams(1.0, strong_convexity=-1.0), "strong"),
        (oco.private_bandit_ftal(16, BALL), oco.PrivateBanditFTALParams(1.0, strong_convexity=0.0), "strong"),
        (oco.private_bandit_ftal(16, BALL), oco.PrivateBanditFTALParams(1.0, regularization=-0.1), "regularization"),
        (oco.bandit_ftal(16, BALL), oco.BanditFTALParams(exploration=3.0), "exploration"),
        (oco.fkm(16, BALL), oco.FKMParams(exploration=2.5), "exploration"),
        (oco.fkm(16, BALL), oco.FKMParams(loss_bound=0.0), "loss_bound"),
        (oco.fkm(16, BALL), oco.FKMParams(learning_rate=-1.0), "learning_rate"),
        (oco.mi_bandit_ogd(16, BALL), oco.MIBanditOGDParams(0.0), "mutual_information"),
        (oco.mi_bandit_ogd(16, BALL), oco.MIBanditOGDParams(1.0, loss_bound=-2.0), "loss_bound"),
        (oco.mi_bandit_ogd(16, BALL), oco.MIBanditOGDParams(1.0, exploration=2.0), "exploration"),
        (oco.mi_bandit_ogd(16, BALL), oco.MIBanditOGDParams(1.0, lipschitz=0.0), "lipschitz"),
    ],
)
def test_bad_params_raise_value_error_naming_the_argument_before_compiling(learner, params, arg):
    with pytest.raises(ValueError, match=arg):
        learner.check(params)
    env = envs.bandit_feedback(envs.quadratic_stream(BALL))
    with pytest.raises(ValueError, match=arg):  # the engine calls the check before compiling
        jp.run(learner, env, jp.SimParams(params, envs.QuadraticParams()), 0, 16)
