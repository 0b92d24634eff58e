"""Statistical helpers for tests (public, like ``chex``): tolerances from sample sizes."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from jaxpriv.envs._settings import SETTINGS, Setting, setting  # noqa: F401 (public here: a learner's example uses it)


def variance_with_stderr(samples: np.ndarray, mean: float | None = None) -> tuple[float, float]:
    """Sample variance about ``mean`` (the known mean if given) and its standard error.

    The standard error is ``sqrt((m4 - var²) / n)``, with ``m4`` the empirical
    fourth central moment: valid for any distribution with a finite fourth moment.
    """
    x = np.asarray(samples, np.float64).ravel()
    c = x - (x.mean() if mean is None else mean)
    var = float(np.mean(c**2))
    m4 = float(np.mean(c**4))
    return var, float(np.sqrt(max(m4 - var**2, 0.0) / x.size))


def mean_with_stderr(samples: np.ndarray, axis: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Mean and standard error along ``axis``."""
    x = np.asarray(samples, np.float64)
    n = x.shape[axis]
    return x.mean(axis), x.std(axis, ddof=1) / np.sqrt(n)


def ks_critical_value(n: int, alpha: float = 1e-3) -> float:
    """Asymptotic one-sample Kolmogorov–Smirnov critical value ``sqrt(-ln(alpha/2)/2) / sqrt(n)``."""
    return float(np.sqrt(-np.log(alpha / 2) / 2) / np.sqrt(n))


def ks_one_sample(samples: np.ndarray, cdf: Callable[[np.ndarray], Any]) -> float:
    """One-sample Kolmogorov–Smirnov statistic ``sup |F_n - F|`` of ``samples`` against ``cdf`` (compare with
    ``ks_critical_value``)."""
    x = np.sort(np.asarray(samples, np.float64).ravel())
    n = x.size
    f = np.asarray(cdf(x), np.float64)
    return float(max(np.max(np.arange(1, n + 1) / n - f), np.max(f - np.arange(n) / n)))


def ks_two_sample(a: np.ndarray, b: np.ndarray, alpha: float = 1e-3) -> tuple[float, float]:
    """Two-sample KS statistic and its asymptotic critical value at level ``alpha``."""
    a = np.sort(np.asarray(a, np.float64).ravel())
    b = np.sort(np.asarray(b, np.float64).ravel())
    grid = np.concatenate([a, b])
    fa = np.searchsorted(a, grid, side="right") / a.size
    fb = np.searchsorted(b, grid, side="right") / b.size
    stat = float(np.max(np.abs(fa - fb)))
    crit = float(np.sqrt(-np.log(alpha / 2) / 2) * np.sqrt((a.size + b.size) / (a.size * b.size)))
    return stat, crit


# --- a learner's runs, step by step, on the engine's keys ---------------------------------------------------


