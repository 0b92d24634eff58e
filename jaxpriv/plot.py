"""The field's standard figures, drawn on a caller's matplotlib axes.

Four figures, each a function of per-seed arrays (NumPy or JAX) that computes
means and standard errors itself and draws a mean line with a ``± band·SE``
band (1.96: a 95% interval for the mean):

* :func:`regret_vs_t`: cumulative regret against ``t``, one line per curve;
* :func:`final_vs_budget`: final regret against the swept privacy budget, with
  the theorem's bound dashed in the same colour and the non-private limit
  (``ε = ∞``) as a dotted horizontal line;
* :func:`price_of_privacy`: regret(private) − regret(non-private) against ``t``;
* :func:`paired_difference`: each curve minus a reference curve against ``t``.

The two difference figures take arms run on shared seed keys, so their band is
the paired standard error (the standard error of the per-seed differences,
:func:`jaxpriv.stats.paired_difference`), not ``sqrt(SE_a² + SE_b²)``: common
random numbers make the arms correlated, and the unpaired formula can
overstate the error by orders of magnitude.

No function here selects a matplotlib backend. Each takes ``ax=``; without it
the figure is drawn on ``matplotlib.pyplot.gca()`` (what a notebook shows).
Code that writes files draws on a ``matplotlib.figure.Figure`` without pyplot::

    fig = matplotlib.figure.Figure(figsize=(6.4, 4.4))
    ax = fig.add_subplot()
    plot.regret_vs_t(steps, {"PFTAL": regret}, ax=ax)
    fig.savefig("regret.png")

Each function returns the artists it created (lines and bands, in drawing
order); it also sets the axes' scales and labels and adds a legend.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from jaxpriv import sim, stats

_BAND_ALPHA = 0.2


def _axes(ax: Any) -> Any:
    """``ax``, or pyplot's current axes (imported only then: pyplot holds process-wide state)."""
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt

    return plt.gca()


def _per_seed(x: ArrayLike, name: str) -> np.ndarray:
    """``x`` as float64 ``[seeds, m]`` (a 1-D array is one seed)."""
    a = np.asarray(x, np.float64)
    if a.ndim == 1:
        a = a[None, :]
    if a.ndim != 2:
        raise ValueError(f"{name} must have shape [seeds, m], got {a.shape}")
    return a


def _log_floor(values: np.ndarray) -> float:
    """The lowest band edge drawn on a log axis: a tenth of the smallest positive finite value (else 1e-3)."""
    pos = values[np.isfinite(values) & (values > 0)]
    return float(pos.min()) * 0.1 if pos.size else 1e-3


def _band(ax: Any, x: np.ndarray, mean: np.ndarray, se: np.ndarray, band: float, label: str | None, **kw: Any) -> list:
    """A mean line and its ``± band·SE`` fill in the line's colour."""
    (line,) = ax.plot(x, mean, label=label, lw=1.6, **kw)
    lo, hi = mean - band * se, mean + band * se
    if ax.get_yscale() == "log":  # a lower edge at or below 0 would vanish from the axes
        lo = np.maximum(lo, _log_floor(mean))
    fill = ax.fill_between(x, lo, hi, color=line.get_color(), alpha=_BAND_ALPHA, lw=0)
    return [line, fill]


def _finish(ax: Any, xlabel: str, ylabel: str) -> None:
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(True, which="both", alpha=0.3)
    if ax.get_legend_handles_labels()[1]:
        ax.legend(fontsize=8)


def _scales(ax: Any, logx: bool, logy: bool) -> None:
    # Set before drawing so that the bands know whether to floor their lower edge.
    if logx:
        ax.set_xscale("log")
    if logy:
        ax.set_yscale("log")


