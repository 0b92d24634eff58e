"""Regret bounds of the papers, evaluated for a run's constants (traceable ``jnp``)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from jaxpriv.mechanisms import _accounting


def pftal_regret_bound(
    horizon: ArrayLike,
    dim: int,
    lipschitz: ArrayLike,
    strong_convexity: ArrayLike,
    radius: ArrayLike,
    node_variance: ArrayLike,
    depth: int,
) -> jax.Array:
    """Theorem 4 of Smith & Thakurta 2013 with the constants of its proof (Appendix B.2).

    With ``G = L + H||C||`` (the Lipschitz constant of the quadratic surrogates):

    * Fact 9 and Claim 10 give the noise-free part ``2 G² (1 + ln T) / H``
      (``sum_{t<=T} 1/t <= 1 + ln T``);
    * Lemma 8, eqs. (13)–(15), adds ``2 E||n|| G (1 + ln T) / H``, where ``n``
      is the tree noise of one release: at most ``D`` nodes, so
      ``E||n|| <= sqrt(E||n||²) <= sqrt(D d σ²_node)``.

    For Gamma-norm noise ``σ²_node = (d+1)(DG/ε)²`` and the second term is
    ``O(d G² D^{1.5} log T / (εH)) = O(d G² log^{2.5} T / (εH))``, the
    statement of Theorem 4. (The paper's Lemma 8 writes the constant 4 where
    its own eqs. (14)–(15) give 2·E||n||; we follow the derivation.)

    Args:
      horizon: ``T``.
      dim: ``d``.
      lipschitz: ``L``.
      strong_convexity: ``H``.
      radius: ``||C||_2``.
      node_variance: per-coordinate variance of one node's noise
        (``jaxpriv.mechanisms.node_variance``; 0 for no noise).
      depth: ``D`` of the tree.
    """
    t = jnp.asarray(horizon, jnp.float32)
    h = jnp.asarray(strong_convexity, jnp.float32)
    g = jnp.asarray(lipschitz, jnp.float32) + h * jnp.asarray(radius, jnp.float32)
    harmonic = 1.0 + jnp.log(t)
    noise_norm = jnp.sqrt(depth * dim * jnp.asarray(node_variance, jnp.float32))
    return 2.0 * g * g * harmonic / h + 2.0 * noise_norm * g * harmonic / h


def pftal_gamma_regret_bound(
    horizon: int, dim: int, lipschitz: ArrayLike, strong_convexity: ArrayLike, radius: ArrayLike, epsilon: ArrayLike
) -> jax.Array:
    """``pftal_regret_bound`` for the paper's Gamma-norm tree at privacy ε (sensitivity ``L + H||C||``)."""
    depth = _accounting.tree_depth(horizon)
    sens = jnp.asarray(lipschitz, jnp.float32) + jnp.asarray(strong_convexity, jnp.float32) * radius
    var = _accounting.node_variance("gamma", epsilon, sens, depth, dim)
    return pftal_regret_bound(horizon, dim, lipschitz, strong_convexity, radius, var, depth)
