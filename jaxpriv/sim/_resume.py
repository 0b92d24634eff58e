"""Resuming long runs: the fingerprint of a configuration, and atomic, checked save files.

One mechanism for ``jaxpriv.sweep(save=...)`` and the study runner's chunk files
(``jaxpriv.experiments.study``): a saved file is read back only under the
configuration that wrote it, and a damaged file is an error that names it.

The fingerprint (``fingerprint``) is a flat dict of readable fields, compared
field by field so that a refusal names what differs. Its ``* computation`` fields
hash what the components compute rather than how they were built: the jaxpr of
``learner.init / act / update`` and ``env.reset / step / comparator`` traced on
abstract inputs of the right shapes (``jax.make_jaxpr``; nothing runs), with the
bytes of every closed-over array (a set's centre, a factorization's matrix:
constants of the jaxpr, not printed in its text). Every static argument of every
component (horizon, dimension, the set and its size, the noise family, a
mechanism and its static arguments, the neighbouring relation) changes either the
traced program or one of its constants or literals, so a change of any of them
changes the hash. The factories' static arguments, as the components' specs
give them (``Spec.static``), are kept beside it (``* static arguments``), so
that a refusal can say ``noise: saved 'gamma', now 'laplace'``. The jaxpr text is deterministic (variables are named
in order, no object ids), so a fingerprint is the same in every process.

A save file is an ``.npz`` with a JSON ``meta`` entry (``FORMAT``, the fingerprint,
and the writer's own fields: where to resume, how many chunks are done) and a SHA-256
of everything the file holds (every metadata field and every array, names, shapes,
dtypes and bytes), written to a temporary file beside it and renamed over it
(``write``), so a crash leaves the previous file whole. ``read`` verifies the archive,
the format and the checksum and raises ``ValueError`` naming the file and how to start
over: an edited field (``segment``, ``chunk``, ``done``, ...) is damage like a flipped byte.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import zipfile
import zlib
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.extend import core as jax_core

from jaxpriv._base import Spec

FORMAT = 3  # the save file layout: 1 had no checksum, 2 checksummed the arrays only, 3 the metadata too


# --- the fingerprint ------------------------------------------------------------------------------------------


def digest(*arrays: Any) -> str:
    """A short SHA-256 of arrays' shapes, dtypes and bytes (typed PRNG keys by their key data)."""
    h = hashlib.sha256()
    for a in arrays:
        if isinstance(a, jax.Array) and jnp.issubdtype(a.dtype, jax.dtypes.prng_key):
            h.update(str(jax.random.key_impl(a)).encode())
            a = jax.random.key_data(a)
        a = np.asarray(a)
        h.update(str((a.shape, a.dtype.str)).encode())
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()[:16]


def function_name(fn: Any) -> str:
    """``module.qualname`` of a component's function, cut at its factory (``jaxpriv.oco.pftal.pftal``)."""
    name = f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', type(fn).__name__)}"
    return name.split(".<locals>", 1)[0]


def _abstract(x: Any) -> Any:
    """A ``ShapeDtypeStruct`` of ``x`` (a leaf of params, a state or a key)."""
    if isinstance(x, jax.ShapeDtypeStruct):
        return x
    if not isinstance(x, jax.Array):
        x = jnp.asarray(x)
    return jax.ShapeDtypeStruct(x.shape, x.dtype)


def abstract_point(params: Any, axes: Any) -> Any:
    """Abstract params of one grid point: swept leaves (axis 0 in ``axes``) lose their leading axis."""
    if axes is None:
        return jax.tree.map(_abstract, params)

    def strip(leaf: Any, axis: Any) -> Any:
        a = _abstract(leaf)
        return a if axis is None else jax.ShapeDtypeStruct(a.shape[1:], a.dtype)

    return jax.tree.map(strip, params, axes)


