"""Episodic UCB with forgetting: the non-private counterpart of AdaC-UCB (thesis eq. (5.4), no privacy terms)."""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from jaxpriv import _validate, declare
from jaxpriv._base import Learner
from jaxpriv.bandits import _episodic_ucb
from jaxpriv.bandits._episodic_ucb import EpisodicUCBState
from jaxpriv.bandits._fast_path import FastPath


class UCBParams(NamedTuple):
    """Params of ``ucb``.

    Attributes:
      beta: the optimism parameter β > 0 (the paper's experiments use β = 1).
    """

    beta: ArrayLike = 1.0


def ucb_index(means: ArrayLike, n: ArrayLike, t: ArrayLike, beta: ArrayLike) -> jax.Array:
    """The non-private index ``μ̂_a + sqrt(β log t_ℓ / (2 n_a))`` (thesis eq. (5.4) without its privacy terms).

    Args:
      means: ``[K]``, the mean reward of each arm's last episode.
      n: ``[K]``, the number of samples in that episode.
      t: the start ``t_ℓ`` of the episode being decided.
      beta: β.

    Returns:
      ``[K]`` float32 indices.
    """
    return _episodic_ucb.index(means, n, t, beta, jnp.zeros((), jnp.float32))


def _calibrate(params: UCBParams) -> tuple[jax.Array, jax.Array]:
    """``(β, 0)``, the state's ``beta`` and ``unit_stddev``: no release noise (module level, for ``Spec.fast_path``)."""
    return jnp.asarray(params.beta, jnp.float32), jnp.zeros((), jnp.float32)


def _example(horizon: int, dim: int) -> declare.ExampleRun:
    """``ucb`` at one small configuration (``jaxpriv.testing.learner_examples``)."""
    from jaxpriv.envs._settings import setting

    s = setting("bernoulli", dim)
    return ucb(dim, horizon), s.env, UCBParams(), s.params


@declare.learner("ucb", params=UCBParams, example=_example)
def ucb(
    num_arms: int,
    horizon: int | None = None,
    *,
    clip_rewards: bool = True,
    init_count: str = "samples",
    tie_break: str = "random",
) -> Learner:
    """UCB with adaptive episodes and forgetting, the non-private baseline of AdaC-UCB.

    The skeleton of Algorithm 7 of Azize's thesis (2024, p. 104) (play each arm once; then episodes
    that play ``a_ℓ = argmax_a I_a`` until ``N_{a_ℓ}`` doubles) with the index
    of eq. (5.4) stripped of its privacy terms (a reconstruction: the paper describes this baseline
    only in words; docs/algorithms/zcdp_bandits.md, 'Decoding choices'):
    ``I_a = μ̂_a + sqrt(β log(t_ℓ) / (2 n_a))``, where ``μ̂_a`` and ``n_a`` are the
    mean and size of the last episode in which ``a`` was played (forgetting).
    The final episode is truncated at the horizon.

    Privacy: none (this is the baseline). Regret: the non-private part of
    Theorem 5.6, ``Σ_{Δ_a>0} (8β log T/Δ_a + 2β/(β-3))`` for β > 3.

    Args:
      num_arms: ``K >= 2``.
      horizon: optional ``T``; only validated (``T >= K``): the algorithm is anytime.
      clip_rewards: clip rewards to ``[0, 1]`` (the range the confidence bonus assumes).
      init_count: ``n_a`` after the initial pull: ``"samples"`` (1, a standard choice the paper
        leaves open; docs/algorithms/zcdp_bandits.md, 'Decoding choices')
        or ``"half"`` (the paper's ``½N_a = 0.5``).
      tie_break: ``"random"`` (uniform among the maximisers, a standard choice) or ``"first"``.

    Returns:
      A ``Learner`` with params ``UCBParams`` (any other params class is refused, ``AdaCUCBParams``
      included; it declares itself not private: ``Result.private`` is ``False``); actions are int32 arm indices,
      the feedback is the reward of the played arm.

    Examples:
      >>> import jax, jaxpriv
      >>> from jaxpriv.envs import BernoulliParams, bernoulli_bandit
      >>> res = jaxpriv.run(ucb(5), bernoulli_bandit(5), jaxpriv.SimParams(UCBParams(), BernoulliParams()),
      ...                   jax.random.key(0), horizon=1000, checkpoints=[1000])
      >>> res.regret.shape
      (1,)

    References:
      Azize & Basu, Concentrated Differential Privacy for Bandits, SaTML 2024, §VII
      ("a UCB algorithm with adaptive episodes and forgetting"); A. Azize, PhD
      thesis (2024), Algorithm 7 and eq. (5.4).
    """

    def check(params: UCBParams) -> None:
        _validate.positive("beta", params.beta, allow_inf=False)

    return _episodic_ucb.episodic_ucb(
        num_arms,
        horizon,
        private=False,
        clip_rewards=clip_rewards,
        init_count=init_count,
        tie_break=tie_break,
        calibrate=_calibrate,
        check=check,
        params_class=UCBParams,
        guarantee_holds=False,  # not private
        name="ucb",
        fast_path=FastPath(
            _episodic_ucb.simulate,
            (("simulates", "episodic UCB (ucb)"), ("budget", None), ("guarantee", None), ("calibrate", _calibrate)),
        ),
    )


__all__ = ["EpisodicUCBState", "UCBParams", "ucb", "ucb_index"]
