"""A user's module from the command line and the study file: ``--import``, ``imports = [...]``, entry points.

The modules are written to a temporary folder; each registers an existing factory (``jaxpriv.oco.ogd``) under a
new name, so nothing compiles: the study files are parsed only.
"""

import importlib.metadata
import sys
import textwrap

import pytest

from jaxpriv import cli
from jaxpriv.experiments import imports, registry
from jaxpriv.experiments.study_file import load_study, parse_study

MODULE = """
from jaxpriv import oco
from jaxpriv.experiments import registry

registry.register_learner("{name}", oco.ogd, oco.OGDParams)
"""

STUDY = """
{imports}
horizon = 16
seeds = 2
[set]
kind = "l2_ball"
dim = 2
[learner]
name = "{name}"
[learner.params]
lipschitz = [1.0, 2.0]
[env]
name = "quadratic_stream"
[env.params]
center = [0.3, 0.3]
"""


@pytest.fixture
def clean(monkeypatch):
    """Whatever a test registers or imports is gone after it (the registry and ``sys.modules`` as they were)."""
    learners, modules = dict(registry._LEARNERS), set(sys.modules)
    monkeypatch.setattr(imports, "_loaded_entry_points", False)
    yield
    registry._LEARNERS.clear()
    registry._LEARNERS.update(learners)
    for name in set(sys.modules) - modules:
        if name.startswith("jp_"):  # this file's modules only (never a library's, imported on the way)
            del sys.modules[name]


def _module(folder, stem, name):
    path = folder / f"{stem}.py"
    path.write_text(MODULE.format(name=name))
    return path


def test_a_study_file_imports_its_modules_by_name_and_by_path(tmp_path, clean, monkeypatch):
    sub = tmp_path / "lib"
    sub.mkdir()
    _module(tmp_path, "jp_user_a", "user_a")
    _module(sub, "jp_user_b", "user_b")
    text = STUDY.format(imports='imports = ["jp_user_a", "lib/jp_user_b.py"]', name="user_b")
    (tmp_path / "study.toml").write_text(text)
    monkeypatch.chdir("/")  # resolved from the study file's folder, not the working directory
    study = load_study(tmp_path / "study.toml")
    assert study.learner_name == "user_b" and "user_a" in registry.LEARNERS
    again = load_study(tmp_path / "study.toml")  # imported once: its registration does not run twice
    assert again.learner_name == "user_b"


def test_unknown_names_say_how_to_bring_your_own(tmp_path, clean):
    with pytest.raises(ValueError, match=r"unknown learner 'zcdp_se'.*--import MODULE or imports = \[\.\.\.\]"):
        parse_study(STUDY.format(imports="", name="zcdp_se"), tmp_path / "s.toml")
    with pytest.raises(ValueError, match=r"\[imports\] cannot import 'jp_nowhere': no such module"):
        parse_study(STUDY.format(imports='imports = ["jp_nowhere"]', name="ogd"), tmp_path / "s.toml")
    with pytest.raises(ValueError, match=r"\[imports\] missing.py: no such file"):
        parse_study(STUDY.format(imports='imports = ["missing.py"]', name="ogd"), tmp_path / "s.toml")
    with pytest.raises(ValueError, match=r"\[imports\] must be a list"):
        parse_study(STUDY.format(imports='imports = "jp_user"', name="ogd"), tmp_path / "s.toml")
    with pytest.raises(ValueError, match="neither a module name"):
        imports.import_component_module("not a-module")
    (tmp_path / "json.py").write_text("")
    with pytest.raises(ValueError, match="a module named 'json' is imported already"):
        imports.import_component_module(str(tmp_path / "json.py"))


def test_the_cli_imports_modules_before_reading_the_file(tmp_path, clean, monkeypatch, capsys):
    import jaxpriv.experiments.study as study

    path = _module(tmp_path, "jp_user_c", "user_c")
    (tmp_path / "study.toml").write_text(STUDY.format(imports="", name="user_c"))
    monkeypatch.chdir(tmp_path)
    seen = []
    monkeypatch.setattr(study, "run_study", lambda p, *a, **k: seen.append(load_study(p)) or sys.exit(0))
    argv = ["sweep", "study.toml", "--no-compile-cache", "--import", "jp_user_c", "--import", str(path)]
    with pytest.raises(SystemExit):
        cli.main(argv)
    assert seen[0].learner_name == "user_c"
    assert cli.main(["sweep", "study.toml", "--no-compile-cache", "--import", "jp_missing"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("jaxpriv sweep: error: --import jp_missing: cannot import 'jp_missing'")


def test_installed_packages_register_through_entry_points_lazily(tmp_path, clean, monkeypatch):
    _module(tmp_path, "jp_plugin", "user_plugin")
    monkeypatch.syspath_prepend(str(tmp_path))
    point = importlib.metadata.EntryPoint("plugin", "jp_plugin", imports.ENTRY_POINT_GROUP)
    calls = []

    def entry_points(group):
        calls.append(group)
        return [point] if group == imports.ENTRY_POINT_GROUP else []

    monkeypatch.setattr(importlib.metadata, "entry_points", entry_points)
    parse_study(STUDY.format(imports="", name="ogd"), tmp_path / "s.toml")
    assert calls == []  # every name known: no entry point is loaded
    study = parse_study(STUDY.format(imports="", name="user_plugin"), tmp_path / "s.toml")
    assert study.learner_name == "user_plugin" and calls == [imports.ENTRY_POINT_GROUP]
    parse_study(textwrap.dedent(STUDY.format(imports="", name="user_plugin")), tmp_path / "s.toml")
    assert calls == [imports.ENTRY_POINT_GROUP]  # loaded once
