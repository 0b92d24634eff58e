"""POCP with implicit gradient descent (Jain, Kothari & Thakurta 2012): noise, steps, sensitivity, regret, checks."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.stats

import jaxpriv as jp
from jaxpriv import envs, mechanisms, oco, sets, theory
from jaxpriv.testing import ks_critical_value, ks_one_sample, mean_with_stderr

D = 2
H, CENTER, SPREAD = 1.0, np.array([0.3, 0.2], np.float32), 0.15


def _noise(t, learner_state):
    """``b_{t+1} = x̃_{t+1} - x̂_{t+1}``: the noise of the release made at step ``t`` (for step ``t + 1``)."""
    return learner_state.release - learner_state.x


def _record_noise(t, action, feedback, info, learner_state, env_state):
    return _noise(t, learner_state)


def _record_all(t, action, feedback, info, learner_state, env_state):
    return action, feedback, learner_state.x, learner_state.release


def test_the_release_minus_the_iterate_is_gaussian_with_the_calibrated_sigma():
    T, eps, delta, lip = 16, 0.7, 1e-4, 2.5
    ball = sets.l2_ball(D, 50.0)  # a large set: the release is never projected (checked below)
    learner = oco.pocp(T, ball)
    params = jp.SimParams(
        oco.POCPParams(epsilon=eps, delta=delta, lipschitz=lip, strong_convexity=H),
        envs.QuadraticParams(H, CENTER, SPREAD),
    )
    keys = jax.random.split(jax.random.key(3), 1500)
    env = envs.quadratic_stream(ball, z_radius=1.0)
    out = jp.sim.map_seeds(lambda k: jp.sim.rollout(learner, env, params, k, T, record=_record_noise), keys)
    noise = np.asarray(out.records, np.float64)[:, : T - 1]  # [seeds, t = 1..T-1, d]: b_2 .. b_T
    # The calibration, on the host in float64: σ_t = sqrt(T - 1) σ₁(ε, δ) · 2L/(H t).
    c = np.sqrt(T - 1) * float(mechanisms.analytic_gaussian_sigma(eps, delta))
    sigma = c * 2 * lip / H / np.arange(2, T + 1)
    scale = float(np.asarray(out.learner_state.scale)[0])  # the traced calibration: never below, 1e-4 close
    assert c * 2 * lip / H <= scale < (1 + 1e-4) * c * 2 * lip / H
    z = (noise / sigma[None, :, None]).ravel()
    crit = ks_critical_value(z.size)
    assert ks_one_sample(z, scipy.stats.norm.cdf) < crit
    assert ks_one_sample(z, scipy.stats.norm(scale=0.8).cdf) > crit  # power: 20% less noise is rejected
    # The composition is (ε, δ)-DP and tight: T - 1 releases of noise multiplier c are the Gaussian
    # mechanism with μ = sqrt(T - 1)/c, whose exact δ(ε) is δ (not far below).
    for multiplier in (c, scale * H / (2 * lip)):  # the host's and the learner's
        exact = float(mechanisms.gaussian_delta(multiplier, np.sqrt(T - 1), eps))
        assert delta / 2 < exact <= delta * (1 + 1e-9)  # (float64 rounding of sqrt(T - 1))


def test_steps_match_a_numpy_transcription_of_the_pseudo_code():
    T, lip, h, radius = 40, 0.6, 0.8, 0.5  # a small set and a small L: projections and clipping both bind
    ball = sets.l2_ball(D, radius)
    env = envs.quadratic_stream(ball, z_radius=1.0)
    lp = oco.POCPParams(epsilon=2.0, delta=1e-3, lipschitz=lip, strong_convexity=h)
    params = jp.SimParams(lp, envs.QuadraticParams(h, np.array([0.6, -0.4], np.float32), 0.4))
    out = jp.sim.rollout(oco.pocp(T, ball), env, params, 11, T, record=_record_all)
    actions, grads, xs, releases = (np.asarray(r, np.float64) for r in out.records)

    def project(v):
        n = np.linalg.norm(v)
        return v if n <= radius else v * (radius / n)

    x = np.zeros(D)  # x̂_1 = Π_C(0), played exactly
    release = x.copy()
    clipped = projected = 0
    for t in range(1, T + 1):
        w = project(release)
        projected += not np.allclose(w, release)
        np.testing.assert_allclose(actions[t - 1], w, rtol=1e-5, atol=1e-6)
        g = grads[t - 1]
        clipped += np.linalg.norm(g) > lip
        g = g * min(1.0, lip / np.linalg.norm(g))
        x = project(x + (w - g / h - x) / (t + 1))  # IGD on the surrogate, η_t = 1/(Ht)
        np.testing.assert_allclose(xs[t - 1], x, rtol=1e-5, atol=1e-6)
        if t < T:
            release = x + (releases[t - 1] - xs[t - 1])  # the recorded noise b_{t+1}
    assert clipped > 0 and projected > 0  # both branches of the pseudo-code ran
    assert np.all(np.isnan(releases[-1]))  # the release for T + 1 is poisoned past the horizon


def test_the_iterate_has_linearly_decreasing_sensitivity_2l_over_ht_and_it_is_tight():
    T, lip, h = 32, 1.5, 0.5
    ball = sets.l2_ball(D, 1e4)  # interior: the bound is attained
    learner = oco.pocp(T, ball)
    lp = oco.POCPParams(epsilon=1.0, delta=1e-5, lipschitz=lip, strong_convexity=h)
    rng = np.random.default_rng(0)
    grads = rng.normal(size=(T, D)).astype(np.float32)
    actions = rng.normal(size=(T, D)).astype(np.float32)
    step = jax.jit(lambda *a: learner.update(*a)[0])
    for tau in (1, 5):
        a = b = learner.init(jax.random.key(0), lp)
        for t in range(1, T + 1):
            g = jnp.asarray(grads[t - 1])
            # neighbours: the loss at τ replaced, its gradient L e_1 against -L e_1 (10 L before clipping)
            ga = jnp.asarray([10 * lip, 0.0]) if t == tau else g
            gb = jnp.asarray([-10 * lip, 0.0]) if t == tau else g
            key = jax.random.key(t)
            a = step(key, a, actions[t - 1], ga, jnp.int32(t))
            b = step(key, b, actions[t - 1], gb, jnp.int32(t))
            if t >= tau:  # x̂_{t+1} differs by exactly 2L/(H(t+1)) = λ/(t+1)
                gap = float(jnp.linalg.norm(a.x - b.x))
                assert gap == pytest.approx(2 * lip / (h * (t + 1)), rel=1e-4), (tau, t)
    assert float(theory.pocp_sensitivity(lip, h)) == pytest.approx(2 * lip / h)


def test_regret_is_below_the_bound_and_falls_as_epsilon_grows():
    T = 512
    ball = sets.l2_ball(D)
    env = envs.quadratic_stream(ball)  # ||z|| <= 1: gradients H(w - z) bounded by L = 2H on the unit ball
    lip = H * 2.0
    eps = np.array([0.5, 5.0], np.float32)
    lp = oco.POCPParams(epsilon=eps, delta=1.0 / T**2, lipschitz=lip, strong_convexity=H)
    params = jp.SimParams(lp, envs.QuadraticParams(H, CENTER, SPREAD))
    r = jp.sweep(oco.pocp(T, ball), env, params, jax.random.key(0), T, seeds=100, checkpoints=[T])
    assert r.private
    mean, se = mean_with_stderr(np.asarray(r.regret)[:, :, -1], axis=1)
    bound = np.asarray(theory.pocp_regret_bound(T, D, lip, H, ball.diameter, eps, 1.0 / T**2))
    assert np.all(mean + 3 * se < bound), (mean, se, bound)
    assert mean[0] - mean[1] > 3 * np.hypot(se[0], se[1])  # privacy costs regret


def test_a_nonfinite_gradient_is_zeroed_and_counted():
    learner = oco.pocp(8, sets.l2_ball(D))
    state = learner.init(jax.random.key(0), oco.POCPParams(epsilon=1.0, delta=1e-5))
    state, info = learner.update(jax.random.key(1), state, state.release, jnp.array([jnp.nan, 1.0]), jnp.int32(1))
    assert int(info.nonfinite) == 1
    assert np.all(np.isfinite(np.asarray(state.release)))


@pytest.mark.parametrize(
    ("fields", "arg"),
    [
        ({"epsilon": 0.0}, "epsilon"),
        ({"epsilon": -1.0}, "epsilon"),
        ({"epsilon": np.inf}, "epsilon"),
        ({"epsilon": np.nan}, "epsilon"),
        ({"epsilon": np.array([1.0, -1.0])}, "epsilon"),
        ({"lipschitz": 1e30, "strong_convexity": 1e-3}, "float32"),  # noise float32 cannot represent
        ({"delta": 0.0}, "delta"),
        ({"delta": 1.0}, "delta"),
        ({"delta": 1.5}, "delta"),
        ({"delta": np.nan}, "delta"),
        ({"epsilon": None}, "epsilon"),
        ({"delta": None}, "delta"),
        ({"lipschitz": 0.0}, "lipschitz"),
        ({"lipschitz": np.inf}, "lipschitz"),
        ({"strong_convexity": 0.0}, "strong_convexity"),
        ({"strong_convexity": np.inf}, "strong_convexity"),
    ],
)
def test_the_check_refuses_every_budget_without_the_guarantee(fields, arg):
    learner = oco.pocp(16, sets.l2_ball(D))
    lp = oco.POCPParams(**{"epsilon": 1.0, "delta": 1e-5, **fields})
    with pytest.raises(ValueError, match=arg):
        learner.check(lp)
    env = envs.quadratic_stream(sets.l2_ball(D))
    with pytest.raises(ValueError, match=arg):  # and the engine calls it before compiling
        jp.run(learner, env, jp.SimParams(lp, envs.QuadraticParams()), 0, 16)


def test_another_params_class_is_refused():
    env = envs.quadratic_stream(sets.l2_ball(D))
    wrong = oco.PFTALParams(epsilon=1.0, lipschitz=2.0)
    with pytest.raises(ValueError, match="POCPParams"):
        jp.run(oco.pocp(16, sets.l2_ball(D)), env, jp.SimParams(wrong, envs.QuadraticParams()), 0, 16)
    with pytest.raises(ValueError, match="horizon"):
        oco.pocp(0, sets.l2_ball(D))


# --- issue 45: the bounded normal's δ floor, and budgets float32 cannot carry -------------------------------------


def test_pocp_declares_its_samplers_floor_one_minus_one_minus_g_to_the_t_minus_one():
    # d = 1: the floor is exactly 1 - (1 - g(1/c))^(T-1), g the normal's mass within 1/c of its support's nearer end.
    from jaxpriv.mechanisms._accounting import _gaussian_coordinate_floor

    T, eps, delta = 512, 1.0, 2.0**-32
    learner = oco.pocp(T, sets.l2_ball(1))
    floor = learner.spec.sampler_floor
    assert floor is not None and floor.delta_claimed and floor.depth == T - 1
    c = np.sqrt(T - 1) * mechanisms.analytic_gaussian_sigma(eps, delta)
    exact = -np.expm1((T - 1) * np.log1p(-_gaussian_coordinate_floor(1.0 / c)))
    got = float(mechanisms.component_delta_floor(learner, oco.POCPParams(epsilon=eps, delta=delta)))
    assert got == pytest.approx(float(exact), rel=1e-3) and got > 10 * delta  # the study's old delta: refused


@pytest.mark.parametrize(
    "horizon, epsilon, delta, match",
    [
        (512, 1.0, 2.0**-32, "above the claimed delta"),  # jkt12_vs_pftal's old delta: floor 27x it at d = 2
        (2, 30.0, 0.1, "SAMPLER_DELTA_MAX"),  # floor 0.66 (issue 45: "at least 0.053")
        (64, 1e-45, 1e-5, "epsilon must be >= 1e-30"),  # 0 in float32
        (64, 1e-30, 1e-20, "MIN_MU"),  # the calibration cancels (and its search did not end)
        (64, 1.0, 1e-300, "smallest normal"),  # 0 in float32: the scale was inf, 504 of 512 seed-steps dropped
    ],
)
def test_pocp_refuses_before_compiling_what_its_float32_samplers_and_calibration_cannot_give(
    horizon, epsilon, delta, match
):
    learner = oco.pocp(horizon, sets.l2_ball(D))
    with pytest.raises(ValueError, match=match):
        learner.check(oco.POCPParams(epsilon=epsilon, delta=delta))


def test_pocp_accepts_the_studys_delta_at_every_horizon():
    for horizon in (256, 2048, 65536):  # jkt12_vs_pftal's horizons: floor <= 1e-7 at delta = 1e-6
        oco.pocp(horizon, sets.l2_ball(D)).check(oco.POCPParams(epsilon=1.0, delta=1e-6))
    grid = oco.POCPParams(epsilon=np.array([0.3, 1.0, 3.0, 10.0]), delta=1e-6)  # examples/jkt12_vs_pftal.toml
    oco.pocp(4096, sets.l2_ball(D)).check(grid)
