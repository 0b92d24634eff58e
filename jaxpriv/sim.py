"""The engine: one ``lax.scan`` over the horizon, ``vmap`` over seeds and a params grid."""

from __future__ import annotations

from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxpriv import _validate
from jaxpriv._base import Env, Learner, PRNGKey, as_key, check_horizon, count_nonfinite, split_step_key


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


def _run(learner: Learner, env: Env, horizon: int, checkpoints: tuple[int, ...], key: PRNGKey, params: SimParams):
    k_env, k_learner, k_steps = jax.random.split(key, 3)
    env_state = env.reset(k_env, params.env)
    agent = learner.init(k_learner, params.learner)
    m = len(checkpoints)
    ckpts = jnp.asarray(checkpoints, jnp.int32)

    # Shapes of the per-step stats, to start their sums at zero.
    a0 = jax.eval_shape(learner.act, k_learner, agent, jnp.int32(1))
    _, _, info0 = jax.eval_shape(env.step, k_env, env_state, a0, jnp.int32(1))
    zeros = jax.tree.map(lambda s: jnp.zeros(s.shape, jnp.float32), (info0.loss, info0.regret, info0.stats))
    sums = (zeros, jax.tree.map(jnp.zeros_like, zeros))
    buffers = jnp.zeros((4, m), jnp.float32)  # regret, loss, best, comparator gap
    bad_steps = jnp.zeros((), jnp.int32)

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

    def body(carry, xs):
        env_state, agent, sums, buffers, bad_steps = carry
        t = xs
        slot = jnp.minimum(jnp.searchsorted(ckpts, t), m - 1)  # t is shared by all seeds: a scalar
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

    ts = jnp.arange(1, horizon + 1, dtype=jnp.int32)
    carry = (env_state, agent, sums, buffers, bad_steps)
    (_, agent, _, buffers, bad_steps), _ = jax.lax.scan(body, carry, ts)
    gap = buffers[3] if _reports_gap(env, k_env, env_state, info0) else None
    return buffers[0], buffers[1], buffers[2], gap, count_nonfinite(agent), bad_steps


def _reports_gap(env: Env, key: PRNGKey, env_state: Any, info: Any) -> bool:
    """Whether ``env.comparator`` returns ``(best, gap)`` (decided from shapes, at trace time)."""
    if env.comparator is None:
        return False
    stats = jax.tree.map(lambda s: jnp.zeros(s.shape, jnp.float32), info.stats)
    out = jax.eval_shape(env.comparator, env_state, stats, jnp.int32(1))
    return isinstance(out, tuple)


@partial(jax.jit, static_argnums=(0, 1, 2, 3))
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


def seed_keys(key: PRNGKey, seeds: int) -> jax.Array:
    """``split(key, seeds)``, sharded along the seed axis over the devices present.

    With several devices (GPUs, TPU cores, or CPU devices from
    ``--xla_force_host_platform_device_count``) and ``seeds`` divisible by their
    number, the compiled sweep is partitioned over the seed axis; the numbers do
    not change. With one device this is ``split(key, seeds)``.
    """
    keys = jax.random.split(key, seeds)
    n = jax.device_count()
    if n > 1 and seeds % n == 0:
        mesh = jax.sharding.Mesh(np.asarray(jax.devices()), ("seeds",))
        keys = jax.device_put(keys, jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("seeds")))
    return keys


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


@partial(jax.jit, static_argnums=(0, 1, 2, 3, 4, 5))
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
) -> Result:
    """Run many seeds, and a grid of params values, in one compiled call.

    Every params leaf given with one extra leading dimension (a scalar given as
    a vector of values, ``center[d]`` given as ``[G, d]``) is swept: all swept
    leaves share that leading length ``G`` and are zipped, not crossed (build
    a product grid with ``jnp.meshgrid`` first). The same ``seeds`` keys are
    used at every grid point (common random numbers), so differences between
    grid points come from the params, not from luck. Params values are traced:
    a new grid of the same shape does not recompile.

    Args:
      learner, env: the components.
      params: ``SimParams``; swept leaves carry a leading grid axis.
      key: the base key (or an integer seed); seed ``i`` uses ``split(key, seeds)[i]``.
      horizon: ``T >= 1``, at most the components' declared horizons.
      seeds: the number of independent runs.
      checkpoints: as in ``run``; default ``"log"``.
      chunk: run the seeds in batches of this size (bounded memory); the
        numbers do not change.

    Returns:
      A ``Result`` with arrays of shape ``[G, seeds, m]`` (or ``[seeds, m]``
      when nothing is swept).
    """
    horizon = _validate.positive_int("horizon", horizon)
    seeds = _validate.positive_int("seeds", seeds)
    if chunk is not None:
        chunk = _validate.positive_int("chunk", chunk)
    ckpts = normalize_checkpoints(horizon, checkpoints)
    params, axes, size = _prepare(learner, env, params, allow_grid=True, horizon=horizon)
    keys = seed_keys(as_key(key), seeds)
    out = _sweep_jit(learner, env, horizon, ckpts, axes if size else None, chunk, keys, params)
    return Result(jnp.asarray(ckpts, jnp.int32), *out)


def summarize(values: jax.Array, axis: int = -2) -> tuple[np.ndarray, np.ndarray]:
    """Mean and standard error over the seed axis (default: the second to last)."""
    v = np.asarray(values, np.float64)
    n = v.shape[axis]
    return v.mean(axis), v.std(axis, ddof=1 if n > 1 else 0) / np.sqrt(n)
