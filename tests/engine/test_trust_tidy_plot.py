"""Issue 35, part 6: no silently wrong number from ``jaxpriv.tidy``, ``jaxpriv.plot``, the AdaP bounds or
``mechanisms.prefix_sums``. Each case is either the right number (a vector grid axis labelled by its value,
each learner's own seed count, a huge finite input clipped like any other, a negative curve shown on a
symlog axis) or a ``ValueError`` naming the argument before anything is computed, drawn or written.

Everything here is built from small NumPy arrays (no sweep is compiled); figures are drawn on
``matplotlib.figure.Figure`` (Agg), never through pyplot."""

import types
import warnings

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

import jaxpriv as jp
from jaxpriv import bandits, mechanisms, plot, tidy

xr = pytest.importorskip("xarray")
pd = pytest.importorskip("pandas")

STEPS = np.array([1, 2, 4], np.int32)
CENTER = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.5, 0.0]])
LABELS = ["[0.0 0.0 0.0]", "[1.0 0.0 0.0]", "[0.0 0.5 0.0]"]


def _result(shape, seed=0, steps=STEPS):
    """A ``Result`` of ``shape + [m]`` random float32 regrets and int32 counts."""
    rng = np.random.default_rng(seed)
    r = rng.random((*shape, len(steps))).astype(np.float32)
    counts = rng.integers(0, 3, shape).astype(np.int32)
    return jp.Result(np.asarray(steps, np.int32), r, r + 1, np.ones_like(r), None, counts, counts * 0)


def _stats(count, seed=0, grid=(2,)):
    """A ``SweepStats`` over ``count`` seeds (``grid``: its leading grid axis, ``()`` for none)."""
    rng = np.random.default_rng(seed)
    g = (*grid, len(STEPS))
    return jp.SweepStats(
        STEPS, count, rng.random(g), rng.random(g), rng.random(g), rng.random(g), (0.5,), rng.random((*g, 1)),
        rng.random(g), np.zeros(grid, np.int32), np.zeros(grid, np.int32),
    )  # fmt: skip


def _same(a, b):
    for name in jp.Result._fields:
        if name == "info":  # the learner's Info is not in the tidy table (not converted; Result.info)
            continue
        x, y = getattr(a, name), getattr(b, name)
        assert (x is None) == (y is None), name
        if x is not None:
            assert np.asarray(y).dtype == np.asarray(x).dtype, name
            np.testing.assert_array_equal(y, x, err_msg=name)


def _axes():
    return Figure().add_subplot()


# --- tidy: a vector grid axis --------------------------------------------------------------------------------


@pytest.mark.parametrize("zipped", [False, True], ids=["own_axis", "zipped_with_epsilon"])
def test_a_vector_grid_axis_is_labelled_by_its_value_not_its_position(zipped):
    r = _result((3, 4))
    grid = {"env.params.center": CENTER}
    if zipped:
        grid = {"learner.params.epsilon": np.array([1.0, 2.0, 4.0]), **grid}
    ds = tidy.to_xarray(r, grid)
    df = tidy.to_dataframe(ds)
    assert list(df["center"].unique()) == LABELS  # was 0, 1, 2 (or no column at all)
    np.testing.assert_array_equal(ds.regret.where(ds.center == LABELS[1], drop=True).squeeze().values, r.regret[1])
    back = tidy.grid_values(ds)
    np.testing.assert_array_equal(back["env.params.center"], CENTER)
    _same(r, tidy.from_xarray(ds))


def test_a_vector_grid_axis_is_labelled_in_summary_long_csv(tmp_path):
    from jaxpriv.experiments.study import write_tidy
    from jaxpriv.experiments.study_file import Grid

    r = _result((3, 4))
    grid = Grid([("env.params.center",)], (3,), {"env.params.center": CENTER})
    study = types.SimpleNamespace(name="s", horizon=4, env_name="quadratic_stream", seeds=4, compare=False,
                                  reference=None, learner_name="pftal", grid=grid, axes=grid.axes)  # fmt: skip
    res = types.SimpleNamespace(study=study, results=lambda: {"pftal": r}, out=tmp_path, horizons=None, sizes=None)
    files = write_tidy(res)
    table = pd.read_parquet(files["long"]) if files["long"].suffix == ".parquet" else pd.read_csv(files["long"])
    assert list(table["center"].unique()) == LABELS
    with xr.open_dataset(files["nc"], engine="scipy") as read:
        assert list(tidy.to_dataframe(read.load())["center"].unique()) == LABELS


