"""The episodic skeleton shared by AdaC-UCB, AdaP-UCB, AdaP-KLUCB and the non-private counterpart.

Algorithm 7 of Azize's thesis (Algorithm 1 of the NeurIPS 2022 AdaP paper): play
each arm once, then run episodes ``ℓ = 1, 2, ...``; episode ``ℓ`` starts at
``t_ℓ``, plays ``a_ℓ = argmax_a I_a(t_ℓ - 1)`` until ``N_{a_ℓ}`` has doubled
(per-arm doubling), and the index of arm ``a`` uses only the rewards of the
last episode in which ``a`` was played (forgetting). The released statistic
of an episode is its mean reward, plus noise drawn once when the episode closes
and reused until ``a``'s next episode closes: Gaussian for AdaC-UCB (ρ-zCDP),
Laplace for AdaP-UCB / AdaP-KLUCB (ε-DP). The policies differ only in the
calibration (``calibrate``), the release noise's family (``noise``) and the
index (``index_fn``), the keyword arguments of ``episodic_ucb``.

The pieces here (index, tie-breaking, the per-episode sample count) are shared
with the episode-level simulator ``jaxpriv.bandits.episodic.ucb``, so both
simulators run the same algorithm.

**The exact episode-level simulator** (``simulate``, the four factories' ``Spec.fast_path``):

Exact episode-level simulation of AdaC-UCB, AdaP-UCB, AdaP-KLUCB and episodic UCB: one scan step per episode.

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
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from jaxpriv import _rng, _validate
from jaxpriv._base import (
    Learner,
    NonfiniteInfo,
    PRNGKey,
    Spec,
    check_horizon,
    check_params_class,
    spec_of,
    static_args,
    zero_nonfinite,
)
from jaxpriv._kahan import KahanSum, kahan_add
from jaxpriv.bandits import _sampling
from jaxpriv.bandits._fast_path import FastPath, episode_sweep
from jaxpriv.bandits._sampling import RewardSum, bernoulli_reward_sum
from jaxpriv.envs.bandits import BernoulliParams, bernoulli_bandit
from jaxpriv.sim import Result, SimParams, normalize_checkpoints, spec_ndims

INIT_COUNTS = ("samples", "half")
TIE_BREAKS = ("random", "first")


class EpisodicUCBState(NamedTuple):
    """State of AdaC-UCB / AdaP-UCB / AdaP-KLUCB / episodic UCB (one seed).

    The index of arm ``a`` at an episode start uses ``means[a]`` (the released,
    possibly noisy, mean of ``a``'s last closed episode) and ``lengths[a]``
    (that episode's number of samples).
    """

    counts: jax.Array  # shape=[K], int32, N_a(t): pulls of each arm so far
    means: jax.Array  # shape=[K], float32, released mean of a's last closed episode
    lengths: jax.Array  # shape=[K], int32, samples in a's last closed episode
    arm: jax.Array  # shape=(), int32, the arm of the current episode
    length: jax.Array  # shape=(), int32, its length N_a(t_ℓ - 1) (1 for an initial pull)
    played: jax.Array  # shape=(), int32, rounds played in the current episode
    total: jax.Array  # shape=(), float32, reward sum of the current episode (Kahan-compensated)
    comp: jax.Array  # shape=(), float32, Kahan compensation of ``total``
    episodes: jax.Array  # shape=(), int32, ℓ: episodes started after the K initial pulls
    beta: jax.Array  # shape=(), float32, optimism parameter β (α for AdaP-UCB / AdaP-KLUCB)
    unit_stddev: jax.Array  # shape=(), float32, the noise scale at n = 1: Gaussian σ = 1/sqrt(2ρ) (AdaC),
    #                         Laplace b = 1/ε (AdaP); 0 when non-private


def validate_static(num_arms: int, horizon: int | None, init_count: str, tie_break: str) -> int:
    """Eager checks of the factory arguments; returns ``K``."""
    num_arms = _validate.positive_int("num_arms", num_arms, minimum=2)
    if horizon is not None:
        horizon = _validate.positive_int("horizon", horizon)
        if horizon < num_arms:
            raise ValueError(f"horizon must be >= num_arms={num_arms} (each arm is played once), got {horizon}")
        if horizon >= 2**31 - 1:
            raise ValueError(f"horizon must be < 2**31 - 1 (int32 counters), got {horizon}")
    _validate.choice("init_count", init_count, INIT_COUNTS)
    _validate.choice("tie_break", tie_break, TIE_BREAKS)
    return num_arms


def index_count(lengths: jax.Array, counts: jax.Array, init_count: str) -> jax.Array:
    """``n_a``, the sample count used in the index and the noise of arm ``a`` (float32).

    ``"samples"`` (the default, a standard choice the paper leaves open;
    docs/algorithms/zcdp_bandits.md, 'Decoding choices'): the number of rewards in
    ``a``'s last episode, i.e. 1 after the initial pull and ``N_a/2`` after.
    ``"half"``: the paper's ``½ N_a(t_ℓ - 1)`` literally, i.e. 0.5 after the
    initial pull (more noise, still private), ``N_a/2`` after.
    """
    n = lengths.astype(jnp.float32)
    if init_count == "half":
        n = jnp.where(counts == 1, 0.5, n)
    return jnp.maximum(n, 0.5)  # lengths = 0 only before the initial pull, where the index is unused


def index(means: ArrayLike, n: ArrayLike, t: ArrayLike, beta: ArrayLike, unit_stddev: jax.Array) -> jax.Array:
    """The index of eq. (5.4): ``μ̃_a + sqrt((1/(2 n_a) + 1/(ρ n_a²)) β log t_ℓ)`` (``means``, ``n``, ``t`` and
    ``beta`` taken as float32).

    ``1/ρ = 2 unit_stddev²``; with ``unit_stddev = 0`` it is the non-private
    index ``μ̂_a + sqrt(β log t_ℓ / (2 n_a))`` of ``ucb`` (eq. (5.4) without its privacy terms).
    """
    means, n, beta = (jnp.asarray(x, jnp.float32) for x in (means, n, beta))
    rho_inv = 2.0 * unit_stddev * unit_stddev
    log_t = jnp.log(jnp.asarray(t, jnp.float32))
    return means + jnp.sqrt((0.5 / n + rho_inv / (n * n)) * beta * log_t)


def choose(key: PRNGKey, values: jax.Array, tie_break: str) -> jax.Array:
    """``argmax`` of ``values``; ties broken uniformly at random (``"random"``) or to the first.

    The random rule uses one uniform draw ``u``: among the ``m`` maximisers it
    picks the ``floor(u m)``-th, which is uniform over them.
    """
    if tie_break == "first":
        return jnp.argmax(values).astype(jnp.int32)
    is_max = values == jnp.max(values)
    num = jnp.sum(is_max, dtype=jnp.int32)
    u = _rng.uniform(key, (), jnp.float32)
    j = jnp.minimum(jnp.floor(u * num.astype(jnp.float32)).astype(jnp.int32), num - 1)
    rank = jnp.cumsum(is_max, dtype=jnp.int32) - 1  # rank of each maximiser among them
    return jnp.argmax(is_max & (rank == j)).astype(jnp.int32)


def index_policy(
    index_fn: Callable[[Any, jax.Array], jax.Array], num_arms: int, tie_break: str
) -> Callable[[PRNGKey, Any, jax.Array], jax.Array]:
    """The ``act`` of a policy that pulls each arm once (arm ``t - 1`` at ``t <= K``), then the arm of highest
    ``index_fn(state, t)`` (ties by ``tie_break``, ``choose``): DP-UCB's and LDP-UCB's."""

    def act_fn(key: PRNGKey, state: Any, t: jax.Array) -> jax.Array:
        t = jnp.asarray(t, jnp.int32)
        best = choose(key, index_fn(state, t), tie_break)
        return jnp.where(t <= num_arms, t - 1, best).astype(jnp.int32)

    return act_fn


def gaussian_noise(key: PRNGKey) -> jax.Array:
    """One standard normal draw (float32): AdaC-UCB's release noise."""
    return _rng.normal(key, (), jnp.float32)


def laplace_noise(key: PRNGKey) -> jax.Array:
    """One unit Laplace draw (float32, scale 1): AdaP-UCB's and AdaP-KLUCB's release noise."""
    return _rng.laplace(key, (), jnp.float32)


def release(
    key: PRNGKey,
    total: jax.Array,
    length: jax.Array,
    n: jax.Array,
    unit_stddev: jax.Array,
    noise: Callable[[PRNGKey], jax.Array] = gaussian_noise,
) -> jax.Array:
    """An episode's released mean ``total/length + (unit_stddev/n) Z``, ``Z = noise(key)``.

    Gaussian ``Z`` with ``unit_stddev = 1/sqrt(2ρ)``: ``N(0, 1/(2ρ n²))`` (Gaussian mechanism, Δ = 1/n);
    Laplace ``Z`` with ``unit_stddev = 1/ε``: ``Lap(1/(ε n))`` (Laplace mechanism, Δ = 1/n).
    """
    mean = total / length.astype(jnp.float32)
    return mean + (unit_stddev / n) * noise(key)


def episodic_ucb(
    num_arms: int,
    horizon: int | None,
    *,
    private: bool,
    clip_rewards: bool,
    init_count: str,
    tie_break: str,
    calibrate: Callable[[Any], tuple[jax.Array, jax.Array]],
    check: Callable[[Any], None],
    params_class: type | None = None,
    guarantee_holds: bool | None = None,
    name: str | None = None,
    index_fn: Callable[..., jax.Array] = index,
    noise: Callable[[PRNGKey], jax.Array] = gaussian_noise,
    fast_path: FastPath | None = None,
) -> Learner:
    """The step-level learner: one scan step per round.

    ``calibrate(params) -> (beta, unit_stddev)`` turns the public params into
    the state's calibrated quantities; ``check`` validates concrete params;
    ``index_fn(means, n, t_ℓ, beta, unit_stddev) -> [K]`` is the index (default:
    AdaC-UCB's eq. (5.4)); ``noise(key)`` draws the unit release noise (default:
    Gaussian). ``params_class`` is the one params class the policy takes,
    ``guarantee_holds`` whether it declares its privacy guarantee in force and ``name``
    its factory (the learner's ``Spec``; ``name=None`` builds no spec, for a variant built by hand,
    e.g. the audits' deliberately broken copies).
    ``fast_path``: the factory's ``FastPath(simulate, ...)`` (its algorithm's name, budget field and
    guarantee, and a module-level ``calibrate``), completed here with the index, the noise and the
    ``init_count`` / ``tie_break`` conventions; ``None`` (a variant built by hand): no episode simulator.
    """
    K = validate_static(num_arms, horizon, init_count, tie_break)
    if fast_path is not None:
        fast_path = fast_path._replace(
            options=(
                *fast_path.options,
                ("index_fn", index_fn),
                ("noise", noise),
                ("init_count", init_count),
                ("tie_break", tie_break),
            )
        )

    def init_fn(key: PRNGKey, params) -> EpisodicUCBState:
        del key
        beta, unit_stddev = calibrate(params)
        zi = jnp.zeros((), jnp.int32)
        zf = jnp.zeros((), jnp.float32)
        return EpisodicUCBState(
            counts=jnp.zeros(K, jnp.int32),
            means=jnp.zeros(K, jnp.float32),
            lengths=jnp.zeros(K, jnp.int32),
            arm=zi,
            length=zi,
            played=zi,
            total=zf,
            comp=zf,
            episodes=zi,
            beta=beta,
            unit_stddev=unit_stddev,
        )

    def act_fn(key: PRNGKey, state: EpisodicUCBState, t: jax.Array) -> jax.Array:
        t = jnp.asarray(t, jnp.int32)
        n = index_count(state.lengths, state.counts, init_count)
        best = choose(key, index_fn(state.means, n, t, state.beta, state.unit_stddev), tie_break)
        done = state.played >= state.length
        return jnp.where(t <= K, t - 1, jnp.where(done, best, state.arm)).astype(jnp.int32)

    def update_fn(
        key: PRNGKey, state: EpisodicUCBState, action: jax.Array, reward: jax.Array, t: jax.Array
    ) -> tuple[EpisodicUCBState, NonfiniteInfo]:
        action = jnp.asarray(action, jnp.int32)
        r, bad = zero_nonfinite(jnp.asarray(reward, jnp.float32))  # 0 is inside [0, 1]: privacy holds
        if clip_rewards:
            r = jnp.clip(r, 0.0, 1.0)  # the sensitivity 1/n assumes rewards in [0, 1]
        onehot = jnp.arange(K) == action
        new = state.played >= state.length  # this round starts an episode
        arm = jnp.where(new, action, state.arm)
        counts_before = jnp.sum(jnp.where(onehot, state.counts, 0), dtype=jnp.int32)
        length = jnp.where(new, jnp.maximum(counts_before, 1), state.length)  # double N_a
        played = jnp.where(new, 0, state.played) + 1
        total = jnp.where(new, 0.0, state.total)
        comp = jnp.where(new, 0.0, state.comp)
        total, comp = kahan_add(KahanSum(total, comp), r)  # Kahan summation of the episode's rewards
        counts = state.counts + onehot.astype(jnp.int32)
        episodes = state.episodes + (new & (jnp.asarray(t, jnp.int32) > K)).astype(jnp.int32)
        close = played == length
        n = index_count(length, jnp.sum(jnp.where(onehot, counts, 0), dtype=jnp.int32), init_count)
        if private:
            released = release(key, total, length, n, state.unit_stddev, noise)
        else:
            del key
            released = total / length.astype(jnp.float32)
        upd = close & onehot
        return state._replace(
            counts=counts,
            means=jnp.where(upd, released, state.means),
            lengths=jnp.where(upd, length, state.lengths),
            arm=arm,
            length=length,
            played=played,
            total=total,
            comp=comp,
            episodes=episodes,
        ), NonfiniteInfo(bad)

    static = static_args(
        num_arms=K,
        horizon=horizon,
        private=private,
        clip_rewards=clip_rewards,
        init_count=init_count,
        tie_break=tie_break,
        index_fn=index_fn,
        noise=noise,
    )
    spec = (
        None
        if name is None
        else Spec(name, params_class, private=guarantee_holds, static=static, num_arms=K, fast_path=fast_path)
    )
    return Learner(init_fn, act_fn, update_fn, check, spec=spec, returns_info=True)


# --- the exact episode-level simulator (Spec.fast_path): one scan step per episode -----------------------

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
    index_fn: Callable[..., jax.Array] = index,
    noise: Callable[[PRNGKey], jax.Array] = gaussian_noise,
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
            n_idx = index_count(lengths, counts, init_count)
            scores = index_fn(released_means, n_idx, t + 1, beta, unit_stddev)  # t_ℓ = t + 1
            arm = jnp.where(is_init, i, choose(k_tie, scores, tie_break))
            onehot = arms == arm
            c_arm = jnp.sum(jnp.where(onehot, counts, 0), dtype=jnp.int32)
            length = jnp.where(is_init, 1, jnp.maximum(c_arm, 1))  # per-arm doubling
            n_eff = jnp.clip(horizon - t, 0, length)  # the last episode is truncated at T
            total = reward_sum(k_sum, n_eff, jnp.sum(jnp.where(onehot, means, 0.0))).astype(jnp.float32)
            n_rel = index_count(length, c_arm + length, init_count)
            released = release(k_noise, total, length, n_rel, unit_stddev, noise)
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
) -> Result:
    """An episodic UCB policy's fast path (``Spec.fast_path``, ``FastPath(simulate, ...)``): ``learner``'s episodes.

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
    return Result(jnp.asarray(ckpts, jnp.int32), regret, None, None, private=holds, episodes=episodes, pulls=pulls)
