"""``jaxpriv.tidy``: a sweep's ``Result`` as a labelled ``xarray.Dataset`` (named grid dimensions, the grid values as
coordinates) and back, exactly; through netCDF; the long table's statistics against NumPy's; ``SweepStats``;
several learners; and ``import jaxpriv`` not importing xarray or pandas."""

import subprocess
import sys

import jax
import numpy as np
import pytest

import jaxpriv as jp
from jaxpriv import envs, oco, sets, tidy

xr = pytest.importorskip("xarray")
pd = pytest.importorskip("pandas")

EPS = np.repeat([1.0, 10.0, np.inf], 2)
LIP = np.tile([0.5, 2.0], 3)
GRID = {"learner.params.epsilon": EPS, "learner.params.lipschitz": LIP}
AXES = [("learner.params.epsilon",), ("learner.params.lipschitz",)]


@pytest.fixture(scope="module")
def result():
    """PFTAL over a 3 x 2 product grid (zipped, flattened row-major as jaxpriv.sweep takes it), 4 seeds."""
    ball = sets.l2_ball(2)
    env_p = envs.QuadraticParams(center=np.array([0.3, 0.3]))
    params = jp.SimParams(oco.PFTALParams(epsilon=EPS, lipschitz=LIP), env_p)
    return jp.sweep(oco.pftal(32, ball), envs.quadratic_stream(ball), params, jax.random.key(0), 32, 4, [8, 16])


def _assert_same(a, b):
    for name in jp.Result._fields:
        if name == "info":  # the learner's Info is not in the tidy table (not converted; Result.info)
            continue
        x, y = getattr(a, name), getattr(b, name)
        assert (x is None) == (y is None), name
        if name == "private":  # a plain bool (the learner's declaration), kept as an attribute
            assert x is y, name
            continue
        if x is not None:
            x = np.asarray(x)
            assert y.dtype == x.dtype, name
            np.testing.assert_array_equal(y, x, err_msg=name)


def test_a_product_grid_gets_one_named_dimension_per_axis_and_round_trips(result, tmp_path):
    ds = tidy.to_xarray(result, GRID, axes=AXES)
    assert ds.regret.dims == ("epsilon", "lipschitz", "seed", "step")
    np.testing.assert_array_equal(ds.epsilon.values, [1.0, 10.0, np.inf])
    np.testing.assert_array_equal(ds.lipschitz.values, [0.5, 2.0])
    np.testing.assert_array_equal(ds.step.values, [8, 16, 32])
    assert set(ds.data_vars) == {"regret", "loss", "best", "nonfinite_inputs", "nonfinite_steps"}  # no gap: exact
    # A labelled selection is the flattened grid point (row-major: lipschitz fastest).
    np.testing.assert_array_equal(ds.regret.sel(epsilon=10.0, lipschitz=2.0).values, np.asarray(result.regret)[3])
    _assert_same(result, tidy.from_xarray(ds))
    back = tidy.grid_values(ds)
    assert set(back) == set(GRID)
    for key in GRID:
        np.testing.assert_array_equal(back[key], GRID[key])
    path = tidy.write_netcdf(ds, tmp_path / "results.nc")
    with xr.open_dataset(path, engine="scipy") as read:
        _assert_same(result, tidy.from_xarray(read.load()))
        np.testing.assert_array_equal(tidy.grid_values(read)["learner.params.lipschitz"], LIP)


def test_zipped_leaves_share_one_dimension_and_a_bad_grid_is_refused(result):
    ds = tidy.to_xarray(result, GRID)
    assert ds.regret.dims == ("epsilon", "seed", "step") and ds.lipschitz.dims == ("epsilon",)
    np.testing.assert_array_equal(ds.lipschitz.values, LIP)
    _assert_same(result, tidy.from_xarray(ds))
    assert tidy.to_xarray(result).regret.dims == ("grid", "seed", "step")
    with pytest.raises(ValueError, match="6 values"):
        tidy.to_xarray(result, {"epsilon": EPS[:3]})
    with pytest.raises(ValueError, match="row-major product"):
        tidy.to_xarray(result, {"a": np.arange(6.0), "b": np.arange(6.0)}, axes=[("a",), ("b",)])