def rollout(
    learner: Any,
    env: Any,
    params: Any,
    key: Any,
    horizon: int,
    *,
    record: Callable[..., Any] | None = None,
    seeds: int | None = None,
    chunk: int | None = None,
) -> Any:
    """A learner's run (or ``seeds`` runs) step by step, exactly as the engine runs it, recording what you ask.

    For testing an algorithm, yours or the library's: ``jaxpriv.sim.rollout`` (the engine's key
    derivation and its one per-step transition: act, ``env.step``, update), batched over seeds
    and a params grid by the engine's ``jaxpriv.sim.map_seeds``. Its actions, feedback, losses and
    states are those of ``jaxpriv.run`` / ``jaxpriv.sweep`` with the same key, so a test can compare
    a hand-written reference, a closed form or an episode simulator with the engine's own runs
    without re-deriving the engine's per-step keys (``split_step_key``) or writing the scan again.

    Args:
      learner, env: the components (a ``Learner`` and an ``Env``; your own need no spec).
      params: ``SimParams(learner=..., env=...)``. With ``seeds``, a leaf with a leading grid axis
        (as in ``sweep``, by the components' ``Spec.ndims``) is swept, the same seed keys at every
        grid point; without ``seeds``, every leaf at its base shape.
      key: a PRNG key or an integer seed. Without ``seeds``: the run's key (``jaxpriv.run``'s). With
        ``seeds``: the base key, seed ``i`` running on ``jax.random.split(key, seeds)[i]``, seed ``i`` of
        ``jaxpriv.sweep(learner, env, params, key, horizon, seeds)``.
      horizon: ``T``.
      record: ``record(t, action, feedback, info, learner_state, env_state) -> pytree``, called at every
        step ``t`` (int32, 1-based) with the step's action, feedback and ``EnvInfo`` and both states
        after the step; stacked over the ``T`` steps. Default: ``jaxpriv.sim.StepRecord(action, loss,
        regret, feedback)``. Pass the same function object on every call (it keys the compiled function).
      seeds: ``None``: one run. An int: that many runs, in one compiled call.
      chunk: with ``seeds``, run them in batches of this size (``jax.lax.map``; bounded memory).

    Returns:
      A ``jaxpriv.sim.Rollout(learner_state, env_state, records)``: the final states and the records
      (``[T, ...]`` leaves); with ``seeds`` every leaf has leading ``[seeds]`` axes (``[G, seeds]`` over a grid).

    Raises:
      ValueError: what ``jaxpriv.run`` / ``sweep`` refuse before compiling (bad key, horizon or params,
        components that do not fit), a ``record`` that is not a function, ``seeds`` or ``chunk`` < 1.

    Examples:
      >>> import jax, jaxpriv as jp
      >>> from jaxpriv import bandits, envs
      >>> learner, env = bandits.ucb(3), envs.bernoulli_bandit(3)
      >>> params = jp.SimParams(bandits.UCBParams(), envs.BernoulliParams((0.2, 0.5, 0.9)))
      >>> out = rollout(learner, env, params, 0, 50, seeds=4, record=lambda t, a, fb, info, s, e: a)
      >>> out.records.shape, out.learner_state.counts.shape
      ((4, 50), (4, 3))
    """
    from jaxpriv import _validate, sim
    from jaxpriv._base import as_key
    from jaxpriv.sim import _check

    if seeds is None:
        if chunk is not None:
            raise ValueError("chunk batches the seeds: pass seeds=... with it")
        return sim.rollout(learner, env, params, key, horizon, record=record)
    seeds = _validate.positive_int("seeds", seeds)
    chunk = _validate.chunk(chunk)
    horizon = _validate.horizon(horizon)
    if record is None:
        record = sim.default_record
    elif not callable(record):
        raise ValueError(
            f"record must be a function (t, action, feedback, info, learner_state, env_state), got {record!r}"
        )
    params, axes, size = _check._prepare(learner, env, params, allow_grid=True, horizon=horizon)
    keys = _split(as_key(key), seeds)
    return _rollouts()(learner, env, horizon, record, axes if size else None, chunk, keys, params)


def _split(key: Any, num: int) -> Any:
    """``jax.random.split(key, num)`` (imported lazily, as the rest of this module's JAX)."""
    import jax

    return jax.random.split(key, num)


_ROLLOUTS: list[Any] = []


def _rollouts() -> Any:
    """The compiled batch of rollouts (built once: its cache persists): ``map_seeds`` over ``_scan._rollout``."""
    if not _ROLLOUTS:
        from functools import partial

        from jaxpriv import sim
        from jaxpriv._base import engine_jit
        from jaxpriv.sim import _scan

        def batch(learner, env, horizon, record, axes, chunk, keys, params):
            one = partial(_scan._rollout, learner, env, horizon, record)
            return sim.map_seeds(one, keys, params, chunk, axes=axes)

        _ROLLOUTS.append(engine_jit(batch, static_argnums=(0, 1, 2, 3, 4, 5)))  # sweep's compiler options
    return _ROLLOUTS[0]


# --- what a learner's step costs, read off the compiled program (any backend) -------------------------------


class StepCost(NamedTuple):
    """What one step of a sweep costs, read off XLA's optimised program (``step_cost``).

    Attributes:
      conditionals: ``conditional`` instructions in the whole compiled sweep (each a branch launch per
        execution on a GPU; the engine's checkpoint write is one).
      body_conditionals: those inside the scan body and the computations it calls.
      fusions: the scan body's top-level fusions (about one kernel each on a GPU).
      copies: the scan body's top-level ``copy`` instructions (a carry leaf copied every step).
      updates: the scan body's top-level in-place ``dynamic-update-slice`` instructions (fused or not).
      loops: ``while`` loops nested in the scan body (a loop inside every step).
      bytes_per_seed_step: bytes the scan body reads and writes per seed and step, by XLA's cost
        analysis: the difference between the sweep run as two scans and as one, over the seeds.
      flops_per_seed_step: floating-point operations per seed and step, the same way.
      state_bytes: one seed's carry (learner, environment, the engine's sums and checkpoint rows).
    """

    conditionals: int
    body_conditionals: int
    fusions: int
    copies: int
    updates: int
    loops: int
    bytes_per_seed_step: float
    flops_per_seed_step: float
    state_bytes: int


