"""PFTAL sweep throughput (seed-steps per second) against three references, measured in one run.

References, for the same (seeds, horizon, d):
  * bulk noise: drawing the same amount of Gaussian noise (seeds x T x d) in one call of the
    sweep's own sampler (`jaxpriv._rng.normal`): the cost floor of any simulation that must draw it;
  * NumPy loop: a straightforward per-step, per-seed NumPy loop of the same algorithm
    (what a paper's code usually is), timed on a few seeds and scaled;
  * NumPy vectorised: the same algorithm in NumPy, vectorised over seeds (a Python loop
    over t only): what a careful user writes instead, the real bar on CPU.

Compile time and steady-state time (median of 3) of the jaxpriv sweep are reported separately.
The bandit learners (private bandit FTAL, bandit FTAL, FKM, MI bandit OGD; bandit feedback on the
same stream) get the same columns, their NumPy references written the same way, and their ratio to PFTAL.
The window-private learners (WDP-COCOP with a projection, WDP-COCOL with one local-linear-oracle
call, and their non-private versions) get rows at d in {10, 100} on the simplex, against PFTAL with
a projection on the same simplex in the same run, plus the oracle calls traced per step and a
micro-benchmark of one projection against one local-linear-oracle call as d grows.
The CPU table (--cpu-table; issue 25) times every learner against float32 NumPy vectorised over seeds,
1024 seeds and T = 4096 by default, the sides alternated in one process (median of 3 each): PFTAL at
d in {3, 10, 100} with each noise family (gamma, laplace, gaussian), FTAL, OGD, MI-OGD, DP-FTRL, the
bandit-feedback learners, AdaC-UCB at step level (K = 10; NumPy: benchmarks/bandits_throughput.py)
and the window learners WDP-COCOP / WDP-COCOL (simplex, W = 16; their NumPy runs the window tree
mechanism as the library does, about 2 node draws per step: the same work per step, not the same
numbers). Pin it to one core: taskset -c 0 python ...
With --numpy-procs N the NumPy side splits its seeds over N worker processes (the multi-core NumPy
baseline against --cpu-devices N).
Usage: python benchmarks/throughput.py [--quick] [--no-bandit] [--no-window] [--cpu-table] [--cpu-devices N]
       [--numpy-procs N] [--seeds S] [--horizon T] [--reps R] [--rows name,name:d]
"""

from __future__ import annotations

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np

import jaxpriv as jp
from jaxpriv import _rng, envs, mechanisms, oco, sets, testing
from jaxpriv._base import engine_jit

# The NumPy references compute in float32, the sweep's precision (float64 measured 1.0-1.27x slower).
F = np.float32


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
    # The sweep's own sampler (jaxpriv._rng), compiled as the engine compiles.
    f = engine_jit(lambda k: _rng.normal(k, (seeds * horizon * dim,), jnp.float32).sum())
    jax.block_until_ready(f(jax.random.key(0)))
    times = []
    for rep in range(3):
        t0 = time.perf_counter()
        jax.block_until_ready(f(jax.random.key(1 + rep)))
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def _tz(n: int) -> int:
    """The number of trailing zero bits of ``n >= 1``: the tree level of the node that closes at step ``n``."""
    return (n & -n).bit_length() - 1


def _gamma_norm(rng, rows: int, dim: int):
    """Unit-scale Gamma-norm noise, one row per seed: a uniform direction times a sum of ``dim`` unit exponentials."""
    direction = rng.standard_normal((rows, dim), F)
    direction /= np.linalg.norm(direction, axis=1, keepdims=True)
    return rng.standard_exponential((rows, dim), F).sum(1, keepdims=True) * direction


def _numpy_pftal(rng, seeds, horizon, dim, vectorised):
    """PFTAL (Gamma-norm tree) on the quadratic stream, in NumPy; returns the final cumulative loss."""
    depth = mechanisms.tree_depth(horizon)
    H, L, eps, R = 1.0, 2.0, 1.0, 1.0
    sens = L + H * R
    scale = depth * sens / eps
    center = np.full(dim, 0.1, F)
    S = seeds if vectorised else 1
    runs = 1 if vectorised else seeds
    total = 0.0
    for _ in range(runs):
        exact = np.zeros((depth, S, dim), F)
        noisy = np.zeros((depth, S, dim), F)
        w = np.zeros((S, dim), F)
        mean_w = np.zeros((S, dim), F)
        cum_loss = np.zeros(S, F)
        zsum = np.zeros((S, dim), F)
        for t in range(1, horizon + 1):
            z = center + 0.3 * rng.standard_normal((S, dim), F)
            z *= np.minimum(1.0, 1.0 / np.linalg.norm(z, axis=1, keepdims=True))
            g = H * (w - z)
            cum_loss += 0.5 * H * np.sum((w - z) ** 2, axis=1)
            zsum += z
            g *= np.minimum(1.0, sens / np.maximum(np.linalg.norm(g, axis=1, keepdims=True), 1e-30))
            low = _tz(t)
            node = g + exact[:low].sum(0)
            exact[low] = node
            noisy[low] = node + scale * _gamma_norm(rng, S, dim)
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


