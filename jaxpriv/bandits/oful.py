"""RS-OFUL: rarely switching OFUL (Abbasi-Yadkori, Pál, Szepesvári 2011), the baseline of AdaC-OFUL."""

from __future__ import annotations

from typing import NamedTuple

from jax.typing import ArrayLike

from jaxpriv import declare
from jaxpriv._base import Learner
from jaxpriv.bandits._oful_core import OFULState, oful_radius, rarely_switching_oful

__all__ = ["OFULState", "RSOFULParams", "oful_radius", "rs_oful"]


class RSOFULParams(NamedTuple):
    """Params of ``rs_oful`` (the paper's §VII values as defaults).

    Attributes:
      delta: confidence ``δ ∈ (0, 1)`` (0.001).
      regularization: ``λ > 0`` (0.1).
      switch_factor: ``C > 0``; switch when ``det V_t > (1 + C) det V_τ`` (1: determinant doubling).
      theta_bound: ``S >= ‖θ*‖`` (1).
      noise_bound: ``R``, the sub-Gaussian scale of the reward noise (1).
      action_bound: ``L``, a public bound on ``‖a‖`` used with ``clip=True`` (1).
    """

    delta: ArrayLike = 0.001
    regularization: ArrayLike = 0.1
    switch_factor: ArrayLike = 1.0
    theta_bound: ArrayLike = 1.0
    noise_bound: ArrayLike = 1.0
    action_bound: ArrayLike = 1.0


def _example(horizon: int, dim: int) -> declare.ExampleRun:
    """``rs_oful`` at one small configuration (``jaxpriv.testing.learner_examples``)."""
    from jaxpriv.envs._settings import setting

    s = setting("contextual", dim)
    return rs_oful(dim, 3, horizon), s.env, RSOFULParams(), s.params


@declare.learner("rs_oful", params=RSOFULParams, example=_example)
def rs_oful(num_actions: int, dim: int, horizon: int, clip: bool = True) -> Learner:
    """RS-OFUL for linear contextual bandits: Algorithm 9 of the thesis without noise.

    As used in the paper's comparison (a reconstruction: the paper names the baseline only;
    docs/algorithms/zcdp_bandits.md, 'Decoding choices'):
    ``V_0 = λI``; at round ``t`` observe ``A_t``; if ``det V_{t-1} > (1 + C) det V_τ``
    set ``τ = t - 1`` and ``θ̂_τ = V_τ^{-1} Σ_{s<=τ} a_s r_s``; play
    ``argmax_{a ∈ A_t} <θ̂_τ, a> + β_τ ‖a‖_{V_τ^{-1}}`` with
    ``β_τ = R sqrt(2 log(1/δ) + log(det V_τ/λ^d)) + sqrt(λ) S`` (``oful_radius``).
    Unlike AYPS11's Fig. 3 (greedy on a frozen optimistic θ), the UCB is
    maximised afresh over each new ``A_t`` (the thesis's version of Algorithm 9).

    The action set of round ``t`` arrives in the feedback of round ``t - 1``
    (``envs.contextual_linear_bandit``); round 1 is played uniformly at random.

    Not private. ``clip=True`` (default) applies AdaC-OFUL's hygiene (rewards
    clipped to ``[-1, 1]``, actions ``(a/L)/max(1, ‖a/L‖)``) so the pair differs
    only by privacy; ``clip=False`` is the paper's raw setup.

    Regret (AYPS11 Thm 4): ``R_T <= 4 sqrt((1 + C) T d log(λ + T L²/d)) (sqrt(λ) S
    + R sqrt(2 log(1/δ) + d log(1 + T L²/(λd))))`` w.p. ``>= 1 - δ``, i.e.
    ``O(d log(T) √T)``; the determinant test makes ``O(d log T)`` switches.

    Args:
      num_actions: ``K >= 2`` actions per round.
      dim: ``d``.
      horizon: ``T >= K``.
      clip: the privacy-hygiene switch (default ``True``).

    Returns:
      A ``Learner`` with params ``RSOFULParams`` (any other params class is refused, ``AdaCOFULParams``
      included); feedback ``ContextualFeedback``. It declares itself not private (``Result.private``).

    References:
      Abbasi-Yadkori, Pál, Szepesvári. Improved Algorithms for Linear Stochastic Bandits. NeurIPS 2011;
      Azize & Basu, Concentrated Differential Privacy for Bandits, SaTML 2024, §IV-B, §VII.
    """
    return rarely_switching_oful(num_actions, dim, horizon, private=False, clip=clip, params_class=RSOFULParams)
