"""The engine: one ``lax.scan`` over the horizon, ``vmap`` over seeds and a params grid."""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxpriv import _validate
from jaxpriv._base import (
    Env,
    Learner,
    PRNGKey,
    as_key,
    check_horizon,
    count_nonfinite,
    engine_jit,
    split_step_key,
)
from jaxpriv.stats import Accumulator, Stats, SweepStats, chunk_summary, finalize, merge, to_accumulator


class SimParams(NamedTuple):
    """The params of one experiment: the learner's and the environment's."""

    learner: Any
    env: Any


class Result(NamedTuple):
    """Regret at checkpoints.

    Attributes:
      steps: ``[m]`` int32, the checkpoint steps ``t`` (1-based; the last is ``T``).
      regret: ``[..., m]``, ``sum_{s<=t} f_s(w_s) - min_{w∈C} sum_{s<=t} f_s(w)``
        against the exact comparator of each prefix (eq. (1) of Smith &
        Thakurta 2013); for environments without a comparator (bandits), the
        cumulative pseudo-regret.
      loss: ``[..., m]``, the cumulative loss ``sum_{s<=t} f_s(w_s)``.
      best: ``[..., m]``, the comparator's cumulative loss (``loss - regret``).
      gap: ``[..., m]`` or ``None``: for a comparator solved numerically (an
        environment whose ``comparator`` returns ``(best, gap)``), a certified
        bound on the solver's suboptimality, ``best - min_{w∈C} sum f_s(w) <= gap``,
        so the exact regret lies in ``[regret, regret + gap]``; ``None`` when
        the comparator is exact (closed form) or absent.
      nonfinite_inputs: ``[...]`` int32, inputs with a NaN / ±inf entry that the
        learner's private mechanisms replaced by zero over the run (the sum of
        every ``nonfinite`` field of the final learner state;
        ``jaxpriv._base.zero_nonfinite``). 0 in a healthy run.
      nonfinite_steps: ``[...]`` int32, steps whose loss, regret or comparator
        statistics from the environment were NaN / ±inf. Such a step is left out
        of every sum (the learner's loss and the comparator's alike), so the
        reported regret is that of the finite steps; 0 in a healthy run.

    Leading axes are ``[grid, seeds]`` for a sweep over a grid, ``[seeds]``
    for a sweep over seeds, none for a single run.
    """

    steps: jax.Array
    regret: jax.Array
    loss: jax.Array
    best: jax.Array
    gap: jax.Array | None = None
    nonfinite_inputs: jax.Array | None = None
    nonfinite_steps: jax.Array | None = None

    def per_step_loss(self) -> jax.Array:
        """Per-step losses (exact when the checkpoints are every step)."""
        return jnp.diff(self.loss, axis=-1, prepend=0.0)

    def nonfinite_warning(self) -> str | None:
        """A one-line warning when any run met non-finite inputs or steps, else ``None``.

        The CLI prints it; call it after a sweep to learn whether the numbers
        rest on zeroed inputs or skipped steps (see the two ``nonfinite_*`` fields).
        """
        parts = []
        for what, counts in (
            ("mechanism inputs were NaN/inf and replaced by zero", self.nonfinite_inputs),
            ("environment steps had a NaN/inf loss and were left out of the regret", self.nonfinite_steps),
        ):
            if counts is None:
                continue
            counts = np.asarray(counts)
            total = int(counts.sum())
            if total:
                runs = int(np.count_nonzero(counts))
                parts.append(f"{total} {what} (in {runs} of {counts.size} runs)")
        return "warning: " + "; ".join(parts) if parts else None


def log_checkpoints(horizon: int, num: int = 100) -> tuple[int, ...]:
    """About ``num`` log-spaced steps in ``1..horizon``, always including ``1`` and ``horizon``."""
    horizon = _validate.positive_int("horizon", horizon)
    pts = np.unique(np.round(np.geomspace(1, horizon, max(num, 2))).astype(np.int64))
    return tuple(int(p) for p in np.union1d(pts, [1, horizon]))