# --- bandit learners (bandit feedback on the same quadratic stream) -------------------------------------

BANDIT_LEARNERS = ("private_bandit_ftal", "bandit_ftal", "fkm", "mi_bandit_ogd")


def _bandit_setup(name: str, horizon: int, dim: int):
    """The learner and params of one bandit row; ``vary(rep)`` gives the params of steady-state run ``rep``."""
    ball = sets.l2_ball(dim)
    lip, bound = 2.0, 2.0  # quadratic losses with ||z|| <= 1 on the unit ball: L = 2, |f| <= 2
    if name == "private_bandit_ftal":
        learner, lp = oco.private_bandit_ftal(horizon, ball), oco.PrivateBanditFTALParams(1.0, loss_bound=bound)

        def vary(rep):
            return lp._replace(epsilon=2.0 + rep)
    elif name == "bandit_ftal":
        learner, lp = oco.bandit_ftal(horizon, ball), oco.BanditFTALParams(exploration=0.1)

        def vary(rep):
            return lp._replace(exploration=0.11 + 0.01 * rep)
    elif name == "fkm":
        learner, lp = oco.fkm(horizon, ball), oco.FKMParams(bound, lip)

        def vary(rep):
            return lp._replace(exploration=0.11 + 0.01 * rep)
    else:
        learner, lp = oco.mi_bandit_ogd(horizon, ball), oco.MIBanditOGDParams(1.0, bound, lip)

        def vary(rep):
            return lp._replace(mutual_information=2.0 + rep)

    return learner, lp, vary


def bench_jaxpriv_bandit(name: str, seeds: int, horizon: int, dim: int) -> tuple[float, float]:
    """Compile time and steady-state time (median of 3, new params each time) of a bandit learner's sweep."""
    env = envs.bandit_feedback(envs.quadratic_stream(sets.l2_ball(dim)))
    learner, lp, vary = _bandit_setup(name, horizon, dim)
    ep = envs.QuadraticParams(1.0, np.full(dim, 0.1, np.float32), 0.3)
    t0 = time.perf_counter()
    r = jp.sweep(learner, env, jp.SimParams(lp, ep), jax.random.key(0), horizon, seeds=seeds, checkpoints="log")
    jax.block_until_ready(r.regret)
    first = time.perf_counter() - t0
    times = []
    for rep in range(3):
        params = jp.SimParams(vary(rep), ep)
        t0 = time.perf_counter()
        r = jp.sweep(learner, env, params, jax.random.key(1 + rep), horizon, seeds=seeds, checkpoints="log")
        jax.block_until_ready(r.regret)
        times.append(time.perf_counter() - t0)
    return first - times[0], float(np.median(times))


def _numpy_bandit(rng, seeds, horizon, dim, vectorised, name):
    """The bandit learner ``name`` on the quadratic stream with bandit feedback, in NumPy (unit ball, r = R = 1)."""
    depth = mechanisms.tree_depth(horizon)
    H, B, L, eps, C = 1.0, 2.0, 2.0, 1.0, 1.0
    beta = 0.1
    shrink = 1.0 - beta
    est_bound = dim * B / beta
    scale = depth * 2.0 * est_bound / eps  # Gamma tree, replace-one sensitivity
    eta = float(2.0 * beta / (est_bound * np.sqrt(horizon)))
    clip = dim * (B / beta + L)
    sigma = float(clip / np.sqrt(dim * np.expm1(2.0 * C / dim)))
    center = np.full(dim, 0.1, F)
    S = seeds if vectorised else 1
    runs = 1 if vectorised else seeds
    total = 0.0

    def project(w):
        return w * np.minimum(1.0, shrink / np.maximum(np.linalg.norm(w, axis=1, keepdims=True), 1e-30))

    for _ in range(runs):
        exact = np.zeros((depth, S, dim), F)
        noisy = np.zeros((depth, S, dim), F)
        w = np.zeros((S, dim), F)
        sum_w = np.zeros((S, dim), F)
        sum_g = np.zeros((S, dim), F)
        cum_loss = np.zeros(S, F)
        for t in range(1, horizon + 1):
            z = center + 0.3 * rng.standard_normal((S, dim), F)
            z *= np.minimum(1.0, 1.0 / np.linalg.norm(z, axis=1, keepdims=True))
            u = rng.standard_normal((S, dim), F)
            u /= np.linalg.norm(u, axis=1, keepdims=True)
            played = w + beta * u
            loss = 0.5 * H * np.sum((played - z) ** 2, axis=1)
            cum_loss += loss
            g = (dim / beta) * loss[:, None] * u
            if name == "fkm":
                w = project(w - eta * g)
                continue
            if name == "mi_bandit_ogd":
                g *= np.minimum(1.0, clip / np.maximum(np.linalg.norm(g, axis=1, keepdims=True), 1e-30))
                sum_g += g + sigma * rng.standard_normal((S, dim), F)
                w = project(-eta * sum_g)
                continue
            sum_w += w
            if name == "bandit_ftal":
                sum_g += g
                v = sum_g
            else:
                g *= np.minimum(1.0, est_bound / np.maximum(np.linalg.norm(g, axis=1, keepdims=True), 1e-30))
                low = _tz(t)
                node = g + exact[:low].sum(0)
                exact[low] = node
                noisy[low] = node + scale * _gamma_norm(rng, S, dim)
                v = sum(noisy[i] for i in range(depth) if (t >> i) & 1)
            w = project((sum_w - v / H) / t)
        total += cum_loss.sum()
    return total


