"""``jaxpriv window`` (``jaxpriv.experiments.window.run``) at a tiny scale: the files, and the noise-off limits."""

import csv
import json

import numpy as np

from jaxpriv import cli


def test_window_command_writes_the_figure_and_the_noise_off_limits_hold(tmp_path):
    argv = ["window", "--no-compile-cache", "--out", str(tmp_path), "--horizon", "64", "--dim", "3", "--windows", "2"]
    argv += ["--seeds", "3"]
    assert cli.main([*argv, "--epsilon", "inf"]) == 0
    for name in ("results.npz", "settings.json", "summary.csv", "window.png"):
        assert (tmp_path / name).stat().st_size > 0
    final = json.loads((tmp_path / "settings.json").read_text())["final_regret"]
    assert set(final) == {"WDP-COCOP W=2", "WDP-COCOL W=2", "PFTAL (W=T)", "FTAL", "Garber-Hazan", "online Frank-Wolfe"}
    data = np.load(tmp_path / "results.npz")
    regret = {k: data[k] for k in data.files if k != "steps"}
    assert regret["WDP-COCOP_W=2"].shape == (3, data["steps"].size)
    # With the noise off, on the same seeds: WDP-COCOP and PFTAL are FTAL (the clips are not active), and
    # WDP-COCOL is the Garber-Hazan online algorithm (oco.garber_hazan, a separate code path: exact sums, N = 0).
    np.testing.assert_allclose(regret["WDP-COCOP_W=2"], regret["FTAL"], rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(regret["PFTAL_(W=T)"], regret["FTAL"], rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(regret["WDP-COCOL_W=2"], regret["Garber-Hazan"], rtol=1e-4, atol=1e-4)
    assert not np.allclose(regret["Garber-Hazan"], regret["FTAL"], atol=1e-2)  # a different algorithm


def test_window_run_gives_each_learner_exactly_its_family_budget(tmp_path):
    """Finite ε, both families: the WDP learners get δ only for the Gaussian option, PFTAL ε or ρ = ε²/2 only."""
    from jaxpriv.experiments import window

    for noise in ("gamma", "gaussian"):
        summary = window.run(tmp_path / noise, horizon=16, dim=2, windows=(2,), epsilon=1.0, noise=noise, seeds=2)
        assert all(np.isfinite(v["mean_final_regret"]) for v in summary.values()), summary
        settings = json.loads((tmp_path / noise / "settings.json").read_text())
        assert settings["noise"] == noise and settings["final_regret"] == summary
        assert {"jaxpriv", "jax", "numpy", "python", "backend"} <= set(settings["versions"])
        with (tmp_path / noise / "summary.csv").open() as f:  # the same table, one row per learner, unrounded
            table = {r.pop("learner"): {k: float(v) for k, v in r.items()} for r in csv.DictReader(f)}
        assert table == summary
