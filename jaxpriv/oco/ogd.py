"""Online (projected) gradient descent, Zinkevich 2003."""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from jaxpriv import _validate, declare, theory
from jaxpriv._base import Learner, NoInfo, PRNGKey, Spec
from jaxpriv.sets import ConstraintSet

SCHEDULES = ("strongly_convex", "sqrt")


class OGDParams(NamedTuple):
    """Attributes:
    strong_convexity: ``H > 0`` for ``η_t = 1/(H t)``.
    lipschitz: ``L > 0`` for ``η_t = D/(L sqrt t)``.
    """

    strong_convexity: ArrayLike = 1.0
    lipschitz: ArrayLike = 1.0


class OGDState(NamedTuple):
    w: jax.Array  # shape=[d]
    strong_convexity: jax.Array  # shape=()
    lipschitz: jax.Array  # shape=()


def ogd_bound(params: OGDParams, env_params: Any, spec: Spec, horizon: int) -> float | None:
    """OGD's regret bound for its step-size schedule (``theory.ogd_regret_bound``)."""
    del env_params
    a = declare.arguments(spec)
    diameter = a["constraint"].diameter
    return float(theory.ogd_regret_bound(horizon, params.lipschitz, diameter, params.strong_convexity, a["schedule"]))


def _example(horizon: int, dim: int) -> declare.ExampleRun:
    """``ogd`` at one small configuration (``jaxpriv.testing.learner_examples``)."""
    from jaxpriv.envs._settings import setting

    s = setting("ball", dim)
    return ogd(s.constraint), s.env, OGDParams(1.0, 2.0), s.params


@declare.learner("ogd", params=OGDParams, bound=ogd_bound, example=_example)
def ogd(constraint: ConstraintSet, schedule: str = "strongly_convex") -> Learner:
    """Projected online gradient descent ``w_{t+1} = Π_C(w_t - η_t ∇f_t(w_t))``.

    Step sizes: ``"strongly_convex"``: ``η_t = 1/(H t)``, regret
    ``<= L²/(2H) (1 + log T)`` (Hazan, Agarwal, Kale 2007, Thm 1);
    ``"sqrt"``: ``η_t = D/(L sqrt t)``, regret ``<= (3/2) D L sqrt T`` (Zinkevich 2003).

    References:
      Zinkevich. Online convex programming and generalized infinitesimal
      gradient ascent. ICML 2003.
    """
    schedule = _validate.choice("schedule", schedule, SCHEDULES)
    diameter = constraint.diameter

    def check(params: OGDParams) -> None:
        _validate.positive("strong_convexity", params.strong_convexity, allow_inf=False)
        _validate.positive("lipschitz", params.lipschitz, allow_inf=False)

    def init_fn(key: PRNGKey, params: OGDParams) -> OGDState:
        del key
        w1 = constraint.project(jnp.zeros(constraint.dim, jnp.float32))
        return OGDState(
            w1, jnp.asarray(params.strong_convexity, jnp.float32), jnp.asarray(params.lipschitz, jnp.float32)
        )

    def act_fn(key: PRNGKey, state: OGDState, t: jax.Array) -> jax.Array:
        del key, t
        return state.w

    def update_fn(
        key: PRNGKey, state: OGDState, action: jax.Array, grad: jax.Array, t: jax.Array
    ) -> tuple[OGDState, NoInfo]:
        del key
        tf = jnp.asarray(t, jnp.float32)
        if schedule == "strongly_convex":
            eta = 1.0 / (state.strong_convexity * tf)
        else:
            eta = diameter / (state.lipschitz * jnp.sqrt(tf))
        w = constraint.project(jnp.asarray(action, jnp.float32) - eta * jnp.asarray(grad, jnp.float32))
        return state._replace(w=w), NoInfo()

    spec = Spec(private=False)
    return Learner(init_fn, act_fn, update_fn, check, spec=spec, returns_info=True)
