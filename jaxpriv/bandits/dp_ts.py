"""Lazy-DP-TS: ε-DP Thompson sampling on lazily released batch means (Hu & Hegde, UAI 2022).

B. Hu and N. Hegde, "Near-optimal Thompson sampling-based algorithms for differentially private stochastic
bandits", UAI 2022 (PMLR 180:844-852), Algorithm 2 (Lazy-DP-TS), also Section 3 of Hu, Huang, Mehta & Hegde,
arXiv:2102.07929v3. Its regret ``O(Σ_{Δ_j>0} log T / min{ε, Δ_j})`` (Theorem 4) matches the lower bound.
Two ideas: the lazy release (``jaxpriv.bandits._lazy``: an arm's posterior uses only its last batch of
``O_j ∈ {1, 2, 4, ...}`` fresh rewards, released once with one ``Lap(1/ε)`` on its sum), and an
optimistic reshaping of the posterior: the private mean is shifted up by ``3 log t/(ε O_j)`` and clipped to
``[0, 1]`` before it sets the Beta posterior.

DP-TS (the paper's Algorithm 1, ``dp_ts``) keeps every observation instead and releases each arm's running sum
with the hybrid mechanism (Chan, Shi & Song 2011): a logarithmic mechanism over the completed blocks of
``1, 2, 4, ...`` observations and a binary mechanism inside the current block, at ``ε/2`` each; its regret
carries an extra ``log(log T/(ε Δ))`` factor (Theorem 2).

Sources and decoding choices. The paper's full text was not available to this implementation (the stored
copies give the abstract and a secondary summary with the algorithm's formulas: the ``Lap(1/ε)`` draw per
batch sum, batch sizes ``1, 2, 4, ...``, the offset ``3 log t/(ε O_j)``, the clipping and the
``Beta(α̃ + 1, β̃ + 1)`` posterior); the algorithm-box line numbers are not cited. Standard choices where the
summary is silent: before an arm's first release its posterior is the uniform prior ``Beta(1, 1)``
(``O_j = 0``), the maximising sample is taken (ties have probability 0), and no initial round robin. For DP-TS
the summary's optimistic shift could not be read unambiguously; ``dp_ts`` shifts by the sub-gamma deviation of its
own release noise at the same ``t^{-3}`` level as Lazy-DP-TS's (see ``dp_ts_shift``).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.typing import ArrayLike

from jaxpriv import _rng, _validate, declare
from jaxpriv._base import Learner, NonfiniteInfo, PRNGKey, Spec, zero_nonfinite
from jaxpriv.bandits import _lazy
from jaxpriv.bandits._lazy import LazyState
from jaxpriv.mechanisms._sampler_floor import HYBRID_FLOOR

__all__ = [
    "DPTSParams",
    "DPTSState",
    "LazyDPTSParams",
    "LazyState",
    "dp_ts",
    "dp_ts_posterior",
    "dp_ts_shift",
    "lazy_dp_ts",
    "lazy_dp_ts_posterior",
    "lazy_dp_ts_sample",
]


class LazyDPTSParams(NamedTuple):
    """Params of ``lazy_dp_ts``.

    Attributes:
      epsilon: the ε-DP budget, finite and ``> 0``, required (no default: a budget is never implied). ``inf``
        (no noise, no optimistic shift: Thompson sampling on the last batch) only with
        ``lazy_dp_ts(..., private=False)``.
    """

    epsilon: ArrayLike | None


def _posterior(released: jax.Array, used: jax.Array, t: ArrayLike, inv_epsilon: jax.Array):
    n = used.astype(jnp.float32)
    shift = 3.0 * jnp.log(jnp.asarray(t, jnp.float32)) * inv_epsilon / jnp.maximum(n, 1.0)
    mu = jnp.clip(released + shift, 0.0, 1.0)  # the optimistic, clipped private mean
    mu = jnp.where(used > 0, mu, 0.0)
    return mu * n + 1.0, (1.0 - mu) * n + 1.0


def lazy_dp_ts_posterior(
    released: ArrayLike, used: ArrayLike, t: ArrayLike, epsilon: ArrayLike
) -> tuple[jax.Array, jax.Array]:
    """The Beta posterior's parameters ``(α̃_j + 1, β̃_j + 1)`` at round ``t``.

    ``μ_j = clip(μ̃_j + 3 log t/(ε O_j), 0, 1)``, ``α̃_j = μ_j O_j``, ``β̃_j = (1 - μ_j) O_j``;
    ``Beta(1, 1)`` for an arm without a release (``O_j = 0``).

    Args:
      released: ``[K]`` released means ``μ̃_j``.
      used: ``[K]`` their batch sizes ``O_j``.
      t: the round.
      epsilon: ε (``inf``: no shift).

    Returns:
      ``([K], [K])`` float32.
    """
    inv_epsilon = jnp.float32(1.0) / jnp.asarray(epsilon, jnp.float32)
    return _posterior(jnp.asarray(released, jnp.float32), jnp.asarray(used, jnp.int32), t, inv_epsilon)


#: Marsaglia–Tsang proposals per Gamma draw: for a shape ``>= 1`` each is accepted with probability ``>= 0.95``,
#: so all are rejected with probability ``< 0.05^8 < 4e-11`` (the draw is then the mode-like ``d``).
PROPOSALS = 8

#: Up to this shape the acceptance test is evaluated as Marsaglia & Tsang write it, ``log u < x²/2 + d - d v +
#: d log v``; its float32 cancellation (``d - d v`` of two numbers near ``d``) costs an absolute error of about
#: ``d`` float32 ulps of 1, which decides no proposal differently from float64 in 400,000 at shapes ``<= 30``
#: (2.5e-6 of them at 100, 1% at 1e6, 15% at 1e7). Above it, the cancellation-free series (``_log_ratio``).
GAMMA_DIRECT_MAX = 32.0

#: Terms of the series ``Σ_j (-y)^j/(4 + j)`` in ``_log_ratio``: above ``GAMMA_DIRECT_MAX``, ``|y| < 0.39``
#: (``x`` is a float32 normal, ``|x| < 6.45``), and the remainder ``<= 0.39^20/24 < 2e-10`` relative.
SERIES_TERMS = 20


def _log_ratio(x: jax.Array, y: jax.Array) -> jax.Array:
    """Marsaglia–Tsang's log acceptance ratio ``x²/2 + d - d v + d log v`` without cancellation.

    With ``v = (1 + y)³``, ``y = c x = x/(3 sqrt(d))`` (so ``9 d c² = 1``), the ratio is exactly
    ``3 d (log(1 + y) - y + y²/2 - y³/3) = -(x y)²/3 · Σ_{j>=0} (-y)^j/(4 + j)``: the terms of order
    ``x²`` and ``x² y`` cancel in closed form, and what is left is a product of float32 factors accurate to a
    few ulps (relative), at every shape. (The textbook form computes ``d - d v`` from two numbers near ``d``:
    an absolute error of about ``d`` ulps of 1, 0.5 at ``d = 1e7``, while the ratio itself is ``O(x⁴/d)``.)
    """
    series = jnp.full_like(y, 1.0 / (3 + SERIES_TERMS))
    for j in range(SERIES_TERMS - 2, -1, -1):  # Horner: Σ_j (-y)^j/(4 + j)
        series = 1.0 / (4 + j) - y * series
    xy = x * y
    return -(xy * xy) * series / 3.0


def _gamma_at_least_one(key: PRNGKey, shape: jax.Array) -> jax.Array:
    """``Gamma(shape, 1)`` for ``shape >= 1`` by Marsaglia & Tsang (2000), loop-free: ``PROPOSALS`` proposals, the
    first accepted one kept (exact but for an event of probability ``< 4e-11`` per draw).

    Right in float32 at every finite shape: up to ``GAMMA_DIRECT_MAX`` the textbook acceptance test and draw
    ``d v`` (exact there: no decision differs from float64); above it the acceptance test in the
    cancellation-free form of ``_log_ratio`` and the draw ``d v = d + sqrt(d) x (1 + y + y²/3)`` (``y = x/(3
    sqrt(d))``), whose random part keeps its float32 relative precision however large ``d`` is (``(1 + c x)³``
    rounds ``c x`` to the ulps of 1: at shape ``1e12`` a lattice of 0.36 standard deviations). The draws are then
    the exact Marsaglia–Tsang draws of their proposals, rounded to float32 (tests/bandits/test_bandits_hu.py: KS
    against the exact Gamma at shapes 1e6, 1e7, 1e8; the textbook form fails it from 1e7, with a standard deviation
    0.75 times the true one at 1e8). Draws at shapes ``<= GAMMA_DIRECT_MAX`` are bit-identical to those before
    issue 45. Above about ``1e10`` the float32 grid itself (spacing ``1.2e-7 · shape``) is coarser than 1% of the
    standard deviation ``sqrt(shape)``: the draw is the rounding of an exact one, no closer.
    """
    k_normal, k_uniform = _rng.split(key)
    d = shape - np.float32(1.0 / 3.0)
    x = _rng.normal(k_normal, (PROPOSALS, *shape.shape), jnp.float32)
    u = _rng.uniform(k_uniform, (PROPOSALS, *shape.shape), jnp.float32)
    log_u = jnp.log(u)
    # the textbook form (shapes <= GAMMA_DIRECT_MAX, bit-identical to issue 44's sampler)
    c = jax.lax.rsqrt(9.0 * d)
    v = (1.0 + c * x) ** 3
    safe_v = jnp.where(v > 0, v, 1.0)
    accept_direct = (v > 0) & (log_u < 0.5 * x * x + d - d * safe_v + d * jnp.log(safe_v))
    # the cancellation-free form (larger shapes: d > 31.6, so |y| < 0.39 and v > 0)
    big = shape > GAMMA_DIRECT_MAX
    root = jnp.sqrt(jnp.where(big, d, 1.0))
    y = x / (3.0 * root)
    accept = jnp.where(big, log_u < _log_ratio(x, y), accept_direct)
    proposal = jnp.where(big, d + root * (x * (1.0 + y + y * y / 3.0)), safe_v)  # the draw, or v (textbook)
    first = jnp.argmax(accept, axis=0)  # the first accepted proposal (0 if none)
    chosen = jnp.take_along_axis(proposal, first[None], axis=0)[0]
    some = jnp.any(accept, axis=0)
    return jnp.where(big, jnp.where(some, chosen, d), d * jnp.where(some, chosen, 1.0))


def lazy_dp_ts_sample(key: PRNGKey, a: ArrayLike, b: ArrayLike) -> jax.Array:
    """One ``θ_j ~ Beta(a_j, b_j)`` per arm (``a_j, b_j >= 1``, as every posterior here), the draws the policy
    maximises: ``G_a/(G_a + G_b)`` with two loop-free Marsaglia–Tsang Gamma draws (no ``while`` in the step, unlike
    ``jax.random.beta``; exact but for an event of probability ``< 1e-10`` per draw)."""
    a = jnp.asarray(a, jnp.float32)
    b = jnp.asarray(b, jnp.float32)
    k_a, k_b = _rng.split(key)
    g_a, g_b = _gamma_at_least_one(k_a, a), _gamma_at_least_one(k_b, b)
    return g_a / (g_a + g_b)


def _lazy_dp_ts_example(horizon: int, dim: int) -> declare.ExampleRun:
    """``lazy_dp_ts`` at one small configuration (``jaxpriv.testing.learner_examples``)."""
    from jaxpriv.envs._settings import setting

    s = setting("bernoulli", dim)
    return lazy_dp_ts(dim, horizon), s.env, LazyDPTSParams(1.0), s.params


@declare.learner("lazy_dp_ts", params=LazyDPTSParams, example=_lazy_dp_ts_example)
def lazy_dp_ts(num_arms: int, horizon: int | None = None, *, private: bool = True) -> Learner:
    """Lazy-DP-TS (Hu & Hegde, UAI 2022, Algorithm 2): Thompson sampling on lazily released means; ε-DP.

    Pseudo-code (this implementation):

    1. for each arm ``j``: ``r_j = 0``, ``Ψ_j = ∅``, ``O_j = 0``, ``μ̃_j = 0``;
    2. for ``t = 1, 2, ...``: for each arm ``μ_j = clip(μ̃_j + 3 log t/(ε O_j), 0, 1)``,
       ``θ_j ~ Beta(μ_j O_j + 1, (1 - μ_j) O_j + 1)`` (``Beta(1, 1)`` while ``O_j = 0``);
       play ``J_t = argmax_j θ_j``;
    3. observe ``x``, ``Ψ_{J_t} ← Ψ_{J_t} ∪ {x}`` (``x`` clipped to ``[0, 1]``);
    4. if ``|Ψ_{J_t}| = 2^{r_{J_t}}``: ``μ̃_{J_t} = (Σ Ψ + Lap(1/ε)) / |Ψ|``, ``O_{J_t} = |Ψ|``,
       ``r_{J_t} += 1``, ``Ψ_{J_t} = ∅`` (the observations are dropped).

    Privacy (Theorem 3): ε-DP (event level; neighbouring reward sequences differ in one reward in
    ``[0, 1]``, replace-one). Each reward enters one released batch sum, with ``Lap(1/ε)`` (sensitivity 1;
    equivalently ``Lap(1/(ε O))`` on the mean); the batches are disjoint and fixed by the released history
    and the posterior draws (independent of the rewards), so by adaptive parallel composition and
    post-processing the actions are ε-DP. Rewards are clipped to ``[0, 1]`` inside ``update``; NaN / ±inf
    rewards count as 0 and are counted.

    Regret (Theorem 4): ``R_T = Σ_{Δ_j>0} O(log T / min{ε, Δ_j})``; the proof's constants are not available
    here, so no numeric bound is registered (``jaxpriv.experiments.registry``: ``bound=None``).

    No exact episode simulator (``spec.fast_path`` is ``None``): every round draws a fresh posterior sample, and
    between two releases the Beta parameters move with ``log t`` (the shift ``3 log t/(ε O_j)``), so the pulls
    between releases are a time-varying categorical sequence, not a function of a few draws. Run it step by step
    (``benchmarks/finite_optimal_t1e7.py``: ``T = 10⁷``, 20 runs in about 15 minutes on 2 CPU cores).

    Args:
      num_arms: ``K >= 2``.
      horizon: optional ``T``; only validated (``T >= 1``): the algorithm is anytime.
      private: ``False`` declares the policy not private and lets ``epsilon = inf`` (no noise) run; with
        ``True`` (default) ``epsilon`` must be finite.

    Returns:
      A ``Learner`` with params ``LazyDPTSParams`` (any other params class is refused); actions are int32 arm
      indices, the feedback is the reward of the played arm.

    References:
      B. Hu and N. Hegde, Near-optimal Thompson sampling-based algorithms for differentially private
      stochastic bandits, UAI 2022, PMLR 180:844-852, Algorithm 2, Theorems 3 and 4.
    """
    K = _validate.positive_int("num_arms", num_arms, minimum=2)
    if horizon is not None:
        horizon = _validate.horizon(horizon)
    _validate.opt_outs(private)

    def check(params: LazyDPTSParams) -> None:
        _lazy.check_budget("lazy_dp_ts", params, private)

    def init_fn(key: PRNGKey, params: LazyDPTSParams) -> LazyState:
        del key
        _validate.budget("lazy_dp_ts", _lazy.LAPLACE, params, needs=("epsilon",), refuses=("rho",))
        return _lazy.init_state(K, params)

    def act_fn(key: PRNGKey, state: LazyState, t: jax.Array) -> jax.Array:
        a, b = _posterior(state.released, state.used, t, state.inv_epsilon)
        return jnp.argmax(lazy_dp_ts_sample(key, a, b)).astype(jnp.int32)

    def update_fn(
        key: PRNGKey, state: LazyState, action: jax.Array, reward: jax.Array, t: jax.Array
    ) -> tuple[LazyState, NonfiniteInfo]:
        del t
        return _lazy.lazy_update(key, state, action, reward)

    spec = Spec(private=private, num_arms=K, sampler_floor=_lazy.LAZY_RELEASE_FLOOR if private else None)
    return Learner(init_fn, act_fn, update_fn, check, spec=spec, returns_info=True)


# --- DP-TS (Algorithm 1): every observation, released by the hybrid mechanism ---------------------------------

#: Levels of each arm's binary mechanism: a block of ``2^r`` observations, ``r <= 30`` (``T < 2^31``).
LEVELS = 31


class DPTSParams(NamedTuple):
    """Params of ``dp_ts``.

    Attributes:
      epsilon: the ε-DP budget, finite and ``> 0``, required (no default). ``inf`` (no noise, no shift:
        Thompson sampling with the uniform prior) only with ``dp_ts(..., private=False)``.
    """

    epsilon: ArrayLike | None


class DPTSState(NamedTuple):
    """State of ``dp_ts`` (one seed): each arm's hybrid mechanism."""

    count: jax.Array  # shape=[K], int32, O_j: observations of arm j (all of them are used)
    block: jax.Array  # shape=[K], int32, r_j: completed blocks (sizes 1, 2, 4, ...); the current one has 2^{r_j}
    pos: jax.Array  # shape=[K], int32, observations in the current block (< 2^{r_j})
    log_sum: jax.Array  # shape=[K], float32, C_j: Σ over completed blocks of (block sum + Lap(2/ε))
    log_exact: jax.Array  # shape=[K], float32, the exact sum of the completed blocks (tests, never read by act)
    alpha: jax.Array  # shape=[K, LEVELS], float32, the binary mechanism's exact p-sums in the current block
    alpha_hat: jax.Array  # shape=[K, LEVELS], float32, their noisy releases (+ Lap(2(r_j + 1)/ε) each)
    released: jax.Array  # shape=[K], float32, μ̃_j = (C_j + B_j)/O_j (0 before the first observation)
    exact: jax.Array  # shape=[K], float32, the exact mean of arm j's observations (tests, never read by act)
    inv_epsilon: jax.Array  # shape=(), float32, 1/ε (0 when ε = inf, non-private)


