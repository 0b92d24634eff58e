"""A user's own components for study files: the modules that register them, imported by name or by path.

A study file names components of the registry (``jaxpriv.experiments.registry``); a component of your own
enters it when the module that registers it is imported. Three ways, each importing the module once:

* the command line: ``jaxpriv sweep study.toml --import mymod`` (repeatable);
* the study file: a top-level ``imports = ["mymod", "helpers/other.py"]``;
* an installed package: an entry point in the group ``jaxpriv.components`` (``ENTRY_POINT_GROUP``), e.g. in its
  ``pyproject.toml``::

      [project.entry-points."jaxpriv.components"]
      mypkg = "mypkg.components"

  loaded lazily: only when a study file names a component the registry does not hold.

A module is a module name (``mymod``, ``mypkg.sub``) importable from the study file's folder, the working
directory or ``sys.path``; or the path of a ``.py`` file (relative to the study file's folder, else the working
directory), executed as the module named by its stem. Importing it again (another study, ``--import`` beside
``imports``) returns the module already imported: its registrations run once.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import os
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from types import ModuleType

__all__ = ["ENTRY_POINT_GROUP", "HOW", "import_component_module", "import_modules", "load_entry_points"]

#: The entry-point group of installed packages that register components (loaded lazily).
ENTRY_POINT_GROUP = "jaxpriv.components"
#: What an unknown-name error adds: how a component of your own gets into the registry.
HOW = "a component of your own: --import MODULE or imports = [...] in the study file"

_loaded_entry_points = False


def _folders(folders: Sequence[str | Path]) -> list[Path]:
    """The folders searched, in order, then the working directory; each once."""
    out: list[Path] = []
    for folder in [*folders, Path.cwd()]:
        path = Path(folder).expanduser().resolve()
        if path not in out:
            out.append(path)
    return out


def _is_path(spec: str) -> bool:
    return spec.endswith(".py") or "/" in spec or os.sep in spec


def _import_file(spec: str, folders: list[Path]) -> ModuleType:
    """Execute the ``.py`` file ``spec`` as the module named by its stem (or return it, already imported)."""
    given = Path(spec).expanduser()
    candidates = [given] if given.is_absolute() else [folder / given for folder in folders]
    path = next((p.resolve() for p in candidates if p.is_file()), None)
    if path is None:
        where = ", ".join(str(p.parent) for p in candidates)
        raise ValueError(f"{spec}: no such file (looked in {where})")
    if path.suffix != ".py":
        raise ValueError(f"{spec}: a module to import must be a .py file or a module name, got {path}")
    name = path.stem
    known = sys.modules.get(name)
    if known is not None:
        file = getattr(known, "__file__", None)
        if file is not None and Path(file).resolve() == path:
            return known  # imported already: its registrations ran
        raise ValueError(
            f"{spec}: a module named {name!r} is imported already (from {file or 'built in'}): rename {path.name}"
        )
    loader_spec = importlib.util.spec_from_file_location(name, path)
    if loader_spec is None or loader_spec.loader is None:  # pragma: no cover - a .py file always has a loader
        raise ValueError(f"{spec}: cannot be imported as a Python module")
    module = importlib.util.module_from_spec(loader_spec)
    sys.modules[name] = module
    try:
        loader_spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def _import_name(spec: str, folders: list[Path]) -> ModuleType:
    """Import the module named ``spec`` with ``folders`` first on ``sys.path`` (for the import only)."""
    if not all(part.isidentifier() for part in spec.split(".")):
        raise ValueError(f"{spec!r} is neither a module name (mymod, mypkg.sub) nor the path of a .py file")
    added = [str(f) for f in folders if str(f) not in sys.path]
    sys.path[:0] = added
    try:
        return importlib.import_module(spec)
    except ModuleNotFoundError as err:
        if err.name is not None and (spec == err.name or spec.startswith(err.name + ".")):
            where = ", ".join(str(f) for f in folders)
            raise ValueError(f"cannot import {spec!r}: no such module (looked in {where} and sys.path)") from None
        raise ValueError(f"importing {spec!r} failed: {err}") from None
    finally:
        for folder in added:
            sys.path.remove(folder)


def import_component_module(spec: str, folders: Sequence[str | Path] = ()) -> ModuleType:
    """Import the module ``spec`` (a module name, or the path of a ``.py`` file), so that its components register.

    Args:
      spec: ``"mymod"`` / ``"mypkg.sub"`` (importable from ``folders``, the working directory or ``sys.path``), or
        ``"path/to/mymod.py"`` (relative to the first of ``folders`` holding it, else the working directory).
      folders: where to look first (a study file's folder), before the working directory.

    Returns:
      The module (the one imported already, if it was: its registrations run once).

    Raises:
      ValueError: naming ``spec``: no such module or file, a name that is not a module name, a file whose stem
        names another module already imported; a missing dependency of the module. (An exception the module
        itself raises while running propagates as it is.)
    """
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(f"a module to import must be a non-empty string, got {spec!r}")
    spec = spec.strip()
    places = _folders(folders)
    return _import_file(spec, places) if _is_path(spec) else _import_name(spec, places)


def import_modules(specs: Iterable[str], folders: Sequence[str | Path] = ()) -> list[ModuleType]:
    """``import_component_module`` of each of ``specs``, in order."""
    return [import_component_module(spec, folders) for spec in specs]


def load_entry_points() -> list[str]:
    """Import the modules installed packages declare in the entry-point group ``jaxpriv.components``, once.

    An entry point's value is a module (``"mypkg.components"``, whose import registers its components) or a
    function in one (``"mypkg.components:register"``, called with no arguments). Called when a study file names a
    component the registry does not hold; a second call does nothing.

    Returns:
      The names of the entry points loaded by this call.

    Raises:
      ValueError: an entry point that cannot be loaded (naming it and its package).
    """
    global _loaded_entry_points
    if _loaded_entry_points:
        return []
    _loaded_entry_points = True
    names = []
    for point in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        try:
            target = point.load()
            if callable(target) and not isinstance(target, ModuleType):
                target()
        except Exception as err:  # a broken plugin: one clear line naming it
            package = point.dist.name if point.dist is not None else "?"
            raise ValueError(
                f"the {ENTRY_POINT_GROUP} entry point {point.name!r} = {point.value!r} (package {package}) "
                f"failed to load: {type(err).__name__}: {err}"
            ) from err
        names.append(point.name)
    return names
