"""Comparison studies (``[[learners]]``): three learners on shared seed keys through the runner, checked against
the same sweep done by hand through ``jaxpriv.sweep``; paired standard errors; one line per learner in the
figures; resume refusing a changed learner list; refusals of ambiguous files; every example parses and one
runs at reduced size; every learner factory of the library is nameable in a study file."""

import csv
import inspect
from pathlib import Path

import numpy as np
import pytest

import jaxpriv as jp
from jaxpriv import bandits, envs, mechanisms, oco, sets
from jaxpriv.experiments import registry, study
from jaxpriv.experiments.study_file import parse_study

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

COMPARE = """
name = "compare"
horizon = 64
seeds = 8
chunk = 4
checkpoints = [16, 32]
reference = "FTAL"

[grid]
epsilon = [1.0, 10.0, inf]

[set]
kind = "l2_ball"
dim = 2

[env]
name = "quadratic_stream"
[env.params]
center = [0.3, 0.3]

[[learners]]
name = "pftal"
label = "PFTAL"
[learners.params]
lipschitz = 2.0

[[learners]]
name = "dp_ftrl"
label = "DP-FTRL"
[learners.params]
lipschitz = 2.0
{extra}
[[learners]]
name = "ftal"
label = "FTAL"
"""

LABELS = ("PFTAL", "DP-FTRL", "FTAL")
EPS = np.array([1.0, 10.0, np.inf])


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _read(path: Path) -> list[dict[str, str]]:
    with path.open() as f:
        return list(csv.DictReader(f))


@pytest.fixture(scope="module")
def compare_run(tmp_path_factory):
    """One run of the three-learner study (3 grid points, 2 seed chunks), shared by the tests."""
    tmp = tmp_path_factory.mktemp("compare")
    path = _write(tmp, "compare.toml", COMPARE.format(extra=""))
    return study.run_study(path, tmp / "out", progress=False), path


@pytest.fixture(scope="module")
def by_hand(compare_run):
    """The same sweep through the public API: each learner is jaxpriv.sweep with key 0 and chunk 4."""
    ball = sets.l2_ball(2)
    env = envs.quadratic_stream(ball)
    env_p = envs.QuadraticParams(center=np.array([0.3, 0.3]))
    runs = {
        "PFTAL": (oco.pftal(64, ball), oco.PFTALParams(epsilon=EPS, lipschitz=2.0)),
        "DP-FTRL": (oco.dp_ftrl(64, ball), oco.DPFTRLParams(epsilon=EPS, lipschitz=2.0)),
        "FTAL": (oco.ftal(ball, 64), oco.FTALParams()),
    }
    regret = {}
    for label, (learner, params) in runs.items():
        r = jp.sweep(learner, env, jp.SimParams(params, env_p), 0, 64, 8, [16, 32], 4, segment=64)
        value = np.asarray(r.regret)
        regret[label] = value if label != "FTAL" else np.repeat(value[None], 3, axis=0)  # FTAL has no epsilon
    return regret


def test_summary_and_arrays_are_the_apis_numbers(compare_run, by_hand):
    res, _ = compare_run
    assert res.study.labels == LABELS and res.regret.shape == (3, 3, 8, 3)
    for i, label in enumerate(LABELS):
        np.testing.assert_array_equal(res.regret[i], by_hand[label])  # common random numbers: the same keys
    assert [a.swept for a in res.study.learners] == [True, True, False]  # FTAL ran once, repeated
    data = np.load(res.files["npz"])
    assert list(data["learners"]) == list(LABELS) and data["regret"].shape == (3, 3, 8, 3)
    rows = _read(res.files["csv"])
    assert list(rows[0])[:3] == ["learner", "grid_point", "grid.epsilon"] and len(rows) == 7
    # FTAL depends on no swept value: one row (no grid point, no epsilon), not one per epsilon
    assert [(r["grid_point"], r["grid.epsilon"]) for r in rows if r["learner"] == "FTAL"] == [("", "")]
    assert len(res.summary) == 7 and str(res) == res.table()
    assert [line.split()[0] for line in res.table().splitlines()].count("FTAL") == 1
    for row in rows:
        final = by_hand[row["learner"]][int(row["grid_point"] or 0), :, -1].astype(np.float64)
        assert float(row["final_regret_mean"]) == final.mean()
        assert float(row["final_regret_se"]) == final.std(ddof=1) / np.sqrt(8)
    bounds = {r["learner"]: r["bound"] for r in rows if r["grid_point"] in ("0", "")}
    assert float(bounds["PFTAL"]) > float(rows[0]["final_regret_mean"]) and bounds["FTAL"] == ""


