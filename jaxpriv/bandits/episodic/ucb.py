"""AdaC-UCB, AdaP-UCB, AdaP-KLUCB and episodic UCB episode by episode, named by their params class (deprecated).

The simulator itself is the policies' own (``jaxpriv.bandits._episodic_ucb.simulate``, in their
``Spec.fast_path``), run by ``jaxpriv.sweep(learner, env, params, ..., simulator="episodes")`` or
``jaxpriv.bandits.simulate_episodes(learner, ...)``. ``simulate_ucb_episodes(params, ...)`` builds the
learner its params class names and runs it that way; it is kept for existing code.
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
from jax.typing import ArrayLike

from jaxpriv import _validate
from jaxpriv._base import Learner, PRNGKey, check_horizon, spec_of
from jaxpriv.bandits._episodic_ucb import HOOK, simulate
from jaxpriv.bandits._fast_path import check_policy
from jaxpriv.bandits._sampling import RewardSum, bernoulli_reward_sum
from jaxpriv.bandits.adac_ucb import AdaCUCBParams, adac_ucb
from jaxpriv.bandits.adap_klucb import AdaPKLUCBParams, adap_klucb
from jaxpriv.bandits.adap_ucb import AdaPUCBParams, adap_ucb
from jaxpriv.bandits.episodic._sweep import factory_of, simulate_episodes
from jaxpriv.bandits.ucb import UCBParams, ucb
from jaxpriv.envs.bandits import BernoulliParams
from jaxpriv.sim import Result

__all__ = ["HOOK", "RewardSum", "bernoulli_reward_sum", "simulate", "simulate_ucb_episodes"]


#: The one table of the old entry point: params class -> the step-level factory it names.
_FACTORIES = {AdaCUCBParams: adac_ucb, AdaPUCBParams: adap_ucb, AdaPKLUCBParams: adap_klucb, UCBParams: ucb}


def simulate_ucb_episodes(
    params: AdaCUCBParams | AdaPUCBParams | AdaPKLUCBParams | UCBParams,
    means: ArrayLike,
    key: PRNGKey,
    horizon: int,
    seeds: int = 100,
    checkpoints: Any = "log",
    *,
    init_count: str = "samples",
    tie_break: str = "random",
    chunk: int | None = None,
    reward_sum: RewardSum = bernoulli_reward_sum,
    policy: Learner | None = None,
    private: bool = True,
) -> Result:
    """AdaC-UCB, AdaP-UCB, AdaP-KLUCB or episodic UCB (by the params' class) on a Bernoulli bandit, episode by episode.

    One scan step per episode (``K (bitlen(T) + 1)`` steps bound the number of
    episodes), vmapped over seeds and over a params grid with common random
    numbers: the same seed keys at every grid point. The algorithm is exactly
    that of ``adac_ucb`` / ``adap_ucb`` / ``adap_klucb`` / ``ucb`` (same index, noise
    family and calibration, tie-breaking and ``init_count`` convention); each episode's reward sum is drawn from its
    exact distribution, ``Binomial(n, μ_a)`` (``jaxpriv.bandits._sampling``: a
    float32-exact sampler), and its regret is ``n Δ_a`` exactly.

    Args:
      params: ``AdaCUCBParams`` (AdaC-UCB, Gaussian), ``AdaPUCBParams`` / ``AdaPKLUCBParams``
        (AdaP-UCB / AdaP-KLUCB, Laplace) or ``UCBParams`` (non-private), exactly: the class
        names the algorithm, and any other (a subclass, ``DPUCBParams``) is refused; a leaf with
        a leading grid axis (e.g. ``rho=[G]``, ``epsilon=[G]``) is swept.
      means: ``[K]`` arm means in ``[0, 1]`` (or ``[G, K]`` to sweep them), or ``BernoulliParams``.
      key: the base key; seed ``i`` uses ``split(key, seeds)[i]``.
      horizon: ``T >= K``, ``T < 2²⁴``.
      seeds: the number of runs.
      checkpoints: ``None`` (every step), ``"log"`` or a sequence of steps; ``T`` is always included.
      init_count, tie_break: as in ``adac_ucb``.
      chunk: run the seeds in batches of this size.
      reward_sum: ``(key, n, mean) -> sum`` of an episode's rewards (a test hook;
        the default is the exact Binomial). Another hook's sums are not bounded by the
        rewards' range, so the guarantee does not hold: a finite budget is then refused
        unless ``private=False``.
      policy: optional, the step-level policy these episodes stand in for (e.g.
        the ``adac_ucb(K, ...)`` of a step-level comparison); a ``horizon`` past
        the one it declares raises ``ValueError`` (``adac_ucb`` and ``ucb`` are
        anytime and declare none), and so does a policy of another params class
        (another algorithm).
      private: ``False`` runs a ``reward_sum`` hook at a finite budget, the result marked
        not private (``Result.private``).

    Returns:
      A ``Result`` with leading axes ``[G, seeds]`` (or ``[seeds]``); its ``private``
      says whether the simulated policy's guarantee holds.
    """
    if not isinstance(means, BernoulliParams):
        means = BernoulliParams(means)
    num_arms = int(jnp.shape(means.means)[-1])
    factory = factory_of(params, _FACTORIES)
    learner = factory(num_arms, _validate.horizon(horizon), init_count=init_count, tie_break=tie_break)
    check_horizon(horizon, policy, "policy")
    check_policy(learner, policy, dict(spec_of(learner).fast_path.options)["simulates"])
    return simulate_episodes(
        learner, params, means, key, horizon, seeds, checkpoints, chunk=chunk, reward_sum=reward_sum, private=private
    )
