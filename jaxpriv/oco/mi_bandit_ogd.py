"""Mutual-information-private bandit OGD, Zhang & Venkatasubramaniam 2018, Algorithm 2."""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxpriv import _rng, _validate, declare, theory
from jaxpriv._base import Learner, NonfiniteInfo, PRNGKey, Spec, poison_past_horizon, zero_nonfinite
from jaxpriv.mechanisms import (
    DyadicSums,
    bandit_clip_bound,
    clip_l2,
    dyadic_init,
    dyadic_step,
    mutual_information_to_stddev,
    tree_depth,
)
from jaxpriv.oco import _floor, one_point
from jaxpriv.sets import ConstraintSet


class MIBanditOGDParams(NamedTuple):
    """Params of MI-private bandit OGD.

    Attributes:
      mutual_information: ``C > 0`` nats per round (Theorem 3); ``inf`` = no noise.
        Convert from a noise level with ``jaxpriv.mechanisms.bandit_stddev_to_mutual_information``.
      loss_bound: ``F > 0``, ``|f_t| <= F`` on ``S`` (the poster's ``F = max f_t``).
      lipschitz: ``L >= 0`` of the losses; with ``F`` it sets the clip ``p(F/δ + L)``.
      exploration: ``δ ∈ (0, r)``; ``nan`` (default): ``theory.mi_bandit_ogd_exploration``, ``∝ T^{-1/4}``.
      learning_rate: ``η > 0``; ``nan`` (default): Theorem 4's ``η = B/sqrt(T(p²(F/δ+L)² + dσ²))``, ``∝ T^{-3/4}``.
    """

    mutual_information: ArrayLike | None = None
    loss_bound: ArrayLike = 1.0
    lipschitz: ArrayLike = 1.0
    exploration: ArrayLike = float("nan")
    learning_rate: ArrayLike = float("nan")


class MIBanditOGDState(NamedTuple):
    w: jax.Array  # shape=[d], w_t: the centre of the next played point, in the shrunk set
    sphere_key: jax.Array  # the directions' key: e_t = one_point.direction_at(sphere_key, t)
    direction: jax.Array  # shape=[d], e_t: the direction of the next played point
    theta: jax.Array  # shape=[d], θ_t = -sum_{s<t} z̃_s
    sums: DyadicSums  # exact dyadic sums of the noisy estimates (float32-accurate for long T)
    exploration: jax.Array  # shape=(), δ
    learning_rate: jax.Array  # shape=(), η
    stddev: jax.Array  # shape=(), σ of the encryption layer's Gaussian noise
    clip: jax.Array  # shape=(), p(F/δ + L): the bound ||z_t|| is clipped to
    shrink: jax.Array  # shape=(), s: the shrunk set is c + s(S - c)


def _require_budget(params: MIBanditOGDParams) -> None:
    """The mutual-information budget is given (``inf`` is the explicit non-private limit), never left unset."""
    _validate.budget("mi_bandit_ogd", "gaussian", params, needs=("mutual_information",), guarantee="C-MI private")


def _example(horizon: int, dim: int) -> declare.ExampleRun:
    """``mi_bandit_ogd`` at one small configuration (``jaxpriv.testing.learner_examples``)."""
    from jaxpriv.envs._settings import setting

    s = setting("bandit_feedback", dim)
    return mi_bandit_ogd(horizon, s.constraint), s.env, MIBanditOGDParams(1.0, 4.0, 2.0), s.params


