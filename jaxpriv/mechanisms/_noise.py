"""Noise samplers (unit scale), drawn in the requested dtype."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxpriv import _rng
from jaxpriv._base import PRNGKey


def gamma_norm(key: PRNGKey, shape: tuple[int, ...], dtype=jnp.float32) -> jax.Array:
    """Unit-scale Gamma-norm noise: density ``∝ exp(-||n||_2)`` on ``R^d``, ``d = shape[-1]``.

    A uniformly random direction times a radius ``r ~ Gamma(shape=d, scale=1)``.
    As ``d`` is an integer, ``r`` is drawn exactly as a sum of ``d`` unit
    exponentials, which avoids the rejection sampler of ``jax.random.gamma``.
    Then ``E||n||² = d(d+1)`` and each coordinate has variance ``d+1``.
    """
    k_dir, k_rad = _rng.split(key)
    g = _rng.normal(k_dir, shape, dtype)
    radius = _rng.exponential(k_rad, shape, dtype).sum(-1, keepdims=True)
    norm = jnp.sqrt(jnp.sum(g * g, -1, keepdims=True))
    return g * (radius / jnp.maximum(norm, jnp.finfo(dtype).tiny))


def laplace(key: PRNGKey, shape: tuple[int, ...], dtype=jnp.float32) -> jax.Array:
    """I.i.d. unit Laplace per coordinate (variance 2): a unit exponential with a random sign (``_rng.laplace``)."""
    return _rng.laplace(key, shape, dtype)


def gaussian(key: PRNGKey, shape: tuple[int, ...], dtype=jnp.float32) -> jax.Array:
    """I.i.d. standard normal per coordinate."""
    return _rng.normal(key, shape, dtype)


SAMPLERS = {"gamma": gamma_norm, "laplace": laplace, "gaussian": gaussian}
