"""Lazy-DP-TS: ε-DP Thompson sampling on lazily released batch means (Hu & Hegde, UAI 2022).

B. Hu and N. Hegde, "Near-optimal Thompson sampling-based algorithms for differentially private stochastic
bandits", UAI 2022 (PMLR 180:844-852), Algorithm 2 (Lazy-DP-TS), also Section 3 of Hu, Huang, Mehta & Hegde,
arXiv:2102.07929v3. Its regret ``O(Σ_{Δ_j>0} log T / min{ε, Δ_j})`` (Theorem 4) matches the lower bound.
Two ideas: the lazy release (``jaxpriv.bandits._lazy``: an arm's posterior uses only its last batch of
``O_j ∈ {1, 2, 4, ...}`` fresh rewards, released once with one ``Lap(1/ε)`` on its sum), and an
optimistic reshaping of the posterior: the private mean is shifted up by ``3 log t/(ε O_j)`` and clipped to
``[0, 1]`` before it sets the Beta posterior.

DP-TS (the paper's Algorithm 1, which keeps every observation and releases them with the hybrid
mechanism, log mechanism plus a bounded binary mechanism at ``ε/2`` each) is not implemented here.

Sources and decoding choices. The paper's full text was not available to this implementation (the stored
copies give the abstract and a secondary summary with the algorithm's formulas: the ``Lap(1/ε)`` draw per
batch sum, batch sizes ``1, 2, 4, ...``, the offset ``3 log t/(ε O_j)``, the clipping and the
``Beta(α̃ + 1, β̃ + 1)`` posterior); the algorithm-box line numbers are not cited. Standard choices where the
summary is silent: before an arm's first release its posterior is the uniform prior ``Beta(1, 1)``
(``O_j = 0``), the maximising sample is taken (ties have probability 0), and no initial round robin.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from jaxpriv import _validate
from jaxpriv._base import Learner, PRNGKey, Spec, nonfinite_field, static_args
from jaxpriv.bandits import _lazy
from jaxpriv.bandits._lazy import LazyState

__all__ = ["LazyDPTSParams", "LazyState", "lazy_dp_ts", "lazy_dp_ts_posterior", "lazy_dp_ts_sample"]


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


def lazy_dp_ts_sample(key: PRNGKey, a: ArrayLike, b: ArrayLike) -> jax.Array:
    """One ``θ_j ~ Beta(a_j, b_j)`` per arm (``jax.random.beta``), the draws the policy maximises."""
    a = jnp.asarray(a, jnp.float32)
    return jax.random.beta(key, a, jnp.asarray(b, jnp.float32), a.shape, jnp.float32)


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

    def update_fn(key: PRNGKey, state: LazyState, action: jax.Array, reward: jax.Array, t: jax.Array) -> LazyState:
        del t
        return _lazy.lazy_update(key, state, action, reward)

    static = static_args(num_arms=K, horizon=horizon, private=private)
    spec = Spec("lazy_dp_ts", LazyDPTSParams, private=private, static=static, num_arms=K)
    return Learner(init_fn, act_fn, update_fn, check, nonfinite=nonfinite_field, spec=spec)
