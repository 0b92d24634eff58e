"""The package's import graph: no cycle, and arrows point one way (DESIGN.md, Layout).

experiments -> library components -> sim / mechanisms -> _base. Read from the source with ``ast``
(every import, at module level or inside a function; imports under ``if TYPE_CHECKING:`` are
annotations only and do not count), so a new arrow the wrong way fails here before it bites.
"""

import ast
import collections
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2] / "jaxpriv"

# Each top-level part of the package and its layer: a module may import its own layer or lower ones.
LAYERS = {
    "_rng": 0,
    "_validate": 0,
    "_kahan": 0,
    "_inplace": 0,
    "stats": 0,
    "_base": 1,
    "mechanisms": 2,
    "sets": 2,
    "_resume": 2,
    "sim": 3,
    "envs": 4,
    "oco": 4,
    "bandits": 4,
    "theory": 4,
    "tune": 4,
    "audit": 4,
    "plot": 4,
    "tidy": 4,
    "testing": 4,
    "jaxpriv": 5,  # the package's __init__: the public API, re-exported
    "experiments": 6,
    "cli": 7,
    "__main__": 8,
}


def _modules() -> dict[str, Path]:
    mods = {}
    for path in ROOT.rglob("*.py"):
        parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        mods[".".join(parts)] = path
    return mods


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    skip = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    return skip


def _graph() -> dict[str, set[str]]:
    mods = _modules()

    def resolve(name: str) -> str | None:
        while name and name not in mods:
            name = name.rsplit(".", 1)[0] if "." in name else ""
        return name or None

    edges: dict[str, set[str]] = collections.defaultdict(set)
    for mod, path in mods.items():
        tree = ast.parse(path.read_text())
        skip = _type_checking_nodes(tree)
        package = mod if path.name == "__init__.py" else mod.rsplit(".", 1)[0]
        for node in ast.walk(tree):
            if id(node) in skip:
                continue
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]
            else:
                continue
            for target in targets:
                if target.startswith("jaxpriv") and (dep := resolve(target)) and dep != mod:
                    edges[mod].add(dep)
    return edges


def _part(module: str) -> str:
    return module.split(".")[1] if "." in module else module


def test_the_import_graph_has_no_cycle():
    edges = _graph()
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        path.append(node)
        for dep in sorted(edges.get(node, ())):
            if state.get(dep) == 1:
                cycle = [*path[path.index(dep) :], dep]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if dep not in state:
                visit(dep)
        path.pop()
        state[node] = 2

    for node in sorted(_modules()):
        if node not in state:
            visit(node)


def test_arrows_point_one_way():
    wrong = []
    for mod, deps in _graph().items():
        part = _part(mod)
        assert part in LAYERS, f"{mod}: add its part {part!r} to LAYERS"
        for dep in deps:
            if LAYERS[_part(dep)] > LAYERS[part]:
                wrong.append(f"{mod} -> {dep}")
    assert not wrong, "imports from a lower layer to a higher one:\n" + "\n".join(sorted(wrong))


def test_the_library_never_imports_the_experiments():
    for mod, deps in _graph().items():
        if LAYERS[_part(mod)] < LAYERS["experiments"]:
            assert not [d for d in deps if _part(d) in ("experiments", "cli")], mod