def normalize_checkpoints(horizon: int, checkpoints: Any) -> tuple[int, ...]:
    """Checkpoint steps as a sorted tuple: ``None`` = every step, ``"log"``, or a sequence (``T`` added)."""
    if checkpoints is None:
        return tuple(range(1, horizon + 1))
    if isinstance(checkpoints, str):
        if checkpoints != "log":
            raise ValueError(f"checkpoints must be None, 'log' or a sequence of steps, got {checkpoints!r}")
        return log_checkpoints(horizon)
    pts = sorted({int(c) for c in checkpoints} | {horizon})
    if pts[0] < 1 or pts[-1] > horizon:
        raise ValueError(f"checkpoints must lie in [1, horizon={horizon}], got {checkpoints!r}")
    return tuple(pts)


# --- params: grid axes, validation, dtypes ---------------------------------------------------------


def _is_params_node(x: Any) -> bool:
    return isinstance(x, tuple) and hasattr(x, "_fields")


def grid_axes(params: Any, allow_grid: bool, path: str = "params") -> tuple[Any, int | None]:
    """The ``in_axes`` pytree of ``params`` (0 for a swept leaf) and the grid size.

    A leaf is swept when it has one more dimension than its base: scalars by
    default, ``NDIMS[field]`` when the params class declares it.
    """
    if _is_params_node(params):
        base = getattr(type(params), "NDIMS", {})
        axes, size = [], None
        for name, value in zip(params._fields, params, strict=True):
            sub = f"{path}.{name}"
            if _is_params_node(value):
                ax, n = grid_axes(value, allow_grid, sub)
            elif value is None:
                ax, n = None, None
            else:
                ax, n = _leaf_axis(value, base.get(name, 0), allow_grid, sub)
            if n is not None:
                if size is not None and n != size:
                    raise ValueError(f"{sub}: swept leaves must share one grid length, got {n} and {size}")
                size = n
            axes.append(ax)
        return type(params)(*axes), size
    if params is None:
        return None, None
    return _leaf_axis(params, 0, allow_grid, path)


def _leaf_axis(value: Any, base_ndim: int, allow_grid: bool, path: str) -> tuple[int | None, int | None]:
    ndim = np.ndim(value)
    if ndim == base_ndim or (base_ndim > 0 and ndim == 0):
        return None, None
    if allow_grid and ndim == base_ndim + 1:
        return 0, int(np.shape(value)[0])
    allowed = f"{base_ndim}" + (f" (or {base_ndim + 1} with a leading grid axis)" if allow_grid else "")
    raise ValueError(f"{path} must have {allowed} dimensions, got shape {np.shape(value)}")


def canonical_params(params: Any) -> Any:
    """Params leaves as float32 arrays (int32 for integer leaves): one compiled function per shape."""

    def cast(v):
        v = jnp.asarray(v)
        return v.astype(jnp.int32) if jnp.issubdtype(v.dtype, jnp.integer) else v.astype(jnp.float32)

    return jax.tree.map(cast, params)


def _prepare(learner: Learner, env: Env, params: SimParams, allow_grid: bool, horizon: int):
    if not isinstance(params, SimParams):
        raise ValueError("params must be a jaxpriv.SimParams(learner=..., env=...)")
    check_horizon(horizon, learner, "learner")
    check_horizon(horizon, env, "environment")
    axes, size = grid_axes(params, allow_grid)
    if learner.check is not None:
        learner.check(params.learner)
    if env.check is not None:
        env.check(params.env)
    return canonical_params(params), axes, size


# --- one run ---------------------------------------------------------------------------------------


def _kahan_add(acc: tuple[Any, Any], x: Any) -> tuple[Any, Any]:
    """Compensated (Kahan) summation: float32 sums stay accurate over long horizons."""
    total, comp = acc

    def add(s, c, v):
        y = v - c
        s_new = s + y
        return s_new, (s_new - s) - y

    out = jax.tree.map(add, total, comp, x)
    treedef = jax.tree.structure(total)
    leaves = treedef.flatten_up_to(out)
    return treedef.unflatten([p[0] for p in leaves]), treedef.unflatten([p[1] for p in leaves])


class Carry(NamedTuple):
    """Everything one seed's run carries from step to step (what a saved segment holds)."""

    env_state: Any
    agent: Any
    sums: Any  # Kahan-compensated sums of (loss, regret, stats)
    buffers: jax.Array  # [4, m]: regret, loss, best, comparator gap at the checkpoints
    bad_steps: jax.Array  # int32: steps with a non-finite loss / regret / stats
    k_steps: jax.Array  # the key the per-step keys are folded from


