"""What one step of every learner costs: conditionals, fusions, copies, bytes per seed-step; on a GPU also time.

For every learner of the study-file registry (``jaxpriv.testing.learner_examples``: d = 10, a finite
budget), the engine's sweep is compiled (not run) and ``jaxpriv.testing.step_cost`` reads XLA's
optimised program: conditionals in the whole sweep and in the scan body (a branch launch each on a
GPU), the scan body's fusions (about one kernel each), copies and nested loops, and the bytes the
body reads and writes per seed and step by XLA's cost analysis (the sweep compiled as two scans minus
as one scan: one copy of the body). These are facts of the compiled program, the same on any machine
for a backend; the CPU's are what ``tests/integration/test_step_cost.py`` asserts.

On a GPU (``--time``, or any accelerator backend) it also times, per learner: the fixed cost per step
(1 and 100 seeds, T = 4096: wall time over T, steady state), the throughput in seed-steps/s at
10⁴ and 10⁶ seeds (T = 1024), each the median of ``--reps`` runs after one compile-and-run, and the
compile time at 10⁶ seeds (the first call's time less the median).

Usage::

    python benchmarks/step_cost.py                  # every learner, structure only
    python benchmarks/step_cost.py pftal ftal ogd   # some learners
    python benchmarks/step_cost.py --time pftal     # also time them (meant for a GPU)
    python benchmarks/step_cost.py --markdown       # a markdown table
    python benchmarks/step_cost.py --breakdown pftal  # where the bytes of one step go (per kernel)

``--breakdown`` lists the scan body's instructions (the CPU: each fusion is a kernel) with the bytes each
reads and writes per seed-step, the largest first: operands read (a fused operand only sliced counts its
slices; a buffer updated in place, nothing) and the result written (an in-place update, its update).
This approximates XLA's cost analysis (its total is printed beside; the conditional's branch and a
few operand rules differ), enough to see which kernels re-read what (issue 47, docs/performance.md).
"""

from __future__ import annotations

import argparse
import re
import time

import jax
import numpy as np

import jaxpriv as jp
from jaxpriv.testing import _computations, _opcode, _scan_body, learner_examples, step_cost


def timed(learner, env, params, horizon: int, seeds: int, reps: int) -> tuple[float, float]:
    """Median wall time of a sweep, and the first call's (compile and run)."""

    def go(key):
        r = jp.sweep(learner, env, params, key, horizon, seeds=seeds, checkpoints="log")
        jax.block_until_ready(r.regret)

    t0 = time.perf_counter()
    go(jax.random.key(0))
    first = time.perf_counter() - t0
    times = []
    for rep in range(reps):
        t0 = time.perf_counter()
        go(jax.random.key(1 + rep))
        times.append(time.perf_counter() - t0)
    return float(np.median(times)), first


_BYTES = {"f32": 4, "s32": 4, "u32": 4, "pred": 1, "f64": 8, "s64": 8, "u64": 8, "u8": 1, "s8": 1, "f16": 2, "bf16": 2}
_SHAPE = re.compile(r"\b(" + "|".join(_BYTES) + r")\[([\d,]*)\]")


def _shape_bytes(shape: str) -> int:
    return sum(_BYTES[t] * int(np.prod([int(x) for x in dims.split(",") if x])) for t, dims in _SHAPE.findall(shape))


def _parse(instruction: str) -> tuple[str, str, str, list[str], str]:
    """``(name, shape, opcode, operand names, text after the shape)`` of one HLO instruction line."""
    name, rhs = instruction.split("=", 1)
    name, rhs = name.replace("ROOT", "").strip().lstrip("%"), rhs.strip()
    if rhs.startswith("("):  # a tuple shape
        depth = 0
        for end, ch in enumerate(rhs):  # noqa: B007
            depth += (ch == "(") - (ch == ")")
            if depth == 0:
                break
        shape, rest = rhs[: end + 1], rhs[end + 1 :].strip()
    else:
        shape, rest = rhs.split(" ", 1)
    args, depth = rest.split("(", 1)[1], 1
    for end, ch in enumerate(args):  # noqa: B007
        depth += (ch == "(") - (ch == ")")
        if depth == 0:
            break
    return name, shape, _opcode(instruction), re.findall(r"%([\w.\-]+)", args[:end]), rest


