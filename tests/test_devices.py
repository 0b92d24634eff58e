"""A sweep sharded over several (CPU) devices gives the numbers of a single-device sweep."""

import os
import subprocess
import sys

import jax
import numpy as np

import jaxpriv as jp
from jaxpriv import envs, oco, sets

SCRIPT = """
import jax, jax.numpy as jnp, numpy as np, sys
import jaxpriv as jp
from jaxpriv import envs, oco, sets
assert jax.device_count() == 2, jax.devices()
ball = sets.l2_ball(2)
lp = oco.PFTALParams(jnp.array([1.0, jnp.inf]), lipschitz=2.0)
p = jp.SimParams(lp, envs.QuadraticParams(1.0, jnp.array([0.3, 0.1]), 0.3))
r = jp.sweep(oco.pftal(64, ball), envs.quadratic_stream(ball), p, jax.random.key(3), 64, seeds=8)
np.save(sys.argv[1], np.asarray(r.regret))
"""


def test_sharded_sweep_matches_single_device(tmp_path, subprocess_xla_flags):
    out = tmp_path / "regret.npy"
    flags = f"{subprocess_xla_flags} --xla_force_host_platform_device_count=2"
    env = dict(os.environ, XLA_FLAGS=flags, JAX_PLATFORMS="cpu")
    subprocess.run([sys.executable, "-c", SCRIPT, str(out)], check=True, env=env, timeout=300)
    ball = sets.l2_ball(2)
    p = jp.SimParams(
        oco.PFTALParams(np.array([1.0, np.inf], np.float32), lipschitz=2.0),
        envs.QuadraticParams(1.0, np.array([0.3, 0.1], np.float32), 0.3),
    )
    r = jp.sweep(oco.pftal(64, ball), envs.quadratic_stream(ball), p, jax.random.key(3), 64, seeds=8)
    np.testing.assert_allclose(np.load(out), np.asarray(r.regret), rtol=1e-5, atol=1e-4)
