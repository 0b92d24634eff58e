"""Linear bandits: envs, GOPE/AdaC-GOPE and RS-OFUL/AdaC-OFUL (step level).

Noise calibration on the released statistic, hand-computed phase lengths and
radii, large-ρ limits, the price of privacy, the theorem bounds, bad input.
"""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxpriv as jp
from jaxpriv.bandits import _gope_core as core
from jaxpriv.bandits.adac_gope import AdaCGOPEParams, adac_gope
from jaxpriv.bandits.adac_oful import AdaCOFULParams, adac_oful, oful_radius, privacy_radius
from jaxpriv.bandits.episodic import simulate_gope_phases
from jaxpriv.bandits.gope import GOPEParams, gope
from jaxpriv.bandits.oful import RSOFULParams, rs_oful
from jaxpriv.envs.linear_bandits import (
    ContextualBanditParams,
    LinearBanditParams,
    contextual_linear_bandit,
    linear_bandit,
    sample_linear_instance,
)
from jaxpriv.testing import mean_with_stderr, rollout, variance_with_stderr

K, D = 10, 3
INSTANCE = sample_linear_instance(jax.random.key(1), K, D)


def _nothing(t, action, feedback, info, learner_state, env_state):
    return None


def final_states(learner, env, params, key, horizon, seeds):
    """The learners' final states after the engine's runs (seed ``i`` of ``jp.sweep`` with base ``key``)."""
    return rollout(learner, env, params, key, horizon, seeds=seeds, record=_nothing).learner_state


# --- environments -------------------------------------------------------------------------------------


def test_linear_env_rewards_and_pseudo_regret():
    env = linear_bandit(K, D)
    state = env.reset(jax.random.key(0), INSTANCE)
    means = np.asarray(INSTANCE.actions @ INSTANCE.theta)
    keys = jax.random.split(jax.random.key(2), 20_000)
    arm = int(np.argmin(means))
    _, rewards, info = jax.vmap(env.step, in_axes=(0, None, None, None))(keys, state, arm, 1)
    m, se = mean_with_stderr(np.asarray(rewards))
    assert abs(m - means[arm]) < 5 * se
    var, vse = variance_with_stderr(np.asarray(rewards), means[arm])
    assert abs(var - 1.0) < 5 * vse
    np.testing.assert_allclose(np.asarray(info.regret), means.max() - means[arm], rtol=1e-6)
    np.testing.assert_allclose(np.asarray(info.loss), -np.asarray(rewards))
    np.testing.assert_allclose(np.linalg.norm(np.asarray(INSTANCE.actions), axis=1), 1.0, rtol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(np.asarray(INSTANCE.theta)), 1.0, rtol=1e-6)


def test_contextual_env_reveals_the_next_action_set():
    env = contextual_linear_bandit(K, D)
    theta = np.array([1.0, 0.0, 0.0], np.float32)
    state = env.reset(jax.random.key(0), ContextualBanditParams(theta=theta))
    acts = np.asarray(state.actions)
    new_state, fb, info = env.step(jax.random.key(1), state, jnp.int32(4), jnp.int32(1))
    np.testing.assert_allclose(np.asarray(fb.action_vector), acts[4])
    np.testing.assert_allclose(np.asarray(fb.next_actions), np.asarray(new_state.actions))
    np.testing.assert_allclose(float(info.regret), (acts @ theta).max() - acts[4] @ theta, rtol=1e-6)
    # The contexts are N(μ, 0.1 I) with μ = (1/√d)·1 (spec §6.3).
    keys = jax.random.split(jax.random.key(3), 4000)
    _, fbs, _ = jax.vmap(env.step, in_axes=(0, None, None, None))(keys, state, jnp.int32(0), jnp.int32(1))
    ctx = np.asarray(fbs.next_actions).reshape(-1, D)
    m, se = mean_with_stderr(ctx)
    assert np.all(np.abs(m - 1 / math.sqrt(D)) < 5 * se)
    cov = np.cov(ctx.T)
    assert np.all(np.abs(np.diag(cov) - 0.1) < 5 * 0.1 * math.sqrt(2 / ctx.shape[0]))
    assert np.all(np.abs(cov - np.diag(np.diag(cov))) < 5 * 0.1 / math.sqrt(ctx.shape[0]))


