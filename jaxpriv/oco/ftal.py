"""Follow-the-Approximate-Leader (FTAL), Hazan, Agarwal & Kale 2007: the non-private update."""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from jaxpriv import _validate
from jaxpriv._base import Learner, PRNGKey
from jaxpriv.sets import ConstraintSet


class FTALParams(NamedTuple):
    """Attributes: strong_convexity: ``H > 0``."""

    strong_convexity: ArrayLike = 1.0


class FTALState(NamedTuple):
    w: jax.Array  # shape=[d], the point played next
    mean_w: jax.Array  # shape=[d], running mean of the points played
    mean_grad: jax.Array  # shape=[d], running mean of the gradients
    strong_convexity: jax.Array  # shape=()


def ftal(constraint: ConstraintSet) -> Learner:
    """FTAL for ``H``-strongly convex losses: follow the leader on quadratic approximations.

    ``w_{t+1} = argmin_{w∈C} sum_{τ<=t} <∇_τ, w> + (H/2)||w - w_τ||²
    = Π_C(mean(w_1..w_t) - mean(∇_1..∇_t) / H)``, the update of PFTAL
    (Smith & Thakurta, Algorithm 1) with the exact gradient sum. Running means
    keep float32 accurate over long horizons.

    Regret: ``O((L + H||C||)²/H · log T)`` (Smith & Thakurta, Claim 10 and Fact 9;
    Hazan, Agarwal & Kale 2007 for the α-exp-concave version).

    References:
      Hazan, Agarwal, Kale. Logarithmic regret algorithms for online convex
      optimization. Machine Learning 69, 2007.
    """

    def check(params: FTALParams) -> None:
        _validate.positive("strong_convexity", params.strong_convexity, allow_inf=False)

    def init_fn(key: PRNGKey, params: FTALParams) -> FTALState:
        del key
        w1 = constraint.project(jnp.zeros(constraint.dim, jnp.float32))
        zeros = jnp.zeros_like(w1)
        return FTALState(w1, zeros, zeros, jnp.asarray(params.strong_convexity, jnp.float32))

    def act_fn(key: PRNGKey, state: FTALState, t: jax.Array) -> jax.Array:
        del key, t
        return state.w

    def update_fn(key: PRNGKey, state: FTALState, action: jax.Array, grad: jax.Array, t: jax.Array) -> FTALState:
        del key
        tf = jnp.asarray(t, jnp.float32)
        mean_w = state.mean_w + (jnp.asarray(action, jnp.float32) - state.mean_w) / tf
        mean_grad = state.mean_grad + (jnp.asarray(grad, jnp.float32) - state.mean_grad) / tf
        w = constraint.project(mean_w - mean_grad / state.strong_convexity)
        return state._replace(w=w, mean_w=mean_w, mean_grad=mean_grad)

    return Learner(init_fn, act_fn, update_fn, check)
