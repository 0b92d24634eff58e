"""Tidy results: a sweep's arrays as a labelled ``xarray.Dataset`` and a long ``pandas.DataFrame``.

``jaxpriv.sweep`` returns a ``Result`` of bare arrays ``[G, S, m]`` (grid point, seed,
checkpoint): which leaf was swept, and over which values, is known only to the caller.
``to_xarray`` names every axis:

* one dimension per grid axis, named after the swept leaf (``"epsilon"`` for
  ``"learner.params.epsilon"``, the full key where two leaves share a last part), with the
  grid values as its coordinate; leaves swept together (zipped) share one dimension and are
  coordinates along it; a vector value (``"center"`` swept over ``[G, 3]``) is labelled by its text,
  ``"[1.0 0.0 0.0]"`` (so ``ds.sel(center="[1.0 0.0 0.0]")`` and the long table's column name the
  vector, never its position), with the numbers as ``center_values``;
* ``seed`` and ``step`` (the checkpoints ``t``, a coordinate);
* ``learner`` for several learners on the same grid (a mapping of label -> ``Result``, or a
  comparison study's result), with the labels as its coordinate and each learner's number of
  seeds as ``n_seeds``: learners with fewer seeds than the most are padded with NaN on ``seed``,
  and ``to_dataframe`` / ``from_xarray`` use each learner's own seeds only;

and holds the variables ``regret``, ``loss``, ``best`` and ``gap`` (where present), plus the
per-run ``nonfinite_inputs`` / ``nonfinite_steps`` counts. ``from_xarray`` gives the
``Result`` back (exactly: dtypes and values are kept) and ``grid_values`` the flattened grid.
A ``SweepStats`` (the fixed-size statistics of ``sweep(stats=...)``) converts the same way, with
a ``quantile`` dimension and no ``seed``.

``to_dataframe`` makes the long table a plotting library or a spreadsheet wants: one row per
(variable ×) (learner ×) grid point × checkpoint, with the mean, the standard error
(``ddof = 1``, as ``jaxpriv.summarize``) and quantiles over the seeds, computed in float64 by
NumPy::

    r = jp.sweep(learner, env, params, key, T, seeds=64)          # epsilon swept over 4 values
    ds = jp.tidy.to_xarray(r, {"epsilon": eps})
    ds.regret.sel(epsilon=1.0).mean("seed")                       # a labelled selection
    jp.tidy.to_dataframe(ds).query("step == @T")                  # the final regret, one row per epsilon

xarray and pandas are dependencies of jaxpriv, imported only when a function here is called:
``import jaxpriv`` never imports them. ``write_netcdf`` writes a dataset through SciPy's netCDF-3
writer (SciPy is a dependency of jaxpriv), no netCDF4 needed. Every study run (``jaxpriv sweep``,
``jaxpriv demo``, ``run_study``) writes its dataset as ``results.nc``; ``open_results(folder)`` reads it::

    ds = jp.open_results("jaxpriv-out/demo")                      # or xarray.open_dataset(".../results.nc")
    ds.regret.sel(epsilon=1.0, learner="PFTAL", step=2**14)       # [seed]: the final regret of every run
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["from_xarray", "grid_values", "open_results", "to_dataframe", "to_xarray", "write_netcdf"]

FIELDS = ("regret", "loss", "best", "gap")
COUNTS = ("nonfinite_inputs", "nonfinite_steps")
STATS = ("regret_mean", "regret_var", "regret_min", "regret_max", "loss_mean")
_GRID_ATTR = "jaxpriv_grid"


#: A broken install's message: xarray and pandas are dependencies of jaxpriv.
_MISSING = "jaxpriv.tidy needs xarray and pandas (dependencies of jaxpriv, missing here): pip install xarray pandas"


def _xarray() -> Any:
    try:
        import xarray
    except ImportError:
        raise ImportError(_MISSING) from None
    return xarray


def _pandas() -> Any:
    try:
        import pandas
    except ImportError:
        raise ImportError(_MISSING) from None
    return pandas


# --- the grid ------------------------------------------------------------------------------------------------


#: The dimensions every tidy table has besides the grid's (a grid key may not be labelled by one of them).
_RESERVED = frozenset({"seed", "step", "quantile"})


def _names(keys: Sequence[str]) -> dict[str, str]:
    """Each key's short name (its last dotted part), or the key itself where two keys share a last part."""
    last = [k.split(".")[-1] for k in keys]
    return {k: (s if last.count(s) == 1 else k) for k, s in zip(keys, last, strict=True)}