def _computations(hlo: str) -> dict[str, list[str]]:
    """The computations of an HLO module's text: name -> its instruction lines.

    Reads compiled text (``%name (params) -> shape {``) and lowered text (``name {``, ``ENTRY name {``) alike.
    """
    out: dict[str, list[str]] = {}
    name = None
    for line in hlo.splitlines():
        if not line.startswith(" ") and line.rstrip().endswith("{"):
            head = [w for w in line.split("(", 1)[0].split() if w not in ("ENTRY", "{")]
            name = head[0].lstrip("%") if head else None
            if name is not None:
                out[name] = []
        elif line.startswith("}"):
            name = None
        elif name is not None and "=" in line:
            out[name].append(line.strip())
    return out


def _opcode(instruction: str) -> str:
    """``%x = f32[2]{0} fusion(%a), kind=...`` -> ``fusion``."""
    rhs = instruction.split("=", 1)[1].strip()
    # The shape may be a tuple ``(f32[], ...)`` with spaces; the opcode is the word before the first ``(``
    # that follows the shape.
    if rhs.startswith("("):
        depth, end = 0, 0
        for end, ch in enumerate(rhs):  # noqa: B007 (the index is used after the loop)
            depth += ch == "("
            depth -= ch == ")"
            if depth == 0:
                break
        rhs = rhs[end + 1 :].strip()
    else:
        rhs = rhs.split(" ", 1)[1] if " " in rhs else rhs
    return rhs.split("(", 1)[0].strip()


def _called(instruction: str) -> list[str]:
    """The computations an instruction calls (branches, loop bodies, fused computations, reductions)."""
    names = re.findall(
        r"(?:calls|body|condition|to_apply|true_computation|false_computation)=%?([\w.\-]+)", instruction
    )
    for group in re.findall(r"branch_computations=\{([^}]*)\}", instruction):
        names += [n.strip().lstrip("%") for n in group.split(",")]
    return names


def _reachable(comps: dict[str, list[str]], root: str) -> set[str]:
    seen, todo = set(), [root]
    while todo:
        name = todo.pop()
        if name in seen or name not in comps:
            continue
        seen.add(name)
        for ins in comps[name]:
            todo += _called(ins)
    return seen


def _scan_body(comps: dict[str, list[str]], horizon: int) -> str:
    """The body of the ``while`` loop over the horizon (trip count ``horizon``; the largest if several)."""
    best, size = None, -1
    for lines in comps.values():
        for ins in lines:
            if _opcode(ins) == "while" and f'"known_trip_count":{{"n":"{horizon}"}}' in ins:
                body = next(n for n in _called(ins) if ins.split("body=", 1)[1].lstrip("%").startswith(n))
                if len(comps.get(body, [])) > size:
                    best, size = body, len(comps[body])
    if best is None:
        raise ValueError(f"no while loop with trip count {horizon} in the compiled sweep")
    return best


def carry_bytes(learner: Any, env: Any, params: Any, horizon: int) -> int:
    """Bytes of one seed's sweep state: the learner's and environment's state, the engine's sums and checkpoint
    rows (``checkpoints="log"``), from shapes only (``jax.eval_shape``; a key counts 8 bytes)."""
    import jax
    import numpy as np

    from jaxpriv import sim
    from jaxpriv.sim import _scan

    ckpts = sim.normalize_checkpoints(horizon, "log")
    shapes = jax.eval_shape(lambda k: _scan._init_carry(learner, env, ckpts, k, params), jax.random.key(0))
    return sum(
        int(np.prod(x.shape)) * (8 if jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key) else x.dtype.itemsize)
        for x in jax.tree.leaves(shapes)
    )


