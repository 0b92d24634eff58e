"""Loss streams of full-information OCO: exact comparators, the optax comparator, bad input, adaptivity."""

import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxpriv as jp
from jaxpriv import envs, oco, sets
from jaxpriv.testing import variance_with_stderr


def rollout(env, params, actions, seed=0):
    """Step ``env`` along a fixed action sequence (a Python loop: a test-side cross-check).

    Returns the final state, the per-step feedback, losses and stats (stacked), and the
    float32 stats sums the engine would hand to the comparator.
    """
    key = jax.random.key(seed)
    k_env, k_steps = jax.random.split(key)
    state = env.reset(k_env, params)
    step = jax.jit(env.step)
    feedback, losses, stats, states = [], [], [], []
    for t, a in enumerate(actions, start=1):
        state, g, info = step(jax.random.fold_in(k_steps, t), state, jnp.asarray(a, jnp.float32), jnp.int32(t))
        feedback.append(np.asarray(g))
        losses.append(float(info.loss))
        stats.append(info.stats)
        states.append(state)
    stacked = jax.tree.map(lambda *xs: np.stack([np.asarray(x, np.float64) for x in xs]), *stats)
    return state, np.array(feedback), np.array(losses), stacked, states


def grid_points(c: sets.ConstraintSet, step: float = 0.004) -> np.ndarray:
    """A dense grid of points of a 2-d set (brute-force minimisation)."""
    if c.name == "simplex":
        a = np.arange(0.0, 1.0 + step / 2, step)
        return np.stack([a, 1.0 - a], axis=1)
    r = c.radius
    g = np.arange(-r, r + step / 2, step)
    w = np.stack(np.meshgrid(g, g), -1).reshape(-1, 2)
    if c.name == "l2_ball":
        return w[np.linalg.norm(w, axis=1) <= r]
    if c.name == "l1_ball":
        return w[np.abs(w).sum(1) <= r]
    return w[np.all((w >= -0.5) & (w <= 1.0), axis=1)]  # box(2, -0.5, 1.0)


SETS_2D = [sets.l2_ball(2, 1.0), sets.box(2, -0.5, 1.0), sets.simplex(2), sets.l1_ball(2, 1.0)]


@pytest.mark.parametrize("c", SETS_2D, ids=lambda c: c.name)
@pytest.mark.parametrize("z_dist", ["iid", "drift", "alternating"])
def test_quadratic_comparator_agrees_with_brute_force(c, z_dist):
    H = 1.7
    env = envs.quadratic_stream(c, z_radius=1.5, z_dist=z_dist)
    p = envs.QuadraticParams(H, jnp.array([0.9, -0.8]), 0.5, 0.1)
    T = 40
    _, _, losses, stats, _ = rollout(env, p, [np.zeros(2)] * T)
    zs = stats.z
    state = env.reset(jax.random.key(0), p)
    relative, gap = env.comparator(state, jax.tree.map(lambda s: s.sum(0), stats), T)
    assert float(gap) == 0.0  # a closed form
    relative = float(relative)
    ref = np.asarray(state.reference, np.float64)  # Env.relative: min_w sum f_s(w) - f_s(c)
    best = relative + 0.5 * H * np.sum((ref - zs) ** 2)
    w = grid_points(c)
    objective = 0.5 * H * (np.sum(zs**2) - 2 * w @ zs.sum(0) + T * np.sum(w**2, 1))
    brute = objective.min()
    # The closed form is the exact minimiser: never above the grid's minimum (up to float32), and
    # within the grid's resolution of it (gradient norm at the optimum times the grid step).
    slack = (np.linalg.norm(H * (T * w[objective.argmin()] - zs.sum(0))) + H * T) * 0.004 * 1.5
    assert best <= brute + 1e-5 * brute
    assert brute - best <= slack
    np.testing.assert_allclose(losses, 0.5 * H * np.sum(zs**2, 1), rtol=1e-5)  # action 0


