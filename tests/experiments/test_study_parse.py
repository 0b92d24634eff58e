"""The study file's parsing and grid building (``jaxpriv.experiments.study_file``), from TOML strings: the
product grid, zip axes, vector leaves, errors naming the file and the key, nothing compiled; the registry's
extension points; the one writer of experiment outputs (``jaxpriv.experiments._outputs``)."""

import csv
import json
from pathlib import Path

import numpy as np
import pytest

import jaxpriv as jp
from jaxpriv import oco, theory
from jaxpriv.experiments import _outputs, registry, study, study_file
from jaxpriv.experiments.study_file import build_grid, load_study, parse_study
from jaxpriv.sim import _sweep

BASE = """
name = "parse"
horizon = 64
seeds = 8
chunk = 4
checkpoints = [16, 32]
{top}
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
spread = 0.3
"""


def _text(top: str = "", *edits: tuple[str, str]) -> str:
    text = BASE.format(top=top)
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new, 1)
    return text


def test_the_product_grid_is_row_major_over_the_axes_and_nothing_compiles():
    before = _sweep._sweep_jit._cache_size()
    s = parse_study(_text(), "studies/parse.toml")
    assert _sweep._sweep_jit._cache_size() == before
    assert s.name == "parse" and s.source == Path("studies/parse.toml")
    assert s.axes == [("learner.params.epsilon",), ("learner.params.lipschitz",)]
    assert s.shape == (3, 2) and s.size == 6 and s.grid_chunk == 6
    np.testing.assert_array_equal(s.grid["learner.params.epsilon"], np.repeat([1.0, 10.0, np.inf], 2))
    np.testing.assert_array_equal(s.grid["learner.params.lipschitz"], np.tile([0.5, 2.0], 3))
    # The params carry the grid on the swept leaves (float32), the fixed leaves as they are.
    np.testing.assert_array_equal(s.params.learner.epsilon, np.repeat([1.0, 10.0, np.inf], 2).astype(np.float32))
    assert s.params.learner.epsilon.dtype == np.float32 and np.shape(s.params.env.spread) == ()
    assert s.checkpoints == (16, 32, 64) and (s.horizon, s.seeds, s.chunk, s.seed) == (64, 8, 4, 0)
    assert s.learner_name == "pftal" and s.env_name == "quadratic_stream"
    assert s.learner_bound is registry.LEARNERS["pftal"].bound and s.constraint.dim == 2


def test_zip_makes_one_axis_and_the_other_leaves_follow():
    zipped = 'zip = [["learner.params.epsilon", "env.params.spread"]]'
    s = parse_study(_text(zipped, ("spread = 0.3", "spread = [0.1, 0.2, 0.3]")))
    assert s.axes == [("learner.params.epsilon", "env.params.spread"), ("learner.params.lipschitz",)]
    assert s.shape == (3, 2)
    np.testing.assert_array_equal(s.grid["env.params.spread"], np.repeat([0.1, 0.2, 0.3], 2))
    np.testing.assert_array_equal(s.grid["learner.params.epsilon"], np.repeat([1.0, 10.0, np.inf], 2))
    np.testing.assert_array_equal(s.grid["learner.params.lipschitz"], np.tile([0.5, 2.0], 3))


def test_a_vector_leaf_sweeps_with_a_list_of_lists_and_nothing_swept_is_one_point():
    s = parse_study(_text("", ("center = [0.3, 0.3]", "center = [[0.3, 0.3], [0.0, 0.1]]")))
    assert s.shape == (3, 2, 2) and s.grid["env.params.center"].shape == (12, 2)
    np.testing.assert_array_equal(s.grid["env.params.center"][:2], [[0.3, 0.3], [0.0, 0.1]])
    fixed = parse_study(_text("", ("epsilon = [1.0, 10.0, inf]", "epsilon = 1.0"), ("lipschitz = [0.5, 2.0]", "")))
    assert fixed.shape == () and fixed.size == 1 and fixed.grid == {} and fixed.axes == [] and fixed.grid_chunk == 1


def test_the_default_name_is_the_files_stem_and_load_study_reads_the_same(tmp_path):
    text = _text().replace('name = "parse"\n', "")
    assert parse_study(text, "dir/my-study.toml").name == "my-study"
    path = tmp_path / "from_file.toml"
    path.write_text(text)
    loaded, parsed = load_study(path), parse_study(text, path)
    assert loaded.name == "from_file" and loaded.raw == parsed.raw and loaded.axes == parsed.axes
    for key in parsed.grid:
        np.testing.assert_array_equal(loaded.grid[key], parsed.grid[key])
    assert study.load_study is load_study and study.Study is study_file.Study  # the runner's names still resolve


