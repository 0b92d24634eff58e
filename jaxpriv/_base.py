"""The three protocols of jaxpriv and the helpers every component shares.

Every mechanism, learner and environment is a NamedTuple of pure functions over
an explicit state pytree (optax/blackjax style). The key always comes first;
the shared clock ``t`` (a 1-based int32 scalar that ``vmap`` does not batch)
always comes last.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

PRNGKey = jax.Array
Params = Any
State = Any


class Mechanism(NamedTuple):
    """A private mechanism: one-shot release or private prefix sums of a stream.

    Attributes:
      init: ``(key, params) -> state``; calibrates the noise once.
      step: ``(key, state, x, t) -> (state, release)``.
      check: optional ``params -> None``; raises ``ValueError`` on bad params.
        Called by the engine on concrete values, before anything is compiled.
    """

    init: Callable[..., State]
    step: Callable[..., tuple[State, jax.Array]]
    check: Callable[[Params], None] | None = None


class Learner(NamedTuple):
    """An online convex optimisation learner or a bandit policy.

    Attributes:
      init: ``(key, params) -> state``.
      act: ``(key, state, t) -> action``; the point ``w_t`` or the arm played at ``t``.
      update: ``(key, state, action, feedback, t) -> state``.
      check: optional ``params -> None`` validating params eagerly.
    """

    init: Callable[..., State]
    act: Callable[..., jax.Array]
    update: Callable[..., State]
    check: Callable[[Params], None] | None = None


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
      reset: ``(key, params) -> state``.
      step: ``(key, state, action, t) -> (state, feedback, EnvInfo)``; feedback
        is a gradient (full information) or a loss / reward (bandit feedback).
      comparator: optional ``(state, stats_sum, t) -> best`` (or ``(best, gap)``
        for a numerical solver with a certified suboptimality ``gap``): the
        exact ``min_{w in C} sum_{s<=t} f_s(w)`` of the best fixed point in
        hindsight on the realised losses, from the summed ``stats``; the
        engine's regret is then ``sum_s f_s(a_s) - best`` (eq. (1) of Smith &
        Thakurta). Without a comparator, regret is the running sum of
        ``EnvInfo.regret``.
      relative: when ``True``, ``EnvInfo.regret`` is ``f_t(a_t) - f_t(c)`` and the
        comparator returns ``min_w sum_s [f_s(w) - f_s(c)]`` for a fixed
        reference point ``c``; regret is ``sum_s EnvInfo.regret_s - best``.
        Same quantity, but no cancellation between two cumulative losses of
        order ``T``: float32 stays accurate over long horizons (``c`` near the
        optimum keeps every sum small).
      check: optional ``params -> None`` validating params eagerly.
    """

    reset: Callable[..., State]
    step: Callable[..., tuple[State, jax.Array, EnvInfo]]
    comparator: Callable[..., jax.Array] | None = None
    check: Callable[[Params], None] | None = None
    relative: bool = False


def split_step_key(key: PRNGKey, t: jax.Array, num: int = 3) -> jax.Array:
    """Per-step keys: ``split(fold_in(key, t), num)``; reproducible and chunk-free."""
    return jax.random.split(jax.random.fold_in(key, t), num)


def as_float(x: Any, dtype: Any = jnp.float32) -> jax.Array:
    """Pin a value to ``dtype`` at a component boundary (keeps float32 under x64)."""
    return jnp.asarray(x, dtype)
