"""The baselines' other experiments: AdaP-KLUCB against ε ([N22] Fig. 3), AdaC-GOPE vs -Var, DP-FTRL vs PFTAL."""

import json

import numpy as np
import pytest

from jaxpriv import bandits, cli
from jaxpriv.experiments import baselines_epsilon, baselines_gope, baselines_oco


@pytest.fixture(scope="module")
def eps_sweep(tmp_path_factory):
    # T = 10⁵, 20 runs, the default grid (0.01 ... 10, inf): one compiled call, ~3 s.
    return baselines_epsilon.sweep_epsilon(tmp_path_factory.mktemp("eps"), horizon=10**5, seeds=20, key=0)


def test_epsilon_sweep_files_and_the_lower_bound(eps_sweep):
    for path in eps_sweep.files.values():
        assert path.exists() and path.stat().st_size > 0
    data = np.load(eps_sweep.files["npz"])
    eps, finals = data["epsilons"], data["final_regret"]
    assert finals.shape == (len(baselines_epsilon.EPSILONS), 20)
    np.testing.assert_allclose(
        data["lower_bound"], [bandits.adap_lower_bound(baselines_epsilon.MEANS, 10**5, e) for e in eps]
    )
    # Theorem 3 bounds every consistent ε-DP policy from below: the measured regret is above it at every ε.
    for row in eps_sweep.table:
        assert row["mean"] - 3 * row["se"] > row["lower_bound"], row
    settings = json.loads(eps_sweep.files["json"].read_text())
    assert settings["horizon"] == 10**5 and settings["runs"] == 20 and "versions" in settings


def test_epsilon_sweep_shows_the_two_regimes(eps_sweep):
    rows = {r["epsilon"]: r for r in eps_sweep.table}
    # More privacy, more regret: paired differences to the ε = ∞ run on the same seed keys.
    for e in (0.05, 1.0, 10.0):
        assert rows[e]["diff_to_nonprivate"] > 3 * rows[e]["diff_to_nonprivate_se"], rows[e]
    assert rows[np.inf]["diff_to_nonprivate"] == 0.0
    # High-privacy regime: Theorem 8 (and Theorem 3) scale as log T / ε, so the log-log slope of the
    # regret against ε is -1. The doubling episodes make a sub-optimal arm's pulls powers of two, so the
    # regret moves in factors of 2 and the fit over ε = 0.05, 0.1, 0.2 is within 0.15 of -1 (measured -0.97).
    e = np.array([0.05, 0.1, 0.2])
    slope = np.polyfit(np.log(e), np.log([rows[x]["mean"] for x in e]), 1)[0]
    assert abs(slope + 1.0) < 0.15, slope
    # The regimes meet where the index's privacy shift α log t / (ε n) stops mattering: ε ≈ kl/Δ (= 1.64),
    # six times Theorem 3's kl/(6Δ) (= 0.27); the measured knee lies within a factor 2 of the former.
    knee = eps_sweep.knee
    assert knee["index"] == pytest.approx(6 * knee["theory"])
    assert knee["index"] / 2 < knee["measured"] < 2 * knee["index"], knee


def test_knee_helpers_and_bad_arguments(tmp_path):
    # B/ε meets A: regrets 100/ε at small ε and a plateau of 20 give the knee 5.
    eps = np.array([0.01, 0.02, 1.0, np.inf])
    finals = np.array([[1e4, 1e4], [5e3, 5e3], [30.0, 30.0], [20.0, 20.0]])
    assert baselines_epsilon.knee(eps, finals) == pytest.approx(5.0)
    assert baselines_epsilon.theoretical_knee((0.8, 0.1)) == pytest.approx(
        (0.1 * np.log(0.1 / 0.8) + 0.9 * np.log(0.9 / 0.2)) / (6 * 0.7)
    )
    with pytest.raises(ValueError, match="epsilons"):
        baselines_epsilon.sweep_epsilon(tmp_path, seeds=2, horizon=100, epsilons=(1.0, 2.0))
    with pytest.raises(ValueError, match="seeds"):
        baselines_gope.compare_gope(tmp_path, seeds=1)
    with pytest.raises(ValueError, match="epsilons"):
        baselines_oco.compare_oco(tmp_path, seeds=2, horizon=16, epsilons=(np.inf,))


def test_gope_comparison_pairs_the_seeds(tmp_path):
    # At ρ = ∞ both algorithms are GOPE on the same seed keys: the paired difference is exactly 0, seed by
    # seed (common random numbers: same instance, same reward sums). At ρ = 1 the noise differs (smaller ρ
    # makes the first phase outlast T = 10⁴: no phase closes, no noise is drawn).
    res = baselines_gope.compare_gope(tmp_path, seeds=6, horizon=10**4, rhos=(1.0, np.inf))
    for path in res.files.values():
        assert path.exists() and path.stat().st_size > 0
    data = np.load(res.files["npz"])
    np.testing.assert_array_equal(data["adac_gope"][1], data["adac_gope_var"][1])
    assert res.table[1]["diff"] == 0.0 and res.table[1]["diff_se"] == 0.0
    assert not np.array_equal(data["adac_gope"][0], data["adac_gope_var"][0])
    d = data["adac_gope_var"][0, :, -1] - data["adac_gope"][0, :, -1]
    assert res.table[0]["diff"] == pytest.approx(d.mean())
    assert res.table[0]["diff_se"] == pytest.approx(d.std(ddof=1) / np.sqrt(6))


def test_oco_comparison_blt_beats_the_tree_on_shared_seeds(tmp_path, monkeypatch):
    # The quadratic stream only (the logistic comparator compiles slowly); T = 128, 8 runs, ε = 1.
    monkeypatch.setattr(baselines_oco, "STREAMS", ("quadratic",))
    res = baselines_oco.compare_oco(tmp_path, seeds=8, horizon=128, epsilons=(1.0,))
    data = np.load(res.files["npz"])
    tree, blt = baselines_oco.MECHANISMS
    for row in res.table:
        f = data[f"quadratic|DP-FTRL|{row['mechanism']}"][0, :, -1]
        p = data[f"quadratic|PFTAL|{row['mechanism']}"][0, :, -1]
        assert row["diff"] == pytest.approx((f - p).mean(), rel=1e-6)
        assert row["diff_se"] == pytest.approx((f - p).std(ddof=1) / np.sqrt(8), rel=1e-6)
    # BLT at ρ = ε²/2 against the ε-DP tree, each learner on the same seed keys: lower, by > 3 paired SEs.
    for learner in baselines_oco.LEARNERS:
        d = data[f"quadratic|{learner}|{blt}"][0, :, -1] - data[f"quadratic|{learner}|{tree}"][0, :, -1]
        assert d.mean() + 3 * d.std(ddof=1) / np.sqrt(d.size) < 0, (learner, d)
    settings = json.loads(res.files["json"].read_text())
    assert "rho = eps^2/2" in settings["budget_matching"]


def test_cli_runs_the_other_experiments(tmp_path, capsys):
    out = tmp_path / "eps"
    argv = ["baselines", "--experiment", "epsilon", "--out", str(out), "--seeds", "2", "--horizon", "500"]
    assert cli.main([*argv, "--no-compile-cache"]) == 0
    assert (out / "baselines_epsilon.png").exists()
    assert "knee" in capsys.readouterr().out