def test_paired_differences_use_the_per_seed_differences(compare_run, by_hand):
    res, _ = compare_run
    rows = _read(res.files["paired_csv"])
    assert [(r["learner"], r["grid_point"]) for r in rows] == [(a, str(g)) for a in LABELS[:2] for g in range(3)]
    ref = by_hand["FTAL"][..., -1].astype(np.float64)
    for row in rows:
        g = int(row["grid_point"])
        x = by_hand[row["learner"]][g, :, -1].astype(np.float64)
        d = x - ref[g]
        assert float(row["difference_mean"]) == pytest.approx(d.mean(), rel=1e-12, abs=1e-12)
        assert float(row["difference_se"]) == pytest.approx(d.std(ddof=1) / np.sqrt(8), rel=1e-9, abs=1e-15)
        unpaired = np.hypot(x.std(ddof=1), ref[g].std(ddof=1)) / np.sqrt(8)
        assert float(row["unpaired_se"]) == pytest.approx(unpaired, rel=1e-9)
        assert float(row["difference_se"]) != pytest.approx(unpaired, rel=1e-3)
    # At epsilon = inf PFTAL is FTAL on the same keys: the paired SE vanishes, the unpaired one does not.
    last = next(r for r in rows if r["learner"] == "PFTAL" and r["grid_point"] == "2")
    assert float(last["difference_se"]) < 1e-3 * float(last["unpaired_se"])
    # ... and the difference is float32 round-off, flagged; at epsilon = 1 it is an effect
    flags = {(r["learner"], r["grid_point"]): r["within_roundoff"] for r in rows}
    assert flags[("PFTAL", "2")] == "True" and flags[("PFTAL", "0")] == flags[("DP-FTRL", "0")] == "False"
    assert "PFTAL - FTAL: epsilon=inf" in res.table() and "within float32 round-off" in res.table()


def _labels(ax) -> list[str]:
    return [line.get_label() for line in ax.get_lines() if not line.get_label().startswith("_")]


def test_figures_draw_one_line_per_learner(compare_run):
    res, _ = compare_run
    for name in ("curves", "final", "paired"):
        assert res.files[name].read_bytes()[:4] == b"\x89PNG"
    curves = res.figures["curves"].axes
    assert len(curves) == 3  # one panel per grid point
    for ax in curves:
        assert _labels(ax) == list(LABELS)
        # FTAL (no epsilon) is a reference on every panel: grey and dashed, the others solid
        styles = {line.get_label(): line.get_linestyle() for line in ax.get_lines()}
        assert styles["FTAL"] == "--" and styles["PFTAL"] == styles["DP-FTRL"] == "-"
    (final,) = res.figures["final"].axes
    drawn = _labels(final)
    # PFTAL and DP-FTRL against epsilon (their epsilon = inf dotted, bounds dashed), FTAL (no epsilon) dotted.
    assert drawn == [
        "PFTAL", "PFTAL, ε = inf", "PFTAL bound", "DP-FTRL", "DP-FTRL, ε = inf", "DP-FTRL bound", "FTAL (no epsilon)",
    ]  # fmt: skip
    for ax in res.figures["paired"].axes:
        assert _labels(ax) == ["PFTAL − FTAL", "DP-FTRL − FTAL"]


