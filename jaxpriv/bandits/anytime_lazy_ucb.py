"""Anytime-Lazy-UCB: ε-DP UCB on lazily released batch means (Hu, Huang & Mehta 2021).

Hu, Huang & Mehta, "Optimal algorithms for private online learning in a stochastic environment"
(arXiv:2102.07929; v3 "Near-optimal algorithms for differentially private online learning in a stochastic
environment", with Hegde), the anytime UCB-based algorithm for ε-DP stochastic bandits whose regret
``O(Σ_{Δ_j>0} log T / min{Δ_j, ε})`` matches the lower bound. Its key idea, "forgetfulness": an arm's index
uses only its last batch of fresh observations (``jaxpriv.bandits._lazy``: batches of ``1, 2, 4, ...``
rewards, each released once with one Laplace draw).

Sources and decoding choices. The paper's full text was not available to this implementation (the stored
copies give its abstract and a secondary summary of the algorithm): the algorithm-box line numbers are not
cited, and the index's confidence widths below are a standard choice written out here, with the regret bound
derived for exactly these constants (``jaxpriv.theory.anytime_lazy_ucb_regret_bound``), in the way
``dp_ucb`` derives its bonus. The paper's own constants may differ; its order is the same.

**The exact event-level simulator** (``simulate``, its ``Spec.fast_path``):

Exact event-level simulation of Anytime-Lazy-UCB (Hu, Huang & Mehta 2021): one scan step per event.

Anytime-Lazy-UCB (``jaxpriv.bandits.anytime_lazy_ucb``) plays ``argmax_j I_j(t)`` every round, with
``I_j(t) = μ̃_j + sqrt(1.5 log t / O_j) + 3 log t / (ε O_j)``, and changes ``μ̃_j`` and ``O_j`` only when arm
``j``'s fresh buffer of ``2^{r_j}`` rewards is released. Its decisions do not change only at releases: between
two releases the indices grow with ``log t``, the faster the smaller ``O_j``, so the leading arm can change.
But between releases the decisions are a deterministic function of ``t`` (up to exact ties), and the changes
are few: for two arms the index difference ``I_k - I_j`` is ``(μ̃_k - μ̃_j) + a s + b s²`` in ``s = sqrt(log t)``
with ``a`` and ``b`` both of the sign of ``O_j - O_k``, so it is monotone in ``t``: only an arm with a smaller
``O`` can overtake the leader, and the leader's ``O`` strictly decreases with every change between two
releases (fewer than ``K`` changes).

An *event* is therefore a run of rounds ``s, s + 1, ..., s + n - 1`` of one arm ``j`` (the ``choose`` of the
step-level policy at round ``s``, with its tie-breaking), ending at the first of: ``j``'s buffer is full (its
release), another arm's index beats ``j``'s (found by bisection over rounds on the step-level policy's own
float32 index, ``anytime_lazy_ucb``'s ``_index``, exact because the comparison is monotone in ``t``), or ``T``.
The run's rewards enter ``j``'s buffer as one ``Binomial(n, μ_j)`` sum (Bernoulli arms), the release is the same
``mean + Lap(1/(ε |Ψ|))`` as ``jaxpriv.bandits._lazy``, and the regret increment is ``n Δ_j``. The first ``K``
rounds (every arm has ``I = +inf`` until its first release, of size 1) are one round robin in the order the
tie-breaking gives: uniformly random (``"random"``) or ``0, 1, ...`` (``"first"``).

Events are bounded by ``K (K bitlen(T) + 1)`` (at most ``K bitlen(T)`` releases after the first round robin,
fewer than ``K`` leader changes between two of them, one run cut by ``T``): ``T = 10⁷`` with ``K = 5`` costs at
most 605 events per seed instead of ``10⁷`` rounds (the scan has ``K bitlen(T)`` more steps of slack for float32
ties at a crossing, and a run that would still stop short of ``T`` raises instead of returning).

Exactness. The algorithm is the step-level policy's; the simulator's randomness is consumed differently, so
the two agree in distribution (``tests/bandits/test_bandits_hu_fast.py``), and on deterministic rewards
with ``tie_break="first"`` and ``ε = inf`` they take identical decisions. Two limits, both stated where they
apply: a crossing is found on the step-level float32 indices assuming their difference is monotone in ``t``,
which float32 rounding could break only within an ulp of a crossing; and with ``ε = inf`` and
``tie_break="random"`` two arms with the same ``O`` and the same empirical mean tie for many rounds, which the
step-level policy breaks afresh every round and an event cannot: that combination is refused.

Lazy-DP-TS (``lazy_dp_ts``) and DP-TS (``dp_ts``) have no such simulator: they draw a fresh posterior sample
every round, and the probability of each arm being played moves with ``log t`` between releases (the
optimistic shift ``3 log t/(ε O_j)``), so the pulls between two releases are not a function of a few draws.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxpriv import _rng, _validate, declare
from jaxpriv._base import Learner, NonfiniteInfo, PRNGKey, Spec, check_horizon, check_params_class, spec_of
from jaxpriv.bandits import _lazy, _sampling
from jaxpriv.bandits._episodic_ucb import TIE_BREAKS, choose
from jaxpriv.bandits._fast_path import FastPath, episode_sweep
from jaxpriv.bandits._lazy import LazyState
from jaxpriv.bandits._sampling import RewardSum, bernoulli_reward_sum
from jaxpriv.envs.bandits import BernoulliParams, bernoulli_bandit
from jaxpriv.sim import Result, SimParams, normalize_checkpoints, spec_ndims
from jaxpriv.theory import anytime_lazy_ucb_regret_bound

__all__ = [
    "AnytimeLazyUCBParams",
    "LazyState",
    "anytime_lazy_ucb",
    "anytime_lazy_ucb_index",
    "anytime_lazy_ucb_regret_bound",
]


class AnytimeLazyUCBParams(NamedTuple):
    """Params of ``anytime_lazy_ucb``.

    Attributes:
      epsilon: the ε-DP budget, finite and ``> 0``, required (no default: a budget is never implied). ``inf``
        (no noise, no privacy term in the index) only with ``anytime_lazy_ucb(..., private=False)``.
    """

    epsilon: ArrayLike | None


def anytime_lazy_ucb_index(released: ArrayLike, used: ArrayLike, t: ArrayLike, epsilon: ArrayLike) -> jax.Array:
    """``μ̃_j + sqrt(3 log t / (2 O_j)) + 3 log t / (ε O_j)``; ``+inf`` for an arm without a release (``O_j = 0``).

    The two widths are the one-sided ``t^{-3}`` deviations of the batch mean (Hoeffding: ``exp(-2 O w²)``)
    and of its ``Lap(1/(ε O))`` noise (``½ exp(-ε O w)``).

    Args:
      released: ``[K]`` released means ``μ̃_j``.
      used: ``[K]`` their batch sizes ``O_j``.
      t: the round.
      epsilon: ε (``inf``: no privacy width).

    Returns:
      ``[K]`` float32 indices.
    """
    inv_epsilon = jnp.float32(1.0) / jnp.asarray(epsilon, jnp.float32)
    return _index(jnp.asarray(released, jnp.float32), jnp.asarray(used, jnp.int32), t, inv_epsilon)


def _index(released: jax.Array, used: jax.Array, t: ArrayLike, inv_epsilon: jax.Array) -> jax.Array:
    n = jnp.maximum(used, 1).astype(jnp.float32)
    log_t = jnp.log(jnp.asarray(t, jnp.float32))
    value = released + jnp.sqrt(1.5 * log_t / n) + 3.0 * log_t * inv_epsilon / n
    return jnp.where(used > 0, value, jnp.inf)


def anytime_lazy_ucb_bound(params: AnytimeLazyUCBParams, env_params: Any, spec: Spec, horizon: int) -> float | None:
    """Anytime-Lazy-UCB's bound derived for its index (``anytime_lazy_ucb_regret_bound``)."""
    del spec
    epsilon = float(np.asarray(params.epsilon))
    return float(anytime_lazy_ucb_regret_bound(np.asarray(env_params.means), horizon, epsilon))


