"""Issue 23 ("Trust"), items 6-8: a resumed result is the configuration it claims to be.

* The resume fingerprint (``jaxpriv.sim._resume``) covers every static argument of every
  component, through the traced computation, and is the same in every process.
* ``sweep(save=)`` refuses a save file of another configuration (noise family, set
  radius, ``z_dist``, ...), a damaged file (naming it) and an unwritable path, all
  before anything runs.
* A finished sweep's save file is its result: ``sweep(save=)`` returns it after checking its
  fingerprint, so the study runner (a loop over ``sweep``) reuses a finished sweep and refuses
  one of a changed grid (never relabelled); deleting that file reruns it alone.
* Study and CLI inputs are clear errors (exit code 2, one line).
* Reproducibility across chunk and segment, measured at XLA's default optimisation
  level (a subprocess without the suite's flags).
"""

import functools
import json
import os
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxpriv as jp
from jaxpriv import cli, envs, mechanisms, oco, sets, sim
from jaxpriv.experiments import study
from jaxpriv.sim import _resume

ROOT = Path(jp.__file__).resolve().parents[1]
T = 64
BALL = sets.l2_ball(3)
BALL2 = sets.l2_ball(3, radius=2.0)


def _params(noise: str = "gamma", eps=(0.5, 5.0)) -> jp.SimParams:
    budget = np.asarray(eps, np.float32)
    lp = oco.PFTALParams(epsilon=None, rho=budget) if noise == "gaussian" else oco.PFTALParams(epsilon=budget)
    return jp.SimParams(lp._replace(lipschitz=2.0), envs.QuadraticParams(1.0, np.full(3, 0.1, np.float32), 0.3))


def _fingerprint(learner, env, params, horizon: int = T) -> dict:
    canonical = sim.canonical_params(params)
    axes, size = sim.grid_axes(canonical, allow_grid=True, ndims=sim.spec_ndims(learner, env))
    keys = jax.random.split(jax.random.key(0), 4)
    return _resume.fingerprint(
        learner, env, horizon=horizon, seeds=4, chunk=2, segment=16, checkpoints=(1, horizon), keys=keys,
        params=canonical, axes=axes if size else None,
    )  # fmt: skip


@functools.cache
def _base():
    """The one base configuration, built once: its sweeps then reuse JAX's in-memory compilations (a component
    built again is a new static argument, traced again). Rebuilding from scratch is tested on its own (CHANGES)."""
    return oco.pftal(T, BALL), envs.quadratic_stream(BALL), _params()


def _closed_over(center):
    """A learner that plays a fixed point closed over as an array: a jaxpr constant, not printed."""
    point = jnp.asarray(center, jnp.float32)
    base = oco.pftal(T, BALL)
    return base._replace(act=lambda key, state, t: point)


# Each case: (what changes, a builder of (learner, env, params, horizon), the fields that must differ).
CHANGES = {
    "noise laplace": (lambda: (oco.pftal(T, BALL, "laplace"), envs.quadratic_stream(BALL), _params(), T),
                      ["learner computation", "learner static arguments"]),
    "noise gaussian": (lambda: (oco.pftal(T, BALL, "gaussian"), envs.quadratic_stream(BALL), _params("gaussian"), T),
                       ["learner computation"]),
    "set radius": (lambda: (oco.pftal(T, BALL2), envs.quadratic_stream(BALL2), _params(), T),
                   ["learner computation", "environment computation"]),
    "z_dist": (lambda: (oco.pftal(T, BALL), envs.quadratic_stream(BALL, z_dist="drift"), _params(), T),
               ["environment computation", "environment static arguments"]),
    "z_radius": (lambda: (oco.pftal(T, BALL), envs.quadratic_stream(BALL, z_radius=0.5), _params(), T),
                 ["environment computation"]),
    "mechanism horizon": (lambda: (oco.pftal(T, BALL, mechanism=mechanisms.binary_tree(256, 3, "gamma", "replace")),
                                   envs.quadratic_stream(BALL), _params(), T), ["learner computation"]),
    "mechanism kind": (lambda: (oco.pftal(T, BALL, mechanism=mechanisms.honaker_tree(T, 3, "gamma", "replace")),
                                        envs.quadratic_stream(BALL), _params(), T), ["learner computation"]),
    "learner horizon": (lambda: (oco.pftal(2 * T, BALL), envs.quadratic_stream(BALL), _params(), T),
                        ["learner computation"]),
    "run horizon": (lambda: (oco.pftal(T, BALL), envs.quadratic_stream(BALL), _params(), T - 1), ["horizon"]),
    "closed-over array": (lambda: (_closed_over([0.1, 0.2, 0.3]), envs.quadratic_stream(BALL), _params(), T),
                          ["learner computation"]),
}  # fmt: skip


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_the_fingerprint_changes_with_every_static_argument(change):
    base = _fingerprint(*_base()[:3])
    build, fields = CHANGES[change]
    learner, env, params, horizon = build()
    changed = _fingerprint(learner, env, params, horizon)
    for field in fields:
        assert changed[field] != base[field], f"{change}: {field} did not change"
    # Rebuilding the same configuration from scratch gives the same fingerprint (no object ids).
    learner2, env2, params2, horizon2 = build()
    assert _fingerprint(learner2, env2, params2, horizon2) == changed


