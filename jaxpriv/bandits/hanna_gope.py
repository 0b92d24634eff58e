"""Hanna et al. 2022 (central model), as Azize & Basu (App. E-C2) describe it — a reconstruction, not a transcription.

GOPE with Laplace noise on each support action's reward sum (pure ε-DP) and a small-support design. Only the
abstract and first page of Hanna, Girgis, Fragouli & Diggavi (2022) were within reach; the mechanism is the one
the zCDP bandits paper attributes to it (§IV 'Related algorithms and bounds', App. E-C2). Every choice the
sources leave open is ours and marked as such (docs/algorithms/baselines.md, 'Reconstructions').
"""

from __future__ import annotations

from typing import Any, NamedTuple

from jax.typing import ArrayLike

from jaxpriv import declare
from jaxpriv._base import Learner, Spec
from jaxpriv.bandits._gope_core import GOPEState, sums_elimination, sums_gope_bound

__all__ = ["GOPEState", "HannaGOPEParams", "hanna_gope"]


class HannaGOPEParams(NamedTuple):
    """Params of ``hanna_gope``.

    Attributes:
      actions: ``[K, d]``, the (public) action set; must span ``R^d``.
      epsilon: the pure-DP budget ``ε > 0`` (``inf``: no noise; with ``small_support=False`` then GOPE, bit for bit).
      delta: the confidence ``δ ∈ (0, 1)`` of the elimination (GOPE's; not a privacy parameter).
      action_bound: ``L > 0``; with ``clip=True`` the policy works with ``a / L`` shrunk into the unit ball.
    """

    actions: ArrayLike
    epsilon: ArrayLike
    delta: ArrayLike = 0.001
    action_bound: ArrayLike = 1.0


def hanna_gope_bound(params: HannaGOPEParams, env_params: Any, spec: Spec, horizon: int) -> float | None:
    """The elimination bound of this reconstruction (``theory.sums_gope_regret_bound``) at its noise scale."""
    del env_params
    return sums_gope_bound(params, spec, horizon, "sums_laplace")


def _example(horizon: int, dim: int) -> declare.ExampleRun:
    """``hanna_gope`` at one small configuration (``jaxpriv.testing.learner_examples``)."""
    from jaxpriv.envs._settings import setting

    s = setting("linear", dim)
    return hanna_gope(dim, 3, horizon), s.env, HannaGOPEParams(s.actions, 1.0), s.params


