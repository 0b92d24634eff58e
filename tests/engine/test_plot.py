"""jaxpriv.plot: what each figure draws (lines, band widths against independently computed standard errors),
on the caller's axes, without touching matplotlib's backend; and stats.paired_difference."""

import matplotlib
import numpy as np
import pytest
from matplotlib.figure import Figure

from jaxpriv import plot, stats


def _axes():
    return Figure().add_subplot()


def _half_width(fill, x):
    """The band's half-width at each ``x`` from the fill's outline (lower edge then upper edge)."""
    verts = fill.get_paths()[0].vertices
    m = len(x)
    lower = verts[1 : m + 1, 1]
    upper = verts[m + 2 : 2 * m + 2, 1][::-1]
    np.testing.assert_allclose(verts[1 : m + 1, 0], x)
    return (upper - lower) / 2.0, (upper + lower) / 2.0


@pytest.fixture
def arms():
    """Two correlated arms on 40 shared seeds: a common per-seed term plus small independent noise."""
    rng = np.random.default_rng(0)
    steps = np.array([10, 100, 1000, 10000])
    common = rng.normal(size=(40, 1)) * np.sqrt(steps) * 5.0 + 3.0 * np.sqrt(steps)
    a = common + rng.normal(size=(40, 4)) + 50.0
    b = common + rng.normal(size=(40, 4)) + 20.0
    c = common + rng.normal(size=(40, 4)) * 2.0 + 80.0
    return steps, a, b, c


def _se(x):
    x = np.asarray(x, np.float64)
    return np.sqrt(np.sum((x - x.mean(0)) ** 2, 0) / (x.shape[0] - 1) / x.shape[0])


def test_paired_difference_is_the_standard_error_of_per_seed_differences(arms):
    _, a, b, _ = arms
    mean, se = stats.paired_difference(a, b)
    d = a - b
    np.testing.assert_allclose(mean, d.sum(0) / d.shape[0], rtol=1e-12)
    np.testing.assert_allclose(se, _se(d), rtol=1e-12)
    unpaired = np.sqrt(_se(a) ** 2 + _se(b) ** 2)
    assert np.all(se < unpaired / 10)  # the shared term cancels in the paired difference only
    m_t, se_t = stats.paired_difference(a.T, b.T, axis=1)  # the seed axis can be any axis
    np.testing.assert_allclose(se_t, se, rtol=1e-12)
    np.testing.assert_allclose(m_t, mean, rtol=1e-12)
    _, se1 = stats.paired_difference(a[:1], b[:1])
    np.testing.assert_array_equal(se1, 0.0)


def test_regret_vs_t_draws_a_line_per_curve_with_band_se(arms):
    steps, a, b, _ = arms
    ax = _axes()
    artists = plot.regret_vs_t(steps, {"A": a, "B": b}, ax=ax, band=1.96, logy=False)
    assert len(ax.get_lines()) == 2 and len(artists) == 4
    assert [ln.get_label() for ln in ax.get_lines()] == ["A", "B"]
    for (line, fill), x in zip([artists[:2], artists[2:]], (a, b), strict=True):
        np.testing.assert_allclose(line.get_ydata(), x.mean(0), rtol=1e-12)
        half, mid = _half_width(fill, steps)
        np.testing.assert_allclose(half, 1.96 * _se(x), rtol=1e-9)
        np.testing.assert_allclose(mid, x.mean(0), rtol=1e-9)
    assert ax.get_xscale() == "log" and ax.get_yscale() == "linear"


def test_price_of_privacy_band_is_the_paired_se(arms):
    steps, a, b, _ = arms
    ax = _axes()
    line, fill = plot.price_of_privacy(steps, a, b, ax=ax, band=2.0, label="PFTAL")
    assert len(ax.get_lines()) == 1 and line.get_label() == "PFTAL"
    np.testing.assert_allclose(line.get_ydata(), (a - b).mean(0), rtol=1e-9)
    half, _ = _half_width(fill, steps)
    np.testing.assert_allclose(half, 2.0 * _se(a - b), rtol=1e-9)
    assert np.all(half < 2.0 * np.sqrt(_se(a) ** 2 + _se(b) ** 2) / 10)


