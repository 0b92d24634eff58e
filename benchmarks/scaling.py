"""Seed scaling: seed-steps/s of a sweep from 10^3 to 10^6 seeds, and the per-step fixed cost.

For each learner (PFTAL with the Gamma tree, FTAL, OGD, MI-OGD on the quadratic stream, d = 10)
and each seed count, the sweep's compile time and steady-state time (median of 3 runs with new
params, no recompilation) are printed with the seed-steps/s. The per-step fixed cost is the time
of one scan iteration with a single seed (what every step costs whatever the batch: on a GPU a
few microseconds of kernel launches); ``time(S) ≈ T * (fixed + S / peak)`` is the cost model,
and the last column is the fraction of the time the fixed cost explains.

``--stats-seeds N`` then runs one PFTAL sweep of N seeds with streaming statistics
(``stats=Stats()``, seed chunks of ``--stats-chunk``) and prints its time and peak memory
(device memory on a GPU, the process's peak RSS on a CPU) beside the size the per-seed
arrays would have had.

Usage: python benchmarks/scaling.py [--horizon T] [--max-seeds N] [--dim d] [--learners a,b]
                                    [--stats-seeds N --stats-chunk C]
"""

from __future__ import annotations

import argparse
import time

import jax
import numpy as np

import jaxpriv as jp
from jaxpriv import envs, oco, sets


def setup(name: str, horizon: int, dim: int):
    ball = sets.l2_ball(dim)
    env = envs.quadratic_stream(ball)
    ep = envs.QuadraticParams(1.0, np.full(dim, 0.1, np.float32), 0.3)
    if name == "pftal":
        learner, lp = oco.pftal(horizon, ball), oco.PFTALParams(epsilon=1.0, lipschitz=2.0)

        def vary(rep):
            return lp._replace(epsilon=2.0 + rep)
    elif name == "ftal":
        learner, lp = oco.ftal(ball, horizon), oco.FTALParams(1.0)

        def vary(rep):
            return lp._replace(strong_convexity=1.1 + 0.1 * rep)
    elif name == "ogd":
        learner, lp = oco.ogd(ball), oco.OGDParams(1.0)

        def vary(rep):
            return lp._replace(strong_convexity=1.1 + 0.1 * rep)
    elif name == "mi_ogd":
        learner, lp = oco.mi_ogd(ball, horizon), oco.MIOGDParams(1.0, 2.0)

        def vary(rep):
            return lp._replace(mutual_information=2.0 + rep)
    else:
        raise ValueError(f"unknown learner {name!r}")
    return learner, env, jp.SimParams(lp, ep), lambda rep: jp.SimParams(vary(rep), ep)


def time_sweep(name: str, seeds: int, horizon: int, dim: int, chunk: int | None) -> tuple[float, float]:
    learner, env, params, vary = setup(name, horizon, dim)
    t0 = time.perf_counter()
    r = jp.sweep(learner, env, params, 0, horizon, seeds=seeds, checkpoints="log", chunk=chunk)
    jax.block_until_ready(r.regret)
    first = time.perf_counter() - t0
    times = []
    for rep in range(3):
        t0 = time.perf_counter()
        r = jp.sweep(learner, env, vary(rep), 1 + rep, horizon, seeds=seeds, checkpoints="log", chunk=chunk)
        jax.block_until_ready(r.regret)
        times.append(time.perf_counter() - t0)
    steady = float(np.median(times))
    return first - steady, steady


def peak_memory_bytes() -> tuple[int, str]:
    stats = jax.devices()[0].memory_stats() if jax.default_backend() != "cpu" else None
    if stats and "peak_bytes_in_use" in stats:
        return int(stats["peak_bytes_in_use"]), "device peak"
    import resource

    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024, "process peak RSS"


def stats_sweep(seeds: int, chunk: int, horizon: int, dim: int) -> None:
    learner, env, params, _ = setup("pftal", horizon, dim)
    ckpts = jp.log_checkpoints(horizon, 1000)
    t0 = time.perf_counter()
    s = jp.sweep(learner, env, params, 0, horizon, seeds=seeds, checkpoints=ckpts, chunk=chunk, stats=jp.Stats())
    dt = time.perf_counter() - t0
    peak, what = peak_memory_bytes()
    arrays = 3 * seeds * len(ckpts) * 4
    print(
        f"\nstatistics sweep: PFTAL, {seeds} seeds in chunks of {chunk}, T = {horizon}, d = {dim}, "
        f"{len(ckpts)} checkpoints: {dt:.1f} s incl. compile ({seeds * horizon / dt:.3g} seed-steps/s); "
        f"{what} {peak / 2**30:.2f} GiB; the per-seed arrays would take {arrays / 2**30:.1f} GiB. "
        f"Final regret mean {s.regret_mean[-1]:.4g} +- {s.regret_se()[-1]:.2g}, median {s.regret_quantiles[-1, 2]:.4g}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(allow_abbrev=False)
    parser.add_argument("--horizon", type=int, default=1024)
    parser.add_argument("--dim", type=int, default=10)
    parser.add_argument("--max-seeds", type=int, default=10**6)
    parser.add_argument("--min-seeds", type=int, default=10**3)
    parser.add_argument("--chunk", type=int, default=None, help="seed chunk (default: all seeds at once)")
    parser.add_argument("--learners", default="pftal,ftal,ogd,mi_ogd")
    parser.add_argument("--stats-seeds", type=int, default=0, help="then a statistics sweep of this many seeds")
    parser.add_argument("--stats-chunk", type=int, default=10**5)
    args = parser.parse_args()
    T, d = args.horizon, args.dim
    print(f"jaxpriv {jp.__version__}, jax {jax.__version__}, backend {jax.default_backend()}, {jax.devices()[0]}")
    print(f"T = {T}, d = {d}, quadratic stream, l2 ball; checkpoints='log'")
    print(
        f"{'learner':>8} {'seeds':>8} | {'compile s':>9} {'sweep s':>9} {'seed-steps/s':>12} | "
        f"{'fixed us/step':>13} {'fixed share':>11}"
    )
    for name in filter(None, args.learners.split(",")):  # --learners "" runs the statistics sweep only
        _, one = time_sweep(name, 1, T, d, None)
        fixed = one / T
        seeds = args.min_seeds
        while seeds <= args.max_seeds:
            compile_s, steady = time_sweep(name, seeds, T, d, args.chunk)
            rate = seeds * T / steady
            print(
                f"{name:>8} {seeds:>8} | {compile_s:>9.2f} {steady:>9.4f} {rate:>12.3g} | "
                f"{fixed * 1e6:>13.2f} {fixed * T / steady:>10.0%}",
                flush=True,
            )
            seeds *= 10
    if args.stats_seeds:
        stats_sweep(args.stats_seeds, args.stats_chunk, T, d)


if __name__ == "__main__":
    main()
