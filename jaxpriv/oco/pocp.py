"""Private OCP by output perturbation (POCP) with implicit gradient descent, Jain, Kothari & Thakurta 2012."""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxpriv import _rng, _validate, declare, theory
from jaxpriv._base import Learner, NonfiniteInfo, PRNGKey, Spec, poison_past_horizon, zero_nonfinite
from jaxpriv.mechanisms import analytic_gaussian_sigma, clip_l2
from jaxpriv.mechanisms._accounting import _gdp_lower
from jaxpriv.mechanisms._sampler_floor import check_sampler_floor, pocp_sampler_floor
from jaxpriv.sets import ConstraintSet, require_projection

#: The largest noise scale ``c · 2L/H`` accepted: beyond it a float32 draw ``σ_t N(0, 1)`` can overflow.
MAX_NOISE_SCALE = 1e30

#: The least ``μ = 1/σ₁(ε, δ)`` accepted (a noise multiplier of at most 1e8 per unit sensitivity). Below it the
#: analytic Gaussian calibration cancels: its ``δ(ε)`` is a difference of two normal probabilities within ``μ`` of
#: 1/2, so the float64 ``σ₁`` loses its digits (at ``δ = 1e-20`` it is 500 times too small) or its search does not
#: end. It is checked on the certified lower end ``_gdp_lower(ε, δ) <= μ``, before any calibration runs: only a
#: tiny ε with a tiny δ reach it (``ε <= 1e-9`` with ``δ <= 1e-10``, say).
MIN_MU = 1e-8

#: The least δ accepted: float32's smallest normal number; below it δ is 0 in the traced calibration (XLA flushes
#: subnormals), which gives an infinite noise scale (``δ = 1e-300``: every release NaN and dropped).
MIN_DELTA = float(np.finfo(np.float32).tiny)


class POCPParams(NamedTuple):
    """Params of POCP (IGD instance). Both budget fields are required; neither has a non-private limit.

    Attributes:
      epsilon: ε of (ε, δ)-DP, finite and ``> 0``.
      delta: δ of (ε, δ)-DP, in ``(0, 1)``.
      lipschitz: ``L > 0``, the gradient bound the calibration assumes; every gradient is clipped to it.
      strong_convexity: ``H > 0``, the losses' strong convexity (IGD's step ``η_t = 1/(Ht)``).
    """

    epsilon: ArrayLike | None = None
    delta: ArrayLike | None = None
    lipschitz: ArrayLike = 1.0
    strong_convexity: ArrayLike = 1.0


class POCPState(NamedTuple):
    x: jax.Array  # shape=[d], x̂_t: the non-private IGD iterate (never released)
    release: jax.Array  # shape=[d], x̃_t = x̂_t + b_t, the private release; the point played is Π_C(x̃_t)
    scale: jax.Array  # shape=(), c · 2L/H: σ_t = scale / t
    strong_convexity: jax.Array  # shape=(), H
    lipschitz: jax.Array  # shape=(), the clipping bound L


def _require_budget(params: POCPParams) -> None:
    """Both ε and δ are given: ``None`` never means "no privacy"."""
    _validate.budget("pocp", "gaussian", params, needs=("epsilon", "delta"), guarantee="(ε, δ)-DP")


def pocp_bound(params: POCPParams, env_params: Any, spec: Spec, horizon: int) -> float | None:
    """POCP's (IGD instance) expected-regret bound at its (ε, δ) (``theory.pocp_regret_bound``)."""
    del env_params
    c, p = declare.arguments(spec)["constraint"], params
    return float(
        theory.pocp_regret_bound(horizon, c.dim, p.lipschitz, p.strong_convexity, c.diameter, p.epsilon, p.delta)
    )


def _example(horizon: int, dim: int) -> declare.ExampleRun:
    """``pocp`` at one small configuration (``jaxpriv.testing.learner_examples``)."""
    from jaxpriv.envs._settings import setting

    s = setting("ball", dim)
    return pocp(horizon, s.constraint), s.env, POCPParams(epsilon=1.0, delta=1e-5, lipschitz=2.0), s.params


