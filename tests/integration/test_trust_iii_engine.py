"""Issue 45 ("Trust III"), the derivatives and the entry points.

* Second-order derivatives through the in-place rows of the dyadic sums (``jaxpriv._inplace``):
  ``jax.hessian`` raised RecursionError and ``grad(grad)`` "Linearization failed"; reverse-mode
  ``jax.grad`` of PFTAL's summed loss through ``rollout`` was NaN (``0·inf`` in the branches of the
  clipping that a ``where`` discards), and second order through a whole ``rollout`` still was (the
  clipping's second derivatives, and JAX's scan dropping a ``custom_jvp`` rule's rule at second order:
  ``jaxpriv._safe.smooth_derivatives``). Each now agrees with forward mode and with finite differences.
* ``sim.map_seeds`` checks its arguments (keys, chunk, fn's arity, axes) before anything is traced,
  with ``sweep``'s chunk check.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxpriv as jp
from jaxpriv import envs, oco, sets, sim

T = 4
BALL = sets.l2_ball(2)
LEARNER = oco.pftal(T, BALL)
ENV = envs.quadratic_stream(BALL)


def _loss(epsilon):
    params = jp.SimParams(oco.PFTALParams(epsilon=epsilon), envs.QuadraticParams(center=jnp.array([0.3, 0.2])))
    return sim.rollout(LEARNER, ENV, params, 0, T).records.loss.sum()


def test_reverse_mode_gradient_of_pftal_through_rollout_agrees_with_forward_mode_and_differences():
    x = jnp.float32(2.0)
    forward = float(jax.jacfwd(_loss)(x))
    reverse = float(jax.grad(_loss)(x))  # was NaN
    assert np.isfinite(reverse)
    np.testing.assert_allclose(reverse, forward, rtol=1e-5)
    h = 1e-2  # central difference; float32 rounding of the loss (~1e-7 relative) / h stays far below the tolerance
    fd = (float(_loss(x + h)) - float(_loss(x - h))) / (2 * h)
    np.testing.assert_allclose(reverse, fd, rtol=2e-3, atol=1e-5)


def test_grad_of_grad_through_rollout_is_finite_and_agrees_with_differences_of_both_modes():
    """Before: ``grad(grad)`` (and ``jax.hessian``) of PFTAL's summed loss through ``rollout`` was NaN.

    The clipping binds (checked below). The central differences are of the first-order gradients the
    test above compiled (reverse and forward mode), in float32 as everything here (the learners cast
    to it, so x64 would not change the arithmetic): a gradient's rounding, a few 1e-7 of its scale
    (~0.1) over 2h = 2e-2, is ~1e-6, and the O(h²) truncation ~1e-5 here, inside the tolerance.
    """
    x = jnp.float32(2.0)
    params = jp.SimParams(oco.PFTALParams(epsilon=x), envs.QuadraticParams(center=jnp.array([0.3, 0.2])))
    feedback = sim.rollout(LEARNER, ENV, params, 0, T).records.feedback
    assert np.any(np.linalg.norm(feedback, axis=-1) > 1.0)  # the gradient clipping (L = 1) binds
    second = float(jax.grad(jax.grad(_loss))(x))  # reverse over reverse; was NaN
    assert np.isfinite(second) and abs(second) > 1e-3
    h = 1e-2
    for first in (jax.grad(_loss), jax.jacfwd(_loss)):
        fd = (float(first(x + h)) - float(first(x - h))) / (2 * h)
        np.testing.assert_allclose(second, fd, rtol=2e-3, atol=2e-5)


OGD = oco.ogd(BALL)


def _two_learners_loss(theta):
    """PFTAL's and OGD's summed losses over ``rollout``, as functions of (ε, L, spread, OGD's H).

    L = 0.3 and ε = 2 make both the gradient clipping and the projection bind (checked below), and the
    environment clips its draws ``z_t`` too; ``spread`` moves those draws, ``L`` the clipping bound.
    """
    eps, lip, spread, h = theta[0], theta[1], theta[2], theta[3]
    env_p = envs.QuadraticParams(center=jnp.array([0.3, 0.2]), spread=spread)
    pftal = sim.rollout(LEARNER, ENV, jp.SimParams(oco.PFTALParams(epsilon=eps, lipschitz=lip), env_p), 0, T)
    ogd = sim.rollout(OGD, ENV, jp.SimParams(oco.OGDParams(strong_convexity=h), env_p), 1, T)
    return pftal.records.loss.sum() + ogd.records.loss.sum()


@pytest.mark.slow
def test_hessians_through_rollout_agree_with_forward_mode_and_differences():
    """The whole 4 x 4 Hessian of PFTAL's and OGD's losses (ε, the clipping bound L, the environment's
    clipped spread, OGD's H): ``jax.hessian`` (forward over reverse, was NaN) equals ``jvp`` of ``jvp``
    (``jacfwd(jacfwd)``) and central differences of the forward-mode gradient (float32; tolerance as
    above, the truncation larger here: ~1e-3 of the largest entry)."""
    theta = jnp.array([2.0, 0.3, 0.8, 1.5], jnp.float32)
    env_p = envs.QuadraticParams(center=jnp.array([0.3, 0.2]), spread=theta[2])
    run = sim.rollout(LEARNER, ENV, jp.SimParams(oco.PFTALParams(epsilon=2.0, lipschitz=0.3), env_p), 0, T)
    assert np.any(np.linalg.norm(run.records.feedback, axis=-1) > 0.3)  # the gradient clipping binds
    assert np.any(np.isclose(np.linalg.norm(run.records.action, axis=-1), 1.0))  # and the projection

    # Each derivative jitted whole: one compilation each instead of one per primitive and per rollout
    # (measured: 36 s of CPU instead of 46 s, the same Hessian bit for bit).
    hessian = np.asarray(jax.jit(jax.hessian(_two_learners_loss))(theta))
    forward = np.asarray(jax.jit(jax.jacfwd(jax.jacfwd(_two_learners_loss)))(theta))
    assert np.all(np.isfinite(hessian))
    assert np.abs(forward).max() > 1e-2  # the check is not vacuous
    np.testing.assert_allclose(hessian, forward, rtol=1e-4, atol=1e-5)
    h = 1e-2
    steps = h * jnp.eye(4, dtype=jnp.float32)
    grads = jax.jit(jax.vmap(jax.jacfwd(_two_learners_loss)))(jnp.concatenate([theta + steps, theta - steps]))
    fd = np.asarray((grads[:4] - grads[4:]) / (2 * h))
    np.testing.assert_allclose(forward, fd, rtol=1e-2, atol=2e-3)


def test_inplace_rows_differentiate_to_any_order_under_vmap():
    from jaxpriv._inplace import get_row, set_row

    def f(a):
        rows = jnp.outer(jnp.arange(4.0), a)  # [4, 3]
        rows = set_row(rows, a * a, jnp.int32(2))
        return jnp.sum(get_row(rows, jnp.int32(2)) * get_row(rows, jnp.int32(3)))

    def plain(a):
        rows = jnp.outer(jnp.arange(4.0), a).at[2].set(a * a)
        return jnp.sum(rows[2] * rows[3])

    # Each derivative jitted whole (traced as eagerly, where the errors were raised): one compilation each
    # instead of one per primitive (159 before).
    a = jnp.array([0.5, -1.0, 2.0])
    for transform in (jax.grad, jax.hessian, lambda g: jax.grad(lambda x: jnp.sum(jax.grad(g)(x))), jax.jacrev):
        np.testing.assert_allclose(jax.jit(transform(f))(a), jax.jit(transform(plain))(a), rtol=1e-6)
    batch = jnp.stack([a, 2 * a])
    np.testing.assert_allclose(
        jax.jit(jax.vmap(jax.hessian(f)))(batch), jax.jit(jax.vmap(jax.hessian(plain)))(batch), rtol=1e-6
    )


def test_clipping_has_finite_reverse_mode_gradients_at_zero():
    from jaxpriv.mechanisms import clip_l2

    def f(c):
        return jnp.sum(clip_l2(jnp.array([c, 0.2]), 1.0) ** 2) + jnp.sum(clip_l2(0.0 * jnp.array([c, c]), 1.0))

    x = jnp.float32(0.3)
    np.testing.assert_allclose(float(jax.jit(jax.grad(f))(x)), 0.6, rtol=1e-6)  # 2c; was NaN


# --- map_seeds -------------------------------------------------------------------------------------------------

KEYS = jax.random.split(jax.random.key(0), 3)
P = jp.SimParams(oco.PFTALParams(epsilon=1.0), envs.QuadraticParams())


def _one(k):
    return jax.random.uniform(k)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"keys": 0}, r"keys must be a 1-d array of seed keys"),
        ({"keys": jax.random.key(0)}, r"keys .*a single key"),
        ({"keys": jnp.zeros(3)}, r"keys .*shape \(3,\), dtype float32"),
        ({"keys": KEYS[:0]}, r"keys .*no keys"),
        ({"chunk": -1}, r"chunk must be an integer >= 1, got -1"),
        ({"chunk": 2.5}, r"chunk must be an integer >= 1, got 2.5"),
        ({"chunk": 0}, r"chunk must be an integer >= 1, got 0"),
        ({"chunk": True}, r"chunk must be an integer >= 1, got True"),
        ({"fn": None}, r"fn must be a function"),
        ({"fn": lambda k, p: k}, r"fn must take 1 argument \(fn\(key\), since params is None\)"),
        ({"fn": lambda k: k, "params": P}, r"fn must take 2 arguments \(fn\(key, params\)"),
        ({"axes": 0}, r"axes names the grid axes of params, but params is None"),
        ({"fn": lambda k, p: k, "params": P, "axes": (0, 0, 0)}, r"axes must be the in_axes pytree of params"),
        (
            {"fn": lambda k, p: k, "params": {"a": jnp.ones(2), "b": jnp.ones(3)}, "axes": {"a": 0, "b": 0}},
            r"one grid length",
        ),
        (
            {"fn": lambda k, p: k, "params": {"a": 1.0}, "axes": {"a": 0}},
            r"params\['a'\] the grid axis 0, but it has shape \(\)",
        ),
    ],
)
def test_map_seeds_refuses_bad_arguments_before_tracing(kwargs, match):
    args = {"fn": _one, "keys": KEYS, "params": None, "chunk": None, "axes": None, **kwargs}
    with pytest.raises(ValueError, match=match):
        sim.map_seeds(args["fn"], args["keys"], args["params"], args["chunk"], axes=args["axes"])


def test_map_seeds_and_sweep_share_the_chunk_check():
    for chunk in (0, -1, 2.5):
        with pytest.raises(ValueError, match=r"chunk must be an integer >= 1") as a:
            sim.map_seeds(_one, KEYS, chunk=chunk)
        with pytest.raises(ValueError, match=r"chunk must be an integer >= 1") as b:
            jp.sweep(LEARNER, ENV, P, 0, T, seeds=2, chunk=chunk)
        assert str(a.value) == str(b.value)


def test_map_seeds_takes_axes_that_sweep_nothing_as_no_grid():
    axes, _ = sim.grid_axes(P, True)  # no leaf is swept: all None
    out = sim.map_seeds(
        lambda k, p: p.learner.epsilon + 0 * jax.random.uniform(k), KEYS, sim.canonical_params(P), axes=axes
    )
    assert out.shape == (3,)


# --- specs: grid axes and horizons that cannot be silently reinterpreted ------------------------------------


def test_a_component_without_spec_given_an_array_leaf_names_the_leaf():
    """Before: ``means[3]`` on a spec-less bandit ran as three one-arm instances (regret 0)."""
    from jaxpriv import bandits

    env = envs.bernoulli_bandit(3)._replace(spec=None)
    params = jp.SimParams(bandits.UCBParams(), envs.BernoulliParams(jnp.array([0.9, 0.5, 0.1])))
    with pytest.raises(ValueError, match=r"params\.env\.means has shape \(3,\), but its component has no spec"):
        jp.sweep(bandits.ucb(3), env, params, 0, T, seeds=2)
    with pytest.raises(ValueError, match=r"ndims=\(\('means', 1\),\)"):
        jp.run(bandits.ucb(3), env, params, 0, T)


def test_the_horizon_a_spec_records_cannot_be_bypassed():
    """Before: ``pftal(64)`` with ``horizon=None`` ran to 128 (half its steps NaN and dropped, a warning only)."""
    learner = oco.pftal(T, BALL)._replace(horizon=None)
    with pytest.raises(ValueError, match=rf"horizon {2 * T} exceeds the learner's horizon {T}"):
        jp.run(learner, ENV, P, 0, 2 * T)


def test_a_registered_factory_that_builds_no_learner_is_named(tmp_path):
    """Before: an AttributeError from deep inside the study parser."""
    from jaxpriv.experiments import registry
    from jaxpriv.experiments.study_file import parse_study

    registry.register_learner(
        "not_a_learner", lambda horizon, constraint: "pftal", params=oco.PFTALParams, replace=True
    )
    text = (
        'horizon = 8\nseeds = 2\n[set]\nkind = "l2_ball"\ndim = 2\n[learner]\nname = "not_a_learner"\n'
        '[learner.params]\nepsilon = 1.0\n[env]\nname = "quadratic_stream"\n'
    )
    with pytest.raises(
        ValueError, match=r"not_a_learner: its registered factory returned a str, not a jaxpriv\.Learner"
    ):
        parse_study(text, "s.toml")


def test_rollout_refuses_a_record_of_the_wrong_arity_before_compiling():
    """Before: a raw TypeError from inside the traced scan body."""
    params = jp.SimParams(oco.PFTALParams(epsilon=1.0), envs.QuadraticParams())
    with pytest.raises(ValueError, match=r"record must take 6 arguments"):
        sim.rollout(LEARNER, ENV, params, 0, T, record=lambda t, action: action)


# --- Spec fields checked at the entry points (run / sweep / rollout) ------------------------------------------


_SPEC_CASES = [  # (which component, the edit, the message)
    ("env", {"ndims": ("means", 1)}, r"environment's spec \('bernoulli_bandit'\): ndims must be a tuple of"),
    ("env", {"num_arms": "3"}, r"num_arms must be an int >= 1 or None, got '3'"),
    ("env", {"params": "BernoulliParams"}, r"params must be a params class or None"),
    ("learner", {"private": "no"}, r"learner's spec \('ucb'\): private must be True, False or None"),
    ("env", {"ndims": ()}, r"ndims=\(\), but its declared factory built ndims=\(\('means', 1\),\)"),
    ("env", None, r"environment's spec must be a jaxpriv.Spec or None, got dict"),
]


@pytest.mark.parametrize(("which", "edit", "match"), _SPEC_CASES)
def test_a_spec_holding_a_wrong_type_or_an_edited_ndims_is_one_error_naming_the_field(which, edit, match):
    """Before: raw errors from inside the engine ('dictionary update sequence element #0 has length 5'), or
    (``ndims=()`` on the declared Bernoulli bandit) its ``means[3]`` silently run as three one-arm instances
    (regret 0)."""
    from jaxpriv import bandits

    learner, env = bandits.ucb(3), envs.bernoulli_bandit(3)
    component = env if which == "env" else learner
    spec = {"name": "x"} if edit is None else component.spec._replace(**edit)
    if which == "env":
        env = env._replace(spec=spec)
    else:
        learner = learner._replace(spec=spec)
    params = jp.SimParams(bandits.UCBParams(), envs.BernoulliParams(jnp.array([0.9, 0.5, 0.1])))
    with pytest.raises(ValueError, match=match):
        jp.run(learner, env, params, 0, T)
    with pytest.raises(ValueError, match=match):
        jp.sweep(learner, env, params, 0, T, seeds=2)
    with pytest.raises(ValueError, match=match):
        sim.rollout(learner, env, params, 0, T)


def test_analytic_gaussian_sigma_ends_for_tiny_epsilon_and_delta():
    """Before: it hung (rounding σ up one ulp at a time while float64's δ(σ) was rounding noise)."""
    import signal
    import time

    from jaxpriv.mechanisms import analytic_gaussian_sigma, gaussian_delta

    def hung(signum, frame):
        raise TimeoutError("analytic_gaussian_sigma hung")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(5)
    try:
        start = time.perf_counter()
        sigma = float(analytic_gaussian_sigma(1e-30, 1e-12, 1.0))
        elapsed = time.perf_counter() - start
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    assert elapsed < 1.0
    assert gaussian_delta(sigma, 1.0, 1e-30) <= 1e-12  # the claim holds
    np.testing.assert_allclose(sigma, 1 / (1e-12 * np.sqrt(2 * np.pi)), rtol=1e-2)  # ε -> 0: δ = 2Φ(1/2σ) - 1


def test_a_noise_family_refuses_an_integer_dtype_naming_itself():
    """Before: JAX's 'dtype argument to `normal` must be a float or complex dtype' (Gamma's too)."""
    from jaxpriv.mechanisms import GAMMA, GAUSSIAN, LAPLACE

    for family in (GAUSSIAN, LAPLACE, GAMMA):
        with pytest.raises(ValueError, match=rf"{family.name}\.sample: dtype must be a floating dtype .*got int32"):
            family.sample(jax.random.key(0), (2,), jnp.int32)


def test_a_bandit_policy_for_5_arms_on_a_3_armed_study_gets_the_right_reason():
    """Before: 'a bandit policy (it plays arm indices) cannot run on a full-information environment' came
    first, although the environment is a bandit instance; the reason is the arm counts."""
    from jaxpriv.experiments.study_file import parse_study

    text = (
        'horizon = 8\nseeds = 2\n[learner]\nname = "ucb"\nnum_arms = 5\n[learner.params]\n'
        '[env]\nname = "bernoulli_bandit"\nnum_arms = 3\n[env.params]\nmeans = [0.7, 0.5, 0.3]\n'
    )
    with pytest.raises(ValueError, match=r"built for 5 arms but the environment .* has 3") as err:
        parse_study(text, "s.toml")
    assert "full-information" not in str(err.value)
