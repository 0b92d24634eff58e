"""Exact checks: privacy scales against numbers worked by hand; FTAL and the engine's regret by brute force.

The other tests compare a calibrated quantity with the function that computes it; here the
numbers are written out, with the paper's arithmetic in the comment, so a wrong formula
(in the function or in the component that calls it) cannot agree with itself.
"""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxpriv as jp
from jaxpriv import envs, mechanisms, oco, sets
from jaxpriv.bandits.adac_ucb import AdaCUCBParams, adac_ucb, adac_ucb_noise_stddev
from jaxpriv.bandits.ucb import UCBParams, ucb
from jaxpriv.testing import rollout

F32 = float(np.finfo(np.float32).eps)  # 2^-23 ≈ 1.19e-7

# ----------------------------------------------------------------------------- MI-OGD's σ (Zhang & Venkatasubramaniam)


def test_mi_ogd_stddev_is_theorem_1_worked_by_hand():
    # Theorem 1: C = (d/2) log(1 + L²/(d σ²)), so σ = L / sqrt(d (e^{2C/d} - 1)).
    # d = 2, L = 1.5, C = ln 5: 2C/d = ln 5, e^{ln 5} - 1 = 4, σ = 1.5 / sqrt(2·4) = 1.5 / sqrt 8 = 0.5303300858899106
    learner = oco.mi_ogd(sets.l2_ball(2, 100.0))
    state = learner.init(jax.random.key(0), oco.MIOGDParams(math.log(5.0), 1.5, 1.0))
    assert float(state.stddev) == pytest.approx(0.5303300858899106, rel=2 * F32)
    # the other direction: σ = 0.5, L = 1, d = 2: C = (2/2) log(1 + 1/(2·0.25)) = log 3 = 1.0986122886681098
    assert float(mechanisms.stddev_to_mutual_information(0.5, 1.0, 2)) == pytest.approx(1.0986122886681098, rel=2 * F32)
    # the noise the update adds has that σ: θ_2 = -(z + v) with z = 0, so θ_2 = -v, v ~ N(0, σ² I_2);
    # 20000 draws of 2 coordinates: the sample variance has relative standard error sqrt(2/40000) = 0.7%
    keys = jax.random.split(jax.random.key(1), 20000)
    theta = jax.vmap(lambda k: learner.update(k, state, state.w, jnp.zeros(2), jnp.int32(1))[0].theta)(keys)
    var = float(np.var(np.asarray(theta, np.float64)))
    assert abs(var - 0.28125) < 4 * 0.28125 * math.sqrt(2 / 40000)  # σ² = 2.25/8 = 0.28125


def test_mi_bandit_ogd_stddev_is_theorem_3_worked_by_hand():
    # Theorem 3: C = (d/2) log(1 + d (F/δ + L)²/σ²) (the sphere's dimension p = d = 2 on the ball); the
    # estimate is clipped to p (F/δ + L) = 2 (1/0.5 + 1) = 6, so σ = 6 / sqrt(d (e^{2C/d} - 1));
    # C = ln 5: σ = 6 / sqrt(2·4) = 6 / sqrt 8 = 2.1213203435596424
    learner = oco.mi_bandit_ogd(16, sets.l2_ball(2, 1.0))
    params = oco.MIBanditOGDParams(math.log(5.0), loss_bound=1.0, lipschitz=1.0, exploration=0.5, learning_rate=0.1)
    state = learner.init(jax.random.key(0), params)
    assert float(state.clip) == 6.0
    assert float(state.stddev) == pytest.approx(2.1213203435596424, rel=2 * F32)


# ----------------------------------------------------------------------------- the tree's node scales


