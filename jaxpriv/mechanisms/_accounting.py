"""Privacy accounting and noise calibration, as traceable ``jnp`` functions.

All functions accept arrays (so they vmap over privacy grids) and treat an
infinite budget as "no noise": the calibrated scale is exactly 0.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike


def tree_depth(horizon: int) -> int:
    """``D = ceil(log2 T) + 1``: levels of the tree over ``T`` leaves (Algorithm 2, line 1).

    A leaf enters at most ``D`` nodes, so each node gets ``1/D`` of the budget.
    """
    if horizon < 1:
        raise ValueError(f"horizon must be an integer >= 1, got {horizon}")
    return (horizon - 1).bit_length() + 1


def dp_to_zcdp(epsilon: ArrayLike) -> jax.Array:
    """ε-DP implies ρ-zCDP with ``ρ = ε²/2`` (Bun & Steinke 2016, Prop. 1.4)."""
    epsilon = jnp.asarray(epsilon, jnp.float32)
    return 0.5 * epsilon**2


def zcdp_to_dp(rho: ArrayLike, delta: ArrayLike) -> jax.Array:
    """ρ-zCDP implies ``(ρ + 2 sqrt(ρ log(1/δ)), δ)``-DP (Bun & Steinke 2016, Prop. 1.3)."""
    rho = jnp.asarray(rho, jnp.float32)
    delta = jnp.asarray(delta, jnp.float32)
    return rho + 2.0 * jnp.sqrt(rho * jnp.log(1.0 / delta))


def gamma_node_scale(epsilon: ArrayLike, sensitivity: ArrayLike, depth: int) -> jax.Array:
    """Gamma-norm node noise: radius ``~ Gamma(shape=d, scale=D·Δ/ε)`` (Algorithm 2, line 9).

    Density ``∝ exp(-ε ||n||_2 / (Δ D))``: each node is ε/D-DP for L2 sensitivity Δ.
    """
    return depth * jnp.asarray(sensitivity, jnp.float32) / jnp.asarray(epsilon, jnp.float32)


def laplace_node_scale(epsilon: ArrayLike, sensitivity: ArrayLike, depth: int) -> jax.Array:
    """Laplace node noise ``b = D·Δ/ε`` per coordinate, Δ the L1 sensitivity."""
    return depth * jnp.asarray(sensitivity, jnp.float32) / jnp.asarray(epsilon, jnp.float32)


def gaussian_node_stddev(rho: ArrayLike, sensitivity: ArrayLike, depth: int) -> jax.Array:
    """Gaussian node noise ``σ = Δ sqrt(D / (2ρ))``: each node is ρ/D-zCDP, so the tree is ρ-zCDP."""
    rho = jnp.asarray(rho, jnp.float32)
    return jnp.asarray(sensitivity, jnp.float32) * jnp.sqrt(depth / (2.0 * rho))


def node_scale(noise: str, epsilon: ArrayLike, rho: ArrayLike, sensitivity: ArrayLike, depth: int) -> jax.Array:
    """The per-node noise scale of a ``depth``-level tree in family ``noise`` (the three functions above)."""
    if noise == "gamma":
        return gamma_node_scale(epsilon, sensitivity, depth)
    if noise == "laplace":
        return laplace_node_scale(epsilon, sensitivity, depth)
    return gaussian_node_stddev(rho, sensitivity, depth)


def gaussian_stddev(rho: ArrayLike, sensitivity: ArrayLike) -> jax.Array:
    """Gaussian mechanism ``σ = Δ / sqrt(2ρ)`` for ρ-zCDP (Bun & Steinke 2016, Prop. 1.6)."""
    rho = jnp.asarray(rho, jnp.float32)
    return jnp.asarray(sensitivity, jnp.float32) / jnp.sqrt(2.0 * rho)


def node_variance(noise: str, budget: ArrayLike, sensitivity: ArrayLike, depth: int, dim: int) -> jax.Array:
    """Exact per-coordinate variance of one tree node's noise.

    Gamma-norm: ``(d+1)(DΔ/ε)²``; Laplace: ``2(DΔ/ε)²``; Gaussian: ``DΔ²/(2ρ)``.
    ``budget`` is ε for the first two and ρ for the Gaussian family.
    """
    if noise == "gamma":
        return (dim + 1) * gamma_node_scale(budget, sensitivity, depth) ** 2
    if noise == "laplace":
        return 2.0 * laplace_node_scale(budget, sensitivity, depth) ** 2
    if noise == "gaussian":
        return gaussian_node_stddev(budget, sensitivity, depth) ** 2
    raise ValueError(f"noise must be one of ('gamma', 'laplace', 'gaussian'), got {noise!r}")