def bench_numpy_bandit(name: str, seeds: int, horizon: int, dim: int, vectorised: bool) -> float:
    rng = np.random.default_rng(0)
    t0 = time.perf_counter()
    _numpy_bandit(rng, seeds, horizon, dim, vectorised, name)
    return time.perf_counter() - t0


def bandit_rows(configs, pftal_rates) -> None:
    """The bandit learners' rows: the same columns as PFTAL's, plus the ratio to PFTAL's seed-steps/s."""
    print(
        f"\n{'learner':>19} {'seeds':>6} {'T':>6} {'d':>3} | {'compile s':>9} {'sweep s':>8} {'seed-steps/s':>12} | "
        f"{'x bulk noise':>12} {'x NumPy loop':>12} {'x NumPy vec':>11} {'x PFTAL':>8}"
    )
    for (seeds, horizon, dim), pftal_rate in zip(configs, pftal_rates, strict=True):
        bulk = bench_bulk_noise(seeds, horizon, dim)
        for name in BANDIT_LEARNERS:
            compile_s, steady = bench_jaxpriv_bandit(name, seeds, horizon, dim)
            rate = seeds * horizon / steady
            loop_seeds, loop_T = 2, min(horizon, 2048)
            loop_rate = loop_seeds * loop_T / bench_numpy_bandit(name, loop_seeds, loop_T, dim, vectorised=False)
            vec_rate = seeds * horizon / bench_numpy_bandit(name, seeds, horizon, dim, vectorised=True)
            print(
                f"{name:>19} {seeds:>6} {horizon:>6} {dim:>3} | {compile_s:>9.2f} {steady:>8.3f} {rate:>12.3g} | "
                f"{steady / bulk:>11.2f}x {rate / loop_rate:>11.1f}x {rate / vec_rate:>10.2f}x "
                f"{rate / pftal_rate:>7.2f}x"
            )
    print("x PFTAL: the learner's seed-steps/s over PFTAL's on the same configuration (full information, same tree).")


# --- window-private learners on the simplex (full information) --------------------------------------------

WINDOW_LEARNERS = ("pftal", "wdp_cocop", "wdp_cocol", "ftal", "garber_hazan", "online_frank_wolfe")


def _window_setup(name: str, horizon: int, simplex, window: int):
    lip, mu = 2.0, 1.0
    if name == "pftal":
        return oco.pftal(horizon, simplex), oco.PFTALParams(1.0, lipschitz=lip), "epsilon"
    if name == "wdp_cocop":
        return oco.wdp_cocop(horizon, simplex, window), oco.WDPParams(1.0, lipschitz=lip), "epsilon"
    if name == "wdp_cocol":
        return oco.wdp_cocol(horizon, simplex, window), oco.WDPParams(1.0, lipschitz=lip), "epsilon"
    if name == "ftal":
        return oco.ftal(simplex, horizon), oco.FTALParams(mu), "strong_convexity"
    if name == "garber_hazan":
        return oco.garber_hazan(horizon, simplex), oco.GarberHazanParams(lip, mu), "strong_convexity"
    return oco.online_frank_wolfe(simplex, horizon), oco.OFWParams(mu), "strong_convexity"


def _counting_set(simplex):
    """A copy of the set whose projection and oracles count their calls (at trace time): ``(set, counts)``."""
    counts = {"project": 0, "linear_oracle": 0, "local_linear_oracle": 0}

    def counted(field):
        fn = getattr(simplex, field)

        def wrapper(*args):
            counts[field] += 1
            return fn(*args)

        return wrapper

    spy = simplex._replace(**{f: counted(f) for f in counts})
    return spy, counts


