"""Issue 23 "Trust", items 5 and 7: numbers at the edges are right or refused; bad input is a clear error.

Each test reproduces a case that used to give a wrong number silently (or a raw TypeError from deep
inside JAX) and checks the fix: scale-safe projections, every bit of an integer seed, strict
checkpoints, no NaN in an environment's params, incompatible learner/environment pairs and foreign
params classes refused before anything is compiled.
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import jaxpriv as jp
from jaxpriv import bandits, envs, oco, sets, sim
from jaxpriv._base import Env, as_key

FAST = settings(max_examples=60, deadline=None)
T = 8
BALL = sets.l2_ball(3)
ENV = envs.quadratic_stream(BALL)
ENV_P = envs.QuadraticParams(1.0, jnp.array([0.3, 0.2, -0.1]), 0.3)


def _refused_before_compiling(fn, match):
    """``fn()`` raises ``ValueError`` matching ``match``, and the engine compiled nothing for it."""
    before = sim.compile_count()
    with pytest.raises(ValueError, match=match):
        fn()
    assert sim.compile_count() == before


# --- a. projections and norms are scale-safe ----------------------------------------------------------


def _old_l2_project(w, r=1.0):
    """The formula before the fix (a reference for ordinary inputs)."""
    norm = jnp.sqrt(jnp.sum(w * w, -1, keepdims=True))
    return w * jnp.minimum(1.0, r / jnp.maximum(norm, jnp.finfo(w.dtype).tiny))


def _old_l2_oracle(g, r=1.0):
    norm = jnp.sqrt(jnp.sum(g * g, -1, keepdims=True))
    return -r * g / jnp.maximum(norm, jnp.finfo(g.dtype).tiny)


def _old_simplex(v, total=1.0):
    d = v.shape[-1]
    u = -jnp.sort(-v, axis=-1)
    css = jnp.cumsum(u, axis=-1) - total
    ks = jnp.arange(1, d + 1, dtype=v.dtype)
    k = jnp.sum(u - css / ks > 0, axis=-1, keepdims=True)
    theta = jnp.take_along_axis(css, jnp.maximum(k, 1) - 1, axis=-1) / jnp.maximum(k, 1).astype(v.dtype)
    return jnp.maximum(v - theta, 0.0)


def _simplex64(v, total=1.0):
    """Exact projection onto the simplex in float64 (NumPy), shifted by the max first."""
    v = np.asarray(v, np.float64)
    v = v - v.max()
    u = np.sort(v)[::-1]
    css = np.cumsum(u) - total
    k = np.nonzero(u - css / np.arange(1, v.size + 1) > 0)[0][-1] + 1
    return np.maximum(v - css[k - 1] / k, 0.0)


EDGES = [
    [1e20, 0.0, 0.0],
    [-1e20, 2e20, 5e19],
    [1e-30, 0.0, 0.0],
    [1e-30, -2e-30, 3e-31],
    [3.4e38, 0.0, 0.0],
    [3.4e38, 3.4e38, 3.4e38],
    [-3.4e38, 3.4e38, 1.0],
]


@pytest.mark.parametrize("x", EDGES)
@pytest.mark.parametrize("jit", [False, True])
def test_l2_ball_projection_and_oracle_at_float32_extremes(x, jit):
    """Before: the squared norm overflowed (``project([1e20, 0, 0])`` was ``[0, 0, 0]``) or underflowed."""
    r = 3.0
    ball = sets.l2_ball(3, r)
    project = jax.jit(ball.project) if jit else ball.project
    oracle = jax.jit(ball.linear_oracle) if jit else ball.linear_oracle
    w = jnp.asarray(x, jnp.float32)
    x64 = np.asarray(w, np.float64)
    norm64 = np.sqrt(np.sum((x64 / np.abs(x64).max()) ** 2)) * np.abs(x64).max()
    expected = x64 if norm64 <= r else x64 * (r / norm64)
    p = np.asarray(project(w))
    np.testing.assert_allclose(p, expected, rtol=2e-6, atol=1e-37)
    lmo = np.asarray(oracle(w))
    np.testing.assert_allclose(lmo, -r * x64 / norm64, rtol=2e-6, atol=1e-7)
    assert np.linalg.norm(lmo) == pytest.approx(r, rel=1e-6)


@pytest.mark.parametrize("x", EDGES)
def test_simplex_and_l1_projection_at_float32_extremes(x):
    """Before: ``sum u - total`` lost ``total`` to rounding (``[1e20, 0, 0]`` went to ``[0, 0, 0]``)."""
    w = jnp.asarray(x, jnp.float32)
    total = 2.0
    p = np.asarray(sets.simplex(3, total).project(w), np.float64)
    assert np.all(p >= 0) and p.sum() == pytest.approx(total, rel=1e-6)
    np.testing.assert_allclose(p, _simplex64(np.asarray(w, np.float64), total), atol=1e-6 * total)
    q = np.asarray(sets.l1_ball(3, total).project(w), np.float64)
    assert np.abs(q).sum() <= total * (1 + 1e-6)
    a = np.abs(np.asarray(w, np.float64))
    expected = a if a.sum() <= total else _simplex64(a, total)
    np.testing.assert_allclose(np.abs(q), expected, atol=1e-6 * total, rtol=1e-6)
    assert np.all(np.sign(q)[q != 0] == np.sign(np.asarray(w))[q != 0])


def test_simplex_projection_of_large_inputs_is_accurate():
    """The shifted projection is accurate where the plain formula loses ulps (or everything) to rounding."""
    for offset in (1e3, 1e4, -1e4):  # entries close together, far from 0: the support has several entries
        v = offset + 0.3 * jax.random.normal(jax.random.key(0), (200, 10), jnp.float32)
        p = np.asarray(sets.simplex(10).project(v), np.float64)
        ref = np.stack([_simplex64(row) for row in np.asarray(v, np.float64)])
        assert np.max(np.abs(p - ref)) < 1e-7
        old = np.asarray(_old_simplex(v), np.float64)
        assert np.max(np.abs(old - ref)) > 5e-5  # what it was: 1e-4 at 1e3, 1.3e-3 at 1e4


ORDINARY = st.lists(st.floats(-10.0, 10.0, width=32), min_size=1, max_size=8)


@functools.cache
def _l2_pairs(dim, r):
    """``(new, old, jit(new), jit(old))`` for the projection and the linear oracle of ``l2_ball(dim, r)``: one
    ball and one compiled function per size and radius (24 of them), not one per example (60 compilations)."""
    ball = sets.l2_ball(dim, r)
    pairs = ((ball.project, lambda v: _old_l2_project(v, r)), (ball.linear_oracle, lambda v: _old_l2_oracle(v, r)))
    return tuple((new, old, jax.jit(new), jax.jit(old)) for new, old in pairs)


@FAST
@given(ORDINARY, st.sampled_from([0.5, 1.0, 3.0]))
def test_l2_ball_ordinary_inputs_bit_for_bit_with_gradients(x, r):
    """Inputs of ordinary size give the numbers of the plain formula, bit for bit, values and gradients."""
    norm = float(np.linalg.norm(np.asarray(x, np.float64)))
    assume(norm > 1e-6)  # ordinary: the plain formula's range (tiny vectors are the edge cases above)
    w = jnp.asarray(x, jnp.float32)
    weights = jnp.arange(1.0, w.shape[0] + 1.0)
    for new, old, new_jit, old_jit in _l2_pairs(w.shape[0], r):
        np.testing.assert_array_equal(np.asarray(new(w)), np.asarray(old(w)))
        np.testing.assert_array_equal(np.asarray(new_jit(w)), np.asarray(old_jit(w)))
        grad_new = jax.grad(lambda v, f=new: jnp.sum(weights * f(v)))(w)
        grad_old = jax.grad(lambda v, f=old: jnp.sum(weights * f(v)))(w)
        np.testing.assert_array_equal(np.asarray(grad_new), np.asarray(grad_old))


@FAST
@given(st.lists(st.floats(-1.0, 1.0, width=32), min_size=1, max_size=8))
def test_simplex_and_l1_ordinary_inputs_bit_for_bit(x):
    """Entries within ``±total`` keep the plain formula's numbers bit for bit (simplex and L1 ball)."""
    w = jnp.asarray(x, jnp.float32)
    d = w.shape[0]
    np.testing.assert_array_equal(np.asarray(sets.simplex(d).project(w)), np.asarray(_old_simplex(w)))
    old_l1 = jnp.where(jnp.sum(jnp.abs(w)) <= 1.0, w, jnp.sign(w) * _old_simplex(jnp.abs(w)))
    np.testing.assert_array_equal(np.asarray(sets.l1_ball(d).project(w)), np.asarray(old_l1))


