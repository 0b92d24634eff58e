"""AdaC-UCB throughput (seed-rounds per second), step level, against NumPy vectorised over seeds.

Both implementations run the same algorithm (AdaC-UCB, K = 10, beta = 1, rho = 1,
per-arm doubling, forgetting, one Gaussian draw per closed episode, uniform
random tie-breaking) on a Bernoulli bandit, for the same (seeds, horizon), in
one run of this script:

  * jaxpriv: ``jaxpriv.sweep`` (one ``lax.scan`` over rounds, ``vmap`` over
    seeds), compile time and steady-state time reported separately
    (``block_until_ready``);
  * NumPy: the algorithm vectorised over seeds (a Python loop over rounds
    only): what a careful user writes on CPU.

It also times the full-scale finite-armed reproduction of the paper's
Section VII with the episode-level fast path (``--full-scale``: the shipped
study ``zcdp_bandits_finite``): 8 ρ values plus the non-private baseline,
100 runs, T = 10⁷.

With ``--policies`` it also times every finite-armed policy at step level (the baselines AdaP-UCB,
AdaP-KLUCB, DP-UCB, LDP-UCB, DP-SE and non-private UCB) beside AdaC-UCB, on the same instance.

With ``--episodic`` it times the exact episode-level simulators of the baselines beside AdaC-UCB's
(``simulate_ucb_episodes`` for AdaP-UCB / AdaP-KLUCB, ``simulate_dp_se_epochs`` for DP-SE, at
T = 10⁷) and AdaC-GOPE-Var's beside AdaC-GOPE's (``simulate_episodes``, K = 10, d = 3, T = 10⁶).

Usage: python benchmarks/bandits_throughput.py [--quick] [--full-scale] [--policies] [--episodic]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from typing import Any

import jax
import numpy as np

import jaxpriv as jp
from jaxpriv import bandits
from jaxpriv.bandits import AdaCUCBParams, adac_ucb
from jaxpriv.envs.bandits import BernoulliParams, bernoulli_bandit

K = 10
MEANS = np.linspace(0.9, 0.1, K).astype(np.float32)


def bench_pair(seeds: int, horizon: int, reps: int = 3) -> tuple[float, float, float, float, float]:
    """Compile time, then the jaxpriv sweep and NumPy timed alternately ``reps`` times (medians): a shared
    machine's load hits both sides alike. Returns ``(compile, jaxpriv, numpy, jaxpriv regret, numpy regret)``."""
    learner, env = adac_ucb(K, horizon), bernoulli_bandit(K)

    def go(rho, key):
        params = jp.SimParams(AdaCUCBParams(rho=rho), BernoulliParams(MEANS))
        r = jp.sweep(learner, env, params, jax.random.key(key), horizon, seeds=seeds, checkpoints=[horizon])
        return float(np.mean(np.asarray(r.regret[:, -1])))

    t0 = time.perf_counter()
    go(1.0, 0)
    first = time.perf_counter() - t0
    jt, nt = [], []
    for rep in range(reps):
        t0 = time.perf_counter()
        reg_j = go(2.0, 1 + rep)  # a new ρ value: no recompile
        jt.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        reg_n = float(adac_ucb_numpy(seeds, horizon, rho=2.0, seed=rep).mean())
        nt.append(time.perf_counter() - t0)
    steady = float(np.median(jt))
    return first - steady, steady, float(np.median(nt)), reg_j, reg_n


def adac_ucb_numpy(seeds: int, horizon: int, rho: float, beta: float = 1.0, seed: int = 0) -> np.ndarray:
    """AdaC-UCB vectorised over seeds; returns the final pseudo-regret of each seed.

    float32 / int32, the sweep's precision (float64 / int64: 1.03x slower, measured once)."""
    rng = np.random.default_rng(seed)
    gaps = MEANS.max() - MEANS
    rows = np.arange(seeds)
    counts = np.zeros((seeds, K), np.int32)
    means = np.zeros((seeds, K), np.float32)
    lengths = np.zeros((seeds, K), np.int32)
    arm = np.zeros(seeds, np.int32)
    length = np.zeros(seeds, np.int32)
    played = np.zeros(seeds, np.int32)
    total = np.zeros(seeds, np.float32)
    regret = np.zeros(seeds, np.float32)
    unit_stddev = float(1.0 / np.sqrt(2.0 * rho))
    for t in range(1, horizon + 1):
        rewards = rng.random((seeds, 1)) < MEANS  # all arms from one uniform, as in the JAX env
        done = played >= length
        if t <= K:
            a = np.full(seeds, t - 1)
        else:
            n = lengths.astype(np.float32)
            index = means + np.sqrt((0.5 / n + 2 * unit_stddev**2 / n**2) * beta * np.float32(np.log(t)))
            ties = index == index.max(1, keepdims=True)
            best = np.argmax(np.where(ties, rng.random((seeds, K)), -1.0), axis=1)
            a = np.where(done, best, arm)
        r = rewards[rows, a].astype(np.float32)
        # Episode bookkeeping (same as jaxpriv.bandits._episodic_ucb.update_fn).
        arm = np.where(done, a, arm)
        length = np.where(done, np.maximum(counts[rows, a], 1), length)
        played = np.where(done, 0, played) + 1
        total = np.where(done, 0.0, total) + r
        counts[rows, a] += 1
        regret += gaps[a]
        close = played == length
        if close.any():
            c = np.nonzero(close)[0]
            nc = length[c].astype(np.float32)
            means[c, arm[c]] = total[c] / nc + (unit_stddev / nc) * rng.standard_normal(c.size, np.float32)
            lengths[c, arm[c]] = length[c]
    return regret


