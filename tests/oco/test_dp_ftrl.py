"""DP-FTRL: non-private FTRL at an infinite budget, the mechanism's clip and calibration, the regret bound."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxpriv as jp
from jaxpriv import envs, mechanisms, sets
from jaxpriv.oco.dp_ftrl import (
    DPFTRLParams,
    dp_ftrl,
    dp_ftrl_learner_bound,
    dp_ftrl_regret_bound,
    dp_ftrl_regularization,
)
from jaxpriv.testing import mean_with_stderr

D = 2
BALL = sets.l2_ball(D)
H = 1.0
QUAD = envs.quadratic_stream(BALL)
QUAD_P = envs.QuadraticParams(H, np.array([0.3, 0.2]), 0.15)
LIP = H * (BALL.radius + BALL.radius)  # ||H(w - z)|| <= H (||C|| + z_radius), z_radius = ||C||


def _numpy_ftrl(project, grad_fn, w1, lam, horizon):
    """Lazy projected OGD with constant step 1/λ in float32: w_{t+1} = Π_C(w_1 - (Σ_{s<=t} g_s)/λ)."""
    w, total, played = w1.astype(np.float32), np.zeros_like(w1, np.float32), []
    for t in range(1, horizon + 1):
        played.append(w)
        total = (total + grad_fn(w, t)).astype(np.float32)
        w = project((w1 - total / np.float32(lam)).astype(np.float32))
    return np.array(played)


def _ball_projection(radius):
    def project(x):
        n = np.linalg.norm(x.astype(np.float64))
        return (x * min(1.0, radius / n) if n > 0 else x).astype(np.float32)

    return project


@pytest.mark.parametrize("noise", ["gamma", "laplace", "gaussian"])
def test_infinite_budget_is_nonprivate_ftrl_against_a_numpy_reference(noise):
    # the alternating quadratic stream without spread: z_t = ±c, c outside the ball, so the projection is active
    horizon, lam = 64, 0.5
    center = np.array([1.4, -0.6], np.float32)
    env = envs.quadratic_stream(BALL, z_radius=2.0, z_dist="alternating")
    ep = envs.QuadraticParams(H, center, 0.0)
    budget = {mechanisms.budget_field(noise): jnp.inf}
    lp = DPFTRLParams(**budget, lipschitz=10.0, regularization=lam)  # the clip never binds
    res = jp.run(dp_ftrl(horizon, BALL, noise), env, jp.SimParams(lp, ep), 0, horizon, checkpoints=None)

    def grad(w, t):
        z = center if t % 2 == 1 else -center
        return (H * (w - z)).astype(np.float32)

    played = _numpy_ftrl(_ball_projection(1.0), grad, np.zeros(D, np.float32), lam, horizon)
    z = np.where((np.arange(1, horizon + 1) % 2 == 1)[:, None], center, -center)
    ref_loss = 0.5 * H * np.sum((played - z) ** 2, axis=1)
    got = np.diff(np.asarray(res.loss, np.float64), prepend=0.0)
    np.testing.assert_allclose(got, ref_loss, rtol=1e-5, atol=1e-5)
    assert np.abs(np.linalg.norm(played, axis=1) - 1.0).min() < 1e-6  # some points lie on the boundary


def test_learner_steps_equal_the_reference_point_by_point_on_a_box():
    # gradients independent of the points: the release is the exact (dyadic) prefix sum at ε = ∞
    horizon, lam = 100, 2.5
    box = sets.box(3, -0.5, 0.5)
    learner = dp_ftrl(horizon, box)
    g = np.asarray(jax.random.normal(jax.random.key(3), (horizon, 3)), np.float32) * 0.4 + np.float32(0.05)
    state = learner.init(jax.random.key(0), DPFTRLParams(epsilon=jnp.inf, lipschitz=10.0, regularization=lam))
    act, update = jax.jit(learner.act), jax.jit(learner.update)  # one compilation each, not op by op per step
    got = []
    for t in range(1, horizon + 1):
        w = act(jax.random.key(t), state, jnp.int32(t))
        got.append(np.asarray(w))
        state, _ = update(jax.random.key(t), state, w, jnp.asarray(g[t - 1]), jnp.int32(t))
    totals = np.cumsum(g.astype(np.float64), axis=0)
    ref = np.clip(np.zeros(3) - np.vstack([np.zeros(3), totals[:-1]]) / lam, -0.5, 0.5)
    np.testing.assert_allclose(np.array(got), ref, rtol=1e-5, atol=2e-6)
    assert np.mean(np.abs(ref) == 0.5) > 0.1  # the projection is active often


@pytest.mark.parametrize(("noise", "factor"), [("gamma", 1.0), ("gaussian", 1.0), ("laplace", np.sqrt(D))])
def test_mechanism_gets_clip_l_and_calibrates_to_replace_one_2l(noise, factor):
    horizon, lip = 64, 1.5
    learner = dp_ftrl(horizon, BALL, noise)
    budget = {"rho": 0.5} if noise == "gaussian" else {"epsilon": 2.0}
    state = learner.init(jax.random.key(0), DPFTRLParams(**budget, lipschitz=lip))
    clip = factor * lip
    assert float(state.tree.sensitivity) == pytest.approx(clip, rel=1e-6)
    depth = mechanisms.tree_depth(horizon)
    expected = {
        "gamma": depth * 2 * clip / 2.0,  # Gamma-norm scale D s/ε, s = 2 clip
        "laplace": depth * 2 * clip / 2.0,
        "gaussian": 2 * clip * np.sqrt(depth / (2 * 0.5)),  # σ = s sqrt(D/(2ρ))
    }[noise]
    assert float(state.tree.scale) == pytest.approx(expected, rel=1e-6)
    # a gradient far beyond L enters the mechanism clipped: at ε = ∞, w_2 = Π_C(w_1 - clip(g)/λ)
    free = learner.init(
        jax.random.key(0), DPFTRLParams(**{mechanisms.budget_field(noise): jnp.inf}, lipschitz=lip, regularization=5.0)
    )
    g = np.array([30.0, 40.0])
    new, _ = learner.update(jax.random.key(1), free, free.w, jnp.asarray(g, jnp.float32), jnp.int32(1))
    norm = np.abs(g).sum() if noise == "laplace" else np.linalg.norm(g)
    np.testing.assert_allclose(np.asarray(new.w), -g * (clip / norm) / 5.0, rtol=1e-5)


def test_bound_and_tuned_regularization_are_the_derived_expressions():
    horizon, d, lip, diam = 1000, 3, 2.0, 1.5
    var = np.linspace(0.5, 3.0, horizon)
    s = np.sum(np.sqrt(d * var[: horizon - 1]))
    lam = 7.0
    expected = lam * diam**2 / 2 + horizon * lip**2 / (2 * lam) + lip * s / lam
    assert float(dp_ftrl_regret_bound(horizon, d, lip, diam, lam, var)) == pytest.approx(expected, rel=1e-5)
    lam_star = np.sqrt(horizon * lip**2 + 2 * lip * s) / diam
    assert float(dp_ftrl_regularization(horizon, d, lip, diam, var)) == pytest.approx(lam_star, rel=1e-5)
    tuned = float(dp_ftrl_regret_bound(horizon, d, lip, diam, np.nan, var))
    assert tuned == pytest.approx(diam * np.sqrt(horizon * lip**2 + 2 * lip * s), rel=1e-5)
    for other in (0.5 * lam_star, 2 * lam_star):  # the tuned λ is the minimiser
        assert float(dp_ftrl_regret_bound(horizon, d, lip, diam, other, var)) > tuned
    # a scalar variance is used for every step; no noise gives L D sqrt(T)
    assert float(dp_ftrl_regret_bound(horizon, d, lip, diam, lam, 2.0)) == pytest.approx(
        lam * diam**2 / 2 + horizon * lip**2 / (2 * lam) + lip * (horizon - 1) * np.sqrt(2 * d) / lam, rel=1e-5
    )
    assert float(dp_ftrl_regret_bound(horizon, d, lip, diam, np.nan, 0.0)) == pytest.approx(
        lip * diam * np.sqrt(horizon), rel=1e-6
    )
    with pytest.raises(ValueError, match="length T=1000"):
        dp_ftrl_regret_bound(horizon, d, lip, diam, lam, np.ones(7))


def test_tuned_regularization_uses_the_mechanisms_exact_variance():
    horizon, rho, lip = 128, 0.5, 1.5
    for mech in (
        None,
        mechanisms.honaker_tree(horizon, D, "gaussian", neighbouring="replace"),
        mechanisms.blt(horizon, D, neighbouring="replace", buffers=3),
    ):
        learner = dp_ftrl(horizon, BALL, "gaussian" if mech is None else None, mechanism=mech)
        lam = float(learner.init(jax.random.key(0), DPFTRLParams(rho=rho, lipschitz=lip)).regularization)
        m = mechanisms.binary_tree(horizon, D, "gaussian", neighbouring="replace") if mech is None else mech
        var = mechanisms.release_variance(m, mechanisms.TreeParams(rho=rho, sensitivity=lip), np.arange(1, horizon + 1))
        expected = float(dp_ftrl_regularization(horizon, D, lip, BALL.diameter, var))
        assert lam == pytest.approx(expected, rel=1e-5)
    # less noise (BLT, Honaker) means a smaller λ than the plain tree's
    tree_lam = float(dp_ftrl(horizon, BALL, "gaussian").init(jax.random.key(0), DPFTRLParams(rho=rho)).regularization)
    blt = mechanisms.blt(horizon, D, neighbouring="replace", buffers=3)
    blt_lam = float(dp_ftrl(horizon, BALL, mechanism=blt).init(jax.random.key(0), DPFTRLParams(rho=rho)).regularization)
    assert blt_lam < tree_lam


def _final(res, with_gap=False):
    r = np.asarray(res.regret, np.float64)[..., -1]
    if with_gap and res.gap is not None:
        r = r + np.asarray(res.gap, np.float64)[..., -1]
    return r


def test_regret_below_the_bound_on_the_quadratic_stream():
    horizon, seeds = 2**10, 200
    rho = np.array([0.05, 0.5, np.inf], np.float32)
    res = jp.sweep(
        dp_ftrl(horizon, BALL, "gaussian"),
        QUAD,
        jp.SimParams(DPFTRLParams(rho=jnp.asarray(rho), lipschitz=LIP), QUAD_P),
        jax.random.key(1),
        horizon,
        seeds=seeds,
    )
    final, se = mean_with_stderr(_final(res), axis=1)
    bounds = [dp_ftrl_learner_bound(horizon, BALL, DPFTRLParams(rho=float(r), lipschitz=LIP), "gaussian") for r in rho]
    assert np.all(final + 3 * se < np.array(bounds)), (final, se, bounds)
    # more privacy, more regret: the paired differences of shared seeds
    diff = _final(res)[0] - _final(res)[2]
    m, s = mean_with_stderr(diff)
    assert m > 5 * s, (m, s)


@pytest.mark.parametrize("mech_name", ["honaker_tree", "blt"])
def test_other_mechanisms_run_and_stay_below_their_own_bound(mech_name):
    horizon, seeds, rho = 2**9, 100, 0.2
    if mech_name == "blt":
        mech = mechanisms.blt(horizon, D, neighbouring="replace", buffers=3)
    else:
        mech = mechanisms.honaker_tree(horizon, D, "gaussian", neighbouring="replace")
    learner = dp_ftrl(horizon, BALL, mechanism=mech)
    params = jp.SimParams(DPFTRLParams(rho=jnp.array([rho, jnp.inf]), lipschitz=LIP), QUAD_P)
    res = jp.sweep(learner, QUAD, params, jax.random.key(2), horizon, seeds=seeds)
    final, se = mean_with_stderr(_final(res), axis=1)
    bound = dp_ftrl_learner_bound(horizon, BALL, DPFTRLParams(rho=rho, lipschitz=LIP), mechanism=mech)
    assert final[0] + 3 * se[0] < bound, (final, se, bound)
    # at ρ = ∞ every mechanism is the same non-private FTRL
    np.testing.assert_allclose(np.asarray(res.regret)[1], _free_ftrl(horizon, seeds), rtol=1e-4, atol=1e-4)


@functools.cache
def _free_ftrl(horizon: int, seeds: int) -> np.ndarray:
    """The plain Gaussian tree's DP-FTRL at ρ = ∞ (non-private FTRL): regret, computed once for both mechanisms."""
    tree = dp_ftrl(horizon, BALL, "gaussian")
    params = jp.SimParams(DPFTRLParams(rho=jnp.inf, lipschitz=LIP), QUAD_P)
    return np.asarray(jp.sweep(tree, QUAD, params, jax.random.key(2), horizon, seeds=seeds).regret)


