"""Seed scaling: seed-steps/s of a sweep from 10^3 to 10^6 seeds, and the per-step fixed cost.

For each learner (PFTAL with the Gamma tree, FTAL, OGD, MI-OGD on the quadratic stream, d = 10)
and each seed count, the sweep's compile time and steady-state time (median of 3 runs with new
params, no recompilation) are printed with the seed-steps/s. The per-step fixed cost is the time
of one scan iteration with a single seed (what every step costs whatever the batch: on a GPU a
few microseconds of kernel launches); ``time(S) ≈ T * (fixed + S / peak)`` is the cost model,
and the last column is the fraction of the time the fixed cost explains.

Usage: python benchmarks/scaling.py [--horizon T] [--max-seeds N] [--dim d] [--learners a,b]
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
        learner, lp = oco.ftal(ball), oco.FTALParams(1.0)

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


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--horizon", type=int, default=1024)
    parser.add_argument("--dim", type=int, default=10)
    parser.add_argument("--max-seeds", type=int, default=10**6)
    parser.add_argument("--min-seeds", type=int, default=10**3)
    parser.add_argument("--chunk", type=int, default=None, help="seed chunk (default: all seeds at once)")
    parser.add_argument("--learners", default="pftal,ftal,ogd,mi_ogd")
    args = parser.parse_args()
    T, d = args.horizon, args.dim
    print(f"jaxpriv {jp.__version__}, jax {jax.__version__}, backend {jax.default_backend()}, {jax.devices()[0]}")
    print(f"T = {T}, d = {d}, quadratic stream, l2 ball; checkpoints='log'")
    print(
        f"{'learner':>8} {'seeds':>8} | {'compile s':>9} {'sweep s':>9} {'seed-steps/s':>12} | "
        f"{'fixed us/step':>13} {'fixed share':>11}"
    )
    for name in args.learners.split(","):
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


if __name__ == "__main__":
    main()