def bench_full_scale() -> tuple[float, float]:
    """The shipped study ``zcdp_bandits_finite`` at full scale: ``(total s, the sweeps' s from settings.json)``."""
    import json

    from jaxpriv.experiments.study import run_study

    with tempfile.TemporaryDirectory() as out:
        t0 = time.perf_counter()
        res = run_study("zcdp_bandits_finite", out, progress=False)
        total = time.perf_counter() - t0
        seconds = json.loads(res.files["json"].read_text())["seconds"]
    return total, seconds


def _policies(horizon: int) -> dict[str, tuple[Any, Any]]:
    """Every finite-armed policy at ε = 1 (ρ = ε²/2 = 0.5 for AdaC-UCB), with its params."""
    return {
        "adac_ucb (rho = 0.5)": (adac_ucb(K, horizon), AdaCUCBParams(rho=0.5)),
        "ucb (non-private)": (bandits.ucb(K, horizon), bandits.UCBParams()),
        "adap_ucb": (bandits.adap_ucb(K, horizon), bandits.AdaPUCBParams(epsilon=1.0)),
        "adap_klucb": (bandits.adap_klucb(K, horizon), bandits.AdaPKLUCBParams(epsilon=1.0)),
        "dp_ucb (Laplace tree)": (bandits.dp_ucb(K, horizon), bandits.DPUCBParams(epsilon=1.0)),
        "ldp_ucb": (bandits.ldp_ucb(K, horizon), bandits.LDPUCBParams(epsilon=1.0)),
        "dp_se": (bandits.dp_se(K, horizon), bandits.DPSEParams(epsilon=1.0)),
    }


def bench_policies(seeds: int, horizon: int, reps: int = 3) -> list[tuple[str, float, float]]:
    """Step-level throughput of every finite-armed policy: ``(name, compile s, steady-state seed-rounds/s)``.

    The same Bernoulli instance, seeds and horizon for each; a new key per timed run (no recompile);
    medians of ``reps``."""
    env, rows = bernoulli_bandit(K), []
    for name, (learner, lp) in _policies(horizon).items():
        params = jp.SimParams(lp, BernoulliParams(MEANS))

        def go(key, learner=learner, params=params):
            r = jp.sweep(learner, env, params, jax.random.key(key), horizon, seeds=seeds, checkpoints=[horizon])
            jax.block_until_ready(r.regret)

        t0 = time.perf_counter()
        go(0)
        first = time.perf_counter() - t0
        times = []
        for rep in range(reps):
            t0 = time.perf_counter()
            go(1 + rep)
            times.append(time.perf_counter() - t0)
        steady = float(np.median(times))
        rows.append((name, first - steady, seeds * horizon / steady))
    return rows


def _episodic_runs(seeds: int, horizon: int, linear_seeds: int, linear_horizon: int) -> dict[str, tuple[Any, int, int]]:
    """Each episode-level simulator as ``name -> (go(key), seeds, horizon)``, at ε = 1 (ρ = ε²/2 = 0.5)."""
    from jaxpriv.bandits.episodic import simulate_episodes
    from jaxpriv.envs.linear_bandits import sample_linear_instance

    def ucb_like(params):
        return lambda key: bandits.simulate_ucb_episodes(params, MEANS, jax.random.key(key), horizon, seeds, [horizon])

    def dp_se(key):
        params = bandits.DPSEParams(epsilon=1.0)
        return bandits.simulate_dp_se_epochs(params, MEANS, jax.random.key(key), horizon, seeds, [horizon])

    inst = sample_linear_instance(jax.random.key(0), 10, 3)

    def gope_like(factory):
        def go(key):
            learner, params = factory(10, 3, linear_horizon), bandits.AdaCGOPEParams(inst.actions, 0.5)
            return simulate_episodes(
                learner, params, inst, jax.random.key(key), linear_horizon, linear_seeds, [linear_horizon],
                instance="random",
            )  # fmt: skip

        return go

    return {
        "adac_ucb (rho = 0.5)": (ucb_like(AdaCUCBParams(rho=0.5)), seeds, horizon),
        "adap_ucb": (ucb_like(bandits.AdaPUCBParams(epsilon=1.0)), seeds, horizon),
        "adap_klucb": (ucb_like(bandits.AdaPKLUCBParams(epsilon=1.0)), seeds, horizon),
        "dp_se (epochs)": (dp_se, seeds, horizon),
        "adac_gope (rho = 0.5)": (gope_like(bandits.adac_gope), linear_seeds, linear_horizon),
        "adac_gope_var (rho = 0.5)": (gope_like(bandits.adac_gope_var), linear_seeds, linear_horizon),
    }