# --- hand-computed formulas ---------------------------------------------------------------------------


def test_phase_constant_matches_eq_5_6_by_hand():
    for ell, rho, delta in ((1, 1.0, 0.001), (3, 0.1, 0.05), (5, 10.0, 0.3)):
        dk = delta / (K * ell * (ell + 1))
        beta = 2.0**-ell
        f = D + 2 * math.sqrt(D * math.log(2 / dk)) + 2 * math.log(2 / dk)
        c_np = 8 * D / beta**2 * math.log(4 / dk)
        c_p = c_np + 2 * D / beta * math.sqrt(2 / rho * f)
        got_p = float(core.phase_constant(ell, rho, delta, K, D, private=True, rule="paper"))
        got_np = float(core.phase_constant(ell, rho, delta, K, D, private=False))
        assert got_p == pytest.approx(c_p, rel=1e-5)
        assert got_np == pytest.approx(c_np, rel=1e-5)
        # the joint rule: the root of c² - c⁰c - 2dc⁰/ρ, shorter than eq. (5.6), longer than GOPE's
        joint = (c_np + math.sqrt(c_np**2 + 8 * D * c_np / rho)) / 2
        got_j = float(core.phase_constant(ell, rho, delta, K, D, private=True))
        assert got_j == pytest.approx(joint, rel=1e-5)
        assert c_np < got_j < got_p
        # ... at which the per-arm error's variance proxy (d/c)(1 + 2d/(ρc)) is exactly GOPE's d/c⁰
        assert (D / got_j) * (1 + 2 * D / (rho * got_j)) == pytest.approx(D / c_np, rel=1e-4)
    # ρ = ∞: the private phase length is GOPE's.
    assert float(core.phase_constant(2, jnp.inf, 0.001, K, D, private=True)) == float(
        core.phase_constant(2, 1.0, 0.001, K, D, private=False)
    )
    # c_1 at the paper's constants (d = 3, K = 10, δ = 0.001): 96·log(4·10·2/0.001) = 1083.7.
    assert float(core.phase_constant(1, jnp.inf, 0.001, K, D, private=False)) == pytest.approx(
        96 * math.log(80_000), rel=1e-6
    )
    alloc = core.allocation(jnp.array([0.5, 0.25, 0.25, 0.0]), jnp.float32(101.0), 10_000)
    np.testing.assert_array_equal(np.asarray(alloc), [51, 26, 26, 0])


def test_noise_variance_calibration_safe_and_paper():
    # safe = (2/ρ) max(g², d/c); paper = 2d/(ρ c).
    assert float(core.noise_variance(0.5, 4.0, 2.0, 3, private=True, calibration="safe")) == pytest.approx(2 / 2 * 0.75)
    assert float(core.noise_variance(0.9, 4.0, 2.0, 3, private=True, calibration="safe")) == pytest.approx(2 / 2 * 0.9)
    assert float(core.noise_variance(0.9, 4.0, 2.0, 3, private=True, calibration="paper")) == pytest.approx(
        2 * 3 / (2 * 4)
    )
    assert float(core.noise_variance(0.9, 4.0, jnp.inf, 3, private=True, calibration="safe")) == 0.0
    assert float(core.noise_variance(0.9, 4.0, 2.0, 3, private=False, calibration="safe")) == 0.0


