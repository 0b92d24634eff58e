"""PFTAL sweep throughput (seed-steps per second) against three references, measured in one run.

References, for the same (seeds, horizon, d):
  * bulk noise: drawing the same amount of Gaussian noise (seeds x T x d) in one
    `jax.random.normal` call: the cost floor of any simulation that must draw it;
  * NumPy loop: a straightforward per-step, per-seed NumPy loop of the same algorithm
    (what a paper's code usually is), timed on a few seeds and scaled;
  * NumPy vectorised: the same algorithm in NumPy, vectorised over seeds (a Python loop
    over t only): what a careful user writes instead, the real bar on CPU.

Compile time and steady-state time (median of 3) of the jaxpriv sweep are reported separately.
Usage: python benchmarks/throughput.py [--quick]
"""

from __future__ import annotations

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np

import jaxpriv as jp
from jaxpriv import envs, mechanisms, oco, sets


def bench_jaxpriv(seeds: int, horizon: int, dim: int) -> tuple[float, float]:
    ball = sets.l2_ball(dim)
    env = envs.quadratic_stream(ball)
    learner = oco.pftal(horizon, ball)
    params = jp.SimParams(
        oco.PFTALParams(epsilon=1.0, lipschitz=2.0), envs.QuadraticParams(1.0, np.full(dim, 0.1, np.float32), 0.3)
    )
    t0 = time.perf_counter()
    r = jp.sweep(learner, env, params, jax.random.key(0), horizon, seeds=seeds, checkpoints="log")
    jax.block_until_ready(r.regret)
    first = time.perf_counter() - t0
    times = []
    for rep in range(3):  # new privacy values each time: no recompile; the median is reported
        params = params._replace(learner=params.learner._replace(epsilon=2.0 + rep))
        t0 = time.perf_counter()
        r = jp.sweep(learner, env, params, jax.random.key(1 + rep), horizon, seeds=seeds, checkpoints="log")
        jax.block_until_ready(r.regret)
        times.append(time.perf_counter() - t0)
    steady = float(np.median(times))
    return first - times[0], steady


def bench_bulk_noise(seeds: int, horizon: int, dim: int) -> float:
    f = jax.jit(lambda k: jax.random.normal(k, (seeds, horizon, dim), jnp.float32).sum())
    jax.block_until_ready(f(jax.random.key(0)))
    times = []
    for rep in range(3):
        t0 = time.perf_counter()
        jax.block_until_ready(f(jax.random.key(1 + rep)))
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def _numpy_pftal(rng, seeds, horizon, dim, vectorised):
    """PFTAL (Gamma-norm tree) on the quadratic stream, in NumPy; returns the final cumulative loss."""
    depth = mechanisms.tree_depth(horizon)
    H, L, eps, R = 1.0, 2.0, 1.0, 1.0
    sens = L + H * R
    scale = depth * sens / eps
    center = np.full(dim, 0.1)
    S = seeds if vectorised else 1
    runs = 1 if vectorised else seeds
    total = 0.0
    for _ in range(runs):
        exact = np.zeros((depth, S, dim))
        noisy = np.zeros((depth, S, dim))
        w = np.zeros((S, dim))
        mean_w = np.zeros((S, dim))
        cum_loss = np.zeros(S)
        zsum = np.zeros((S, dim))
        for t in range(1, horizon + 1):
            z = center + 0.3 * rng.standard_normal((S, dim))
            z *= np.minimum(1.0, 1.0 / np.linalg.norm(z, axis=1, keepdims=True))
            g = H * (w - z)
            cum_loss += 0.5 * H * np.sum((w - z) ** 2, axis=1)
            zsum += z
            g *= np.minimum(1.0, sens / np.maximum(np.linalg.norm(g, axis=1, keepdims=True), 1e-30))
            low = (t & -t).bit_length() - 1
            node = g + exact[:low].sum(0)
            direction = rng.standard_normal((S, dim))
            direction /= np.linalg.norm(direction, axis=1, keepdims=True)
            radius = rng.standard_exponential((S, dim)).sum(1, keepdims=True)
            exact[low] = node
            noisy[low] = node + scale * radius * direction
            v = sum(noisy[i] for i in range(depth) if (t >> i) & 1)
            mean_w += (w - mean_w) / t
            w = mean_w - v / (H * t)
            w *= np.minimum(1.0, R / np.maximum(np.linalg.norm(w, axis=1, keepdims=True), 1e-30))
        total += cum_loss.sum()
    return total


def bench_numpy(seeds: int, horizon: int, dim: int, vectorised: bool) -> float:
    rng = np.random.default_rng(0)
    t0 = time.perf_counter()
    _numpy_pftal(rng, seeds, horizon, dim, vectorised)
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="smaller configurations")
    args = parser.parse_args()
    configs = [(1024, 4096, 10), (100, 16384, 3), (4096, 1024, 10)]
    if args.quick:
        configs = [(256, 1024, 10)]
    print(f"jaxpriv {jp.__version__}, jax {jax.__version__}, backend {jax.default_backend()}, {jax.devices()[0]}")
    print(
        f"{'seeds':>6} {'T':>6} {'d':>3} | {'compile s':>9} {'sweep s':>8} {'seed-steps/s':>12} | "
        f"{'x bulk noise':>12} {'x NumPy loop':>12} {'x NumPy vec':>11}"
    )
    for seeds, horizon, dim in configs:
        compile_s, steady = bench_jaxpriv(seeds, horizon, dim)
        rate = seeds * horizon / steady
        bulk = bench_bulk_noise(seeds, horizon, dim)
        loop_seeds, loop_T = 2, min(horizon, 2048)  # the per-step loop is slow: time a slice and scale
        loop_rate = loop_seeds * loop_T / bench_numpy(loop_seeds, loop_T, dim, vectorised=False)
        vec_rate = seeds * horizon / bench_numpy(seeds, horizon, dim, vectorised=True)
        print(
            f"{seeds:>6} {horizon:>6} {dim:>3} | {compile_s:>9.2f} {steady:>8.3f} {rate:>12.3g} | "
            f"{steady / bulk:>11.2f}x {rate / loop_rate:>11.1f}x {rate / vec_rate:>10.2f}x"
        )
    print(
        "x bulk noise: sweep time / time to draw seeds*T*d normals in bulk (>= 1; lower is better).\n"
        "x NumPy loop, x NumPy vec: jaxpriv seed-steps/s / NumPy seed-steps/s (higher is better)."
    )


if __name__ == "__main__":
    main()
