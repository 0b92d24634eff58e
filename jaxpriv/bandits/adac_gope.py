"""AdaC-GOPE: ρ-zCDP phased elimination with G-optimal designs (Azize & Basu, SaTML 2024)."""

from __future__ import annotations

from typing import NamedTuple

from jax.typing import ArrayLike

from jaxpriv import declare
from jaxpriv._base import Learner
from jaxpriv.bandits._gope_core import GOPEState, phased_elimination

__all__ = ["AdaCGOPEParams", "GOPEState", "adac_gope"]


class AdaCGOPEParams(NamedTuple):
    """Params of ``adac_gope``.

    Attributes:
      actions: ``[K, d]``, the (public) action set; must span ``R^d``.
      rho: the zCDP budget ``ρ > 0`` (``inf``: no noise, no extra exploration).
      delta: the confidence ``δ ∈ (0, 1)`` (the paper: 0.001).
      action_bound: ``L > 0``, a public bound on ``‖a‖``; with ``clip=True`` the
        policy works with ``a / L`` shrunk into the unit ball.
    """

    actions: ArrayLike
    rho: ArrayLike
    delta: ArrayLike = 0.001
    action_bound: ArrayLike = 1.0


def _example(horizon: int, dim: int) -> declare.ExampleRun:
    """``adac_gope`` at one small configuration (``jaxpriv.testing.learner_examples``)."""
    from jaxpriv.envs._settings import setting

    s = setting("linear", dim)
    return adac_gope(dim, 3, horizon), s.env, AdaCGOPEParams(s.actions, 1.0), s.params


