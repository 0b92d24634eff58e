"""Mutual-information privacy of the Gaussian "encryption layer" (Zhang & Venkatasubramaniam 2018, Theorem 1).

A gradient ``z`` with ``||z||_2 <= L`` released as ``z + N(0, σ² I_d)`` is a
Gaussian channel with power constraint ``E||z||² <= L²``; its capacity bounds
the information any one loss function leaks through one release:
``I(f_t; z̃_t) <= C = (d/2) log(1 + L²/(d σ²))`` nats. Both directions are
closed forms, written with ``log1p``/``expm1`` so that they invert each other
to float rounding.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike


def stddev_to_mutual_information(stddev: ArrayLike, lipschitz: ArrayLike, dim: int) -> jax.Array:
    """``C = (d/2) log(1 + L²/(d σ²))`` nats per round (Theorem 1); ``σ = 0`` gives ``C = inf``.

    Args:
      stddev: ``σ >= 0``, the Gaussian noise per coordinate.
      lipschitz: ``L``, the bound every released gradient is clipped to.
      dim: ``d``.
    """
    s = jnp.asarray(stddev, jnp.float32)
    lip = jnp.asarray(lipschitz, jnp.float32)
    return 0.5 * dim * jnp.log1p(lip * lip / (dim * s * s))


def mutual_information_to_stddev(mutual_information: ArrayLike, lipschitz: ArrayLike, dim: int) -> jax.Array:
    """The ``σ`` at which Theorem 1 gives exactly ``C`` nats: ``σ = L / sqrt(d (e^{2C/d} - 1))``.

    ``C = inf`` gives ``σ = 0`` (no noise). ``C <= 0`` has no finite ``σ``
    (``jaxpriv.oco.mi_ogd`` rejects it with ``ValueError``).
    """
    c = jnp.asarray(mutual_information, jnp.float32)
    lip = jnp.asarray(lipschitz, jnp.float32)
    return lip / jnp.sqrt(dim * jnp.expm1(2.0 * c / dim))


def bandit_clip_bound(
    loss_bound: ArrayLike, lipschitz: ArrayLike, exploration: ArrayLike, sphere_dim: int
) -> jax.Array:
    """``p (F/δ + L)``: the bound on ``||z_t||_2`` of MI-private bandit OGD (Zhang & Venkatasubramaniam, Alg. 2).

    ``z_t = (p/δ) f_t(w_t + δe_t) e_t`` with ``|f_t| <= F + Lδ`` near ``S``, so
    ``||z_t|| <= p(F/δ + L)``; the encryption layer clips ``z_t`` to it.
    """
    f = jnp.asarray(loss_bound, jnp.float32)
    delta = jnp.asarray(exploration, jnp.float32)
    return sphere_dim * (f / delta + jnp.asarray(lipschitz, jnp.float32))


def bandit_stddev_to_mutual_information(
    stddev: ArrayLike, loss_bound: ArrayLike, lipschitz: ArrayLike, exploration: ArrayLike, dim: int, sphere_dim: int
) -> jax.Array:
    """Theorem 3 (bandit setting): ``C = (d/2) log(1 + d (F/δ + L)²/σ²)`` nats per round.

    Theorem 1's Gaussian-channel capacity for the power ``(p(F/δ + L))²``
    (``bandit_clip_bound``) in ``d`` dimensions; with ``p = d`` (every set but the
    simplex) it is the poster's formula exactly.
    """
    return stddev_to_mutual_information(stddev, bandit_clip_bound(loss_bound, lipschitz, exploration, sphere_dim), dim)


def bandit_mutual_information_to_stddev(
    mutual_information: ArrayLike,
    loss_bound: ArrayLike,
    lipschitz: ArrayLike,
    exploration: ArrayLike,
    dim: int,
    sphere_dim: int,
) -> jax.Array:
    """The ``σ`` at which Theorem 3 gives exactly ``C`` nats (inverse of ``bandit_stddev_to_mutual_information``)."""
    clip = bandit_clip_bound(loss_bound, lipschitz, exploration, sphere_dim)
    return mutual_information_to_stddev(mutual_information, clip, dim)
