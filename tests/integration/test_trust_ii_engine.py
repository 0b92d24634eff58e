"""Issue 35 ("Trust II"), items 4 and 5 and the deep failures: seeds, save metadata, horizons, empty params.

* Item 4: a seed of ``2**32`` or more is not seed 0 outside ``sweep`` either (the study runner, the
  shipped ``demo`` study): every integer becomes a key through ``jaxpriv._base.as_key``, the numbers
  ``sweep`` gives for the same integer; a negative seed is refused (the CLI: exit code 2, one line).
* Item 5: the checksum of a save file covers its metadata: an edited ``segment``, ``chunk`` or
  ``done`` is the same "delete it to start over" error as a flipped byte (a study's chunk too).
* A horizon of ``2**31 - 1`` or more is refused when a component is built (every factory that
  takes one), by the engine, the ``demo`` study, the CLI and a study file; an empty params array is a
  ``ValueError`` naming the field, before compiling; a comparison mixing a bandit policy with a
  full-information stream is refused when the study file is read, before any chunk compiles.
* The save-file guide lists every field the fingerprint holds.
"""

import contextlib
import json
import re
import shutil
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxpriv as jp
from jaxpriv import bandits, cli, envs, mechanisms, oco, sets, sim
from jaxpriv._base import as_key
from jaxpriv.experiments import study

ROOT = Path(jp.__file__).resolve().parents[1]
T = 16
BALL = sets.l2_ball(2)
CENTER = np.array([0.3, 0.2], np.float32)
BIG = 2**32


def _key_data(key) -> np.ndarray:
    return np.asarray(jax.random.key_data(key))


def _cli(args, capsys):
    code = cli.main([*args, "--no-compile-cache"])
    return code, capsys.readouterr().err


def _one_line_error(code, err, name):
    assert code == 2, err
    assert err.count("\n") == 1 and "error:" in err and "Traceback" not in err, err
    assert name in err, err


# --- item 4: seeds -------------------------------------------------------------------------------------------

STUDY = """
name = "seeds"
horizon = {horizon}
seeds = 2
seed = {seed}
checkpoints = [{horizon}]

[set]
kind = "l2_ball"
dim = 2

[learner]
name = "ogd"
[learner.params]
strong_convexity = 1.0
lipschitz = 2.0

[env]
name = "quadratic_stream"
[env.params]
center = [0.3, 0.2]
"""


def _study_file(folder: Path, seed: int = 0, horizon: int = T, name: str = "seeds.toml") -> Path:
    path = folder / name
    path.write_text(STUDY.format(seed=seed, horizon=horizon))
    return path


def test_a_study_seed_of_2_32_is_not_seed_0_and_gives_sweeps_numbers(tmp_path, capsys):
    zero = study.run_study(_study_file(tmp_path, 0, name="zero.toml"), tmp_path / "zero", progress=False)
    big = study.run_study(_study_file(tmp_path, BIG, name="big.toml"), tmp_path / "big", progress=False)
    assert not np.array_equal(big.regret, zero.regret)
    # The study runs jaxpriv.sweep with its seed as the key: as_key(2**32), not seed 0.
    s = big.study
    ref = jp.sweep(s.learner, s.env, s.learners[0].params, as_key(BIG), T, 2, [T], 2, segment=T)
    np.testing.assert_array_equal(big.regret, np.asarray(ref.regret)[None])  # one grid point


def test_a_study_seed_outside_the_64_bit_range_is_refused(tmp_path):
    for seed in (-1, 2**64):
        with pytest.raises(ValueError, match=r"\[seed\]"):
            study.load_study(_study_file(tmp_path, seed))


def _demo(**keys):
    """An ``edit`` of the shipped ``demo`` study: d = 2, PFTAL at epsilon = 1 only, ``keys`` over the file's."""

    def edit(raw: dict) -> dict:
        raw["set"] = raw["set"] | {"dim": 2}
        raw["env"]["params"] = raw["env"]["params"] | {"center": [0.3, 0.2]}
        raw["grid"] = {"epsilon": [1.0]}
        return raw | keys

    return edit


