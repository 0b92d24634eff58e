"""AdaP-KLUCB: ε-global DP KL-UCB with adaptive episodes and forgetting (Azize & Basu, NeurIPS 2022).

AdaP-UCB (``jaxpriv.bandits.adap_ucb``) with the KL-UCB index of that paper's eq. (7): the same episodic
skeleton, Laplace release and calibration; only the index differs.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from jaxpriv import declare
from jaxpriv._base import Learner
from jaxpriv.bandits.adap_ucb import _adap_learner, _calibrate, unit_scale
from jaxpriv.theory import adap_lower_bound

#: Bisection steps of the KL-UCB index (a standard choice the paper leaves open): the bracket ``[μ̆, 1]``
#: shrinks to ``2^-32``, below
#: float32's resolution on [0, 1] near the answer, so more steps cannot change it.
KL_ITERATIONS = 32


class AdaPKLUCBParams(NamedTuple):
    """Params of ``adap_klucb``.

    Attributes:
      epsilon: the ε-global DP budget ε > 0, required (no default; ``None`` is refused);
        ``inf``, given explicitly, is the non-private limit (no noise, no privacy shift).
      alpha: the exploration parameter α > 0 (Theorem 8 needs α > 3; the paper's experiments
        use α = 3.1).
    """

    epsilon: ArrayLike | None
    alpha: ArrayLike = 3.1


def bernoulli_kl(p: ArrayLike, q: ArrayLike) -> jax.Array:
    """``kl(p, q) = p log(p/q) + (1-p) log((1-p)/(1-q))`` (float32; ``0 log 0 = 0``, ``+inf`` off the support)."""
    p = jnp.asarray(p, jnp.float32)
    q = jnp.asarray(q, jnp.float32)
    first = jnp.where(p > 0, p * jnp.log(jnp.where(p > 0, p, 1.0) / q), 0.0)
    second = jnp.where(p < 1, (1 - p) * jnp.log(jnp.where(p < 1, 1 - p, 1.0) / (1 - q)), 0.0)
    return first + second


def kl_upper_bound(p: ArrayLike, c: ArrayLike, iterations: int = KL_ITERATIONS) -> jax.Array:
    """``max{q ∈ [p, 1] : kl(p, q) <= c}`` by ``iterations`` bisection steps on ``[p, 1]`` (a standard choice).

    ``kl(p, ·)`` is increasing on ``[p, 1]``, so bisection keeps ``kl(p, lo) <= c < kl(p, hi)``
    (or ``hi = 1``); the upper end ``hi`` is returned, within ``(1-p) 2^-iterations`` of the exact
    maximum and never below it (the index stays optimistic).
    """
    p = jnp.clip(jnp.asarray(p, jnp.float32), 0.0, 1.0)
    c = jnp.asarray(c, jnp.float32)
    lo = p
    hi = jnp.ones_like(p)

    def body(_, bracket):
        lo, hi = bracket
        mid = 0.5 * (lo + hi)
        ok = bernoulli_kl(p, mid) <= c
        return jnp.where(ok, mid, lo), jnp.where(ok, hi, mid)

    _, hi = jax.lax.fori_loop(0, iterations, body, (lo, hi))
    return hi


def _klucb_index(means: jax.Array, n: jax.Array, t: jax.Array, alpha: jax.Array, unit: jax.Array) -> jax.Array:
    """Azize & Basu (2022), eq. (7), KL-UCB, with ``unit = 1/ε``."""
    log_t = jnp.log(jnp.asarray(t, jnp.float32))
    shifted = jnp.clip(means + alpha * log_t * unit / n, 0.0, 1.0)  # μ̆ = Clip_{0,1}(μ̃ + α log t_ℓ/(ε n))
    return kl_upper_bound(shifted, alpha * log_t / n)


def adap_klucb_index(means: ArrayLike, n: ArrayLike, t: ArrayLike, epsilon: ArrayLike, alpha: ArrayLike) -> jax.Array:
    """The AdaP-KLUCB index of Azize & Basu (2022), eq. (7), without its noise (the noise is already in ``means``).

    ``I_a = max{q ∈ [0, 1] : kl(μ̆_a, q) <= α log(t_ℓ) / n_a}``, with
    ``μ̆_a = Clip_{0,1}(μ̃_a + α log(t_ℓ) / (ε n_a))`` and ``kl`` the Bernoulli KL divergence,
    solved by ``KL_ITERATIONS`` bisection steps (``kl_upper_bound``).

    Args:
      means: ``[K]``, the released (noisy) mean ``μ̃_a`` of each arm's last episode.
      n: ``[K]``, the number of samples ``n_a = ½ N_a(t_ℓ - 1)`` in that episode.
      t: the start ``t_ℓ`` of the episode being decided.
      epsilon: ε (``inf``: the non-private KL-UCB index on the last episode).
      alpha: α.

    Returns:
      ``[K]`` float32 indices in ``[0, 1]``.
    """
    return _klucb_index(
        jnp.asarray(means, jnp.float32),
        jnp.asarray(n, jnp.float32),
        jnp.asarray(t, jnp.float32),
        jnp.asarray(alpha, jnp.float32),
        unit_scale(epsilon),
    )


def calibrate_klucb(params: AdaPKLUCBParams) -> tuple[jax.Array, jax.Array]:
    """``(α, 1/ε)``, the state's ``beta`` and ``unit_stddev`` (the Laplace scale at ``n = 1``)."""
    return _calibrate("adap_klucb", params)


