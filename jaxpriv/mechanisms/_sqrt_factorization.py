"""The square-root factorization of the prefix-sum matrix: private prefix sums with Toeplitz-correlated noise."""

from __future__ import annotations

from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxpriv import _rng, _validate, declare
from jaxpriv._base import Mechanism, PrefixSumInfo, PRNGKey, Spec, poison_past_horizon, static_args
from jaxpriv._inplace import set_row
from jaxpriv.mechanisms import _accounting
from jaxpriv.mechanisms._dyadic import DyadicSums, dyadic_init, dyadic_step
from jaxpriv.mechanisms._noise import GAUSSIAN, NoiseFamily, noise_family
from jaxpriv.mechanisms._tree import NEIGHBOURING, TreeParams, check_budget, check_tree_params, guard_input
from jaxpriv.mechanisms._variance import budget_unit_variance

SQRT_MAX_ELEMENTS = 2**24
"""The largest ``T·d`` ``sqrt_factorization`` accepts: its noise history is ``T·d`` float32 (64 MiB) per seed."""


def sqrt_coefficients(horizon: int) -> np.ndarray:
    """``c_j = C(2j, j) / 4^j`` for ``j < T`` (float64): the Toeplitz coefficients of ``sqrt(A)``.

    ``A`` is the ``T x T`` lower-triangular all-ones matrix (prefix sums); the lower-triangular
    Toeplitz ``L`` with first column ``c`` satisfies ``L @ L = A`` (the power series of
    ``(1 - z)^{-1/2}``). Computed by ``c_j = c_{j-1} (2j - 1) / (2j)``.
    """
    j = np.arange(1, horizon, dtype=np.float64)
    return np.concatenate([[1.0], np.cumprod((2.0 * j - 1.0) / (2.0 * j))])


def factor_noise_scale(component: str, params: TreeParams, noise: NoiseFamily, encoder_norm: float, dtype) -> jax.Array:
    """``σ`` of a Gaussian factorization whose encoder has L2 sensitivity ``encoder_norm·Δ`` (checks the budget)."""
    check_budget(component, params, noise)
    sens = encoder_norm * jnp.asarray(params.sensitivity, jnp.float32)
    return jnp.asarray(_accounting.gaussian_stddev(params.rho, sens), dtype)


def factor_mechanism(
    component: str,
    init_fn,
    step_fn,
    horizon: int,
    dim: int,
    noise: NoiseFamily,
    neighbouring: str,
    encoder_norm: float,
    row_norm2,
    static: tuple[tuple[str, Any], ...] = (),
) -> Mechanism:
    """The ``Mechanism`` of a factorization ``v = A x + B z``; ``row_norm2(t)`` is ``||row t of B||²``.

    ``static``: the factory's static arguments (``Spec.static``).
    """

    def sensitivity_fn(params: TreeParams) -> np.ndarray:
        return encoder_norm * np.asarray(params.sensitivity, np.float64)

    def variance_fn(params: TreeParams, t: np.ndarray) -> np.ndarray:
        return budget_unit_variance(noise, params, sensitivity_fn(params), dim) * row_norm2(t)

    return Mechanism(
        init_fn,
        step_fn,
        partial(check_tree_params, noise=noise, component=component),
        horizon,
        info=PrefixSumInfo(component, horizon, dim, noise, neighbouring, sensitivity_fn, variance_fn),
        spec=Spec(component, TreeParams, private=True, static=static),
        returns_count=True,
    )


class SqrtState(NamedTuple):
    """State of ``sqrt_factorization``: exact sums plus the whole noise history.

    Attributes:
      sums: exact dyadic sums of the clipped inputs (the exact prefix sum, float32-accurate).
      history: ``[T, d]``, row ``s - 1`` holds the scaled noise ``σ z_s`` drawn at step ``s``.
      scale: ``σ``, the per-coordinate standard deviation of each ``z_s``.
      sensitivity: the clipping bound Δ (L2).
    """

    sums: DyadicSums
    history: jax.Array
    scale: jax.Array
    sensitivity: jax.Array


