"""One seed's run: the carry, the step, the scan over the horizon, ``run`` and ``rollout``.

``_transition`` is the one per-step transition (the step's keys from ``split_step_key``,
``act``, ``env.step``, ``update``); the engine's ``_step`` adds the bookkeeping (Kahan sums,
non-finite steps, the checkpoint rows, the comparator) and ``rollout`` records what its
``record`` hook asks for. ``_advance`` scans ``_step`` over a segment of steps, ``_run`` over the
whole horizon. Also here: ``Result``, what a run returns, and the compile counter
(``counts_compiles``, ``compile_count``) every compiled entry point of the engine is wrapped in.
"""

from __future__ import annotations

import collections
import functools
from collections.abc import Callable
from functools import partial
from typing import Any, Literal, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxpriv import _validate
from jaxpriv._base import (
    Env,
    Learner,
    PRNGKey,
    as_key,
    engine_jit,
    fold_info,
    info_start,
    nonfinite_inputs,
    spec_of,
    split_step_key,
    update_with_info,
)
from jaxpriv._inplace import set_row
from jaxpriv._kahan import kahan_add, kahan_init
from jaxpriv.sim._check import _prepare, _takes
from jaxpriv.sim._params import SimParams, normalize_checkpoints


class Result(NamedTuple):
    """Regret at checkpoints.

    Attributes:
      steps: ``[m]`` int32, the checkpoint steps ``t`` (1-based; the last is ``T``).
      regret: ``[..., m]``, ``sum_{s<=t} f_s(w_s) - min_{w∈C} sum_{s<=t} f_s(w)``
        against the exact comparator of each prefix (eq. (1) of Smith &
        Thakurta 2013); for environments without a comparator (bandits), the
        cumulative pseudo-regret.
      loss: ``[..., m]``, the cumulative loss ``sum_{s<=t} f_s(w_s)`` (``None`` for an
        episode simulation, which draws each episode's reward sum, not the rounds' losses).
      best: ``[..., m]``, the comparator's cumulative loss (``loss - regret``; ``None`` for an
        episode simulation).
      gap: ``[..., m]`` or ``None``: the ``gap`` the comparator returns with ``best``
        (``ComparatorFn``): for a comparator solved numerically, a certified bound on the
        solver's suboptimality, ``best - min_{w∈C} sum f_s(w) <= gap``, so the exact regret
        lies in ``[regret, regret + gap]``. ``None`` when the environment says its
        comparator is exact (``Env.exact``: a closed form, ``jaxpriv.envs.exact_comparator``,
        whose gap is always 0) or has none.
      nonfinite_inputs: ``[...]`` int32, inputs with a NaN / ±inf entry that the
        learner and its private mechanisms replaced by zero over the run: the sum over the
        run of its Info's ``nonfinite`` field (a learner built with ``returns_info=True``),
        else read from the final learner state by ``jaxpriv._base.nonfinite_inputs`` (the
        learner's declared ``nonfinite``; 0 for a learner that declares neither;
        ``jaxpriv._base.zero_nonfinite``). 0 in a healthy run.
      nonfinite_steps: ``[...]`` int32, steps whose loss, regret or comparator
        statistics from the environment were NaN / ±inf. Such a step is left out
        of every sum (the learner's loss and the comparator's alike), so the
        reported regret is that of the finite steps; 0 in a healthy run.
      private: whether the learner's stated privacy guarantee holds for these numbers, as the
        learner's spec says (``Spec.private``): ``False`` for a non-private
        learner and for a private one built with an opt-out of its guarantee (unclipped rewards,
        an ablation: ``private=False`` at construction); ``None`` for a learner without a
        spec (a user's own). A plain bool, not an array; the guarantee's level is the budget
        in the params (``inf``: none).
      episodes: ``[..., m]`` int32 or ``None``: for an exact episode-level simulation
        (``sweep(..., simulator="episodes")``, ``Spec.fast_path``), the episodes (phases,
        epochs, releases) started at or before each checkpoint, after the initial pulls, as
        the step-level state counts them; ``None`` for a step-level run.
      pulls: ``[..., K]`` int32 or ``None``: for an episode simulation, each arm's pulls at ``T``.

      info: the learner's Info reduced over time as its class says (``"sum"``, ``"max"``,
        ``"last"``: ``jaxpriv._base.NonfiniteInfo``), at each checkpoint: each field ``[..., m,
        *shape]``; ``None`` for a learner whose ``update`` returns no Info, and from a sweep
        with ``stats=``.

    Leading axes are ``[grid, seeds]`` for a sweep over a grid, ``[seeds]``
    for a sweep over seeds, none for a single run.
    """

    steps: jax.Array
    regret: jax.Array
    loss: jax.Array | None
    best: jax.Array | None
    gap: jax.Array | None = None
    nonfinite_inputs: jax.Array | None = None
    nonfinite_steps: jax.Array | None = None
    private: bool | None = None
    episodes: jax.Array | None = None
    pulls: jax.Array | None = None
    info: Any = None

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
    rows: jax.Array  # [m + 1, 4 (+ the Info's columns, _packs)]: the CheckpointRows at the checkpoints, filled in
    bad_steps: jax.Array  # int32: steps with a non-finite loss / regret / stats
    # None, or (the learner's Info folded so far,) with its columns packed in ``rows`` (_packs), or
    # (the fold, its [m + 1, size] rows per field) for an Info with a field not 4 bytes wide
    info: Any
    k_steps: jax.Array  # the key the per-step keys are folded from


