"""WDP-COCOL: window-private continual online convex optimisation with a local linear oracle (Algorithm 2).

From the window-DP projection-free COCO paper (WI-IAT 2020), §III-D, Algorithm 2;
docs/algorithms/window.md, 'Decoding choices'.
No projection: one local-linear-oracle call and one convex combination per step.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxpriv import _validate, declare
from jaxpriv._base import Learner, PRNGKey, Spec, mechanism_step_count, poison_past_horizon, static_args
from jaxpriv.mechanisms import (
    WINDOW_NOISE_FAMILIES,
    DyadicSums,
    NoiseFamily,
    WindowTreeParams,
    WindowTreeState,
    clip_l2,
    dyadic_init,
    noise_family,
    tree_depth,
    window_depth,
    window_noise_bound,
    window_tree,
)
from jaxpriv.mechanisms._sampler_floor import check_sampler_floor, tree_sampler_floor
from jaxpriv.mechanisms._window_tree import check_window, check_window_budget
from jaxpriv.oco import _floor
from jaxpriv.oco._shared import (
    WDPParams,
    check_wdp_params,
    dyadic_prefix_sum,
    sensitivity_rule,
    start_point,
    window_sensitivity,
)
from jaxpriv.oco.wdp_cocop import WDPInfo
from jaxpriv.sets import ConstraintSet, require_local_oracle

CONSTANTS = ("proof", "paper")


class WDPCOCOLState(NamedTuple):
    x: jax.Array  # shape=[d], x̂_t, the point played next
    x1: jax.Array  # shape=[d], x̂_1, the centre of the regulariser (C₀μ/2)||x - x̂_1||²
    points: DyadicSums  # exact dyadic sums of the points played (S_t)
    strong_convexity: jax.Array  # shape=(), μ
    radius: jax.Array  # shape=(), R: the LLOO radius at t is r_t = R/(t + C₀)
    grads: WindowTreeState | DyadicSums  # window-private gradient sums (exact sums when not private)
    noise_bound: jax.Array  # shape=(), N: the noise bound the radius is built on (0 when not private)


def cocol_constants(rho: float, constants: str) -> tuple[float, float]:
    """``(α, C₀)`` of Algorithm 2: ``α = 1/(2ρ²)``; ``C₀ = 8ρ²`` (``"proof"``, derived) or ``2⁵ρ²`` (``"paper"``)."""
    alpha = 1.0 / (2.0 * rho * rho)
    c0 = (8.0 if constants == "proof" else 32.0) * rho * rho
    return alpha, c0


def paper_window_constant(
    noise: NoiseFamily | str,
    epsilon: jax.Array,
    delta: jax.Array,
    beta: jax.Array,
    dim: int,
    depth: int,
    alpha: float,
) -> jax.Array:
    """``C_W`` of Algorithm 2, line 2, as decoded (docs/algorithms/window.md, 'Decoding choices'),
    with ``k_W = ceil(log2 W) + 1`` for ``log2 W``.

    Gamma: ``2α d k_W^{1.5} ln(d/β)/ε``; Gaussian: ``2α sqrt(d) k_W^{1.5} ln(2/δ) sqrt(ln(2d/β))/ε``.
    (``k_W`` rather than the printed ``log2 W``, which vanishes at ``W = 1``.)
    """
    eps = jnp.asarray(epsilon, jnp.float32)
    beta = jnp.asarray(beta, jnp.float32)
    if not noise_family(noise, WINDOW_NOISE_FAMILIES).sub_gaussian:  # Gamma's exponential tail; else Gaussian
        return 2.0 * alpha * dim * depth**1.5 * jnp.log(dim / beta) / eps
    delta = jnp.asarray(delta, jnp.float32)
    return 2.0 * alpha * np.sqrt(dim) * depth**1.5 * jnp.log(2.0 / delta) * jnp.sqrt(jnp.log(2.0 * dim / beta)) / eps


def local_oracle_learner(
    horizon: int,
    constraint: ConstraintSet,
    window: int,
    noise: NoiseFamily | str,
    sensitivity: str,
    calibration: str,
    constants: str,
    round_window: bool,
    private: bool,
) -> Learner:
    """The shared body of ``wdp_cocol`` (``private=True``) and ``garber_hazan`` (``private=False``)."""
    require_local_oracle(constraint)
    horizon = _validate.horizon(horizon)
    check_window(window, horizon, round_window)
    noise = noise_family(noise, WINDOW_NOISE_FAMILIES)  # the family object, kept by the closures
    sensitivity = sensitivity_rule(sensitivity)
    constants = _validate.choice("constants", constants, CONSTANTS)
    dim = constraint.dim
    rho = float(constraint.local_oracle_rho)
    alpha, c0 = cocol_constants(rho, constants)
    diameter = float(constraint.diameter)
    depth = tree_depth(horizon)
    k_w = window_depth(window, horizon)
    sampler_floor = tree_sampler_floor("window_tree", noise, k_w, dim, calibration) if private else None
    lloo = constraint.local_linear_oracle
    tree = None
    if private:
        neighbouring = "add_remove" if sensitivity == "paper_add_remove" else "replace"
        tree = window_tree(horizon, dim, window, noise, neighbouring, calibration, round_window)
    x1 = start_point(constraint)

    release_std = _floor.ReleaseStd(tree, horizon) if private else None

    def check(params: WDPParams) -> None:
        check_wdp_params(params, noise, calibration, k_w, "wdp_cocol")
        check_sampler_floor("wdp_cocol", params, sampler_floor)  # the samplers' δ floor
        delta = 1.0 if params.delta is None else params.delta
        values = _floor.concrete(params.epsilon, delta, params.lipschitz, params.strong_convexity)
        if private and values is not None:  # the budget floor (docs/guide/sharp_edges.md): ĝ_t must stay finite
            # The oracle's direction ĝ_t + μ(t x̂_t - S_t) + C₀μ(x̂_t - x̂_1): a finite one keeps x̂ in the set (a
            # radius that overflows to inf is harmless: the oracle then moves all the mass, min(·, total)).
            budget, delta, lip, mu = values
            clip = np.asarray(window_sensitivity(sensitivity, lip, mu, diameter), np.float64)
            delta = None if params.delta is None else delta
            std = release_std(WindowTreeParams(budget, delta, clip))
            fixed = horizon * clip + mu * (2.0 * horizon + c0) * constraint.radius
            term = _floor.release_term(std, dim, 1.0, fixed, 1.0, "the oracle's direction ĝ_t + μ(t x̂_t - S_t)")
            _floor.check("wdp_cocol", "epsilon", budget, [term], f"T={horizon}, d={dim}, W={window}, noise='{noise}'")

    def init_fn(key: PRNGKey, params: WDPParams) -> WDPCOCOLState:
        check_window_budget("wdp_cocol", params, noise)
        mu = jnp.asarray(params.strong_convexity, jnp.float32)
        lip = jnp.asarray(params.lipschitz, jnp.float32)
        g = lip + mu * diameter  # G = L + μD, the Lipschitz constant of the surrogates on P
        clip = window_sensitivity(sensitivity, lip, mu, diameter)
        if private:
            grads = tree.init(key, WindowTreeParams(params.epsilon, params.delta, clip))
            bound = window_noise_bound(noise, grads.scale, k_w, dim, horizon, params.beta)
        else:
            grads = dyadic_init(depth, dim)
            bound = jnp.zeros((), jnp.float32)
        if constants == "proof":  # R = [16ρ²G + 10(1 + ρ)N]/μ (the proven constants)
            radius = (16.0 * rho * rho * g + 10.0 * (1.0 + rho) * bound) / mu
        else:  # r_t = C₁/(μ(t + C₀)), C₁ = 2⁶ρ²G(1 + C_W) (reading 1 of line 6)
            c_w = (
                paper_window_constant(noise, params.epsilon, params.delta, params.beta, dim, k_w, alpha)
                if private
                else 0.0
            )
            radius = 64.0 * rho * rho * g * (1.0 + c_w) / mu
        return WDPCOCOLState(
            x=x1,
            x1=x1,
            points=dyadic_init(depth, dim),
            strong_convexity=mu,
            radius=jnp.asarray(radius, jnp.float32),
            grads=grads,
            noise_bound=jnp.asarray(bound, jnp.float32),
        )

    def act_fn(key: PRNGKey, state: WDPCOCOLState, t: jax.Array) -> jax.Array:
        del key, t
        return state.x

    def update_fn(key: PRNGKey, state: WDPCOCOLState, action: jax.Array, grad: jax.Array, t: jax.Array):
        del action  # the played point is state.x
        if private:
            # zeroes a non-finite input (bad), clips, adds noise
            grads, g_hat, bad = mechanism_step_count(tree, key, state.grads, grad, t)
            noise_norm = jnp.sqrt(jnp.sum((g_hat - grads.total) ** 2))
        else:
            grad = clip_l2(jnp.asarray(grad, jnp.float32), jnp.float32(jnp.inf))
            grads, g_hat = dyadic_prefix_sum(state.grads, grad, t)
            g_hat = poison_past_horizon(g_hat, t, horizon)
            noise_norm = jnp.zeros((), jnp.float32)
            bad = jnp.zeros((), jnp.int32)  # exact sums: nothing is zeroed (Garber–Hazan)
        x, mu = state.x, state.strong_convexity
        tf = jnp.asarray(t, jnp.float32)
        points, total_x = dyadic_prefix_sum(state.points, x, t)
        # ∇J̃_t(x̂_t) = ĝ_t + μ(t x̂_t - S_t) + C₀μ(x̂_t - x̂_1) (eq. (18); LLOO is scale-free).
        direction = g_hat + mu * (tf * x - total_x) + c0 * mu * (x - state.x1)
        p = lloo(x, state.radius / (tf + c0), direction)  # Algorithm 2, lines 6–7
        x_next = (1.0 - alpha) * x + alpha * p  # line 8
        return state._replace(x=x_next, points=points, grads=grads), WDPInfo(bad, noise_norm)

    # wdp_cocol's declaration records the other arguments; Garber–Hazan keeps its own spec.
    spec = Spec(private=private, static=static_args(private=private), sampler_floor=sampler_floor)
    return Learner(init_fn, act_fn, update_fn, check, horizon, spec=spec, returns_info=True)


def _example(horizon: int, dim: int) -> declare.ExampleRun:
    """``wdp_cocol`` at one small configuration (``jaxpriv.testing.learner_examples``)."""
    from jaxpriv.envs._settings import setting

    s = setting("simplex", dim)
    return wdp_cocol(horizon, s.constraint, 16), s.env, WDPParams(1.0, lipschitz=2.0), s.params


@declare.learner("wdp_cocol", params=WDPParams, example=_example)
def wdp_cocol(
    horizon: int,
    constraint: ConstraintSet,
    window: int,
    noise: NoiseFamily | str = "gamma",
    sensitivity: str = "replace",
    calibration: str = "paper",
    constants: str = "proof",
    round_window: bool = False,
) -> Learner:
    """WDP-COCOL (Algorithm 2): window-private FTAL-type conditional gradient, no projection.

    Each step feeds ``∇f_t(x̂_t)`` to the window tree, takes the gradient of the private
    surrogate ``J̃_t(x) = <ĝ_t, x> + (μ/2) sum_{τ<=t} ||x - x̂_τ||² + (C₀μ/2)||x - x̂_1||²``
    (eq. (18)) at ``x̂_t``, ``c_t = ĝ_t + μ(t x̂_t - S_t) + C₀μ(x̂_t - x̂_1)``, makes one call
    ``p_t = LLOO(x̂_t, r_t, c_t)`` of the set's local linear oracle (Assumption 1, ``ρ`` the
    set's ``local_oracle_rho``) and plays ``x̂_{t+1} = (1 - α)x̂_t + αp_t`` (lines 5–8).
    ``x̂_{t+1}`` is a convex combination of points of ``P``: it never leaves the polytope,
    and nothing is projected. ``x̂_1`` is the set's ``inner_center`` (the barycentre of the
    simplex, the centre of the L1 ball), else the linear oracle's vertex for ``g = 0``.

    Constants. The printed ones are garbled in the available text of the paper
    (docs/algorithms/window.md, 'Decoding choices'). ``constants``:

    * ``"proof"`` (default): derived for jaxpriv, with a proof (the tracking analysis of Garber &
      Hazan with an approximate oracle): ``α = 1/(2ρ²)``, ``C₀ = 8ρ²``,
      ``r_t = R/(t + C₀)``, ``R = [16ρ²G + 10(1 + ρ)N]/μ``, ``G = L + μD``, ``N`` the noise bound
      ``window_noise_bound(noise, scale, k_W, d, T, β)`` (``max_t ||ĝ_t - g_t|| <= N`` with
      probability ``>= 1 - β``). On that event ``||x̂_t - argmin_P F_t|| <= r_t`` at every ``t`` and
      ``Regret(T) <= [16ρ²G² + 10(1 + ρ)G N] ln(1 + T/C₀)/μ + C₀μD²/2``
      (``theory.wdp_cocol_regret_inequality``). Default because it is proven.
    * ``"paper"``: the printed constants as decoded (medium/low confidence):
      ``C₀ = 2⁵ρ²``, ``C₁ = 2⁶ρ²G(1 + C_W)``, ``r_t = C₁/(μ(t + C₀))``, ``C_W`` of line 2
      (``paper_window_constant``). No proof is available for them (the supplement was not).

    Privacy (Theorem 5): the window tree of ``oco.wdp_cocop`` (same noise, same sensitivity
    rules, same calibrations); everything after it is post-processing. Window ε-DP
    (``"gamma"``) or window (ε, δ)-DP (``"gaussian"``), window ``W``, event level. Defaults:
    Gamma noise, window ε-DP for one loss replaced (``sensitivity="replace"``: clip ``L``,
    sensitivity ``2L``; the paper's Definition 4); ``sensitivity="paper_add_remove"`` is the
    paper's clip ``L + μD`` calibrated for one loss added or removed (up to ``2L/(L + μD)·ε``
    under replace-one).

    Regret (Theorems 6, 7): ``O(d G² log^{1.5}W ln(d/β) ln T/(με))`` (Gamma),
    ``O(max(sqrt(d)ε, log^{1.5}W ln(1/δ) sqrt(ln(d/β))) sqrt(d) G² ln T/(με))`` (Gaussian), at
    ``T > W``; the proven parameterisation carries one more factor ``ρ`` on the noise term
    (docs/algorithms/window.md, 'Decoding choices').

    Args:
      horizon: ``T``; declared.
      constraint: a polytope with a local linear oracle (``sets.simplex``, ``sets.l1_ball``).
      window: ``W >= 1``, a power of two or ``>= T`` (``round_window`` rounds it up).
      noise: ``"gamma"`` or ``"gaussian"``.
      sensitivity: ``"replace"`` (clip ``L``, sensitivity ``2L``) or ``"paper_add_remove"``
        (clip and sensitivity ``L + μD``).
      calibration: Gaussian σ, ``"paper"`` (Lemma 3) or ``"composition"`` (analytic Gaussian).
      constants: ``"proof"`` (derived, proven) or ``"paper"`` (the printed constants, decoded).
      round_window: round a ``W`` that is not a power of two up to one.

    Returns:
      A ``Learner`` with params ``WDPParams`` (``beta`` sets ``N``); feedback is the gradient.

    Raises:
      ValueError: a set without a local linear oracle, ``W < 1``, ``W`` not a power of two, a bad
        static argument (``sensitivity="paper"``: renamed); ``check``: a missing or wrong-family
        budget (also in ``init``), ``μ <= 0``, ``L < 0``, ``ε <= 0`` or
        below the learner's floor (where its float32 arithmetic breaks, docs/guide/sharp_edges.md),
        ``δ`` or ``β`` outside
        ``(0, 1)``, an ε beyond the ``"paper"`` calibration's range.

    References:
      Window-DP projection-free COCO (WI-IAT 2020), Algorithm 2, Theorems 5–7; Garber & Hazan,
      A linearly convergent conditional gradient algorithm with applications to online and
      stochastic optimization, SIAM J. Optim. 26(3), 2016.
    """
    return local_oracle_learner(
        horizon, constraint, window, noise, sensitivity, calibration, constants, round_window, private=True
    )
