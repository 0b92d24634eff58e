"""Mutual-information-private online gradient descent, Zhang & Venkatasubramaniam 2018, Algorithm 1."""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxpriv import _rng, _validate, declare, theory
from jaxpriv._base import Learner, NonfiniteInfo, PRNGKey, Spec, poison_past_horizon, zero_nonfinite
from jaxpriv.mechanisms import DyadicSums, clip_l2, dyadic_init, dyadic_step, mutual_information_to_stddev, tree_depth
from jaxpriv.oco import _floor
from jaxpriv.oco._shared import MAX_DEPTH
from jaxpriv.sets import ConstraintSet, require_projection


class MIOGDParams(NamedTuple):
    """Params of MI-private OGD.

    Attributes:
      mutual_information: ``C > 0``, the per-round mutual-information budget in nats
        (Theorem 1); ``inf`` = no noise (``σ = 0``). Convert from a noise level
        with ``jaxpriv.mechanisms.stddev_to_mutual_information``.
      lipschitz: ``L > 0``; every gradient is clipped to ``||z_t||_2 <= L`` before the noise.
      learning_rate: ``η > 0``; ``nan`` (the default): Theorem 2's
        ``η = B / sqrt((L² + d σ²) T)`` (needs the factory's ``horizon``).
    """

    mutual_information: ArrayLike | None = None
    lipschitz: ArrayLike = 1.0
    learning_rate: ArrayLike = float("nan")


class MIOGDState(NamedTuple):
    w: jax.Array  # shape=[d], the point played next
    theta: jax.Array  # shape=[d], θ_t = -sum_{s<t} z̃_s
    learning_rate: jax.Array  # shape=(), η
    stddev: jax.Array  # shape=(), σ of the encryption layer's Gaussian noise
    lipschitz: jax.Array  # shape=(), the clipping bound L
    sums: DyadicSums  # exact dyadic sums of the noisy gradients: θ_t = -sum (float32-accurate for long T)


def _require_budget(params: MIOGDParams) -> None:
    """The mutual-information budget is given (``inf`` is the explicit non-private limit), never left unset."""
    _validate.budget("mi_ogd", "gaussian", params, needs=("mutual_information",), guarantee="C-MI private")


def mi_ogd_bound(params: MIOGDParams, env_params: Any, spec: Spec, horizon: int) -> float | None:
    """MI-OGD's bound at the noise its mutual-information budget calibrates (``learning_rate = nan``: tuned)."""
    del env_params
    c = declare.arguments(spec)["constraint"]
    stddev = mutual_information_to_stddev(params.mutual_information, params.lipschitz, c.dim)
    eta = None if np.isnan(np.asarray(params.learning_rate, np.float64)) else params.learning_rate
    return float(theory.mi_ogd_regret_bound(horizon, c.dim, params.lipschitz, c.radius, stddev, eta))


def _example(horizon: int, dim: int) -> declare.ExampleRun:
    """``mi_ogd`` at one small configuration (``jaxpriv.testing.learner_examples``)."""
    from jaxpriv.envs._settings import setting

    s = setting("ball", dim)
    return mi_ogd(s.constraint, horizon), s.env, MIOGDParams(1.0, lipschitz=2.0), s.params


