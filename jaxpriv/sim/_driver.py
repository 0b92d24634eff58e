"""The segmented driver: seed chunks × horizon segments, each a compiled call, with save and resume.

``sweep`` runs through ``_Driver`` when it is given a ``segment``, ``stats``, ``save`` or
``progress``: memory is a chunk's carry plus the outputs, whatever the horizon and seed count.
After every segment the carry (and the finished chunks' outputs or statistics) can be saved
atomically with the configuration's fingerprint (``jaxpriv.sim._resume``), and a sweep resumes
from such a file with the same numbers as an uninterrupted one. After the last chunk the file holds
the finished sweep (no carry, every chunk done): a rerun returns it without running anything. An
episode simulation (``sweep(..., simulator="episodes")``) saves its finished ``Result`` the same way
(``_save_result`` / ``_load_result``).

Compiling is a phase of its own: before the first segment runs, the driver compiles every piece the run
will call (the start, each segment length, the outputs) ahead of time (``engine_jit.lower(...).compile()``,
which the calls then reuse: no second compilation), timed, and reports it to ``progress`` (``True``: a line;
a callable with ``compiling()`` / ``compiled(seconds)`` methods: those; and ``resumed(done)``, the seed-steps
a save file held), so a segment's time and rate are running only.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxpriv._base import engine_jit
from jaxpriv.sim import _resume
from jaxpriv.sim._scan import Result, _advance, _init_carry, _outputs, counts_compiles
from jaxpriv.sim._seeds import _device_width, _pad_seeds, _take_seeds, map_seeds_and_grid
from jaxpriv.stats import Accumulator, chunk_summary, merge, to_accumulator

# --- the segmented driver ------------------------------------------------------------------------


@partial(engine_jit, static_argnums=(0, 1, 2, 3))
@counts_compiles("driver")
def _init_jit(learner, env, checkpoints, axes, keys, params):
    return map_seeds_and_grid(partial(_init_carry, learner, env, checkpoints), axes, None, keys, params)


def _over_seeds_and_grid(fn: Callable, grid: bool) -> Callable:
    fn = jax.vmap(fn)
    return jax.vmap(fn) if grid else fn


@partial(engine_jit, static_argnums=(0, 1, 2, 3, 4))
@counts_compiles("driver")
def _advance_jit(learner, env, checkpoints, length, grid, carry, start):
    batch = carry.bad_steps.size  # one int per seed (and grid point): the batch this call advances
    return _over_seeds_and_grid(lambda c: _advance(learner, env, checkpoints, length, c, start, batch), grid)(carry)


@partial(engine_jit, static_argnums=(0, 1, 2))
@counts_compiles("driver")
def _outputs_jit(learner, env, grid, carry):
    return _over_seeds_and_grid(partial(_outputs, learner, env), grid)(carry)


@partial(engine_jit, static_argnums=(0, 1))
@counts_compiles("driver")
def _summary_jit(stats, grid, outputs, valid):
    regret, loss, _, _, nf_in, nf_steps, _ = outputs
    return chunk_summary(stats, regret, loss, nf_in, nf_steps, valid)


class _Driver:
    """Seed chunks × horizon segments, each a compiled call on a fixed shape; saves and resumes."""

    def __init__(self, learner, env, horizon, checkpoints, axes, params, chunk, segment, stats):
        self.learner, self.env, self.horizon, self.ckpts = learner, env, horizon, checkpoints
        self.axes, self.params, self.chunk, self.segment, self.stats = axes, params, chunk, segment, stats
        self.grid = axes is not None
        self.info_type: Any = None  # the learner's Info class, read from its first carry (None: no Info)

    def run(self, keys: jax.Array, save: Path | None, fingerprint: dict | None, progress: Any) -> Any:
        n = keys.shape[0]
        chunk = min(self.chunk, n)
        n_chunks = -(-n // chunk)
        n_segments = -(-self.horizon // self.segment)
        done: list[tuple] = []  # finished chunks' outputs (numpy), when no stats
        acc = None
        first_chunk, first_segment, carry_leaves = 0, 0, None
        if save is not None and save.exists():
            first_chunk, first_segment, carry_leaves, done, acc = _load(save, fingerprint)
            if progress is True:
                where = (
                    "the finished sweep: nothing to run"
                    if first_chunk >= n_chunks
                    else f"chunk {first_chunk + 1}/{n_chunks}, segment {first_segment + 1}/{n_segments}"
                )
                print(f"jaxpriv: resuming {save} at {where}", file=sys.stderr, flush=True)
        total = n * self.horizon
        width = _device_width(chunk)  # the compiled chunk: a multiple of the device count
        estimated = False  # the estimate of the running time, printed after the first segment (progress=True)
        for c in range(first_chunk, n_chunks):  # a driver loop over compiled chunks, not over seeds
            ks = keys[c * chunk : (c + 1) * chunk]
            valid = np.arange(width) < ks.shape[0]  # the padding's runs are dropped
            if c == first_chunk:
                t_compile = time.perf_counter()
                _tell(progress, "compiling")
            carry = _init_jit(self.learner, self.env, self.ckpts, self.axes, _pad_seeds(ks, width), self.params)
            self.info_type = None if carry.info is None else type(carry.info[0])
            start_seg = 0
            if carry_leaves is not None:
                carry = _restore(carry, carry_leaves)
                start_seg, carry_leaves = first_segment, None
            if c == first_chunk:  # every piece this run calls, compiled now: the segments below only run
                self._compile(carry, range(0 if c + 1 < n_chunks else start_seg, n_segments))
                _tell(progress, "compiled", time.perf_counter() - t_compile)
                if start_seg or c:  # resumed: the seed-steps the save file held, done before this run
                    resumed = getattr(progress, "resumed", None)
                    if callable(resumed):
                        resumed(c * chunk * self.horizon + int(valid.sum()) * start_seg * self.segment)
            for s in range(start_seg, n_segments):  # a driver loop over compiled segments, not over steps
                t0 = time.perf_counter()
                start = s * self.segment
                length = min(self.segment, self.horizon - start)
                carry = _advance_jit(self.learner, self.env, self.ckpts, length, self.grid, carry, jnp.int32(start))
                last = s == n_segments - 1
                if save is not None and not last:
                    _save(save, fingerprint, c, s + 1, carry, done, acc)
                if progress:
                    jax.block_until_ready(carry)
                    now = c * chunk * self.horizon + int(valid.sum()) * (start + length)
                    if callable(progress):
                        progress(now, total)
                    else:
                        dt = time.perf_counter() - t0
                        print(
                            f"jaxpriv: chunk {c + 1}/{n_chunks} segment {s + 1}/{n_segments} "
                            f"(t = {start + length}/{self.horizon}): {dt:.2f} s, "
                            f"{int(valid.sum()) * length / dt:.3g} seed-steps/s",
                            file=sys.stderr,
                            flush=True,
                        )
                        if not estimated and now < total:  # the rest, at this segment's rate
                            estimated = True
                            left = dt * (total - now) / (int(valid.sum()) * length)
                            print(f"jaxpriv: estimated running time of the rest: {left:.3g} s (at this segment's "
                                  "rate)", file=sys.stderr, flush=True)  # fmt: skip
            out = _outputs_jit(self.learner, self.env, self.grid, carry)
            if self.stats is not None:
                acc = merge(acc, to_accumulator(_summary_jit(self.stats, self.grid, out, jnp.asarray(valid))))
            else:
                keep = int(valid.sum())
                *out, info = out  # the learner's Info (a NamedTuple or None): its fields follow the six columns
                out = (*out, *(info if info is not None else ()))
                done.append(tuple(None if x is None else _take_seeds(np.asarray(x), keep, self.grid) for x in out))
            if save is not None:  # after the last chunk: the finished result, returned by a rerun
                _save(save, fingerprint, c + 1, 0, None, done, acc)
        if self.stats is not None:
            return acc
        axis = 1 if self.grid else 0
        cols = [None if done[0][i] is None else np.concatenate([d[i] for d in done], axis) for i in range(len(done[0]))]
        cols = [None if x is None else jnp.asarray(x) for x in cols]
        info = None
        if self.info_type is not None:
            info = self.info_type(*cols[6:])
        return Result(jnp.asarray(self.ckpts, jnp.int32), *cols[:6], info=info)

    def _compile(self, carry: Any, segments: range) -> None:
        """Compile ahead of time the advance of each segment length in ``segments`` and the outputs, for ``carry``.

        The jit calls with the same arguments then reuse these compilations (``engine_jit.lower``): the compile
        phase is timed on its own, and no piece compiles twice. The chunk statistics' summary (``stats``), a small
        reduction, compiles at the end of the first chunk.
        """
        lengths = sorted({min(self.segment, self.horizon - s * self.segment) for s in segments})
        start = jnp.int32(0)
        for length in lengths:
            _advance_jit.lower(self.learner, self.env, self.ckpts, length, self.grid, carry, start).compile()
        _outputs_jit.lower(self.learner, self.env, self.grid, carry).compile()


def _tell(progress: Any, event: str, *args: float) -> None:
    """Report ``event`` of the compile phase (``"compiling"``, then ``"compiled"`` with its seconds): a line for
    ``progress=True``, else ``progress.<event>(*args)`` where the progress callable has that method (the study
    runner's bar)."""
    if progress is True:
        line = f"compiled in {args[0]:.3g} s (JAX's persistent cache included); running" if args else f"{event} ..."
        print(f"jaxpriv: {line}", file=sys.stderr, flush=True)
    elif callable(getattr(progress, event, None)):
        getattr(progress, event)(*args)


# --- saving and resuming -------------------------------------------------------------------------


def _fingerprint(learner, env, horizon, seeds, chunk, segment, ckpts, keys, params, stats, axes=None) -> dict:
    """What a saved sweep must match to be resumed, field by field (``jaxpriv.sim._resume.fingerprint``)."""
    return _resume.fingerprint(
        learner, env, horizon=horizon, seeds=seeds, chunk=chunk, segment=segment, checkpoints=ckpts,
        keys=keys, params=params, axes=axes, stats=stats,
    )  # fmt: skip


def _key_leaf(x: Any) -> bool:
    return isinstance(x, jax.Array) and jnp.issubdtype(x.dtype, jax.dtypes.prng_key)


def _save(path: Path, fingerprint: dict, chunk: int, segment: int, carry: Any, done: list, acc: Any) -> None:
    arrays: dict[str, np.ndarray] = {}
    if carry is not None:
        for i, leaf in enumerate(jax.tree.leaves(carry)):
            arrays[f"carry_{i}"] = np.asarray(jax.random.key_data(leaf) if _key_leaf(leaf) else leaf)
    for j, out in enumerate(done):
        for i, x in enumerate(out):
            if x is not None:
                arrays[f"done_{j}_{i}"] = x
    if acc is not None:
        for name, x in zip(acc._fields, acc, strict=True):
            arrays[f"acc_{name}"] = x
    meta = {"fingerprint": fingerprint, "chunk": chunk, "segment": segment}
    meta |= {"done": len(done), "carry": carry is not None}
    _resume.write(path, meta, arrays)  # "chunk" = the number of chunks: the finished sweep


_REMEDY = "delete it to start the sweep over, or pass another save="


def _read_checked(path: Path, fingerprint: dict) -> tuple[dict, dict]:
    """``(meta, arrays)`` of a save file written under ``fingerprint``; ``ValueError`` naming what differs."""
    meta, z = _resume.read(path, _REMEDY)
    saved = meta.get("fingerprint", {})
    wrong = _resume.differences(saved, fingerprint)
    if saved.get("layout", "vmap_scan") != "vmap_scan":  # only files saved under a removed layout have the field
        wrong = [w for w in wrong if not w.startswith("layout:")]
        wrong.insert(0, f"layout: saved {saved['layout']!r}, a batching jaxpriv no longer has (now 'vmap_scan' only)")
    if wrong:
        raise ValueError(f"{path} was written by another sweep configuration ({'; '.join(wrong)}); {_REMEDY}")
    return meta, z


def _load(path: Path, fingerprint: dict) -> tuple:
    remedy = _REMEDY
    meta, z = _read_checked(path, fingerprint)
    try:
        leaves = None
        if meta["carry"]:
            leaves = [z[f"carry_{i}"] for i in range(sum(k.startswith("carry_") for k in z))]
        done = []
        for j in range(meta["done"]):
            width = max([5] + [int(k.rsplit("_", 1)[1]) for k in z if k.startswith(f"done_{j}_")]) + 1
            done.append(tuple(z[f"done_{j}_{i}"] if f"done_{j}_{i}" in z else None for i in range(width)))
        acc = None
        if "acc_n" in z:
            acc = Accumulator(*(z[f"acc_{name}"] for name in Accumulator._fields))
        first_chunk, first_segment = int(meta["chunk"]), int(meta["segment"])
    except (KeyError, TypeError, ValueError) as err:
        raise _resume.DamagedFile(f"{path} is incomplete ({type(err).__name__}: {err}); {remedy}") from None
    return first_chunk, first_segment, leaves, done, acc


def _restore(template: Any, leaves: list[np.ndarray]) -> Any:
    flat, treedef = jax.tree.flatten(template)
    if len(flat) != len(leaves):
        raise ValueError("the saved carry does not match this sweep's state structure")
    out = []
    for t, x in zip(flat, leaves, strict=True):
        if _key_leaf(t):
            out.append(jax.random.wrap_key_data(jnp.asarray(x), impl=jax.random.key_impl(t)))
        else:
            if x.shape != t.shape or x.dtype != t.dtype:
                raise ValueError(f"the saved carry has a leaf {x.shape} {x.dtype}, expected {t.shape} {t.dtype}")
            out.append(jnp.asarray(x))
    return jax.device_put(jax.tree.unflatten(treedef, out), jax.tree.map(lambda t: t.sharding, template))


#: The arrays of an episode simulation's ``Result`` a save file holds (``sweep(simulator="episodes")``).
_EPISODE_FIELDS = ("steps", "regret", "episodes", "pulls")


def _save_result(path: Path, fingerprint: dict, result: Result) -> None:
    """Save a finished episode simulation's ``Result`` (one compiled call: no carry, no chunks)."""
    arrays = {name: np.asarray(getattr(result, name)) for name in _EPISODE_FIELDS}
    meta = {"fingerprint": fingerprint, "complete": True, "private": result.private}
    _resume.write(path, meta, arrays)


def _load_result(path: Path, fingerprint: dict) -> Result:
    """The ``Result`` a finished episode simulation saved (``_save_result``), its fingerprint checked."""
    meta, z = _read_checked(path, fingerprint)
    try:
        arrays = {name: jnp.asarray(z[name]) for name in _EPISODE_FIELDS}
        private = meta["private"]
    except KeyError as err:
        raise _resume.DamagedFile(f"{path} is incomplete (KeyError: {err}); {_REMEDY}") from None
    return Result(arrays["steps"], arrays["regret"], None, None, private=private, episodes=arrays["episodes"],
                  pulls=arrays["pulls"])  # fmt: skip