def _example(horizon: int, dim: int) -> declare.ExampleRun:
    """``anytime_lazy_ucb`` at one small configuration (``jaxpriv.testing.learner_examples``)."""
    from jaxpriv.envs._settings import setting

    s = setting("bernoulli", dim)
    return anytime_lazy_ucb(dim, horizon), s.env, AnytimeLazyUCBParams(1.0), s.params


@declare.learner("anytime_lazy_ucb", params=AnytimeLazyUCBParams, bound=anytime_lazy_ucb_bound, example=_example)
def anytime_lazy_ucb(
    num_arms: int, horizon: int | None = None, *, tie_break: str = "random", private: bool = True
) -> Learner:
    """Anytime-Lazy-UCB: UCB on each arm's last lazily released batch mean; ε-DP, anytime.

    At round ``t`` play ``J_t = argmax_j μ̃_j + sqrt(3 log t / (2 O_j)) + 3 log t / (ε O_j)``, an arm
    without a release first (so rounds ``1..K`` pull every arm once: its first batch, of size 1); add
    the reward to ``J_t``'s fresh buffer ``Ψ``; when ``|Ψ| = 2^{r}`` release ``μ̃ = mean(Ψ) + Lap(1/(ε |Ψ|))``,
    set ``O = |Ψ|``, ``r ← r + 1`` and empty ``Ψ`` (``jaxpriv.bandits._lazy``).

    Pseudo-code (this implementation):

    1. for each arm ``j``: ``r_j = 0``, ``Ψ_j = ∅``, ``O_j = 0``;
    2. for ``t = 1, 2, ...``: ``J_t = argmax_j I_j(t)`` (``I_j = +inf`` while ``O_j = 0``; ties uniformly
       at random, a standard choice the paper leaves open; ``tie_break="first"``: the lowest index);
    3. observe ``x``, ``Ψ_{J_t} ← Ψ_{J_t} ∪ {x}`` (``x`` clipped to ``[0, 1]``);
    4. if ``|Ψ_{J_t}| = 2^{r_{J_t}}``: ``μ̃_{J_t} = Σ Ψ / |Ψ| + Lap(1/(ε |Ψ|))``, ``O_{J_t} = |Ψ|``,
       ``r_{J_t} += 1``, ``Ψ_{J_t} = ∅``.

    Privacy: ε-DP (event level; neighbouring reward sequences differ in one reward in ``[0, 1]``,
    replace-one): each reward enters one released batch mean, whose sensitivity is ``1/|Ψ|``; the batches
    are disjoint and fixed by the released history, so by adaptive parallel composition and post-processing
    the actions are ε-DP (``jaxpriv.bandits._lazy``). Rewards are clipped to ``[0, 1]`` inside ``update``;
    NaN / ±inf rewards count as 0 and are counted.

    Regret (``jaxpriv.theory.anytime_lazy_ucb_regret_bound``, derived for this index): with ``u_j`` the least
    ``n`` such that ``sqrt(3 log T/(2n)) + 3 log T/(ε n) <= Δ_j/2`` and ``m_j`` the least power of two
    ``>= u_j``, ``R_T <= Σ_{Δ_j>0} Δ_j min(T, 2 m_j - 1 + Σ_{t=K+1}^{T} 3(⌊log2 t⌋ + 1) t^{-3})``, i.e.
    ``O(Σ log T/Δ_j + K log T/ε)``, the paper's order.

    Exact event-level simulator: ``jaxpriv.bandits.simulate_episodes(anytime_lazy_ucb(K), params, means, key, T)``
    runs it on a Bernoulli bandit one scan step per release or change of the leading arm
    (``jaxpriv.bandits.episodic.lazy``; ``T = 10⁷`` in at most ``K (K bitlen(T) + 1)`` steps per seed).

    Args:
      num_arms: ``K >= 2``.
      horizon: optional ``T``; only validated (``T >= K``): the algorithm is anytime.
      tie_break: ``"random"`` (default) or ``"first"``.
      private: ``False`` declares the policy not private and lets ``epsilon = inf`` (no noise) run; with
        ``True`` (default) ``epsilon`` must be finite.

    Returns:
      A ``Learner`` with params ``AnytimeLazyUCBParams`` (any other params class is refused); actions are
      int32 arm indices, the feedback is the reward of the played arm.

    References:
      B. Hu, Z. Huang and N. A. Mehta, Optimal algorithms for private online learning in a stochastic
      environment, arXiv:2102.07929 (2021); v3 with N. Hegde.
    """
    K = _validate.positive_int("num_arms", num_arms, minimum=2)
    if horizon is not None:
        horizon = _validate.horizon(horizon)
        if horizon < K:
            raise ValueError(f"horizon must be >= num_arms={K} (each arm is played once), got {horizon}")
    _validate.choice("tie_break", tie_break, TIE_BREAKS)
    _validate.opt_outs(private)

    def check(params: AnytimeLazyUCBParams) -> None:
        _lazy.check_budget("anytime_lazy_ucb", params, private)

    def init_fn(key: PRNGKey, params: AnytimeLazyUCBParams) -> LazyState:
        del key
        _validate.budget("anytime_lazy_ucb", _lazy.LAPLACE, params, needs=("epsilon",), refuses=("rho",))
        return _lazy.init_state(K, params)

    def act_fn(key: PRNGKey, state: LazyState, t: jax.Array) -> jax.Array:
        return choose(key, _index(state.released, state.used, t, state.inv_epsilon), tie_break)

    def update_fn(
        key: PRNGKey, state: LazyState, action: jax.Array, reward: jax.Array, t: jax.Array
    ) -> tuple[LazyState, NonfiniteInfo]:
        del t
        return _lazy.lazy_update(key, state, action, reward)

    # The exact event-level simulator (``jaxpriv.bandits.episodic.lazy``): releases and leader changes.
    fast_path = FastPath(simulate, (("tie_break", tie_break),))
    floor = _lazy.LAZY_RELEASE_FLOOR if private else None
    spec = Spec(private=private, num_arms=K, fast_path=fast_path, sampler_floor=floor)
    return Learner(init_fn, act_fn, update_fn, check, spec=spec, returns_info=True)


