"""The package's import graph: arrows point one way, down a fine order of layers, and no module imports itself
back in a circle (docs/development.md, Layout).

Read from the source with ``ast``. Every import counts: at module level, under ``if TYPE_CHECKING:``
(an annotation is a dependency too) and inside a function (a deferred import is still an arrow; deferring it
hides a wrong arrow from Python, not from the design). A new arrow the wrong way fails here before it bites.
"""

import ast
import collections
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2] / "jaxpriv"

# Each top-level part of the package (a module or a subpackage, ``sim`` either) and its layer: a module may
# import its own layer or lower ones. The order is the code's: the helpers at the bottom; the privacy
# mechanisms; the constraint sets and the theory (step sizes, noise scales, regret bounds: arithmetic on
# params, no learner); the environments; the engine (``sim``: it runs any component and imports none); the
# learners and the bandit policies (the episodic bandits drive the engine themselves); the tools that work on
# components and results; the plots (of tidy results); the public API; the experiments; the command line.
LAYERS = {
    "_rng": 0,
    "_kahan": 0,
    "_inplace": 0,
    "_safe": 0,
    "_reduce": 0,
    "_validate": 0,
    "_base": 1,
    "declare": 1,
    "stats": 1,
    "mechanisms": 2,
    "sets": 3,
    "theory": 3,
    "envs": 4,
    "sim": 5,
    "oco": 6,
    "bandits": 6,
    "tune": 7,
    "audit": 7,
    "tidy": 7,
    "testing": 7,
    "plot": 8,
    "jaxpriv": 9,  # the package's __init__: the public API, re-exported
    "experiments": 10,
    "cli": 11,
    "__main__": 12,
}


def _modules() -> dict[str, Path]:
    mods = {}
    for path in ROOT.rglob("*.py"):
        parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        mods[".".join(parts)] = path
    return mods


def _function_level(tree: ast.AST) -> set[int]:
    """The ids of the nodes inside a function's body (run when it is called, not when the module is imported)."""
    inside = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            inside.update(id(n) for n in ast.walk(node) if n is not node)
    return inside


def _graph(module_level_only: bool = False) -> dict[str, set[str]]:
    """``module -> the jaxpriv modules it imports``; with ``module_level_only``, the imports run at import time
    (and those under ``if TYPE_CHECKING:``), not those inside functions."""
    mods = _modules()

    def resolve(name: str) -> str | None:
        while name and name not in mods:
            name = name.rsplit(".", 1)[0] if "." in name else ""
        return name or None

    edges: dict[str, set[str]] = collections.defaultdict(set)
    for mod, path in mods.items():
        tree = ast.parse(path.read_text())
        deferred = _function_level(tree) if module_level_only else set()
        package = mod if path.name == "__init__.py" else mod.rsplit(".", 1)[0]
        for node in ast.walk(tree):
            if id(node) in deferred:
                continue
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
                # ``from jaxpriv.oco import one_point``: the submodule where there is one, else the module itself.
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]
            else:
                continue
            for target in targets:
                if target.split(".")[0] == "jaxpriv" and (dep := resolve(target)) and dep != mod:
                    edges[mod].add(dep)
    return edges


def _part(module: str) -> str:
    return module.split(".")[1] if "." in module else module