def test_projection_gradient_at_zero_is_finite():
    """The ``where``s keep gradients finite: the old formula's gradient at ``w = 0`` was NaN."""
    g = jax.grad(lambda w: jnp.sum(BALL.project(w)))(jnp.zeros(3))
    np.testing.assert_array_equal(np.asarray(g), np.ones(3))


@pytest.mark.parametrize(
    "build",
    [
        lambda: sets.l2_ball(3, 1e39),
        lambda: sets.l2_ball(3, 3e38),  # its diameter 6e38 overflows float32
        lambda: sets.l2_ball(3, 1e-39),
        lambda: sets.l1_ball(3, 1e39),
        lambda: sets.box(3, -3e38, 3e38),
        lambda: sets.simplex(3, 1e-40),
    ],
)
def test_set_sizes_beyond_float32_are_refused(build):
    """Before: a radius of 1e39 became inf in the engine's float32 (and every step size with it)."""
    with pytest.raises(ValueError, match=r"(radius|total|low=).*float32"):
        build()


# --- b. integer seeds use every bit ---------------------------------------------------------------------


def test_seeds_at_and_beyond_two_to_the_32_are_distinct():
    """Before: ``as_key(2**32)`` was seed 0's key (JAX without x64 keeps the low 32 bits)."""
    data = {s: tuple(np.asarray(jax.random.key_data(as_key(s)))) for s in (0, 1, 2**32, 2**32 + 1, 2**33, 2**64 - 1)}
    assert len(set(data.values())) == len(data)
    assert data[2**32] == (1, 0) and data[2**32 + 1] == (1, 1)  # jax.random.key(n) under x64
    for s in (0, 1, 12345, 2**31, 2**32 - 1):  # below 2**32: jax.random.key(n)'s numbers, unchanged
        np.testing.assert_array_equal(jax.random.key_data(as_key(s)), jax.random.key_data(jax.random.key(s)))
    np.testing.assert_array_equal(jax.random.key_data(as_key(np.uint64(2**32))), [1, 0])
    a = jp.run(oco.ogd(BALL), ENV, jp.SimParams(oco.OGDParams(), ENV_P), 2**32, T)
    b = jp.run(oco.ogd(BALL), ENV, jp.SimParams(oco.OGDParams(), ENV_P), 0, T)
    assert not np.array_equal(np.asarray(a.loss), np.asarray(b.loss))


