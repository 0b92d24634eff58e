"""GOPE: G-optimal design-based phased elimination (non-private counterpart of AdaC-GOPE)."""

from __future__ import annotations

from typing import NamedTuple

from jax.typing import ArrayLike

from jaxpriv import declare
from jaxpriv._base import Learner
from jaxpriv.bandits._gope_core import GOPEState, phased_elimination

__all__ = ["GOPEParams", "GOPEState", "gope"]


class GOPEParams(NamedTuple):
    """Params of ``gope``.

    Attributes:
      actions: ``[K, d]``, the (public) action set; must span ``R^d``.
      delta: the confidence ``δ ∈ (0, 1)`` (the paper: 0.001).
      action_bound: ``L > 0``; with ``clip=True`` the policy works with
        ``a / L`` shrunk into the unit ball (see ``adac_gope``).
    """

    actions: ArrayLike
    delta: ArrayLike = 0.001
    action_bound: ArrayLike = 1.0


def _example(horizon: int, dim: int) -> declare.ExampleRun:
    """``gope`` at one small configuration (``jaxpriv.testing.learner_examples``)."""
    from jaxpriv.envs._settings import setting

    s = setting("linear", dim)
    return gope(dim, 3, horizon), s.env, GOPEParams(s.actions), s.params


@declare.learner("gope", params=GOPEParams, example=_example)
def gope(
    num_actions: int,
    dim: int,
    horizon: int,
    clip: bool = True,
    design_tol: float = 1e-3,
    design_iters: int = 5000,
) -> Learner:
    """GOPE: phased elimination with G-optimal designs, the baseline of AdaC-GOPE.

    Algorithm 8 of the thesis with the privacy terms removed (a reconstruction; the
    paper only says "GOPE, Algorithm 12 in [LS20]", Lattimore & Szepesvári, *Bandit
    Algorithms*, 2020; docs/algorithms/zcdp_bandits.md, 'Decoding choices'):
    in phase ``ℓ`` (``β_ℓ = 2^{-ℓ}``) solve a G-optimal design ``π_ℓ`` on ``A_ℓ``
    by Frank–Wolfe (``design.g_optimal_design``), play each support arm
    ``T_ℓ(a) = ⌈c_ℓ π_ℓ(a)⌉`` times with ``c_ℓ = (8d/β_ℓ²) log(4/δ_{K,ℓ})``,
    ``δ_{K,ℓ} = δ/(Kℓ(ℓ+1))``, estimate ``θ̂_ℓ = V_ℓ^{-1} Σ a_t r_t`` from this
    phase only, and keep ``A_{ℓ+1} = {a : max_b <θ̂_ℓ, b - a> <= 2β_ℓ}``.
    Support arms are played in index order; the last phase is truncated at ``T``.
    When ``A_ℓ`` no longer spans ``R^d`` the design and least squares work in its
    span (pseudo-inverse on ``span(A_ℓ)``, a standard choice the paper leaves open).

    Not private. ``clip`` (default ``True``) applies the same reward clipping
    to ``[-1, 1]`` and action normalisation as AdaC-GOPE, so the pair differs
    only by privacy; ``clip=False`` is the paper's setup (raw Gaussian rewards).

    Regret: with probability ``>= 1 - δ`` every arm of ``A_ℓ`` has gap
    ``<= 4β_{ℓ-1}``, so ``R_T <= Σ_ℓ (c_ℓ + |S_ℓ|) min(2, 8β_ℓ) =
    O(sqrt(d T log(K log T / δ)))`` (Lattimore & Szepesvári, Thm 22.1).

    Args:
      num_actions: ``K >= 2``.
      dim: ``d``.
      horizon: ``T >= K`` (bounds the int32 allocations).
      clip: clip rewards to ``[-1, 1]`` and normalise actions (default) or not.
      design_tol: Frank–Wolfe stops at ``g(π) <= (1 + tol) d``.
      design_iters: Frank–Wolfe iteration cap.

    Returns:
      A ``Learner`` with params ``GOPEParams`` (any other params class is refused, ``AdaCGOPEParams``
      included); actions are int32 indices. It declares itself not private (``Result.private``).

    References:
      Lattimore & Szepesvári, Bandit Algorithms (2020), Ch. 22 (Algorithm 12);
      Azize & Basu, Concentrated Differential Privacy for Bandits, SaTML 2024, §IV-A, §VII.
    """
    return phased_elimination(
        num_actions,
        dim,
        horizon,
        private=False,
        clip=clip,
        calibration="safe",
        design_tol=design_tol,
        design_iters=design_iters,
        params_class=GOPEParams,
    )