def _cycle(edges: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for dep in sorted(edges.get(node, ())):
            if state.get(dep) == 1:
                return [*path[path.index(dep) :], dep]
            if dep not in state and (found := visit(dep)):
                return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(edges):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_every_part_has_a_layer_and_every_layer_a_part():
    parts = {_part(m) for m in _modules()}
    assert not parts - LAYERS.keys(), f"add these parts to LAYERS: {sorted(parts - LAYERS.keys())}"
    assert not LAYERS.keys() - parts, f"LAYERS names parts that are gone: {sorted(LAYERS.keys() - parts)}"


def test_arrows_point_down():
    wrong = []
    for mod, deps in _graph().items():
        for dep in deps:
            if LAYERS[_part(dep)] > LAYERS[_part(mod)]:
                wrong.append(f"{mod} ({_part(mod)}: {LAYERS[_part(mod)]}) -> {dep} ({LAYERS[_part(dep)]})")
    assert not wrong, "imports from a lower layer to a higher one:\n" + "\n".join(sorted(wrong))


def test_the_module_graph_has_no_cycle():
    """Module by module, not part by part: two files of one subpackage may not import each other either."""
    cycle = _cycle(_graph(module_level_only=True))
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])
    cycle = _cycle(_graph())
    assert cycle is None, "import cycle through an import inside a function: " + " -> ".join(cycle or [])


def test_the_checks_see_deferred_and_annotation_imports():
    """The graph is read right: a function-level import and an import under ``if TYPE_CHECKING:`` are arrows."""
    tree = ast.parse("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import a\ndef f():\n    import b\n")
    deferred = _function_level(tree)
    imports = [n for n in ast.walk(tree) if isinstance(n, ast.Import)]
    assert [id(n) in deferred for n in imports] == [False, True]
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": {"c"}}) is None


def test_the_library_never_imports_the_experiments():
    for mod, deps in _graph().items():
        if LAYERS[_part(mod)] < LAYERS["experiments"]:
            assert not [d for d in deps if _part(d) in ("experiments", "cli")], mod


# --- one name, one thing -------------------------------------------------------------------------------------


def _shadowed_modules() -> dict[str, str]:
    """``{module: package}`` for each file whose name its package binds to something else (its factory)."""
    import importlib
    import pkgutil

    import jaxpriv

    shadowed = {}
    for info in pkgutil.walk_packages(jaxpriv.__path__, "jaxpriv."):
        parent, _, leaf = info.name.rpartition(".")
        if leaf.startswith("_") or info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        if getattr(importlib.import_module(parent), leaf, module) is not module:
            shadowed[info.name] = parent
    return shadowed


def test_an_algorithm_name_is_its_factory():
    """The rule (docs/development.md, Layout): ``jaxpriv/oco/pftal.py`` is the file of one algorithm, named after it,
    and ``jaxpriv.oco.pftal`` is its factory, the function, never the file. So every file whose name its package
    binds to something else is shadowed by the factory defined in it, and no code reaches such a file as an
    attribute (``oco.pftal.PFTALParams``) or with ``import jaxpriv.oco.pftal [as m]`` (which Python resolves to the
    function); ``from jaxpriv.oco.pftal import PFTALParams`` names the file unambiguously."""
    import importlib
    import re

    shadowed = _shadowed_modules()
    assert "jaxpriv.oco.pftal" in shadowed and "jaxpriv.bandits.dp_ucb" in shadowed
    for module, package in shadowed.items():
        factory = getattr(importlib.import_module(package), module.rpartition(".")[2])
        assert callable(factory) and factory.__module__ == module, f"{package}.{factory!r} is not {module}'s factory"

    leaves = "|".join(sorted({m.rpartition(".")[2] for m in shadowed}))
    packages = "|".join(sorted({p.rpartition(".")[2] for p in shadowed.values()}))
    through_attribute = re.compile(rf"\b(?:{packages})\.(?:{leaves})\.\w")
    wrong = []
    repo = ROOT.parent
    for path in [*ROOT.rglob("*.py"), *(repo / "tests").rglob("*.py"), *(repo / "benchmarks").rglob("*.py")]:
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                wrong += [f"{path}: import {a.name}" for a in node.names if a.name in shadowed]
            elif isinstance(node, ast.Attribute) and through_attribute.search(ast.unparse(node)):
                wrong.append(f"{path}:{node.lineno}: {ast.unparse(node)}")
    assert not wrong, "a module shadowed by its factory, reached as a module:\n" + "\n".join(sorted(set(wrong)))
