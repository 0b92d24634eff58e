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

Nothing is left out of a figure silently. A log ``y`` axis (``logy=True``) on which
some mean (or bound) is negative, which a log scale cannot show (a wholly negative
curve would vanish), becomes a ``symlog`` axis, linear within the smallest non-zero
magnitude drawn and logarithmic beyond it, so every point stays on the figure (an axes
already ``symlog`` stays so; a zero mean alone keeps the log axis, on which its line
drops to the bottom edge).
What cannot be drawn honestly is refused with a ``ValueError`` naming the argument,
before anything is drawn: a curve whose length is not ``len(steps)``, non-positive
``steps`` on a log ``t`` axis, a NaN or non-positive budget on a log budget axis
(only ``inf``, the non-private limit, has no place on it), ``bounds`` of the wrong
length or for no curve, arms of a paired difference with different seed counts
(their seeds must be shared, row for row), a ``band`` that is not a finite number
``>= 0``, and a ``path`` that lies under a file.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from jaxpriv import sim, stats
from jaxpriv.tidy import _check_writable

_BAND_ALPHA = 0.2


def _axes(ax: Any) -> Any:
    """``ax``, or pyplot's current axes (imported only then: pyplot holds process-wide state)."""
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt

    return plt.gca()


def _per_seed(x: ArrayLike, name: str, m: int | None = None) -> np.ndarray:
    """``x`` as float64 ``[seeds, m]`` (a 1-D array is one seed); ``m``: the length it must have."""
    a = np.asarray(x, np.float64)
    if a.ndim == 1:
        a = a[None, :]
    if a.ndim != 2:
        raise ValueError(f"{name} must have shape [seeds, m], got {a.shape}")
    if m is not None and a.shape[1] != m:
        raise ValueError(f"{name} must have shape [seeds, {m}] (one value per step of steps), got {a.shape}")
    if a.shape[0] < 1:
        raise ValueError(f"{name} has no seeds (shape {a.shape})")
    return a


def _steps(steps: ArrayLike, logx: bool) -> np.ndarray:
    """``steps`` as a 1-D float64 array, finite (and positive on a log axis)."""
    x = np.asarray(steps, np.float64)
    if x.ndim != 1 or x.size < 1:
        raise ValueError(f"steps must be a non-empty 1-D array of checkpoints, got shape {x.shape}")
    if not np.all(np.isfinite(x)):
        raise ValueError(f"steps must be finite, got {x.tolist()}")
    if logx and np.any(x <= 0):
        raise ValueError(
            f"steps must be > 0 on a log t axis (logx=True), got {x[x <= 0].tolist()}: pass logx=False to draw them"
        )
    return x


def _band_width(band: float) -> float:
    """``band`` as a float, refused unless finite and ``>= 0``."""
    try:
        b = float(band)
    except (TypeError, ValueError):
        raise ValueError(f"band must be a finite number >= 0 (standard errors), got {band!r}") from None
    if not (np.isfinite(b) and b >= 0):
        raise ValueError(f"band must be a finite number >= 0 (standard errors), got {band!r}")
    return b


def _paired(reference: np.ndarray, ref_name: str, x: np.ndarray, name: str) -> None:
    """Refuse arms that cannot be paired seed for seed."""
    if x.shape[0] != reference.shape[0]:
        raise ValueError(
            f"{name} has {x.shape[0]} seeds and {ref_name} {reference.shape[0]}: a paired difference needs both "
            "arms on the same seeds (row i of each is seed i)"
        )


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