@pytest.mark.parametrize("bad", [-1, -(2**40), 2**64, True, np.bool_(False), 1.0, np.float32(3.0), "7", [1, 2]])
def test_bad_seeds_are_refused(bad):
    with pytest.raises(ValueError, match=r"key must be .*integer seed in \[0, 2\*\*64\)"):
        as_key(bad)
    _refused_before_compiling(lambda: jp.run(oco.ogd(BALL), ENV, jp.SimParams(oco.OGDParams(), ENV_P), bad, T), "key")


# --- c. checkpoints --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("checkpoints", "why"),
    [
        ([5.7, 10], "whole numbers"),
        ([float("nan"), 10], "whole numbers"),
        ([float("inf")], "whole numbers"),
        (5, "single number"),
        (np.int64(5), "single number"),
        (True, "single number"),
        ([5, 3, 10], "strictly increasing"),
        ([3, 3, 10], "strictly increasing"),
        ([0, 10], "outside"),
        ([11], "outside"),
        ({3, 5}, "no order"),
        ([[1, 2]], "shape"),
        (["3"], "dtype"),
        ("linear", "checkpoints must be"),
    ],
)
def test_bad_checkpoints_are_refused(checkpoints, why):
    """Before: ``[5.7, 10]`` was truncated to ``(5, 10)``, unsorted or repeated steps silently fixed, a bare
    int a ``TypeError`` and NaN a ``ValueError`` about an int conversion."""
    with pytest.raises(ValueError, match="checkpoints must be") as err:
        sim.normalize_checkpoints(10, checkpoints)
    assert why in str(err.value)
    _refused_before_compiling(
        lambda: jp.run(oco.ogd(BALL), ENV, jp.SimParams(oco.OGDParams(), ENV_P), 0, 10, checkpoints), "checkpoints"
    )


