"""Declare a component once: ``@declare.learner("pftal", params=PFTALParams, bound=...)`` on its factory.

One declaration on a factory says everything that is not computed: the component's name, its params class,
its regret bound (learners), and that study files may name it. A call of the declared factory then

* binds its arguments to the factory's signature (defaults applied) and records them as ``Spec.static``
  (plain hashable values, ``static_args``), in the signature's order;
* fills ``Spec.name`` and, when the factory's own spec names none, ``Spec.params``.

So a factory builds its ``Spec`` with only what varies (``Spec(private=..., num_arms=K, sampler_floor=...)``).
Where the value that identifies the computation is not the argument as given (``noise=None`` runs the Gamma
tree, ``mechanism=None`` the factory's own binary tree), the factory's ``Spec.static`` names it and wins over
the argument, in the argument's place (``static=static_args(noise=family.name, mechanism=tree)``); an entry
for a name that is not an argument is added after them, and one whose value is ``OMIT`` leaves the argument
out (a factory whose own ``Spec.static`` records every argument, a shared core's, keeps its order). A factory
that returns a component without a spec (``spec=None``) gets one:
``Spec(name, params, static=<its arguments>)``.

The built-ins and a user's components use the same declaration; a user's module is one file::

    import jaxpriv
    from jaxpriv import declare

    def private_etc_bound(params, env_params, spec, horizon):  # a learner's Bound
        return regret_bound(env_params.means, horizon, declare.arguments(spec)["explore"], params.rho)

    @declare.learner("private_etc", params=PrivateETCParams, bound=private_etc_bound)
    def private_etc(num_arms: int, horizon: int, explore: int = 100) -> jaxpriv.Learner:
        ...
        return jaxpriv.Learner(init, act, update, check, horizon, spec=jaxpriv.Spec(private=True, num_arms=num_arms))

``declare.env``, ``declare.mechanism`` and ``declare.set`` (``constraint_set``) declare the other kinds.

The table of declarations (``declarations(kind)``) is what ``jaxpriv.experiments.registry`` shows as
``LEARNERS``, ``ENVS``, ``SETS`` and ``MECHANISMS`` and what the study-file parser reads (the recorded
parameters and defaults: no signature is inspected twice). This module sits beside ``_base.py``: it imports
nothing of jaxpriv but ``_base``.
"""

from __future__ import annotations

import functools
import inspect
import types
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from jaxpriv._base import Spec, _plain, record_built_ndims

__all__ = [
    "OMIT",
    "Bound",
    "Declared",
    "Example",
    "ExampleRun",
    "arguments",
    "constraint_set",
    "declarations",
    "env",
    "learner",
    "mechanism",
    "mechanism_dim",
    "rebuild",
]

KINDS = ("learner", "env", "mechanism", "set")

#: A learner's regret bound at one grid point: ``(learner params, env params, learner spec, horizon) -> float or None``.
#: The learner's static arguments are ``arguments(spec)`` (a constraint set's fields as attributes; ``rebuild`` builds a
#: recorded mechanism again); ``None``: no bound at this point.
Bound = Callable[[Any, Any, Spec, int], "float | None"]

#: The dimension of the prefix-sum mechanism a study file builds for a learner (``mechanism = "honaker_tree"``):
#: an ``int``, the name of the learner's argument holding it (a constraint set: its ``dim``), or
#: ``(the learner's arguments by name) -> int``.
MechanismDim = "int | str | Callable[[dict[str, Any]], int]"

#: A learner's example: ``(horizon, dim) -> (learner, env, learner params, env params)``, one small configuration
#: that runs (a finite budget of its own family) on an environment it is built for, with ``dim`` its dimension
#: (arms, actions or experts). ``jaxpriv.testing.learner_examples`` collects them: the tests that compile every
#: learner and ``benchmarks/step_cost.py`` iterate over them.
Example = Callable[[int, int], tuple[Any, Any, Any, Any]]
#: What an ``Example`` returns: ``(learner, env, learner params, env params)``.
ExampleRun = tuple[Any, Any, Any, Any]


class _Omit:
    """``OMIT``: a factory's ``Spec.static`` entry with this value removes the argument from the record."""

    def __repr__(self) -> str:
        return "declare.OMIT"


#: An argument that the record leaves out, given as its value in the factory's own ``Spec.static``: one that
#: another entry already identifies (``regularized_pftal`` records its base learner, which holds the mechanism).
OMIT = _Omit()