def window_rows(seeds: int, horizon: int, dims=(10, 100), window: int = 16) -> None:
    """Seed-steps/s of the window-private learners on the simplex, and their ratio to PFTAL's (projection)."""
    print(
        f"\n{'learner (simplex)':>19} {'seeds':>6} {'T':>6} {'d':>4} | {'compile s':>9} {'sweep s':>8} "
        f"{'seed-steps/s':>12} {'x PFTAL':>8} | {'proj/step':>9} {'LO/step':>7} {'LLOO/step':>9}"
    )
    for dim in dims:
        simplex = sets.simplex(dim)
        env = envs.quadratic_stream(simplex)
        ep = envs.QuadraticParams(1.0, np.full(dim, 1.0 / dim, np.float32), 0.3)
        pftal_rate = None
        for name in WINDOW_LEARNERS:
            spy, counts = _counting_set(simplex)
            learner, lp, field = _window_setup(name, horizon, spy, window)
            state = learner.init(jax.random.key(0), lp)
            x = learner.act(jax.random.key(1), state, jnp.int32(1))
            for f in counts:
                counts[f] = 0
            jax.eval_shape(learner.update, jax.random.key(2), state, x, jnp.ones(dim), jnp.int32(1))
            calls = dict(counts)
            learner, lp, field = _window_setup(name, horizon, simplex, window)
            t0 = time.perf_counter()
            r = jp.sweep(learner, env, jp.SimParams(lp, ep), jax.random.key(0), horizon, seeds=seeds, checkpoints="log")
            jax.block_until_ready(r.regret)
            first = time.perf_counter() - t0
            times = []
            for rep in range(3):
                params = jp.SimParams(lp._replace(**{field: 2.0 + rep}), ep)
                t0 = time.perf_counter()
                r = jp.sweep(learner, env, params, jax.random.key(1 + rep), horizon, seeds=seeds, checkpoints="log")
                jax.block_until_ready(r.regret)
                times.append(time.perf_counter() - t0)
            steady = float(np.median(times))
            rate = seeds * horizon / steady
            pftal_rate = rate if name == "pftal" else pftal_rate
            print(
                f"{name:>19} {seeds:>6} {horizon:>6} {dim:>4} | {first - times[0]:>9.2f} {steady:>8.3f} "
                f"{rate:>12.3g} {rate / pftal_rate:>7.2f}x | {calls['project']:>9} {calls['linear_oracle']:>7} "
                f"{calls['local_linear_oracle']:>9}"
            )
    print(
        f"W = {window}; x PFTAL: seed-steps/s over PFTAL's (one simplex projection per step) at the same d.\n"
        "proj/LO/LLOO per step: calls traced in one update (WDP-COCOL: one LLOO, no projection)."
    )
    print(f"\n{'one call, d':>12} | {'projection us':>13} {'LLOO us':>9} {'LO us':>8}   ({seeds} vectors per call)")
    for dim in (10, 100, 1000, 10000):
        simplex = sets.simplex(dim)
        x = jnp.full((seeds, dim), 1.0 / dim)
        g = jax.random.normal(jax.random.key(0), (seeds, dim))
        r = jnp.full((seeds,), 0.01)
        fns = {
            "project": jax.jit(lambda g, s=simplex: s.project(g)),
            "lloo": jax.jit(lambda x, r, g, s=simplex: s.local_linear_oracle(x, r, g)),
            "lo": jax.jit(lambda g, s=simplex: s.linear_oracle(g)),
        }
        cost = {}
        for key_, fn in fns.items():
            args = (x, r, g) if key_ == "lloo" else (g,)
            jax.block_until_ready(fn(*args))
            t0 = time.perf_counter()
            for _ in range(20):
                jax.block_until_ready(fn(*args))
            cost[key_] = (time.perf_counter() - t0) / 20 / seeds * 1e6
        print(f"{dim:>12} | {cost['project']:>13.3f} {cost['lloo']:>9.3f} {cost['lo']:>8.3f}")


# --- the CPU table: each learner against NumPy vectorised over seeds, interleaved in one run -------------

#: The CPU table's rows (issue 25): ``(name, d)``; a ``pftal-<noise>`` name picks PFTAL's tree noise family.
CPU_ROWS = (
    *((f"pftal-{noise}", d) for noise in ("gamma", "laplace", "gaussian") for d in (3, 10, 100)),
    ("ftal", 10), ("ogd", 10), ("mi_ogd", 10), ("dp_ftrl", 10),
    *((name, 10) for name in BANDIT_LEARNERS),
    ("adac_ucb", 10), ("wdp_cocop", 10), ("wdp_cocol", 10),
)  # fmt: skip
OCO_ROWS = (("pftal", 3), ("pftal", 10), ("pftal", 100), ("ogd", 10), ("ftal", 10), ("mi_ogd", 10))  # --cpu-table-short


