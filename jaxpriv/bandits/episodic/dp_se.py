"""Exact epoch-level simulation of DP-SE: one scan step per epoch.

An epoch of DP-SE pulls each of the ``m`` active arms ``R_e`` times round-robin and
then releases only the noisy epoch means; nothing inside the epoch depends on
the individual rewards. For Bernoulli arms an epoch is therefore simulated
exactly in one step: arm ``a``'s reward sum is one ``Binomial(R_e, μ_a)`` draw,
the Laplace noise and the elimination are those of ``jaxpriv.bandits.dp_se``
(the same ``dp_se_reps`` / ``dp_se_eliminate`` code), and the pulls up to any
checkpoint ``h`` inside the epoch follow from the round-robin: with
``L = h - t_start`` rounds played, the active arm of rank ``r`` has
``⌊L/m⌋ + [r < L mod m]`` pulls. Once one arm is left, one more step plays it
until ``T``. ``T = 10⁷`` then costs ``bitlen(T)//2 + 3`` scan steps per seed.

The step-level policy is the reference; ``tests/bandits/test_bandits_dp_se.py`` checks
that both give the same distribution of regret and of closed epochs.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Any

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from jaxpriv import _validate
from jaxpriv._base import Learner, PRNGKey, check_horizon, check_params_class, spec_of
from jaxpriv.bandits import _sampling
from jaxpriv.bandits.dp_se import (
    DPSEParams,
    calibrate,
    check_params,
    dp_se,
    dp_se_eliminate,
    dp_se_reps,
    validate_static,
)
from jaxpriv.bandits.episodic._sweep import EpisodeResult, check_policy, episode_sweep, simulate_episodes
from jaxpriv.bandits.episodic.ucb import RewardSum, bernoulli_reward_sum
from jaxpriv.envs.bandits import BernoulliParams, bernoulli_bandit
from jaxpriv.sim import SimParams, normalize_checkpoints, spec_ndims

__all__ = ["simulate", "simulate_dp_se_epochs"]

#: Why a ``reward_sum`` hook voids the guarantee (``_validate.opt_outs``).
HOOK = "the epoch's reward sums come from the hook, unclipped: one reward may move a sum by more than 1"


def _round_robin_pulls(active: jax.Array, rounds: jax.Array) -> jax.Array:
    """Pulls of each arm after ``rounds`` round-robin rounds over ``active`` (``rounds`` of any shape, int32).

    Returns ``rounds.shape + [K]``.
    """
    m = jnp.maximum(jnp.sum(active, dtype=jnp.int32), 1)
    rank = jnp.cumsum(active, dtype=jnp.int32) - 1
    rounds = rounds[..., None]
    pulls = rounds // m + (rank < rounds % m).astype(jnp.int32)
    return jnp.where(active, pulls, 0)


@lru_cache(maxsize=64)
def _dp_se_simulator(
    num_arms: int,
    horizon: int,
    checkpoints: tuple[int, ...],
    reward_sum: RewardSum,
) -> Callable[[PRNGKey, SimParams], tuple[jax.Array, jax.Array, jax.Array]]:
    K, T = num_arms, horizon
    # Epoch e lasts >= 2 R_e > 64 log(16) 4^e rounds, so fewer than log4(T) epochs close; one
    # more step starts the epoch the horizon cuts (or plays the last arm to T).
    num_steps = T.bit_length() // 2 + 3
    ckpts = jnp.asarray(checkpoints, jnp.int32)

    def one(key: PRNGKey, params: SimParams):
        lp = params.learner
        inv_epsilon, log_inv_beta = calibrate(lp, T)
        means = jnp.broadcast_to(jnp.asarray(params.env.means, jnp.float32), (K,))
        gaps = jnp.max(means) - means

        def body(carry, i):
            active, epochs, t, pulls_at, epochs_at = carry
            k_sum, k_noise = jax.random.split(jax.random.fold_in(key, i), 2)
            m = jnp.sum(active, dtype=jnp.int32)
            epoch = epochs + 1
            reps = dp_se_reps(epoch, m, inv_epsilon, log_inv_beta, T)
            length = jnp.where(m > 1, m * reps, T - t)  # one arm left: play it to T
            n_eff = jnp.clip(T - t, 0, length)
            closes = (m > 1) & (n_eff == length)
            sums = reward_sum(k_sum, jnp.where(active & closes, reps, 0), means).astype(jnp.float32)
            _, kept = dp_se_eliminate(k_noise, sums, active, epoch, reps, inv_epsilon, log_inv_beta)
            pulls_at = pulls_at + _round_robin_pulls(active, jnp.clip(ckpts - t, 0, n_eff))
            epochs_at = epochs_at + (closes & (ckpts >= t + n_eff)).astype(jnp.int32)
            carry = (
                jnp.where(closes, kept, active),
                epochs + closes.astype(jnp.int32),
                t + n_eff,
                pulls_at,
                epochs_at,
            )
            return carry, None

        nc = ckpts.shape[0]
        init = (
            jnp.ones(K, bool),
            jnp.zeros((), jnp.int32),
            jnp.zeros((), jnp.int32),
            jnp.zeros((nc, K), jnp.int32),
            jnp.zeros(nc, jnp.int32),
        )
        steps = jnp.arange(num_steps, dtype=jnp.int32)
        (_, _, _, pulls_at, epochs_at), _ = jax.lax.scan(body, init, steps)
        regret = pulls_at.astype(jnp.float32) @ gaps
        return regret, epochs_at, pulls_at[-1]

    return one


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
) -> EpisodeResult:
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
        private (``EpisodeResult.private``).

    Returns:
      An ``EpisodeResult``: ``episodes`` counts the epochs closed at or before each
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


def simulate(
    learner: Learner,
    params: DPSEParams,
    means: ArrayLike,
    key: PRNGKey,
    horizon: int,
    seeds: int = 100,
    checkpoints: Any = "log",
    *,
    chunk: int | None = None,
    reward_sum: RewardSum = bernoulli_reward_sum,
    private: bool = True,
) -> EpisodeResult:
    """DP-SE's fast path (``Spec.fast_path``, ``FastPath("dp_se")``): ``learner``'s epochs.

    The per-call options are ``simulate_dp_se_epochs``'s.
    """
    if not isinstance(means, BernoulliParams):
        means = BernoulliParams(means)
    spec = spec_of(learner)
    K, T = validate_static(int(jnp.shape(means.means)[-1]), horizon)
    if learner.horizon != T:
        raise ValueError(f"horizon {T} differs from the learner's horizon {learner.horizon}: DP-SE's schedule uses T")
    if spec.num_arms is not None and spec.num_arms != K:
        raise ValueError(f"the learner ({spec.name}) plays {spec.num_arms} arms but the instance has {K} means")
    if T >= _sampling.MAX_COUNT:
        raise ValueError(f"horizon must be < 2**24 (exact float32 Binomial counts), got {T}")
    check_params_class(learner, params, "learner", "params")
    check_params(params)
    learner.check(params)
    reasons = _validate.opt_outs(private, reward_sum=None if reward_sum is bernoulli_reward_sum else HOOK)
    _validate.refuse_finite_budget("simulate_dp_se_epochs (DP-SE)", "epsilon", params.epsilon, reasons, "ε-DP", private)
    bernoulli_bandit(K).check(means)
    ckpts = normalize_checkpoints(T, checkpoints)
    one = _dp_se_simulator(K, T, ckpts, reward_sum)
    ndims = spec_ndims(learner, bernoulli_bandit(K))
    regret, epochs, pulls = episode_sweep(one, SimParams(params, means), key, seeds, chunk, ndims)
    return EpisodeResult(
        jnp.asarray(ckpts, jnp.int32), regret, epochs, pulls, bool(spec.private) and private and not reasons
    )