# --- the exact event-level simulator (Spec.fast_path): one scan step per release or change of leader -----

#: Why a ``reward_sum`` hook voids the guarantee (``_validate.opt_outs``).
HOOK = "the run's reward sum comes from the hook, unclipped: one reward may move a released mean by more than 1/|Ψ|"


def max_events(num_arms: int, horizon: int) -> int:
    """The scan length: ``K (K bitlen(T) + 1)`` events bound a run of ``T`` rounds after the first round robin."""
    return num_arms * (num_arms * horizon.bit_length() + 1)


def _beats(scores: jax.Array, leader_score: jax.Array, arms: jax.Array, leader: jax.Array, tie_break: str):
    """Whether each arm's index would be chosen over the leader's (``choose``'s rule: ties go to the lower arm
    with ``"first"``, to a fresh draw with ``"random"``: a tie ends the event and the next one draws)."""
    if tie_break == "first":
        return (scores > leader_score) | ((scores == leader_score) & (arms < leader))
    return scores >= leader_score


@lru_cache(maxsize=64)
def _anytime_simulator(
    num_arms: int, horizon: int, checkpoints: tuple[int, ...], tie_break: str, reward_sum: RewardSum
) -> Callable[[PRNGKey, SimParams], tuple[jax.Array, jax.Array, jax.Array]]:
    K, T = num_arms, horizon
    # Slack over the bound: a float32 tie at a crossing with random tie-breaking can cost an extra one-round event.
    num_steps = max_events(K, T) + K * T.bit_length()
    iterations = T.bit_length() + 1  # bisection over at most T rounds
    ckpts = jnp.asarray(checkpoints, jnp.int32)
    arms = jnp.arange(K, dtype=jnp.int32)

    def one(key: PRNGKey, params: SimParams):
        inv_epsilon = jnp.float32(1.0) / jnp.asarray(params.learner.epsilon, jnp.float32)  # 0 at epsilon = inf
        means = jnp.broadcast_to(jnp.asarray(params.env.means, jnp.float32), (K,))
        gaps = jnp.max(means) - means
        k_order, k_first, k_first_noise, k_loop = jax.random.split(key, 4)

        # Rounds 1..K: every arm once (I = +inf until its first release), in the tie-breaking's order.
        order = jax.random.permutation(k_order, K) if tie_break == "random" else arms
        rank = jnp.argsort(order).astype(jnp.int32)  # arm a is played at round rank[a] + 1
        first = reward_sum(k_first, jnp.ones(K, jnp.int32), means).astype(jnp.float32)
        released = first + inv_epsilon * _rng.laplace(k_first_noise, (K,), jnp.float32)  # Lap(1/(ε·1))
        pulls_at = (ckpts[:, None] > rank[None, :]).astype(jnp.int32)
        releases_at = jnp.minimum(ckpts, K)

        def body(carry, i):
            sums, fresh, epochs, released, used, t, pulls_at, releases_at = carry
            k_tie, k_sum, k_noise = jax.random.split(jax.random.fold_in(k_loop, i), 3)
            s = t + 1  # the round about to be played
            leader = choose(k_tie, _index(released, used, s, inv_epsilon), tie_break)
            onehot = arms == leader
            batch = _lazy.batch_size(epochs)
            need = jnp.sum(jnp.where(onehot, batch - fresh, 0))
            n_max = jnp.clip(T - t, 0, need)
            mu_j = jnp.sum(jnp.where(onehot, released, 0.0))
            o_j = jnp.sum(jnp.where(onehot, used, 0))
            # Only an arm with fewer rewards behind its release can overtake (its widths grow faster in t).
            candidate = (used < o_j) & ~onehot

            def overtakes(r: jax.Array) -> jax.Array:  # [K] rounds -> [K] bool, the step-level float32 indices
                mine = _index(released, used, r, inv_epsilon)
                theirs = _index(jnp.full(K, mu_j), jnp.full(K, o_j), r, inv_epsilon)
                return candidate & _beats(mine, theirs, arms, leader, tie_break)

            # First round in (s, s + n_max) at which an arm overtakes (s + n_max: none): monotone bisection.
            def bisect(_, bounds):  # a rolled loop over bisection steps (not time steps)
                lo, hi = bounds
                open_ = hi - lo > 1
                mid = (lo + hi) // 2
                hit = overtakes(mid)
                return jnp.where(open_ & ~hit, mid, lo), jnp.where(open_ & hit, mid, hi)

            start = (jnp.full(K, s, jnp.int32), jnp.full(K, s + n_max, jnp.int32))
            _, hi = jax.lax.fori_loop(0, iterations, bisect, start)
            n = jnp.min(hi) - s  # >= 1 while t < T; 0 once T is reached (the remaining steps are no-ops)

            total = reward_sum(k_sum, n, jnp.sum(jnp.where(onehot, means, 0.0))).astype(jnp.float32)
            sums = sums + jnp.where(onehot, total, 0.0)
            fresh = fresh + jnp.where(onehot, n, 0)
            close = onehot & (fresh == batch)
            size = jnp.maximum(fresh, 1).astype(jnp.float32)
            mean = sums / size
            noisy = mean + (inv_epsilon / size) * _rng.laplace(k_noise, (), jnp.float32)  # Lap(1/(ε |Ψ|))
            pulls_at = pulls_at + jnp.where(onehot[None, :], jnp.clip(ckpts - t, 0, n)[:, None], 0)
            releases_at = releases_at + (jnp.any(close) & (ckpts >= t + n)).astype(jnp.int32)
            carry = (
                jnp.where(close, 0.0, sums),
                jnp.where(close, 0, fresh),
                epochs + close.astype(jnp.int32),
                jnp.where(close, noisy, released),
                jnp.where(close, fresh, used),
                t + n,
                pulls_at,
                releases_at,
            )
            return carry, None

        init = (
            jnp.zeros(K, jnp.float32),
            jnp.zeros(K, jnp.int32),
            jnp.ones(K, jnp.int32),
            released,
            jnp.ones(K, jnp.int32),
            jnp.int32(K),
            pulls_at,
            releases_at,
        )
        (_, _, _, _, _, _, pulls_at, releases_at), _ = jax.lax.scan(body, init, jnp.arange(num_steps, dtype=jnp.int32))
        regret = pulls_at.astype(jnp.float32) @ gaps
        return regret, releases_at, pulls_at[-1]

    return one


