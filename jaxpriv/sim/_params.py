"""What a run takes: ``SimParams``, the checkpoint steps, and a params tree's grid axes and dtypes.

``grid_axes`` reads which params leaves are swept (one extra leading axis, the grid) and
``canonical_params`` casts every leaf to the engine's dtypes (float32, int32), so that a new
grid of the same shape reuses the compiled function. ``_one_point`` is the abstract params of
one grid point, for the checks that trace a step without running it (``_check``).
"""

from __future__ import annotations

import itertools
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxpriv import _validate
from jaxpriv._base import spec_of


class SimParams(NamedTuple):
    """The params of one experiment: the learner's and the environment's."""

    learner: Any
    env: Any


def log_checkpoints(horizon: int, num: int = 100) -> tuple[int, ...]:
    """About ``num`` log-spaced steps in ``1..horizon``, always including ``1`` and ``horizon``."""
    horizon = _validate.positive_int("horizon", horizon)
    num = _validate.positive_int("num", num)
    pts = np.unique(np.round(np.geomspace(1, horizon, max(num, 2))).astype(np.int64))
    return tuple(int(p) for p in np.union1d(pts, [1, horizon]))


def normalize_checkpoints(horizon: int, checkpoints: Any) -> tuple[int, ...]:
    """Checkpoint steps as a sorted tuple: ``None`` = every step, ``"log"``, or a sequence (``T`` added).

    A sequence (list, tuple, range or 1-d array) must hold whole numbers (``5`` or ``5.0``, not
    ``5.7`` or NaN), strictly increasing, in ``[1, horizon]``; ``horizon`` is added when it is
    missing. A bare integer has no meaning here and is refused: ``[5]`` is the step 5, and
    ``log_checkpoints(horizon, 5)`` gives about 5 log-spaced steps. Anything else raises a
    ``ValueError`` naming ``checkpoints``, before anything is compiled.
    """
    usage = "checkpoints must be None (every step), 'log' or an increasing sequence of steps in [1, horizon]"
    if checkpoints is None:
        return tuple(range(1, horizon + 1))
    if isinstance(checkpoints, str):
        if checkpoints != "log":
            raise ValueError(f"{usage}, got {checkpoints!r}")
        return log_checkpoints(horizon)
    if isinstance(checkpoints, (set, frozenset, dict)):
        raise ValueError(f"{usage}, got a {type(checkpoints).__name__} (no order); pass sorted(...)")
    if isinstance(checkpoints, (bool, int, float, np.number)) or np.ndim(checkpoints) == 0:
        raise ValueError(
            f"{usage}, got the single number {checkpoints!r}: write [{checkpoints!r}] for that one step, or "
            f"jaxpriv.log_checkpoints(horizon, n) for about n log-spaced steps"
        )
    try:
        raw = np.asarray(checkpoints)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{usage}, got {checkpoints!r} ({err})") from None
    if raw.ndim != 1 or (raw.size and (raw.dtype.kind not in "iuf")):
        raise ValueError(f"{usage}, got {checkpoints!r} (shape {raw.shape}, dtype {raw.dtype})")
    if raw.dtype.kind == "f":
        bad = ~np.isfinite(raw) | (raw != np.round(raw))
        if np.any(bad):
            raise ValueError(f"{usage}; the steps must be whole numbers, got {raw[bad][0]!r} in {checkpoints!r}")
    steps = [int(c) for c in raw]
    if any(c < 1 or c > horizon for c in steps):
        raise ValueError(f"{usage}; got {checkpoints!r}, outside [1, horizon={horizon}]")
    if any(b <= a for a, b in itertools.pairwise(steps)):
        raise ValueError(f"{usage}; got {checkpoints!r}, which is not strictly increasing (unsorted or repeated)")
    if not steps or steps[-1] != horizon:
        steps.append(horizon)
    return tuple(steps)


# --- params: grid axes, validation, dtypes ---------------------------------------------------------


def _is_params_node(x: Any) -> bool:
    return isinstance(x, tuple) and hasattr(x, "_fields")


def spec_ndims(learner: Any, env: Any) -> dict[str, dict[str, int]]:
    """The base ranks of a ``SimParams``'s array fields, from the components' specs (``Spec.ndims``).

    ``{"learner": {field: rank}, "env": {field: rank}}``, for ``grid_axes(..., ndims=)``; a component
    without a spec names none (its params are scalars at their base).
    """
    return {
        "learner": UNDECLARED if learner.spec is None else dict(spec_of(learner).ndims),
        "env": UNDECLARED if env.spec is None else dict(spec_of(env).ndims),
    }


#: ``spec_ndims``' entry for a component without a spec: its array leaves' base rank is unknown, so
#: ``grid_axes`` refuses them instead of guessing (a vector ``means[3]`` read as a grid of three scalars).
UNDECLARED = "undeclared"


def _undeclared_leaf(value: Any, path: str) -> None:
    shape = tuple(np.shape(value))
    if shape:
        field = path.rsplit(".", 1)[-1]
        raise ValueError(
            f"{path} has shape {shape}, but its component has no spec (spec=None) to say whether that is one value "
            f"per run or a grid axis of {shape[0]} points: give the component a jaxpriv.Spec(name, "
            f"ndims=(({field!r}, {len(shape)}),)) for one value per run (a leaf one rank higher is then a grid "
            f"axis), or a Spec that does not name {field!r} for a grid of scalars"
        )


