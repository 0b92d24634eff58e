"""What a researcher reads from a study: its table, one row per learner that runs once, round-off flagged.

Two rules, shared by every study's outputs (``summary.csv``, ``paired.csv``, the table ``jaxpriv sweep`` and
``jaxpriv demo`` print, ``str(StudyResult)``):

* **A learner that depends on no swept value appears once.** Such a learner (FTAL and OGD in the demo, whose
  grid is PFTAL's ε) runs once and its numbers are the same at every grid point, so its row is written once,
  with the grid columns left empty (``once_rows``). A paired difference between two such learners is written
  once too.
* **A difference below float32 round-off is not an effect** (``within_roundoff``). Two learners' final regrets
  ``a_s`` and ``b_s`` on seed ``s`` are *within round-off* when, on every seed,
  ``|a_s − b_s| <= ROUNDOFF_K · eps32 · sqrt(T) · M_s``, where ``M_s = max(|a_s|, |b_s|, |L_a,s|, |L_b,s|)``
  and ``L`` the cumulative losses where the run records them (a regret is the difference of two float32 running
  sums of ``T`` terms, the learner's loss and the comparator's, so its rounding error scales with those sums, not
  with the regret); ``eps32 = 2^-23``, the float32 machine epsilon; ``sqrt(T)``: the random-walk growth of the
  rounding errors of a ``T``-term running sum; ``ROUNDOFF_K = 1``. ``paired.csv`` then says
  ``within_roundoff = True`` beside the measured numbers, and the printed table shows the difference as
  ``0 (within float32 round-off)`` instead of a mean ± SE.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["EPS32", "ROUNDOFF_K", "format_table", "once_rows", "roundoff_tolerance", "within_roundoff"]

#: The float32 machine epsilon (``2^-23``).
EPS32 = float(np.finfo(np.float32).eps)
#: The multiple of ``eps32 · sqrt(T) · magnitude`` below which a difference is round-off.
ROUNDOFF_K = 1.0


def roundoff_tolerance(a: Any, b: Any, horizon: int, *sums: Any) -> np.ndarray:
    """Per seed: ``ROUNDOFF_K · eps32 · sqrt(horizon) · max(|a|, |b|, |sums|...)`` (the shape of ``a``)."""
    magnitude = np.maximum(np.abs(np.asarray(a, np.float64)), np.abs(np.asarray(b, np.float64)))
    for s in sums:
        magnitude = np.maximum(magnitude, np.abs(np.asarray(s, np.float64)))
    return ROUNDOFF_K * EPS32 * np.sqrt(float(horizon)) * magnitude


def within_roundoff(a: Any, b: Any, horizon: int, *sums: Any, axis: int = -1) -> np.ndarray:
    """Whether ``a`` and ``b`` (per-seed values, seeds along ``axis``) differ by float32 round-off only.

    Args:
      a, b: per-seed values of the same shape (e.g. two learners' final regret ``[G, S]`` on shared seeds).
      horizon: ``T``, the number of float32 steps summed into each value.
      *sums: the float32 running sums ``a`` and ``b`` are differences of (the learners' cumulative losses), each
        of ``a``'s shape; their magnitudes join ``a``'s and ``b``'s.
      axis: the seed axis.

    Returns:
      ``a``'s shape less ``axis``: ``True`` where every seed's ``|a_s − b_s|`` is within ``roundoff_tolerance``.
    """
    diff = np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64))
    return np.all(diff <= roundoff_tolerance(a, b, horizon, *sums), axis=axis)


def once_rows(rows: list[dict[str, Any]], once: set[str], grid_keys: list[str]) -> list[dict[str, Any]]:
    """``rows`` with each row of a learner in ``once`` kept at its first grid point only, its grid columns empty.

    A paired row (one with a ``reference``) is collapsed only when its reference is in ``once`` too.
    """
    out = []
    for row in rows:
        label = row.get("learner")
        if label in once and row.get("reference", label) in once:
            if row.get("grid_point") not in (0, "0"):
                continue
            row = row | {"grid_point": ""} | {k: "" for k in grid_keys if k in row}
        out.append(row)
    return out


def _label(row: dict[str, Any]) -> str:
    """A row's swept values as ``epsilon=1, rho=0.5`` (the empty ones left out)."""
    return ", ".join(f"{k.split('.')[-1]}={v}" for k, v in row.items() if "." in k and v != "")


def format_table(res: Any) -> str:
    """The table of a ``StudyResult``: final regret (mean ± SE, the bound) per row of ``summary.csv``, the paired
    differences against the reference (``0 (within float32 round-off)`` where they are), and the recipes' tables."""
    study = res.study
    learners = f"{len(study.learners)} learners x " if study.compare else ""
    lines = [f"{study.name}: {learners}{study.size} grid points x {study.seeds} seeds x T={study.horizon}"]
    lines.append(f"{'grid point':<40} {'final regret':>24} {'bound':>12}")
    for row in res.summary:
        label = _label(row)
        if "learner" in row:  # a comparison: the learner's label, then its swept values if any
            label = f"{row['learner']}: {label}" if label else str(row["learner"])
        else:
            label = label or study.learner_name
        label = f"T={row['horizon']} {label}" if "horizon" in row else label  # a file with horizons
        if study.sizes is not None:  # a file with [sizes]: the size's value first
            label = f"{study.sizes.name}={row[study.sizes.name]} {label}"
        bound = f"{row['bound']:.4g}" if row["bound"] != "" else ""
        lines.append(f"{label:<40} {row['final_regret_mean']:>12.4g} +- {row['final_regret_se']:<8.2g} {bound:>12}")
    for row in res.paired or []:  # a comparison's paired differences against its reference (shared seeds)
        label = _label(row)
        label = f"{row['learner']} - {row['reference']}" + (f": {label}" if label else "")
        if row.get("within_roundoff"):
            lines.append(f"{label:<40} {'0':>12}    (within float32 round-off: |d| <= {row['roundoff_tol']:.2g})")
        else:
            lines.append(f"{label:<40} {row['difference_mean']:>12.4g} +- {row['difference_se']:<8.2g} (paired SE)")
    for name, table in (res.tables or {}).items():  # the recipes' tables (knee, price of privacy) and slopes
        lines.append(f"{name}:")
        for row in table:
            lines.append(
                "  " + ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items())
            )
    return "\n".join(lines)