def step_cost(
    learner: Any, env: Any, params: Any, horizon: int = 64, seeds: int = 64, with_bytes: bool = True
) -> StepCost:
    """What one step of ``jaxpriv.sweep(learner, env, params, ...)`` costs in XLA's optimised program.

    Compiles (does not run) the engine's one-seed run vmapped over ``seeds`` seeds on the default
    backend, finds the scan over the horizon, and counts what a GPU pays at every step: conditionals
    (a branch launch each), fusions (a kernel each), copies and nested loops in the scan body, and the
    bytes the body moves per seed and step by XLA's cost analysis (the sweep compiled as two scans of
    half the horizon minus the sweep as one scan: exactly one more copy of the body). Structural facts,
    the same on any machine for a given backend; the CPU's numbers are what the tests assert. On the CPU
    it compiles with the engine's options and XLA:CPU's default (fusion) emitters whatever ``XLA_FLAGS``
    says (a test suite may pick the older emitters for compile speed; they lower some fusions to loops
    and copies), at LLVM's optimisation level 0: the optimised HLO these facts are read from is the same
    at every level, only the machine code (never run here) differs.

    Args:
      learner, env, params: as for ``jaxpriv.sweep`` (``params`` without a grid axis).
      horizon: the horizon to compile for (even, >= 4; small is enough: the step does not depend on it
        beyond the tree's depth).
      seeds: the batch width to compile for.
      with_bytes: also compile the sweep as two scans for the bytes per seed-step (``False``: one
        compilation, ``bytes_per_seed_step`` and ``flops_per_seed_step`` are NaN).

    Returns:
      A ``StepCost``.
    """
    import jax
    import numpy as np

    from jaxpriv import sim
    from jaxpriv._base import ENGINE_COMPILER_OPTIONS
    from jaxpriv.sim import _check, _scan

    if horizon < 4 or horizon % 2:
        raise ValueError(f"horizon must be even and >= 4, got {horizon}")
    ckpts = sim.normalize_checkpoints(horizon, "log")
    params = _check._prepare(learner, env, params, allow_grid=False, horizon=horizon)[0]
    keys = jax.random.split(jax.random.key(0), seeds)
    # On the CPU: the engine's options, and XLA:CPU's default (fusion) emitters whatever XLA_FLAGS says,
    # so the structural facts are those of the default program (the older loop emitters, which a test
    # suite may pick for compile speed, lower some fusions to loops and copies); LLVM at level 0, which
    # changes only the machine code (the same StepCost for every learner example, 2026-11-29).
    cpu = jax.default_backend() == "cpu"
    cpu_options = {"xla_cpu_use_fusion_emitters": True, "xla_backend_optimization_level": 0}
    options = {**ENGINE_COMPILER_OPTIONS, **cpu_options} if cpu else None

    def program(halves: bool):
        def one(key, p):
            carry = _scan._init_carry(learner, env, ckpts, key, p)
            if halves:
                carry = _scan._advance(learner, env, ckpts, horizon // 2, carry, np.int32(0), seeds)
                carry = _scan._advance(learner, env, ckpts, horizon // 2, carry, np.int32(horizon // 2), seeds)
            else:
                carry = _scan._advance(learner, env, ckpts, horizon, carry, np.int32(0), seeds)
            return _scan._outputs(learner, env, carry)

        fn = jax.jit(jax.vmap(one, in_axes=(0, None)), compiler_options=options)
        return fn.lower(keys, params).compile()

    def costs(compiled) -> dict:
        c = compiled.cost_analysis()
        return c[0] if isinstance(c, list) else c

    one_scan = program(False)
    hlo = one_scan.as_text()
    comps = _computations(hlo)
    body = _scan_body(comps, horizon)
    inside = _reachable(comps, body)
    ops = [_opcode(ins) for ins in comps[body]]
    nested = [_opcode(ins) for name in inside for ins in comps[name]]
    one = costs(one_scan)
    two = costs(program(True)) if with_bytes else {"bytes accessed": np.nan, "flops": np.nan}
    state = carry_bytes(learner, env, params, horizon)
    return StepCost(
        conditionals=sum(_opcode(ins) == "conditional" for lines in comps.values() for ins in lines),
        body_conditionals=nested.count("conditional"),
        fusions=ops.count("fusion"),
        copies=ops.count("copy"),
        updates=ops.count("dynamic-update-slice")
        + sum("dynamic-update-slice" in ins and _opcode(ins) == "fusion" for ins in comps[body]),
        loops=nested.count("while"),
        bytes_per_seed_step=(two["bytes accessed"] - one["bytes accessed"]) / seeds,
        flops_per_seed_step=(two.get("flops", 0.0) - one.get("flops", 0.0)) / seeds,
        state_bytes=state,
    )


def learner_examples(horizon: int = 64, dim: int = 10) -> dict[str, tuple[Any, Any, Any]]:
    """One small configuration of every declared learner: ``name -> (learner, env, SimParams)``.

    Each is the ``example`` of the learner's declaration (``@declare.learner(..., example=...)``, kept beside
    its factory): the learner on an environment it is built for (a ``setting``: a quadratic stream on the unit
    ball, or the simplex for the window and Frank-Wolfe learners; its bandit-feedback version for the
    bandit-feedback learners; a Bernoulli, linear or contextual bandit for the policies) with ``d = dim``
    (``K = dim`` arms or actions), a finite budget of its own family (``ε = ρ = 1``) and its params class's
    defaults otherwise. A learner declared without an example has none here. Used by
    ``benchmarks/step_cost.py`` and by the tests that compile every learner (which check that every name of
    ``jaxpriv.experiments.registry.LEARNERS`` has an example here).
    """
    from jaxpriv import bandits, declare, oco  # noqa: F401 (importing them declares the built-ins)
    from jaxpriv.sim import SimParams

    out = {}
    for name, entry in declare.declarations("learner").items():
        if entry.example is not None:
            learner, env, params, env_params = entry.example(horizon, dim)
            out[name] = (learner, env, SimParams(params, env_params))
    return out