class Declared(NamedTuple):
    """One declared factory (a row of ``declarations(kind)``).

    Attributes:
      factory: the factory a study file calls (the declared one: it fills its component's spec).
      params: the params NamedTuple class (the fields of a file's ``[learner.params]``), or ``None``: the built
        component's ``Spec.params``.
      bound: (learners) the regret bound (``Bound``) or ``None``.
      mechanism_dim: (learners taking a ``mechanism``) the dimension of the prefix-sum mechanism a study file
        builds for it (see ``MechanismDim``), or ``None``: a file may not name one.
      name: the name study files use (and the component's ``Spec.name``).
      example: (learners) its example (``Example``: one small configuration, for the tests and benchmarks that
        run every learner) or ``None``.
      kind: ``"learner"``, ``"env"``, ``"mechanism"`` or ``"set"``.
      parameters: the factory's parameter names, in order (keyword-only ones included).
      defaults: parameter name -> its default, for those that have one.
    """

    factory: Callable[..., Any]
    params: type | None = None
    bound: Any = None
    mechanism_dim: Any = None
    name: str = ""
    kind: str = "learner"
    parameters: tuple[str, ...] = ()
    defaults: Mapping[str, Any] = types.MappingProxyType({})
    example: Any = None

    @property
    def required(self) -> tuple[str, ...]:
        """The parameters without a default, in order."""
        return tuple(p for p in self.parameters if p not in self.defaults)


_TABLE: dict[str, dict[str, Declared]] = {kind: {} for kind in KINDS}


def declarations(kind: str) -> Mapping[str, Declared]:
    """The declared factories of ``kind`` (``"learner"``, ``"env"``, ``"mechanism"``, ``"set"``): a read-only view."""
    return types.MappingProxyType(_TABLE[kind])


def _signature(factory: Callable[..., Any]) -> inspect.Signature:
    return inspect.signature(factory)


def _add(
    kind: str, name: str, factory: Callable[..., Any], params: type | None = None, bound: Any = None,
    mechanism_dim: Any = None, replace: bool = False, example: Any = None,
) -> Declared:  # fmt: skip
    """Enter ``factory`` in the table under ``name`` (what every declaration calls).

    Raises:
      ValueError: ``name`` is taken (and ``replace`` is false), or an argument has the wrong kind.
    """
    if kind not in _TABLE:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    if not isinstance(name, str) or not name:
        raise ValueError(f"a {kind} name must be a non-empty string, got {name!r}")
    if name in _TABLE[kind] and not replace:
        raise ValueError(f"{kind} {name!r} is already registered (pass replace=True to replace it)")
    if not callable(factory):
        raise ValueError(f"{kind} {name!r}: factory must be callable, got {factory!r}")
    if params is not None and not (isinstance(params, type) and hasattr(params, "_fields")):
        raise ValueError(f"{kind} {name!r}: params must be a NamedTuple class or None (its spec's), got {params!r}")
    if bound is not None and not callable(bound):
        raise ValueError(f"{kind} {name!r}: bound must be callable or None, got {bound!r}")
    if mechanism_dim is not None and not (callable(mechanism_dim) or isinstance(mechanism_dim, (int, str))):
        raise ValueError(f"{kind} {name!r}: mechanism_dim must be an int, an argument's name, a callable or None, "
                         f"got {mechanism_dim!r}")  # fmt: skip
    if example is not None and not callable(example):
        raise ValueError(f"{kind} {name!r}: example must be callable (horizon, dim) or None, got {example!r}")
    parameters = _signature(factory).parameters
    names = tuple(k for k, p in parameters.items() if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD))
    defaults = {k: p.default for k, p in parameters.items() if k in names and p.default is not p.empty}
    entry = Declared(
        factory, params, bound, mechanism_dim, name, kind, names, types.MappingProxyType(defaults), example
    )
    _TABLE[kind][name] = entry
    return entry


def _fill(component: Any, name: str, params: type | None, static: tuple[tuple[str, Any], ...]) -> Any:
    """``component`` with its spec's name, params class and static arguments filled from the declaration."""
    if not (isinstance(component, tuple) and hasattr(component, "_fields") and "spec" in component._fields):
        return component  # not a Learner / Env / Mechanism (a set): nothing to fill
    spec = component.spec if component.spec is not None else Spec()
    own = dict(spec.static)  # the factory's own entries win, in the argument's place
    if all(k in own for k, _ in static):  # it records every argument itself (a shared core): its order
        merged = spec.static
    else:
        merged = tuple((k, own.pop(k) if k in own else v) for k, v in static)
        merged += tuple((k, v) for k, v in spec.static if k in own)
    merged = tuple((k, _plain(v)) for k, v in merged if v is not OMIT)
    # built with horizon=None although it records one: anytime (the horizon argument is only validated)
    anytime = spec.anytime or (
        "horizon" in component._fields and component.horizon is None and any(k == "horizon" for k, _ in merged)
    )
    spec = spec._replace(
        name=spec.name or name,
        params=spec.params if spec.params is not None else params,
        static=merged,
        anytime=anytime,
    )
    record_built_ndims(spec)  # so that an edited ndims is refused (_base.check_spec)
    return component._replace(spec=spec)