def _scales(ax: Any, logx: bool, logy: bool, values: list[np.ndarray] = ()) -> None:
    """Set the scales before drawing, so that the bands know whether to floor their lower edge.

    On a log ``y`` axis, ``values`` (what will be drawn) with a negative entry make it ``symlog`` (linear
    within the smallest non-zero magnitude among them), which shows them; a log axis would not.
    """
    if logx:
        ax.set_xscale("log")
    if logy:
        drawn = np.concatenate([np.ravel(v) for v in values]) if len(values) else np.zeros(0)
        drawn = drawn[np.isfinite(drawn)]
        if ax.get_yscale() == "symlog" or np.any(drawn < 0):
            magnitudes = np.abs(drawn[drawn != 0])
            linthresh = float(magnitudes.min()) if magnitudes.size else 1.0
            if ax.get_yscale() == "symlog":
                linthresh = min(linthresh, float(ax.yaxis.get_transform().linthresh))
            ax.set_yscale("symlog", linthresh=linthresh)
        else:
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
      band: half-width of the band in standard errors of the mean (ddof = 1): a finite number ``>= 0``.
      logx, logy: logarithmic axes (on a log ``y`` axis a band's lower edge is floored at a tenth of
        the smallest positive mean, so it stays visible; a negative mean makes the ``y`` axis ``symlog``,
        so it is drawn too).
      ylabel: the ``y`` axis label.

    Returns:
      ``[line, band]`` for each curve, in order.

    Raises:
      ValueError: a curve is not ``[seeds, len(steps)]``, ``steps`` is not positive on a log ``t`` axis, or
        ``band`` is not a finite number ``>= 0`` (before anything is drawn).
    """
    x = _steps(steps, logx)
    width = _band_width(band)
    summaries = {
        label: sim.summarize(_per_seed(curve, f"curves[{label!r}]", x.size), axis=0) for label, curve in curves.items()
    }
    ax = _axes(ax)
    _scales(ax, logx, logy, [mean for mean, _ in summaries.values()])
    artists: list = []
    for label, (mean, se) in summaries.items():
        artists += _band(ax, x, mean, se, width, label)
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

    Finite budgets are drawn as a line with markers and a ``± band·SE`` band; the budget ``inf`` (the
    non-private limit, which has no place on the ``x`` axis) is drawn as a dotted horizontal line at
    its mean, in the curve's colour. A NaN or ``-inf`` budget is refused, and so is a budget ``<= 0``
    on a log ``x`` axis (``logx=False`` draws it).

    Args:
      budgets: ``[G]`` the budget of each grid point.
      finals: label -> ``[G, seeds]`` final regret.
      bounds: label -> ``[G]`` the bound, drawn dashed in the colour of ``finals[label]`` (finite
        budgets only); every label must be one of ``finals``.
      ax: the axes to draw on (``pyplot.gca()`` when ``None``).
      band: half-width of the band in standard errors of the mean (ddof = 1): a finite number ``>= 0``.
      xlabel: the ``x`` axis label.
      logx, logy: logarithmic axes (a negative mean or bound makes the ``y`` axis ``symlog``).

    Returns:
      For each label: ``[line, band]`` (when it has finite budgets), one dotted line per non-finite
      budget, and its bound line when ``bounds`` has the label.

    Raises:
      ValueError: a NaN or ``-inf`` budget, a budget ``<= 0`` with ``logx``, ``finals[label]`` not
        ``[G, seeds]``, ``bounds[label]`` not ``[G]`` or for a label ``finals`` lacks, or a ``band`` that is
        not a finite number ``>= 0`` (before anything is drawn).
    """
    width = _band_width(band)
    b = np.asarray(budgets, np.float64).reshape(-1)
    bad = np.isnan(b) | (b == -np.inf)
    if bad.any():
        raise ValueError(
            f"budgets must be numbers or inf (the non-private limit), got {b[bad].tolist()} at positions "
            f"{np.flatnonzero(bad).tolist()}"
        )
    if logx and np.any(b <= 0):
        raise ValueError(
            f"budgets must be > 0 on a log {xlabel} axis (logx=True), got {b[b <= 0].tolist()} at positions "
            f"{np.flatnonzero(b <= 0).tolist()}: pass logx=False to draw them"
        )
    finite = np.isfinite(b)
    summaries = {}
    for label, final in finals.items():
        f = np.asarray(final, np.float64)
        if f.ndim == 1:
            f = f[:, None]
        if f.ndim != 2 or f.shape[0] != b.size or f.shape[1] < 1:
            raise ValueError(f"finals[{label!r}] must have shape [{b.size}, seeds], got {np.shape(final)}")
        summaries[label] = sim.summarize(f, axis=1)
    lines = {}
    for label, bound in (bounds or {}).items():
        if label not in finals:
            raise ValueError(f"bounds[{label!r}] is for no curve: finals has {list(finals)}")
        bd = np.asarray(bound, np.float64)
        if bd.ndim != 1 or bd.size != b.size:
            raise ValueError(f"bounds[{label!r}] must have shape [{b.size}] (one per budget), got {bd.shape}")
        lines[label] = bd
    ax = _axes(ax)
    drawn_values = [mean for mean, _ in summaries.values()]
    drawn_values += [bd[finite] for bd in lines.values()] if finite.any() else []
    _scales(ax, logx, logy, drawn_values)
    artists: list = []
    for label, (mean, se) in summaries.items():
        if finite.any():
            drawn = _band(ax, b[finite], mean[finite], se[finite], width, label, marker="o", ms=3)
            color = drawn[0].get_color()
            artists += drawn
        else:  # only the non-private point: take the next colour of the axes' cycle, as a line would
            (probe,) = ax.plot([], [])
            color = probe.get_color()
            probe.remove()
        for g in np.flatnonzero(~finite):
            name = f"{label}, {xlabel} = {b[g]:g}" if finite.any() else label
            artists.append(ax.axhline(mean[g], ls=":", lw=1.4, color=color, label=name))
        if label in lines and finite.any():
            (line,) = ax.plot(b[finite], lines[label][finite], "--", color=color, lw=1.2, label=f"{label} bound")
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
      band: half-width of the band in paired standard errors: a finite number ``>= 0``.
      label: the line's legend label.
      logx: logarithmic ``t`` axis (the ``y`` axis is linear: a difference may be negative).

    Returns:
      ``[line, band]``.

    Raises:
      ValueError: the arms' seed counts differ (one non-private seed is not broadcast against many: the
        paired standard error needs the same seeds), an arm is not ``[seeds, len(steps)]``, ``steps`` is not
        positive on a log axis, or ``band`` is not a finite number ``>= 0`` (before anything is drawn).
    """
    x = _steps(steps, logx)
    width = _band_width(band)
    priv, nonpriv = _per_seed(private, "private", x.size), _per_seed(nonprivate, "nonprivate", x.size)
    _paired(nonpriv, "nonprivate", priv, "private")
    mean, se = stats.paired_difference(priv, nonpriv)
    ax = _axes(ax)
    _scales(ax, logx, False)
    artists = _band(ax, x, mean, se, width, label)
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
      band: half-width of the band in paired standard errors: a finite number ``>= 0``.
      logx: logarithmic ``t`` axis.

    Returns:
      ``[line, band]`` for each label other than ``reference``, then the ``y = 0`` line.

    Raises:
      ValueError: ``reference`` is not a curve, a curve's seed count differs from the reference's, a curve is
        not ``[seeds, len(steps)]``, ``steps`` is not positive on a log axis, or ``band`` is not a finite
        number ``>= 0`` (before anything is drawn).
    """
    if reference not in curves:
        raise ValueError(f"reference {reference!r} is not one of the curves {list(curves)}")
    x = _steps(steps, logx)
    width = _band_width(band)
    ref_name = f"curves[{reference!r}]"
    ref = _per_seed(curves[reference], ref_name, x.size)
    differences = {}
    for label, curve in curves.items():
        if label == reference:
            continue
        arm = _per_seed(curve, f"curves[{label!r}]", x.size)
        _paired(ref, ref_name, arm, f"curves[{label!r}]")
        differences[label] = stats.paired_difference(arm, ref)
    ax = _axes(ax)
    _scales(ax, logx, False)
    artists: list = []
    for label, (mean, se) in differences.items():
        artists += _band(ax, x, mean, se, width, f"{label} − {reference}")
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

    Raises:
      ValueError: ``path`` is a folder or lies under a file, or a curve is refused by ``regret_vs_t``
        (checked before the figure is drawn).
    """
    from matplotlib.figure import Figure

    if path is not None:
        _check_writable("path", Path(path))
    for label, (steps, regret) in curves.items():
        _per_seed(regret, f"curves[{label!r}] regret", _steps(steps, loglog).size)
    _band_width(bands)
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