def _bits(pos: jax.Array) -> jax.Array:
    """``[..., LEVELS]`` bool: the binary digits of ``pos`` (the p-sums the binary mechanism's output adds)."""
    return ((pos[..., None] >> jnp.arange(LEVELS, dtype=jnp.int32)) & 1) == 1


def _noise_moments(block: jax.Array, pos: jax.Array, inv_epsilon: jax.Array) -> tuple[jax.Array, jax.Array]:
    """The release noise of the sum: ``(variance V, largest Laplace scale c)`` (float32).

    ``r`` draws ``Lap(2/ε)`` (the completed blocks) and ``popcount(pos)`` draws ``Lap(2(r + 1)/ε)`` (the current
    block's p-sums); a ``Lap(b)`` has variance ``2b²``.
    """
    r = block.astype(jnp.float32)
    ones = lax.population_count(pos).astype(jnp.float32)
    log_scale, tree_scale = 2.0 * inv_epsilon, 2.0 * (r + 1.0) * inv_epsilon
    variance = 2.0 * r * log_scale**2 + 2.0 * ones * tree_scale**2
    largest = jnp.where(ones > 0, tree_scale, jnp.where(r > 0, log_scale, 0.0))
    return variance, largest


def dp_ts_shift(block: ArrayLike, pos: ArrayLike, t: ArrayLike, epsilon: ArrayLike) -> jax.Array:
    """DP-TS's optimistic shift of the private mean: ``(sqrt(2 V x) + c x)/O_j`` with ``x = 3 log t``.

    ``V`` and ``c`` are the variance and the largest scale of the hybrid mechanism's Laplace draws in arm ``j``'s
    released sum (``O_j = 2^{r_j} - 1 + pos_j`` observations): a sum of independent ``Lap(b_i)`` is sub-gamma
    ``(Σ 2b_i², max b_i)`` (``jaxpriv.bandits.dp_ucb``'s module docstring), so the noise falls below
    ``-(sqrt(2Vx) + cx)`` with probability at most ``e^{-x} = t^{-3}``, the level of Lazy-DP-TS's shift. 0 for
    an arm without an observation.
    """
    block = jnp.asarray(block, jnp.int32)
    pos = jnp.asarray(pos, jnp.int32)
    return _shift(block, pos, t, jnp.float32(1.0) / jnp.asarray(epsilon, jnp.float32))