@pytest.mark.parametrize(
    ("edits", "top", "key", "message"),
    [
        ((), "horizon = 3", None, "not valid TOML"),  # a key given twice
        ((("[env]", "[envs]"),), "", "[envs]", "unknown key"),
        ((("[learner]", "[learn]"),), "", "[learn]", "did you mean 'learner'"),
        ((("horizon = 64", "horizon = 0"),), "", "[horizon]", "integer >= 1"),
        ((("seeds = 8", "seeds = 1"),), "", "[seeds]", "integer >= 2"),
        ((("checkpoints = [16, 32]", "checkpoints = [32, 16]"),), "", "[checkpoints]", "list of steps"),
        ((('kind = "l2_ball"', 'kind = "ball"'),), "", "[set.kind]", "unknown set 'ball'"),
        ((("dim = 2", "dim = 2\nside = 1"),), "", "[set.side]", "takes no argument"),
        ((('[set]\nkind = "l2_ball"\ndim = 2\n', ""),), "", "[set]", "needs a constraint set"),
        ((('name = "quadratic_stream"', 'name = "quadratic"'),), "", "[env.name]", "unknown env"),
        (
            (('name = "quadratic_stream"', 'name = "quadratic_stream"\nbandit_feedback = 1'),),
            "",
            "[env.bandit_feedback]",
            "true or false",
        ),
        ((("lipschitz = [0.5, 2.0]", "lipschitz = []"),), "", "[learner.params.lipschitz]", "empty grid"),
        ((("lipschitz = [0.5, 2.0]", 'lipschitz = "big"'),), "", "[learner.params.lipschitz]", "a number"),
        ((("spread = 0.3", "spred = 0.3"),), "", "[env.params.spred]", "did you mean 'spread'"),
        ((('name = "pftal"', 'name = "pftal"\nnoise = "gaussian"'),), "", "[learner.params.epsilon]", "rho"),
        ((), "grid_chunk = 0", "[grid_chunk]", "integer >= 1"),
        ((), 'zip = ["learner.params.epsilon"]', "[zip]", "list of lists"),
        ((), 'zip = [["learner.params.spread"]]', "[zip]", "not a swept params key"),
        ((), 'zip = [["learner.params.epsilon", "learner.params.lipschitz"]]', "[zip]", "mismatched lengths"),
    ],
)
def test_errors_name_the_file_and_the_key(edits, top, key, message):
    before = _sweep._sweep_jit._cache_size()
    with pytest.raises(ValueError) as err:
        parse_study(_text(top, *edits), "studies/bad.toml")
    text = str(err.value)
    assert text.startswith("studies/bad.toml: "), text
    assert (key is None or key in text) and message in text, text
    assert _sweep._sweep_jit._cache_size() == before


def test_the_components_checks_name_the_section():
    with pytest.raises(ValueError, match=r"^s\.toml: \[learner\.params\] .*epsilon"):
        parse_study(_text("", ("epsilon = [1.0, 10.0, inf]", "epsilon = [1.0, -10.0, inf]")), "s.toml")
    with pytest.raises(ValueError, match=r"^s\.toml: \[env\.params\] .*center"):
        parse_study(_text("", ("center = [0.3, 0.3]", "center = [0.3, 0.3, 0.3]")), "s.toml")


@pytest.mark.parametrize("kind", ["folder", "missing", "binary"])
def test_load_study_names_a_path_that_is_no_study_file(tmp_path, kind):
    path = {"folder": tmp_path, "missing": tmp_path / "none.toml", "binary": tmp_path / "b.toml"}[kind]
    if kind == "binary":
        path.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(ValueError, match=str(path.name if kind != "folder" else path)):
        load_study(path)


def test_build_grid_is_pure_numpy_and_checks_the_zip():
    swept = {"a": np.array([1.0, 2.0]), "b": np.array([10.0, 20.0, 30.0]), "c": np.array([5.0, 6.0])}
    grid = build_grid(swept, [["a", "c"]])
    assert grid.axes == [("a", "c"), ("b",)] and grid.shape == (2, 3) and grid.size == 6
    np.testing.assert_array_equal(grid.values["a"], [1, 1, 1, 2, 2, 2])
    np.testing.assert_array_equal(grid.values["c"], [5, 5, 5, 6, 6, 6])
    np.testing.assert_array_equal(grid.values["b"], [10, 20, 30, 10, 20, 30])
    empty = build_grid({})
    assert empty.axes == [] and empty.shape == () and empty.size == 1 and empty.values == {}
    for zips, message in (
        ([["a", "b"]], "mismatched lengths: a has 2, b has 3"),
        ([["a"], ["a", "c"]], "'a' appears in two groups"),
        ([["d"]], "'d' is not a swept params key"),
        ([[]], "list of lists"),
        ("a", "list of lists"),
    ):
        with pytest.raises(ValueError, match=r"^f\.toml: \[zip\] ") as err:
            build_grid(swept, zips, "f.toml")
        assert message in str(err.value)


