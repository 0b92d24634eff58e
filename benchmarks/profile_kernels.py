"""Where a sweep's time goes, kernel by kernel: XLA's compiled kernels of one step, ranked.

Runs one learner's sweep (the rows of ``benchmarks/throughput.py --cpu-table``) under
``jax.profiler.trace``, reads the trace back, and prints each kernel that runs once per
step (a fusion, a sort, a loop, a conditional) with its nanoseconds per seed-step and
the operation it comes from (the ``op_name`` of XLA's optimised program, dumped beside
the trace). The profiler adds overhead, so the column is for ranking, not for quoting:
the totals are above an unprofiled sweep's. This is how the two hotspots of issue 25
were found: XLA's CPU ``sort`` in the simplex projection (1.6 us per row of 10, a third
of a WDP-COCOP step) and ``jax.random.fold_in``'s rolled Threefry loop in the window tree.

Usage: taskset -c 0 python benchmarks/profile_kernels.py NAME D [--horizon T] [--seeds S] [--top N]
       (NAME: pftal-gamma, ftal, ogd, wdp_cocop, ... as in throughput.py's CPU table)

On a GPU the same table lists the device's kernels (the profiler's GPU events; a kernel launched once per
step has at least T calls), e.g. ``--seeds 1000000 --horizon 256`` (``benchmarks/gpu_check.sh``).
"""

from __future__ import annotations

import argparse
import collections
import glob
import gzip
import json
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def main() -> None:
    parser = argparse.ArgumentParser(allow_abbrev=False)
    parser.add_argument("name")
    parser.add_argument("dim", type=int)
    parser.add_argument("--horizon", type=int, default=1024)
    parser.add_argument("--seeds", type=int, default=1024)
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="jaxpriv_kernels_")
    flags = os.environ.get("XLA_FLAGS", "")
    os.environ["XLA_FLAGS"] = f"{flags} --xla_dump_to={work}/hlo --xla_dump_hlo_as_text".strip()

    import jax  # after XLA_FLAGS
    from throughput import _oco_setup  # a sibling script: the CPU table's configurations

    import jaxpriv as jp

    learner, env, ep, vary = _oco_setup(args.name, args.horizon, args.dim)
    params = jp.SimParams(vary(0), ep)
    steps = args.seeds * args.horizon

    def go() -> None:
        r = jp.sweep(learner, env, params, jax.random.key(0), args.horizon, seeds=args.seeds, checkpoints="log")
        jax.block_until_ready(r.regret)

    go()
    go()
    with jax.profiler.trace(f"{work}/trace"):
        go()
    trace = glob.glob(f"{work}/trace/**/*.trace.json.gz", recursive=True)[0]
    total: collections.Counter = collections.Counter()
    count: collections.Counter = collections.Counter()
    for event in json.load(gzip.open(trace))["traceEvents"]:
        if event.get("ph") == "X":
            total[event["name"]] += event["dur"]
            count[event["name"]] += 1
    ops = {}
    for path in glob.glob(f"{work}/hlo/*_sweep_jit.*_after_optimizations.txt"):  # cpu_ or gpu_
        for line in open(path):
            m = re.match(r"\s*%(\S+) = (\S+) .*op_name=\"([^\"]+)\"", line)
            if m:
                ops[m.group(1)] = (m.group(2), m.group(3).split("/while/body/")[-1])
    whole = total.get("ThunkExecutor::Execute", 0)  # the CPU's executor; a GPU trace has no such event
    print(f"{args.name}, d = {args.dim}, {args.seeds} seeds, T = {args.horizon} on {jax.default_backend()}: "
          "kernels run at least once per step")  # fmt: skip
    if whole:
        print(f"the whole sweep under the profiler: {whole * 1e3 / steps:.1f} ns per seed-step")
    print(f"{'ns/seed-step':>12} {'calls':>7}  {'kernel':<40} {'shape':<24} operation")
    rows = [(n, v) for n, v in total.most_common() if count[n] >= args.horizon and not n.startswith("ThunkExecutor")]
    for name, us in rows[: args.top]:
        shape, op = ops.get(name, ("", ""))
        print(f"{us * 1e3 / steps:>12.1f} {count[name]:>7}  {name[:40]:<40} {shape[:24]:<24} {op[:80]}")
    print(f"sum of the per-step kernels: {sum(v for _, v in rows) * 1e3 / steps:.1f} ns per seed-step")


if __name__ == "__main__":
    main()
