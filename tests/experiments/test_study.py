"""``jaxpriv sweep study.toml``: the five outputs, the API's compiled sweep, resume after an interruption, and
clear errors naming the key in the file."""

import json
from pathlib import Path

import jax
import numpy as np
import pytest

import jaxpriv as jp
from jaxpriv import cli, envs, oco, sets, sim
from jaxpriv.experiments import study

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
    before = sim.compile_count("sweep")
    res = study.run_study(_write(tmp, "small.toml", SMALL.format(extra="")), tmp / "full", progress=False)
    return res, sim.compile_count("sweep") - before


def test_writes_five_outputs_with_the_apis_numbers(full_run):
    res, compiled = full_run
    assert set(res.files) == {"npz", "json", "csv", "curves", "final"}
    data = np.load(res.files["npz"])
    assert data["regret"].shape == (6, 8, 3) and list(data["steps"]) == [16, 32, 64]
    # The product grid, row-major: epsilon is the first axis, lipschitz the second (fastest).
    np.testing.assert_array_equal(data["grid:learner.params.epsilon"], np.repeat([1.0, 10.0, np.inf], 2))
    np.testing.assert_array_equal(data["grid:learner.params.lipschitz"], np.tile([0.5, 2.0], 3))
    # Seed chunk 1 is jaxpriv.sweep with key fold_in(key(0), 1) on the same zipped grid: the same numbers.
    ball = sets.l2_ball(2)
    params = jp.SimParams(
        oco.PFTALParams(epsilon=np.repeat([1.0, 10.0, np.inf], 2), lipschitz=np.tile([0.5, 2.0], 3)),
        envs.QuadraticParams(center=np.array([0.3, 0.3])),
    )
    key = jax.random.fold_in(jax.random.key(0), 1)
    direct = jp.sweep(oco.pftal(64, ball), envs.quadratic_stream(ball), params, key, 64, 4, [16, 32])
    np.testing.assert_array_equal(data["regret"][:, 4:], np.asarray(direct.regret))
    # Only traced values change between chunks: one compilation for the whole study.
    assert compiled == 1
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


class _Stop(Exception):
    pass


def _stop_after_first(done: int) -> None:
    if done == 1:
        raise _Stop


def test_an_interrupted_run_resumes_to_the_same_arrays(full_run, tmp_path, capsys):
    res, _ = full_run
    path = _write(tmp_path, "small.toml", SMALL.format(extra=""))
    with pytest.raises(_Stop):
        study.run_study(path, tmp_path / "out", progress=False, after_chunk=_stop_after_first)
    assert len(list((tmp_path / "out" / "chunks").glob("g*_s*.npz"))) == 1
    again = study.run_study(path, tmp_path / "out", progress=False)
    assert (again.resumed, again.computed) == (1, 1)
    assert "resuming small: 1 of 2 chunks" in capsys.readouterr().out
    full, resumed = np.load(res.files["npz"]), np.load(again.files["npz"])
    assert set(full.files) == set(resumed.files)
    for name in full.files:
        np.testing.assert_array_equal(full[name], resumed[name])
    # A changed study file cannot silently reuse the old chunks.
    changed = _write(tmp_path, "small.toml", SMALL.format(extra="seed = 5"))
    with pytest.raises(ValueError, match="different study"):
        study.run_study(changed, tmp_path / "out", progress=False)


def test_grid_blocks_give_the_same_numbers(full_run, tmp_path):
    res, _ = full_run
    blocked = study.run_study(
        _write(tmp_path, "small.toml", SMALL.format(extra="grid_chunk = 4")), tmp_path / "b", progress=False
    )
    np.testing.assert_allclose(blocked.regret, res.regret, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize(
    ("edit", "key", "message"),
    [
        (('name = "pftal"', 'name = "pftl"'), "[learner.name]", "did you mean 'pftal'"),
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
    s = study.load_study(EXAMPLES / example)
    assert s.size >= 4 and s.seeds % s.chunk == 0


def test_the_cli_writes_tidy_results_beside_the_npz_or_says_why_not(full_run, monkeypatch, capsys):
    import argparse

    xr = pytest.importorskip("xarray")
    pytest.importorskip("pandas")
    res, _ = full_run
    monkeypatch.setattr(study, "run_study", lambda *a, **k: res)
    args = argparse.Namespace(study="small.toml", out=str(res.out), no_progress=True)
    assert cli.sweep(args) == 0
    assert f"{res.out / 'results.nc'}" in capsys.readouterr().out
    with xr.open_dataset(res.out / "results.nc", engine="scipy") as ds:
        assert ds.regret.dims == ("epsilon", "lipschitz", "seed", "step")
        np.testing.assert_array_equal(ds.epsilon.values, [1.0, 10.0, np.inf])
        np.testing.assert_array_equal(jp.tidy.from_xarray(ds.load()).regret, res.regret)
    long = (res.out / "summary_long.csv").read_text().splitlines()
    assert len(long) == 1 + 6 * 3 and long[0].startswith("variable,epsilon,lipschitz,step,mean,se,n,q0.1")

    def missing(_):
        raise ImportError("jaxpriv.tidy needs xarray and pandas: pip install 'jaxpriv[tidy]'")

    monkeypatch.setattr(study, "write_tidy", missing)
    assert cli.sweep(args) == 0
    assert "not written: they need xarray and pandas" in capsys.readouterr().out
