"""AdaC-GOPE-Var: AdaC-GOPE with the noise on the per-action reward sums (thesis Remark C.12, Fig. C.1)."""

from __future__ import annotations

from jaxpriv import declare
from jaxpriv._base import Learner
from jaxpriv.bandits._gope_core import GOPEState, phased_elimination
from jaxpriv.bandits.adac_gope import AdaCGOPEParams

__all__ = ["AdaCGOPEParams", "GOPEState", "adac_gope_var"]


def _example(horizon: int, dim: int) -> declare.ExampleRun:
    """``adac_gope_var`` at one small configuration (``jaxpriv.testing.learner_examples``)."""
    from jaxpriv.envs._settings import setting

    s = setting("linear", dim)
    return adac_gope_var(dim, 3, horizon), s.env, AdaCGOPEParams(s.actions, 1.0), s.params


@declare.learner("adac_gope_var", params=AdaCGOPEParams, example=_example)
def adac_gope_var(
    num_actions: int,
    dim: int,
    horizon: int,
    clip: bool = True,
    design_tol: float = 1e-3,
    design_iters: int = 5000,
    phase_length: str = "joint",
    *,
    private: bool = True,
) -> Learner:
    """AdaC-GOPE-Var: ρ-zCDP phased elimination with the Gaussian noise on the per-action reward sums.

    AdaC-GOPE (``bandits.adac_gope``, thesis Algorithm 8) with Step 4 replaced
    (thesis Remark C.12; the same mechanism as AdaR-GOPE's Step 4 in the RDP
    version, there with ``N(0, 2α/ε)``): at the end of phase ``ℓ``, with
    ``R_a = Σ_{t in phase ℓ, a_t = a} r_t`` the reward sum of each support action,

    ``θ̃_ℓ = V_ℓ^{-1} Σ_{a ∈ S_ℓ} a (R_a + Z_a) = θ̂_ℓ + V_ℓ^{-1} Σ_{a ∈ S_ℓ} a Z_a``,
    ``Z_a ~ N(0, 2/ρ)`` i.i.d., one draw per support action per phase.

    Steps 1, 2, 3 and 5 (design, phase lengths ``c_ℓ``, least squares, elimination)
    are AdaC-GOPE's, through the shared core (``_gope_core.phased_elimination(...,
    noise_placement="sums")``), so the pair differs only in where the noise goes. The
    released noise ``V_ℓ^{-1} Σ_a a Z_a`` has covariance
    ``(2/ρ) V_ℓ^{-1} (Σ_{a ∈ S_ℓ} a aᵀ) V_ℓ^{-1}`` (AdaC-GOPE's: ``σ_ℓ² V_ℓ^{-1}``,
    ``σ_ℓ² = (2/ρ) max(g_ℓ², d/c_ℓ)``). On an arm ``b`` its variance is
    ``(2/ρ) Σ_{a ∈ S_ℓ} <a, V_ℓ^{-1} b>²``, at most ``(2/ρ) |S_ℓ| g_ℓ² ‖b‖²_{V_ℓ^{-1}}``
    (Cauchy–Schwarz, ``<a, V^{-1}b>² <= g² ‖b‖²_{V^{-1}}``) and at most
    ``(2/ρ) ‖b‖²_{V_ℓ^{-1}} / min_{a ∈ S_ℓ} T_ℓ(a)`` (``Σ_S a aᵀ ⪯ V_ℓ / min_a T_ℓ(a)``):
    AdaC-GOPE's ``(2/ρ) g_ℓ² ‖b‖²_{V^{-1}}`` when the design is ``d`` points with uniform
    weights, up to ``|S_ℓ|`` times more when the design spreads over more support points
    (Frank–Wolfe's usually does): every support action pays a full ``N(0, 2/ρ)`` however
    few times it is played. Hence AdaC-GOPE's lower regret at small ρ (the thesis's
    Fig. C.1). The phase lengths are AdaC-GOPE's (the comparison isolates the noise
    placement); the per-arm confidence that ``phase_length="joint"`` is derived for
    (``_gope_core.phase_constant``) then holds only in the first case above.

    Privacy: ρ-Interactive zCDP (thesis Def. 3.5) for reward tables differing in one
    round's reward, when ``|r| <= 1``. Per phase the released statistic is the vector
    ``(R_a)_{a ∈ S_ℓ}``: replacing one reward changes one ``R_a`` by at most 2, so its
    ℓ2 sensitivity is 2 and ``Z_a ~ N(0, 2²/(2ρ)) = N(0, 2/ρ)`` is the Gaussian
    mechanism at ρ-zCDP (thesis Thm 2.14). ``θ̃_ℓ`` and everything after it is
    post-processing (``V_ℓ`` and ``S_ℓ`` depend only on the public design); phases use
    disjoint reward blocks and the actions within a phase do not depend on its rewards,
    so parallel composition (thesis Lemma 2.10) gives ρ-zCDP overall. Unlike AdaC-GOPE's
    calibration, this one needs no bound on ``‖a‖`` and no property of the design.

    Privacy hygiene: as ``adac_gope``: ``clip=True`` (default) clips rewards to
    ``[-1, 1]`` (and normalises actions, as AdaC-GOPE does, so the two compute with the
    same vectors); ``clip=False`` is the paper's unclipped Gaussian setup, private
    only if the environment's rewards lie in ``[-1, 1]``: it refuses a finite ``rho``
    unless built with ``private=False``, and then declares itself not private
    (``Result.private`` and a study's ``settings.json`` say ``false``).

    Regret: no theorem in the sources; the elimination argument of ``adac_gope``
    applies with the per-arm noise variance above.

    Args:
      num_actions: ``K >= 2``.
      dim: ``d``.
      horizon: ``T >= K``.
      clip: the privacy-hygiene switch above (default ``True``).
      design_tol: Frank–Wolfe stops at ``g(π) <= (1 + tol) d``.
      design_iters: Frank–Wolfe iteration cap.
      phase_length: AdaC-GOPE's phase-length rule, ``"joint"`` (default) or ``"paper"`` (eq. (5.6)).
      private: ``False`` declares the policy not private; required for ``clip=False`` at a finite ``rho``.

    Returns:
      A ``Learner`` with params ``AdaCGOPEParams``, AdaC-GOPE's (any other params class is refused;
      the learner, not its params class, names the algorithm: its spec's ``fast_path`` is the
      phase-level simulator with the noise on the sums, ``bandits.episodic.simulate_episodes``);
      actions are int32 indices. The
      state (``GOPEState``) keeps the last phase's ``θ̃``, ``V`` and ``noise_var = 2/ρ``
      (the variance of each ``Z_a``). At ``ρ = inf`` its decisions are GOPE's, bit for bit.

    Raises:
      ValueError: ``num_actions < 2``, ``horizon < num_actions``, a bad static option;
        from ``check``: ``rho <= 0``, ``delta ∉ (0, 1)``, ``actions`` not spanning ``R^d``, a finite
        ``rho`` with ``clip=False`` and ``private=True``.

    References:
      A. Azize, PhD thesis (Univ. Lille, 2024), Remark C.12 and Fig. C.1 (AdaC-GOPE vs
      AdaC-GOPE-Var); A. Azize, D. Basu. Concentrated Differential Privacy for Bandits.
      IEEE SaTML 2024 (arXiv 2309.00557); Azize & Basu, Rényi Differentially Private
      Bandits, PPAI@AAAI 2023 (AdaR-GOPE, Step 4).
    """
    return phased_elimination(
        num_actions,
        dim,
        horizon,
        private=True,
        clip=clip,
        calibration="safe",  # unused by the "sums" placement: its calibration is exact
        design_tol=design_tol,
        design_iters=design_iters,
        phase_length=phase_length,
        noise_placement="sums",
        params_class=AdaCGOPEParams,
        claim=private,
    )
