"""The eager checks of a run or sweep: every refusal that comes before anything is compiled.

``_prepare`` runs them in order (params leaves, horizons, grid axes, the params classes the
components' specs name, the components' own checks) and ends with ``check_compatible``, which
traces one step of the learner against the environment with ``jax.eval_shape`` and names
both sides of any mismatch (dimensions, arm counts, a state that changes shape).
"""

from __future__ import annotations

import inspect
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxpriv import _validate
from jaxpriv._base import Env, Learner, check_horizon, check_params_class, check_spec, info_reductions, spec_of
from jaxpriv.sim._params import SimParams, _one_point, _params_leaves, canonical_params, grid_axes, spec_ndims


def _check_leaves(params: SimParams) -> None:
    """Every params leaf numeric and representable in the engine's dtypes; no NaN in the environment's.

    Runs on concrete values before anything is traced (tracers are skipped). NaN is a default in
    some learners' params (``fkm``: "derive it from the horizon") but never meaningful for an
    environment, whose params would turn every number of the run into NaN.
    """
    for where, value in _params_leaves(params):
        _validate.representable(where, value)
    for where, value in _params_leaves(params.env, "params.env"):
        try:
            _validate.no_nan(where, value)
        except ValueError:
            raise ValueError(
                f"{where} contains NaN ({value!r}): an environment has no NaN default, and every number "
                "of the run would be NaN"
            ) from None


def _describe(fn: Any) -> str:
    """Where a component's function was built: ``jaxpriv.oco.pftal.pftal`` for ``pftal``'s ``init_fn``."""
    qualname = getattr(fn, "__qualname__", None) or repr(fn)
    return f"{getattr(fn, '__module__', '?')}.{qualname.split('.<locals>')[0]}"


def _call_check(check: Any, value: Any, what: str, fn: Any, field: str) -> None:
    """A component's eager ``check``; a params object it cannot read is a ``ValueError`` naming both."""
    if check is None:
        return
    try:
        check(value)
    except (AttributeError, TypeError) as err:
        raise ValueError(
            f"{field} ({type(value).__name__}) does not fit the {what} ({_describe(fn)}): its check failed "
            f"with {type(err).__name__}: {err}"
        ) from err


def _shapes(tree: Any) -> list[str]:
    """``"shape dtype"`` of each leaf, prefixed by its path inside ``tree`` (none for a bare array)."""
    leaves = jax.tree_util.tree_leaves_with_path(tree)
    return [f"{jax.tree_util.keystr(p) + ': ' if p else ''}{tuple(x.shape)} {x.dtype}" for p, x in leaves]


def _changed(before: Any, after: Any) -> str | None:
    """A description of how a state's structure, shapes or dtypes change over a step, or ``None``."""
    if jax.tree.structure(before) != jax.tree.structure(after):
        return f"its structure changes from {jax.tree.structure(before)} to {jax.tree.structure(after)}"
    diffs = [
        f"{jax.tree_util.keystr(p)}: {tuple(b.shape)} {b.dtype} -> {tuple(a.shape)} {a.dtype}"
        for (p, b), a in zip(jax.tree_util.tree_leaves_with_path(before), jax.tree.leaves(after), strict=True)
        if (b.shape, b.dtype) != (a.shape, a.dtype)
    ]
    return "; ".join(diffs) if diffs else None


