"""Li, Zhou & Ji 2022 (single-server reading), as Azize & Basu describe it — a reconstruction, not a transcription.

GOPE with the analytic Gaussian mechanism on each support action's reward sum ((ε, δ)-DP) and a small-support
design: ``adac_gope_var`` with an (ε, δ) calibration. Only the abstract of Li, Zhou & Ji (2022) was within reach;
the mechanism is the one the zCDP bandits paper attributes to it (§IV 'Related algorithms and bounds'). Every
choice the sources leave open is ours and marked as such (docs/algorithms/baselines.md, 'Reconstructions').
"""

from __future__ import annotations

from typing import Any, NamedTuple

from jax.typing import ArrayLike

from jaxpriv import declare
from jaxpriv._base import Learner, Spec
from jaxpriv.bandits._gope_core import GOPEState, sums_elimination, sums_gope_bound

__all__ = ["GOPEState", "LiZhouJiGOPEParams", "li_zhou_ji_gope"]


class LiZhouJiGOPEParams(NamedTuple):
    """Params of ``li_zhou_ji_gope``.

    Attributes:
      actions: ``[K, d]``, the (public) action set; must span ``R^d``.
      epsilon: ε of (ε, δ)-DP, ``> 0`` (``inf``: no noise).
      dp_delta: δ of (ε, δ)-DP, in ``(0, 1)`` (no default: a budget).
      delta: the confidence ``δ ∈ (0, 1)`` of the elimination (GOPE's; not a privacy parameter).
      action_bound: ``L > 0``; with ``clip=True`` the policy works with ``a / L`` shrunk into the unit ball.
    """

    actions: ArrayLike
    epsilon: ArrayLike
    dp_delta: ArrayLike
    delta: ArrayLike = 0.001
    action_bound: ArrayLike = 1.0


def li_zhou_ji_gope_bound(params: LiZhouJiGOPEParams, env_params: Any, spec: Spec, horizon: int) -> float | None:
    """The elimination bound of this reconstruction (``theory.sums_gope_regret_bound``) at its noise scale."""
    del env_params
    return sums_gope_bound(params, spec, horizon, "sums_analytic")


def _example(horizon: int, dim: int) -> declare.ExampleRun:
    """``li_zhou_ji_gope`` at one small configuration (``jaxpriv.testing.learner_examples``)."""
    from jaxpriv.envs._settings import setting

    s = setting("linear", dim)
    return li_zhou_ji_gope(dim, 3, horizon), s.env, LiZhouJiGOPEParams(s.actions, 1.0, 1e-5), s.params


@declare.learner("li_zhou_ji_gope", params=LiZhouJiGOPEParams, bound=li_zhou_ji_gope_bound, example=_example)
def li_zhou_ji_gope(
    num_actions: int,
    dim: int,
    horizon: int,
    clip: bool = True,
    design_tol: float = 1e-3,
    design_iters: int = 5000,
    small_support: bool = True,
    *,
    private: bool = True,
) -> Learner:
    """After Li, Zhou & Ji 2022 (one server), as Azize & Basu describe it — a reconstruction: (ε, δ)-DP GOPE.

    GOPE (``bandits.gope``) whose released statistic is each support action's reward sum with Gaussian
    noise ([Z] §IV: noise on the sums, (ε, δ)-DP): at the end of phase ``ℓ``
    ``S̃_a = S_a + N(0, σ²)``, ``θ̃_ℓ = V_ℓ^{-1} Σ_{a ∈ S_ℓ} a S̃_a``, then GOPE's elimination. ``σ`` is the
    exact (analytic) Gaussian calibration for ℓ2 sensitivity 2 at (ε, δ) (Balle & Wang 2018, Thm 8;
    ``mechanisms.analytic_gaussian_stddev``, never below the exact value). This is ``adac_gope_var``
    with that calibration in place of ``σ² = 2/ρ`` and the small-support design.

    Ours ([REC]): (i) the paper's "partial distributed feedback" with one server that sees every
    reward reduces to this single-server mechanism; (ii) the small-support design (``small_support=True``,
    ``design.prune_support``: at most ``d(d+1)/2`` points, the same information matrix); (iii) the phase
    length ``c_ℓ = (c⁰_ℓ + sqrt(c⁰_ℓ² + 4σ²|S_ℓ|d c⁰_ℓ))/2`` of ``_gope_core.sums_phase_constant`` (the
    sampling error and the Gaussian noise on one arm, one sub-Gaussian variable, held to GOPE's
    per-arm guarantee); (iv) play order and truncation as ``gope``.

    Privacy: (ε, δ)-DP for reward sequences differing in one round's reward, rewards clipped to
    ``[-1, 1]``: per phase the vector of sums has ℓ2 sensitivity 2 and gets the Gaussian mechanism
    calibrated to (ε, δ); phases use disjoint reward blocks (parallel composition) and ``θ̃_ℓ`` is
    post-processing.

    Regret: no bound in our sources ([Z]: super-linear in ``d``). On the good event
    ``R_T <= Σ_ℓ (c_ℓ + |S_ℓ|) min(2, 8β_ℓ)`` (``theory.sums_gope_regret_bound``).

    Privacy hygiene: as ``hanna_gope`` (``clip=False`` needs ``private=False`` at a finite ``epsilon``).

    Args:
      num_actions: ``K >= 2``.
      dim: ``d``.
      horizon: ``T >= K``.
      clip: the privacy-hygiene switch (default ``True``).
      design_tol: Frank–Wolfe stops at ``g(π) <= (1 + tol) d``.
      design_iters: Frank–Wolfe iteration cap.
      small_support: prune each design to ``<= d(d+1)/2`` points (default ``True``, ours); ``False`` keeps
        Frank–Wolfe's (at ``epsilon = inf`` the policy is then GOPE, bit for bit).
      private: ``False`` declares the policy not private; required for ``clip=False`` at a finite ``epsilon``.

    Returns:
      A ``Learner`` with params ``LiZhouJiGOPEParams``; actions are int32 indices; its spec's fast path is
      the exact phase-level simulator. The state (``GOPEState``) keeps ``scale = σ`` and ``noise_var = σ²``.

    Raises:
      ValueError: a bad static option; from ``check``: ``epsilon <= 0``, ``dp_delta ∉ (0, 1)``,
        ``delta ∉ (0, 1)``, ``actions`` not spanning ``R^d``, a finite ``epsilon`` with ``clip=False`` and
        ``private=True``.

    References:
      A. Azize, D. Basu. Concentrated Differential Privacy for Bandits. IEEE SaTML 2024 (arXiv 2309.00557), §IV;
      F. Li, X. Zhou, B. Ji. Differentially Private Linear Bandits with Partial Distributed Feedback. 2022
      (abstract only); B. Balle, Y.-X. Wang. Improving the Gaussian Mechanism for Differential Privacy. ICML 2018.
    """
    options = {"clip": clip, "design_tol": design_tol, "design_iters": design_iters, "small_support": small_support}
    return sums_elimination(num_actions, dim, horizon, "sums_analytic", LiZhouJiGOPEParams, private, **options)