@declare.learner("hanna_gope", params=HannaGOPEParams, bound=hanna_gope_bound, example=_example)
def hanna_gope(
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
    """After Hanna et al. 2022 (central model), as Azize & Basu describe it — a reconstruction: ε-DP GOPE.

    GOPE (``bandits.gope``: phases ``ℓ``, accuracy ``β_ℓ = 2^{-ℓ}``, active set ``A_ℓ``, design ``π_ℓ``,
    ``T_ℓ(a) = ⌈c_ℓ π_ℓ(a)⌉`` plays of each support point) with the released statistic replaced
    ([Z] §IV, App. E-C2: "adds noise to each sum of rewards", Alg. 2 line 11 of GOPE): at the end of
    phase ``ℓ``, with ``S_a`` the reward sum of support action ``a``,

    ``S̃_a = S_a + Lap(2/ε)``, ``θ̃_ℓ = V_ℓ^{-1} Σ_{a ∈ S_ℓ} a S̃_a``, then GOPE's elimination
    ``A_{ℓ+1} = {a : max_b <θ̃_ℓ, b - a> <= 2β_ℓ}``.

    Ours ([REC], the sources are silent): (i) the small-support design (``small_support=True``):
    Frank–Wolfe's design pruned to at most ``d(d+1)/2`` points with the same information matrix
    (Carathéodory, ``design.prune_support``), not the ``4d log log d + 16`` core set of Lattimore,
    Szepesvári & Weisz (2020); (ii) the phase length ``c_ℓ = max(c₁, c₂)`` of
    ``_gope_core.sums_phase_constant``, which widens GOPE's confidence by a sub-exponential (Laplace)
    tail bound on the noise term so that every arm's error is ``<= β_ℓ/2`` w.p. ``1 - δ_{K,ℓ}/2``,
    GOPE's per-arm guarantee (the constants 4 and ``4√2`` are ours); (iii) support arms played in
    index order, the last phase truncated at ``T``, as ``gope``.

    Privacy: ε-DP (pure; hence ``ε²/2``-zCDP) for reward sequences differing in one round's reward,
    rewards clipped to ``[-1, 1]``. Per phase the released vector ``(S_a)_{a ∈ S_ℓ}`` has L1
    sensitivity 2 (one reward moves one sum by at most 2: [Z] App. E-C2), so ``Lap(2/ε)`` per
    coordinate is the Laplace mechanism at ε. ``θ̃_ℓ`` and everything after it are post-processing
    (``V_ℓ``, ``S_ℓ`` depend only on the public design and earlier releases); phases use disjoint
    reward blocks and the actions within a phase do not depend on its rewards, so the phases and
    actions compose in parallel: ε-DP overall. The calibration needs no property of the design.

    Regret: no bound is stated in our sources ([Z]: the private term is worse than linear in
    ``d``). On the good event every arm of ``A_ℓ`` has gap ``<= 4β_{ℓ-1}``, so
    ``R_T <= Σ_ℓ (c_ℓ + |S_ℓ|) min(2, 8β_ℓ)`` (``theory.sums_gope_regret_bound``, with
    ``|S_ℓ| <= d(d+1)/2``); the private part of ``c_ℓ`` grows like ``d^{3/2} √|S_ℓ| / (εβ_ℓ)``.

    Privacy hygiene: ``clip=True`` (default) clips rewards to ``[-1, 1]`` and normalises actions as
    AdaC-GOPE does. ``clip=False`` voids the guarantee: a finite ``epsilon`` is refused unless the
    policy is built with ``private=False`` (it then declares itself not private).

    Args:
      num_actions: ``K >= 2``.
      dim: ``d``.
      horizon: ``T >= K``.
      clip: the privacy-hygiene switch above (default ``True``).
      design_tol: Frank–Wolfe stops at ``g(π) <= (1 + tol) d``.
      design_iters: Frank–Wolfe iteration cap.
      small_support: prune each design to ``<= d(d+1)/2`` points (default ``True``, ours);
        ``False`` keeps Frank–Wolfe's design (at ``epsilon = inf`` the policy is then GOPE, bit for bit).
      private: ``False`` declares the policy not private; required for ``clip=False`` at a finite ``epsilon``.

    Returns:
      A ``Learner`` with params ``HannaGOPEParams``; actions are int32 indices; its spec's fast path is
      the exact phase-level simulator (``bandits.episodic.simulate_episodes``). The state (``GOPEState``)
      keeps the last phase's ``θ̃``, ``V``, ``scale = 2/ε`` and ``noise_var = 2 scale²`` (each ``Z_a``'s variance).

    Raises:
      ValueError: ``num_actions < 2``, ``horizon < num_actions``, a bad static option; from ``check``:
        ``epsilon <= 0``, ``delta ∉ (0, 1)``, ``actions`` not spanning ``R^d``, a finite ``epsilon``
        with ``clip=False`` and ``private=True``.

    References:
      A. Azize, D. Basu. Concentrated Differential Privacy for Bandits. IEEE SaTML 2024 (arXiv 2309.00557),
      §IV and App. E-C2 (the description reconstructed here); J. Hanna, A. M. Girgis, C. Fragouli,
      S. Diggavi. Differentially Private Stochastic Linear Bandits: (Almost) for Free. 2022 (abstract only).
    """
    options = {"clip": clip, "design_tol": design_tol, "design_iters": design_iters, "small_support": small_support}
    return sums_elimination(num_actions, dim, horizon, "sums_laplace", HannaGOPEParams, private, **options)