def test_the_demo_seed_uses_all_64_bits_as_sweep_does(tmp_path):
    # The demo study's numbers at seed 2**32 are jaxpriv.sweep's with the key as_key(2**32), and those are neither
    # seed 0's nor seed 2**32 - 1's (a seed cut to its low 32 bits would give one of them).
    res = study.run_study("demo", tmp_path, progress=False, edit=_demo(horizon=8, seeds=2, seed=BIG))
    s = res.study
    assert s.seed == BIG
    for i, arm in enumerate(s.learners):
        ref = jp.sweep(arm.learner, s.env, arm.params, as_key(BIG), s.horizon, s.seeds, s.checkpoints, s.chunk,
                       segment=s.segment)  # fmt: skip
        np.testing.assert_array_equal(res.regret[i], np.asarray(ref.regret).reshape(res.regret[i].shape))
    pftal = s.learners[0]
    assert pftal.label == "PFTAL"
    for other in (0, 2**32 - 1):
        ref = jp.sweep(pftal.learner, s.env, pftal.params, as_key(other), s.horizon, s.seeds, s.checkpoints, s.chunk,
                       segment=s.segment)  # fmt: skip
        assert not np.array_equal(res.regret[0], np.asarray(ref.regret).reshape(res.regret[0].shape))


def test_a_negative_demo_seed_is_refused(tmp_path, capsys):
    for seed in (-1, 2**64):
        with pytest.raises(ValueError, match="seed"):
            study.run_study("demo", tmp_path / "demo", progress=False, edit=_demo(horizon=8, seeds=2, seed=seed))
    assert not (tmp_path / "demo").exists()
    for seed in ("-1", str(2**64)):
        code, err = _cli(["demo", "--out", str(tmp_path / "cli"), "--horizon", "8", "--seed", seed], capsys)
        _one_line_error(code, err, "--seed")
    code, err = _cli(["bandits", "--out", str(tmp_path / "b"), "--seed", "-1"], capsys)
    _one_line_error(code, err, "--seed")


# --- item 5: save metadata -----------------------------------------------------------------------------------


class _Killed(Exception):
    pass


def _params() -> jp.SimParams:
    lp = oco.PFTALParams(epsilon=np.array([0.5, 5.0], np.float32), lipschitz=2.0, strong_convexity=1.0)
    return jp.SimParams(lp, envs.QuadraticParams(1.0, CENTER, 0.3))


def _sweep(**kw):
    return jp.sweep(oco.pftal(T, BALL), envs.quadratic_stream(BALL), _params(), 3, T, seeds=8, chunk=2, segment=4, **kw)


@pytest.fixture(scope="module")
def interrupted(tmp_path_factory) -> Path:
    """A save file of a sweep stopped in its third chunk (two chunks done, a carry at segment 2)."""
    path = tmp_path_factory.mktemp("save") / "sweep.npz"
    calls = []

    def stop(done, total):
        calls.append(done)
        if len(calls) == 10:
            raise _Killed

    with contextlib.suppress(_Killed):
        _sweep(save=path, progress=stop)
    assert path.exists()
    return path


def _edited(src: Path, folder: Path, change) -> Path:
    path = folder / "sweep.npz"
    shutil.copy(src, path)
    with np.load(path) as z:
        arrays = {k: z[k] for k in z.files if k != "meta"}
        meta = json.loads(str(z["meta"]))
    change(meta)
    with open(path, "wb") as f:  # a valid archive, the arrays untouched: only the metadata changed
        np.savez(f, meta=np.asarray(json.dumps(meta)), **arrays)
    return path


@pytest.mark.parametrize(
    "edit",
    [
        ("segment", 1),
        ("segment", -1),
        ("chunk", 1),
        ("done", None),
    ],
    ids=["segment+1", "segment-1", "chunk+1", "done=5"],
)
def test_an_edited_save_file_field_is_refused_like_damage(interrupted, tmp_path, edit):
    field, delta = edit
    with np.load(interrupted) as z:
        meta = json.loads(str(z["meta"]))
    assert (meta["chunk"], meta["segment"], meta["done"], meta["carry"]) == (2, 2, 2, True)

    def change(m):
        m[field] = 5 if delta is None else m[field] + delta

    path = _edited(interrupted, tmp_path, change)
    calls = []
    with pytest.raises(ValueError) as err:
        _sweep(save=path, progress=calls.append)
    message = str(err.value)
    assert str(path) in message and "delete it to start the sweep over" in message, message
    assert "checksum" in message, message
    assert not calls and path.exists()


def test_an_unedited_save_file_still_resumes(interrupted, tmp_path):
    path = tmp_path / "sweep.npz"
    shutil.copy(interrupted, path)
    fresh = np.asarray(_sweep(progress=lambda d, t: None).regret)
    resumed = np.asarray(_sweep(save=path, progress=lambda d, t: None).regret)
    np.testing.assert_array_equal(resumed, fresh)