def _shift(block: jax.Array, pos: jax.Array, t: ArrayLike, inv_epsilon: jax.Array) -> jax.Array:
    count = (jnp.left_shift(1, block) - 1 + pos).astype(jnp.float32)
    variance, largest = _noise_moments(block, pos, inv_epsilon)
    x = 3.0 * jnp.log(jnp.asarray(t, jnp.float32))
    return (jnp.sqrt(2.0 * variance * x) + largest * x) / jnp.maximum(count, 1.0)


def _dp_ts_posterior(state: DPTSState, t: ArrayLike) -> tuple[jax.Array, jax.Array]:
    n = state.count.astype(jnp.float32)
    mu = jnp.clip(state.released + _shift(state.block, state.pos, t, state.inv_epsilon), 0.0, 1.0)
    mu = jnp.where(state.count > 0, mu, 0.0)
    return mu * n + 1.0, (1.0 - mu) * n + 1.0


def dp_ts_posterior(state: DPTSState, t: ArrayLike) -> tuple[jax.Array, jax.Array]:
    """DP-TS's Beta posterior ``(μ_j O_j + 1, (1 - μ_j) O_j + 1)``, ``μ_j = clip(μ̃_j + shift_j, 0, 1)``, at ``t``."""
    return _dp_ts_posterior(state, t)