def test_oful_radii_by_hand():
    lam, delta, d = 0.1, 0.001, 3
    gram = np.array([[5.0, 1.0, 0.0], [1.0, 4.0, 0.5], [0.0, 0.5, 3.0]])
    logdet = float(np.linalg.slogdet(gram)[1])
    beta = math.sqrt(2 * math.log(1 / delta) + logdet - d * math.log(lam)) + math.sqrt(lam) * 1.0
    assert float(oful_radius(logdet, lam, delta, 1.0, 1.0, d)) == pytest.approx(beta, rel=1e-5)
    # Initially (V = λI): β_0 = sqrt(2 log(1/δ)) + sqrt(λ) S.
    assert float(oful_radius(d * math.log(lam), lam, delta, 1.0, 1.0, d)) == pytest.approx(
        math.sqrt(2 * math.log(1000)) + math.sqrt(0.1), rel=1e-5
    )
    ell, rho, horizon = 4, 0.5, 10_000
    lt = math.log(horizon / delta)
    gamma = math.sqrt(2 * ell / rho * (d + 2 * math.sqrt(d * lt) + 2 * lt)) / math.sqrt(2.5)
    assert float(privacy_radius(ell, rho, delta, horizon, d, 2.5)) == pytest.approx(gamma, rel=1e-5)
    assert float(privacy_radius(ell, jnp.inf, delta, horizon, d, 2.5)) == 0.0


def test_oful_first_switch_and_state_match_the_algorithm():
    # With C = 1 the first switch is at the first t with det(V_t) > 2 λ^d (spec §5.1).
    env = contextual_linear_bandit(K, D)
    ep = ContextualBanditParams(theta=np.array([0.6, 0.8, 0.0], np.float32))
    learner = rs_oful(K, D, 50, clip=False)
    st = final_states(learner, env, jp.SimParams(RSOFULParams(), ep), jax.random.key(0), 50, 1)
    v = np.asarray(st.gram[0], np.float64)
    assert int(st.num_switches[0]) >= 1
    # After the last switch, θ̃ = V_τ^{-1} b_τ: the stored inverse is V_τ^{-1} and det V_t <= 2 det V_τ.
    assert float(np.linalg.slogdet(v)[1]) <= float(st.logdet_tau[0]) + math.log(2.0) + 1e-4
    inv = np.asarray(st.gram_inv_tau[0], np.float64)
    assert float(-np.linalg.slogdet(inv)[1]) == pytest.approx(float(st.logdet_tau[0]), abs=1e-3)


# --- the released statistics have the spec's variance ---------------------------------------------------


@pytest.mark.parametrize("calibration", ["safe", "paper"])
def test_adac_gope_noise_has_the_spec_variance(calibration):
    # Noise-free rewards: θ̂_1 = θ* exactly, so V_1^{1/2}(θ̃_1 - θ*) = N_1 ~ N(0, σ² I) with
    # σ² = (2/ρ) max(g², d/c) (safe) or 2d/(ρ c) (paper), g² from the realised V_1.
    rho, seeds = 0.5, 4000  # the runs of test_adac_gope_var.py's phase_one: one compiled program
    env_params = INSTANCE._replace(noise_stddev=0.0)
    # calibration='paper' voids the guarantee: the engine runs it at a finite rho only as not private
    learner = adac_gope(K, D, 5000, calibration=calibration, private=calibration == "safe")
    params = jp.SimParams(AdaCGOPEParams(INSTANCE.actions, rho), env_params)
    first = int(
        np.sum(
            core.plan_phase(
                INSTANCE.actions,
                jnp.ones(K, bool),
                phase=1,
                rho=rho,
                delta=0.001,
                num_actions=K,
                horizon=5000,
                private=True,
                design_tol=1e-3,
                design_iters=5000,
            ).alloc
        )
    )
    st = final_states(learner, linear_bandit(K, D), params, jax.random.key(4), first + 1, seeds)
    assert np.all(np.asarray(st.num_closed) == 1)
    gram = np.asarray(st.gram[0], np.float64)
    g2 = np.max(
        np.einsum("kd,de,ke->k", np.asarray(INSTANCE.actions), np.linalg.inv(gram), np.asarray(INSTANCE.actions))
    )
    c = float(core.phase_constant(1, rho, 0.001, K, D, private=True))
    expected = 2 / rho * (max(g2, D / c) if calibration == "safe" else D / c)
    assert float(st.noise_var[0]) == pytest.approx(expected, rel=1e-4)
    w, u = np.linalg.eigh(gram)
    root = u @ np.diag(np.sqrt(w)) @ u.T
    z = (np.asarray(st.theta_tilde, np.float64) - np.asarray(INSTANCE.theta)) @ root
    var, se = variance_with_stderr(z, 0.0)
    assert abs(var - expected) < 5 * se
    for wrong in (0.8 * expected, 1.2 * expected):  # power: ±20% is rejected
        assert abs(var - wrong) > 5 * se


