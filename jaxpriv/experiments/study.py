"""Sweeps from a TOML study file: ``jaxpriv sweep study.toml``.

A study file names the learner (a factory of ``jaxpriv.oco`` / ``jaxpriv.bandits``
and its static arguments), the environment, the constraint set, the params
(any leaf may be a list of values: the product grid is built), the seeds, the
horizon and the checkpoints::

    name = "pftal-epsilon"
    horizon = 4096
    seeds = 200
    chunk = 50                 # seeds per chunk: the unit of progress and of resume
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
The product of the axes is flattened into one zipped grid of ``G`` points and
run by ``jaxpriv.sweep`` (one compiled function for every chunk: only traced
values change between chunks). Seed chunk ``c`` uses the key
``fold_in(key(seed), c)`` for every grid point (common random numbers across
the grid), so a chunk's numbers do not depend on which chunks ran before.

Everything is checked before anything compiles: unknown names and keys, bad
values (each component's ``check``) and bad grids raise ``ValueError`` naming
the key in the file.

Outputs in the output folder: ``results.npz`` (raw arrays; their axes are named
in the JSON), ``settings.json`` (the study, the grid, versions, timings),
``summary.csv`` (one row per grid point: mean and standard error of the final
regret, the theorem's bound where one exists), ``regret.png`` (regret curves
with 95% bands) and ``final_regret.png`` (final regret against the swept
parameter, theory dashed). Finished chunks are kept in ``chunks/``; running the
same study into the same folder again resumes: finished chunks are not recomputed.
Each chunk file carries the fingerprint of what it holds (``jaxpriv._resume``, the
same mechanism as ``jaxpriv.sweep(save=...)``): what the learner and the environment
compute, the horizon, the checkpoints, the seed chunk's key and the grid points'
params. A chunk is reused only under that fingerprint; one written under another
configuration (a changed grid, set, noise family, ...) is recomputed, never
relabelled, whether or not ``chunks/study.json`` (the folder's stamp: a changed study
file is refused) is there. A damaged chunk file is an error naming it.
"""

from __future__ import annotations

import csv
import difflib
import hashlib
import inspect
import json
import os
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


# --- the registry of names a study file may use -------------------------------------------------------------


class Component(NamedTuple):
    """A factory a study file may name, its params class and (optionally) its regret bound."""

    factory: Callable[..., Any]
    params: type
    bound: Callable[..., float | None] | None = None


def _registry() -> tuple[dict[str, Component], dict[str, Component], dict[str, Callable[..., Any]]]:
    from jaxpriv import bandits, envs, oco, sets

    learners = {
        "pftal": Component(oco.pftal, oco.PFTALParams, _pftal_bound),
        "regularized_pftal": Component(oco.regularized_pftal, oco.RegularizedPFTALParams, _regularized_pftal_bound),
        "private_experts": Component(oco.private_experts, oco.PrivateExpertsParams),
        "ftal": Component(oco.ftal, oco.FTALParams),
        "ogd": Component(oco.ogd, oco.OGDParams, _ogd_bound),
        "mi_ogd": Component(oco.mi_ogd, oco.MIOGDParams, _mi_ogd_bound),
        "private_bandit_ftal": Component(oco.private_bandit_ftal, oco.PrivateBanditFTALParams),
        "bandit_ftal": Component(oco.bandit_ftal, oco.BanditFTALParams),
        "fkm": Component(oco.fkm, oco.FKMParams),
        "mi_bandit_ogd": Component(oco.mi_bandit_ogd, oco.MIBanditOGDParams),
        "ucb": Component(bandits.ucb, bandits.UCBParams),
        "adac_ucb": Component(bandits.adac_ucb, bandits.AdaCUCBParams, _adac_ucb_bound),
        "gope": Component(bandits.gope, bandits.GOPEParams),
        "adac_gope": Component(bandits.adac_gope, bandits.AdaCGOPEParams),
        "rs_oful": Component(bandits.rs_oful, bandits.RSOFULParams),
        "adac_oful": Component(bandits.adac_oful, bandits.AdaCOFULParams),
    }
    environments = {
        "quadratic_stream": Component(envs.quadratic_stream, envs.QuadraticParams),
        "adaptive_quadratic": Component(envs.adaptive_quadratic, envs.AdaptiveParams),
        "experts_stream": Component(envs.experts_stream, envs.ExpertsParams),
        "classification_stream": Component(envs.classification_stream, envs.ClassificationParams),
        "bernoulli_bandit": Component(envs.bernoulli_bandit, envs.BernoulliParams),
        "linear_bandit": Component(envs.linear_bandit, envs.LinearBanditParams),
        "contextual_linear_bandit": Component(envs.contextual_linear_bandit, envs.ContextualBanditParams),
    }
    constraint_sets = {"l2_ball": sets.l2_ball, "box": sets.box, "simplex": sets.simplex, "l1_ball": sets.l1_ball}
    return learners, environments, constraint_sets


