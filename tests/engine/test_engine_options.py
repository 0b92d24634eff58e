"""The engine's XLA options (``jaxpriv._base.engine_jit``): speed, and numbers only up to float32 rounding."""

from functools import partial

import jax
import numpy as np

import jaxpriv as jp
from jaxpriv import _base, envs, oco, sets, sim
from jaxpriv.sim import _scan


def test_vector_width_changes_numbers_by_rounding_only():
    """A PFTAL sweep compiled with the engine's options equals the plain compile to float32 rounding.

    Both at LLVM optimisation level 2 (the suite compiles at 0). At d = 16, one 16-wide vector
    per row, XLA's vectorised row sums add in another order: measured up to 3e-7 relative
    (1362 of 7424 values differ in the last bits). A change of semantics (fast math, a
    different algorithm) would move them by far more than the tolerance.
    """
    assert _base.ENGINE_COMPILER_OPTIONS == {
        "xla_cpu_prefer_vector_width": 512,
        "xla_cpu_copy_insertion_use_region_analysis": True,
    }
    T, dim, seeds = 128, 16, 64
    ball = sets.l2_ball(dim)
    learner, env = oco.pftal(T, ball), envs.quadratic_stream(ball)
    params = sim.canonical_params(
        jp.SimParams(
            oco.PFTALParams(epsilon=np.array([1.0, np.inf]), lipschitz=2.0),
            envs.QuadraticParams(1.0, np.full(dim, 0.1), 0.3),
        )
    )
    axes, _ = sim.grid_axes(params, True, ndims=sim.spec_ndims(learner, env))
    ckpts = sim.normalize_checkpoints(T, "log")
    fn = partial(sim.map_seeds_and_grid, partial(_scan._run, learner, env, T, ckpts), axes, None)
    keys = jax.random.split(jax.random.key(5), seeds)
    level = {"xla_backend_optimization_level": 2}
    plain = jax.jit(fn, compiler_options=level)(keys, params)
    tuned = jax.jit(fn, compiler_options={**_base.ENGINE_COMPILER_OPTIONS, **level})(keys, params)
    for a, b in zip(plain, tuned, strict=True):
        if a is not None:
            a, b = np.asarray(a), np.asarray(b)
            np.testing.assert_allclose(b, a, rtol=2e-6, atol=2e-6 * float(np.abs(a).max()))
    assert np.all(np.isfinite(np.asarray(plain[0]))) and np.ptp(np.asarray(plain[0])) > 0  # real, varied numbers


def test_vector_width_given_in_xla_flags_is_left_in_force(monkeypatch):
    regions = {"xla_cpu_copy_insertion_use_region_analysis": True}
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_prefer_vector_width=256")
    assert _base._engine_compiler_options() == regions
    monkeypatch.setenv("XLA_FLAGS", "--xla_backend_optimization_level=0")
    assert _base._engine_compiler_options() == {**regions, "xla_cpu_prefer_vector_width": 512}


def test_a_run_inside_a_users_jit_takes_the_plain_compile():
    """XLA takes compiler options for a top-level computation only: nested, ``run`` still works."""
    ball = sets.l2_ball(3)
    learner, env = oco.ogd(ball), envs.quadratic_stream(ball)
    params = jp.SimParams(oco.OGDParams(1.0), envs.QuadraticParams(1.0, np.full(3, 0.2), 0.3))
    top = jp.run(learner, env, params, jax.random.key(1), 50).regret
    nested = jax.jit(lambda k: jp.run(learner, env, params, k, 50).regret)(jax.random.key(1))
    np.testing.assert_allclose(np.asarray(nested), np.asarray(top), rtol=2e-6, atol=1e-6)
