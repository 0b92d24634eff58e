"""The three protocols of jaxpriv and the helpers every component shares.

Every mechanism, learner and environment is a NamedTuple of pure functions over
an explicit state pytree (optax/blackjax style). The key always comes first;
the shared clock ``t`` (a 1-based int32 scalar that ``vmap`` does not batch)
always comes last.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, Literal, NamedTuple, Protocol

import jax
import jax.numpy as jnp
import numpy as np

PRNGKey = jax.Array
Params = Any
State = Any


class InitFn(Protocol):
    """``init(key, params) -> state`` of a mechanism or a learner.

    Turns the traced ``params`` (a ``*Params`` NamedTuple of array leaves) into the state
    every later call needs, calibrating once (noise scales, step sizes). Pure: the same
    key and params give the same state; ``vmap`` over params batches everything downstream.
    """

    def __call__(self, key: PRNGKey, params: Params, /) -> State:
        """Return the initial state for ``params``; ``key`` seeds any randomness of the state."""
        ...


class MechanismStepFn(Protocol):
    """``step(key, state, x, t) -> (state, release, nonfinite)`` of a mechanism (older form: ``(state, release)``).

    ``x`` is the input at the 1-based step ``t`` (int32, shared by every seed, not batched);
    ``key`` is that step's key. Returns the new state, the private release and, for a mechanism
    declared ``returns_count=True``, the inputs it replaced by zero at this step (int32, 0 or 1).
    """

    def __call__(self, key: PRNGKey, state: State, x: jax.Array, t: jax.Array, /) -> tuple[Any, ...]:
        """Absorb ``x`` at step ``t`` and return ``(state, release, nonfinite)`` (or ``(state, release)``)."""
        ...


class ActFn(Protocol):
    """``act(key, state, t) -> action`` of a learner: the point ``w_t`` or the arm played at ``t``."""

    def __call__(self, key: PRNGKey, state: State, t: jax.Array, /) -> jax.Array:
        """Return the action at the 1-based step ``t``."""
        ...


class UpdateFn(Protocol):
    """``update(key, state, action, feedback, t) -> (state, info)`` of a learner (or ``-> state``).

    ``action`` is what ``act`` returned at ``t``; ``feedback`` is what the environment
    revealed for it (a gradient, a loss or a reward). A learner built with
    ``returns_info=True`` returns the new state and the step's Info (``NonfiniteInfo``: its
    diagnostics, which the engine reduces over time); one built without it (the older
    contract, still accepted) returns the state alone.
    """

    def __call__(self, key: PRNGKey, state: State, action: jax.Array, feedback: Any, t: jax.Array, /) -> Any:
        """Return the state after the feedback of step ``t`` (with the step's Info when the learner declares it)."""
        ...


class ResetFn(Protocol):
    """``reset(key, params) -> state`` of an environment: draws the instance (arm means, a loss stream's seed)."""

    def __call__(self, key: PRNGKey, params: Params, /) -> State:
        """Return the environment's initial state for ``params``."""
        ...


class EnvStepFn(Protocol):
    """``step(key, state, action, t) -> (state, feedback, EnvInfo)`` of an environment.

    ``feedback`` is what the learner sees (a gradient, a loss or a reward); ``EnvInfo``
    is what the engine records (loss, per-step regret, statistics for the comparator).
    """

    def __call__(self, key: PRNGKey, state: State, action: jax.Array, t: jax.Array, /) -> tuple[State, Any, EnvInfo]:
        """Answer ``action`` at step ``t``."""
        ...


class ComparatorFn(Protocol):
    """``comparator(state, stats_sum, t) -> (best, gap)`` of an environment: always the pair.

    ``stats_sum`` is the sum over ``s <= t`` of ``EnvInfo.stats``; ``best`` is the loss of
    the best fixed point in hindsight, and ``gap`` (float32, ``>= 0``) a certified bound on
    its suboptimality: a numerical solver's own certificate, 0 for a closed form (see
    ``Env.comparator``). An environment whose comparator is a closed form says so with
    ``Env(..., exact=True)`` (``jaxpriv.envs.exact_comparator`` builds the pair with gap 0), and
    the engine then reports ``Result.gap`` as ``None``; otherwise the gaps are reported as they come.
    """

    def __call__(self, state: State, stats_sum: Any, t: jax.Array, /) -> tuple[jax.Array, jax.Array]:
        """Return the best fixed loss in hindsight and its certified gap (0 when exact)."""
        ...


class CheckFn(Protocol):
    """``check(params) -> None`` of any component: raises ``ValueError`` (naming the field) on bad params.

    The engine calls it on concrete values before compiling; it must not trace anything.
    """

    def __call__(self, params: Params, /) -> None:
        """Raise ``ValueError`` when ``params`` is invalid; return ``None`` otherwise."""
        ...


class NonfiniteFn(Protocol):
    """``nonfinite(state) -> count``: the older contract's count of zeroed inputs, read from a state (deprecated).

    The count of inputs with a NaN / ±inf entry that a component replaced by zero
    (``zero_nonfinite``), read from its state: a scalar for one run's state (the engine
    calls it inside its ``vmap``). Deprecated and still accepted: a mechanism whose ``step``
    returns ``(state, release)`` (``returns_count=False``) declares it so that learners and drivers
    can count what it zeroed (``mechanism_step_count``: the state's increase), and a learner whose
    ``update`` returns the state alone (``returns_info=False``) so that the engine can report it
    (``nonfinite_inputs``). jaxpriv's components keep no counter: a mechanism's ``step`` returns
    the step's count (``returns_count=True``), a learner's ``update`` its Info (``NonfiniteInfo``).
    """

    def __call__(self, state: State, /) -> jax.Array:
        """Return the int32 count of zeroed inputs recorded in ``state``."""
        ...


#: How an ``Info`` field is reduced over time by the engine: summed, its running maximum, or its last value.
Reduction = Literal["sum", "max", "last"]
REDUCTIONS: tuple[str, ...] = ("sum", "max", "last")


def reductions(**fields: Reduction) -> Mapping[str, Reduction]:
    """The ``reductions`` class attribute of an ``Info`` class: ``field -> "sum" | "max" | "last"`` (read-only)."""
    for name, how in fields.items():
        if how not in REDUCTIONS:
            raise ValueError(f"the reduction of Info field {name!r} must be one of {REDUCTIONS}, got {how!r}")
    return MappingProxyType(dict(fields))


class NonfiniteInfo(NamedTuple):
    """The ``Info`` of a step whose only diagnostic is the inputs it replaced by zero.

    An *Info* is what ``update`` (of a learner built with ``returns_info=True``) returns beside its
    state, blackjax's ``(state, info)``: a NamedTuple of arrays, one step's diagnostics, whose class
    says how the engine reduces each field over time in a class attribute ``reductions``
    (``jaxpriv._base.reductions``: ``"sum"``, ``"max"`` or ``"last"``). The engine folds it into
    its carry (``fold_info``), reports the fold at the checkpoints (``Result.info``) and returns it
    per step from ``rollout`` (``Rollout.info``). Diagnostics are never read by the algorithm: they
    are not part of its state. A field named ``nonfinite`` (int32, reduced by ``"sum"``) is the
    count ``Result.nonfinite_inputs`` reports.

    Attributes:
      nonfinite: int32, the inputs (gradients, losses, rewards) with a NaN / ±inf entry that the
        learner or its mechanism replaced by zero at this step (``zero_nonfinite``).
    """

    nonfinite: jax.Array
    reductions = reductions(nonfinite="sum")


class NoInfo(NamedTuple):
    """The ``Info`` of a learner with no diagnostic: it replaces no input by zero and owns no mechanism.

    No field: the engine carries and writes nothing for it (``Result.info`` is ``NoInfo()``, and
    ``Result.nonfinite_inputs`` is 0). A non-private learner that lets a NaN propagate returns it.
    """

    reductions = reductions()


def info_reductions(info: Any) -> Mapping[str, Reduction]:
    """The ``reductions`` of an Info value (its class attribute), checked to cover exactly its fields."""
    how = getattr(type(info), "reductions", None)
    fields = getattr(type(info), "_fields", None)
    if how is None or fields is None or set(how) != set(fields):
        raise ValueError(
            f"an Info must be a NamedTuple whose class attribute `reductions` maps each of its fields to "
            f"'sum', 'max' or 'last', got {type(info).__name__} (fields {fields}, reductions {how})"
        )
    return how


def info_start(shapes: Any) -> Any:
    """The fold's starting value for an Info of these shapes (``jax.eval_shape`` of one): each reduction's identity.

    ``"sum"`` starts at 0, ``"max"`` at the dtype's least value (``-inf`` for floats), ``"last"`` at 0.
    """
    how = info_reductions(shapes)

    def start(field: str, s: Any) -> jax.Array:
        dtype = jnp.dtype(s.dtype)
        if how[field] == "max":
            low = -jnp.inf if jnp.issubdtype(dtype, jnp.floating) else jnp.iinfo(dtype).min
            return jnp.full(s.shape, low, dtype)
        return jnp.zeros(s.shape, dtype)

    return type(shapes)(*(start(f, s) for f, s in zip(type(shapes)._fields, shapes, strict=True)))


def fold_info(acc: Any, info: Any) -> Any:
    """One step of the engine's reduction of Info over time: each field summed, maxed or replaced."""
    how = info_reductions(info)
    ops = {"sum": lambda a, x: a + x, "max": jnp.maximum, "last": lambda a, x: x}
    return type(info)(
        *(
            jnp.asarray(ops[how[f]](a, x), jnp.asarray(a).dtype)
            for f, a, x in zip(type(info)._fields, acc, info, strict=True)
        )
    )


def update_with_info(
    learner: Any, key: PRNGKey, state: Any, action: Any, feedback: Any, t: jax.Array
) -> tuple[Any, Any]:
    """``learner.update`` as ``(state, info)``: its own Info (``returns_info=True``), else ``None`` (the old form).

    The form is the learner's declaration (``Learner.returns_info``), never a guess on the value returned.
    """
    out = learner.update(key, state, action, feedback, t)
    if getattr(learner, "returns_info", False):
        return out
    return out, None


def mechanism_step_count(mechanism: Any, key: PRNGKey, state: Any, x: Any, t: jax.Array) -> tuple[Any, Any, jax.Array]:
    """``mechanism.step`` with the inputs it zeroed at this step: ``(state, release, nonfinite)`` (int32).

    How a learner or a driver steps any mechanism. One that declares ``returns_count=True`` (every
    mechanism of jaxpriv) returns the step's count itself. One in the older form (``step`` returns
    ``(state, release)``; deprecated) counts in its state: the step's count is the increase of its
    ``nonfinite(state)`` (0 when it declares none).
    """
    if getattr(mechanism, "returns_count", False):
        new_state, release, bad = mechanism.step(key, state, x, t)
        return new_state, release, jnp.asarray(bad, jnp.int32)
    new_state, release = mechanism.step(key, state, x, t)
    return new_state, release, nonfinite_inputs(mechanism, new_state) - nonfinite_inputs(mechanism, state)


class Spec(NamedTuple):
    """What a component says about itself: the static facts the engine needs, in one field.

    Every factory of jaxpriv builds its ``Learner``, ``Mechanism`` or ``Env`` with one holding what varies
    (``Learner(..., spec=Spec(private=True, sampler_floor=...))``); the factory's declaration
    (``jaxpriv.declare``: ``@declare.learner("pftal", params=PFTALParams)``) fills ``name``, ``params`` and
    ``static`` from the call.
    A field of the component, so it travels with it: a wrapper that replaces a function (``_replace``)
    keeps it. A component without a spec (``spec=None``, a user's own) has none of these
    checks: any params class is taken, ``Result.private`` is ``None``, nothing is compared.

    Attributes:
      name: the factory's name (``"pftal"``, ``"adac_ucb"``, ``"quadratic_stream"``), for
        messages and for a saved run's fingerprint.
      params: the one params class the component takes. ``run`` / ``sweep``, ``jaxpriv.tune``
        and the episode simulators refuse any other class before compiling, a subclass or a
        field-for-field copy included (``check_params_class``). ``None``: no check.
      private: (learners, mechanisms) whether the component's stated privacy guarantee is in
        force: ``False`` for a non-private algorithm and for a private one built with an
        opt-out (``clip=False``, an ablation, ...). Recorded as ``Result.private``.
      static: the factory's static arguments as ``(name, value)`` pairs of plain hashable
        values (``("horizon", 1024), ("dim", 10), ("noise", "gamma")``): what a saved run's
        fingerprint records and compares besides the traced computation. A declared factory's are its call's
        arguments, defaults applied; the factory gives only those whose value that runs differs
        (``static_args(noise=family.name)``), which win in the argument's place.
      num_arms: (bandit learners and environments) the arm indices played / accepted are
        ``0..K-1``; ``run`` / ``sweep`` refuse a pair whose numbers differ before compiling.
      action_shape: (environments) the shape of the action the environment takes.
      ndims: ``(field, rank)`` pairs: the base rank of the params class's array fields
        (``(("means", 1),)``: one ``means`` vector per run). A leaf with one more dimension is
        a grid axis (``jaxpriv.sim``'s grid detection); fields not named are scalars.
      sampler_floor: (tree components) the ``SamplerFloor`` the float32 samplers' δ floor is
        computed from (``jaxpriv.mechanisms._sampler_floor``), or ``None`` (not covered).
      fast_path: an algorithm-specific fast path (the bandits' exact episode simulators), or
        ``None``.
      anytime: (learners) the factory built the component with ``horizon=None`` although ``static``
        records a ``horizon`` argument (UCB, AdaC-UCB, DP-TS, ...: the horizon is only validated). Set by
        the declaration; ``check_horizon`` then lets a run go past the recorded horizon. A component whose
        factory fixed its horizon keeps ``False``, so ``_replace(horizon=None)`` cannot bypass the record.
    """

    name: str = ""
    params: type | None = None
    private: bool | None = None
    static: tuple[tuple[str, Any], ...] = ()
    num_arms: int | None = None
    action_shape: tuple[int, ...] | None = None
    ndims: tuple[tuple[str, int], ...] = ()
    sampler_floor: Any = None
    fast_path: Any = None
    anytime: bool = False


def _plain(value: Any) -> Any:
    """``value`` as a plain hashable value for ``Spec.static`` (see ``static_args``)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, Spec):
        return value
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        if "spec" in value._fields:  # a component (Mechanism, Learner, Env): what it says about itself
            return value.spec
        # A NamedTuple of settings (a ConstraintSet, ...): its fields that are not functions, by name.
        return tuple((k, _plain(v)) for k, v in zip(value._fields, value, strict=True) if not callable(v))
    if isinstance(value, (tuple, list)):
        return tuple(_plain(v) for v in value)
    if isinstance(value, np.ndarray):
        return tuple(_plain(v) for v in value.ravel().tolist()) if value.size <= 64 else f"<array {value.shape}>"
    saved = getattr(type(value), "__static__", None)  # a NoiseFamily: saved by its name
    if saved is not None:
        return saved(value)
    if callable(value):
        return f"{getattr(value, '__module__', '?')}.{getattr(value, '__qualname__', repr(value))}"
    try:
        hash(value)
    except TypeError:
        return repr(value)
    return value


def static_args(**arguments: Any) -> tuple[tuple[str, Any], ...]:
    """A factory's static arguments as ``Spec.static``: ``(name, value)`` pairs of plain hashable values.

    Python and NumPy scalars, strings and ``None`` are kept; a component (``Mechanism``,
    ``Learner``, ``Env``) becomes its ``spec``; a NamedTuple of settings (a ``ConstraintSet``)
    ``((field, value), ...)`` over its fields that are not functions; a tuple, a list or a small
    array a tuple; a value whose class defines ``__static__`` that method's result (a ``NoiseFamily``
    its name); a function its qualified name; any other hashable value is kept (a saved run's
    fingerprint records it as ``str(value)``).
    """
    return tuple((name, _plain(value)) for name, value in arguments.items())


class PrefixSumInfo(NamedTuple):
    """What a prefix-sum mechanism declares about itself (``Mechanism.info``; read with ``describe``).

    Defined here, beside ``Mechanism``, because it is one of the mechanism's fields; the
    mechanisms (``jaxpriv.mechanisms``) build it and re-export it. Code that needs a kind of
    mechanism reads the property it is about (``scope``, ``structure``), never the ``name``.

    Attributes:
      name: the factory (``"binary_tree"``, ``"honaker_tree"``, ``"sqrt_factorization"``, ``"blt"``,
        ``"window_tree"``), for messages and labels.
      horizon: ``T``, the number of steps it is calibrated for.
      dim: ``d``, the dimension of each input.
      noise: the noise family (``jaxpriv.mechanisms.NoiseFamily``: ``GAMMA``, ``LAPLACE``,
        ``GAUSSIAN``); ``str(info.noise)`` is its name.
      neighbouring: ``"add_remove"`` or ``"replace"``.
      sensitivity: ``params -> s``: the sensitivity the noise is calibrated to, in the
        family's norm (L1 for Laplace, L2 otherwise), for the neighbouring relation named:
        per node for the trees (``Δ`` or ``2Δ``), times the maximum column norm of
        the encoder for the matrix factorizations.
      variance: ``(params, t) -> var``: the exact per-coordinate variance of the
        release error ``v_t - sum_{s<=t} x_s`` at step ``t`` (float64).
      scope: what the guarantee protects: ``"event"`` (one input of the whole stream) or
        ``"window"`` (``W`` consecutive inputs: the window tree).
      structure: how the noise reaches a release: ``"dyadic"`` (the sum of the independent noisy
        nodes at the set bits of ``t``: the binary tree, whose audit reads the nodes back),
        ``"honaker"`` (independent dyadic nodes, combined by Honaker's weights; the release at
        ``t = 1`` is one node), ``"window"`` (the window tree's nodes) or ``"none"`` (correlated noise
        of a matrix factorization, and the default for a mechanism that states nothing).
    """

    name: str
    horizon: int
    dim: int
    noise: Any  # a NoiseFamily (jaxpriv.mechanisms._noise sits above this module)
    neighbouring: str
    sensitivity: Callable[[Any], np.ndarray]
    variance: Callable[[Any, np.ndarray], np.ndarray]
    scope: str = "event"
    structure: str = "none"


class Mechanism(NamedTuple):
    """A private mechanism: one-shot release or private prefix sums of a stream.

    Fields are positional in this order (``Mechanism(init, step, check, horizon)`` is the
    common construction); the later ones default to ``None``.

    Attributes:
      init: ``(key, params) -> state`` (``InitFn``); calibrates the noise once.
      step: ``(key, state, x, t) -> (state, release)`` (``MechanismStepFn``).
      check: optional ``params -> None`` (``CheckFn``); raises ``ValueError`` on bad params.
        Called by the engine on concrete values, before anything is compiled.
      horizon: the number of steps ``T`` the mechanism was built (and calibrated)
        for, or ``None`` when it has no horizon. Drivers (``prefix_sums``,
        ``run``, ``sweep``) refuse a longer stream before compiling; stepped by
        hand at ``t > T`` the release is NaN (``poison_past_horizon``).
      nonfinite: deprecated; optional ``state -> int32`` (``NonfiniteFn``), the older form
        (``returns_count=False``): how many inputs the mechanism replaced by zero, read from its
        state. ``None``: undeclared (0 is reported; the state is not searched). A mechanism that
        returns its count from ``step`` leaves it ``None``: every mechanism of jaxpriv does.
      info: the mechanism's description when it is a prefix-sum mechanism
        (``PrefixSumInfo``: shape, noise family, neighbouring relation, calibrated
        sensitivity, exact variance oracle), else ``None``. A field, so it travels with
        the mechanism: ``mechanism._replace(step=wrapped)`` keeps it.
      spec: what the mechanism says about itself (``Spec``: name, params class, privacy,
        static arguments), or ``None`` for a mechanism built by hand.
      returns_count: ``True``: ``step`` returns ``(state, release, nonfinite)``, the third the
        inputs it replaced by zero at this step (int32, 0 or 1: ``zero_nonfinite``), so no counter
        lives in its state; every mechanism of jaxpriv does. ``False`` (the default, the older form of
        a user's mechanism): ``step`` returns ``(state, release)``. Step either form with
        ``mechanism_step_count``.
    """

    init: InitFn
    step: MechanismStepFn
    check: CheckFn | None = None
    horizon: int | None = None
    nonfinite: NonfiniteFn | None = None
    info: PrefixSumInfo | None = None
    spec: Spec | None = None
    returns_count: bool = False


class Learner(NamedTuple):
    """An online convex optimisation learner or a bandit policy.

    Attributes:
      init: ``(key, params) -> state`` (``InitFn``).
      act: ``(key, state, t) -> action`` (``ActFn``); the point ``w_t`` or the arm played at ``t``.
      update: ``(key, state, action, feedback, t) -> (state, info)`` (``UpdateFn``; ``-> state`` in the
        older form, ``returns_info=False``).
      check: optional ``params -> None`` (``CheckFn``) validating params eagerly.
      horizon: the ``T`` the learner was built for (its tree's capacity, a
        calibration that depends on ``T``), or ``None`` for an anytime learner.
        ``run`` / ``sweep`` refuse a longer horizon before compiling.
      nonfinite: deprecated; optional ``state -> int32`` (``NonfiniteFn``), the old form (``returns_info=False``):
        the inputs (gradients, losses, rewards) the learner and its mechanism replaced by zero: its
        own counter plus ``mechanism.nonfinite`` of its mechanism's state. ``None``: undeclared;
        ``nonfinite_inputs`` then reports 0 (the state is not searched). A learner that returns
        Info reports the count in its Info's ``nonfinite`` field instead and leaves this ``None``:
        every learner of jaxpriv does.
      spec: what the learner says about itself (``Spec``: name, params class, privacy,
        static arguments, number of arms), or ``None`` for a learner built by hand.
      returns_info: ``True``: ``update`` returns ``(state, info)``, an Info (``NonfiniteInfo`` or a
        NamedTuple of the same kind: a class attribute ``reductions`` says how the engine reduces
        each field over time); the engine owns the diagnostics (``Result.info``,
        ``Result.nonfinite_inputs`` from ``info.nonfinite``). ``False`` (the default, and the form
        of a user's learner written against the older contract): ``update`` returns the state alone.
    """

    init: InitFn
    act: ActFn
    update: UpdateFn
    check: CheckFn | None = None
    horizon: int | None = None
    nonfinite: NonfiniteFn | None = None
    spec: Spec | None = None
    returns_info: bool = False


class EnvInfo(NamedTuple):
    """What an environment reports each step besides the feedback.

    Attributes:
      loss: the loss ``f_t(a_t)`` suffered at the action (bandits: minus the reward).
      regret: the per-step regret against a fixed reference. Bandits: the
        pseudo-regret ``max_a mu_a - mu_{a_t}``. Environments with a
        ``comparator`` and ``Env.relative=True``: ``f_t(a_t) - f_t(c)`` for a
        fixed reference point ``c`` of the environment's choosing (ignored when
        ``relative=False``).
      stats: a pytree summed over time by the engine; the environment's
        ``comparator`` turns the sum into the best fixed loss in hindsight.
    """

    loss: jax.Array
    regret: jax.Array
    stats: Any = ()


class Env(NamedTuple):
    """A loss stream (full information or bandit feedback) or a bandit instance.

    Attributes:
      reset: ``(key, params) -> state`` (``ResetFn``).
      step: ``(key, state, action, t) -> (state, feedback, EnvInfo)`` (``EnvStepFn``); feedback
        is a gradient (full information) or a loss / reward (bandit feedback).
      comparator: optional ``(state, stats_sum, t) -> (best, gap)`` (``ComparatorFn``): ``best`` is
        ``min_{w in C} sum_{s<=t} f_s(w)``, the loss of the best fixed point in hindsight on
        the realised losses, from the summed ``stats``, and ``gap`` a certified bound on
        ``best``'s excess over it (0 for a closed form, with ``exact=True``; a numerical
        solver's own bound otherwise). The engine's regret is then ``sum_s f_s(a_s) - best``
        (eq. (1) of Smith & Thakurta). Without a comparator, regret is the running sum of
        ``EnvInfo.regret``.
      relative: when ``True``, ``EnvInfo.regret`` is ``f_t(a_t) - f_t(c)`` and the
        comparator returns ``min_w sum_s [f_s(w) - f_s(c)]`` for a fixed
        reference point ``c``; regret is ``sum_s EnvInfo.regret_s - best``.
        Same quantity, but no cancellation between two cumulative losses of
        order ``T``: float32 stays accurate over long horizons (``c`` near the
        optimum keeps every sum small).
      check: optional ``params -> None`` (``CheckFn``) validating params eagerly.
      horizon: the longest run the environment supports (e.g. the prefix its
        comparator regenerates), or ``None``; ``run`` / ``sweep`` refuse a longer one.
      exact: ``True`` when ``comparator`` is a closed form whose gap is always 0
        (``jaxpriv.envs.exact_comparator``); the engine then reports ``Result.gap = None``.
      spec: what the environment says about itself (``Spec``: name, params class, static
        arguments, number of arms, action shape, grid ranks), or ``None``.
    """

    reset: ResetFn
    step: EnvStepFn
    comparator: ComparatorFn | None = None
    check: CheckFn | None = None
    relative: bool = False
    horizon: int | None = None
    exact: bool = False
    spec: Spec | None = None


def _engine_compiler_options() -> dict[str, Any]:
    """XLA options for the engine's compiled functions (``engine_jit``).

    ``xla_cpu_prefer_vector_width=512``: on a CPU with AVX-512, LLVM vectorises the
    engine's elementwise kernels 16 floats wide instead of XLA's default 8. Measured on
    an AMD EPYC (2 cores, one device, 1024 seeds, T = 1024): OGD, FTAL and MI-OGD
    1.12-1.17x faster, PFTAL 1.09x (d = 10) to 1.44x (d = 100). The numbers change only
    by float32 rounding: bit for bit the same at d = 3, 10 and 100, while at d = 16 (a row
    is one 16-wide vector) XLA's vectorised row sums add in another order, up to 3e-7
    relative (``tests/engine/test_engine_options.py``). Without AVX-512 the preference is capped at
    the widest vector the CPU has; on other backends ``engine_jit`` does not pass it. A
    ``--xla_cpu_prefer_vector_width`` given in ``XLA_FLAGS`` (256 on parts that slow down
    under 512-bit vectors) is left in force.

    ``xla_cpu_copy_insertion_use_region_analysis``: XLA's copy insertion looks inside the scan
    body's regions, sees that the learner's old point is not read after the update writes the
    next one, and drops the body's copies (PFTAL's 2 to 0: 3284 -> 3204 B per seed-step with the
    Gamma tree at d = 10; OGD 1735 -> 1655). Copy insertion moves no arithmetic: every learner
    example bit for bit at d = 3, 10 and 100. Speed near idle (issue 47, in one process, one
    pinned core, 1024 seeds, T = 2048, 7 alternated reps): PFTAL, FTAL, DP-FTRL, OGD, private
    bandit FTAL, AdaC-UCB 1.00-1.02x, none slower (an earlier reading under a load of 2-6,
    0.94x for PFTAL, is in docs/performance.md).
    """
    options: dict[str, Any] = {"xla_cpu_copy_insertion_use_region_analysis": True}
    if "xla_cpu_prefer_vector_width" not in os.environ.get("XLA_FLAGS", ""):
        options["xla_cpu_prefer_vector_width"] = 512
    return options


ENGINE_COMPILER_OPTIONS = _engine_compiler_options()


class engine_jit:  # lower case: a decorator, like jax.jit
    """``jax.jit(fun, **kwargs)`` with the engine's compiler options (``ENGINE_COMPILER_OPTIONS``).

    XLA takes compiler options for a top-level computation only, so a call traced inside
    another transformation (a user's ``jit`` or ``grad`` around ``run``) goes to the same
    function jitted without them (XLA's default vector width: the same numbers up to
    float32 rounding), and so does every call on another backend than the CPU.
    """

    def __init__(self, fun: Callable[..., Any], **kwargs: Any) -> None:
        functools.update_wrapper(self, fun)
        self._plain = jax.jit(fun, **kwargs)
        self._top = jax.jit(fun, compiler_options=ENGINE_COMPILER_OPTIONS, **kwargs)

    def _version(self, args: Any, kwargs: Any) -> Any:
        traced = any(isinstance(x, jax.core.Tracer) for x in jax.tree.leaves((args, kwargs)))
        plain = traced or jax.default_backend() != "cpu"  # the options are CPU options
        return self._plain if plain else self._top

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._version(args, kwargs)(*args, **kwargs)

    def lower(self, *args: Any, **kwargs: Any) -> Any:
        """``jax.jit(...).lower`` of the version a call with these arguments runs. ``.compile()`` on it compiles
        ahead of time, and that call then reuses the compilation: JAX neither traces nor compiles it again (the
        segmented driver times its compile phase this way)."""
        return self._version(args, kwargs).lower(*args, **kwargs)

    def _cache_size(self) -> int:
        """Compiled entries of both versions (tests check that a new grid does not recompile)."""
        return self._top._cache_size() + self._plain._cache_size()


def split_step_key(key: PRNGKey, t: jax.Array, num: int = 3) -> jax.Array:
    """Per-step keys: ``split(fold_in(key, t), num)``; reproducible and chunk-free.

    The same keys as ``jax.random``, with the hash written out (``jaxpriv._rng``):
    on a CPU this avoids a nested loop per call inside the engine's scan.
    """
    from jaxpriv import _rng

    return _rng.split(_rng.fold_in(key, t), num)


def _declared_horizon(component: Any) -> int | None:
    """The ``"horizon"`` a component's ``Spec.static`` records (an integer), or ``None``."""
    spec = getattr(component, "spec", None)
    if not isinstance(spec, Spec):
        return None
    for pair in spec.static if isinstance(spec.static, tuple) else ():
        if isinstance(pair, tuple) and len(pair) == 2 and pair[0] == "horizon":
            value = pair[1]
            if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
                return int(value)
    return None


def check_horizon(horizon: int, component: Any, what: str, label: str = "horizon") -> None:
    """Raise ``ValueError`` when ``horizon`` exceeds the horizon ``component`` declares.

    ``what`` names the component in the message (``"learner"``, ``"mechanism"``, ...);
    ``label`` names the requested length (``"horizon"``, ``"stream length"``).
    """
    built = getattr(component, "horizon", None)
    declared = _declared_horizon(component)
    if getattr(getattr(component, "spec", None), "anytime", False) and built is None:
        declared = None  # an anytime component: its recorded horizon was only validated
    if declared is not None and (built is None or declared < built):
        built = declared  # the spec's record cannot be bypassed by a component rebuilt with horizon=None
    if built is not None and horizon > built:
        raise ValueError(
            f"{label} {horizon} exceeds the {what}'s horizon {built}: it was built for T={built} "
            f"steps and would silently give wrong numbers past it; build it with horizon >= {horizon}"
        )


def poison_past_horizon(x: jax.Array, t: jax.Array, horizon: int | None) -> jax.Array:
    """``x`` where ``1 <= t <= horizon``, NaN elsewhere (a release past the horizon is never plausible).

    The engine refuses a run longer than a component's horizon before compiling;
    this is the compiled-code guard for a component stepped by hand. An integer
    ``x`` (an arm index) becomes ``-1`` instead, which every bandit environment
    of jaxpriv answers with a NaN reward and regret.
    """
    if horizon is None:
        return x
    x = jnp.asarray(x)
    inside = (jnp.asarray(t) >= 1) & (jnp.asarray(t) <= horizon)
    fill = -1 if jnp.issubdtype(x.dtype, jnp.integer) else jnp.nan
    return jnp.where(inside, x, jnp.asarray(fill, x.dtype))


def nan_unless_valid_arm(values: Any, action: jax.Array, num_arms: int) -> Any:
    """``values`` (a pytree of floats) when ``0 <= action < num_arms``, NaN otherwise.

    JAX clamps out-of-range indices, so an invalid arm would otherwise read a
    plausible reward; the bandit environments use this to answer NaN instead.
    """
    valid = (jnp.asarray(action) >= 0) & (jnp.asarray(action) < num_arms)
    return jax.tree.map(lambda v: jnp.where(valid, v, jnp.nan), values)


def zero_nonfinite(x: jax.Array) -> tuple[jax.Array, jax.Array]:
    """The non-finite rule of jaxpriv's private mechanisms: ``(x or 0, 1 if x had a non-finite entry)``.

    A private mechanism replaces an input that has any NaN or ±inf entry by the
    zero vector (the whole input, not only the bad entries) before clipping.
    Zero lies inside every sensitivity bound, so the privacy guarantee holds
    unchanged (the replaced input is just another admissible input), and the
    releases at later steps are those of the same stream with that input set
    to zero. A mechanism returns the step's count from ``step`` (``Mechanism.returns_count``), a
    learner in its step's Info (``NonfiniteInfo``); the engine reports the total in
    ``Result.nonfinite_inputs``.
    """
    bad = ~jnp.all(jnp.isfinite(x))
    return jnp.where(bad, jnp.zeros_like(x), x), bad.astype(jnp.int32)


def nonfinite_field(state: Any) -> jax.Array:
    """``state.nonfinite`` as int32: the ``NonfiniteFn`` of a component whose state keeps its counter in that field.

    The older form (deprecated): no component of jaxpriv keeps a counter in its state any more; kept for
    a user's component written that way (``Mechanism(..., nonfinite=nonfinite_field)``).
    """
    return jnp.asarray(state.nonfinite, jnp.int32)


def nonfinite_inputs(component: Any, state: Any) -> jax.Array:
    """The inputs ``component`` replaced by zero, read from its ``state`` (int32): the older contract's count.

    Its declared ``nonfinite(state)`` (deprecated), summed to a scalar (the same number for one run's
    state or for a batch of them). A component that declares none (``nonfinite=None``: every
    component of jaxpriv, which report the count per step instead, and one built by hand)
    reports 0: its state is not searched, whatever its fields are named.
    """
    if component.nonfinite is None:
        return jnp.zeros((), jnp.int32)
    return jnp.sum(jnp.asarray(component.nonfinite(state), jnp.int32), dtype=jnp.int32)


def _seed_key(seed: int) -> jax.Array:
    """The key of an integer seed ``0 <= seed < 2**64``, the same whether or not x64 is enabled.

    Below ``2**32`` it is ``jax.random.key(seed)`` (the numbers every earlier version gave).
    From ``2**32`` on, JAX without x64 keeps only the low 32 bits (``2**32`` would give seed 0's
    numbers); here the high 32 bits go into the key's first word, which is what
    ``jax.random.key(seed)`` does under x64 with the default ``threefry2x32`` implementation.
    With another key implementation the high word is folded in: ``fold_in(key(low), high)``.
    """
    low, high = seed & 0xFFFFFFFF, seed >> 32
    key = jax.random.key(low)
    if high == 0:
        return key
    impl = jax.random.key_impl(key)
    if str(impl) == "threefry2x32":
        return jax.random.wrap_key_data(jnp.asarray(np.array([high, low], np.uint32)), impl=impl)
    return jax.random.fold_in(key, np.uint32(high))


def as_key(key: Any) -> jax.Array:
    """A PRNG key from ``key``: a JAX key is returned as is; an integer seed ``n`` becomes ``jax.random.key(n)``.

    Integer seeds (Python, NumPy or 0-d JAX integers) must lie in ``[0, 2**64)``, and every bit
    counts: ``2**32`` and ``0`` are different seeds (seeds below ``2**32`` give the numbers of
    ``jax.random.key(n)``; see ``_seed_key``). Legacy ``uint32[2]`` keys pass through. A negative
    or too large seed, a ``bool``, a float, a string or an array of seeds raises ``ValueError``.
    """
    expected = "a jax.random.key(...) or an integer seed in [0, 2**64)"
    if isinstance(key, (bool, np.bool_)):
        raise ValueError(f"key must be {expected}, got the bool {key!r}")
    if isinstance(key, (jax.Array, np.ndarray)):
        if jnp.issubdtype(key.dtype, jax.dtypes.prng_key):
            if key.ndim != 0:
                raise ValueError(f"key must be a single key, got a key array of shape {key.shape}")
            return key
        if key.dtype == jnp.uint32 and key.shape == (2,):  # a legacy jax.random.PRNGKey
            return key
        if key.ndim == 0 and jnp.issubdtype(key.dtype, jnp.integer):
            key = int(key)
    if isinstance(key, (int, np.integer)):
        seed = int(key)
        if not 0 <= seed < 2**64:
            raise ValueError(f"key must be {expected}, got the integer {seed}")
        return _seed_key(seed)
    raise ValueError(
        f"key must be {expected}, got {type(key).__name__}"
        + (f" of shape {key.shape}, dtype {key.dtype}" if hasattr(key, "shape") else f" {key!r}")
    )


def spec_of(component: Any) -> Spec:
    """``component.spec`` (a ``Learner``, ``Mechanism`` or ``Env``), or ``Spec("")`` for one built without a spec.

    The empty spec declares nothing: no params class (any is taken), ``private=None``, no static
    arguments, no number of arms, scalar grid leaves.
    """
    spec = component.spec
    return Spec("") if spec is None else spec


#: The ``Spec.ndims`` each declared factory built, by ``(name, static)``: recorded by the declaration
#: (``jaxpriv.declare``), so that a spec edited afterwards (``spec._replace(ndims=())``) cannot make a
#: vector param a grid axis (``check_spec``). What ``declare.rebuild(spec).spec.ndims`` gives, for every
#: component, those with a constraint set among their arguments included.
_BUILT_NDIMS: dict[tuple[str, Any], tuple[tuple[str, int], ...]] = {}


def record_built_ndims(spec: Spec) -> None:
    """Record ``spec.ndims`` as what its declared factory builds for ``spec.static`` (``jaxpriv.declare``)."""
    try:
        _BUILT_NDIMS[(spec.name, spec.static)] = spec.ndims
    except TypeError:  # an unhashable static argument: nothing to compare later
        pass


def _is_int(value: Any, low: int) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)) and value >= low