def _example(horizon: int, dim: int) -> declare.ExampleRun:
    """``adap_klucb`` at one small configuration (``jaxpriv.testing.learner_examples``)."""
    from jaxpriv.envs._settings import setting

    s = setting("bernoulli", dim)
    return adap_klucb(dim, horizon), s.env, AdaPKLUCBParams(1.0), s.params


@declare.learner("adap_klucb", params=AdaPKLUCBParams, example=_example)
def adap_klucb(
    num_arms: int,
    horizon: int | None = None,
    *,
    init_count: str = "samples",
    tie_break: str = "random",
) -> Learner:
    """AdaP-KLUCB: ε-global DP KL-UCB with per-arm doubling, forgetting and Laplace noise.

    Algorithm 1 of [N22] (Azize & Basu, NeurIPS 2022; References) with the KL-UCB index of eq. (7):
    play each arm once; then episode ``ℓ``
    starts at ``t_ℓ``, plays

        ``a_ℓ = argmax_a max{q ∈ [0, 1] : kl(μ̆_a, q) <= α log(t_ℓ) / n_a}``,
        ``μ̆_a = Clip_{0,1}(μ̃_a + α log(t_ℓ) / (ε n_a))``

    until ``N_{a_ℓ}`` has doubled. ``μ̃_a`` is the mean of the ``n_a = ½ N_a(t_ℓ - 1)`` rewards of
    the last episode in which ``a`` was played plus one ``Lap(1/(ε n_a))`` draw per closed episode,
    exactly as in ``adap_ucb`` (same skeleton, release and calibration). The index is solved by
    ``KL_ITERATIONS = 32`` bisection steps; ``n_a = 1`` after the initial pull (standard choices the
    paper leaves open; docs/algorithms/baselines.md, 'Decoding choices').

    Privacy: ε-global DP ([N22] Def. 2; Theorem 6, Theorem 8), event level, replace-one reward;
    the Laplace mechanism with sensitivity ``1/n_a`` for rewards in ``[0, 1]``, which are always
    clipped to ``[0, 1]``; the index is post-processing of the released means.

    Regret (Theorem 8, Bernoulli rewards, α > 3):
    ``Reg_T <= Σ_{Δ_a>0} (C₁(α) Δ_a log T / min{d_inf(μ_a, μ*), C₂ ε Δ_a} + α/(α - 3))`` with
    constants ``C₁(α), C₂ > 0`` the paper does not give, so no numeric bound is provided; it matches
    the lower bound of Theorem 3 up to those constants (``adap_lower_bound``).

    Args:
      num_arms: ``K >= 2``.
      horizon: optional ``T``; only validated (``T >= K``): the algorithm is anytime.
      init_count: ``n_a`` after the initial pull: ``"samples"`` (1, a standard choice) or ``"half"`` (0.5).
      tie_break: ``"random"`` (uniform among the maximisers, a standard choice) or ``"first"``.

    Returns:
      A ``Learner`` with params ``AdaPKLUCBParams`` (any other params class is refused); actions are int32 arm
      indices.

    Examples:
      >>> import jax, jaxpriv
      >>> from jaxpriv.envs import BernoulliParams, bernoulli_bandit
      >>> params = jaxpriv.SimParams(AdaPKLUCBParams(epsilon=1.0), BernoulliParams())
      >>> res = jaxpriv.run(adap_klucb(5), bernoulli_bandit(5), params, jax.random.key(0),
      ...                   horizon=1000, checkpoints=[1000])
      >>> res.regret.shape
      (1,)

    References:
      Azize & Basu, When Privacy Meets Partial Information: A Refined Analysis of Differentially
      Private Bandits, NeurIPS 2022 [N22], Algorithm 1, eq. (7), Theorems 3, 6 and 8;
      Garivier & Cappé, The KL-UCB Algorithm for Bounded Stochastic Bandits and Beyond, COLT 2011.
    """
    return _adap_learner(
        "adap_klucb", num_arms, horizon, init_count, tie_break, calibrate_klucb, _klucb_index, AdaPKLUCBParams
    )


__all__ = [
    "KL_ITERATIONS",
    "AdaPKLUCBParams",
    "adap_klucb",
    "adap_klucb_index",
    "adap_lower_bound",
    "bernoulli_kl",
    "kl_upper_bound",
]