def _start(learner: Learner, env: Env, key: PRNGKey, params: SimParams) -> tuple[Any, Any, PRNGKey]:
    """A seed's ``(env_state, learner_state, k_steps)``: ``key`` is split into environment, learner and step keys."""
    k_env, k_learner, k_steps = jax.random.split(key, 3)
    return env.reset(k_env, params.env), learner.init(k_learner, params.learner), k_steps


def _transition(
    learner: Learner, env: Env, k_steps: PRNGKey, agent: Any, env_state: Any, t: jax.Array
) -> tuple[Any, Any, Any, Any, Any, Any]:
    """The one per-step transition: step ``t``'s keys (``split_step_key``), act, the environment's answer, update.

    Returns ``(learner_state, env_state, action, feedback, info, learner_info)`` after step ``t``
    (``learner_info``: the learner's Info, ``None`` when its ``update`` returns none). The engine's
    ``_step`` and ``rollout`` both step through it, so they draw the same keys and numbers.
    """
    k_act, k_env_t, k_upd = split_step_key(k_steps, t)
    action = learner.act(k_act, agent, t)
    env_state, feedback, info = env.step(k_env_t, env_state, action, t)
    agent, learner_info = update_with_info(learner, k_upd, agent, action, feedback, t)
    return agent, env_state, action, feedback, info, learner_info


def _packs(info: Any) -> bool:
    """Whether an Info's fields all travel as float32 columns of the checkpoint rows (each 4 bytes wide: bitcast).

    Then a step writes one row (the regret's and the Info's together) and the carry holds no other buffer: the
    step costs what it did before the Info (one ``dynamic-update-slice``, the same bytes per seed-step).
    """
    return all(jnp.dtype(s.dtype).itemsize == 4 for s in info)


def _info_columns(acc: Any) -> jax.Array:
    """The folded Info as float32 columns: each field flattened and bitcast (``_packs``)."""
    return jnp.concatenate(
        [jax.lax.bitcast_convert_type(jnp.asarray(a).reshape(-1), jnp.float32) for a in acc]
        or [jnp.zeros((0,), jnp.float32)]
    )


