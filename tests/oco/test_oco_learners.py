"""Full-information learners: exact limits (PFTAL at ε=∞ is FTAL, MI-OGD at σ=0 is lazy OGD),
MI accounting, clipping, regret below the papers' bounds, bad input."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxpriv as jp
from jaxpriv import envs, mechanisms, oco, sets, theory
from jaxpriv.testing import mean_with_stderr, rollout, variance_with_stderr

SETS = [sets.l2_ball(3), sets.box(3, -0.5, 1.0), sets.simplex(3), sets.l1_ball(3)]


COMBOS = [(c, "gamma") for c in SETS] + [(SETS[0], "laplace"), (SETS[2], "gaussian")]


_FTAL_RUNS: dict = {}


@pytest.mark.parametrize(("c", "noise"), COMBOS, ids=lambda x: getattr(x, "name", x))
def test_pftal_at_infinite_budget_equals_ftal_exactly_on_every_set(c, noise):
    T = 200
    env = envs.quadratic_stream(c, z_dist="alternating")
    ep = envs.QuadraticParams(1.3, jnp.array([0.6, -0.2, 0.1]), 0.2)
    # Clipping bound L + H||C|| above every gradient (||w - z|| <= 2R), so the tree sees the raw gradients.
    pp = oco.PFTALParams(**{mechanisms.budget_field(noise): jnp.inf}, lipschitz=4.0 * c.radius, strong_convexity=1.3)
    pftal = oco.pftal(T, c, noise)
    a = jp.run(pftal, env, jp.SimParams(pp, ep), jax.random.key(0), T, checkpoints=None)
    if c.name not in _FTAL_RUNS:  # FTAL's run on a set is the same for every noise family: run once
        ftal = oco.ftal(c, T)
        _FTAL_RUNS[c.name] = jp.run(
            ftal, env, jp.SimParams(oco.FTALParams(1.3), ep), jax.random.key(0), T, checkpoints=None
        )
    b = _FTAL_RUNS[c.name]
    np.testing.assert_array_equal(a.loss, b.loss)
    np.testing.assert_array_equal(a.regret, b.regret)
    if noise == "gamma" and c.name == "simplex":  # power: a finite budget changes the points
        pp = pp._replace(epsilon=10.0)
        n = jp.run(pftal, env, jp.SimParams(pp, ep), jax.random.key(0), T, checkpoints=None)  # the same compilation
        assert not np.array_equal(n.loss, b.loss)


def lazy_ogd_reference(c, env, env_params, eta, horizon, seed):
    """Lazy projected OGD, ``w_t = Π_C(-η Σ_{s<t} g_s)``, written here as a learner of its own and run on the
    engine's keys (``jaxpriv.testing.rollout``): its cumulative loss."""

    def init(key, params):
        return jnp.zeros(c.dim, jnp.float32)  # θ = -Σ g

    def act(key, theta, t):
        return c.project(eta * theta)

    def update(key, theta, w, g, t):
        return theta - g

    out = rollout(jp.Learner(init, act, update), env, jp.SimParams(None, env_params), jax.random.key(seed), horizon)
    return np.cumsum(np.asarray(out.records.loss, np.float64))


@pytest.mark.parametrize("c", [sets.l2_ball(3, 2.0), sets.simplex(3)], ids=lambda c: c.name)
def test_mi_ogd_at_zero_noise_is_lazy_projected_ogd(c):
    T, eta = 60, 0.05
    env = envs.classification_stream(c, T, "logistic")
    ep = envs.ClassificationParams(jnp.array([1.0, -1.0, 0.5]), 0.1)
    lp = oco.MIOGDParams(mutual_information=jnp.inf, lipschitz=1.0, learning_rate=eta)
    r = jp.run(oco.mi_ogd(c), env, jp.SimParams(lp, ep), jax.random.key(3), T, checkpoints=None)
    np.testing.assert_allclose(r.loss, lazy_ogd_reference(c, env, ep, eta, T, 3), rtol=1e-5, atol=1e-5)