# --- tidy: learners with different seed counts ----------------------------------------------------------------


def test_learners_with_different_seed_counts_keep_their_own_n_and_mean(tmp_path):
    a, b = _result((8,), seed=1), _result((4,), seed=2)
    ds = tidy.to_xarray({"A": a, "B": b})
    assert list(ds.n_seeds.values) == [8, 4]
    df = tidy.to_dataframe(ds, quantiles=(0.5,))
    assert not df[["mean", "se", "q0.5"]].isna().any().any()  # was: B's mean NaN
    for label, r in (("A", a), ("B", b)):
        rows = df[df.learner == label]
        x = np.asarray(r.regret, np.float64)
        assert list(rows.n) == [x.shape[0]] * 3  # was 8 for B
        np.testing.assert_array_equal(rows["mean"], x.mean(0))
        np.testing.assert_array_equal(rows["se"], x.std(0, ddof=1) / np.sqrt(x.shape[0]))
        np.testing.assert_array_equal(rows["q0.5"], np.quantile(x, 0.5, axis=0))
    back = tidy.from_xarray(ds)  # each learner's own seeds and dtypes, not NaN padding
    _same(a, back["A"])
    _same(b, back["B"])
    path = tidy.write_netcdf(ds, tmp_path / "r.nc")
    with xr.open_dataset(path, engine="scipy") as read:
        read = read.load()
    back = tidy.from_xarray(read)
    _same(b, back["B"])
    assert list(tidy.to_dataframe(read).n) == [8] * 3 + [4] * 3


def test_sweep_stats_with_different_counts_use_their_own_count():
    s1, s2 = _stats(4, seed=1), _stats(16, seed=2)
    df = tidy.to_dataframe(tidy.to_xarray({"a": s1, "b": s2}))
    np.testing.assert_allclose(df[df.learner == "b"]["se"], np.sqrt(s2.regret_var / 16).ravel())  # was / 4
    assert list(df.n) == [4] * 6 + [16] * 6
    back = tidy.from_xarray(tidy.to_xarray({"a": s1, "b": s2}))
    assert (back["a"].count, back["b"].count) == (4, 16)


def test_sweep_stats_without_a_grid_axis_convert():
    s = _stats(4, grid=())
    back = tidy.from_xarray(tidy.to_xarray(s))  # was a TypeError from reshape (0-d counts)
    np.testing.assert_array_equal(back.regret_mean, s.regret_mean)
    np.testing.assert_array_equal(back.nonfinite_steps, s.nonfinite_steps)
    assert list(tidy.to_dataframe(s).n) == [4] * 3


def test_learners_on_different_checkpoints_or_kinds_are_refused():
    with pytest.raises(ValueError, match=r"result\['B'\] has checkpoints"):
        tidy.to_xarray({"A": _result((4,)), "B": _result((4,), steps=[1, 2, 8])})
    with pytest.raises(ValueError, match="mixes Results and SweepStats"):
        tidy.to_xarray({"A": _result((4,)), "B": _stats(4, grid=())})


# --- tidy: deep failures become clear errors --------------------------------------------------------------------


def test_tidy_refuses_what_it_cannot_read_naming_the_argument(tmp_path):
    r = _result((3, 4))
    with pytest.raises(ValueError, match="no 'regret' variable"):
        tidy.from_xarray(tidy.to_xarray(r).drop_vars("regret"))
    with pytest.raises(ValueError, match="grid must be a mapping"):
        tidy.to_xarray(r, np.array([1.0, 2.0, 3.0]))
    with pytest.raises(ValueError, match=r"result must be a jaxpriv\.Result"):
        tidy.to_xarray("x")
    with pytest.raises(ValueError, match=r"result\['B'\] must be a jaxpriv\.Result"):
        tidy.to_xarray({"A": r, "B": 3})
    a_file = tmp_path / "file"
    a_file.write_text("")
    with pytest.raises(ValueError, match=r"path .* lies under .*which is a file"):
        tidy.write_netcdf(tidy.to_xarray(r), a_file / "results.nc")
    with pytest.raises(ValueError, match=r"path .* is a folder"):
        tidy.write_netcdf(tidy.to_xarray(r), tmp_path)


