"""``sweep``: many seeds and a params grid in one compiled call, or through the segmented driver.

Without ``segment``, ``stats``, ``save`` or ``progress`` a sweep is one compiled function
(``_sweep_jit``: ``_run`` batched by ``map_seeds_and_grid``); with any of them it runs through
``_driver._Driver``. ``summarize`` is the mean and standard error over seeds of its output.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from functools import partial
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxpriv import _validate
from jaxpriv._base import Env, Learner, PRNGKey, as_key, engine_jit, spec_of
from jaxpriv.sim import _resume
from jaxpriv.sim._check import _prepare
from jaxpriv.sim._driver import _Driver, _fingerprint, _load_result, _save_result
from jaxpriv.sim._params import SimParams, canonical_params, grid_axes, normalize_checkpoints, spec_ndims
from jaxpriv.sim._scan import Result, _run, counts_compiles
from jaxpriv.sim._seeds import (
    _device_width,
    _gather_accumulator,
    _gather_result,
    _pad_seeds,
    _take_seeds,
    map_seeds_and_grid,
)
from jaxpriv.stats import Stats, SweepStats, finalize


@partial(engine_jit, static_argnums=(0, 1, 2, 3, 4, 5))
@counts_compiles("sweep")
def _sweep_jit(learner, env, horizon, checkpoints, axes, chunk, keys, params):
    # The seeds x grid points one step is batched over (the comparator's form: _scan._checkpoint_form).
    batch = min(chunk or keys.shape[0], keys.shape[0]) * _grid_size(axes, params)
    run = partial(_run, learner, env, horizon, checkpoints, batch=batch)
    return map_seeds_and_grid(run, axes, chunk, keys, params)


def _grid_size(axes: Any, params: Any) -> int:
    """The number of grid points of ``params`` swept along ``axes`` (``grid_axes``; ``None``: 1)."""
    if axes is None:
        return 1
    sizes = jax.tree.map(lambda a, p: 1 if a is None else p.shape[a], axes, params, is_leaf=lambda x: x is None)
    return max(jax.tree.leaves(sizes), default=1)


def sweep(
    learner: Learner,
    env: Env,
    params: SimParams,
    key: PRNGKey,
    horizon: int,
    seeds: int = 100,
    checkpoints: Any = "log",
    chunk: int | None = None,
    *,
    segment: int | None = None,
    stats: Stats | None = None,
    save: str | os.PathLike | None = None,
    progress: bool | Callable[[int, int], None] = False,
    simulator: str = "steps",
    simulator_options: Mapping[str, Any] | None = None,
) -> Result | SweepStats:
    """Run many seeds, and a grid of params values, in one compiled call.

    Every params leaf given with one extra leading dimension (a scalar given as
    a vector of values, ``center[d]`` given as ``[G, d]``) is swept: all swept
    leaves share that leading length ``G`` and are zipped, not crossed (build
    a product grid with ``jnp.meshgrid`` first). The same ``seeds`` keys are
    used at every grid point (common random numbers), so differences between
    grid points come from the params, not from luck. Params values are traced:
    a new grid of the same shape does not recompile.

    Bounded memory at any horizon and seed count: with ``segment``, ``stats``
    or ``save`` the sweep runs as a driver over compiled pieces — seed chunks of
    ``chunk`` seeds (the last one padded to the same shape), each scanned over
    the horizon in segments of ``segment`` steps that carry the state (one
    compilation for all segments, one more for a shorter last segment). Memory
    is then ``chunk × state`` plus the output, independent of ``T``; with
    ``stats`` the output is a fixed-size summary instead of per-seed arrays.
    Every step key is ``fold_in(k_steps, t)`` of the seed's key, so the chunk
    size, the segment length and a resume draw the same noise. On a CPU, driver
    runs with the same ``chunk`` agree bit for bit whatever the ``segment``
    (1 to ``T`` steps), and a resumed run equals the uninterrupted one
    (tested at XLA's default optimisation level). The chunk size is the batch
    width XLA compiles for, and XLA may then sum a few values in another order
    or contract a multiply-add differently: another chunk size agrees to
    float32 rounding, within 1e-6 of the largest value of each array
    (measured at most 7.3e-7, T = 4096; ``tests/integration/test_trust_resume.py``), and so
    does the one-call sweep (about 1e-6 relative). On a GPU, kernels compiled
    for other chunk or segment shapes may differ by an ulp (measured on an H100); a
    resumed run with the same chunk and segment reproduces the uninterrupted one.

    Several processes (``jax.distributed.initialize`` called before): the seeds
    are split in equal contiguous blocks over the processes (``seeds`` must be
    a multiple of ``jax.process_count()``), each runs its block on its local
    devices, and the results are gathered on every process: the same numbers as
    one process.

    Args:
      learner, env: the components.
      params: ``SimParams``; swept leaves carry a leading grid axis (an array, or
        a list of numbers, which counts as one array).
      key: the base key (or an integer seed in ``[0, 2**64)``); seed ``i`` uses ``split(key, seeds)[i]``.
      horizon: ``T >= 1``, at most the components' declared horizons.
      seeds: the number of independent runs.
      checkpoints: as in ``run``; default ``"log"``.
      chunk: run the seeds in batches of this size (bounded memory); the
        numbers change only by float32 rounding (see above).
      segment: scan the horizon in compiled segments of this many steps
        (``1 <= segment``; a last shorter segment is allowed).
      stats: return a ``SweepStats`` (mean, variance, extremes and quantiles of
        the regret over seeds at each checkpoint; ``jaxpriv.stats``) instead of
        per-seed arrays; chunk summaries are merged exactly (Chan's update).
      save: a file the sweep's progress is saved to after every segment (the
        carry of the running chunk and the outputs of the finished ones, written
        atomically, with a checksum). If it exists, the sweep resumes from it —
        the same numbers as an uninterrupted run — after checking that it was
        written by the same configuration, naming any mismatch in a
        ``ValueError``: what the learner and the environment compute (their
        traced programs and constants, so every static argument: set and
        radius, noise family, mechanism, ``z_dist``, ...), horizon, seeds, chunk,
        segment, checkpoints, key, params, stats, the process, the JAX version,
        backend and device count (``jaxpriv.sim._resume``); a file saved under a batching
        layout that older versions offered (``layout="seeds_first"`` or
        ``"seeds_last"``) is refused too. A truncated, corrupted or edited file (the checksum
        covers its metadata too) is a ``ValueError`` naming it; a path that cannot
        be written (a folder, under a file, read-only) is refused before anything
        runs. When the sweep finishes the file holds its result: the same call then
        returns it (after the same check) without running anything.
      progress: ``True`` prints to stderr a line when compiling starts and one with its
        time when it ends, then one line per segment (its time and rate: running only) and,
        after the first, an estimate of the rest's running time; a callable is called as
        ``progress(done, total)`` in seed-steps after each segment (never when the result is
        read back from a finished ``save`` file: nothing runs) and, where it has these methods,
        as ``progress.compiling()`` and ``progress.compiled(seconds)`` around the compile phase,
        before the first segment. The driver compiles every piece it will call then, ahead of
        time (the calls reuse those compilations: nothing compiles twice).
      simulator: ``"steps"`` (the engine's scan, every learner) or ``"episodes"``: the
        learner's exact episode-level simulator (``Spec.fast_path``: AdaC-UCB, AdaP-UCB,
        GOPE, DP-SE, ...), on the environment it is exact for (``FastPath.envs``), in one
        compiled call with the same seed keys (no ``segment`` or ``stats``); its ``Result``
        has no ``loss`` or ``best`` but the episodes started and each arm's pulls
        (``Result.episodes``, ``Result.pulls``). ``save`` works the same way: the finished
        result is saved, and returned by a rerun after its fingerprint (which includes the
        simulator and its options) is checked.
      simulator_options: the episode simulator's per-call options (``instance``,
        ``exact_pulls``, a ``reward_sum`` hook with ``private=False``, ...; see
        ``jaxpriv.bandits.episodic``).

    Returns:
      A ``Result`` with arrays of shape ``[G, seeds, m]`` (or ``[seeds, m]``
      when nothing is swept), or a ``SweepStats`` when ``stats`` is given.
      With ``save``, a file that holds the finished sweep returns its result
      without running anything.
    """
    simulator = _validate.choice("simulator", simulator, ("steps", "episodes"))
    if simulator == "episodes":
        return _sweep_episodes(
            learner, env, params, key, horizon, seeds, checkpoints, chunk, segment, stats, save, progress,
            dict(simulator_options or {}),
        )  # fmt: skip
    if simulator_options:
        raise ValueError("simulator_options are the episode simulator's options: pass simulator='episodes' too")
    horizon = _validate.horizon(horizon)
    seeds = _validate.positive_int("seeds", seeds)
    chunk = _validate.chunk(chunk)
    if segment is not None:
        segment = _validate.positive_int("segment", segment)
    if stats is not None:
        if not isinstance(stats, Stats):
            raise ValueError(f"stats must be a jaxpriv.stats.Stats, got {type(stats).__name__}")
        stats = stats.validate()
    ckpts = normalize_checkpoints(horizon, checkpoints)
    params, axes, size = _prepare(learner, env, params, allow_grid=True, horizon=horizon)
    axes = axes if size else None
    all_keys = jax.random.split(as_key(key), seeds)
    procs, pid = jax.process_count(), jax.process_index()
    if procs > 1 and seeds % procs:
        raise ValueError(f"seeds={seeds} must be a multiple of the number of processes ({procs})")
    local = seeds // procs
    keys = all_keys[pid * local : (pid + 1) * local]
    if segment is None and stats is None and save is None and not progress:
        padded = _pad_seeds(keys, _device_width(local))
        out = _sweep_jit(learner, env, horizon, ckpts, axes, chunk, padded, params)
        *out, info = (jax.tree.map(lambda x: _take_seeds(x, local, axes is not None), x) for x in out)
        result = Result(jnp.asarray(ckpts, jnp.int32), *out, private=spec_of(learner).private, info=info)
        return _gather_result(result, axes is not None)
    driver = _Driver(learner, env, horizon, ckpts, axes, params, chunk or local, segment or horizon, stats)
    save = _save_path(save)
    fingerprint = None
    if save is not None:
        fingerprint = _fingerprint(learner, env, horizon, seeds, chunk, segment, ckpts, all_keys, params, stats, axes)
        fingerprint["process"] = f"{pid} of {procs}"
    out = driver.run(keys, save, fingerprint, progress)
    if stats is None:
        return _gather_result(out._replace(private=spec_of(learner).private), axes is not None)
    return finalize(stats, _gather_accumulator(out), np.asarray(ckpts))._replace(private=spec_of(learner).private)


def _save_path(save: Any) -> Path | None:
    """``save`` as this process's file (``.process<i>`` with several processes), refused before anything runs
    when it cannot be written."""
    if save is None:
        return None
    if not isinstance(save, (str, os.PathLike)) or not str(save):
        raise ValueError(f"save must be a file path (a str or os.PathLike), got {save!r}")
    save = Path(save)
    if jax.process_count() > 1:
        save = save.with_name(f"{save.name}.process{jax.process_index()}")
    return _resume.check_writable(save, "save")


def _sweep_episodes(
    learner: Learner, env: Env, params: SimParams, key: PRNGKey, horizon: int, seeds: int, checkpoints: Any,
    chunk: int | None, segment: int | None, stats: Stats | None, save: Any, progress: Any, options: dict[str, Any],
) -> Result:  # fmt: skip
    """``sweep(..., simulator="episodes")``: the learner's exact episode simulator, saved and resumed whole."""
    spec = spec_of(learner)
    fast_path = spec.fast_path
    if fast_path is None:
        raise ValueError(
            f"{spec.name or 'this learner'} has no exact episode simulator (its spec's fast_path is None): "
            "run it step by step (simulator='steps')"
        )
    env_name = spec_of(env).name
    if env_name not in fast_path.envs:
        raise ValueError(
            f"the episode simulator of {spec.name} runs on {' or '.join(fast_path.envs)}, not {env_name or 'this env'}"
        )
    if segment is not None or stats is not None:
        raise ValueError(
            "segment and stats are the step-level driver's: simulator='episodes' runs in one compiled call "
            "(pass chunk to bound its memory)"
        )
    if not isinstance(params, SimParams):
        raise ValueError(f"params must be a SimParams(learner_params, env_params), got {type(params).__name__}")
    for name in ("chunk", "seeds", "horizon", "checkpoints", "key"):
        if name in options:
            raise ValueError(f"simulator_options must not set {name!r}: it is sweep's own argument")
    horizon = _validate.horizon(horizon)
    seeds = _validate.positive_int("seeds", seeds)
    if chunk is not None:
        chunk = _validate.positive_int("chunk", chunk)
    ckpts = normalize_checkpoints(horizon, checkpoints)
    save = _save_path(save)
    if save is not None:
        canonical = canonical_params(params)
        axes, size = grid_axes(canonical, allow_grid=True, ndims=spec_ndims(learner, env))
        fingerprint = _resume.fingerprint(
            learner, env, horizon=horizon, seeds=seeds, chunk=chunk, segment=None, checkpoints=ckpts,
            keys=jax.random.split(as_key(key), seeds), params=canonical, axes=axes if size else None,
            simulator="episodes", simulator_options=options,
        )  # fmt: skip
        fingerprint["process"] = f"{jax.process_index()} of {jax.process_count()}"
        if save.exists():
            if progress is True:
                print(f"jaxpriv: {save} holds the finished simulation: nothing to run", file=sys.stderr, flush=True)
            return _load_result(save, fingerprint)
    result = fast_path(learner, params.learner, params.env, key, horizon, seeds, ckpts, chunk=chunk, **options)
    if save is not None:
        _save_result(save, fingerprint, result)
    if callable(progress):
        progress(seeds * horizon, seeds * horizon)
    elif progress:
        print(f"jaxpriv: {seeds} seeds x {horizon} steps simulated episode by episode", file=sys.stderr, flush=True)
    return result


def summarize(values: jax.Array, axis: int = -2) -> tuple[np.ndarray, np.ndarray]:
    """Mean and standard error over the seed axis (default: the second to last)."""
    v = np.asarray(values, np.float64)
    n = v.shape[axis]
    return v.mean(axis), v.std(axis, ddof=1 if n > 1 else 0) / np.sqrt(n)
