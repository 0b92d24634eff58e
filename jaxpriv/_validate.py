"""Eager validation of static arguments and concrete params (never inside jit)."""

from __future__ import annotations

from typing import Any

import jax
import numpy as np


def _concrete(value: Any) -> np.ndarray | None:
    """``value`` as a NumPy array, or ``None`` when it is a tracer (skip checks)."""
    if isinstance(value, jax.core.Tracer):
        return None
    try:
        return np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError, jax.errors.ConcretizationTypeError):
        return None


def positive_int(name: str, value: Any, minimum: int = 1) -> int:
    """A static integer argument ``>= minimum``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value}")
    return int(value)


def choice(name: str, value: Any, allowed: tuple[str, ...]) -> str:
    """A static string argument among ``allowed``."""
    if value not in allowed:
        raise ValueError(f"{name} must be one of {allowed}, got {value!r}")
    return value


def positive(name: str, value: Any, allow_inf: bool = True) -> None:
    """All entries ``> 0`` (``inf`` allowed when ``allow_inf``), no NaN."""
    v = _concrete(value)
    if v is None:
        return
    bad = np.isnan(v) | (v <= 0) | (np.isinf(v) & (not allow_inf))
    if np.any(bad):
        rng = "(0, inf]" if allow_inf else "(0, inf)"
        raise ValueError(f"{name} must be in {rng}, got {value!r}")


def nonnegative(name: str, value: Any, allow_inf: bool = False) -> None:
    """All entries ``>= 0`` and finite unless ``allow_inf``."""
    v = _concrete(value)
    if v is None:
        return
    bad = np.isnan(v) | (v < 0) | (np.isinf(v) & (not allow_inf))
    if np.any(bad):
        rng = "[0, inf]" if allow_inf else "[0, inf)"
        raise ValueError(f"{name} must be in {rng}, got {value!r}")


def in_open_interval(name: str, value: Any, lo: float, hi: float) -> None:
    """All entries strictly inside ``(lo, hi)``."""
    v = _concrete(value)
    if v is None:
        return
    if np.any(np.isnan(v) | (v <= lo) | (v >= hi)):
        raise ValueError(f"{name} must be in ({lo}, {hi}), got {value!r}")


def in_closed_interval(name: str, value: Any, lo: float, hi: float) -> None:
    """All entries inside ``[lo, hi]``."""
    v = _concrete(value)
    if v is None:
        return
    if np.any(np.isnan(v) | (v < lo) | (v > hi)):
        raise ValueError(f"{name} must be in [{lo}, {hi}], got {value!r}")


def trailing_shape(name: str, value: Any, shape: tuple[int, ...]) -> None:
    """The trailing dimensions of ``value`` equal ``shape`` (a leading grid axis is allowed)."""
    s = np.shape(value)
    if len(shape) and tuple(s[len(s) - len(shape) :]) != tuple(shape):
        raise ValueError(f"{name} must have trailing shape {shape}, got shape {s}")
