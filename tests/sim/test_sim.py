"""The engine: invariance under jit, vmap, sweep and chunking; compile once; bad input; float32."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxpriv as jp
from jaxpriv import envs, oco, sets
from jaxpriv.sim._scan import _run
from jaxpriv.testing import rollout

BALL = sets.l2_ball(3)
ENV = envs.quadratic_stream(BALL)
ENV_P = envs.QuadraticParams(1.0, jnp.array([0.3, 0.2, -0.1]), 0.3)
T = 40
PFTAL = oco.pftal(T, BALL)


def _params(eps):
    return jp.SimParams(oco.PFTALParams(epsilon=eps, lipschitz=2.0), ENV_P)


def test_jit_and_no_jit_agree():
    key, steps = jax.random.key(4), 12  # op-by-op execution is slow: the first steps of the horizon-T learner
    r = jp.run(PFTAL, ENV, _params(1.0), key, steps)
    p = jax.tree.map(lambda v: jnp.asarray(v, jnp.float32), _params(1.0))
    with jax.disable_jit():
        regret, loss, *_ = _run(PFTAL, ENV, steps, tuple(range(1, steps + 1)), key, p)
    np.testing.assert_allclose(np.asarray(r.regret), np.asarray(regret), rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(np.asarray(r.loss), np.asarray(loss), rtol=1e-5, atol=1e-4)


def test_same_key_same_numbers_different_key_different_numbers():
    a = jp.run(PFTAL, ENV, _params(1.0), jax.random.key(0), T)
    b = jp.run(PFTAL, ENV, _params(1.0), jax.random.key(0), T)
    c = jp.run(PFTAL, ENV, _params(1.0), jax.random.key(1), T)
    np.testing.assert_array_equal(np.asarray(a.regret), np.asarray(b.regret))
    assert not np.allclose(np.asarray(a.regret), np.asarray(c.regret))


def test_sweep_matches_single_runs_and_chunking():
    key = jax.random.key(7)
    eps = jnp.array([0.5, 5.0, jnp.inf])
    full = jp.sweep(PFTAL, ENV, _params(eps), key, T, seeds=6, checkpoints=None)
    assert full.regret.shape == (3, 6, T)
    keys = jax.random.split(key, 6)
    for g, e in enumerate([0.5, 5.0, jnp.inf]):
        for s in (0, 5):
            one = jp.run(PFTAL, ENV, _params(e), keys[s], T)
            np.testing.assert_allclose(np.asarray(full.regret[g, s]), np.asarray(one.regret), rtol=1e-5, atol=1e-4)
    chunked = jp.sweep(PFTAL, ENV, _params(eps), key, T, seeds=6, checkpoints=None, chunk=4)
    np.testing.assert_allclose(np.asarray(chunked.regret), np.asarray(full.regret), rtol=1e-5, atol=1e-4)


def test_common_random_numbers_across_grid():
    # The comparator depends only on the z stream: identical at every grid point. (The shapes of the sweep in
    # test_sweep_matches_single_runs_and_chunking: its compiled program, the key is traced.)
    r = jp.sweep(PFTAL, ENV, _params(jnp.array([0.5, 5.0, jnp.inf])), jax.random.key(0), T, seeds=6, checkpoints=None)
    np.testing.assert_allclose(np.asarray(r.best[0]), np.asarray(r.best[2]), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.asarray(r.best[1]), np.asarray(r.best[2]), rtol=1e-5, atol=1e-5)
    assert not np.allclose(np.asarray(r.loss[0]), np.asarray(r.loss[2]))


def _z(t, action, feedback, info, learner_state, env_state):
    return info.stats.z


def _z_stream(learner, env, params, key, horizon):
    """The z_t of the engine's run (``jaxpriv.testing.rollout``: the same keys and steps), in float64."""
    return np.asarray(rollout(learner, env, params, key, horizon, record=_z).records, np.float64)


def test_checkpoints_match_every_step():
    key = jax.random.key(2)
    every = jp.run(PFTAL, ENV, _params(1.0), key, T)
    some = jp.run(PFTAL, ENV, _params(1.0), key, T, checkpoints=[1, 5, 17])
    np.testing.assert_array_equal(np.asarray(some.steps), [1, 5, 17, T])
    np.testing.assert_allclose(np.asarray(some.regret), np.asarray(every.regret)[[0, 4, 16, T - 1]], rtol=1e-6)
    assert jp.log_checkpoints(1000, 10)[-1] == 1000 and jp.log_checkpoints(1000, 10)[0] == 1