def _info_of_columns(acc: Any, columns: jax.Array) -> Any:
    """The Info's checkpoint values from its packed columns ``[m, size]`` (``_info_columns`` read back)."""
    out, start = [], 0
    for a in acc:
        size = int(np.prod(a.shape))
        block = jax.lax.bitcast_convert_type(columns[:, start : start + size], a.dtype)
        out.append(block.reshape(columns.shape[0], *a.shape))
        start += size
    return type(acc)(*out)


def _init_carry(learner: Learner, env: Env, checkpoints: tuple[int, ...], key: PRNGKey, params: SimParams) -> Carry:
    env_state, agent, k_steps = _start(learner, env, key, params)
    # Shapes of the per-step stats, to start their sums at zero (eval_shape: the key's value is not read).
    a0 = jax.eval_shape(learner.act, k_steps, agent, jnp.int32(1))
    _, fb0, info0 = jax.eval_shape(env.step, k_steps, env_state, a0, jnp.int32(1))
    zeros = jax.tree.map(lambda s: jnp.zeros(s.shape, jnp.float32), (info0.loss, info0.regret, info0.stats))
    sums = tuple(kahan_init(zeros))  # a plain (total, compensation) pair: the scan's carry keeps one structure
    width = len(CheckpointRows._fields)
    learner_info = None
    if learner.returns_info:  # the Info's shapes, to start its fold at each reduction's identity
        shapes = jax.eval_shape(partial(update_with_info, learner), k_steps, agent, a0, fb0, jnp.int32(1))[1]
        if _packs(shapes):  # its columns ride in the checkpoint rows
            width += sum(int(np.prod(s.shape)) for s in shapes)
            learner_info = (info_start(shapes),)
        else:
            info_rows = [jnp.zeros((len(checkpoints) + 1, int(np.prod(s.shape))), s.dtype) for s in shapes]
            learner_info = (info_start(shapes), type(shapes)(*info_rows))
    rows = jnp.zeros((len(checkpoints) + 1, width), jnp.float32)
    return Carry(env_state, agent, sums, rows, jnp.zeros((), jnp.int32), learner_info, k_steps)


#: Below this many seeds × grid points in one compiled call, an accelerator computes and writes the checkpoint
#: row at every step, branch-free; from it on, under the sweep's one conditional (``_checkpoint_form``).
BRANCH_FREE_MAX_BATCH = 2**15

#: The three forms of a step's checkpoint bookkeeping (``_checkpoint_form``).
CheckpointForm = Literal["branch_free", "row_under_cond", "comparator_under_cond"]