# Regret bounds: (learner params at one grid point, env params, the learner's static kwargs, T, constraint) -> float.


def _pftal_bound(lp: Any, ep: Any, static: dict, horizon: int, constraint: Any) -> float | None:
    from jaxpriv import theory

    if static.get("noise", "gamma") != "gamma":
        return None
    return float(
        theory.pftal_gamma_regret_bound(
            horizon, constraint.dim, lp.lipschitz, lp.strong_convexity, constraint.radius, lp.epsilon
        )
    )


def _regularized_pftal_bound(lp: Any, ep: Any, static: dict, horizon: int, constraint: Any) -> float | None:
    from jaxpriv import theory

    noise = static.get("noise", "gamma")
    budget = lp.rho if noise == "gaussian" else lp.epsilon
    h = np.asarray(lp.strong_convexity, np.float64)
    if np.isnan(h):
        h = theory.regularized_pftal_strength(horizon, constraint.dim, lp.lipschitz, constraint.radius, budget, noise)
    return float(
        theory.regularized_pftal_regret_bound(
            horizon, constraint.dim, lp.lipschitz, h, constraint.radius, budget, noise
        )
    )


def _ogd_bound(lp: Any, ep: Any, static: dict, horizon: int, constraint: Any) -> float | None:
    from jaxpriv import theory

    schedule = static.get("schedule", "strongly_convex")
    return float(theory.ogd_regret_bound(horizon, lp.lipschitz, constraint.diameter, lp.strong_convexity, schedule))


def _mi_ogd_bound(lp: Any, ep: Any, static: dict, horizon: int, constraint: Any) -> float | None:
    from jaxpriv import mechanisms, theory

    stddev = mechanisms.mutual_information_to_stddev(lp.mutual_information, lp.lipschitz, constraint.dim)
    eta = None if np.isnan(np.asarray(lp.learning_rate, np.float64)) else lp.learning_rate
    return float(theory.mi_ogd_regret_bound(horizon, constraint.dim, lp.lipschitz, constraint.radius, stddev, eta))


def _adac_ucb_bound(lp: Any, ep: Any, static: dict, horizon: int, constraint: Any) -> float | None:
    from jaxpriv.bandits import adac_ucb_regret_bound

    beta = float(np.asarray(lp.beta))
    if not beta > 3:  # Theorem 5.6 needs beta > 3
        return None
    return float(adac_ucb_regret_bound(np.asarray(ep.means), horizon, float(np.asarray(lp.rho)), beta))


# --- parsing and validation (nothing compiles here) ----------------------------------------------------------

TOP_KEYS = ("name", "description", "horizon", "seeds", "seed", "chunk", "grid_chunk", "checkpoints", "zip")
TABLES = ("set", "learner", "env")


class Study(NamedTuple):
    """A parsed, validated study file.

    Attributes:
      name: the study's name (default: the file's stem).
      source: the file's path.
      raw: the TOML contents as read.
      horizon, seeds, seed, chunk, grid_chunk: as in the file (chunk and grid_chunk with defaults).
      checkpoints: the normalised checkpoint steps.
      learner, env: the built components; constraint: the built set or ``None``.
      learner_name, env_name: their names in the file; learner_static: the learner's static kwargs.
      learner_bound: the learner's regret bound function or ``None``.
      params: ``SimParams`` whose swept leaves carry the flattened product grid ``[G, ...]``.
      grid: file key of each swept leaf -> its ``[G, ...]`` values at the flattened grid points.
      axes: the product's axes, each a tuple of the file keys swept together, with ``shape`` their lengths.
      shape: the grid's shape (one length per axis); ``G = prod(shape)``.
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

    @property
    def size(self) -> int:
        """``G``, the number of grid points."""
        return int(np.prod(self.shape)) if self.shape else 1


def _fail(source: Path, key: str, message: str) -> ValueError:
    return ValueError(f"{source}: [{key}] {message}")


def _suggest(name: str, known: list[str]) -> str:
    close = difflib.get_close_matches(name, known, n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _int_key(source: Path, raw: dict, key: str, default: int | None, minimum: int) -> int:
    value = raw.get(key, default)
    if value is None:
        raise _fail(source, key, "is required")
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise _fail(source, key, f"must be an integer >= {minimum}, got {value!r}")
    return value


def _build(source: Path, section: str, table: Any, registry: dict, supplied: dict) -> tuple[Any, str, dict, Component]:
    """Build ``table``'s component from the registry: ``(component, name, static kwargs, registry entry)``."""
    if not isinstance(table, dict):
        raise _fail(source, section, f"must be a table, got {table!r}")
    name = table.get("name")
    if name not in registry:
        known = sorted(registry)
        raise _fail(
            source, f"{section}.name", f"unknown {section} {name!r}{_suggest(str(name), known)}; known: {known}"
        )
    entry = registry[name]
    static = {k: v for k, v in table.items() if k not in ("name", "params", "bandit_feedback")}
    signature = inspect.signature(entry.factory).parameters
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
    missing = [
        k for k, p in signature.items() if p.default is inspect.Parameter.empty and k not in kwargs and k != "self"
    ]
    if missing:
        raise _fail(source, section, f"{name} needs the static argument(s) {missing}")
    try:
        component = entry.factory(**kwargs)
    except (ValueError, TypeError) as err:
        raise _fail(source, section, f"{name}: {err}") from None
    return component, name, static, entry


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


