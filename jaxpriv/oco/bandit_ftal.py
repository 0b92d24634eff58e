"""Follow-the-Approximate-Leader with bandit feedback, Smith & Thakurta 2013, §3.1 (non-private)."""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxpriv import _validate, theory
from jaxpriv._base import Learner, PRNGKey, poison_past_horizon, zero_nonfinite
from jaxpriv.mechanisms import DyadicSums, clip_l2, dyadic_init, dyadic_step, tree_depth
from jaxpriv.oco import one_point
from jaxpriv.sets import ConstraintSet

PRESETS = theory.BANDIT_PRESETS


class BanditFTALParams(NamedTuple):
    """Params of bandit FTAL.

    Attributes:
      strong_convexity: ``H >= 0`` of the losses; ``nan`` (default): the preset's
        (1 for ``"oblivious"`` / ``"adaptive"``, 0 for ``"general_convex"``).
      exploration: ``β``, the sampling radius, in ``(0, r)``; ``nan`` (default): the
        preset's (``theory.bandit_ftal_exploration``).
      regularization: ``λ >= 0``, the regulariser ``(λ/2)||w||²`` added to every loss;
        ``nan`` (default): the preset's (0, or Theorem 17's ``T^{-1/4}`` for ``"general_convex"``).
        ``H + λ > 0`` is required.
    """

    strong_convexity: ArrayLike = float("nan")
    exploration: ArrayLike = float("nan")
    regularization: ArrayLike = float("nan")


class BanditFTALState(NamedTuple):
    w: jax.Array  # shape=[d], w̃_t: the centre of the next played point, in the shrunk set
    sphere_key: jax.Array  # the directions' key: u_t = one_point.direction_at(sphere_key, t)
    direction: jax.Array  # shape=[d], u_t: the direction of the next played point
    points: DyadicSums  # exact dyadic sums of the centres w̃_τ
    sums: Any  # exact dyadic sums of the one-point estimates (bandit FTAL) or the tree's state (Algorithm 3)
    strong_convexity: jax.Array  # shape=(), H + λ: the surrogates' modulus
    regularization: jax.Array  # shape=(), λ
    exploration: jax.Array  # shape=(), β
    shrink: jax.Array  # shape=(), s = (1 - β/r)(1 - margin): the shrunk set is c + s(C - c)
    nonfinite: jax.Array  # shape=(), int32, loss values that were NaN / ±inf, replaced by zero


def preset_values(params: Any, horizon: int, p: int, inner_radius: float, preset: str) -> tuple[jax.Array, ...]:
    """``(H, λ, β)`` from params, a ``nan`` replaced by the preset's value."""
    h = jnp.asarray(params.strong_convexity, jnp.float32)
    lam = jnp.asarray(params.regularization, jnp.float32)
    beta = jnp.asarray(params.exploration, jnp.float32)
    h = jnp.where(jnp.isnan(h), 0.0 if preset == "general_convex" else 1.0, h)
    lam = jnp.where(jnp.isnan(lam), theory.bandit_ftal_regularization(horizon, preset), lam)
    beta = jnp.where(jnp.isnan(beta), theory.bandit_ftal_exploration(horizon, p, inner_radius, preset), beta)
    return h, lam, beta


def check_bandit_ftal_params(params: Any, horizon: int, p: int, inner_radius: float, preset: str) -> None:
    """``ValueError`` for ``β ∉ (0, r)``, ``H < 0``, ``λ < 0`` or ``H + λ <= 0`` (``nan`` = the preset's)."""
    for name in ("strong_convexity", "regularization", "exploration"):
        v = _validate._concrete(getattr(params, name))
        if v is None:
            continue
        if name == "exploration":
            bad = ~np.isnan(v) & ~((v > 0) & (v < inner_radius))
            allowed = f"(0, r) with r = {inner_radius:g} the set's inner radius (β >= r leaves an empty shrunk set)"
        else:
            bad = ~np.isnan(v) & ~((v >= 0) & np.isfinite(v))
            allowed = "[0, inf)"
        if np.any(bad):
            raise ValueError(f"{name} must be in {allowed}, or nan for the {preset!r} preset's; got {v!r}")
    values = [_validate._concrete(x) for x in preset_values(params, horizon, p, inner_radius, preset)[:2]]
    if values[0] is not None and values[1] is not None and np.any(values[0] + values[1] <= 0):
        raise ValueError(
            f"strong_convexity + regularization must be > 0 (the surrogates' modulus H + λ), got "
            f"H={params.strong_convexity!r}, λ={params.regularization!r}; general convex losses need λ > 0"
        )