def _checkpoint_form(batch: int, backend: str | None = None, comparator: bool = True) -> CheckpointForm:
    """How a step computes and writes its checkpoint row (the comparator with it, if any).

    - ``"branch_free"`` (an accelerator, fewer than ``BRANCH_FREE_MAX_BATCH`` seeds × grid points): the
      row is computed at every step and written in place to the slot of the next checkpoint. No
      conditional: on a GPU a conditional is a launch and a read of its predicate per step.
    - ``"row_under_cond"`` (an accelerator, a larger batch): the row is computed and written under the
      step's one conditional, at the checkpoints only: there the work per seed-step dominates.
    - ``"comparator_under_cond"`` (a CPU, an environment with a comparator, any batch): only the
      comparator is under the conditional; the row is written at every step.
    - On a CPU, an environment without a comparator (a bandit: its regret is summed per step) takes
      ``"row_under_cond"``: the row's write is the only work at a checkpoint.

    Measured on one H200 (jax 0.11.2, d = 10, T = 1024, 2026-11-27). The conditional's fixed cost is
    about 4.4 µs per step (OGD 19.7 against 15.3 µs per step at one seed). OGD's throughput with the
    comparator under the conditional against branch-free: 0.91x at 10⁴ seeds, 0.99x at 3·10⁴, 1.03x at
    10⁵: the crossing is near 3·10⁴ seeds. At 10⁶ seeds, moving the row's write under the conditional
    too (``"row_under_cond"`` against ``"comparator_under_cond"``) gave OGD 1.17x and AdaC-UCB 1.16x
    (1.49e9 against 1.27e9, 3.41e9 against 2.93e9 seed-steps/s). On a CPU, with a comparator, the write
    under the conditional was slower (OGD 1.07x the time; one core, 512 seeds, T = 2048) and a comparator
    at every step slower still (OGD 1.3x): ``"comparator_under_cond"``. Without a comparator the row under
    the conditional is the faster CPU form (issue 47, one pinned core, 1024 seeds, T = 2048, K = 10, both
    programs timed alternated in one process, median of 11 per-rep ratios, controls 0.97-1.02): AdaC-UCB
    1.035x, AdaP-KLUCB 1.063x, the others 1.008-1.016x; again on a quiet machine 1.003-1.012x (IQRs within
    ±1%), none slower (an earlier per-process reading, 512 seeds, had AdaC-UCB 1.04x slower: within that
    method's ±3-6%). A solver comparator (an environment not ``exact``) is under the conditional in every
    form. Read at trace time; ``batch`` is the number of seeds × grid points the compiled call advances
    together, ``comparator`` whether the environment has one.
    """
    backend = jax.default_backend() if backend is None else backend
    if backend == "cpu":
        return "comparator_under_cond" if comparator else "row_under_cond"
    return "branch_free" if batch < BRANCH_FREE_MAX_BATCH else "row_under_cond"


def _step(
    learner: Learner, env: Env, checkpoints: tuple[int, ...], carry: Carry, t: jax.Array, batch: int = 1
) -> Carry:
    """One seed's step ``t`` (a shared, unbatched int32): act, the environment's answer, update, bookkeeping.

    ``batch``: how many seeds × grid points the compiled call runs this step for (the comparator's form).
    """
    m = len(checkpoints)
    ckpts = jnp.asarray(checkpoints, jnp.int32)
    env_state, agent, sums, rows, bad_steps, folded, k_steps = carry

    # t is shared by all seeds: a scalar. "compare_all" is one fused kernel; the default
    # binary search is a nested while loop, several kernel launches per step on a GPU.
    slot = jnp.minimum(jnp.searchsorted(ckpts, t, method="compare_all"), m - 1)
    agent, env_state, _, _, info, learner_info = _transition(learner, env, k_steps, agent, env_state, t)
    step_vals = jax.tree.map(lambda v: jnp.asarray(v, jnp.float32), (info.loss, info.regret, info.stats))
    finite = jnp.all(jnp.stack([jnp.all(jnp.isfinite(v)) for v in jax.tree.leaves(step_vals)]))
    step_vals = jax.tree.map(lambda v: jnp.where(finite, v, 0.0), step_vals)  # a bad step leaves every sum
    bad_steps = bad_steps + (~finite).astype(jnp.int32)
    sums = tuple(kahan_add(sums, step_vals))
    packed = None  # the learner's Info, folded: its columns go in the checkpoint row (_packs)
    if learner_info is not None:
        folded = (fold_info(folded[0], learner_info), *folded[1:])
        if len(folded) == 1:
            packed = _info_columns(folded[0])
    # The checkpoint row, in one of three forms (_checkpoint_form): all at every step and branch-free,
    # all under the step's one conditional at the checkpoints, or (a CPU, with a comparator) only the
    # comparator under it.
    # At every step, the row goes in place to the slot of the next checkpoint (its last write is at the
    # checkpoint itself; after the last checkpoint, to the scratch row m).
    form = _checkpoint_form(batch, comparator=env.comparator is not None)
    zero = jnp.zeros((), jnp.float32)

    def compare() -> tuple[jax.Array, jax.Array]:
        best, gap = env.comparator(env_state, sums[0][2], t)  # always the pair (ComparatorFn)
        return jnp.asarray(best, jnp.float32), jnp.asarray(gap, jnp.float32)

    def record(best_gap: tuple[jax.Array, jax.Array] | None) -> jax.Array:
        loss, regret, _ = sums[0]
        gap = zero
        if env.comparator is not None:
            best, gap = compare() if best_gap is None else best_gap
            # relative: both relative to the env's reference point (no cancellation)
            regret = regret - best if env.relative else loss - best
        row = jnp.stack([jnp.asarray(v, jnp.float32) for v in (regret, loss, loss - regret, gap)])
        return row if packed is None else jnp.concatenate([row, packed])

    at_checkpoint = ckpts[slot] == t
    every_step = jnp.where(t <= ckpts[slot], slot, m)
    solver = env.comparator is not None and not env.exact
    if form == "row_under_cond" or (form == "branch_free" and solver):
        rows = jax.lax.cond(at_checkpoint, lambda r: set_row(r, record(None), slot), lambda r: r, rows)
    elif form == "branch_free" or env.comparator is None:
        rows = set_row(rows, record(None), every_step)
    else:  # comparator_under_cond
        best_gap = jax.lax.cond(at_checkpoint, compare, lambda: (zero, zero))
        rows = set_row(rows, record(best_gap), every_step)
    if len(folded or ()) == 2:  # an Info not packed: its own rows, written like the rows to the next checkpoint's slot
        acc = folded[0]
        folded = (acc, type(acc)(*(set_row(r, a.reshape(-1), every_step) for r, a in zip(folded[1], acc, strict=True))))
    return Carry(env_state, agent, sums, rows, bad_steps, folded, k_steps)