@declare.learner("mi_ogd", params=MIOGDParams, bound=mi_ogd_bound, example=_example)
def mi_ogd(constraint: ConstraintSet, horizon: int | None = None) -> Learner:
    """MI-private OGD with lazy projection (Zhang & Venkatasubramaniam 2018, Algorithm 1).

    Encryption layer: the (sub)gradient ``z_t`` at ``w_t`` is clipped to
    ``||z_t||_2 <= L`` and released as ``z̃_t = z_t + v_t``, ``v_t ~ N(0, σ² I_d)``.
    Learner: ``θ_{t+1} = θ_t - z̃_t`` (``θ_1 = 0``), ``w_{t+1} = Π_S(η θ_{t+1})``
    (lazy projection: dual averaging / FTRL with ``||w||²/(2η)``).
    At ``σ = 0`` (``mutual_information = inf``) it is lazy projected OGD.

    Privacy (Theorem 1): each release is ``C``-mutual-information private,
    ``I(f_t; z̃_t) <= C = (d/2) log(1 + L²/(d σ²))`` nats (the capacity of a
    Gaussian channel with power ``L²``); ``σ`` is set from the budget ``C`` in
    ``init`` (``jaxpriv.mechanisms.mutual_information_to_stddev``). This is a
    per-round, per-user information bound, not differential privacy. A
    gradient with a NaN / ±inf entry is replaced by zero (inside the clipping
    bound) and counted in the step's Info (``NonfiniteInfo.nonfinite``).

    Regret (Theorem 2): ``E[Regret] <= B²/(2η) + (η/2) T (L² + d σ²)`` with
    ``B = max_{w∈S} ||w||_2``; ``B sqrt((L² + dσ²) T)`` at the default
    ``η``. ``jaxpriv.theory.mi_ogd_regret_bound`` evaluates it.

    Args:
      constraint: the set ``S`` (its projection is used).
      horizon: ``T``, needed for Theorem 2's default step size; when given it is
        declared (``run`` refuses a longer run, a hand-stepped update past it plays NaN).

    Returns:
      A ``Learner`` with params ``MIOGDParams``; feedback is the gradient at the played point.

    Raises:
      ValueError: ``constraint`` has no projection; ``check``: ``mutual_information <= 0`` or
        below the learner's floor (where its float32 arithmetic breaks, docs/guide/sharp_edges.md),
        ``lipschitz <= 0``, ``learning_rate <= 0``, or a ``nan`` learning rate without ``horizon``.

    References:
      Zhang & Venkatasubramaniam, Mutual-Information-Private Online Gradient
      Descent Algorithm, ICASSP 2018 (poster), Algorithm 1, Theorems 1–2.
    """
    require_projection(constraint)
    if horizon is not None:
        horizon = _validate.horizon(horizon)
    dim, radius = constraint.dim, constraint.radius
    depth = MAX_DEPTH if horizon is None else tree_depth(horizon)

    def check(params: MIOGDParams) -> None:
        _validate.positive("lipschitz", params.lipschitz, allow_inf=False)
        eta = _validate._concrete(params.learning_rate)
        if eta is None:
            return
        if np.any(~np.isnan(eta) & ~((eta > 0) & np.isfinite(eta))):
            raise ValueError(f"learning_rate must be in (0, inf) or nan (Theorem 2's η), got {eta!r}")
        if horizon is None and np.any(np.isnan(eta)):
            raise ValueError("learning_rate: nan selects Theorem 2's step size, which needs mi_ogd(..., horizon=T)")
        _require_budget(params)
        _validate.budget_value("mutual_information", params.mutual_information, _floor.MIN_BUDGET)
        values = _floor.concrete(params.mutual_information, params.lipschitz)
        if values is not None:  # the budget floor (docs/guide/sharp_edges.md)
            budget, lip = values
            steps = horizon or 2**31 - 1  # no horizon: any run the int32 clock allows
            _floor.check_mutual_information(
                "mi_ogd", budget, lip, eta, radius / (lip * np.sqrt(steps)), 1.0, steps, dim, f"T={horizon}, d={dim}"
            )

    def init_fn(key: PRNGKey, params: MIOGDParams) -> MIOGDState:
        _require_budget(params)
        del key
        lip = jnp.asarray(params.lipschitz, jnp.float32)
        stddev = mutual_information_to_stddev(params.mutual_information, lip, dim)
        eta = jnp.asarray(params.learning_rate, jnp.float32)
        if horizon is not None:
            eta = jnp.where(jnp.isnan(eta), theory.mi_ogd_learning_rate(horizon, dim, lip, radius, stddev), eta)
        theta = jnp.zeros((dim,), jnp.float32)
        return MIOGDState(constraint.project(theta), theta, eta, stddev, lip, dyadic_init(depth, dim))

    def act_fn(key: PRNGKey, state: MIOGDState, t: jax.Array) -> jax.Array:
        del key, t
        return state.w

    def update_fn(
        key: PRNGKey, state: MIOGDState, action: jax.Array, grad: jax.Array, t: jax.Array
    ) -> tuple[MIOGDState, NonfiniteInfo]:
        del action
        z, bad = zero_nonfinite(jnp.asarray(grad, jnp.float32))
        z = clip_l2(z, state.lipschitz)
        noisy = z + state.stddev * _rng.normal(key, (dim,), jnp.float32)
        sums, total = dyadic_step(state.sums, noisy, t)
        theta = -poison_past_horizon(total, t, horizon)
        w = constraint.project(state.learning_rate * theta)
        return state._replace(w=w, theta=theta, sums=sums), NonfiniteInfo(bad)

    spec = Spec(private=True)
    return Learner(init_fn, act_fn, update_fn, check, horizon, spec=spec, returns_info=True)
