"""``jaxpriv sweep study.toml``: the five outputs, ``jaxpriv.sweep``'s numbers bit for bit, resume after an
interruption from the engine's save file, and clear errors naming the key in the file."""

import json
import sys
from pathlib import Path

import numpy as np
import pytest

import jaxpriv as jp
from jaxpriv import cli, envs, oco, sets, sim
from jaxpriv.experiments import study
from jaxpriv.sim import _resume

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

SMALL = """
name = "small"
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
[learner.params]
epsilon = [1.0, 10.0, inf]
lipschitz = [0.5, 2.0]

[env]
name = "quadratic_stream"
[env.params]
center = [0.3, 0.3]
"""


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.fixture(scope="module")
def full_run(tmp_path_factory):
    """One uninterrupted run of the small study (6 grid points, 2 seed chunks), shared by the tests."""
    tmp = tmp_path_factory.mktemp("study")
    before = sim.compile_count("driver")
    res = study.run_study(_write(tmp, "small.toml", SMALL.format(extra="")), tmp / "full", progress=False)
    return res, sim.compile_count("driver") - before


def _by_hand(key, **kw):
    """The small study's sweep through the public API."""
    ball = sets.l2_ball(2)
    params = jp.SimParams(
        oco.PFTALParams(epsilon=np.repeat([1.0, 10.0, np.inf], 2), lipschitz=np.tile([0.5, 2.0], 3)),
        envs.QuadraticParams(center=np.array([0.3, 0.3])),
    )
    return jp.sweep(oco.pftal(64, ball), envs.quadratic_stream(ball), params, key, 64, 8, [16, 32], **kw)


def test_writes_seven_outputs_with_the_apis_numbers(full_run):
    res, compiled = full_run
    assert set(res.files) == {"npz", "json", "csv", "curves", "final", "nc", "long"}
    data = np.load(res.files["npz"])
    assert data["regret"].shape == (6, 8, 3) and list(data["steps"]) == [16, 32, 64]
    # The product grid, row-major: epsilon is the first axis, lipschitz the second (fastest).
    np.testing.assert_array_equal(data["grid:learner.params.epsilon"], np.repeat([1.0, 10.0, np.inf], 2))
    np.testing.assert_array_equal(data["grid:learner.params.lipschitz"], np.tile([0.5, 2.0], 3))
    # One jaxpriv.sweep in chunks: its driver compiles the start, the segment and the outputs once.
    assert compiled == 3
    settings = json.loads(res.files["json"].read_text())
    assert settings["arrays"]["regret"] == ["grid", "seed", "checkpoint"]
    assert settings["grid_axes"] == [["learner.params.epsilon"], ["learner.params.lipschitz"]]
    assert {"jaxpriv", "jax", "numpy", "python", "backend"} <= set(settings["versions"])
    rows = res.files["csv"].read_text().splitlines()
    assert len(rows) == 7 and rows[0].endswith("final_regret_mean,final_regret_se,bound")
    final = data["regret"][..., -1]
    first = rows[1].split(",")
    assert float(first[3]) == pytest.approx(final[0].mean()) and float(first[5]) > float(first[3])  # Thm 4 bound
    assert float(rows[-1].split(",")[3]) < float(first[3])  # eps = inf, L = 2 beats eps = 1, L = 0.5
    for name in ("curves", "final"):
        assert res.files[name].read_bytes()[:4] == b"\x89PNG"


def test_a_study_and_a_sweep_with_the_same_seed_give_the_same_numbers_bitwise(full_run, tmp_path):
    res, _ = full_run
    # seed = 0, chunk = 4: jaxpriv.sweep(key=0, seeds=8, chunk=4) (its driver: one segment per chunk), every field.
    direct = _by_hand(0, chunk=4, segment=64)
    data = np.load(res.files["npz"])
    for name in study.FIELDS:
        if getattr(direct, name) is not None:
            np.testing.assert_array_equal(data[name], np.asarray(getattr(direct, name)), err_msg=name)
    # The one-call sweep agrees to float32 rounding; a sweep with another seed does not.
    np.testing.assert_allclose(res.regret, np.asarray(_by_hand(0).regret), rtol=1e-6, atol=1e-6)
    assert not np.array_equal(res.regret, np.asarray(_by_hand(1, chunk=4, segment=64).regret))
    # Another seed and segments of 16 steps in the file: jaxpriv.sweep with that seed, chunk and segment.
    seeded = study.run_study(
        _write(tmp_path, "small.toml", SMALL.format(extra="seed = 5\nsegment = 16")), tmp_path / "out", progress=False
    )
    np.testing.assert_array_equal(seeded.regret, np.asarray(_by_hand(5, chunk=4, segment=16).regret))
    settings = json.loads(seeded.files["json"].read_text())
    assert (settings["seed"], settings["chunk"], settings["segment"]) == (5, 4, 16)