def _is_pairs(value: Any, second: Callable[[Any], bool]) -> bool:
    return isinstance(value, tuple) and all(
        isinstance(p, tuple) and len(p) == 2 and isinstance(p[0], str) and second(p[1]) for p in value
    )


def check_spec(component: Any, what: str) -> None:
    """The fields of ``component.spec`` have their types, and a declared one's ``ndims`` is what it built.

    One ``ValueError`` naming the component and the field, before anything is traced (``run``,
    ``sweep``, ``rollout``, ``tune`` and ``testing`` call it first): a ``Spec`` is a plain NamedTuple,
    so a wrong type would otherwise surface as a raw error deep in the engine, or (``ndims``) silently
    reinterpret a vector param as a grid axis. A component without a spec (``None``) is not checked.
    """
    spec = getattr(component, "spec", None)
    if spec is None:
        return
    if not isinstance(spec, Spec):
        raise ValueError(f"the {what}'s spec must be a jaxpriv.Spec or None, got {type(spec).__name__}")
    label = f"the {what}'s spec ({spec.name!r})" if isinstance(spec.name, str) and spec.name else f"the {what}'s spec"
    checks = (
        ("name", isinstance(spec.name, str), "a str"),
        ("params", spec.params is None or isinstance(spec.params, type), "a params class or None"),
        ("private", spec.private is None or isinstance(spec.private, bool), "True, False or None"),
        ("static", _is_pairs(spec.static, lambda v: True), "a tuple of (name, value) pairs"),
        ("num_arms", spec.num_arms is None or _is_int(spec.num_arms, 1), "an int >= 1 or None"),
        (
            "action_shape",
            spec.action_shape is None
            or (isinstance(spec.action_shape, tuple) and all(_is_int(n, 0) for n in spec.action_shape)),
            "a tuple of ints >= 0 or None",
        ),
        ("ndims", _is_pairs(spec.ndims, lambda r: _is_int(r, 0)), "a tuple of (field, rank) pairs, rank an int >= 0"),
        ("anytime", isinstance(spec.anytime, bool), "True or False"),
    )
    for field, ok, expected in checks:
        if not ok:
            raise ValueError(f"{label}: {field} must be {expected}, got {getattr(spec, field)!r}")
    try:
        built = _BUILT_NDIMS.get((spec.name, spec.static))
    except TypeError:
        built = None
    if built is not None and dict(built) != dict(spec.ndims):
        raise ValueError(
            f"{label}: ndims={spec.ndims!r}, but its declared factory built ndims={built!r} for these "
            "arguments: an edited ndims would read a param's own axes as grid axes (or the reverse); "
            "build the component again instead of editing its spec"
        )


def check_params_class(component: Any, value: Any, what: str, field: str) -> None:
    """``value`` is an instance of exactly the params class ``component``'s spec names (``Spec.params``), if any.

    Any other class is refused with a ``ValueError`` naming both, a subclass or a class with the
    same fields included: a component's params class says which algorithm runs. A component
    without a spec, or whose spec names no class, takes any params (nothing is checked).
    """
    spec = spec_of(component)
    expected = spec.params
    if expected is None or type(value) is expected:
        return
    got = type(value)
    how = "a subclass of it" if isinstance(value, expected) else "another class"
    if how == "another class" and getattr(got, "_fields", None) == getattr(expected, "_fields", ()):
        how = "another class with the same fields"
    raise ValueError(
        f"{field} is {got.__name__}, but the {what} ({spec.name}) takes "
        f"{expected.__name__}: pass "
        f"{expected.__module__}.{expected.__name__}(...) ({got.__module__}.{got.__qualname__} is {how}; every "
        "params class but the component's own is refused, even where its fields fit)"
    )