@declare.learner("pocp", params=POCPParams, bound=pocp_bound, example=_example)
def pocp(horizon: int, constraint: ConstraintSet) -> Learner:
    """POCP (Algorithm 1, "Private OCP") with implicit gradient descent (IGD) as its OCP algorithm.

    POCP runs a non-private OCP algorithm whose iterates have *linearly decreasing sensitivity* (the
    iterate ``x̂_{t+1}`` moves by at most ``λ/t`` when one loss is replaced) on the losses, and plays each
    iterate perturbed by Gaussian noise calibrated to that sensitivity: ``x̃_t = x̂_t + b_t``,
    ``b_t ~ N(0, σ_t² I_d)``. The instance here is the paper's IGD for ``H``-strongly convex losses,
    ``x̂_{t+1} = argmin_{x∈C} ½||x - x̂_t||² + η_t f̃_t(x)``, ``η_t = 1/(Ht)``, ``x̂_1 = Π_C(0)``, on the
    surrogate ``f̃_t(x) = <g_t, x - w_t> + (H/2)||x - w_t||²`` built from the feedback: ``w_t = Π_C(x̃_t)``
    is the point played and ``g_t = clip_L(∇f_t(w_t))``. The step is an isotropic quadratic, so exactly

        x̂_{t+1} = Π_C(x̂_t + (w_t - g_t/H - x̂_t)/(t + 1)).

    (The paper runs IGD on ``f_t`` itself; with gradient feedback the learner sees ``f_t`` only through
    ``g_t``, and ``f̃_t`` is the strongly convex lower bound of ``f_t`` that it determines. For the
    quadratics ``(H/2)||w - z_t||²`` of ``envs.quadratic_stream`` they coincide up to a constant, so the
    steps are the paper's IGD on ``f_t``.) The played point is projected onto ``C``, post-processing of
    the release that only moves it closer to ``x̂_t``.

    Privacy: (ε, δ)-DP for loss sequences that differ in one loss replaced (the paper's neighbouring
    relation), against adaptive adversaries. Sensitivity: a replaced loss at step ``τ`` changes the
    clipped ``g_τ`` by at most ``2L``, so ``x̂_{τ+1}`` by ``<= 2L/(H(τ+1))``; each later step maps
    ``x̂_s`` through ``Π_C(s x̂_s/(s+1) + const)``, a ``s/(s+1)``-contraction, so
    ``||x̂_t - x̂'_t|| <= 2L/(Ht) = λ/t`` with ``λ = 2L/H`` for every ``τ < t``
    (``theory.pocp_sensitivity``). The noise follows the paper's schedule, proportional to that
    sensitivity: ``σ_t = c λ/t`` for ``t = 2..T`` (``x̂_1`` reads no data and is played exactly). The
    paper composes the ``T`` per-step Gaussian releases with the advanced composition theorem; here the
    ``T - 1`` releases, each of noise multiplier ``σ_t/Δ_t = c``, compose exactly into one Gaussian
    mechanism with ``μ = sqrt(T - 1)/c`` (Dong, Roth & Su 2022, Cor. 3.3), and ``c`` is set by the
    analytic Gaussian mechanism (Balle & Wang 2018, Thm. 8) so that ``μ`` is (ε, δ)-DP: the same
    guarantee with less noise (``theory.pocp_noise_multiplier``). Gradients are clipped to ``L`` and a
    gradient with a NaN / ±inf entry is replaced by zero and counted (``NonfiniteInfo.nonfinite``), so the
    guarantee holds whatever the environment feeds back. The float32 normal sampler's bounded support
    (``|N| <= 6.45``) costs a δ floor: a neighbour shifts each of the ``T - 1`` releases by ``1/c`` unit
    normals, and a release within ``1/c`` of the support's end is one the neighbour cannot produce, so
    the guarantee holds only with ``δ >= 1 - (1 - g_d(1/c))^(T-1)`` (``mechanisms._sampler_floor.
    pocp_sampler_floor``, declared in ``spec.sampler_floor``). δ is POCP's own claimed parameter:
    ``check`` refuses a floor above ``min(δ, SAMPLER_DELTA_MAX)`` (about 7e-8 at ε = 1, T = 2¹⁶, d = 2,
    so ``δ = 2⁻³²`` is refused there; issue 45).

    Regret (``theory.pocp_regret_bound``, proof there): for ``H``-strongly convex losses with
    ``||∇f_t|| <= L`` on ``C`` (diameter ``D``),
    ``E[Regret(T)] <= H D²/2 + (L + HD)² ln(T+1)/(2H) + L sqrt(d) c (2L/H) ln T``, ``c ≈ sqrt(T) σ₁(ε, δ)``:
    ``Õ(sqrt(d T log(1/δ))/ε)``, the ``Õ(sqrt(T) log(1/δ)/ε)`` of the paper (Smith & Thakurta 2013,
    Table 1, quote ``Õ(sqrt(pT) log²(1/δ)/ε)``).

    Against PFTAL (ε-DP, ``O(log^2.5 T/ε)``): Smith & Thakurta's Table 1 sets the bounds side by side
    without fixing δ. The comparisons of this library (``benchmarks/jkt12_vs_pftal.py``, the study
    ``jkt12_vs_pftal``) run both at the same ε and POCP at ``δ = 1e-6``, a δ the float32 samplers can
    give (until issue 45: ``1/T²``, below the floor); as ε-DP implies (ε, δ)-DP for every δ, PFTAL is
    then the more private of the two.

    Args:
      horizon: ``T``, fixes the noise multiplier (the composition runs over ``T - 1`` releases).
      constraint: the set ``C`` (its projection is used).

    Returns:
      A ``Learner`` with params ``POCPParams``; feedback is the gradient at the played point.

    Raises:
      ValueError: ``constraint`` has no projection or ``horizon < 1``; ``check``: a missing ε or δ,
        ε not finite and ``> 0`` (or below 1e-30), δ outside ``(0, 1)`` (or below float32's smallest normal,
        ``MIN_DELTA``), ``L`` or ``H`` not finite and ``> 0``, a noise scale ``c·2L/H`` beyond
        ``MAX_NOISE_SCALE`` (float32 noise would overflow), a noise multiplier beyond ``1/MIN_MU`` (the
        calibration cancels), or a samplers' δ floor above ``min(δ, SAMPLER_DELTA_MAX)``.

    References:
      Jain, Kothari & Thakurta, Differentially Private Online Learning, COLT 2012 (JMLR W&CP 23:24.1-24.34),
      Algorithm 1 (POCP) and its IGD instance.
    """
    require_projection(constraint)
    horizon = _validate.horizon(horizon)
    dim = constraint.dim
    sampler_floor = pocp_sampler_floor(horizon, dim)

    def check(params: POCPParams) -> None:
        _require_budget(params)
        _validate.numeric("epsilon", params.epsilon)
        _validate.positive("epsilon", params.epsilon, allow_inf=False)
        _validate.numeric("delta", params.delta)
        _validate.in_open_interval("delta", params.delta, 0.0, 1.0)
        _validate.budget_value("epsilon", params.epsilon)  # a float32-representable ε (1e-45 is 0 there)
        _validate.positive("lipschitz", params.lipschitz, allow_inf=False)
        _validate.positive("strong_convexity", params.strong_convexity, allow_inf=False)
        values = [_validate._concrete(v) for v in (params.epsilon, params.delta, params.lipschitz)]
        h = _validate._concrete(params.strong_convexity)
        if any(v is None for v in values) or h is None:
            return
        eps, delta, lip = values
        if np.any(delta < MIN_DELTA):
            raise ValueError(
                f"pocp: delta={params.delta!r} is below float32's smallest normal number {MIN_DELTA:.3g}: the traced "
                "calibration would see delta = 0 and an infinite noise scale (every release NaN and dropped)"
            )
        e64, d64 = np.broadcast_arrays(np.asarray(eps, np.float64), np.asarray(delta, np.float64))
        mu_low = np.asarray(_gdp_lower(e64, d64))  # a certified lower end of μ = 1/σ₁(ε, δ)
        if np.any(mu_low < MIN_MU):
            raise ValueError(
                f"pocp: epsilon={params.epsilon!r}, delta={params.delta!r} need a Gaussian noise multiplier above "
                f"1/MIN_MU = {1 / MIN_MU:.0e} per unit sensitivity, where the analytic Gaussian calibration "
                "cancels in float64 (its σ would be wrong): give a larger epsilon or delta"
            )
        unit = analytic_gaussian_sigma(eps, delta, 1.0)
        scale = np.sqrt(max(horizon - 1, 0)) * unit * 2.0 * lip / h
        if np.any(scale > MAX_NOISE_SCALE):
            raise ValueError(
                f"epsilon={params.epsilon!r}, delta={params.delta!r} give POCP a noise scale c·2L/H up to "
                f"{float(np.max(scale)):.3g} (T={horizon}): beyond {MAX_NOISE_SCALE:g}, float32 noise overflows"
            )
        check_sampler_floor("pocp", params, sampler_floor)  # the bounded normal's δ floor, at most δ (issue 45)

    def init_fn(key: PRNGKey, params: POCPParams) -> POCPState:
        del key
        _require_budget(params)
        lip = jnp.asarray(params.lipschitz, jnp.float32)
        h = jnp.asarray(params.strong_convexity, jnp.float32)
        multiplier = jnp.asarray(theory.pocp_noise_multiplier(horizon, params.epsilon, params.delta), jnp.float32)
        scale = multiplier * theory.pocp_sensitivity(lip, h)  # float32 under JAX_ENABLE_X64 too
        x1 = constraint.project(jnp.zeros(dim, jnp.float32))
        return POCPState(x1, x1, scale, h, lip)  # x̂_1 reads no data: played exactly

    def act_fn(key: PRNGKey, state: POCPState, t: jax.Array) -> jax.Array:
        del key, t
        return constraint.project(state.release)

    def update_fn(
        key: PRNGKey, state: POCPState, action: jax.Array, grad: jax.Array, t: jax.Array
    ) -> tuple[POCPState, NonfiniteInfo]:
        g, bad = zero_nonfinite(jnp.asarray(grad, jnp.float32))
        g = clip_l2(g, state.lipschitz)
        tf = jnp.asarray(t, jnp.float32)
        target = jnp.asarray(action, jnp.float32) - g / state.strong_convexity  # the surrogate's minimiser
        x = constraint.project(state.x + (target - state.x) / (tf + 1.0))
        sigma = state.scale / (tf + 1.0)  # the release at step t + 1
        release = poison_past_horizon(x + sigma * _rng.normal(key, (dim,), jnp.float32), t + 1, horizon)
        return state._replace(x=x, release=release), NonfiniteInfo(bad)

    spec = Spec(private=True, sampler_floor=sampler_floor)
    return Learner(init_fn, act_fn, update_fn, check, horizon, spec=spec, returns_info=True)
