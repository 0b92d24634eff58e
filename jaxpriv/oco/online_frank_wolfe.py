"""Non-private projection-free baselines: online Frank–Wolfe and the Garber–Hazan online algorithm."""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from jaxpriv import _validate, declare
from jaxpriv._base import Learner, NoInfo, PRNGKey, Spec, poison_past_horizon
from jaxpriv.mechanisms import DyadicSums, clip_l2, dyadic_init, tree_depth
from jaxpriv.oco._shared import MAX_DEPTH, WDPParams, dyadic_prefix_sum, start_point
from jaxpriv.oco.wdp_cocol import WDPCOCOLState, local_oracle_learner
from jaxpriv.sets import ConstraintSet


class OFWParams(NamedTuple):
    """Attributes: strong_convexity: ``μ > 0``, the curvature of the surrogates."""

    strong_convexity: ArrayLike = 1.0


class OFWState(NamedTuple):
    x: jax.Array  # shape=[d], the point played next
    points: DyadicSums  # exact dyadic sums of the points played (S_t)
    grads: DyadicSums  # exact dyadic sums of the gradients (g_t)
    strong_convexity: jax.Array  # shape=()


def _online_frank_wolfe_example(horizon: int, dim: int) -> declare.ExampleRun:
    """``online_frank_wolfe`` at one small configuration (``jaxpriv.testing.learner_examples``)."""
    from jaxpriv.envs._settings import setting

    s = setting("simplex", dim)
    return online_frank_wolfe(s.constraint, horizon), s.env, OFWParams(1.0), s.params


@declare.learner("online_frank_wolfe", params=OFWParams, example=_online_frank_wolfe_example)
def online_frank_wolfe(constraint: ConstraintSet, horizon: int | None = None) -> Learner:
    """Online Frank–Wolfe with the set's global linear oracle: the projection-free non-private baseline.

    One linear-oracle call per step on the FTAL surrogate ``J_t(x) = <g_t, x> + (μ/2) sum_{τ<=t} ||x - x̂_τ||²``
    (``g_t`` the exact gradient sum; the strongly convex surrogate of Wan & Zhang's variant of
    OFW): ``v_t = LO(∇J_t(x̂_t))``, ``x̂_{t+1} = x̂_t + σ_t(v_t - x̂_t)`` with the exact line search
    ``σ_t = clip(<∇J_t(x̂_t), x̂_t - v_t>/(μt ||v_t - x̂_t||²), 0, 1)`` (``J_t`` is an isotropic
    quadratic of curvature ``μt``, so the minimiser on the segment is a closed form). No
    projection, no local oracle: a plain Frank–Wolfe step, which does not track the leader
    as closely as a local oracle does (regret ``O(T^{2/3})`` for strongly convex losses in Wan &
    Zhang's analysis, against ``O(ln T)`` for FTAL and Garber–Hazan). That bound is the worst
    case: on a stochastic stream whose leader settles in the relative interior of a face, the
    line-search step contracts the distance to the leader at a linear rate (Guélat & Marcotte
    1986) while the leader moves ``O(1/t)``, so the regret grows like ``ln T``, close to FTAL's
    (the quadratic stream, d = 10, 64 seeds, T = 256…16384: within 0.3 of FTAL's on the simplex
    and the ball, interior and vertex optima). ``x̂_1`` is ``start_point``.

    Args:
      constraint: any set of ``jaxpriv.sets`` (only its linear oracle is used).
      horizon: ``T`` (sizes the exact sums and is declared), or ``None`` (any horizon).

    Returns:
      A ``Learner`` with params ``OFWParams``; feedback is the gradient.

    References:
      Hazan & Kale, Projection-free online learning, ICML 2012; Wan & Zhang, Projection-free
      online learning over strongly convex sets, AAAI 2021.
    """
    if horizon is not None:
        horizon = _validate.horizon(horizon)
    depth = MAX_DEPTH if horizon is None else tree_depth(horizon)
    dim = constraint.dim
    x1 = start_point(constraint)

    def check(params: OFWParams) -> None:
        _validate.positive("strong_convexity", params.strong_convexity, allow_inf=False)

    def init_fn(key: PRNGKey, params: OFWParams) -> OFWState:
        del key
        sums = dyadic_init(depth, dim)
        return OFWState(x1, sums, sums, jnp.asarray(params.strong_convexity, jnp.float32))

    def act_fn(key: PRNGKey, state: OFWState, t: jax.Array) -> jax.Array:
        del key, t
        return state.x

    def update_fn(
        key: PRNGKey, state: OFWState, action: jax.Array, grad: jax.Array, t: jax.Array
    ) -> tuple[OFWState, NoInfo]:
        del key, action
        grad = clip_l2(jnp.asarray(grad, jnp.float32), jnp.float32(jnp.inf))
        grads, total_g = dyadic_prefix_sum(state.grads, grad, t)
        total_g = poison_past_horizon(total_g, t, horizon)
        x, mu = state.x, state.strong_convexity
        tf = jnp.asarray(t, jnp.float32)
        points, total_x = dyadic_prefix_sum(state.points, x, t)
        direction = total_g + mu * (tf * x - total_x)  # ∇J_t(x̂_t)
        v = constraint.linear_oracle(direction)
        step = v - x
        sq = jnp.sum(step * step)
        sigma = jnp.clip(-jnp.sum(direction * step) / jnp.maximum(mu * tf * sq, jnp.finfo(jnp.float32).tiny), 0.0, 1.0)
        return state._replace(x=x + sigma * step, points=points, grads=grads), NoInfo()

    spec = Spec(private=False)
    return Learner(init_fn, act_fn, update_fn, check, horizon, spec=spec, returns_info=True)