@pytest.mark.parametrize(
    ("noise", "horizon", "budget", "sensitivity", "neighbouring", "scale"),
    [
        # gamma: D·s/ε; T = 8: D = ceil(log2 8) + 1 = 4; s = Δ = 1.5 (add/remove): 4·1.5/0.5 = 12
        ("gamma", 8, {"epsilon": 0.5}, 1.5, "add_remove", 12.0),
        # replace-one: s = 2Δ = 3: 4·3/0.5 = 24
        ("gamma", 8, {"epsilon": 0.5}, 1.5, "replace", 24.0),
        # laplace: D·s/ε; T = 16: D = 4 + 1 = 5; 5·2/4 = 2.5
        ("laplace", 16, {"epsilon": 4.0}, 2.0, "add_remove", 2.5),
        # T = 5: D = ceil(log2 5) + 1 = 3 + 1 = 4; 4·1/2 = 2
        ("laplace", 5, {"epsilon": 2.0}, 1.0, "add_remove", 2.0),
        # gaussian: s·sqrt(D/(2ρ)); T = 8: D = 4; 1.5·sqrt(4/(2·0.5)) = 1.5·2 = 3
        ("gaussian", 8, {"rho": 0.5}, 1.5, "add_remove", 3.0),
        # replace-one: s = 3; ρ = 2: 3·sqrt(4/4) = 3
        ("gaussian", 8, {"rho": 2.0}, 1.5, "replace", 3.0),
        # T = 1: D = 0 + 1 = 1; 1·sqrt(1/(2·0.125)) = sqrt 4 = 2
        ("gaussian", 1, {"rho": 0.125}, 1.0, "add_remove", 2.0),
    ],
)
def test_tree_node_scale_is_worked_by_hand(noise, horizon, budget, sensitivity, neighbouring, scale):
    tree = mechanisms.binary_tree(horizon, 1, noise, neighbouring)
    params = mechanisms.TreeParams(**budget, sensitivity=sensitivity)
    state = tree.init(jax.random.key(0), params)
    assert float(state.scale) == pytest.approx(scale, rel=2 * F32)
    # the release at t = 1 is x_1 + one node's noise: variance 2·scale² (laplace; gamma in one dimension, a
    # Laplace radius) or scale² (gaussian); 20000 draws: relative standard error of the variance
    # sqrt(2/n) (gaussian) or sqrt(5/n) (laplace: kurtosis 6, var(s²) = (μ4 - σ⁴)/n = 5σ⁴/n)
    n = 20000
    keys = jax.random.split(jax.random.key(2), n)
    out = jax.vmap(lambda k: tree.step(k, state, jnp.zeros(1), jnp.int32(1))[1])(keys)
    var = float(np.var(np.asarray(out, np.float64)))
    expect, rse = (scale**2, math.sqrt(2 / n)) if noise == "gaussian" else (2 * scale**2, math.sqrt(5 / n))
    assert abs(var / expect - 1) < 4 * rse, (var, expect)


# ----------------------------------------------------------------------------- AdaC-UCB's noise scale


def test_adac_ucb_noise_scale_is_worked_by_hand():
    # σ = Δ/sqrt(2ρ) with Δ = 1/n (the mean of n rewards in [0, 1]): 1/(n sqrt(2ρ))
    # ρ = 0.5, n = 2: 1/(2·1) = 0.5; ρ = 2, n = 4: 1/(4·2) = 0.125; ρ = 0.125, n = 1: 1/(1·0.5) = 2
    got = adac_ucb_noise_stddev(jnp.array([0.5, 2.0, 0.125]), jnp.array([2.0, 4.0, 1.0]))
    np.testing.assert_allclose(np.asarray(got), [0.5, 0.125, 2.0], rtol=2 * F32)


def _adac_state_before_close(pulls):
    """AdaC-UCB (ρ = 0.5) after arm 0's first ``pulls - 1`` pulls (rewards 0), its episode closing at pull ``pulls``."""
    learner = adac_ucb(2)
    state = learner.init(None, AdaCUCBParams(rho=0.5))
    for t in range(1, pulls):  # the adversary queries arm 0 every round (Interactive DP)
        state = learner.update(jax.random.key(100 + t), state, 0, 0.0, t)[0]
    return learner, state


