"""The registry of components a study file may name: learners, environments, constraint sets and mechanisms.

A study file's ``[learner] name = "pftal"`` (or a ``[[learners]]`` entry's) is looked up in
``LEARNERS``, ``[env] name`` in ``ENVS``, ``[set] kind`` in ``SETS`` and a learner's
``mechanism = "honaker_tree"`` (or ``mechanism = {name = "blt", buffers = 4}``) in ``MECHANISMS``
(``jaxpriv.experiments.study_file``). A learner may carry its regret bound, which the study
runner writes beside the measured regret, and, when it takes a prefix-sum mechanism, the
dimension that mechanism must be built for (``mechanism_dim``; the file supplies the horizon
and ``neighbouring = "replace"``, the relation every learner's guarantee is stated under).

The tables are read-only views of the declarations (``jaxpriv.declare``): a component enters them through
its one declaration on its factory (``@declare.learner("pftal", params=PFTALParams, bound=...)``), which the
built-ins carry too, so importing this module (it imports the component packages) lists every built-in.
``register_learner``, ``register_env``, ``register_set`` and ``register_mechanism`` are the same declaration
as a call (kept for code written before it); a name registered twice is refused unless ``replace=True``::

    from jaxpriv.experiments import registry

    registry.register_learner("my_baseline", my_baseline)
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from jaxpriv import bandits, declare, envs, mechanisms, oco, sets  # noqa: F401 (importing them declares the built-ins)
from jaxpriv.declare import Bound, Declared

__all__ = [
    "ENVS",
    "LEARNERS",
    "MECHANISMS",
    "SETS",
    "Bound",
    "Component",
    "register_env",
    "register_learner",
    "register_mechanism",
    "register_set",
]

#: A declared factory a study file may name, its params class, its regret bound and its mechanism dimension
#: (``jaxpriv.declare.Declared``).
Component = Declared


class _Factories(Mapping[str, Callable[..., Any]]):
    """A read-only view of the declared factories of one kind, by name (``SETS``, ``MECHANISMS``)."""

    def __init__(self, kind: str) -> None:
        self._kind, self._table = kind, declare.declarations(kind)

    def __repr__(self) -> str:
        return f"<the declared {self._kind} factories: {', '.join(self._table)}>"

    def __getitem__(self, name: str) -> Callable[..., Any]:
        return self._table[name].factory

    def __iter__(self) -> Iterator[str]:
        return iter(self._table)

    def __len__(self) -> int:
        return len(self._table)


# The declarations by kind (``jaxpriv.declare``'s table; written only by a declaration, popped by tests).
_LEARNERS, _ENVS, _SETS, _MECHANISMS = (declare._TABLE[kind] for kind in ("learner", "env", "set", "mechanism"))
# The tables study files read: read-only views of the declarations.
LEARNERS: Mapping[str, Component] = declare.declarations("learner")
ENVS: Mapping[str, Component] = declare.declarations("env")
SETS: Mapping[str, Callable[..., Any]] = _Factories("set")
#: The prefix-sum mechanisms a learner's ``mechanism`` may name: built as ``factory(horizon, dim, **table)``
#: with the file's horizon, the learner's ``mechanism_dim`` and ``neighbouring = "replace"`` unless the table
#: says otherwise (the learners refuse any other relation). The window tree is not among them: the window
#: learners (``wdp_cocop``, ``wdp_cocol``) build their own from ``window``, and the full-stream learners'
#: params carry no ``delta`` for it.
MECHANISMS: Mapping[str, Callable[..., Any]] = _Factories("mechanism")


def _positional(fn: Callable[..., Any]) -> int:
    try:
        parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return -1
    return sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in parameters)


def _current_bound(bound: Any) -> Any:
    """``bound``, or a bound written for the registry before the declaration, ``(lp, ep, static, horizon,
    constraint)``, called with the learner's arguments from its spec (``jaxpriv.declare.arguments``)."""
    if bound is None or _positional(bound) != 5:
        return bound

    def current(params: Any, env_params: Any, spec: Any, horizon: int) -> float | None:
        arguments = declare.arguments(spec)
        return bound(params, env_params, arguments, horizon, arguments.get("constraint"))

    return current


