"""``sweep(..., simulator="episodes")``: a learner's exact episode simulator (``Spec.fast_path``) through the
engine's one entry point, with ``simulate_episodes``'s numbers bit for bit, and saved and resumed like any sweep:
a finished save file is the result, returned after its fingerprint (simulator and options included) is checked."""

import jax.numpy as jnp
import numpy as np
import pytest

import jaxpriv as jp
from jaxpriv import bandits, envs, oco, sets

K, T, SEEDS = 3, 512, 4
MEANS = envs.BernoulliParams(jnp.array([0.8, 0.5, 0.3]))
LEARNER = bandits.adac_ucb(K)
PARAMS = jp.SimParams(bandits.AdaCUCBParams(rho=jnp.array([0.5, jnp.inf])), MEANS)
ENV = envs.bernoulli_bandit(K)


def _sweep(**kw):
    return jp.sweep(LEARNER, ENV, PARAMS, 7, T, SEEDS, "log", simulator="episodes", **kw)


def test_the_episode_sweep_is_simulate_episodes_bit_for_bit_and_a_result():
    direct = bandits.simulate_episodes(LEARNER, PARAMS.learner, MEANS, 7, T, SEEDS)
    r = _sweep()
    assert isinstance(r, jp.Result) and isinstance(direct, jp.Result)
    assert r.loss is None and r.best is None and r.private is True
    assert r.regret.shape == (2, SEEDS, len(r.steps)) and r.pulls.shape == (2, SEEDS, K)
    for name in ("steps", "regret", "episodes", "pulls"):
        np.testing.assert_array_equal(np.asarray(getattr(r, name)), np.asarray(getattr(direct, name)), err_msg=name)
    assert bandits.episodic.EpisodeResult is jp.Result  # the old name, kept for existing code


def test_a_finished_episode_sweep_is_read_back_and_never_under_another_configuration(tmp_path):
    path = tmp_path / "episodes.npz"
    calls = []
    first = _sweep(save=path, progress=lambda done, total: calls.append(done))
    assert calls == [SEEDS * T] and path.exists()
    calls.clear()
    again = _sweep(save=path, progress=lambda done, total: calls.append(done))
    assert not calls  # nothing ran: the file holds the finished simulation
    for name in ("steps", "regret", "episodes", "pulls"):
        np.testing.assert_array_equal(np.asarray(getattr(again, name)), np.asarray(getattr(first, name)))
    assert again.private is first.private is True
    # Another seed count, another option, the step-level engine: refused before anything runs, naming the field.
    for kw, named in (
        (dict(seeds=SEEDS + 1), "seeds: saved 4, now 5"),
        (dict(simulator_options={"private": False}), "simulator (private: saved '<absent>', now False)"),
    ):
        with pytest.raises(ValueError, match="another sweep configuration") as err:
            jp.sweep(LEARNER, ENV, PARAMS, 7, T, kw.pop("seeds", SEEDS), "log", simulator="episodes", save=path,
                     progress=calls.append, **kw)  # fmt: skip
        assert named in str(err.value) and str(path) in str(err.value)
    with pytest.raises(ValueError, match="another sweep configuration") as err:
        jp.sweep(LEARNER, ENV, PARAMS, 7, T, SEEDS, "log", save=path, progress=calls.append)
    assert "simulator: saved {'name': 'episodes'}, now '<absent>'" in str(err.value)
    assert not calls


def test_episode_sweeps_refuse_what_they_cannot_run():
    ball = sets.l2_ball(2)
    with pytest.raises(ValueError, match="has no exact episode simulator"):
        jp.sweep(oco.ogd(ball), envs.quadratic_stream(ball), None, 0, 64, 2, simulator="episodes")
    lin = envs.linear_bandit(K, 2)
    with pytest.raises(ValueError, match="runs on bernoulli_bandit, not linear_bandit"):
        jp.sweep(LEARNER, lin, PARAMS, 0, T, 2, simulator="episodes")
    with pytest.raises(ValueError, match="segment and stats are the step-level driver's"):
        _sweep(segment=64)
    with pytest.raises(ValueError, match="simulator_options must not set 'chunk'"):
        _sweep(simulator_options={"chunk": 2})
    with pytest.raises(ValueError, match="pass simulator='episodes'"):
        jp.sweep(LEARNER, ENV, PARAMS, 0, T, 2, simulator_options={"private": False})
    with pytest.raises(ValueError, match="simulator must be one of"):
        jp.sweep(LEARNER, ENV, PARAMS, 0, T, 2, simulator="episode")