def _dp_ts_example(horizon: int, dim: int) -> declare.ExampleRun:
    """``dp_ts`` at one small configuration (``jaxpriv.testing.learner_examples``)."""
    from jaxpriv.envs._settings import setting

    s = setting("bernoulli", dim)
    return dp_ts(dim, horizon), s.env, DPTSParams(1.0), s.params


@declare.learner("dp_ts", params=DPTSParams, example=_dp_ts_example)
def dp_ts(num_arms: int, horizon: int | None = None, *, private: bool = True) -> Learner:
    """DP-TS (Hu & Hegde, UAI 2022, Algorithm 1): Thompson sampling on hybrid-mechanism private sums; ε-DP.

    Arm ``j``'s observations ``x_1, x_2, ...`` are cut into blocks of ``1, 2, 4, ...`` (block ``k`` holds
    ``x_{2^k} .. x_{2^{k+1}-1}``). With ``O_j`` observations, ``m = 2^{⌊log2(O_j + 1)⌋} - 1`` of them fill the
    completed blocks:

    1. ``C_j`` (logarithmic mechanism, ``ε/2``): each completed block's sum plus one ``Lap(2/ε)``, added up;
    2. ``B_j`` (binary mechanism bounded by the block size ``2^{r_j}``, ``ε/2``): the sum of ``x_{m+1} .. x_{O_j}``
       from the p-sums of the binary representation of ``O_j - m``, each released once with ``Lap(2(r_j + 1)/ε)``;
    3. ``μ̃_j = (C_j + B_j)/O_j``; ``μ_j = clip(μ̃_j + shift_j, 0, 1)`` (``dp_ts_shift``);
       ``θ_j ~ Beta(μ_j O_j + 1, (1 - μ_j) O_j + 1)`` (``Beta(1, 1)`` while ``O_j = 0``); play ``argmax_j θ_j``.

    Privacy (Theorem 1): ε-DP (event level; neighbouring reward sequences differ in one reward in ``[0, 1]``,
    replace-one). A reward enters one block sum of the logarithmic mechanism (sensitivity 1, ``Lap(2/ε)``:
    ``ε/2``) and at most ``r_j + 1`` p-sums of its block's binary mechanism (sensitivity ``r_j + 1``,
    ``Lap(2(r_j + 1)/ε)`` each: ``ε/2``); basic composition gives ε, and the other arms' mechanisms see other
    rewards (parallel composition); the actions are post-processing. Rewards are clipped to ``[0, 1]`` inside
    ``update``; NaN / ±inf rewards count as 0 and are counted.

    Regret (Theorem 2): ``Σ_{Δ_j>0} O(max{log T/Δ_j, (log T/ε) log(log T/(ε Δ_j))})``; stated in ``O(·)``, so no
    numeric bound is registered. No exact episode simulator, for Lazy-DP-TS's reason (a fresh posterior draw every
    round) and because its release changes with every observation.

    Args:
      num_arms: ``K >= 2``.
      horizon: optional ``T``; only validated: the algorithm is anytime.
      private: ``False`` declares the policy not private and lets ``epsilon = inf`` run.

    Returns:
      A ``Learner`` with params ``DPTSParams`` (any other params class is refused).

    References:
      B. Hu and N. Hegde, UAI 2022, Algorithm 1, Theorems 1 and 2; T.-H. H. Chan, E. Shi and D. Song, Private
      and continual release of statistics, ACM TISSEC 2011 (the binary, logarithmic and hybrid mechanisms).
    """
    K = _validate.positive_int("num_arms", num_arms, minimum=2)
    if horizon is not None:
        horizon = _validate.horizon(horizon)
    _validate.opt_outs(private)
    levels = jnp.arange(LEVELS, dtype=jnp.int32)

    def check(params: DPTSParams) -> None:
        _lazy.check_budget("dp_ts", params, private, HYBRID_FLOOR)

    def init_fn(key: PRNGKey, params: DPTSParams) -> DPTSState:
        del key
        _validate.budget("dp_ts", _lazy.LAPLACE, params, needs=("epsilon",), refuses=("rho",))
        zi, zf = jnp.zeros(K, jnp.int32), jnp.zeros(K, jnp.float32)
        tree = jnp.zeros((K, LEVELS), jnp.float32)
        inv_epsilon = jnp.float32(1.0) / jnp.asarray(params.epsilon, jnp.float32)
        return DPTSState(zi, zi, zi, zf, zf, tree, tree, zf, zf, inv_epsilon)

    def act_fn(key: PRNGKey, state: DPTSState, t: jax.Array) -> jax.Array:
        a, b = _dp_ts_posterior(state, t)
        return jnp.argmax(lazy_dp_ts_sample(key, a, b)).astype(jnp.int32)

    def update_fn(
        key: PRNGKey, state: DPTSState, action: jax.Array, reward: jax.Array, t: jax.Array
    ) -> tuple[DPTSState, NonfiniteInfo]:
        del t
        x, bad = zero_nonfinite(jnp.asarray(reward, jnp.float32))  # 0 is inside [0, 1]: privacy holds
        x = jnp.clip(x, 0.0, 1.0)  # the sensitivities assume rewards in [0, 1]
        a = jnp.asarray(action, jnp.int32)
        z = _rng.laplace(key, (2,), jnp.float32)  # the new p-sum's draw, the completed block's draw
        r, pos = state.block[a], state.pos[a] + 1
        k = lax.population_count((pos & -pos) - 1)  # the lowest set bit of pos: the p-sum that closes
        alpha, alpha_hat = state.alpha[a], state.alpha_hat[a]
        node = jnp.sum(jnp.where(levels < k, alpha, 0.0)) + x
        tree_scale = 2.0 * (r + 1).astype(jnp.float32) * state.inv_epsilon
        alpha = jnp.where(levels < k, 0.0, jnp.where(levels == k, node, alpha))
        alpha_hat = jnp.where(levels < k, 0.0, jnp.where(levels == k, node + tree_scale * z[0], alpha_hat))
        full = pos == jnp.left_shift(1, jnp.minimum(r, 30))  # the block is complete: node k = r is its sum
        log_sum = state.log_sum[a] + jnp.where(full, node + 2.0 * state.inv_epsilon * z[1], 0.0)
        log_exact = state.log_exact[a] + jnp.where(full, node, 0.0)
        alpha = jnp.where(full, 0.0, alpha)
        alpha_hat = jnp.where(full, 0.0, alpha_hat)
        pos = jnp.where(full, 0, pos)
        bits = _bits(pos)
        count = state.count[a] + 1
        n = count.astype(jnp.float32)
        released = (log_sum + jnp.sum(jnp.where(bits, alpha_hat, 0.0))) / n
        exact = (log_exact + jnp.sum(jnp.where(bits, alpha, 0.0))) / n
        onehot = jnp.arange(K) == a
        row = onehot[:, None]
        return state._replace(
            count=jnp.where(onehot, count, state.count),
            block=jnp.where(onehot, r + full.astype(jnp.int32), state.block),
            pos=jnp.where(onehot, pos, state.pos),
            log_sum=jnp.where(onehot, log_sum, state.log_sum),
            log_exact=jnp.where(onehot, log_exact, state.log_exact),
            alpha=jnp.where(row, alpha[None], state.alpha),
            alpha_hat=jnp.where(row, alpha_hat[None], state.alpha_hat),
            released=jnp.where(onehot, released, state.released),
            exact=jnp.where(onehot, exact, state.exact),
        ), NonfiniteInfo(bad)

    spec = Spec(private=private, num_arms=K, sampler_floor=HYBRID_FLOOR if private else None)
    return Learner(init_fn, act_fn, update_fn, check, spec=spec, returns_info=True)
