"""Private online gradient descent by gradient perturbation: a ρ-zCDP full-information learner, in one module.

Algorithm. Play ``w_1 = Π_C(0)``. At step ``t`` receive the gradient ``g_t`` of ``f_t`` at ``w_t``, clip it to
norm ``L``, release ``g̃_t = clip_L(g_t) + N(0, σ² I_d)`` with ``σ² = 2L²/ρ``, and step
``w_{t+1} = Π_C(w_t - η_t g̃_t)``, ``η_t = D / (G sqrt t)``, ``G² = L² + d σ²`` (``D`` the diameter of ``C``).

Privacy. ρ-zCDP for loss sequences that differ in one loss (replace-one), against an adaptive adversary. The
replaced loss changes one clipped gradient by at most ``2L``: the Gaussian mechanism with ``σ² = (2L)²/(2ρ)`` is
ρ-zCDP (Bun & Steinke 2016, Proposition 1.6). Every other release ``g̃_t`` is the same function of the releases
before it on both sequences (its loss is the same, ``w_t`` is post-processing), so it adds nothing (adaptive
composition, Lemma 2.3); the points are post-processing of the releases.

Regret. For convex ``L``-Lipschitz losses (the clip inactive), ``E[Regret_T] <= (3/2) D G sqrt T`` (Zinkevich
2003's argument with ``E||g̃_t||² <= L² + dσ² = G²``; the noise has mean zero and is independent of ``w_t``).

The declaration (``@declare.learner``) registers it for study files when this module is imported: run it with
``jaxpriv sweep examples/my_private_ogd.toml`` (its ``imports`` names this file), or
``jaxpriv sweep study.toml --import my_private_ogd`` from this folder.
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxpriv import Learner, NonfiniteInfo, Spec, declare
from jaxpriv.sets import ConstraintSet


class PrivateOGDParams(NamedTuple):
    """The zCDP budget ρ > 0 and the clipping bound L > 0 (both traced)."""

    rho: float
    lipschitz: float


class PrivateOGDState(NamedTuple):
    w: jax.Array  # [d] the point played next
    sigma: jax.Array  # the noise's standard deviation, sqrt(2/ρ) L
    step: jax.Array  # D / G: η_t = step / sqrt(t)
    lipschitz: jax.Array  # L


def private_ogd_regret_bound(horizon: int, dim: int, diameter: float, lipschitz: float, rho: float) -> float:
    """The bound above: (3/2) D sqrt((L² + d 2L²/ρ) T)."""
    variance = 2.0 * lipschitz**2 / rho
    return float(1.5 * diameter * np.sqrt((lipschitz**2 + dim * variance) * horizon))


def private_ogd_bound(params: PrivateOGDParams, env_params, spec: Spec, horizon: int) -> float:
    """The bound at one grid point of a study: the learner's params, the environment's, its spec, the horizon."""
    constraint = declare.arguments(spec)["constraint"]  # the set's fields: dim, radius, diameter
    lip, rho = float(np.asarray(params.lipschitz)), float(np.asarray(params.rho))
    return private_ogd_regret_bound(horizon, constraint.dim, constraint.diameter, lip, rho)


@declare.learner("private_ogd", params=PrivateOGDParams, bound=private_ogd_bound)
def private_ogd(constraint: ConstraintSet) -> Learner:
    """Projected OGD on gradients clipped to ``L`` plus ``N(0, 2L²/ρ I)``: ρ-zCDP (the module's docstring)."""
    dim, diameter = constraint.dim, float(constraint.diameter)

    def check(params: PrivateOGDParams) -> None:
        for name in ("rho", "lipschitz"):  # the guarantee needs noise and a finite clip
            value = np.asarray(getattr(params, name), np.float64)
            if not (np.all(np.isfinite(value)) and np.all(value > 0)):
                raise ValueError(f"{name} must be finite and > 0, got {value}")

    def init(key, params: PrivateOGDParams) -> PrivateOGDState:
        del key
        lip = jnp.asarray(params.lipschitz, jnp.float32)
        sigma = lip * jnp.sqrt(2.0 / jnp.asarray(params.rho, jnp.float32))  # Δ = 2L: σ² = (2L)²/(2ρ)
        step = diameter / jnp.sqrt(lip**2 + dim * sigma**2)
        w = constraint.project(jnp.zeros(dim, jnp.float32))
        return PrivateOGDState(w, sigma, step, lip)

    def act(key, state: PrivateOGDState, t):
        del key, t
        return state.w

    def update(key, state: PrivateOGDState, action, grad, t) -> tuple[PrivateOGDState, NonfiniteInfo]:
        del action  # the point played is state.w
        grad = jnp.asarray(grad, jnp.float32)
        bad = ~jnp.all(jnp.isfinite(grad))
        grad = jnp.where(bad, 0.0, grad)
        norm = jnp.sqrt(jnp.sum(grad**2))
        clipped = grad * jnp.minimum(1.0, state.lipschitz / jnp.maximum(norm, 1e-30))  # the guarantee's clip
        noisy = clipped + state.sigma * jax.random.normal(key, (dim,), jnp.float32)
        eta = state.step / jnp.sqrt(jnp.asarray(t, jnp.float32))
        w = constraint.project(state.w - eta * noisy)
        return state._replace(w=w), NonfiniteInfo(bad.astype(jnp.int32))  # the gradient it zeroed, if any

    spec = Spec(private=True)  # the declaration fills its name, params class and arguments (the set)
    return Learner(init, act, update, check, spec=spec, returns_info=True)
