"""The driver of the episode-level simulators: a per-seed simulator over seeds and a params grid.

Each algorithm family (``ucb``: AdaC-UCB / UCB; ``gope``: AdaC-GOPE / GOPE) provides a
per-seed simulator ``one(key, params)``; ``episode_sweep`` runs it for every seed and
grid point in one compiled call, batched by the engine's one primitive (``jaxpriv.sim.map_seeds``,
as ``sweep`` batches its runs), with ``jaxpriv.sweep``'s grid semantics, seed keys,
chunking and device sharding (``grid_axes``, ``canonical_params``, ``padded_seed_keys``,
``take_seeds``).

The results stay ``EpisodeResult``, not the engine's ``Result``: an episode simulation draws each
episode's reward sum, not the rounds' losses, so it has no cumulative loss or comparator (``Result``'s
``loss`` and ``best``) to report, and it reports what ``Result`` has no field for (the episodes started
and each arm's pulls).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax

from jaxpriv import _validate
from jaxpriv._base import Learner, PRNGKey, as_key, engine_jit, spec_of
from jaxpriv.sim import SimParams, canonical_params, grid_axes, map_seeds, padded_seed_keys, take_seeds

__all__ = ["EpisodeResult", "check_policy", "episode_sweep", "simulate_episodes"]


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


def _algorithm(component: Any) -> tuple[type | None, str | None]:
    """``(params class, factory name)`` of a learner's spec (``None`` where it says nothing)."""
    spec = spec_of(component)
    return spec.params, spec.name or None


def check_policy(learner: Any, policy: Any, simulates: str) -> None:
    """The step-level ``policy`` an episode simulation stands in for is the simulated ``learner``'s algorithm.

    A policy of another factory or params class is another algorithm, and a step-vs-episode
    comparison would compare two algorithms: ``ValueError`` naming both.
    """
    if policy is None:
        return
    (want_class, want_name), (got_class, got_name) = _algorithm(learner), _algorithm(policy)
    if got_class is not None and want_class is not None and got_class is not want_class:
        raise ValueError(
            f"these episodes simulate {simulates}, which takes {want_class.__name__}, but the policy they stand in "
            f"for takes {got_class.__name__}: pass {got_class.__name__}(...) (the policy's algorithm) or simulate "
            "the policy itself (bandits.episodic.simulate_episodes(policy, ...))"
        )
    if got_name is not None and want_name is not None and got_name != want_name:
        raise ValueError(
            f"these episodes simulate {simulates}, but the policy they stand in for is {got_name}: simulate the "
            f"policy itself (bandits.episodic.simulate_episodes(policy, ...))"
        )


def simulate_episodes(
    learner: Learner,
    params: Any,
    env_params: Any,
    key: PRNGKey,
    horizon: int,
    seeds: int = 100,
    checkpoints: Any = "log",
    **options: Any,
) -> EpisodeResult:
    """Run ``learner`` by its own exact episode-level simulator (its ``spec.fast_path``).

    The policy's factory puts the simulator of its algorithm in its spec, bound to the factory's
    static options (index, noise family, phase rule, clipping, ...): the learner, not its params
    class, says what is simulated. AdaC-UCB, AdaP-UCB, AdaP-KLUCB and episodic UCB run episode by
    episode on a Bernoulli bandit (``simulate_ucb_episodes``), AdaC-GOPE, AdaC-GOPE-Var and GOPE phase
    by phase on a linear bandit (``simulate_gope_phases``), DP-SE epoch by epoch
    (``simulate_dp_se_epochs``), Anytime-Lazy-UCB release by release and leader change by leader change
    (``jaxpriv.bandits.episodic.lazy``); the step-level policy stays the reference.

    Args:
      learner: a policy with an exact episode simulator (``adac_ucb(K)``, ``adac_gope_var(K, d, T)``, ...).
      params: the learner's params (exactly its class; a leaf with a leading grid axis is swept).
      env_params: the instance: ``[K]`` means or ``BernoulliParams`` (UCB family, DP-SE),
        ``LinearBanditParams`` (GOPE family).
      key: the base key; seed ``i`` uses ``split(key, seeds)[i]`` at every grid point.
      horizon: ``T`` (at most the learner's horizon).
      seeds: the number of runs.
      checkpoints: ``None``, ``"log"`` or a sequence of steps; ``T`` is always included.
      **options: the simulator's per-call options: ``chunk``, a reward-sum hook with ``private``;
        for the GOPE family ``instance`` and ``exact_pulls`` (see the simulators).

    Returns:
      An ``EpisodeResult`` with leading axes ``[G, seeds]`` (or ``[seeds]``).

    Raises:
      ValueError: the learner has no episode simulator, or the simulator's refusals (another params
        class, a horizon past the learner's, a finite budget with a hook and ``private=True``, ...).
    """
    fast_path = spec_of(learner).fast_path
    if fast_path is None:
        name = _algorithm(learner)[1] or "this learner"
        raise ValueError(
            f"{name} has no exact episode simulator (its spec's fast_path is None): "
            "run it step by step with jaxpriv.sweep"
        )
    return fast_path(learner, params, env_params, key, horizon, seeds, checkpoints, **options)


def _over_seeds(one: Callable[[PRNGKey, SimParams], Any], axes: Any, chunk: int | None, keys: jax.Array, params: Any):
    return map_seeds(one, keys, params, chunk, axes=axes)


_sweep_jit = engine_jit(_over_seeds, static_argnums=(0, 1, 2))


def episode_sweep(
    one: Callable[[PRNGKey, SimParams], Any],
    params: SimParams,
    key: PRNGKey,
    seeds: int,
    chunk: int | None = None,
    ndims: dict[str, Any] | None = None,
) -> Any:
    """Run a per-seed episode-level simulator over seeds and a params grid, in one compiled call.

    Grid semantics are ``jaxpriv.sweep``'s: a params leaf with one extra
    leading dimension (over its base rank: ``ndims``, ``jaxpriv.sim.spec_ndims(learner, env)``
    of the components the simulator stands for; scalars without it) is swept, swept leaves are zipped, and
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
    chunk = _validate.chunk(chunk)
    axes, size = grid_axes(params, allow_grid=True, ndims=ndims)
    keys = padded_seed_keys(as_key(key), seeds)
    out = _sweep_jit(one, axes if size else None, chunk, keys, canonical_params(params))
    return take_seeds(out, seeds, bool(size))