class GarberHazanParams(NamedTuple):
    """Params of the Garber–Hazan online algorithm.

    Attributes:
      lipschitz: ``L``, the Lipschitz constant of the losses on the set.
      strong_convexity: ``μ > 0``.
    """

    lipschitz: ArrayLike = 1.0
    strong_convexity: ArrayLike = 1.0


def _garber_hazan_example(horizon: int, dim: int) -> declare.ExampleRun:
    """``garber_hazan`` at one small configuration (``jaxpriv.testing.learner_examples``)."""
    from jaxpriv.envs._settings import setting

    s = setting("simplex", dim)
    return garber_hazan(horizon, s.constraint), s.env, GarberHazanParams(2.0), s.params


@declare.learner("garber_hazan", params=GarberHazanParams, example=_garber_hazan_example)
def garber_hazan(horizon: int, constraint: ConstraintSet, constants: str = "proof") -> Learner:
    """The Garber–Hazan online conditional gradient algorithm: ``oco.wdp_cocol`` with the noise off.

    FTAL-type conditional gradient: one local-linear-oracle call per step on the
    exact surrogate ``F_t(x) = <g_t, x> + (μ/2) sum_{τ<=t} ||x - x̂_τ||² + (C₀μ/2)||x - x̂_1||²``, radius
    ``r_t = R/(t + C₀)``, step ``α = 1/(2ρ²)``: ``wdp_cocol`` with exact gradient sums and
    ``N = 0``. With ``constants="proof"`` (the proven constants at ``N = 0``,
    docs/algorithms/window.md, 'Decoding choices': ``C₀ = 8ρ²``, ``R = 16ρ²G/μ``,
    ``G = L + μD``) the regret is at most ``16ρ²G² ln(1 + T/C₀)/μ + C₀μD²/2``
    (``theory.wdp_cocol_regret_inequality`` with ``N = 0``): ``O(ρ² G² ln T/μ)``, Garber &
    Hazan's online result, whose exact constants were not available.

    Args:
      horizon: ``T``; declared.
      constraint: a polytope with a local linear oracle (``sets.simplex``, ``sets.l1_ball``).
      constants: ``"proof"`` or ``"paper"`` (as in ``wdp_cocol``, with ``C_W = 0``).

    Returns:
      A ``Learner`` with params ``GarberHazanParams``; feedback is the gradient.

    References:
      Garber & Hazan, A linearly convergent conditional gradient algorithm with applications
      to online and stochastic optimization, SIAM J. Optim. 26(3), 2016.
    """
    inner = local_oracle_learner(
        horizon, constraint, horizon, "gamma", "replace", "paper", constants, False, private=False
    )

    def as_wdp(params: GarberHazanParams) -> WDPParams:
        # The noise is off: the "gamma" family's explicit non-private limit (no δ: that family refuses one).
        return WDPParams(float("inf"), None, params.lipschitz, params.strong_convexity, 0.5)

    def check(params: GarberHazanParams) -> None:
        inner.check(as_wdp(params))

    def init_fn(key: PRNGKey, params: GarberHazanParams) -> WDPCOCOLState:
        return inner.init(key, as_wdp(params))

    spec = Spec(private=False)
    return Learner(init_fn, inner.act, inner.update, check, inner.horizon, spec=spec, returns_info=inner.returns_info)
