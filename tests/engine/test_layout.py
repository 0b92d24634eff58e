"""The engine's batching layouts (``sweep(..., layout=...)``, ``jaxpriv.sim.resolve_layout``): the same numbers.

``vmap(scan(step))``, ``scan(vmap(step))`` with the seed axis first and with it last draw the
same keys, so every learner's results agree to float32 rounding (XLA may sum a few values in
another order), one call or chunked and segmented, saved and resumed.
"""

import jax
import numpy as np
import pytest

import jaxpriv as jp
from jaxpriv import envs, oco, sets, sim
from jaxpriv.bandits import AdaCUCBParams, adac_ucb
from jaxpriv.envs import BernoulliParams, bernoulli_bandit

T, SEEDS = 40, 5
FIELDS = ("regret", "loss", "best", "nonfinite_inputs", "nonfinite_steps")


def _quadratic(dim, simplex=False):
    set_ = sets.simplex(dim) if simplex else sets.l2_ball(dim)
    centre = np.full(dim, 1.0 / dim if simplex else 0.1, np.float32)
    return set_, envs.quadratic_stream(set_), envs.QuadraticParams(1.0, centre, 0.3)


def _case(name):
    """``(learner, env, params)`` of one row: small sizes, each learner's own params class."""
    if name in ("pftal_gamma", "pftal_gaussian"):
        ball, env, ep = _quadratic(3)
        lp = oco.PFTALParams(epsilon=1.0, lipschitz=2.0) if name == "pftal_gamma" else oco.PFTALParams(rho=0.5)
        return oco.pftal(T, ball, noise=name.split("_")[1]), env, jp.SimParams(lp, ep)
    if name == "ogd":
        ball, env, ep = _quadratic(10)
        return oco.ogd(ball), env, jp.SimParams(oco.OGDParams(1.0), ep)
    if name == "private_bandit_ftal":
        ball, env, ep = _quadratic(3)
        learner = oco.private_bandit_ftal(T, ball)
        return learner, envs.bandit_feedback(env), jp.SimParams(oco.PrivateBanditFTALParams(1.0, loss_bound=2.0), ep)
    if name == "wdp_cocop":
        simplex, env, ep = _quadratic(4, simplex=True)
        return oco.wdp_cocop(T, simplex, 8), env, jp.SimParams(oco.WDPParams(1.0, lipschitz=2.0), ep)
    means = np.array([0.9, 0.5, 0.4], np.float32)
    return adac_ucb(3), bernoulli_bandit(3), jp.SimParams(AdaCUCBParams(rho=1.0), BernoulliParams(means))


def _assert_same(got, want, what):
    for field in FIELDS:
        a, b = np.asarray(getattr(got, field)), np.asarray(getattr(want, field))
        if a.dtype.kind == "i":
            np.testing.assert_array_equal(a, b, err_msg=f"{what}: {field}")
        else:  # float32 rounding of a reordered sum, nothing more
            np.testing.assert_allclose(a, b, rtol=0, atol=2e-6 * max(1.0, float(np.abs(b).max())), err_msg=f"{what}")


@pytest.mark.parametrize(
    "name", ["pftal_gamma", "pftal_gaussian", "ogd", "private_bandit_ftal", "wdp_cocop", "adac_ucb"]
)
def test_every_layout_gives_the_default_numbers(name):
    learner, env, params = _case(name)
    want = jp.sweep(learner, env, params, 7, T, seeds=SEEDS, checkpoints=None, layout="vmap_scan")
    assert np.ptp(np.asarray(want.regret)) > 0  # real, varied numbers
    runs = {
        "seeds_first, in chunks": dict(layout="seeds_first", chunk=2),
        "seeds_last, chunked and segmented": dict(layout="seeds_last", chunk=3, segment=20),
    }
    for what, kw in runs.items():
        got = jp.sweep(learner, env, params, 7, T, seeds=SEEDS, checkpoints=None, **kw)
        _assert_same(got, want, f"{name}, {what}")
    other = jp.sweep(learner, env, params, 8, T, seeds=SEEDS, checkpoints=None, layout="vmap_scan")  # no recompile
    assert np.abs(np.asarray(other.regret) - np.asarray(want.regret)).max() > 1e-3  # the comparison can fail


