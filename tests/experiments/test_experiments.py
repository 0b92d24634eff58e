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
from jaxpriv.experiments import zcdp_bandits

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
    assert {"finite", "linear", "contextual"} <= set(zcdp_bandits.SETTINGS)


def test_demo_writes_its_three_files(tmp_path, capsys):
    args = ["demo", "--horizon", "64", "--seeds", "4", "--epsilons", "1", "inf", "--out", str(tmp_path)]
    assert cli.main([*args, "--no-compile-cache"]) == 0
    assert "Final regret at T=64" in capsys.readouterr().out
    data = np.load(tmp_path / "results.npz")
    assert data["pftal"].shape[:2] == (2, 4) and data["ogd"].shape[:2] == (1, 4)
    # PFTAL at eps = inf plays FTAL's points on the same seeds (up to float32 rounding: the demo's FTAL is
    # anytime, its dyadic sums deeper): the moved demo wires the same stream and keys to every learner.
    np.testing.assert_allclose(data["pftal"][1], data["ftal"][0], rtol=1e-4, atol=1e-4)
    assert np.all(data["pftal"][0, :, -1] > data["ftal"][0, :, -1])  # eps = 1 costs regret on every seed
    settings = json.loads((tmp_path / "settings.json").read_text())
    assert settings["horizon"] == 64 and settings["nonfinite_warnings"] == {}
    assert {"jaxpriv", "jax", "numpy", "python", "backend"} <= set(settings["versions"])
    # summary.csv is the final-regret table of settings.json (one writer: experiments._outputs), unrounded.
    with (tmp_path / "summary.csv").open() as f:
        table = list(csv.DictReader(f))
    labels = [(r["algorithm"], r["epsilon"]) for r in settings["table"]]
    assert [(r["algorithm"], r["epsilon"]) for r in table] == labels
    assert [float(r["mean"]) for r in table] == [r["mean"] for r in settings["table"]]
    assert [float(r["se"]) for r in table] == [r["se"] for r in settings["table"]]
    final = data["pftal"][0, :, -1].astype(np.float64)
    assert settings["table"][-2]["mean"] == final.mean() and settings["table"][-2]["se"] == final.std(ddof=1) / 2
    assert (tmp_path / "regret.png").read_bytes()[:4] == b"\x89PNG"
