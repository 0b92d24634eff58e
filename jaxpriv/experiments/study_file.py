"""The study file: TOML text -> a validated ``Study`` (parsing and grid building; nothing compiles).

A study file names the learner (a factory of the registry, ``jaxpriv.experiments.registry``,
and its static arguments), the environment, the constraint set, the params (any leaf may be
a list of values: the product grid is built), the seeds, the horizon and the checkpoints::

    name = "pftal-epsilon"
    horizon = 4096
    seeds = 200
    chunk = 50                 # seeds per chunk (jaxpriv.sweep's chunk): the unit of progress and of resume
    checkpoints = "log"        # "log", "all" or a list of steps

    [set]
    kind = "l2_ball"           # l2_ball, box, simplex, l1_ball; their keyword arguments beside it
    dim = 3

    [learner]
    name = "pftal"             # jaxpriv.oco.pftal; static keyword arguments beside it
    noise = "gamma"            # (horizon and constraint are supplied from the file)
    [learner.params]           # the fields of PFTALParams
    epsilon = [0.1, 1.0, 10.0, inf]
    lipschitz = 2.0

    [env]
    name = "quadratic_stream"
    [env.params]
    center = [0.23, 0.23, 0.23]
    spread = 0.3

A list on a leaf whose base value is a scalar (or a list of lists on a vector
leaf such as ``center``) is a grid axis; ``zip = [["learner.params.epsilon",
"learner.params.lipschitz"]]`` makes several leaves one axis (equal lengths).
The product of the axes is flattened, row-major (the last axis varies fastest),
into one zipped grid of ``G`` points (``build_grid``).

Everything is checked before anything compiles: unknown names and keys, bad
values (each component's ``check``, and the checks its ``init`` / ``reset`` make when
traced on abstract values) and bad grids raise ``ValueError`` naming the file and
the key (``"<file>: [learner.params.epsilon] ..."``).

A learner that takes a prefix-sum mechanism (PFTAL, regularized PFTAL, private experts,
private bandit FTAL, DP-FTRL, DP-UCB) may name one of ``registry.MECHANISMS``:
``mechanism = "honaker_tree"`` or ``mechanism = { name = "blt", noise = "gaussian", buffers = 4 }``
(the table's other keys are the mechanism's keyword arguments). It is built for the file's
horizon, the dimension the learner needs (its ``mechanism_dim``: the set's, the number of
experts, 1 for DP-UCB's arms) and ``neighbouring = "replace"``; its noise family is the
learner's ``noise`` when the table gives none, and the learner's budget field follows it.

**Comparison studies.** Several learners on the same environment, horizon, grid and seed keys: ``[[learners]]``
entries instead of the one ``[learner]`` table, and the swept values in a top-level ``[grid]``
of *shared axes*::

    reference = "FTAL"         # optional: paired differences against this label

    [grid]                     # the shared axes: every learner runs at every grid point
    epsilon = [0.3, 1.0, 3.0, inf]

    [[learners]]
    name = "pftal"
    label = "PFTAL"            # its name in the outputs (default: name); labels are unique
    [learners.params]
    lipschitz = 2.0            # a learner's params hold single values only

    [[learners]]
    name = "dp_ftrl"
    label = "DP-FTRL (zCDP)"
    noise = "gaussian"
    axes = { epsilon = "rho" } # the shared axis epsilon sets this learner's rho (the same numbers)
    guarantee = "rho-zCDP"     # optional: a guarantee column in summary.csv and paired.csv

    [[learners]]
    name = "ftal"              # no field epsilon: it runs once, the same at every grid point
    label = "FTAL"

How a shared axis reaches a learner: the axis ``a`` of ``[grid]`` sets the field that the
learner's ``axes = { a = "<field>" }`` names; without that, the field named ``a`` when the
learner's params class has one and the file does not set it in its ``[learners.params]``
(a value written there wins: ``epsilon = inf`` gives a non-private copy of a private
learner); otherwise the learner does not depend on ``a``. A learner that depends on no
swept value (neither a shared axis nor a list in ``[env.params]``) runs once and its
numbers are repeated at every grid point. ``[env.params]`` lists sweep the environment as in
the single form (the environment is shared, so every learner follows them), and ``zip``
may name shared axes (``"epsilon"`` or ``"grid.epsilon"``) and ``env.params`` keys. The grid
is the product of the shared axes and the environment's, flattened row-major as above.

Every learner gets the same seed keys (common random numbers): the differences between
learners at one grid point come from the learners, not from luck, and their standard error
is the paired one (``reference``; ``jaxpriv.experiments.study``).

Refused, naming the key: ``[learner]`` beside ``[[learners]]``; ``[grid]`` or ``reference``
without ``[[learners]]``; a list of values in a ``[learners.params]`` table (``"put the
values in [grid]"``: a learner's own axis would give the learners different grids); a field
set both by an ``axes`` entry and in ``[learners.params]``; two axes onto one field; an
``axes`` entry naming no axis of ``[grid]`` or no field; an axis of ``[grid]`` that no learner
takes; a missing, empty or repeated label; a ``reference`` that is no label.

**Reproductions.** ``[smoke]`` holds overrides for a reduced scale (``parse_study(..., smoke=True)``,
``jaxpriv sweep FILE --smoke``; ``SMOKE_KEYS``, and ``learners = [labels]`` to keep some of a comparison's, with
the ``[grid]`` axes they take);
``horizons = [...]`` instead of ``horizon`` runs one study per horizon (``at_horizon``); a ``[sizes]`` table
runs one study per value of a static size (the dimension, the number of experts: ``at_size``)::

    [sizes]
    name = "d"                                  # the column of summary.csv / slopes.csv; out/d<value>/
    values = [2, 4, 8]                          # at least two increasing integers >= 1
    keys = ["env.dim", "learners.dim"]          # set to each value ("learners.<key>": every learner's)
    resize = ["env.params.actions"]             # arrays whose last axis is the size (shape-only arrays, e.g.
                                                # an instance drawn per run): their rows cycled or cut to it

and writes the slopes of the final regret against the size (``slopes.csv``; with a ``reference``, the slopes of
each learner's paired difference from it too); a learner's
``simulator = "episodes"`` (or ``{ name = "episodes", <options> }``) runs it by its exact episode-level
simulator (``Spec.fast_path``); ``[[figures]]`` entries name recipes over ``jaxpriv.plot``
(``FIGURE_RECIPES``, drawn by ``jaxpriv.experiments.figures``).

**Components of your own.** ``imports = ["mymod", "more/other.py"]`` (top level) imports the modules that
register them before any name is looked up: a module name importable from the file's folder, the working
directory or ``sys.path``, or a ``.py`` path relative to the file's folder (else the working directory);
``jaxpriv sweep FILE --import mymod`` does the same from the command line, and installed packages' entry points
(group ``jaxpriv.components``) load when a name is not found (``jaxpriv.experiments.imports``).

``parse_study(text, source)`` builds a ``Study`` from TOML text; ``load_study(path)``
reads the file first (refusing a folder, a missing or unreadable file).
"""

from __future__ import annotations

import difflib
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxpriv import _validate, declare, envs, mechanisms, sim
from jaxpriv._base import Env, Learner, check_horizon, spec_of
from jaxpriv.experiments import registry
from jaxpriv.experiments.imports import HOW, import_component_module, load_entry_points
from jaxpriv.experiments.registry import Bound, Component

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = [
    "BUDGET_FIELDS",
    "COMPARE_KEYS",
    "SIMULATORS",
    "SMOKE_KEYS",
    "TABLES",
    "TOP_KEYS",
    "Grid",
    "Sizes",
    "Study",
    "StudyLearner",
    "at_horizon",
    "at_size",
    "build_grid",
    "load_study",
    "parse_study",
]

TOP_KEYS = (
    "name", "description", "horizon", "horizons", "seeds", "seed", "chunk", "segment", "grid_chunk", "checkpoints",
    "zip", "imports", "sizes",
)  # fmt: skip
TABLES = ("set", "learner", "env", "smoke", "figures")
#: What a ``[smoke]`` table may override (its tables ``grid``, ``env``, ``set`` are merged key by key).
SMOKE_KEYS = ("horizon", "horizons", "seeds", "seed", "chunk", "segment", "grid_chunk", "checkpoints", "grid", "env",
              "set", "learners", "sizes")  # fmt: skip
#: The simulators a learner may name: ``jaxpriv.sweep`` (every learner) or its exact episode-level one.
SIMULATORS = ("steps", "episodes")
# The keys of a comparison study: the learners, the shared axes, the reference learner's label.
COMPARE_KEYS = ("learners", "grid", "reference")