def test_adac_ucb_released_mean_has_the_worked_noise_at_n_1_and_2():
    # arm 0's episodes: pull 1 (n = 1), pull 2 (n = 1), pulls 3-4 (n = 2); the episode closing at pull 2 releases
    # r + σ_1 z and the one closing at pull 4 releases (r_3 + r_4)/2 + σ_2 z, σ_n = 1/(n sqrt(2ρ)) = 1/n at ρ = 0.5
    learner1, before1 = _adac_state_before_close(2)
    learner2, before2 = _adac_state_before_close(4)
    keys = jax.random.split(jax.random.key(3), 20000)
    noise1 = jax.vmap(lambda k: learner1.update(k, before1, 0, 0.0, 2)[0].means[0])(keys)
    noise2 = jax.vmap(lambda k: learner2.update(k, before2, 0, 0.0, 4)[0].means[0])(keys)
    assert int(learner2.update(keys[0], before2, 0, 0.0, 4)[0].lengths[0]) == 2  # the episode of n = 2 closed
    # the same key draws the same z: σ_2/σ_1 = 1/2 exactly (1/sqrt 2 for a 1/sqrt(n) scaling)
    np.testing.assert_allclose(np.asarray(noise2), 0.5 * np.asarray(noise1), rtol=2 * F32, atol=1e-30)
    # σ_2 = 0.5: variance 0.25, relative standard error sqrt(2/20000) = 1%
    var = float(np.var(np.asarray(noise2, np.float64)))
    assert abs(var / 0.25 - 1) < 4 * math.sqrt(2 / 20000), var


# ----------------------------------------------------------------------------- FTAL plays the projected mean


def _project_ball(m, radius):
    norm = np.linalg.norm(m)
    return m if norm <= radius else m * (radius / norm)


@pytest.mark.parametrize("strong_convexity", [1.0, 0.25])
def test_ftal_plays_the_projected_mean_of_the_centres(strong_convexity):
    # f_t(w) = (H/2)||w - z_t||², gradient H(w_t - z_t): the leader (W_t - S_t/H)/t = (W_t - (W_t - Z_t))/t = Z_t/t,
    # so FTAL plays w_{t+1} = Π_C(mean of z_1..z_t) (and w_1 = Π_C(0) = 0)
    radius, horizon = 1.0, 16
    rng = np.random.default_rng(0)
    z = rng.normal(0.0, 1.0, (horizon, 3)) + np.array([1.2, 0.0, -0.3])  # the mean leaves the ball at times
    z = z.astype(np.float32).astype(np.float64)
    learner = oco.ftal(sets.l2_ball(3, radius), horizon)
    state = learner.init(jax.random.key(0), oco.FTALParams(strong_convexity))
    act, update = jax.jit(learner.act), jax.jit(lambda *a: learner.update(*a)[0])
    played = []
    for t in range(1, horizon + 1):
        w = act(jax.random.key(t), state, jnp.int32(t))
        played.append(np.asarray(w, np.float64))
        grad = strong_convexity * (jnp.asarray(w) - jnp.asarray(z[t - 1], jnp.float32))
        state = update(jax.random.key(t), state, w, grad, jnp.int32(t))
    played.append(np.asarray(state.w, np.float64))
    expect = [np.zeros(3)] + [_project_ball(z[:t].mean(0), radius) for t in range(1, horizon + 1)]
    inside = [np.linalg.norm(z[:t].mean(0)) < radius for t in range(1, horizon + 1)]
    assert any(inside) and not all(inside)  # both branches of the projection are exercised
    # float32 rounding: a few ulps of the sums W_t, Z_t (norm <= ~3) divided by t
    np.testing.assert_allclose(np.array(played), np.array(expect), rtol=0, atol=32 * F32)


# ----------------------------------------------------------------------------- the engine's regret, by brute force


def _centre(t, action, feedback, info, learner_state, env_state):
    return info.stats.z  # the quadratic stream's z_t


def _arm(t, action, feedback, info, learner_state, env_state):
    return action