def test_the_registry_is_extended_by_name(scratch_declarations):
    entry = registry.register_learner("my_pftal", oco.pftal, oco.PFTALParams)
    assert entry.factory.__wrapped__ is oco.pftal and entry.params is oco.PFTALParams and entry.bound is None
    assert entry.name == "my_pftal" and entry.kind == "learner" and entry.required == ("horizon", "constraint")
    s = parse_study(_text("", ('name = "pftal"', 'name = "my_pftal"')))
    assert s.learner_name == "my_pftal" and s.learner_bound is None and s.size == 6
    with pytest.raises(ValueError, match="already registered"):
        registry.register_learner("my_pftal", oco.ftal, oco.FTALParams)
    with pytest.raises(ValueError, match="NamedTuple class"):
        registry.register_learner("other", oco.ftal, dict, replace=True)
    registry.register_learner("my_pftal", oco.ftal, oco.FTALParams, replace=True)
    assert registry.LEARNERS["my_pftal"].factory.__wrapped__ is oco.ftal
    with pytest.raises(ValueError, match="already registered"):
        registry.register_set("l2_ball", jp.sets.l2_ball)


def test_the_writer_adds_versions_and_writes_mean_se_tables(tmp_path):
    values = np.arange(12, dtype=np.float32).reshape(3, 4) ** 1.5
    mean, se = _outputs.mean_se(values, axis=-1)
    ref_mean, ref_se = jp.summarize(values, axis=-1)
    np.testing.assert_array_equal(mean, ref_mean)
    np.testing.assert_array_equal(se, ref_se)
    np.testing.assert_allclose(se, values.astype(np.float64).std(-1, ddof=1) / 2)
    path = _outputs.write_settings(tmp_path, {"command": "test", "inf": float("inf"), "grid": np.array([1.0, -np.inf]),
                                              "nan": [np.float32("nan")]})  # fmt: skip

    def refuse(token):
        raise ValueError(f"not JSON: {token}")

    settings = json.loads(path.read_text(), parse_constant=refuse)  # strict: no Infinity / NaN tokens
    assert path.name == "settings.json" and settings["command"] == "test" and settings["inf"] == "inf"
    assert settings["grid"] == [1.0, "-inf"] and settings["nan"] == ["nan"]  # docs/guide/studies.md's rule
    assert list(settings)[-1] == "versions"
    assert set(settings["versions"]) == {"jaxpriv", "jax", "numpy", "python", "backend", "device"}
    with pytest.raises(ValueError, match="versions"):
        _outputs.write_settings(tmp_path, {"versions": {}})
    rows = [
        {"name": "a", "mean": float(mean[0]), "se": float(se[0])},
        {"name": "b", "mean": 1.0, "se": 0.5, "bound": 3},
    ]
    table = _outputs.write_table(tmp_path, "summary.csv", rows)
    with table.open() as f:
        read = list(csv.DictReader(f))
    assert list(read[0]) == ["name", "mean", "se", "bound"] and read[0]["bound"] == ""
    assert float(read[0]["mean"]) == float(mean[0]) and read[1]["bound"] == "3"  # full precision, not rounded
    with pytest.raises(ValueError, match="at least one row"):
        _outputs.write_table(tmp_path, "empty.csv", [])


WISHART = """
name = "wishart"
horizon = 32
seeds = 2
[env]
name = "contextual_linear_bandit"
num_actions = 4
dim = 2
[env.params]
theta = [0.5, 0.5]
[learner]
name = "private_linucb"
num_actions = 4
dim = 2
{noise}
[learner.params]
{params}
"""


def test_a_study_file_selects_private_linucbs_wishart_noise():
    # The params class follows the built learner's Spec: Wishart noise takes (epsilon, delta), Gaussian rho.
    s = parse_study(WISHART.format(noise='noise = "wishart"', params="epsilon = [1.0, 2.0]\ndelta = 1e-3"), "w.toml")
    assert type(s.learners[0].params.learner).__name__ == "PrivateLinUCBWishartParams" and s.size == 2
    lp = s.learners[0].params.learner._replace(epsilon=1.0)  # the bound is Theorem 5 of the Wishart variant
    bound = s.learners[0].bound(lp, None, s.learners[0].learner.spec, 32)  # (params, env params, spec, horizon)
    assert bound == theory.private_linucb_wishart_regret_bound(32, 2, *map(float, lp))
    g = parse_study(WISHART.format(noise="", params="rho = 1.0"), "g.toml")
    assert type(g.learners[0].params.learner).__name__ == "PrivateLinUCBParams"
    with pytest.raises(ValueError, match="rho"):  # a Gaussian budget on the Wishart variant
        parse_study(WISHART.format(noise='noise = "wishart"', params="rho = 1.0"), "w.toml")
