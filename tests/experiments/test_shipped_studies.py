"""Every shipped study file at its [smoke] scale, checked for the conclusions its reproduction draws (orderings,
slopes, paired differences with their SEs): the files that replaced the hand-written reproduction scripts."""

import csv
import json

import numpy as np
import pytest

from jaxpriv import bandits
from jaxpriv.experiments import study
from jaxpriv.experiments.study_file import load_study


def _rows(table, **match):
    return [r for r in table if all(r[k] == v for k, v in match.items())]


@pytest.mark.parametrize("name", sorted(study.shipped_studies()))
def test_every_shipped_file_parses_at_both_scales(name):
    path = study.shipped_studies()[name]
    full, smoke = load_study(path), load_study(path, smoke=True)
    assert smoke.smoke and (smoke.horizon, smoke.seeds) <= (full.horizon, full.seeds)
    assert set(smoke.labels) <= set(full.labels)


def test_dp_ftrl_vs_pftal_blt_beats_the_tree_on_shared_seeds(tmp_path):
    # baselines --experiment oco (quadratic stream), T = 128, 8 runs, eps = 1 (BLT at rho = 1/2).
    res = study.run_study("dp_ftrl_vs_pftal_quadratic", tmp_path, progress=False, smoke=True)
    final = res.regret[..., -1].astype(np.float64)  # [L, G, S]
    labels = list(res.study.labels)
    for table, learner, reference in (
        (res.paired, "DP-FTRL (tree)", "PFTAL (tree)"),
        (res.tables["dp_ftrl_minus_pftal_blt"], "DP-FTRL (BLT)", "PFTAL (BLT)"),
    ):
        (row,) = _rows(table, learner=learner)
        d = final[labels.index(learner), 0] - final[labels.index(reference), 0]
        assert row["difference_mean"] == pytest.approx(d.mean(), rel=1e-6)
        assert row["difference_se"] == pytest.approx(d.std(ddof=1) / np.sqrt(8), rel=1e-6)
    # BLT at rho = eps^2/2 against the eps-DP tree, each learner on the same seed keys: lower, by > 3 paired SEs.
    (pftal,) = _rows(res.paired, learner="PFTAL (BLT)")
    (ftrl,) = res.tables["blt_vs_tree_dp_ftrl"]
    for row in (pftal, ftrl):
        assert row["difference_mean"] + 3 * row["difference_se"] < 0, row


def test_adap_klucb_against_epsilon_two_regimes_and_the_knee(tmp_path):
    # baselines --experiment epsilon ([N22] Fig. 3) at T = 10^5, 20 runs: one compiled episode simulation.
    res = study.run_study("adap_klucb_epsilon", tmp_path, progress=False, smoke=True)
    rows = {r["epsilon"]: r for r in res.tables["knee"]}
    means = (0.8, 0.1, 0.1, 0.1, 0.1)
    for e, row in rows.items():  # Theorem 3 bounds every consistent eps-DP policy from below
        assert row["bound"] == pytest.approx(bandits.adap_lower_bound(means, 10**5, e))
        assert row["mean"] - 3 * row["se"] > row["bound"], row
    for e in (0.05, 1.0, 10.0):  # more privacy, more regret: paired differences to eps = inf on the same keys
        assert rows[e]["diff_to_nonprivate"] > 3 * rows[e]["diff_to_nonprivate_se"], rows[e]
    assert rows[np.inf]["diff_to_nonprivate"] == 0.0
    # high-privacy regime: regret ~ log T / eps, a log-log slope of -1 (the doubling episodes: within 0.15)
    e = np.array([0.05, 0.1, 0.2])
    slope = np.polyfit(np.log(e), np.log([rows[x]["mean"] for x in e]), 1)[0]
    assert abs(slope + 1.0) < 0.15, slope
    # the measured knee B/A lies within a factor 2 of the index's kl/Delta (= 6 x Theorem 3's kl/(6 Delta))
    knee = rows[np.inf]
    assert knee["knee_index"] == pytest.approx(6 * knee["knee_lower_bound"])
    assert knee["knee_index"] / 2 < knee["knee_measured"] < 2 * knee["knee_index"], knee
    assert (tmp_path / "knee.png").exists() and (tmp_path / "knee.csv").exists()