def _advance(
    learner: Learner,
    env: Env,
    checkpoints: tuple[int, ...],
    length: int,
    carry: Carry,
    start: jax.Array,
    batch: int = 1,
) -> Carry:
    """Steps ``start + 1 .. start + length``: one ``lax.scan`` (``start`` is traced: one compile per length).

    ``batch``: the seeds × grid points this call is batched over (``_checkpoint_form``).
    """

    k_steps = carry.k_steps  # closed over, not carried: the loop's state is what changes

    def body(state, t):
        return tuple(_step(learner, env, checkpoints, Carry(*state, k_steps), t, batch))[:-1], None

    ts = jnp.asarray(start, jnp.int32) + jnp.arange(1, length + 1, dtype=jnp.int32)
    state, _ = jax.lax.scan(body, tuple(carry)[:-1], ts)
    return Carry(*state, k_steps)


def _reports_gap(env: Env) -> bool:
    """Whether ``Result.gap`` holds the comparator's gaps: it has one and the environment is not ``exact``."""
    return env.comparator is not None and not env.exact


def _outputs(learner: Learner, env: Env, carry: Carry) -> tuple[Any, ...]:
    """``(regret, loss, best, gap, nonfinite_inputs, nonfinite_steps, info)`` of a finished carry."""
    rows = CheckpointRows.of(carry.rows)
    gap = rows.gap if _reports_gap(env) else None
    info = None
    if carry.info is None:
        nonfinite = nonfinite_inputs(learner, carry.agent)
    else:
        acc = carry.info[0]
        if len(carry.info) == 1:  # packed in the checkpoint rows, after their four columns
            info = _info_of_columns(acc, carry.rows[:-1, len(CheckpointRows._fields) :])
        else:
            rows_of = zip(carry.info[1], acc, strict=True)
            info = type(acc)(*(r[:-1].reshape(r.shape[0] - 1, *a.shape) for r, a in rows_of))
        nonfinite = jnp.asarray(getattr(acc, "nonfinite", 0), jnp.int32)
    return rows.regret, rows.loss, rows.best, gap, nonfinite, carry.bad_steps, info


