"""The driver of the episode-level simulators: a per-seed simulator over seeds and a params grid.

Each algorithm family (``ucb``: AdaC-UCB / UCB; ``gope``: AdaC-GOPE / GOPE) provides a
per-seed simulator ``one(key, params)``; ``episode_sweep`` runs it for every seed and
grid point in one compiled call, with ``jaxpriv.sweep``'s grid semantics, seed keys,
chunking and device sharding (the engine's public pieces: ``grid_axes``,
``canonical_params``, ``padded_seed_keys``, ``map_seeds_and_grid``, ``take_seeds``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax

from jaxpriv import _validate
from jaxpriv._base import PRNGKey, as_key, declared_params, engine_jit
from jaxpriv.sim import SimParams, canonical_params, grid_axes, map_seeds_and_grid, padded_seed_keys, take_seeds

__all__ = ["EpisodeResult", "check_policy", "episode_sweep"]


class EpisodeResult(NamedTuple):
    """Regret and episode counts at checkpoints, from an episode-level simulation.

    Attributes:
      steps: ``[m]`` int32, the checkpoint steps ``t`` (the last is ``T``).
      regret: ``[..., m]`` float32, the cumulative pseudo-regret ``Σ_a Δ_a N_a(t)``.
      episodes: ``[..., m]`` int32, the episodes ``ℓ`` started at or before ``t``
        (after the initial pulls / phases, as the step-level state counts them).
      pulls: ``[..., K]`` int32, the pulls ``N_a(T)`` of each arm.
      private: whether the simulated policy's privacy guarantee holds for these numbers
        (``jaxpriv.Result.private``): ``False`` for a non-private policy and for a configuration
        run with ``private=False`` (an opt-out of the guarantee: unclipped rewards, an ablation,
        a ``reward_sum`` hook).

    Leading axes are ``[grid, seeds]`` for a sweep over a grid, ``[seeds]`` otherwise.
    """

    steps: jax.Array
    regret: jax.Array
    episodes: jax.Array
    pulls: jax.Array
    private: bool | None = None


def check_policy(params: Any, policy: Any, simulates: str) -> None:
    """The step-level ``policy`` an episode simulation stands in for takes exactly ``params``'s class.

    The simulators pick the algorithm from the params class; a policy that declares another
    (``jaxpriv._base.declared_params``) is another algorithm, and a step-vs-episode comparison
    would compare two algorithms: ``ValueError`` naming both.
    """
    expected = declared_params(policy) if policy is not None else None
    if expected is None or type(params) is expected:
        return
    raise ValueError(
        f"params is {type(params).__name__}, so these episodes simulate {simulates}, but the policy they stand in "
        f"for takes {expected.__name__}: pass {expected.__name__}(...) (the policy's algorithm) or the policy of "
        f"{type(params).__name__}"
    )


_sweep_jit = engine_jit(map_seeds_and_grid, static_argnums=(0, 1, 2))


def episode_sweep(
    one: Callable[[PRNGKey, SimParams], Any],
    params: SimParams,
    key: PRNGKey,
    seeds: int,
    chunk: int | None = None,
) -> Any:
    """Run a per-seed episode-level simulator over seeds and a params grid, in one compiled call.

    Grid semantics are ``jaxpriv.sweep``'s: a params leaf with one extra
    leading dimension (``NDIMS``-aware) is swept, swept leaves are zipped, and
    seed ``i`` uses ``split(key, seeds)[i]`` at every grid point (common random
    numbers). ``one`` must be a stable (cached) function object, or every call
    recompiles. With several devices the seeds are split over them, padded to a
    multiple of their number (the padding's runs are dropped), as in ``sweep``.

    Args:
      one: ``(key, params) -> pytree`` for one seed at one grid point.
      params: ``SimParams``; validated by the caller.
      key: the base key.
      seeds: the number of runs.
      chunk: run the seeds in batches of this size (bounded memory).

    Returns:
      ``one``'s pytree with leading axes ``[G, seeds]`` (or ``[seeds]``).
    """
    seeds = _validate.positive_int("seeds", seeds)
    if chunk is not None:
        chunk = _validate.positive_int("chunk", chunk)
    axes, size = grid_axes(params, allow_grid=True)
    keys = padded_seed_keys(as_key(key), seeds)
    out = _sweep_jit(one, axes if size else None, chunk, keys, canonical_params(params))
    return take_seeds(out, seeds, bool(size))
