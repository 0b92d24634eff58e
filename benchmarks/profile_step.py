"""Where one seed-step of a sweep goes: RNG, projection, tree, bookkeeping, checkpoint writes.

Each row times one piece of PFTAL's seed-step on the quadratic stream, batched as the engine
batches it (``lax.scan`` over ``T`` steps of ``vmap`` over ``seeds``, compiled with the engine's
options), and prints nanoseconds per seed-step (median of ``--reps`` runs) and its share of the
full step:

* ``full step``: ``jaxpriv.sweep`` itself (checkpoints ``"log"``);
* ``keys``: the engine's per-step keys, ``split(fold_in(k_steps, t), 3)`` (``split_step_key``);
* ``rng: stream normals``: the environment's ``d`` normals from a per-seed step key;
* ``rng: tree noise``: the tree's draw for the closing node (Gaussian: ``d`` normals; Gamma:
  a direction and a Gamma radius, as ``mechanisms.noise`` draws them);
* ``tree step``: the mechanism's ``step`` (noise included) on a fixed gradient;
* ``dyadic points``: PFTAL's exact dyadic sum of the points played (``dyadic_prefix_sum``);
* ``projection``: ``sets.l2_ball(d).project`` of a point;
* ``bookkeeping``: the engine around a learner and an environment that do nothing (keys,
  Kahan sums, the finiteness check, the checkpoint search; checkpoints ``"log"``);
* ``+ checkpoint every step``: the same with ``checkpoints=None`` (the record branch taken at
  every step), minus ``bookkeeping``.

The pieces overlap (``tree step`` includes ``rng: tree noise``) and XLA fuses across them in
the full step, so the shares need not sum to 100%.

Usage: taskset -c 0 python benchmarks/profile_step.py [--seeds S] [--horizon T] [--dims 3,10,100]
                                                      [--noise gaussian]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

import jaxpriv as jp
from jaxpriv import _rng, envs, mechanisms, oco, sets
from jaxpriv._base import Env, EnvInfo, Learner, engine_jit, split_step_key
from jaxpriv.oco._shared import dyadic_prefix_sum


def _median_time(fn: Callable[[], object], reps: int) -> float:
    jax.block_until_ready(fn())  # compile
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        jax.block_until_ready(fn())
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def _scanned(piece: Callable, state0: Callable, seeds: int, horizon: int) -> Callable[[], object]:
    """``piece(key, state, t) -> state`` for one seed, run as ``scan(T) ∘ vmap(seeds)`` (the engine's shape)."""

    def one(key):
        def body(state, t):
            return piece(key, state, t), None

        state, _ = jax.lax.scan(body, state0(key), jnp.arange(1, horizon + 1, dtype=jnp.int32))
        return jax.tree.map(jnp.sum, state)

    fn = engine_jit(jax.vmap(one))
    keys = jax.random.split(jax.random.key(0), seeds)
    return lambda: fn(keys)


def _per_seed(key, tree):
    """``tree`` plus zero times a per-seed draw: the same values, but batched over seeds by ``vmap``.

    A piece whose state does not depend on the key would be computed once for all seeds (``vmap``
    leaves it unbatched), and its time per seed-step would be meaningless.
    """
    zero = 0.0 * _rng.uniform(key, ())
    return jax.tree.map(lambda x: x + zero.astype(x.dtype), tree)


def _null_components(dim: int) -> tuple[Learner, Env]:
    """A learner that plays 0 and learns nothing, an environment that answers 0: only the engine is left.

    The learner's state is made per seed (``_per_seed``), so the engine's sums and records are too.
    """

    def step(key, state, action, t):
        del key, t
        zero = jnp.zeros((), jnp.float32)
        return state, jnp.zeros(dim, jnp.float32), EnvInfo(zero + jnp.sum(action), zero, None)

    learner = Learner(
        lambda key, p: _per_seed(key, jnp.zeros(dim, jnp.float32)), lambda key, s, t: s, lambda key, s, a, f, t: s, None
    )
    env = Env(lambda key, p: jnp.zeros((), jnp.float32), step, None, None, False)
    return learner, env


def profile(seeds: int, horizon: int, dim: int, noise: str, reps: int) -> None:
    ball = sets.l2_ball(dim)
    env = envs.quadratic_stream(ball)
    ep = envs.QuadraticParams(1.0, np.full(dim, 0.1, np.float32), 0.3)
    learner = oco.pftal(horizon, ball, noise=noise)
    lp = oco.PFTALParams(epsilon=1.0, lipschitz=2.0) if noise != "gaussian" else oco.PFTALParams(rho=0.5, lipschitz=2.0)
    n = seeds * horizon
    rows: list[tuple[str, float]] = []

    def full():
        return jp.sweep(learner, env, jp.SimParams(lp, ep), 1, horizon, seeds=seeds).regret

    rows.append(("full step", _median_time(full, reps)))
    zero_d = lambda key: _per_seed(key, jnp.zeros(dim, jnp.float32))
    rows.append(
        ("keys", _median_time(_scanned(
            lambda k, s, t: s + jax.random.key_data(split_step_key(k, t))[0, 0].astype(jnp.float32),
            lambda k: _per_seed(k, jnp.zeros((), jnp.float32)), seeds, horizon), reps))
    )  # fmt: skip
    rows.append(
        ("rng: stream normals", _median_time(_scanned(
            lambda k, s, t: s + _rng.normal(_rng.fold_in(k, t), (dim,)), zero_d, seeds, horizon), reps))
    )  # fmt: skip
    tree, _ = oco._shared.prefix_sum_mechanism(horizon, dim, noise, None)
    tp = mechanisms.TreeParams(lp.epsilon, lp.rho, jnp.float32(2.0))

    def tree_noise(k, s, t):
        key = _rng.fold_in(k, t)
        if noise == "gaussian":
            return s + _rng.normal(key, (dim,))
        direction = _rng.normal(key, (dim,))
        radius = jnp.sum(_rng.exponential(_rng.fold_in(key, jnp.int32(1)), (dim,)))
        return s + radius * direction / jnp.linalg.norm(direction)

    rows.append(("rng: tree noise", _median_time(_scanned(tree_noise, zero_d, seeds, horizon), reps)))
    grad = jnp.full(dim, 0.05, jnp.float32)
    rows.append(
        ("tree step", _median_time(_scanned(
            lambda k, s, t: tree.step(_rng.fold_in(k, t), s, grad, t)[0],
            lambda k: tree.init(k, tp), seeds, horizon), reps))
    )  # fmt: skip
    points0 = learner.init(jax.random.key(0), lp).points
    rows.append(
        ("dyadic points", _median_time(_scanned(
            lambda k, s, t: dyadic_prefix_sum(s, grad, t)[0], lambda k: _per_seed(k, points0), seeds, horizon), reps))
    )  # fmt: skip
    rows.append(
        ("projection", _median_time(_scanned(
            lambda k, s, t: ball.project(s + grad), zero_d, seeds, horizon), reps))
    )  # fmt: skip
    null_learner, null_env = _null_components(dim)
    null = jp.SimParams(None, None)

    def engine(checkpoints):
        return lambda: jp.sweep(null_learner, null_env, null, 1, horizon, seeds=seeds, checkpoints=checkpoints).loss

    book = _median_time(engine("log"), reps)
    rows.append(("bookkeeping", book))
    rows.append(("+ checkpoint every step", _median_time(engine(None), reps) - book))
    whole = rows[0][1]
    print(f"\nPFTAL ({noise} tree), d = {dim}, {seeds} seeds, T = {horizon}: ns per seed-step (median of {reps})")
    print(f"{'piece':>28} | {'ns/seed-step':>12} {'share':>7}")
    for name, seconds in rows:
        print(f"{name:>28} | {seconds / n * 1e9:>12.2f} {seconds / whole:>6.0%}")


def main() -> None:
    parser = argparse.ArgumentParser(allow_abbrev=False)
    parser.add_argument("--seeds", type=int, default=1024)
    parser.add_argument("--horizon", type=int, default=1024)
    parser.add_argument("--dims", default="3,10,100")
    parser.add_argument("--noise", default="gaussian", choices=("gaussian", "gamma", "laplace"))
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    print(f"jaxpriv {jp.__version__}, jax {jax.__version__}, {jax.devices()}")
    for dim in (int(x) for x in args.dims.split(",")):
        profile(args.seeds, args.horizon, dim, args.noise, args.reps)


if __name__ == "__main__":
    main()
