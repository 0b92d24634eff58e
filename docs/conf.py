"""Sphinx configuration of jaxpriv's documentation site.

Build: ``.venv/bin/pip install -q -e ".[docs]" && .venv/bin/sphinx-build -W -b html docs docs/_build/html``.
Nothing is fetched from the network, at build time or when a page is read (no intersphinx; MathJax is copied from
the installed sphinx-mathjax-offline, not loaded from a CDN), and no notebook is executed: the committed notebooks
in ``notebooks/`` are copied into the generated ``docs/notebooks/`` and rendered with their stored outputs. The
API pages under ``docs/api/generated/`` are written here from ``_api.public_modules()``, so a new public module or
name appears without editing the docs (``tests/integration/test_docs.py`` fails on an undocumented one).
"""

from __future__ import annotations

import importlib
import inspect
import json
import os
import shutil
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(DOCS))
sys.path.insert(0, str(ROOT))

import _api  # noqa: E402

import jaxpriv  # noqa: E402

project = "jaxpriv"
author = "the jaxpriv authors"
copyright = "2026, the jaxpriv authors"
release = version = jaxpriv.__version__

extensions = [
    "myst_nb",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.mathjax",
    # MathJax 3.2.2 from the installed package instead of a CDN: the pages typeset their math offline (it copies
    # the files into _static/mathjax/ and points ``mathjax_path`` there; no page loads a remote script or style).
    "sphinx-mathjax-offline",
]
# "[source]" links beside each documented name (sphinx.ext.viewcode: the module's highlighted code, offline). Its
# pages are 94 of the site's 157 and about 30 s of the build's CPU time, so the test suite's build, which checks the
# pages rather than the highlighted sources, leaves them out with JAXPRIV_DOCS_VIEWCODE=0.
if os.environ.get("JAXPRIV_DOCS_VIEWCODE", "1") != "0":
    extensions.append("sphinx.ext.viewcode")

# --- sources ---------------------------------------------------------------------------------------------------
exclude_patterns = ["_build", "_generated", "**.ipynb_checkpoints", "README.md"]
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist"]
myst_heading_anchors = 3
nb_execution_mode = "off"  # render the committed outputs; the test suite executes the notebooks elsewhere
nb_merge_streams = True
suppress_warnings = [
    # The notebooks' outputs carry MIME types (widgets, progress bars) that have no HTML renderer; a
    # missing rendering of such an output is not an error in the documentation.
    "mystnb.unknown_mime_type",
]

# --- API (autodoc + Napoleon for the Google-style docstrings) ---------------------------------------------------
autodoc_default_options = {"members": True, "undoc-members": True, "member-order": "bysource"}
autodoc_typehints = "signature"
autodoc_preserve_defaults = True
napoleon_google_docstring = True
napoleon_numpy_docstring = False
napoleon_use_rtype = False
napoleon_attr_annotations = True
napoleon_use_ivar = True  # a NamedTuple's "Attributes:" as a field list: autodoc documents the fields themselves
# Broken cross-references to jaxpriv's public names fail the build; names outside jaxpriv (jax.Array, numpy,
# typing: no intersphinx, the build is offline) and jaxpriv's private modules are not documented here.
nitpicky = True
nitpick_ignore_regex = [
    (r"py:.*", r"(?!jaxpriv\.).*"),  # outside jaxpriv, or a bare name in a type hint (ArrayLike, Path)
    (r"py:.*", r"jaxpriv\.(.*\.)?_.*"),  # a private module or name
    # A helper type of an implementation file whose package re-exports only its algorithms (bandits.dp_ucb's
    # NoiseTable): named in a signature, documented with the function that uses it.
    (r"py:.*", r"jaxpriv\.(audit|bandits|envs|mechanisms|oco)\.[a-z_]+\.[A-Za-z]\w*"),
]

# --- HTML ------------------------------------------------------------------------------------------------------
html_theme = "furo"
html_title = f"jaxpriv {release}"
html_static_path = ["_static"]
html_css_files = ["jaxpriv.css"]  # wide tables: a smaller font, no column narrower than 6em
html_show_sourcelink = False
html_copy_source = False  # the notebooks are large; the sources are in the repository


def _copy_notebooks() -> None:
    """Copy ``../notebooks/*.ipynb`` into the generated ``docs/notebooks/`` (a glob toctree lists them)."""
    target = DOCS / "notebooks"
    if target.exists():
        shutil.rmtree(target)
    target.mkdir()
    for nb in sorted((ROOT / "notebooks").glob("*.ipynb")):
        shutil.copy2(nb, target / nb.name)
        # A page needs a title for the toctree: a notebook without a heading gets its file name as one (in the copy).
        data = json.loads(nb.read_text())
        cells = data.get("cells", [])
        if not any(c["cell_type"] == "markdown" and "".join(c["source"]).lstrip().startswith("# ") for c in cells):
            cells.insert(0, {"cell_type": "markdown", "metadata": {}, "source": [f"# {nb.stem}"]})
            (target / nb.name).write_text(json.dumps(data))


