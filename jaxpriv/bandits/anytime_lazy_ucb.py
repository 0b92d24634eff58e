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
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxpriv import _validate, declare
from jaxpriv._base import Learner, PRNGKey, Spec, nonfinite_field
from jaxpriv.bandits import _lazy
from jaxpriv.bandits._episodic_ucb import TIE_BREAKS, choose
from jaxpriv.bandits._fast_path import FastPath
from jaxpriv.bandits._lazy import LazyState
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


@declare.learner("anytime_lazy_ucb", params=AnytimeLazyUCBParams, bound=anytime_lazy_ucb_bound)
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

    def update_fn(key: PRNGKey, state: LazyState, action: jax.Array, reward: jax.Array, t: jax.Array) -> LazyState:
        del t
        return _lazy.lazy_update(key, state, action, reward)

    # The exact event-level simulator (``jaxpriv.bandits.episodic.lazy``): releases and leader changes.
    fast_path = FastPath("lazy", (("tie_break", tie_break),))
    floor = _lazy.LAZY_RELEASE_FLOOR if private else None
    spec = Spec(private=private, num_arms=K, fast_path=fast_path, sampler_floor=floor)
    return Learner(init_fn, act_fn, update_fn, check, nonfinite=nonfinite_field, spec=spec)