def test_a_closed_over_array_enters_the_fingerprint_by_value():
    env, params = envs.quadratic_stream(BALL), _params()
    a = _fingerprint(_closed_over([0.1, 0.2, 0.3]), env, params)
    b = _fingerprint(_closed_over([0.1, 0.2, 0.30001]), env, params)
    assert a["learner computation"] != b["learner computation"]
    assert a == _fingerprint(_closed_over([0.1, 0.2, 0.3]), env, params)


_FINGERPRINT_SCRIPT = """
import json, sys
sys.path.insert(0, {root!r})
sys.path.insert(0, {tests!r})
import test_trust_resume as t
print(json.dumps(t._fingerprint(*t._base()[:3])))
"""


def test_the_fingerprint_is_the_same_in_another_process(tmp_path):
    script = tmp_path / "fp.py"
    script.write_text(_FINGERPRINT_SCRIPT.format(root=str(ROOT), tests=str(Path(__file__).parent)))
    out = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, PYTHONHASHSEED="7"),
    )
    assert out.returncode == 0, out.stderr
    other = json.loads(out.stdout.strip().splitlines()[-1])
    assert other == json.loads(json.dumps(_fingerprint(*_base()[:3])))


# --- sweep(save=) -------------------------------------------------------------------------------------------


class _Killed(Exception):
    pass


def _kill(done, total):
    raise _Killed


def _interrupted(path: Path) -> None:
    learner, env, params = _base()
    with pytest.raises(_Killed):
        jp.sweep(learner, env, params, 3, T, seeds=4, chunk=2, segment=16, save=path, progress=_kill)
    assert path.exists()


def _resume_with(path, learner, env, params, horizon=T):
    calls = []
    r = jp.sweep(learner, env, params, 3, horizon, seeds=4, chunk=2, segment=16, save=path,
                 progress=lambda d, t: calls.append(d))  # fmt: skip
    return r, calls


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ("noise laplace", "noise: saved 'gamma', now 'laplace'"),
        ("noise gaussian", "noise: saved 'gamma', now 'gaussian'"),
        ("set radius", "constraint.radius: saved 1.0, now 2.0"),
        ("z_dist", "z_dist: saved 'iid', now 'drift'"),
        ("mechanism kind", "learner computation"),
    ],
)
def test_a_resume_under_a_changed_component_is_refused_naming_it(tmp_path, change, named):
    path = tmp_path / "sweep.npz"
    _interrupted(path)
    learner, env, params, _ = CHANGES[change][0]()
    calls = []
    with pytest.raises(ValueError, match="another sweep configuration") as err:
        jp.sweep(learner, env, params, 3, T, seeds=4, chunk=2, segment=16, save=path, progress=calls.append)
    assert named in str(err.value) and str(path) in str(err.value)
    assert not calls  # refused before anything ran
    # The unchanged configuration resumes from the same file, which then holds the finished sweep.
    _, calls = _resume_with(path, *_base())
    assert calls and path.exists()


def test_a_file_saved_under_a_removed_layout_is_refused(tmp_path):
    """Older versions had ``sweep(layout="seeds_first" | "seeds_last")`` and wrote it into the fingerprint."""
    path = tmp_path / "sweep.npz"
    _interrupted(path)
    meta, arrays = _resume.read(path, "")
    meta = {k: v for k, v in meta.items() if k not in ("format", "checksum")}
    meta["fingerprint"]["layout"] = "seeds_last"  # such a file, with a valid checksum
    _resume.write(path, meta, arrays)
    calls = []
    with pytest.raises(ValueError, match="layout: saved 'seeds_last', a batching jaxpriv no longer has") as err:
        jp.sweep(*_base(), 3, T, seeds=4, chunk=2, segment=16, save=path, progress=calls.append)
    assert str(path) in str(err.value) and "delete it to start the sweep over" in str(err.value)
    assert not calls  # refused before anything ran


