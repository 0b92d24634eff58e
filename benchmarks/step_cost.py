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
"""

from __future__ import annotations

import argparse
import time

import jax
import numpy as np

import jaxpriv as jp
from jaxpriv.testing import learner_examples, step_cost


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
    args = parser.parse_args()
    examples = learner_examples(args.horizon, args.dim)
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
