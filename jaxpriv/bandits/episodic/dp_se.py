"""DP-SE epoch by epoch, named by its params class (deprecated).

The simulator itself is the policy's own (``jaxpriv.bandits.dp_se.simulate``, in its ``Spec.fast_path``),
run by ``jaxpriv.sweep(learner, env, params, ..., simulator="episodes")`` or
``jaxpriv.bandits.simulate_episodes(learner, ...)``. ``simulate_dp_se_epochs(params, ...)`` builds
``dp_se(K, T)`` and runs it that way; it is kept for existing code.
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
from jax.typing import ArrayLike

from jaxpriv._base import Learner, PRNGKey, check_horizon
from jaxpriv.bandits._fast_path import check_policy
from jaxpriv.bandits._sampling import RewardSum, bernoulli_reward_sum
from jaxpriv.bandits.dp_se import HOOK, DPSEParams, dp_se, simulate, validate_static
from jaxpriv.bandits.episodic._sweep import simulate_episodes
from jaxpriv.envs.bandits import BernoulliParams
from jaxpriv.sim import Result

__all__ = ["HOOK", "simulate", "simulate_dp_se_epochs"]


def simulate_dp_se_epochs(
    params: DPSEParams,
    means: ArrayLike,
    key: PRNGKey,
    horizon: int,
    seeds: int = 100,
    checkpoints: Any = "log",
    *,
    chunk: int | None = None,
    reward_sum: RewardSum = bernoulli_reward_sum,
    policy: Learner | None = None,
    private: bool = True,
) -> Result:
    """DP-SE (``DPSEParams``) on a Bernoulli bandit, one epoch per scan step.

    The algorithm is exactly ``jaxpriv.bandits.dp_se(K, horizon)`` (same schedule,
    noise, elimination rule and round-robin); each epoch's per-arm reward sums are
    drawn from their exact distribution, ``Binomial(R_e, μ_a)``, and the regret at
    each checkpoint is ``Σ_a Δ_a N_a(h)`` with the round-robin counts, exactly.
    Vmapped over seeds and a params grid with common random numbers.

    Args:
      params: ``DPSEParams`` (exactly: a subclass is refused); a leaf with a leading grid axis
        (e.g. ``epsilon=[G]``) is swept.
        ``beta=None`` is ``1/T``.
      means: ``[K]`` arm means in ``[0, 1]`` (or ``[G, K]`` to sweep them), or ``BernoulliParams``.
      key: the base key; seed ``i`` uses ``split(key, seeds)[i]``.
      horizon: ``T >= K``, ``T < 2²⁴``.
      seeds: the number of runs.
      checkpoints: ``None`` (every step), ``"log"`` or a sequence of steps; ``T`` is always included.
      chunk: run the seeds in batches of this size.
      reward_sum: ``(key, n, means) -> sums`` of an epoch's rewards per arm (a test hook;
        the default is the exact Binomial). Another hook's sums are not bounded by the rewards'
        range, so the ε-DP guarantee does not hold: a finite ``epsilon`` then needs ``private=False``.
      policy: optional, the step-level policy these epochs stand in for; a ``horizon``
        other than the one it declares raises ``ValueError`` (DP-SE's schedule depends on ``T``),
        and so does a policy of another params class.
      private: ``False`` runs a ``reward_sum`` hook at a finite ``epsilon``, the result marked not
        private (``Result.private``).

    Returns:
      A ``Result``: ``episodes`` counts the epochs closed at or before each
      checkpoint (``state.epochs`` of the step-level policy); leading axes ``[G, seeds]`` (or ``[seeds]``);
      ``private`` says whether DP-SE's guarantee holds.
    """
    if not isinstance(means, BernoulliParams):
        means = BernoulliParams(means)
    K, T = validate_static(int(jnp.shape(means.means)[-1]), horizon)
    if type(params) is not DPSEParams:
        kind = type(params)
        raise ValueError(f"params must be DPSEParams (exactly), got {kind.__module__}.{kind.__qualname__}")
    learner = dp_se(K, T)
    check_horizon(T, policy, "policy")
    if policy is not None and policy.horizon != T:
        raise ValueError(f"horizon {T} differs from the policy's horizon {policy.horizon}: DP-SE's schedule uses T")
    check_policy(learner, policy, "DP-SE (dp_se)")
    return simulate_episodes(
        learner, params, means, key, T, seeds, checkpoints, chunk=chunk, reward_sum=reward_sum, private=private
    )
