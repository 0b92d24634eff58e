"""The finite-armed "optimal" ε-DP bandits beside AdaP-KLUCB and AdaC-UCB at T = 10⁷ (issue 38).

Azize & Basu cite Hu & Hegde 2022 (Lazy-DP-TS, "matches the lower bound") and Hu, Huang & Mehta 2021
(Anytime-Lazy-UCB, "optimal") as the finite-armed ε-DP algorithms of optimal order. This script runs them on
the AdaP paper's instance (Bernoulli ``μ = (0.75, 0.625, 0.5, 0.375, 0.25)``, ``ε = 1``) beside the reference
rows of the shipped study ``pure_dp_bandits`` (AdaP-KLUCB, ``α = 3.1``, and AdaC-UCB at ``ρ = ε²/2``, ``β = 1``:
the instance, ``ε``, the reference and both learners read from ``jaxpriv/experiments/studies/pure_dp_bandits.toml``
by the study parser), all on the same base key and seed count (seed ``i`` uses
``split(key, seeds)[i]``), and prints a markdown table: regret at ``T`` (mean ± SE), and the ratio and the
difference to AdaP-KLUCB with their paired standard errors (the ratio's by the delta method on the paired
runs, as the study's ``paired.csv`` does), with each algorithm's wall time (compilation included).

Simulators:

* AdaP-KLUCB, AdaC-UCB: their exact episode simulators (``bandits.simulate_episodes``);
* Anytime-Lazy-UCB: its exact event simulator (``bandits.simulate_episodes(anytime_lazy_ucb(K), ...)``: one
  scan step per release or change of the leading index, ``jaxpriv.bandits.episodic.lazy``);
* Lazy-DP-TS: step level (``jaxpriv.sweep``). It draws a fresh posterior sample every round and the sampling
  distribution moves with ``log t``, so its decisions do not change only at batch ends and there is no exact
  episode simulator; ``T = 10⁷`` costs about 10 minutes on 2 CPU cores.

The pairing is exact between the two episode-level UCB simulators, and nominal between the simulators of
different kinds (they consume their keys differently): the paired SE is then about the unpaired one.

``--step-check`` also runs Anytime-Lazy-UCB step by step (a full-scale check of its event simulator; a few
minutes). ``--cache DIR`` stores each algorithm's final regrets (per T, seeds, key) and reuses them.

Measured (2 shared CPU cores, key 0, 20 runs, T = 10⁷; ratio and difference to AdaP-KLUCB ± paired SE; wall time
with compilation, under load from other processes):

| algorithm | simulator | regret | ratio | difference | wall (s) |
|---|---|---|---|---|---|
| AdaP-KLUCB | episode (exact) | 1856 ± 41 | 1 | 0 | 7.8 |
| AdaC-UCB (ρ = ε²/2) | episode (exact) | 395 ± 23 | 0.21 ± 0.01 | -1461 ± 47 | 7.9 |
| Anytime-Lazy-UCB | event (exact) | 2175 ± 59 | 1.17 ± 0.04 | +319 ± 69 | 18.0 |
| Lazy-DP-TS | step | 947 ± 8 | 0.51 ± 0.01 | -909 ± 41 | 894.7 |
| Anytime-Lazy-UCB (``--step-check``) | step | 2098 ± 67 | 1.13 ± 0.05 | +242 ± 88 | 102.4 |

Anytime-Lazy-UCB's regret is nearly discrete (2430.75, 2174.75, 1918.75 or 1662.75 in these runs): once an
arm's index overtakes the leader it stays ahead until its own release, so a suboptimal arm is pulled in whole
batches of 1, 2, 4, ... and ``N_j(T) = 2^{r_j} - 1``.

Usage: python benchmarks/finite_optimal_t1e7.py [--horizon 10000000] [--seeds 20] [--key 0] [--step-check]
[--only NAME ...] [--cache DIR]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

import jaxpriv as jp
from jaxpriv import bandits, envs
from jaxpriv.experiments.study import shipped_studies
from jaxpriv.experiments.study_file import load_study
from jaxpriv.stats import paired_difference
from jaxpriv.testing import mean_with_stderr

#: The shipped study whose instance, budget, reference and reference learners this script reuses.
STUDY = load_study(shipped_studies()["pure_dp_bandits"])
MEANS = tuple(float(m) for m in STUDY.raw["env"]["params"]["means"])
REFERENCE = STUDY.reference
EPSILON = float(next(a for a in STUDY.learners if a.label == REFERENCE).params.learner.epsilon)
K = len(MEANS)
ADAC = "AdaC-UCB (rho=eps^2/2)"


def _baseline(label: str):
    arm = next(a for a in STUDY.learners if a.label == label)
    assert arm.simulator == "episodes", arm.simulator

    def run(key, horizon, seeds):
        params = arm.params
        res = bandits.simulate_episodes(arm.learner, params.learner, params.env, key, horizon, seeds, (horizon,))
        return np.asarray(res.regret)[:, -1]

    return "episode (exact)", run


def _anytime_episodes(key, horizon, seeds):
    res = bandits.simulate_episodes(
        bandits.anytime_lazy_ucb(K),
        bandits.AnytimeLazyUCBParams(epsilon=EPSILON),
        MEANS,
        key,
        horizon,
        seeds,
        (horizon,),
    )
    return np.asarray(res.regret)[:, -1]


def _steps(factory, params):
    def run(key, horizon, seeds):
        sim = jp.SimParams(params, envs.BernoulliParams(jnp.asarray(MEANS, jnp.float32)))
        res = jp.sweep(factory(K), envs.bernoulli_bandit(K), sim, key, horizon, seeds, (horizon,))
        return np.asarray(res.regret)[:, -1]

    return run


RUNS = {
    REFERENCE: _baseline(REFERENCE),
    ADAC: _baseline(ADAC),
    "Anytime-Lazy-UCB": ("event (exact)", _anytime_episodes),
    "Lazy-DP-TS": ("step", _steps(bandits.lazy_dp_ts, bandits.LazyDPTSParams(epsilon=EPSILON))),
}
STEP_CHECK = {
    "Anytime-Lazy-UCB (step level)": (
        "step",
        _steps(bandits.anytime_lazy_ucb, bandits.AnytimeLazyUCBParams(epsilon=EPSILON)),
    )
}


def _measure(name, run, key, horizon, seeds, cache):
    path = None
    if cache is not None:
        slug = "".join(c if c.isalnum() else "_" for c in name)
        path = cache / f"{slug}_T{horizon}_S{seeds}_key{key}.npz"
        if path.exists():
            data = np.load(path)
            return data["regret"], float(data["wall"])
    start = time.perf_counter()
    regret = np.asarray(run(jax.random.key(key), horizon, seeds), np.float64)
    wall = time.perf_counter() - start
    if path is not None:
        cache.mkdir(parents=True, exist_ok=True)
        np.savez(path, regret=regret, wall=wall)
    return regret, wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--horizon", type=int, default=10**7)
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--key", type=int, default=0)
    parser.add_argument("--step-check", action="store_true")
    parser.add_argument("--only", nargs="*", default=None, help="run only these algorithms (no table)")
    parser.add_argument("--cache", type=Path, default=None)
    args = parser.parse_args()
    runs = dict(RUNS, **(STEP_CHECK if args.step_check else {}))
    if args.only is not None:
        for name in args.only:
            regret, wall = _measure(name, runs[name][1], args.key, args.horizon, args.seeds, args.cache)
            mean, se = mean_with_stderr(regret)
            print(f"{name}: {float(mean):.0f} ± {float(se):.0f} ({wall:.1f} s)", flush=True)
        return
    results = {}
    for name, (level, run) in runs.items():
        results[name] = (level, *_measure(name, run, args.key, args.horizon, args.seeds, args.cache))
        print(f"# {name}: {results[name][2]:.1f} s", flush=True)
    base = results[REFERENCE][1]
    base_mean = float(base.mean())
    print(
        f"\nBernoulli mu = {MEANS}, eps = {EPSILON}, T = {args.horizon}, {args.seeds} runs, key {args.key}; "
        f"paired SEs against {REFERENCE}\n"
    )
    print(
        "| algorithm | simulator | T | regret (mean ± SE) | ratio to AdaP-KLUCB | difference to AdaP-KLUCB | wall (s) |"
    )
    print("|---|---|---|---|---|---|---|")
    for name, (level, regret, wall) in results.items():
        mean, se = mean_with_stderr(regret)
        diff, diff_se = paired_difference(regret, base)
        ratio = float(mean) / base_mean
        _, ratio_num_se = paired_difference(regret, ratio * base)  # delta method: SE of mean(x - R·base) / mean(base)
        print(
            f"| {name} | {level} | {args.horizon} | {float(mean):.0f} ± {float(se):.0f} | "
            f"{ratio:.2f} ± {float(ratio_num_se) / base_mean:.2f} | {float(diff):+.0f} ± {float(diff_se):.0f} | "
            f"{wall:.1f} |"
        )


if __name__ == "__main__":
    main()
