"""OGD, FTAL and PFTAL on the strongly convex quadratic stream, end to end."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxpriv as jp
from jaxpriv import envs, mechanisms, oco, sets, theory
from jaxpriv.testing import mean_with_stderr

D = 2
BALL = sets.l2_ball(D)
ENV = envs.quadratic_stream(BALL)
H, CENTER, SPREAD = 1.0, np.array([0.3, 0.2]), 0.15  # ||z|| > 1 is a 4-sigma event: no clipping in practice
ENV_P = envs.QuadraticParams(H, CENTER, SPREAD)
POWERS = [2**k for k in range(6, 15)]
ROOT = Path(__file__).resolve().parents[2]


def exact_mean_regret(horizon):
    """FTAL and OGD(1/(Ht)) both play w_1 = 0 and then w_{t+1} = mean(z_1..z_t) in the interior, so

    E[Regret(T)] = (H/2) E[||z_1||² + sum_{t>=2} ||z̄_{t-1} - z_t||² - sum_t ||z_t - z̄_T||²]
                 = (H/2) (||c||² + s² (1 + H_{T-1})),   s² = d·spread², H_n the harmonic number.
    """
    harmonic = np.sum(1.0 / np.arange(1, horizon))
    s2 = D * SPREAD**2
    return 0.5 * H * (CENTER @ CENTER + s2 * (1.0 + harmonic))


@pytest.mark.parametrize(("learner_id", "learner"), [("ftal", oco.ftal(BALL)), ("ogd", oco.ogd(BALL))])
def test_non_private_regret_grows_like_log_t_with_the_exact_constant(learner_id, learner):
    params = jp.SimParams(oco.FTALParams(H) if learner_id == "ftal" else oco.OGDParams(H), ENV_P)
    r = jp.sweep(learner, ENV, params, jax.random.key(0), POWERS[-1], seeds=600, checkpoints=POWERS)
    mean, se = mean_with_stderr(np.asarray(r.regret), axis=0)
    expected = np.array([exact_mean_regret(t) for t in POWERS])
    assert np.all(np.abs(mean - expected) < 5 * se + 1e-3), (mean, expected, se)
    # log T, not sqrt T: the slope against ln T is (H/2) d spread², and the log-log slope is small.
    slope = np.polyfit(np.log(POWERS), mean, 1)[0]
    assert slope == pytest.approx(0.5 * H * D * SPREAD**2, rel=0.1)
    assert np.polyfit(np.log(POWERS), np.log(mean), 1)[0] < 0.25


def _pftal_sweep(eps, horizon, seeds, noise="gamma"):
    learner = oco.pftal(horizon, BALL, noise)
    lipschitz = H * (BALL.radius + 1.0)  # ||H(w - z)|| <= H (||C|| + ||z||)
    lp = oco.PFTALParams(**{mechanisms.budget_field(noise): eps}, lipschitz=lipschitz, strong_convexity=H)
    p = jp.SimParams(lp, ENV_P)
    return jp.sweep(
        learner, ENV, p, jax.random.key(1), horizon, seeds=seeds, checkpoints=POWERS[: POWERS.index(horizon) + 1]
    )


def test_pftal_at_infinite_epsilon_is_ftal():
    horizon = 2**12
    pf = _pftal_sweep(jnp.inf, horizon, 8)
    ft = jp.sweep(
        oco.ftal(BALL),
        ENV,
        jp.SimParams(oco.FTALParams(H), ENV_P),
        jax.random.key(1),
        horizon,
        seeds=8,
        checkpoints=POWERS[:7],
    )
    np.testing.assert_allclose(np.asarray(pf.regret), np.asarray(ft.regret), rtol=1e-4, atol=1e-4)


def test_pftal_regret_falls_as_epsilon_grows_and_stays_below_theorem_4():
    horizon = 2**12
    eps = np.array([0.3, 3.0, 30.0, np.inf], np.float32)
    r = _pftal_sweep(jnp.asarray(eps), horizon, 200)
    final, se = mean_with_stderr(np.asarray(r.regret[:, :, -1]), axis=1)
    # strictly decreasing, each step by more than the combined standard errors
    assert np.all(final[:-1] - final[1:] > 3 * np.sqrt(se[:-1] ** 2 + se[1:] ** 2)), (final, se)
    assert final[-1] == pytest.approx(exact_mean_regret(horizon), abs=5 * se[-1] + 1e-3)
    bound = np.asarray(
        theory.pftal_gamma_regret_bound(horizon, D, H * (BALL.radius + 1.0), H, BALL.radius, jnp.asarray(eps))
    )
    assert np.all(final + 5 * se < bound), (final, bound)


@pytest.mark.parametrize("noise", ["laplace", "gaussian"])
def test_pftal_other_noise_families_are_noisier_at_smaller_budgets(noise):
    horizon = 2**10
    # rho = 50 is refused at D = 11 (the samplers' delta floor, 6.1e-3, exceeds SAMPLER_DELTA_MAX): rho = 10 (4.6e-6)
    top = 10.0 if noise == "gaussian" else 50.0
    r = _pftal_sweep(jnp.array([0.5, top]), horizon, 100, noise)
    final, se = mean_with_stderr(np.asarray(r.regret[:, :, -1]), axis=1)
    assert final[0] - final[1] > 5 * np.hypot(se[0], se[1])


def test_theorem_4_bound_is_the_proof_expression():
    T, d, L, Hc, R, eps = 4096, 3, 2.0, 0.5, 1.0, 1.0
    G = L + Hc * R
    depth = mechanisms.tree_depth(T)
    var = (d + 1) * (depth * 2 * L / eps) ** 2  # the tree's replace-one sensitivity 2L
    harmonic = 1 + np.log(T)
    expected = 2 * G**2 * harmonic / Hc + 2 * np.sqrt(depth * d * var) * G * harmonic / Hc
    got = float(theory.pftal_gamma_regret_bound(T, d, L, Hc, R, eps))
    assert got == pytest.approx(expected, rel=1e-5)
    assert float(theory.pftal_gamma_regret_bound(T, d, L, Hc, R, jnp.inf)) == pytest.approx(2 * G**2 * harmonic / Hc)


@pytest.mark.parametrize(("noise", "factor"), [("gamma", 1.0), ("gaussian", 1.0), ("laplace", np.sqrt(D))])
def test_pftal_clips_gradients_at_l_and_calibrates_to_replace_one_sensitivity(noise, factor):
    T = 64
    learner = oco.pftal(T, BALL, noise)
    budget = {"rho": 0.5} if noise == "gaussian" else {"epsilon": 2.0}
    state = learner.init(jax.random.key(0), oco.PFTALParams(**budget, lipschitz=1.5, strong_convexity=0.5))
    clip = factor * 1.5  # L (L1 norm for the Laplace family)
    assert float(state.tree.sensitivity) == pytest.approx(clip, rel=1e-6)
    depth = mechanisms.tree_depth(T)
    expected = {
        "gamma": depth * 2 * clip / 2.0,  # Gamma scale D s / ε with s = 2 clip
        "laplace": depth * 2 * clip / 2.0,
        "gaussian": 2 * clip * np.sqrt(depth / (2 * 0.5)),  # σ = s sqrt(D / (2ρ))
    }[noise]
    assert float(state.tree.scale) == pytest.approx(expected, rel=1e-6)
    # A gradient far beyond L enters the tree clipped to norm L: at ε = ∞, w_2 = Π_C(-clip(g) / H).
    h = 5.0
    free_p = oco.PFTALParams(**{mechanisms.budget_field(noise): jnp.inf}, lipschitz=1.5, strong_convexity=h)
    free = learner.init(jax.random.key(0), free_p)
    g = np.array([30.0, 40.0])
    new, _ = learner.update(jax.random.key(1), free, free.w, jnp.asarray(g, jnp.float32), jnp.int32(1))
    norm = np.abs(g).sum() if noise == "laplace" else np.linalg.norm(g)
    np.testing.assert_allclose(np.asarray(new.w), -g * (clip / norm) / h, rtol=1e-5)




# PFTAL at an infinite budget against FTAL (``run`` and a small ``sweep``), at XLA's default optimisation
# level, as users run it: under the suite's XLA flags (tests/conftest.py) multiply-adds may not be
# contracted, and FTAL without its clip would pass. ``H = 0.7``, not 1: a product with 1 is exact.
_FTAL_IS_PFTAL = textwrap.dedent(
    """
    import jax, jax.numpy as jnp, numpy as np
    import jaxpriv as jp
    from jaxpriv import envs, mechanisms, oco, sets

    T, h = 256, 0.7
    cases = [
        (sets.l2_ball(3, 1.3), "gamma", "alternating", 0),
        (sets.l2_ball(10, 1.3), "gaussian", "drift", 4),
        (sets.simplex(5), "laplace", "drift", 0),
    ]
    for constraint, noise, z_dist, seeds in cases:
        env = envs.quadratic_stream(constraint, z_dist=z_dist)
        env_p = envs.QuadraticParams(h, np.full(constraint.dim, 0.2, np.float32), 0.5)
        budget = {mechanisms.budget_field(noise): jnp.inf}
        # ||h(w - z)|| <= h (||C|| + ||z||) <= 2.6 h: never clipped
        pf = jp.SimParams(oco.PFTALParams(**budget, lipschitz=3.0 * h, strong_convexity=h), env_p)
        ft = jp.SimParams(oco.FTALParams(h), env_p)
        pftal, ftal = oco.pftal(T, constraint, noise), oco.ftal(constraint, T)
        if seeds:
            a = jp.sweep(pftal, env, pf, jax.random.key(1), T, seeds=seeds).regret
            b = jp.sweep(ftal, env, ft, jax.random.key(1), T, seeds=seeds).regret
        else:
            a, b = jp.run(pftal, env, pf, 3, T).loss, jp.run(ftal, env, ft, 3, T).loss
        a, b = np.asarray(a), np.asarray(b)
        print(constraint.dim, noise, z_dist, np.array_equal(a, b), float(np.abs(a - b).max()))
    """
)


def test_pftal_at_infinite_budget_is_ftal_bit_for_bit():
    """FTAL's docstring: PFTAL without noise and within its clip reproduces FTAL bit for bit (the same
    dyadic sums and the same clip, so XLA contracts the same multiply-adds). Without FTAL's clip the
    losses differ by 1e-6 to 8e-6 in each of these cases."""
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}  # XLA's defaults, as users run it
    env |= {"PYTHONPATH": str(ROOT), "JAX_PLATFORMS": "cpu"}
    res = subprocess.run([sys.executable, "-c", _FTAL_IS_PFTAL], env=env, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    lines = res.stdout.strip().splitlines()
    assert len(lines) == 3 and all(" True 0.0" in line for line in lines), res.stdout
