"""Every declared learner runs under ``JAX_ENABLE_X64=1`` with float32 results (README's float64 pass).

With x64 enabled, a Python float or an int32 sum promotes to float64 / int64; a scan carry whose dtype changes
between steps is an error, and a result that silently turns float64 hides a float32 accuracy problem. README's
test command runs this file (with a few others) under ``JAX_ENABLE_X64=1``; in the ordinary run it is skipped
(the same learners run in float32 in their own tests).
"""

import jax
import numpy as np
import pytest

import jaxpriv as jp
from jaxpriv.testing import learner_examples

pytestmark = pytest.mark.skipif(not jax.config.jax_enable_x64, reason="the float64 pass only (JAX_ENABLE_X64=1)")

T = 8  # a few steps: a dtype change in the carry fails at trace time, whatever the horizon
EXAMPLES = learner_examples(T, 3) if jax.config.jax_enable_x64 else {}


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_every_learner_runs_in_float32_under_x64(name):
    learner, env, params = EXAMPLES[name]
    res = jp.run(learner, env, params, jax.random.key(0), T)
    assert res.regret.dtype == np.float32, (name, res.regret.dtype)
    assert np.all(np.isfinite(np.asarray(res.regret))), name
