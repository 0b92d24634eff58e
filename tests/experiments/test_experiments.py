"""The experiment layer: its home, the library's independence from it, the moved names, the demo's files."""

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

import jaxpriv
from jaxpriv import cli
from jaxpriv.experiments import study

ROOT = Path(__file__).resolve().parents[2]


def _env() -> dict:
    return {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}


def test_library_never_imports_the_experiment_layer():
    # Importing jaxpriv and every library subpackage loads no module of jaxpriv.experiments.
    code = (
        "import sys, jaxpriv, jaxpriv.tune, jaxpriv.bandits, jaxpriv.oco, jaxpriv.envs, jaxpriv.mechanisms;"
        "print(sorted(m for m in sys.modules if m.startswith('jaxpriv.experiments')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=_env(), check=True)
    assert out.stdout.strip() == "[]"


def test_the_reproductions_live_in_the_experiments_only():
    for name in ("reproduce", "experiment", "experiment_linear"):  # the old names, removed in issue 37
        assert not hasattr(jaxpriv.bandits, name)
    assert {"zcdp_bandits_finite", "zcdp_bandits_linear", "zcdp_bandits_contextual"} <= set(study.shipped_studies())


def _refuse(token: str) -> None:
    raise ValueError(f"not JSON: {token}")


def test_demo_runs_the_shipped_study_with_its_options(tmp_path, capsys):
    # jaxpriv demo is the shipped study file "demo" with the command's options over the file's keys.
    args = ["demo", "--horizon", "64", "--seeds", "4", "--epsilons", "1", "inf", "--out", str(tmp_path)]
    assert cli.main([*args, "--no-compile-cache", "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert "demo: 3 learners x 2 grid points x 4 seeds x T=64" in printed
    # FTAL and OGD have no epsilon: one row each, not one per epsilon; OGD - FTAL is float32 round-off (one row,
    # shown as 0 and flagged), PFTAL - FTAL a measured difference per epsilon
    lines = printed.splitlines()
    assert [line.split()[0] for line in lines if line.startswith(("FTAL", "OGD"))] == ["FTAL", "OGD", "OGD"]
    (ogd,) = [line for line in lines if line.startswith("OGD (eta=1/(Ht)) - FTAL")]
    assert "within float32 round-off" in ogd and "epsilon" not in ogd
    assert sum("PFTAL - FTAL: epsilon=1 " in line and "paired SE" in line for line in lines) == 1
    data = np.load(tmp_path / "results.npz")
    labels = list(data["learners"])
    assert labels == ["PFTAL", "FTAL", "OGD (eta=1/(Ht))"] and data["regret"].shape[:3] == (3, 2, 4)
    pftal, ftal = data["regret"][0], data["regret"][1]
    # PFTAL at eps = inf plays FTAL's points on the same seeds (up to float32 rounding: FTAL is anytime, its
    # dyadic sums deeper): the file wires the same stream and keys to every learner.
    np.testing.assert_allclose(pftal[1], ftal[0], rtol=1e-4, atol=1e-4)
    assert np.all(pftal[0, :, -1] > ftal[0, :, -1])  # eps = 1 costs regret on every seed
    settings = json.loads((tmp_path / "settings.json").read_text(), parse_constant=_refuse)  # strict JSON
    assert settings["horizon"] == 64 and settings["grid"]["grid.epsilon"] == [1.0, "inf"]
    assert settings["file"] == "jaxpriv/experiments/studies/demo.toml"  # the shipped file, the same on every install
    assert sorted(p.name for p in tmp_path.iterdir()) == [  # what README and getting_started list
        "final_regret.png", "paired.csv", "paired.png", "regret.png", "results.nc", "results.npz", "settings.json",
        "summary.csv", "summary_long.csv", "sweeps",
    ]  # fmt: skip
    assert {"jaxpriv", "jax", "numpy", "python", "backend"} <= set(settings["versions"])
    # the labelled dataset, written by default: select by learner, budget, seed and step by name
    ds = jaxpriv.open_results(tmp_path)
    assert ds.regret.dims == ("learner", "epsilon", "seed", "step") and list(ds.learner.values) == labels
    final = ds.regret.sel(learner="PFTAL", epsilon=np.inf, seed=2, step=64).item()
    assert final == pftal[1, 2, -1]
    np.testing.assert_array_equal(ds.regret.sel(learner="FTAL", epsilon=1.0).values, ftal[0])
    with (tmp_path / "summary.csv").open() as f:
        table = list(csv.DictReader(f))
    final = pftal[0, :, -1].astype(np.float64)
    assert float(table[0]["final_regret_mean"]) == final.mean()
    assert float(table[0]["final_regret_se"]) == final.std(ddof=1) / 2
    assert float(table[0]["bound"]) > final.mean()  # Theorem 4's bound, above the measured regret


def test_options_are_never_abbreviated_and_an_unknown_one_gets_a_did_you_mean(capsys):
    # argparse's abbreviation took --smok as --smoke silently; an unknown option named no neighbour
    for command in (["demo", "--smok"], ["sweep", "demo", "--smok"], ["window", "--smok"], ["demo", "--horizn", "5"]):
        try:
            cli.main(command)
        except SystemExit as err:
            assert err.code == 2
        else:
            raise AssertionError(f"{command} was accepted")
        message = capsys.readouterr().err.splitlines()[-1]
        wanted = "--smoke" if "--smok" in command else "--horizon"
        assert message.startswith(f"jaxpriv {command[0]}: error: unrecognized arguments: ")
        assert f"(did you mean {wanted}?)" in message


def test_every_argument_parser_refuses_abbreviations():
    # the benchmarks' scripts too: each ArgumentParser(...) call says allow_abbrev=False (the CLI's through _Parser)
    root = Path(__file__).resolve().parents[2]
    calls = [
        (path, line)
        for folder in ("jaxpriv", "benchmarks")
        for path in sorted((root / folder).rglob("*.py"))
        for line in path.read_text().splitlines()
        if "ArgumentParser(" in line and "class " not in line
    ]
    assert calls and all("allow_abbrev=False" in line or "_Parser(" in line for _, line in calls), calls
