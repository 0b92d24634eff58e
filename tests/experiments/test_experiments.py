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


def test_demo_runs_the_shipped_study_with_its_options(tmp_path, capsys):
    # jaxpriv demo is the shipped study file "demo" with the command's options over the file's keys.
    args = ["demo", "--horizon", "64", "--seeds", "4", "--epsilons", "1", "inf", "--out", str(tmp_path)]
    assert cli.main([*args, "--no-compile-cache", "--no-progress"]) == 0
    assert "demo: 3 learners x 2 grid points x 4 seeds x T=64" in capsys.readouterr().out
    data = np.load(tmp_path / "results.npz")
    labels = list(data["learners"])
    assert labels == ["PFTAL", "FTAL", "OGD (eta=1/(Ht))"] and data["regret"].shape[:3] == (3, 2, 4)
    pftal, ftal = data["regret"][0], data["regret"][1]
    # PFTAL at eps = inf plays FTAL's points on the same seeds (up to float32 rounding: FTAL is anytime, its
    # dyadic sums deeper): the file wires the same stream and keys to every learner.
    np.testing.assert_allclose(pftal[1], ftal[0], rtol=1e-4, atol=1e-4)
    assert np.all(pftal[0, :, -1] > ftal[0, :, -1])  # eps = 1 costs regret on every seed
    settings = json.loads((tmp_path / "settings.json").read_text())
    assert settings["horizon"] == 64 and settings["grid"]["grid.epsilon"] == [1.0, np.inf]
    assert {"jaxpriv", "jax", "numpy", "python", "backend"} <= set(settings["versions"])
    with (tmp_path / "summary.csv").open() as f:
        table = list(csv.DictReader(f))
    final = pftal[0, :, -1].astype(np.float64)
    assert float(table[0]["final_regret_mean"]) == final.mean()
    assert float(table[0]["final_regret_se"]) == final.std(ddof=1) / 2
    assert float(table[0]["bound"]) > final.mean()  # Theorem 4's bound, above the measured regret
