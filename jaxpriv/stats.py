"""Streaming statistics over seeds: mean, variance, extremes and quantiles, merged exactly across chunks.

A sweep with ``stats=Stats(...)`` keeps, per grid point and checkpoint, only the
moments and a quantile sketch of the regret over seeds instead of the
``[grid, seeds, checkpoints]`` arrays, so 10^6 seeds × 1000 checkpoints need a
fixed, small memory. Chunks of seeds are summarised on the device and merged on
the host in float64:

* mean and variance by Chan, Golub & LeVeque's pairwise update
  (``M2 = M2_a + M2_b + δ² n_a n_b / n``): the merged values equal those of the
  whole array up to floating-point rounding, whatever the chunking;
* quantiles from a mergeable log-bucket sketch (DDSketch, Masson, Rim & Lee,
  VLDB 2019): a value ``x`` with ``|x| > min_value`` falls in bucket
  ``i = ceil(log_γ |x|)``, ``γ = (1 + α)/(1 − α)``, with its sign; bucket counts
  add across chunks exactly. The reported ``q``-quantile is within relative error
  ``α`` of the sample's lower ``q``-quantile (``numpy.quantile(..., method="lower")``),
  or within ``min_value`` of it when that is smaller than ``min_value`` in size;
  values beyond ``max_value`` in size are counted in the last bucket.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxpriv import _validate


class Stats(NamedTuple):
    """What to keep of the regret over seeds (``sweep(..., stats=Stats())``).

    Attributes:
      quantiles: the quantile levels to report, each in ``[0, 1]``.
      relative_accuracy: ``α`` of the quantile sketch, in ``(0, 0.5)``.
      min_value: sizes ``|x| <= min_value`` share the zero bucket.
      max_value: sizes above it share the last bucket (no accuracy guarantee there).
    """

    quantiles: tuple[float, ...] = (0.05, 0.25, 0.5, 0.75, 0.95)
    relative_accuracy: float = 0.01
    min_value: float = 1e-6
    max_value: float = 1e12

    def validate(self) -> Stats:
        qs = tuple(float(q) for q in self.quantiles)
        for q in qs:
            if not 0.0 <= q <= 1.0:
                raise ValueError(f"stats.quantiles must lie in [0, 1], got {q}")
        alpha = float(self.relative_accuracy)
        if not 0.0 < alpha < 0.5:
            raise ValueError(f"stats.relative_accuracy must lie in (0, 0.5), got {alpha}")
        lo = float(self.min_value)
        _validate.positive("stats.min_value", lo)
        hi = float(self.max_value)
        if not hi > lo:
            raise ValueError(f"stats.max_value must exceed min_value={lo}, got {hi}")
        return Stats(qs, alpha, float(lo), hi)

    @property
    def gamma(self) -> float:
        return (1.0 + self.relative_accuracy) / (1.0 - self.relative_accuracy)

    @property
    def _index_range(self) -> tuple[int, int]:
        lg = math.log(self.gamma)
        return math.ceil(math.log(self.min_value) / lg), math.ceil(math.log(self.max_value) / lg)

    @property
    def num_bins(self) -> int:
        """``2 K + 1`` bins: ``K`` negative buckets, zero, ``K`` positive buckets (ordered by value)."""
        lo, hi = self._index_range
        return 2 * (hi - lo + 1) + 1

    def bin_values(self) -> np.ndarray:
        """The value each bin reports: ``± 2 γ^i / (γ + 1)``, and 0 for the zero bucket."""
        lo, hi = self._index_range
        g = self.gamma
        pos = 2.0 * g ** np.arange(lo, hi + 1, dtype=np.float64) / (g + 1.0)
        return np.concatenate([-pos[::-1], [0.0], pos])


class SweepStats(NamedTuple):
    """Statistics over seeds of a sweep's regret (and mean loss) at each checkpoint.

    Arrays have shape ``[G, m]`` (``[m]`` without a grid); ``regret_quantiles``
    ``[G, m, q]``. ``count`` is the number of seeds; ``regret_var`` is the
    unbiased sample variance (``ddof=1``); ``nonfinite_inputs`` / ``nonfinite_steps``
    are totals over seeds and ``private`` the learner's declaration (see ``Result``).
    """

    steps: np.ndarray
    count: int
    regret_mean: np.ndarray
    regret_var: np.ndarray
    regret_min: np.ndarray
    regret_max: np.ndarray
    quantiles: tuple[float, ...]
    regret_quantiles: np.ndarray
    loss_mean: np.ndarray
    nonfinite_inputs: np.ndarray
    nonfinite_steps: np.ndarray
    private: bool | None = None

    def regret_se(self) -> np.ndarray:
        """Standard error of the mean regret."""
        return np.sqrt(self.regret_var / self.count)


class Accumulator(NamedTuple):
    """Mergeable moments and sketch counts (host, float64); leading axes ``[..., m]``."""

    n: np.ndarray
    mean: np.ndarray
    m2: np.ndarray
    low: np.ndarray
    high: np.ndarray
    counts: np.ndarray  # [..., m, bins] int64
    loss_mean: np.ndarray
    nonfinite_inputs: np.ndarray
    nonfinite_steps: np.ndarray


def chunk_summary(
    stats: Stats, regret: jax.Array, loss: jax.Array, nf_in: jax.Array, nf_steps: jax.Array, valid: jax.Array
) -> tuple[jax.Array, ...]:
    """Summaries of one chunk of seeds, on the device; the seed axis is ``-2`` (``-1`` for the counts).

    ``valid[c]`` masks padding seeds out. Two-pass mean / M2 in float32 per chunk
    (accurate: the chunk's spread, not its mean, sets the rounding).
    """
    w = valid.astype(jnp.float32)[:, None]
    n = jnp.sum(w)
    mean = jnp.sum(regret * w, -2) / n
    m2 = jnp.sum(((regret - mean[..., None, :]) * w) ** 2, -2)
    big = jnp.float32(np.inf)
    low = jnp.min(jnp.where(w > 0, regret, big), -2)
    high = jnp.max(jnp.where(w > 0, regret, -big), -2)
    loss_mean = jnp.sum(loss * w, -2) / n
    counts = _sketch_counts(stats, regret, valid)
    vi = valid.astype(jnp.int32)
    return n, mean, m2, low, high, counts, loss_mean, jnp.sum(nf_in * vi, -1), jnp.sum(nf_steps * vi, -1)


def _sketch_counts(stats: Stats, x: jax.Array, valid: jax.Array) -> jax.Array:
    """Bucket counts ``[..., m, bins]`` of ``x[..., c, m]`` over the seed axis ``c``."""
    lo, hi = stats._index_range
    k = hi - lo + 1
    size = jnp.abs(x)
    idx = jnp.ceil(jnp.log(jnp.maximum(size, stats.min_value)) / math.log(stats.gamma)).astype(jnp.int32)
    idx = jnp.clip(idx, lo, hi) - lo
    bins = jnp.where(size <= stats.min_value, k, jnp.where(x > 0, k + 1 + idx, k - 1 - idx))
    bins = jnp.where(jnp.isnan(x), k, bins)
    lead = x.shape[:-2]
    m = x.shape[-1]
    nb = 2 * k + 1
    # flat bucket id per element: (lead..., checkpoint, bin)
    lead_id = jnp.arange(math.prod(lead), dtype=jnp.int32).reshape((*lead, 1, 1)) if lead else 0
    flat = (lead_id * m + jnp.arange(m, dtype=jnp.int32)) * nb + bins
    weight = jnp.broadcast_to(valid.astype(jnp.int32)[:, None], x.shape)
    counts = jnp.zeros(math.prod(lead) * m * nb, jnp.int32).at[flat.reshape(-1)].add(weight.reshape(-1))
    return counts.reshape((*lead, m, nb))


def merge(a: Accumulator | None, b: Accumulator) -> Accumulator:
    """Chan's pairwise merge of two accumulators (exact up to rounding)."""
    if a is None:
        return b
    n = a.n + b.n
    delta = b.mean - a.mean
    mean = a.mean + delta * (b.n / n)
    m2 = a.m2 + b.m2 + delta**2 * (a.n * b.n / n)
    loss_mean = a.loss_mean + (b.loss_mean - a.loss_mean) * (b.n / n)
    return Accumulator(
        n,
        mean,
        m2,
        np.minimum(a.low, b.low),
        np.maximum(a.high, b.high),
        a.counts + b.counts,
        loss_mean,
        a.nonfinite_inputs + b.nonfinite_inputs,
        a.nonfinite_steps + b.nonfinite_steps,
    )


def to_accumulator(summary: tuple[jax.Array, ...]) -> Accumulator:
    n, mean, m2, low, high, counts, loss_mean, nf_in, nf_steps = (np.asarray(v) for v in summary)
    f = np.float64
    n = np.broadcast_to(n.astype(f)[..., None] if n.ndim else n.astype(f), mean.shape).copy()
    return Accumulator(
        n,
        mean.astype(f),
        m2.astype(f),
        low.astype(f),
        high.astype(f),
        counts.astype(np.int64),
        loss_mean.astype(f),
        nf_in.astype(np.int64),
        nf_steps.astype(np.int64),
    )


def finalize(stats: Stats, acc: Accumulator, steps: np.ndarray) -> SweepStats:
    """The reported statistics of a merged accumulator."""
    n = acc.n
    count = round(float(np.max(n)))
    var = acc.m2 / np.maximum(n - 1.0, 1.0)
    cum = np.cumsum(acc.counts, -1)  # [..., m, bins]
    values = stats.bin_values()
    qs = []
    for q in stats.quantiles:  # a handful of levels, not a loop over seeds or steps
        rank = np.floor(q * (n - 1.0))  # the lower order statistic's 0-based rank
        b = np.sum(cum <= rank[..., None], -1)  # the first bin whose cumulative count exceeds the rank
        qs.append(values[np.minimum(b, values.size - 1)])
    quant = np.stack(qs, -1) if qs else np.zeros((*acc.mean.shape, 0))
    return SweepStats(
        np.asarray(steps),
        count,
        acc.mean,
        var,
        acc.low,
        acc.high,
        tuple(stats.quantiles),
        quant,
        acc.loss_mean,
        acc.nonfinite_inputs,
        acc.nonfinite_steps,
    )


def paired_difference(
    x: np.typing.ArrayLike, reference: np.typing.ArrayLike, axis: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """Mean and paired standard error of ``x − reference`` along the seed ``axis``.

    For two arms run on shared seed keys (common random numbers), the standard error of the
    difference of the means is the standard error of the per-seed differences,
    ``std(x_i − r_i, ddof=1) / sqrt(n)``. The unpaired ``sqrt(SE(x)² + SE(r)²)`` treats the arms as
    independent; shared seeds make them correlated (often strongly: the same environment draws and
    noise), so it can overstate the error by orders of magnitude.

    Args:
      x: per-seed values of one arm (the seed axis is ``axis``).
      reference: the other arm's, on the same seeds (broadcastable to ``x``).
      axis: the seed axis.

    Returns:
      ``(mean, se)`` of the difference, with ``axis`` removed.
    """
    d = np.asarray(x, np.float64) - np.asarray(reference, np.float64)
    n = d.shape[axis]
    mean = d.mean(axis)
    se = d.std(axis, ddof=1) / np.sqrt(n) if n > 1 else np.zeros_like(mean)  # one seed: no spread to measure
    return mean, se