def test_regret_is_against_the_exact_comparator_of_each_prefix():
    # Brute force: minimise sum_s f_s(w) over a fine grid of the ball, in float64.
    ball = sets.l2_ball(2)
    env = envs.quadratic_stream(ball)
    p = jp.SimParams(oco.FTALParams(), envs.QuadraticParams(1.0, jnp.array([0.9, 0.6]), 0.4))
    r = jp.run(oco.ftal(ball), env, p, jax.random.key(3), 12)
    g = np.linspace(-1, 1, 801)
    W = np.stack(np.meshgrid(g, g), -1).reshape(-1, 2)
    W = W[np.linalg.norm(W, axis=1) <= 1]
    zs = _z_stream(oco.ftal(ball), env, p, jax.random.key(3), 12)
    for t in (1, 6, 12):
        brute = np.min(0.5 * ((W[:, None, :] - zs[None, :t]) ** 2).sum(-1).sum(-1))
        assert float(r.best[t - 1]) == pytest.approx(brute, abs=2e-5 * t + 1e-5)


def test_sweep_over_new_privacy_values_does_not_recompile():
    traces = []
    base = oco.pftal(T, BALL)

    def counting_init(key, params):
        traces.append(1)
        return base.init(key, params)

    learner = base._replace(init=counting_init)
    # The first sweep traces init twice: once abstractly (sim.check_compatible, jax.eval_shape, cached
    # per shape) and once to compile. New values of the same shape trace nothing more.
    jp.sweep(learner, ENV, _params(jnp.asarray([0.1, 1.0, jnp.inf])), jax.random.key(0), T, seeds=4)
    assert len(traces) == 2
    compiled = jp.sim.compile_count()
    for eps in ([0.3, 3.0, 10.0], [2.0, 4.0, 8.0]):
        jp.sweep(learner, ENV, _params(jnp.asarray(eps)), jax.random.key(0), T, seeds=4)
    assert len(traces) == 2 and jp.sim.compile_count() == compiled
    # Python floats vs arrays of the same values hit the same compiled function too (the abstract
    # trace of one grid point above already has these shapes: only the compile is new).
    jp.run(learner, ENV, _params(0.5), jax.random.key(0), T)
    jp.run(learner, ENV, _params(jnp.float32(2.0)), jax.random.key(0), T)
    assert len(traces) == 3 and jp.sim.compile_count() == compiled + 1


@pytest.mark.parametrize(
    ("make", "name"),
    [
        (lambda: jp.run(PFTAL, ENV, _params(-1.0), jax.random.key(0), T), "epsilon"),
        (lambda: jp.run(PFTAL, ENV, _params(0.0), jax.random.key(0), T), "epsilon"),
        (lambda: jp.sweep(PFTAL, ENV, _params(jnp.array([1.0, 0.0])), jax.random.key(0), T, seeds=2), "epsilon"),
        (lambda: jp.run(PFTAL, ENV, _params(1.0), jax.random.key(0), 0), "horizon"),
        (lambda: jp.run(PFTAL, ENV, _params(jnp.ones(2)), jax.random.key(0), T), "epsilon"),
        (lambda: jp.sweep(PFTAL, ENV, _params(jnp.ones((2, 2))), jax.random.key(0), T, seeds=2), "epsilon"),
        (
            lambda: jp.run(PFTAL, ENV, jp.SimParams(oco.PFTALParams(1.0, lipschitz=-1.0), ENV_P), jax.random.key(0), T),
            "lipschitz",
        ),
        (
            lambda: jp.run(
                PFTAL, ENV, jp.SimParams(oco.PFTALParams(1.0), ENV_P._replace(center=jnp.ones(2))), jax.random.key(0), T
            ),
            "center",
        ),
        (
            lambda: jp.sweep(
                PFTAL,
                ENV,
                jp.SimParams(oco.PFTALParams(jnp.ones(2), strong_convexity=jnp.ones(3)), ENV_P),
                jax.random.key(0),
                T,
                seeds=2,
            ),
            "grid",
        ),
        (lambda: jp.run(PFTAL, ENV, _params(1.0), jax.random.key(0), T, checkpoints=[0, 3]), "checkpoints"),
        (lambda: oco.pftal(T, BALL, noise="student"), "noise"),
        (lambda: oco.pftal(0, BALL), "horizon"),
        (lambda: sets.l2_ball(0), "dim"),
        (lambda: sets.l2_ball(2, radius=-1.0), "radius"),
        (
            lambda: jp.run(
                PFTAL,
                ENV,
                _params(1.0)._replace(learner=oco.PFTALParams(1.0, strong_convexity=0.0)),
                jax.random.key(0),
                T,
            ),
            "strong_convexity",
        ),
    ],
)
def test_bad_input_raises_before_compiling(make, name):
    before = jp.sim.compile_count()
    with pytest.raises(ValueError, match=name):
        make()
    assert jp.sim.compile_count() == before


