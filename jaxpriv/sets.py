"""Constraint sets: Euclidean projections and linear minimisation oracles.

A set is static structure (its kind and size are fixed when it is built); its
functions are pure and jit/vmap-friendly.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp


class ConstraintSet(NamedTuple):
    """A closed convex set ``C ⊂ R^d``.

    Attributes:
      name: the kind of set (``"l2_ball"``, ...).
      dim: the dimension ``d``.
      project: ``w -> argmin_{u in C} ||u - w||_2`` (last axis).
      linear_oracle: ``g -> argmin_{u in C} <g, u>`` (last axis).
      radius: ``||C||_2 = max_{u in C} ||u||_2``, the bound the papers call ``||C||``.
      diameter: ``max_{u, v in C} ||u - v||_2``.
    """

    name: str
    dim: int
    project: Callable[[jax.Array], jax.Array]
    linear_oracle: Callable[[jax.Array], jax.Array]
    radius: float
    diameter: float


def _check_dim_radius(dim: int, radius: float) -> None:
    from jaxpriv import _validate

    _validate.positive_int("dim", dim)
    if not (isinstance(radius, (int, float)) and 0 < radius < float("inf")):
        raise ValueError(f"radius must be a finite number > 0, got {radius!r}")


def l2_ball(dim: int, radius: float = 1.0) -> ConstraintSet:
    """The Euclidean ball ``{w : ||w||_2 <= radius}``."""
    _check_dim_radius(dim, radius)
    r = float(radius)

    def project(w: jax.Array) -> jax.Array:
        norm = jnp.sqrt(jnp.sum(w * w, -1, keepdims=True))
        return w * jnp.minimum(1.0, r / jnp.maximum(norm, jnp.finfo(w.dtype).tiny))

    def linear_oracle(g: jax.Array) -> jax.Array:
        norm = jnp.sqrt(jnp.sum(g * g, -1, keepdims=True))
        return -r * g / jnp.maximum(norm, jnp.finfo(g.dtype).tiny)

    return ConstraintSet("l2_ball", dim, project, linear_oracle, r, 2.0 * r)