@declare.learner("mi_bandit_ogd", params=MIBanditOGDParams, example=_example)
def mi_bandit_ogd(horizon: int, constraint: ConstraintSet) -> Learner:
    """MI-private bandit OGD with lazy projection (Zhang & Venkatasubramaniam 2018, Algorithm 2).

    Encryption layer: draw ``e_t`` uniform on the unit sphere, send the point
    ``w_t + δe_t`` to the user, receive ``φ_t = f_t(w_t + δe_t)``, form
    ``z_t = (p/δ) φ_t e_t``, clip it to ``||z_t||_2 <= p(F/δ + L)`` and release
    ``z̃_t = z_t + v_t``, ``v_t ~ N(0, σ² I_d)``. Learner: ``θ_{t+1} = θ_t - z̃_t``,
    ``w_{t+1} = Π(ηθ_{t+1})``. At ``σ = 0`` it is lazy projected OGD on FKM's
    one-point estimates.

    One change from the poster (stated, FKM's standard remedy): the poster
    projects onto ``S`` and may play ``w_t + δe_t`` outside ``S`` (its ``F + Lδ``
    bound on ``|φ_t|`` covers that); we project onto the shrunk set
    ``c + (1 - ξ)(S - c)``, ``ξ = δ/r`` (``c + rB`` the set's inner ball), so that the
    played point always lies in ``S``; then ``|φ_t| <= F`` and the poster's clip
    ``p(F/δ + L)`` is never active for losses within the declared bounds. The
    shrinking costs ``ξ R_c L T`` of regret, which ``theory.mi_bandit_ogd_regret_bound`` adds.

    Privacy (Theorem 3): each release is ``C``-mutual-information private,
    ``C = (d/2) log(1 + d(F/δ + L)²/σ²)`` nats per round (``p = d`` except on the
    simplex, whose directions live in the ``(d-1)``-dimensional hull: then ``p(F/δ + L)``
    replaces ``d(F/δ + L)`` as the channel's amplitude); ``σ`` is set from ``C`` in
    ``init`` (``mechanisms.bandit_mutual_information_to_stddev``). A per-round,
    per-user information bound, not differential privacy. A non-finite loss
    value is replaced by 0 (``z_t = 0``) and counted in the step's Info (``NonfiniteInfo``).

    Regret (Theorem 4): ``B²/(2η) + (η/2)T(p²(F/δ + L)² + dσ²) + 3TLδ`` plus the
    shrinking cost, ``O(T^{3/4})`` at ``δ ∝ T^{-1/4}``, ``η ∝ T^{-3/4}`` (the defaults);
    ``theory.mi_bandit_ogd_regret_bound``.

    Args:
      horizon: ``T``, for the default ``δ`` and ``η``; declared.
      constraint: the set ``S``; needs a projection and an inner ball (``sets.bandit_radii``).

    Returns:
      A ``Learner`` with params ``MIBanditOGDParams``; feedback is the loss value at the played point.

    Raises:
      ValueError: a set without projection or inner ball; ``check``: ``C <= 0`` or
        below the learner's floor (where its float32 arithmetic breaks, docs/guide/sharp_edges.md),
        ``F <= 0``, ``L < 0``, ``δ ∉ (0, r)``, ``η <= 0``.

    References:
      Zhang & Venkatasubramaniam, Mutual-Information-Private Online Gradient
      Descent Algorithm, ICASSP 2018 (poster), Algorithm 2, Theorems 3–4.
      Flaxman, Kalai, McMahan, SODA 2005.
    """
    horizon = _validate.horizon(horizon)
    r, outer = one_point.require_inner_ball(constraint)
    dim, radius = constraint.dim, constraint.radius
    p = one_point.sphere_dim(constraint)
    depth = tree_depth(horizon)

    def check(params: MIBanditOGDParams) -> None:
        _validate.positive("loss_bound", params.loss_bound, allow_inf=False)
        _validate.nonnegative("lipschitz", params.lipschitz)
        delta = _validate._concrete(params.exploration)
        if delta is not None and np.any(~np.isnan(delta) & ~((delta > 0) & (delta < r))):
            raise ValueError(
                f"exploration must be in (0, r) with r = {r:g} the set's inner radius, or nan; got {delta!r}"
            )
        lip = _validate._concrete(params.lipschitz)
        if delta is not None and lip is not None and np.any(np.isnan(delta) & (lip <= 0)):
            raise ValueError("lipschitz must be > 0 for the default exploration (nan), which is proportional to 1/L")
        eta = _validate._concrete(params.learning_rate)
        if eta is not None and np.any(~np.isnan(eta) & ~((eta > 0) & np.isfinite(eta))):
            raise ValueError(f"learning_rate must be in (0, inf) or nan (Theorem 4's η), got {eta!r}")
        _require_budget(params)
        _validate.budget_value("mutual_information", params.mutual_information, _floor.MIN_BUDGET)
        values = _floor.concrete(params.mutual_information, params.loss_bound, params.lipschitz, params.exploration)
        if values is not None and eta is not None:  # the budget floor (docs/guide/sharp_edges.md)
            budget, bound, lip, delta = values
            default_delta = theory.mi_bandit_ogd_exploration(horizon, dim, lip, bound, radius, r, outer, budget, p)
            delta = np.where(np.isnan(delta), np.asarray(default_delta, np.float64), delta)  # grows as C falls
            clip = np.asarray(bandit_clip_bound(bound, lip, delta, p), np.float64)
            shrink = np.asarray(one_point.shrink_factor(delta, r), np.float64)
            rate_bound = radius / (clip * np.sqrt(horizon))  # the default η's largest value
            args = (budget, clip, eta, rate_bound, shrink, horizon, dim, f"T={horizon}, d={dim}")
            _floor.check_mutual_information("mi_bandit_ogd", *args)

    def init_fn(key: PRNGKey, params: MIBanditOGDParams) -> MIBanditOGDState:
        _require_budget(params)
        bound = jnp.asarray(params.loss_bound, jnp.float32)
        lip = jnp.asarray(params.lipschitz, jnp.float32)
        delta = jnp.asarray(params.exploration, jnp.float32)
        default_delta = theory.mi_bandit_ogd_exploration(
            horizon, dim, lip, bound, radius, r, outer, params.mutual_information, p
        )
        delta = jnp.where(jnp.isnan(delta), default_delta, delta)
        clip = bandit_clip_bound(bound, lip, delta, p)
        stddev = mutual_information_to_stddev(params.mutual_information, clip, dim)
        eta = jnp.asarray(params.learning_rate, jnp.float32)
        default_eta = theory.mi_bandit_ogd_learning_rate(horizon, dim, lip, bound, radius, stddev, delta, p)
        eta = jnp.where(jnp.isnan(eta), default_eta, eta)
        w1 = jnp.asarray(constraint.inner_center, jnp.float32)
        theta = jnp.zeros((dim,), jnp.float32)
        shrink = one_point.shrink_factor(delta, r)
        e1 = one_point.direction_at(key, jnp.int32(1), constraint)
        sums = dyadic_init(depth, dim)
        return MIBanditOGDState(w1, key, e1, theta, sums, delta, eta, stddev, clip, shrink)

    def act_fn(key: PRNGKey, state: MIBanditOGDState, t: jax.Array) -> jax.Array:
        del key
        return poison_past_horizon(state.w + state.exploration * state.direction, t, horizon)

    def update_fn(
        key: PRNGKey, state: MIBanditOGDState, action: jax.Array, loss: jax.Array, t: jax.Array
    ) -> tuple[MIBanditOGDState, NonfiniteInfo]:
        del action
        value, bad = zero_nonfinite(jnp.asarray(loss, jnp.float32))
        z = one_point.one_point_gradient(value, state.direction, state.exploration, p)
        z = clip_l2(z, state.clip)
        noisy = z + state.stddev * _rng.normal(key, (dim,), jnp.float32)
        sums, total = dyadic_step(state.sums, noisy, t)
        theta = -poison_past_horizon(total, t, horizon)
        w = one_point.project_shrunk(constraint, state.learning_rate * theta, state.shrink)
        e = one_point.direction_at(state.sphere_key, t + 1, constraint)
        return state._replace(w=w, direction=e, theta=theta, sums=sums), NonfiniteInfo(bad)

    spec = Spec(private=True)
    return Learner(init_fn, act_fn, update_fn, check, horizon, spec=spec, returns_info=True)