def _fusion_io(lines: list[str]) -> tuple[dict[int, int], int | None]:
    """A fused computation's bytes read per parameter (slices only: their bytes; an in-place buffer: 0) and
    its bytes written when its root is an in-place update (``None``: the result's size)."""
    parsed = {p[0]: p for p in map(_parse, lines)}
    users: dict[str, list] = {}
    for p in parsed.values():
        for o in p[3]:
            users.setdefault(o, []).append(p)
    reads = {}
    for p in parsed.values():
        if p[2] != "parameter":
            continue
        index = int(re.search(r"parameter\((\d+)\)", p[4]).group(1))
        us = users.get(p[0], [])
        if us and all(u[2] in ("dynamic-slice", "slice") and u[3][0] == p[0] for u in us):
            reads[index] = sum(_shape_bytes(u[1]) for u in us)
        elif us and all(u[2] == "dynamic-update-slice" and u[3][0] == p[0] for u in us):
            reads[index] = 0
        else:
            reads[index] = _shape_bytes(p[1])

    def written(p) -> int:
        return _shape_bytes(parsed[p[3][1]][1]) if p[2] == "dynamic-update-slice" else _shape_bytes(p[1])

    root = _parse(next(line for line in lines if line.startswith("ROOT")))
    if root[2] == "dynamic-update-slice":
        return reads, written(root)
    if root[2] == "tuple":
        return reads, sum(written(parsed[o]) for o in root[3])
    return reads, None


def breakdown(learner, env, params, horizon: int, seeds: int) -> tuple[list[tuple[str, str, str, float, float]], float]:
    """The scan body's kernels with their bytes read and written per seed-step (largest first), and their total."""
    from jaxpriv import sim
    from jaxpriv._base import ENGINE_COMPILER_OPTIONS
    from jaxpriv.sim import _check, _scan

    ckpts = sim.normalize_checkpoints(horizon, "log")
    params = _check._prepare(learner, env, params, allow_grid=False, horizon=horizon)[0]

    def one(key, p):
        carry = _scan._init_carry(learner, env, ckpts, key, p)
        return _scan._outputs(learner, env, _scan._advance(learner, env, ckpts, horizon, carry, np.int32(0), seeds))

    options = ENGINE_COMPILER_OPTIONS if jax.default_backend() == "cpu" else None
    keys = jax.random.split(jax.random.key(0), seeds)
    hlo = jax.jit(jax.vmap(one, in_axes=(0, None)), compiler_options=options).lower(keys, params).compile().as_text()
    comps = _computations(hlo)
    body = comps[_scan_body(comps, horizon)]
    shapes = {p[0]: p[1] for p in map(_parse, body)}
    rows = []
    for line in body:
        name, shape, op, operands, rest = _parse(line)
        if op in ("parameter", "get-tuple-element", "tuple", "bitcast", "constant", "after-all"):
            continue
        sizes = [_shape_bytes(shapes.get(o, "")) for o in operands]
        read, write = sum(sizes), _shape_bytes(shape)
        if op == "fusion":
            reads, out = _fusion_io(comps[re.search(r"calls=%?([\w.\-]+)", rest).group(1)])
            read = sum(reads.get(i, b) for i, b in enumerate(sizes))
            write = write if out is None else out
        elif op == "dynamic-update-slice":
            read, write = sum(sizes[1:]), sizes[1]
        elif op in ("dynamic-slice", "slice"):
            read = write
        rows.append((name, op, shape.split("{")[0], read / seeds, write / seeds))
    rows.sort(key=lambda r: -(r[3] + r[4]))
    return rows, sum(r[3] + r[4] for r in rows)