def _oco_setup(name: str, horizon: int, dim: int):
    """``(learner, env, env params, vary)``: ``vary(rep)`` gives new traced learner params (no recompile)."""
    ball = sets.l2_ball(dim)
    env, ep = envs.quadratic_stream(ball), envs.QuadraticParams(1.0, np.full(dim, 0.1, np.float32), 0.3)
    noise = name.split("-")[1] if name.startswith("pftal-") else "gamma"
    if name.startswith("pftal"):
        if noise == "gaussian":
            return oco.pftal(horizon, ball, noise), env, ep, lambda rep: oco.PFTALParams(rho=2.0 + rep, lipschitz=2.0)
        return oco.pftal(horizon, ball, noise), env, ep, lambda rep: oco.PFTALParams(epsilon=2.0 + rep, lipschitz=2.0)
    if name == "ogd":
        return oco.ogd(ball), env, ep, lambda rep: oco.OGDParams(1.0 + 0.01 * rep)
    if name == "ftal":
        return oco.ftal(ball, horizon), env, ep, lambda rep: oco.FTALParams(1.0 + 0.01 * rep)
    if name == "mi_ogd":
        return oco.mi_ogd(ball, horizon), env, ep, lambda rep: oco.MIOGDParams(2.0 + rep, lipschitz=2.0)
    if name == "dp_ftrl":
        return oco.dp_ftrl(horizon, ball), env, ep, lambda rep: oco.DPFTRLParams(2.0 + rep, lipschitz=2.0)
    if name in BANDIT_LEARNERS:
        learner, _, vary = _bandit_setup(name, horizon, dim)
        return learner, envs.bandit_feedback(env), ep, vary
    if name == "adac_ucb":
        from bandits_throughput import MEANS, K  # a sibling script: only this row needs it

        from jaxpriv.bandits import AdaCUCBParams, adac_ucb
        from jaxpriv.envs.bandits import BernoulliParams, bernoulli_bandit

        bandit_env = bernoulli_bandit(K)
        return adac_ucb(K, horizon), bandit_env, BernoulliParams(MEANS), lambda rep: AdaCUCBParams(rho=2.0 + rep)
    simplex = sets.simplex(dim)
    env, ep = envs.quadratic_stream(simplex), envs.QuadraticParams(1.0, np.full(dim, 1.0 / dim, np.float32), 0.3)
    make = oco.wdp_cocop if name == "wdp_cocop" else oco.wdp_cocol
    return make(horizon, simplex, WINDOW), env, ep, lambda rep: oco.WDPParams(2.0 + rep, lipschitz=2.0)


WINDOW = 16


def _project_simplex(v):
    """Euclidean projection of each row onto the simplex (the sort-based algorithm, as ``sets.simplex``)."""
    u = -np.sort(-v, axis=1)
    css = np.cumsum(u, axis=1) - 1.0
    k = np.arange(1, v.shape[1] + 1, dtype=F)
    rho = np.sum(u - css / k > 0, axis=1, keepdims=True)
    theta = np.take_along_axis(css, rho - 1, axis=1) / rho
    return np.maximum(v - theta, 0.0)


def _lloo_simplex(x, r, g):
    """Garber & Hazan's simplex local linear oracle: move mass ``min(sqrt(d) r / 2, 1)`` to ``argmin g``."""
    dim = x.shape[1]
    delta = min(float(np.sqrt(dim) * r / 2.0), 1.0)
    order = np.argsort(-g, axis=1)  # the largest gradients give their mass first
    xs = np.take_along_axis(x, order, axis=1)
    before = np.cumsum(xs, axis=1) - xs
    take = np.clip(delta - before, 0.0, xs)
    p = x.copy()
    np.put_along_axis(p, order, xs - take, axis=1)
    p[np.arange(x.shape[0]), np.argmin(g, axis=1)] += take.sum(1)
    return p