@declare.mechanism("sqrt_factorization", params=TreeParams)
def sqrt_factorization(
    horizon: int, dim: int, noise: NoiseFamily | str = "gaussian", neighbouring: str = "add_remove", dtype=jnp.float32
) -> Mechanism:
    """Square-root factorization: ``v = A x + L z`` with ``L = sqrt(A)``, the lower-triangular Toeplitz square root.

    The prefix-sum matrix ``A`` factors as ``A = L·L`` with ``L`` lower-triangular Toeplitz,
    first column ``c_j = C(2j, j)/4^j`` (``sqrt_coefficients``). The mechanism releases
    ``L (L x + z) = A x + L z`` with ``z ~ N(0, σ² I)``: the release at step ``t`` is

        ``v_t = sum_{s<=t} x_s + sum_{s<=t} c_{t-s} z_s``.

    Privacy (ρ-zCDP, Gaussian only; Fichtenberger, Henzinger & Upadhyay 2023; Henzinger,
    Upadhyay & Upadhyay 2023; adaptive inputs are covered because ``L`` is lower-triangular,
    Denisov et al. 2022): every input is clipped to L2 norm Δ; the encoder ``L x`` then has
    L2 sensitivity ``s·||L||_{1→2}``, the maximum column norm ``sqrt(sum_{j<T} c_j²)``
    times ``s = Δ`` (``"add_remove"``) or ``2Δ`` (``"replace"``); ``σ = s·||L||_{1→2}/sqrt(2ρ)``.

    Variance: per coordinate ``σ² sum_{j<t} c_j²`` at step ``t``; at ``t = T`` it is
    ``s²/(2ρ)·(sum_{j<T} c_j²)² ≈ s²/(2ρ)·((ln T + 3.35)/π)²`` (10.7 at ``T = 2^10``,
    ``s = 1``, ``ρ = 1/2``, against 110 for the binary tree).

    Memory and cost: the noise history ``σ z_1..σ z_t`` is kept, ``O(T·d)`` memory per seed
    and ``O(T·d)`` work per step (one ``[T]·[T, d]`` product). ``T·d`` above
    ``SQRT_MAX_ELEMENTS = 2^24`` (64 MiB of float32 per seed) is refused; use ``blt`` there,
    within 1% of this variance with ``O(buffers·d)`` memory.

    Guard rails as ``binary_tree``: a non-finite input is zeroed and counted (``step`` returns
    ``(state, release, nonfinite)``); the mechanism declares ``horizon=T`` and a step past it releases NaN.
    ``release_variance`` is its exact oracle. An infinite ρ gives the exact prefix sums.

    Args:
      horizon: ``T >= 1``.
      dim: ``d >= 1``.
      noise: ``"gaussian"`` only (the factorization's guarantee is zCDP).
      neighbouring: ``"add_remove"`` (``s = Δ``) or ``"replace"`` (``s = 2Δ``).
      dtype: dtype of the state and of the releases.

    Returns:
      A ``Mechanism`` with params ``TreeParams`` (``rho``, ``sensitivity`` = Δ).

    Raises:
      ValueError: ``noise`` is not ``"gaussian"``, or ``T·d > SQRT_MAX_ELEMENTS`` (the memory is named).

    References:
      Fichtenberger, Henzinger & Upadhyay, Constant Matters: Fine-grained Error Bound on
      Differentially Private Continual Observation, ICML 2023. Henzinger, Upadhyay & Upadhyay,
      Almost Tight Error Bounds on Differentially Private Continual Counting, SODA 2023.
    """
    horizon = _validate.horizon(horizon)
    dim = _validate.positive_int("dim", dim)
    noise = noise_family(noise, (GAUSSIAN.name,))  # the family object, kept by info and the check
    neighbouring = _validate.choice("neighbouring", neighbouring, NEIGHBOURING)
    if horizon * dim > SQRT_MAX_ELEMENTS:
        mib = horizon * dim * np.dtype(dtype).itemsize / 2**20
        raise ValueError(
            f"horizon * dim must be <= {SQRT_MAX_ELEMENTS} for sqrt_factorization (its noise history is T·d "
            f"per seed), got {horizon} * {dim} = {horizon * dim} ({mib:.0f} MiB per seed); use blt(...) instead"
        )
    factor = 2.0 if neighbouring == "replace" else 1.0
    depth = _accounting.tree_depth(horizon)
    coeffs = sqrt_coefficients(horizon)
    col_norm = float(np.sqrt(np.sum(coeffs**2)))  # the first column of L is the longest
    row_norm2 = np.cumsum(coeffs**2)  # ||row t of L||² = sum_{j<t} c_j²
    c = jnp.asarray(coeffs, dtype)
    lags = jnp.arange(horizon, dtype=jnp.int32)

    def init_fn(key: PRNGKey, params: TreeParams) -> SqrtState:
        del key
        return SqrtState(
            sums=dyadic_init(depth, dim, dtype),
            history=jnp.zeros((horizon, dim), dtype),
            scale=factor_noise_scale("sqrt_factorization", params, noise, factor * col_norm, dtype),
            sensitivity=jnp.asarray(params.sensitivity, dtype),
        )

    def step_fn(key: PRNGKey, state: SqrtState, x: ArrayLike, t: jax.Array) -> tuple[SqrtState, jax.Array, jax.Array]:
        x, bad = guard_input(x, state.sensitivity, "l2", dtype)
        sums, exact = dyadic_step(state.sums, x, t, None)
        z = state.scale * _rng.normal(key, (dim,), dtype)
        row = jnp.clip(t - 1, 0, horizon - 1)
        history = set_row(state.history, z, row)  # in place under vmap (jaxpriv._inplace)
        lag = t - 1 - lags  # c_{t-s} for s = 1..t, zero for the future rows
        weights = jnp.where(lag >= 0, c[jnp.clip(lag, 0, horizon - 1)], 0.0)
        release = poison_past_horizon(exact + weights @ history, t, horizon)
        return state._replace(sums=sums, history=history), release, bad

    return factor_mechanism(
        "sqrt_factorization",
        init_fn,
        step_fn,
        horizon,
        dim,
        noise,
        neighbouring,
        factor * col_norm,
        lambda t: row_norm2[t - 1],
        static_args(noise=noise, dtype=np.dtype(dtype).name),  # the declaration records the rest
    )