def init_state(key: PRNGKey, h, lam, beta, sums, constraint: ConstraintSet, depth: int, r: float) -> BanditFTALState:
    """The state before step 1: ``w̃_1 = c`` (the inner centre, in every shrunk set)."""
    w1 = jnp.asarray(constraint.inner_center, jnp.float32)
    return BanditFTALState(
        w=w1,
        sphere_key=key,
        direction=one_point.direction_at(key, jnp.int32(1), constraint),
        points=dyadic_init(depth, constraint.dim),
        sums=sums,
        strong_convexity=h + lam,
        regularization=lam,
        exploration=beta,
        shrink=one_point.shrink_factor(beta, r),
        nonfinite=jnp.zeros((), jnp.int32),
    )


def played_point(state: BanditFTALState, constraint: ConstraintSet, t: jax.Array, horizon: int) -> jax.Array:
    """``ŵ_t = w̃_t + βu_t`` (NaN past the horizon)."""
    return poison_past_horizon(state.w + state.exploration * state.direction, t, horizon)


def estimate(state: BanditFTALState, constraint: ConstraintSet, loss: jax.Array, t: jax.Array):
    """The one-point estimate ``(p/β) f_t(ŵ_t) u_t`` (a non-finite loss replaced by 0) and the bad-input flag."""
    value, bad = zero_nonfinite(jnp.asarray(loss, jnp.float32))
    return one_point.one_point_gradient(
        value, state.direction, state.exploration, one_point.sphere_dim(constraint)
    ), bad


def next_state(state: BanditFTALState, constraint: ConstraintSet, sums, total, t: jax.Array, bad) -> BanditFTALState:
    """Eq. (8)/(9) with the regulariser: ``argmin_{w∈c+s(C-c)} <v_t + λW_t, w> + ((H+λ)/2) sum_τ ||w - w̃_τ||²``.

    An isotropic quadratic: the projection of ``(W_t - (v_t + λW_t)/(H + λ))/t`` onto the shrunk set.
    """
    points, total_w = dyadic_step(state.points, state.w, t)
    h = state.strong_convexity
    leader = (total_w - (total + state.regularization * total_w) / h) / jnp.asarray(t, jnp.float32)
    w = one_point.project_shrunk(constraint, leader, state.shrink)
    u = one_point.direction_at(state.sphere_key, t + 1, constraint)
    return state._replace(w=w, direction=u, points=points, sums=sums, nonfinite=state.nonfinite + bad)