def _current_dim(dim: Any) -> Any:
    """``mechanism_dim``, or one written before the declaration, ``(static, constraint) -> d``."""
    if not callable(dim) or _positional(dim) != 2:
        return dim
    return lambda arguments: dim(arguments, arguments.get("constraint"))


def register_learner(
    name: str,
    factory: Callable[..., Any],
    params: type | None = None,
    bound: Bound | None = None,
    replace: bool = False,
    mechanism_dim: Any = None,
    example: Any = None,
) -> Component:
    """Let study files name a learner: ``@declare.learner(name, ...)`` as a call (``[learner] name = <name>``).

    Args:
      name: the name in the study file.
      factory: the learner's factory (its arguments are the table's static keys); it is declared: the learners
        it builds record their arguments in ``Spec.static`` (``jaxpriv.declare``).
      params: its params NamedTuple class (the fields of ``[learner.params]``); ``None`` (default): the class
        the built learner's own ``Spec`` names (``jaxpriv.Spec.params``), read when a study file builds it.
      bound: its regret bound ``(params, env_params, spec, horizon) -> float | None`` (``jaxpriv.declare.Bound``),
        written beside the measured regret; or ``None``. A bound of the older form ``(lp, ep, static, horizon,
        constraint)`` is still taken.
      replace: replace a learner already registered under ``name``.
      mechanism_dim: for a factory with a ``mechanism`` argument, the dimension of the prefix-sum
        mechanism a file's ``mechanism = ...`` builds for it (see ``jaxpriv.declare.learner``); ``None``: the
        file may not name one.
      example: one small configuration, ``(horizon, dim) -> (learner, env, params, env_params)``
        (``jaxpriv.declare.Example``), or ``None``.

    Returns:
      The registered ``Component``.

    Raises:
      ValueError: ``name`` is taken (and ``replace`` is false), or an argument has the wrong kind.
    """
    bound, mechanism_dim = _current_bound(bound), _current_dim(mechanism_dim)
    declare.learner(name, params=params, bound=bound, mechanism_dim=mechanism_dim, example=example, replace=replace)(
        factory
    )
    return LEARNERS[name]


def register_env(
    name: str, factory: Callable[..., Any], params: type | None = None, replace: bool = False
) -> Component:
    """Let study files name an environment: ``@declare.env(name, params=...)`` as a call (``[env] name = <name>``).

    Returns:
      The registered ``Component``.

    Raises:
      ValueError: ``name`` is taken (and ``replace`` is false), or an argument has the wrong kind.
    """
    declare.env(name, params=params, replace=replace)(factory)
    return ENVS[name]


def register_set(name: str, factory: Callable[..., Any], replace: bool = False) -> Callable[..., Any]:
    """Let study files name a constraint set: ``@declare.set(name)`` as a call (``[set] kind = <name>``).

    Returns:
      ``factory``.

    Raises:
      ValueError: ``name`` is taken (and ``replace`` is false), or ``factory`` is not callable.
    """
    return declare.constraint_set(name, replace=replace)(factory)


def register_mechanism(name: str, factory: Callable[..., Any], replace: bool = False) -> Callable[..., Any]:
    """Let a learner in a study file name a prefix-sum mechanism: ``@declare.mechanism(name)`` as a call.

    ``factory(horizon, dim, **kwargs)`` -> a prefix-sum ``Mechanism`` (the table's other keys are its keyword
    arguments).

    Returns:
      The declared factory (it records its arguments in the mechanism's ``Spec.static``).

    Raises:
      ValueError: ``name`` is taken (and ``replace`` is false), or ``factory`` is not callable.
    """
    return declare.mechanism(name, replace=replace)(factory)
