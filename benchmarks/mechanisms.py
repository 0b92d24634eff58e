"""Prefix-sum mechanisms side by side: exact variance, PFTAL's regret with each, cost per step.

(a) worst and mean per-step variance (``release_variance``, unit sensitivity, ρ = 1/2,
    add/remove neighbours) against T, with the ratio to the square-root factorization;
(b) PFTAL's mean final regret at the same ρ on the quadratic and logistic streams, each
    mechanism built with ``neighbouring="replace"``, on shared seeds;
(c) PFTAL seed-steps/s with each mechanism (steady state, median of 3) and the state
    memory per seed.
Usage: python benchmarks/mechanisms.py [--quick]
"""

from __future__ import annotations

import argparse
import time

import jax
import numpy as np

import jaxpriv as jp
from jaxpriv import envs, mechanisms, oco, sets

GAUSSIAN = ("binary_tree", "honaker_tree", "blt", "sqrt_factorization")  # the square root last: the reference


def variance_table(horizons: list[int]) -> None:
    p = mechanisms.TreeParams(rho=0.5, sensitivity=1.0)
    print("(a) per-step variance, unit sensitivity, rho = 1/2: worst (mean), worst / the square root's")
    print(f"{'T':>9} " + " ".join(f"{n:>28}" for n in GAUSSIAN))
    for horizon in horizons:
        t = np.arange(1, horizon + 1)
        cells, ref = [], None
        for name in reversed(GAUSSIAN):
            if name == "sqrt_factorization" and horizon > mechanisms.SQRT_MAX_ELEMENTS:
                cells.append(None)
                continue
            var = mechanisms.release_variance(getattr(mechanisms, name)(horizon, 1, "gaussian"), p, t)
            ref = var.max() if name == "sqrt_factorization" else ref
            cells.append((var.max(), var.mean(), var.max() / ref))
        row = [f"{c[0]:9.2f} ({c[1]:7.2f}) x{c[2]:5.2f}" if c else f"{'-':>28}" for c in reversed(cells)]
        print(f"{'2^' + str(horizon.bit_length() - 1):>9} " + " ".join(row))


def pftal_learners(horizon: int, dim: int) -> dict[str, jp.Learner]:
    ball = sets.l2_ball(dim)
    return {
        name: oco.pftal(horizon, ball, mechanism=getattr(mechanisms, name)(horizon, dim, "gaussian", "replace"))
        for name in GAUSSIAN
    }


def state_bytes(learner: jp.Learner, params) -> int:
    state = learner.init(jax.random.key(0), params)
    return sum(np.asarray(leaf).nbytes for leaf in jax.tree.leaves(state.tree))


def regret_and_speed(horizon: int, dim: int, seeds: int, rho: float) -> None:
    ball = sets.l2_ball(dim)
    streams = {
        "quadratic": (
            envs.quadratic_stream(ball),
            envs.QuadraticParams(1.0, np.full(dim, 0.1, np.float32), 0.3),
            1.0,
        ),
        "logistic": (envs.classification_stream(ball, horizon, "logistic"), envs.ClassificationParams(), 0.1),
    }
    print(f"\n(b, c) PFTAL, T = {horizon}, d = {dim}, {seeds} seeds, rho = {rho} (replace-one), shared seeds")
    head = ["quadratic regret", "logistic regret", "seed-steps/s"]
    print(f"{'mechanism':>20} " + " ".join(f"{h:>18}" for h in head) + f" {'state B/seed':>13}")
    learners = pftal_learners(horizon, dim)
    speed_ref = None
    for name, learner in learners.items():
        cells = []
        for stream, (env, env_p, h) in streams.items():
            lip = 2.0 * (ball.radius + 1.0) if stream == "quadratic" else 1.0  # H(||C|| + ||z||); feature radius
            params = jp.SimParams(oco.PFTALParams(rho=rho, lipschitz=lip, strong_convexity=h), env_p)
            r = jp.sweep(learner, env, params, jax.random.key(0), horizon, seeds=seeds, checkpoints=[horizon])
            final = np.asarray(r.regret)[:, -1]
            cells.append(f"{final.mean():9.2f} ± {final.std() / np.sqrt(seeds):5.2f}")
            if stream == "quadratic":
                times = []
                for rep in range(3):
                    t0 = time.perf_counter()
                    r = jp.sweep(learner, env, params, jax.random.key(1 + rep), horizon, seeds=seeds, checkpoints="log")
                    jax.block_until_ready(r.regret)
                    times.append(time.perf_counter() - t0)
                speed = seeds * horizon / float(np.median(times))
                speed_ref = speed if speed_ref is None else speed_ref
                mem = state_bytes(learner, params.learner)
        print(f"{name:>20} {cells[0]:>18} {cells[1]:>18} {speed:10.3g} x{speed / speed_ref:4.2f} {mem:>12}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, allow_abbrev=False)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    variance_table([2**10, 2**14, 2**20] if not args.quick else [2**10, 2**14])
    if args.quick:
        regret_and_speed(2**10, 4, 128, 0.5)
    else:
        regret_and_speed(2**12, 10, 1024, 0.5)


if __name__ == "__main__":
    main()