def test_adac_oful_noise_has_the_spec_variance():
    # Zero rewards: b = 0, so V_τ θ̃_τ = Σ_{m<=ℓ} Y_m ~ N(0, (2ℓ/ρ) I) (spec §5.1).
    rho, seeds, horizon = 2.0, 2000, 60
    env = contextual_linear_bandit(K, D)
    ep = ContextualBanditParams(theta=np.zeros(D, np.float32), noise_stddev=0.0)
    st = final_states(
        adac_oful(K, D, horizon), env, jp.SimParams(AdaCOFULParams(rho), ep), jax.random.key(5), horizon, seeds
    )
    ell = np.asarray(st.num_switches, np.float64)
    assert np.all(ell >= 1)
    stat = np.linalg.solve(np.asarray(st.gram_inv_tau, np.float64), np.asarray(st.theta_tilde, np.float64)[..., None])[
        ..., 0
    ]
    z = stat / np.sqrt(ell)[:, None]
    var, se = variance_with_stderr(z, 0.0)
    assert abs(var - 2 / rho) < 5 * se
    for wrong in (0.8 * 2 / rho, 1.2 * 2 / rho):
        assert abs(var - wrong) > 5 * se
    # RS-OFUL: no noise at all.
    st0 = final_states(rs_oful(K, D, horizon), env, jp.SimParams(RSOFULParams(), ep), jax.random.key(5), horizon, 4)
    assert np.all(np.asarray(st0.theta_tilde) == 0.0)


# --- large ρ, price of privacy, theorem bounds ------------------------------------------------------------


@pytest.mark.slow
def test_large_rho_matches_nonprivate_gope():
    horizon, seeds = 6000, 64
    env = linear_bandit(K, D, random_theta=True)
    priv = jp.sweep(
        adac_gope(K, D, horizon),
        env,
        jp.SimParams(AdaCGOPEParams(INSTANCE.actions, 1e9), INSTANCE),
        jax.random.key(6),
        horizon,
        seeds,
    )
    base = jp.sweep(
        gope(K, D, horizon),
        env,
        jp.SimParams(GOPEParams(INSTANCE.actions), INSTANCE),
        jax.random.key(6),
        horizon,
        seeds,
    )
    diff = np.asarray(priv.regret[:, -1], np.float64) - np.asarray(base.regret[:, -1], np.float64)
    base_m, _ = mean_with_stderr(np.asarray(base.regret[:, -1]))
    assert abs(diff.mean()) <= 3 * max(diff.std(ddof=1) / math.sqrt(seeds), 1e-3 * base_m)


def gope_bound(actions, theta, horizon, rho, delta, private, rule="joint"):
    """Σ over the phases started before T of (c_ℓ + K) · min(Δ_max, 8 β_ℓ) (phase 1: Δ_max).

    On the good event (probability >= 1 - δ) every arm of A_ℓ, ℓ >= 2, has gap <= 4 β_{ℓ-1} = 8 β_ℓ
    (Thm 5.12's proof; Lattimore & Szepesvári Thm 22.1), and phase ℓ lasts <= c_ℓ + |S_ℓ| rounds.
    """
    means = np.asarray(actions) @ np.asarray(theta)
    dmax = means.max() - means.min()
    total, t, ell = 0.0, 0, 1
    k = len(means)
    while t < horizon:
        c = float(core.phase_constant(ell, rho, delta, k, len(theta), private=private, rule=rule))
        length = min(c + k, horizon - t)
        total += length * (dmax if ell == 1 else min(dmax, 8 * 2.0**-ell))
        t += c
        ell += 1
    return total