def test_float32_under_x64_run():
    with jax.enable_x64(True):
        r = jp.run(
            PFTAL, ENV, jp.SimParams(oco.PFTALParams(np.float64(1.0), lipschitz=2.0), ENV_P), jax.random.key(0), T
        )
        assert r.regret.dtype == jnp.float32 and r.loss.dtype == jnp.float32


@pytest.mark.slow
def test_float32_accurate_at_2_pow_20():
    """FTAL in the interior plays the running mean of z: recompute the whole run in float64 NumPy."""
    horizon = 2**20
    ball = sets.l2_ball(2)
    env = envs.quadratic_stream(ball)
    center = np.array([0.3, 0.2])
    p = jp.SimParams(oco.FTALParams(), envs.QuadraticParams(1.0, center, 0.2))
    key = jax.random.key(9)
    r = jp.run(oco.ftal(ball), env, p, key, horizon, checkpoints=[2**10, 2**15])
    z = _z_stream(oco.ftal(ball), env, p, key, horizon)  # the run's centres, clipped to the unit ball
    csum = np.cumsum(z, 0)
    w = np.zeros_like(z)
    mean = csum[:-1] / np.arange(1, horizon)[:, None]
    w[1:] = mean * np.minimum(1.0, 1.0 / np.linalg.norm(mean, axis=1, keepdims=True))
    cum_loss = np.cumsum(0.5 * ((w - z) ** 2).sum(1))
    for i, t in enumerate((2**10, 2**15, horizon)):
        zbar = csum[t - 1] / t
        best = 0.5 * ((z[:t] - zbar) ** 2).sum()
        reference = cum_loss[t - 1] - best
        assert float(r.regret[i]) == pytest.approx(reference, rel=0.02), (t, float(r.regret[i]), reference)
        assert float(r.loss[i]) == pytest.approx(cum_loss[t - 1], rel=1e-5)


def test_vmap_over_run_matches_sweep():
    keys = jax.random.split(jax.random.key(5), 4)
    vm = jax.vmap(lambda k: jp.run(PFTAL, ENV, _params(1.0), k, T).regret)(keys)
    sw = jp.sweep(PFTAL, ENV, _params(1.0), jax.random.key(5), T, seeds=4, checkpoints=None)
    np.testing.assert_allclose(np.asarray(vm), np.asarray(sw.regret), rtol=1e-5, atol=1e-4)


def test_regret_is_differentiable_in_a_hyperparameter():
    # OGD's step size 1/(H t) on the quadratic stream: d regret / d H by autodiff vs central differences.
    ogd = oco.ogd(BALL)

    def final_regret(h):
        p = jp.SimParams(oco.OGDParams(strong_convexity=h), ENV_P)
        return jp.run(ogd, ENV, p, jax.random.key(8), T).regret[-1]

    grad = float(jax.grad(final_regret)(jnp.float32(1.5)))
    eps = 1e-2
    fd = (float(final_regret(jnp.float32(1.5 + eps))) - float(final_regret(jnp.float32(1.5 - eps)))) / (2 * eps)
    assert grad == pytest.approx(fd, rel=2e-2, abs=1e-3)
    assert abs(grad) > 1e-3


def test_the_engine_files_import_only_those_before_them():
    # jaxpriv/sim/: one file per job, in this order; a lower file never imports a higher one (DESIGN.md).
    import ast
    from pathlib import Path

    order = ["_params", "_check", "_scan", "_seeds", "_resume", "_driver", "_sweep"]
    root = Path(jp.__file__).parent / "sim"
    assert sorted(p.stem for p in root.glob("*.py")) == sorted([*order, "__init__"])
    for i, name in enumerate(order):
        tree = ast.parse((root / f"{name}.py").read_text())
        used = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("jaxpriv.sim"):
                parts = node.module.split(".")
                used.update([parts[2]] if len(parts) > 2 else [a.name for a in node.names])
            elif isinstance(node, ast.Import):
                used.update(a.name.split(".")[2] for a in node.names if a.name.startswith("jaxpriv.sim."))
        assert used <= set(order[:i]), f"jaxpriv/sim/{name}.py imports {sorted(used - set(order[:i]))}"