def test_good_checkpoints():
    assert sim.normalize_checkpoints(10, [5.0, 10.0]) == (5, 10)
    assert sim.normalize_checkpoints(10, np.array([2, 5])) == (2, 5, 10)
    assert sim.normalize_checkpoints(10, jnp.array([1, 10])) == (1, 10)
    assert sim.normalize_checkpoints(10, range(2, 11, 4)) == (2, 6, 10)
    assert sim.normalize_checkpoints(10, []) == (10,)
    assert sim.normalize_checkpoints(4, None) == (1, 2, 3, 4)
    assert sim.normalize_checkpoints(10, "log")[-1] == 10


# --- d. NaN / inf in an environment's params ---------------------------------------------------------------


INSTANCE = envs.sample_linear_instance(jax.random.key(0), 4, 3)
NAN3 = jnp.array([jnp.nan, 0.0, 0.0])
INF3 = jnp.array([jnp.inf, 0.0, 0.0])
ENV_NANS = [
    (lambda: envs.quadratic_stream(BALL), envs.QuadraticParams(center=NAN3), "center"),
    (lambda: envs.quadratic_stream(BALL), envs.QuadraticParams(center=INF3), "center"),
    (lambda: envs.quadratic_stream(BALL), envs.QuadraticParams(spread=jnp.nan), "spread"),
    (lambda: envs.quadratic_stream(BALL), envs.QuadraticParams(strong_convexity=jnp.nan), "strong_convexity"),
    (lambda: envs.adaptive_quadratic(BALL), envs.AdaptiveParams(center=NAN3), "center"),
    (lambda: envs.adaptive_quadratic(BALL), envs.AdaptiveParams(center=-INF3), "center"),
    (lambda: envs.adaptive_quadratic(BALL), envs.AdaptiveParams(push=jnp.nan), "push"),
    (lambda: envs.classification_stream(BALL, 16), envs.ClassificationParams(direction=NAN3), "direction"),
    (lambda: envs.classification_stream(BALL, 16), envs.ClassificationParams(direction=INF3), "direction"),
    (lambda: envs.classification_stream(BALL, 16), envs.ClassificationParams(label_noise=jnp.nan), "label_noise"),
    (lambda: envs.experts_stream(3), envs.ExpertsParams(means=NAN3), "means"),
    (lambda: envs.bernoulli_bandit(3), envs.BernoulliParams(means=NAN3), "means"),
    (lambda: envs.linear_bandit(4, 3), INSTANCE._replace(theta=NAN3), "theta"),
    (lambda: envs.linear_bandit(4, 3), INSTANCE._replace(noise_stddev=jnp.nan), "noise_stddev"),
    (lambda: envs.contextual_linear_bandit(4, 3), envs.ContextualBanditParams(INSTANCE.theta, NAN3), "context_mean"),
    (lambda: envs.contextual_linear_bandit(4, 3), envs.ContextualBanditParams(INSTANCE.theta, INF3), "context_mean"),
    (
        lambda: envs.contextual_linear_bandit(4, 3),
        envs.ContextualBanditParams(INSTANCE.theta, context_stddev=jnp.nan),
        "context_stddev",
    ),
]


@pytest.mark.parametrize(("build", "params", "field"), ENV_NANS)
def test_nan_or_inf_in_env_params_is_refused_by_the_check(build, params, field):
    """Every environment's own check refuses NaN (and inf where it means nothing) in every float field."""
    env = build()
    with pytest.raises(ValueError, match=field):
        env.check(params)


def test_nan_env_params_refused_by_the_engine_before_compiling():
    """Before: ``QuadraticParams(center=[nan, 0, 0])`` ran and returned an all-NaN table."""
    params = jp.SimParams(oco.OGDParams(), envs.QuadraticParams(center=[float("nan"), 0.0, 0.0]))
    _refused_before_compiling(lambda: jp.run(oco.ogd(BALL), ENV, params, 0, T), r"params\.env\.center")
    # Also for an environment without a check of its own: the engine refuses NaN in any env leaf.
    unchecked = ENV._replace(check=None)
    _refused_before_compiling(lambda: jp.run(oco.ogd(BALL), unchecked, params, 0, T), r"params\.env\.center.*NaN")


# --- e. learner and environment that do not fit together ----------------------------------------------------


def _undeclared(env: Env) -> Env:
    """``env`` without its spec (no action shape, no arm count): the engine must catch a mismatch by tracing alone."""
    return env._replace(spec=None)