# The budget field each noise family's guarantee is stated in (a learner built with ``noise=``).
BUDGET_FIELDS = {  # family name -> (its budget field, its guarantee): {"gamma": ("epsilon", "ε-DP"), ...}
    name: (mechanisms.noise_family(name).budget, mechanisms.noise_family(name).guarantee)
    for name in mechanisms.NOISE_FAMILIES
}


class StudyLearner(NamedTuple):
    """One learner of a study: a ``[learner]`` table, or one ``[[learners]]`` entry of a comparison.

    Attributes:
      label: its name in the outputs (a comparison's ``label``, default its ``name``; the single form's name).
      name: the registry name.
      learner: the built learner.
      static: its static kwargs (with ``mechanism``, the built ``Mechanism``, and ``noise``, its family).
      bound: its regret bound function or ``None``.
      params: ``SimParams`` whose swept leaves carry the ``G`` grid points (``swept``), else one point.
      swept: whether it depends on a swept value; if not, it runs once and is repeated at every grid point.
      axes: the grid keys it takes -> the params field each sets (``{"learner.params.epsilon": "epsilon"}``
        in the single form).
      simulator: ``"steps"`` (``jaxpriv.sweep``) or ``"episodes"`` (its exact episode-level simulator,
        ``jaxpriv.bandits.simulate_episodes``: regret only, no loss or comparator).
      simulator_options: the episode simulator's per-call options from the file
        (``simulator = { name = "episodes", instance = "random" }``).
      guarantee: a comparison entry's ``guarantee = "..."`` (its privacy guarantee in words: a ``guarantee``
        column of ``summary.csv`` and ``paired.csv``, so that learners of different guarantees are not read as
        ranked like for like), or ``""``.
    """

    label: str
    name: str
    learner: Any
    static: dict[str, Any]
    bound: Bound | None
    params: Any
    swept: bool
    axes: dict[str, str]
    simulator: str = "steps"
    simulator_options: dict[str, Any] = {}  # noqa: RUF012 (a NamedTuple default, never mutated)
    guarantee: str = ""


class Study(NamedTuple):
    """A parsed, validated study file.

    Attributes:
      name: the study's name (default: the file's stem).
      source: the file's path.
      raw: the TOML contents as read.
      horizon, seeds, seed, chunk, grid_chunk: as in the file (chunk and grid_chunk with defaults).
      segment: ``jaxpriv.sweep``'s ``segment`` (steps per compiled segment, saved after each), or ``None``
        (the whole horizon).
      checkpoints: the normalised checkpoint steps.
      learner, env: the built components; constraint: the built set or ``None``.
      learner_name, env_name: their names in the file; learner_static: the learner's static kwargs.
      learner_bound: the learner's regret bound function or ``None``.
      params: ``SimParams`` whose swept leaves carry the flattened product grid ``[G, ...]``.
      grid: file key of each swept leaf -> its ``[G, ...]`` values at the flattened grid points.
      axes: the product's axes, each a tuple of the file keys swept together, with ``shape`` their lengths.
      shape: the grid's shape (one length per axis); ``G = prod(shape)``.
      learners: every learner (one in the single form); ``learner``, ``learner_name``, ``learner_static``,
        ``learner_bound`` and ``params`` are the first one's.
      reference: a comparison's reference label (paired differences against it), or ``None``.
      horizons: the file's ``horizons`` (one sweep per horizon, the same seed; ``horizon`` is the largest), or ``()``.
      sizes: the file's ``[sizes]`` (one study per value of a static size; the components are the largest's), or
        ``None``.
      smoke: whether the file's ``[smoke]`` overrides were applied (``raw`` holds the merged contents).
      figures: the ``[[figures]]`` entries (validated tables: ``recipe``, ``file`` and the recipe's options).
    """

    name: str
    source: Path
    raw: dict[str, Any]
    horizon: int
    seeds: int
    seed: int
    chunk: int
    grid_chunk: int
    checkpoints: tuple[int, ...]
    learner: Any
    env: Any
    constraint: Any
    learner_name: str
    env_name: str
    learner_static: dict[str, Any]
    learner_bound: Callable[..., float | None] | None
    params: Any
    grid: dict[str, np.ndarray]
    axes: list[tuple[str, ...]]
    shape: tuple[int, ...]
    learners: tuple[StudyLearner, ...] = ()
    reference: str | None = None
    segment: int | None = None
    horizons: tuple[int, ...] = ()
    smoke: bool = False
    figures: tuple[dict[str, Any], ...] = ()
    sizes: Sizes | None = None

    @property
    def size(self) -> int:
        """``G``, the number of grid points."""
        return int(np.prod(self.shape)) if self.shape else 1

    @property
    def compare(self) -> bool:
        """Whether this is a comparison study (``[[learners]]``)."""
        return "learners" in self.raw

    @property
    def labels(self) -> tuple[str, ...]:
        """The learners' labels, in the file's order."""
        return tuple(arm.label for arm in self.learners)


class Sizes(NamedTuple):
    """A file's ``[sizes]``: one study per value of a static size (``at_size``).

    Attributes:
      name: the size's name (a column of ``summary.csv`` and ``slopes.csv``; the folders ``<name><value>``).
      values: at least two increasing integers.
      keys: the dotted keys set to each value (``"learners.<key>"``: every ``[[learners]]`` entry's).
      resize: the dotted keys of arrays whose last axis is the size: cycled or cut to each value.
    """

    name: str
    values: tuple[int, ...]
    keys: tuple[str, ...]
    resize: tuple[str, ...] = ()


class Grid(NamedTuple):
    """The flattened product grid of a study's swept leaves.

    Attributes:
      axes: the product's axes, each a tuple of the file keys swept together (zip groups first).
      shape: the length of each axis.
      values: file key -> its ``[G, ...]`` values at the grid points (row-major: the last axis varies fastest).
    """

    axes: list[tuple[str, ...]]
    shape: tuple[int, ...]
    values: dict[str, np.ndarray]

    @property
    def size(self) -> int:
        """``G``, the number of grid points (1 when nothing is swept)."""
        return int(np.prod(self.shape)) if self.shape else 1


class _Built(NamedTuple):
    """A component built from its table: the component, its name, its static kwargs, its registry entry."""

    component: Any
    name: str
    static: dict[str, Any]
    entry: Component


class _RunKeys(NamedTuple):
    """The top-level keys that fix what runs: name, horizon, seeds, seed, chunk, checkpoints, segment."""

    name: str
    horizon: int
    seeds: int
    seed: int
    chunk: int
    checkpoints: tuple[int, ...]
    segment: int | None
    horizons: tuple[int, ...] = ()


def _fail(source: Path, key: str, message: str) -> ValueError:
    return ValueError(f"{source}: [{key}] {message}")


def _suggest(name: str, known: list[str]) -> str:
    """' (did you mean 'a' or 'b'?)' for up to three close names, best first; '' when none is close."""
    close = [repr(c) for c in difflib.get_close_matches(name, known, n=3)]
    if not close:
        return ""
    return f" (did you mean {' or '.join(close) if len(close) < 3 else ', '.join(close[:-1]) + ' or ' + close[-1]}?)"


# --- the file ------------------------------------------------------------------------------------------------


def load_study(path: str | Path, smoke: bool = False, edit: Callable[[dict], dict] | None = None) -> Study:
    """Read and validate a study file; builds the components but compiles nothing.

    Args:
      path: the study file (TOML).
      smoke: apply the file's ``[smoke]`` overrides (its reduced scale).
      edit: a function of the file's contents (after ``[smoke]``) returning the contents to run: a command's
        options over a shipped file (``jaxpriv demo --horizon ...``); checked like the file itself.

    Returns:
      The ``Study`` (see ``parse_study``).

    Raises:
      ValueError: naming the file and the key, for an unknown name or key, a bad
        value (the components' own checks, run on every grid point, and those they
        make when traced), a budget of another noise family (``noise = "gaussian"``
        with ``epsilon``) or none, or a bad grid; naming the path when it is a folder,
        missing or unreadable.
    """
    source, text = _read_text(path)
    return parse_study(text, source, smoke, edit)


def _read_text(path: Any) -> tuple[Path, str]:
    """The study file's path and text; a ``ValueError`` naming the path when there is no readable text file."""
    if not isinstance(path, (str, os.PathLike)) or not str(path):
        raise ValueError(f"study must be the path of a TOML study file, got {path!r}")
    source = Path(path)
    if source.is_dir():
        raise ValueError(f"study must be a TOML study file, got the folder {source}")
    if not source.is_file():
        raise ValueError(f"study file {source} does not exist (expected a TOML study file)")
    try:
        return source, source.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"{source}: not a TOML study file (not UTF-8 text)") from None
    except OSError as err:
        raise ValueError(f"study file {source} cannot be read ({err.strerror or err})") from None


