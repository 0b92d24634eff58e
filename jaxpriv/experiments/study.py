"""Sweeps from a TOML study file: ``jaxpriv sweep study.toml``; the runner.

The study file's format, its parsing and its grid are in ``jaxpriv.experiments.study_file``
(``load_study``, ``parse_study``, ``Study``); the names a file may use are in
``jaxpriv.experiments.registry``. This module runs a ``Study``: its flattened product grid of
``G`` points is run by ``jaxpriv.sweep`` (one compiled function for every chunk: only traced
values change between chunks). Seed chunk ``c`` uses the key ``fold_in(key(seed), c)`` for
every grid point (common random numbers across the grid), so a chunk's numbers do not depend
on which chunks ran before.

Outputs in the output folder: ``results.npz`` (raw arrays; their axes are named
in the JSON), ``settings.json`` (the study, the grid, versions, timings),
``summary.csv`` (one row per grid point: mean and standard error of the final
regret, the theorem's bound where one exists), ``regret.png`` (regret curves
with 95% bands) and ``final_regret.png`` (final regret against the swept
parameter, theory dashed); the JSON and the table through ``jaxpriv.experiments._outputs``.
Finished chunks are kept in ``chunks/``; running the
same study into the same folder again resumes: finished chunks are not recomputed.
Each chunk file carries the fingerprint of what it holds (``jaxpriv._resume``, the
same mechanism as ``jaxpriv.sweep(save=...)``): what the learner and the environment
compute, the horizon, the checkpoints, the seed chunk's key and the grid points'
params. A chunk is reused only under that fingerprint; one written under another
configuration (a changed grid, set, noise family, ...) is recomputed, never
relabelled, whether or not ``chunks/study.json`` (the folder's stamp: a changed study
file is refused) is there. A damaged chunk file is an error naming it.
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import jax
import numpy as np

import jaxpriv
from jaxpriv import _resume, plot, sim
from jaxpriv.experiments._outputs import mean_se, write_settings, write_table
from jaxpriv.experiments.registry import Component
from jaxpriv.experiments.study_file import Study, load_study, parse_study

__all__ = ["Component", "Study", "StudyResult", "load_study", "parse_study", "run_study"]


class StudyResult(NamedTuple):
    """What ``run_study`` returns.

    Attributes:
      study: the parsed study.
      out: the output folder.
      files: name -> path of the five outputs.
      regret: ``[G, S, m]``, regret at the checkpoints.
      summary: the rows of ``summary.csv``.
      resumed: the number of chunks found on disk and not recomputed.
      computed: the number of chunks computed by this call.
    """

    study: Study
    out: Path
    files: dict[str, Path]
    regret: np.ndarray
    summary: list[dict[str, Any]]
    resumed: int
    computed: int


FIELDS = ("regret", "loss", "best", "gap", "nonfinite_inputs", "nonfinite_steps")

#: A unit of work: ``(grid block, seed chunk)``.
Unit = tuple[int, int]


# --- the chunks: keys, params, fingerprints, files -----------------------------------------------------------


def _fingerprint(study: Study) -> str:
    """The folder's stamp: a digest of the study file's contents and jaxpriv's version."""
    text = json.dumps({"study": study.raw, "jaxpriv": jaxpriv.__version__}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def _block_params(study: Study, block: int) -> Any:
    """The params of grid block ``block`` (``grid_chunk`` points; the last padded by repeating its last point)."""
    axes, size = sim.grid_axes(study.params, allow_grid=True)
    if not size:
        return study.params
    start = block * study.grid_chunk
    idx = np.minimum(np.arange(start, start + study.grid_chunk), size - 1)
    return _take(study.params, axes, idx)


def _take(params: Any, axes: Any, idx: np.ndarray) -> Any:
    """``params`` at grid index (or indices) ``idx``: swept leaves (axis 0) indexed, the others as they are."""
    return jax.tree.map(lambda leaf, axis: leaf if axis is None else leaf[idx], params, axes)


def _run_chunk(study: Study, block: int, chunk: int) -> dict[str, np.ndarray]:
    """Run grid block ``block`` on seed chunk ``chunk``: the ``Result``'s fields, ``[grid_chunk, chunk, ...]``."""
    key = _chunk_key(study, chunk)
    params = _block_params(study, block)
    r = sim.sweep(study.learner, study.env, params, key, study.horizon, study.chunk, study.checkpoints)
    out = {}
    for name in FIELDS:
        value = getattr(r, name)
        if value is None:
            continue
        value = np.asarray(value)
        if not study.shape:  # no grid: add the grid axis
            value = value[None]
        out[name] = value
    return out


def _chunk_key(study: Study, chunk: int) -> Any:
    """The base key of seed chunk ``chunk``: ``fold_in(key(seed), chunk)``."""
    return jax.random.fold_in(jax.random.key(study.seed), chunk)


def _chunk_fingerprint(study: Study, block: int, chunk: int, code: tuple[str, str]) -> dict[str, Any]:
    """What chunk file ``(block, chunk)`` must match to be reused (``jaxpriv._resume.fingerprint``).

    The configuration (what the components compute, horizon, checkpoints), the seed
    chunk's key, the params of the grid points the block holds (their digest, and their
    values readably under ``grid points``), so that a chunk is never read under another
    grid or another study, with or without ``chunks/study.json``.
    """
    params = _block_params(study, block)
    axes, size = sim.grid_axes(params, allow_grid=True)
    fp = _resume.fingerprint(
        study.learner, study.env, horizon=study.horizon, seeds=study.chunk, chunk=None, segment=None,
        checkpoints=study.checkpoints, keys=_chunk_key(study, chunk), params=params, axes=axes if size else None,
        code=code,
    )  # fmt: skip
    start = block * study.grid_chunk
    idx = np.minimum(np.arange(start, start + study.grid_chunk), study.size - 1)
    fp["grid points"] = {k: np.asarray(v)[idx].tolist() for k, v in study.grid.items()}
    return fp


def _read_chunk(path: Path, fingerprint: dict[str, Any], chunks_dir: Path) -> dict[str, np.ndarray] | None:
    """A finished chunk's arrays, or ``None`` when the file holds another configuration (recompute it).

    Raises:
      ValueError: the file is truncated or corrupted (named, with how to start over).
    """
    remedy = f"delete it to recompute that chunk (or delete {chunks_dir} to start the study over)"
    try:
        meta, arrays = _resume.read(path, remedy)
    except _resume.OtherFormat as err:
        print(f"{err.args[0].split(';')[0]}: recomputing it")
        return None
    wrong = _resume.differences(meta.get("fingerprint", {}), fingerprint)
    if wrong:
        print(f"{path} holds another configuration ({'; '.join(wrong)}): recomputing it")
        return None
    if "regret" not in arrays:
        raise ValueError(f"{path} holds no regret array; {remedy}")
    return arrays


def _check_out(out: Path) -> Path:
    """The output folder: refused (``ValueError`` naming ``out``) when it is a file, under a file or read-only."""
    if out.exists() and not out.is_dir():
        raise ValueError(f"out must be a folder, got the file {out}")
    try:
        (out / "chunks").mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise ValueError(f"out={str(out)!r} must be a folder, but a part of that path is a file") from None
    except OSError as err:
        raise ValueError(f"out={str(out)!r}: cannot create the folder ({err.strerror or err})") from None
    _resume.check_writable(out / "chunks" / "study.json", "out")
    return out


def _check_stamp(stamp: Path, fingerprint: str, out: Path) -> None:
    """Refuse a folder whose stamp names another study; a damaged stamp leaves every chunk to its own check."""
    if not stamp.exists():
        return
    try:
        stamped = json.loads(stamp.read_text()).get("fingerprint")
    except (ValueError, AttributeError, OSError):
        return  # a damaged stamp: every chunk is checked on its own
    if stamped != fingerprint:
        raise ValueError(
            f"{out} holds chunks of a different study (the file or jaxpriv changed since): "
            f"delete {stamp.parent} or choose another --out"
        )


def _finished_chunks(
    study: Study, units: list[Unit], files: dict[Unit, Path], chunks_dir: Path
) -> tuple[dict[Unit, dict[str, np.ndarray]], dict[Unit, dict[str, Any]]]:
    """``(arrays of the chunks on disk that match their fingerprint, the fingerprint of every unit)``."""
    axes, size = sim.grid_axes(study.params, allow_grid=True)
    code = _resume.computation(study.learner, study.env, study.params, axes if size else None)
    prints = {u: _chunk_fingerprint(study, *u, code) for u in units}
    parts: dict[Unit, dict[str, np.ndarray]] = {}
    for u in units:
        if files[u].exists():
            arrays = _read_chunk(files[u], prints[u], chunks_dir)
            if arrays is not None:
                parts[u] = arrays
    return parts, prints


def _assemble(
    study: Study, parts: dict[Unit, dict[str, np.ndarray]], blocks: int, n_chunks: int
) -> dict[str, np.ndarray]:
    """``[G, S, ...]`` arrays from the chunks (dropping the padding of the last grid block)."""
    arrays = {}
    for name in parts[(0, 0)]:
        rows = [np.concatenate([parts[(b, c)][name] for c in range(n_chunks)], axis=1) for b in range(blocks)]
        arrays[name] = np.concatenate(rows, axis=0)[: study.size]
    return arrays


# --- running -------------------------------------------------------------------------------------------------


def run_study(
    path: str | Path,
    out: str | Path | None = None,
    progress: bool = True,
    after_chunk: Callable[[int], None] | None = None,
) -> StudyResult:
    """Run a study file; resume from the chunks already in ``out``.

    Args:
      path: the study file (TOML).
      out: the output folder (default ``jaxpriv-out/<file stem>``: the same command resumes).
      progress: show a progress bar (tqdm, on stderr) advancing per chunk.
      after_chunk: called with the number of chunks finished so far after each chunk is saved
        (a hook for tests; raising from it interrupts the run like a Ctrl-C).

    Returns:
      A ``StudyResult``.

    Raises:
      ValueError: a bad study file or path (before anything compiles), an output folder
        that is a file, lies under one or cannot be written, an output folder holding
        chunks of a different study, or a damaged chunk file (named).
    """
    from tqdm.auto import tqdm

    study = load_study(path)
    out = _check_out(Path(out) if out else Path("jaxpriv-out") / study.source.stem)
    chunks_dir = out / "chunks"
    stamp = chunks_dir / "study.json"
    fingerprint = _fingerprint(study)
    _check_stamp(stamp, fingerprint, out)

    blocks = -(-study.size // study.grid_chunk)
    n_chunks = study.seeds // study.chunk
    units = [(b, c) for c in range(n_chunks) for b in range(blocks)]
    files = {u: chunks_dir / f"g{u[0]:04d}_s{u[1]:04d}.npz" for u in units}
    # Each chunk file carries the fingerprint of its configuration and grid points: checked before anything runs.
    parts, prints = _finished_chunks(study, units, files, chunks_dir)
    stamp.write_text(json.dumps({"fingerprint": fingerprint, "study": study.raw}, indent=2, default=str))
    done = len(parts)
    if done:
        print(f"resuming {study.name}: {done} of {len(units)} chunks found in {chunks_dir}, not recomputed")
    start = time.perf_counter()
    computed = 0
    bar = tqdm(total=len(units), initial=done, desc=study.name, unit="chunk", disable=not progress, file=sys.stderr)
    try:
        for unit in units:
            if unit in parts:
                continue
            arrays = _run_chunk(study, *unit)
            _resume.write(files[unit], {"fingerprint": prints[unit], "unit": list(unit)}, arrays)
            parts[unit] = arrays
            computed += 1
            bar.update(1)
            if after_chunk is not None:
                after_chunk(done + computed)
    finally:
        bar.close()
    seconds = time.perf_counter() - start
    return _write_outputs(study, out, _assemble(study, parts, blocks, n_chunks), done, computed, seconds)


# --- the outputs ---------------------------------------------------------------------------------------------


def _label(study: Study, g: int, keys: tuple[str, ...] | None = None) -> str:
    """Grid point ``g`` as ``"epsilon=1, lipschitz=0.5"`` (over ``keys``; default: every swept key)."""
    keys = tuple(study.grid) if keys is None else keys
    return ", ".join(f"{k.split('.')[-1]}={_fmt(study.grid[k][g])}" for k in keys) or study.learner_name


def _fmt(v: Any) -> str:
    """A grid value as text: ``"inf"``, the ``%g`` form, or ``"[a b c]"`` for a vector."""
    v = np.asarray(v)
    if v.ndim:
        return "[" + " ".join(f"{x:g}" for x in v.ravel()) + "]"
    return "inf" if np.isinf(v) else f"{float(v):g}"


def _bounds(study: Study) -> np.ndarray | None:
    """The learner's regret bound at every grid point (``nan`` where it has none), or ``None`` when none has one."""
    if study.learner_bound is None:
        return None
    axes, size = sim.grid_axes(study.params, allow_grid=True)
    values = []
    for g in range(study.size):
        point = _take(study.params, axes, np.asarray(g)) if size else study.params
        try:
            b = study.learner_bound(point.learner, point.env, study.learner_static, study.horizon, study.constraint)
        except (ValueError, TypeError, AttributeError):
            b = None
        values.append(np.nan if b is None else b)
    values = np.asarray(values, np.float64)
    return None if np.all(np.isnan(values)) else values


def _summary_rows(study: Study, mean: np.ndarray, se: np.ndarray, bounds: np.ndarray | None) -> list[dict[str, Any]]:
    """The rows of ``summary.csv``: the grid point, its swept values, final regret mean and SE, the bound."""
    rows = []
    for g in range(study.size):
        row: dict[str, Any] = {"grid_point": g}
        for key, values in study.grid.items():
            row[key] = _fmt(values[g])
        row["final_regret_mean"] = float(mean[g])
        row["final_regret_se"] = float(se[g])
        row["bound"] = "" if bounds is None or np.isnan(bounds[g]) else float(bounds[g])
        rows.append(row)
    return rows


def _settings(
    study: Study, arrays: dict[str, np.ndarray], grid_arrays: dict[str, np.ndarray], resumed: int, computed: int,
    seconds: float, warning: str | None, rows: list[dict[str, Any]],
) -> dict[str, Any]:  # fmt: skip
    """``settings.json`` (less the versions, which ``write_settings`` adds)."""
    axis_names = {
        name: (["grid", "seed", "checkpoint"] if arrays[name].ndim == 3 else ["grid", "seed"]) for name in arrays
    }
    return {
        "command": "sweep",
        "study": study.name,
        "file": str(study.source),
        "contents": study.raw,
        "learner": study.learner_name,
        "env": study.env_name,
        "horizon": study.horizon,
        "seeds": study.seeds,
        "seed": study.seed,
        "chunk": study.chunk,
        "grid_chunk": study.grid_chunk,
        "keys": "seed j of chunk c (chunk = seeds // chunk size) uses split(fold_in(key(seed), c), chunk)[j], "
        "the same for every grid point (common random numbers)",
        "grid_shape": list(study.shape),
        "grid_axes": [list(a) for a in study.axes],
        "grid": {k: np.asarray(v).tolist() for k, v in study.grid.items()},
        "arrays": {
            "steps": ["checkpoint"],
            **axis_names,
            **{k: ["grid"] + (["dim"] if np.ndim(v) > 1 else []) for k, v in grid_arrays.items()},
        },
        "grid_order": "row-major over grid_axes (the last axis varies fastest)",
        "chunks": {"resumed": resumed, "computed": computed},
        "seconds": seconds,
        "nonfinite_warning": warning,
        "summary": rows,
    }


def _write_outputs(
    study: Study, out: Path, arrays: dict[str, np.ndarray], resumed: int, computed: int, seconds: float
) -> StudyResult:
    """Write the five outputs from the assembled ``[G, S, ...]`` arrays."""
    steps = np.asarray(study.checkpoints)
    regret = arrays["regret"]
    mean, se = mean_se(regret[..., -1], axis=1)  # final regret over the seeds
    bounds = _bounds(study)
    rows = _summary_rows(study, mean, se, bounds)

    files = {
        "npz": out / "results.npz",
        "json": out / "settings.json",
        "csv": out / "summary.csv",
        "curves": out / "regret.png",
        "final": out / "final_regret.png",
    }
    grid_arrays = {f"grid:{k}": np.asarray(v, np.float32) for k, v in study.grid.items()}
    np.savez_compressed(files["npz"], steps=steps, **arrays, **grid_arrays)
    write_table(out, files["csv"].name, rows)

    result = sim.Result(steps, regret, arrays["loss"], arrays["best"], arrays.get("gap"),
                        arrays.get("nonfinite_inputs"), arrays.get("nonfinite_steps"))  # fmt: skip
    warning = result.nonfinite_warning()
    if warning:
        print(f"{study.name}: {warning}", file=sys.stderr)
    settings = _settings(study, arrays, grid_arrays, resumed, computed, seconds, warning, rows)
    write_settings(out, settings, files["json"].name)
    _plot_curves(study, steps, regret, files["curves"])
    _plot_final(study, mean, se, bounds, files["final"])
    return StudyResult(study, out, files, regret, rows, resumed, computed)


def _plot_curves(study: Study, steps: np.ndarray, regret: np.ndarray, path: Path) -> None:
    """``regret.png``: regret curves with 95% bands for up to 10 grid points, evenly spread."""
    shown = np.unique(np.linspace(0, study.size - 1, min(study.size, 10)).round().astype(int))
    curves = {_label(study, int(g)): (steps, regret[g]) for g in shown}
    loglog = bool(np.all(steps > 0) and steps[-1] >= 100)
    title = f"{study.name}: {study.learner_name}, {study.seeds} seeds (mean, 95% band)"
    import matplotlib.pyplot as plt

    fig = plot.regret_curves(curves, None, title=title, loglog=loglog)
    fig.savefig(path)
    plt.close(fig)


def _plot_final(study: Study, mean: np.ndarray, se: np.ndarray, bounds: np.ndarray | None, path: Path) -> None:
    """``final_regret.png``: final regret against the first swept scalar axis (one line per other point)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.4, 4.4), dpi=120)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    scalar_axes = [a for a in study.axes if np.ndim(study.grid[a[0]]) == 1]
    if not scalar_axes:  # nothing swept (or only vector leaves): one bar per grid point
        ax.errorbar(np.arange(study.size), mean, yerr=1.96 * se, fmt="o", capsize=3)
        ax.set_xticks(np.arange(study.size), [_label(study, g) for g in range(study.size)], fontsize=7)
        ax.set_xlabel("grid point")
    else:
        x_axis = scalar_axes[0]
        x_key = x_axis[0]
        x = study.grid[x_key]
        others = [a for a in study.axes if a != x_axis]
        other_keys = tuple(k for a in others for k in a)
        groups: dict[str, list[int]] = {}
        for g in range(study.size):
            groups.setdefault(_label(study, g, other_keys) if other_keys else "", []).append(g)
        finite = np.isfinite(x)
        for label, idx in groups.items():
            idx = np.asarray(idx)
            keep = idx[finite[idx]]
            order = keep[np.argsort(x[keep])]
            line = ax.errorbar(x[order], mean[order], yerr=1.96 * se[order], marker="o", ms=3, capsize=2,
                               label=label or "measured")  # fmt: skip
            color = line[0].get_color()
            for g in idx[~finite[idx]]:
                ax.axhline(mean[g], color=color, ls=":", lw=1, label=f"{label} {x_key.split('.')[-1]}=inf".strip())
            if bounds is not None and np.any(np.isfinite(bounds[order])):
                ax.plot(x[order], bounds[order], "--", color=color, lw=1, label=f"{label} bound".strip())
        xs = x[finite]
        if xs.size and np.all(xs > 0) and xs.max() / xs.min() >= 10:
            ax.set_xscale("log")
        ys = np.concatenate([mean, bounds[np.isfinite(bounds)] if bounds is not None else []])
        if np.all(ys > 0) and ys.max() / max(ys.min(), 1e-12) >= 10:
            ax.set_yscale("log")
        ax.set_xlabel(x_key)
        ax.legend(fontsize=7)
    ax.set_ylabel(f"regret at T={study.horizon} (mean ± 1.96 SE)")
    ax.set_title(f"{study.name}: {study.learner_name} on {study.env_name}", fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)