class _Stop(Exception):
    pass


def _stop_at(n: int, calls: list):
    def hook(done: int) -> None:
        calls.append(done)
        if done == n:
            raise _Stop

    return hook


def test_an_interrupted_run_resumes_from_the_engines_save_file(full_run, tmp_path, capsys):
    res, _ = full_run
    # 2 seed chunks x 4 segments of 16 steps; stopped in the sixth segment (chunk 1), saved after the fifth.
    path = _write(tmp_path, "small.toml", SMALL.format(extra="segment = 16"))
    out = tmp_path / "out"
    calls: list[int] = []
    with pytest.raises(_Stop):
        study.run_study(path, out, progress=False, after_segment=_stop_at(6, calls))
    assert calls == [1, 2, 3, 4, 5, 6]
    # One file per sweep, jaxpriv.sweep's own save file, with the fingerprint it checks: nothing else.
    assert sorted(p.name for p in (out / "sweeps").iterdir()) == ["g0000.sweep.npz"]
    meta, _ = _resume.read(out / "sweeps" / "g0000.sweep.npz", "")
    assert (meta["chunk"], meta["segment"]) == (1, 2)  # chunk 0 done, chunk 1 saved after its second segment
    calls.clear()
    again = study.run_study(path, out, progress=False, after_segment=_stop_at(-1, calls))
    assert calls == [1, 2]  # only the segments after the saved one: chunk 0 and chunk 1's first two are not rerun
    assert (again.resumed, again.computed) == (0, 1)
    assert "0 of 1 sweeps found finished" in capsys.readouterr().out
    assert sorted(p.name for p in (out / "sweeps").iterdir()) == ["g0000.sweep.npz"]  # now the finished sweep
    full, resumed = np.load(res.files["npz"]), np.load(again.files["npz"])
    assert set(full.files) == set(resumed.files)
    for name in full.files:
        np.testing.assert_array_equal(full[name], resumed[name])
    # Finished: the next run reads the finished sweep back through jaxpriv.sweep and runs nothing.
    third = study.run_study(path, out, progress=False, after_segment=_stop_at(-1, calls))
    assert calls == [1, 2] and (third.resumed, third.computed) == (1, 0)
    assert "1 of 1 sweeps found finished" in capsys.readouterr().out
    np.testing.assert_array_equal(third.regret, res.regret)
    # A changed study file cannot silently reuse the old sweeps: jaxpriv.sweep refuses the file, naming the change.
    changed = _write(tmp_path, "small.toml", SMALL.format(extra="segment = 16\nseed = 5"))
    with pytest.raises(ValueError, match="another sweep configuration") as err:
        study.run_study(changed, out, progress=False, after_segment=lambda n: pytest.fail("computed"))
    assert "key: saved" in str(err.value) and "g0000.sweep.npz" in str(err.value)


def test_an_output_folder_of_the_old_chunk_runner_is_refused(tmp_path):
    out = tmp_path / "out"
    (out / "chunks").mkdir(parents=True)
    (out / "chunks" / "study.json").write_text("{}")
    with pytest.raises(ValueError, match="older jaxpriv") as err:
        study.run_study(_write(tmp_path, "small.toml", SMALL.format(extra="")), out, progress=False)
    assert str(out / "chunks") in str(err.value)
    assert not (out / "sweeps").exists()


