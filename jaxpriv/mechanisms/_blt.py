"""Buffered linear Toeplitz (BLT) factorization: square-root-quality prefix sums with ``O(buffers·d)`` state."""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxpriv import _rng, _validate, declare
from jaxpriv._base import Mechanism, PRNGKey, poison_past_horizon, static_args
from jaxpriv.mechanisms import _accounting
from jaxpriv.mechanisms._dyadic import DyadicSums, dyadic_init, dyadic_step
from jaxpriv.mechanisms._noise import GAUSSIAN, NoiseFamily, noise_family
from jaxpriv.mechanisms._sqrt_factorization import factor_mechanism, factor_noise_scale
from jaxpriv.mechanisms._tree import NEIGHBOURING, TreeParams, guard_input

BLT_MAX_HORIZON = 2**24
"""The longest horizon ``blt`` accepts (float32 sums of 2^24 steps keep about 3 significant digits)."""
BLT_MAX_BUFFERS = 8
"""The most buffers ``blt`` accepts (the optimisation gains nothing measurable past 5 at ``T <= 2^24``)."""
BLT_DEFAULT_BUFFERS = 4
"""``blt``'s default: within 0.4% of the square root's worst variance at ``T = 2^10`` and ``2^14``."""


class BLTCoefficients(NamedTuple):
    """The BLT ``C⁻¹``: Toeplitz with ``θ_0 = 1`` and ``θ_j = sum_i ω_i λ_i^{j-1}`` for ``j >= 1`` (float64).

    Attributes:
      decay: ``λ``, shape ``[buffers]``, in ``(0, 1)``.
      weight: ``ω``, shape ``[buffers]``, negative, with ``sum_i -ω_i / (1 - λ_i) < 1``.
    """

    decay: np.ndarray
    weight: np.ndarray


def blt_dense(coeffs: BLTCoefficients, horizon: int) -> tuple[np.ndarray, np.ndarray]:
    """The first columns ``θ`` (of ``C⁻¹``) and ``β`` (of ``B = A C⁻¹``), length ``T``, float64."""
    lags = np.arange(horizon - 1, dtype=np.float64)
    theta = np.concatenate([[1.0], (coeffs.weight[None, :] * coeffs.decay[None, :] ** lags[:, None]).sum(1)])
    return theta, np.cumsum(theta)


def _gram(m: np.ndarray, v: np.ndarray, n: int) -> np.ndarray:
    """``sum_{k<n} (m^k v)(m^k v)ᵀ`` by binary doubling (``O(buffers³ log n)``)."""
    total = np.zeros((len(v), len(v)))
    offset = np.eye(len(v))  # m^(number of terms already summed)
    block, power = np.outer(v, v), m.copy()  # the Gram of 2^i terms and m^(2^i)
    while n:
        if n & 1:
            total = total + offset @ block @ offset.T
            offset = offset @ power
        n >>= 1
        if n:
            block = block + power @ block @ power.T
            power = power @ power
    return total


def _geometric(q: np.ndarray, n: int) -> np.ndarray:
    """``sum_{k<n} q^k`` for ``0 <= q < 1`` (``n`` where ``q`` rounds to 1); broadcasts ``q`` and ``n``."""
    near = np.abs(1.0 - q) < 1e-15
    with np.errstate(divide="ignore", invalid="ignore"):
        out = -np.expm1(n * np.log(q)) / np.where(near, 1.0, 1.0 - q)
    return np.where(near, np.asarray(n, np.float64), out)


def _column_norm2(coeffs: BLTCoefficients, horizon: int) -> float:
    """``||C||²_{1→2}``: ``C = (C⁻¹)⁻¹`` is again BLT, ``c_0 = 1``, ``c_j = -ωᵀ M^{j-1} 1`` with ``M = Λ - 1ωᵀ``.

    Its first column is the longest (the columns are truncations of it), so the norm² is
    ``1 + ωᵀ Gram(M, 1, T-1) ω``, by doubling in ``O(buffers³ log T)``.
    """
    lam, om = coeffs.decay, coeffs.weight
    ones = np.ones_like(lam)
    return float(1.0 + om @ _gram(np.diag(lam) - np.outer(ones, om), ones, horizon - 1) @ om)


