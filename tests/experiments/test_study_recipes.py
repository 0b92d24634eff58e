"""The study-file format's reproduction features: [smoke], horizons (slopes), simulator = "episodes", [[figures]]
recipes, and the shipped files by name (jaxpriv sweep --list / NAME)."""

import numpy as np
import pytest

from jaxpriv import bandits, envs
from jaxpriv.cli import main
from jaxpriv.experiments import study
from jaxpriv.experiments.study_file import parse_study

BANDIT = """
horizon = 2000
seeds = 4
[learner]
name = "adap_klucb"
num_arms = 3
simulator = "episodes"
[learner.params]
epsilon = [0.5, inf]
alpha = 3.1
[env]
name = "bernoulli_bandit"
num_arms = 3
[env.params]
means = [0.7, 0.5, 0.3]
"""


def test_smoke_overrides_apply_only_when_asked():
    text = BANDIT + "[smoke]\nhorizon = 100\nseeds = 2\n[smoke.env.params]\nmeans = [0.9, 0.5, 0.1]\n"
    full, small = parse_study(text, "s.toml"), parse_study(text, "s.toml", smoke=True)
    assert (full.horizon, full.seeds, small.horizon, small.seeds) == (2000, 4, 100, 2)
    np.testing.assert_allclose(small.params.env.means, [0.9, 0.5, 0.1])
    np.testing.assert_allclose(full.params.env.means, [0.7, 0.5, 0.3])
    assert small.smoke and not full.smoke
    with pytest.raises(ValueError, match=r"\[smoke.reference\] cannot be overridden"):
        parse_study(BANDIT + '[smoke]\nreference = "x"\n', "s.toml")
    with pytest.raises(ValueError, match=r"\[smoke.learners\] must be a list of labels"):
        parse_study(BANDIT + '[smoke]\nlearners = ["adap_klucb"]\n', "s.toml")  # a single [learner]: none
    with pytest.raises(ValueError, match=r"\[smoke\] the file has no \[smoke\] table"):
        parse_study(BANDIT, "s.toml", smoke=True)


COMPARISON = """
horizon = 2000
seeds = 4
zip = [["epsilon", "r"]]
[grid]
epsilon = [0.5, 1.0]
r = [0.1, 0.5]
a = [3.1, 4.0]
[env]
name = "bernoulli_bandit"
num_arms = 3
[env.params]
means = [0.7, 0.5, 0.3]
[[learners]]
name = "adap_klucb"
label = "KL"
num_arms = 3
simulator = "episodes"
axes = { a = "alpha" }
[[learners]]
name = "adac_ucb"
label = "C"
num_arms = 3
simulator = "episodes"
axes = { r = "rho" }
[learners.params]
beta = 1.0
"""


def test_smoke_learners_drop_the_axes_no_kept_learner_takes():
    # KL takes epsilon (its field's name) and a (axes = { a = "alpha" }), C takes r (axes = { r = "rho" }): keeping
    # one learner drops the other's axes, and the zip group [epsilon, r] left with one axis is no group.
    full = parse_study(COMPARISON + '[smoke]\nlearners = ["KL"]\n', "s.toml")
    assert full.axes == [("grid.epsilon", "grid.r"), ("grid.a",)] and full.shape == (2, 2) and len(full.labels) == 2
    kl = parse_study(COMPARISON + '[smoke]\nlearners = ["KL"]\n', "s.toml", smoke=True)
    assert kl.labels == ("KL",) and kl.axes == [("grid.epsilon",), ("grid.a",)] and kl.shape == (2, 2)
    assert "zip" not in kl.raw and set(kl.raw["grid"]) == {"epsilon", "a"}
    np.testing.assert_array_equal(kl.grid["grid.a"], [3.1, 4.0, 3.1, 4.0])
    fig = '[[figures]]\nrecipe = "final_vs_budget"\naxis = "r"\n'  # a figure over a dropped axis is left out
    c = parse_study(COMPARISON + fig + '[smoke]\nlearners = ["C"]\n[smoke.grid]\nr = [0.2]\n', "s.toml", smoke=True)
    assert c.labels == ("C",) and c.axes == [("grid.r",)] and c.learners[0].axes == {"grid.r": "rho"}
    assert [f["axis"] for f in c.figures] == ["grid.r"]
    assert parse_study(COMPARISON + fig + '[smoke]\nlearners = ["KL"]\n', "s.toml", smoke=True).figures == ()
    np.testing.assert_array_equal(c.grid["grid.r"], [0.2])
    # a zip group keeping two axes stays a group; a shipped file: its [smoke] keeps GOPE and AdaC-GOPE (rho only)
    three = COMPARISON.replace('[["epsilon", "r"]]', '[["epsilon", "r", "a"]]') + '[smoke]\nlearners = ["KL"]\n'
    kl3 = parse_study(three, "s.toml", smoke=True)
    assert kl3.axes == [("grid.epsilon", "grid.a")] and kl3.raw["zip"] == [["epsilon", "a"]]
    path = study.shipped_studies()["price_of_privacy_d"]
    pop_full, pop = parse_study(path.read_text(), path), parse_study(path.read_text(), path, smoke=True)
    assert pop_full.axes == [("grid.rho", "grid.eps_pure", "grid.eps_approx")]
    assert pop.axes == [("grid.rho",)] and pop.labels == ("GOPE", "AdaC-GOPE (rho-zCDP)")


