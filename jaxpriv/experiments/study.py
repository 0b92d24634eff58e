"""Sweeps from a TOML study file: ``jaxpriv sweep study.toml``; the runner.

The study file's format, its parsing and its grid are in ``jaxpriv.experiments.study_file``
(``load_study``, ``parse_study``, ``Study``); the names a file may use are in
``jaxpriv.experiments.registry``. This module runs a ``Study``: each learner on the flattened
product grid of ``G`` points (in blocks of ``grid_chunk`` points) is one ``jaxpriv.sweep`` call
with the study's ``seed`` as its key, ``seeds``, ``chunk`` and ``segment`` as the file gives them
(one compiled function for every block: only traced values change between them). Seed ``j``
uses ``split(key(seed), seeds)[j]`` at every grid point (common random numbers), so a learner's
numbers are bit for bit those of ``jaxpriv.sweep(learner, env, params, seed, horizon, seeds,
checkpoints, chunk, segment=segment)``.

Outputs in the output folder: ``results.nc`` (the labelled dataset, ``jaxpriv.tidy.to_xarray``: select by
budget, learner, seed and step, ``jaxpriv.open_results(out).regret.sel(epsilon=1.0)``), ``summary_long.csv`` (one
row per learner, grid point and checkpoint: mean, SE, quantiles; ``jaxpriv.tidy.to_dataframe``),
``results.npz`` (the same arrays, positional; their axes are named in the JSON), ``settings.json``
(the study, the grid, versions, timings, and ``"private"``: whether each learner's stated guarantee holds,
``false`` for a non-private learner or an opt-out built with ``private = false``; ``"sampler_delta_floor"``: the
δ the float32 samplers' bounded support adds to each learner's guarantee at each grid point, ``null`` where no
tree of those samplers is involved, with ``"sampler_delta_max"`` and ``"sampler_support"``),
``summary.csv`` (one row per grid point: mean and standard error of the final
regret, the theorem's bound where one exists), ``regret.png`` (regret curves
with 95% bands, ``jaxpriv.plot.regret_vs_t``) and ``final_regret.png`` (final regret
against the first swept parameter, theory dashed, ``jaxpriv.plot.final_vs_budget``);
the JSON and the table through ``jaxpriv.experiments._outputs``.

A comparison study (``[[learners]]``, see ``jaxpriv.experiments.study_file``) runs every
learner on the same grid and the same seed keys: every learner's sweep has the key ``seed``, so
learner ``a`` and learner ``b`` see the same environment draws
at every grid point (common random numbers). Its arrays carry a leading learner axis
(``[L, G, S, ...]``, the labels in ``learners``); ``summary.csv`` has a ``learner`` column;
``regret.png`` has one panel per grid point shown (up to six, evenly spread) with one line
per learner; ``final_regret.png`` one line per learner against the first shared axis, each
with its theorem's bound dashed where one exists. With ``reference = "<label>"`` it also
writes ``paired.csv`` (per learner and grid point: the mean of the per-seed differences of
final regret against the reference, their standard error, ``difference_se``, and for
comparison the unpaired ``sqrt(SE_a² + SE_ref²)``, ``unpaired_se``; the ratio of the means, ``ratio``, with its
delta-method SE on the paired runs, ``ratio_se``) and ``paired.png``
(``jaxpriv.plot.paired_difference`` against ``t``, paired-SE bands). The paired SE is the
right one: the learners share seeds, so their regrets are correlated. A learner that
depends on no swept value runs once and is repeated at every grid point.

A file with ``horizons`` or ``[sizes]`` writes ``results.nc`` and ``summary_long.csv`` in each run's folder
(``T<horizon>``, ``<name><value>``).
Resuming is ``jaxpriv.sweep``'s own: the runner is a loop over ``jaxpriv.sweep(..., save=...)``, each sweep
saving to ``sweeps/g<block>.sweep.npz`` (``l<learner>_g<block>`` in a comparison; written after every segment,
with the fingerprint the engine checks), and no other file. Running the same study into the same folder again
resumes an interrupted sweep where it stopped, with the same numbers, and reads a finished sweep back from its
file without running anything (the engine returns it after checking its fingerprint: what the learner and the
environment compute, the horizon, seeds, chunk, segment, checkpoints, the seed keys, the block's params, and an
episode simulator with its options). A file written under another configuration (a changed grid, set, noise
family, learner list, ...) is refused by ``jaxpriv.sweep``, naming the file and what differs, never relabelled.
A damaged file is an error naming it. A folder holding ``chunks/`` (the study runner before issue 37, whose
per-chunk keys gave other numbers) is refused.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import jax
import numpy as np

from jaxpriv import mechanisms, sim, stats
from jaxpriv._base import spec_of
from jaxpriv.experiments._outputs import mean_se, relative_path, write_settings, write_table
from jaxpriv.experiments._progress import StudyProgress
from jaxpriv.experiments._tables import format_table, once_rows, roundoff_tolerance, within_roundoff
from jaxpriv.experiments.figures import (
    Data,
    _curves_figure,
    _final_figure,
    _paired_figure,
    draw,
    fmt,
    regret_vs_horizon,
)
from jaxpriv.experiments.registry import Component
from jaxpriv.experiments.study_file import Study, StudyLearner, at_horizon, at_size, load_study, parse_study

__all__ = [
    "SHIPPED",
    "Component",
    "Study",
    "StudyResult",
    "load_study",
    "parse_study",
    "resolve_study",
    "run_study",
    "shipped_studies",
    "write_tidy",
]

#: The shipped study files (package data: ``jaxpriv/experiments/studies/*.toml``), run by name.
SHIPPED = Path(__file__).parent / "studies"


def shipped_studies() -> dict[str, Path]:
    """The shipped study files by name (the file's stem), sorted: ``jaxpriv sweep --list``."""
    return {p.stem: p for p in sorted(SHIPPED.glob("*.toml"))}


def describe_shipped(path: Path) -> str:
    """A shipped file's one-line description: its ``description`` key, else its first comment line."""
    lines = [line.strip() for line in path.read_text(encoding="utf-8").splitlines()]
    for line in lines:
        if line.startswith("description"):
            return line.split("=", 1)[1].strip().strip('"')
    return next((line.lstrip("# ").strip() for line in lines if line.startswith("#")), "")


def resolve_study(name: str | Path) -> Path:
    """A study argument as a path: an existing file as it is, else the shipped study of that name.

    Raises:
      ValueError: neither a file nor a shipped name (naming the shipped ones and the closest).
    """
    path = Path(name)
    if path.is_file() or path.suffix == ".toml" or len(path.parts) > 1:
        return path
    shipped = shipped_studies()
    if str(name) in shipped:  # a shipped name wins over a folder of that name in the working directory
        return shipped[str(name)]
    if path.exists():
        return path  # a folder: load_study refuses it, naming it
    import difflib

    close = difflib.get_close_matches(str(name), list(shipped), n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    raise ValueError(
        f"{name!r} is neither a study file nor a shipped study{hint}; shipped: {list(shipped)} (jaxpriv sweep --list)"
    )


class StudyResult(NamedTuple):
    """What ``run_study`` returns.

    Attributes:
      study: the parsed study.
      out: the output folder.
      files: name -> path of the outputs (seven; nine with a comparison's ``reference``; ``"nc"``: ``results.nc``,
        ``"long"``: ``summary_long.csv``).
      regret: ``[G, S, m]``, regret at the checkpoints (``[L, G, S, m]`` for a comparison).
      summary: the rows of ``summary.csv``.
      resumed: the number of sweeps (one per learner and grid block) found finished on disk and not rerun
        (``jaxpriv.sweep`` returned them from their save files without running a segment).
      computed: the number of sweeps run by this call (one resumed from its save file included).
      arrays: every array of ``results.npz`` by name (``regret``, ``loss``, ``best``, ... with the
        leading axes of ``regret``).
      paired: the rows of ``paired.csv`` (a comparison with a reference), else ``None``.
      figures: name -> the ``matplotlib.figure.Figure`` saved (``"curves"``, ``"final"``, ``"paired"``, and each
        ``[[figures]]`` entry's by its file's stem).
      tables: the recipes' tables by the file's stem (``{"knee": [...], "price_of_privacy": [...]}``), and for
        a file with ``horizons`` or ``[sizes]`` ``"slopes"`` (``slopes.csv``).
      horizons: a file with ``horizons``: each horizon's ``StudyResult`` (written in ``out/T<horizon>``), else ``None``.
      sizes: a file with ``[sizes]``: each value's ``StudyResult`` (written in ``out/<name><value>``), else ``None``.
    """

    study: Study
    out: Path
    files: dict[str, Path]
    regret: np.ndarray
    summary: list[dict[str, Any]]
    resumed: int
    computed: int
    arrays: dict[str, np.ndarray] | None = None
    paired: list[dict[str, Any]] | None = None
    figures: dict[str, Any] | None = None
    tables: dict[str, list[dict[str, Any]]] | None = None
    horizons: dict[int, StudyResult] | None = None
    sizes: dict[int, StudyResult] | None = None

    def results(self) -> dict[str, sim.Result]:
        """Each learner's ``Result`` (``[G, S, m]`` arrays), by label."""
        arrays = self.arrays or {"regret": self.regret}
        steps = np.asarray(self.study.checkpoints, np.int32)
        out = {}
        for i, label in enumerate(self.study.labels):
            mine = {k: (v[i] if self.study.compare else v) for k, v in arrays.items() if k in FIELDS}
            private = spec_of(self.study.learners[i].learner).private
            out[label] = sim.Result(steps, **{k: mine.get(k) for k in FIELDS}, private=private)
        return out

    def table(self) -> str:
        """The table ``jaxpriv sweep`` prints: final regret (mean ± SE, the bound) per row of ``summary.csv`` (a
        learner without a swept value once), the paired differences (``0 (within float32 round-off)`` where they
        are: the rule is in the guide's study files page), the recipes' tables. ``print(res)`` prints it, and a
        notebook shows it (``repr``)."""
        return format_table(self)

    def __str__(self) -> str:
        return self.table()

    def __repr__(self) -> str:  # a notebook cell ending in run_study(...) shows the table, not the arrays
        return self.table()


FIELDS = ("regret", "loss", "best", "gap", "nonfinite_inputs", "nonfinite_steps")

#: A unit of work, one ``jaxpriv.sweep`` call: ``(learner, grid block)``.
Unit = tuple[int, int]


# --- the sweeps: one per learner and grid block, saved and resumed by the engine ------------------------------


def _arm_size(study: Study, arm: StudyLearner) -> int:
    """The grid points ``arm`` runs: ``G``, or 1 when it depends on no swept value."""
    return study.size if arm.swept else 1


def _blocks(study: Study, arm: StudyLearner) -> int:
    """The number of grid blocks of ``arm``."""
    return -(-_arm_size(study, arm) // study.grid_chunk)


def _block_params(study: Study, arm: StudyLearner, block: int) -> Any:
    """The params of grid block ``block`` (``grid_chunk`` points; the last padded by repeating its last point)."""
    axes, size = sim.grid_axes(arm.params, allow_grid=True, ndims=sim.spec_ndims(arm.learner, study.env))
    if not size:
        return arm.params
    start = block * study.grid_chunk
    idx = np.minimum(np.arange(start, start + study.grid_chunk), size - 1)
    return _take(arm.params, axes, idx)


def _take(params: Any, axes: Any, idx: np.ndarray) -> Any:
    """``params`` at grid index (or indices) ``idx``: swept leaves (axis 0) indexed, the others as they are."""
    return jax.tree.map(lambda leaf, axis: leaf if axis is None else leaf[idx], params, axes)


def _run_sweep(study: Study, arm: StudyLearner, block: int, save: Path, progress: Callable) -> dict[str, np.ndarray]:
    """``jaxpriv.sweep`` of ``arm`` on grid block ``block`` with the study's seed as its key, saving to ``save``
    (it resumes an interrupted sweep from it, and returns a finished one from it, after checking its fingerprint):
    the ``Result``'s fields ``[points, seeds, ...]``."""
    steps = arm.simulator == "steps"  # else its exact episode-level simulator: one compiled call, regret only
    r = sim.sweep(
        arm.learner, study.env, _block_params(study, arm, block), study.seed, study.horizon, study.seeds,
        study.checkpoints, study.chunk, segment=study.segment if steps else None, save=save, progress=progress,
        simulator=arm.simulator, simulator_options=arm.simulator_options,
    )  # fmt: skip
    out = {}
    for name in FIELDS:
        value = getattr(r, name, None)
        if value is None:
            continue
        value = np.asarray(value)
        if not arm.swept:  # no grid: add the grid axis
            value = value[None]
        out[name] = value
    return out


def _check_out(out: Path) -> Path:
    """The output folder: refused (``ValueError`` naming ``out``) when it is a file, under a file or read-only,
    or when it holds the chunk files of the study runner before issue 37 (per-chunk keys: other numbers)."""
    if out.exists() and not out.is_dir():
        raise ValueError(f"out must be a folder, got the file {out}")
    old = out / "chunks"
    if old.is_dir() and ((old / "study.json").exists() or any(old.glob("*.npz"))):
        raise ValueError(
            f"{out} holds the chunk files of an older jaxpriv's study runner ({old}: per-chunk keys, other numbers "
            f"than jaxpriv.sweep's); delete {old} to run the study again, or choose another --out"
        )
    try:
        (out / "sweeps").mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise ValueError(f"out={str(out)!r} must be a folder, but a part of that path is a file") from None
    except OSError as err:
        raise ValueError(f"out={str(out)!r}: cannot create the folder ({err.strerror or err})") from None
    probe = out / "sweeps" / f".probe.{os.getpid()}"
    try:
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as err:
        raise ValueError(f"out={str(out)!r}: cannot write a file in {probe.parent} ({err.strerror or err})") from None
    return out


def _assemble(study: Study, parts: dict[Unit, dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """``[L, G, S, ...]`` arrays from the sweeps (dropping the padding of the last grid block; a learner that
    depends on no swept value repeated at every grid point)."""
    per_arm = []
    for i, arm in enumerate(study.learners):
        blocks = [parts[(i, b)] for b in range(_blocks(study, arm))]
        arrays = {}
        for name in blocks[0]:
            value = np.concatenate([p[name] for p in blocks], axis=0)[: _arm_size(study, arm)]
            arrays[name] = value if arm.swept else np.repeat(value, study.size, axis=0)
        per_arm.append(arrays)
    names = [n for n in per_arm[0] if all(n in a for a in per_arm)]
    return {n: np.stack([a[n] for a in per_arm]) for n in names}


# --- running -------------------------------------------------------------------------------------------------


def run_study(
    path: str | Path,
    out: str | Path | None = None,
    progress: bool = True,
    after_segment: Callable[[int], None] | None = None,
    smoke: bool = False,
    edit: Callable[[dict], dict] | None = None,
) -> StudyResult:
    """Run a study file; resume from the sweeps already in ``out``.

    Every learner (and grid block) is one ``jaxpriv.sweep`` with the study's ``seed`` as its key and
    ``save=<out>/sweeps/g<block>.sweep.npz`` (``l<learner>_g<block>`` in a comparison): an interrupted sweep
    resumes from that file, and a finished one is read back from it and not rerun.

    Args:
      path: the study file (TOML).
      out: the output folder (default ``jaxpriv-out/<file stem>``: the same command resumes).
      progress: show a progress bar (tqdm, on stderr) advancing per compiled segment, in seed-steps: each sweep's
        compile phase shown as such with its time, the rate and the time left over running time only, and after
        the first segment an estimate of the running time (``jaxpriv.experiments._progress``).
      after_segment: called after each compiled segment ``jaxpriv.sweep`` runs (its ``progress``), with the number
        run so far by this call (a hook for tests; raising from it interrupts the run like a Ctrl-C: the engine's
        save file holds the state after the segment before, or after the chunk before for a one-segment chunk).
      smoke: run the file's ``[smoke]`` scale (default folder ``jaxpriv-out/<file stem>-smoke``).
      edit: a function of the file's contents (after ``[smoke]``) returning the contents to run (``load_study``).

    A file with ``horizons`` runs the study once per horizon (the same seed: one sweep per learner and horizon),
    each into ``out/T<horizon>``, and writes ``summary.csv`` (a ``horizon`` column), ``slopes.csv`` (per learner
    and grid point: the log-log slope of the mean final regret against ``T`` and the slope against ``ln T``,
    each with its standard error over the seeds: the horizons share the seeds) and ``regret_vs_horizon.png``.
    A file with ``[sizes]`` runs it once per value of the size (``study_file.at_size``), each into
    ``out/<name><value>``, and writes ``summary.csv`` (a ``<name>`` column), ``slopes.csv`` (the log-log slope of
    the mean final regret against the size and the slope per unit of the size, with SEs; with a ``reference``,
    rows ``"<label> - <reference>"`` for the slopes of the paired differences) and ``regret_vs_<name>.png``.

    Returns:
      A ``StudyResult``.

    Raises:
      ValueError: a bad study file or path (before anything compiles), an output folder
        that is a file, lies under one or cannot be written, an output folder holding
        a sweep of another configuration or the chunk files of an older jaxpriv, or a damaged
        save file (named).
    """
    study = load_study(resolve_study(path), smoke, edit)
    stem = study.source.stem + ("-smoke" if smoke else "")
    out = Path(out) if out else Path("jaxpriv-out") / stem
    if study.sizes is not None:
        _check_out(out)
        by_size = {
            v: _run(at_size(study, v), _check_out(out / f"{study.sizes.name}{v}"), progress, after_segment)
            for v in study.sizes.values
        }
        return _write_sizes(study, out, by_size)
    if not study.horizons:
        return _run(study, _check_out(out), progress, after_segment)
    _check_out(out)
    results = {
        h: _run(at_horizon(study, h), _check_out(out / f"T{h}"), progress, after_segment) for h in study.horizons
    }
    return _write_horizons(study, out, results)


def _run(study: Study, out: Path, progress: bool, after_segment: Callable[[int], None] | None) -> StudyResult:
    """``run_study`` of one horizon into ``out``."""
    sweeps = out / "sweeps"
    units = [(i, b) for i, arm in enumerate(study.learners) for b in range(_blocks(study, arm))]
    prefix = (lambda i: f"l{i:02d}_") if study.compare else (lambda i: "")
    saves = {u: sweeps / f"{prefix(u[0])}g{u[1]:04d}.sweep.npz" for u in units}
    found = sum(1 for u in units if saves[u].exists())  # finished or interrupted: jaxpriv.sweep tells which
    per_unit = study.seeds * study.horizon
    # compiling shown as such, then a bar whose rate and time left count running only (jaxpriv.experiments._progress)
    bar = StudyProgress(study.name, len(units) * per_unit, progress, after_segment)

    start = time.perf_counter()
    parts: dict[Unit, dict[str, np.ndarray]] = {}
    done = computed = 0
    try:
        for unit in units:
            bar.start_sweep()
            before = bar.segments
            parts[unit] = _run_sweep(study, study.learners[unit[0]], unit[1], saves[unit], bar)
            if bar.segments == before:  # nothing ran: jaxpriv.sweep returned the finished sweep it saved
                done += 1
                bar.skip(per_unit)
            else:
                computed += 1
    finally:
        bar.close()
    if found:
        print(
            f"resumed {study.name}: {done} of {len(units)} sweeps found finished in {sweeps}, not recomputed"
            + (f"; {found - done} interrupted, resumed from jaxpriv.sweep's save file" if found > done else "")
        )
    seconds = time.perf_counter() - start
    return _write_outputs(study, out, _assemble(study, parts), done, computed, seconds)


# --- the outputs ---------------------------------------------------------------------------------------------


def _bounds(study: Study, arm: StudyLearner) -> np.ndarray | None:
    """``arm``'s regret bound at every grid point (``nan`` where it has none), or ``None`` when none has one."""
    if arm.bound is None:
        return None
    axes, size = sim.grid_axes(arm.params, allow_grid=True, ndims=sim.spec_ndims(arm.learner, study.env))
    values = []
    for g in range(study.size):
        point = _take(arm.params, axes, np.asarray(g)) if size else arm.params
        try:
            b = arm.bound(point.learner, point.env, arm.learner.spec, study.horizon)
        except (ValueError, TypeError, AttributeError):
            b = None
        values.append(np.nan if b is None else b)
    values = np.asarray(values, np.float64)
    return None if np.all(np.isnan(values)) else values


def _summary_rows(
    study: Study, mean: np.ndarray, se: np.ndarray, bounds: list[np.ndarray | None]
) -> list[dict[str, Any]]:
    """The rows of ``summary.csv``: (the learner,) the grid point, its swept values, final regret mean and SE, the
    bound. ``mean``, ``se``: ``[L, G]``."""
    rows = []
    for i, label in enumerate(study.labels):
        for g in range(study.size):
            row: dict[str, Any] = {"learner": label} if study.compare else {}
            row |= _guarantee(study, i)
            row["grid_point"] = g
            for key, values in study.grid.items():
                row[key] = fmt(values[g])
            row["final_regret_mean"] = float(mean[i, g])
            row["final_regret_se"] = float(se[i, g])
            b = bounds[i]
            row["bound"] = "" if b is None or np.isnan(b[g]) else float(b[g])
            rows.append(row)
    return rows


def _guarantee(study: Study, i: int) -> dict[str, str]:
    """``{"guarantee": ...}`` of learner ``i`` when some learner of the study states one, else ``{}``."""
    return {"guarantee": study.learners[i].guarantee} if any(a.guarantee for a in study.learners) else {}


def _paired_rows(study: Study, final: np.ndarray, loss: np.ndarray | None = None) -> list[dict[str, Any]] | None:
    """The rows of ``paired.csv`` from the final regret ``[L, G, S]``: each learner minus the reference.

    ``difference_se`` is the paired standard error (of the per-seed differences; the learners share
    seed keys), ``unpaired_se`` the one that would treat them as independent, for comparison; ``within_roundoff``
    whether the difference is float32 round-off (``jaxpriv.experiments._tables``; ``loss``: the final cumulative
    losses ``[L, G, S]`` where recorded), with the tolerance of its largest seed, ``roundoff_tol``.
    """
    if study.reference is None:
        return None
    r = study.labels.index(study.reference)
    _, se = mean_se(final, axis=-1)
    rows = []
    for i, label in enumerate(study.labels):
        if i == r:
            continue
        diff, diff_se = stats.paired_difference(final[i], final[r], axis=-1)
        base = np.asarray(final[r], np.float64).mean(axis=-1)  # [G]
        ratio = np.asarray(final[i], np.float64).mean(axis=-1) / np.where(base > 0, base, np.nan)
        # the ratio's SE by the delta method on the paired runs: SE of mean(x - R·base) over mean(base)
        _, ratio_se = mean_se(np.asarray(final[i], np.float64) - ratio[:, None] * final[r], axis=-1)
        sums = () if loss is None else (loss[i], loss[r])
        roundoff = within_roundoff(final[i], final[r], study.horizon, *sums)  # [G]: a difference that is no effect
        tol = roundoff_tolerance(final[i], final[r], study.horizon, *sums).max(axis=-1)
        for g in range(study.size):
            row: dict[str, Any] = {"learner": label, **_guarantee(study, i), "reference": study.reference}
            row["grid_point"] = g
            for key, values in study.grid.items():
                row[key] = fmt(values[g])
            row["difference_mean"] = float(diff[g])
            row["difference_se"] = float(diff_se[g])
            row["unpaired_se"] = float(np.hypot(se[i, g], se[r, g]))
            row["ratio"] = float(ratio[g])
            row["ratio_se"] = float(ratio_se[g] / base[g]) if base[g] > 0 else float("nan")
            row["within_roundoff"] = bool(roundoff[g])
            row["roundoff_tol"] = float(tol[g])
            rows.append(row)
    return rows


def _learner_settings(arm: StudyLearner, sampler_floor: dict[str, Any] | None) -> dict[str, Any]:
    """A learner's entry of ``settings.json``: its label, name, static arguments (a mechanism by its name).

    ``sampler_floor``: its samplers' δ floor per grid point (``_sampler_floors``), or ``None``.
    """
    static = {k: (mechanisms.describe(v).name if k == "mechanism" else v) for k, v in arm.static.items()}
    entry = {"label": arm.label, "name": arm.name, "static": static, "axes": arm.axes, "swept": arm.swept}
    return entry | {"private": spec_of(arm.learner).private, "sampler_delta_floor": sampler_floor}


def _sampler_floors(study: Study) -> dict[str, Any]:
    """The samplers' δ floor of each learner at each grid point (``mechanisms.sampler_settings``, keyed by label).

    ``None`` for a learner whose noise does not come through a tree of the float32 samplers (FTAL,
    OGD, MI-OGD, the square-root factorization, BLT, ...); 1 at an infinite budget (no noise).
    """
    components = {arm.label: (arm.learner, arm.params.learner) for arm in study.learners}
    return mechanisms.sampler_settings(components, study.size)


def _settings(
    study: Study, arrays: dict[str, np.ndarray], grid_arrays: dict[str, np.ndarray], resumed: int, computed: int,
    seconds: float, warning: str | None, rows: list[dict[str, Any]],
) -> dict[str, Any]:  # fmt: skip
    """``settings.json`` (less the versions, which ``write_settings`` adds)."""
    floors = _sampler_floors(study)
    lead = ["learner"] if study.compare else []
    axis_names = {
        name: lead + (["grid", "seed", "checkpoint"] if arrays[name].ndim == 3 + len(lead) else ["grid", "seed"])
        for name in arrays
    }
    settings = {
        "command": "sweep",
        "study": study.name,
        "file": str(study.source),
        "contents": study.raw,
        "learner": study.learner_name if not study.compare else list(study.labels),
        # whether the learner's stated guarantee holds (Result.private): false for a non-private learner and
        # for an opt-out (unclipped rewards, an ablation) built with private = false; one per learner compared
        "private": [spec_of(arm.learner).private for arm in study.learners]
        if study.compare
        else spec_of(study.learners[0].learner).private,
        # the float32 samplers' bounded support: the δ it adds to each learner's guarantee at each grid point
        # (null where no tree of those samplers is involved), the stated δ every finite budget was checked
        # against before compiling, and the supports (docs/algorithms/mechanisms.md, "The samplers' tails")
        "sampler_delta_floor": [floors["floor"][arm.label] for arm in study.learners]
        if study.compare
        else floors["floor"][study.learners[0].label],
        "sampler_delta_max": floors["delta_max"],
        "sampler_support": floors["support"],
        "env": study.env_name,
        "horizon": study.horizon,
        "seeds": study.seeds,
        "seed": study.seed,
        "chunk": study.chunk,
        "grid_chunk": study.grid_chunk,
        "segment": study.segment,
        "keys": "seed j uses split(key(seed), seeds)[j], the keys of jaxpriv.sweep(key=seed, seeds=seeds): "
        "the same for every grid point (common random numbers)" + (" and every learner" if study.compare else ""),
        "grid_shape": list(study.shape),
        "grid_axes": [list(a) for a in study.axes],
        "grid": {k: np.asarray(v).tolist() for k, v in study.grid.items()},
        "arrays": {
            "steps": ["checkpoint"],
            **({"learners": ["learner"]} if study.compare else {}),
            **axis_names,
            **{k: ["grid"] + (["dim"] if np.ndim(v) > 1 else []) for k, v in grid_arrays.items()},
        },
        "grid_order": "row-major over grid_axes (the last axis varies fastest)",
        "sweeps": {"resumed": resumed, "computed": computed},
        "seconds": seconds,
        "nonfinite_warning": warning,
        "summary": rows,
    }
    if study.compare:
        settings["learners"] = [_learner_settings(arm, floors["floor"][arm.label]) for arm in study.learners]
        settings["reference"] = study.reference
    return settings


def _write_outputs(
    study: Study, out: Path, arrays: dict[str, np.ndarray], resumed: int, computed: int, seconds: float
) -> StudyResult:
    """Write the outputs from the assembled ``[L, G, S, ...]`` arrays (``[G, S, ...]`` on disk for one learner)."""
    steps = np.asarray(study.checkpoints)
    final = arrays["regret"][..., -1]  # [L, G, S]
    mean, se = mean_se(final, axis=-1)  # final regret over the seeds
    bounds = [_bounds(study, arm) for arm in study.learners]
    rows = _summary_rows(study, mean, se, bounds)
    if arrays.get("gap") is not None:  # an inexact comparator: regret + its certified gap bounds the exact regret
        upper, upper_se = mean_se(final + np.asarray(arrays["gap"])[..., -1], axis=-1)
        for row, m, e in zip(rows, upper.ravel(), upper_se.ravel(), strict=True):
            row |= {"final_upper_mean": float(m), "final_upper_se": float(e)}
    loss = None if arrays.get("loss") is None else np.asarray(arrays["loss"])[..., -1]  # [L, G, S]
    paired = _paired_rows(study, final, loss)
    # a learner that depends on no swept value is one row, not one per grid point (jaxpriv.experiments._tables)
    once = {arm.label for arm in study.learners if not arm.swept} if study.compare else set()
    rows = once_rows(rows, once, list(study.grid))
    paired = None if paired is None else once_rows(paired, once, list(study.grid))

    files = {
        "npz": out / "results.npz",
        "json": out / "settings.json",
        "csv": out / "summary.csv",
        "curves": out / "regret.png",
        "final": out / "final_regret.png",
    }
    if paired is not None:
        files |= {"paired_csv": out / "paired.csv", "paired": out / "paired.png"}
    saved = arrays if study.compare else {k: v[0] for k, v in arrays.items()}
    grid_arrays = {f"grid:{k}": np.asarray(v, np.float32) for k, v in study.grid.items()}
    labels = {"learners": np.asarray(study.labels)} if study.compare else {}
    np.savez_compressed(files["npz"], steps=steps, **labels, **saved, **grid_arrays)
    write_table(out, files["csv"].name, rows)
    if paired is not None:
        write_table(out, files["paired_csv"].name, paired)

    counts = [arrays.get(k) for k in ("nonfinite_inputs", "nonfinite_steps")]
    result = sim.Result(steps, arrays["regret"], arrays.get("loss"), arrays.get("best"), None, *counts)
    warning = result.nonfinite_warning()
    if warning:
        print(f"{study.name}: {warning}", file=sys.stderr)
    settings = _settings(study, saved, grid_arrays, resumed, computed, seconds, warning, rows)
    settings["file"] = relative_path(study.source, out, SHIPPED)
    if paired is not None:
        settings["paired"] = paired
    write_settings(out, settings, files["json"].name)
    figures = {
        "curves": _curves_figure(study, steps, arrays["regret"]),
        "final": _final_figure(study, final, bounds),
    }
    if paired is not None:
        figures["paired"] = _paired_figure(study, steps, arrays["regret"], loss=loss)
    tables: dict[str, list[dict[str, Any]]] = {}
    data = Data(steps, arrays["regret"], bounds)
    for options in study.figures:
        if options["recipe"] in ("regret_vs_horizon", "regret_vs_size"):
            continue  # drawn over the horizons or sizes (_write_horizons, _write_sizes)
        stem = Path(options["file"]).stem
        figures[stem], table = draw(study, data, options)
        files[stem] = out / options["file"]
        if table is not None:
            tables[stem] = table
            files[f"{stem}_csv"] = out / f"{stem}.csv"
            write_table(out, f"{stem}.csv", table)
    for name, fig in figures.items():
        fig.savefig(files[name])
    result = StudyResult(study, out, files, saved["regret"], rows, resumed, computed, saved, paired, figures, tables)
    return result._replace(files=files | write_tidy(result))  # results.nc and summary_long.csv, by default


def _write_horizons(study: Study, out: Path, results: dict[int, StudyResult]) -> StudyResult:
    """The outputs over a file's ``horizons``: ``summary.csv``, ``slopes.csv``, ``regret_vs_horizon.png``."""
    horizons = tuple(results)
    finals = np.stack([_final_of(results[h]) for h in horizons])  # [H, L, G, S]
    rows = [{"horizon": h, **row} for h in horizons for row in results[h].summary]
    slopes = _slope_rows(study, horizons, finals)
    write_table(out, "summary.csv", rows)
    write_table(out, "slopes.csv", slopes)
    files = {
        "csv": out / "summary.csv",
        "slopes": out / "slopes.csv",
        "regret_vs_horizon": out / "regret_vs_horizon.png",
    }
    entries = [f for f in study.figures if f["recipe"] == "regret_vs_horizon"] or [{"file": "regret_vs_horizon.png"}]
    figures = {}
    for options in entries:
        stem = Path(options["file"]).stem
        figures[stem] = regret_vs_horizon(study, horizons, finals, options)
        files[stem] = out / options["file"]
        figures[stem].savefig(files[stem])
    write_settings(out, {"command": "sweep", "study": study.name, "file": relative_path(study.source, out, SHIPPED),
                         "contents": study.raw, "horizons": list(horizons),
                         "folders": {h: relative_path(results[h].out, out) for h in horizons},
                         "summary": rows, "slopes": slopes})  # fmt: skip
    files["json"] = out / "settings.json"
    last = results[horizons[-1]]
    resumed = sum(r.resumed for r in results.values())
    computed = sum(r.computed for r in results.values())
    tables = dict(last.tables or {}) | {"slopes": slopes}
    return last._replace(study=study, out=out, files=files, summary=rows, resumed=resumed, computed=computed,
                         figures=figures, tables=tables, horizons=results)  # fmt: skip


def _write_sizes(study: Study, out: Path, results: dict[int, StudyResult]) -> StudyResult:
    """The outputs over a file's ``[sizes]``: ``summary.csv``, ``slopes.csv``, ``regret_vs_<name>.png``."""
    assert study.sizes is not None
    name, values = study.sizes.name, tuple(results)
    finals = np.stack([_final_of(results[v]) for v in values])  # [V, L, G, S]
    rows = [{name: v, **row} for v in values for row in results[v].summary]
    slopes = _slope_rows(study, values, finals, name)
    if study.reference is not None:  # the price against the reference: the slopes of the paired differences
        ref = study.labels.index(study.reference)
        others = [i for i in range(len(study.labels)) if i != ref]
        diffs = finals[:, others] - finals[:, ref : ref + 1]
        labels = tuple(f"{study.labels[i]} - {study.reference}" for i in others)
        slopes += _slope_rows(study, values, diffs, name, labels)
    write_table(out, "summary.csv", rows)
    write_table(out, "slopes.csv", slopes)
    stem = f"regret_vs_{name}"
    files = {"csv": out / "summary.csv", "slopes": out / "slopes.csv"}
    entries = [f for f in study.figures if f["recipe"] == "regret_vs_size"] or [{"file": f"{stem}.png"}]
    figures = {}
    for options in entries:
        key = Path(options["file"]).stem
        figures[key] = regret_vs_horizon(study, values, finals, options, xlabel=name)
        files[key] = out / options["file"]
        figures[key].savefig(files[key])
    write_settings(out, {"command": "sweep", "study": study.name, "file": relative_path(study.source, out, SHIPPED),
                         "contents": study.raw, "sizes": {"name": name, "values": list(values)},
                         "folders": {v: relative_path(results[v].out, out) for v in values},
                         "summary": rows, "slopes": slopes})  # fmt: skip
    files["json"] = out / "settings.json"
    last = results[values[-1]]
    tables = dict(last.tables or {}) | {"slopes": slopes}
    return last._replace(study=study, out=out, files=files, summary=rows,
                         resumed=sum(r.resumed for r in results.values()),
                         computed=sum(r.computed for r in results.values()),
                         figures=figures, tables=tables, sizes=results)  # fmt: skip


def _final_of(res: StudyResult) -> np.ndarray:
    """``[L, G, S]``: a result's final regret (a single learner's with its learner axis)."""
    final = np.asarray(res.regret)[..., -1]
    return final if res.study.compare else final[None]


def _slope_rows(
    study: Study, horizons: tuple[int, ...], finals: np.ndarray, size: str | None = None,
    labels: tuple[str, ...] | None = None,
) -> list[dict[str, Any]]:  # fmt: skip
    """Per learner and grid point: the least-squares slope of log(mean final regret) against log T and of the
    regret against ln T, with standard errors over the seeds (the horizons share the seed keys, so a seed's
    influence on the slope is taken across horizons: the delta method for the log-log slope, the per-seed
    slopes' SE for the ln T one).

    With ``size`` (a ``[sizes]`` name): ``horizons`` are its values, and the second slope is per unit of the size
    (``slope_<size>``, against the size itself, not its log); the columns ``mean_<size><value>``. ``labels``: the
    rows' labels (``finals``' second axis), default the study's."""
    x = np.log(np.asarray(horizons, np.float64))
    w = (x - x.mean()) / np.sum((x - x.mean()) ** 2)  # slope = sum_k w_k y_k
    if size is not None:
        u = np.asarray(horizons, np.float64)
        v = (u - u.mean()) / np.sum((u - u.mean()) ** 2)  # the slope per unit of the size
    rows = []
    for i, label in enumerate(labels or study.labels):
        for g in range(study.size):
            y = np.asarray(finals[:, i, g, :], np.float64)  # [H, S]
            m = y.mean(axis=1)
            per_seed = (w if size is None else v) @ y  # the slope against ln T (the size) of each seed
            lin, lin_se = mean_se(per_seed)
            row: dict[str, Any] = {"learner": label} if study.compare else {}
            row |= {"grid_point": g} | {k: fmt(v[g]) for k, v in study.grid.items()}
            if np.all(m > 0):
                influence = (w / m) @ y  # d slope / d y_s, linearised at the means
                loglog, loglog_se = float(w @ np.log(m)), float(np.std(influence, ddof=1) / np.sqrt(y.shape[1]))
            else:
                loglog, loglog_se = float("nan"), float("nan")
            row |= {"slope_loglog": loglog, "slope_loglog_se": loglog_se}
            per = "lnT" if size is None else size
            row |= {f"slope_{per}": float(lin), f"slope_{per}_se": float(lin_se)}
            row |= {f"mean_{'T' if size is None else size}{h}": float(m[k]) for k, h in enumerate(horizons)}
            rows.append(row)
    return rows


# --- tidy outputs --------------------------------------------------------------------------------------------


def write_tidy(res: StudyResult) -> dict[str, Path]:
    """Write ``results.nc`` (netCDF, ``jaxpriv.tidy.to_xarray``) and ``summary_long.csv`` (``to_dataframe``).

    ``run_study`` calls it for every run (each horizon's or size's of a file with ``horizons`` or ``[sizes]``);
    ``summary_long.parquet`` instead of the CSV when pyarrow is importable. netCDF through SciPy's writer.

    Args:
      res: what ``run_study`` returned (one horizon's run: for a file with ``horizons`` or ``[sizes]``, one of
        ``res.horizons`` / ``res.sizes``).

    Returns:
      Name (``"nc"``, ``"long"``) -> path written.

    Raises:
      ValueError: ``res`` is a file's result over ``horizons`` or ``[sizes]`` (each run's folder has its own).
    """
    from jaxpriv import tidy

    if res.horizons or res.sizes:
        raise ValueError(
            "res runs over horizons or sizes: each run's folder has its results.nc (write_tidy(res.horizons[T]), "
            "write_tidy(res.sizes[value]))"
        )
    ds = tidy.to_xarray(res)
    files = {"nc": res.out / "results.nc"}
    tidy.write_netcdf(ds, files["nc"])
    table = tidy.to_dataframe(ds)
    try:
        import pyarrow  # noqa: F401

        files["long"] = res.out / "summary_long.parquet"
        table.to_parquet(files["long"], index=False)
    except ImportError:
        files["long"] = res.out / "summary_long.csv"
        table.to_csv(files["long"], index=False)
    return files