def test_mi_accounting_inverts_exactly_and_matches_theorem_1():
    dim, lip = 5, 1.7
    sigma = jnp.array([0.01, 0.1, 0.5, 1.0, 3.0, 30.0])
    c = mechanisms.stddev_to_mutual_information(sigma, lip, dim)
    expected = 0.5 * dim * np.log(1.0 + lip**2 / (dim * np.asarray(sigma, np.float64) ** 2))
    np.testing.assert_allclose(c, expected, rtol=1e-5)
    np.testing.assert_allclose(mechanisms.mutual_information_to_stddev(c, lip, dim), sigma, rtol=2e-6)
    target = jnp.array([1e-3, 0.05, 0.5, 2.0, 8.0])
    back = mechanisms.stddev_to_mutual_information(mechanisms.mutual_information_to_stddev(target, lip, dim), lip, dim)
    np.testing.assert_allclose(back, target, rtol=2e-6)
    assert float(mechanisms.mutual_information_to_stddev(jnp.inf, lip, dim)) == 0.0
    assert float(mechanisms.stddev_to_mutual_information(0.0, lip, dim)) == np.inf
    assert np.all(np.diff(np.asarray(c)) < 0)  # more noise, less information


def test_mi_ogd_noise_has_the_calibrated_stddev_and_gradients_are_clipped():
    c = sets.l2_ball(4, 100.0)
    learner = oco.mi_ogd(c)
    lip, target = 2.0, 0.7
    state = learner.init(jax.random.key(0), oco.MIOGDParams(target, lip, 1.0))
    sigma = float(mechanisms.mutual_information_to_stddev(target, lip, 4))
    np.testing.assert_allclose(state.stddev, sigma, rtol=1e-6)
    keys = jax.random.split(jax.random.key(1), 5000)
    big = jnp.array([30.0, 40.0, 0.0, 0.0])  # norm 50, clipped to L = 2
    out = jax.vmap(lambda k: learner.update(k, state, state.w, big, jnp.int32(1))[0].theta)(keys)
    noise = np.asarray(out) + np.array([1.2, 1.6, 0.0, 0.0])  # theta = -(clip(z) + v)
    var, se = variance_with_stderr(noise, mean=0.0)
    assert abs(var - sigma**2) < 4 * se
    for wrong in (0.8 * sigma**2, 1.2 * sigma**2):
        assert abs(var - wrong) > 4 * se
    free = oco.mi_ogd(c).init(jax.random.key(0), oco.MIOGDParams(jnp.inf, lip, 1.0))
    theta = learner.update(jax.random.key(2), free, free.w, big, jnp.int32(1))[0].theta
    np.testing.assert_allclose(theta, [-1.2, -1.6, 0.0, 0.0], rtol=1e-6)


def test_mi_ogd_default_step_is_theorem_2s_and_regret_is_below_its_bound():
    dim, T, radius = 3, 2048, 3.0
    c = sets.l2_ball(dim, radius)
    env = envs.classification_stream(c, T, "logistic", solver_steps=200)
    budgets = jnp.array([0.05, 0.5, jnp.inf])
    lp = oco.MIOGDParams(mutual_information=budgets, lipschitz=1.0)
    r = jp.sweep(oco.mi_ogd(c, T), env, jp.SimParams(lp, envs.ClassificationParams()), jax.random.key(0), T, 16, [T])
    sigma = mechanisms.mutual_information_to_stddev(budgets, 1.0, dim)
    bound = np.asarray(theory.mi_ogd_regret_bound(T, dim, 1.0, radius, sigma))
    mean, se = mean_with_stderr(np.asarray(r.regret[:, :, -1] + r.gap[:, :, -1]), axis=1)
    assert np.all(mean + 3 * se < bound), (mean, bound)
    assert mean[0] > mean[2] + 3 * np.hypot(se[0], se[2])  # privacy costs regret
    state = oco.mi_ogd(c, T).init(jax.random.key(0), oco.MIOGDParams(0.5, 1.0))
    np.testing.assert_allclose(
        state.learning_rate, theory.mi_ogd_learning_rate(T, dim, 1.0, radius, state.stddev), rtol=1e-6
    )


def test_regularized_pftal_uses_theorem_11s_strength_and_feeds_the_regularised_gradient():
    T, c = 1024, sets.l2_ball(3, 2.0)
    learner = oco.regularized_pftal(T, c)
    state = learner.init(jax.random.key(0), oco.RegularizedPFTALParams(epsilon=2.0, lipschitz=1.5))
    h = theory.regularized_pftal_strength(T, 3, 1.5, 2.0, 2.0)
    np.testing.assert_allclose(state.strong_convexity, h, rtol=1e-6)
    np.testing.assert_allclose(state.tree.sensitivity, 1.5 + float(h) * 2.0, rtol=1e-6)  # clip at ||∇h|| <= L + H||C||
    # At ε = ∞ it is PFTAL run on h_t = f_t + (H/2)||w||²: quadratic f gives a quadratic h with
    # H' = H_f + H and z' = H_f z / H'; compare the points through the losses on f.
    fixed = learner.init(jax.random.key(0), oco.RegularizedPFTALParams(jnp.inf, lipschitz=1.0, strong_convexity=0.5))
    g = jnp.array([0.3, -0.1, 0.2])
    w = jnp.array([0.5, 0.5, 0.0])
    after, _ = learner.update(jax.random.key(1), fixed, w, g, jnp.int32(1))
    np.testing.assert_allclose(after.w, c.project(w - (g + 0.5 * w) / 0.5), rtol=1e-6)


