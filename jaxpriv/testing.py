"""Statistical helpers for tests (public, like ``chex``): tolerances from sample sizes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np


def variance_with_stderr(samples: np.ndarray, mean: float | None = None) -> tuple[float, float]:
    """Sample variance about ``mean`` (the known mean if given) and its standard error.

    The standard error is ``sqrt((m4 - var²) / n)``, with ``m4`` the empirical
    fourth central moment: valid for any distribution with a finite fourth moment.
    """
    x = np.asarray(samples, np.float64).ravel()
    c = x - (x.mean() if mean is None else mean)
    var = float(np.mean(c**2))
    m4 = float(np.mean(c**4))
    return var, float(np.sqrt(max(m4 - var**2, 0.0) / x.size))


def mean_with_stderr(samples: np.ndarray, axis: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Mean and standard error along ``axis``."""
    x = np.asarray(samples, np.float64)
    n = x.shape[axis]
    return x.mean(axis), x.std(axis, ddof=1) / np.sqrt(n)


def ks_critical_value(n: int, alpha: float = 1e-3) -> float:
    """Asymptotic one-sample Kolmogorov–Smirnov critical value ``sqrt(-ln(alpha/2)/2) / sqrt(n)``."""
    return float(np.sqrt(-np.log(alpha / 2) / 2) / np.sqrt(n))


def ks_one_sample(samples: np.ndarray, cdf: Callable[[np.ndarray], Any]) -> float:
    """One-sample Kolmogorov–Smirnov statistic ``sup |F_n - F|`` of ``samples`` against ``cdf`` (compare with
    ``ks_critical_value``)."""
    x = np.sort(np.asarray(samples, np.float64).ravel())
    n = x.size
    f = np.asarray(cdf(x), np.float64)
    return float(max(np.max(np.arange(1, n + 1) / n - f), np.max(f - np.arange(n) / n)))


def ks_two_sample(a: np.ndarray, b: np.ndarray, alpha: float = 1e-3) -> tuple[float, float]:
    """Two-sample KS statistic and its asymptotic critical value at level ``alpha``."""
    a = np.sort(np.asarray(a, np.float64).ravel())
    b = np.sort(np.asarray(b, np.float64).ravel())
    grid = np.concatenate([a, b])
    fa = np.searchsorted(a, grid, side="right") / a.size
    fb = np.searchsorted(b, grid, side="right") / b.size
    stat = float(np.max(np.abs(fa - fb)))
    crit = float(np.sqrt(-np.log(alpha / 2) / 2) * np.sqrt((a.size + b.size) / (a.size * b.size)))
    return stat, crit
