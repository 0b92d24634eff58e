"""AdaC-OFUL: ρ-zCDP rarely switching OFUL for linear contextual bandits (Azize & Basu, SaTML 2024)."""

from __future__ import annotations

from typing import NamedTuple

from jax.typing import ArrayLike

from jaxpriv import declare
from jaxpriv._base import Learner
from jaxpriv.bandits._oful_core import (
    ABLATIONS,
    RADII,
    OFULState,
    oful_radius,
    privacy_radius,
    rarely_switching_oful,
    self_normalized_radius,
)

__all__ = [
    "ABLATIONS",
    "RADII",
    "AdaCOFULParams",
    "OFULState",
    "adac_oful",
    "oful_radius",
    "privacy_radius",
    "self_normalized_radius",
]


class AdaCOFULParams(NamedTuple):
    """Params of ``adac_oful`` (the paper's §VII values as defaults).

    Attributes:
      rho: the zCDP budget ``ρ > 0`` (``inf``: RS-OFUL).
      delta: confidence ``δ ∈ (0, 1)`` (0.001).
      regularization: ``λ > 0`` (0.1).
      switch_factor: ``C > 0`` (1: determinant doubling).
      theta_bound: ``S >= ‖θ*‖`` (1).
      noise_bound: ``R``, the sub-Gaussian scale of the reward noise (1).
      action_bound: ``L``, a public bound on ``‖a‖`` used with ``clip=True`` (1).
    """

    rho: ArrayLike
    delta: ArrayLike = 0.001
    regularization: ArrayLike = 0.1
    switch_factor: ArrayLike = 1.0
    theta_bound: ArrayLike = 1.0
    noise_bound: ArrayLike = 1.0
    action_bound: ArrayLike = 1.0


def _example(horizon: int, dim: int) -> declare.ExampleRun:
    """``adac_oful`` at one small configuration (``jaxpriv.testing.learner_examples``)."""
    from jaxpriv.envs._settings import setting

    s = setting("contextual", dim)
    return adac_oful(dim, 3, horizon), s.env, AdaCOFULParams(1.0), s.params