@pytest.mark.slow
@pytest.mark.parametrize("private", [False, True])
def test_gope_regret_below_the_theorem_bound(private):
    horizon, seeds, rho, delta = 10**6, 100, 0.1, 0.001
    params = AdaCGOPEParams(INSTANCE.actions, rho, delta) if private else GOPEParams(INSTANCE.actions, delta)
    res = simulate_gope_phases(params, INSTANCE, jax.random.key(9), horizon, seeds, clip=False, private=False)
    bound = gope_bound(INSTANCE.actions, INSTANCE.theta, horizon, rho, delta, private)
    reg = np.asarray(res.regret[:, -1], np.float64)
    assert np.mean(reg > bound) <= 0.05  # each run: probability >= 1 - δ
    assert reg.mean() < bound
    # the same check at the step level, shorter horizon
    h = 20_000
    learner = adac_gope(K, D, h, clip=False, private=False) if private else gope(K, D, h, clip=False)
    step = jp.sweep(learner, linear_bandit(K, D), jp.SimParams(params, INSTANCE), jax.random.key(9), h, 32)
    assert np.all(np.asarray(step.regret[:, -1]) < gope_bound(INSTANCE.actions, INSTANCE.theta, h, rho, delta, private))


def oful_bound(horizon, d, lam, delta, c_switch, s, l_max, rho=None):
    """RS-OFUL / AdaC-OFUL with the run's constants (AYPS11 Thm 4 and Lemma 12; spec §5.2).

    r_t <= min(Δ̄, 2 β̄ sqrt(1 + C) ‖a_t‖_{V_{t-1}^{-1}}) and Σ min(1, ‖a_t‖²) <= 2 d log(1 + T L²/(dλ)), so
    R_T <= max(Δ̄, 2 β̄ sqrt(1 + C)) sqrt(2 T d log(1 + T L²/(dλ))), with β̄ the largest radius:
    β_T, or for AdaC-OFUL the self-normalised radius at ℓ_max switches (c = 2ℓ_max/ρ) with
    λ_min >= λ and log det(V_T + cI) <= d log(λ + c + T L²/d).
    """
    info = d * math.log(1 + horizon * l_max**2 / (d * lam))
    beta = math.sqrt(2 * math.log(1 / delta) + info) + math.sqrt(lam) * s
    if rho is not None:
        c = 2 * (info / math.log(1 + c_switch) + 1) / rho
        logdet = d * math.log((lam + c + horizon * l_max**2 / d) / lam)
        beta = math.sqrt(1 + c / lam) * math.sqrt(2 * math.log(1 / delta) + logdet) + math.sqrt(lam) * s
    gap_max = 2 * l_max * s
    return max(gap_max, 2 * beta * math.sqrt(1 + c_switch)) * math.sqrt(2 * horizon * info)


@pytest.mark.parametrize("rho", [None, 1.0])
def test_oful_regret_below_the_theorem_bound(rho):
    horizon, seeds = 3000, 32
    env = contextual_linear_bandit(K, D, random_theta=True)
    ep = ContextualBanditParams(theta=np.zeros(D, np.float32), context_stddev=0.1)
    if rho is None:
        learner, lp = rs_oful(K, D, horizon, clip=False), RSOFULParams()
    else:
        learner, lp = adac_oful(K, D, horizon, clip=False, private=False), AdaCOFULParams(rho)
    res = jp.sweep(learner, env, jp.SimParams(lp, ep), jax.random.key(10), horizon, seeds)
    l_max = 1.0 + 0.1 * (math.sqrt(D) + math.sqrt(2 * math.log(K * horizon * 1e4)))  # ‖a‖ w.p. >= 1 - 1e-4
    bound = oful_bound(horizon, D, 0.1, 0.001, 1.0, 1.0, l_max, rho)
    assert np.all(np.asarray(res.regret[:, -1]) < bound)