def _walk_consts(jaxpr: Any, out: list) -> None:
    """Append the constants of every closed sub-jaxpr of ``jaxpr`` (a ``jit`` or ``cond`` keeps its own)."""

    def visit(value: Any) -> None:
        if isinstance(value, jax_core.ClosedJaxpr):
            out.extend(value.consts)
            _walk_consts(value.jaxpr, out)
        elif isinstance(value, jax_core.Jaxpr):
            _walk_consts(value, out)
        elif isinstance(value, (tuple, list)):
            for v in value:
                visit(v)

    for eqn in jaxpr.eqns:
        for value in eqn.params.values():
            visit(value)


_ADDRESS = re.compile(r"0x[0-9a-fA-F]+")


def _hash_traced(h: Any, fn: Callable, *args: Any) -> Any:
    """Feed ``fn``'s jaxpr on abstract ``args`` (text and constants) to ``h``; return its output shapes."""
    closed, shapes = jax.make_jaxpr(fn, return_shape=True)(*args)
    text = closed.jaxpr.pretty_print(use_color=False)  # the default text, whatever the printing settings
    h.update(_ADDRESS.sub("0x", text).encode())
    consts = list(closed.consts)
    _walk_consts(closed.jaxpr, consts)
    for c in consts:
        h.update(digest(c).encode())
    return shapes


def computation(learner: Any, env: Any, params: Any, axes: Any = None) -> tuple[str, str]:
    """Hashes of what ``learner`` and ``env`` compute: ``(learner's, environment's)``.

    Traces ``learner.init / act / update`` and ``env.reset / step / comparator``
    (``jax.make_jaxpr``, nothing runs) on abstract inputs shaped as in the engine:
    a typed PRNG key, one grid point of ``params`` (a ``SimParams``; ``axes`` its grid
    axes from ``jaxpriv.sim.grid_axes``, ``None`` when nothing is swept), the states
    ``init`` / ``reset`` return, the action, the feedback and the clock ``t``.

    Raises:
      ValueError: a component refuses the params when traced (a missing budget, ...).
    """
    point = abstract_point(params, axes)
    key = jax.eval_shape(lambda: jax.random.key(0))
    t = jax.ShapeDtypeStruct((), jnp.int32)
    h_learner, h_env = hashlib.sha256(), hashlib.sha256()
    agent = _hash_traced(h_learner, learner.init, key, point.learner)
    env_state = _hash_traced(h_env, env.reset, key, point.env)
    action = _hash_traced(h_learner, learner.act, key, agent, t)
    _, feedback, info = _hash_traced(h_env, env.step, key, env_state, action, t)
    _hash_traced(h_learner, learner.update, key, agent, action, feedback, t)
    if env.comparator is not None:
        stats = jax.tree.map(lambda s: jax.ShapeDtypeStruct(s.shape, jnp.float32), info.stats)
        _hash_traced(h_env, env.comparator, env_state, stats, t)
    return h_learner.hexdigest()[:16], h_env.hexdigest()[:16]


def static_arguments(component: Any) -> dict[str, Any]:
    """The factory's static arguments, from the component's spec (``Spec.static``), by path (JSON-able).

    A readable companion to ``computation`` (which decides): ``noise``, ``horizon``,
    ``constraint.radius``, ``mechanism.name`` (a nested component's spec and a set's fields under
    their argument's name). A component without a spec has none (``{}``).
    """
    spec = component.spec
    out: dict[str, Any] = {}
    if spec is not None:
        for name, value in spec.static:
            _record(out, name, value)
    return out


def _record(out: dict[str, Any], path: str, value: Any) -> None:
    """``value`` (a ``Spec.static`` value) under ``path``, flattened into JSON-able entries."""
    if isinstance(value, Spec):
        out[f"{path}.name"] = value.name
        for name, inner in value.static:
            _record(out, f"{path}.{name}", inner)
    elif (
        isinstance(value, tuple)
        and value
        and all(isinstance(v, tuple) and len(v) == 2 and isinstance(v[0], str) for v in value)
    ):  # (name, value) pairs: a set's fields
        for name, inner in value:
            _record(out, f"{path}.{name}", inner)
    elif isinstance(value, float) and not np.isfinite(value):
        out[path] = repr(value)  # JSON has no inf / nan
    elif value is None or isinstance(value, (bool, int, float, str)):
        out[path] = value
    elif isinstance(value, tuple):
        out[path] = repr(value) if len(value) <= 8 else f"<{len(value)} values {digest(np.asarray(value))}>"
    else:
        out[path] = str(value)  # a NoiseFamily: its name


