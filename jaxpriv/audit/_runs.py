"""Running a component on two neighbouring inputs: the canaries and the compiled, vmapped batches of runs.

Every driver checks its runs and its canary here and gets ``[2, runs, ...]`` outputs (side A, side B)
from one compiled call: ``canary_releases`` for a prefix-sum mechanism, ``learner_batch`` for a learner.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxpriv import _rng
from jaxpriv._base import Learner, Mechanism, as_key, engine_jit, mechanism_step_count, update_with_info
from jaxpriv.mechanisms._variance import describe
from jaxpriv.sim import map_seeds


def check_runs(runs: int) -> int:
    """``runs`` as an int, or a ``ValueError`` naming it (an integer ``>= 2``)."""
    if int(runs) != runs or runs < 2:
        raise ValueError(f"runs must be an integer >= 2, got {runs!r}")
    return int(runs)


def declared(mechanism: Mechanism) -> Any:
    """``describe(mechanism)``, or a ``ValueError`` saying an audit needs a declared neighbouring relation."""
    try:
        return describe(mechanism)
    except ValueError as err:
        raise ValueError(f"cannot audit a component without a declared neighbouring relation: {err}") from None


def canary_ends(
    neighbouring: str, bound: float, canary: float | None, beyond_bound: bool = False
) -> tuple[float, float]:
    """The canary's two values, ``(0, c)`` (add/remove) or ``(-c, c)`` (replace); ``c = bound`` by default.

    A canary beyond the declared clipping bound needs ``beyond_bound=True``: the component
    clips every input to the bound, so its guarantee covers any input and a correct one
    shows the loss of a canary of exactly the bound; one that clips too loosely (or not
    at all) shows up to ``c / bound`` times the claim.
    """
    if canary is None:
        canary = bound
    canary = float(canary)
    if not (0 < canary <= bound * (1 + 1e-6) or (beyond_bound and canary > bound and math.isfinite(canary))):
        raise ValueError(
            f"canary must be in (0, {bound:g}] (the component's declared input bound), got {canary!r}; "
            "pass beyond_bound=True to audit the clipping with an input beyond the bound"
        )
    return (-canary, canary) if neighbouring == "replace" else (0.0, canary)


def canary_label(bound: float, high: float) -> str:
    """``", canary 2Δ"`` for a canary beyond the bound (the table's name), ``""`` otherwise."""
    return f", canary {high / bound:g}Δ" if high > bound * (1 + 1e-6) else ""


def _both_sides(one: Callable[[jax.Array, jax.Array], Any], tables: jax.Array, keys: jax.Array) -> Any:
    """``one(table, key)`` for side A's and side B's table, over that side's row of ``keys`` (``[2, runs]``).

    Each side's runs are batched by the engine's one primitive, ``jaxpriv.sim.map_seeds``.
    """
    return jax.vmap(lambda table, row: map_seeds(lambda k: one(table, k), row))(tables, keys)


@partial(engine_jit, static_argnums=(0, 4))
def _tree_batch(mechanism: Mechanism, params: Any, streams: jax.Array, keys: jax.Array, horizon: int) -> jax.Array:
    """Releases ``[2, runs, T, d]``: each stream of ``streams`` (``[2, T, d]``), once per key in its row of ``keys``."""

    def one(xs, key):
        k_init, k_steps = jax.random.split(key)
        state = mechanism.init(k_init, params)

        def body(state, t):
            state, release, _ = mechanism_step_count(mechanism, _rng.fold_in(k_steps, t), state, xs[t - 1], t)
            return state, release

        return jax.lax.scan(body, state, jnp.arange(1, horizon + 1, dtype=jnp.int32))[1]

    return _both_sides(one, streams, keys)


def _side_keys(key: Any, runs: int) -> jax.Array:
    """``2 × runs`` keys split from ``key`` (a PRNG key or an integer seed), ``[2, runs]``: side A's row, then B's."""
    return jax.random.split(as_key(key), 2 * runs).reshape(2, runs)


def _float32(params: Any) -> Any:
    """``params`` with every leaf a float32 array (the batches run in float32)."""
    return jax.tree.map(lambda v: jnp.asarray(v, jnp.float32), params)


def canary_releases(
    mechanism: Mechanism,
    params: Any,
    key: Any,
    runs: int,
    horizon: int,
    dim: int,
    position: int,
    low: float,
    high: float,
) -> np.ndarray:
    """Releases ``[2, runs, T, d]`` of ``mechanism`` on the two canary streams (``low`` / ``high`` at ``position``)."""
    streams = np.zeros((2, horizon, dim), np.float32)
    streams[0, position - 1, 0], streams[1, position - 1, 0] = low, high
    return np.asarray(_tree_batch(mechanism, _float32(params), jnp.asarray(streams), _side_keys(key, runs), horizon))


def _rollout(
    learner: Learner,
    params: Any,
    table: jax.Array,
    key: jax.Array,
    horizon: int,
    bandit: bool,
    queries: jax.Array | None,
    record: Callable[[jax.Array, Any], Any],
) -> tuple[Any, Any, jax.Array]:
    """One run of ``learner`` on a feedback table: ``(final state, records [T], the run's step key)``.

    The audits' one rollout (``_learner_batch`` records the actions, ``_state_batch`` a state field).
    Not the engine's ``jaxpriv.sim.rollout``: the feedback is a fixed table, not an environment's
    answer, the Interactive-DP adversary updates the learner with an arm it did not play (``queries``),
    which the engine's transition (the played action is the updated one) cannot express, and the
    audits keep their own keys (``split(key)`` into init and run keys, step ``t``'s act and update keys
    ``split(fold_in(k_run, t))``), so their numbers stay what they were. Full information: the feedback
    at ``t`` is ``table[t-1]`` (a gradient). Bandit: ``table[t-1, q_t]`` with ``q_t`` the arm the learner
    is updated with: ``queries[t-1]`` where it is ``>= 0``, else the recommendation ``a_t``.
    ``record(a_t, state after the update)`` is stacked over the steps.
    """
    k_init, k_run = jax.random.split(key)
    state = learner.init(k_init, params)

    def body(state, t):
        k_act, k_upd = _rng.split(_rng.fold_in(k_run, t))
        a = learner.act(k_act, state, t)
        pulled = a if queries is None else jnp.where(queries[t - 1] >= 0, queries[t - 1], a).astype(a.dtype)
        fb = table[t - 1, pulled] if bandit else table[t - 1]
        state, _ = update_with_info(learner, k_upd, state, pulled, fb, t)  # the Info is not what is audited
        return state, record(a, state)

    state, records = jax.lax.scan(body, state, jnp.arange(1, horizon + 1, dtype=jnp.int32))
    return state, records, k_run


def _record_action(action: jax.Array, state: Any) -> jax.Array:
    return action


@partial(engine_jit, static_argnums=(0, 4, 5))
def _learner_batch(
    learner: Learner,
    params: Any,
    tables: jax.Array,
    keys: jax.Array,
    horizon: int,
    bandit: bool,
    queries: jax.Array | None = None,
) -> jax.Array:
    """Actions ``[2, runs, T + 1, ...]`` of ``learner`` on two feedback tables (``[2, T, ...]``), by ``_rollout``.

    The last action is the one the learner would play at ``T + 1`` (full information only; bandits
    repeat ``a_T``). Bandit ``queries`` (int32 ``[T]``, optional): the Interactive-DP adversary's
    query arm ``q_t`` (``-1``: the recommended arm ``a_t``); the learner is updated with ``q_t`` and
    ``table[t-1, q_t]``, and the recommendations ``a_t`` (its view) are returned.
    """

    def one(table, key):
        state, actions, k_run = _rollout(learner, params, table, key, horizon, bandit, queries, _record_action)
        last = actions[-1] if bandit else learner.act(k_run, state, horizon + 1)
        return jnp.concatenate([actions, last[None]], axis=0)

    return _both_sides(one, tables, keys)


def learner_runs(
    learner: Learner,
    params: Any,
    key: Any,
    runs: int,
    tables: np.ndarray,
    *,
    bandit: bool = False,
    queries: jax.Array | None = None,
) -> np.ndarray:
    """Actions ``[2, runs, T + 1, ...]`` of ``learner`` on the two feedback tables ``[2, T, ...]`` (``_learner_batch``).

    Args:
      learner: the learner; ``params`` its params (run in float32).
      key: PRNG key or integer seed; side A's runs take the first ``runs`` keys split from it.
      runs: runs per side.
      tables: ``[2, T, ...]`` feedback, side A then side B.
      bandit: the feedback at ``t`` is ``table[t-1, a_t]`` (else ``table[t-1]``).
      queries: the Interactive-DP adversary's query arms (bandits only; see ``_learner_batch``).

    Returns:
      The actions, as a NumPy array.
    """
    tables = jnp.asarray(tables)
    batch = _learner_batch(learner, _float32(params), tables, _side_keys(key, runs), tables.shape[1], bandit, queries)
    return np.asarray(batch)


@partial(engine_jit, static_argnums=(0, 4, 5, 7, 8))
def _state_batch(
    learner: Learner,
    params: Any,
    tables: jax.Array,
    keys: jax.Array,
    horizon: int,
    bandit: bool,
    queries: jax.Array | None,
    field: str | Callable[[Any], Any],
    last: bool,
) -> jax.Array:
    """``getattr(state, field)`` (or ``field(state)``) after every update, ``[2, runs, T, ...]`` (``last``: after
    round ``T`` only).

    The same runs as ``_learner_batch`` (``_rollout``: same keys, same draws), recording a field of the
    state (or a function of it) instead of the actions.
    """

    def read(state):
        return field(state) if callable(field) else getattr(state, field)

    def record(action, state):
        return None if last else read(state)

    def one(table, key):
        state, trace, _ = _rollout(learner, params, table, key, horizon, bandit, queries, record)
        return read(state) if last else trace

    return _both_sides(one, tables, keys)


def learner_states(
    learner: Learner,
    params: Any,
    key: Any,
    runs: int,
    tables: np.ndarray,
    field: str | Callable[[Any], Any],
    *,
    bandit: bool = False,
    queries: jax.Array | None = None,
    last: bool = False,
) -> np.ndarray:
    """A field of the learner's state after every round, ``[2, runs, T, ...]`` (``last``: ``[2, runs, ...]``).

    For the components whose claim is about a released statistic kept in the state (a noisy mean, a
    private sum): the same runs as ``learner_runs``, recording ``getattr(state, field)`` after each update
    (``field`` a callable: ``field(state)``, any traceable function of the state).
    """
    tables = jnp.asarray(tables)
    batch = _state_batch(
        learner, _float32(params), tables, _side_keys(key, runs), tables.shape[1], bandit, queries, field, last
    )
    return np.asarray(batch)