def _layout(grid: Any, axes: Any, size: int) -> tuple[list[str], tuple[int, ...], dict[str, Any], dict[str, Any]]:
    """``(grid dimension names, their lengths, coordinates, the attribute recording the grid)`` of a ``[G]`` axis.

    ``grid``: key -> ``[G, ...]`` values at the flattened grid points (or an object with ``values`` and
    ``axes``, such as a study's ``Grid``); ``axes``: the product's axes, each a tuple of keys swept
    together, row-major (``None``: every key zipped on one axis, as ``jaxpriv.sweep`` zips its leaves).
    """
    shape = None
    if hasattr(grid, "values") and hasattr(grid, "axes") and not isinstance(grid, Mapping):
        axes = grid.axes if axes is None else axes
        shape = list(getattr(grid, "shape", ())) or None
        grid = grid.values
    if not isinstance(grid, Mapping):
        raise ValueError(
            "grid must be a mapping key -> [G, ...] values (e.g. {'learner.params.epsilon': eps}) or a study's "
            f"Grid, got {type(grid).__name__}"
        )
    values = {k: np.asarray(v) for k, v in grid.items()}
    if not values:
        raise ValueError("grid must name at least one swept key")
    for key, v in values.items():
        if v.ndim == 0 or v.shape[0] != size:
            raise ValueError(f"grid[{key!r}] must have {size} values (one per grid point), got shape {v.shape}")
    axes = [tuple(values)] if axes is None else [tuple(a) for a in axes]
    listed = [k for a in axes for k in a]
    if sorted(listed) != sorted(values):
        raise ValueError(f"axes must list every grid key once: axes {listed}, grid keys {sorted(values)}")
    names = _names(listed)
    for key, name in names.items():  # the table's own dimensions cannot also name a grid axis
        if name in _RESERVED:
            if key in _RESERVED:
                raise ValueError(
                    f"grid key {key!r} is one of the table's own dimensions {sorted(_RESERVED)}: name the param by "
                    f"its path (e.g. 'learner.params.{key}')"
                )
            names[key] = key  # 'learner.params.step': labelled by its whole path, not 'step'
    shape = _axis_lengths(values, axes, size) if shape is None else shape
    dims = [names[a[0]] for a in axes]
    coords: dict[str, Any] = {}
    for a, group in enumerate(axes):
        for key in group:
            v = values[key].reshape(*shape, *values[key].shape[1:])
            along = v[tuple(slice(None) if b == a else 0 for b in range(len(axes)))]
            expanded = np.broadcast_to(
                along.reshape(*[shape[a] if b == a else 1 for b in range(len(axes))], *along.shape[1:]), v.shape
            )
            if not np.array_equal(expanded, v, equal_nan=True):
                raise ValueError(f"grid[{key!r}] is not a row-major product over axes {axes}")
            name = names[key]
            if along.ndim == 1:
                coords[name] = (dims[a], along)
            else:  # a vector value: the numbers as ``<name>_values``, labelled by their text (``"[1 0 0]"``)
                numbers = f"{name}_values"
                names[key] = numbers
                coords[numbers] = ((dims[a], *[f"{numbers}_dim{i}" for i in range(along.ndim - 1)]), along)
                coords[name] = (dims[a], np.asarray(_vector_labels(along), dtype=str))
    attr = json.dumps({"axes": [list(a) for a in axes], "names": names, "dims": dims})
    return dims, tuple(shape), coords, {_GRID_ATTR: attr}