def _numpy_window(rng, seeds, horizon, dim, name):
    """WDP-COCOP / -COCOL's work on the simplex in NumPy, vectorised over seeds.

    The window tree mechanism of spec §2 (``mechanisms.window_tree``): blocks of ``W`` steps; at each step the
    prefix node closing at ``t`` and the previous block's new suffix nodes are drawn once each (Gamma-norm noise,
    ``2 - 1/W`` node draws per step on average), the release is the exact sum of the clipped gradients plus the
    noise of the prefix and suffix nodes covering the window. Then the exact sum of the points and the simplex
    projection (COCOP) or one local-linear-oracle step (COCOL). The same work per step, not the same numbers.
    (Before 2026-11-27 this reference drew one node per step, about half the tree's noise.)
    """
    mu, lip, eps = 1.0, 2.0, 1.0
    m = int(np.log2(WINDOW))
    scale = (m + 1) * 2 * lip / eps  # k_W s / eps, s = 2L (replace-one)
    center = np.full(dim, 1.0 / dim, F)
    prefix = np.zeros((m + 2, seeds, dim), F)  # row h: the noise of the prefix nodes at levels >= h
    suffix = np.zeros((m + 2, seeds, dim), F)  # the same for the previous block's suffix; row m + 1 stays 0
    total = np.zeros((seeds, dim), F)
    x = np.full((seeds, dim), 1.0 / dim, F)
    x1 = x.copy()
    sum_x = np.zeros((seeds, dim), F)
    cum_loss = np.zeros(seeds, F)

    for t in range(1, horizon + 1):
        z = center + 0.3 * rng.standard_normal((seeds, dim), F)
        g = mu * (x - z)
        cum_loss += 0.5 * mu * np.sum((x - z) ** 2, axis=1)
        g *= np.minimum(1.0, lip / np.maximum(np.linalg.norm(g, axis=1, keepdims=True), 1e-30))
        total += g
        j = (t - 1) % WINDOW + 1
        level = _tz(j)
        if j == 1:
            prefix[:] = 0.0
        prefix[: level + 1] = prefix[level + 1] + scale * _gamma_norm(rng, seeds, dim)
        rest = WINDOW - j + 1  # the previous block's suffix shrinks to length W - j: new nodes below tz(rest)
        c = _tz(rest)
        suffix[c] = suffix[c + 1]
        for h in range(c - 1, -1, -1):
            suffix[h] = suffix[h + 1] + scale * _gamma_norm(rng, seeds, dim)
        g_hat = total + prefix[0] + (suffix[0] if t > WINDOW else 0.0)
        sum_x += x
        if name == "wdp_cocop":
            x = _project_simplex(sum_x / t - g_hat / (mu * t))
        else:
            direction = g_hat + mu * (t * x - sum_x) + mu * (x - x1)
            x = 0.5 * x + 0.5 * _lloo_simplex(x, 1.0 / t, direction)
    return cum_loss.sum()


def _numpy_pftal_noise(rng, seeds, horizon, dim, noise, dp_ftrl=False):
    """PFTAL (or DP-FTRL, ``w = Π(-v/λ)``) with the ``noise`` tree, vectorised over seeds; gamma: ``_numpy_pftal``."""
    if noise == "gamma" and not dp_ftrl:
        return _numpy_pftal(rng, seeds, horizon, dim, True)
    depth = mechanisms.tree_depth(horizon)
    H, L, R, budget, lam = 1.0, 2.0, 1.0, 1.0, float(np.sqrt(horizon))
    bound = L * (np.sqrt(dim) if noise == "laplace" else 1.0)
    scale = depth * 2 * bound / budget if noise != "gaussian" else float(np.sqrt(depth * (2 * L) ** 2 / (2 * budget)))
    center = np.full(dim, 0.1, F)
    exact = np.zeros((depth, seeds, dim), F)
    noisy = np.zeros((depth, seeds, dim), F)
    w = np.zeros((seeds, dim), F)
    mean_w = np.zeros((seeds, dim), F)
    cum_loss = np.zeros(seeds, F)
    zsum = np.zeros((seeds, dim), F)
    for t in range(1, horizon + 1):
        z = center + 0.3 * rng.standard_normal((seeds, dim), F)
        z *= np.minimum(1.0, 1.0 / np.linalg.norm(z, axis=1, keepdims=True))
        g = H * (w - z)
        cum_loss += 0.5 * H * np.sum((w - z) ** 2, axis=1)
        zsum += z
        norm = np.abs(g).sum(1, keepdims=True) if noise == "laplace" else np.linalg.norm(g, axis=1, keepdims=True)
        g *= np.minimum(1.0, bound / np.maximum(norm, 1e-30))
        low = _tz(t)
        node = g + exact[:low].sum(0)
        if noise == "laplace":
            draw = rng.laplace(size=(seeds, dim)).astype(F)
        elif noise == "gaussian":
            draw = rng.standard_normal((seeds, dim), F)
        else:
            draw = _gamma_norm(rng, seeds, dim)
        exact[low] = node
        noisy[low] = node + scale * draw
        v = sum(noisy[i] for i in range(depth) if (t >> i) & 1)
        if dp_ftrl:
            w = -v / lam
        else:
            mean_w += (w - mean_w) / t
            w = mean_w - v / (H * t)
        w *= np.minimum(1.0, R / np.maximum(np.linalg.norm(w, axis=1, keepdims=True), 1e-30))
    return cum_loss.sum()


