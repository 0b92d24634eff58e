"""Differentiable hyperparameter studies: the gradient of expected regret with respect to any params leaf.

``value_and_grad`` estimates ``E[J]`` for an objective ``J`` of one run (final
regret by default, or any function of the run's ``Result``) and its gradient
with respect to params leaves named by path (``"learner.lipschitz"``,
``"env.spread"``), from per-seed pathwise derivatives: every seed's run is
differentiated with its own random numbers held fixed (the noise is
reparameterised: a node's noise is ``scale(ε, L) · unit draw``), so the
gradient's standard error over seeds is reported beside it. A swept leaf (one
extra leading axis, as in ``jaxpriv.sweep``) gives the gradient at every grid
point in one compiled call: ``∂E[regret]/∂ε`` over an ε grid is the marginal
price of privacy.

``minimize`` runs an optax optimiser on those gradient estimates (in log space
for positive hyperparameters), with fresh or common seeds per step, and returns
the trajectory.

Derivatives are forward mode (``jax.jacfwd``): a handful of hyperparameters
against a horizon of many steps, so memory stays that of a forward run, where
reverse mode would store every step's intermediates.

Where the objective is piecewise constant in the parameters (a policy that
plays integer arms: its regret changes only when an argmax flips, so the
pathwise derivative is zero almost everywhere and says nothing about
``∂E[regret]``), ``value_and_grad`` raises a ``ValueError`` instead of
returning zeros; use a grid (``jaxpriv.sweep``) there.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from jaxpriv import _validate, sim
from jaxpriv._base import Env, Learner, PRNGKey, as_key, engine_jit
from jaxpriv.sim import Result, SimParams, _check

__all__ = ["Estimate", "Minimized", "final_regret", "get_path", "minimize", "set_path", "value_and_grad"]


def final_regret(result: Result) -> jax.Array:
    """The default objective: the regret at the last checkpoint of one run."""
    return result.regret[-1]


class Estimate(NamedTuple):
    """The mean of an objective over seeds and its gradient, with standard errors.

    Leading axes are ``[G]`` when params carry a grid axis (as in ``sweep``), none otherwise.

    Attributes:
      value: ``[G]`` or ``()``, the mean objective over seeds.
      value_se: its standard error.
      grad: path -> ``[G, *leaf]`` or ``leaf``-shaped mean gradient over seeds.
      grad_se: path -> its standard error (from the per-seed gradients).
      per_seed_value: ``[G, S]`` or ``[S]``, the objective of every seed.
      per_seed_grad: path -> ``[G, S, *leaf]`` or ``[S, *leaf]``, every seed's pathwise derivative.
    """

    value: np.ndarray
    value_se: np.ndarray
    grad: dict[str, np.ndarray]
    grad_se: dict[str, np.ndarray]
    per_seed_value: np.ndarray
    per_seed_grad: dict[str, np.ndarray]


# --- params paths -----------------------------------------------------------------------------------


def _split_path(path: str) -> tuple[str, ...]:
    if not isinstance(path, str) or not path:
        raise ValueError(f"wrt must name a params leaf as 'learner.<field>' or 'env.<field>', got {path!r}")
    return tuple(path.split("."))


def get_path(params: Any, path: str) -> Any:
    """The leaf of ``params`` at a dotted ``path`` (``"learner.lipschitz"``); ``ValueError`` naming what exists."""
    node, seen = params, []
    for name in _split_path(path):
        fields = getattr(type(node), "_fields", None)
        if fields is None or name not in fields:
            where = ".".join(seen) or "params"
            raise ValueError(f"wrt {path!r}: {where} has no field {name!r} (fields: {fields})")
        node = getattr(node, name)
        seen.append(name)
    return node


def set_path(params: Any, path: str, value: Any) -> Any:
    """A copy of ``params`` (nested NamedTuples) with the leaf at ``path`` replaced by ``value``."""
    names = _split_path(path)
    if len(names) == 1:
        return params._replace(**{names[0]: value})
    child = getattr(params, names[0])
    return params._replace(**{names[0]: set_path(child, ".".join(names[1:]), value)})


def _at_grid_point(params: Any, axes: Any, i: int) -> Any:
    """``params`` at grid point ``i`` (swept leaves indexed, the others as they are)."""
    if axes is None:
        return params
    if isinstance(axes, tuple) and hasattr(axes, "_fields"):
        return type(params)(*(_at_grid_point(p, a, i) for p, a in zip(params, axes, strict=True)))
    return params[i] if axes == 0 else params


def _axis_at(axes: Any, path: str) -> int | None:
    node = axes
    for name in _split_path(path):
        if node is None:
            return None
        node = getattr(node, name)
    return node


# --- the compiled estimator ---------------------------------------------------------------------------


@partial(engine_jit, static_argnums=(0, 1, 2, 3, 4, 5, 6, 7))
@sim.counts_compiles("tune")
def _per_seed(learner, env, horizon, checkpoints, paths, objective, axes, chunk, keys, params, theta):
    """Per-seed objective and forward-mode derivatives: ``([G,] S)`` and ``([G,] S, *leaf)`` per path.

    Batched over the seeds (and the grid: the swept params leaves and the tuned values with them) by the
    engine's ``map_seeds``, as ``sweep`` batches its runs.
    """

    def seed(key, point):
        p, th = point

        def fn(th_):
            q = p
            for path, value in zip(paths, th_, strict=True):
                q = set_path(q, path, value)
            v = objective(sim.run(learner, env, q, key, horizon, checkpoints))
            return v, v

        jac, value = jax.jacfwd(fn, has_aux=True)(th)
        return value, jac

    point_axes = None if axes is None else (axes, tuple(_axis_at(axes, path) for path in paths))
    return sim.map_seeds(seed, keys, (params, theta), chunk, axes=point_axes)


def _stats(x: np.ndarray, axis: int) -> tuple[np.ndarray, np.ndarray]:
    n = x.shape[axis]
    return x.mean(axis), x.std(axis, ddof=1 if n > 1 else 0) / np.sqrt(n)


def _plays_integers(learner: Learner, key: PRNGKey, learner_params: Any) -> bool:
    def act(k, p):
        return learner.act(k, learner.init(k, p), jnp.int32(1))

    out = jax.eval_shape(act, key, learner_params)
    return any(jnp.issubdtype(leaf.dtype, jnp.integer) or leaf.dtype == jnp.bool_ for leaf in jax.tree.leaves(out))


def value_and_grad(
    learner: Learner,
    env: Env,
    params: SimParams,
    wrt: str | Sequence[str],
    key: PRNGKey,
    horizon: int,
    seeds: int = 64,
    objective: Callable[[Result], jax.Array] = final_regret,
    checkpoints: Any = None,
    chunk: int | None = None,
) -> Estimate:
    """Mean and standard error of ``objective`` over seeds, and of its gradient with respect to ``wrt``.

    Args:
      learner, env: the components (as in ``jaxpriv.sweep``).
      params: ``SimParams``; a leaf with one extra leading axis is swept (zipped
        grid, common random numbers across grid points, as in ``sweep``).
      wrt: a dotted path (``"learner.lipschitz"``) or several; float leaves.
      key: the base key or an integer seed; seed ``i`` uses ``split(key, seeds)[i]``
        (the same seeds as ``sweep`` with that key).
      horizon: ``T``.
      seeds: the number of runs ``S >= 2``.
      objective: ``Result -> scalar`` for one run (arrays of shape ``[m]``);
        default ``final_regret``. Pass the same function object on every call:
        it is part of the compiled function's identity.
      checkpoints: the run's checkpoints, as in ``run``; default ``(horizon,)``
        (all that ``final_regret`` needs: the cheapest).
      chunk: differentiate the seeds in batches of this size (bounded memory).

    Returns:
      An ``Estimate``.

    Raises:
      ValueError: an unknown path, a non-float leaf, an integer-action learner
        (piecewise-constant regret), whatever ``jaxpriv.sweep`` refuses before compiling (the
        engine's eager checks: another params class than a component's own, a subclass
        included; bad params; components that do not fit together), or a
        gradient that is exactly zero on every seed and grid point (the objective
        is piecewise constant in, or does not depend on, the named leaves).

    Examples:
      >>> est = value_and_grad(oco.pftal(T, ball), env, params, "learner.lipschitz", 0, T)  # doctest: +SKIP
      >>> est.grad["learner.lipschitz"], est.grad_se["learner.lipschitz"]  # doctest: +SKIP
    """
    horizon = _validate.horizon(horizon)
    seeds = _validate.positive_int("seeds", seeds, minimum=2)
    chunk = _validate.chunk(chunk)
    if not callable(objective):
        raise ValueError(f"objective must be a function of a Result, got {objective!r}")
    paths = (wrt,) if isinstance(wrt, str) else tuple(wrt)
    if not paths or len(set(paths)) != len(paths):
        raise ValueError(f"wrt must name one or more distinct params leaves, got {wrt!r}")
    ckpts = sim.normalize_checkpoints(horizon, (horizon,) if checkpoints is None else checkpoints)
    key = as_key(key)
    # The engine's eager checks, as sweep runs them: params class, leaves, horizons, the components'
    # own checks, one traced step of the pair; canonical params and the grid's axes.
    params, axes, size = _check._prepare(learner, env, params, allow_grid=True, horizon=horizon)
    theta = []
    for path in paths:
        leaf = get_path(params, path)
        if leaf is None or not jnp.issubdtype(jnp.asarray(leaf).dtype, jnp.floating):
            raise ValueError(f"wrt {path!r} must name a float params leaf, got {leaf!r}")
        theta.append(leaf)
    axes = axes if size else None
    if _plays_integers(learner, key, _at_grid_point(params, axes, 0).learner):
        raise ValueError(
            f"wrt {', '.join(paths)}: the learner plays integer actions (a bandit policy's argmax), so the regret is "
            "piecewise constant in its parameters and its pathwise gradient is zero almost everywhere, not "
            "the gradient of the expected regret; compare values over a grid with jaxpriv.sweep instead"
        )
    keys = sim.padded_seed_keys(key, seeds)
    values, jac = _per_seed(learner, env, horizon, ckpts, paths, objective, axes, chunk, keys, params, tuple(theta))
    values, jac = sim.take_seeds((values, jac), seeds, axes is not None)
    seed_axis = 1 if axes is not None else 0
    values = np.asarray(values, np.float64)
    per_seed = {path: np.asarray(j, np.float64) for path, j in zip(paths, jac, strict=True)}
    if all(np.all(g == 0) for g in per_seed.values()) and np.all(np.isfinite(values)):
        raise ValueError(
            f"wrt {', '.join(paths)}: the gradient is exactly zero on every seed and grid point: the objective is "
            "piecewise constant in these leaves or does not depend on them (e.g. rho with an epsilon-DP tree); "
            "use a grid (jaxpriv.sweep) or name the leaf the learner uses"
        )
    mean, se = _stats(values, seed_axis)
    grads = {p: _stats(g, seed_axis) for p, g in per_seed.items()}
    return Estimate(
        mean, se, {p: g[0] for p, g in grads.items()}, {p: g[1] for p, g in grads.items()}, values, per_seed
    )


# --- gradient descent on a hyperparameter --------------------------------------------------------------


class Minimized(NamedTuple):
    """What ``minimize`` returns.

    Attributes:
      params: ``SimParams`` at the final iterate.
      value: path -> the final value of each tuned leaf.
      trajectory: path -> ``[steps + 1]`` values (the start first).
      objective: ``[steps]``, the mean objective at each step's point (on that step's seeds).
      objective_se: ``[steps]``, its standard error.
      grad: path -> ``[steps]``, the mean gradient (in the leaf's own units) at each step.
      grad_se: path -> ``[steps]``, its standard error.
      seed_runs: ``steps · seeds``, the simulated runs (each differentiated in forward mode).
      seed_steps: ``seed_runs · horizon``, the simulated seed-steps.
    """

    params: SimParams
    value: dict[str, float]
    trajectory: dict[str, np.ndarray]
    objective: np.ndarray
    objective_se: np.ndarray
    grad: dict[str, np.ndarray]
    grad_se: dict[str, np.ndarray]
    seed_runs: int
    seed_steps: int


def minimize(
    learner: Learner,
    env: Env,
    params: SimParams,
    wrt: str | Sequence[str],
    key: PRNGKey,
    horizon: int,
    steps: int = 30,
    seeds: int = 32,
    optimizer: optax.GradientTransformation | None = None,
    positive: bool = True,
    common_seeds: bool = False,
    objective: Callable[[Result], jax.Array] = final_regret,
    checkpoints: Any = None,
    chunk: int | None = None,
    callback: Callable[[int, dict[str, float], Estimate], None] | None = None,
) -> Minimized:
    """Minimise ``E[objective]`` over scalar params leaves by stochastic gradient descent (optax).

    Each step estimates the gradient with ``value_and_grad`` on ``seeds`` runs and
    applies one optimiser update. With ``positive=True`` the optimiser works on
    ``log θ`` (the gradient ``θ ∂J/∂θ``), so a positive hyperparameter stays positive and
    a step changes it by a relative amount. Every step runs the same compiled function.

    Args:
      learner, env, params: as in ``value_and_grad``; the tuned leaves must be scalars (no grid).
      wrt: the path(s) to tune; their values in ``params`` are the starting point.
      key: the base key or an integer seed.
      horizon: ``T``.
      steps: the number of optimiser steps.
      seeds: runs per step.
      optimizer: an ``optax.GradientTransformation``; default Adam whose learning
        rate decays from 0.2 to 0 over ``steps`` (cosine): noisy gradients, so the
        decay is what makes the last iterate settle.
      positive: optimise ``log θ`` (every tuned leaf must then be ``> 0``).
      common_seeds: the same seeds at every step (a deterministic sample-average
        objective) instead of fresh seeds per step (``fold_in(key, step)``; default).
      objective, checkpoints, chunk: as in ``value_and_grad``.
      callback: called as ``callback(step, values, estimate)`` after each step (progress).

    Returns:
      A ``Minimized`` with the final point and the trajectory.
    """
    steps = _validate.positive_int("steps", steps)
    seeds = _validate.positive_int("seeds", seeds, minimum=2)
    paths = (wrt,) if isinstance(wrt, str) else tuple(wrt)
    if not isinstance(params, SimParams):
        raise ValueError("params must be a jaxpriv.SimParams(learner=..., env=...)")
    start = {}
    for path in paths:
        v = np.asarray(get_path(params, path), np.float64)
        if v.ndim != 0:
            raise ValueError(f"wrt {path!r}: minimize tunes scalar leaves, got shape {v.shape}")
        if not np.isfinite(v) or (positive and v <= 0):
            need = "finite and > 0 (positive=True optimises its log)" if positive else "finite"
            raise ValueError(f"wrt {path!r}: the starting value must be {need}, got {float(v)!r}")
        start[path] = float(v)
    if optimizer is None:
        optimizer = optax.adam(optax.cosine_decay_schedule(0.2, steps))
    key = as_key(key)
    phi = {p: np.log(v) if positive else v for p, v in start.items()}
    opt_state = optimizer.init(phi)
    trajectory = {p: [v] for p, v in start.items()}
    obj, obj_se, grad, grad_se = [], [], {p: [] for p in paths}, {p: [] for p in paths}
    for step in range(steps):
        values = {p: float(np.exp(phi[p])) if positive else float(phi[p]) for p in paths}
        point = params
        for p in paths:
            point = set_path(point, p, jnp.float32(values[p]))
        k = key if common_seeds else jax.random.fold_in(key, step)
        est = value_and_grad(learner, env, point, paths, k, horizon, seeds, objective, checkpoints, chunk)
        obj.append(float(est.value))
        obj_se.append(float(est.value_se))
        updates = {}
        for p in paths:
            g = float(est.grad[p])
            grad[p].append(g)
            grad_se[p].append(float(est.grad_se[p]))
            updates[p] = g * values[p] if positive else g  # chain rule through theta = exp(phi)
        delta, opt_state = optimizer.update(updates, opt_state, phi)
        phi = optax.apply_updates(phi, delta)
        for p in paths:
            trajectory[p].append(float(np.exp(phi[p])) if positive else float(phi[p]))
        if callback is not None:
            callback(step, values, est)
    final = {p: trajectory[p][-1] for p in paths}
    out = params
    for p in paths:
        out = set_path(out, p, jnp.float32(final[p]))
    return Minimized(
        out,
        final,
        {p: np.asarray(v) for p, v in trajectory.items()},
        np.asarray(obj),
        np.asarray(obj_se),
        {p: np.asarray(v) for p, v in grad.items()},
        {p: np.asarray(v) for p, v in grad_se.items()},
        steps * seeds,
        steps * seeds * horizon,
    )
