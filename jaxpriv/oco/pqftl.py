"""JKT12's PQFTL, as Smith & Thakurta (§1) and the window paper describe it — a reconstruction, not a transcription.

Private follow-the-leader for online linear regression: the Gram matrix ``Σ x xᵀ`` and the cross term ``Σ y x``
released by one Gaussian tree calibrated to (ε, δ)-DP exactly, one linear solve per step. Jain, Kothari & Thakurta
(COLT 2012) were out of reach; every choice the descriptions leave open is ours and marked as such
(docs/algorithms/baselines.md, 'Reconstructions').
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from jaxpriv import _validate, declare
from jaxpriv._base import Learner, NonfiniteInfo, PRNGKey, Spec, mechanism_step_count
from jaxpriv.mechanisms import TreeParams, analytic_gaussian_stddev, binary_tree, tree_depth
from jaxpriv.sets import ConstraintSet

__all__ = ["PQFTLParams", "PQFTLState", "pqftl", "pqftl_node_stddev", "pqftl_shift"]

#: The L2 norm every tree input ``(vec(x xᵀ), y x)`` is clipped to: ``sqrt(‖x‖⁴ + y²‖x‖²) <= √2``.
INPUT_BOUND = math.sqrt(2.0)
#: The failure probability of the shift ``pqftl_shift`` over the ``T`` steps (ours).
SHIFT_ALPHA = 0.05


class PQFTLParams(NamedTuple):
    """Params of ``pqftl``.

    Attributes:
      epsilon: ε of (ε, δ)-DP (``inf``: no noise; follow-the-regularised-leader, projected).
      delta: δ of (ε, δ)-DP, in ``(0, 1)`` (no default: a budget).
      regularization: ``λ₀ > 0``, the ridge of the non-private part (1, ours).
    """

    epsilon: ArrayLike
    delta: ArrayLike
    regularization: ArrayLike = 1.0


class PQFTLState(NamedTuple):
    """State of ``pqftl``.

    Attributes:
      tree: the Gaussian tree's state over ``(vec(x xᵀ), y x)``.
      w: shape=[d], the point played next.
      cross: shape=[d], ``b̃_t``, the tree's last release of ``Σ y x``.
      shift: shape=(), ``λ = λ₀ + 2Υ`` (``pqftl_shift``).
      floor: shape=(), ``λ₀/2``, the least eigenvalue the solve uses.
    """

    tree: Any
    w: jax.Array
    cross: jax.Array
    shift: jax.Array
    floor: jax.Array


def pqftl_node_stddev(epsilon: ArrayLike, delta: ArrayLike, horizon: int) -> jax.Array:
    """``σ``, each tree node's per-coordinate noise: the analytic Gaussian for the whole tree at (ε, δ) (derived here).

    One example enters at most ``D = ⌈log2 T⌉ + 1`` nodes, and replacing it moves each of them by at most
    ``2√2`` in L2 (inputs clipped to ``√2``): the vector of all node sums has L2 sensitivity ``2√2 √D``, and
    i.i.d. ``N(0, σ²)`` on it is the Gaussian mechanism, (ε, δ)-DP exactly for the analytic ``σ`` (Balle & Wang
    2018, Thm 8); with adaptively chosen inputs too (Gaussian differential privacy composes exactly).
    """
    return analytic_gaussian_stddev(epsilon, delta, 2.0 * INPUT_BOUND * math.sqrt(tree_depth(horizon)))


def pqftl_shift(sigma: ArrayLike, regularization: ArrayLike, horizon: int, dim: int) -> jax.Array:
    """``λ = λ₀ + 2Υ``, ``Υ = σ√D (4√d + 2 log(2T/α))``: Shariff & Sheffet's shift, so that ``Ã_t + λI ⪰ λ₀ I`` w.h.p.

    The noise of ``Ã_t`` is a sum of at most ``D`` node draws, entries of standard deviation ``<= σ√D``; the bound
    ``‖N‖ <= Υ`` is Shariff & Sheffet's (NeurIPS 2018, §4) with ``α = SHIFT_ALPHA`` (ours).
    """
    depth = tree_depth(horizon)
    upsilon = (
        jnp.asarray(sigma, jnp.float32)
        * math.sqrt(depth)
        * (4.0 * math.sqrt(dim) + 2.0 * math.log(2.0 * horizon / SHIFT_ALPHA))
    )
    return jnp.asarray(regularization, jnp.float32) + 2.0 * upsilon


# Smith & Thakurta state PQFTL's regret as poly(log T) only: no numeric bound declared.
def _example(horizon: int, dim: int) -> declare.ExampleRun:
    """``pqftl`` at one small configuration (``jaxpriv.testing.learner_examples``)."""
    from jaxpriv.envs._settings import setting

    s = setting("regression", dim)
    return pqftl(horizon, s.constraint), s.env, PQFTLParams(1.0, 1e-5), s.params


@declare.learner("pqftl", params=PQFTLParams, example=_example)
def pqftl(horizon: int, constraint: ConstraintSet) -> Learner:
    """After JKT12's PQFTL, as Smith & Thakurta and the window paper describe it — a reconstruction: (ε, δ)-DP FTL.

    [ST] §1: JKT12's one algorithm for a specific strongly convex problem, online linear regression, with
    poly(log T) regret; [W] Table I: (ε, δ)-DP, one linear equation per step. Ours ([REC]): losses
    ``f_t(w) = (<x_t, w> - y_t)²``, ``‖x_t‖ <= 1``, ``|y_t| <= 1``, ``w`` in the L2 ball ``C``;

    * one tree ``binary_tree(T, d² + d, "gaussian", "replace")`` releases ``(vec(A_t), b_t)``,
      ``A_t = Σ x xᵀ``, ``b_t = Σ y x``, every input clipped to L2 norm ``√2``; node noise ``N(0, σ²)``,
      ``σ = pqftl_node_stddev(ε, δ, T)``: the exact analytic-Gaussian calibration of the whole tree;
    * ``w_{t+1} = Π_C(M^{-1} b̃_t)``, ``M = sym(Ã_t) + λI``, ``λ = pqftl_shift`` (Shariff–Sheffet's shift on top
      of a ridge ``λ₀``): one symmetric solve per step (its eigenvalues floored at ``λ₀/2``, which the shift
      makes inactive w.p. ``>= 1 - α``), then the projection — the exact minimiser over the ball when
      ``M^{-1} b̃`` lies in it, an approximation otherwise (ours: one solve, as [W] says).

    Privacy: (ε, δ)-DP for the whole sequence of points, one example ``(x_t, y_t)`` replaced (the tree's release
    is the Gaussian mechanism above; the points are post-processing).

    Regret: poly(log T) in [ST] (stated in ``O(·)`` only: no numeric bound is registered).

    Args:
      horizon: ``T``.
      constraint: an ``l2_ball``.

    Returns:
      A ``Learner`` with params ``PQFTLParams`` for ``envs.regression_stream``; feedback ``(x_t, y_t)``.

    References:
      P. Jain, P. Kothari, A. Thakurta. Differentially Private Online Learning. COLT 2012 (not within reach);
      A. Smith, A. Thakurta, NeurIPS 2013, §1; O. Sheffet, R. Shariff, NeurIPS 2018, §4 (the shift).
    """
    horizon = _validate.horizon(horizon)
    if constraint.name != "l2_ball":
        raise ValueError(f"constraint must be an l2_ball, got {constraint.name!r}")
    dim = constraint.dim
    tree = binary_tree(horizon, dim * dim + dim, "gaussian", "replace")
    depth = tree_depth(horizon)
    s = 2.0 * INPUT_BOUND  # the tree's replace-one sensitivity (2Δ)

    def tree_params(params: PQFTLParams, sigma: Any) -> TreeParams:
        # the tree draws N(0, D s²/(2ρ)) per node: ρ = D s²/(2σ²) gives it exactly σ (ρ = inf at σ = 0)
        rho = depth * s**2 / (2.0 * jnp.square(jnp.asarray(sigma, jnp.float32)))
        return TreeParams(rho=rho, sensitivity=INPUT_BOUND)

    def check(params: PQFTLParams) -> None:
        _validate.numeric("epsilon", params.epsilon)
        _validate.budget_value("epsilon", params.epsilon)
        _validate.numeric("delta", params.delta)
        _validate.in_open_interval("delta", params.delta, 0.0, 1.0)
        _validate.positive("regularization", params.regularization, allow_inf=False)

    def init_fn(key: PRNGKey, params: PQFTLParams) -> PQFTLState:
        sigma = pqftl_node_stddev(params.epsilon, params.delta, horizon)
        return PQFTLState(
            tree=tree.init(key, tree_params(params, sigma)),
            w=jnp.zeros((dim,), jnp.float32),
            cross=jnp.zeros((dim,), jnp.float32),
            shift=pqftl_shift(sigma, params.regularization, horizon, dim),
            floor=0.5 * jnp.asarray(params.regularization, jnp.float32),
        )

    def act_fn(key: PRNGKey, state: PQFTLState, t: jax.Array) -> jax.Array:
        del key, t
        return state.w

    def update_fn(
        key: PRNGKey, state: PQFTLState, action: jax.Array, feedback: Any, t: jax.Array
    ) -> tuple[PQFTLState, NonfiniteInfo]:
        del action
        x = jnp.asarray(feedback.x, jnp.float32)
        y = jnp.asarray(feedback.y, jnp.float32)
        bad = ~(jnp.all(jnp.isfinite(x)) & jnp.isfinite(y))
        x = jnp.where(bad, 0.0, x)
        y = jnp.where(bad, 0.0, jnp.clip(y, -1.0, 1.0))
        x = x / jnp.maximum(1.0, jnp.linalg.norm(x))
        example = jnp.concatenate([jnp.outer(x, x).ravel(), y * x])
        tree_state, release, tree_bad = mechanism_step_count(tree, key, state.tree, example, t)
        a = release[: dim * dim].reshape(dim, dim)
        m = 0.5 * (a + a.T) + state.shift * jnp.eye(dim, dtype=jnp.float32)
        lam, q = jnp.linalg.eigh(m)
        w = q @ ((q.T @ release[dim * dim :]) / jnp.maximum(lam, state.floor))
        cross = release[dim * dim :]
        # the example replaced by zero, if any, here or by the tree (the step's Info: examples with a NaN / ±inf entry)
        return state._replace(tree=tree_state, w=constraint.project(w), cross=cross), NonfiniteInfo(
            bad.astype(jnp.int32) + tree_bad
        )

    spec = Spec(private=True)
    return Learner(init_fn, act_fn, update_fn, check, horizon, spec=spec, returns_info=True)
