"""A sweep sharded over several (CPU) devices gives the numbers of a single-device sweep, for any seed count."""

import os
import subprocess
import sys

import jax
import numpy as np
import pytest

import jaxpriv as jp
from jaxpriv import envs, oco, sets
from jaxpriv.bandits import AdaCUCBParams
from jaxpriv.bandits.episodic import simulate_ucb_episodes
from jaxpriv.envs.bandits import PAPER_MEANS

SCRIPT = """
import jax, jax.numpy as jnp, numpy as np, sys
import jaxpriv as jp
from jaxpriv import envs, oco, sets
from jaxpriv.sim import _seeds
assert jp.use_cpu_cores(2) == 2  # before any JAX operation
assert jax.device_count() == 2, jax.devices()
ball = sets.l2_ball(2)
lp = oco.PFTALParams(jnp.array([1.0, jnp.inf]), lipschitz=2.0)
p = jp.SimParams(lp, envs.QuadraticParams(1.0, jnp.array([0.3, 0.1]), 0.3))
r = jp.sweep(oco.pftal(64, ball), envs.quadratic_stream(ball), p, jax.random.key(3), 64, seeds=8)
assert len(r.regret.sharding.device_set) == 2, r.regret.sharding  # the seeds were split over both
# 7 seeds: padded to 8 and split; the driver pads each chunk of 3 to 4
assert len(_seeds._pad_seeds(jax.random.split(jax.random.key(0), 7), 8).sharding.device_set) == 2
r7 = jp.sweep(oco.pftal(64, ball), envs.quadratic_stream(ball), p, jax.random.key(3), 64, seeds=7)
r7c = jp.sweep(oco.pftal(64, ball), envs.quadratic_stream(ball), p, jax.random.key(3), 64, seeds=7, chunk=3, segment=40)
assert r7.regret.shape[1] == r7c.regret.shape[1] == 7
from jaxpriv.bandits import AdaCUCBParams
from jaxpriv.bandits.episodic import simulate_ucb_episodes
from jaxpriv.envs.bandits import PAPER_MEANS
rhos = jnp.array([0.3, 1.0])
ucb = simulate_ucb_episodes(AdaCUCBParams(rho=rhos), PAPER_MEANS, jax.random.key(4), 500, 7, [100, 500])
assert ucb.regret.shape[1] == 7
est = jp.tune.value_and_grad(oco.pftal(64, ball), envs.quadratic_stream(ball), p, "learner.lipschitz", 5, 64, seeds=7)
assert est.per_seed_value.shape[-1] == 7
np.savez(
    sys.argv[1],
    eight=np.asarray(r.regret),
    seven=np.asarray(r7.regret),
    seven_driver=np.asarray(r7c.regret),
    ucb=np.asarray(ucb.regret),
    tune_values=est.per_seed_value,
    tune_grads=est.per_seed_grad["learner.lipschitz"],
)
"""


def test_sharded_sweep_matches_single_device(tmp_path, subprocess_xla_flags):
    out = tmp_path / "regret.npz"
    env = dict(os.environ, XLA_FLAGS=subprocess_xla_flags, JAX_PLATFORMS="cpu")
    subprocess.run([sys.executable, "-c", SCRIPT, str(out)], check=True, env=env, timeout=300)
    ball = sets.l2_ball(2)
    p = jp.SimParams(
        oco.PFTALParams(np.array([1.0, np.inf], np.float32), lipschitz=2.0),
        envs.QuadraticParams(1.0, np.array([0.3, 0.1], np.float32), 0.3),
    )
    got = np.load(out)
    pftal, quadratic = oco.pftal(64, ball), envs.quadratic_stream(ball)
    single = {
        seeds: np.asarray(jp.sweep(pftal, quadratic, p, jax.random.key(3), 64, seeds=seeds).regret) for seeds in (8, 7)
    }
    for name, seeds in (("eight", 8), ("seven", 7), ("seven_driver", 7)):  # one single-device sweep per seed count
        np.testing.assert_allclose(got[name], single[seeds], rtol=1e-5, atol=1e-4, err_msg=name)
    rhos = np.array([0.3, 1.0], np.float32)
    ucb = simulate_ucb_episodes(AdaCUCBParams(rho=rhos), PAPER_MEANS, jax.random.key(4), 500, 7, [100, 500])
    np.testing.assert_allclose(got["ucb"], np.asarray(ucb.regret), rtol=1e-5, atol=1e-4, err_msg="episodic")
    est = jp.tune.value_and_grad(pftal, quadratic, p, "learner.lipschitz", 5, 64, seeds=7)
    np.testing.assert_allclose(got["tune_values"], est.per_seed_value, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(got["tune_grads"], est.per_seed_grad["learner.lipschitz"], rtol=1e-4, atol=1e-4)


def test_use_cpu_cores_after_jax_started_names_the_problem():
    jax.numpy.zeros(1).block_until_ready()  # JAX is running with one CPU device (conftest)
    assert jp.use_cpu_cores(1) == 1  # what it already has: nothing to change
    with pytest.raises(RuntimeError, match=r"before any JAX operation: JAX already started with 1 CPU device"):
        jp.use_cpu_cores(2)
    with pytest.raises(ValueError, match="n"):
        jp.use_cpu_cores(0)