def _array_data_offset(path: Path, member: str) -> int:
    """The byte offset of the array data of ``member`` (after its zip and .npy headers)."""
    with zipfile.ZipFile(path) as z:
        info = z.getinfo(member)
    raw = path.read_bytes()
    head = info.header_offset
    name_len = int.from_bytes(raw[head + 26 : head + 28], "little")
    extra_len = int.from_bytes(raw[head + 28 : head + 30], "little")
    start = head + 30 + name_len + extra_len
    npy_header = 10 + int.from_bytes(raw[start + 8 : start + 10], "little")
    return start + npy_header


@pytest.mark.parametrize("damage", ["half", "last bytes", "empty", "array byte", "meta byte"])
def test_a_damaged_save_file_is_an_error_naming_it(tmp_path, damage):
    path = tmp_path / "sweep.npz"
    _interrupted(path)
    raw = bytearray(path.read_bytes())
    if damage == "half":
        raw = raw[: len(raw) // 2]
    elif damage == "last bytes":
        raw = raw[:-10]
    elif damage == "empty":
        raw = bytearray()
    else:
        offset = _array_data_offset(path, "carry_1.npy" if damage == "array byte" else "meta.npy")
        raw[offset + 3] ^= 0x10
    path.write_bytes(bytes(raw))
    calls = []
    learner, env, params = _base()
    with pytest.raises(ValueError) as err:
        jp.sweep(learner, env, params, 3, T, seeds=4, chunk=2, segment=16, save=path, progress=calls.append)
    message = str(err.value)
    assert str(path) in message and "delete it to start the sweep over" in message, message
    assert "corrupted" in message or "truncated" in message, message
    assert not calls


def test_flipped_bytes_anywhere_are_refused_or_harmless(tmp_path):
    """A flipped byte is either detected (zip CRC, the arrays' checksum) or lies in a field that carries no data."""
    learner, env, params = _base()
    full = jp.sweep(learner, env, params, 3, T, seeds=4, chunk=2, segment=16, progress=lambda d, t: None)
    full = np.asarray(full.regret)
    path = tmp_path / "sweep.npz"
    _interrupted(path)
    good = path.read_bytes()
    refused = 0
    for offset in np.linspace(0, len(good) - 1, 16).astype(int):
        raw = bytearray(good)
        raw[offset] ^= 0xFF
        path.write_bytes(bytes(raw))
        try:
            r, _ = _resume_with(path, learner, env, params)
        except ValueError as err:
            assert str(path) in str(err)
            refused += 1
            continue
        np.testing.assert_array_equal(np.asarray(r.regret), full, err_msg=f"byte {offset} flipped")
    assert refused >= 12


def test_an_unwritable_save_path_is_refused_before_running(tmp_path):
    learner, env, params = _base()
    afile = tmp_path / "afile"
    afile.write_text("x")
    cases = [
        (tmp_path, "got the folder"),
        (afile / "run.npz", "is a file, not a folder"),
        (afile / "deeper" / "run.npz", "cannot create its folder"),
        (Path("/proc/self/run.npz"), "cannot write a file in /proc/self"),  # exists, not writable (even by root)
        ("", "must be a file path"),
    ]
    for save, message in cases:
        calls = []
        with pytest.raises(ValueError, match="save") as err:
            jp.sweep(learner, env, params, 3, T, seeds=4, chunk=2, segment=16, save=save, progress=calls.append)
        assert message in str(err.value), str(err.value)
        assert not calls
    # A missing folder that can be created is created.
    r = jp.sweep(learner, env, params, 3, T, seeds=4, chunk=2, segment=16, save=tmp_path / "new" / "run.npz")
    assert r.regret.shape[1] == 4 and (tmp_path / "new").is_dir()


def test_a_read_only_folder_is_refused(tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o500)
    try:
        if os.access(folder, os.W_OK):
            pytest.skip("running as a user who can write to read-only folders (root)")
        with pytest.raises(ValueError, match="cannot write a file"):
            _resume.check_writable(folder / "run.npz", "save")
    finally:
        folder.chmod(0o700)


# --- the study runner --------------------------------------------------------------------------------------

STUDY = """
name = "trust"
horizon = 64
seeds = 8
chunk = 4
checkpoints = [16, 32]
{extra}
[set]
kind = "l2_ball"
dim = 2

[learner]
name = "pftal"
{noise}
[learner.params]
{budget}
lipschitz = 2.0

[env]
name = "quadratic_stream"
[env.params]
center = [0.3, 0.3]
"""


def _study(tmp_path: Path, name: str = "trust.toml", budget: str = "epsilon = [0.3, 1.0]", **kw) -> Path:
    path = tmp_path / name
    path.write_text(STUDY.format(extra=kw.get("extra", ""), noise=kw.get("noise", ""), budget=budget))
    return path


def test_a_changed_grid_is_refused_never_relabelled_and_reruns_alone_once_deleted(tmp_path):
    out = tmp_path / "out"
    study.run_study(_study(tmp_path, extra="grid_chunk = 1"), out, progress=False)
    # The same study: every finished sweep (one per grid block) is checked by jaxpriv.sweep on its own and reused.
    again = study.run_study(_study(tmp_path, extra="grid_chunk = 1"), out, progress=False)
    assert (again.resumed, again.computed) == (2, 0)
    # epsilon 0.3 -> 0.5: the file of that grid point holds another configuration: refused before anything runs.
    edited = _study(tmp_path, budget="epsilon = [0.5, 1.0]", extra="grid_chunk = 1")
    with pytest.raises(ValueError, match="another sweep configuration") as err:
        study.run_study(edited, out, progress=False, after_segment=lambda n: pytest.fail("computed"))
    assert "g0000.sweep.npz" in str(err.value) and "params: saved" in str(err.value)
    # Deleted, that sweep alone is rerun; that of epsilon = 1 is reused.
    (out / "sweeps" / "g0000.sweep.npz").unlink()
    changed = study.run_study(edited, out, progress=False)
    assert (changed.resumed, changed.computed) == (1, 1)
    fresh = study.run_study(
        _study(tmp_path, "fresh.toml", budget="epsilon = [0.5, 1.0]", extra="grid_chunk = 1"),
        tmp_path / "fresh",
        progress=False,
    )
    np.testing.assert_array_equal(changed.regret, fresh.regret)
    assert not np.array_equal(changed.regret[0], again.regret[0])  # 0.5 is not the old 0.3


def test_a_damaged_sweep_file_is_an_error_naming_it(tmp_path):
    out = tmp_path / "out"
    path = _study(tmp_path)
    study.run_study(path, out, progress=False)
    done = out / "sweeps" / "g0000.sweep.npz"
    done.write_bytes(done.read_bytes()[:-50])
    with pytest.raises(ValueError) as err:
        study.run_study(path, out, progress=False, after_segment=lambda n: pytest.fail("computed"))
    assert str(done) in str(err.value) and "delete it to start the sweep over" in str(err.value)


def test_a_gaussian_learner_with_an_epsilon_grid_is_refused(tmp_path):
    before = sim.compile_count()
    path = _study(tmp_path, noise='noise = "gaussian"')
    with pytest.raises(ValueError) as err:
        study.load_study(path)
    message = str(err.value)
    assert str(path) in message and "[learner.params.epsilon]" in message and "ρ-zCDP" in message, message
    # Neither the budget of the family nor any budget: refused too.
    with pytest.raises(ValueError, match=r"\[learner.params\].*needs learner.params.rho"):
        study.load_study(_study(tmp_path, noise='noise = "gaussian"', budget=""))
    assert sim.compile_count() == before
    assert study.load_study(_study(tmp_path, noise='noise = "gaussian"', budget="rho = [0.3, 1.0]")).size == 2


@pytest.mark.parametrize("kind", ["folder", "missing"])
def test_a_study_path_that_is_no_file_is_a_value_error(tmp_path, kind):
    path = tmp_path if kind == "folder" else tmp_path / "nope.toml"
    with pytest.raises(ValueError, match="study"):
        study.load_study(path)


def _cli(args, capsys):
    code = cli.main([*args, "--no-compile-cache"])
    err = capsys.readouterr().err
    return code, err


def test_cli_inputs_are_one_line_errors(tmp_path, capsys):
    path = _study(tmp_path)
    afile = tmp_path / "afile"
    afile.write_text("x")
    cases = [
        (["sweep", str(tmp_path)], "got the folder"),
        (["sweep", str(tmp_path / "missing.toml")], "does not exist"),
        (["sweep", str(path), "--out", str(afile)], "--out must be a folder"),
        (["sweep", str(path), "--out", str(afile / "sub")], "lies under the file"),
        (["demo", "--out", str(afile / "sub")], "lies under the file"),
        (["sweep", str(_study(tmp_path, "g.toml", noise='noise = "gaussian"'))], "another noise family"),
    ]
    for args, message in cases:
        code, err = _cli(args, capsys)
        assert code == 2, (args, err)
        assert message in err and err.count("\n") == 1 and "Traceback" not in err, (args, err)
    # study.run_study refuses an out folder that is a file too (a ValueError naming out).
    with pytest.raises(ValueError, match="out must be a folder"):
        study.run_study(path, afile, progress=False)


# --- item 8: reproducibility at XLA's default optimisation level -------------------------------------------

_REPRO = textwrap.dedent(
    """
    import sys
    import numpy as np
    import jaxpriv as jp
    from jaxpriv import envs, oco, sets

    class Killed(Exception):
        pass

    T, S = 256, 12
    ball = sets.l2_ball(3)
    eps = np.array([0.3, 1.0, 10.0], np.float32)
    qp = envs.QuadraticParams(1.0, np.full(3, 0.29, np.float32), 0.3)
    cases = {
        "pftal": (oco.pftal(T, ball), jp.SimParams(oco.PFTALParams(epsilon=eps, lipschitz=2.0), qp)),
        "ftal": (oco.ftal(ball), jp.SimParams(oco.FTALParams(np.array([0.5, 1.0, 2.0], np.float32)), qp)),
    }
    out = {}
    quiet = lambda d, t: None
    for name, (learner, params) in cases.items():
        env = envs.quadratic_stream(ball)
        def run(chunk, segment, key=0, **kw):
            r = jp.sweep(learner, env, params, key, T, seeds=S, chunk=chunk, segment=segment, **kw)
            return np.stack([np.asarray(r.regret), np.asarray(r.loss), np.asarray(r.best)])
        # each (segment length, chunk) is a compilation at XLA's default level: 96 leaves a last segment of 64
        # (which the run in segments of 64, the reference, reuses)
        for segment in (1, 96, 64):
            out[f"{name}/4/{segment}"] = run(4, segment, progress=quiet)
        out[f"{name}/12/64"] = run(12, 64, progress=quiet)
        out[f"{name}/key1"] = run(4, 64, key=1, progress=quiet)
        seen = []
        def kill(d, t):
            seen.append(d)
            if len(seen) == 5:
                raise Killed
        try:
            run(4, 64, save=sys.argv[2] + name, progress=kill)
        except Killed:
            pass
        out[f"{name}/resumed"] = run(4, 64, save=sys.argv[2] + name)
    np.savez(sys.argv[1], **out)
    """
)

# The bound stated in docs/guide/sweeps.md for driver runs with different chunk sizes
# (measured: at most 7.3e-7 at T = 4096).
CHUNK_RTOL = 1e-6


def test_reproducibility_across_chunk_and_segment_at_the_default_optimisation_level(tmp_path):
    script = tmp_path / "repro.py"
    script.write_text(_REPRO)
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}  # XLA's defaults, as users run it
    env |= {"PYTHONPATH": str(ROOT), "JAX_PLATFORMS": "cpu"}
    res = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "out.npz"), str(tmp_path / "save-")],
        env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr[-3000:]
    out = np.load(tmp_path / "out.npz")
    for name in ("pftal", "ftal"):
        ref = out[f"{name}/4/64"]
        # The same chunk: bit for bit whatever the segment (one step, 96 steps and a last 64), and after an
        # interruption and a resume.
        for key in (f"{name}/4/1", f"{name}/4/96", f"{name}/resumed"):
            np.testing.assert_array_equal(out[key], ref, err_msg=key)
        # Another chunk (another batch width for XLA, all seeds in one): float32 rounding, within CHUNK_RTOL of the
        # largest value.
        for chunk in (12,):
            other = out[f"{name}/{chunk}/64"]
            for i, field in enumerate(("regret", "loss", "best")):
                scale = np.abs(ref[i]).max()
                np.testing.assert_allclose(other[i], ref[i], rtol=0, atol=CHUNK_RTOL * scale, err_msg=f"{name} {field}")
        # The check can fail: another key is far outside the bound.
        assert np.abs(out[f"{name}/key1"][0] - ref[0]).max() > 100 * CHUNK_RTOL * np.abs(ref[0]).max()