def _declare(
    kind: str, name: str, params: type | None = None, bound: Any = None, mechanism_dim: Any = None,
    replace: bool = False, example: Any = None,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:  # fmt: skip
    def decorate(factory: Callable[..., Any]) -> Callable[..., Any]:
        if not callable(factory):
            raise ValueError(f"{kind} {name!r}: factory must be callable, got {factory!r}")
        signature = _signature(factory)

        @functools.wraps(factory)
        def declared(*args: Any, **kwargs: Any) -> Any:
            call = signature.bind(*args, **kwargs)
            call.apply_defaults()
            static = tuple((k, _plain(v)) for k, v in call.arguments.items())
            return _fill(factory(*args, **kwargs), name, params, static)

        _add(kind, name, declared if kind != "set" else factory, params, bound, mechanism_dim, replace, example)
        return declared if kind != "set" else factory

    return decorate


def learner(
    name: str,
    *,
    params: type | None = None,
    bound: Any = None,
    mechanism_dim: Any = None,
    example: Any = None,
    replace: bool = False,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Declare a learner factory: ``@declare.learner("pftal", params=PFTALParams, bound=pftal_bound)``.

    Args:
      name: its name (``Spec.name``, and the name study files use: ``[learner] name = "pftal"``).
      params: its params NamedTuple class; ``None``: the class its built spec names (a factory whose class
        depends on its arguments, ``private_linucb``).
      bound: its regret bound, ``(params, env_params, spec, horizon) -> float | None`` (``Bound``), or ``None``.
      mechanism_dim: for a factory taking a prefix-sum ``mechanism``, the dimension a study file builds it for:
        an ``int``, the name of the argument holding it (``"constraint"``: the set's ``dim``; ``"num_experts"``),
        or ``(arguments by name) -> int``. ``None``: a study file may not name one.
      example: one small configuration, ``(horizon, dim) -> (learner, env, learner params, env params)``
        (``Example``), kept beside the factory in its module; ``jaxpriv.testing.learner_examples`` collects them
        (every built-in learner has one: the tests that compile every learner and the step-cost benchmark run
        it). Called only when asked for, so it may name the factory it is declared on.
      replace: replace a learner already declared under ``name`` (a notebook cell run twice).

    Raises:
      ValueError: ``name`` is already declared, or an argument has the wrong kind.
    """
    return _declare("learner", name, params, bound, mechanism_dim, replace, example)


def env(
    name: str, *, params: type | None = None, replace: bool = False
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Declare an environment factory: ``@declare.env("bernoulli_bandit", params=BernoulliParams)`` (as ``learner``)."""
    return _declare("env", name, params, replace=replace)


def mechanism(
    name: str, *, params: type | None = None, replace: bool = False
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Declare a prefix-sum mechanism factory ``(horizon, dim, **options) -> Mechanism``: a learner's
    ``mechanism = "<name>"`` in a study file builds it (``@declare.mechanism("honaker_tree", params=TreeParams)``)."""
    return _declare("mechanism", name, params, replace=replace)


def constraint_set(name: str, *, replace: bool = False) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Declare a constraint-set factory: ``[set] kind = "<name>"`` in a study file (``declare.set``).

    A set has no spec: the factory is registered as it is (not wrapped).
    """
    return _declare("set", name, replace=replace)


set = constraint_set  # ``declare.set``, beside ``declare.learner`` (the builtin is not used in this module)


# --- reading a declared component's arguments back ------------------------------------------------------------


def rebuild(spec: Spec) -> Any:
    """The component ``spec`` describes, built again by its declared factory from ``spec.static``.

    A mechanism a learner was built with is recorded in the learner's ``Spec.static`` as its spec; a bound
    that needs the mechanism itself (its variance oracle) gets it back this way:
    ``rebuild(arguments(spec)["mechanism"])``. Only plain arguments can be given back (a mechanism's: horizon,
    dimension, family, relation, dtype); a component with a set or a component among its arguments cannot.

    Raises:
      ValueError: no declared factory of that name takes these arguments.
    """
    for kind in ("mechanism", "learner", "env"):
        entry = _TABLE[kind].get(spec.name)
        if entry is not None and all(k in entry.parameters for k, _ in spec.static):
            return entry.factory(**dict(spec.static))
    raise ValueError(f"no declared factory named {spec.name!r} takes the arguments {[k for k, _ in spec.static]}")


def _readable(value: Any) -> Any:
    """A NamedTuple of settings recorded as ``(field, value)`` pairs (a ``ConstraintSet``) as a namespace."""
    if (
        isinstance(value, tuple)
        and value
        and all(isinstance(v, tuple) and len(v) == 2 and isinstance(v[0], str) for v in value)
    ):
        return types.SimpleNamespace(**dict(value))
    return value


def arguments(spec: Spec | None) -> dict[str, Any]:
    """A declared component's arguments, by name, from its spec: what a regret bound reads.

    ``Spec.static`` as a dict, a NamedTuple of settings (the ``constraint`` set) as a namespace of its fields
    that are not functions (``arguments(spec)["constraint"].radius``, ``.dim``, ``.diameter``); a nested
    component stays its spec (``rebuild`` builds it). ``{}`` for ``None``.
    """
    return {} if spec is None else {k: _readable(v) for k, v in spec.static}


def mechanism_dim(entry: Declared, kwargs: Mapping[str, Any]) -> int:
    """The dimension of the prefix-sum mechanism a study file builds for ``entry``'s learner called with ``kwargs``."""
    dim = entry.mechanism_dim
    if callable(dim):
        return int(dim(dict(kwargs)))
    if isinstance(dim, str):
        value = kwargs[dim] if dim in kwargs else entry.defaults[dim]
        return int(getattr(value, "dim", value))
    return int(dim)