class _Stop(Exception):
    pass


def test_an_interrupted_comparison_reruns_no_finished_learner(compare_run, tmp_path):
    res, _ = compare_run
    path = _write(tmp_path, "compare.toml", COMPARE.format(extra=""))
    calls: list[int] = []

    def stop_in_dp_ftrl(done: int) -> None:  # a segment per chunk: PFTAL's 2, then DP-FTRL's second chunk
        calls.append(done)
        if done == 4:
            raise _Stop

    with pytest.raises(_Stop):
        study.run_study(path, tmp_path / "out", progress=False, after_segment=stop_in_dp_ftrl)
    sweeps = tmp_path / "out" / "sweeps"
    assert sorted(p.name for p in sweeps.glob("*.npz")) == ["l00_g0000.sweep.npz", "l01_g0000.sweep.npz"]
    calls.clear()
    again = study.run_study(path, tmp_path / "out", progress=False, after_segment=calls.append)
    # PFTAL read back, DP-FTRL's second chunk from its save file, FTAL's two chunks: 3 segments, not 6.
    assert calls == [1, 2, 3] and (again.resumed, again.computed) == (1, 2)
    np.testing.assert_array_equal(again.regret, res.regret)  # the learners' shared keys: the same numbers


def test_resume_refuses_a_changed_learner_list(compare_run, tmp_path):
    res, path = compare_run
    again = study.run_study(path, res.out, progress=False, after_segment=lambda n: pytest.fail("ran a segment"))
    assert (again.resumed, again.computed) == (3, 0)  # 3 learners x 1 grid block, one jaxpriv.sweep each
    np.testing.assert_array_equal(again.regret, res.regret)
    assert sorted(p.name for p in (res.out / "sweeps").glob("*.npz")) == [f"l0{i}_g0000.sweep.npz" for i in range(3)]
    # OGD inserted before FTAL: the third sweep's file holds FTAL, never read back as OGD's (the learners before
    # it are read back, then jaxpriv.sweep refuses that file, naming what differs).
    extra = '\n[[learners]]\nname = "ogd"\nlabel = "OGD"\n'
    changed = _write(tmp_path, "compare.toml", COMPARE.format(extra=extra))
    with pytest.raises(ValueError, match="another sweep configuration") as err:
        study.run_study(changed, res.out, progress=False, after_segment=lambda n: pytest.fail("ran a segment"))
    assert "l02_g0000.sweep.npz" in str(err.value) and "learner" in str(err.value)


@pytest.mark.parametrize(
    ("edits", "key", "message"),
    [
        ((("lipschitz = 2.0", "lipschitz = [1.0, 2.0]"),), "[learners.PFTAL.params.lipschitz]", "go in [grid]"),
        ((("epsilon = [1.0, 10.0, inf]", "epsilon = [1.0, 10.0, inf]\nwidth = [1.0]"),), "[grid.width]", "no learner"),
        ((('label = "DP-FTRL"', 'label = "PFTAL"'),), "[learners[2].label]", "also the label of learners[1]"),
        ((('reference = "FTAL"', 'reference = "OGD"'),), "[reference]", "must be the label"),
        ((('label = "DP-FTRL"', 'label = "DP-FTRL"\naxes = { epsilon = "rho" }'),), "[learners.DP-FTRL.axes.epsilon]",
         "budget of another noise family"),
        ((('label = "DP-FTRL"', 'label = "DP-FTRL"\naxes = { epsilon = "eps" }'),), "[learners.DP-FTRL.axes.epsilon]",
         "must name a field"),
        ((('label = "PFTAL"', 'label = "PFTAL"\naxes = { epsilon = "epsilon" }'), ("lipschitz = 2.0", "epsilon = 1.0")),
         "[learners.PFTAL.params.epsilon]", "set here and by the shared axis"),
        ((('[set]', '[learner]\nname = "ftal"\n[set]'),), "[learners]", "not both"),
        ((('label = "PFTAL"', 'label = "PFTAL"\nmechanism = "honaker"'),), "[learners.PFTAL.mechanism]",
         "did you mean 'honaker_tree'"),
        ((('name = "ftal"', 'name = "ftal"\nmechanism = "binary_tree"'),), "[learners.FTAL.mechanism]",
         "takes no prefix-sum mechanism"),
    ],
)  # fmt: skip
def test_ambiguous_comparison_files_are_refused_naming_the_key(edits, key, message):
    text = COMPARE.format(extra="")
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new, 1)
    with pytest.raises(ValueError) as err:
        parse_study(text, "bad.toml")
    assert f"bad.toml: {key}" in str(err.value) and message in str(err.value), str(err.value)


