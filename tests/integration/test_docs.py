"""The documentation site builds with warnings as errors, and its API reference documents every public name.

The build (``sphinx-build -W --keep-going -b html docs <tmp>``) runs in a subprocess, as a user runs it; it
executes no notebook and fetches nothing. ``docs/_api.py`` says which modules and names are public (each public
module's ``__all__``, or its top-level public names); the second test reads the built ``objects.inv`` and fails on
any public name the reference does not document.
"""

import fcntl
import importlib.util
import os
import re
import subprocess
import sys
import zlib
from html.parser import HTMLParser
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """The site, built once per test run: with pytest-xdist the workers share one build, made under a lock.

    Two builds at once collide: docs/conf.py regenerates ``docs/api/generated`` in the source tree (seen with
    ``-n 2`` on this file alone: "Directory not empty: docs/api/generated"). The first worker to take the lock
    builds; the others wait for it and read its output.
    """
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # the directory every worker's base temp is in
    out = base / "docs_html"
    with open(base / "docs_html.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (out / "done").exists():
            # Without the "[source]" pages (docs/conf.py): 94 highlighted module pages, a third of the build's time.
            env = {**os.environ, "JAX_PLATFORMS": "cpu", "JAXPRIV_DOCS_VIEWCODE": "0"}
            cmd = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html"]
            cmd += ["-d", str(out / ".doctrees"), str(DOCS), str(out)]
            proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT, timeout=600)
            assert proc.returncode == 0, f"sphinx-build failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}"
            (out / "done").touch()
    return out