def test_private_experts_regret_is_below_table_1s_bound_and_grows_as_epsilon_shrinks():
    p, T = 4, 2048
    env = envs.experts_stream(p, "alternating")
    eps = jnp.array([0.5, 5.0, jnp.inf])
    lp = oco.PrivateExpertsParams(epsilon=eps)
    r = jp.sweep(oco.private_experts(T, p), env, jp.SimParams(lp, envs.ExpertsParams()), jax.random.key(0), T, 16, [T])
    mean, se = mean_with_stderr(np.asarray(r.regret[:, :, -1]), axis=1)
    h = theory.regularized_pftal_strength(T, p, np.sqrt(p), 1.0, eps)
    bound = np.asarray(theory.private_experts_regret_bound(T, p, h, eps))
    assert np.all(mean + 3 * se < bound), (mean, bound)
    assert mean[0] > mean[2] + 3 * np.hypot(se[0], se[2])


@pytest.mark.parametrize(
    ("make", "arg"),
    [
        (lambda: oco.ftal(sets.simplex(3)._replace(project=None)), "constraint"),
        (lambda: oco.pftal(16, sets.l1_ball(3)._replace(project=None)), "constraint"),
        (lambda: oco.regularized_pftal(16, sets.box(3)._replace(project=None)), "constraint"),
        (lambda: oco.mi_ogd(sets.l2_ball(3)._replace(project=None)), "constraint"),
        (lambda: oco.ftal(sets.l2_ball(3), horizon=0), "horizon"),
        (lambda: oco.private_experts(16, 0), "num_experts"),
        (lambda: oco.mi_ogd(sets.l2_ball(3), horizon=-5), "horizon"),
    ],
)
def test_bad_static_input_raises_value_error_naming_the_argument(make, arg):
    with pytest.raises(ValueError, match=arg):
        make()


@pytest.mark.parametrize(
    ("learner", "params", "arg"),
    [
        (oco.ftal(sets.l2_ball(2)), oco.FTALParams(0.0), "strong_convexity"),
        (oco.ftal(sets.l2_ball(2)), oco.FTALParams(-1.0), "strong_convexity"),
        (oco.pftal(16, sets.simplex(2)), oco.PFTALParams(1.0, strong_convexity=0.0), "strong_convexity"),
        (oco.regularized_pftal(16, sets.l2_ball(2)), oco.RegularizedPFTALParams(strong_convexity=-1.0), "strong"),
        (oco.regularized_pftal(16, sets.l2_ball(2)), oco.RegularizedPFTALParams(epsilon=0.0), "epsilon"),
        (oco.private_experts(16, 3), oco.PrivateExpertsParams(epsilon=-1.0), "epsilon"),
        (oco.mi_ogd(sets.l2_ball(2), 16), oco.MIOGDParams(mutual_information=0.0), "mutual_information"),
        (oco.mi_ogd(sets.l2_ball(2), 16), oco.MIOGDParams(mutual_information=-2.0), "mutual_information"),
        (oco.mi_ogd(sets.l2_ball(2), 16), oco.MIOGDParams(1.0, lipschitz=0.0), "lipschitz"),
        (oco.mi_ogd(sets.l2_ball(2), 16), oco.MIOGDParams(1.0, learning_rate=-0.1), "learning_rate"),
        (oco.mi_ogd(sets.l2_ball(2)), oco.MIOGDParams(1.0), "learning_rate"),
    ],
)
def test_bad_params_raise_value_error_naming_the_argument(learner, params, arg):
    with pytest.raises(ValueError, match=arg):
        learner.check(params)
    env = envs.quadratic_stream(sets.l2_ball(2))
    with pytest.raises(ValueError, match=arg):  # and the engine calls the check before compiling
        jp.run(learner, env, jp.SimParams(params, envs.QuadraticParams()), jax.random.key(0), 16)