def test_quadratic_streams_clip_z_to_the_declared_radius_and_follow_their_distribution():
    c = sets.l2_ball(2)
    far = envs.QuadraticParams(1.0, jnp.array([5.0, 0.0]), 0.0, 0.0)
    _, _, _, stats, _ = rollout(envs.quadratic_stream(c, z_radius=0.8), far, [np.zeros(2)] * 5)
    np.testing.assert_allclose(np.linalg.norm(stats.z, axis=1), 0.8, rtol=1e-6)  # scaled onto the bound
    alt = envs.QuadraticParams(1.0, jnp.array([0.5, 0.1]), 0.0)
    _, _, _, stats, _ = rollout(envs.quadratic_stream(c, z_dist="alternating"), alt, [np.zeros(2)] * 6)
    signs = np.array([1, -1, 1, -1, 1, -1])[:, None]
    np.testing.assert_allclose(stats.z, signs * np.array([0.5, 0.1]), rtol=1e-6)
    # Drift: the mean is a random walk with per-coordinate step std `drift` (far from the clip).
    drift = 0.01
    p = envs.QuadraticParams(1.0, 0.0, 0.0, drift)
    _, _, _, _, states = rollout(envs.quadratic_stream(sets.l2_ball(2, 10.0), z_dist="drift"), p, [np.zeros(2)] * 400)
    steps = np.diff(np.array([np.asarray(s.center) for s in states]), axis=0).ravel()
    var, se = variance_with_stderr(steps, mean=0.0)
    assert abs(var - drift**2) < 4 * se
    _, _, _, _, states = rollout(envs.quadratic_stream(c), p, [np.zeros(2)] * 3)
    assert all(np.array_equal(s.center, states[0].center) for s in states)  # iid: a fixed mean


def test_experts_comparator_is_the_best_expert_and_the_costs_are_binary():
    p = 5
    means = jnp.array([0.5, 0.4, 0.6, 0.45, 0.5])
    env = envs.experts_stream(p)
    T = 200
    w = np.full(p, 1.0 / p)
    _, costs, losses, stats, _ = rollout(env, envs.ExpertsParams(means), [w] * T)
    assert set(np.unique(costs)) <= {0.0, 1.0}
    np.testing.assert_allclose(losses, costs @ w, rtol=1e-6)
    best, gap = env.comparator(None, jnp.asarray(stats.sum(0), jnp.float32), T)
    best = float(best)
    assert float(gap) == 0.0  # a closed form
    assert best == costs.sum(0).min()  # vertex enumeration: the best single expert
    rng = np.random.default_rng(0)
    mixtures = rng.dirichlet(np.ones(p), 5000)
    assert np.all(best <= mixtures @ costs.sum(0) + 1e-9)
    # The oblivious adversarial pattern: expert 0 pays at even t, expert 1 at odd t, the rest always.
    _, costs, _, _, _ = rollout(envs.experts_stream(3, "alternating"), envs.ExpertsParams(), [np.ones(3) / 3] * 4)
    np.testing.assert_array_equal(costs, [[0, 1, 1], [1, 0, 1], [0, 1, 1], [1, 0, 1]])  # t = 1, 2, 3, 4


def test_experts_iid_costs_have_the_declared_means():
    means = np.array([0.1, 0.5, 0.9])
    r = jp.sweep(
        oco.ogd(sets.simplex(3), "sqrt"),
        envs.experts_stream(3),
        jp.SimParams(oco.OGDParams(lipschitz=2.0), envs.ExpertsParams(jnp.asarray(means))),
        jax.random.key(1),
        horizon=300,
        seeds=50,
    )
    # With the play fixed at the uniform point the loss is the mean cost; here check the
    # comparator instead: the best expert's cumulative cost ~ T·min(means) (binomial).
    best = np.asarray(r.best[:, -1])
    se = np.sqrt(300 * 0.1 * 0.9 / 50)
    assert abs(best.mean() - 30.0) < 4 * se


def gradients_at_zero(env, state, dim, horizon):
    """The feedback at ``w = 0`` for ``t = 1..horizon`` (the data stream replayed), float64."""
    ts = jnp.arange(1, horizon + 1, dtype=jnp.int32)
    fn = jax.jit(jax.vmap(lambda t: env.step(jax.random.key(0), state, jnp.zeros(dim), t)[1]))
    return np.asarray(fn(ts), np.float64)


def hinge_linear_env(horizon, data="synthetic", dim=3):
    # ||w|| <= 1 and ||x|| <= 1: every margin is <= 1, so the hinge is the linear loss 1 - y<w, x>.
    return envs.classification_stream(sets.l2_ball(dim, 1.0), horizon, "hinge", data, feature_radius=1.0)