def test_a_grid_in_every_layout_keeps_grid_and_seed_axes():
    learner, env, params = _case("pftal_gamma")
    params = params._replace(learner=params.learner._replace(epsilon=[0.5, 2.0, np.inf]))
    want = jp.sweep(learner, env, params, 3, T, seeds=SEEDS, layout="vmap_scan")
    assert want.regret.shape[:2] == (3, SEEDS)
    for kw in (dict(layout="seeds_last", chunk=2, segment=20), dict(layout="seeds_first", chunk=2)):
        _assert_same(jp.sweep(learner, env, params, 3, T, seeds=SEEDS, **kw), want, str(kw))


class _Killed(Exception):
    pass


def test_a_sweep_saved_in_one_layout_resumes_to_the_same_numbers(tmp_path):
    """The carry is saved as ``[seeds, ...]`` whatever the layout; the layout is part of the fingerprint."""
    learner, env, params = _case("ogd")
    kw = dict(seeds=SEEDS, chunk=3, segment=10, layout="seeds_last")
    whole = jp.sweep(learner, env, params, 2, T, **kw)
    path, seen = tmp_path / "sweep.npz", []

    def kill_after_three(done, total):
        seen.append(done)
        if len(seen) == 3:
            raise _Killed

    with pytest.raises(_Killed):
        jp.sweep(learner, env, params, 2, T, save=path, progress=kill_after_three, **kw)
    with pytest.raises(ValueError, match="layout: saved 'seeds_last', now 'seeds_first'"):
        jp.sweep(learner, env, params, 2, T, save=path, **(kw | dict(layout="seeds_first")))
    resumed = jp.sweep(learner, env, params, 2, T, save=path, **kw)
    for field in FIELDS:
        np.testing.assert_array_equal(np.asarray(getattr(resumed, field)), np.asarray(getattr(whole, field)))


def test_auto_is_the_backends_choice_unless_the_environment_forces_one(monkeypatch):
    monkeypatch.delenv("JAXPRIV_LAYOUT", raising=False)
    assert sim.resolve_layout() == "vmap_scan"
    assert sim.resolve_layout("seeds_last") == "seeds_last"
    monkeypatch.setenv("JAXPRIV_LAYOUT", "seeds_first")
    assert sim.resolve_layout("auto") == "seeds_first"
    assert sim.resolve_layout("vmap_scan") == "vmap_scan"  # an explicit argument wins
    monkeypatch.setenv("JAXPRIV_LAYOUT", "columns")
    with pytest.raises(ValueError, match="JAXPRIV_LAYOUT must be one of"):
        sim.resolve_layout()
    learner, env, params = _case("ogd")
    with pytest.raises(ValueError, match="layout must be one of"):
        jp.sweep(learner, env, params, 0, T, seeds=2, layout="seeds_middle")


def test_leaves_no_seed_changes_stay_unbatched():
    """OGD on the quadratic stream: the environment's params and the learner's H are shared; the rest is per seed."""
    learner, env, params = _case("ogd")
    params = sim.canonical_params(params)
    flags = sim.seed_batched(learner, env, (T,), params, None)
    carry = jax.eval_shape(lambda k: sim._init_carry(learner, env, (T,), k, params), jax.random.key(0))
    paths = [jax.tree_util.keystr(p) for p, _ in jax.tree_util.tree_leaves_with_path(carry)]
    named = dict(zip(paths, flags, strict=True))
    shared = {k for k, b in named.items() if not b}
    env_fields = {".env_state." + f for f in ("strong_convexity", "center", "spread", "drift", "reference")}
    assert shared == env_fields | {".agent.strong_convexity", ".agent.lipschitz"}, named
    assert named[".k_steps"] and named[".agent.w"] and named[".bad_steps"]
    # A swept leaf makes what it reaches differ between grid points.
    swept = params._replace(learner=params.learner._replace(strong_convexity=np.array([1.0, 2.0], np.float32)))
    axes, _ = sim.grid_axes(swept, True)
    assert sum(sim.seed_batched(learner, env, (T,), swept, axes)) > sum(flags)