@pytest.mark.parametrize("declared_env", [True, False])
@pytest.mark.parametrize(("learner_dim", "env_dim"), [(3, 2), (2, 3), (1, 3)])
def test_dimension_mismatch_is_refused_before_compiling(learner_dim, env_dim, declared_env):
    """Before: a raw TypeError from inside the scan (or, for d = 1 against d = 3, a scan-carry TypeError)."""
    env = envs.quadratic_stream(sets.l2_ball(env_dim))
    env = env if declared_env else _undeclared(env)
    params = jp.SimParams(oco.OGDParams(), envs.QuadraticParams())
    match = rf"\({learner_dim},\)" if declared_env else "learner|environment"
    _refused_before_compiling(lambda: jp.run(oco.ogd(sets.l2_ball(learner_dim)), env, params, 0, T), match)
    if declared_env:
        with pytest.raises(ValueError, match=rf"shape \({learner_dim},\).*shape \({env_dim},\)"):
            jp.run(oco.ogd(sets.l2_ball(learner_dim)), env, params, 0, T)


def test_bandit_policy_on_a_continuous_stream_and_back_are_refused():
    ucb_on_stream = jp.SimParams(bandits.UCBParams(), ENV_P)
    _refused_before_compiling(lambda: jp.run(bandits.ucb(3), ENV, ucb_on_stream, 0, T), r"shape \(\).*shape \(3,\)")
    ogd_on_bandit = jp.SimParams(oco.OGDParams(), envs.BernoulliParams((0.9, 0.5, 0.1)))
    _refused_before_compiling(
        lambda: jp.run(oco.ogd(BALL), envs.bernoulli_bandit(3), ogd_on_bandit, 0, T), r"shape \(3,\).*shape \(\)"
    )


def test_contextual_policy_for_more_actions_is_refused():
    """The state of a contextual policy for 5 actions changes shape when fed 3 actions a round."""
    params = jp.SimParams(bandits.RSOFULParams(), envs.ContextualBanditParams(INSTANCE.theta))
    _refused_before_compiling(
        lambda: jp.run(bandits.rs_oful(5, 3, 16), envs.contextual_linear_bandit(3, 3), params, 0, 16),
        r"built for 5 arms .* has 3",  # its declared arm count (the state-shape check would also refuse it)
    )


@pytest.mark.parametrize(("learner_arms", "env_arms"), [(5, 3), (3, 5)])
def test_declared_arm_counts_must_agree(learner_arms, env_arms):
    """Before: 5-arm UCB on a 3-armed instance played arms 3 and 4, answered NaN and dropped from the regret
    (72 steps of 80 in the issue); 3-arm UCB on 5 arms never saw the best arms. Shapes agree (an int index),
    so the arm counts of the specs (``Spec.num_arms``) decide."""
    learner = bandits.ucb(learner_arms)  # the factory's spec says num_arms
    env = envs.bernoulli_bandit(env_arms)
    assert env.spec.num_arms == env_arms
    params = jp.SimParams(bandits.UCBParams(), envs.BernoulliParams(tuple(np.linspace(0.9, 0.1, env_arms))))
    _refused_before_compiling(
        lambda: jp.run(learner, env, params, 0, 80), rf"built for {learner_arms} arms .* has {env_arms}"
    )


def test_bandit_factories_declare_their_arm_counts():
    for learner in (bandits.ucb(5), bandits.adac_ucb(5), bandits.gope(5, 3, 64), bandits.rs_oful(5, 3, 64)):
        assert learner.spec.num_arms == 5


def test_bandit_feedback_keeps_the_spec():
    wrapped = envs.bandit_feedback(ENV)
    assert wrapped.spec.action_shape == (3,) and wrapped.spec.params is ENV.spec.params
    assert envs.bandit_feedback(envs.bernoulli_bandit(4)).spec.num_arms == 4


def test_matching_pairs_still_run():
    r = jp.run(oco.ogd(BALL), ENV, jp.SimParams(oco.OGDParams(), ENV_P), 0, T)
    assert r.regret.shape == (T,) and int(r.nonfinite_steps) == 0


# --- f. params leaves and params classes -----------------------------------------------------------------


def _pftal_params(**kw):
    return oco.PFTALParams(**{"epsilon": 1.0, "lipschitz": 2.0, "strong_convexity": 1.0} | kw)


