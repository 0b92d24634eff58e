"""Follow-the-Approximate-Leader with bandit feedback, Smith & Thakurta 2013, §3.1 (non-private)."""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from jaxpriv import _validate, declare
from jaxpriv._base import Learner, NonfiniteInfo, PRNGKey, Spec, poison_past_horizon, zero_nonfinite
from jaxpriv.mechanisms import clip_l2, dyadic_init, dyadic_step, tree_depth
from jaxpriv.oco import one_point
from jaxpriv.oco._shared import (
    PRESETS,
    BanditFTALState,
    check_bandit_ftal_params,
    estimate,
    init_state,
    next_state,
    played_point,
    preset_values,
)
from jaxpriv.sets import ConstraintSet


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


def _example(horizon: int, dim: int) -> declare.ExampleRun:
    """``bandit_ftal`` at one small configuration (``jaxpriv.testing.learner_examples``)."""
    from jaxpriv.envs._settings import setting

    s = setting("bandit_feedback", dim)
    return bandit_ftal(horizon, s.constraint), s.env, BanditFTALParams(), s.params


@declare.learner("bandit_ftal", params=BanditFTALParams, example=_example)
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
    in the step's Info (``NonfiniteInfo``; ``Result.nonfinite_inputs``).

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
    horizon = _validate.horizon(horizon)
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

    def update_fn(
        key: PRNGKey, state: BanditFTALState, action: jax.Array, loss: jax.Array, t: jax.Array
    ) -> tuple[BanditFTALState, NonfiniteInfo]:
        del key, action  # the played point is w̃_t + βu_t, u_t kept in the state
        g, bad = estimate(state, constraint, loss, t)
        # The tree's guard and clipping step with an infinite bound: the same operations as
        # Algorithm 3's, so the two learners agree bit for bit at an infinite budget.
        g, _ = zero_nonfinite(g)
        g = clip_l2(g, jnp.float32(jnp.inf))
        sums, total = dyadic_step(state.sums, g, t)
        total = poison_past_horizon(total, t, horizon)
        return next_state(state, constraint, sums, total, t), NonfiniteInfo(bad)

    spec = Spec(private=False)
    return Learner(init_fn, act_fn, update_fn, check, horizon, spec=spec, returns_info=True)
