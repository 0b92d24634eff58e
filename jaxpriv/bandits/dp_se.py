"""DP-SE: ε-DP successive elimination (Sajed & Sheffet, ICML 2019).

Epochs ``e = 1, 2, ...`` over the active set ``S`` (all ``K`` arms at first). In
epoch ``e`` every active arm is pulled ``R_e`` times (round-robin over ``S``), the
mean of those ``R_e`` rewards gets one ``Lap(1/(ε R_e))`` draw, and an arm whose
noisy mean is below the best active one by more than ``2(h_e + c_e)`` is removed.
Each reward enters exactly one released mean (that of its arm in its epoch), whose
sensitivity is ``1/R_e`` for rewards in ``[0, 1]``: by parallel composition the
sequence of actions is ε-DP with respect to the rewards (event level, one reward
replaced). Once one arm is left it is played until ``T``.

The schedule is that of the author's implementation (GitHub ``achraf-azize/DP-BAI``,
``algorithms/dp_se.py``, ``compute_Re`` / ``do_eliminations``; docs/algorithms/baselines.md, 'Decoding choices'),
with ``δ = β``:

* ``Δ_e = 2^{-e}``, ``L₈ = log(8|S|e²/β)``, ``L₄ = log(4|S|e²/β)``;
* ``R_e = ⌊max(32 L₈/Δ_e², 8 L₄/(ε Δ_e)) + 1⌋``;
* ``h_e = sqrt(L₈/(2 R_e))``, ``c_e = L₄/(ε R_e)``.

The shared pieces (``dp_se_reps``, ``dp_se_threshold``, ``dp_se_eliminate``) are
used by the step-level policy here and by the epoch-level simulator
``jaxpriv.bandits.episodic.dp_se``, so both run the same algorithm.

**The exact epoch-level simulator** (``simulate``, DP-SE's ``Spec.fast_path``):

Exact epoch-level simulation of DP-SE: one scan step per epoch.

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

import math
from collections.abc import Callable
from functools import lru_cache
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxpriv import _rng, _validate, declare
from jaxpriv._base import (
    Learner,
    NonfiniteInfo,
    PRNGKey,
    Spec,
    check_params_class,
    poison_past_horizon,
    spec_of,
    zero_nonfinite,
)
from jaxpriv._kahan import KahanSum, kahan_add
from jaxpriv.bandits import _sampling
from jaxpriv.bandits._fast_path import FastPath, episode_sweep
from jaxpriv.bandits._sampling import RewardSum, bernoulli_reward_sum
from jaxpriv.envs.bandits import BernoulliParams, bernoulli_bandit
from jaxpriv.mechanisms import LAPLACE
from jaxpriv.sim import Result, SimParams, normalize_checkpoints, spec_ndims
from jaxpriv.theory import dp_se_regret_bound

__all__ = [
    "DPSEParams",
    "DPSEState",
    "dp_se",
    "dp_se_eliminate",
    "dp_se_regret_bound",
    "dp_se_reps",
    "dp_se_threshold",
]


#: Why ``clip_rewards=False`` voids the guarantee (``_validate.opt_outs``).
UNCLIPPED = "rewards outside [0, 1] are not clipped, so one reward may move a released mean by more than 1/R_e"


class DPSEParams(NamedTuple):
    """Params of ``dp_se``.

    Attributes:
      epsilon: the ε-DP budget, required (no default: a budget is never implied);
        ``inf``, given explicitly, removes the noise and the privacy terms of the
        schedule (non-private successive elimination with the same constants).
      beta: the failure probability β in ``(0, 1)``; ``None`` is ``1/T`` (as in the
        experiments of Azize & Basu 2022).
    """

    epsilon: ArrayLike | None = None
    beta: ArrayLike | None = None


class DPSEState(NamedTuple):
    """State of DP-SE (one seed)."""

    active: jax.Array  # shape=[K], bool, the active set S
    epochs: jax.Array  # shape=(), int32, epochs closed so far (the current epoch is e = epochs + 1)
    reps: jax.Array  # shape=(), int32, R_e of the current epoch (capped at T // |S| + 1)
    played: jax.Array  # shape=(), int32, rounds played in the current epoch
    sums: jax.Array  # shape=[K], float32, the current epoch's reward sums (Kahan-compensated)
    comp: jax.Array  # shape=[K], float32, Kahan compensation of ``sums``
    released: jax.Array  # shape=[K], float32, noisy means of the last closed epoch each arm took part in
    inv_epsilon: jax.Array  # shape=(), float32, 1/ε (0 when non-private)
    log_inv_beta: jax.Array  # shape=(), float32, log(1/β)


def _logs(epoch: jax.Array, num_active: jax.Array, log_inv_beta: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``(log(8|S|e²/β), log(4|S|e²/β))`` in float32."""
    e = jnp.asarray(epoch, jnp.float32)
    m = jnp.maximum(jnp.asarray(num_active, jnp.float32), 1.0)
    base = jnp.log(m) + 2.0 * jnp.log(e) + jnp.asarray(log_inv_beta, jnp.float32)
    return base + np.float32(math.log(8.0)), base + np.float32(math.log(4.0))