def parse_study(
    text: str, source: str | Path = "<string>", smoke: bool = False, edit: Callable[[dict], dict] | None = None
) -> Study:
    """Build a validated ``Study`` from a study file's TOML text; builds the components but compiles nothing.

    Args:
      text: the TOML text.
      source: the file it came from: named in every error, and its stem is the default study name.
      smoke: apply the file's ``[smoke]`` overrides (a ``ValueError`` when it has none).
      edit: a function of the contents (after ``[smoke]``) returning the contents to parse (``load_study``).

    Returns:
      The ``Study``: its components built, its params carrying the flattened product grid.

    Raises:
      ValueError: ``"<source>: [<key>] <what is wrong>"``, for invalid TOML, an unknown name or key,
        a bad value (the components' own checks, run on every grid point, and those they make when
        traced), a budget of another noise family or none, or a bad grid.

    Examples:
      >>> from jaxpriv.experiments.study_file import parse_study
      >>> s = parse_study('''
      ... horizon = 64
      ... seeds = 4
      ... [set]
      ... kind = "l2_ball"
      ... dim = 2
      ... [learner]
      ... name = "pftal"
      ... [learner.params]
      ... epsilon = [1.0, inf]
      ... [env]
      ... name = "quadratic_stream"
      ... [env.params]
      ... center = [0.3, 0.3]
      ... ''', "example.toml")
      >>> s.name, s.shape, s.grid["learner.params.epsilon"].tolist()
      ('example', (2,), [1.0, inf])
    """
    source = Path(source)
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise ValueError(f"{source}: not valid TOML: {err}") from None
    raw = _apply_smoke(source, raw, smoke)
    if edit is not None:
        raw = edit(raw)
    _import_modules(source, raw)
    sizes = _sizes(source, raw)
    if sizes is None:
        study = _parse_raw(source, raw)
    else:  # the components of the largest size stand for the study; every size is checked below
        if "horizons" in raw:
            raise _fail(source, "sizes", "a file has horizons or [sizes] (one static axis per study file), not both")
        study = _parse_raw(source, _raw_at_size(source, raw, sizes, sizes.values[-1]))._replace(raw=raw, sizes=sizes)
    if study.horizons:  # every horizon's components and values are checked now, before anything compiles
        for horizon in study.horizons[:-1]:
            at_horizon(study, horizon)
    study = study._replace(smoke=smoke, figures=_figures(source, raw, study, smoke))
    if sizes is not None:
        for value in sizes.values[:-1]:
            at_size(study, value)
    return study


def at_horizon(study: Study, horizon: int) -> Study:
    """The study of a file with ``horizons`` at one of them: ``horizon = <horizon>`` in place of the list
    (its components built for that horizon: a learner tuned to ``T`` is another learner at each ``T``)."""
    raw = {k: v for k, v in study.raw.items() if k != "horizons"} | {"horizon": int(horizon)}
    return _parse_raw(study.source, raw)._replace(smoke=study.smoke, figures=study.figures)


def at_size(study: Study, value: int) -> Study:
    """The study of a file with ``[sizes]`` at one of its values: each of ``keys`` set to ``value``, each array of
    ``resize`` cycled or cut to ``value`` along its last axis (its components built for that size)."""
    if study.sizes is None:
        raise ValueError(f"{study.source}: [sizes] the study has no [sizes] table")
    raw = _raw_at_size(study.source, study.raw, study.sizes, value)
    return _parse_raw(study.source, raw)._replace(smoke=study.smoke, figures=study.figures)


def _sizes(source: Path, raw: dict[str, Any]) -> Sizes | None:
    """The file's ``[sizes]`` table, checked, or ``None``."""
    table = raw.get("sizes")
    if table is None:
        return None
    allowed = ("name", "values", "keys", "resize")
    if not isinstance(table, dict) or any(k not in allowed for k in table):
        raise _fail(source, "sizes", f"must be a table with the keys {list(allowed)}, got {table!r}")
    name, values = table.get("name"), table.get("values")
    if not isinstance(name, str) or not name.isidentifier():
        raise _fail(source, "sizes.name", f"must be a name (an identifier: the column of the tables), got {name!r}")
    _check_increasing(source, "sizes.values", values)
    lists = {}
    for key in ("keys", "resize"):
        given = table.get(key, [] if key == "resize" else None)
        if (
            not isinstance(given, list)
            or not all(isinstance(k, str) and k for k in given)
            or (key == "keys" and not given)
        ):
            raise _fail(source, f"sizes.{key}", f"must be a list of dotted keys (env.dim, learners.dim), got {given!r}")
        lists[key] = tuple(given)
    return Sizes(name, tuple(values), lists["keys"], lists["resize"])


def _raw_at_size(source: Path, raw: dict[str, Any], sizes: Sizes, value: int) -> dict[str, Any]:
    """``raw`` (less ``sizes``) with ``sizes.keys`` set to ``value`` and ``sizes.resize``'s arrays resized to it."""
    out = {k: v for k, v in raw.items() if k != "sizes"}

    def edit(key: str, how: Callable[[Any], Any], section: str) -> None:
        head, *path = key.split(".")
        if not path or head not in out:
            raise _fail(source, f"sizes.{section}", f"{key!r} names no key of the file")
        tables = out[head] if isinstance(out[head], list) else [out[head]]
        copies = []
        for table in tables:
            table = dict(table) if isinstance(table, dict) else table  # a copy: the file's contents stay as read
            node = table
            for part in path[:-1]:
                if not isinstance(node, dict) or part not in node:
                    raise _fail(source, f"sizes.{section}", f"{key!r} names no key of the file")
                node[part] = dict(node[part]) if isinstance(node[part], dict) else node[part]
                node = node[part]
            if not isinstance(node, dict) or (section == "resize" and path[-1] not in node):
                raise _fail(source, f"sizes.{section}", f"{key!r} names no key of the file")
            node[path[-1]] = how(node.get(path[-1]))
            copies.append(table)
        out[head] = copies if isinstance(out[head], list) else copies[0]

    def resized(array: Any) -> Any:
        arr = np.asarray(array)
        if arr.ndim == 0 or arr.shape[-1] == 0:
            raise _fail(source, "sizes.resize", f"names a value that is no array, got {array!r}")
        return np.take(arr, np.arange(value) % arr.shape[-1], axis=-1).tolist()

    for key in sizes.keys:
        edit(key, lambda _: int(value), "keys")
    for key in sizes.resize:
        edit(key, resized, "resize")
    return out


def _import_modules(source: Path, raw: dict[str, Any]) -> None:
    """Import the modules of the file's ``imports`` (names or ``.py`` paths; the file's folder, then the working
    directory), so that the components they register can be named (``jaxpriv.experiments.imports``)."""
    specs = raw.get("imports", [])
    if not isinstance(specs, list) or not all(isinstance(s, str) and s.strip() for s in specs):
        raise _fail(source, "imports", f"must be a list of module names or .py paths, got {specs!r}")
    for spec in specs:
        try:
            import_component_module(spec, [source.parent])
        except ValueError as err:
            raise _fail(source, "imports", str(err)) from None


def _known(components: Any, name: Any) -> bool:
    """Whether ``components`` (a registry table) holds ``name``, after loading installed packages' entry points
    (group ``jaxpriv.components``) when it does not."""
    if isinstance(name, str) and name not in components:
        load_entry_points()
    return isinstance(name, str) and name in components