# --- bad input ----------------------------------------------------------------------------------------------


def test_bad_static_input_raises_naming_the_argument():
    for factory in (gope, adac_gope, rs_oful, adac_oful):
        with pytest.raises(ValueError, match="num_actions"):
            factory(1, D, 100)
        with pytest.raises(ValueError, match="horizon"):
            factory(K, D, K - 1)
    with pytest.raises(ValueError, match="num_actions"):
        linear_bandit(1, D)
    with pytest.raises(ValueError, match="num_actions"):
        contextual_linear_bandit(1, D)
    with pytest.raises(ValueError, match="calibration"):
        adac_gope(K, D, 100, calibration="exact")


def test_bad_params_raise_naming_the_argument():
    env = linear_bandit(K, D)
    learner = adac_gope(K, D, 1000)

    def run(lp):
        return jp.run(learner, env, jp.SimParams(lp, INSTANCE), jax.random.key(0), 1000)

    for rho in (0.0, -1.0, jnp.array([1.0, 0.0])):
        with pytest.raises(ValueError, match="rho"):
            jp.sweep(
                learner, env, jp.SimParams(AdaCGOPEParams(INSTANCE.actions, rho), INSTANCE), jax.random.key(0), 1000, 2
            )
    for delta in (0.0, 1.0, 1.5):
        with pytest.raises(ValueError, match="delta"):
            run(AdaCGOPEParams(INSTANCE.actions, 1.0, delta))
    flat = np.asarray(INSTANCE.actions).copy()
    flat[:, 2] = 0.0  # all actions in a plane: they do not span R^3
    with pytest.raises(ValueError, match="actions"):
        run(AdaCGOPEParams(flat, 1.0))
    with pytest.raises(ValueError, match="actions"):
        jp.run(gope(K, D, 1000), env, jp.SimParams(GOPEParams(flat), INSTANCE), jax.random.key(0), 1000)
    with pytest.raises(ValueError, match="actions"):
        simulate_gope_phases(GOPEParams(flat), INSTANCE, jax.random.key(0), 1000, 2)
    cenv = contextual_linear_bandit(K, D)
    ep = ContextualBanditParams(theta=np.zeros(D, np.float32))
    with pytest.raises(ValueError, match="rho"):
        jp.run(adac_oful(K, D, 100), cenv, jp.SimParams(AdaCOFULParams(0.0), ep), jax.random.key(0), 100)
    with pytest.raises(ValueError, match="delta"):
        jp.run(rs_oful(K, D, 100), cenv, jp.SimParams(RSOFULParams(delta=1.0), ep), jax.random.key(0), 100)
    with pytest.raises(ValueError, match="regularization"):
        jp.run(rs_oful(K, D, 100), cenv, jp.SimParams(RSOFULParams(regularization=0.0), ep), jax.random.key(0), 100)
    with pytest.raises(ValueError, match="noise_stddev"):
        jp.run(
            gope(K, D, 100),
            env,
            jp.SimParams(GOPEParams(INSTANCE.actions), INSTANCE._replace(noise_stddev=-1.0)),
            jax.random.key(0),
            100,
        )
    with pytest.raises(ValueError, match="theta"):
        jp.run(
            gope(K, D, 100),
            env,
            jp.SimParams(GOPEParams(INSTANCE.actions), LinearBanditParams(INSTANCE.actions, np.zeros(2))),
            jax.random.key(0),
            100,
        )


def test_sweeping_rho_does_not_recompile():
    env = linear_bandit(K, D)
    learner = adac_gope(K, D, 500)

    def params(r):
        return jp.SimParams(AdaCGOPEParams(INSTANCE.actions, jnp.asarray(r, jnp.float32)), INSTANCE)

    jp.sweep(learner, env, params([0.1, 1.0]), jax.random.key(0), 500, 2)
    before = jp.sim.compile_count()
    jp.sweep(learner, env, params([0.3, 3.0]), jax.random.key(1), 500, 2)
    assert jp.sim.compile_count() == before