def test_regret_below_the_bound_on_logistic_regression():
    horizon, seeds, eps, radius = 2**9, 40, 1.0, 1.0
    ball = sets.l2_ball(3, radius)
    env = envs.classification_stream(ball, horizon, "logistic", solver_steps=200)
    ep = envs.ClassificationParams(direction=np.array([1.0, -0.5, 0.3], np.float32), label_noise=0.1)
    lip = 1.0  # feature_radius
    res = jp.sweep(
        dp_ftrl(horizon, ball),  # the Gamma tree, ε-DP
        env,
        jp.SimParams(DPFTRLParams(epsilon=jnp.array([eps, jnp.inf]), lipschitz=lip), ep),
        jax.random.key(3),
        horizon,
        seeds=seeds,
    )
    upper = _final(res, with_gap=True)  # the exact regret is at most regret + the solver's certified gap
    final, se = mean_with_stderr(upper, axis=1)
    bounds = [dp_ftrl_learner_bound(horizon, ball, DPFTRLParams(epsilon=e, lipschitz=lip)) for e in (eps, np.inf)]
    assert np.all(final + 3 * se < np.array(bounds)), (final, se, bounds)


def test_budgets_refused_when_missing_or_of_another_family():
    gamma, gauss = dp_ftrl(32, BALL), dp_ftrl(32, BALL, "gaussian")
    with pytest.raises(ValueError, match="epsilon"):
        gamma.check(DPFTRLParams())
    with pytest.raises(ValueError, match="rho"):
        gamma.check(DPFTRLParams(epsilon=1.0, rho=1.0))
    with pytest.raises(ValueError, match="rho"):
        gauss.check(DPFTRLParams(epsilon=1.0))
    with pytest.raises(ValueError, match="rho"):
        gauss.init(jax.random.key(0), DPFTRLParams(epsilon=1.0))  # static: init refuses it too
    with pytest.raises(ValueError, match="epsilon"):
        gamma.check(DPFTRLParams(epsilon=0.0))
    with pytest.raises(ValueError, match="regularization"):
        gamma.check(DPFTRLParams(epsilon=1.0, regularization=-1.0))
    with pytest.raises(ValueError, match="lipschitz"):
        gamma.check(DPFTRLParams(epsilon=1.0, lipschitz=-1.0))
    with pytest.raises(ValueError, match="lipschitz"):
        gamma.check(DPFTRLParams(epsilon=1.0, lipschitz=0.0))  # the tuned λ needs L > 0
    gamma.check(DPFTRLParams(epsilon=jnp.inf, lipschitz=0.0, regularization=1.0))
    with pytest.raises(ValueError, match="neighbouring='replace'"):
        dp_ftrl(32, BALL, mechanism=mechanisms.sqrt_factorization(32, D))
    with pytest.raises(ValueError, match="noise must be None or 'gaussian'"):
        dp_ftrl(32, BALL, "gamma", mechanism=mechanisms.sqrt_factorization(32, D, neighbouring="replace"))