def _apply_smoke(source: Path, raw: dict[str, Any], smoke: bool) -> dict[str, Any]:
    """The file's contents with its ``[smoke]`` overrides merged in (when ``smoke``); the table is checked either way.

    A top-level key of ``[smoke]`` replaces the file's (``horizon`` replaces ``horizons`` and the reverse); its
    tables ``grid``, ``env`` (and ``env.params``) and ``set`` replace the keys they name, leaving the others;
    ``learners = ["<label>", ...]`` keeps those of a comparison's learners only, and the ``[grid]`` axes that none
    of them takes are dropped (``_drop_untaken_axes``).
    """
    table = raw.get("smoke")
    if table is None:
        if smoke:
            raise _fail(source, "smoke", "the file has no [smoke] table (its reduced scale): add one to run --smoke")
        return raw
    if not isinstance(table, dict):
        raise _fail(source, "smoke", f"must be a table of overrides, got {table!r}")
    for key in table:
        if key not in SMOKE_KEYS:
            raise _fail(source, f"smoke.{key}", f"cannot be overridden{_suggest(key, list(SMOKE_KEYS))}; "
                        f"[smoke] may set {list(SMOKE_KEYS)}")  # fmt: skip
        if key in ("grid", "env", "set") and not isinstance(table[key], dict):
            raise _fail(source, f"smoke.{key}", f"must be a table (the keys of [{key}] it replaces)")
        if key == "learners":
            tables = raw.get("learners")
            labels = [t.get("label", t.get("name")) for t in tables] if isinstance(tables, list) else []
            keep = table[key]
            if not isinstance(keep, list) or not keep or any(k not in labels for k in keep):
                raise _fail(
                    source, "smoke.learners", f"must be a list of labels of [[learners]] {labels}, got {keep!r}"
                )
    if not smoke:
        return raw
    merged = {k: v for k, v in raw.items() if k != "smoke"}
    for key, value in table.items():
        if key == "learners":  # the labels kept at the smoke scale
            merged["learners"] = [t for t in raw["learners"] if t.get("label", t.get("name")) in value]
            continue
        if key in ("horizon", "horizons"):
            merged.pop("horizons" if key == "horizon" else "horizon", None)
        merged[key] = _merge(merged.get(key), value) if isinstance(value, dict) else value
    if "learners" in table:
        merged = _drop_untaken_axes(source, merged)
    merged["smoke"] = table
    return merged


def _drop_untaken_axes(source: Path, raw: dict[str, Any]) -> dict[str, Any]:
    """``raw`` (a ``[smoke]`` scale that keeps some learners) less the ``[grid]`` axes that no kept learner takes.

    Each dropped axis leaves the ``zip`` groups too, and a group it leaves with one key is no group (that key is an
    axis of its own). A learner the registry does not know keeps every axis (``_parse_raw`` refuses it, naming it).
    """
    grid, tables = raw.get("grid"), raw.get("learners")
    if not isinstance(grid, dict) or not isinstance(tables, list):
        return raw  # refused by _parse_raw, naming the key
    _import_modules(source, raw)  # a kept learner may be registered by the file's imports
    taken: set[str] = set()
    for table in tables:
        axes = _axes_taken(table, list(grid))
        if axes is None:
            return raw
        taken |= axes
    dropped = {axis for axis in grid if axis not in taken}
    if not dropped:
        return raw
    out = dict(raw)
    out["grid"] = {axis: values for axis, values in grid.items() if axis not in dropped}
    zips = raw.get("zip")
    if isinstance(zips, list):
        gone = dropped | {f"grid.{axis}" for axis in dropped}
        groups = []
        for group in zips:
            left = [k for k in group if k not in gone] if isinstance(group, list) else group
            if left == group or len(left) >= 2:
                groups.append(left)
        if groups:
            out["zip"] = groups
        else:
            del out["zip"]
    return out


def _axes_taken(table: Any, axes: list[str]) -> set[str] | None:
    """The shared axes (of ``axes``, ``[grid]``'s names) a ``[[learners]]`` table takes, as ``_axis_map`` maps them,
    read from the table and its registry entry without building it; ``None`` when they cannot be told (an unknown
    name, a malformed table: refused when the study is parsed)."""
    name = table.get("name") if isinstance(table, dict) else None
    if not isinstance(table, dict) or not _known(registry.LEARNERS, name):
        return None
    explicit, fixed = table.get("axes", {}), table.get("params", {})
    if not isinstance(explicit, dict) or not isinstance(fixed, dict):
        return None
    entry = registry.LEARNERS[name]
    other = _other_budget_fields(entry, table.get("noise", entry.defaults.get("noise")))
    taken = {axis for axis in explicit if axis in axes}
    mapped = set(explicit.values())
    for axis in axes:
        if axis not in explicit and _takes_by_name(axis, entry.params, fixed, mapped, other):
            taken.add(axis)
            mapped.add(axis)
    return taken