def test_the_long_table_holds_numpys_statistics(result):
    df = tidy.to_dataframe(tidy.to_xarray(result, GRID, axes=AXES), quantiles=(0.1, 0.5, 0.9))
    assert list(df.columns) == ["variable", "epsilon", "lipschitz", "step", "mean", "se", "n", "q0.1", "q0.5", "q0.9"]
    assert len(df) == 6 * 3 and set(df.variable) == {"regret"}
    regret = np.asarray(result.regret, np.float64)
    for row in df.itertuples():
        g = int(np.flatnonzero((EPS == row.epsilon) & (LIP == row.lipschitz))[0])
        x = regret[g, :, [8, 16, 32].index(row.step)]
        assert row.mean == x.mean() and row.se == x.std(ddof=1) / 2 and row.n == 4
        assert row._9 == np.quantile(x, 0.5)  # q0.5
    both = tidy.to_dataframe(result, GRID, variables=("regret", "loss"))
    assert len(both) == 2 * 6 * 3 and list(both.variable.unique()) == ["regret", "loss"]
    with pytest.raises(ValueError, match="no variable 'gap'"):
        tidy.to_dataframe(result, GRID, variables=("gap",))


def test_several_learners_share_the_grid_on_a_learner_dimension(result):
    other = result._replace(regret=np.asarray(result.regret) * 2)
    ds = tidy.to_xarray({"PFTAL": result, "double": other}, GRID, axes=AXES)
    assert ds.regret.dims == ("learner", "epsilon", "lipschitz", "seed", "step")
    assert list(ds.learner.values) == ["PFTAL", "double"]
    back = tidy.from_xarray(ds)
    _assert_same(result, back["PFTAL"])
    _assert_same(other, back["double"])
    df = tidy.to_dataframe(ds)
    assert list(df.columns[:2]) == ["variable", "learner"] and len(df) == 2 * 6 * 3
    ratio = df[df.learner == "double"]["mean"].to_numpy() / df[df.learner == "PFTAL"]["mean"].to_numpy()
    np.testing.assert_allclose(ratio[np.isfinite(ratio)], 2.0, rtol=1e-6)


def test_sweep_stats_convert_with_a_quantile_dimension():
    rng = np.random.default_rng(0)
    g, m = 6, 3
    s = jp.SweepStats(
        np.array([8, 16, 32], np.int32), 4, rng.random((g, m)), rng.random((g, m)), rng.random((g, m)),
        rng.random((g, m)), (0.25, 0.5), rng.random((g, m, 2)), rng.random((g, m)),
        np.zeros(g, np.int32), np.zeros(g, np.int32),
    )  # fmt: skip
    ds = tidy.to_xarray(s, GRID, axes=AXES)
    assert ds.regret_quantiles.dims == ("epsilon", "lipschitz", "step", "quantile")
    back = tidy.from_xarray(ds)
    assert back.count == 4 and back.quantiles == (0.25, 0.5)
    for name in ("regret_mean", "regret_var", "regret_quantiles", "loss_mean", "nonfinite_steps"):
        np.testing.assert_array_equal(getattr(back, name), getattr(s, name))
    df = tidy.to_dataframe(ds)
    assert list(df.columns[-5:]) == ["mean", "se", "n", "q0.25", "q0.5"]
    np.testing.assert_array_equal(df["mean"].to_numpy(), s.regret_mean.ravel())
    np.testing.assert_allclose(df["se"].to_numpy(), np.sqrt(s.regret_var / 4).ravel())


def test_importing_jaxpriv_imports_neither_xarray_nor_pandas():
    code = "import sys, jaxpriv, jaxpriv.tidy; print('xarray' in sys.modules, 'pandas' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


def test_grid_keys_named_like_the_tables_dimensions(result):
    """Issue 45. Before: a grid key ``seed`` / ``step`` gave a raw xarray error (a dimension named twice)."""
    for key in ("seed", "step", "quantile"):
        with pytest.raises(ValueError, match=rf"grid key '{key}' is one of the table's own dimensions"):
            tidy.to_xarray(result, {key: np.arange(6.0)})
    ds = tidy.to_xarray(result, {"learner.params.step": np.arange(6.0)})  # labelled by its whole path
    assert ds.regret.dims == ("learner.params.step", "seed", "step")
    np.testing.assert_array_equal(ds["learner.params.step"].values, np.arange(6.0))