def _row_norm2(coeffs: BLTCoefficients, t: np.ndarray) -> np.ndarray:
    """``||row t of B||² = sum_{k<t} β_k²`` with ``β_k = a + sum_i b_i λ_i^k`` (closed form, any shape of ``t``).

    ``a = 1 + sum_i ω_i/(1-λ_i) > 0`` and ``b_i = -ω_i/(1-λ_i) > 0`` (so no cancellation).
    """
    lam, om = coeffs.decay, coeffs.weight
    a, b = 1.0 + np.sum(om / (1.0 - lam)), -om / (1.0 - lam)
    t = np.asarray(t)[..., None]
    cross = _geometric(lam, t) @ b
    square = np.einsum("...ij,i,j->...", _geometric(np.outer(lam, lam), t[..., None]), b, b)
    return t[..., 0] * a * a + 2.0 * a * cross + square


def blt_norms(coeffs: BLTCoefficients, horizon: int) -> tuple[float, np.ndarray]:
    """``(||C||²_{1→2}, ||row t of B||² for t = 1..T)``, float64, without forming ``T x T`` matrices."""
    return _column_norm2(coeffs, horizon), _row_norm2(coeffs, np.arange(1, horizon + 1))


def _worst_variance_factor(coeffs: BLTCoefficients, horizon: int) -> float:
    """``||C||²_{1→2} · ||row T of B||²`` (the rows of ``B`` grow with ``t``): the objective."""
    return float(_column_norm2(coeffs, horizon) * _row_norm2(coeffs, np.asarray(horizon)))


def _unpack(x: np.ndarray) -> BLTCoefficients:
    """Unconstrained ``x`` -> ``λ = sigmoid(x[:n])``, ``ω_i = -(1-λ_i) softmax(x[n:], 0)_i`` (stable ``C``)."""
    n = len(x) // 2
    lam = 1.0 / (1.0 + np.exp(-x[:n]))
    logits = np.concatenate([x[n:], [0.0]])
    share = np.exp(logits - logits.max())
    return BLTCoefficients(lam, -(1.0 - lam) * share[:n] / share.sum())


@functools.lru_cache(maxsize=64)
def blt_coefficients(horizon: int, buffers: int = BLT_DEFAULT_BUFFERS) -> BLTCoefficients:
    """Optimise the BLT for horizon ``T`` on the host (float64, cached per ``(T, buffers)``).

    Minimises ``log ||C||²_{1→2} + log ||row T of B||²``, the log of the worst per-step variance at
    unit sensitivity and ``2ρ = 1`` (the row norms of ``B`` increase with ``t``), over
    ``λ = sigmoid(u)``, ``ω = -(1-λ)·softmax(v, 0)``: every point has ``sum_i -ω_i/(1-λ_i) < 1``,
    which keeps the poles of ``C`` inside the unit disc (``C``'s first coefficients cannot blow up).
    L-BFGS-B (SciPy, finite-difference gradients) from ``1 - λ`` log-spaced in ``[min(8/T, 0.1), 1/2]``,
    with equal shares and with shares growing with ``1 - λ``; the better is kept. One to three
    seconds per ``(T, buffers)``: the closed forms cost ``O(buffers³ log T)``, independent of ``T``.
    A local optimum: worst variance / the square root's = 1.0002 (``T = 2^10``) and 1.0037
    (``2^14``) with 4 buffers; 1.031 (4) and 1.008 (5 buffers) at ``2^20``.
    """
    from scipy.optimize import minimize  # SciPy ships with jax

    horizon, buffers = _check_static(horizon, buffers)

    def objective(x: np.ndarray) -> float:
        with np.errstate(all="ignore"):
            value = np.log(_worst_variance_factor(_unpack(x), horizon))
        return float(value) if np.isfinite(value) else 1e6

    decay = 1.0 - np.geomspace(min(8.0 / horizon, 0.1), 0.5, buffers)
    best = None
    for shares in (np.zeros(buffers), 3.0 + np.log(np.geomspace(0.01, 1.0, buffers))):  # equal; growing with 1 - λ
        x0 = np.concatenate([np.log(decay / (1.0 - decay)), shares])
        res = minimize(objective, x0, method="L-BFGS-B", bounds=[(-30.0, 40.0)] * (2 * buffers))
        best = res if best is None or res.fun < best.fun else best
    coeffs = _unpack(best.x)
    order = np.argsort(-coeffs.decay)
    decay, weight = coeffs.decay[order].copy(), coeffs.weight[order].copy()
    decay.setflags(write=False)  # cached: shared by every caller
    weight.setflags(write=False)
    return BLTCoefficients(decay, weight)