def _merge(base: Any, update: dict[str, Any]) -> dict[str, Any]:
    """``base`` (a table, or nothing) with ``update``'s keys replaced, tables merged recursively."""
    out = dict(base) if isinstance(base, dict) else {}
    for key, value in update.items():
        out[key] = _merge(out.get(key), value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def _parse_raw(source: Path, raw: dict[str, Any]) -> Study:
    """The study of the file's (merged) contents ``raw``."""
    _check_keys(source, raw)
    run = _run_keys(source, raw)
    constraint = _constraint_set(source, raw)

    supplied = {"horizon": run.horizon, "constraint": constraint}
    if "learners" in raw:
        return _parse_comparison(source, raw, run, constraint, supplied)
    learner = _build(source, "learner", raw["learner"], registry.LEARNERS, supplied)
    env = _build(source, "env", raw["env"], registry.ENVS, supplied)
    env = env._replace(component=_with_feedback(source, raw["env"], env.component))

    l_fixed, l_swept = _params(source, "learner", raw["learner"], learner.entry.params, learner.component)
    given = {field: f"learner.params.{field}" for field in raw["learner"].get("params", {})}
    _check_budget_family(source, "learner", given, learner.static, learner.entry)
    e_fixed, e_swept = _params(source, "env", raw["env"], env.entry.params, env.component)
    swept = {f"learner.params.{k}": v for k, v in l_swept.items()} | {f"env.params.{k}": v for k, v in e_swept.items()}
    grid = build_grid(swept, raw.get("zip", []), source)
    grid_chunk = _int_key(source, raw, "grid_chunk", grid.size, 1)

    params = sim.SimParams(
        _params_at(learner.entry.params, l_fixed, grid.values, "learner.params."),
        _params_at(env.entry.params, e_fixed, grid.values, "env.params."),
    )
    simulator, options = _simulator(source, "learner", raw["learner"], learner.component, env.name)
    if simulator == "steps":
        _check_values(source, learner.component, env.component, params, run.horizon)
    arm = StudyLearner(
        learner.name, learner.name, learner.component, learner.static, learner.entry.bound, params,
        bool(grid.values), {k: k[len("learner.params.") :] for k in grid.values if k.startswith("learner.params.")},
        simulator, options,
    )  # fmt: skip
    return Study(
        run.name, source, raw, run.horizon, run.seeds, run.seed, run.chunk, min(grid_chunk, grid.size),
        run.checkpoints, learner.component, env.component, constraint, learner.name, env.name, learner.static,
        learner.entry.bound, params, grid.values, grid.axes, grid.shape, (arm,), None, run.segment, run.horizons,
    )  # fmt: skip


def _parse_comparison(
    source: Path, raw: dict[str, Any], run: _RunKeys, constraint: Any, supplied: dict[str, Any]
) -> Study:
    """The comparison form: ``[[learners]]`` on the shared ``[grid]`` axes (see the module's docstring)."""
    tables = raw["learners"]
    if not isinstance(tables, list) or not tables or not all(isinstance(t, dict) for t in tables):
        raise _fail(source, "learners", "must be an array of tables ([[learners]] entries), at least one")
    labels = _labels(source, tables)
    env = _build(source, "env", raw["env"], registry.ENVS, supplied)
    env = env._replace(component=_with_feedback(source, raw["env"], env.component))
    e_fixed, e_swept = _params(source, "env", raw["env"], env.entry.params, env.component)

    shared = _shared_axes(source, raw.get("grid", {}))
    swept = shared | {f"env.params.{k}": v for k, v in e_swept.items()}
    grid = build_grid(swept, _shared_zip(raw.get("zip", []), shared), source)
    grid_chunk = _int_key(source, raw, "grid_chunk", grid.size, 1)

    arms = []
    used: set[str] = set()
    for table, label in zip(tables, labels, strict=True):
        section = f"learners.{label}"
        extra = ("label", "axes", "simulator", "guarantee")
        built = _build(source, section, table, registry.LEARNERS, supplied, "learner", extra)
        guarantee = table.get("guarantee", "")
        if not isinstance(guarantee, str):
            raise _fail(source, f"{section}.guarantee", f"must be a string (its guarantee in words), got {guarantee!r}")
        fixed, own = _params(source, section, table, built.entry.params, built.component)
        if own:
            field = next(iter(own))
            raise _fail(
                source, f"{section}.params.{field}",
                "is a list of values: in a comparison every learner runs on the same grid, so swept values "
                f"go in [grid] (a shared axis, e.g. [grid] {field} = [...]) and a learner's params hold single values",
            )  # fmt: skip
        axes = _axis_map(source, section, table, shared, built.entry.params, fixed, _other_budgets(built))
        used |= set(axes)
        explicit = table.get("axes", {})
        given = {f: f"{section}.params.{f}" for f in fixed} | {
            f: f"{section}.axes.{k[5:]}" if k[5:] in explicit else k for k, f in axes.items()
        }
        _check_budget_family(source, section, given, built.static, built.entry)
        is_swept = bool(axes) or bool(e_swept)
        values = {f"learner.params.{f}": grid.values[k] for k, f in axes.items()}
        env_values = {k: v for k, v in grid.values.items() if k.startswith("env.params.")}
        params = sim.SimParams(
            _params_at(built.entry.params, fixed, values, "learner.params."),
            _params_at(env.entry.params, e_fixed, env_values, "env.params."),
        )
        simulator, options = _simulator(source, section, table, built.component, env.name)
        if simulator == "steps":
            _check_values(source, built.component, env.component, params, run.horizon, section)
        arms.append(StudyLearner(label, built.name, built.component, built.static, built.entry.bound, params,
                                 is_swept, axes, simulator, options, guarantee))  # fmt: skip
    for key in shared:
        if key not in used:
            axis = key[len("grid.") :]
            raise _fail(
                source, key,
                f"no learner takes this axis: no [[learners]] params class has a field {axis!r} left unset; map it "
                f'onto a field with axes = {{ {axis} = "<field>" }} in a [[learners]] entry, or remove it',
            )  # fmt: skip
    reference = raw.get("reference")
    if reference is not None and reference not in labels:
        raise _fail(source, "reference", f"must be the label of a learner, one of {labels}, got {reference!r}")
    first = arms[0]
    return Study(
        run.name, source, raw, run.horizon, run.seeds, run.seed, run.chunk, min(grid_chunk, grid.size),
        run.checkpoints, first.learner, env.component, constraint, first.name, env.name, first.static,
        first.bound, first.params, grid.values, grid.axes, grid.shape, tuple(arms), reference, run.segment,
        run.horizons,
    )  # fmt: skip


def _labels(source: Path, tables: list[dict[str, Any]]) -> list[str]:
    """Each learner's label (default its name): non-empty strings, all different."""
    labels: list[str] = []
    for i, table in enumerate(tables, 1):
        label = table.get("label", table.get("name"))
        key = f"learners[{i}].label"
        if not isinstance(label, str) or not label.strip():
            raise _fail(source, key, f"must be a non-empty string (the learner's name in the outputs), got {label!r}")
        if label in labels:
            raise _fail(
                source, key,
                f"{label!r} is also the label of learners[{labels.index(label) + 1}]: every learner needs its own "
                "label (add label = \"...\" to tell them apart)",
            )  # fmt: skip
        labels.append(label)
    return labels


def _shared_zip(zips: Any, shared: dict[str, np.ndarray]) -> Any:
    """The file's ``zip`` with each bare shared-axis name (``"epsilon"``) written as its key (``"grid.epsilon"``)."""
    if not isinstance(zips, list):
        return zips  # build_grid refuses it, naming [zip]
    bare = {key[len("grid.") :]: key for key in shared}
    return [[bare.get(k, k) if isinstance(k, str) else k for k in g] if isinstance(g, list) else g for g in zips]


def _shared_axes(source: Path, table: Any) -> dict[str, np.ndarray]:
    """The ``[grid]`` table's shared axes: ``"grid.<axis>"`` -> its values (a non-empty list)."""
    if not isinstance(table, dict):
        raise _fail(source, "grid", f"must be a table of shared axes (name = [values]), got {table!r}")
    shared = {}
    for axis, value in table.items():
        key = f"grid.{axis}"
        if isinstance(value, (dict, str, bool)) or not isinstance(value, list):
            raise _fail(source, key, f"must be a list of values (a shared axis), got {value!r}")
        try:
            arr = np.asarray(value, np.float64)
        except (ValueError, TypeError):
            raise _fail(source, key, f"must be a list of numbers (or of equal-length lists), got {value!r}") from None
        if arr.shape[0] == 0:
            raise _fail(source, key, "is an empty grid")
        shared[key] = arr
    return shared


def _axis_map(
    source: Path, section: str, table: dict[str, Any], shared: dict[str, np.ndarray], cls: type,
    fixed: dict[str, np.ndarray], other_budgets: tuple[str, ...] = (),
) -> dict[str, str]:  # fmt: skip
    """The shared axes a learner takes: grid key -> the field it sets (``axes``, else the same-named field, unless
    it is the budget field of another noise family than the learner's: ``other_budgets``)."""
    explicit = table.get("axes", {})
    if not isinstance(explicit, dict):
        raise _fail(source, f"{section}.axes", f'must be a table (axis = "field"), got {explicit!r}')
    axes: dict[str, str] = {}
    for axis, field in explicit.items():
        key, where = f"grid.{axis}", f"{section}.axes.{axis}"
        if key not in shared:
            raise _fail(source, where, f"is not an axis of [grid]; its axes: {[k[5:] for k in shared]}")
        if not isinstance(field, str) or field not in cls._fields:
            raise _fail(source, where, f"must name a field of {cls.__name__} {list(cls._fields)}, got {field!r}")
        if field in fixed:
            raise _fail(
                source, f"{section}.params.{field}",
                f"is set here and by the shared axis grid.{axis} ({section}.axes.{axis}): remove one",
            )  # fmt: skip
        if field in axes.values():
            raise _fail(source, f"{section}.axes", f"two shared axes set the field {field!r}")
        axes[key] = field
    for key in shared:
        field = key[len("grid.") :]
        if key not in axes and _takes_by_name(field, cls, fixed, axes.values(), other_budgets):
            axes[key] = field
    return axes


def _takes_by_name(field: str, cls: type, fixed: Any, mapped: Any, other_budgets: tuple[str, ...]) -> bool:
    """Whether a learner takes the shared axis ``field`` by its name: a field of its params class ``cls`` that its
    ``[learners.params]`` (``fixed``) and its ``axes`` (the fields ``mapped``) leave unset, and no budget field of
    another noise family than its own (``other_budgets``)."""
    taken = field in fixed or field in mapped or field in other_budgets
    return field in getattr(cls, "_fields", ()) and not taken


# --- the top-level keys --------------------------------------------------------------------------------------


def _check_keys(source: Path, raw: dict[str, Any]) -> None:
    """Unknown top-level keys are refused (with the closest known one); ``[env]`` and one learner form are required.

    The learner form: one ``[learner]`` table, or ``[[learners]]`` entries (a comparison, which alone
    may have ``[grid]`` and ``reference``).
    """
    known = TOP_KEYS + TABLES + COMPARE_KEYS
    for key in raw:
        if key not in known:
            raise _fail(source, key, f"unknown key{_suggest(key, list(known))}; known: {known}")
    if "learner" in raw and "learners" in raw:
        raise _fail(
            source, "learners",
            "a study file has either one [learner] table or [[learners]] entries (a comparison), not both",
        )  # fmt: skip
    if "learners" not in raw:
        for key in ("grid", "reference"):
            if key in raw:
                raise _fail(
                    source, key,
                    "belongs to a comparison study ([[learners]] entries); a single [learner] sweeps the lists "
                    "in its own [learner.params]",
                )  # fmt: skip
    for key in ("learner", "env"):
        if key not in raw and not (key == "learner" and "learners" in raw):
            raise _fail(source, key, "is required")


def _int_key(source: Path, raw: dict[str, Any], key: str, default: int | None, minimum: int) -> int:
    value = raw.get(key, default)
    if value is None:
        raise _fail(source, key, "is required")
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise _fail(source, key, f"must be an integer >= {minimum}, got {value!r}")
    return value


def _run_keys(source: Path, raw: dict[str, Any]) -> _RunKeys:
    """The name, horizon, seeds, seed, chunk (which must divide seeds), the normalised checkpoints, the segment."""
    name = raw.get("name", source.stem)
    horizons = _horizons(source, raw)
    horizon = horizons[-1] if horizons else _int_key(source, raw, "horizon", None, 1)
    if horizon >= _validate.HORIZON_LIMIT:
        raise _fail(source, "horizon", f"must be < 2**31 - 1 (the clock and step counters are int32), got {horizon}")
    seeds = _int_key(source, raw, "seeds", None, 2)
    seed = _int_key(source, raw, "seed", 0, 0)
    if seed >= 2**64:  # jaxpriv._base.as_key's range: every bit counts (2**32 is not seed 0)
        raise _fail(source, "seed", f"must be an integer seed in [0, 2**64), got {seed}")
    chunk = _int_key(source, raw, "chunk", seeds, 1)
    if seeds % chunk:
        raise _fail(
            source, "chunk", f"must divide seeds={seeds} (every chunk runs the same compiled sweep), got {chunk}"
        )
    segment = None if raw.get("segment") is None else _int_key(source, raw, "segment", None, 1)
    ckpts = raw.get("checkpoints", "log")
    try:
        checkpoints = sim.normalize_checkpoints(horizon, None if ckpts == "all" else ckpts)
    except (ValueError, TypeError) as err:
        raise _fail(source, "checkpoints", f"must be 'log', 'all' or a list of steps in [1, horizon]: {err}") from None
    return _RunKeys(name, horizon, seeds, seed, chunk, checkpoints, segment, horizons)


def _check_increasing(source: Path, key: str, values: Any) -> None:
    """Refuse ``values`` unless it is a list of at least two increasing integers >= 1 (``horizons``, size values)."""
    if (
        not isinstance(values, list) or len(values) < 2
        or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in values)
        or bool(np.any(np.diff(values) <= 0))
    ):  # fmt: skip
        raise _fail(source, key, f"must be a list of at least two increasing integers >= 1, got {values!r}")