def fingerprint(
    learner: Any,
    env: Any,
    *,
    horizon: int,
    seeds: int,
    chunk: int | None,
    segment: int | None,
    checkpoints: Iterable[int],
    keys: Any,
    params: Any,
    axes: Any = None,
    stats: Any = None,
    code: tuple[str, str] | None = None,
    simulator: str = "steps",
    simulator_options: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """What a saved run must match to be resumed, field by field (a JSON-able dict).

    ``keys`` are the run's seed keys; ``params`` its (canonical, float32) params with
    ``axes`` their grid axes. See the module docstring for the ``* computation`` fields;
    ``code`` passes them when already computed (``computation``, once for many runs of
    the same components). ``simulator`` is ``"steps"`` (the engine's scan) or ``"episodes"``
    (the learner's exact episode simulator, ``Spec.fast_path``) with its per-call options
    (a function, such as a hook, by its module and name).
    """
    learner_code, env_code = computation(learner, env, params, axes) if code is None else code
    env_static = static_arguments(env) | {"relative": bool(env.relative), "horizon": env.horizon}
    out = {
        "learner": function_name(learner.init),
        "learner static arguments": static_arguments(learner) | {"horizon": learner.horizon},
        "learner computation": learner_code,
        "environment": function_name(env.reset),
        "environment static arguments": env_static,
        "environment computation": env_code,
        "horizon": int(horizon),
        "seeds": int(seeds),
        "chunk": chunk,
        "segment": segment,
        "checkpoints": digest(np.asarray(tuple(checkpoints), np.int64)),
        "key": digest(keys),
        "params": digest(*jax.tree.leaves(params)) + " " + str(jax.tree.structure(params)),
        "stats": repr(stats),
        # The compiled batch is padded to a multiple of the device count: float32 rounding may differ.
        "jax": f"{jax.__version__} on {jax.default_backend()}, {jax.local_device_count()} device(s)",
    }
    if simulator != "steps":  # a step-level sweep's fingerprint has no such field (files saved before it resume)
        options = sorted((simulator_options or {}).items())
        out["simulator"] = {"name": simulator} | {k: _option(v) for k, v in options}
    return out


def _option(value: Any) -> Any:
    """A simulator option as a JSON-able fingerprint entry: a function by its name, a number or string as it is."""
    if callable(value):
        return function_name(value)
    if isinstance(value, float) and not np.isfinite(value):
        return repr(value)
    return value if value is None or isinstance(value, (bool, int, float, str)) else repr(value)


def differences(saved: dict[str, Any], now: dict[str, Any]) -> list[str]:
    """``"field: saved X, now Y"`` for every field of ``now`` that ``saved`` does not match, and every field
    ``saved`` has that ``now`` lacks (``<absent>``: a file of an episode simulation read by a step-level sweep).

    Dict-valued fields (static arguments) name only their differing entries.
    """
    out = []
    for field in {**saved, **now}:
        old, value = saved.get(field, "<absent>"), now.get(field, "<absent>")
        if old == value:
            continue
        if isinstance(old, dict) and isinstance(value, dict):
            keys = [k for k in {**old, **value} if old.get(k, "<absent>") != value.get(k, "<absent>")]
            inner = ", ".join(f"{k}: saved {old.get(k, '<absent>')!r}, now {value.get(k, '<absent>')!r}" for k in keys)
            out.append(f"{field} ({inner})")
        else:
            out.append(f"{field}: saved {old!r}, now {value!r}")
    return out


# --- files ----------------------------------------------------------------------------------------------------


def check_writable(path: str | os.PathLike, name: str) -> Path:
    """Refuse, before any computation, a save path that cannot be written; create its folder.

    Args:
      path: the file to be written (and replaced atomically) later.
      name: the argument's name, for the message (``"save"``).

    Returns:
      ``path`` as a ``Path``.

    Raises:
      ValueError: ``path`` is a folder, its folder is a file or cannot be created,
        or a file cannot be created in that folder (read-only, no permission).
    """
    if not isinstance(path, (str, os.PathLike)) or str(path) == "":
        raise ValueError(f"{name} must be a file path (a str or os.PathLike), got {path!r}")
    path = Path(path)
    if path.is_dir():
        raise ValueError(f"{name} must be a file path, got the folder {path}")
    if path.exists() and not path.is_file():
        raise ValueError(f"{name} must be a regular file path, got {path} (not a regular file)")
    folder = path.parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise ValueError(f"{name}={str(path)!r}: its folder {folder} is a file, not a folder") from None
    except OSError as err:
        raise ValueError(f"{name}={str(path)!r}: cannot create its folder {folder} ({err.strerror or err})") from None
    probe = folder / f".{path.name}.{os.getpid()}.probe"
    try:
        with open(probe, "wb"):
            pass
        probe.unlink()
    except OSError as err:
        raise ValueError(
            f"{name}={str(path)!r}: cannot write a file in {folder} ({err.strerror or err}); choose a writable path"
        ) from None
    return path


def _checksum(meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> str:
    """A SHA-256 of everything a file holds: its metadata (less the checksum) and every array."""
    h = hashlib.sha256()
    body = {k: v for k, v in meta.items() if k != "checksum"}
    h.update(json.dumps(body, sort_keys=True, separators=(",", ":")).encode())
    for k in sorted(arrays):
        h.update(k.encode())
        h.update(digest(arrays[k]).encode())
    return h.hexdigest()


def write(path: Path, meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
    """Write ``arrays`` and ``meta`` (JSON-able) to ``path`` atomically: a temporary file, then a rename."""
    arrays = {k: np.asarray(v) for k, v in arrays.items()}
    meta = json.loads(json.dumps({"format": FORMAT, **meta}))  # as read back: tuples are lists
    meta["checksum"] = _checksum(meta, arrays)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as f:
            np.savez(f, meta=np.asarray(json.dumps(meta)), **arrays)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


class DamagedFile(ValueError):
    """A save or chunk file that cannot be read back whole (truncated, corrupted, not a save file)."""


class OtherFormat(DamagedFile):
    """A whole file written in another layout (an older jaxpriv's, without a fingerprint or checksum)."""


def read(path: Path, remedy: str) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """``(meta, arrays)`` of a file written by ``write``, every byte verified.

    Args:
      path: the file.
      remedy: how to start over, for the message (``"delete it to start the sweep over"``).

    Raises:
      DamagedFile: (a ``ValueError``) the file is truncated or corrupted; ``OtherFormat``
        (a ``DamagedFile``) it is whole but not a save file of this format. The message
        names the file and ``remedy``.
    """
    try:
        with np.load(path, allow_pickle=False) as z:
            files = list(z.files)
            if "meta" not in files:
                raise OtherFormat(
                    f"{path} is not a jaxpriv save file of this version (it has no 'meta' entry); {remedy}"
                )
            meta = json.loads(str(z["meta"]))
            arrays = {k: z[k] for k in files if k != "meta"}
    except DamagedFile:
        raise
    except (
        zipfile.BadZipFile,
        zlib.error,
        EOFError,
        OSError,
        ValueError,
        KeyError,
        UnicodeDecodeError,
        NotImplementedError,  # a flipped compression-method byte: zipfile's "compression method is not supported"
    ) as err:
        detail = str(err).split(". ")[0]  # numpy's pickle advice does not apply: the file is damaged
        raise DamagedFile(f"{path} is truncated or corrupted ({type(err).__name__}: {detail}); {remedy}") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        version = meta.get("format", 1) if isinstance(meta, dict) else "?"
        raise OtherFormat(
            f"{path} was written in save format {version} (another jaxpriv); this one reads format {FORMAT}: {remedy}"
        )
    if meta.get("checksum") != _checksum(meta, arrays):
        raise DamagedFile(f"{path} is corrupted or was edited (its contents do not match their checksum); {remedy}")
    return meta, arrays
