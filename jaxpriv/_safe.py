"""``safe_sqrt``: ``jnp.sqrt`` whose derivative at 0 is 0, so a discarded branch's norm of zero gives no NaN.

A ``jnp.where`` sends the branch it discards a zero cotangent in reverse mode; where that branch
holds the norm of the zero vector (or of a vector whose squares underflow, as in ``_clip``'s
rescaled branch), the zero meets ``1 / (2 sqrt(0)) = inf`` and gives ``0 · inf = NaN`` in every
gradient (issue 45: ``jax.grad`` of PFTAL's loss through ``rollout`` was NaN while ``jax.jacfwd`` was
finite). A ``custom_jvp`` is the plain function until it is differentiated: the values and the
compiled forward program are those of ``jnp.sqrt`` (a ``where`` around the sqrt would keep the values but
stop XLA from rewriting ``Δ / sqrt(s)`` as ``Δ · rsqrt(s)``, changing float32 rounding by ~1e-7).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


@jax.custom_jvp
def safe_sqrt(x: jax.Array) -> jax.Array:
    """``jnp.sqrt(x)`` whose derivative at ``x = 0`` is 0 instead of ``inf``."""
    return jnp.sqrt(x)


@safe_sqrt.defjvp
def _safe_sqrt_jvp(primals, tangents):
    (x,), (dx,) = primals, tangents
    y = safe_sqrt(x)
    positive = x > 0
    return y, jnp.where(positive, dx / (2 * jnp.where(positive, y, 1)), 0).astype(y.dtype)