@declare.learner("adac_oful", params=AdaCOFULParams, example=_example)
def adac_oful(
    num_actions: int,
    dim: int,
    horizon: int,
    clip: bool = True,
    radius: str = "self_normalized",
    ablation: str | None = None,
    *,
    private: bool = True,
) -> Learner:
    """AdaC-OFUL (thesis Algorithm 9, the paper's Algorithm 3): ρ-zCDP linear contextual bandits.

    ``V_0 = λI``, ``θ̃ = 0``, ``τ = 0``, ``ℓ = 1``. At round ``t`` observe ``A_t``;
    if ``det V_{t-1} > (1 + C) det V_τ``: draw ``Y_ℓ ~ N(0, (2/ρ) I_d)``, set
    ``θ̃ = V_{t-1}^{-1} (Σ_{s<t} a_s r_s + Σ_{m<=ℓ} Y_m)`` (all past data,
    cumulative noise), ``ℓ += 1``, ``τ = t - 1``. Play
    ``argmax_{a ∈ A_t} <θ̃_τ, a> + β̃_τ ‖a‖_{V_τ^{-1}}``.

    Radius (the paper's numeric ``β̃`` is not given, and its ``γ_t`` needs the
    unknown ``λ₀``); both choices keep ``‖θ̃_τ - θ*‖_{V_τ} <= β̃_τ`` at every switch
    with high probability:

    * ``radius="self_normalized"`` (default; derived in ``self_normalized_radius``):
      the noise ``Y_m`` enters Abbasi-Yadkori et al.'s self-normalised bound as
      ``d`` pseudo-observations per switch,
      ``β̃_τ = sqrt(1 + c/λ_min(V_τ)) R sqrt(2 log(1/δ) + log det(V_τ + cI) - d log λ) + sqrt(λ) S``,
      ``c = 2ℓ/(ρR²)``; probability ``>= 1 - δ``; tends to RS-OFUL's radius at rate ``1/ρ``.
    * ``radius="robust"`` (a standard choice the paper leaves open, the earlier default;
      docs/algorithms/zcdp_bandits.md, 'Decoding choices'):
      ``β̃_τ = β_τ + sqrt((2ℓ/ρ) (d + 2 sqrt(d log(T/δ)) + 2 log(T/δ))) / sqrt(λ_min(V_τ))``,
      ``β_τ = R sqrt(2 log(1/δ) + log(det V_τ/λ^d)) + sqrt(λ) S`` — Thm C.13's
      derivation with the public ``λ_min(V_τ)`` in place of the ``λ₀``-based bound;
      probability ``>= 1 - 2δ``; the enlargement vanishes at rate ``1/√ρ``, and it is
      large while ``λ_min(V_τ)`` is small.

    ``ablation`` (diagnostics): ``"noise"`` adds the noise but uses RS-OFUL's radius
    (still private: the radius is post-processing); ``"radius"`` uses the chosen radius
    without adding the noise (**not private**: it needs ``private=False`` at a finite
    ``rho``). They decompose AdaC-OFUL's price of privacy
    (the shipped study ``zcdp_fidelity_contextual``: ``jaxpriv sweep zcdp_fidelity_contextual``).

    Privacy: ρ-Interactive zCDP (thesis Def. 3.5) w.r.t. the rewards, for
    neighbouring reward tables differing in one round's reward; the contexts
    and the design matrix are public (Remark 5.13). Per switch the released
    statistic is ``Σ_{s in episode} a_s r_s + Y_ℓ``: ℓ2 sensitivity
    ``2`` when ``|r| <= 1`` and ``‖a‖ <= 1``, so ``Y_ℓ ~ N(0, Δ²/(2ρ) I) = N(0, (2/ρ) I)``
    is the Gaussian mechanism; episodes are disjoint (parallel composition,
    thesis Lemma 2.10), and the running sums, ``θ̃`` and the actions are
    post-processing. The ℓ-th centre carries ``Σ_{m<=ℓ} Y_m ~ N(0, (2ℓ/ρ) I)``
    ("the price of not forgetting").

    Privacy hygiene: ``clip=True`` (default) clips rewards to ``[-1, 1]`` and
    uses ``x = (a/L)/max(1, ‖a/L‖)`` (``L = action_bound``, public) for every
    action, played or candidate; ``S`` becomes ``S·L`` in these coordinates.
    Rows with ``‖a‖ > L`` are shrunk (a small model misspecification),
    and clipping makes ``E[r | a]`` a monotone non-linear function of
    ``<θ*, a>``. ``clip=False`` is the paper's setup (Gaussian rewards and
    contexts unnormalised), under which the sensitivity 2 is not guaranteed: it
    refuses a finite ``rho`` unless built with ``private=False``, and then declares
    itself not private (``Result.private`` and a study's ``settings.json`` say ``false``).

    Regret (thesis Thm 5.17, stochastic contexts, Assumption 5.15):
    ``R_T <= O(d log(T) √T) + O((d²/√ρ) log² T)`` w.p. ``>= 1 - δ``.

    Args:
      num_actions: ``K >= 2`` actions per round.
      dim: ``d``.
      horizon: ``T >= K`` (enters the noise bound through ``log(T/δ)``).
      clip: the privacy-hygiene switch (default ``True``).
      radius: ``"self_normalized"`` (default) or ``"robust"``.
      ablation: ``None`` (AdaC-OFUL), ``"noise"`` (private) or ``"radius"`` (not private): diagnostics.
      private: ``False`` declares the policy not private (``Result.private`` is then ``False``);
        required to run ``clip=False`` or ``ablation="radius"`` at a finite ``rho``, where the
        guarantee does not hold (``check`` refuses it otherwise; ``rho = inf`` claims nothing).

    Returns:
      A ``Learner`` with params ``AdaCOFULParams`` (any other params class is refused); feedback ``ContextualFeedback``
      (``envs.contextual_linear_bandit``: the action set of round ``t`` arrives with
      the feedback of round ``t - 1``; round 1 is played uniformly at random).

    Raises:
      ValueError: ``num_actions < 2``, ``horizon < num_actions``, an unknown ``radius`` or
        ``ablation``; from ``check``:
        ``rho <= 0``, ``delta ∉ (0, 1)``, non-positive ``regularization`` /
        ``switch_factor`` / ``theta_bound`` / ``action_bound``.

    References:
      A. Azize, D. Basu. Concentrated Differential Privacy for Bandits. IEEE SaTML 2024
      (arXiv 2309.00557), Algorithm 3; A. Azize, PhD thesis (2024), Algorithm 9, Thm C.13, Thm 5.17;
      Y. Abbasi-Yadkori, D. Pál, Cs. Szepesvári. Improved Algorithms for Linear Stochastic
      Bandits. NeurIPS 2011, Theorem 1 (the self-normalised bound).
    """
    return rarely_switching_oful(
        num_actions,
        dim,
        horizon,
        private=True,
        clip=clip,
        radius=radius,
        ablation=ablation,
        params_class=AdaCOFULParams,
        claim=private,
    )