def _horizons(source: Path, raw: dict[str, Any]) -> tuple[int, ...]:
    """The file's ``horizons`` (at least two increasing integers, instead of ``horizon``), or ``()``."""
    if "horizons" not in raw:
        return ()
    if "horizon" in raw:
        raise _fail(source, "horizons", "give either horizon (one sweep) or horizons (one sweep per horizon), not both")
    values = raw["horizons"]
    _check_increasing(source, "horizons", values)
    return tuple(values)


# --- the components ------------------------------------------------------------------------------------------


def _constraint_set(source: Path, raw: dict[str, Any]) -> Any:
    """The ``[set]`` table's constraint set, or ``None`` when the file has none."""
    if "set" not in raw:
        return None
    table = raw["set"]
    kind = table.get("kind") if isinstance(table, dict) else None
    if not _known(registry.SETS, kind):
        known = sorted(registry.SETS)
        raise _fail(source, "set.kind", f"unknown set {kind!r}{_suggest(str(kind), known)}; {HOW}; known: {known}")
    factory = registry.SETS[kind]
    args = {k: v for k, v in table.items() if k != "kind"}
    signature = declare.declarations("set")[kind].parameters
    for key in args:
        if key not in signature:
            raise _fail(source, f"set.{key}", f"{kind} takes no argument {key!r}; it takes {sorted(signature)}")
    try:
        return factory(**args)
    except (ValueError, TypeError) as err:
        raise _fail(source, "set", f"{kind}: {err}") from None


def _build(
    source: Path, section: str, table: Any, components: dict[str, Component], supplied: dict[str, Any],
    what: str | None = None, reserved: tuple[str, ...] = (),
) -> _Built:  # fmt: skip
    """Build ``table``'s component from the registry ``components``; ``supplied`` are the file-wide arguments.

    ``what`` names the kind in messages (default ``section``); ``reserved`` are further keys of the table
    that are not static arguments. A learner's ``mechanism`` is built here (``_mechanism``).
    """
    what = section if what is None else what
    if not isinstance(table, dict):
        raise _fail(source, section, f"must be a table, got {table!r}")
    name = table.get("name")
    if not _known(components, name):
        known = sorted(components)
        raise _fail(
            source, f"{section}.name", f"unknown {what} {name!r}{_suggest(str(name), known)}; {HOW}; known: {known}"
        )
    entry = components[name]
    skip = ("name", "params", "bandit_feedback", "mechanism", "simulator", *reserved)
    static = {k: v for k, v in table.items() if k not in skip}
    signature = entry.parameters
    for key in static:
        if key not in signature or key in supplied:
            allowed = sorted(k for k in signature if k not in supplied)
            raise _fail(source, f"{section}.{key}", f"{name} takes no static argument {key!r}; it takes {allowed}")
    kwargs = dict(static)
    for key, value in supplied.items():
        if key in signature:
            if value is None:
                raise _fail(source, "set", f"{section} {name!r} needs a constraint set: add a [set] table")
            kwargs[key] = value
    missing = [k for k in entry.required if k not in kwargs]
    if missing:
        raise _fail(source, section, f"{name} needs the static argument(s) {missing}")
    if "mechanism" in table:
        if entry.mechanism_dim is None or "mechanism" not in signature:
            raise _fail(source, f"{section}.mechanism", f"{name} takes no prefix-sum mechanism")
        mech = _mechanism(source, f"{section}.mechanism", table["mechanism"], entry, static, kwargs, supplied)
        kwargs["mechanism"] = mech
        static = {**static, "mechanism": mech, "noise": mechanisms.describe(mech).noise}
    try:
        component = entry.factory(**kwargs)
    except (ValueError, TypeError) as err:
        raise _fail(source, section, f"{name}: {err}") from None
    kind = Learner if components is registry.LEARNERS else Env if components is registry.ENVS else None
    if kind is not None and not isinstance(component, kind):
        raise _fail(source, f"{section}.name", f"{name}: its registered factory returned a {type(component).__name__}, "
                    f"not a jaxpriv.{kind.__name__}: register the factory that builds one")  # fmt: skip
    if entry.params is None:  # registered without a params class: the component's own Spec names it
        params = spec_of(component).params
        if not (isinstance(params, type) and hasattr(params, "_fields")):
            raise _fail(source, f"{section}.name", f"{name}: its spec names no params class (Spec.params is "
                        f"{params!r}): register it with params=<its NamedTuple class>")  # fmt: skip
        entry = entry._replace(params=params)
    return _Built(component, name, static, entry)


def _mechanism(
    source: Path, key: str, value: Any, entry: Component, static: dict[str, Any], learner_kwargs: dict[str, Any],
    supplied: dict[str, Any],
) -> Any:  # fmt: skip
    """The prefix-sum mechanism a learner's ``mechanism`` names (a name, or a table with ``name`` and kwargs)."""
    if isinstance(value, str):
        table = {"name": value}
    elif isinstance(value, dict):
        table = dict(value)
    else:
        raise _fail(source, key, f"must be a mechanism name or a table with a name, got {value!r}")
    name = table.pop("name", None)
    if not _known(registry.MECHANISMS, name):
        known = sorted(registry.MECHANISMS)
        raise _fail(source, key, f"unknown mechanism {name!r}{_suggest(str(name), known)}; {HOW}; known: {known}")
    factory = registry.MECHANISMS[name]
    signature = declare.declarations("mechanism")[name].parameters
    for arg in table:
        if arg not in signature or arg in ("horizon", "dim", "dtype"):
            allowed = sorted(k for k in signature if k not in ("horizon", "dim", "dtype"))
            raise _fail(source, f"{key}.{arg}", f"{name} takes no argument {arg!r}; it takes {allowed}")
    dim = declare.mechanism_dim(entry, learner_kwargs)
    kwargs: dict[str, Any] = {"horizon": supplied["horizon"], "dim": dim}
    if "neighbouring" in signature:
        kwargs["neighbouring"] = "replace"
    if "noise" in signature and static.get("noise") is not None:
        kwargs["noise"] = static["noise"]
    kwargs.update(table)
    try:
        return factory(**kwargs)
    except (ValueError, TypeError) as err:
        raise _fail(source, key, f"{name}: {err}") from None


def _with_feedback(source: Path, table: dict[str, Any], env: Any) -> Any:
    """``env``, wrapped by ``envs.bandit_feedback`` when the table says ``bandit_feedback = true``."""
    feedback = table.get("bandit_feedback", False)
    if not isinstance(feedback, bool):
        raise _fail(source, "env.bandit_feedback", f"must be true or false, got {feedback!r}")
    return envs.bandit_feedback(env) if feedback else env


# --- the params and the grid ---------------------------------------------------------------------------------


def _leaf_values(source: Path, key: str, value: Any, base_ndim: int) -> tuple[np.ndarray, bool]:
    """A params leaf from the file: ``(array, swept)``."""
    if isinstance(value, (dict, str, bool)):
        raise _fail(source, key, f"must be a number or a list of numbers, got {value!r}")
    try:
        arr = np.asarray(value, np.float64)
    except (ValueError, TypeError):
        raise _fail(source, key, f"is a grid of mismatched lengths (rows differ): {value!r}") from None
    if arr.ndim == base_ndim or (base_ndim > 0 and arr.ndim == 0):
        return arr, False
    if arr.ndim == base_ndim + 1:
        if arr.shape[0] == 0:
            raise _fail(source, key, "is an empty grid")
        return arr, True
    raise _fail(source, key, f"must have {base_ndim} dimensions (or {base_ndim + 1} for a grid), got shape {arr.shape}")