def main() -> None:
    parser = argparse.ArgumentParser(allow_abbrev=False)
    parser.add_argument("names", nargs="*", help="learners (default: every registered learner)")
    parser.add_argument("--dim", type=int, default=10)
    parser.add_argument("--horizon", type=int, default=64, help="horizon compiled for the structure (even)")
    parser.add_argument("--seeds", type=int, default=64, help="batch width compiled for the structure")
    parser.add_argument("--time", action="store_true", help="also time (default: on an accelerator)")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--big", type=int, default=10**6, help="the large seed count timed")
    parser.add_argument("--long", type=int, default=4096, help="horizon of the fixed-cost timings")
    parser.add_argument("--short", type=int, default=1024, help="horizon of the throughput timings")
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--breakdown", action="store_true", help="per kernel of the step: bytes per seed-step")
    args = parser.parse_args()
    examples = learner_examples(args.horizon, args.dim)
    if args.breakdown:
        for name in args.names or ["pftal"]:
            rows, total = breakdown(*examples[name], args.horizon, args.seeds)
            cost = step_cost(*examples[name], horizon=args.horizon, seeds=args.seeds)
            print(
                f"{name}: {len(rows)} instructions, {total:.0f} B per seed-step listed, "
                f"{cost.bytes_per_seed_step:.0f} by XLA's cost analysis (T = {args.horizon}, {args.seeds} seeds)"
            )
            print(f"{'B':>7} {'read':>7} {'write':>7}  instruction")
            for ins, op, shape, read, write in rows:
                print(f"{read + write:7.1f} {read:7.1f} {write:7.1f}  {ins} ({op}, {shape})")
        return
    names = args.names or list(examples)
    timing = args.time or jax.default_backend() != "cpu"
    cols = ["learner", "cond", "body cond", "fusions", "copies", "loops", "B/seed-step", "state B/seed", "compile s"]
    if timing:
        cols += ["µs/step 1 seed", "µs/step 100 seeds", "seed-steps/s 1e4", f"seed-steps/s {args.big:.0e}"]
        cols += [f"compile s {args.big:.0e}"]
    sep = " | " if args.markdown else "  "
    print(("| " if args.markdown else "") + sep.join(cols) + (" |" if args.markdown else ""))
    if args.markdown:
        print("|" + "|".join("---" for _ in cols) + "|")
    for name in names:
        t0 = time.perf_counter()
        c = step_cost(*examples[name], horizon=args.horizon, seeds=args.seeds)
        row = [name, c.conditionals, c.body_conditionals, c.fusions, c.copies, c.loops]
        row += [f"{c.bytes_per_seed_step:.0f}", c.state_bytes, f"{time.perf_counter() - t0:.1f}"]
        if timing:
            long = learner_examples(args.long, args.dim)[name]
            short = learner_examples(args.short, args.dim)[name]
            for seeds in (1, 100):
                row.append(f"{timed(*long, args.long, seeds, args.reps)[0] / args.long * 1e6:.1f}")
            for seeds in (10**4, args.big):
                median, first = timed(*short, args.short, seeds, args.reps)
                row.append(f"{seeds * args.short / median:.3g}")
            row.append(f"{first - median:.1f}")  # compile time at the big seed count
        print(
            ("| " if args.markdown else "") + sep.join(str(x) for x in row) + (" |" if args.markdown else ""),
            flush=True,
        )
    print(
        f"\njaxpriv on {jax.default_backend()} ({jax.devices()[0].device_kind}); d = {args.dim}; "
        f"structure compiled for T = {args.horizon}, {args.seeds} seeds; "
        "B/seed-step: XLA's cost analysis of the scan body per seed."
    )


if __name__ == "__main__":
    main()