def _check_static(horizon: int, buffers: int) -> tuple[int, int]:
    horizon = _validate.positive_int("horizon", horizon)
    if horizon > BLT_MAX_HORIZON:
        raise ValueError(f"horizon must be an integer in [1, {BLT_MAX_HORIZON}] for blt, got {horizon}")
    if isinstance(buffers, bool) or not isinstance(buffers, (int, np.integer)) or not 1 <= buffers <= BLT_MAX_BUFFERS:
        raise ValueError(f"buffers must be an integer in [1, {BLT_MAX_BUFFERS}], got {buffers!r}")
    return horizon, int(buffers)


class BLTState(NamedTuple):
    """State of ``blt``: exact sums, the buffers and the running sum of the correlated noise.

    Attributes:
      sums: exact dyadic sums of the clipped inputs (the exact prefix sum, float32-accurate).
      buffers: ``[buffers, d]``, buffer ``i`` holds ``sum_{s<t} λ_i^{t-1-s} σ z_s``.
      noise: ``[d]``, ``sum_{s<=t} (C⁻¹ σ z)_s``, the release's noise.
      scale: ``σ``, the per-coordinate standard deviation of each ``z_s``.
      sensitivity: the clipping bound Δ (L2).
    """

    sums: DyadicSums
    buffers: jax.Array
    noise: jax.Array
    scale: jax.Array
    sensitivity: jax.Array


