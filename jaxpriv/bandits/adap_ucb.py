"""AdaP-UCB: ε-global DP UCB with adaptive episodes and forgetting (Azize & Basu, NeurIPS 2022).

The policy is AdaC-UCB's episodic skeleton (``jaxpriv.bandits._episodic_ucb``: Algorithm 1 of the
paper, identical to the thesis's Algorithm 7) with the Laplace mechanism in place of the Gaussian one
and the index of the paper's eq. (7). ``adap_klucb`` (``jaxpriv.bandits.adap_klucb``) shares all of
this module but the index.
"""

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
from jaxpriv.mechanisms import LAPLACE
from jaxpriv.theory import adap_ucb_regret_bound


class AdaPUCBParams(NamedTuple):
    """Params of ``adap_ucb``.

    Attributes:
      epsilon: the ε-global DP budget ε > 0, required (no default: a budget is never implied;
        ``None`` is refused); ``inf``, given explicitly, removes the Laplace noise and the
        privacy term of the index (the non-private limit).
      alpha: the optimism parameter α > 0 (Theorem 7 needs α > 3; the paper's experiments
        use α = 3.1).
    """

    epsilon: ArrayLike | None
    alpha: ArrayLike = 3.1


def adap_noise_scale(epsilon: ArrayLike, n: ArrayLike) -> jax.Array:
    """``b = 1/(ε n_a)``: the Laplace mechanism for the mean of ``n_a`` rewards in [0, 1] (sensitivity 1/n_a).

    With ``n_a = ½ N_a(t_ℓ - 1)`` this is the paper's ``Lap(2/(ε N_a(t_ℓ - 1)))`` (§4, above eq. (7)).
    """
    return unit_scale(epsilon) / jnp.asarray(n, jnp.float32)


def unit_scale(epsilon: ArrayLike) -> jax.Array:
    """The Laplace scale at ``n = 1``, ``1/ε`` (float32; 0 at ``ε = inf``)."""
    return jnp.float32(1.0) / jnp.asarray(epsilon, jnp.float32)


def _ucb_index(means: jax.Array, n: jax.Array, t: jax.Array, alpha: jax.Array, unit: jax.Array) -> jax.Array:
    """Eq. (7) with ``unit = 1/ε``: ``μ̃ + sqrt(α log(2t_ℓ)/(2n)) + α log(t_ℓ)/(ε n)``."""
    t = jnp.asarray(t, jnp.float32)
    return means + jnp.sqrt(alpha * jnp.log(2.0 * t) / (2.0 * n)) + alpha * jnp.log(t) * unit / n


def adap_ucb_index(means: ArrayLike, n: ArrayLike, t: ArrayLike, epsilon: ArrayLike, alpha: ArrayLike) -> jax.Array:
    """The AdaP-UCB index of Azize & Basu (2022), eq. (7), without its noise (the noise is already in ``means``).

    ``I_a = μ̃_a + sqrt(α log(2 t_ℓ) / (2 n_a)) + α log(t_ℓ) / (ε n_a)``, ``n_a = ½ N_a(t_ℓ - 1)``.

    Args:
      means: ``[K]``, the released (noisy) mean ``μ̃_a`` of each arm's last episode.
      n: ``[K]``, the number of samples ``n_a`` in that episode.
      t: the start ``t_ℓ`` of the episode being decided.
      epsilon: ε (``inf``: the non-private index, the last term vanishes).
      alpha: α.

    Returns:
      ``[K]`` float32 indices.
    """
    return _ucb_index(
        jnp.asarray(means, jnp.float32),
        jnp.asarray(n, jnp.float32),
        jnp.asarray(t, jnp.float32),
        jnp.asarray(alpha, jnp.float32),
        unit_scale(epsilon),
    )


def _check(component: str, params) -> None:
    _validate.budget(component, LAPLACE, params, needs=("epsilon",), refuses=("rho",))
    _validate.budget_value("epsilon", params.epsilon)
    _validate.positive("alpha", params.alpha, allow_inf=False)


def _calibrate(component: str, params) -> tuple[jax.Array, jax.Array]:
    _validate.budget(component, LAPLACE, params, needs=("epsilon",), refuses=("rho",))
    return jnp.asarray(params.alpha, jnp.float32), unit_scale(params.epsilon)


def calibrate_ucb(params: AdaPUCBParams) -> tuple[jax.Array, jax.Array]:
    """``(α, 1/ε)``, the state's ``beta`` and ``unit_stddev`` (the Laplace scale at ``n = 1``)."""
    return _calibrate("adap_ucb", params)


#: The algorithms' names, and what their exact episode simulator needs besides (``Spec.fast_path``).
_LABELS = {"adap_ucb": "AdaP-UCB", "adap_klucb": "AdaP-KLUCB"}
_EPISODES = (("budget", "epsilon"), ("guarantee", "ε-DP"))


def _adap_learner(
    component: str, num_arms, horizon, init_count, tie_break, calibrate, index_fn, params_class: type
) -> Learner:
    """The AdaP episodic skeleton (Laplace release, rewards in [0, 1]) with ``index_fn``, taking ``params_class``.

    Its exact episode simulator (``Spec.fast_path``) runs the same ``calibrate`` (module level: one compiled
    simulator per algorithm), index and Laplace release.
    """
    return _episodic_ucb.episodic_ucb(
        num_arms,
        horizon,
        private=True,
        clip_rewards=True,
        init_count=init_count,
        tie_break=tie_break,
        calibrate=calibrate,
        check=lambda params: _check(component, params),
        params_class=params_class,
        guarantee_holds=True,
        name=component,
        index_fn=index_fn,
        noise=_episodic_ucb.laplace_noise,
        fast_path=FastPath(
            _episodic_ucb.simulate,
            (("simulates", f"{_LABELS[component]} ({component})"), *_EPISODES, ("calibrate", calibrate)),
        ),
    )