@pytest.mark.parametrize("data", ["synthetic", "breast_cancer"])
def test_optax_comparator_agrees_with_the_closed_form_where_one_exists(data):
    dim = 3 if data == "synthetic" else 30
    T = 300
    env = hinge_linear_env(T, data, dim)
    state = env.reset(jax.random.key(4), envs.ClassificationParams())
    xs = gradients_at_zero(env, state, dim, T)  # the gradient at w = 0 is -y_t x_t
    v = -np.sum(xs, axis=0)  # sum_s y_s x_s
    for t in (37, T):
        closed = t - np.linalg.norm(-np.sum(xs[:t], axis=0))  # min_{||w||<=1} sum (1 - y<w,x>)
        best, gap = env.comparator(state, (), jnp.int32(t))
        assert float(best) - float(gap) - 1e-3 <= closed <= float(best) + 1e-3
        assert float(best) - closed < 1e-3 * t
    assert np.linalg.norm(v) > 0


def test_logistic_comparator_matches_an_independent_float64_solver_within_its_certified_gap():
    dim, T = 3, 500
    c = sets.l2_ball(dim, 4.0)
    env = envs.classification_stream(c, T, "logistic")
    state = env.reset(jax.random.key(5), envs.ClassificationParams(jnp.array([1.0, -2.0, 0.5]), 0.1))
    yx = -2.0 * gradients_at_zero(env, state, dim, T)  # the gradient at 0 is -y x / 2
    w = np.zeros(dim)
    for _ in range(20000):  # projected gradient descent in float64, step 1/smoothness of the mean loss
        m = yx @ w
        w = w + 4.0 * (yx.T @ (1.0 / (1.0 + np.exp(m)))) / T
        w *= min(1.0, 4.0 / np.linalg.norm(w))
    reference = np.sum(np.logaddexp(0.0, -yx @ w))
    best, gap = env.comparator(state, (), jnp.int32(T))
    assert float(best) - float(gap) - 1e-3 <= reference <= float(best) + 1e-3
    assert float(gap) < 1e-3 * T


def test_classification_features_are_scaled_to_the_declared_radius_and_labels_are_signs():
    x, y = envs.load_breast_cancer_features()
    assert x.shape == (569, 30) and set(np.unique(y)) == {-1.0, 1.0}
    env = envs.classification_stream(sets.l2_ball(30, 2.0), 50, "logistic", "breast_cancer", feature_radius=0.5)
    state = env.reset(jax.random.key(0), envs.ClassificationParams())
    for t in range(1, 20):
        _, g, info = env.step(None, state, jnp.zeros(30), jnp.int32(t))
        np.testing.assert_allclose(np.linalg.norm(g), 0.5 * 0.5, rtol=1e-5)  # |ℓ'(0)| ||x|| = R/2
        np.testing.assert_allclose(info.loss, np.log(2.0), rtol=1e-6)
    env = envs.classification_stream(sets.l2_ball(4), 50, "hinge", feature_radius=0.3)
    state = env.reset(jax.random.key(0), envs.ClassificationParams())
    norms = [float(jnp.linalg.norm(env.step(None, state, jnp.zeros(4), jnp.int32(t))[1])) for t in range(1, 30)]
    assert max(norms) <= 0.3 + 1e-6


def test_breast_cancer_without_scikit_learn_raises_an_import_error_naming_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "sklearn.datasets", None)
    with pytest.raises(ImportError, match=r"jaxpriv\[data\]"):
        envs.load_breast_cancer_features()


def test_numerical_comparator_reports_its_gap_and_closed_forms_do_not():
    c = sets.l2_ball(3, 3.0)
    env = envs.classification_stream(c, 256, "hinge", solver_steps=100)
    r = jp.run(
        oco.ogd(c, "sqrt"),
        env,
        jp.SimParams(oco.OGDParams(lipschitz=1.0), envs.ClassificationParams()),
        jax.random.key(0),
        256,
        [64, 256],
    )
    assert r.gap is not None and r.gap.shape == (2,) and np.all(np.asarray(r.gap) >= 0)
    q = jp.run(
        oco.ftal(c),
        envs.quadratic_stream(c),
        jp.SimParams(oco.FTALParams(), envs.QuadraticParams()),
        jax.random.key(0),
        8,
    )
    assert q.gap is None


