"""Pieces shared by several learners of ``jaxpriv.oco``; each algorithm file imports what it needs from here.

* FTAL's leader (``leader_point``) and its exact dyadic sums (``dyadic_prefix_sum``, ``MAX_DEPTH``):
  FTAL, PFTAL, WDP-COCOP, WDP-COCOL, online Frank–Wolfe and the Garber–Hazan algorithm.
* The choice of prefix-sum mechanism (``prefix_sum_mechanism``): PFTAL and private bandit FTAL.
* The start point of the projection-free learners (``start_point``): WDP-COCOL, online Frank–Wolfe.
* The window-private learners' params (``WDPParams``), sensitivity rules and params checks: WDP-COCOP,
  WDP-COCOL (and the Garber–Hazan algorithm, which runs WDP-COCOL's step without noise).
* The body of bandit FTAL (state, presets, one-point estimate, leader on the shrunk set):
  bandit FTAL and private bandit FTAL (Algorithm 3), which differ only in their sums.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxpriv import _validate, theory
from jaxpriv._base import Mechanism, PRNGKey, poison_past_horizon, zero_nonfinite
from jaxpriv._inplace import computed_once
from jaxpriv.mechanisms import (
    GAMMA,
    DyadicSums,
    NoiseFamily,
    binary_tree,
    describe,
    dyadic_init,
    dyadic_step,
    noise_family,
)
from jaxpriv.mechanisms._window_tree import check_window_budget_values
from jaxpriv.oco import one_point
from jaxpriv.sets import ConstraintSet

# --- FTAL's leader and its exact dyadic sums ------------------------------------------------------------------

# Levels of the exact dyadic sums when no horizon is given: enough for every int32 clock value.
MAX_DEPTH = 32


def dyadic_prefix_sum(sums: DyadicSums, x: jax.Array, t: jax.Array) -> tuple[DyadicSums, jax.Array]:
    """One step of the exact binary-tree prefix sum: ``(sums, sum_{s<=t} x_s)``.

    The same additions, in the same order, as ``jaxpriv.mechanisms.binary_tree``
    with no noise (``jaxpriv.mechanisms.dyadic_step``). Rounding error grows
    like ``log t`` rather than ``t`` for a running sum; work is ``O(d)`` amortised.
    """
    return dyadic_step(sums, x, t)


def leader_point(total_w: jax.Array, total_grad: jax.Array, strong_convexity: jax.Array, t: jax.Array) -> jax.Array:
    """The unconstrained leader ``(sum w_τ - sum ∇_τ / H) / t`` of eq. (4)/(5), before projection.

    Both sums are dyadic (rounding error ``O(log t)`` ulps) and are subtracted
    before the division, so float32 stays accurate over long horizons.

    The point is written once (``computed_once``): the projection's kernels read it instead of each
    recomputing it from the two sums' rows, the tree's noise and the clipped gradient (XLA's CPU compile,
    d = 10, T = 256, 256 seeds: PFTAL 4026 -> 3626 B per seed-step with the Gamma tree, 3862 -> 3462 with
    the Gaussian, issue 47). The same number (a division by exactly 1).
    """
    return computed_once((total_w - total_grad / strong_convexity) / jnp.asarray(t, jnp.float32))


# --- the prefix-sum mechanism of a private learner -------------------------------------------------------


def prefix_sum_mechanism(
    horizon: int, dim: int, noise: NoiseFamily | str | None, mechanism: Mechanism | None
) -> tuple[Mechanism, NoiseFamily]:
    """The learner's prefix-sum mechanism and its noise family: the paper's tree, or a checked ``mechanism``.

    Raises:
      ValueError: ``mechanism`` is not a prefix-sum mechanism of ``jaxpriv.mechanisms``, is the
        window tree (window privacy, not the learner's guarantee over the whole stream), has
        another dimension, a horizon shorter than ``horizon``, add/remove neighbours, or
        a noise family other than ``noise``.
    """
    if mechanism is None:
        noise = GAMMA if noise is None else noise_family(noise)
        return binary_tree(horizon, dim, noise, neighbouring="replace"), noise
    info = describe(mechanism)
    if info.scope != "event":
        raise ValueError(
            "mechanism='window_tree' protects a window of W consecutive losses, not the whole stream: the "
            "learner's event-level guarantee would not hold. Use the window learners (oco.wdp_cocop, oco.wdp_cocol)"
        )
    if info.dim != dim:
        raise ValueError(f"mechanism must be built for dim={dim} (the constraint's dimension), got dim={info.dim}")
    if info.horizon < horizon:
        raise ValueError(f"mechanism's horizon must be >= {horizon} (the learner's), got {info.horizon}")
    if info.neighbouring != "replace":
        raise ValueError(
            "mechanism must be built with neighbouring='replace' (the learner's replace-one guarantee), "
            f"got {info.neighbouring!r}"
        )
    if noise is not None and noise_family(noise) is not info.noise:
        raise ValueError(f"noise must be None or {info.noise.name!r} (the mechanism's family), got {noise!r}")
    return mechanism, info.noise


# --- the projection-free learners ------------------------------------------------------------------------


def start_point(constraint: ConstraintSet) -> jax.Array:
    """``x̂_1`` of the projection-free learners: the set's ``inner_center``, else ``LO(0)`` (a vertex)."""
    if constraint.inner_center is not None:
        return jnp.asarray(constraint.inner_center, jnp.float32)
    return constraint.linear_oracle(jnp.zeros(constraint.dim, jnp.float32))


# --- the window-private learners -------------------------------------------------------------------------

SENSITIVITY_RULES = ("replace", "paper_add_remove")


def window_sensitivity(rule: str, lipschitz: jax.Array, strong_convexity: jax.Array, diameter: float) -> jax.Array:
    """The clipping bound of the gradients fed to the window tree under ``rule``.

    ``"replace"``: ``L`` with replace-one calibration (sensitivity ``2L``, as ``oco.pftal``).
    ``"paper_add_remove"``: ``Δ₂ = L + μD`` with add/remove calibration (sensitivity ``Δ₂``;
    Theorems 1, 2, 5).
    """
    lipschitz = jnp.asarray(lipschitz, jnp.float32)
    if rule == "paper_add_remove":
        return lipschitz + jnp.asarray(strong_convexity, jnp.float32) * diameter
    return lipschitz


def sensitivity_rule(value: str) -> str:
    """The static ``sensitivity`` argument; ``"paper"`` (renamed) gets a message naming the new names."""
    if value == "paper":
        raise ValueError(
            "sensitivity='paper' was renamed sensitivity='paper_add_remove': it clips gradients to L + μD and "
            "calibrates for one loss added or removed, which under the paper's Definition 4 (one loss replaced) "
            "delivers up to 2L/(L + μD)·ε. The default sensitivity='replace' (clip L, sensitivity 2L) is "
            "the replace-one guarantee of Definition 4."
        )
    return _validate.choice("sensitivity", value, SENSITIVITY_RULES)


class WDPParams(NamedTuple):
    """Params of the window-private learners (WDP-COCOP, WDP-COCOL).

    A budget left ``None`` never means "no privacy": the learners refuse params without the
    budget of their noise family, or with a field of another family (``ValueError`` in
    ``check`` and in ``init``). The non-private limit is an explicit ``epsilon=inf``.

    Attributes:
      epsilon: ε of window ε-DP (``"gamma"``) or of window (ε, δ)-DP (``"gaussian"``);
        required; ``inf`` = no noise.
      delta: δ in ``(0, 1)`` of window (ε, δ)-DP: required by ``"gaussian"``, refused by ``"gamma"``.
      lipschitz: ``L``, the Lipschitz constant of the losses on the set.
      strong_convexity: ``μ > 0``.
      beta: ``β`` in ``(0, 1)``, the failure probability of the noise bound ``N`` that sets
        WDP-COCOL's radii (``window_noise_bound``; WDP-COCOP ignores it).
    """

    epsilon: ArrayLike | None = None
    delta: ArrayLike | None = None
    lipschitz: ArrayLike = 1.0
    strong_convexity: ArrayLike = 1.0
    beta: ArrayLike = 0.01


def check_wdp_params(
    params: WDPParams,
    noise: NoiseFamily | str,
    calibration: str = "paper",
    depth: int = 1,
    component: str = "wdp_cocop",
) -> None:
    """Raise ``ValueError`` naming the argument.

    A missing or wrong-family budget (ε for ``"gamma"``; ε and δ for ``"gaussian"``), ε ``<= 0`` or
    below ``_floor.MIN_BUDGET`` (the learner checks its own floor after),
    δ outside ``(0, 1)``, an ε beyond the ``"paper"`` Gaussian calibration's range
    (``check_window_budget_values``, ``k_W = depth``), μ ``<= 0``, ``L < 0``, β outside ``(0, 1)``.
    """
    from jaxpriv.oco import _floor

    check_window_budget_values(component, params, noise, calibration, depth, _floor.MIN_BUDGET)
    _validate.positive("strong_convexity", params.strong_convexity, allow_inf=False)
    _validate.nonnegative("lipschitz", params.lipschitz)
    _validate.in_open_interval("beta", params.beta, 0.0, 1.0)


# --- bandit FTAL (non-private and Algorithm 3) -------------------------------------------------------------

PRESETS = theory.BANDIT_PRESETS


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


def next_state(state: BanditFTALState, constraint: ConstraintSet, sums, total, t: jax.Array) -> BanditFTALState:
    """Eq. (8)/(9) with the regulariser: ``argmin_{w∈c+s(C-c)} <v_t + λW_t, w> + ((H+λ)/2) sum_τ ||w - w̃_τ||²``.

    An isotropic quadratic: the projection of ``(W_t - (v_t + λW_t)/(H + λ))/t`` onto the shrunk set.
    """
    points, total_w = dyadic_step(state.points, state.w, t)
    h = state.strong_convexity
    leader = (total_w - (total + state.regularization * total_w) / h) / jnp.asarray(t, jnp.float32)
    w = one_point.project_shrunk(constraint, leader, state.shrink)
    u = one_point.direction_at(state.sphere_key, t + 1, constraint)
    return state._replace(w=w, direction=u, points=points, sums=sums)