def test_grid_and_reference_belong_to_comparisons():
    single = (EXAMPLES / "pftal_epsilon.toml").read_text()
    with pytest.raises(ValueError, match=r"\[reference\] belongs to a comparison"):
        parse_study('reference = "x"\n' + single)


def test_a_shared_axis_maps_onto_each_learners_budget_and_mechanisms_are_named():
    s = study.load_study(EXAMPLES / "compare_mechanisms.toml")
    assert s.labels == ("binary tree", "Honaker", "sqrt factorization", "BLT")
    names = [mechanisms.describe(a.static["mechanism"]).name for a in s.learners]
    assert names == ["binary_tree", "honaker_tree", "sqrt_factorization", "blt"]
    assert set(names) == set(registry.MECHANISMS)  # the example compares every mechanism a file may name
    for arm in s.learners:
        info = mechanisms.describe(arm.static["mechanism"])
        assert (info.horizon, info.dim, info.neighbouring, info.noise) == (s.horizon, 3, "replace", mechanisms.GAUSSIAN)
        np.testing.assert_array_equal(arm.params.learner.rho, np.float32([0.01, 0.1, 1.0, 10.0]))
    text = COMPARE.format(extra="").replace('label = "DP-FTRL"', 'label = "DP-FTRL"\nnoise = "gaussian"\n'
                                            'axes = { epsilon = "rho" }')  # fmt: skip
    # rho = 10 on a tree of T = 64 (D = 7) is refused (its samplers' delta floor, 1.6e-5, exceeds 1e-5): T = 1024
    text = text.replace("horizon = 64", "horizon = 1024")
    dp = parse_study(text).learners[1]
    assert dp.axes == {"grid.epsilon": "rho"} and dp.params.learner.epsilon is None
    np.testing.assert_array_equal(dp.params.learner.rho, np.float32(EPS))
    # The environment's lists are grid axes too, shared by every learner; zip may name a shared axis bare.
    text = COMPARE.format(extra="").replace("center = [0.3, 0.3]", "center = [0.3, 0.3]\nspread = [0.1, 0.2, 0.3]")
    product = parse_study(text)
    assert product.axes == [("grid.epsilon",), ("env.params.spread",)] and product.size == 9
    assert [a.swept for a in product.learners] == [True, True, True]  # FTAL follows the environment's axis
    zipped = parse_study('zip = [["epsilon", "env.params.spread"]]\n' + text)
    assert zipped.axes == [("grid.epsilon", "env.params.spread")] and zipped.size == 3
    np.testing.assert_array_equal(zipped.learners[2].params.env.spread, np.float32([0.1, 0.2, 0.3]))


@pytest.mark.parametrize("example", sorted(p.name for p in EXAMPLES.glob("compare_*.toml")))
def test_every_comparison_example_parses(example):
    s = study.load_study(EXAMPLES / example)
    assert s.compare and len(s.learners) >= 2 and s.reference in s.labels and s.size >= 4
    assert any(a.swept for a in s.learners)