def test_an_edited_study_chunk_is_refused(tmp_path):
    path = _study_file(tmp_path, 0)
    out = tmp_path / "out"
    study.run_study(path, out, progress=False)
    chunk = next((out / "sweeps").glob("*.npz"))
    _edited(chunk, tmp_path, lambda m: m.__setitem__("unit", [0, 0, 1]))
    shutil.copy(tmp_path / "sweep.npz", chunk)
    with pytest.raises(ValueError, match="checksum") as err:
        study.run_study(path, out, progress=False)
    assert str(chunk) in str(err.value) and "delete it" in str(err.value)


# --- horizons of 2**31 - 1 and more --------------------------------------------------------------------------

SIMPLEX = sets.simplex(3)
FACTORIES = {
    "oco.pftal": lambda h: oco.pftal(h, BALL),
    "oco.regularized_pftal": lambda h: oco.regularized_pftal(h, BALL),
    "oco.private_experts": lambda h: oco.private_experts(h, 3),
    "oco.dp_ftrl": lambda h: oco.dp_ftrl(h, BALL),
    "oco.ftal": lambda h: oco.ftal(BALL, h),
    "oco.mi_ogd": lambda h: oco.mi_ogd(BALL, h),
    "oco.bandit_ftal": lambda h: oco.bandit_ftal(h, BALL),
    "oco.private_bandit_ftal": lambda h: oco.private_bandit_ftal(h, BALL),
    "oco.fkm": lambda h: oco.fkm(h, BALL),
    "oco.mi_bandit_ogd": lambda h: oco.mi_bandit_ogd(h, BALL),
    "oco.online_frank_wolfe": lambda h: oco.online_frank_wolfe(BALL, h),
    "oco.garber_hazan": lambda h: oco.garber_hazan(h, SIMPLEX),
    "oco.wdp_cocop": lambda h: oco.wdp_cocop(h, BALL, 4),
    "oco.wdp_cocol": lambda h: oco.wdp_cocol(h, SIMPLEX, 4),
    "bandits.ucb": lambda h: bandits.ucb(3, h),
    "bandits.adac_ucb": lambda h: bandits.adac_ucb(3, h),
    "bandits.adap_ucb": lambda h: bandits.adap_ucb(3, h),
    "bandits.adap_klucb": lambda h: bandits.adap_klucb(3, h),
    "bandits.dp_ucb": lambda h: bandits.dp_ucb(3, h),
    "bandits.ldp_ucb": lambda h: bandits.ldp_ucb(3, h),
    "bandits.dp_se": lambda h: bandits.dp_se(3, h),
    "bandits.gope": lambda h: bandits.gope(4, 2, h),
    "bandits.adac_gope": lambda h: bandits.adac_gope(4, 2, h),
    "bandits.adac_gope_var": lambda h: bandits.adac_gope_var(4, 2, h),
    "bandits.rs_oful": lambda h: bandits.rs_oful(4, 2, h),
    "bandits.adac_oful": lambda h: bandits.adac_oful(4, 2, h),
    "mechanisms.binary_tree": lambda h: mechanisms.binary_tree(h, 1),
    "mechanisms.honaker_tree": lambda h: mechanisms.honaker_tree(h, 1),
    "mechanisms.window_tree": lambda h: mechanisms.window_tree(h, 1, 4),
    "mechanisms.sqrt_factorization": lambda h: mechanisms.sqrt_factorization(h, 1),
    "mechanisms.blt": lambda h: mechanisms.blt(h, 1),
    "envs.classification_stream": lambda h: envs.classification_stream(BALL, h),
}


@pytest.mark.parametrize("horizon", [2**31 - 1, 2**31, 2**40])
@pytest.mark.parametrize("name", sorted(FACTORIES))
def test_every_factory_refuses_a_horizon_past_int32(name, horizon):
    with pytest.raises(ValueError, match="horizon"):
        FACTORIES[name](horizon)


def test_the_engine_refuses_a_horizon_past_int32_before_compiling():
    params = jp.SimParams(oco.OGDParams(1.0, 2.0), envs.QuadraticParams(1.0, CENTER, 0.3))
    before = sim.compile_count()
    for horizon in (2**31 - 1, 2**31):
        with pytest.raises(ValueError, match="horizon must be < 2"):
            jp.run(oco.ogd(BALL), envs.quadratic_stream(BALL), params, 0, horizon)
        ucb_params = jp.SimParams(bandits.UCBParams(), envs.BernoulliParams())
        with pytest.raises(ValueError, match="horizon must be < 2"):
            jp.sweep(bandits.ucb(3), envs.bernoulli_bandit(3), ucb_params, 0, horizon, seeds=2)
    assert sim.compile_count() == before