def check_compatible(learner: Learner, env: Env, params: SimParams, axes: Any = None) -> None:
    """Refuse, before compiling, a learner and an environment that do not fit together.

    Traces one step of the pair with ``jax.eval_shape`` (no compilation, no computation): the
    learner's ``init`` on its params, the environment's ``reset``, ``act``, ``env.step`` on that
    action and ``update`` on the feedback, and checks that neither state changes shape. A params
    object the learner or environment cannot read, an action of the wrong dimension (a learner on
    ``sets.l2_ball(3)`` against an environment on ``sets.l2_ball(2)``), a feedback the learner
    cannot take, and arm counts that differ (``Spec.num_arms`` of both: a policy for 5 arms on a
    3-armed instance, where shapes agree) each raise a ``ValueError`` naming both sides.

    Args:
      learner, env: the components.
      params: ``SimParams`` (canonical, or any arrays); swept leaves carry a leading grid axis.
      axes: the ``in_axes`` of ``params`` from ``grid_axes`` (``None``: computed here).
    """
    if axes is None:
        axes, _ = grid_axes(params, allow_grid=True, ndims=spec_ndims(learner, env))
    point = _one_point(params, axes)
    key = jax.eval_shape(jax.random.key, 0)
    t = jax.ShapeDtypeStruct((), jnp.int32)
    lname, ename = _describe(learner.init), _describe(env.reset)

    def trace(fn, what, *args, own_value_errors=False):
        try:
            return jax.eval_shape(fn, *args)
        except (AttributeError, TypeError, IndexError, ValueError) as err:
            if isinstance(err, ValueError) and own_value_errors:
                raise  # init / reset: the component's own message (a missing privacy budget, ...)
            raise ValueError(f"{what}: {type(err).__name__}: {err}") from err

    lp_name, ep_name = type(params.learner).__name__, type(params.env).__name__
    what = f"params.learner ({lp_name}) does not fit the learner ({lname})"
    agent = trace(learner.init, what, key, point.learner, own_value_errors=True)
    what = f"params.env ({ep_name}) does not fit the environment ({ename})"
    env_state = trace(env.reset, what, key, point.env, own_value_errors=True)
    action = trace(learner.act, f"the learner ({lname}) cannot act on its own state", key, agent, t)
    act_desc = ", ".join(_shapes(action)) or "()"
    want_shape = spec_of(env).action_shape
    if want_shape is not None and isinstance(action, jax.ShapeDtypeStruct) and tuple(action.shape) != tuple(want_shape):
        raise ValueError(
            f"the learner ({lname}) plays actions of shape {tuple(action.shape)} but the environment ({ename}) "
            f"takes actions of shape {tuple(want_shape)}: build both on the same dimension (the same constraint set)"
        )
    env_arms, learner_arms = spec_of(env).num_arms, spec_of(learner).num_arms
    if env_arms is not None and learner_arms is not None and env_arms != learner_arms:
        raise ValueError(
            f"the learner ({lname}) was built for {learner_arms} arms but the environment ({ename}) has {env_arms}: "
            f"it would play arms the instance does not have (answered with NaN and dropped from the regret); "
            "build both with the same number of arms"
        )
    what = f"the environment ({ename}) cannot take the learner's action ({lname}: {act_desc})"
    new_env_state, feedback, info = trace(env.step, what, key, env_state, action, t)
    fb_desc = ", ".join(_shapes(feedback)) or "()"
    what = f"the learner ({lname}) cannot take the environment's feedback ({ename}: {fb_desc}) after its action"
    new_agent = trace(learner.update, f"{what} ({act_desc})", key, agent, action, feedback, t)
    if learner.returns_info:  # declared: update -> (state, info), an Info whose class says how it is reduced
        if not (isinstance(new_agent, tuple) and len(new_agent) == 2):
            raise ValueError(
                f"the learner ({lname}) is built with returns_info=True, so its update must return (state, info), "
                f"got {type(new_agent).__name__}"
            )
        new_agent, learner_info = new_agent
        info_reductions(learner_info)  # a ValueError naming the class when it does not say how to reduce a field
    sides = (("learner", lname, agent, new_agent), ("environment", ename, env_state, new_env_state))
    for who, name, before, after in sides:
        change = _changed(before, after)
        if change is not None:
            dtype_only = jax.tree.structure(before) == jax.tree.structure(after) and all(
                b.shape == a.shape for b, a in zip(jax.tree.leaves(before), jax.tree.leaves(after), strict=True)
            )
            why = (
                "a value of another dtype entered the state (under JAX_ENABLE_X64 a Python or NumPy float is "
                "float64): cast it to the state's dtype"
                if dtype_only
                else "the learner and the environment were likely built for different sizes (dimension or number of "
                "arms)"
            )
            raise ValueError(
                f"the {who}'s state ({name}) changes {'dtype' if dtype_only else 'shape'} over one step against this "
                f"{'environment' if who == 'learner' else 'learner'} (action {act_desc}): {change}; {why}"
            )
    for field in ("loss", "regret"):
        value = getattr(info, field)
        if tuple(value.shape) != ():
            raise ValueError(
                f"the environment ({ename}) reports a {field} of shape {tuple(value.shape)} for the learner's action "
                f"({act_desc}), not a scalar: the learner and the environment likely differ in dimension"
            )


def _prepare(learner: Learner, env: Env, params: SimParams, allow_grid: bool, horizon: int):
    """Every eager check of a run or sweep, in order; returns ``(canonical params, in_axes, grid size)``.

    Nothing is compiled: params leaves (numeric, representable, no NaN in the environment's),
    horizons, grid axes, the params classes the components' specs name, the components' own checks,
    then one traced step of the pair (``check_compatible``).
    """
    if not isinstance(params, SimParams):
        raise ValueError("params must be a jaxpriv.SimParams(learner=..., env=...)")
    check_spec(learner, "learner")
    check_spec(env, "environment")
    check_horizon(horizon, learner, "learner")
    check_horizon(horizon, env, "environment")
    _check_leaves(params)
    axes, size = grid_axes(params, allow_grid, ndims=spec_ndims(learner, env))
    check_params_class(learner, params.learner, "learner", "params.learner")
    check_params_class(env, params.env, "environment", "params.env")
    _call_check(learner.check, params.learner, "learner", learner.init, "params.learner")
    _call_check(env.check, params.env, "environment", env.reset, "params.env")
    params = canonical_params(params)
    check_compatible(learner, env, params, axes)
    return params, axes, size


