"""The comparator contract's closed-form case: ``(best, gap = 0)``, with ``Env(..., exact=True)``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from jaxpriv._base import ComparatorFn


def exact_comparator(best_fn: Callable[[Any, Any, jax.Array], jax.Array]) -> ComparatorFn:
    """A closed-form comparator as the engine takes it: ``(state, stats_sum, t) -> (best, 0)``.

    Every comparator returns ``(best, gap)`` (``jaxpriv._base.ComparatorFn``). A closed form has
    no solver error, so its gap is a float32 zero; the environment built with it says so with
    ``Env(..., comparator=exact_comparator(best_fn), exact=True)``: the engine then reports
    ``Result.gap = None`` instead of an array of zeros.

    Args:
      best_fn: ``(state, stats_sum, t) -> best``, the exact best fixed loss in hindsight (or,
        for a ``relative`` environment, the exact best relative loss).

    Returns:
      The comparator (pass ``exact=True`` to the ``Env`` that takes it).

    Examples:
      >>> import jax.numpy as jnp
      >>> comparator = exact_comparator(lambda state, total, t: jnp.min(total))
      >>> best, gap = comparator(None, jnp.array([3.0, 1.0]), jnp.int32(4))
      >>> float(best), float(gap)
      (1.0, 0.0)
    """

    def comparator(state: Any, stats_sum: Any, t: jax.Array) -> tuple[jax.Array, jax.Array]:
        return best_fn(state, stats_sum, t), jnp.zeros((), jnp.float32)

    return comparator