def bench_episodic(quick: bool, reps: int = 3) -> list[tuple[str, int, int, float, float]]:
    """Episode-level simulators: ``(name, seeds, T, compile s, steady-state seed-rounds/s)``, medians of ``reps``."""
    sizes = (200, 10**6, 20, 10**5) if quick else (1000, 10**7, 100, 10**6)
    rows = []
    for name, (go, seeds, horizon) in _episodic_runs(*sizes).items():
        t0 = time.perf_counter()
        jax.block_until_ready(go(0).regret)
        first = time.perf_counter() - t0
        times = []
        for rep in range(reps):
            t0 = time.perf_counter()
            jax.block_until_ready(go(1 + rep).regret)
            times.append(time.perf_counter() - t0)
        steady = float(np.median(times))
        rows.append((name, seeds, horizon, first - steady, seeds * horizon / steady))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(allow_abbrev=False)
    parser.add_argument("--quick", action="store_true", help="smaller sizes")
    parser.add_argument("--full-scale", action="store_true", help="also time the full-scale reproduction")
    parser.add_argument(
        "--policies", action="store_true", help="also time every finite-armed policy (the baselines) beside AdaC-UCB"
    )
    parser.add_argument(
        "--episodic", action="store_true", help="also time the episode-level simulators of the baselines"
    )
    parser.add_argument(
        "--cpu-devices", type=int, default=None, help="JAX CPU devices to shard the seeds over (default: JAX's, one)"
    )
    args = parser.parse_args()
    if args.cpu_devices is not None:  # before any JAX operation
        jp.use_cpu_cores(args.cpu_devices)
    seeds, horizon = (256, 2000) if args.quick else (1000, 10_000)
    n = seeds * horizon
    print(f"AdaC-UCB, K = {K}, seeds = {seeds}, T = {horizon}, backend = {jax.default_backend()}, {jax.devices()}")
    compile_s, steady_s, numpy_s, reg_j, reg_n = bench_pair(seeds, horizon)
    print(f"{'implementation':<34}{'time (s)':>10}{'seed-rounds/s':>16}{'mean regret':>13}")
    print(f"{'jaxpriv sweep, compile':<34}{compile_s:>10.2f}{'':>16}{'':>13}")
    print(f"{'jaxpriv sweep, steady state':<34}{steady_s:>10.2f}{n / steady_s:>16.3g}{reg_j:>13.1f}")
    print(f"{'NumPy vectorised over seeds':<34}{numpy_s:>10.2f}{n / numpy_s:>16.3g}{reg_n:>13.1f}")
    print(f"speed-up (steady state, medians of 3 alternated runs): {numpy_s / steady_s:.2f}x")
    if args.policies:
        rows = bench_policies(seeds, horizon)
        base = rows[0][2]
        print(f"\n{'policy (step level, eps = 1)':<30}{'compile (s)':>12}{'seed-rounds/s':>16}{'x AdaC-UCB':>12}")
        for name, compile_s, rate in rows:
            print(f"{name:<30}{compile_s:>12.2f}{rate:>16.3g}{rate / base:>12.2f}")
    if args.episodic:
        rows = bench_episodic(args.quick)
        head = f"{'seeds':>7}{'T':>10}{'compile (s)':>12}{'seed-rounds/s':>16}{'x ref':>8}"
        print(f"\n{'episode-level simulator':<28}{head}")
        for name, n_seeds, T, compile_s, rate in rows:
            ref = rows[0][4] if "gope" not in name else rows[-2][4]  # AdaC-UCB's, or AdaC-GOPE's
            print(f"{name:<28}{n_seeds:>7}{T:>10.0e}{compile_s:>12.2f}{rate:>16.3g}{rate / ref:>8.2f}")
    if args.full_scale:
        total, sim = bench_full_scale()
        print(
            "full-scale finite-armed reproduction (fast path; 8 rho x 100 runs + baseline, T = 1e7): "
            f"{total:.1f} s in total, {sim:.1f} s simulating (compile included)"
        )


if __name__ == "__main__":
    main()