def grid_axes(
    params: Any, allow_grid: bool, path: str = "params", ndims: dict[str, Any] | None = None
) -> tuple[Any, int | None]:
    """The ``in_axes`` pytree of ``params`` (0 for a swept leaf) and the grid size.

    A leaf is swept when it has one more dimension than its base: scalars by default,
    ``ndims[field]`` when given. ``ndims`` maps a params NamedTuple's fields to their base
    ranks, nested by field for a params of params: for a ``SimParams``,
    ``{"learner": {...}, "env": {...}}`` (``spec_ndims(learner, env)``, the components'
    ``Spec.ndims``). Without it every leaf is a scalar at its base.
    """
    if _is_params_node(params):
        undeclared = ndims is UNDECLARED
        base = {} if undeclared else (ndims or {})
        axes, size = [], None
        for name, value in zip(params._fields, params, strict=True):
            sub = f"{path}.{name}"
            rank = UNDECLARED if undeclared else base.get(name, 0)
            if _is_params_node(value):
                ax, n = grid_axes(value, allow_grid, sub, rank if undeclared else base.get(name))
            elif value is None:
                ax, n = None, None
            elif rank is UNDECLARED:
                _undeclared_leaf(value, sub)
                ax, n = None, None
            else:
                ax, n = _leaf_axis(value, rank, allow_grid, sub)
            if n is not None:
                if size is not None and n != size:
                    raise ValueError(f"{sub}: swept leaves must share one grid length, got {n} and {size}")
                size = n
            axes.append(ax)
        return type(params)(*axes), size
    if params is None:
        return None, None
    if ndims is UNDECLARED:
        _undeclared_leaf(params, path)
        return None, None
    return _leaf_axis(params, 0, allow_grid, path)


def _leaf_axis(value: Any, base_ndim: int, allow_grid: bool, path: str) -> tuple[int | None, int | None]:
    try:
        ndim = np.ndim(value)
    except ValueError:  # a ragged nest of lists: NumPy cannot make one array of it
        raise ValueError(f"{path} must be a number or an array, got a ragged sequence {value!r}") from None
    if ndim and 0 in np.shape(value):  # an empty grid axis or value: JAX would fail deep inside the vmap
        raise ValueError(
            f"{path} is an empty array (shape {tuple(np.shape(value))}): a params value needs its numbers, "
            "and a swept value at least one grid point"
        )
    if ndim == base_ndim or (base_ndim > 0 and ndim == 0):
        return None, None
    if allow_grid and ndim == base_ndim + 1:
        return 0, int(np.shape(value)[0])
    allowed = f"{base_ndim}" + (f" (or {base_ndim + 1} with a leading grid axis)" if allow_grid else "")
    raise ValueError(f"{path} must have {allowed} dimensions, got shape {np.shape(value)}")


def _params_leaves(params: Any, path: str = "params"):
    """``(path, value)`` of every leaf of a params tree, as ``grid_axes`` counts them (``None`` skipped).

    A field of a params NamedTuple is one leaf, whatever it holds: a list of numbers is one array.
    """
    if _is_params_node(params):
        for name, value in zip(params._fields, params, strict=True):
            yield from _params_leaves(value, f"{path}.{name}")
    elif params is not None:
        yield path, params


def canonical_params(params: Any, path: str = "params") -> Any:
    """Params leaves as float32 arrays (int32 for integer leaves): one compiled function per shape.

    Each field of a params NamedTuple is one array, as ``grid_axes`` counts it: a list or tuple
    of numbers (``epsilon=[0.1, 1.0]``) becomes one array (a grid axis in ``sweep``), not a pytree
    of scalars. A string, bool or other non-numeric leaf raises ``ValueError`` naming its path.
    """

    def cast(v, where):
        _validate.numeric(where, v)
        try:
            v = jnp.asarray(v)
        except (TypeError, ValueError) as err:
            raise ValueError(f"{where} must be a number or a numeric array, got {v!r} ({err})") from None
        return v.astype(jnp.int32) if jnp.issubdtype(v.dtype, jnp.integer) else v.astype(jnp.float32)

    if _is_params_node(params):
        return type(params)(*(canonical_params(v, f"{path}.{n}") for n, v in zip(params._fields, params, strict=True)))
    if params is None:
        return None
    if isinstance(params, dict):  # a user's dict of leaves (not a jaxpriv params class)
        return {k: canonical_params(v, f"{path}[{k!r}]") for k, v in params.items()}
    return cast(params, path)


def _one_point(params: Any, axes: Any) -> Any:
    """Abstract (``ShapeDtypeStruct``) params of one grid point: the swept leading axis dropped."""
    if _is_params_node(params):
        return type(params)(*(_one_point(p, a) for p, a in zip(params, axes, strict=True)))
    if params is None:
        return None
    if isinstance(params, dict):
        return {k: _one_point(v, None) for k, v in params.items()}
    shape = tuple(np.shape(params))
    return jax.ShapeDtypeStruct(shape[1:] if axes == 0 else shape, jnp.result_type(params))