class _Assets(HTMLParser):
    """The URLs a page loads: each ``<script src>`` and ``<link href>`` (stylesheets, fonts, icons)."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        name = {"script": "src", "link": "href"}.get(tag)
        value = dict(attrs).get(name) if name else None
        if value:
            self.urls.append(value)


def _inventory(path: Path) -> dict[str, set[str]]:
    """``objects.inv`` as ``{role: names}`` (the format: four header lines, then zlib-compressed lines)."""
    with open(path, "rb") as f:
        for _ in range(4):
            f.readline()
        text = zlib.decompress(f.read()).decode()
    roles: dict[str, set[str]] = {}
    for line in text.splitlines():
        name, role = line.split(" ", 2)[:2]
        roles.setdefault(role, set()).add(name)
    return roles


def _public_api():
    spec = importlib.util.spec_from_file_location("jaxpriv_docs_api", DOCS / "_api.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_docs_build_without_warnings(built):
    for page in ("index", "getting_started", "concepts", "reproductions", "performance", "changelog"):
        assert (built / f"{page}.html").stat().st_size > 0
    notebooks = sorted(p.stem for p in (ROOT / "notebooks").glob("*.ipynb"))
    assert notebooks, "no notebooks found"
    for nb in notebooks:  # every committed notebook is rendered
        assert (built / "notebooks" / f"{nb}.html").exists(), nb


def test_pages_load_nothing_remote(built):
    """The site works offline: no page loads a script, stylesheet or font from the network (MathJax included).

    Links a reader follows (``<a href>``, a paper's DOI) are not loaded by the page and are allowed.
    """
    remote = re.compile(r"^\s*(https?:)?//", re.IGNORECASE)
    hits = []
    for page in sorted(built.rglob("*.html")):
        parser = _Assets()
        parser.feed(page.read_text(encoding="utf-8"))
        hits += [f"{page.relative_to(built)}: {url}" for url in parser.urls if remote.match(url)]
    assert not hits, "pages that load a remote script or stylesheet:\n" + "\n".join(hits[:20])
    # The math is typeset by the local copy of MathJax: a page with math loads it, and it is there.
    page = built / "algorithms" / "zcdp_bandits.html"
    parser = _Assets()
    parser.feed(page.read_text(encoding="utf-8"))
    mathjax = [url for url in parser.urls if "mathjax" in url.lower()]
    assert mathjax, f"{page.name} loads no MathJax"
    assert all((page.parent / url).resolve().is_file() for url in mathjax), mathjax


def test_every_public_name_is_documented(built):
    api = _public_api()
    roles = _inventory(built / "objects.inv")
    documented = set().union(*(names for role, names in roles.items() if role.startswith("py:")))
    modules = roles.get("py:module", set())
    entries = api.api_entries()
    assert "jaxpriv" in entries and "jaxpriv.oco" in entries and "jaxpriv.sim" in entries
    missing = []
    for mod_name, rows in entries.items():
        if mod_name not in modules:
            missing.append(f"{mod_name} (module)")
        for name, kind, documented_as in rows:
            if documented_as not in (modules if kind == "module" else documented):
                missing.append(f"{mod_name}.{name} (documented as {documented_as})")
    assert not missing, "public names missing from the API reference:\n" + "\n".join(missing)
    # The discovery itself: every top-level public module of the package has a page.
    import pkgutil

    import jaxpriv

    top = {f"jaxpriv.{m.name}" for m in pkgutil.iter_modules(jaxpriv.__path__) if not m.name.startswith("_")}
    assert top <= set(entries), sorted(top - set(entries))


def test_docs_cite_no_unshipped_notes():
    """Docstrings and pages cite papers or the docs' "Decoding choices", never notes the package does not ship.

    The design notes (``../shared/spec/*.md``, ``../shared/papers/``) live beside the repository, not in it: a
    "spec §2.4" or a ``../shared`` path in ``jaxpriv/``, ``docs/``, the notebooks or the README points a user at
    nothing. The
    changelog (history) and the build's generated copies are not checked.
    """
    import re

    unshipped = re.compile(r"spec §|spec `*\w+\.md|\.\./shared|shared/(spec|papers)|\badac\.md|window_coco\.md")
    generated = {DOCS / "notebooks", DOCS / "api" / "generated", DOCS / "_generated", DOCS / "_build"}
    files = [ROOT / "README.md", *sorted((ROOT / "jaxpriv").rglob("*.py"))]
    files += sorted((ROOT / "notebooks").glob("*.ipynb"))
    files += [
        p
        for p in sorted(DOCS.rglob("*"))
        if p.suffix in (".md", ".py", ".ipynb")
        and p != DOCS / "changelog.md"
        and not any(d in p.parents for d in generated)
    ]
    hits = [
        f"{p.relative_to(ROOT)}:{i}: {line.strip()[:100]}"
        for p in files
        for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if unshipped.search(line)
    ]
    assert not hits, "citations of notes the package does not ship:\n" + "\n".join(hits)


def test_pages_name_no_private_code_or_test_files():
    """The manual's pages name public API only, and no test file: a reader cannot import ``jaxpriv._rng`` or
    ``_gope_core.phase_constant``, and ``tests/...py`` is the repository's, not the user's.

    Hand-written pages only: the contributors' page (``development.md``) and the history (``changelog.md``) may name
    both; a source file's path (``jaxpriv/mechanisms/_tree.py``, a ``literalinclude``) is a path, not a name to
    import. A test file is allowed inside a code block (the documented test command runs named files).
    """
    private = re.compile(r"\bjaxpriv\._\w+|(?<![\w/])_[a-z]\w*\.(?!py\b)[a-z_]\w*")
    test_file = re.compile(r"\btests/[\w/]+\.py|\btest_\w+\.py")
    skip = {DOCS / "development.md", DOCS / "changelog.md"}
    generated = {DOCS / "notebooks", DOCS / "api" / "generated", DOCS / "_generated", DOCS / "_build"}
    hits = []
    for page in sorted(DOCS.rglob("*.md")):
        if page in skip or any(d in page.parents for d in generated):
            continue
        fence = None
        for i, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
            opening = re.match(r"\s*(`{3,}|~{3,})", line)
            if opening:
                fence = opening.group(1) if fence is None else (None if line.strip() == fence else fence)
                continue
            found = private.findall(line) + ([] if fence else test_file.findall(line))
            hits += [f"{page.relative_to(ROOT)}:{i}: {name}" for name in found]
    assert not hits, "private names or test files in the manual's pages:\n" + "\n".join(hits)