def test_regret_slope_in_log_t_is_at_most_the_bounds():
    # The bound D sqrt(T L² + 2 L S), S = Σ_t sqrt(d Var_t): exponent 1/2 in T times the tree's log factors.
    # The per-seed slope of log regret against log T (λ is tuned per T, so one run per horizon, on the same
    # seed keys) is at most the bound's slope between the same horizons, and positive.
    horizons, seeds = (2**8, 2**10, 2**12), 20
    params = DPFTRLParams(epsilon=1.0, lipschitz=LIP)
    finals = []
    for T in horizons:
        res = jp.sweep(dp_ftrl(T, BALL), QUAD, jp.SimParams(params, QUAD_P), jax.random.key(5), T, seeds, [T])
        finals.append(_final(res))
    x = np.log(np.asarray(horizons, np.float64))
    x = x - x.mean()
    y = np.log(np.maximum(np.stack(finals, axis=1), 1e-9))
    slopes = (y - y.mean(axis=1, keepdims=True)) @ x / (x @ x)
    m, se = mean_with_stderr(slopes)
    bounds = np.log([dp_ftrl_learner_bound(T, BALL, params) for T in horizons])
    bound_slope = float((bounds - bounds.mean()) @ x / (x @ x))
    assert 0.5 < bound_slope < 0.8, bound_slope  # sqrt(T) and the Gamma tree's log^{1.5} T noise factor
    assert 0 < m - 3 * se and m + 3 * se < bound_slope, (m, se, bound_slope)  # 0.37 ± 0.02 against 0.60