def dp_se_reps(
    epoch: ArrayLike, num_active: ArrayLike, inv_epsilon: ArrayLike, log_inv_beta: ArrayLike, horizon: int
) -> jax.Array:
    """``R_e = ⌊max(32 L₈ 4^e, 8 L₄ 2^e/ε) + 1⌋``, the pulls per active arm in epoch ``e`` (int32).

    Capped at ``T // |S| + 1``: an epoch that long cannot close within the horizon,
    so the cap changes no decision and keeps ``|S| R_e`` inside int32.
    """
    l8, l4 = _logs(epoch, num_active, log_inv_beta)
    e = jnp.asarray(epoch, jnp.float32)
    r = jnp.maximum(32.0 * l8 * jnp.exp2(2.0 * e), 8.0 * l4 * jnp.exp2(e) * jnp.asarray(inv_epsilon, jnp.float32))
    cap = (horizon // jnp.maximum(jnp.asarray(num_active, jnp.int32), 1) + 1).astype(jnp.float32)
    return jnp.floor(jnp.minimum(r + 1.0, cap)).astype(jnp.int32)


def dp_se_threshold(
    epoch: ArrayLike, num_active: ArrayLike, reps: ArrayLike, inv_epsilon: ArrayLike, log_inv_beta: ArrayLike
) -> jax.Array:
    """The elimination gap ``2(h_e + c_e)``, ``h_e = sqrt(L₈/(2R_e))``, ``c_e = L₄/(ε R_e)`` (float32)."""
    l8, l4 = _logs(epoch, num_active, log_inv_beta)
    r = jnp.asarray(reps, jnp.float32)
    return 2.0 * (jnp.sqrt(l8 / (2.0 * r)) + l4 * jnp.asarray(inv_epsilon, jnp.float32) / r)


def dp_se_eliminate(
    key: PRNGKey,
    sums: jax.Array,
    active: jax.Array,
    epoch: jax.Array,
    reps: jax.Array,
    inv_epsilon: jax.Array,
    log_inv_beta: jax.Array,
) -> tuple[jax.Array, jax.Array]:
    """Close epoch ``e``: release ``sums/R_e + Lap(1/(ε R_e))`` per arm and eliminate.

    Returns ``(noisy means [K], new active set [K])``: an active arm stays unless
    ``max_{b ∈ S} μ̃_b - μ̃_a > 2(h_e + c_e)``.
    """
    r = reps.astype(jnp.float32)
    noise = _rng.laplace(key, sums.shape, jnp.float32)
    noisy = sums / r + (inv_epsilon / r) * noise  # Laplace mechanism, sensitivity 1/R_e
    best = jnp.max(jnp.where(active, noisy, -jnp.inf))
    m = jnp.sum(active, dtype=jnp.int32)
    thr = dp_se_threshold(epoch, m, reps, inv_epsilon, log_inv_beta)
    return noisy, active & ~(best - noisy > thr)


def calibrate(params: DPSEParams, horizon: int) -> tuple[jax.Array, jax.Array]:
    """``(1/ε, log(1/β))`` in float32; ``β = None`` is ``1/T``."""
    _validate.budget("dp_se", LAPLACE, params, needs=("epsilon",))
    inv_epsilon = 1.0 / jnp.asarray(params.epsilon, jnp.float32)  # 0 at epsilon = inf
    if params.beta is None:
        log_inv_beta = jnp.asarray(math.log(horizon), jnp.float32)
    else:
        log_inv_beta = -jnp.log(jnp.asarray(params.beta, jnp.float32))
    return inv_epsilon, log_inv_beta


def validate_static(num_arms: int, horizon: int) -> tuple[int, int]:
    """Eager checks of the factory arguments; returns ``(K, T)``."""
    K = _validate.positive_int("num_arms", num_arms, minimum=2)
    T = _validate.positive_int("horizon", horizon)
    if T < K:
        raise ValueError(f"horizon must be >= num_arms={K}, got {T}")
    if T >= 2**31 - 1:
        raise ValueError(f"horizon must be < 2**31 - 1 (int32 counters), got {T}")
    return K, T


def check_params(params: DPSEParams) -> None:
    """Eager checks of concrete params (the budget is required)."""
    _validate.budget("dp_se", LAPLACE, params, needs=("epsilon",))
    _validate.budget_value("epsilon", params.epsilon)
    if params.beta is not None:
        _validate.numeric("beta", params.beta)
        _validate.in_open_interval("beta", params.beta, 0.0, 1.0)


def round_robin(active: jax.Array, played: jax.Array) -> jax.Array:
    """The arm of round ``played`` (0-based) of an epoch: the ``(played mod |S|)``-th active arm."""
    m = jnp.maximum(jnp.sum(active, dtype=jnp.int32), 1)
    rank = jnp.cumsum(active, dtype=jnp.int32) - 1
    return jnp.argmax(active & (rank == played % m)).astype(jnp.int32)


def dp_se_bound(params: DPSEParams, env_params: Any, spec: Spec, horizon: int) -> float | None:
    """DP-SE's bound from its schedule (``dp_se_regret_bound``)."""
    del spec
    beta = None if params.beta is None else float(np.asarray(params.beta))
    epsilon = float(np.asarray(params.epsilon))
    return float(dp_se_regret_bound(np.asarray(env_params.means), horizon, epsilon, beta))


def _example(horizon: int, dim: int) -> declare.ExampleRun:
    """``dp_se`` at one small configuration (``jaxpriv.testing.learner_examples``)."""
    from jaxpriv.envs._settings import setting

    s = setting("bernoulli", dim)
    return dp_se(dim, horizon), s.env, DPSEParams(epsilon=1.0, beta=0.1), s.params


@declare.learner("dp_se", params=DPSEParams, bound=dp_se_bound, example=_example)
def dp_se(num_arms: int, horizon: int, *, clip_rewards: bool = True, private: bool = True) -> Learner:
    """DP-SE: ε-DP successive elimination with Laplace-noised epoch means (not anytime).

    Epoch ``e`` (``Δ_e = 2^{-e}``) pulls each active arm ``R_e`` times round-robin
    (round ``j`` of the epoch plays the ``(j mod |S|)``-th active arm), then releases
    ``μ̃_a = (1/R_e) Σ r + Lap(1/(ε R_e))`` for every active arm and removes ``a`` when
    ``max_{b∈S} μ̃_b - μ̃_a > 2(h_e + c_e)``, with

        ``R_e = ⌊max(32 log(8|S|e²/β)/Δ_e², 8 log(4|S|e²/β)/(εΔ_e)) + 1⌋``,
        ``h_e = sqrt(log(8|S|e²/β)/(2R_e))``, ``c_e = log(4|S|e²/β)/(εR_e)``

    (the authors' implementation, ``achraf-azize/DP-BAI``). ``|S|`` is the size of the active
    set during the epoch. Once one arm is left it is played until ``T``; an epoch
    cut by the horizon releases nothing.

    Differences from the authors' file (stated choices): the epoch mean divides the
    epoch's sum by ``R_e`` (their file divides by the cumulative count, a quirk of the
    BAI code); the maximum is over the active arms only (theirs includes eliminated
    arms' zero means); ``h_e`` and ``c_e`` use the integer ``R_e`` that was pulled
    (theirs the real number before flooring, which is smaller by < 1).

    Privacy: ε-DP (event level, one reward replaced) for rewards in ``[0, 1]``;
    rewards are clipped to ``[0, 1]`` (``clip_rewards``) and non-finite ones replaced
    by 0. Calibration: Laplace scale ``1/(ε R_e)`` on a mean of ``R_e`` rewards
    (sensitivity ``1/R_e``); the epochs use disjoint rewards (parallel composition).
    Regret: ``O(Σ_{Δ_a>0} log T/Δ_a + K log T/ε)``; ``dp_se_regret_bound`` gives the
    bound with this schedule's constants.

    Args:
      num_arms: ``K >= 2``.
      horizon: ``T >= K`` (DP-SE is not anytime; ``β = None`` means ``1/T``).
      clip_rewards: clip rewards to ``[0, 1]`` (the range the sensitivity assumes). ``False``
        voids the guarantee for rewards outside ``[0, 1]``: a finite ``epsilon`` is then refused
        (by ``check``, before compiling) unless ``private=False``.
      private: ``False`` declares the policy not private (``Result.private`` and a study's
        ``settings.json`` say ``false``); required for ``clip_rewards=False`` at a finite ``epsilon``.

    Returns:
      A ``Learner`` with params ``DPSEParams`` (any other params class is refused); actions are
      int32 arm indices, the feedback is the reward of the played arm.

    Examples:
      >>> import jax, jaxpriv
      >>> from jaxpriv.envs import BernoulliParams, bernoulli_bandit
      >>> res = jaxpriv.run(dp_se(5, 1000), bernoulli_bandit(5),
      ...                   jaxpriv.SimParams(DPSEParams(epsilon=1.0), BernoulliParams()),
      ...                   jax.random.key(0), horizon=1000, checkpoints=[1000])
      >>> res.regret.shape
      (1,)

    References:
      T. Sajed and O. Sheffet, An Optimal Private Stochastic-MAB Algorithm Based on an
      Optimal Private Stopping Rule, ICML 2019. A. Azize, DP-BAI, ``algorithms/dp_se.py``.
    """
    K, T = validate_static(num_arms, horizon)
    reasons = _validate.opt_outs(private, **{"clip_rewards=False": None if clip_rewards else UNCLIPPED})

    def check(params: DPSEParams) -> None:
        check_params(params)
        _validate.refuse_finite_budget("dp_se", "epsilon", params.epsilon, reasons, "ε-DP", private)

    def init_fn(key: PRNGKey, params: DPSEParams) -> DPSEState:
        del key
        inv_epsilon, log_inv_beta = calibrate(params, T)
        zi = jnp.zeros((), jnp.int32)
        zk = jnp.zeros(K, jnp.float32)
        return DPSEState(
            active=jnp.ones(K, bool),
            epochs=zi,
            reps=dp_se_reps(1, K, inv_epsilon, log_inv_beta, T),
            played=zi,
            sums=zk,
            comp=zk,
            released=zk,
            inv_epsilon=inv_epsilon,
            log_inv_beta=log_inv_beta,
        )

    def act_fn(key: PRNGKey, state: DPSEState, t: jax.Array) -> jax.Array:
        del key
        return poison_past_horizon(round_robin(state.active, state.played), t, T)

    def update_fn(
        key: PRNGKey, state: DPSEState, action: jax.Array, reward: jax.Array, t: jax.Array
    ) -> tuple[DPSEState, NonfiniteInfo]:
        del t
        r, bad = zero_nonfinite(jnp.asarray(reward, jnp.float32))  # 0 is inside [0, 1]: privacy holds
        if clip_rewards:
            r = jnp.clip(r, 0.0, 1.0)  # the sensitivity 1/R_e assumes rewards in [0, 1]
        onehot = jnp.arange(K) == jnp.asarray(action, jnp.int32)
        added = kahan_add(KahanSum(state.sums, state.comp), r)
        sums = jnp.where(onehot, added.total, state.sums)
        comp = jnp.where(onehot, added.compensation, state.comp)
        played = state.played + 1
        m = jnp.sum(state.active, dtype=jnp.int32)
        close = (m > 1) & (played == m * state.reps)
        epoch = state.epochs + 1
        noisy, kept = dp_se_eliminate(key, sums, state.active, epoch, state.reps, state.inv_epsilon, state.log_inv_beta)
        next_reps = dp_se_reps(epoch + 1, jnp.sum(kept, dtype=jnp.int32), state.inv_epsilon, state.log_inv_beta, T)
        return state._replace(
            active=jnp.where(close, kept, state.active),
            epochs=state.epochs + close.astype(jnp.int32),
            reps=jnp.where(close, next_reps, state.reps),
            played=jnp.where(close, 0, played),
            sums=jnp.where(close, 0.0, sums),
            comp=jnp.where(close, 0.0, comp),
            released=jnp.where(close & state.active, noisy, state.released),
        ), NonfiniteInfo(bad)

    spec = Spec(private=private and not reasons, num_arms=K, fast_path=FastPath(simulate))
    return Learner(init_fn, act_fn, update_fn, check, T, spec=spec, returns_info=True)


# --- the exact epoch-level simulator (Spec.fast_path): one scan step per epoch ---------------------------

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
) -> Result:
    """DP-SE's fast path (``Spec.fast_path``, ``FastPath(simulate)``): ``learner``'s epochs.

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
    holds = bool(spec.private) and private and not reasons
    return Result(jnp.asarray(ckpts, jnp.int32), regret, None, None, private=holds, episodes=epochs, pulls=pulls)