def regret_vs_t(
    steps: ArrayLike,
    curves: Mapping[str, ArrayLike],
    *,
    ax: Any = None,
    band: float = 1.96,
    logx: bool = True,
    logy: bool = True,
    ylabel: str = "cumulative regret",
) -> list:
    """Mean regret against ``t`` with a ``± band·SE`` band, one line per curve.

    Args:
      steps: ``[m]`` the checkpoints (``Result.steps``).
      curves: label -> ``[seeds, m]`` regret at the checkpoints (``Result.regret``, one grid point).
      ax: the axes to draw on (``pyplot.gca()`` when ``None``).
      band: half-width of the band in standard errors of the mean (ddof = 1).
      logx, logy: logarithmic axes (on a log ``y`` axis a band's lower edge is floored at a tenth of
        the smallest positive mean, so it stays visible).
      ylabel: the ``y`` axis label.

    Returns:
      ``[line, band]`` for each curve, in order.
    """
    ax = _axes(ax)
    _scales(ax, logx, logy)
    x = np.asarray(steps)
    artists: list = []
    for label, curve in curves.items():
        mean, se = sim.summarize(_per_seed(curve, f"curves[{label!r}]"), axis=0)
        artists += _band(ax, x, mean, se, band, label)
    _finish(ax, "t", ylabel)
    return artists


def final_vs_budget(
    budgets: ArrayLike,
    finals: Mapping[str, ArrayLike],
    *,
    bounds: Mapping[str, ArrayLike] | None = None,
    ax: Any = None,
    band: float = 1.96,
    xlabel: str = "ε",
    logx: bool = True,
    logy: bool = True,
) -> list:
    """Final regret against the swept privacy budget, with the theorem's bound where one is given.

    Finite budgets are drawn as a line with markers and a ``± band·SE`` band; a non-finite budget
    (``inf``: the non-private limit, which has no place on the ``x`` axis) is drawn as a dotted
    horizontal line at its mean, in the curve's colour.

    Args:
      budgets: ``[G]`` the budget of each grid point.
      finals: label -> ``[G, seeds]`` final regret.
      bounds: label -> ``[G]`` the bound, drawn dashed in the colour of ``finals[label]`` (finite
        budgets only).
      ax: the axes to draw on (``pyplot.gca()`` when ``None``).
      band: half-width of the band in standard errors of the mean (ddof = 1).
      xlabel: the ``x`` axis label.
      logx, logy: logarithmic axes.

    Returns:
      For each label: ``[line, band]`` (when it has finite budgets), one dotted line per non-finite
      budget, and its bound line when ``bounds`` has the label.
    """
    ax = _axes(ax)
    _scales(ax, logx, logy)
    b = np.asarray(budgets, np.float64).reshape(-1)
    finite = np.isfinite(b)
    artists: list = []
    for label, final in finals.items():
        f = np.asarray(final, np.float64)
        if f.ndim == 1:
            f = f[:, None]
        if f.shape[0] != b.size:
            raise ValueError(f"finals[{label!r}] must have shape [{b.size}, seeds], got {f.shape}")
        mean, se = sim.summarize(f, axis=1)
        if finite.any():
            drawn = _band(ax, b[finite], mean[finite], se[finite], band, label, marker="o", ms=3)
            color = drawn[0].get_color()
            artists += drawn
        else:  # only the non-private point: take the next colour of the axes' cycle, as a line would
            (probe,) = ax.plot([], [])
            color = probe.get_color()
            probe.remove()
        for g in np.flatnonzero(~finite):
            name = f"{label}, {xlabel} = {b[g]:g}" if finite.any() else label
            artists.append(ax.axhline(mean[g], ls=":", lw=1.4, color=color, label=name))
        if bounds is not None and label in bounds and finite.any():
            bd = np.asarray(bounds[label], np.float64).reshape(-1)
            (line,) = ax.plot(b[finite], bd[finite], "--", color=color, lw=1.2, label=f"{label} bound")
            artists.append(line)
    _finish(ax, xlabel, "final regret")
    return artists