def test_adaptive_adversary_adapts_to_the_learners_points():
    c = sets.l2_ball(2)
    p = envs.AdaptiveParams(1.0, jnp.array([0.5, 0.0]), 1.0, 0.1)
    learners = [
        (oco.ftal(c), oco.FTALParams(1.0)),
        (oco.ogd(c, "sqrt"), oco.OGDParams(lipschitz=3.0)),
    ]

    def bests(env, env_params):
        out = []
        for learner, lp in learners:
            r = jp.run(learner, env, jp.SimParams(lp, env_params), jax.random.key(7), 50, checkpoints=None)
            out.append(np.asarray(r.best))
        return out

    a, b = bests(envs.adaptive_quadratic(c), p)
    assert np.abs(a - b).max() > 1e-2  # same key, different learners: different losses
    oblivious = envs.QuadraticParams(1.0, jnp.array([0.5, 0.0]), 0.1)
    a, b = bests(envs.quadratic_stream(c), oblivious)
    np.testing.assert_allclose(a, b, rtol=1e-5)  # an oblivious stream: the same losses (up to XLA rounding)
    # Directly: the same key and clock, a different history of points, a different target.
    env = envs.adaptive_quadratic(c)
    s0 = env.reset(jax.random.key(0), p)
    key = jax.random.key(1)
    _, g1, _ = env.step(key, s0._replace(mean_w=jnp.array([0.3, 0.0])), jnp.zeros(2), jnp.int32(2))
    _, g2, _ = env.step(key, s0._replace(mean_w=jnp.array([-0.3, 0.0])), jnp.zeros(2), jnp.int32(2))
    np.testing.assert_allclose(np.asarray(g2) - np.asarray(g1), [-0.6, 0.0], atol=1e-6)  # ∇ = -z at w = 0


@pytest.mark.parametrize(
    ("make", "arg"),
    [
        (lambda: envs.quadratic_stream(sets.l2_ball(2), z_dist="gauss"), "z_dist"),
        (lambda: envs.quadratic_stream(sets.l2_ball(2), z_radius=0.0), "z_radius"),
        (lambda: envs.experts_stream(0), "num_experts"),
        (lambda: envs.experts_stream(3, "random"), "pattern"),
        (lambda: envs.classification_stream(sets.l2_ball(3), 10, "squared"), "loss"),
        (lambda: envs.classification_stream(sets.l2_ball(3), 10, data="mnist"), "data"),
        (lambda: envs.classification_stream(sets.l2_ball(3), 10, data="breast_cancer"), "constraint"),
        (lambda: envs.classification_stream(sets.l2_ball(3), 10, feature_radius=-1.0), "feature_radius"),
        (lambda: envs.classification_stream(sets.l2_ball(3), 10, smoothing=0.0), "smoothing"),
        (lambda: envs.classification_stream(sets.simplex(3)._replace(project=None), 10), "constraint"),
        (lambda: envs.adaptive_quadratic(sets.l2_ball(2), z_radius=-1.0), "z_radius"),
    ],
)
def test_bad_static_input_raises_value_error_naming_the_argument(make, arg):
    with pytest.raises(ValueError, match=arg):
        make()


@pytest.mark.parametrize(
    ("env", "params", "arg"),
    [
        (envs.experts_stream(3), envs.ExpertsParams(1.5), "means"),
        (envs.experts_stream(3), envs.ExpertsParams(jnp.ones(4) / 2), "means"),
        (envs.classification_stream(sets.l2_ball(3), 10), envs.ClassificationParams(label_noise=0.7), "label_noise"),
        (envs.quadratic_stream(sets.l2_ball(2)), envs.QuadraticParams(drift=-0.1), "drift"),
        (envs.adaptive_quadratic(sets.l2_ball(2)), envs.AdaptiveParams(push=-1.0), "push"),
        (envs.adaptive_quadratic(sets.l2_ball(2)), envs.AdaptiveParams(strong_convexity=0.0), "strong_convexity"),
    ],
)
def test_bad_params_raise_value_error_naming_the_argument(env, params, arg):
    with pytest.raises(ValueError, match=arg):
        env.check(params)
