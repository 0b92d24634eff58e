"""Learning with experts: linear losses ``f_t(w) = <c_t, w>`` over the simplex, ``c_t ∈ {0,1}^p``."""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from jaxpriv import _validate, declare
from jaxpriv._base import Env, EnvInfo, PRNGKey, Spec
from jaxpriv.envs._comparator import exact_comparator
from jaxpriv.sets import ConstraintSet, simplex

PATTERNS = ("iid", "alternating")


class ExpertsParams(NamedTuple):
    """Params of the experts stream.

    Attributes:
      means: ``[p]`` (or a scalar, broadcast), for ``pattern="iid"``: the
        probability that each expert's cost is 1; values in ``[0, 1]``.
    """

    means: ArrayLike = 0.5


class ExpertsState(NamedTuple):
    means: jax.Array  # shape=[p]


def linear_best(constraint: ConstraintSet, total: jax.Array) -> jax.Array:
    """``min_{w∈C} <S, w>`` for the summed cost vector ``S``: the set's linear oracle (a vertex)."""
    return jnp.sum(total * constraint.linear_oracle(total))


@declare.env("experts_stream", params=ExpertsParams)
def experts_stream(num_experts: int, pattern: str = "iid") -> Env:
    """Learning with experts (Smith & Thakurta 2013, Table 1, first row): ``f_t(w) = <c_t, w>`` on ``Δ_p``.

    The cost vectors are binary, ``c_t ∈ {0, 1}^p``, and oblivious (they do not
    depend on the learner: common random numbers across learners and privacy levels):

    * ``"iid"``: ``c_{t,i} ~ Bernoulli(means_i)`` independently; with all means
      equal, every learner's expected regret grows like ``sqrt(T log p)``
      (the best expert in hindsight is the minimum of ``p`` random walks).
    * ``"alternating"``: an oblivious adversarial pattern, fixed in advance:
      expert 0 costs 1 at even steps, expert 1 at odd steps, every other expert
      costs 1 always. The best fixed expert pays ``floor(T/2)``; follow-the-leader
      pays about ``T``.

    Means outside ``[0, 1]`` are rejected by ``check``. The losses are
    ``sqrt(p)``-Lipschitz in L2 (``||c_t||_2 <= sqrt(p)``), with values in ``[0, 1]``
    on the simplex. The feedback is the full cost vector ``c_t`` (the gradient).

    The comparator is exact: ``min_{w∈Δ} <sum_s c_s, w> = min_i sum_s c_{s,i}``
    via the simplex's linear oracle (the best vertex, i.e. the best expert).

    Args:
      num_experts: ``p >= 1``.
      pattern: ``"iid"`` or ``"alternating"``.

    Returns:
      An ``Env`` with params ``ExpertsParams``; play points of ``simplex(p)``.
    """
    p = _validate.positive_int("num_experts", num_experts)
    pattern = _validate.choice("pattern", pattern, PATTERNS)
    constraint = simplex(p)

    def check(params: ExpertsParams) -> None:
        _validate.in_closed_interval("means", params.means, 0.0, 1.0)
        if jnp.ndim(params.means) >= 1:
            _validate.trailing_shape("means", params.means, (p,))

    def reset_fn(key: PRNGKey, params: ExpertsParams) -> ExpertsState:
        del key
        return ExpertsState(jnp.clip(jnp.broadcast_to(jnp.asarray(params.means, jnp.float32), (p,)), 0.0, 1.0))

    def step_fn(key: PRNGKey, state: ExpertsState, action: jax.Array, t: jax.Array):
        w = jnp.asarray(action, jnp.float32)
        if pattern == "iid":
            c = jax.random.bernoulli(key, state.means).astype(jnp.float32)
        else:
            odd = (jnp.asarray(t, jnp.int32) % 2).astype(jnp.float32)
            c = jnp.ones((p,), jnp.float32).at[0].set(1.0 - odd)
            if p > 1:
                c = c.at[1].set(odd)
        info = EnvInfo(loss=jnp.sum(c * w), regret=jnp.zeros((), jnp.float32), stats=c)
        return state, c, info

    def best_expert(state: ExpertsState, stats: jax.Array, t: jax.Array) -> jax.Array:
        del state, t
        return linear_best(constraint, stats)

    spec = Spec(
        action_shape=(p,),
        ndims=(("means", 1),),
    )
    return Env(reset_fn, step_fn, exact_comparator(best_expert), check, exact=True, spec=spec)