def price_of_privacy(
    steps: ArrayLike,
    private: ArrayLike,
    nonprivate: ArrayLike,
    *,
    ax: Any = None,
    band: float = 1.96,
    label: str | None = None,
    logx: bool = True,
) -> list:
    """Regret(private) − regret(non-private) against ``t``, with the paired standard error.

    Args:
      steps: ``[m]`` the checkpoints.
      private, nonprivate: ``[seeds, m]`` regret of the two arms on shared seed keys (row ``i`` of each
        is the same seed).
      ax: the axes to draw on (``pyplot.gca()`` when ``None``).
      band: half-width of the band in paired standard errors.
      label: the line's legend label.
      logx: logarithmic ``t`` axis (the ``y`` axis is linear: a difference may be negative).

    Returns:
      ``[line, band]``.
    """
    ax = _axes(ax)
    _scales(ax, logx, False)
    mean, se = stats.paired_difference(_per_seed(private, "private"), _per_seed(nonprivate, "nonprivate"))
    artists = _band(ax, np.asarray(steps), mean, se, band, label)
    _finish(ax, "t", "regret(private) − regret(non-private)")
    return artists


def paired_difference(
    steps: ArrayLike,
    curves: Mapping[str, ArrayLike],
    reference: str,
    *,
    ax: Any = None,
    band: float = 1.96,
    logx: bool = True,
) -> list:
    """Each curve minus the reference curve against ``t``, with paired standard errors and a ``y = 0`` line.

    Args:
      steps: ``[m]`` the checkpoints.
      curves: label -> ``[seeds, m]`` regret, all on the same seed keys.
      reference: the label every other curve is compared with.
      ax: the axes to draw on (``pyplot.gca()`` when ``None``).
      band: half-width of the band in paired standard errors.
      logx: logarithmic ``t`` axis.

    Returns:
      ``[line, band]`` for each label other than ``reference``, then the ``y = 0`` line.
    """
    if reference not in curves:
        raise ValueError(f"reference {reference!r} is not one of the curves {list(curves)}")
    ax = _axes(ax)
    _scales(ax, logx, False)
    x = np.asarray(steps)
    ref = _per_seed(curves[reference], f"curves[{reference!r}]")
    artists: list = []
    for label, curve in curves.items():
        if label == reference:
            continue
        mean, se = stats.paired_difference(_per_seed(curve, f"curves[{label!r}]"), ref)
        artists += _band(ax, x, mean, se, band, f"{label} − {reference}")
    artists.append(ax.axhline(0.0, color="0.4", lw=0.8))
    _finish(ax, "t", f"regret − regret({reference})")
    return artists


def regret_curves(
    curves: Mapping[str, tuple[ArrayLike, ArrayLike]],
    path: str | Path | None = None,
    title: str = "",
    loglog: bool = True,
    bands: float = 1.96,
):
    """A new figure of :func:`regret_vs_t` for curves that may have different checkpoints (saved to ``path``).

    Kept for existing callers; the figure is a ``matplotlib.figure.Figure`` (no pyplot, no backend).
    Curves whose label starts with ``OGD`` are dashed (OGD and FTAL can coincide exactly).

    Args:
      curves: label -> ``(steps[m], regret[seeds, m])``.
      path: where to save the PNG (not saved when ``None``).
      title: the axes title.
      loglog: log-log axes.
      bands: half-width of the band in standard errors.

    Returns:
      The ``Figure``.
    """
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.4, 4.4), dpi=120)
    ax = fig.add_subplot()
    for label, (steps, regret) in curves.items():
        (line, _) = regret_vs_t(steps, {label: regret}, ax=ax, band=bands, logx=loglog, logy=loglog)
        if label.startswith("OGD"):
            line.set_linestyle("--")
    if ax.get_legend() is not None:
        ax.legend(fontsize=8)  # rebuilt: the dashed styles
    if title:
        ax.set_title(title)
    fig.tight_layout()
    if path is not None:
        fig.savefig(path)
    return fig