def _params(source: Path, section: str, table: dict, cls: type) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """``(fixed leaves, swept leaves)`` of a ``[section.params]`` table, keyed by field."""
    values = table.get("params", {})
    if not isinstance(values, dict):
        raise _fail(source, f"{section}.params", f"must be a table, got {values!r}")
    ndims = getattr(cls, "NDIMS", {})
    fixed, swept = {}, {}
    for field, value in values.items():
        key = f"{section}.params.{field}"
        if field not in cls._fields:
            raise _fail(source, key, f"{cls.__name__} has no field {field!r}{_suggest(field, list(cls._fields))}")
        arr, is_grid = _leaf_values(source, key, value, ndims.get(field, 0))
        (swept if is_grid else fixed)[field] = arr
    return fixed, swept


# The budget field each noise family's guarantee is stated in (a learner built with ``noise=``).
BUDGET_FIELDS = {"gamma": ("epsilon", "ε-DP"), "laplace": ("epsilon", "ε-DP"), "gaussian": ("rho", "ρ-zCDP")}


def _check_budget_family(source: Path, table: dict, static: dict, entry: Component) -> None:
    """A learner with a noise family takes the budget of that family only, and needs it.

    ``noise = "gaussian"`` with an ``epsilon`` grid would run the Gaussian tree with the
    ε of another guarantee (or with no budget at all); refused naming the key.
    """
    fields = getattr(entry.params, "_fields", ())
    signature = inspect.signature(entry.factory).parameters
    if "noise" not in signature or not {"epsilon", "rho"} <= set(fields):
        return
    noise = static.get("noise", signature["noise"].default)
    noise = "gamma" if noise is None else noise
    if noise not in BUDGET_FIELDS:
        return  # the factory has refused it already
    needed, guarantee = BUDGET_FIELDS[noise]
    given = table.get("params", {})
    for other in ("epsilon", "rho"):
        if other != needed and other in given:
            families = sorted(f for f, (b, _) in BUDGET_FIELDS.items() if b == other)
            raise _fail(
                source,
                f"learner.params.{other}",
                f"is the budget of another noise family: noise = {noise!r} is {guarantee} and takes "
                f"learner.params.{needed}, not {other} (the budget of noise = {' or '.join(map(repr, families))})",
            )
    if needed not in given:
        raise _fail(
            source,
            "learner.params",
            f"noise = {noise!r} is {guarantee} and needs learner.params.{needed} (inf for the non-private limit)",
        )


def _check_traces(source: Path, learner: Any, env: Any, params: Any) -> None:
    """Trace ``learner.init`` and ``env.reset`` on abstract params (nothing runs): the checks made at trace time.

    A component refuses a missing or wrong-family budget when it is initialised; this
    surfaces that ``ValueError`` (or a ``TypeError`` of a field it cannot use) here,
    naming the section, before anything compiles.
    """
    import jax

    from jaxpriv import _resume, sim

    axes, _ = sim.grid_axes(params, allow_grid=True)
    point = _resume.abstract_point(params, axes)
    key = jax.eval_shape(lambda: jax.random.key(0))
    for section, fn, sub in (("learner.params", learner.init, point.learner), ("env.params", env.reset, point.env)):
        try:
            jax.eval_shape(fn, key, sub)
        except (ValueError, TypeError) as err:
            raise _fail(source, section, str(err).splitlines()[0] if str(err) else type(err).__name__) from None