def test_paired_difference_draws_each_label_against_the_reference(arms):
    steps, a, b, c = arms
    ax = _axes()
    artists = plot.paired_difference(steps, {"A": a, "B": b, "C": c}, "B", ax=ax, band=1.0)
    assert len(ax.get_lines()) == 3 and len(artists) == 5  # A − B, C − B and y = 0
    np.testing.assert_array_equal(artists[-1].get_ydata(), [0.0, 0.0])
    for (line, fill), x in zip([artists[0:2], artists[2:4]], (a, c), strict=True):
        np.testing.assert_allclose(line.get_ydata(), (x - b).mean(0), rtol=1e-9)
        half, _ = _half_width(fill, steps)
        np.testing.assert_allclose(half, _se(x - b), rtol=1e-9)
    with pytest.raises(ValueError, match="reference"):
        plot.paired_difference(steps, {"A": a}, "Z", ax=_axes())


def test_final_vs_budget_draws_inf_as_a_horizontal_line_and_bounds_dashed():
    rng = np.random.default_rng(1)
    budgets = np.array([0.1, 1.0, 10.0, np.inf])
    scale = np.array([[100.0], [30.0], [10.0], [5.0]])
    finals = {"PFTAL": rng.gamma(4.0, size=(4, 30)) * scale, "FTAL": rng.gamma(4.0, size=(4, 30))}
    ax = _axes()
    artists = plot.final_vs_budget(budgets, finals, bounds={"PFTAL": [1e3, 3e2, 1e2, 50.0]}, ax=ax, logy=False)
    # PFTAL: line, band, ε = ∞ line, bound; FTAL: line, band, ε = ∞ line.
    assert len(artists) == 7 and len(ax.get_lines()) == 5
    line, fill, inf_line, bound = artists[:4]
    np.testing.assert_allclose(line.get_xdata(), budgets[:3])
    np.testing.assert_allclose(line.get_ydata(), finals["PFTAL"][:3].mean(1), rtol=1e-12)
    half, _ = _half_width(fill, budgets[:3])
    np.testing.assert_allclose(half, 1.96 * _se(finals["PFTAL"][:3].T), rtol=1e-9)
    np.testing.assert_allclose(inf_line.get_ydata(), [finals["PFTAL"][3].mean()] * 2, rtol=1e-12)
    assert inf_line.get_linestyle() == ":" and inf_line.get_color() == line.get_color()
    assert bound.get_linestyle() == "--" and bound.get_color() == line.get_color()
    np.testing.assert_allclose(bound.get_ydata(), [1e3, 3e2, 1e2])
    # Only the non-private point: no line on the ε axis, just the dotted level.
    ax2 = _axes()
    only = plot.final_vs_budget([np.inf], {"UCB": np.ones((1, 5))}, ax=ax2)
    assert len(only) == 1 and only[0].get_linestyle() == ":"
    (other,) = plot.final_vs_budget([np.inf], {"FTAL": np.ones((1, 5))}, ax=ax2)  # the next colour of the cycle
    assert other.get_color() != only[0].get_color() and len(ax2.get_lines()) == 2


def test_log_axes_keep_the_band_positive():
    steps = np.array([1, 10, 100])
    x = np.array([[0.5, 5.0, 50.0], [-0.5, 15.0, 150.0]])  # the lower band edge goes negative
    ax = _axes()
    _, fill = plot.regret_vs_t(steps, {"A": x}, ax=ax)
    assert ax.get_yscale() == "log"
    assert np.all(fill.get_paths()[0].vertices[:, 1] > 0)


def test_ax_none_draws_on_pyplots_current_axes_and_no_call_changes_the_backend(tmp_path, arms):
    steps, a, b, _ = arms
    before = matplotlib.get_backend()
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    try:
        plot.regret_vs_t(steps, {"A": a, "B": b})
        plot.price_of_privacy(steps, a, b)
        assert len(ax.get_lines()) == 3
    finally:
        plt.close(fig)
    fig2 = plot.regret_curves({"FTAL": (steps, a), "OGD": (steps, b)}, tmp_path / "r.png", title="t")
    assert (tmp_path / "r.png").stat().st_size > 0
    lines = fig2.axes[0].get_lines()
    assert [ln.get_linestyle() for ln in lines] == ["-", "--"]
    assert matplotlib.get_backend() == before