# --- map_seeds: the one batching primitive's arguments ----------------------------------------------


def check_seed_keys(keys: Any, name: str = "keys") -> None:
    """``keys`` is a non-empty 1-d array of PRNG keys (``jax.random.split(key, S)``), or legacy ``uint32[S, 2]``.

    Shapes and dtypes only, so a traced ``keys`` (inside ``jit`` or ``vmap``) is checked too.
    """
    usage = f"{name} must be a 1-d array of seed keys, jax.random.split(key, S) with S >= 1"
    if not isinstance(keys, (jax.Array, np.ndarray)):
        raise ValueError(f"{usage}, got {type(keys).__name__} {keys!r}"[:300])
    typed = jnp.issubdtype(keys.dtype, jax.dtypes.prng_key)
    legacy = keys.dtype == jnp.uint32 and keys.ndim == 2
    if not (typed and keys.ndim == 1) and not legacy:
        what = (
            "a single key: split it"
            if typed and keys.ndim == 0
            else f"an array of shape {keys.shape}, dtype {keys.dtype}"
        )
        raise ValueError(f"{usage}, got {what}")
    if keys.shape[0] == 0:
        raise ValueError(f"{usage}, got no keys (shape {keys.shape})")


def _takes(fn: Any, count: int) -> bool | None:
    """Whether ``fn`` can be called with ``count`` positional arguments (``None``: its signature is unknown)."""
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    try:
        signature.bind(*([None] * count))
    except TypeError:
        return False
    return True


def _grid_length(axes: Any, params: Any) -> int | None:
    """The grid length ``axes`` sweeps ``params`` over (``None``: no axis is swept); every leaf checked."""
    sizes: list[tuple[str, int]] = []

    def visit(path: Any, axis: Any, sub: Any) -> None:
        where = f"params{jax.tree_util.keystr(path)}"
        if axis is None:
            return
        if isinstance(axis, (bool, np.bool_)) or not isinstance(axis, (int, np.integer)):
            raise ValueError(f"axes{jax.tree_util.keystr(path)} must be None or 0 (a grid axis), got {axis!r}")
        for leaf_path, leaf in jax.tree_util.tree_leaves_with_path(sub):
            shape = tuple(np.shape(leaf))
            name = where + jax.tree_util.keystr(leaf_path)
            if not -len(shape) <= int(axis) < len(shape):
                raise ValueError(f"axes gives {name} the grid axis {axis}, but it has shape {shape} (no such axis)")
            sizes.append((name, shape[int(axis)]))

    try:
        jax.tree_util.tree_map_with_path(visit, axes, params, is_leaf=lambda x: x is None)
    except ValueError as err:
        if str(err).startswith("axes"):
            raise
        raise ValueError(
            "axes must be the in_axes pytree of params (grid_axes(params, True, ndims=...)[0]: its structure, "
            f"None or 0 at each leaf): {err}"
        ) from None
    lengths = {n for _, n in sizes}
    if len(lengths) > 1:
        raise ValueError(
            f"axes: swept leaves must share one grid length, got {', '.join(f'{w}: {n}' for w, n in sizes)}"
        )
    return lengths.pop() if lengths else None


def check_map_seeds(fn: Any, keys: Any, params: Any, chunk: Any, axes: Any) -> tuple[int | None, Any]:
    """Every argument of ``map_seeds``, before anything is traced: returns ``(chunk, axes)``.

    ``fn`` callable with one argument (``params is None``) or two; ``keys`` a 1-d array of keys;
    ``chunk`` as ``sweep`` takes it (``_validate.chunk``); ``axes`` only with ``params``, of its
    structure, each leaf ``None`` or a grid axis, the swept leaves of one length. Axes that sweep
    nothing (``grid_axes`` of params without a grid) are ``None``. Each a ``ValueError`` naming the argument.
    """
    if not callable(fn):
        raise ValueError(f"fn must be a function fn(key) or fn(key, params), got {fn!r}"[:300])
    check_seed_keys(keys)
    chunk = _validate.chunk(chunk)
    if axes is not None and params is None:
        raise ValueError("axes names the grid axes of params, but params is None: pass the params it describes")
    if axes is not None and _grid_length(axes, params) is None:
        axes = None  # nothing swept: one grid point, fn(key, params)
    count = 1 if params is None else 2
    if _takes(fn, count) is False:
        form = "fn(key)" if params is None else "fn(key, params)"
        why = "params is None" if params is None else "params are given"
        raise ValueError(
            f"fn must take {count} argument{'s' if count > 1 else ''} ({form}, since {why}): {fn!r} cannot"
        )
    return chunk, axes