def test_grid_blocks_give_the_same_numbers(full_run, tmp_path):
    res, _ = full_run
    blocked = study.run_study(
        _write(tmp_path, "small.toml", SMALL.format(extra="grid_chunk = 4")), tmp_path / "b", progress=False
    )
    assert (blocked.resumed, blocked.computed) == (0, 2)  # two sweeps: grid points 0-3, then 4-5 padded to 4
    np.testing.assert_allclose(blocked.regret, res.regret, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize(
    ("edit", "key", "message"),
    [
        (('name = "pftal"', 'name = "pftl"'), "[learner.name]", "'pftal'"),  # among the close names offered
        (("epsilon = [1.0, 10.0, inf]", "epsilon = [1.0, -10.0, inf]"), "[learner.params]", "epsilon"),
        (("lipschitz = [0.5, 2.0]", "lipschitz = [0.5, 2.0]\nzip_me = 1"), "[learner.params.zip_me]", "no field"),
        (
            ("chunk = 4", 'chunk = 4\nzip = [["learner.params.epsilon", "learner.params.lipschitz"]]'),
            "[zip]",
            "mismatched lengths",
        ),
        (("center = [0.3, 0.3]", "center = [[0.3, 0.3], [0.1]]"), "[env.params.center]", "mismatched lengths"),
        (("center = [0.3, 0.3]", "center = [0.3, 0.3, 0.3]"), "[env.params]", "center"),
        (('kind = "l2_ball"', 'kind = "l2_ball"\nradius = 0.0'), "[set]", "radius"),
        (("seeds = 8", "seeds = 8\nhorizont = 3"), "[horizont]", "unknown key"),
        (('name = "pftal"', 'name = "pftal"\nnoize = "gamma"'), "[learner.noize]", "no static argument"),
        (("chunk = 4", "chunk = 3"), "[chunk]", "must divide"),
        (("chunk = 4", "chunk = 4\nsegment = 0"), "[segment]", "integer >= 1"),
    ],
)
def test_bad_study_files_name_the_key_before_compiling(tmp_path, edit, key, message):
    text = SMALL.format(extra="")
    assert edit[0] in text
    path = _write(tmp_path, "bad.toml", text.replace(edit[0], edit[1], 1))
    before = sim.compile_count()
    with pytest.raises(ValueError) as err:
        study.load_study(path)
    assert key in str(err.value) and message in str(err.value), str(err.value)
    assert sim.compile_count() == before


def test_the_cli_reports_a_bad_file_cleanly(tmp_path, capsys):
    path = _write(tmp_path, "bad.toml", SMALL.format(extra="").replace('name = "pftal"', 'name = "pftl"'))
    assert cli.main(["sweep", str(path), "--no-compile-cache"]) == 2
    assert "[learner.name] unknown learner 'pftl'" in capsys.readouterr().err


@pytest.mark.parametrize("example", sorted(p.name for p in EXAMPLES.glob("*.toml")))
def test_example_study_files_are_valid(example):
    from jaxpriv.experiments import registry

    before = set(registry.LEARNERS)
    try:
        s = study.load_study(EXAMPLES / example)  # a file with imports = [...] registers its module's learner
    finally:  # ... for this test only (other tests list the registered learners)
        for name in set(registry.LEARNERS) - before:
            registry._LEARNERS.pop(name)
        for module in ("my_private_etc", "my_private_ogd"):
            sys.modules.pop(module, None)
    assert s.size >= 4 and s.seeds % s.chunk == 0


def test_every_run_writes_labelled_results_selected_by_name(full_run, monkeypatch, capsys):
    import argparse

    import xarray as xr

    res, _ = full_run
    data = np.load(res.files["npz"])  # [grid, seed, checkpoint], the grid row-major over (epsilon, lipschitz)
    # results.nc by default (xarray and pandas are dependencies): open it and select by label, not position
    with xr.open_dataset(res.out / "results.nc") as ds:
        assert ds.regret.dims == ("epsilon", "lipschitz", "seed", "step")
        picked = ds.regret.sel(epsilon=np.inf, lipschitz=0.5, seed=3, step=32).item()
        assert picked == data["regret"][4, 3, 1]
        np.testing.assert_array_equal(jp.tidy.from_xarray(ds.load()).regret, res.regret)
    ds = jp.open_results(res.out)  # the folder, read into memory
    np.testing.assert_array_equal(ds.loss.sel(epsilon=10.0, lipschitz=2.0).values, data["loss"][3])
    long = (res.out / "summary_long.csv").read_text().splitlines()
    assert len(long) == 1 + 6 * 3 and long[0].startswith("variable,epsilon,lipschitz,step,mean,se,n,q0.1")
    # the command line prints the table and names the files, the dataset among them
    monkeypatch.setattr(study, "run_study", lambda *a, **k: res)
    args = argparse.Namespace(study="small.toml", out=str(res.out), no_progress=True)
    assert cli.sweep(args) == 0
    printed = capsys.readouterr().out
    assert printed.startswith(res.table()) and f"{res.out / 'results.nc'}" in printed
    with pytest.raises(ValueError, match=r"neither a results\.nc file nor a folder holding one"):
        jp.open_results(res.out / "sweeps")


def test_a_study_result_prints_its_table(full_run):
    res, _ = full_run
    # str and repr (a notebook cell) give the table jaxpriv sweep prints: one line per row of summary.csv
    assert str(res) == repr(res) == res.table()
    lines = str(res).splitlines()
    assert lines[0] == "small: 6 grid points x 8 seeds x T=64" and len(lines) == 2 + len(res.summary) == 8
    for line, row in zip(lines[2:], res.summary, strict=True):
        assert line.startswith(f"epsilon={row['learner.params.epsilon']}, lipschitz={row['learner.params.lipschitz']}")
        assert f"{row['final_regret_mean']:.4g} +- " in line


def test_the_bar_shows_compiling_before_its_first_segment(full_run, tmp_path, capsys):
    # the shapes of full_run: nothing compiles again (the jit cache), but the phase is still reported, first
    study.run_study(_write(tmp_path, "small.toml", SMALL.format(extra="")), tmp_path / "bar", progress=True)
    err = capsys.readouterr().err
    assert err.index("compiling ...") < err.index("compiled in") < err.index("seed-steps/s")
