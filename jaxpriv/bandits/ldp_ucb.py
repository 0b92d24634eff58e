"""LDP-UCB: UCB on locally privatised rewards ``r̃ = clip(r, 0, 1) + Lap(1/ε)`` (Ren et al. 2020).

The bonus (derived here; the paper's is replaced, docs/algorithms/baselines.md, 'Decoding choices')
---------------------------------------------------------------------------------------------------
A privatised reward ``r̃ = r + L``, ``r ∈ [0, 1]`` with mean ``μ``, ``L ~ Lap(1/ε)`` independent,
has mean ``μ`` and variance ``Var r + 2/ε² <= σ² = 1/4 + 2/ε²``. It satisfies Bernstein's
condition with that variance: ``r - μ`` is sub-gamma ``(1/4, 0)`` (Hoeffding's lemma) and
``L`` is sub-gamma ``(2/ε², 1/ε)`` (``-log(1 - s²) <= s²/(1 - s)`` for ``s = |λ|/ε < 1``), so
``r̃ - μ`` is sub-gamma ``(σ², 1/ε)`` on both sides and Bernstein's inequality for the mean
of ``n`` of them (Boucheron, Lugosi & Massart 2013, §2.4 and Theorem 2.10) gives, with
``L_t = log(2/δ_t) = log 2 + α log t``,

    ``P(|mean_n(r̃) - μ| > B(n, t)) <= t^{-α}``,   ``B(n, t) = sqrt(2 σ² L_t / n) + L_t / (ε n)``.

This is ``jaxpriv.bandits.dp_ucb.dp_ucb_bonus`` with the noise of ``n`` independent Laplace
draws, ``V(n) = 2n/ε²`` and ``b_max = 1/ε``. With ``ε = inf`` it is UCB's Hoeffding bonus
``sqrt(L_t/(2n))``.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxpriv import _rng, _validate, declare
from jaxpriv._base import Learner, NonfiniteInfo, PRNGKey, Spec, zero_nonfinite
from jaxpriv._kahan import KahanSum, kahan_add
from jaxpriv.bandits import _episodic_ucb
from jaxpriv.bandits.dp_ucb import dp_ucb_bonus
from jaxpriv.theory import bernstein_regret_bound


class LDPUCBParams(NamedTuple):
    """Params of ``ldp_ucb``.

    Attributes:
      epsilon: ε of ε-local DP, required (no default: a budget is never implied); ``inf``,
        given explicitly, is the non-private limit.
      alpha: the exploration exponent α > 0 (failure probability ``t^{-α}`` per arm and
        count; the regret bound needs α > 2).
    """

    epsilon: ArrayLike | None = None
    alpha: ArrayLike = 3.0


class LDPUCBState(NamedTuple):
    """State of ``ldp_ucb`` (one seed): only privatised rewards are kept."""

    counts: jax.Array  # shape=[K], int32, N_a
    sums: jax.Array  # shape=[K], float32, Σ r̃ over a's pulls (Kahan-compensated)
    comp: jax.Array  # shape=[K], float32, Kahan compensation of ``sums``
    alpha: jax.Array  # shape=(), float32, α
    scale: jax.Array  # shape=(), float32, the Laplace scale 1/ε (0 when non-private)


def ldp_ucb_bonus(counts: ArrayLike, t: ArrayLike, alpha: ArrayLike, epsilon: ArrayLike) -> jax.Array:
    """``B(n, t) = sqrt(2 (1/4 + 2/ε²) L_t / n) + L_t/(ε n)``, ``L_t = log 2 + α log t`` (float32)."""
    n = jnp.maximum(jnp.asarray(counts, jnp.float32), 1.0)
    scale = 1.0 / jnp.asarray(epsilon, jnp.float32)
    return dp_ucb_bonus(n, t, alpha, 2.0 * n * scale * scale, scale)


def ldp_ucb_regret_bound(means: ArrayLike, horizon: int, params: LDPUCBParams) -> float:
    """LDP-UCB's regret bound (derived here; constants explicit), float64.

    ``E Reg_T <= Σ_{Δ_a>0} Δ_a min(T, n_a* + K^{2-α}/(α-2))``, α > 2, with ``n_a*`` the least
    ``n`` with ``sqrt(2σ² L_T/n) + L_T/(εn) < Δ_a/2``, ``σ² = 1/4 + 2/ε²``,
    ``L_T = log 2 + α log T``; at most ``Σ (32 σ² L_T/Δ_a + 4 L_T/ε + Δ_a (1 + K^{2-α}/(α-2)))``,
    i.e. ``O(Σ log T/(ε² Δ_a))`` for small ε (Ren et al. 2020's rate). Same argument as
    ``dp_ucb_regret_bound`` (per-count failure probability ``t^{-α}/2`` per side).
    """
    _validate.budget("ldp_ucb", "laplace", params, needs=("epsilon",), guarantee="ε-local DP")
    _validate.budget_value("epsilon", params.epsilon)
    scale = 1.0 / float(params.epsilon)
    # the sum of n privatised rewards is sub-gamma (n σ², 1/ε), σ² = 1/4 + 2/ε²: no extra release noise
    return bernstein_regret_bound(
        means, horizon, float(params.alpha), 0.0, scale, "ldp_ucb", sampling_variance=0.25 + 2.0 * scale * scale
    )


def ldp_ucb_bound(params: LDPUCBParams, env_params: Any, spec: Spec, horizon: int) -> float | None:
    """LDP-UCB's derived bound (``ldp_ucb_regret_bound``; ``None`` unless ``alpha > 2``)."""
    del spec
    if not float(np.asarray(params.alpha)) > 2:
        return None
    return float(ldp_ucb_regret_bound(np.asarray(env_params.means), horizon, params))


def _example(horizon: int, dim: int) -> declare.ExampleRun:
    """``ldp_ucb`` at one small configuration (``jaxpriv.testing.learner_examples``)."""
    from jaxpriv.envs._settings import setting

    s = setting("bernoulli", dim)
    return ldp_ucb(dim, horizon), s.env, LDPUCBParams(epsilon=1.0), s.params


@declare.learner("ldp_ucb", params=LDPUCBParams, bound=ldp_ucb_bound, example=_example)
def ldp_ucb(num_arms: int, horizon: int | None = None, *, tie_break: str = "random") -> Learner:
    """LDP-UCB: UCB on rewards privatised by the Laplace mechanism before the learner sees them.

    Each reward is clipped to ``[0, 1]`` (a NaN / ±inf reward becomes 0 and is counted) and
    released as ``r̃ = r + Lap(1/ε)``; the learner keeps only ``r̃``. Play each arm once; then
    play ``argmax_a mean_a(r̃) + B(N_a, t)`` with

        ``B(n, t) = sqrt(2 (1/4 + 2/ε²) L_t / n) + L_t/(ε n)``,   ``L_t = log 2 + α log t``,

    a Bernstein bound for the Laplace-perturbed bounded rewards (variance ``<= 1/4 + 2/ε²``):
    ``|mean - μ_a| <= B`` with probability ``>= 1 - t^{-α}`` (module docstring).

    Privacy: ε-local DP: each released ``r̃`` is the Laplace mechanism on one reward of range
    ``[0, 1]`` (sensitivity 1), so any two rewards give ``r̃`` distributions within ``e^ε``;
    the learner is post-processing of the ``r̃``. In simulation the randomiser runs inside
    ``update``, before anything is stored.

    Regret (``ldp_ucb_regret_bound``; α > 2): ``Σ_{Δ_a>0} Δ_a (n_a* + K^{2-α}/(α-2))``,
    ``O(Σ log T/(ε² Δ_a))`` for small ε.

    Args:
      num_arms: ``K >= 2``.
      horizon: optional ``T`` (``>= K``); only validated: the algorithm is anytime.
      tie_break: ``"random"`` (uniform among maximisers) or ``"first"``.

    Returns:
      A ``Learner`` with params ``LDPUCBParams``; actions are int32 arms.

    Examples:
      >>> import jax, jaxpriv
      >>> from jaxpriv.envs import BernoulliParams, bernoulli_bandit
      >>> res = jaxpriv.run(ldp_ucb(5), bernoulli_bandit(5),
      ...                   jaxpriv.SimParams(LDPUCBParams(epsilon=1.0), BernoulliParams()),
      ...                   jax.random.key(0), horizon=500, checkpoints=[500])
      >>> res.regret.shape
      (1,)

    References:
      Ren, Zhou, Wang, Wang, Chen, Multi-Armed Bandits with Local Differential Privacy,
      arXiv:2007.03121, 2020. Boucheron, Lugosi & Massart, Concentration Inequalities, 2013.
    """
    K = _validate.positive_int("num_arms", num_arms, minimum=2)
    if horizon is not None:
        horizon = _validate.horizon(horizon)
        if horizon < K:
            raise ValueError(f"horizon must be >= num_arms={K} (each arm is played once), got {horizon}")
    _validate.choice("tie_break", tie_break, _episodic_ucb.TIE_BREAKS)

    def check(params: LDPUCBParams) -> None:
        _validate.budget("ldp_ucb", "laplace", params, needs=("epsilon",), guarantee="ε-local DP")
        _validate.budget_value("epsilon", params.epsilon)
        _validate.positive("alpha", params.alpha, allow_inf=False)

    def init_fn(key: PRNGKey, params: LDPUCBParams) -> LDPUCBState:
        del key
        _validate.budget("ldp_ucb", "laplace", params, needs=("epsilon",), guarantee="ε-local DP")
        zeros = jnp.zeros(K, jnp.float32)
        return LDPUCBState(
            counts=jnp.zeros(K, jnp.int32),
            sums=zeros,
            comp=zeros,
            alpha=jnp.asarray(params.alpha, jnp.float32),
            scale=1.0 / jnp.asarray(params.epsilon, jnp.float32),
        )

    def index_fn(state: LDPUCBState, t: jax.Array) -> jax.Array:
        n = jnp.maximum(state.counts, 1).astype(jnp.float32)
        var = 2.0 * n * state.scale * state.scale
        return state.sums / n + dp_ucb_bonus(n, t, state.alpha, var, state.scale)

    act_fn = _episodic_ucb.index_policy(index_fn, K, tie_break)

    def update_fn(
        key: PRNGKey, state: LDPUCBState, action: jax.Array, reward: jax.Array, t: jax.Array
    ) -> tuple[LDPUCBState, NonfiniteInfo]:
        del t
        action = jnp.asarray(action, jnp.int32)
        r, bad = zero_nonfinite(jnp.asarray(reward, jnp.float32))
        private = jnp.clip(r, 0.0, 1.0) + state.scale * _rng.laplace(key, (), jnp.float32)  # the local randomiser
        onehot = jnp.arange(K) == action
        total, comp = kahan_add(KahanSum(state.sums, state.comp), jnp.where(onehot, private, 0.0))
        return state._replace(
            counts=state.counts + onehot.astype(jnp.int32),
            sums=total,
            comp=comp,
        ), NonfiniteInfo(bad)

    spec = Spec(private=True, num_arms=K)
    return Learner(init_fn, act_fn, update_fn, check, horizon, spec=spec, returns_info=True)


__all__ = ["LDPUCBParams", "LDPUCBState", "ldp_ucb", "ldp_ucb_bonus", "ldp_ucb_regret_bound"]
