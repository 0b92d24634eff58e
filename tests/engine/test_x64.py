"""Every declared learner traces under ``JAX_ENABLE_X64=1`` with float32 results (README's float64 pass).

With x64 enabled, a Python float or an int32 sum promotes to float64 / int64; a scan carry whose dtype changes
between steps is an error, and a result that silently turns float64 hides a float32 accuracy problem. Both show
when the run is traced, so every learner is traced (``jax.eval_shape``: no compilation, a ninth of a run's cost)
and one learner of each family is also compiled and run, its regret checked finite. README's test command runs
this file (with a few others) under ``JAX_ENABLE_X64=1``; in the ordinary run it is skipped (the same learners run
in float32 in their own tests).
"""

import jax
import numpy as np
import pytest

import jaxpriv as jp
from jaxpriv._base import engine_jit
from jaxpriv.testing import learner_examples

pytestmark = pytest.mark.skipif(not jax.config.jax_enable_x64, reason="the float64 pass only (JAX_ENABLE_X64=1)")

T = 8  # a few steps: a dtype change in the carry fails at trace time, whatever the horizon
EXAMPLES = learner_examples(T, 3) if jax.config.jax_enable_x64 else {}

#: Compiled and run as well: one learner per family (the tree and the non-private OCO learners, bandit feedback,
#: the window trees, mutual information, the finite-armed, linear and contextual bandits).
FAMILIES = ("pftal", "ogd", "private_bandit_ftal", "wdp_cocop", "mi_ogd", "adac_ucb", "gope", "private_linucb")
RUN = FAMILIES if EXAMPLES else ()  # the ordinary run skips the file (one skip per test, not per case)


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_every_learner_traces_in_float32_under_x64(name, monkeypatch):
    # the engine's jitted program traced for its output shapes, not compiled (the eager checks run as in a run)
    monkeypatch.setattr(engine_jit, "__call__", lambda self, *args, **kw: jax.eval_shape(self._plain, *args, **kw))
    learner, env, params = EXAMPLES[name]
    res = jp.run(learner, env, params, jax.random.key(0), T)
    assert res.regret.dtype == np.float32, (name, res.regret.dtype)
    wide = [x.dtype for x in jax.tree.leaves(res) if getattr(x, "dtype", None) == np.float64]
    assert not wide, (name, wide)


@pytest.mark.parametrize("name", RUN)
def test_one_learner_of_each_family_runs_finite_under_x64(name):
    learner, env, params = EXAMPLES[name]
    res = jp.run(learner, env, params, jax.random.key(0), T)
    assert res.regret.dtype == np.float32, (name, res.regret.dtype)
    assert np.all(np.isfinite(np.asarray(res.regret))), name