def _init_carry(learner: Learner, env: Env, checkpoints: tuple[int, ...], key: PRNGKey, params: SimParams) -> Carry:
    k_env, k_learner, k_steps = jax.random.split(key, 3)
    env_state = env.reset(k_env, params.env)
    agent = learner.init(k_learner, params.learner)
    # Shapes of the per-step stats, to start their sums at zero.
    a0 = jax.eval_shape(learner.act, k_learner, agent, jnp.int32(1))
    _, _, info0 = jax.eval_shape(env.step, k_env, env_state, a0, jnp.int32(1))
    zeros = jax.tree.map(lambda s: jnp.zeros(s.shape, jnp.float32), (info0.loss, info0.regret, info0.stats))
    sums = (zeros, jax.tree.map(jnp.zeros_like, zeros))
    buffers = jnp.zeros((4, len(checkpoints)), jnp.float32)
    return Carry(env_state, agent, sums, buffers, jnp.zeros((), jnp.int32), k_steps)


def _advance(
    learner: Learner,
    env: Env,
    checkpoints: tuple[int, ...],
    length: int,
    carry: Carry,
    start: jax.Array,
) -> Carry:
    """Steps ``start + 1 .. start + length``: one ``lax.scan`` (``start`` is traced: one compile per length)."""
    m = len(checkpoints)
    ckpts = jnp.asarray(checkpoints, jnp.int32)
    k_steps = carry.k_steps

    def record(env_state, sums, t, slot, buffers):
        loss, regret, stats = sums[0]
        gap = jnp.zeros((), jnp.float32)
        if env.comparator is not None:
            best = env.comparator(env_state, stats, t)
            if isinstance(best, tuple):  # a numerical comparator: (best, certified gap)
                best, gap = best
            if env.relative:  # both relative to the env's reference point: no cancellation
                regret = regret - best
            else:
                regret = loss - best
        row = jnp.stack([regret, loss, loss - regret, gap]).astype(jnp.float32)[:, None]
        return jax.lax.dynamic_update_slice_in_dim(buffers, row, slot, axis=1)

    def body(carry, t):
        env_state, agent, sums, buffers, bad_steps = carry
        # t is shared by all seeds: a scalar. "compare_all" is one fused kernel; the default
        # binary search is a nested while loop, several kernel launches per step on a GPU.
        slot = jnp.minimum(jnp.searchsorted(ckpts, t, method="compare_all"), m - 1)
        k_act, k_env_t, k_upd = split_step_key(k_steps, t)
        action = learner.act(k_act, agent, t)
        env_state, feedback, info = env.step(k_env_t, env_state, action, t)
        agent = learner.update(k_upd, agent, action, feedback, t)
        step_vals = jax.tree.map(lambda v: jnp.asarray(v, jnp.float32), (info.loss, info.regret, info.stats))
        finite = jnp.all(jnp.stack([jnp.all(jnp.isfinite(v)) for v in jax.tree.leaves(step_vals)]))
        step_vals = jax.tree.map(lambda v: jnp.where(finite, v, 0.0), step_vals)  # a bad step leaves every sum
        bad_steps = bad_steps + (~finite).astype(jnp.int32)
        sums = _kahan_add(sums, step_vals)
        buffers = jax.lax.cond(
            ckpts[slot] == t,
            lambda b: record(env_state, sums, t, slot, b),
            lambda b: b,
            buffers,
        )
        return (env_state, agent, sums, buffers, bad_steps), None

    ts = jnp.asarray(start, jnp.int32) + jnp.arange(1, length + 1, dtype=jnp.int32)
    state = (carry.env_state, carry.agent, carry.sums, carry.buffers, carry.bad_steps)
    state, _ = jax.lax.scan(body, state, ts)
    return Carry(*state, k_steps)


def _outputs(learner: Learner, env: Env, carry: Carry) -> tuple[Any, ...]:
    """``(regret, loss, best, gap, nonfinite_inputs, nonfinite_steps)`` of a finished carry."""
    del learner
    gap = carry.buffers[3] if _reports_gap(env, carry) else None
    return carry.buffers[0], carry.buffers[1], carry.buffers[2], gap, count_nonfinite(carry.agent), carry.bad_steps


def _run(learner: Learner, env: Env, horizon: int, checkpoints: tuple[int, ...], key: PRNGKey, params: SimParams):
    carry = _init_carry(learner, env, checkpoints, key, params)
    carry = _advance(learner, env, checkpoints, horizon, carry, jnp.int32(0))
    return _outputs(learner, env, carry)


