"""README's sweep example runs as written (and writes its figure)."""

import os
import re
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def test_readme_sweep_example_runs(tmp_path):
    text = README.read_text()
    section = text[text.index("## A sweep in fifteen lines") :]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        scope: dict = {}
        exec(compile(code, "README.md", "exec"), scope)
    finally:
        os.chdir(cwd)
    assert scope["res"].regret.shape[:2] == (4, 100)
    assert scope["mean"][0] > scope["mean"][-1]  # eps = 0.1 costs more regret than eps = inf
    assert (tmp_path / "regret.png").stat().st_size > 0