def test_the_demo_and_a_study_file_refuse_a_horizon_past_int32(tmp_path, capsys):
    with pytest.raises(ValueError, match=r"\[horizon\] must be < 2\*\*31 - 1"):
        study.run_study("demo", tmp_path / "demo", progress=False, edit=_demo(horizon=2**31, seeds=2))
    assert not (tmp_path / "demo").exists()
    code, err = _cli(["demo", "--out", str(tmp_path / "cli"), "--horizon", str(2**31)], capsys)
    _one_line_error(code, err, "--horizon")
    path = _study_file(tmp_path, horizon=2**31)
    with pytest.raises(ValueError, match=r"\[horizon\] must be < 2\*\*31 - 1"):
        study.load_study(path)
    code, err = _cli(["sweep", str(path), "--out", str(tmp_path / "out"), "--no-progress"], capsys)
    _one_line_error(code, err, "[horizon]")
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").rglob("*.npz"))


# --- empty params arrays -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "field, lp, ep",
    [
        ("params.learner.epsilon", {"epsilon": jnp.array([])}, {}),
        ("params.learner.lipschitz", {"lipschitz": np.array([], np.float32)}, {}),
        ("params.learner.epsilon", {"epsilon": np.zeros((0, 0), np.float32)}, {}),
        ("params.env.center", {}, {"center": np.zeros((0,), np.float32)}),
        ("params.env.spread", {}, {"spread": []}),
    ],
)
def test_an_empty_params_array_is_a_value_error_naming_it(field, lp, ep):
    learner_params = oco.PFTALParams(**({"epsilon": 1.0, "lipschitz": 2.0, "strong_convexity": 1.0} | lp))
    env_params = envs.QuadraticParams(**({"strong_convexity": 1.0, "center": CENTER, "spread": 0.3} | ep))
    params = jp.SimParams(learner_params, env_params)
    learner, env = oco.pftal(T, BALL), envs.quadratic_stream(BALL)
    before = sim.compile_count()
    for call in (lambda: jp.sweep(learner, env, params, 0, T, seeds=2), lambda: jp.run(learner, env, params, 0, T)):
        with pytest.raises(ValueError, match=re.escape(field) + ".*empty"):
            call()
    assert sim.compile_count() == before


# --- a comparison mixing a bandit policy with a full-information stream --------------------------------------

MIXED = """
name = "mixed"
horizon = 16
seeds = 2
checkpoints = [16]

[set]
kind = "l2_ball"
dim = 2

[env]
name = "quadratic_stream"
[env.params]
center = [0.3, 0.2]

[[learners]]
name = "ftal"
label = "FTAL"
[learners.params]
strong_convexity = 1.0

[[learners]]
name = "ucb"
label = "UCB"
num_arms = {arms}
"""


@pytest.mark.parametrize("arms", [2, 3])
def test_a_comparison_with_a_bandit_policy_on_a_stream_is_refused_before_compiling(tmp_path, arms):
    path = tmp_path / "mixed.toml"
    path.write_text(MIXED.format(arms=arms))
    with pytest.raises(ValueError, match=r"\[learners\.UCB\].*bandit policy.*full-information"):
        study.load_study(path)
    before = sim.compile_count()
    with pytest.raises(ValueError, match=r"\[learners\.UCB\]"):
        study.run_study(path, tmp_path / "out", progress=False)
    assert sim.compile_count() == before
    assert not list((tmp_path / "out").rglob("*.npz"))


# --- the docs' list of fingerprint fields --------------------------------------------------------------------

#: Each fingerprint field and the words the guide names it with.
DOC_WORDS = {
    "learner": "components' names",
    "learner static arguments": "static arguments",
    "learner computation": "what the components compute",
    "environment": "components' names",
    "environment static arguments": "static arguments",
    "environment computation": "what the components compute",
    "horizon": "horizon",
    "seeds": "seeds",
    "chunk": "chunk",
    "segment": "segment",
    "checkpoints": "checkpoints",
    "key": "key",
    "params": "params",
    "stats": "stats",
    "process": "the process",
    "jax": "JAX version, backend and device count",
}


def test_the_guide_lists_every_fingerprint_field(interrupted):
    with np.load(interrupted) as z:
        fields = set(json.loads(str(z["meta"]))["fingerprint"])
    text = (ROOT / "docs" / "guide" / "sweeps.md").read_text()
    paragraph = " ".join(text.split("Each file carries a fingerprint of", 1)[1].split("\n- ", 1)[0].split())
    missing = [f for f in sorted(fields) if f not in DOC_WORDS or DOC_WORDS[f] not in paragraph]
    assert not missing, missing