def test_bad_simulator_and_figures_are_refused_before_compiling():
    with pytest.raises(ValueError, match=r"\[learner.simulator\] must be one of"):
        parse_study(BANDIT.replace('"episodes"', '"episode"'), "s.toml")
    pftal = (
        'horizon = 64\nseeds = 2\n[set]\nkind = "l2_ball"\ndim = 2\n[learner]\nname = "pftal"\nsimulator = "episodes"\n'
        '[learner.params]\nepsilon = 1.0\n[env]\nname = "quadratic_stream"\n[env.params]\ncenter = [0.3, 0.3]\n'
    )
    with pytest.raises(ValueError, match=r"\[learner.simulator\] .*no exact episode simulator"):
        parse_study(pftal, "s.toml")
    with pytest.raises(ValueError, match=r"unknown recipe 'kne' \(did you mean 'knee'\?\)"):
        parse_study(BANDIT + '[[figures]]\nrecipe = "kne"\n', "s.toml")
    with pytest.raises(ValueError, match=r"\[figures\[1\].colour\] knee takes no option"):
        parse_study(BANDIT + '[[figures]]\nrecipe = "knee"\ncolour = 1\n', "s.toml")
    with pytest.raises(ValueError, match=r"\[figures\[1\].high_privacy\] the axis needs a budget <= 0.05"):
        parse_study(BANDIT + '[[figures]]\nrecipe = "knee"\n', "s.toml")
    with pytest.raises(ValueError, match=r"regret_vs_horizon needs horizons"):
        parse_study(BANDIT + '[[figures]]\nrecipe = "regret_vs_horizon"\n', "s.toml")
    with pytest.raises(ValueError, match=r"\[horizons\] give either horizon"):
        parse_study(BANDIT.replace("horizon = 2000", "horizon = 2000\nhorizons = [10, 20]"), "s.toml")
    with pytest.raises(ValueError, match=r"\[horizons\] must be a list of at least two increasing"):
        parse_study(BANDIT.replace("horizon = 2000", "horizons = [20, 10]"), "s.toml")


def test_episodes_give_simulate_episodes_numbers_and_horizons_give_slopes(tmp_path):
    text = BANDIT.replace("horizon = 2000", "horizons = [1000, 4000, 16000]")
    text += '[[figures]]\nrecipe = "price_of_privacy"\n'
    path = tmp_path / "b.toml"
    path.write_text(text)
    res = study.run_study(path, tmp_path / "out", progress=False)
    assert sorted(res.horizons) == [1000, 4000, 16000]
    assert (tmp_path / "out" / "T4000" / "summary.csv").exists()
    assert (tmp_path / "out" / "slopes.csv").exists() and (tmp_path / "out" / "regret_vs_horizon.png").exists()
    # the same keys through bandits.simulate_episodes: the same numbers
    learner = bandits.adap_klucb(3, 4000)
    params = bandits.AdaPKLUCBParams(epsilon=np.array([0.5, np.inf], np.float32), alpha=3.1)
    direct = bandits.simulate_episodes(learner, params, envs.BernoulliParams(np.array([0.7, 0.5, 0.3])), 0, 4000, 4)
    np.testing.assert_array_equal(res.horizons[4000].regret[..., -1], np.asarray(direct.regret)[..., -1])
    # jaxpriv.sweep(simulator="episodes") saved each horizon's finished simulation: a rerun runs nothing
    again = study.run_study(path, tmp_path / "out", progress=False, after_segment=lambda n: pytest.fail("ran"))
    assert (again.resumed, again.computed) == (3, 0)
    np.testing.assert_array_equal(again.regret, res.regret)
    # slopes: least squares over log T of the log mean final regret (and per seed against ln T)
    finals = np.stack([res.horizons[h].regret[..., -1] for h in (1000, 4000, 16000)])  # [H, G, S]
    x = np.log([1000.0, 4000.0, 16000.0])
    for g, row in enumerate(res.tables["slopes"]):
        assert row["slope_loglog"] == pytest.approx(np.polyfit(x, np.log(finals[:, g].mean(-1)), 1)[0], rel=1e-6)
        assert row["slope_lnT"] == pytest.approx(np.polyfit(x, finals[:, g].mean(-1), 1)[0], rel=1e-6)
        assert 0 < row["slope_loglog"] < 1 and row["slope_loglog_se"] > 0  # sublinear, with an SE
    # the price of privacy: eps = 0.5 minus eps = inf at the same seeds, positive beyond its paired SE
    (pop,) = res.tables["price_of_privacy"]
    assert pop["price_mean"] > 2 * pop["price_se"] > 0


