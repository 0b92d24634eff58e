"""AdaC-UCB: ρ-zCDP UCB with adaptive episodes and forgetting (Azize & Basu, SaTML 2024)."""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxpriv import _validate, declare
from jaxpriv._base import Learner, Spec
from jaxpriv.bandits import _episodic_ucb
from jaxpriv.bandits._episodic_ucb import EpisodicUCBState
from jaxpriv.bandits._fast_path import FastPath
from jaxpriv.mechanisms import GAUSSIAN, gaussian_stddev
from jaxpriv.theory import adac_ucb_regret_bound

#: Why ``clip_rewards=False`` voids the guarantee (``_validate.opt_outs``).
UNCLIPPED = "rewards outside [0, 1] are not clipped, so one reward may move a released mean by more than 1/n"


class AdaCUCBParams(NamedTuple):
    """Params of ``adac_ucb``.

    Attributes:
      rho: the zCDP budget ρ > 0, required (no default: a budget is never implied);
        ``inf``, given explicitly, removes the noise and the privacy term of the
        bonus (the non-private index).
      beta: the optimism parameter β > 0 (Theorem 5.6 needs β > 3; the
        paper's experiments use β = 1).
    """

    rho: ArrayLike | None = None
    beta: ArrayLike = 1.0


def adac_ucb_noise_stddev(rho: ArrayLike, n: ArrayLike) -> jax.Array:
    """``σ_{a,ℓ,ρ} = 1/(n_a sqrt(2ρ))``: the Gaussian mechanism for the mean of ``n_a`` rewards in [0, 1]."""
    return gaussian_stddev(rho, 1.0) / jnp.asarray(n, jnp.float32)


def adac_ucb_index(means: ArrayLike, n: ArrayLike, t: ArrayLike, beta: ArrayLike, rho: ArrayLike) -> jax.Array:
    """The AdaC-UCB index of eq. (5.4) without its noise (the noise is already in ``means``).

    ``I_a = μ̃_a + sqrt((1/(2 n_a) + 1/(ρ n_a²)) β log t_ℓ)``.

    Args:
      means: ``[K]``, the released (noisy) mean of each arm's last episode.
      n: ``[K]``, the number of samples in that episode.
      t: the start ``t_ℓ`` of the episode being decided.
      beta: β.
      rho: ρ (``inf``: the non-private index).

    Returns:
      ``[K]`` float32 indices.
    """
    return _episodic_ucb.index(means, n, t, beta, gaussian_stddev(rho, 1.0))


def calibrate_adac(params: AdaCUCBParams) -> tuple[jax.Array, jax.Array]:
    """``(β, 1/sqrt(2ρ))``, the state's ``beta`` and ``unit_stddev``; ``ρ = inf`` gives 0 (no noise).

    Module level, for the exact episode simulator (``Spec.fast_path``): one compiled simulator for
    every ``adac_ucb`` built (the factory's own ``calibrate`` also checks the budget's field).
    """
    return jnp.asarray(params.beta, jnp.float32), gaussian_stddev(params.rho, 1.0)


def adac_ucb_bound(params: AdaCUCBParams, env_params: Any, spec: Spec, horizon: int) -> float | None:
    """Theorem 5.6's bound for AdaC-UCB on a Bernoulli instance (``None`` unless ``beta > 3``)."""
    del spec
    beta = float(np.asarray(params.beta))
    if not beta > 3:  # Theorem 5.6 needs beta > 3
        return None
    return float(adac_ucb_regret_bound(np.asarray(env_params.means), horizon, float(np.asarray(params.rho)), beta))


def _example(horizon: int, dim: int) -> declare.ExampleRun:
    """``adac_ucb`` at one small configuration (``jaxpriv.testing.learner_examples``)."""
    from jaxpriv.envs._settings import setting

    s = setting("bernoulli", dim)
    return adac_ucb(dim, horizon), s.env, AdaCUCBParams(rho=1.0, beta=3.1), s.params