def test_window_privacy_costs_less_than_full_stream_privacy_and_the_noise_off_limits(tmp_path):
    # jaxpriv window at T = 64, d = 5, W = 2, 3 runs, eps = 1: window privacy (tree depth k_W = 2) below PFTAL's
    # full-stream tree on the same seed keys, by more than 3 paired SEs. The file's eps = 1 and the noise off
    # (eps = inf) in one run: a grid of the two budgets (traced: one compiled sweep per learner for both).
    def eps_grid(raw):
        for table in raw["learners"]:
            table.get("params", {}).pop("epsilon", None)
        return raw | {"grid": {"epsilon": [1.0, float("inf")]}}

    res = study.run_study("window_privacy", tmp_path, progress=False, smoke=True, edit=eps_grid)
    assert res.study.grid["grid.epsilon"].tolist() == [1.0, float("inf")]
    final = {label: res.regret[i, 0, :, -1].astype(np.float64) for i, label in enumerate(res.study.labels)}
    d = final["PFTAL (W=T)"] - final["WDP-COCOP W=2"]
    assert d.mean() > 3 * d.std(ddof=1) / np.sqrt(d.size), d
    rows = {r["learner"]: r for r in res.tables["window"]}
    assert rows["WDP-COCOP W=2"]["window"] == 2 and rows["FTAL"]["window"] == ""

    # With the noise off (eps = inf), on the same seeds: WDP-COCOP and PFTAL are FTAL (the clips are not active),
    # WDP-COCOL is the Garber-Hazan online algorithm (a separate code path: exact sums, N = 0).
    regret = {label: res.regret[i, 1] for i, label in enumerate(res.study.labels)}
    np.testing.assert_allclose(regret["WDP-COCOP W=2"], regret["FTAL"], rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(regret["PFTAL (W=T)"], regret["FTAL"], rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(regret["WDP-COCOL W=2"], regret["Garber-Hazan"], rtol=1e-4, atol=1e-4)
    assert not np.allclose(regret["Garber-Hazan"], regret["FTAL"], atol=1e-2)  # a different algorithm


def test_adac_gope_against_var_pairs_the_seeds(tmp_path):
    # At rho = inf both are GOPE on the same seed keys: the paired difference is exactly 0, seed by seed (the same
    # instance, the same reward sums). At rho = 1 the noise differs.
    res = study.run_study("adac_gope_vs_var", tmp_path, progress=False, smoke=True)
    base, var = res.regret[0], res.regret[1]  # [G, S, m]
    np.testing.assert_array_equal(base[1], var[1])
    assert not np.array_equal(base[0], var[0])
    rows = {r["grid.rho"]: r for r in res.paired}
    assert rows["inf"]["difference_mean"] == 0.0 and rows["inf"]["difference_se"] == 0.0
    d = var[0, :, -1].astype(np.float64) - base[0, :, -1]
    assert rows["1"]["difference_mean"] == pytest.approx(d.mean())
    assert rows["1"]["difference_se"] == pytest.approx(d.std(ddof=1) / np.sqrt(6))


def test_the_moved_experiments_name_their_study_files(tmp_path, capsys):
    from jaxpriv import cli

    for experiment, name in (
        ("epsilon", "adap_klucb_epsilon"), ("oco", "dp_ftrl_vs_pftal_quadratic"), ("gope", "adac_gope_vs_var"),
    ):  # fmt: skip
        argv = ["baselines", "--experiment", experiment, "--out", str(tmp_path / experiment), "--no-compile-cache"]
        assert cli.main(argv) == 2
        err = capsys.readouterr().err
        assert f"jaxpriv baselines: error: --experiment {experiment} is the shipped study {name}" in err


def test_pure_dp_bandits_order_adap_below_dp_se_with_paired_ratios(tmp_path):
    # [N22] Fig. 2 at T = 10^4, 20 runs: AdaP-KLUCB lowest of the eps-DP algorithms, then AdaP-UCB, DP-SE far above.
    res = study.run_study("pure_dp_bandits", tmp_path, progress=False, smoke=True)
    rows = {r["learner"]: r for r in res.paired}
    summary = {r["learner"]: r for r in res.summary}
    ucb, dp_se = rows["AdaP-UCB"], rows["DP-SE"]
    assert ucb["difference_mean"] > 3 * ucb["difference_se"]
    assert dp_se["ratio"] - 3 * dp_se["ratio_se"] > ucb["ratio"] + 3 * ucb["ratio_se"] > 1.0
    assert ucb["ratio"] == pytest.approx(
        summary["AdaP-UCB"]["final_regret_mean"] / summary["AdaP-KLUCB"]["final_regret_mean"]
    )
    for name in ("DP-UCB (tree)", "LDP-UCB"):  # the step-level ones, above AdaP-KLUCB too
        assert rows[name]["difference_mean"] > 3 * rows[name]["difference_se"], rows[name]
    # zCDP at the matched rho = eps^2/2 is a weaker guarantee: AdaC-UCB far below
    assert rows["AdaC-UCB (rho=eps^2/2)"]["ratio"] + 3 * rows["AdaC-UCB (rho=eps^2/2)"]["ratio_se"] < 1.0
    # AdaP-UCB < DP-SE by more than 3 of their SEs; every learner runs to T on the same 20 seed keys (DP-SE and
    # DP-UCB, which are not anytime, too: each is built for the file's T, nothing is read off a longer run)
    assert dp_se["difference_mean"] - ucb["difference_mean"] > 3 * (
        summary["DP-SE"]["final_regret_se"] + summary["AdaP-UCB"]["final_regret_se"]
    )
    assert "AdaP-KLUCB" not in rows and {r["reference"] for r in res.paired} == {"AdaP-KLUCB"}
    for path in res.files.values():
        assert path.exists() and path.stat().st_size > 0, path
    settings = json.loads(res.files["json"].read_text())
    assert (settings["horizon"], settings["seeds"], settings["seed"]) == (10**4, 20, 0) and "versions" in settings
    assert settings["reference"] == "AdaP-KLUCB"
    labels = ["AdaP-KLUCB", "AdaP-UCB", "AdaC-UCB (rho=eps^2/2)", "DP-SE", "DP-UCB (tree)", "LDP-UCB"]
    with np.load(res.files["npz"]) as data:
        assert list(data["learners"]) == labels and data["steps"][-1] == 10**4
        assert data["regret"].shape == (len(labels), 1, 20, data["steps"].size)
        assert np.isfinite(data["regret"]).all()
    with res.files["paired_csv"].open() as f:
        header = next(csv.reader(f))
    assert {"learner", "reference", "difference_mean", "difference_se", "ratio", "ratio_se"} <= set(header)


def test_baselines_runs_pure_dp_bandits_with_its_options_over_the_files_keys(tmp_path, capsys, monkeypatch):
    # jaxpriv baselines is the shipped study pure_dp_bandits: [smoke] scale unless --full-scale, and --seeds,
    # --horizon, --seed over the file's keys. The wiring, not the algorithms (the test above runs them all): the
    # study is cut to its two episode-level learners, at the test above's seeds and horizon: the same compiled
    # programs, read back from the persistent cache (the seed key is traced).
    from jaxpriv import cli

    calls = []
    real = study.run_study

    def two_learners(path, out=None, progress=True, smoke=False, edit=None):
        calls.append((path, smoke))

        def cut(raw):
            raw = edit(raw) if edit is not None else raw
            return raw | {"learners": raw["learners"][:2]}

        return real(path, out, progress=progress, smoke=smoke, edit=cut)

    monkeypatch.setattr(study, "run_study", two_learners)
    out = tmp_path / "cli"
    argv = ["baselines", "--out", str(out), "--seeds", "20", "--horizon", "10000", "--seed", "7", "--no-progress"]
    assert cli.main([*argv, "--no-compile-cache"]) == 0
    assert calls == [("pure_dp_bandits", True)]
    printed = capsys.readouterr().out
    assert "AdaP-UCB - AdaP-KLUCB" in printed and "(paired SE)" in printed
    settings = json.loads((out / "settings.json").read_text())
    assert (settings["horizon"], settings["seeds"], settings["seed"]) == (10**4, 20, 7)
    assert settings["learner"] == ["AdaP-KLUCB", "AdaP-UCB"]
    for name in ("results.npz", "summary.csv", "paired.csv", "regret.png", "paired.png"):
        assert (out / name).exists(), name
    full = ["baselines", "--out", str(tmp_path / "full"), "--full-scale", "--seeds", "20", "--horizon", "10000"]
    assert cli.main([*full, "--no-compile-cache", "--no-progress"]) == 0
    assert calls[-1] == ("pure_dp_bandits", False)  # the file's full scale, its horizon overridden
    assert json.loads((tmp_path / "full" / "settings.json").read_text())["horizon"] == 10**4
    # a bad option is one line, exit code 2, before anything runs
    assert cli.main(["baselines", "--out", str(out), "--seeds", "1", "--no-compile-cache"]) == 2
    assert "[seeds] must be an integer >= 2" in capsys.readouterr().err


def test_zcdp_finite_adac_ucb_pays_a_price_at_small_rho_only(tmp_path):
    # Azize & Basu Sec. VII, finite-armed, T up to 10^6, 20 runs: AdaC-UCB at rho = 0.01 pays a clearly positive
    # price at T = 10^6 (> 4 paired SEs); UCB's regret grows with t; the relative price falls as rho grows.
    res = study.run_study("zcdp_bandits_finite", tmp_path, progress=False, smoke=True)
    gaps = {(r["t"], r["rho"]): r for r in res.tables["regret_gap"]}
    assert {t for t, _ in gaps} == {10**4, 10**5, 10**6}
    low = gaps[(10**6, 0.01)]
    assert low["gap_mean"] > 4 * low["gap_se"], low
    assert abs(gaps[(10**6, 1000.0)]["gap_mean"]) < low["gap_mean"] / 4
    ucb = res.regret[1, 0]  # [S, m]
    assert np.all(np.diff(ucb, axis=-1) >= 0) and ucb[:, -1].mean() > ucb[:, 6].mean() > 0
    pop = {r["grid.rho"]: r["price_relative"] for r in res.tables["price_of_privacy"]}
    assert set(pop) == {"0.1", "0.5", "1"} and pop["0.1"] > pop["1"]


def test_zcdp_linear_gap_carries_the_paired_se(tmp_path):
    # Azize & Basu Sec. VII, linear, to T = 10^6, 30 runs, a fresh instance per run on shared seed keys: the gap's SE
    # is that of the per-run gaps, far below the unpaired one (the regret's spread across instances); at rho = 1000
    # AdaC-GOPE plays GOPE's phases (the gaps vanish exactly); at rho = 0.01 the price is clear.
    res = study.run_study("zcdp_bandits_linear", tmp_path, progress=False, smoke=True)
    rhos = [float(r) for r in res.study.grid["grid.rho"]]
    steps = list(res.study.checkpoints)
    for t in (10**4, 10**5, 10**6):
        j = steps.index(t)
        priv, base = res.regret[0, :, :, j].astype(np.float64), res.regret[1, 0, :, j].astype(np.float64)
        diff = priv - base[None]
        unpaired = np.sqrt(priv.var(1, ddof=1) / priv.shape[1] + base.var(ddof=1) / base.size)
        rows = {r["rho"]: r for r in res.tables["regret_gap"] if r["t"] == t}
        for g, rho in enumerate(rhos):
            assert rows[rho]["gap_mean"] == pytest.approx(diff[g].mean(), rel=1e-9, abs=1e-9)
            assert rows[rho]["gap_se"] == pytest.approx(diff[g].std(ddof=1) / np.sqrt(diff.shape[1]), rel=1e-9)
        assert rows[1000.0]["gap_se"] <= 1e-3 * unpaired[rhos.index(1000.0)]
        assert rows[0.1]["gap_se"] < unpaired[rhos.index(0.1)] / 3
    low = next(r for r in res.tables["regret_gap"] if r["t"] == 10**6 and r["rho"] == 0.01)
    assert low["gap_mean"] > 3 * low["gap_se"], low


def test_zcdp_contextual_price_falls_with_rho(tmp_path):
    # Azize & Basu Sec. VII, contextual, T = 10^3, 20 runs, step by step: AdaC-OFUL pays at rho = 0.1 (> 4 paired
    # SEs) and the gap at rho = 1000 is within 2 paired SEs of zero (the derived self-normalized radius).
    res = study.run_study("zcdp_bandits_contextual", tmp_path, progress=False, smoke=True)
    rows = {r["rho"]: r for r in res.tables["regret_gap"] if r["t"] == 1000}
    assert rows[0.1]["gap_mean"] > 4 * rows[0.1]["gap_se"]
    assert abs(rows[1000.0]["gap_mean"]) < 2 * rows[1000.0]["gap_se"] + 1e-9
    assert rows[0.1]["price_relative"] > rows[1.0]["price_relative"] > rows[1000.0]["price_relative"]


def test_zcdp_fidelity_the_derived_choices_make_privacy_free_at_large_rho(tmp_path):
    # the removed zcdp_fidelity script's check: at rho = 1000 the paper's choices (robust radius, eq. (5.6) phase
    # lengths) still pay (their enlargement vanishes as 1/sqrt(rho)), the derived defaults do not (as 1/rho).
    ctx = study.run_study("zcdp_fidelity_contextual", tmp_path / "ctx", progress=False, smoke=True)
    rows = {(r["learner"], r["rho"]): r for r in ctx.tables["gaps"]}
    robust, derived = rows[("robust/both", 1000.0)], rows[("self_normalized/both", 1000.0)]
    assert robust["gap_mean"] > 3 * robust["gap_se"], robust
    assert abs(derived["gap_mean"]) < 2 * derived["gap_se"], derived
    assert rows[("self_normalized/both", 0.1)]["gap_mean"] > 4 * rows[("self_normalized/both", 0.1)]["gap_se"]
    lin = study.run_study("zcdp_fidelity_linear", tmp_path / "lin", progress=False, smoke=True)
    rows = {(r["learner"], r["rho"]): r for r in lin.tables["gaps"]}
    paper = rows[("paper/both", 1000.0)]
    assert paper["gap_mean"] > 2 * paper["gap_se"] + 1.0, paper
    # the same pulls as GOPE: zero up to float32 rounding of the regret sums (the two compiled simulators differ)
    assert rows[("joint/both", 1000.0)]["gap_mean"] == pytest.approx(0.0, abs=1e-3)
    joint = rows[("joint/both", 0.01)]  # at rho = 0.01 the joint rule pays (its decomposition: test_zcdp_fidelity)
    assert joint["gap_mean"] > 2 * joint["gap_se"], joint
    assert {learner for learner, _ in rows} == {"paper/both", "joint/both"}  # the [smoke] scale's learners
    # the gap's SE is that of the per-run gaps (shared instances and seeds)
    i, r = lin.study.labels.index("paper/both"), lin.study.labels.index("GOPE")
    d = lin.regret[i, 0, :, -1].astype(np.float64) - lin.regret[r, 0, :, -1]
    assert rows[("paper/both", 0.01)]["gap_se"] == pytest.approx(d.std(ddof=1) / np.sqrt(d.size), rel=1e-9)


def test_pftal_rates_are_sublinear_in_t_and_ordered_by_epsilon(tmp_path):
    # Smith & Thakurta Thm 4 at T = 256 and 2048, 8 runs, one sweep per horizon on the same keys: PFTAL's regret grows
    # far slower than T (log-log slope well below 1) and faster at eps = 1 than at eps = 10 (paired over horizons).
    # Not the polylog rate: over these horizons log^2.5 T's own log-log slope is 0.38 and sqrt T's 0.5 (PFTAL: 0.50 at
    # eps = 1), too close to tell apart; jkt12_vs_pftal's smoke sets PFTAL against a sqrt T learner.
    res = study.run_study("pftal_rates", tmp_path, progress=False, smoke=True)
    assert sorted(res.horizons) == [256, 2048] and (tmp_path / "T2048" / "summary.csv").exists()
    rows = {(r["learner"], r["grid.epsilon"]): r for r in res.tables["slopes"]}
    for eps in ("1", "10"):
        pftal = rows[("PFTAL", eps)]
        assert 0 < pftal["slope_loglog"] < 0.6 and pftal["slope_loglog_se"] > 0, pftal
    assert (
        rows[("PFTAL", "1")]["slope_lnT"]
        > rows[("PFTAL", "10")]["slope_lnT"] + 3 * rows[("PFTAL", "1")]["slope_lnT_se"]
    )
    assert (tmp_path / "regret_vs_horizon.png").exists() and (tmp_path / "slopes.csv").exists()