def test_an_example_runs_at_reduced_size(tmp_path):
    text = (EXAMPLES / "compare_zcdp_bandits.toml").read_text()
    text = text.replace("horizon = 10000", "horizon = 300").replace("seeds = 100", "seeds = 6")
    text = text.replace("chunk = 50", "chunk = 6")
    res = study.run_study(_write(tmp_path, "zcdp.toml", text), tmp_path / "out", progress=False)
    assert res.regret.shape[:3] == (2, 5, 6)
    np.testing.assert_array_equal(res.regret[1], np.repeat(res.regret[1, :1], 5, axis=0))  # UCB: no rho
    assert len(res.paired) == 5 and {r["learner"] for r in res.paired} == {"AdaC-UCB"}


def _learner_factories(module) -> set:
    out = set()
    for name in module.__all__:
        obj = getattr(module, name)
        if inspect.isfunction(obj) and inspect.signature(obj).return_annotation in ("Learner", jp.Learner):
            out.add(obj)
    return out


def test_every_learner_factory_is_nameable_in_a_study_file():
    factories = _learner_factories(oco) | _learner_factories(bandits)
    assert {oco.wdp_cocop, oco.wdp_cocol, oco.pftal, bandits.adac_ucb} <= factories
    registered = {c.factory for c in registry.LEARNERS.values()}
    assert factories - registered == set()
    for name, entry in registry.LEARNERS.items():  # a mechanism dimension exactly for those taking a mechanism
        takes = "mechanism" in inspect.signature(entry.factory).parameters
        assert (entry.mechanism_dim is not None) == takes, name


def test_roundoff_rule_and_the_figure_grid():
    # every seed's |a - b| <= eps32 sqrt(T) max(|a|, |b|): the demo's OGD - FTAL (about 2e-6 on regrets of 1.56 at
    # T = 2^14, tolerance 2.4e-5) is round-off; a difference of 1e-3 there is an effect
    from jaxpriv.experiments import _tables, figures

    a = np.full((2, 100), 1.561, np.float32)
    b = a + np.float32(2e-6)
    tol = _tables.EPS32 * np.sqrt(2**14) * 1.561
    assert np.all(_tables.within_roundoff(a, b, 2**14)) and not np.any(_tables.within_roundoff(a, a + 1e-3, 2**14))
    assert not _tables.within_roundoff(a, b, 1)[0] and 2e-6 < tol < 3e-5  # the tolerance grows as sqrt(T)
    c = b.copy()
    c[1, 7] += 1.0  # one seed beyond round-off makes the grid point an effect
    assert _tables.within_roundoff(a, c, 2**14).tolist() == [True, False]
    # the demo's worst seed: 6.4e-5 on a regret of 1.2 is beyond the regret's own scale, but that regret is the
    # difference of two float32 sums near 2100 (the cumulative losses), whose rounding sets the scale
    x, y, cum = np.float32([1.2]), np.float32([1.2 + 6.4e-5]), np.float32([2100.0])
    assert not _tables.within_roundoff(x, y, 2**14) and _tables.within_roundoff(x, y, 2**14, cum, cum)
    assert not _tables.within_roundoff(x, x + 0.1, 2**14, cum, cum)  # 0.1 is an effect there
    # four panels (the demo's four budgets) are a 2x2 grid, not 2x3 with two empty slots
    assert [figures._columns(n) for n in range(1, 7)] == [1, 2, 3, 2, 3, 3]


def test_the_paired_difference_recipe_flags_round_off_too(compare_run):
    from jaxpriv.experiments import figures

    res, _ = compare_run
    data = figures.Data(np.asarray(res.study.checkpoints), res.regret, [None] * 3)
    _, rows = figures.draw(res.study, data, {"recipe": "paired_difference", "reference": "FTAL"})
    flags = {(r["learner"], r["grid_point"]): r["within_roundoff"] for r in rows}
    assert flags[("PFTAL", 2)] is True and flags[("PFTAL", 0)] is False and flags[("DP-FTRL", 2)] is False
