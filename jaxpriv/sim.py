"""The engine: one ``lax.scan`` over the horizon, ``vmap`` over seeds and a params grid."""

from __future__ import annotations

import collections
import functools
import itertools
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

from jaxpriv import _resume, _validate
from jaxpriv._base import (
    Env,
    Learner,
    PRNGKey,
    as_key,
    check_horizon,
    check_params_class,
    declared,
    declared_private,
    engine_jit,
    nonfinite_inputs,
    split_step_key,
)
from jaxpriv._inplace import set_row
from jaxpriv._kahan import kahan_add, kahan_init
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
      gap: ``[..., m]`` or ``None``: the ``gap`` the comparator returns with ``best``
        (``ComparatorFn``): for a comparator solved numerically, a certified bound on the
        solver's suboptimality, ``best - min_{w∈C} sum f_s(w) <= gap``, so the exact regret
        lies in ``[regret, regret + gap]``. ``None`` when the comparator declares itself
        exact (a closed form, ``jaxpriv.envs.exact_comparator``: its gap is always 0) or
        the environment has none.
      nonfinite_inputs: ``[...]`` int32, inputs with a NaN / ±inf entry that the
        learner and its private mechanisms replaced by zero over the run, read from the
        final learner state by ``jaxpriv._base.nonfinite_inputs`` (the learner's declared
        ``nonfinite``, else the sum of every ``nonfinite`` field of the state;
        ``jaxpriv._base.zero_nonfinite``). 0 in a healthy run.
      nonfinite_steps: ``[...]`` int32, steps whose loss, regret or comparator
        statistics from the environment were NaN / ±inf. Such a step is left out
        of every sum (the learner's loss and the comparator's alike), so the
        reported regret is that of the finite steps; 0 in a healthy run.
      private: whether the learner's stated privacy guarantee holds for these numbers, as the
        learner declares it (``jaxpriv._base.declared_private``): ``False`` for a non-private
        learner and for a private one built with an opt-out of its guarantee (unclipped rewards,
        an ablation: ``private=False`` at construction); ``None`` when the learner declares
        nothing (a user's own). A plain bool, not an array; the guarantee's level is the budget
        in the params (``inf``: none).

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
    private: bool | None = None

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
    cannot take, and a declared arm count that differs (``jaxpriv._base.declare``: a policy for
    5 arms on a 3-armed instance, where shapes agree) each raise a ``ValueError`` naming both sides.

    Args:
      learner, env: the components.
      params: ``SimParams`` (canonical, or any arrays); swept leaves carry a leading grid axis.
      axes: the ``in_axes`` of ``params`` from ``grid_axes`` (``None``: nothing swept).
    """
    if axes is None:
        axes, _ = grid_axes(params, allow_grid=True)
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
    want_shape = declared(env.step, "action_shape")
    if want_shape is not None and isinstance(action, jax.ShapeDtypeStruct) and tuple(action.shape) != tuple(want_shape):
        raise ValueError(
            f"the learner ({lname}) plays actions of shape {tuple(action.shape)} but the environment ({ename}) "
            f"takes actions of shape {tuple(want_shape)}: build both on the same dimension (the same constraint set)"
        )
    env_arms, learner_arms = declared(env.step, "num_arms"), declared(learner.act, "num_arms")
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
    sides = (("learner", lname, agent, new_agent), ("environment", ename, env_state, new_env_state))
    for who, name, before, after in sides:
        change = _changed(before, after)
        if change is not None:
            raise ValueError(
                f"the {who}'s state ({name}) changes shape over one step against this "
                f"{'environment' if who == 'learner' else 'learner'} (action {act_desc}): {change}; "
                "the learner and the environment were likely built for different sizes (dimension or number of arms)"
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
    horizons, grid axes, the params classes the components declare, the components' own checks,
    then one traced step of the pair (``check_compatible``).
    """
    if not isinstance(params, SimParams):
        raise ValueError("params must be a jaxpriv.SimParams(learner=..., env=...)")
    check_horizon(horizon, learner, "learner")
    check_horizon(horizon, env, "environment")
    _check_leaves(params)
    axes, size = grid_axes(params, allow_grid)
    check_params_class(learner.init, params.learner, "learner", "params.learner")
    check_params_class(env.reset, params.env, "environment", "params.env")
    _call_check(learner.check, params.learner, "learner", learner.init, "params.learner")
    _call_check(env.check, params.env, "environment", env.reset, "params.env")
    params = canonical_params(params)
    check_compatible(learner, env, params, axes)
    return params, axes, size


# --- one run ---------------------------------------------------------------------------------------


class CheckpointRows(NamedTuple):
    """What the engine records at the checkpoints: one float32 entry per checkpoint in each field (shape ``[m]``).

    The carry holds them as one ``[m + 1, 4]`` array (``Carry.rows``; columns in this order, row ``m`` a
    scratch row), so a step writes one row in place; ``CheckpointRows.of`` reads it.

    Attributes:
      regret: the cumulative regret at each checkpoint (``Result.regret``).
      loss: the cumulative loss ``sum_{s<=t} f_s(a_s)`` (``Result.loss``).
      best: the comparator's cumulative loss, ``loss - regret`` (``Result.best``).
      gap: the comparator's certified gap (``Result.gap``); 0 without a comparator.
    """

    regret: jax.Array
    loss: jax.Array
    best: jax.Array
    gap: jax.Array

    @classmethod
    def of(cls, rows: jax.Array) -> CheckpointRows:
        """The named fields of a carry's ``[..., m + 1, 4]`` rows (leading axes kept)."""
        return cls(*(rows[..., :-1, i] for i in range(len(cls._fields))))


class Carry(NamedTuple):
    """Everything one seed's run carries from step to step (what a saved segment holds)."""

    env_state: Any
    agent: Any
    sums: tuple[Any, Any]  # Kahan-compensated sums of (loss, regret, stats): (total, compensation), jaxpriv._kahan
    rows: jax.Array  # [m + 1, 4]: the CheckpointRows at the checkpoints, filled in as the run passes them
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
    sums = tuple(kahan_init(zeros))  # a plain (total, compensation) pair: the scan's carry keeps one structure
    rows = jnp.zeros((len(checkpoints) + 1, len(CheckpointRows._fields)), jnp.float32)
    return Carry(env_state, agent, sums, rows, jnp.zeros((), jnp.int32), k_steps)


def _branch_free_comparator() -> bool:
    """Whether the step evaluates an exact comparator at every step rather than under a conditional.

    On a GPU a conditional costs a launch and a read of its predicate at every step (issue 36), more
    than a closed-form comparator. On a CPU a conditional is a plain branch, and evaluating the quadratic
    stream's comparator at every step made OGD's step 1.3x slower (CPU time, one core, 1024 seeds,
    T = 2048), so the CPU keeps the conditional. Read at trace time.
    """
    return jax.default_backend() != "cpu"


def _step(learner: Learner, env: Env, checkpoints: tuple[int, ...], carry: Carry, t: jax.Array) -> Carry:
    """One seed's step ``t`` (a shared, unbatched int32): act, the environment's answer, update, bookkeeping."""
    m = len(checkpoints)
    ckpts = jnp.asarray(checkpoints, jnp.int32)
    env_state, agent, sums, rows, bad_steps, k_steps = carry

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
    sums = tuple(kahan_add(sums, step_vals))
    # The checkpoint row: written at every step, branch-free and in place, to the slot of the next
    # checkpoint (its last write is at the checkpoint itself; after the last checkpoint, to the scratch
    # row m). The comparator runs under the step's one conditional, at the checkpoints only, except
    # that on an accelerator an exact (closed-form) comparator is evaluated at every step instead:
    # a few vector operations, where a conditional is a launch and a predicate read per step.
    loss, regret, stats = sums[0]
    zero = jnp.zeros((), jnp.float32)
    best, gap = zero, zero
    if env.comparator is not None:

        def compare() -> tuple[jax.Array, jax.Array]:
            return tuple(jnp.asarray(v, jnp.float32) for v in env.comparator(env_state, stats, t))

        if declared(env.comparator, "exact") and _branch_free_comparator():
            best, gap = compare()
        else:
            best, gap = jax.lax.cond(ckpts[slot] == t, compare, lambda: (zero, zero))
        # relative: both relative to the env's reference point (no cancellation)
        regret = regret - best if env.relative else loss - best
    row = jnp.stack([jnp.asarray(v, jnp.float32) for v in (regret, loss, loss - regret, gap)])
    rows = set_row(rows, row, jnp.where(t <= ckpts[slot], slot, m))
    return Carry(env_state, agent, sums, rows, bad_steps, k_steps)


def _advance(
    learner: Learner,
    env: Env,
    checkpoints: tuple[int, ...],
    length: int,
    carry: Carry,
    start: jax.Array,
) -> Carry:
    """Steps ``start + 1 .. start + length``: one ``lax.scan`` (``start`` is traced: one compile per length)."""

    k_steps = carry.k_steps  # closed over, not carried: the loop's state is what changes

    def body(state, t):
        return tuple(_step(learner, env, checkpoints, Carry(*state, k_steps), t))[:-1], None

    ts = jnp.asarray(start, jnp.int32) + jnp.arange(1, length + 1, dtype=jnp.int32)
    state, _ = jax.lax.scan(body, tuple(carry)[:-1], ts)
    return Carry(*state, k_steps)


def _reports_gap(env: Env) -> bool:
    """Whether ``Result.gap`` holds the comparator's gaps: it has one and does not declare itself exact."""
    return env.comparator is not None and not declared(env.comparator, "exact")


def _outputs(learner: Learner, env: Env, carry: Carry) -> tuple[Any, ...]:
    """``(regret, loss, best, gap, nonfinite_inputs, nonfinite_steps)`` of a finished carry."""
    rows = CheckpointRows.of(carry.rows)
    gap = rows.gap if _reports_gap(env) else None
    return rows.regret, rows.loss, rows.best, gap, nonfinite_inputs(learner, carry.agent), carry.bad_steps


def _run(learner: Learner, env: Env, horizon: int, checkpoints: tuple[int, ...], key: PRNGKey, params: SimParams):
    carry = _init_carry(learner, env, checkpoints, key, params)
    carry = _advance(learner, env, checkpoints, horizon, carry, jnp.int32(0))
    return _outputs(learner, env, carry)


# --- compile counts --------------------------------------------------------------------------------

#: The kinds of compiled function ``compile_count`` counts, each with the calls that compile it.
COMPILED_KINDS: dict[str, str] = {
    "run": "jaxpriv.run",
    "sweep": "jaxpriv.sweep in one call (no segment, stats, save or progress)",
    "driver": "jaxpriv.sweep's segmented driver (segment, stats, save or progress): its start, segment, "
    "output and statistics pieces",
    "tune": "jaxpriv.tune.value_and_grad (and minimize, which calls it)",
}
_COMPILES: collections.Counter[str] = collections.Counter()


def counts_compiles(kind: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorate a function before ``jax.jit`` (or ``engine_jit``) so ``compile_count(kind)`` counts its traces.

    JAX traces a jitted function once for each new signature (shapes, dtypes, weak types, static
    arguments), right before compiling it; a call that reuses a compiled version does not run the
    Python function at all. Counting the calls of the Python function therefore counts
    compilations, the way ``chex.assert_max_traces`` does.
    """
    if kind not in COMPILED_KINDS:
        raise ValueError(f"kind must be one of {tuple(COMPILED_KINDS)}, got {kind!r}")

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def traced(*args: Any, **kwargs: Any) -> Any:
            _COMPILES[kind] += 1
            return fn(*args, **kwargs)

        return traced

    return decorate


def compile_count(kind: str | None = None) -> int:
    """How many times this process compiled the engine's functions: the public way to check "no recompilation".

    Every call with a new signature (shapes, dtypes, the components, horizon, checkpoints, chunk,
    segment length, grid axes) traces and compiles the engine once; a call that only changes
    values (a new privacy grid of the same shape, another key) reuses it and leaves the count
    unchanged. A call refused with a ``ValueError`` before compiling leaves it unchanged too.

    Args:
      kind: one of ``COMPILED_KINDS`` (``"run"``, ``"sweep"``, ``"driver"``, ``"tune"``), or ``None``
        for all of them.

    Returns:
      The number of compilations so far (it only grows).

    Raises:
      ValueError: an unknown ``kind``.

    Examples:
      >>> import jax.numpy as jnp, jaxpriv as jp
      >>> from jaxpriv import envs, oco, sets
      >>> ball = sets.l2_ball(2)
      >>> env, learner = envs.quadratic_stream(ball), oco.ogd(ball)
      >>> def params(h):
      ...     return jp.SimParams(oco.OGDParams(jnp.asarray(h, jnp.float32)), envs.QuadraticParams())
      >>> _ = jp.sweep(learner, env, params([1.0, 2.0]), 0, 8, seeds=2)
      >>> before = compile_count()
      >>> _ = jp.sweep(learner, env, params([3.0, 4.0]), 1, 8, seeds=2)  # new values, same shapes
      >>> compile_count() - before
      0
    """
    if kind is None:
        return sum(_COMPILES.values())
    if kind not in COMPILED_KINDS:
        raise ValueError(f"kind must be one of {tuple(COMPILED_KINDS)} or None, got {kind!r}")
    return _COMPILES[kind]


@partial(engine_jit, static_argnums=(0, 1, 2, 3))
@counts_compiles("run")
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
      key: a PRNG key, or an integer seed in ``[0, 2**64)`` (``jaxpriv._base.as_key``). It is
        split into environment, learner and step keys; the step keys are
        ``fold_in(k_steps, t)``, so results do not depend on chunking or batching.
      horizon: ``T >= 1``; at most the learner's and the environment's declared
        ``horizon`` (a ``ValueError`` naming both numbers otherwise).
      checkpoints: ``None`` (every step), ``"log"`` (about 100 log-spaced
        steps) or an increasing sequence of whole steps in ``[1, T]``; ``T`` is
        always included (``normalize_checkpoints``).

    Returns:
      A ``Result`` with arrays of shape ``[m]``.

    Raises:
      ValueError: before anything is compiled, naming the argument: a bad key,
        horizon or checkpoints; a params leaf that is not numeric or does not fit
        float32 / int32, NaN in the environment's params, another component's
        params class, a component's own check; a learner and an environment that
        do not fit together (``check_compatible``: dimensions, arm counts).
    """
    horizon = _validate.horizon(horizon)
    key = as_key(key)
    ckpts = normalize_checkpoints(horizon, checkpoints)
    params, _, _ = _prepare(learner, env, params, allow_grid=False, horizon=horizon)
    out = _run_jit(learner, env, horizon, ckpts, key, params)
    return Result(jnp.asarray(ckpts, jnp.int32), *out, private=declared_private(learner))


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
@counts_compiles("sweep")
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
        backend and device count (``jaxpriv._resume``); a file saved under a batching
        layout that older versions offered (``layout="seeds_first"`` or
        ``"seeds_last"``) is refused too. A truncated, corrupted or edited file (the checksum
        covers its metadata too) is a ``ValueError`` naming it; a path that cannot
        be written (a folder, under a file, read-only) is refused before anything
        runs. Deleted when the sweep finishes.
      progress: ``True`` prints one line per segment to stderr; a callable is
        called as ``progress(done, total)`` in seed-steps.

    Returns:
      A ``Result`` with arrays of shape ``[G, seeds, m]`` (or ``[seeds, m]``
      when nothing is swept), or a ``SweepStats`` when ``stats`` is given.
    """
    horizon = _validate.horizon(horizon)
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
        padded = _pad_seeds(keys, _device_width(local))
        out = _sweep_jit(learner, env, horizon, ckpts, axes, chunk, padded, params)
        out = (x if x is None else _take_seeds(x, local, axes is not None) for x in out)
        result = Result(jnp.asarray(ckpts, jnp.int32), *out, private=declared_private(learner))
        return _gather_result(result, axes is not None)
    driver = _Driver(learner, env, horizon, ckpts, axes, params, chunk or local, segment or horizon, stats)
    if save is not None:
        if not isinstance(save, (str, os.PathLike)) or not str(save):
            raise ValueError(f"save must be a file path (a str or os.PathLike), got {save!r}")
        save = Path(save)
        if procs > 1:
            save = save.with_name(f"{save.name}.process{pid}")
        save = _resume.check_writable(save, "save")  # before anything runs
        fingerprint = _fingerprint(learner, env, horizon, seeds, chunk, segment, ckpts, all_keys, params, stats, axes)
        fingerprint["process"] = f"{pid} of {procs}"
    else:
        fingerprint = None
    out = driver.run(keys, save, fingerprint, progress)
    if stats is None:
        return _gather_result(out._replace(private=declared_private(learner)), axes is not None)
    return finalize(stats, _gather_accumulator(out), np.asarray(ckpts))._replace(private=declared_private(learner))


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

    return Result(result.steps, *(gather(x) for x in result[1:-1]), private=result.private)


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
@counts_compiles("driver")
def _init_jit(learner, env, checkpoints, axes, keys, params):
    return map_seeds_and_grid(partial(_init_carry, learner, env, checkpoints), axes, None, keys, params)


def _over_seeds_and_grid(fn: Callable, grid: bool) -> Callable:
    fn = jax.vmap(fn)
    return jax.vmap(fn) if grid else fn


@partial(engine_jit, static_argnums=(0, 1, 2, 3, 4))
@counts_compiles("driver")
def _advance_jit(learner, env, checkpoints, length, grid, carry, start):
    return _over_seeds_and_grid(lambda c: _advance(learner, env, checkpoints, length, c, start), grid)(carry)


@partial(engine_jit, static_argnums=(0, 1, 2))
@counts_compiles("driver")
def _outputs_jit(learner, env, grid, carry):
    return _over_seeds_and_grid(partial(_outputs, learner, env), grid)(carry)


@partial(engine_jit, static_argnums=(0, 1))
@counts_compiles("driver")
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


def _fingerprint(learner, env, horizon, seeds, chunk, segment, ckpts, keys, params, stats, axes=None) -> dict:
    """What a saved sweep must match to be resumed, field by field (``jaxpriv._resume.fingerprint``)."""
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
    _resume.write(path, meta, arrays)


def _load(path: Path, fingerprint: dict) -> tuple:
    remedy = "delete it to start the sweep over, or pass another save="
    meta, z = _resume.read(path, remedy)
    saved = meta.get("fingerprint", {})
    wrong = _resume.differences(saved, fingerprint)
    if saved.get("layout", "vmap_scan") != "vmap_scan":  # only files saved under a removed layout have the field
        wrong.insert(0, f"layout: saved {saved['layout']!r}, a batching jaxpriv no longer has (now 'vmap_scan' only)")
    if wrong:
        raise ValueError(f"{path} was written by another sweep configuration ({'; '.join(wrong)}); {remedy}")
    try:
        leaves = None
        if meta["carry"]:
            leaves = [z[f"carry_{i}"] for i in range(sum(k.startswith("carry_") for k in z))]
        done = []
        for j in range(meta["done"]):
            done.append(tuple(z[f"done_{j}_{i}"] if f"done_{j}_{i}" in z else None for i in range(6)))
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


def summarize(values: jax.Array, axis: int = -2) -> tuple[np.ndarray, np.ndarray]:
    """Mean and standard error over the seed axis (default: the second to last)."""
    v = np.asarray(values, np.float64)
    n = v.shape[axis]
    return v.mean(axis), v.std(axis, ddof=1 if n > 1 else 0) / np.sqrt(n)