def bandit_ftal(horizon: int, constraint: ConstraintSet, preset: str = "oblivious") -> Learner:
    """Bandit FTAL (Smith & Thakurta 2013, §3.1, eq. (8)): FTAL on one-point gradient estimates.

    At step ``t`` it plays ``ŵ_t = w̃_t + βu_t`` (``u_t`` uniform on the unit
    sphere, ``jaxpriv.oco.one_point``), sees only ``f_t(ŵ_t)``, and forms the FKM
    estimate ``ĝ_t = (p/β) f_t(ŵ_t) u_t`` of ``∇f̂_t(w̃_t)``. The next centre is

    ``w̃_{t+1} = argmin_{w ∈ (1-ξ)C} <sum_τ ĝ_τ, w> + (H/2) sum_τ ||w - w̃_τ||²``  (eq. (8)),

    the projection of ``(W_t - S_t/H)/t`` onto the shrunk set ``c + (1 - ξ)(C - c)``,
    ``ξ = β/r`` (``c + rB`` the set's inner ball; the paper's ``(1 - ξ)C`` for
    ``c = 0``), so every played point lies in ``C``. ``S_t`` and ``W_t`` are exact
    dyadic sums, the same additions as the tree of Algorithm 3, so
    ``private_bandit_ftal`` with an infinite budget reproduces this learner bit
    for bit. With ``λ > 0`` it runs on ``f_t + (λ/2)||w||²`` (whose gradient ``λw̃_τ``
    is known exactly and added to the estimate): the general-convex version.

    Presets (static): ``"oblivious"`` (``β ∝ p/T^{1/3}``, regret ``Õ(T^{2/3})``
    against oblivious adversaries), ``"adaptive"`` (``β ∝ p/T^{1/4}``,
    ``Õ(T^{3/4})`` against adaptive ones), ``"general_convex"`` (``H = 0``,
    ``λ = T^{-1/4}``, ``β ∝ p/T^{1/4}``); see ``theory.bandit_ftal_exploration``.
    The params override them. Regret: ``theory.bandit_ftal_regret_bound``.

    A non-finite loss value is replaced by 0 (its estimate is then 0) and counted
    in ``BanditFTALState.nonfinite`` (``Result.nonfinite_inputs``).

    Args:
      horizon: ``T``; sizes the dyadic sums, fixes the presets; declared.
      constraint: the set ``C``; needs a projection and an inner ball (``sets.bandit_radii``).
      preset: ``"oblivious"``, ``"adaptive"`` or ``"general_convex"``.

    Returns:
      A ``Learner`` with params ``BanditFTALParams``; feedback is the loss value at
      the played point (``envs.bandit_feedback``).

    Raises:
      ValueError: a set without projection or inner ball, a bad ``horizon`` or
        ``preset``; ``check``: ``β ∉ (0, r)``, ``H < 0``, ``λ < 0``, ``H + λ <= 0``.

    References:
      Smith & Thakurta, NeurIPS 2013, §3.1 and Appendix D (Theorem 12).
      Flaxman, Kalai, McMahan, Online convex optimization in the bandit setting:
      gradient descent without a gradient, SODA 2005.
    """
    horizon = _validate.positive_int("horizon", horizon)
    preset = _validate.choice("preset", preset, PRESETS)
    r, _ = one_point.require_inner_ball(constraint)
    p = one_point.sphere_dim(constraint)
    depth = tree_depth(horizon)

    def check(params: BanditFTALParams) -> None:
        check_bandit_ftal_params(params, horizon, p, r, preset)

    def init_fn(key: PRNGKey, params: BanditFTALParams) -> BanditFTALState:
        k_sphere, _ = jax.random.split(key)  # the split of Algorithm 3's init: the same directions
        h, lam, beta = preset_values(params, horizon, p, r, preset)
        return init_state(k_sphere, h, lam, beta, dyadic_init(depth, constraint.dim), constraint, depth, r)

    def act_fn(key: PRNGKey, state: BanditFTALState, t: jax.Array) -> jax.Array:
        del key
        return played_point(state, constraint, t, horizon)

    def update_fn(key: PRNGKey, state: BanditFTALState, action: jax.Array, loss: jax.Array, t: jax.Array):
        del key, action  # the played point is w̃_t + βu_t, u_t kept in the state
        g, bad = estimate(state, constraint, loss, t)
        # The tree's guard and clipping step with an infinite bound: the same operations as
        # Algorithm 3's, so the two learners agree bit for bit at an infinite budget.
        g, _ = zero_nonfinite(g)
        g = clip_l2(g, jnp.float32(jnp.inf))
        sums, total = dyadic_step(state.sums, g, t)
        total = poison_past_horizon(total, t, horizon)
        return next_state(state, constraint, sums, total, t, bad)

    return Learner(init_fn, act_fn, update_fn, check, horizon)