def adap_ucb_bound(params: AdaPUCBParams, env_params: Any, spec: Spec, horizon: int) -> float | None:
    """Theorem 7 of Azize & Basu (NeurIPS 2022) for AdaP-UCB (``None`` unless ``alpha > 3``)."""
    del spec
    alpha = float(np.asarray(params.alpha))
    if not alpha > 3:
        return None
    epsilon = float(np.asarray(params.epsilon))
    return float(adap_ucb_regret_bound(np.asarray(env_params.means), horizon, epsilon, alpha))


def _example(horizon: int, dim: int) -> declare.ExampleRun:
    """``adap_ucb`` at one small configuration (``jaxpriv.testing.learner_examples``)."""
    from jaxpriv.envs._settings import setting

    s = setting("bernoulli", dim)
    return adap_ucb(dim, horizon), s.env, AdaPUCBParams(1.0), s.params


@declare.learner("adap_ucb", params=AdaPUCBParams, bound=adap_ucb_bound, example=_example)
def adap_ucb(
    num_arms: int,
    horizon: int | None = None,
    *,
    init_count: str = "samples",
    tie_break: str = "random",
) -> Learner:
    """AdaP-UCB: ε-global DP UCB with per-arm doubling, forgetting and Laplace noise.

    Algorithm 1 of [N22] (Azize & Basu, NeurIPS 2022; References) with the index of eq. (7): play
    each arm once; then episode ``ℓ``
    starts at ``t_ℓ``, plays

        ``a_ℓ = argmax_a μ̃_a + sqrt(α log(2t_ℓ)/(2 n_a)) + α log(t_ℓ)/(ε n_a)``

    until ``N_{a_ℓ}`` has doubled (line 7). ``μ̃_a`` is the mean of the ``n_a = ½ N_a(t_ℓ - 1)``
    rewards of the last episode in which ``a`` was played (forgetting) plus one draw of
    ``Lap(1/(ε n_a)) = Lap(2/(ε N_a(t_ℓ - 1)))`` ([N22] §4, the line above eq. (7)), made when that
    episode closes and reused until ``a``'s next episode closes (one release per closed episode,
    as Lemma 1's mechanism; docs/algorithms/baselines.md, 'Decoding choices').
    ``n_a = 1`` after the initial pull (``init_count="samples"``, a standard choice the paper leaves
    open; the paper's ``½N_a = 0.5`` is ``"half"``). The final episode
    is truncated at the horizon.

    Privacy: ε-global DP ([N22] Def. 2; Theorem 6 for the framework, Theorem 7 for AdaP-UCB):
    the action sequence is ε-DP with respect to the reward sequence, neighbours differing in one
    reward (event level, replace-one). Each released mean is the Laplace mechanism with scale
    ``Δ/ε``, ``Δ = 1/n_a`` for rewards in ``[0, 1]``; the episodes' reward blocks are disjoint, so
    by parallel composition (Lemma 1) and post-processing the actions are ε-DP. Rewards are always
    clipped to ``[0, 1]`` (NaN / ±inf replaced by 0 first), so the guarantee holds whatever the
    environment returns; Bernoulli rewards are unaffected.

    Regret (Theorem 7, rewards in [0, 1], α > 3):
    ``Reg_T <= Σ_{Δ_a>0} (16α log T / min{Δ_a, ε} + α/(α - 3))``; see ``adap_ucb_regret_bound``.

    Args:
      num_arms: ``K >= 2``.
      horizon: optional ``T``; only validated (``T >= K``): the algorithm is anytime.
      init_count: ``n_a`` after the initial pull: ``"samples"`` (1, a standard choice) or ``"half"`` (0.5).
      tie_break: ``"random"`` (uniform among the maximisers, a standard choice) or ``"first"``.

    Returns:
      A ``Learner`` with params ``AdaPUCBParams`` (any other params class is refused: ``DPUCBParams`` and
      ``LDPUCBParams`` too, whose α default differs); actions are int32 arm indices, the feedback
      is the reward of the played arm.

    Examples:
      >>> import jax, jax.numpy as jnp, jaxpriv
      >>> from jaxpriv.envs import BernoulliParams, bernoulli_bandit
      >>> params = jaxpriv.SimParams(AdaPUCBParams(epsilon=jnp.array([0.5, 1.0])), BernoulliParams())
      >>> res = jaxpriv.sweep(adap_ucb(5), bernoulli_bandit(5), params, jax.random.key(0),
      ...                     horizon=1000, seeds=4, checkpoints=[1000])
      >>> res.regret.shape
      (2, 4, 1)

    References:
      Azize & Basu, When Privacy Meets Partial Information: A Refined Analysis of Differentially
      Private Bandits, NeurIPS 2022 [N22], Algorithm 1, eq. (7), Theorems 6 and 7;
      A. Azize, PhD thesis (2024), eq. (5.1), Theorem 5.3.
    """
    return _adap_learner("adap_ucb", num_arms, horizon, init_count, tie_break, calibrate_ucb, _ucb_index, AdaPUCBParams)


__all__ = [
    "AdaPUCBParams",
    "EpisodicUCBState",
    "adap_noise_scale",
    "adap_ucb",
    "adap_ucb_index",
    "adap_ucb_regret_bound",
]