def test_sweep_regret_on_a_quadratic_stream_matches_brute_force_at_every_step():
    horizon, seeds, radius, h = 8, 3, 1.0, 0.5
    constraint = sets.l2_ball(2, radius)
    env = envs.quadratic_stream(constraint, z_radius=2.0)
    env_params = envs.QuadraticParams(strong_convexity=h, center=jnp.array([0.9, -0.4]), spread=0.8)
    key = jax.random.key(7)
    res = jp.sweep(
        oco.ftal(constraint, horizon),
        env,
        jp.SimParams(oco.FTALParams(h), env_params),
        key,
        horizon,
        seeds,
        checkpoints=list(range(1, horizon + 1)),
    )
    assert np.asarray(res.steps).tolist() == list(range(1, horizon + 1))
    # the realised centres z_t of the same runs (jaxpriv.testing.rollout: sweep's seeds, keys and steps)
    learner, params = oco.ftal(constraint, horizon), jp.SimParams(oco.FTALParams(h), env_params)
    centres = rollout(learner, env, params, key, horizon, seeds=seeds, record=_centre).records
    for seed in range(seeds):
        z = np.asarray(centres[seed], np.float64)
        plays = [np.zeros(2)] + [_project_ball(z[:t].mean(0), radius) for t in range(1, horizon)]  # FTAL's
        losses = np.array([0.5 * h * np.sum((w - zt) ** 2) for w, zt in zip(plays, z, strict=True)])
        for t in range(1, horizon + 1):
            # min over the ball of sum_{s<=t} (H/2)||w - z_s||² = (Ht/2)||w - mean||² + const: at Π_C(mean)
            best_w = _project_ball(z[:t].mean(0), radius)
            best = 0.5 * h * np.sum((best_w - z[:t]) ** 2)
            # brute force: no point of a fine polar grid of the ball does better
            r, a = np.meshgrid(np.linspace(0, radius, 101), np.linspace(0, 2 * np.pi, 721))
            grid = np.stack([r * np.cos(a), r * np.sin(a)], -1).reshape(-1, 1, 2)
            assert best <= np.min(0.5 * h * np.sum((grid - z[:t]) ** 2, axis=(-1, -2))) + 1e-12
            loss = losses[:t].sum()
            tol = 64 * F32 * max(loss, 1.0)  # float32 sums of t <= 8 terms of size <= loss
            assert abs(float(res.loss[seed, t - 1]) - loss) < tol, (seed, t)
            assert abs(float(res.regret[seed, t - 1]) - (loss - best)) < tol, (seed, t)
            assert abs(float(res.best[seed, t - 1]) - best) < tol, (seed, t)


def test_sweep_pseudo_regret_on_a_bandit_matches_a_replay_at_every_step():
    horizon, seeds, num_arms = 8, 4, 3
    means = np.array([0.2, 0.9, 0.5], np.float32)
    learner, env = ucb(num_arms), envs.bernoulli_bandit(num_arms)
    params = jp.SimParams(UCBParams(), envs.BernoulliParams(jnp.asarray(means)))
    key = jax.random.key(11)
    res = jp.sweep(learner, env, params, key, horizon, seeds, checkpoints=list(range(1, horizon + 1)))
    gaps = means.max() - means  # [0.7, 0, 0.4] in float32
    # the arms a_t the same runs play (jaxpriv.testing.rollout: sweep's seeds), then sum_{s<=t} Δ_{a_s}
    played = rollout(learner, env, params, key, horizon, seeds=seeds, record=_arm).records
    arms_seen = set()
    for seed in range(seeds):
        arms = np.asarray(played[seed]).tolist()
        arms_seen.update(arms)
        expect = np.cumsum(gaps[arms], dtype=np.float64)
        np.testing.assert_allclose(np.asarray(res.regret[seed], np.float64), expect, rtol=0, atol=8 * F32)
    assert arms_seen == {0, 1, 2}  # every gap enters some sum
