"""README is a landing page whose sweep example runs as written; what it used to carry holds in docs/.

README keeps the two quick-start commands, the fifteen-line sweep (run here, and the same code on the getting
started page), the table of algorithm families with links, and where the docs are. The algorithm tables, audits,
scale notes, gotchas and measured figures moved to the pages under ``docs/``: the tests below check that every
learner and mechanism a study file can name has a row on an algorithm page, and that README's links resolve.
"""

import os
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"


def _sweep_code(text: str) -> str:
    section = text[text.index("## A sweep in fifteen lines") :]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_readme_sweep_example_runs(tmp_path):
    code = _sweep_code(README.read_text())
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        scope: dict = {}
        exec(compile(code, "README.md", "exec"), scope)
    finally:
        os.chdir(cwd)
    assert scope["res"].regret.shape[:2] == (4, 100)
    assert scope["mean"][0] > scope["mean"][-1]  # eps = 0.1 costs more regret than eps = inf
    import matplotlib.pyplot as plt

    labels = [line.get_label() for line in plt.gca().get_lines()]  # the README draws on the current axes
    plt.close("all")
    assert labels[:4] == ["eps=0.1", "eps=1", "eps=10", "eps=inf"]  # one mean line per grid point


def test_getting_started_shows_the_same_sweep():
    assert _sweep_code((DOCS / "getting_started.md").read_text()) == _sweep_code(README.read_text())


def test_readme_is_a_landing_page():
    text = README.read_text()
    assert len(text.encode()) < 12_000
    lines = text.splitlines()
    marker = lines.index("<!-- test-command -->")
    assert lines[marker + 1] == "```bash" and lines[marker + 2].startswith("python3 -m venv .venv")
    assert '.venv/bin/pip install -q -e ".[docs]" && .venv/bin/sphinx-build -W -b html docs docs/_build/html' in text
    targets = re.findall(r"\]\(((?:docs|notebooks)/[^)#]*)\)", text)
    assert len(targets) >= 10
    for target in targets:  # every link to the docs resolves to a file in the repository
        assert (ROOT / target).exists(), target


def test_every_registered_component_has_an_algorithm_row():
    from jaxpriv.experiments import registry

    pages = "".join(p.read_text() for p in sorted((DOCS / "algorithms").glob("*.md")))
    rows = [line for line in pages.splitlines() if line.startswith("| `")]
    names = [*registry.LEARNERS, *getattr(registry, "MECHANISMS", {})]
    missing = [n for n in names if not any(re.search(rf"`{n}[`(]", row) for row in rows)]
    assert not missing, f"no row on an algorithm page (docs/algorithms/*.md) for {missing}"