def _run(
    learner: Learner,
    env: Env,
    horizon: int,
    checkpoints: tuple[int, ...],
    key: PRNGKey,
    params: SimParams,
    batch: int = 1,
):
    carry = _init_carry(learner, env, checkpoints, key, params)
    carry = _advance(learner, env, checkpoints, horizon, carry, jnp.int32(0), batch)
    return _outputs(learner, env, carry)


# --- compile counts --------------------------------------------------------------------------------

#: The kinds of compiled function ``compile_count`` counts, each with the calls that compile it.
COMPILED_KINDS: dict[str, str] = {
    "run": "jaxpriv.run",
    "sweep": "jaxpriv.sweep in one call (no segment, stats, save or progress)",
    "driver": "jaxpriv.sweep's segmented driver (segment, stats, save or progress): its start, segment, "
    "output and statistics pieces",
    "tune": "jaxpriv.tune.value_and_grad (and minimize, which calls it)",
    "rollout": "jaxpriv.sim.rollout",
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
      kind: one of ``COMPILED_KINDS`` (``"run"``, ``"sweep"``, ``"driver"``, ``"tune"``, ``"rollout"``), or ``None``
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
    *out, info = _run_jit(learner, env, horizon, ckpts, key, params)
    return Result(jnp.asarray(ckpts, jnp.int32), *out, private=spec_of(learner).private, info=info)


# --- one seed's rollout ----------------------------------------------------------------------------


class StepRecord(NamedTuple):
    """What ``rollout`` records at each step by default (``default_record``), stacked over steps.

    Attributes:
      action: the learner's action at step ``t`` (``[T, *action]``).
      loss: the environment's loss ``f_t(a_t)`` (``info.loss``, ``[T]``).
      regret: the environment's per-step regret (``info.regret``, ``[T]``; the pseudo-regret of a bandit).
      feedback: what the learner was told (``[T, *feedback]``).
    """

    action: Any
    loss: jax.Array
    regret: jax.Array
    feedback: Any


class Rollout(NamedTuple):
    """What ``rollout`` returns.

    Attributes:
      learner_state: the learner's state after the last step.
      env_state: the environment's state after the last step.
      records: what ``record`` returned at every step, stacked: each leaf has a leading ``[T]`` axis.
      info: the learner's Info at every step, stacked (``[T, ...]`` per field; not reduced over time:
        ``jaxpriv._base.fold_info`` reduces it), or ``None`` for a learner whose ``update`` returns none.
    """

    learner_state: Any
    env_state: Any
    records: Any
    info: Any = None


def default_record(
    t: jax.Array, action: Any, feedback: Any, info: Any, learner_state: Any, env_state: Any
) -> StepRecord:
    """``rollout``'s default ``record``: the step's action, loss, regret and feedback."""
    return StepRecord(action, info.loss, info.regret, feedback)


def _rollout(learner: Learner, env: Env, horizon: int, record: Callable[..., Any], key: PRNGKey, params: SimParams):
    env_state, agent, k_steps = _start(learner, env, key, params)

    with_info = _takes(record, 7) is True  # a record of 7 arguments also receives the learner's Info

    def body(state, t):
        agent, env_state, action, feedback, info, learner_info = _transition(learner, env, k_steps, *state, t)
        args = (t, action, feedback, info, agent, env_state) + ((learner_info,) if with_info else ())
        return (agent, env_state), (record(*args), learner_info)

    ts = jnp.arange(1, horizon + 1, dtype=jnp.int32)
    (agent, env_state), (records, learner_info) = jax.lax.scan(body, (agent, env_state), ts)
    return Rollout(agent, env_state, records, learner_info)


@partial(engine_jit, static_argnums=(0, 1, 2, 3))
@counts_compiles("rollout")
def _rollout_jit(learner, env, horizon, record, key, params):
    return _rollout(learner, env, horizon, record, key, params)


def rollout(
    learner: Learner,
    env: Env,
    params: SimParams,
    key: PRNGKey,
    horizon: int,
    *,
    record: Callable[..., Any] | None = None,
) -> Rollout:
    """One seed's run, step by step: the engine's keys and transition, recording what ``record`` returns.

    The same run as ``run`` with the same ``key``: ``key`` is split into environment, learner and
    step keys, step ``t`` draws ``split_step_key(k_steps, t)`` and goes through the engine's one
    transition (act, ``env.step``, update), so the actions, feedback and per-step losses are those
    of ``run(learner, env, params, key, horizon)``, and those of seed ``i`` of ``sweep`` with base
    key ``k`` when ``key = jax.random.split(k, seeds)[i]``: the same random numbers and the same
    operations, compiled into another program, so equal up to float32 rounding where XLA fuses the
    two differently (bit for bit in ``tests/sim/test_rollout.py``, on a CPU, for the losses of an
    OCO learner and the plays of a bandit policy; PFTAL's state one ulp apart). ``run`` adds the per-step losses and
    regrets with Kahan compensation (``jaxpriv._kahan``) and the comparator's regret at the
    checkpoints; a rollout returns the per-step values themselves. Batch it over seeds with
    ``map_seeds``; it may be called inside ``jax.jit`` or ``jax.vmap`` (over ``key``).

    Args:
      learner, env: the components.
      params: ``SimParams(learner=..., env=...)``; every leaf at its base shape (no grid: map a grid
        with ``map_seeds(..., axes=grid_axes(params, True, ndims=spec_ndims(learner, env))[0])``).
      key: a PRNG key, or an integer seed (``jaxpriv._base.as_key``).
      horizon: ``T >= 1``, at most the components' declared horizons.
      record: ``record(t, action, feedback, info, learner_state, env_state) -> pytree``, called at
        every step ``t`` (an int32, 1-based) with the step's action, feedback and ``EnvInfo``, and the
        learner's and environment's states after the step; its outputs are stacked over the
        ``T`` steps. A ``record`` that can take a seventh positional argument,
        ``record(t, action, feedback, info, learner_state, env_state, learner_info)``, also receives
        the step's learner Info (what ``update`` returned beside the state: ``NonfiniteInfo``, a
        learner's own Info class, ``NoInfo()``; ``None`` for a learner in the older form, whose
        ``update`` returns the state alone); one of six arguments is called as before. Default
        ``default_record``: a ``StepRecord(action, loss, regret, feedback)``. Pass the same function
        object on every call: it is part of the compiled function's identity.

    Returns:
      A ``Rollout(learner_state, env_state, records, info)`` (``info``: the learner's Info at every step).

    Raises:
      ValueError: what ``run`` refuses before compiling (a bad key, horizon or params; components
        that do not fit together: ``check_compatible``), and a ``record`` that is not callable.

    Examples:
      >>> import jaxpriv as jp
      >>> from jaxpriv import envs, oco, sets
      >>> ball = sets.l2_ball(2)
      >>> env, learner = envs.quadratic_stream(ball), oco.ogd(ball)
      >>> params = jp.SimParams(oco.OGDParams(), envs.QuadraticParams())
      >>> out = rollout(learner, env, params, 0, 8)
      >>> out.records.action.shape, out.records.loss.shape
      ((8, 2), (8,))
    """
    horizon = _validate.horizon(horizon)
    key = as_key(key)
    if record is None:
        record = default_record
    elif not callable(record):
        raise ValueError(
            f"record must be a function (t, action, feedback, info, learner_state, env_state), got {record!r}"
        )
    if _takes(record, 6) is False and _takes(record, 7) is False:
        raise ValueError(
            f"record must take 6 arguments (t, action, feedback, info, learner_state, env_state), or 7 with the "
            f"learner's Info last (..., learner_info): {record!r} cannot"
        )
    params, _, _ = _prepare(learner, env, params, allow_grid=False, horizon=horizon)
    return _rollout_jit(learner, env, horizon, record, key, params)