def _numpy_row(rng, seeds, horizon, dim, name):
    """The NumPy reference of one CPU-table row, vectorised over seeds (float32)."""
    if name.startswith("pftal"):
        return _numpy_pftal_noise(rng, seeds, horizon, dim, name.split("-")[1] if "-" in name else "gamma")
    if name == "dp_ftrl":
        return _numpy_pftal_noise(rng, seeds, horizon, dim, "gamma", dp_ftrl=True)
    if name in BANDIT_LEARNERS:
        return _numpy_bandit(rng, seeds, horizon, dim, True, name)
    if name == "adac_ucb":
        from bandits_throughput import adac_ucb_numpy

        return float(adac_ucb_numpy(seeds, horizon, rho=2.0, seed=int(rng.integers(1 << 30))).sum())
    if name in ("wdp_cocop", "wdp_cocol"):
        return _numpy_window(rng, seeds, horizon, dim, name)
    return _numpy_oco(rng, seeds, horizon, dim, name)


def _numpy_oco(rng, seeds, horizon, dim, name):
    """OGD (η_t = 1/(Ht)), FTAL or MI-OGD on the quadratic stream, vectorised over seeds; PFTAL: ``_numpy_pftal``."""
    if name == "pftal":
        return _numpy_pftal(rng, seeds, horizon, dim, True)
    H, L, R, mi = 1.0, 2.0, 1.0, 1.0
    sigma = float(L / np.sqrt(dim * np.expm1(2.0 * mi / dim)))
    eta = float(R / np.sqrt((L * L + dim * sigma * sigma) * horizon))
    center = np.full(dim, 0.1, F)

    def project(w):
        return w * np.minimum(1.0, R / np.maximum(np.linalg.norm(w, axis=1, keepdims=True), 1e-30))

    w = np.zeros((seeds, dim), F)
    mean_w = np.zeros((seeds, dim), F)
    sum_g = np.zeros((seeds, dim), F)
    cum_loss = np.zeros(seeds, F)
    zsum = np.zeros((seeds, dim), F)  # the comparator's sufficient statistic, as PFTAL's reference keeps
    for t in range(1, horizon + 1):
        z = center + 0.3 * rng.standard_normal((seeds, dim), F)
        z *= np.minimum(1.0, 1.0 / np.linalg.norm(z, axis=1, keepdims=True))
        g = H * (w - z)
        cum_loss += 0.5 * H * np.sum((w - z) ** 2, axis=1)
        zsum += z
        if name == "ogd":
            w = project(w - g / (H * t))
        elif name == "ftal":
            sum_g += g
            mean_w += (w - mean_w) / t
            w = project(mean_w - sum_g / (H * t))
        else:
            g *= np.minimum(1.0, L / np.maximum(np.linalg.norm(g, axis=1, keepdims=True), 1e-30))
            sum_g += g + sigma * rng.standard_normal((seeds, dim), F)
            w = project(-eta * sum_g)
    return cum_loss.sum()


def _numpy_oco_part(args: tuple[int, int, int, int, str]) -> float:
    """One worker's share of ``_numpy_row`` (``--numpy-procs``): ``(seed, seeds, horizon, dim, name)``."""
    seed, seeds, horizon, dim, name = args
    return float(_numpy_row(np.random.default_rng(seed), seeds, horizon, dim, name))


def carry_bytes(learner, env, ep, lp, horizon: int) -> int:
    """Bytes of one seed's sweep state (``jaxpriv.testing.carry_bytes``)."""
    return testing.carry_bytes(learner, env, jp.SimParams(lp, ep), horizon)