def test_the_shipped_files_are_listed_and_run_by_name(capsys):
    assert main(["sweep", "--list"]) == 0
    out = capsys.readouterr().out
    for name in study.shipped_studies():
        assert name in out
    assert "demo" in study.shipped_studies()
    assert main(["sweep", "dem", "--no-compile-cache"]) == 2
    assert "did you mean 'demo'" in capsys.readouterr().err


def test_one_call_registration_takes_the_params_class_from_the_components_spec(scratch_declarations):
    from jaxpriv import oco
    from jaxpriv.experiments import registry

    entry = registry.register_learner("my_pftal", oco.pftal)  # one call: no params class
    assert entry.params is None
    text = (
        'horizon = 64\nseeds = 2\n[set]\nkind = "l2_ball"\ndim = 2\n[learner]\nname = "my_pftal"\n'
        '[learner.params]\nepsilon = [1.0, inf]\n[env]\nname = "quadratic_stream"\n[env.params]\ncenter = [0.3, 0.3]\n'
    )
    s = parse_study(text, "s.toml")
    assert type(s.params.learner) is oco.PFTALParams and s.size == 2
    with pytest.raises(ValueError, match=r"\[learner.params.epsilom\] PFTALParams has no field 'epsilom'"):
        parse_study(text.replace("epsilon =", "epsilom ="), "s.toml")

    def no_spec(horizon, constraint):  # a factory whose component's spec names no params class
        return oco.pftal(horizon, constraint)._replace(spec=None)

    registry.register_learner("no_spec", no_spec)
    with pytest.raises(ValueError, match=r"\[learner.name\] no_spec: its spec names no params class"):
        parse_study(text.replace('"my_pftal"', '"no_spec"'), "s.toml")


SIZES = """
[sizes]
name = "K"
values = [2, 3]
keys = ["env.num_arms", "learner.num_arms"]
resize = ["env.params.means"]
"""


def test_sizes_build_each_value_and_refuse_bad_tables():
    s = parse_study(BANDIT + SIZES, "s.toml")
    assert s.sizes.values == (2, 3) and s.learner_static["num_arms"] == 3  # the largest stands for the study
    two = study.at_size(s, 2)
    assert two.learner_static["num_arms"] == 2 and two.sizes is None
    np.testing.assert_allclose(two.params.env.means, [0.7, 0.5])  # cut along the last axis
    grown = parse_study(BANDIT + SIZES.replace("[2, 3]", "[3, 5]"), "s.toml")
    np.testing.assert_allclose(grown.params.env.means, [0.7, 0.5, 0.3, 0.7, 0.5])  # cycled
    assert s.raw["env"]["num_arms"] == 3 and "sizes" in s.raw  # the file's contents stay as read
    small = parse_study(BANDIT + SIZES + "[smoke]\nseeds = 2\n[smoke.sizes]\nvalues = [2, 4]\n", "s.toml", smoke=True)
    assert small.sizes.values == (2, 4) and small.sizes.keys == s.sizes.keys
    for bad, match in [
        (SIZES.replace("[2, 3]", "[3, 2]"), r"\[sizes.values\] must be a list of at least two increasing"),
        (SIZES.replace('"K"', '"K K"'), r"\[sizes.name\] must be a name"),
        (SIZES.replace('"env.num_arms", ', '"env.num_armz", '), r"\[env.num_armz\]|\[sizes.keys\]|num_armz"),
        (SIZES.replace('"env.params.means"', '"env.params.meanz"'), r"\[sizes.resize\] 'env.params.meanz' names no"),
        (SIZES + "colour = 1\n", r"\[sizes\] must be a table with the keys"),
    ]:
        with pytest.raises(ValueError, match=match):
            parse_study(BANDIT + bad, "s.toml")
    with pytest.raises(ValueError, match=r"regret_vs_size needs a \[sizes\] table"):
        parse_study(BANDIT + '[[figures]]\nrecipe = "regret_vs_size"\n', "s.toml")
    with pytest.raises(ValueError, match=r"\[sizes\] a file has horizons or \[sizes\]"):
        parse_study(BANDIT.replace("horizon = 2000", "horizons = [100, 200]") + SIZES, "s.toml")