def _first_line(obj: object) -> str:
    doc = inspect.getdoc(obj) or ""
    line = doc.strip().splitlines()[0].strip() if doc.strip() else ""
    # A table cell in MyST: "|" would end the cell, and "$" would open math (dollarmath), so both are escaped.
    return line.replace("|", "\\|").replace("`", "").replace("*", "").replace("$", "\\$")


def _value(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."


def _write_api_pages() -> None:
    """One page per public module: a table of its public names, then each name's documentation.

    A class or function reached by several public names is documented once (``_api.api_entries``); its
    other names get a row that links to it.
    """
    target = DOCS / "api" / "generated"
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    for mod_name, rows in _api.api_entries().items():
        module = importlib.import_module(mod_name)
        lines = [f"# `{mod_name}`", "", "```{eval-rst}", f".. automodule:: {mod_name}", "   :no-members:", "```", ""]
        modules = [r for r in rows if r[1] == "module"]
        objects = [r for r in rows if r[1] != "module"]
        children = [m for m in _api.public_modules() if m.rpartition(".")[0] == mod_name]
        linked = [m[2] for m in modules] + [c for c in children if c not in {m[2] for m in modules}]
        if linked:
            lines += ["Modules: " + ", ".join(f"{{doc}}`{m} <{m}>`" for m in linked), ""]
        if objects:
            lines += ["| name | summary |", "| --- | --- |"]
            for name, kind, documented_as in objects:
                value = getattr(module, name)
                summary = _first_line(value) if kind != "data" else f"`{_value(value)}`".replace("|", "\\|")
                if documented_as != f"{mod_name}.{name}":
                    summary = f"the same object as {{py:obj}}`{documented_as}`"
                lines.append(f"| {{py:obj}}`~{documented_as}` | {summary} |")
            lines.append("")
        body = []
        for name, kind, documented_as in objects:
            full = f"{mod_name}.{name}"
            if documented_as != full:
                continue
            if kind == "data":
                value = _value(getattr(module, name))
                body += [f".. py:data:: {name}", f"   :module: {mod_name}", f"   :value: {value}", ""]
            else:
                body += [f".. auto{kind}:: {full}", ""]
        if body:
            lines += ["```{eval-rst}", *body, "```", ""]
        (target / f"{mod_name}.md").write_text("\n".join(lines))


def _write_cli_help() -> None:
    """``jaxpriv --help`` and each command's ``--help``, as ``docs/_generated/cli_help.md`` (included by the CLI page).

    ``--help`` makes argparse print and exit before the command runs anything.
    """
    import contextlib
    import io
    import os
    import re

    from jaxpriv import cli

    def help_text(argv: list[str]) -> str:
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
            cli.main([*argv, "--help"])
        return out.getvalue().rstrip()

    columns = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "110"
    try:
        top = help_text([])
        commands = re.search(r"\{([a-z_,-]+)\}", top).group(1).split(",")
        lines = ["```text", "$ jaxpriv --help", top, "```", ""]
        for command in commands:
            lines += [f"### `jaxpriv {command}`", "", "```text", help_text([command]), "```", ""]
    finally:
        if columns is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = columns
    target = DOCS / "_generated"
    target.mkdir(exist_ok=True)
    (target / "cli_help.md").write_text("\n".join(lines))


def _aliases() -> dict[str, str]:
    """Other names of each documented class or function: its defining module's, and its other public names."""
    aliases = {}
    for mod_name, rows in _api.api_entries().items():
        module = importlib.import_module(mod_name)
        for name, kind, documented_as in rows:
            if kind in ("class", "function"):
                value = getattr(module, name)
                canonical = f"{getattr(value, '__module__', '')}.{getattr(value, '__qualname__', '')}"
                for other in (canonical, f"{mod_name}.{name}"):
                    if other != documented_as:
                        aliases.setdefault(other, documented_as)
    return aliases


ALIASES = _aliases()


def _resolve_alias(app, env, node, contnode):
    """A reference to ``jaxpriv.sim.SimParams`` (a type hint's name) resolves to ``jaxpriv.SimParams``."""
    if node.get("refdomain") != "py" or node.get("reftarget") not in ALIASES:
        return None
    domain = env.get_domain("py")
    target = ALIASES[node["reftarget"]]
    return domain.resolve_xref(env, node["refdoc"], app.builder, node["reftype"], target, node, contnode)


def setup(app):
    app.connect("missing-reference", _resolve_alias)


_copy_notebooks()
_write_api_pages()
_write_cli_help()