@declare.learner("adac_ucb", params=AdaCUCBParams, bound=adac_ucb_bound, example=_example)
def adac_ucb(
    num_arms: int,
    horizon: int | None = None,
    *,
    clip_rewards: bool = True,
    init_count: str = "samples",
    tie_break: str = "random",
    private: bool = True,
) -> Learner:
    """AdaC-UCB: ρ-Interactive zCDP UCB with per-arm doubling, forgetting and Gaussian noise.

    Algorithm 7 of the thesis with the index of eq. (5.4): play each arm once;
    then episode ``ℓ`` starts at ``t_ℓ``, plays

        ``a_ℓ = argmax_a μ̃_a + sqrt((1/(2 n_a) + 1/(ρ n_a²)) β log t_ℓ)``

    until ``N_{a_ℓ}`` has doubled. ``μ̃_a`` is the mean of the ``n_a`` rewards of
    the last episode in which ``a`` was played (forgetting) plus one draw of
    ``N(0, 1/(2ρ n_a²))``, made when that episode closes and reused until ``a``'s
    next episode closes (one release per closed episode, the reading of the thesis's privacy proof,
    §C.1.3; redrawing at every decision would re-release the same block;
    docs/algorithms/zcdp_bandits.md, 'Decoding choices'). The final episode is
    truncated at the horizon.

    Privacy: ρ-Interactive zCDP (thesis Def. 3.5) for the replace-one-reward
    neighbouring relation on the reward table (event level). Each released
    mean is the Gaussian mechanism ``σ = Δ/sqrt(2ρ)`` with ``Δ = 1/n_a`` for
    rewards in ``[0, 1]``; the episodes' reward blocks are disjoint, so by
    parallel composition (Lemma 2.10) and post-processing the whole action
    sequence is ρ-zCDP. Rewards are clipped to ``[0, 1]`` first
    (``clip_rewards=True``, the default) so the guarantee holds whatever the
    environment returns; Bernoulli rewards are unaffected. For (ε, δ)-DP use
    ``ε = ρ + 2 sqrt(ρ log(1/δ))`` (``jaxpriv.mechanisms.zcdp_to_dp``).

    Regret (Theorem 5.6, rewards in [0, 1], β > 3):
    ``Reg_T <= Σ_{Δ_a>0} (8β log T/Δ_a + 8 sqrt(β log T/ρ) + 2β/(β-3))``; see
    ``adac_ucb_regret_bound``.

    Args:
      num_arms: ``K >= 2``.
      horizon: optional ``T``; only validated (``T >= K``): the algorithm is anytime.
      clip_rewards: clip rewards to ``[0, 1]`` before they enter the mean (the
        private-safe default). ``False`` reproduces an unclipped setup and
        voids the guarantee for rewards outside ``[0, 1]``: a finite ``rho`` is then
        refused unless ``private=False``.
      init_count: ``n_a`` after the initial pull: ``"samples"`` (1, a standard choice the paper
        leaves open; docs/algorithms/zcdp_bandits.md, 'Decoding choices')
        or ``"half"`` (the paper's ``½N_a = 0.5``: more noise, still private).
      tie_break: ``"random"`` (uniform among the maximisers, a standard choice) or ``"first"``.
      private: ``False`` declares the policy not private (``Result.private`` is then ``False``);
        needed to run ``clip_rewards=False`` at a finite ``rho``, whose guarantee does not hold.

    Returns:
      A ``Learner`` with params ``AdaCUCBParams`` (any other params class is refused); actions are int32 arm
      indices, the feedback is the reward of the played arm.

    Examples:
      >>> import jax, jax.numpy as jnp, jaxpriv
      >>> from jaxpriv.envs import BernoulliParams, bernoulli_bandit
      >>> params = jaxpriv.SimParams(AdaCUCBParams(rho=jnp.array([0.1, 1.0])), BernoulliParams())
      >>> res = jaxpriv.sweep(adac_ucb(5), bernoulli_bandit(5), params, jax.random.key(0),
      ...                     horizon=1000, seeds=4, checkpoints=[1000])
      >>> res.regret.shape
      (2, 4, 1)

    References:
      Azize & Basu, Concentrated Differential Privacy for Bandits, SaTML 2024
      (arXiv 2309.00557), AdaC-UCB; A. Azize, PhD thesis (2024), Algorithm 7,
      eq. (5.4), Theorem 5.6; Azize & Basu, NeurIPS 2022 (AdaP-UCB).
    """

    reasons = _validate.opt_outs(private, **{"clip_rewards=False": None if clip_rewards else UNCLIPPED})

    def check(params: AdaCUCBParams) -> None:
        _validate.budget("adac_ucb", GAUSSIAN, params, needs=("rho",))
        _validate.budget_value("rho", params.rho)
        _validate.positive("beta", params.beta, allow_inf=False)
        _validate.refuse_finite_budget("adac_ucb", "rho", params.rho, reasons, "ρ-zCDP", private)

    def calibrate(params: AdaCUCBParams) -> tuple[jax.Array, jax.Array]:
        _validate.budget("adac_ucb", GAUSSIAN, params, needs=("rho",))
        return jnp.asarray(params.beta, jnp.float32), gaussian_stddev(params.rho, 1.0)

    return _episodic_ucb.episodic_ucb(
        num_arms,
        horizon,
        private=True,
        clip_rewards=clip_rewards,
        init_count=init_count,
        tie_break=tie_break,
        calibrate=calibrate,
        check=check,
        params_class=AdaCUCBParams,
        guarantee_holds=private and not reasons,
        name="adac_ucb",
        fast_path=FastPath(
            _episodic_ucb.simulate,
            (
                ("simulates", "AdaC-UCB (adac_ucb)"),
                ("budget", "rho"),
                ("guarantee", "ρ-zCDP"),
                ("calibrate", calibrate_adac),
            ),
        ),
    )


__all__ = [
    "AdaCUCBParams",
    "EpisodicUCBState",
    "adac_ucb",
    "adac_ucb_index",
    "adac_ucb_noise_stddev",
    "adac_ucb_regret_bound",
]