def _axis_lengths(values: dict[str, np.ndarray], axes: list[tuple[str, ...]], size: int) -> list[int]:
    """Each axis's length, read from the row-major order of the flattened values (the last axis fastest).

    From the last axis back: an axis's values, sampled every ``stride`` points (the product of the later
    axes' lengths), repeat with its length as their period. An axis whose values repeat within it (``[1, 1]``)
    is ambiguous: pass the grid's ``shape`` (a ``Grid``) instead.
    """
    lengths: list[int] = []
    stride = 1
    for group in reversed(axes):
        flat = np.concatenate([values[k].reshape(size, -1) for k in group], axis=1)[::stride]
        count = flat.shape[0]
        period = next(
            p for p in range(1, count + 1)
            if count % p == 0 and np.array_equal(flat, np.tile(flat[:p], (count // p, 1)), equal_nan=True)
        )  # fmt: skip
        lengths.insert(0, period)
        stride *= period
    if stride != size:
        raise ValueError(
            f"grid is not a row-major product over axes {axes} (or an axis repeats a value: give the grid's shape)"
        )
    return lengths


def grid_values(ds: Any) -> dict[str, np.ndarray]:
    """The flattened grid of a dataset made by ``to_xarray``: key -> ``[G, ...]`` values, row-major.

    Args:
      ds: an ``xarray.Dataset`` from ``to_xarray`` (or read back from its netCDF file).

    Returns:
      The grid ``to_xarray`` was given (``{}`` when it had none).
    """
    if _GRID_ATTR not in ds.attrs:
        return {}
    meta = json.loads(ds.attrs[_GRID_ATTR])
    dims = meta["dims"]
    shape = [ds.sizes[d] for d in dims]
    out = {}
    for a, group in enumerate(meta["axes"]):
        for key in group:
            along = np.asarray(ds[meta["names"][key]].values)
            lead = [shape[a] if b == a else 1 for b in range(len(dims))]
            full = np.broadcast_to(along.reshape(*lead, *along.shape[1:]), (*shape, *along.shape[1:]))
            out[key] = full.reshape(-1, *along.shape[1:]).copy()
    return out


# --- Result / SweepStats -> Dataset ----------------------------------------------------------------------------


def _is_stats(obj: Any) -> bool:
    return hasattr(obj, "regret_mean") and hasattr(obj, "regret_quantiles")


def _is_result(obj: Any) -> bool:
    return all(hasattr(obj, f) for f in ("steps", "regret", "loss", "best"))


def _dataset(result: Any, grid: Any, axes: Any, attrs: Mapping[str, Any] | None, what: str = "result") -> Any:
    """One learner's dataset (a ``Result`` or a ``SweepStats``)."""
    xr = _xarray()
    stats = _is_stats(result)
    if not stats and not _is_result(result):
        raise ValueError(
            f"{what} must be a jaxpriv.Result, a jaxpriv.SweepStats, a mapping label -> either, or what "
            f"jaxpriv.experiments.study.run_study returned; got {type(result).__name__}"
        )
    reference = np.asarray(result.regret_mean if stats else result.regret)
    inner = 1 if stats else 2  # [..., m] for stats; [..., S, m] for a Result
    lead = reference.ndim - inner
    if not stats and reference.ndim == 1:
        lead, inner = 0, 1  # a single run: [m]
    if lead > 1:
        raise ValueError(f"result must have at most one grid axis, got regret of shape {reference.shape}")
    if grid is not None and lead == 0:
        raise ValueError("grid was given but the result has no grid axis")
    if lead:
        size = reference.shape[0]
        if grid is None:
            dims, shape, coords, meta = ["grid"], (size,), {}, {}
        else:
            dims, shape, coords, meta = _layout(grid, axes, size)
    else:
        dims, shape, coords, meta = [], (), {}, {}
    steps = np.asarray(result.steps)
    coords = dict(coords)
    coords["step"] = ("step", steps)
    data: dict[str, Any] = {}

    def put(name: str, value: Any, tail: list[str]) -> None:
        if value is None:
            return
        v = np.asarray(value)
        data[name] = ([*dims, *tail], v.reshape((*shape, *(v.shape[1:] if dims else v.shape))))

    if stats:
        for name in STATS:
            put(name, getattr(result, name), ["step"])
        put("regret_quantiles", result.regret_quantiles, ["step", "quantile"])
        coords["quantile"] = ("quantile", np.asarray(result.quantiles, np.float64))
        for name in COUNTS:
            put(name, getattr(result, name), [])
        extra = {"count": int(result.count)}
    else:
        seed = [] if inner == 1 else ["seed"]
        if seed:
            coords["seed"] = ("seed", np.arange(reference.shape[-2], dtype=np.int32))
        for name in FIELDS:
            put(name, getattr(result, name, None), [*seed, "step"])
        for name in COUNTS:
            put(name, getattr(result, name, None), seed)
        extra = {}
    ds = xr.Dataset(data, coords=coords)
    ds.attrs.update(meta)
    ds.attrs.update(extra)
    ds.attrs["jaxpriv_kind"] = "stats" if stats else "result"
    private = getattr(result, "private", None)
    if private is not None:  # the learner's declaration (Result.private), as text: netCDF has no bool attribute
        ds.attrs["private"] = "true" if private else "false"
    if attrs:
        ds.attrs.update({k: (v if isinstance(v, (str, int, float)) else json.dumps(v, default=str)) for k, v in
                         attrs.items()})  # fmt: skip
    return ds


def to_xarray(result: Any, grid: Any = None, *, axes: Any = None, attrs: Mapping[str, Any] | None = None) -> Any:
    """A sweep's results as a labelled ``xarray.Dataset``.

    Args:
      result: a ``Result`` (``[G, S, m]``, ``[S, m]`` or ``[m]`` arrays), a ``SweepStats``, a mapping of
        label -> either (several learners on the same grid and checkpoints: a ``learner`` dimension;
        their seed counts may differ, see ``n_seeds``), or what ``jaxpriv.experiments.study.run_study``
        returned (its grid and labels are used).
      grid: the swept values at the flattened grid points, key -> ``[G, ...]`` (the leaves given to
        ``jaxpriv.sweep`` with their extra leading axis), or a study's ``Grid``. ``None``: the grid
        dimension is ``grid``, without coordinates.
      axes: the grid as a product: its axes in row-major order (the last varies fastest), each a tuple
        of keys swept together, e.g. ``[("learner.params.epsilon",), ("learner.params.lipschitz",)]``;
        each becomes a dimension. ``None``: every key of ``grid`` on one (zipped) dimension.
      attrs: attributes to add (non-scalar values stored as JSON).

    Returns:
      The ``Dataset``: dimensions (``learner``, with the coordinate ``n_seeds``,) one per grid axis, ``seed``,
      ``step``; variables
      ``regret``, ``loss``, ``best``, ``gap`` where present and the non-finite counts (a ``SweepStats``:
      ``regret_mean``, ``regret_var``, ``regret_min``, ``regret_max``, ``regret_quantiles``, ``loss_mean``).

    Raises:
      ValueError: ``result`` is none of these (or a mapping mixes ``Result`` and ``SweepStats``, or its
        learners differ in checkpoints or grid); ``grid`` is not a mapping (or a ``Grid``), does not match
        the result's grid axis, or is not the product ``axes`` says.
    """
    xr = _xarray()
    if hasattr(result, "study") and hasattr(result, "results"):
        study = result.study
        meta = {"study": study.name, "horizon": study.horizon, "env": study.env_name, "seeds": study.seeds}
        if study.compare:
            meta["reference"] = study.reference or ""
        meta.update(attrs or {})
        runs = result.results()
        grid = study.grid or None
        axes = study.axes if grid else None
        if not study.compare:
            return to_xarray(next(iter(runs.values())), grid, axes=axes, attrs={"learner": study.learner_name,
                                                                                   **meta})  # fmt: skip
        return to_xarray(runs, grid, axes=axes, attrs=meta)
    if isinstance(result, Mapping):
        if not result:
            raise ValueError("result must hold at least one learner")
        parts = [_dataset(r, grid, axes, None, f"result[{k!r}]") for k, r in result.items()]
        seeds = _check_learners(result, parts)
        ds = xr.concat(parts, dim="learner", data_vars="all", coords="minimal", compat="override",
                       combine_attrs="override", join="outer")  # fmt: skip
        if len(set(seeds)) > 1:  # padded with NaN past each learner's own seeds: say how many are its own
            for name in ds.data_vars:  # the padding may widen a dtype (int32 counts become floats): restored on
                if name in parts[0]:  # the way back
                    ds[name].attrs["jaxpriv_dtype"] = str(parts[0][name].dtype)
            ds.attrs.pop("count", None)
        ds = ds.assign_coords(
            learner=("learner", np.asarray([str(k) for k in result], dtype=str)),
            n_seeds=("learner", np.asarray(seeds, np.int64)),
        )
        ds.attrs.pop("private", None)  # each learner's own declaration (Result.private), by label
        flags = {str(k): p.attrs.get("private") for k, p in zip(result, parts, strict=True)}
        if any(f is not None for f in flags.values()):
            ds.attrs["private"] = json.dumps(flags)
        if attrs:
            ds.attrs.update({k: (v if isinstance(v, (str, int, float)) else json.dumps(v, default=str)) for k, v in
                             attrs.items()})  # fmt: skip
        return ds
    return _dataset(result, grid, axes, attrs)


def _check_learners(result: Mapping[Any, Any], parts: list[Any]) -> list[int]:
    """Each learner's number of seeds; refuse learners that are not on one grid with the same checkpoints."""
    labels = [repr(k) for k in result]
    kinds = [p.attrs["jaxpriv_kind"] for p in parts]
    if len(set(kinds)) > 1:
        raise ValueError(f"result mixes Results and SweepStats ({dict(zip(labels, kinds, strict=True))}); "
                         "convert each kind on its own")  # fmt: skip
    first = parts[0]
    for label, part in zip(labels[1:], parts[1:], strict=True):
        if not np.array_equal(part.step.values, first.step.values):
            raise ValueError(
                f"result[{label}] has checkpoints {part.step.values.tolist()}, result[{labels[0]}] "
                f"{first.step.values.tolist()}: every learner must share the checkpoints"
            )
        if ("seed" in part.dims) != ("seed" in first.dims):
            raise ValueError(f"result[{label}] and result[{labels[0]}] differ in having a seed axis: every learner "
                             "must have per-seed results, or none")  # fmt: skip
        mine = {d: n for d, n in part.sizes.items() if d != "seed"}
        theirs = {d: n for d, n in first.sizes.items() if d != "seed"}
        if mine != theirs:
            raise ValueError(
                f"result[{label}] has grid/step sizes {mine}, result[{labels[0]}] {theirs}: every learner must "
                "be on the same grid"
            )
    if kinds[0] == "stats":
        return [int(p.attrs["count"]) for p in parts]
    return [int(p.sizes.get("seed", 1)) for p in parts]


# --- Dataset -> Result -----------------------------------------------------------------------------------------


def from_xarray(ds: Any) -> Any:
    """The ``Result`` (or ``SweepStats``) a dataset of ``to_xarray`` holds; a mapping label -> one of them when
    the dataset has a ``learner`` dimension.

    The grid dimensions are flattened back in row-major order (``grid_values`` gives their values), so
    ``from_xarray(to_xarray(r, grid, axes=axes))`` has the arrays of ``r``, dtypes included.

    Args:
      ds: an ``xarray.Dataset`` from ``to_xarray`` (or read back from its netCDF file).

    Returns:
      A ``jaxpriv.Result`` / ``jaxpriv.SweepStats``, or a dict of them by learner label (each with its
      own seeds, ``n_seeds``, and dtypes).

    Raises:
      ValueError: ``ds`` is not a dataset, or holds no ``regret`` (``regret_mean``) with a ``step`` coordinate.
    """
    from jaxpriv import sim, stats

    xr = _xarray()
    if not isinstance(ds, xr.Dataset):
        raise ValueError(f"ds must be an xarray.Dataset made by jaxpriv.tidy.to_xarray, got {type(ds).__name__}")
    if "learner" in ds.dims:
        out = {}
        flags = json.loads(ds.attrs["private"]) if str(ds.attrs.get("private", "")).startswith("{") else {}
        for i, label in enumerate(ds.learner.values):
            part = ds.isel(learner=i, drop=True)
            part.attrs.pop("private", None)
            if flags.get(str(label)) is not None:
                part.attrs["private"] = flags[str(label)]
            if "n_seeds" in ds.coords:  # each learner's own seeds (the rest is padding)
                n = int(ds["n_seeds"].values[i])
                if "seed" in part.dims:
                    part = part.isel(seed=slice(0, n))
                    for name in list(part.data_vars):
                        if "jaxpriv_dtype" in part[name].attrs:
                            part[name] = part[name].astype(part[name].attrs["jaxpriv_dtype"])
                else:
                    part.attrs["count"] = n
            out[str(label)] = from_xarray(part)
        return out
    is_stats = ds.attrs.get("jaxpriv_kind") == "stats" or "regret_mean" in ds
    main_name = "regret_mean" if is_stats else "regret"
    if main_name not in ds or "step" not in ds.coords:
        raise ValueError(
            f"ds holds no {main_name!r} variable with a 'step' coordinate: from_xarray needs a dataset made by "
            f"jaxpriv.tidy.to_xarray (it holds variables {sorted(map(str, ds.data_vars))})"
        )
    if is_stats and "count" not in ds.attrs:
        raise ValueError("ds has no 'count' attribute: from_xarray needs the number of seeds of its statistics")
    tail = {"seed", "step", "quantile"}
    main = ds[main_name]
    dims = [d for d in main.dims if d not in tail]
    if _GRID_ATTR in ds.attrs:
        dims = json.loads(ds.attrs[_GRID_ATTR])["dims"]

    def get(name: str, order: tuple[str, ...]) -> np.ndarray | None:
        if name not in ds:
            return None
        v = ds[name].transpose(*dims, *[d for d in order if d in ds[name].dims]).values
        return v.reshape(-1, *v.shape[len(dims) :]) if dims else v

    steps = np.asarray(ds.step.values)
    private = {"true": True, "false": False}.get(str(ds.attrs.get("private")))
    if is_stats:
        return stats.SweepStats(
            steps, int(ds.attrs["count"]), *(get(n, ("step",)) for n in STATS[:4]),
            tuple(float(q) for q in ds["quantile"].values), get("regret_quantiles", ("step", "quantile")),
            get("loss_mean", ("step",)), get("nonfinite_inputs", ()), get("nonfinite_steps", ()), private,
        )  # fmt: skip
    order = ("seed", "step")
    return sim.Result(steps, *(get(n, order) for n in FIELDS), *(get(n, ("seed",)) for n in COUNTS), private)


# --- the long table --------------------------------------------------------------------------------------------


def to_dataframe(
    result: Any,
    grid: Any = None,
    *,
    axes: Any = None,
    variables: Sequence[str] = ("regret",),
    quantiles: Sequence[float] = (0.1, 0.5, 0.9),
) -> Any:
    """A long ``pandas.DataFrame``: one row per variable × (learner ×) grid point × checkpoint.

    Columns: ``variable``, (``learner``,) the grid's coordinates (one column per swept key; a vector
    value as its text, ``"[1.0 0.0 0.0]"``), ``step``, then ``mean``, ``se`` (the standard error of the mean
    over the seeds, ``ddof = 1``), ``n`` (the number of seeds: each learner's own, ``n_seeds``) and one
    ``q<level>`` column per quantile, all over the seeds in float64 (NumPy's ``mean``, ``std``, ``quantile``).
    For a ``SweepStats``, its own mean, variance (over its own ``count``) and quantile levels (``quantiles`` is
    not used).

    Args:
      result: a dataset from ``to_xarray``, or anything ``to_xarray`` takes (converted with ``grid`` and ``axes``).
      grid, axes: as in ``to_xarray`` (only when ``result`` is not a dataset).
      variables: the per-seed variables to summarise (``"regret"``, ``"loss"``, ``"best"``, ``"gap"``).
      quantiles: the quantile levels, each in ``[0, 1]``.

    Returns:
      The ``DataFrame``.

    Raises:
      ValueError: a variable the dataset does not hold, or a quantile level outside ``[0, 1]``.
    """
    xr = _xarray()
    pd = _pandas()
    ds = result if isinstance(result, xr.Dataset) else to_xarray(result, grid, axes=axes)
    qs = [float(q) for q in quantiles]
    if any(not 0.0 <= q <= 1.0 for q in qs):
        raise ValueError(f"quantiles must lie in [0, 1], got {list(quantiles)}")
    is_stats = ds.attrs.get("jaxpriv_kind") == "stats" or "regret_mean" in ds
    if is_stats and "regret_mean" not in ds:
        raise ValueError(f"the dataset holds no variable 'regret_mean'; it holds {sorted(map(str, ds.data_vars))}")
    seeds = ds["n_seeds"] if "n_seeds" in ds.coords else None  # each learner's own seeds (the rest: padding)
    frames = []
    for var in ("regret",) if is_stats else variables:
        if not is_stats and var not in ds:
            raise ValueError(f"the dataset holds no variable {var!r}; it holds {sorted(map(str, ds.data_vars))}")
        if is_stats:
            base = ds["regret_mean"]
            mean = base.values.astype(np.float64)
            if seeds is not None:
                count = seeds.broadcast_like(base).transpose(*base.dims).values.astype(np.float64)
            else:
                count = np.full(mean.shape, float(ds.attrs["count"]))
            se = np.sqrt(ds["regret_var"].transpose(*base.dims).values.astype(np.float64) / count)
            qv = ds["regret_quantiles"].transpose(*base.dims, "quantile").values.astype(np.float64)
            levels = [float(q) for q in ds["quantile"].values]
            qcols = {f"q{q:g}": qv[..., i] for i, q in enumerate(levels)}
            n = count.astype(np.int64)
        else:
            da = ds[var]
            if "seed" not in da.dims:
                raise ValueError(f"{var!r} has no seed axis to summarise")
            base = da.isel(seed=0, drop=True)
            x = da.transpose(*base.dims, "seed").values.astype(np.float64)
            if seeds is not None:  # one learner at a time, over its own seeds
                at = base.dims.index("learner")
                parts = [_seed_stats(np.take(x, i, axis=at)[..., :k], qs) for i, k in enumerate(seeds.values)]
                mean, se, qv, n = (np.stack([p[j] for p in parts], axis=at + (j == 2)) for j in range(4))
            else:
                mean, se, qv, n = _seed_stats(x, qs)
            qcols = {f"q{q:g}": qv[i] for i, q in enumerate(qs)}
        columns = {"mean": mean, "se": se, "n": n, **qcols}
        coords = {k: c.variable for k, c in base.coords.items() if set(c.dims) <= set(base.dims) and k != "n_seeds"}
        out = xr.Dataset({k: (base.dims, v) for k, v in columns.items()}, coords=coords)
        frame = out.to_dataframe().reset_index()
        _label_vectors(ds, frame)
        frame.insert(0, "variable", var)
        lead = ["variable", *(["learner"] if "learner" in frame else [])]
        stat_cols = list(columns)
        middle = [c for c in frame.columns if c not in lead and c not in stat_cols and c != "step"]
        frames.append(frame[[*lead, *middle, "step", *stat_cols]])
    return pd.concat(frames, ignore_index=True)


def _seed_stats(x: np.ndarray, qs: list[float]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(mean, se, quantiles [len(qs), ...], n)`` over the last axis (the seeds) of float64 ``x``."""
    count = x.shape[-1]
    mean = x.mean(-1)
    se = x.std(-1, ddof=1 if count > 1 else 0) / np.sqrt(count)
    qv = np.quantile(x, qs, axis=-1) if qs else np.zeros((0, *mean.shape))
    return mean, se, qv, np.full(mean.shape, count)


def _vector_labels(values: Any) -> list[str]:
    """Each row of ``values [G, ...]`` as text, ``"[1.0 0.0 0.5]"`` (NumPy's shortest round-trip digits)."""
    return ["[" + " ".join(str(x) for x in np.ravel(v)) + "]" for v in np.asarray(values)]


def _label_vectors(ds: Any, frame: Any) -> None:
    """Label the rows of ``frame`` by the vector grid values of ``ds`` that have no text label yet.

    ``to_xarray`` labels every vector value by its text; a dataset without that label (written before it
    did) would show the vector's position along its dimension: the text replaces it here.
    """
    for name, coord in ds.coords.items():
        dim = coord.dims[0] if coord.ndim else None
        if coord.ndim < 2 or dim not in frame.columns:
            continue
        label = name[: -len("_values")] if name.endswith("_values") else name
        if label in frame.columns and label != dim:
            continue
        if label == dim and dim in ds.indexes:  # the dimension is already labelled by its values
            continue
        text = _vector_labels(coord.values)
        positions = ds.indexes[dim].get_indexer(frame[dim]) if dim in ds.indexes else frame[dim].astype(int)
        frame[label] = [text[p] for p in positions]


# --- files -------------------------------------------------------------------------------------------------------


def write_netcdf(ds: Any, path: str | Path) -> Path:
    """Write a dataset of ``to_xarray`` as netCDF-3 through SciPy (no netCDF4 library needed).

    Args:
      ds: the dataset.
      path: the file to write (``.nc``).

    Returns:
      The path written; ``xarray.open_dataset(path)`` (``engine="scipy"``) reads it back and
      ``from_xarray`` gives the same ``Result``.

    Raises:
      ValueError: ``ds`` is not a dataset, or ``path`` is a folder or lies under a file (checked before writing).
    """
    xr = _xarray()
    if not isinstance(ds, xr.Dataset):
        raise ValueError(f"ds must be an xarray.Dataset (jaxpriv.tidy.to_xarray), got {type(ds).__name__}")
    path = Path(path)
    _check_writable("path", path)
    ds.to_netcdf(path, engine="scipy")
    return path


def open_results(path: str | Path) -> Any:
    """A study's labelled results: the ``results.nc`` every study run writes, read into memory.

    ``xarray.open_dataset(path)`` reads the same file; this one takes the output folder too and closes the
    file (the dataset is loaded), so the folder can be run into again. Select by label::

        ds = jp.open_results("jaxpriv-out/demo")
        ds.regret.sel(epsilon=1.0, learner="PFTAL").isel(step=-1).mean("seed")

    Args:
      path: a study's output folder (``--out``; a study with ``horizons`` or ``[sizes]``: one of its
        ``T<horizon>`` / ``<name><value>`` folders), or a ``.nc`` file.

    Returns:
      The ``xarray.Dataset`` of ``to_xarray``: dimensions (``learner``,) one per grid axis (named after the swept
      key: ``epsilon``, ``rho``, ...), ``seed``, ``step``; variables ``regret``, ``loss``, ``best`` (and ``gap``,
      the non-finite counts) where the run recorded them; ``from_xarray`` gives the arrays back.

    Raises:
      ValueError: ``path`` is neither a ``.nc`` file nor a folder holding ``results.nc`` (naming it).
    """
    xr = _xarray()
    path = Path(path)
    file = path / "results.nc" if path.is_dir() else path
    if not file.is_file():
        inside = sorted(p.parent.name for p in path.glob("*/results.nc")) if path.is_dir() else []
        hint = f" (its folders {inside} do: a study over horizons or sizes writes one per run)" if inside else ""
        raise ValueError(f"path {str(path)!r} is neither a results.nc file nor a folder holding one{hint}")
    with xr.open_dataset(file, engine="scipy") as ds:
        return ds.load()


def _check_writable(name: str, path: Path) -> None:
    """Refuse a ``path`` a file cannot be written to: a folder, or a path under a file (``ValueError`` naming it)."""
    if path.is_dir():
        raise ValueError(f"{name} {str(path)!r} is a folder: give a file name")
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                raise ValueError(f"{name} {str(path)!r} lies under {str(parent)!r}, which is a file, not a folder")
            break