def test_sizes_run_one_study_per_value_with_slopes_in_the_size(tmp_path):
    path = tmp_path / "k.toml"
    path.write_text(BANDIT + SIZES + '[[figures]]\nrecipe = "regret_vs_size"\n')
    res = study.run_study(path, tmp_path / "out", progress=False)
    assert sorted(res.sizes) == [2, 3] and (tmp_path / "out" / "K3" / "summary.csv").exists()
    assert (tmp_path / "out" / "regret_vs_size.png").exists() and [r["K"] for r in res.summary] == [2, 2, 3, 3]
    finals = np.stack([res.sizes[k].regret[..., -1] for k in (2, 3)]).astype(np.float64)  # [V, G, S]
    for g, row in enumerate(res.tables["slopes"]):
        m = finals[:, g].mean(-1)
        assert row["slope_loglog"] == pytest.approx((np.log(m[1]) - np.log(m[0])) / np.log(1.5), rel=1e-5)
        assert row["slope_K"] == pytest.approx(m[1] - m[0], rel=1e-5)  # per arm, not per unit of ln K
        assert row["slope_K_se"] == pytest.approx(np.std(finals[1, g] - finals[0, g], ddof=1) / 2, rel=1e-5)


def test_paired_slopes_are_the_slopes_of_the_per_seed_differences():
    from jaxpriv.experiments.study import _slope_rows

    s = parse_study(BANDIT, "s.toml")
    finals = np.random.default_rng(0).uniform(1.0, 2.0, (3, 1, 2, 5))  # [V, L, G, S]
    (row, _) = _slope_rows(s, (2, 4, 8), finals - 0.5, "p", ("a - b",))
    assert row["learner"] if s.compare else "learner" not in row
    x = np.array([2.0, 4.0, 8.0])
    per_seed = [np.polyfit(x, finals[:, 0, 0, j] - 0.5, 1)[0] for j in range(5)]
    assert row["slope_p"] == pytest.approx(np.mean(per_seed)) and set(row) >= {"mean_p2", "mean_p8"}


def test_a_learners_guarantee_is_a_column_of_the_tables():
    from jaxpriv.experiments.study import _paired_rows, _summary_rows

    two = BANDIT.replace("[learner]", '[[learners]]\nlabel = "a"\nguarantee = "eps-DP"').replace(
        "[learner.params]\nepsilon = [0.5, inf]", "[learners.params]\nepsilon = 0.5"
    )
    two += '[[learners]]\nname = "adap_klucb"\nlabel = "b"\nnum_arms = 3\n'
    two += "[learners.params]\nepsilon = inf\nalpha = 3.1\n"
    s = parse_study(two, "s.toml")._replace(reference="b")
    assert [a.guarantee for a in s.learners] == ["eps-DP", ""]
    rows = _summary_rows(s, np.ones((2, 1)), np.ones((2, 1)), [None, None])
    assert [r["guarantee"] for r in rows] == ["eps-DP", ""] and list(rows[0])[:2] == ["learner", "guarantee"]
    (paired,) = _paired_rows(s, np.arange(8.0).reshape(2, 1, 4))
    assert paired["guarantee"] == "eps-DP" and paired["difference_mean"] == -4.0
    assert "guarantee" not in _summary_rows(parse_study(BANDIT, "s.toml"), np.ones((1, 2)), np.ones((1, 2)), [None])[0]
    with pytest.raises(ValueError, match=r"\[learners.a.guarantee\] must be a string"):
        parse_study(two.replace('guarantee = "eps-DP"', "guarantee = 1"), "s.toml")
