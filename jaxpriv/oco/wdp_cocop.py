"""WDP-COCOP: window-private continual online convex optimisation with a projection (Algorithm 1).

From the window-DP projection-free COCO paper (WI-IAT 2020), §III-C, Algorithm 1;
docs/algorithms/window.md, 'Decoding choices'.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxpriv import _validate, declare
from jaxpriv._base import Learner, PRNGKey, Spec, mechanism_step_count, reductions
from jaxpriv.mechanisms import (
    WINDOW_NOISE_FAMILIES,
    DyadicSums,
    NoiseFamily,
    WindowTreeParams,
    WindowTreeState,
    dyadic_init,
    noise_family,
    tree_depth,
    window_depth,
    window_tree,
)
from jaxpriv.mechanisms._sampler_floor import check_sampler_floor, tree_sampler_floor
from jaxpriv.mechanisms._window_tree import check_window, check_window_budget
from jaxpriv.oco import _floor
from jaxpriv.oco._shared import (
    WDPParams,
    check_wdp_params,
    dyadic_prefix_sum,
    leader_point,
    sensitivity_rule,
    window_sensitivity,
)
from jaxpriv.sets import ConstraintSet, require_projection


class WDPCOCOPState(NamedTuple):
    w: jax.Array  # shape=[d], the point x̂_{t+1} played next
    points: DyadicSums  # exact dyadic sums of the points played (S_t)
    strong_convexity: jax.Array  # shape=()
    tree: WindowTreeState  # window-private sums of the gradients


class WDPInfo(NamedTuple):
    """The Info of WDP-COCOP and WDP-COCOL at a step (``update -> (state, info)``; never released).

    Attributes:
      nonfinite: int32, the gradient the window tree replaced by zero at this step (0 or 1), summed over time.
      noise_max: ``||ĝ_t - g_t||_2``, the norm of the noise in this step's released gradient sum, reduced
        by its running maximum: at step ``t`` the engine reports ``N_t = max_{s<=t} ||ĝ_s - g_s||_2``, the
        realised noise of the regret bound (``theory.wdp_cocop_regret_inequality``).
    """

    nonfinite: jax.Array
    noise_max: jax.Array
    reductions = reductions(nonfinite="sum", noise_max="max")


def _example(horizon: int, dim: int) -> declare.ExampleRun:
    """``wdp_cocop`` at one small configuration (``jaxpriv.testing.learner_examples``)."""
    from jaxpriv.envs._settings import setting

    s = setting("simplex", dim)
    return wdp_cocop(horizon, s.constraint, 16), s.env, WDPParams(1.0, lipschitz=2.0), s.params


@declare.learner("wdp_cocop", params=WDPParams, example=_example)
def wdp_cocop(
    horizon: int,
    constraint: ConstraintSet,
    window: int,
    noise: NoiseFamily | str = "gamma",
    sensitivity: str = "replace",
    calibration: str = "paper",
    round_window: bool = False,
) -> Learner:
    """WDP-COCOP (Algorithm 1): FTAL on the window tree's private gradient sums, one projection per step.

    ``x̂_{t+1} = Π_C(S_t/t - ĝ_t/(μt))`` (eq. (10)): the exact minimiser over ``C`` of
    ``J_t(x) = <ĝ_t, x> + (μ/2) sum_{τ<=t} ||x - x̂_τ||²`` (eq. (9)), where ``ĝ_t`` is the
    window tree's release of ``sum_{τ<=t} ∇f_τ(x̂_τ)`` and ``S_t = sum_{τ<=t} x̂_τ`` (public,
    exact dyadic sums). ``x̂_1 = Π_C(0)``, as in ``oco.pftal``.

    Privacy (Theorems 1, 2; event level, adaptive adversaries, window ``W``): window ε-DP
    with Gamma node noise (Option I, ``noise="gamma"``, ``||η|| ~ Γ(d, k_W s/ε)``, eq. (15))
    or window (ε, δ)-DP with Gaussian node noise (Option II, ``"gaussian"``,
    ``σ² = 8s² k_W² ln²(2/δ)/ε²``, eq. (16), accepted for ε where that σ is (ε, δ)-DP;
    ``calibration="composition"`` for the smaller, exact analytic-Gaussian σ,
    a standard choice not the paper's),
    ``k_W = ceil(log2 W) + 1``, ``s`` the sensitivity of one gradient under the rule below.
    The points are post-processing of the releases. The sensitivity rule (``sensitivity``):

    * ``"replace"`` (default): gradients clipped to ``L`` and the tree calibrated to the
      replace-one sensitivity ``s = 2L`` (``window_tree(neighbouring="replace")``, the rule of
      ``oco.pftal``): window privacy for one loss replaced by any other, the neighbouring
      relation of the paper's Definitions 4 and 6.
    * ``"paper_add_remove"``: the paper's Theorems 1, 2: gradients clipped to ``Δ₂ = L + μD``
      (``D`` the set's diameter) and the tree calibrated to ``s = Δ₂`` (copied from Smith &
      Thakurta). It covers one loss removed or added (its gradient set to zero); a replaced
      loss moves a gradient by up to ``2L``, more than ``Δ₂`` when ``μD < L``, so under
      Definition 4 it delivers up to ``2L/(L + μD)·ε`` (docs/algorithms/window.md, 'Decoding choices').
      (``"paper"``, its former name, raises a ``ValueError`` naming this one.)

    Defaults: Gamma noise, window ε-DP under replace-one (``s = 2L``). ``noise="gaussian"``:
    window (ε, δ)-DP under replace-one with Lemma 3's σ.

    ``W >= T`` is full-stream privacy: the window tree is the binary tree over ``T``, and with
    ``sensitivity="replace"`` and ``"gamma"`` noise the learner has the distribution of
    ``oco.pftal(horizon, constraint, "gamma")`` (the noise is drawn per node from other keys:
    equal in distribution, not bit for bit).

    Regret (Theorems 3, 4): ``O(d G² log^{1.5}W ln(d/β) ln T/(με))`` (Gamma) and
    ``O(sqrt(d) G² log^{1.5}W ln(1/δ) sqrt(ln(d/β)) ln T/(με))`` (Gaussian), ``G = L + μD``;
    deterministically given the realised noise, ``Regret(T) <= (G/μ)(2G + N_T)(1 + ln T)`` with
    ``N_T = max_t ||ĝ_t - g_t||`` (derived: docs/algorithms/window.md, 'Decoding choices';
    ``theory.wdp_cocop_regret_inequality``); the state
    reports ``N_t`` as a diagnostic (never released): its Info's ``noise_max`` (``WDPInfo``).

    Args:
      horizon: ``T``; declared (``run`` refuses a longer one).
      constraint: the set ``C``; needs a projection.
      window: ``W >= 1``, a power of two or ``>= T`` (``round_window`` rounds it up).
      noise: ``"gamma"`` (window ε-DP) or ``"gaussian"`` (window (ε, δ)-DP).
      sensitivity: ``"replace"`` (clip ``L``, sensitivity ``2L``) or ``"paper_add_remove"``
        (clip and sensitivity ``L + μD``).
      calibration: Gaussian σ, ``"paper"`` (eq. (16)) or ``"composition"`` (analytic Gaussian).
      round_window: round a ``W`` that is not a power of two up to one.

    Returns:
      A ``Learner`` with params ``WDPParams``; feedback is the gradient at the played point.
      With ``epsilon = inf`` it is FTAL (with the gradients clipped to the rule's bound).

    Raises:
      ValueError: a set without projection, ``W < 1``, ``W`` not a power of two, a bad static
        argument (``sensitivity="paper"``: renamed); ``check``: a missing or wrong-family budget
        (also in ``init``), ``μ <= 0``, ``L < 0``, ``ε <= 0`` or
        below the learner's floor (where its float32 arithmetic breaks, docs/guide/sharp_edges.md),
        ``δ`` outside ``(0, 1)``, an ε
        beyond the ``"paper"`` calibration's range.

    References:
      Window-DP projection-free COCO (WI-IAT 2020), Algorithm 1, Theorems 1–4; Smith &
      Thakurta 2013 (PFTAL); Hazan, Agarwal & Kale 2007 (FTAL).
    """
    require_projection(constraint)
    horizon = _validate.horizon(horizon)
    sensitivity = sensitivity_rule(sensitivity)
    neighbouring = "add_remove" if sensitivity == "paper_add_remove" else "replace"
    noise = noise_family(noise, WINDOW_NOISE_FAMILIES)  # the family object, kept by the closures
    tree = window_tree(horizon, constraint.dim, window, noise, neighbouring, calibration, round_window)
    depth = tree_depth(horizon)
    k_w = window_depth(check_window(window, horizon, round_window), horizon)
    sampler_floor = tree_sampler_floor("window_tree", noise, k_w, constraint.dim, calibration)
    diameter = float(constraint.diameter)

    release_std = _floor.ReleaseStd(tree, horizon)

    def check(params: WDPParams) -> None:
        check_wdp_params(params, noise, calibration, k_w, "wdp_cocop")
        check_sampler_floor("wdp_cocop", params, sampler_floor)  # the samplers' δ floor
        delta = 1.0 if params.delta is None else params.delta
        values = _floor.concrete(params.epsilon, delta, params.lipschitz, params.strong_convexity)
        if values is not None:  # the budget floor (docs/guide/sharp_edges.md): ĝ_t/μ must stay finite
            budget, delta, lip, mu = values
            clip = np.asarray(window_sensitivity(sensitivity, lip, mu, diameter), np.float64)
            delta = None if params.delta is None else delta
            mech_params = WindowTreeParams(budget, delta, clip)
            detail = f"T={horizon}, d={constraint.dim}, W={window}, noise='{noise}'"
            args = (release_std, mech_params, horizon, constraint.dim, constraint.radius, clip, mu, detail)
            _floor.check_ftal_leader("wdp_cocop", "epsilon", 1.0, *args)

    def init_fn(key: PRNGKey, params: WDPParams) -> WDPCOCOPState:
        check_window_budget("wdp_cocop", params, noise)
        mu = jnp.asarray(params.strong_convexity, jnp.float32)
        clip = window_sensitivity(sensitivity, params.lipschitz, mu, diameter)
        return WDPCOCOPState(
            w=constraint.project(jnp.zeros(constraint.dim, jnp.float32)),
            points=dyadic_init(depth, constraint.dim),
            strong_convexity=mu,
            tree=tree.init(key, WindowTreeParams(params.epsilon, params.delta, clip)),
        )

    def act_fn(key: PRNGKey, state: WDPCOCOPState, t: jax.Array) -> jax.Array:
        del key, t
        return state.w

    def update_fn(key: PRNGKey, state: WDPCOCOPState, action: jax.Array, grad: jax.Array, t: jax.Array):
        # zeroes a non-finite input (bad), clips, adds noise
        tree_state, g_hat, bad = mechanism_step_count(tree, key, state.tree, grad, t)
        noise_norm = jnp.sqrt(jnp.sum((g_hat - tree_state.total) ** 2))
        points, total_w = dyadic_prefix_sum(state.points, jnp.asarray(action, jnp.float32), t)
        w = constraint.project(leader_point(total_w, g_hat, state.strong_convexity, t))
        return state._replace(w=w, points=points, tree=tree_state), WDPInfo(bad, noise_norm)

    spec = Spec(private=True, sampler_floor=sampler_floor)
    return Learner(init_fn, act_fn, update_fn, check, horizon, spec=spec, returns_info=True)