# --- plot ------------------------------------------------------------------------------------------------------


def test_price_of_privacy_refuses_arms_on_different_seeds():
    rng = np.random.default_rng(0)
    ax = _axes()
    with pytest.raises(ValueError, match="private has 8 seeds and nonprivate 1"):  # was broadcast, unpaired SE
        plot.price_of_privacy(STEPS, rng.random((8, 3)), rng.random((1, 3)), ax=ax)
    with pytest.raises(ValueError, match="private has 8 seeds and nonprivate 4"):
        plot.price_of_privacy(STEPS, rng.random((8, 3)), rng.random((4, 3)), ax=ax)
    with pytest.raises(ValueError, match=r"curves\['a'\] has 8 seeds and curves\['ref'\] 4"):
        plot.paired_difference(STEPS, {"a": rng.random((8, 3)), "ref": rng.random((4, 3))}, "ref", ax=ax)
    assert not ax.get_lines()


def test_final_vs_budget_refuses_a_nan_budget_and_a_zero_on_a_log_axis():
    rng = np.random.default_rng(0)
    finals = {"a": rng.random((3, 4)) + 1}
    ax = _axes()
    with pytest.raises(ValueError, match=r"budgets must be numbers or inf .*\[nan\]"):  # was: a non-private line
        plot.final_vs_budget([np.nan, 1.0, 2.0], finals, ax=ax)
    with pytest.raises(ValueError, match=r"budgets must be > 0 on a log ε axis"):  # was: dropped silently
        plot.final_vs_budget([0.0, 1.0, 2.0], finals, ax=ax)
    assert not ax.get_lines()
    line, _ = plot.final_vs_budget([0.0, 1.0, 2.0], finals, ax=ax, logx=False)
    np.testing.assert_array_equal(line.get_xdata(), [0.0, 1.0, 2.0])


def test_final_vs_budget_refuses_bounds_of_the_wrong_length_or_for_no_curve():
    rng = np.random.default_rng(0)
    finals = {"a": rng.random((3, 4)) + 1}
    with pytest.raises(ValueError, match=r"bounds\['a'\] must have shape \[3\]"):
        plot.final_vs_budget([1.0, 2.0, 3.0], finals, bounds={"a": [1.0, 2.0]}, ax=_axes())
    with pytest.raises(ValueError, match=r"bounds\['b'\] is for no curve"):
        plot.final_vs_budget([1.0, 2.0, 3.0], finals, bounds={"b": [1.0, 2.0, 3.0]}, ax=_axes())


@pytest.mark.parametrize("band", [np.nan, np.inf, -1.0])
def test_a_band_that_is_not_a_finite_nonnegative_number_is_refused(band):
    rng = np.random.default_rng(0)
    x = rng.random((4, 3)) + 1
    calls = [
        lambda ax: plot.regret_vs_t(STEPS, {"a": x}, band=band, ax=ax),  # nan: was drawn without a band
        lambda ax: plot.final_vs_budget([1.0, 2.0, 3.0], {"a": x.T}, band=band, ax=ax),
        lambda ax: plot.price_of_privacy(STEPS, x, x * 0.5, band=band, ax=ax),
        lambda ax: plot.paired_difference(STEPS, {"a": x, "b": x * 0.5}, "b", band=band, ax=ax),
    ]
    for call in calls:
        ax = _axes()
        with pytest.raises(ValueError, match="band must be a finite number >= 0"):
            call(ax)
        assert not ax.get_lines()


def test_steps_and_curves_of_different_lengths_are_refused(tmp_path):
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match=r"curves\['a'\] must have shape \[seeds, 3\]"):
        plot.regret_vs_t(STEPS, {"a": rng.random((4, 5))}, ax=_axes())
    with pytest.raises(ValueError, match=r"private must have shape \[seeds, 3\]"):
        plot.price_of_privacy(STEPS, rng.random((4, 5)), rng.random((4, 5)), ax=_axes())
    with pytest.raises(ValueError, match="steps must be > 0 on a log t axis"):
        plot.regret_vs_t([0, 1, 2], {"a": rng.random((4, 3))}, ax=_axes())


def test_regret_curves_refuses_a_path_under_a_file(tmp_path):
    a_file = tmp_path / "file"
    a_file.write_text("")
    curves = {"a": (STEPS, np.random.default_rng(0).random((4, 3)))}
    with pytest.raises(ValueError, match=r"path .* lies under .*which is a file"):
        plot.regret_curves(curves, path=a_file / "regret.png")
    assert a_file.read_text() == ""