@declare.mechanism("blt", params=TreeParams)
def blt(
    horizon: int,
    dim: int,
    noise: NoiseFamily | str = "gaussian",
    neighbouring: str = "add_remove",
    buffers: int = BLT_DEFAULT_BUFFERS,
    dtype=jnp.float32,
) -> Mechanism:
    """Buffered linear Toeplitz (BLT) factorization ``A = B C``: ``v = A x + B z``, ``O(buffers·d)`` state.

    The prefix-sum matrix ``A`` factors as ``A = B C`` with ``C⁻¹`` a BLT: lower-triangular Toeplitz
    with first column ``θ_0 = 1``, ``θ_j = sum_{i<n} ω_i λ_i^{j-1}`` (``n`` = ``buffers``; the BLT of
    Dvijotham et al. 2024), and ``B = A C⁻¹``. The mechanism releases
    ``B (C x + z) = A x + A (C⁻¹ z)`` with ``z ~ N(0, σ² I)``: the noise is ``z`` correlated by the
    BLT ``C⁻¹``, then summed. Step ``t`` draws ``z_t`` and updates, per buffer ``i``,

        ``w_t = z_t + sum_i ω_i b_i``,  ``b_i <- λ_i b_i + z_t``,  ``n_t = n_{t-1} + w_t``,

    releasing ``v_t = sum_{s<=t} x_s + n_t``: ``buffers + 1`` vectors of ``d`` (plus the exact sums).
    ``(λ, ω)`` are optimised once per ``(T, buffers)`` on the host in float64 (``blt_coefficients``,
    minimising the worst variance); the stream runs in ``dtype``.

    Privacy (ρ-zCDP, Gaussian only; adaptive inputs are covered as ``C`` is lower-triangular,
    Denisov et al. 2022): every input is clipped to L2 norm Δ; the encoder ``C x`` has L2
    sensitivity ``s·||C||_{1→2}``, ``C``'s first (largest) column norm, computed in float64
    (``blt_norms``), times ``s = Δ`` (``"add_remove"``) or ``2Δ`` (``"replace"``);
    ``σ = s·||C||_{1→2}/sqrt(2ρ)``.

    Variance: per coordinate ``σ² sum_{k<t} β_k²`` at step ``t``, ``β`` the first column of ``B``
    (``β_k = sum_{j<=k} θ_j``); the worst (``t = T``) is within 0.4% of the square root's with the
    default 4 buffers at ``T = 2^10`` and ``2^14`` (10.71 and 17.33 against 10.71 and 17.27 at unit
    sensitivity, ρ = 1/2); at ``T = 2^20`` 4 buffers give 1.031× and 5 buffers 1.008× (use
    ``buffers=5`` past ``2^16``).
    ``release_variance`` is its exact oracle. An infinite ρ gives the exact prefix sums.

    Guard rails as ``binary_tree``: a non-finite input is zeroed and counted (``step`` returns
    ``(state, release, nonfinite)``); the mechanism declares ``horizon=T`` and a step past it releases NaN.

    Args:
      horizon: ``1 <= T <= BLT_MAX_HORIZON = 2^24``.
      dim: ``d >= 1``.
      noise: ``"gaussian"`` only (the factorization's guarantee is zCDP).
      neighbouring: ``"add_remove"`` (``s = Δ``) or ``"replace"`` (``s = 2Δ``).
      buffers: ``1 <= n <= BLT_MAX_BUFFERS = 8``.
      dtype: dtype of the state and of the releases.

    Returns:
      A ``Mechanism`` with params ``TreeParams`` (``rho``, ``sensitivity`` = Δ).

    Raises:
      ValueError: a bad ``horizon``, ``buffers`` or ``noise`` (the allowed range is named).

    References:
      Dvijotham, McMahan, Pillutla, Steinke & Thakurta, Efficient and Near-Optimal Noise Generation
      for Streaming Differential Privacy, 2024 (arXiv:2404.16706): BLTs, and optimising their
      parameters. McMahan & Pillutla, An Inversion Theorem for Buffered Linear Toeplitz (BLT)
      Matrices and Applications to Streaming Differential Privacy, 2025: the inverse of a BLT is a
      BLT (``C`` above). McKenna 2024: BLT factorizations at scale for private training.
    """
    horizon, buffers = _check_static(horizon, buffers)
    dim = _validate.positive_int("dim", dim)
    noise = noise_family(noise, (GAUSSIAN.name,))  # the family object, kept by info and the check
    neighbouring = _validate.choice("neighbouring", neighbouring, NEIGHBOURING)
    factor = 2.0 if neighbouring == "replace" else 1.0
    depth = _accounting.tree_depth(horizon)
    coeffs = blt_coefficients(horizon, buffers)
    col_norm = float(np.sqrt(_column_norm2(coeffs, horizon)))
    decay = jnp.asarray(coeffs.decay, dtype)[:, None]
    weight = jnp.asarray(coeffs.weight, dtype)

    def init_fn(key: PRNGKey, params: TreeParams) -> BLTState:
        del key
        return BLTState(
            sums=dyadic_init(depth, dim, dtype),
            buffers=jnp.zeros((buffers, dim), dtype),
            noise=jnp.zeros((dim,), dtype),
            scale=factor_noise_scale("blt", params, noise, factor * col_norm, dtype),
            sensitivity=jnp.asarray(params.sensitivity, dtype),
        )

    def step_fn(key: PRNGKey, state: BLTState, x: ArrayLike, t: jax.Array) -> tuple[BLTState, jax.Array, jax.Array]:
        x, bad = guard_input(x, state.sensitivity, "l2", dtype)
        sums, exact = dyadic_step(state.sums, x, t, None)
        z = state.scale * _rng.normal(key, (dim,), dtype)
        correlated = z + weight @ state.buffers
        noise_sum = state.noise + correlated
        release = poison_past_horizon(exact + noise_sum, t, horizon)
        new = state._replace(sums=sums, buffers=decay * state.buffers + z, noise=noise_sum)
        return new, release, bad

    static = static_args(noise=noise, dtype=np.dtype(dtype).name)  # the declaration records the rest
    return factor_mechanism(
        "blt",
        init_fn,
        step_fn,
        horizon,
        dim,
        noise,
        neighbouring,
        factor * col_norm,
        lambda t: _row_norm2(coeffs, t),
        static,
    )
