"""The one writer of experiment outputs: ``settings.json`` with versions, and mean ± SE tables as CSV.

Every experiment (the demo, the window experiment, the study runner, the papers'
reproductions) writes its settings with ``write_settings`` (which adds the versions and
the backend under ``"versions"``) and its tables of mean ± standard error with
``write_table``, the means and standard errors computed by ``mean_se``
(``jaxpriv.sim.summarize``)::

    mean, se = mean_se(final_regret, axis=-1)      # over the seed axis
    rows = [{"algorithm": name, "mean": float(m), "se": float(s)} for name, m, s in ...]
    write_table(out, "summary.csv", rows)
    write_settings(out, {"command": "demo", "horizon": T, ..., "table": rows})

``settings.json`` is strict JSON (RFC 8259: no ``Infinity`` or ``NaN`` tokens): a non-finite number is written
as the string ``"inf"``, ``"-inf"`` or ``"nan"`` (``json_safe``), so ``json.loads(text, parse_constant=...)``
with a parser that refuses those tokens reads it; paths in it are relative to the output folder
(``relative_path``).
"""

from __future__ import annotations

import csv
import json
import math
import os
import platform
from pathlib import Path
from typing import Any

import jax
import numpy as np

import jaxpriv
from jaxpriv.sim import summarize

__all__ = ["json_safe", "mean_se", "relative_path", "versions", "write_settings", "write_table"]


def versions() -> dict[str, str]:
    """The versions an output was made with: jaxpriv, jax, numpy, python, and the backend and its device kind."""
    return {
        "jaxpriv": jaxpriv.__version__,
        "jax": jax.__version__,
        "numpy": np.__version__,
        "python": platform.python_version(),
        "backend": jax.default_backend(),
        "device": str(jax.devices()[0].device_kind),
    }


def json_safe(value: Any) -> Any:
    """``value`` with every non-finite float (Python or NumPy, in dicts, lists, tuples and arrays) as the string
    ``"inf"``, ``"-inf"`` or ``"nan"``, NumPy scalars and arrays as Python numbers and lists: strict JSON."""
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if isinstance(value, np.ndarray):
        return json_safe(value.tolist())
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    return value


def relative_path(path: str | Path, out: str | Path, package: Path | None = None) -> str:
    """``path`` as written into ``settings.json``: relative to the output folder ``out`` (POSIX separators), or
    for a file inside ``package`` (the shipped study files), its path inside the jaxpriv package
    (``jaxpriv/experiments/studies/demo.toml``), which is the same on every install."""
    path = Path(path).resolve()
    if package is not None and path.is_relative_to(package.resolve()):
        return path.relative_to(Path(jaxpriv.__file__).resolve().parent.parent).as_posix()
    return Path(os.path.relpath(path, Path(out).resolve())).as_posix()


def mean_se(values: Any, axis: int = -1) -> tuple[np.ndarray, np.ndarray]:
    """Mean and standard error over the seed axis ``axis`` (``jaxpriv.sim.summarize``, in float64).

    Args:
      values: per-seed values, e.g. final regret ``[G, S]``.
      axis: the seed axis.

    Returns:
      ``(mean, se)``, the seed axis reduced; ``se`` is the sample standard deviation (``ddof=1``) over ``√S``.
    """
    return summarize(values, axis=axis)


def write_settings(out: str | Path, settings: dict[str, Any], name: str = "settings.json") -> Path:
    """Write ``settings`` as JSON under ``out``, with ``"versions"`` (see ``versions``) added last.

    Args:
      out: the output folder (it must exist).
      settings: what the experiment ran with and measured (JSON-serialisable; other values are written as
        ``str``; non-finite numbers as ``"inf"``, ``"-inf"``, ``"nan"``: ``json_safe``). A ``"versions"`` entry
        is refused: the writer adds it.
      name: the file's name.

    Returns:
      The path written.

    Raises:
      ValueError: ``settings`` holds a ``"versions"`` entry.
    """
    if "versions" in settings:
        raise ValueError("settings must not hold 'versions': write_settings adds them")
    path = Path(out) / name
    text = json.dumps(json_safe({**settings, "versions": versions()}), indent=2, default=str, allow_nan=False)
    path.write_text(text)
    return path


def write_table(out: str | Path, name: str, rows: list[dict[str, Any]]) -> Path:
    """Write a table (one dict per row, e.g. a label, a mean and a standard error) as CSV under ``out``.

    The columns are the rows' keys in the order first seen; a row without a column leaves it empty.

    Args:
      out: the output folder (it must exist).
      name: the file's name (``"summary.csv"``).
      rows: the rows; at least one.

    Returns:
      The path written.

    Raises:
      ValueError: ``rows`` is empty.
    """
    if not rows:
        raise ValueError(f"{name}: a table needs at least one row")
    columns = list(dict.fromkeys(k for row in rows for k in row))
    path = Path(out) / name
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=columns, restval="")
        writer.writeheader()
        writer.writerows(rows)
    return path