def _params(
    source: Path, section: str, table: dict[str, Any], cls: type, component: Any
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """``(fixed leaves, swept leaves)`` of a ``[section.params]`` table, keyed by field.

    A field's base rank is the built ``component``'s ``Spec.ndims`` (0 for a field it does not name).
    """
    values = table.get("params", {})
    if not isinstance(values, dict):
        raise _fail(source, f"{section}.params", f"must be a table, got {values!r}")
    ndims = dict(spec_of(component).ndims)
    fixed, swept = {}, {}
    for field, value in values.items():
        key = f"{section}.params.{field}"
        if field not in cls._fields:
            raise _fail(source, key, f"{cls.__name__} has no field {field!r}{_suggest(field, list(cls._fields))}")
        arr, is_grid = _leaf_values(source, key, value, ndims.get(field, 0))
        (swept if is_grid else fixed)[field] = arr
    return fixed, swept


def _other_budgets(built: _Built) -> tuple[str, ...]:
    """The budget fields of the noise families other than the learner's (``("rho",)`` for an ε-DP tree): a shared
    axis of that name is not the learner's by default (a Gaussian tree beside a Gamma one on ``[grid] epsilon``)."""
    return _other_budget_fields(built.entry, built.static.get("noise", built.entry.defaults.get("noise")))


def _other_budget_fields(entry: Component, noise: Any) -> tuple[str, ...]:
    """``_other_budgets`` of a registry entry built with the noise family ``noise`` (a name, a family or ``None``)."""
    if "noise" not in entry.parameters:
        return ()
    noise = "gamma" if noise is None else getattr(noise, "name", noise)  # a NoiseFamily (the learner's own) or a name
    if noise not in BUDGET_FIELDS:
        return ()
    needed = BUDGET_FIELDS[noise][0]
    return tuple(sorted({b for b, _ in BUDGET_FIELDS.values()} - {needed}))


def _check_budget_family(
    source: Path, section: str, given: dict[str, str], static: dict[str, Any], entry: Component
) -> None:
    """A learner with a noise family takes the budget of that family only, and needs it.

    ``noise = "gaussian"`` with an ``epsilon`` grid would run the Gaussian tree with the
    ε of another guarantee (or with no budget at all); refused naming the key. ``given``:
    each params field the file sets -> the file key that sets it.
    """
    fields = getattr(entry.params, "_fields", ())
    if "noise" not in entry.parameters or not {"epsilon", "rho"} <= set(fields):
        return
    noise = static.get("noise", entry.defaults.get("noise"))
    noise = "gamma" if noise is None else getattr(noise, "name", noise)  # a NoiseFamily (the learner's own) or a name
    if noise not in BUDGET_FIELDS:
        return  # the factory has refused it already
    needed, guarantee = BUDGET_FIELDS[noise]
    for other in ("epsilon", "rho"):
        if other != needed and other in given:
            families = sorted(f for f, (b, _) in BUDGET_FIELDS.items() if b == other)
            raise _fail(
                source,
                given[other],
                f"is the budget of another noise family: noise = {noise!r} is {guarantee} and takes "
                f"{section}.params.{needed}, not {other} (the budget of noise = {' or '.join(map(repr, families))})",
            )
    if needed not in given:
        raise _fail(
            source,
            f"{section}.params",
            f"noise = {noise!r} is {guarantee} and needs {section}.params.{needed} (inf for the non-private limit)",
        )


def build_grid(swept: dict[str, np.ndarray], zips: Any = (), source: str | Path = "<string>") -> Grid:
    """The flattened product grid of the swept leaves: zip groups first, then every other leaf on its own axis.

    Pure NumPy: no component is built and nothing is traced.

    Args:
      swept: file key (``"learner.params.epsilon"``) -> its values, one per grid value along axis 0.
      zips: the file's ``zip``: a list of groups, each a list of swept keys of equal lengths made one axis.
      source: the file, named in errors.

    Returns:
      The ``Grid``: axes in the order zip groups, then the other swept keys in ``swept``'s order; the
      values at the ``G`` points in row-major order (the last axis varies fastest).

    Raises:
      ValueError: ``"<source>: [zip] ..."`` for a malformed ``zip``, a key that is not swept, a key in
        two groups, or a group of mismatched lengths.
    """
    source = Path(source)
    if not isinstance(zips, (list, tuple)) or not all(isinstance(g, (list, tuple)) and g for g in zips):
        raise _fail(source, "zip", f"must be a list of lists of params keys, got {zips!r}")
    axes: list[tuple[str, ...]] = []
    seen: set[str] = set()
    for group in zips:
        lengths = {}
        for key in group:
            if key not in swept:
                raise _fail(source, "zip", f"{key!r} is not a swept params key; swept: {sorted(swept)}")
            if key in seen:
                raise _fail(source, "zip", f"{key!r} appears in two groups")
            seen.add(key)
            lengths[key] = len(swept[key])
        if len(set(lengths.values())) > 1:
            detail = ", ".join(f"{k} has {n}" for k, n in lengths.items())
            raise _fail(source, "zip", f"a zipped grid of mismatched lengths: {detail} values")
        axes.append(tuple(group))
    axes += [(key,) for key in swept if key not in seen]
    shape = tuple(len(swept[group[0]]) for group in axes)
    index = np.indices(shape).reshape(len(shape), -1) if shape else np.zeros((0, 1), int)
    values = {key: np.asarray(swept[key])[index[a]] for a, group in enumerate(axes) for key in group}
    return Grid(axes, shape, values)


def _params_at(cls: type, fixed: dict[str, np.ndarray], grid: dict[str, np.ndarray], prefix: str) -> Any:
    """``cls`` with the fixed leaves and the grid's ``[G, ...]`` values of the keys under ``prefix``, as float32."""
    leaves = dict(fixed)
    for key, values in grid.items():
        if key.startswith(prefix):
            leaves[key[len(prefix) :]] = values
    return cls(**{k: jnp.asarray(v, jnp.float32) for k, v in leaves.items()})


# --- the values ----------------------------------------------------------------------------------------------


def _check_values(source: Path, learner: Any, env: Any, params: Any, horizon: int, section: str = "learner") -> None:
    """The components' checks on every grid point, those made when traced, the horizon each accepts, and
    the engine's compatibility check of the pair (``sim.check_compatible``: a bandit policy on a
    full-information stream, another dimension or arm count), so that a comparison refuses any of
    its learners before the first one compiles.

    ``section`` is the learner's table in messages (``"learner"``, or ``"learners.<label>"``).
    """
    for where, component, sub in ((f"{section}.params", learner, params.learner), ("env.params", env, params.env)):
        if component.check is not None:
            try:
                component.check(sub)
            except ValueError as err:
                raise _fail(source, where, str(err)) from None
    _check_traces(source, learner, env, params, section)
    for what, component in (("learner", learner), ("env", env)):
        try:
            check_horizon(horizon, component, what)
        except ValueError as err:
            raise _fail(source, "horizon", str(err)) from None
    try:
        sim.check_compatible(learner, env, sim.canonical_params(params))
    except ValueError as err:
        kind = ""
        # a full-information environment: it takes points and has no arms (a bandit instance has both)
        if (
            spec_of(learner).num_arms is not None
            and spec_of(env).action_shape is not None
            and (spec_of(env).num_arms is None)
        ):
            kind = "a bandit policy (it plays arm indices) cannot run on a full-information environment "
            kind += "(it takes points): "
        raise _fail(source, section, f"does not fit [env]: {kind}{err}") from None


def _check_traces(source: Path, learner: Any, env: Any, params: Any, section: str = "learner") -> None:
    """Trace ``learner.init`` and ``env.reset`` on abstract params (nothing runs): the checks made at trace time.

    A component refuses a missing or wrong-family budget when it is initialised; this
    surfaces that ``ValueError`` (or a ``TypeError`` of a field it cannot use) here,
    naming the section, before anything compiles.
    """
    axes, _ = sim.grid_axes(params, allow_grid=True, ndims=sim.spec_ndims(learner, env))
    one = lambda leaf, axis: jnp.asarray(leaf) if axis is None else jnp.asarray(leaf)[0]
    point = jax.eval_shape(lambda: jax.tree.map(one, params, axes))  # one grid point, abstract
    key = jax.eval_shape(lambda: jax.random.key(0))
    for where, fn, sub in ((f"{section}.params", learner.init, point.learner), ("env.params", env.reset, point.env)):
        try:
            jax.eval_shape(fn, key, sub)
        except (ValueError, TypeError) as err:
            raise _fail(source, where, str(err).splitlines()[0] if str(err) else type(err).__name__) from None


# --- the simulator and the figures ---------------------------------------------------------------------------


def _simulator(
    source: Path, section: str, table: dict[str, Any], learner: Any, env_name: str
) -> tuple[str, dict[str, Any]]:
    """A learner's ``simulator``: ``"steps"`` (default) or ``"episodes"`` (its exact episode-level simulator), a
    name or a table ``{ name = "episodes", <the simulator's per-call options> }``; with those options."""
    simulator = table.get("simulator", "steps")
    key = f"{section}.simulator"
    options: dict[str, Any] = {}
    if isinstance(simulator, dict):
        options = {k: v for k, v in simulator.items() if k != "name"}
        simulator = simulator.get("name")
    if simulator not in SIMULATORS:
        raise _fail(source, key, f"must be one of {list(SIMULATORS)}, got {simulator!r}")
    if simulator == "steps":
        if options:
            raise _fail(source, key, "jaxpriv.sweep (simulator = 'steps') takes no simulator options")
        return simulator, options
    fast_path = spec_of(learner).fast_path
    if fast_path is None:
        name = spec_of(learner).name or table.get("name")
        raise _fail(source, key, f"{name} has no exact episode simulator (its spec's fast_path is None): "
                    'use simulator = "steps" (jaxpriv.sweep)')  # fmt: skip
    if env_name not in fast_path.envs:
        raise _fail(source, key, f"the episode simulator of {spec_of(learner).name} runs on [env] name = "
                    f"{' or '.join(map(repr, fast_path.envs))}, not {env_name!r}")  # fmt: skip
    allowed = fast_path.file_options()
    for option in options:
        if option not in allowed:
            raise _fail(source, f"{key}.{option}", f"the episode simulator of {spec_of(learner).name} takes no "
                        f"option {option!r}; it takes {allowed}")  # fmt: skip
    return simulator, options


#: The figure recipes a ``[[figures]]`` entry may name, and the options each takes (beside ``recipe`` and ``file``).
FIGURE_RECIPES: dict[str, tuple[str, ...]] = {
    "regret_vs_t": ("learners", "grid_points", "logx", "logy", "title"),
    "final_vs_budget": ("learners", "axis", "bounds", "logx", "logy", "title"),
    "paired_difference": ("learners", "reference", "grid_points", "title"),
    "price_of_privacy": ("learners", "nonprivate", "axis", "values", "relative", "until", "title"),
    "gap_vs_budget": ("learner", "learners", "reference", "axis", "at", "band", "title"),
    "knee": ("learner", "axis", "high_privacy", "lower_bound", "title"),
    "regret_vs_horizon": ("learners", "title"),
    "regret_vs_size": ("learners", "title"),
    "final_vs_static": ("static", "learners", "logx", "logy", "title"),
}


def axis_key(study: Study, name: str) -> str:
    """The grid key an ``axis`` option names: a key (``"grid.epsilon"``) or its last part (``"epsilon"``)."""
    if name in study.grid:
        return name
    matches = [k for k in study.grid if k.split(".")[-1] == name]
    if len(matches) != 1:
        raise KeyError(name)
    return matches[0]


def _is_axis(study: Study, axis: Any) -> bool:
    """Whether ``axis`` (a figure's) names a swept axis of ``study``."""
    try:
        axis_key(study, axis)
    except (KeyError, TypeError):
        return False
    return True


def _figures(source: Path, raw: dict[str, Any], study: Study, smoke: bool = False) -> tuple[dict[str, Any], ...]:
    """The ``[[figures]]`` entries, checked against the study: recipe, options, labels, axes, file names.

    At a ``[smoke]`` scale that keeps some learners only, a figure's ``learners`` keeps those, and a figure naming a
    learner left out (``learner``, ``reference``, ``nonprivate``, or none of its ``learners`` left) or an ``axis``
    dropped with them (``_drop_untaken_axes``; the full scale refuses an axis that is none) is left out.
    """
    entries = raw.get("figures", [])
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise _fail(source, "figures", "must be an array of tables ([[figures]] entries with a recipe)")
    out, files = [], set()
    labels = list(study.labels)
    for i, entry in enumerate(entries, 1):
        where = f"figures[{i}]"
        recipe = entry.get("recipe")
        if recipe not in FIGURE_RECIPES:
            known = sorted(FIGURE_RECIPES)
            raise _fail(source, f"{where}.recipe", f"unknown recipe {recipe!r}{_suggest(str(recipe), known)}; "
                        f"known: {known}")  # fmt: skip
        allowed = ("recipe", "file", *FIGURE_RECIPES[recipe])
        for key in entry:
            if key not in allowed:
                raise _fail(source, f"{where}.{key}", f"{recipe} takes no option {key!r}; it takes {list(allowed)}")
        fig = dict(entry)
        if smoke and isinstance(raw.get("smoke"), dict) and "learners" in raw["smoke"]:
            if isinstance(fig.get("learners"), list):
                fig["learners"] = [label for label in fig["learners"] if label in labels]
            named = [fig[k] for k in ("learner", "reference", "nonprivate") if k in fig]
            if fig.get("learners") == [] or any(label not in labels for label in named):
                continue
            if "axis" in fig and not _is_axis(study, fig["axis"]):
                continue
        fig.setdefault("file", f"{recipe}.png")
        name = fig["file"]
        if not isinstance(name, str) or "/" in name or "\\" in name or not name.endswith(".png") or name in files:
            raise _fail(source, f"{where}.file", f"must be a new file name ending in .png (no folder), got {name!r}")
        files.add(name)
        chosen = fig.get("learners", labels)
        if "learner" in fig:
            chosen = [fig["learner"]]
        for key in ("reference", "nonprivate"):
            if key in fig:
                chosen = [*chosen, fig[key]]
        if not isinstance(chosen, list) or any(c not in labels for c in chosen):
            raise _fail(source, f"{where}", f"names a learner that is no label of the study ({labels}): {chosen!r}")
        if recipe == "gap_vs_budget":
            if fig.setdefault("reference", study.reference) is None:
                raise _fail(source, f"{where}.reference", "gap_vs_budget needs a reference label (or the study's)")
            at = fig.setdefault("at", [study.checkpoints[-1]])
            if isinstance(at, list):  # the steps past the horizon are left out (a [smoke] scale keeps the recipe)
                at = fig["at"] = [t for t in at if not isinstance(t, int) or t <= study.horizon]
            if not isinstance(at, list) or not at or any(t not in study.checkpoints for t in at):
                raise _fail(source, f"{where}.at", f"must be a list of checkpoint steps (add them to checkpoints), "
                            f"got {at!r}")  # fmt: skip
        if recipe == "paired_difference" and fig.setdefault("reference", study.reference) is None:
            raise _fail(source, f"{where}.reference", "paired_difference needs a reference label (or the study's)")
        if "axis" in fig or recipe in ("final_vs_budget", "knee", "price_of_privacy", "gap_vs_budget"):
            scalar = [a[0] for a in study.axes if np.ndim(study.grid[a[0]]) == 1]
            default = scalar[0] if scalar else None
            try:
                fig["axis"] = axis_key(study, fig["axis"]) if "axis" in fig else default
            except (KeyError, TypeError):
                raise _fail(source, f"{where}.axis", f"is no swept axis; the axes: {list(study.grid)}") from None
            if (
                recipe in ("knee", "price_of_privacy", "gap_vs_budget")
                and fig["axis"] is None
                and "nonprivate" not in fig
            ):
                raise _fail(source, where, f"{recipe} needs a swept budget axis")
        if recipe == "knee":
            small = fig.setdefault("high_privacy", 0.05)
            x = study.grid[fig["axis"]]
            if not isinstance(small, (int, float)) or not np.any(np.isfinite(x) & (x <= small)):
                raise _fail(source, f"{where}.high_privacy", f"the axis needs a budget <= {small}, got {x.tolist()}")
        if recipe == "price_of_privacy" and "nonprivate" not in fig and not np.any(np.isinf(study.grid[fig["axis"]])):
            raise _fail(source, where, 'price_of_privacy needs nonprivate = "<label>" or an inf value on its axis')
        if recipe == "final_vs_static" and not any(
            isinstance(arm.static.get(fig.get("static")), (int, float)) for arm in study.learners
        ):
            raise _fail(source, f"{where}.static", "must name a numeric static argument of some learner (window = ...)")
        if recipe == "regret_vs_horizon" and not study.horizons:
            raise _fail(source, f"{where}.recipe", "regret_vs_horizon needs horizons = [...] in the file")
        if recipe == "regret_vs_size" and study.sizes is None:
            raise _fail(source, f"{where}.recipe", "regret_vs_size needs a [sizes] table in the file")
        out.append(fig)
    return tuple(out)