def load_study(path: str | Path) -> Study:
    """Read and validate a study file; builds the components but compiles nothing.

    Raises:
      ValueError: naming the file and the key, for an unknown name or key, a bad
        value (the components' own checks, run on every grid point, and those they
        make when traced), a budget of another noise family (``noise = "gaussian"``
        with ``epsilon``) or none, or a bad grid; naming the path when it is a folder,
        missing or unreadable.
    """
    import jax.numpy as jnp

    from jaxpriv.sim import SimParams, normalize_checkpoints

    if not isinstance(path, (str, os.PathLike)) or not str(path):
        raise ValueError(f"study must be the path of a TOML study file, got {path!r}")
    source = Path(path)
    if source.is_dir():
        raise ValueError(f"study must be a TOML study file, got the folder {source}")
    if not source.is_file():
        raise ValueError(f"study file {source} does not exist (expected a TOML study file)")
    try:
        raw = tomllib.loads(source.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as err:
        raise ValueError(f"{source}: not valid TOML: {err}") from None
    except UnicodeDecodeError:
        raise ValueError(f"{source}: not a TOML study file (not UTF-8 text)") from None
    except OSError as err:
        raise ValueError(f"study file {source} cannot be read ({err.strerror or err})") from None
    for key in raw:
        if key not in TOP_KEYS + TABLES:
            raise _fail(source, key, f"unknown key{_suggest(key, list(TOP_KEYS + TABLES))}; known: {TOP_KEYS + TABLES}")
    for key in ("learner", "env"):
        if key not in raw:
            raise _fail(source, key, "is required")
    name = raw.get("name", source.stem)
    horizon = _int_key(source, raw, "horizon", None, 1)
    seeds = _int_key(source, raw, "seeds", None, 2)
    seed = _int_key(source, raw, "seed", 0, 0)
    chunk = _int_key(source, raw, "chunk", seeds, 1)
    if seeds % chunk:
        raise _fail(
            source, "chunk", f"must divide seeds={seeds} (every chunk runs the same compiled sweep), got {chunk}"
        )
    ckpts = raw.get("checkpoints", "log")
    try:
        checkpoints = normalize_checkpoints(horizon, None if ckpts == "all" else ckpts)
    except (ValueError, TypeError) as err:
        raise _fail(source, "checkpoints", f"must be 'log', 'all' or a list of steps in [1, horizon]: {err}") from None

    learners, environments, constraint_sets = _registry()
    constraint = None
    if "set" in raw:
        table = raw["set"]
        kind = table.get("kind") if isinstance(table, dict) else None
        if kind not in constraint_sets:
            known = sorted(constraint_sets)
            raise _fail(source, "set.kind", f"unknown set {kind!r}{_suggest(str(kind), known)}; known: {known}")
        args = {k: v for k, v in table.items() if k != "kind"}
        signature = inspect.signature(constraint_sets[kind]).parameters
        for key in args:
            if key not in signature:
                raise _fail(source, f"set.{key}", f"{kind} takes no argument {key!r}; it takes {sorted(signature)}")
        try:
            constraint = constraint_sets[kind](**args)
        except (ValueError, TypeError) as err:
            raise _fail(source, "set", f"{kind}: {err}") from None

    supplied = {"horizon": horizon, "constraint": constraint}
    learner, learner_name, learner_static, l_entry = _build(source, "learner", raw["learner"], learners, supplied)
    env, env_name, _, e_entry = _build(source, "env", raw["env"], environments, supplied)
    feedback = raw["env"].get("bandit_feedback", False)
    if not isinstance(feedback, bool):
        raise _fail(source, "env.bandit_feedback", f"must be true or false, got {feedback!r}")
    if feedback:
        from jaxpriv import envs

        env = envs.bandit_feedback(env)

    l_fixed, l_swept = _params(source, "learner", raw["learner"], l_entry.params)
    _check_budget_family(source, raw["learner"], learner_static, l_entry)
    e_fixed, e_swept = _params(source, "env", raw["env"], e_entry.params)
    swept = {f"learner.params.{k}": v for k, v in l_swept.items()} | {f"env.params.{k}": v for k, v in e_swept.items()}

    # The product grid: zip groups first, then every other swept leaf on its own axis.
    zips = raw.get("zip", [])
    if not isinstance(zips, list) or not all(isinstance(g, list) and g for g in zips):
        raise _fail(source, "zip", f"must be a list of lists of params keys, got {zips!r}")
    axes, seen = [], set()
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
    grid = {key: swept[key][index[a]] for a, group in enumerate(axes) for key in group}
    size = index.shape[1]
    grid_chunk = _int_key(source, raw, "grid_chunk", size, 1)

    def make(cls: type, fixed: dict, prefix: str) -> Any:
        leaves = dict(fixed)
        for key, values in grid.items():
            if key.startswith(prefix):
                leaves[key[len(prefix) :]] = values
        return cls(**{k: jnp.asarray(v, jnp.float32) for k, v in leaves.items()})

    params = SimParams(make(l_entry.params, l_fixed, "learner.params."), make(e_entry.params, e_fixed, "env.params."))
    for section, component, sub in (("learner.params", learner, params.learner), ("env.params", env, params.env)):
        if component.check is not None:
            try:
                component.check(sub)
            except ValueError as err:
                raise _fail(source, section, str(err)) from None
    _check_traces(source, learner, env, params)
    from jaxpriv._base import check_horizon

    for what, component in (("learner", learner), ("env", env)):
        try:
            check_horizon(horizon, component, what)
        except ValueError as err:
            raise _fail(source, "horizon", str(err)) from None
    return Study(
        name, source, raw, horizon, seeds, seed, chunk, min(grid_chunk, size), checkpoints, learner, env,
        constraint, learner_name, env_name, learner_static, l_entry.bound, params, grid, axes, shape,
    )  # fmt: skip


# --- running -------------------------------------------------------------------------------------------------


class StudyResult(NamedTuple):
    """What ``run_study`` returns.

    Attributes:
      study: the parsed study.
      out: the output folder.
      files: name -> path of the five outputs.
      regret: ``[G, S, m]``, regret at the checkpoints.
      summary: the rows of ``summary.csv``.
      resumed: the number of chunks found on disk and not recomputed.
      computed: the number of chunks computed by this call.
    """

    study: Study
    out: Path
    files: dict[str, Path]
    regret: np.ndarray
    summary: list[dict[str, Any]]
    resumed: int
    computed: int


FIELDS = ("regret", "loss", "best", "gap", "nonfinite_inputs", "nonfinite_steps")


def _fingerprint(study: Study) -> str:
    import jaxpriv

    text = json.dumps({"study": study.raw, "jaxpriv": jaxpriv.__version__}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def _block_params(study: Study, block: int) -> Any:
    """The params of grid block ``block`` (``grid_chunk`` points; the last padded by repeating its last point)."""
    from jaxpriv import sim

    axes, size = sim.grid_axes(study.params, allow_grid=True)
    if not size:
        return study.params
    start = block * study.grid_chunk
    idx = np.minimum(np.arange(start, start + study.grid_chunk), size - 1)
    return _take(study.params, axes, idx)


def _take(params: Any, axes: Any, idx: np.ndarray) -> Any:
    """``params`` at grid index (or indices) ``idx``: swept leaves (axis 0) indexed, the others as they are."""
    import jax

    return jax.tree.map(lambda leaf, axis: leaf if axis is None else leaf[idx], params, axes)


def _run_chunk(study: Study, block: int, chunk: int) -> dict[str, np.ndarray]:

    from jaxpriv import sim

    key = _chunk_key(study, chunk)
    params = _block_params(study, block)
    r = sim.sweep(study.learner, study.env, params, key, study.horizon, study.chunk, study.checkpoints)
    out = {}
    for name in FIELDS:
        value = getattr(r, name)
        if value is None:
            continue
        value = np.asarray(value)
        if not study.shape:  # no grid: add the grid axis
            value = value[None]
        out[name] = value
    return out


def _chunk_key(study: Study, chunk: int) -> Any:
    """The base key of seed chunk ``chunk``: ``fold_in(key(seed), chunk)``."""
    import jax

    return jax.random.fold_in(jax.random.key(study.seed), chunk)


def _chunk_fingerprint(study: Study, block: int, chunk: int, code: tuple[str, str]) -> dict[str, Any]:
    """What chunk file ``(block, chunk)`` must match to be reused (``jaxpriv._resume.fingerprint``).

    The configuration (what the components compute, horizon, checkpoints), the seed
    chunk's key, the params of the grid points the block holds (their digest, and their
    values readably under ``grid points``), so that a chunk is never read under another
    grid or another study, with or without ``chunks/study.json``.
    """
    from jaxpriv import _resume, sim

    params = _block_params(study, block)
    axes, size = sim.grid_axes(params, allow_grid=True)
    fp = _resume.fingerprint(
        study.learner, study.env, horizon=study.horizon, seeds=study.chunk, chunk=None, segment=None,
        checkpoints=study.checkpoints, keys=_chunk_key(study, chunk), params=params, axes=axes if size else None,
        code=code,
    )  # fmt: skip
    start = block * study.grid_chunk
    idx = np.minimum(np.arange(start, start + study.grid_chunk), study.size - 1)
    fp["grid points"] = {k: np.asarray(v)[idx].tolist() for k, v in study.grid.items()}
    return fp


def _read_chunk(path: Path, fingerprint: dict[str, Any], chunks_dir: Path) -> dict[str, np.ndarray] | None:
    """A finished chunk's arrays, or ``None`` when the file holds another configuration (recompute it).

    Raises:
      ValueError: the file is truncated or corrupted (named, with how to start over).
    """
    from jaxpriv import _resume

    remedy = f"delete it to recompute that chunk (or delete {chunks_dir} to start the study over)"
    try:
        meta, arrays = _resume.read(path, remedy)
    except _resume.OtherFormat as err:
        print(f"{err.args[0].split(';')[0]}: recomputing it")
        return None
    wrong = _resume.differences(meta.get("fingerprint", {}), fingerprint)
    if wrong:
        print(f"{path} holds another configuration ({'; '.join(wrong)}): recomputing it")
        return None
    if "regret" not in arrays:
        raise ValueError(f"{path} holds no regret array; {remedy}")
    return arrays


def _check_out(out: Path) -> Path:
    """The output folder: refused (``ValueError`` naming ``out``) when it is a file, under a file or read-only."""
    from jaxpriv import _resume

    if out.exists() and not out.is_dir():
        raise ValueError(f"out must be a folder, got the file {out}")
    try:
        (out / "chunks").mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise ValueError(f"out={str(out)!r} must be a folder, but a part of that path is a file") from None
    except OSError as err:
        raise ValueError(f"out={str(out)!r}: cannot create the folder ({err.strerror or err})") from None
    _resume.check_writable(out / "chunks" / "study.json", "out")
    return out


def run_study(
    path: str | Path,
    out: str | Path | None = None,
    progress: bool = True,
    after_chunk: Callable[[int], None] | None = None,
) -> StudyResult:
    """Run a study file; resume from the chunks already in ``out``.

    Args:
      path: the study file (TOML).
      out: the output folder (default ``jaxpriv-out/<file stem>``: the same command resumes).
      progress: show a progress bar (tqdm, on stderr) advancing per chunk.
      after_chunk: called with the number of chunks finished so far after each chunk is saved
        (a hook for tests; raising from it interrupts the run like a Ctrl-C).

    Returns:
      A ``StudyResult``.

    Raises:
      ValueError: a bad study file or path (before anything compiles), an output folder
        that is a file, lies under one or cannot be written, an output folder holding
        chunks of a different study, or a damaged chunk file (named).
    """
    from tqdm.auto import tqdm

    from jaxpriv import _resume

    study = load_study(path)
    out = _check_out(Path(out) if out else Path("jaxpriv-out") / study.source.stem)
    chunks_dir = out / "chunks"
    stamp = chunks_dir / "study.json"
    fingerprint = _fingerprint(study)
    if stamp.exists():
        try:
            stamped = json.loads(stamp.read_text()).get("fingerprint")
        except (ValueError, AttributeError, OSError):
            stamped = None  # a damaged stamp: every chunk is checked on its own below
        if stamped != fingerprint:
            raise ValueError(
                f"{out} holds chunks of a different study (the file or jaxpriv changed since): "
                f"delete {chunks_dir} or choose another --out"
            )

    blocks = -(-study.size // study.grid_chunk)
    n_chunks = study.seeds // study.chunk
    units = [(b, c) for c in range(n_chunks) for b in range(blocks)]
    files = {u: chunks_dir / f"g{u[0]:04d}_s{u[1]:04d}.npz" for u in units}
    # Each chunk file carries the fingerprint of its configuration and grid points: checked before anything runs.
    from jaxpriv import sim

    axes, size = sim.grid_axes(study.params, allow_grid=True)
    code = _resume.computation(study.learner, study.env, study.params, axes if size else None)
    prints = {u: _chunk_fingerprint(study, *u, code) for u in units}
    parts: dict[tuple[int, int], dict[str, np.ndarray]] = {}
    for u in units:
        if files[u].exists():
            arrays = _read_chunk(files[u], prints[u], chunks_dir)
            if arrays is not None:
                parts[u] = arrays
    stamp.write_text(json.dumps({"fingerprint": fingerprint, "study": study.raw}, indent=2, default=str))
    done = len(parts)
    if done:
        print(f"resuming {study.name}: {done} of {len(units)} chunks found in {chunks_dir}, not recomputed")
    start = time.perf_counter()
    computed = 0
    bar = tqdm(total=len(units), initial=done, desc=study.name, unit="chunk", disable=not progress, file=sys.stderr)
    try:
        for unit in units:
            if unit in parts:
                continue
            arrays = _run_chunk(study, *unit)
            _resume.write(files[unit], {"fingerprint": prints[unit], "unit": list(unit)}, arrays)
            parts[unit] = arrays
            computed += 1
            bar.update(1)
            if after_chunk is not None:
                after_chunk(done + computed)
    finally:
        bar.close()
    seconds = time.perf_counter() - start

    # Assemble [G, S, ...] from the chunks (dropping the padding of the last grid block).
    arrays = {}
    for name in parts[units[0]]:
        rows = [np.concatenate([parts[(b, c)][name] for c in range(n_chunks)], axis=1) for b in range(blocks)]
        arrays[name] = np.concatenate(rows, axis=0)[: study.size]
    return _write_outputs(study, out, arrays, done, computed, seconds)


def _label(study: Study, g: int, keys: tuple[str, ...] | None = None) -> str:
    keys = tuple(study.grid) if keys is None else keys
    return ", ".join(f"{k.split('.')[-1]}={_fmt(study.grid[k][g])}" for k in keys) or study.learner_name


def _fmt(v: Any) -> str:
    v = np.asarray(v)
    if v.ndim:
        return "[" + " ".join(f"{x:g}" for x in v.ravel()) + "]"
    return "inf" if np.isinf(v) else f"{float(v):g}"


def _bounds(study: Study) -> np.ndarray | None:

    if study.learner_bound is None:
        return None
    from jaxpriv import sim

    axes, size = sim.grid_axes(study.params, allow_grid=True)
    values = []
    for g in range(study.size):
        point = _take(study.params, axes, np.asarray(g)) if size else study.params
        try:
            b = study.learner_bound(point.learner, point.env, study.learner_static, study.horizon, study.constraint)
        except (ValueError, TypeError, AttributeError):
            b = None
        values.append(np.nan if b is None else b)
    values = np.asarray(values, np.float64)
    return None if np.all(np.isnan(values)) else values


def _write_outputs(
    study: Study, out: Path, arrays: dict[str, np.ndarray], resumed: int, computed: int, seconds: float
) -> StudyResult:
    import jax

    import jaxpriv
    from jaxpriv.sim import Result

    steps = np.asarray(study.checkpoints)
    regret = arrays["regret"]
    final = regret[..., -1].astype(np.float64)
    mean = final.mean(1)
    se = final.std(1, ddof=1) / np.sqrt(final.shape[1])
    bounds = _bounds(study)
    rows = []
    for g in range(study.size):
        row: dict[str, Any] = {"grid_point": g}
        for key, values in study.grid.items():
            row[key] = _fmt(values[g])
        row["final_regret_mean"] = float(mean[g])
        row["final_regret_se"] = float(se[g])
        row["bound"] = "" if bounds is None or np.isnan(bounds[g]) else float(bounds[g])
        rows.append(row)

    files = {
        "npz": out / "results.npz",
        "json": out / "settings.json",
        "csv": out / "summary.csv",
        "curves": out / "regret.png",
        "final": out / "final_regret.png",
    }
    grid_arrays = {f"grid:{k}": np.asarray(v, np.float32) for k, v in study.grid.items()}
    np.savez_compressed(files["npz"], steps=steps, **arrays, **grid_arrays)
    with files["csv"].open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)

    result = Result(steps, regret, arrays["loss"], arrays["best"], arrays.get("gap"),
                    arrays.get("nonfinite_inputs"), arrays.get("nonfinite_steps"))  # fmt: skip
    warning = result.nonfinite_warning()
    if warning:
        print(f"{study.name}: {warning}", file=sys.stderr)
    axis_names = {
        name: (["grid", "seed", "checkpoint"] if arrays[name].ndim == 3 else ["grid", "seed"]) for name in arrays
    }
    settings = {
        "command": "sweep",
        "study": study.name,
        "file": str(study.source),
        "contents": study.raw,
        "learner": study.learner_name,
        "env": study.env_name,
        "horizon": study.horizon,
        "seeds": study.seeds,
        "seed": study.seed,
        "chunk": study.chunk,
        "grid_chunk": study.grid_chunk,
        "keys": "seed j of chunk c (chunk = seeds // chunk size) uses split(fold_in(key(seed), c), chunk)[j], "
        "the same for every grid point (common random numbers)",
        "grid_shape": list(study.shape),
        "grid_axes": [list(a) for a in study.axes],
        "grid": {k: np.asarray(v).tolist() for k, v in study.grid.items()},
        "arrays": {
            "steps": ["checkpoint"],
            **axis_names,
            **{k: ["grid"] + (["dim"] if np.ndim(v) > 1 else []) for k, v in grid_arrays.items()},
        },
        "grid_order": "row-major over grid_axes (the last axis varies fastest)",
        "chunks": {"resumed": resumed, "computed": computed},
        "seconds": seconds,
        "nonfinite_warning": warning,
        "versions": {
            "jaxpriv": jaxpriv.__version__,
            "jax": jax.__version__,
            "numpy": np.__version__,
            "python": platform.python_version(),
            "backend": jax.default_backend(),
        },
        "summary": rows,
    }
    files["json"].write_text(json.dumps(settings, indent=2, default=str))
    _plot_curves(study, steps, regret, files["curves"])
    _plot_final(study, mean, se, bounds, files["final"])
    return StudyResult(study, out, files, regret, rows, resumed, computed)


def _plot_curves(study: Study, steps: np.ndarray, regret: np.ndarray, path: Path) -> None:
    from jaxpriv import plot

    shown = np.unique(np.linspace(0, study.size - 1, min(study.size, 10)).round().astype(int))
    curves = {_label(study, int(g)): (steps, regret[g]) for g in shown}
    loglog = bool(np.all(steps > 0) and steps[-1] >= 100)
    title = f"{study.name}: {study.learner_name}, {study.seeds} seeds (mean, 95% band)"
    import matplotlib.pyplot as plt

    fig = plot.regret_curves(curves, None, title=title, loglog=loglog)
    fig.savefig(path)
    plt.close(fig)


def _plot_final(study: Study, mean: np.ndarray, se: np.ndarray, bounds: np.ndarray | None, path: Path) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.4, 4.4), dpi=120)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    scalar_axes = [a for a in study.axes if np.ndim(study.grid[a[0]]) == 1]
    if not scalar_axes:  # nothing swept (or only vector leaves): one bar per grid point
        ax.errorbar(np.arange(study.size), mean, yerr=1.96 * se, fmt="o", capsize=3)
        ax.set_xticks(np.arange(study.size), [_label(study, g) for g in range(study.size)], fontsize=7)
        ax.set_xlabel("grid point")
    else:
        x_axis = scalar_axes[0]
        x_key = x_axis[0]
        x = study.grid[x_key]
        others = [a for a in study.axes if a != x_axis]
        other_keys = tuple(k for a in others for k in a)
        groups: dict[str, list[int]] = {}
        for g in range(study.size):
            groups.setdefault(_label(study, g, other_keys) if other_keys else "", []).append(g)
        finite = np.isfinite(x)
        for label, idx in groups.items():
            idx = np.asarray(idx)
            keep = idx[finite[idx]]
            order = keep[np.argsort(x[keep])]
            line = ax.errorbar(x[order], mean[order], yerr=1.96 * se[order], marker="o", ms=3, capsize=2,
                               label=label or "measured")  # fmt: skip
            color = line[0].get_color()
            for g in idx[~finite[idx]]:
                ax.axhline(mean[g], color=color, ls=":", lw=1, label=f"{label} {x_key.split('.')[-1]}=inf".strip())
            if bounds is not None and np.any(np.isfinite(bounds[order])):
                ax.plot(x[order], bounds[order], "--", color=color, lw=1, label=f"{label} bound".strip())
        xs = x[finite]
        if xs.size and np.all(xs > 0) and xs.max() / xs.min() >= 10:
            ax.set_xscale("log")
        ys = np.concatenate([mean, bounds[np.isfinite(bounds)] if bounds is not None else []])
        if np.all(ys > 0) and ys.max() / max(ys.min(), 1e-12) >= 10:
            ax.set_yscale("log")
        ax.set_xlabel(x_key)
        ax.legend(fontsize=7)
    ax.set_ylabel(f"regret at T={study.horizon} (mean ± 1.96 SE)")
    ax.set_title(f"{study.name}: {study.learner_name} on {study.env_name}", fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)
