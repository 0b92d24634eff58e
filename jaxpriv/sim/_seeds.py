"""Seeds: their keys, their padding and sharding over devices, batching over seeds, and processes.

``map_seeds`` (and ``map_seeds_and_grid``, over a params grid too) is the one way the engine
batches a per-seed function: ``vmap`` over the seed keys, or ``lax.map`` in chunks. Seed keys
are padded to a multiple of the local device count and sharded over the devices
(``padded_seed_keys``; ``take_seeds`` drops the padding's runs); with several processes each
runs its block of seeds and ``_gather_result`` / ``_gather_accumulator`` collect them.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxpriv import _validate
from jaxpriv._base import PRNGKey
from jaxpriv.sim._check import check_map_seeds
from jaxpriv.sim._scan import Result
from jaxpriv.stats import Accumulator, merge


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

    skip = ("steps", "private", "info")
    arrays = {name: gather(getattr(result, name)) for name in Result._fields if name not in skip}
    return Result(result.steps, **arrays, private=result.private, info=jax.tree.map(gather, result.info))


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


def _take_seeds(x: Any, keep: int, grid: bool) -> Any:
    if x.shape[1 if grid else 0] == keep:
        return x
    return x[:, :keep] if grid else x[:keep]


def map_seeds(
    fn: Callable[..., Any], keys: jax.Array, params: Any = None, chunk: int | None = None, *, axes: Any = None
) -> Any:
    """The way to batch a per-seed function over seeds: ``fn(key)`` (or ``fn(key, params)``) for every key.

    ``jax.vmap`` over ``keys``, or ``jax.lax.map`` in batches of ``chunk`` seeds (bounded memory);
    with ``axes`` (the ``in_axes`` of ``params`` from ``grid_axes``) also ``vmap`` over the params grid,
    the same keys at every grid point (common random numbers). ``sweep`` batches ``_run`` this way
    (``map_seeds_and_grid``), and ``jaxpriv.tune`` its per-seed derivatives; a one-seed
    ``rollout`` batched over ``split(key, seeds)`` gives the runs of ``sweep``'s seeds.

    Args:
      fn: ``fn(key)`` when ``params`` is ``None``, else ``fn(key, params)`` (one grid point's params).
      keys: ``[S]`` seed keys (``jax.random.split(key, S)``, or ``padded_seed_keys``).
      params: passed to ``fn`` unbatched, or ``None``.
      chunk: ``lax.map`` over the seeds in batches of this size; ``None``: one ``vmap``.
      axes: the grid's ``in_axes`` pytree of ``params`` (``None``: no grid).

    Returns:
      ``fn``'s outputs with a leading ``[S]`` axis (``[G, S]`` with a grid).

    Raises:
      ValueError: before anything is traced, naming the argument (``_check.check_map_seeds``): ``fn`` not a
        function of one argument (two with ``params``), ``keys`` not a non-empty 1-d key array, ``chunk`` not
        ``None`` or an integer ``>= 1`` (``sweep``'s check), ``axes`` without ``params`` or not of their
        structure. Axes that sweep nothing (``grid_axes`` of params without a grid) mean no grid.

    Examples:
      >>> import jax, jaxpriv as jp
      >>> from jaxpriv import envs, oco, sets
      >>> ball = sets.l2_ball(2)
      >>> env, learner = envs.quadratic_stream(ball), oco.ogd(ball)
      >>> params = jp.SimParams(oco.OGDParams(), envs.QuadraticParams())
      >>> keys = jax.random.split(jax.random.key(0), 4)
      >>> out = map_seeds(lambda k: jp.sim.rollout(learner, env, params, k, 8), keys)
      >>> out.records.loss.shape
      (4, 8)
    """
    chunk, axes = check_map_seeds(fn, keys, params, chunk, axes)
    if params is None:
        return map_seeds_and_grid(lambda k, _: fn(k), None, chunk, keys, None)
    return map_seeds_and_grid(fn, axes, chunk, keys, params)


def padded_seed_keys(key: PRNGKey, seeds: int) -> jax.Array:
    """``split(key, seeds)`` padded to a multiple of the local device count and sharded over the devices.

    For simulators other than ``sweep`` that vmap over seeds: every device takes an
    equal share whatever ``seeds`` is; ``take_seeds`` drops the padding's runs.
    """
    return _pad_seeds(jax.random.split(key, seeds), _device_width(seeds))


def take_seeds(tree: Any, seeds: int, grid: bool) -> Any:
    """The first ``seeds`` runs of every leaf of ``tree`` (seed axis 0, or 1 after a grid axis)."""
    return jax.tree.map(lambda x: _take_seeds(x, seeds, grid), tree)
