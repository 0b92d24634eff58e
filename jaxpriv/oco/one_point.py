"""The one-point gradient estimate of Flaxman, Kalai & McMahan (2005), shared by every bandit learner.

A bandit learner plays ``ŵ = w + βu`` with ``u`` uniform on the unit sphere and
sees only the loss value ``f(ŵ)``. Then ``(p/β) f(w + βu) u`` is an unbiased
estimate of the gradient of the smoothed loss ``f̂(w) = E_{v∈B} f(w + βv)``
(``B`` the unit ball; Stokes' theorem, FKM05 Lemma 1; Smith & Thakurta 2013, §3).
To keep ``ŵ`` in ``C``, ``w`` is kept in the shrunk set ``c + (1 - ξ)(C - c)``
with ``ξ = β/r``, where ``c + rB ⊆ C`` is the set's inner ball
(``ConstraintSet.inner_center``, ``inner_radius``): then
``ŵ = (1 - ξ)x + ξ(c + r u)`` is a convex combination of two points of ``C``.

The simplex is not full-dimensional: its inner ball lives in the affine hull
``{sum w = total}``, so the sphere is that of the hull's tangent space
``{sum u = 0}`` (dimension ``p = d - 1``), and the estimate is unbiased for the
gradient of ``f̂`` along the hull (the component along ``1`` does not change any
point of the simplex).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxpriv import _rng
from jaxpriv._base import PRNGKey
from jaxpriv.sets import ConstraintSet, bandit_radii
from jaxpriv.theory import SHRINK_MARGIN  # the shrink factor is (1 - ξ)(1 - SHRINK_MARGIN); the bounds use it too


def sphere_dim(constraint: ConstraintSet) -> int:
    """``p``, the dimension of the sphere the directions are drawn from: ``d - 1`` for the simplex, else ``d``."""
    return constraint.dim - 1 if constraint.name == "simplex" else constraint.dim


def sample_direction(key: PRNGKey, constraint: ConstraintSet) -> jax.Array:
    """``u`` uniform on the unit sphere of ``R^d`` (of the hull's tangent space ``{sum u = 0}`` for the simplex).

    Exact: a standard normal vector (projected onto ``{sum u = 0}`` for the
    simplex, which keeps it isotropic there) divided by its norm. A zero draw
    (probability 0) falls back to a fixed unit vector of the same space.
    """
    d = constraint.dim
    g = _rng.normal(key, (d,), jnp.float32)
    fallback = jnp.zeros((d,), jnp.float32).at[0].set(1.0)
    if constraint.name == "simplex":
        g = g - jnp.mean(g)
        fallback = (fallback - 1.0 / d) / float(np.sqrt((d - 1) / d))
    norm = jnp.sqrt(jnp.sum(g * g))
    return jnp.where(norm > 0, g / jnp.maximum(norm, jnp.finfo(jnp.float32).tiny), fallback)


def direction_at(sphere_key: PRNGKey, t: jax.Array, constraint: ConstraintSet) -> jax.Array:
    """``u_t = sample_direction(fold_in(sphere_key, t))``: the direction of step ``t``, a function of the key and ``t``.

    A learner draws ``u_{t+1}`` at the end of ``update`` and keeps it in its state, so
    ``act`` plays it and the next ``update`` estimates with the same vector (one draw per step).
    """
    return sample_direction(_rng.fold_in(sphere_key, jnp.asarray(t, jnp.int32)), constraint)


def one_point_gradient(value: jax.Array, direction: jax.Array, exploration: jax.Array, dim: int) -> jax.Array:
    """The FKM one-point estimate ``ĝ = (p/β) f(w + βu) u`` of ``∇f̂(w)``.

    Args:
      value: ``f(w + βu)``, the loss seen at the played point.
      direction: ``u``, the unit direction that was played.
      exploration: ``β > 0``.
      dim: ``p``, the dimension of the sphere ``u`` was drawn from (``sphere_dim``).

    Returns:
      ``[d]``; ``||ĝ||_2 = p|f|/β``, so ``|f| <= B`` gives ``||ĝ||_2 <= pB/β``.
    """
    return (dim * jnp.asarray(value, jnp.float32) / exploration) * direction


def shrink_factor(exploration: jax.Array, inner_radius: float) -> jax.Array:
    """``s = (1 - β/r)(1 - SHRINK_MARGIN)``: the shrunk set is ``c + s(C - c)``."""
    return (1.0 - exploration / inner_radius) * (1.0 - SHRINK_MARGIN)


def project_shrunk(constraint: ConstraintSet, y: jax.Array, scale: jax.Array) -> jax.Array:
    """Euclidean projection of ``y`` onto ``c + s(C - c)``: ``c + s(Π_C(c + (y - c)/s) - c)``.

    A scaling about ``c`` is a similarity, so it maps the projection onto ``C`` to
    the projection onto the scaled set.
    """
    c = jnp.asarray(constraint.inner_center, jnp.float32)
    return c + scale * (constraint.project(c + (y - c) / scale) - c)


def require_inner_ball(constraint: ConstraintSet, name: str = "constraint") -> tuple[float, float]:
    """``(r, R_c)`` of ``sets.bandit_radii``; ``ValueError`` for a set without a projection or an inner ball."""
    from jaxpriv.sets import require_projection

    require_projection(constraint, name)
    return bandit_radii(constraint, name)
