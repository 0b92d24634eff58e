"""Every notebook in notebooks/ executes top to bottom (nbclient, the venv's python3 kernel) at the small size.

``JAXPRIV_NOTEBOOK_SCALE=small`` is the one switch (documented in each notebook); the notebooks' own last cells
assert on their outputs (measured regret below the theorem's bound, a positive price of privacy, the tuned L
against a fine grid), so a failing assertion fails the test.
"""

import os
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def test_there_is_a_notebook_per_question():
    names = {p.stem.split("_", 1)[1] for p in NOTEBOOKS}
    assert {
        "quick_start",
        "smith_thakurta_rates",
        "zcdp_bandits",
        "mi_privacy",
        "hyperparameter_gradients",
        "window_privacy",
        "private_bandit_baselines",
        "your_algorithm",
    } <= names


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_executes_at_small_scale(path, tmp_path, monkeypatch):
    monkeypatch.setenv("JAXPRIV_NOTEBOOK_SCALE", "small")
    # The kernel's own matplotlib backend (inline), as a reader's: jaxpriv.plot never selects one, so the figures
    # a notebook draws with it are displayed without a workaround.
    monkeypatch.delenv("MPLBACKEND", raising=False)
    # The kernel inherits the environment: it imports this checkout's jaxpriv, and compiles with
    # conftest's XLA_FLAGS (no LLVM optimisation: 124 -> 94 s on the four heaviest notebooks).
    monkeypatch.setenv("PYTHONPATH", str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, kernel_name="python3", timeout=300, resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert not errors
    figures = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if "image/png" in o.get("data", {})]
    assert figures, f"{path.name} displays no figure"
