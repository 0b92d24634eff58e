"""Exact episode-level simulation of AdaC-UCB, AdaP-UCB, AdaP-KLUCB and episodic UCB: one scan step per episode.

Within an episode of AdaC-UCB (or AdaP-UCB, AdaP-KLUCB, or the non-private counterpart) the arm is
fixed and nothing the algorithm releases depends on the individual rewards,
only on their sum at the end of the episode. So an episode of ``n`` rounds of
a Bernoulli arm can be simulated exactly in one step: the reward sum is one
``Binomial(n, μ_a)`` draw, the pseudo-regret increment is ``n Δ_a``, and the
released statistic is the same function of the sum as in the step-level
learner. The horizon ``T = 10⁷`` then costs ``O(K log T)`` scan steps per seed
instead of ``10⁷``. It is the same algorithm as ``jaxpriv.bandits.adac_ucb``
(``adap_ucb``, ``adap_klucb``; sharing their index, release noise, tie-breaking
and calibration code) simulated differently;
the step-level learner is the reference, and ``tests/bandits/test_bandits_fast.py``
checks that both give the same distribution of regret and of episode counts.

Regret at checkpoints is exact, including an episode straddling a checkpoint:
each checkpoint ``h`` accumulates the int32 pull counts
``clip(h - t_start, 0, n)`` of every episode, and the regret
``Σ_a Δ_a N_a(h)`` is formed once at the end. The seeds and the params grid are
run by ``episode_sweep``, the driver shared with the GOPE simulator.
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
from jaxpriv.bandits import _episodic_ucb, _sampling
from jaxpriv.bandits.adac_ucb import AdaCUCBParams, adac_ucb
from jaxpriv.bandits.adap_klucb import AdaPKLUCBParams, adap_klucb
from jaxpriv.bandits.adap_ucb import AdaPUCBParams, adap_ucb
from jaxpriv.bandits.episodic._sweep import EpisodeResult, check_policy, episode_sweep, simulate_episodes
from jaxpriv.bandits.ucb import UCBParams, ucb
from jaxpriv.envs.bandits import BernoulliParams, bernoulli_bandit
from jaxpriv.sim import SimParams, normalize_checkpoints, spec_ndims

__all__ = ["RewardSum", "bernoulli_reward_sum", "simulate", "simulate_ucb_episodes"]

RewardSum = Callable[[PRNGKey, jax.Array, jax.Array], jax.Array]


def bernoulli_reward_sum(key: PRNGKey, n: jax.Array, mean: jax.Array) -> jax.Array:
    """The exact reward sum of ``n`` Bernoulli(``mean``) pulls: one ``Binomial(n, mean)`` draw."""
    return _sampling.binomial(key, n, mean)


#: The one table of the old entry point: params class -> the step-level factory it names.
_FACTORIES = {AdaCUCBParams: adac_ucb, AdaPUCBParams: adap_ucb, AdaPKLUCBParams: adap_klucb, UCBParams: ucb}
#: Why a ``reward_sum`` hook voids the guarantee (``_validate.opt_outs``).
HOOK = "the episode's reward sum comes from the hook, unclipped: one reward may move it by more than 1"


@lru_cache(maxsize=64)
def _ucb_simulator(
    num_arms: int,
    horizon: int,
    checkpoints: tuple[int, ...],
    init_count: str,
    tie_break: str,
    reward_sum: RewardSum,
    calibrate: Callable[[Any], tuple[jax.Array, jax.Array]],
    index_fn: Callable[..., jax.Array] = _episodic_ucb.index,
    noise: Callable[[PRNGKey], jax.Array] = _episodic_ucb.gaussian_noise,
) -> Callable[[PRNGKey, SimParams], tuple[jax.Array, jax.Array, jax.Array]]:
    K = num_arms
    num_steps = K * (horizon.bit_length() + 1)  # K initial pulls + at most bitlen(T) episodes per arm
    ckpts = jnp.asarray(checkpoints, jnp.int32)

    def one(key: PRNGKey, params: SimParams):
        beta, unit_stddev = calibrate(params.learner)  # unit_stddev = 0 at rho = inf / epsilon = inf
        means = jnp.broadcast_to(jnp.asarray(params.env.means, jnp.float32), (K,))
        gaps = jnp.max(means) - means
        arms = jnp.arange(K, dtype=jnp.int32)

        def body(carry, i):
            counts, released_means, lengths, t, pulls_at, episodes_at = carry
            k_tie, k_sum, k_noise = jax.random.split(jax.random.fold_in(key, i), 3)
            is_init = i < K
            n_idx = _episodic_ucb.index_count(lengths, counts, init_count)
            scores = index_fn(released_means, n_idx, t + 1, beta, unit_stddev)  # t_ℓ = t + 1
            arm = jnp.where(is_init, i, _episodic_ucb.choose(k_tie, scores, tie_break))
            onehot = arms == arm
            c_arm = jnp.sum(jnp.where(onehot, counts, 0), dtype=jnp.int32)
            length = jnp.where(is_init, 1, jnp.maximum(c_arm, 1))  # per-arm doubling
            n_eff = jnp.clip(horizon - t, 0, length)  # the last episode is truncated at T
            total = reward_sum(k_sum, n_eff, jnp.sum(jnp.where(onehot, means, 0.0))).astype(jnp.float32)
            n_rel = _episodic_ucb.index_count(length, c_arm + length, init_count)
            released = _episodic_ucb.release(k_noise, total, length, n_rel, unit_stddev, noise)
            upd = onehot & (n_eff == length)
            pulls_at = pulls_at + jnp.where(onehot[None, :], jnp.clip(ckpts - t, 0, n_eff)[:, None], 0)
            started = (~is_init) & (n_eff > 0)
            episodes_at = episodes_at + (started & (ckpts >= t + 1)).astype(jnp.int32)
            carry = (
                counts + jnp.where(onehot, n_eff, 0),
                jnp.where(upd, released, released_means),
                jnp.where(upd, length, lengths),
                t + n_eff,
                pulls_at,
                episodes_at,
            )
            return carry, None

        m = ckpts.shape[0]
        init = (
            jnp.zeros(K, jnp.int32),
            jnp.zeros(K, jnp.float32),
            jnp.zeros(K, jnp.int32),
            jnp.zeros((), jnp.int32),
            jnp.zeros((m, K), jnp.int32),
            jnp.zeros(m, jnp.int32),
        )
        steps = jnp.arange(num_steps, dtype=jnp.int32)
        (counts, _, _, _, pulls_at, episodes_at), _ = jax.lax.scan(body, init, steps)
        regret = pulls_at.astype(jnp.float32) @ gaps
        return regret, episodes_at, counts

    return one


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
) -> EpisodeResult:
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
        not private (``EpisodeResult.private``).

    Returns:
      An ``EpisodeResult`` with leading axes ``[G, seeds]`` (or ``[seeds]``); its ``private``
      says whether the simulated policy's guarantee holds.
    """
    if not isinstance(means, BernoulliParams):
        means = BernoulliParams(means)
    num_arms = int(jnp.shape(means.means)[-1])
    factory = _FACTORIES.get(type(params))  # the class names the algorithm: exactly one of these, never a subclass
    if factory is None:
        kind = type(params)
        raise ValueError(
            "params must be AdaCUCBParams, AdaPUCBParams, AdaPKLUCBParams or UCBParams (exactly: the class names "
            f"the algorithm simulated), got {kind.__module__}.{kind.__qualname__}"
        )
    learner = factory(num_arms, _validate.horizon(horizon), init_count=init_count, tie_break=tie_break)
    check_horizon(horizon, policy, "policy")
    check_policy(learner, policy, dict(spec_of(learner).fast_path.options)["simulates"])
    return simulate_episodes(
        learner, params, means, key, horizon, seeds, checkpoints, chunk=chunk, reward_sum=reward_sum, private=private
    )


