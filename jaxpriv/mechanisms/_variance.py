"""The exact variance oracle of every prefix-sum mechanism, and what each one declares.

A prefix-sum mechanism of jaxpriv is a ``Mechanism`` (a NamedTuple of pure
functions) that releases ``v_t = sum_{s<=t} x_s + noise_t``. Its factory sets the
mechanism's ``info`` field to a ``PrefixSumInfo``: its shape ``(T, d)``, its noise
family and neighbouring relation, the sensitivity its noise is calibrated to, and
the exact per-step, per-coordinate variance of ``noise_t``. The description is part
of the mechanism, so a copy with a wrapped ``step`` (``mechanism._replace(step=...)``)
keeps it; ``describe`` reads it.

Every oracle is evaluated on the host in float64 NumPy; it accepts arrays of
params (a privacy grid) and of steps ``t``, broadcast together.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from jax.typing import ArrayLike

from jaxpriv._base import Mechanism, PrefixSumInfo  # PrefixSumInfo: defined beside Mechanism, re-exported here
from jaxpriv.mechanisms._noise import NoiseFamily, noise_family


def register(mechanism: Mechanism, info: PrefixSumInfo) -> Mechanism:
    """``mechanism`` carrying the description ``info``: ``mechanism._replace(info=info)``.

    For a prefix-sum mechanism built by hand from another one's functions (a test's
    deliberately broken variant): ``register(Mechanism(init, step), describe(tree))``.
    Nothing is recorded anywhere else; the returned mechanism is the one described.
    """
    return mechanism._replace(info=info)


def describe(mechanism: Mechanism) -> PrefixSumInfo:
    """The ``PrefixSumInfo`` of a prefix-sum mechanism: its ``info`` field, set by jaxpriv's factories.

    Raises:
      ValueError: ``mechanism`` is not a prefix-sum mechanism (no ``PrefixSumInfo`` in its ``info``).
    """
    info = getattr(mechanism, "info", None)
    if not isinstance(info, PrefixSumInfo):
        raise ValueError(
            "mechanism must be a prefix-sum Mechanism built by jaxpriv.mechanisms (binary_tree, "
            f"honaker_tree, sqrt_factorization, blt or window_tree), got {type(mechanism).__name__}"
            + (" without a PrefixSumInfo in its info field" if isinstance(mechanism, Mechanism) else "")
        )
    return info


def _steps(info: PrefixSumInfo, t: ArrayLike) -> np.ndarray:
    steps = np.asarray(t)
    if not np.issubdtype(steps.dtype, np.integer) or np.any(steps < 1) or np.any(steps > info.horizon):
        raise ValueError(f"t must be integers in [1, {info.horizon}] (the mechanism's horizon), got {t!r}")
    return steps.astype(np.int64)


def release_variance(mechanism: Mechanism, params: Any, t: ArrayLike) -> np.ndarray:
    """Exact per-coordinate variance of a prefix-sum mechanism's release error at step ``t``.

    ``Var(v_t[j] - sum_{s<=t} x_s[j])`` for every coordinate ``j`` (the noise does not
    depend on the inputs), in float64, broadcast over the params' arrays and ``t``.
    An infinite budget gives 0.

    Args:
      mechanism: a prefix-sum mechanism of ``jaxpriv.mechanisms``.
      params: its params (``TreeParams``; ``WindowTreeParams`` for ``window_tree``).
      t: the 1-based step(s), ``1 <= t <= T``.

    Raises:
      ValueError: not a prefix-sum mechanism, ``t`` outside ``[1, T]``, or params the
        mechanism's ``check`` refuses (a missing or wrong-family budget among them).
    """
    info = describe(mechanism)
    if mechanism.check is not None:
        mechanism.check(params)
    return np.asarray(info.variance(params, _steps(info, t)), np.float64)


def calibrated_sensitivity(mechanism: Mechanism, params: Any) -> np.ndarray:
    """The sensitivity a prefix-sum mechanism's noise is calibrated to (see ``PrefixSumInfo.sensitivity``)."""
    info = describe(mechanism)
    if mechanism.check is not None:
        mechanism.check(params)
    return np.asarray(info.sensitivity(params), np.float64)


def budget_unit_variance(noise: NoiseFamily | str, params: Any, sensitivity: np.ndarray, dim: int) -> np.ndarray:
    """Per-coordinate variance of one unit-weight noise draw calibrated to ``sensitivity`` (float64).

    Gaussian (ρ-zCDP): ``s²/(2ρ)``; Laplace (ε-DP): ``2(s/ε)²``; Gamma-norm (ε-DP): ``(d+1)(s/ε)²``.
    """
    s = np.asarray(sensitivity, np.float64)
    family = noise_family(noise)
    if not family.pure:  # ρ-zCDP: unit draws of variance 1 scaled to σ = s/sqrt(2ρ)
        rho = np.asarray(params.rho, np.float64)
        return s**2 / (2.0 * rho)
    eps = np.asarray(params.epsilon, np.float64)
    return family.scaled_variance(s / eps, dim)