@declare.learner("adac_gope", params=AdaCGOPEParams, example=_example)
def adac_gope(
    num_actions: int,
    dim: int,
    horizon: int,
    clip: bool = True,
    calibration: str = "safe",
    design_tol: float = 1e-3,
    design_iters: int = 5000,
    ablation: str | None = None,
    phase_length: str = "joint",
    *,
    private: bool = True,
) -> Learner:
    """AdaC-GOPE (thesis Algorithm 8, the paper's Algorithm 2): ρ-zCDP linear bandits, finite arms.

    Phase ``ℓ = 1, 2, ...`` with ``β_ℓ = 2^{-ℓ}``:

    1. ``π_ℓ`` = G-optimal design on ``A_ℓ`` (Frank–Wolfe, ``design.g_optimal_design``).
    2. Play each ``a ∈ S_ℓ = Supp(π_ℓ)`` exactly ``T_ℓ(a) = ⌈c_ℓ π_ℓ(a)⌉`` times
       (in index order). ``phase_length="paper"``: eq. (5.6) (the paper's eq. (4))
       ``c_ℓ = c⁰_ℓ + (2d/β_ℓ) sqrt((2/ρ) f(d, δ_{K,ℓ}))``, ``c⁰_ℓ = (8d/β_ℓ²) log(4/δ_{K,ℓ})``
       (GOPE's), ``δ_{K,ℓ} = δ/(Kℓ(ℓ+1))``, ``f(d, δ) = d + 2 sqrt(d log(2/δ)) + 2 log(2/δ)``.
       ``phase_length="joint"`` (default; derived in ``_gope_core.phase_constant``): the
       estimate's sampling error and the Gaussian noise, projected on one arm, are one
       sub-Gaussian variable, so the same per-arm confidence needs only
       ``c_ℓ = (c⁰_ℓ + sqrt(c⁰_ℓ² + 8dc⁰_ℓ/ρ))/2 <= eq. (5.6)``; the extra exploration over
       GOPE is ``≈ 2d/ρ`` rounds per phase as ``ρ -> ∞`` (eq. (5.6)'s: ``∝ 1/√ρ``).
    3. ``V_ℓ = Σ T_ℓ(a) a aᵀ``, ``θ̂_ℓ = V_ℓ^{-1} Σ_{t in phase ℓ} a_t r_t`` (this phase only).
    4. ``θ̃_ℓ = θ̂_ℓ + V_ℓ^{-1/2} N_ℓ`` with ``N_ℓ ~ N(0, σ_ℓ² I_d)``, one draw per phase.
    5. ``A_{ℓ+1} = {a ∈ A_ℓ : max_b <θ̃_ℓ, b - a> <= 2β_ℓ}``.

    Privacy: ρ-Interactive zCDP (thesis Def. 3.5) for neighbouring reward tables
    differing in one user's (one round's) reward, when ``|r| <= 1`` and
    ``‖a‖ <= 1``. Per phase the released statistic is
    ``φ_ℓ = V_ℓ^{-1/2} Σ a_s r_s``, of ℓ2 sensitivity ``2 g_ℓ``,
    ``g_ℓ² = max_{b ∈ A_ℓ} ‖b‖²_{V_ℓ^{-1}}``, released by the Gaussian mechanism
    with ``σ_ℓ² = (2/ρ) max(g_ℓ², d/c_ℓ)`` (``calibration="safe"``, the default:
    docs/algorithms/zcdp_bandits.md, 'Decoding choices'; exact for the *realised* ``V_ℓ``, whatever the Frank–Wolfe
    tolerance). ``calibration="paper"`` uses Step 4's ``σ_ℓ² = 2d/(ρ c_ℓ)``,
    which equals the safe value only for an exact G-optimal design (then
    ``g_ℓ² <= d/c_ℓ``). Phases use disjoint reward blocks and the actions within
    a phase do not depend on its rewards, so parallel composition (thesis
    Lemma 2.10) and post-processing give ρ-zCDP overall.

    Privacy hygiene: ``clip=True`` (default) clips rewards to ``[-1, 1]`` and
    maps actions to ``(a/L) / max(1, ‖a/L‖)`` (``L = action_bound``), so the
    sensitivity assumption holds whatever the environment returns.
    ``clip=False`` reproduces the paper's experiments (Gaussian rewards,
    unclipped): the noise is calibrated as above but the guarantee then needs
    ``|r| <= 1`` from the environment, which ``N(0, 1)`` noise does not give.

    Opt-outs: ``clip=False``, ``ablation="exploration"`` and ``calibration="paper"`` each void
    the guarantee. Such a configuration refuses a finite ``rho`` (``check``, before compiling)
    unless it is built with ``private=False``; it then declares itself not private, and
    ``Result.private`` and a study's ``settings.json`` say ``false``. ``rho = inf`` claims
    nothing and is accepted either way.

    Regret (thesis Thm 5.12): w.p. ``>= 1 - δ``,
    ``R_T <= A sqrt(d T log(K log T/δ)) + B (d/√ρ) sqrt(log(K log T/δ)) log T``;
    with ``δ = 1/T``, ``O(sqrt(dT log KT)) + O((d/√ρ)(log KT)^{3/2})``. Explicitly,
    on the good event every arm of ``A_ℓ`` has gap ``<= 4β_{ℓ-1}``, so
    ``R_T <= Σ_ℓ (c_ℓ + |S_ℓ|) min(2, 8β_ℓ)`` over the phases started before ``T``.

    Args:
      num_actions: ``K >= 2``.
      dim: ``d``.
      horizon: ``T >= K``.
      clip: the privacy-hygiene switch above (default ``True``).
      calibration: ``"safe"`` (default) or ``"paper"``.
      design_tol: Frank–Wolfe stops at ``g(π) <= (1 + tol) d``.
      design_iters: Frank–Wolfe iteration cap.
      phase_length: ``"joint"`` (default) or ``"paper"`` (eq. (5.6)).
      ablation: ``None`` (AdaC-GOPE), or a diagnostic: ``"noise"`` (the noise with GOPE's phase
        lengths; still private, the ``"safe"`` noise being calibrated to the realised design) or
        ``"exploration"`` (AdaC-GOPE's longer phases without the noise: **not private**, it needs
        ``private=False`` at a finite ``rho``); they decompose the price of privacy
        (the shipped study ``zcdp_fidelity_linear``: ``jaxpriv sweep zcdp_fidelity_linear``).
      private: ``False`` declares the policy not private; required for an opt-out above at a finite ``rho``.

    Returns:
      A ``Learner`` with params ``AdaCGOPEParams`` (any other params class is refused; ``adac_gope_var``
      takes the same class); actions are int32 indices.
      The state (``GOPEState``) keeps the last phase's ``θ̃``, ``V`` and noise variance.

    Raises:
      ValueError: ``num_actions < 2``, ``horizon < num_actions``; from ``check``:
        ``rho <= 0``, ``delta ∉ (0, 1)``, ``actions`` not spanning ``R^d``, a finite ``rho`` with an
        opt-out and ``private=True``.

    References:
      A. Azize, D. Basu. Concentrated Differential Privacy for Bandits. IEEE SaTML 2024
      (arXiv 2309.00557), Algorithm 2 / eq. (4); A. Azize, PhD thesis (2024), Algorithm 8,
      eq. (5.6), Thm 5.12, §C.1.3.
    """
    return phased_elimination(
        num_actions,
        dim,
        horizon,
        private=True,
        clip=clip,
        calibration=calibration,
        design_tol=design_tol,
        design_iters=design_iters,
        ablation=ablation,
        phase_length=phase_length,
        params_class=AdaCGOPEParams,
        claim=private,
    )