def simulate(
    learner: Learner,
    params: Any,
    means: ArrayLike,
    key: PRNGKey,
    horizon: int,
    seeds: int = 100,
    checkpoints: Any = "log",
    *,
    simulates: str,
    budget: str | None,
    guarantee: str | None,
    calibrate: Callable[[Any], tuple[jax.Array, jax.Array]],
    index_fn: Callable[..., jax.Array],
    noise: Callable[[PRNGKey], jax.Array],
    init_count: str,
    tie_break: str,
    chunk: int | None = None,
    reward_sum: RewardSum = bernoulli_reward_sum,
    private: bool = True,
) -> EpisodeResult:
    """The fast path of an episodic UCB policy (``Spec.fast_path``, ``FastPath("ucb", ...)``): ``learner``'s episodes.

    ``simulates`` names the algorithm (``"AdaC-UCB (adac_ucb)"``), ``budget`` / ``guarantee`` its
    budget field and guarantee (``None``: not private); ``calibrate``, ``index_fn``, ``noise``,
    ``init_count`` and ``tie_break`` are the factory's. The per-call options are
    ``simulate_ucb_episodes``'s.
    """
    if not isinstance(means, BernoulliParams):
        means = BernoulliParams(means)
    num_arms = int(jnp.shape(means.means)[-1])
    horizon = _validate.horizon(horizon)
    check_horizon(horizon, learner, "learner")
    if horizon >= _sampling.MAX_COUNT:
        raise ValueError(f"horizon must be < 2**24 (exact float32 Binomial counts), got {horizon}")
    spec = spec_of(learner)
    if spec.num_arms is not None and spec.num_arms != num_arms:
        raise ValueError(f"the learner ({spec.name}) plays {spec.num_arms} arms but the instance has {num_arms} means")
    check_params_class(learner, params, "learner", "params")
    reasons = _validate.opt_outs(private, reward_sum=None if reward_sum is bernoulli_reward_sum else HOOK)
    learner.check(params)
    if budget is not None:
        _validate.refuse_finite_budget(
            f"simulate_ucb_episodes ({simulates})", budget, getattr(params, budget), reasons, guarantee, private
        )
    holds = bool(spec.private) and private and not reasons
    bernoulli_bandit(num_arms).check(means)
    ckpts = normalize_checkpoints(horizon, checkpoints)
    one = _ucb_simulator(num_arms, horizon, ckpts, init_count, tie_break, reward_sum, calibrate, index_fn, noise)
    ndims = spec_ndims(learner, bernoulli_bandit(num_arms))
    regret, episodes, pulls = episode_sweep(one, SimParams(params, means), key, seeds, chunk, ndims)
    return EpisodeResult(jnp.asarray(ckpts, jnp.int32), regret, episodes, pulls, holds)