def simulate(
    learner: Learner,
    params: Any,
    means: Any,
    key: PRNGKey,
    horizon: int,
    seeds: int = 100,
    checkpoints: Any = "log",
    *,
    tie_break: str,
    chunk: int | None = None,
    reward_sum: RewardSum = bernoulli_reward_sum,
    private: bool = True,
) -> Result:
    """Anytime-Lazy-UCB's fast path (``Spec.fast_path``, ``FastPath(simulate, (("tie_break", ...),))``): its events.

    Run by ``jaxpriv.bandits.simulate_episodes(anytime_lazy_ucb(K), AnytimeLazyUCBParams(epsilon), means, key,
    T, seeds)`` on a Bernoulli bandit; vmapped over seeds and an ``epsilon`` grid with common random numbers.

    Args:
      learner: an ``anytime_lazy_ucb(K, ...)`` (its ``check``, arms and privacy claim are the simulation's).
      params: ``AnytimeLazyUCBParams`` (a leading grid axis on ``epsilon`` is swept).
      means: ``[K]`` arm means in ``[0, 1]`` (or ``[G, K]``), or ``BernoulliParams``.
      key: the base key; seed ``i`` uses ``split(key, seeds)[i]``.
      horizon: ``K <= T < 2²⁴``.
      seeds: the number of runs.
      checkpoints: ``None`` (every step), ``"log"`` or a sequence of steps; ``T`` is always included.
      tie_break: the factory's.
      chunk: run the seeds in batches of this size.
      reward_sum: ``(key, n, mean) -> sum`` of a run's rewards (a test hook; the default is the exact
        Binomial). Another hook's sums are not bounded by the rewards' range: a finite ``epsilon`` then
        needs ``private=False``.
      private: ``False`` runs a ``reward_sum`` hook at a finite ``epsilon``, the result marked not private.

    Returns:
      A ``Result``: ``episodes`` counts the releases made at or before each checkpoint (the step-level
      state's ``sum(epochs)``, the first ``K`` included); ``pulls`` each arm's pulls at ``T``.

    Raises:
      ValueError: another params class, ``T < K`` or ``T >= 2²⁴``, a horizon past the learner's, arms that
        differ from the learner's, ``epsilon = inf`` with ``tie_break="random"`` (see the module docstring), a
        hook at a finite ``epsilon`` with ``private=True``, or the learner's own refusals.
    """
    if not isinstance(means, BernoulliParams):
        means = BernoulliParams(means)
    K = int(jnp.shape(means.means)[-1])
    T = _validate.horizon(horizon)
    check_horizon(T, learner, "learner")
    spec = spec_of(learner)
    if spec.num_arms is not None and spec.num_arms != K:
        raise ValueError(f"the learner ({spec.name}) plays {spec.num_arms} arms but the instance has {K} means")
    if T < K:
        raise ValueError(f"horizon must be >= num_arms={K} (each arm is played once), got {T}")
    if T >= _sampling.MAX_COUNT:
        raise ValueError(f"horizon must be < 2**24 (exact float32 Binomial counts), got {T}")
    check_params_class(learner, params, "learner", "params")
    learner.check(params)
    eps = _validate._concrete(params.epsilon)
    if tie_break == "random" and eps is not None and np.any(np.isinf(eps)):
        raise ValueError(
            "the event simulator of anytime_lazy_ucb cannot run epsilon=inf with tie_break='random': without noise "
            "two arms can tie for many rounds, which the step-level policy breaks afresh every round and one event "
            "cannot; build the learner with tie_break='first', or run it step by step with jaxpriv.sweep"
        )
    reasons = _validate.opt_outs(private, reward_sum=None if reward_sum is bernoulli_reward_sum else HOOK)
    _validate.refuse_finite_budget(
        "simulate_episodes (Anytime-Lazy-UCB)", "epsilon", params.epsilon, reasons, "ε-DP", private
    )
    holds = bool(spec.private) and private and not reasons
    bernoulli_bandit(K).check(means)
    ckpts = normalize_checkpoints(T, checkpoints)
    one = _anytime_simulator(K, T, ckpts, tie_break, reward_sum)
    ndims = spec_ndims(learner, bernoulli_bandit(K))
    regret, releases, pulls = episode_sweep(one, SimParams(params, means), key, seeds, chunk, ndims)
    played = np.asarray(pulls).sum(-1)
    if np.any(played != T):  # the scan ran out of events before T: never expected, never silent
        raise RuntimeError(
            f"the event simulator of anytime_lazy_ucb stopped after {int(played.min())} of {T} rounds in some run "
            "(more events than its bound): please report it; jaxpriv.sweep runs the policy step by step"
        )
    return Result(jnp.asarray(ckpts, jnp.int32), regret, None, None, private=holds, episodes=releases, pulls=pulls)
