"""The public modules and names of jaxpriv, shared by ``conf.py`` (the API pages) and the docs test.

A module is public when no part of its dotted path starts with ``_``, and either it sits directly under
``jaxpriv`` or its parent package declares no ``__all__`` (a package with ``__all__`` re-exports its
implementation files' public names, so ``jaxpriv.oco.pftal`` is documented as ``jaxpriv.oco.pftal``, the
function, on the ``jaxpriv.oco`` page). A public module's public names are its ``__all__``, or else the
functions, classes and assignments at its top level whose names do not start with ``_``.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
from types import ModuleType


def public_modules() -> list[str]:
    """Dotted names of jaxpriv's public modules, ``jaxpriv`` first, then sorted."""
    import jaxpriv

    names = []
    for info in pkgutil.walk_packages(jaxpriv.__path__, "jaxpriv."):
        parts = info.name.split(".")
        if any(p.startswith("_") for p in parts):
            continue
        if len(parts) > 2:
            parent = importlib.import_module(".".join(parts[:-1]))
            if hasattr(parent, "__all__"):
                continue
        names.append(info.name)
    # A module a public package re-exports by name (``jaxpriv.oco.one_point``) is public too.
    for name in ["jaxpriv", *names]:
        module = importlib.import_module(name)
        for attr in getattr(module, "__all__", ()):
            value = getattr(module, attr, None)
            if isinstance(value, ModuleType) and value.__name__ not in names and value.__name__ != "jaxpriv":
                names.append(value.__name__)
    return ["jaxpriv", *sorted(set(names))]


def _top_level_names(module: ModuleType) -> list[str]:
    tree = ast.parse(inspect.getsource(module))
    names: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.append(node.name)
        elif isinstance(node, ast.Assign):
            names += [t.id for t in node.targets if isinstance(t, ast.Name)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.append(node.target.id)
    return [n for n in dict.fromkeys(names) if not n.startswith("_")]


def public_names(module_name: str) -> list[str]:
    """The public names of one module (see the module docstring), in order."""
    module = importlib.import_module(module_name)
    if hasattr(module, "__all__"):
        return [n for n in module.__all__ if not n.startswith("__")]
    return _top_level_names(module)


def _kind(value: object) -> str:
    if isinstance(value, ModuleType):
        return "module"
    if inspect.isclass(value):
        return "class"
    if callable(value):
        return "function"
    return "data"


def api_entries() -> dict[str, list[tuple[str, str, str]]]:
    """Per public module, its public names as ``(name, kind, documented_as)``.

    ``kind`` is ``"module"``, ``"class"``, ``"function"`` or ``"data"``. Each class or function is documented
    once, under the first public name that reaches it (``jaxpriv`` first, then the modules in order), and
    ``documented_as`` is that full name: ``jaxpriv.sim.run`` is documented as ``jaxpriv.run``. A module is
    documented as itself; data (a constant) under its own name.
    """
    seen: dict[int, str] = {}
    entries: dict[str, list[tuple[str, str, str]]] = {}
    for mod_name in public_modules():
        module = importlib.import_module(mod_name)
        rows = []
        for name in public_names(mod_name):
            value = getattr(module, name)
            kind = _kind(value)
            full = f"{mod_name}.{name}"
            if kind == "module":
                rows.append((name, kind, value.__name__))
            elif kind == "data":
                rows.append((name, kind, full))
            else:
                rows.append((name, kind, seen.setdefault(id(value), full)))
        entries[mod_name] = rows
    return entries
