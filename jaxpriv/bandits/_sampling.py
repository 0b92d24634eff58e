"""An exact float32 Binomial sampler for episode-level simulation.

``jax.random.binomial`` (the TensorFlow BTRS port) evaluates the log of the
acceptance ratio as ``(n+1)·log((n-m+1)/(n-k+1)) + ...``: differences of
numbers of size ``n log n`` in float32. For ``n ≳ 10⁶`` that loses the O(1)
result (measured: variance 4% too large at ``n = 10⁷, p = 0.625``). Episode
lengths reach ``T/2 = 5·10⁶`` at the paper's horizon, so the episode-level
simulator uses this sampler instead: the same algorithms (inversion for
``n·min(p, 1-p) <= 10``, Hörmann's BTRS rejection otherwise), with
``log f(k) - log f(m)`` written in Loader's saddle-point form (``stirlerr`` and
the deviance ``bd0``, as in R's ``dbinom``), whose terms are O(log n): exact up
to float32 rounding of O(1) quantities, for ``n < 2²⁴``.

References:
  W. Hörmann, The generation of binomial random variates, J. Statist. Comput.
  Simul. 46 (1993). C. Loader, Fast and accurate computation of binomial
  probabilities (2000).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxpriv._base import PRNGKey

#: The largest count the float32 sampler represents exactly.
MAX_COUNT = 2**24

_STIRLERR_TABLE = np.array(
    [0.0] + [math.lgamma(x + 1) - (0.5 * math.log(2 * math.pi * x) + x * math.log(x) - x) for x in range(1, 16)],
    np.float32,
)


def _stirlerr(x: jax.Array) -> jax.Array:
    """``log x! - log(sqrt(2πx) (x/e)^x)`` for integer-valued ``x >= 1`` (table to 15, series above)."""
    table = jnp.asarray(_STIRLERR_TABLE)[jnp.clip(x, 0, 15).astype(jnp.int32)]
    xs = jnp.maximum(x, 1.0)
    x2 = xs * xs
    series = (1.0 / 12 - (1.0 / 360 - 1.0 / (1260 * x2)) / x2) / xs
    return jnp.where(x <= 15, table, series)


def _bd0(x: jax.Array, mean: jax.Array) -> jax.Array:
    """The deviance ``x log(x/M) + M - x`` without cancellation (Loader 2000)."""
    d = x - mean
    v = d / jnp.maximum(x + mean, 1e-30)
    s = d * v
    ej = 2.0 * x * v
    v2 = v * v
    series = s
    for j in range(1, 8):  # |v| < 0.1: terms fall by 100x, 7 terms reach float32 precision
        ej = ej * v2
        series = series + ej / (2 * j + 1)
    direct = jnp.where(x > 0, x * jnp.log(jnp.maximum(x, 1e-30) / mean), 0.0) + mean - x
    return jnp.where(jnp.abs(d) < 0.1 * (x + mean), series, direct)


def _log_pmf_interior(k: jax.Array, n: jax.Array, p: jax.Array) -> jax.Array:
    """``log f(k) - stirlerr(n) + log sqrt(2π)`` for ``1 <= k <= n-1`` (Loader's form)."""
    q = 1.0 - p
    nk = n - k
    return (
        -_stirlerr(k) - _stirlerr(nk) - _bd0(k, n * p) - _bd0(nk, n * q) - 0.5 * (jnp.log(k) + jnp.log(nk) - jnp.log(n))
    )


def _log_ratio(k: jax.Array, m: jax.Array, n: jax.Array, p: jax.Array) -> jax.Array:
    """``log f(k)/f(m)`` for the Binomial(n, p) pmf, ``1 <= m <= n-1``, any ``0 <= k <= n``."""
    kc = jnp.clip(k, 1.0, jnp.maximum(n - 1.0, 1.0))
    interior = _log_pmf_interior(kc, n, p)
    const = _stirlerr(n) - 0.5 * math.log(2 * math.pi)
    edge0 = n * jnp.log1p(-p) - const  # log f(0) = n log q
    edge_n = n * jnp.log(p) - const  # log f(n) = n log p
    log_fk = jnp.where(k <= 0, edge0, jnp.where(k >= n, edge_n, interior))
    return log_fk - _log_pmf_interior(m, n, p)


def _inversion(key: PRNGKey, n: jax.Array, q: jax.Array) -> jax.Array:
    """Count geometric gaps until their sum exceeds ``n`` (for small ``n q``)."""
    log1mq = jnp.log1p(-q)

    def cond(carry):
        return jnp.any(carry[2] <= n)

    def body(carry):
        key, num, total = carry
        key, sub = jax.random.split(key)
        u = jax.random.uniform(sub, n.shape, jnp.float32)
        active = total <= n
        geom = jnp.ceil(jnp.log(u) / log1mq)
        return key, num + active.astype(jnp.float32), jnp.where(active, total + geom, total)

    _, num, _ = jax.lax.while_loop(cond, body, (key, jnp.zeros_like(n), jnp.zeros_like(n)))
    return num - 1.0


def _btrs(key: PRNGKey, n: jax.Array, q: jax.Array) -> jax.Array:
    """Hörmann's transformed rejection with squeeze, ``q <= 1/2`` and ``n q > 10``."""
    stddev = jnp.sqrt(n * q * (1.0 - q))
    b = 1.15 + 2.53 * stddev
    a = -0.0873 + 0.0248 * b + 0.01 * q
    c = n * q + 0.5
    v_r = 0.92 - 4.2 / b
    alpha = (2.83 + 5.1 / b) * stddev
    m = jnp.floor((n + 1.0) * q)

    def cond(carry):
        return jnp.any(~carry[2])

    def body(carry):
        key, out, done = carry
        key, k_u, k_v = jax.random.split(key, 3)
        u = jax.random.uniform(k_u, n.shape, jnp.float32) - 0.5
        v = jax.random.uniform(k_v, n.shape, jnp.float32)
        us = 0.5 - jnp.abs(u)
        k = jnp.floor((2.0 * a / us + b) * u + c)
        squeeze = (us >= 0.07) & (v <= v_r)
        inside = (k >= 0) & (k <= n)
        log_v = jnp.log(v * alpha / (a / (us * us) + b))
        accept = squeeze | (inside & (log_v <= _log_ratio(jnp.where(inside, k, m), m, n, q)))
        new = accept & ~done
        return key, jnp.where(new, k, out), done | accept

    _, out, _ = jax.lax.while_loop(cond, body, (key, jnp.zeros_like(n), jnp.zeros(n.shape, bool)))
    return out


def binomial(key: PRNGKey, n: ArrayLike, p: ArrayLike) -> jax.Array:
    """Exact ``Binomial(n, p)`` draws (int32), for integer ``0 <= n < 2²⁴`` and ``p`` in ``[0, 1]``.

    Args:
      key: a PRNG key.
      n: the numbers of trials (any shape; broadcast with ``p``).
      p: the success probabilities.

    Returns:
      int32 draws of the broadcast shape.
    """
    n = jnp.asarray(n, jnp.float32)
    p = jnp.asarray(p, jnp.float32)
    n, p = jnp.broadcast_arrays(n, p)
    flip = p > 0.5
    q = jnp.where(flip, 1.0 - p, p)
    small = n * q <= 10.0
    k_inv, k_btrs = jax.random.split(key)
    x_inv = _inversion(k_inv, jnp.where(small, n, 0.0), jnp.where(small, q, 0.5))
    x_btrs = _btrs(k_btrs, jnp.where(small, 1e4, n), jnp.where(small, 0.5, q))
    x = jnp.where(small, x_inv, x_btrs)
    return jnp.where(flip, n - x, x).astype(jnp.int32)


#: ``(key, n, mean) -> sum`` of ``n`` rewards of an arm of mean ``mean``: an episode simulator's reward-sum hook.
RewardSum = Callable[[PRNGKey, jax.Array, jax.Array], jax.Array]


def bernoulli_reward_sum(key: PRNGKey, n: jax.Array, mean: jax.Array) -> jax.Array:
    """The exact reward sum of ``n`` Bernoulli(``mean``) pulls: one ``Binomial(n, mean)`` draw."""
    return binomial(key, n, mean)