def _reports_gap(env: Env, carry: Carry) -> bool:
    """Whether ``env.comparator`` returns ``(best, gap)`` (decided from shapes, at trace time)."""
    if env.comparator is None:
        return False
    stats = jax.tree.map(lambda s: jnp.zeros(s.shape, jnp.float32), carry.sums[0][2])
    out = jax.eval_shape(env.comparator, carry.env_state, stats, jnp.int32(1))
    return isinstance(out, tuple)


@partial(engine_jit, static_argnums=(0, 1, 2, 3))
def _run_jit(learner, env, horizon, checkpoints, key, params):
    return _run(learner, env, horizon, checkpoints, key, params)


def run(
    learner: Learner,
    env: Env,
    params: SimParams,
    key: PRNGKey,
    horizon: int,
    checkpoints: Any = None,
) -> Result:
    """Run one learner against one environment for ``horizon`` steps: one ``lax.scan``.

    Args:
      learner: a ``Learner``.
      env: an ``Env``.
      params: ``SimParams(learner=..., env=...)``; every leaf at its base shape.
      key: a PRNG key, or an integer seed (``jax.random.key(seed)``). It is
        split into environment, learner and step keys; the step keys are
        ``fold_in(k_steps, t)``, so results do not depend on chunking or batching.
      horizon: ``T >= 1``; at most the learner's and the environment's declared
        ``horizon`` (a ``ValueError`` naming both numbers otherwise).
      checkpoints: ``None`` (every step), ``"log"`` (about 100 log-spaced
        steps) or a sequence of steps; ``T`` is always included.

    Returns:
      A ``Result`` with arrays of shape ``[m]``.
    """
    horizon = _validate.positive_int("horizon", horizon)
    key = as_key(key)
    ckpts = normalize_checkpoints(horizon, checkpoints)
    params, _, _ = _prepare(learner, env, params, allow_grid=False, horizon=horizon)
    out = _run_jit(learner, env, horizon, ckpts, key, params)
    return Result(jnp.asarray(ckpts, jnp.int32), *out)


def use_cpu_cores(n: int | None = None) -> int:
    """Make ``n`` JAX CPU devices (default: one per core this process may use), so sweeps use every core.

    JAX's CPU backend is one device by default, and a sweep's many small per-step kernels
    then keep about one core busy. With one device per core, ``sweep`` splits the seeds over
    them (padded to a multiple of the device count; the padding's runs are dropped):
    measured 1.1–2× faster on 2 cores for PFTAL, OGD, FTAL, MI-OGD and AdaC-UCB at
    1000–1024 seeds (``benchmarks/throughput.py --cpu-devices 2``). Each seed's numbers are
    those of one device up to float32 rounding (the compiled shapes differ). It is a setting
    of the whole process (``jax.devices("cpu")`` lists ``n`` devices), so call it right after
    ``import jax``, before any JAX operation; the ``jaxpriv`` command does (``--cpu-devices``).

    Args:
      n: the number of devices, ``>= 1``; ``None``: ``len(os.sched_getaffinity(0))``.

    Returns:
      ``n``.

    Raises:
      ValueError: ``n < 1``.
      RuntimeError: JAX has already run an operation with another number of CPU devices.
    """
    if n is None:
        n = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    n = _validate.positive_int("n", n)
    try:
        jax.config.update("jax_num_cpu_devices", n)
    except RuntimeError as err:
        have = len(jax.devices("cpu"))
        if have == n:
            return n
        raise RuntimeError(
            f"use_cpu_cores({n}) must run before any JAX operation: JAX already started with {have} CPU "
            "device(s). Call it right after `import jax` (or set JAX_NUM_CPU_DEVICES in the environment)."
        ) from err
    return n


def _shard_seeds(keys: jax.Array) -> jax.Array:
    """Shard a seed-leading array over this process's devices (when their number divides it)."""
    seeds = keys.shape[0]
    n = jax.local_device_count()
    if n > 1 and seeds % n == 0:
        mesh = jax.sharding.Mesh(np.asarray(jax.local_devices()), ("seeds",))
        keys = jax.device_put(keys, jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("seeds")))
    return keys