def oco_rows(
    seeds: int,
    horizon: int,
    reps: int = 3,
    numpy_procs: int = 1,
    rows: tuple[tuple[str, int], ...] = CPU_ROWS,
) -> None:
    """Each learner's sweep against NumPy vectorised over seeds: timed alternately, median of ``reps`` each.

    ``numpy_procs > 1`` splits NumPy's seeds over that many worker processes (started before
    the timing), the multi-core NumPy a user could write with ``multiprocessing``.
    """
    pool = None
    if numpy_procs > 1:
        import multiprocessing

        pool = multiprocessing.get_context("spawn").Pool(numpy_procs)  # no fork of a process running JAX
        pool.map(_numpy_oco_part, [(i, 8, 8, 3, "ogd") for i in range(numpy_procs)])  # workers up and warm
    share = -(-seeds // numpy_procs)
    print(
        f"\n{'learner':>19} {'seeds':>6} {'T':>6} {'d':>4} | {'compile s':>9} {'sweep s':>8} {'NumPy s':>8} "
        f"{'seed-steps/s':>12} {'state B/seed':>12} | {'x NumPy vec':>11} {'paired':>15}"
    )
    for name, dim in rows:
        learner, env, ep, vary = _oco_setup(name, horizon, dim)

        def go(lp, key, learner=learner, env=env, ep=ep):
            params = jp.SimParams(lp, ep)
            r = jp.sweep(learner, env, params, key, horizon, seeds=seeds, checkpoints="log")
            jax.block_until_ready(r.regret)

        t0 = time.perf_counter()
        go(vary(-1), jax.random.key(0))
        first = time.perf_counter() - t0
        jt, nt = [], []
        for rep in range(reps):  # alternate the sides: a shared machine's load hits them alike
            t0 = time.perf_counter()
            go(vary(rep), jax.random.key(1 + rep))
            jt.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            if pool is None:
                _numpy_row(np.random.default_rng(rep), seeds, horizon, dim, name)
            else:
                pool.map(
                    _numpy_oco_part, [(rep * numpy_procs + i, share, horizon, dim, name) for i in range(numpy_procs)]
                )
            nt.append(time.perf_counter() - t0)
        j, n = float(np.median(jt)), float(np.median(nt))
        paired = np.array(nt) / np.array(jt)  # each rep's NumPy run over the sweep run next to it
        state = carry_bytes(learner, env, ep, vary(0), horizon)
        spread = f"{np.median(paired):.2f} [{paired.min():.2f}-{paired.max():.2f}]"
        print(
            f"{name:>19} {seeds:>6} {horizon:>6} {dim:>4} | {first - j:>9.2f} {j:>8.3f} {n:>8.3f} "
            f"{seeds * horizon / j:>12.3g} {state:>12} | {n / j:>10.2f}x {spread:>15}",
            flush=True,
        )
    print(
        f"x NumPy vec: NumPy time / sweep time, each the median of {reps} runs taken alternately in "
        "this process;\npaired: the median [min-max] over the reps of each rep's NumPy time over the sweep time "
        "timed next to it (the spread is the machine's noise);\n"
        f"jaxpriv on {len(jax.devices())} {jax.default_backend()} device(s), NumPy (float32) in {numpy_procs} "
        "single-threaded process(es). adac_ucb: K = 10 arms (d unused); wdp_*: the simplex, W = 16.\n"
        "state B/seed: one seed's carry (learner, environment, the engine's sums and its ~100 checkpoint rows)."
    )
    if pool is not None:
        pool.close()


def main() -> None:
    parser = argparse.ArgumentParser(allow_abbrev=False)
    parser.add_argument("--quick", action="store_true", help="smaller configurations")
    parser.add_argument("--no-bandit", action="store_true", help="skip the bandit learners' rows")
    parser.add_argument("--no-window", action="store_true", help="skip the window-private learners' rows")
    parser.add_argument("--cpu-table", action="store_true", help="only the learners against NumPy vectorised")
    parser.add_argument(
        "--cpu-devices", type=int, default=None, help="JAX CPU devices to shard the seeds over (default: JAX's, one)"
    )
    parser.add_argument(
        "--numpy-procs", type=int, default=1, help="CPU table: split NumPy's seeds over this many processes"
    )
    parser.add_argument("--seeds", type=int, default=1024, help="CPU table: seeds (default 1024)")
    parser.add_argument("--horizon", type=int, default=4096, help="CPU table: T (default 4096)")
    parser.add_argument("--reps", type=int, default=3, help="CPU table: timed runs of each side (median)")
    parser.add_argument("--rows", default=None, help="CPU table: only these learners (comma-separated names)")
    args = parser.parse_args()
    if args.cpu_devices is not None:  # before any JAX operation
        jp.use_cpu_cores(args.cpu_devices)
    if args.cpu_table:
        print(f"jaxpriv {jp.__version__}, jax {jax.__version__}, backend {jax.default_backend()}, {jax.devices()}")
        rows = CPU_ROWS
        if args.rows:
            wanted = args.rows.split(",")
            rows = tuple(r for r in CPU_ROWS if r[0] in wanted or f"{r[0]}:{r[1]}" in wanted)
        size = (256, 512) if args.quick else (args.seeds, args.horizon)
        oco_rows(*size, reps=args.reps, numpy_procs=args.numpy_procs, rows=rows)
        return
    configs = [(1024, 4096, 10), (100, 16384, 3), (4096, 1024, 10)]
    if args.quick:
        configs = [(256, 1024, 10)]
    print(f"jaxpriv {jp.__version__}, jax {jax.__version__}, backend {jax.default_backend()}, {jax.devices()[0]}")
    print(
        f"{'seeds':>6} {'T':>6} {'d':>3} | {'compile s':>9} {'sweep s':>8} {'seed-steps/s':>12} | "
        f"{'x bulk noise':>12} {'x NumPy loop':>12} {'x NumPy vec':>11}"
    )
    pftal_rates = []
    for seeds, horizon, dim in configs:
        compile_s, steady = bench_jaxpriv(seeds, horizon, dim)
        rate = seeds * horizon / steady
        pftal_rates.append(rate)
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
    if not args.no_bandit:
        bandit_rows(configs, pftal_rates)
    if not args.no_window:
        window_rows(*((256, 1024) if args.quick else (512, 2048)))  # 1024 x 4096 ran past 30 minutes


if __name__ == "__main__":
    main()