def test_a_negative_curve_on_a_log_axis_is_drawn_on_a_symlog_axis():
    rng = np.random.default_rng(0)
    negative = -(rng.random((4, 3)) + 1.0)
    positive = rng.random((4, 3)) + 1.0
    ax = _axes()
    line, _ = plot.regret_vs_t(STEPS, {"neg": negative}, ax=ax)
    assert ax.get_yscale() == "symlog"  # was "log": the curve was not drawn at all
    np.testing.assert_allclose(line.get_ydata(), negative.mean(0))
    plot.regret_vs_t(STEPS, {"pos": positive}, ax=ax)  # a later positive curve keeps the negative one visible
    assert ax.get_yscale() == "symlog"
    lo, hi = ax.get_ylim()
    assert lo < negative.mean(0).min() and hi > positive.mean(0).max()
    ax = _axes()
    plot.final_vs_budget([1.0, 2.0, np.inf], {"a": negative.T[:, :3]}, ax=ax)
    assert ax.get_yscale() == "symlog"
    ax = _axes()
    plot.regret_vs_t(STEPS, {"pos": positive}, ax=ax)
    assert ax.get_yscale() == "log"  # positive curves keep the log axis
    FigureCanvasAgg(ax.figure).draw()  # renders


# --- the AdaP bounds ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("means", [[0.5, 2.0], [0.5, -0.1], [0.5, np.nan], []])
def test_adap_ucb_regret_bound_refuses_means_outside_0_1_as_the_lower_bound_does(means):
    with pytest.raises(ValueError, match=r"means must be a non-empty \[K\] array of arm means in \[0, 1\]"):
        bandits.adap_ucb_regret_bound(means, 100, 1.0, 4.0)
    with pytest.raises(ValueError, match=r"means must be a non-empty \[K\] array of arm means in \[0, 1\]"):
        bandits.adap_lower_bound(means, 100, 1.0)


# --- prefix_sums: a finite input of huge norm ---------------------------------------------------------------


@pytest.mark.parametrize("noise", ["gamma", "laplace"])
def test_prefix_sums_clips_a_huge_finite_input_instead_of_zeroing_it(noise):
    mech = mechanisms.binary_tree(4, 2, noise=noise)
    params = mechanisms.TreeParams(epsilon=np.inf, sensitivity=2.0)
    xs = np.array([[1e300, -1e300], [0.0, 1e300], [0.25, 0.0], [3e38, 0.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # was: a RuntimeWarning and zeros
        out = mechanisms.prefix_sums(mech, params, xs, 0, with_nonfinite=True)
    assert out.nonfinite_inputs == 0
    steps = np.diff(np.asarray(out.releases, np.float64), axis=0, prepend=0.0)
    unit = 1 / np.sqrt(2) if noise == "gamma" else 0.5  # x·Δ/||x|| for x ∝ (1, -1): L2 or L1
    np.testing.assert_allclose(steps, [[2 * unit, -2 * unit], [0, 2], [0.25, 0], [2, 0]], rtol=1e-6)
    f32 = mechanisms.prefix_sums(mech, params, np.array([[3e38, 3e38]], np.float32), 0)  # float32 input too
    np.testing.assert_allclose(np.asarray(f32), [[2 * unit, 2 * unit]], rtol=1e-6)


def test_prefix_sums_still_zeroes_and_counts_nonfinite_inputs_and_refuses_a_huge_sensitivity():
    mech = mechanisms.binary_tree(4, 2)
    with pytest.warns(RuntimeWarning, match="1 input"):
        out = mechanisms.prefix_sums(mech, mechanisms.TreeParams(epsilon=np.inf), np.array([[np.nan, 1e300]]), 0,
                                     with_nonfinite=True)  # fmt: skip
    assert out.nonfinite_inputs == 1
    np.testing.assert_array_equal(np.asarray(out.releases), [[0.0, 0.0]])
    with pytest.raises(ValueError, match=r"params\.sensitivity = 1e\+38"):
        mechanisms.prefix_sums(mech, mechanisms.TreeParams(epsilon=1.0, sensitivity=1e38), np.array([[1e300, 0.0]]), 0)
