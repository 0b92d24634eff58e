"""The lazy private release shared by Lazy-DP-TS and Anytime-Lazy-UCB (Hu, Huang, Mehta & Hegde).

Every arm ``j`` keeps a buffer ``Ψ_j`` of *fresh* rewards and an epoch counter ``r_j`` (0 at first).
When ``|Ψ_j|`` reaches ``2^{r_j}`` the buffer's mean gets one ``Lap(1/(ε |Ψ_j|))`` draw (the Laplace
mechanism for the mean of ``|Ψ_j|`` rewards in ``[0, 1]``, sensitivity ``1/|Ψ_j|``): the release
``μ̃_j``, used by the policy with ``O_j = |Ψ_j|`` until the next one; the buffer is then emptied (its
rewards are never used again: "dropping observations") and ``r_j`` grows by one. The batches of arm
``j`` are therefore its rewards number ``1``, ``2-3``, ``4-7``, ... (sizes ``1, 2, 4, ...``).

Privacy (ε-DP, event level, neighbouring reward sequences differ in one reward in ``[0, 1]``,
replace-one): a reward enters exactly one released mean, once; the batch boundaries are fixed by the
counts, which are functions of the past releases (and of independent tie-breaking or posterior
randomness), so by adaptive parallel composition (Azize & Basu, NeurIPS 2022, Lemma 1) the sequence of
releases is ε-DP, and the actions are post-processing of it. Rewards are clipped to ``[0, 1]`` inside
``update`` (a NaN / ±inf reward counts as 0, and is counted), so the guarantee holds for any
environment.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxpriv import _rng, _validate
from jaxpriv._base import NonfiniteInfo, PRNGKey, zero_nonfinite
from jaxpriv._kahan import KahanSum, kahan_add
from jaxpriv.mechanisms import LAPLACE
from jaxpriv.mechanisms._sampler_floor import LAZY_RELEASE_FLOOR, SamplerFloor, check_sampler_floor

#: ``2^{r_j}`` is capped at ``2^30`` (an int32); a batch that long never closes within ``T < 2^31``.
MAX_EPOCH = 30


class LazyState(NamedTuple):
    """State of Lazy-DP-TS / Anytime-Lazy-UCB (one seed)."""

    sums: jax.Array  # shape=[K], float32, reward sum of each arm's fresh buffer Ψ_j (Kahan-compensated)
    comp: jax.Array  # shape=[K], float32, Kahan compensation of ``sums``
    fresh: jax.Array  # shape=[K], int32, |Ψ_j|: rewards in the fresh buffer
    epochs: jax.Array  # shape=[K], int32, r_j: releases made so far (the buffer closes at 2^{r_j})
    released: jax.Array  # shape=[K], float32, μ̃_j: the last released (noisy) mean; 0 before the first
    used: jax.Array  # shape=[K], int32, O_j: the number of rewards behind μ̃_j (0 before the first release)
    exact: jax.Array  # shape=[K], float32, the exact mean behind μ̃_j (never read by the policy: tests, audits)
    inv_epsilon: jax.Array  # shape=(), float32, 1/ε (0 when ε = inf, non-private)


def check_budget(component: str, params, private: bool, floor: SamplerFloor = LAZY_RELEASE_FLOOR) -> None:
    """ε is given, numeric, in ``(0, inf)``; ``inf`` only when built with ``private=False``; and, when private, the
    float32 samplers' δ floor of ``floor`` at ε is at most ``SAMPLER_DELTA_MAX`` (``check_sampler_floor``: a finite
    ε above about 11.6 for the lazy release, 23 for DP-TS's hybrid mechanism, is refused)."""
    _validate.budget(component, LAPLACE, params, needs=("epsilon",), refuses=("rho",))
    _validate.budget_value("epsilon", params.epsilon)
    eps = _validate._concrete(params.epsilon)
    if private and eps is not None and np.any(np.isinf(eps)):
        raise ValueError(
            f"{component} is ε-DP only for a finite epsilon, got epsilon={params.epsilon!r}: give a finite "
            "epsilon > 0, or build it with private=False to run the non-private limit (epsilon=inf; its results "
            "are then marked private: false)"
        )
    if private:
        check_sampler_floor(component, params, floor)  # the Laplace sampler's bounded support (issue 45)


def init_state(num_arms: int, params) -> LazyState:
    """All buffers empty, no release yet, ``1/ε`` calibrated from the traced ``params.epsilon``."""
    zi = jnp.zeros(num_arms, jnp.int32)
    zf = jnp.zeros(num_arms, jnp.float32)
    inv_epsilon = jnp.float32(1.0) / jnp.asarray(params.epsilon, jnp.float32)  # 0 at epsilon = inf
    return LazyState(zf, zf, zi, zi, zf, zi, zf, inv_epsilon)


def batch_size(epochs: ArrayLike) -> jax.Array:
    """``2^{r_j}``, the size at which arm ``j``'s fresh buffer is released (int32, capped at ``2^30``)."""
    return jnp.left_shift(jnp.int32(1), jnp.minimum(jnp.asarray(epochs, jnp.int32), MAX_EPOCH))


def lazy_update(
    key: PRNGKey, state: LazyState, action: jax.Array, reward: jax.Array
) -> tuple[LazyState, NonfiniteInfo]:
    """Add the reward to the pulled arm's buffer; release its mean plus ``Lap(1/(ε |Ψ|))`` when the buffer is full.

    Branch-free: one Laplace draw per step (from ``key``, used only when a buffer closes: at most one arm,
    the pulled one, closes per step), selected with ``jnp.where``. The Info counts a non-finite reward (replaced
    by zero).
    """
    r, bad = zero_nonfinite(jnp.asarray(reward, jnp.float32))  # 0 is inside [0, 1]: privacy holds
    r = jnp.clip(r, 0.0, 1.0)  # the sensitivity 1/|Ψ| assumes rewards in [0, 1]
    K = state.sums.shape[0]
    onehot = jnp.arange(K) == jnp.asarray(action, jnp.int32)
    added = kahan_add(KahanSum(state.sums, state.comp), r)
    sums = jnp.where(onehot, added.total, state.sums)
    comp = jnp.where(onehot, added.compensation, state.comp)
    fresh = state.fresh + onehot.astype(jnp.int32)
    close = onehot & (fresh == batch_size(state.epochs))
    n = jnp.maximum(fresh, 1).astype(jnp.float32)
    mean = sums / n
    noisy = mean + (state.inv_epsilon / n) * _rng.laplace(key, (), jnp.float32)  # Laplace mechanism, Δ = 1/n
    return state._replace(
        sums=jnp.where(close, 0.0, sums),
        comp=jnp.where(close, 0.0, comp),
        fresh=jnp.where(close, 0, fresh),
        epochs=state.epochs + close.astype(jnp.int32),
        released=jnp.where(close, noisy, state.released),
        used=jnp.where(close, fresh, state.used),
        exact=jnp.where(close, mean, state.exact),
    ), NonfiniteInfo(bad)