def _device_width(seeds: int) -> int:
    """``seeds`` rounded up to a multiple of this process's device count (the compiled seed axis)."""
    n = jax.local_device_count()
    return -(-seeds // n) * n


def _pad_seeds(keys: jax.Array, width: int) -> jax.Array:
    """``keys`` padded to ``width`` with copies of the first key (their runs are dropped), then sharded.

    Padding costs at most ``devices - 1`` extra runs and lets every device take an
    equal share of any seed count (100 seeds on 16 devices run as 112).
    """
    if keys.shape[0] < width:
        keys = jnp.concatenate([keys, jnp.repeat(keys[:1], width - keys.shape[0], axis=0)])
    return _shard_seeds(keys)


def map_seeds_and_grid(one: Any, axes: Any, chunk: int | None, keys: jax.Array, params: Any) -> Any:
    """``one(key, params)`` vmapped over ``keys`` (in batches of ``chunk``) and over the grid axes of ``params``.

    The same ``keys`` serve every grid point (common random numbers). ``axes`` is
    the ``in_axes`` pytree of ``params`` from ``grid_axes`` (``None``: no grid).
    """

    def over_seeds(p):
        if chunk is None or chunk >= keys.shape[0]:
            return jax.vmap(one, in_axes=(0, None))(keys, p)
        return jax.lax.map(lambda k: one(k, p), keys, batch_size=chunk)

    if axes is None:
        return over_seeds(params)
    return jax.vmap(over_seeds, in_axes=(axes,))(params)


@partial(engine_jit, static_argnums=(0, 1, 2, 3, 4, 5))
def _sweep_jit(learner, env, horizon, checkpoints, axes, chunk, keys, params):
    return map_seeds_and_grid(partial(_run, learner, env, horizon, checkpoints), axes, chunk, keys, params)


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
    size, the segment length and a resume do not change the numbers: on a
    CPU all driver runs agree bit for bit (tested), and agree with the
    one-call sweep to float32 rounding (about 1e-6 relative; the pieces are
    compiled separately, so XLA may fuse a multiply-add differently; no sum
    changes order). On a GPU, kernels compiled for other chunk or segment
    shapes may differ by an ulp (measured on an H100); a resumed run with the
    same chunk and segment reproduces the uninterrupted one.

    Several processes (``jax.distributed.initialize`` called before): the seeds
    are split in equal contiguous blocks over the processes (``seeds`` must be
    a multiple of ``jax.process_count()``), each runs its block on its local
    devices, and the results are gathered on every process: the same numbers as
    one process.

    Args:
      learner, env: the components.
      params: ``SimParams``; swept leaves carry a leading grid axis.
      key: the base key (or an integer seed); seed ``i`` uses ``split(key, seeds)[i]``.
      horizon: ``T >= 1``, at most the components' declared horizons.
      seeds: the number of independent runs.
      checkpoints: as in ``run``; default ``"log"``.
      chunk: run the seeds in batches of this size (bounded memory); the
        numbers do not change.
      segment: scan the horizon in compiled segments of this many steps
        (``1 <= segment``; a last shorter segment is allowed).
      stats: return a ``SweepStats`` (mean, variance, extremes and quantiles of
        the regret over seeds at each checkpoint; ``jaxpriv.stats``) instead of
        per-seed arrays; chunk summaries are merged exactly (Chan's update).
      save: a file the sweep's progress is saved to after every segment (the
        carry of the running chunk and the outputs of the finished ones, written
        atomically). If it exists, the sweep resumes from it — the same numbers
        as an uninterrupted run — after checking that it was written by the same
        configuration (learner, environment, horizon, seeds, chunk, segment,
        checkpoints, key, params, stats), naming any mismatch in a ``ValueError``.
        Deleted when the sweep finishes.
      progress: ``True`` prints one line per segment to stderr; a callable is
        called as ``progress(done, total)`` in seed-steps.

    Returns:
      A ``Result`` with arrays of shape ``[G, seeds, m]`` (or ``[seeds, m]``
      when nothing is swept), or a ``SweepStats`` when ``stats`` is given.
    """
    horizon = _validate.positive_int("horizon", horizon)
    seeds = _validate.positive_int("seeds", seeds)
    if chunk is not None:
        chunk = _validate.positive_int("chunk", chunk)
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
        out = _sweep_jit(learner, env, horizon, ckpts, axes, chunk, _pad_seeds(keys, _device_width(local)), params)
        out = (x if x is None else _take_seeds(x, local, axes is not None) for x in out)
        return _gather_result(Result(jnp.asarray(ckpts, jnp.int32), *out), axes is not None)
    driver = _Driver(learner, env, horizon, ckpts, axes, params, chunk or local, segment or horizon, stats)
    if save is not None:
        save = Path(save)
        if procs > 1:
            save = save.with_name(f"{save.name}.process{pid}")
        fingerprint = _fingerprint(learner, env, horizon, seeds, chunk, segment, ckpts, all_keys, params, stats)
        fingerprint["process"] = f"{pid} of {procs}"
    else:
        fingerprint = None
    out = driver.run(keys, save, fingerprint, progress)
    if stats is None:
        return _gather_result(out, axes is not None)
    return finalize(stats, _gather_accumulator(out), np.asarray(ckpts))


def _gather_result(result: Result, grid: bool) -> Result:
    """Concatenate every process's seeds (identity with one process)."""
    if jax.process_count() == 1:
        return result
    from jax.experimental import multihost_utils

    axis = 1 if grid else 0

    def gather(x):
        if x is None:
            return None
        g = np.asarray(multihost_utils.process_allgather(x, tiled=False))  # [P, ...]
        g = np.moveaxis(g, 0, axis)
        shape = (*g.shape[:axis], g.shape[axis] * g.shape[axis + 1], *g.shape[axis + 2 :])
        return jnp.asarray(g.reshape(shape))

    return Result(result.steps, *(gather(x) for x in result[1:]))


def _gather_accumulator(acc: Accumulator) -> Accumulator:
    """Merge every process's statistics (identity with one process)."""
    if jax.process_count() == 1:
        return acc
    from jax.experimental import multihost_utils

    parts = [np.asarray(multihost_utils.process_allgather(np.asarray(x), tiled=False)) for x in acc]
    merged = None
    for p in range(jax.process_count()):
        merged = merge(merged, Accumulator(*(x[p] for x in parts)))
    return merged


# --- the segmented driver ------------------------------------------------------------------------


@partial(engine_jit, static_argnums=(0, 1, 2, 3))
def _init_jit(learner, env, checkpoints, axes, keys, params):
    return map_seeds_and_grid(partial(_init_carry, learner, env, checkpoints), axes, None, keys, params)


def _over_seeds_and_grid(fn: Callable, grid: bool) -> Callable:
    fn = jax.vmap(fn)
    return jax.vmap(fn) if grid else fn


@partial(engine_jit, static_argnums=(0, 1, 2, 3, 4))
def _advance_jit(learner, env, checkpoints, length, grid, carry, start):
    return _over_seeds_and_grid(lambda c: _advance(learner, env, checkpoints, length, c, start), grid)(carry)


@partial(engine_jit, static_argnums=(0, 1, 2))
def _outputs_jit(learner, env, grid, carry):
    return _over_seeds_and_grid(partial(_outputs, learner, env), grid)(carry)


@partial(engine_jit, static_argnums=(0, 1))
def _summary_jit(stats, grid, outputs, valid):
    regret, loss, _, _, nf_in, nf_steps = outputs
    return chunk_summary(stats, regret, loss, nf_in, nf_steps, valid)


class _Driver:
    """Seed chunks × horizon segments, each a compiled call on a fixed shape; saves and resumes."""

    def __init__(self, learner, env, horizon, checkpoints, axes, params, chunk, segment, stats):
        self.learner, self.env, self.horizon, self.ckpts = learner, env, horizon, checkpoints
        self.axes, self.params, self.chunk, self.segment, self.stats = axes, params, chunk, segment, stats
        self.grid = axes is not None

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
                print(
                    f"jaxpriv: resuming {save} at chunk {first_chunk + 1}/{n_chunks}, "
                    f"segment {first_segment + 1}/{n_segments}",
                    file=sys.stderr,
                    flush=True,
                )
        total = n * self.horizon
        width = _device_width(chunk)  # the compiled chunk: a multiple of the device count
        for c in range(first_chunk, n_chunks):  # a driver loop over compiled chunks, not over seeds
            ks = keys[c * chunk : (c + 1) * chunk]
            valid = np.arange(width) < ks.shape[0]  # the padding's runs are dropped
            carry = _init_jit(self.learner, self.env, self.ckpts, self.axes, _pad_seeds(ks, width), self.params)
            start_seg = 0
            if carry_leaves is not None:
                carry = _restore(carry, carry_leaves)
                start_seg, carry_leaves = first_segment, None
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
            out = _outputs_jit(self.learner, self.env, self.grid, carry)
            if self.stats is not None:
                acc = merge(acc, to_accumulator(_summary_jit(self.stats, self.grid, out, jnp.asarray(valid))))
            else:
                keep = int(valid.sum())
                done.append(tuple(None if x is None else _take_seeds(np.asarray(x), keep, self.grid) for x in out))
            if save is not None and c < n_chunks - 1:
                _save(save, fingerprint, c + 1, 0, None, done, acc)
        if save is not None and save.exists():
            save.unlink()
        if self.stats is not None:
            return acc
        axis = 1 if self.grid else 0
        cols = [None if done[0][i] is None else np.concatenate([d[i] for d in done], axis) for i in range(6)]
        return Result(jnp.asarray(self.ckpts, jnp.int32), *(None if x is None else jnp.asarray(x) for x in cols))


def _take_seeds(x: Any, keep: int, grid: bool) -> Any:
    if x.shape[1 if grid else 0] == keep:
        return x
    return x[:, :keep] if grid else x[:keep]


def padded_seed_keys(key: PRNGKey, seeds: int) -> jax.Array:
    """``split(key, seeds)`` padded to a multiple of the local device count and sharded over the devices.

    For simulators other than ``sweep`` that vmap over seeds: every device takes an
    equal share whatever ``seeds`` is; ``take_seeds`` drops the padding's runs.
    """
    return _pad_seeds(jax.random.split(key, seeds), _device_width(seeds))


def take_seeds(tree: Any, seeds: int, grid: bool) -> Any:
    """The first ``seeds`` runs of every leaf of ``tree`` (seed axis 0, or 1 after a grid axis)."""
    return jax.tree.map(lambda x: _take_seeds(x, seeds, grid), tree)


# --- saving and resuming -------------------------------------------------------------------------


def _digest(*arrays: Any) -> str:
    h = hashlib.sha256()
    for a in arrays:
        a = np.asarray(a)
        h.update(str((a.shape, a.dtype.str)).encode())
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()[:16]


def _name(fn: Any) -> str:
    return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', repr(fn))}"


def _fingerprint(learner, env, horizon, seeds, chunk, segment, ckpts, keys, params, stats) -> dict:
    """What a saved sweep must match to be resumed, field by field."""
    return {
        "learner": _name(learner.init),
        "environment": _name(env.reset),
        "horizon": horizon,
        "seeds": seeds,
        "chunk": chunk,
        "segment": segment,
        "checkpoints": _digest(np.asarray(ckpts)),
        "key": _digest(jax.random.key_data(keys)),
        "params": _digest(*jax.tree.leaves(params)) + " " + str(jax.tree.structure(params)),
        "stats": repr(stats),
    }


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
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        np.savez(f, meta=np.asarray(json.dumps(meta)), **arrays)
    os.replace(tmp, path)


def _load(path: Path, fingerprint: dict) -> tuple:
    with np.load(path, allow_pickle=False) as z:
        meta = json.loads(str(z["meta"]))
        saved = meta["fingerprint"]
        wrong = [k for k in fingerprint if saved.get(k) != fingerprint[k]]
        if wrong:
            detail = "; ".join(f"{k}: saved {saved.get(k)!r}, now {fingerprint[k]!r}" for k in wrong)
            raise ValueError(
                f"{path} was written by another sweep configuration ({detail}); delete it or pass another save="
            )
        leaves = None
        if meta["carry"]:
            leaves = [z[f"carry_{i}"] for i in range(sum(k.startswith("carry_") for k in z.files))]
        done = []
        for j in range(meta["done"]):
            done.append(tuple(z[f"done_{j}_{i}"] if f"done_{j}_{i}" in z.files else None for i in range(6)))
        acc = None
        if "acc_n" in z.files:
            acc = Accumulator(*(z[f"acc_{name}"] for name in Accumulator._fields))
    return meta["chunk"], meta["segment"], leaves, done, acc


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


def summarize(values: jax.Array, axis: int = -2) -> tuple[np.ndarray, np.ndarray]:
    """Mean and standard error over the seed axis (default: the second to last)."""
    v = np.asarray(values, np.float64)
    n = v.shape[axis]
    return v.mean(axis), v.std(axis, ddof=1 if n > 1 else 0) / np.sqrt(n)
