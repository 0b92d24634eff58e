"""The pure-DP baselines comparison ([N22] Figure 2): files, the table, the ordering, the CLI."""

import csv
import json

import numpy as np
import pytest

from jaxpriv import cli
from jaxpriv.experiments import baselines


def _row(table, name, T):
    (row,) = [r for r in table if r["algorithm"] == name and r["T"] == T]
    return row


def test_compare_writes_files_and_orders_adap_below_dp_se(tmp_path):
    # T = 10⁴, 20 runs: AdaP-KLUCB 603 +- 19, AdaP-UCB 718 +- 24 (paired difference 115 +- 28),
    # DP-SE 2152 +- 10 (key 0). The step-level algorithms are cut to T = 200 to keep the test short.
    T, T_step = 10**4, 200
    res = baselines.compare(tmp_path, seeds=20, key=0, horizon=T, step_horizon=T_step)
    for path in res.files.values():
        assert path.exists() and path.stat().st_size > 0
    names = [a.name for a in baselines.ALGORITHMS]
    # One row per algorithm at T (the fast simulators), and one per algorithm at the step horizon.
    assert {(r["algorithm"], r["T"]) for r in res.table} == {
        *((a.name, T) for a in baselines.ALGORITHMS if a.level != "step"),
        *((name, T_step) for name in names),
    }
    with res.files["csv"].open() as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == len(res.table)
    assert list(rows[0]) == ["algorithm", "T", "mean", "se", "ratio", "ratio_se", "diff", "diff_se"]
    settings = json.loads(res.files["json"].read_text())
    assert settings["runs"] == 20 and settings["horizon"] == T
    assert "versions" in settings
    assert set(settings["capped"]) == {a.name for a in baselines.ALGORITHMS if a.level == "step"}
    data = np.load(res.files["npz"])
    # DP-SE is not anytime: it is run again to the step horizon for the comparison there.
    assert list(data["rerun_algorithms"]) == ["DP-SE"] and data["rerun_regret"].shape == (1, 20)
    assert data["regret"].shape == (len(names), 20, data["steps"].size)
    assert list(data["algorithms"]) == names
    step_rows = data["horizons"] == T_step
    assert np.isnan(data["regret"][step_rows][..., data["steps"] > T_step]).all()
    assert np.isfinite(data["regret"][~step_rows]).all()

    klucb, ucb, dp_se = (_row(res.table, n, T) for n in ("AdaP-KLUCB", "AdaP-UCB", "DP-SE"))
    assert klucb["ratio"] == 1.0 and klucb["diff"] == 0.0
    # AdaP-KLUCB <= AdaP-UCB < DP-SE, each beyond 3 paired SEs.
    assert ucb["diff"] > 3 * ucb["diff_se"]
    assert dp_se["diff"] - ucb["diff"] > 3 * (dp_se["se"] + ucb["se"])
    assert dp_se["ratio"] - 3 * dp_se["ratio_se"] > ucb["ratio"] + 3 * ucb["ratio_se"] > 1.0
    assert ucb["ratio"] == pytest.approx(ucb["mean"] / klucb["mean"])


def test_compare_refuses_bad_arguments(tmp_path):
    with pytest.raises(ValueError, match="seeds"):
        baselines.compare(tmp_path, seeds=1)
    with pytest.raises(ValueError, match="step_horizon"):
        baselines.compare(tmp_path, seeds=2, horizon=100, step_horizon=200)


def test_cli_writes_the_files(tmp_path, capsys, monkeypatch):
    # The wiring, not the algorithms (the test above runs them all): two episode-level ones compile fast.
    monkeypatch.setattr(baselines, "ALGORITHMS", baselines.ALGORITHMS[:2])
    out = tmp_path / "cli"
    argv = ["baselines", "--out", str(out), "--seeds", "2", "--horizon", "200", "--no-compile-cache"]
    assert cli.main(argv) == 0
    for name in ("baselines_regret.png", "baselines_results.npz", "baselines_settings.json", "baselines_table.csv"):
        assert (out / name).exists()
    assert "AdaP-KLUCB" in capsys.readouterr().out
    assert cli.main(["baselines", "--out", str(out), "--seeds", "1", "--no-compile-cache"]) == 2
