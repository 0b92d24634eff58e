"""Matplotlib figures of regret curves (mean with a standard-error band)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np


def regret_curves(
    curves: Mapping[str, tuple[np.ndarray, np.ndarray]],
    path: str | Path | None = None,
    title: str = "",
    loglog: bool = True,
    bands: float = 1.96,
):
    """Plot mean regret against ``t`` with a ``± bands·SE`` band per curve.

    Args:
      curves: label -> ``(steps[m], regret[seeds, m])``.
      path: where to save the PNG (not saved when ``None``).
      title: the axes title.
      loglog: log-log axes (non-positive values are clipped for display).
      bands: half-width of the band in standard errors (1.96: a 95% band for the mean).

    Returns:
      The matplotlib ``Figure``.
    """
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.4), dpi=120)
    for label, (steps, regret) in curves.items():
        regret = np.asarray(regret, np.float64)
        steps = np.asarray(steps)
        mean = regret.mean(0)
        se = regret.std(0, ddof=1) / np.sqrt(regret.shape[0]) if regret.shape[0] > 1 else np.zeros_like(mean)
        lo, hi = mean - bands * se, mean + bands * se
        if loglog:
            floor = 1e-3
            mean, lo, hi = (np.maximum(v, floor) for v in (mean, lo, hi))
        style = "--" if label.startswith("OGD") else "-"  # OGD and FTAL can coincide exactly
        (line,) = ax.plot(steps, mean, style, label=label, lw=1.6)
        ax.fill_between(steps, lo, hi, color=line.get_color(), alpha=0.2, lw=0)
    if loglog:
        ax.set_xscale("log")
        ax.set_yscale("log")
    ax.set_xlabel("t")
    ax.set_ylabel("cumulative regret")
    if title:
        ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    if path is not None:
        fig.savefig(path)
        plt.close(fig)
    return fig