PFTAL = oco.pftal(T, BALL, "gamma")


@pytest.mark.parametrize(
    ("field", "value", "match"),
    [
        ("epsilon", "1.0", r"params\.learner\.epsilon must be a number"),
        ("lipschitz", np.array(["2"]), r"params\.learner\.lipschitz must be a number"),
        ("lipschitz", True, r"params\.learner\.lipschitz must be a number"),
        ("lipschitz", 1e39, r"params\.learner\.lipschitz must be within .*float32"),
        ("lipschitz", 2**40, r"params\.learner\.lipschitz must fit in int32"),
        ("lipschitz", [[1.0, 2.0], [3.0]], r"params\.learner\.lipschitz must be a number or an array"),
    ],
)
def test_bad_params_leaves_are_refused(field, value, match):
    """Before: a string leaf was a raw ``TypeError`` from ``jnp.asarray``; 1e39 became inf and 2**40 wrapped."""
    params = jp.SimParams(_pftal_params(**{field: value}), ENV_P)
    _refused_before_compiling(lambda: jp.sweep(PFTAL, ENV, params, 0, T, seeds=2), match)


def test_a_list_leaf_is_a_grid_axis_like_an_array():
    """Before: ``epsilon=[0.1, 1.0]`` counted as a grid axis in ``grid_axes`` but became two scalar leaves in
    ``canonical_params`` (a vmap error). Now a list is one array everywhere: the same numbers as the array."""
    as_list = jp.sweep(PFTAL, ENV, jp.SimParams(_pftal_params(epsilon=[0.1, 1.0]), ENV_P), 0, T, seeds=2)
    as_array = jp.sweep(PFTAL, ENV, jp.SimParams(_pftal_params(epsilon=jnp.array([0.1, 1.0])), ENV_P), 0, T, seeds=2)
    assert as_list.regret.shape == (2, 2, len(sim.log_checkpoints(T)))
    np.testing.assert_array_equal(np.asarray(as_list.regret), np.asarray(as_array.regret))
    canon = sim.canonical_params(_pftal_params(epsilon=(0.1, 1.0)))
    assert canon.epsilon.shape == (2,) and canon.epsilon.dtype == jnp.float32
    with pytest.raises(ValueError, match=r"params\.learner\.epsilon must have 0 dimensions"):
        jp.run(PFTAL, ENV, jp.SimParams(_pftal_params(epsilon=[0.1, 1.0]), ENV_P), 0, T)


def test_another_learners_params_class_is_refused():
    """Before: ``OGDParams`` given to PFTAL was a raw ``AttributeError``; given to a learner whose fields
    it happens to fit, it ran with the wrong meaning."""
    _refused_before_compiling(
        lambda: jp.run(PFTAL, ENV, jp.SimParams(oco.OGDParams(), ENV_P), 0, T), r"OGDParams.*pftal.*PFTALParams"
    )
    _refused_before_compiling(
        lambda: jp.run(oco.ogd(BALL), ENV, jp.SimParams(_pftal_params(), ENV_P), 0, T), r"PFTALParams.*OGDParams"
    )
    _refused_before_compiling(
        lambda: jp.run(oco.ogd(BALL), ENV, jp.SimParams(oco.OGDParams(), envs.ExpertsParams()), 0, T),
        r"params\.env is ExpertsParams.*QuadraticParams",
    )


def test_params_an_unannotated_learner_cannot_read_are_refused():
    """A learner without a spec (no params class): the traced init's AttributeError becomes a ValueError."""
    base = oco.ogd(BALL)
    learner = base._replace(init=lambda key, params: base.init(key, params), check=None, spec=None)
    _refused_before_compiling(
        lambda: jp.run(learner, ENV, jp.SimParams(envs.ExpertsParams(), ENV_P), 0, T),
        r"params\.learner \(ExpertsParams\) does not fit the learner .*AttributeError",
    )
    # A component's own ValueError from init (here: no privacy budget) keeps its message.
    base = oco.pftal(T, BALL, "gamma")
    learner = base._replace(init=lambda key, params: base.init(key, params), check=None, spec=None)
    _refused_before_compiling(
        lambda: jp.run(learner, ENV, jp.SimParams(oco.OGDParams(), ENV_P), 0, T), r"^pftal .*needs epsilon"
    )
