"""PFTAL with a better prefix-sum mechanism: lower regret at the same ρ, FTAL at ρ = ∞, bad mechanisms refused."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxpriv as jp
from jaxpriv import envs, mechanisms, oco, sets, theory
from jaxpriv.testing import mean_with_stderr

D, T, SEEDS = 2, 2**9, 64
BALL = sets.l2_ball(D)
ENV = envs.quadratic_stream(BALL)
H = 1.0
ENV_P = envs.QuadraticParams(H, np.array([0.3, 0.2]), 0.15)
LIP = H * (BALL.radius + 1.0)
CHECKPOINTS = [2**6, 2**9]


def _sweep(learner, rho):
    p = jp.SimParams(oco.PFTALParams(rho=jnp.asarray(rho, jnp.float32), lipschitz=LIP, strong_convexity=H), ENV_P)
    return np.asarray(jp.sweep(learner, ENV, p, jax.random.key(1), T, seeds=SEEDS, checkpoints=CHECKPOINTS).regret)


def test_square_root_and_blt_factorizations_lower_pftal_regret_and_are_ftal_at_infinite_rho():
    rho = np.array([0.5, np.inf], np.float32)
    tree = _sweep(oco.pftal(T, BALL, "gaussian"), rho)
    ftal = jp.sweep(
        oco.ftal(BALL),
        ENV,
        jp.SimParams(oco.FTALParams(H), ENV_P),
        jax.random.key(1),
        T,
        seeds=SEEDS,
        checkpoints=CHECKPOINTS,
    )
    regrets = {"binary_tree": tree}
    for name in ("sqrt_factorization", "blt"):
        mech = getattr(mechanisms, name)(T, D, "gaussian", neighbouring="replace")
        regret = regrets[name] = _sweep(oco.pftal(T, BALL, mechanism=mech), rho)
        # shared seeds: the paired difference of the final regret at rho = 1/2
        diff = tree[0, :, -1] - regret[0, :, -1]
        mean, se = mean_with_stderr(diff)
        assert mean > 5 * se, (name, mean, se)
        assert np.mean(regret[0, :, -1]) < 0.7 * np.mean(tree[0, :, -1]), name
        np.testing.assert_allclose(regret[1], np.asarray(ftal.regret), rtol=1e-4, atol=1e-4)
    # each stays below Theorem 4's bound with its own worst per-step variance
    for name, regret in regrets.items():
        mech = getattr(mechanisms, name)(T, D, "gaussian", neighbouring="replace")
        var = mechanisms.release_variance(mech, mechanisms.TreeParams(rho=0.5, sensitivity=LIP), np.arange(1, T + 1))
        bound = float(theory.pftal_mechanism_regret_bound(T, D, LIP, H, BALL.radius, var.max()))
        final, final_se = mean_with_stderr(regret[0, :, -1])
        assert final + 5 * final_se < bound, (name, final, bound)


def test_pftal_passes_its_clip_and_replace_one_sensitivity_to_the_mechanism():
    mech = mechanisms.honaker_tree(64, D, "laplace", neighbouring="replace")
    learner = oco.pftal(64, BALL, mechanism=mech)
    state = learner.init(jax.random.key(0), oco.PFTALParams(epsilon=2.0, lipschitz=1.5, strong_convexity=0.5))
    assert float(state.tree.sensitivity) == pytest.approx(np.sqrt(D) * 1.5, rel=1e-6)  # L1 clip sqrt(d) L
    depth = mechanisms.tree_depth(64)
    assert float(state.tree.scale) == pytest.approx(depth * 2 * np.sqrt(D) * 1.5 / 2.0, rel=1e-6)


def test_a_mechanism_that_does_not_fit_the_learner_is_refused():
    sqrt = mechanisms.sqrt_factorization
    with pytest.raises(ValueError, match="dim=2"):
        oco.pftal(64, BALL, mechanism=sqrt(64, 3, neighbouring="replace"))
    with pytest.raises(ValueError, match="horizon must be >= 64"):
        oco.pftal(64, BALL, mechanism=sqrt(32, D, neighbouring="replace"))
    with pytest.raises(ValueError, match="neighbouring='replace'"):
        oco.pftal(64, BALL, mechanism=sqrt(64, D))
    with pytest.raises(ValueError, match="noise must be None or 'gaussian'"):
        oco.pftal(64, BALL, "gamma", mechanism=sqrt(64, D, neighbouring="replace"))
    with pytest.raises(ValueError, match="prefix-sum Mechanism"):
        oco.pftal(64, BALL, mechanism=oco.ftal(BALL))
    window = mechanisms.window_tree(64, D, 8, neighbouring="replace")  # window privacy, not the whole stream's
    for factory in (oco.pftal, oco.dp_ftrl):
        with pytest.raises(ValueError, match="window of W consecutive losses"):
            factory(64, BALL, mechanism=window)


def test_private_bandit_ftal_takes_a_blt_and_is_bandit_ftal_at_infinite_rho():
    horizon, c = 200, sets.l2_ball(3)
    mech = mechanisms.blt(horizon, 3, neighbouring="replace", buffers=3)
    learner = oco.private_bandit_ftal(horizon, c, mechanism=mech)
    env = envs.bandit_feedback(envs.quadratic_stream(c))
    ep = envs.QuadraticParams(1.3, jnp.array([0.6, -0.2, 0.1]), 0.2)
    pp = oco.PrivateBanditFTALParams(rho=jnp.inf, loss_bound=10.0)  # |f| < 10: the clip is inactive
    a = jp.run(learner, env, jp.SimParams(pp, ep), 0, horizon, checkpoints=None)
    free = jp.SimParams(oco.BanditFTALParams(), ep)
    b = jp.run(oco.bandit_ftal(horizon, c), env, free, 0, horizon, checkpoints=None)
    np.testing.assert_array_equal(a.loss, b.loss)
    # the mechanism gets the clip pB/β and calibrates to the replace-one 2pB/β times its column norm
    pp = pp._replace(rho=0.5)
    state = learner.init(jax.random.key(0), pp)
    beta = float(theory.bandit_ftal_exploration(horizon, 3, 1.0, "oblivious"))
    clip = 3 * 10.0 / beta
    assert float(state.sums.sensitivity) == pytest.approx(clip, rel=1e-5)
    sens = float(mechanisms.calibrated_sensitivity(mech, mechanisms.TreeParams(rho=0.5, sensitivity=clip)))
    assert float(state.sums.scale) == pytest.approx(sens / np.sqrt(2 * 0.5), rel=1e-5)
    n = jp.run(learner, env, jp.SimParams(pp, ep), 0, horizon, checkpoints=None)
    assert not np.array_equal(n.loss, b.loss)  # power: a finite budget changes the points
    with pytest.raises(ValueError, match="neighbouring='replace'"):
        oco.private_bandit_ftal(horizon, c, mechanism=mechanisms.blt(horizon, 3, buffers=3))
    with pytest.raises(ValueError, match="noise must be None or 'gaussian'"):
        oco.private_bandit_ftal(horizon, c, "gamma", mechanism=mech)


def test_regularized_pftal_and_private_experts_take_a_blt_and_choose_h_from_its_variance():
    horizon, c = 128, sets.l2_ball(D)
    mech = mechanisms.blt(horizon, D, neighbouring="replace", buffers=3)
    tree = oco.regularized_pftal(horizon, c, "gaussian")
    blt = oco.regularized_pftal(horizon, c, mechanism=mech)
    p = oco.RegularizedPFTALParams(rho=0.5, lipschitz=1.5)
    # Theorem 11's H with c = sqrt(d max_t Var_t) per unit clip at rho = 1/2 (computed here at rho = 1/2, not 1)
    var = mechanisms.release_variance(mech, mechanisms.TreeParams(rho=0.5, sensitivity=1.0), np.arange(1, horizon + 1))
    expected = theory.regularized_pftal_strength(horizon, D, 1.5, c.radius, 0.5, unit_noise_norm=np.sqrt(D * var.max()))
    h_blt = float(blt.init(jax.random.key(0), p).strong_convexity)
    assert h_blt == pytest.approx(float(expected), rel=1e-5)
    assert h_blt < float(tree.init(jax.random.key(0), p).strong_convexity)  # less noise, less regularisation
    # at rho = inf both are regularised FTAL: the same points
    env = envs.quadratic_stream(c)
    sim = jp.SimParams(p._replace(rho=jnp.inf), ENV_P)
    a = jp.run(blt, env, sim, 0, horizon, checkpoints=None)
    b = jp.run(tree, env, sim, 0, horizon, checkpoints=None)
    np.testing.assert_allclose(a.loss, b.loss, rtol=1e-6, atol=1e-6)
    experts = oco.private_experts(horizon, 3, mechanism=mechanisms.blt(horizon, 3, neighbouring="replace", buffers=3))
    state = experts.init(jax.random.key(0), oco.PrivateExpertsParams(rho=0.5))
    # the clip is L + H·radius (the gradient bound of c_t + H w_t; radius 1 for the simplex)
    assert float(state.tree.sensitivity) == pytest.approx(np.sqrt(3) + float(state.strong_convexity), rel=1e-5)
    with pytest.raises(ValueError, match="dim=3"):
        oco.private_experts(horizon, 3, mechanism=mech)
