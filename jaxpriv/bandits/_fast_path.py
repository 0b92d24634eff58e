"""A bandit policy's exact episode-level simulator, as its factory puts it in ``Spec.fast_path``, and its driver.

The factory knows which simulator runs its algorithm and with which static options (the index,
the noise family, the phase rule, ...); ``FastPath`` holds the simulator itself (a function, the
kernel of the policy's own module: ``_episodic_ucb.simulate``, ``_gope_core.simulate``,
``dp_se.simulate``, ``anytime_lazy_ucb.simulate``) bound to those options, so that
``jaxpriv.sweep(learner, env, params, ..., simulator="episodes")`` runs the learner's own simulator
without looking at its params class. Imports point one way: a policy's module imports this one
(and its own kernel lives beside it), never the reverse.

``episode_sweep`` runs a kernel's per-seed simulator over seeds and a params grid, in one compiled
call batched by the engine's one primitive (``jaxpriv.sim.map_seeds``, as ``sweep`` batches its runs),
with ``jaxpriv.sweep``'s grid semantics, seed keys, chunking and device sharding.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, NamedTuple

import jax

from jaxpriv import _validate
from jaxpriv._base import PRNGKey, as_key, engine_jit, spec_of
from jaxpriv.sim import SimParams, canonical_params, grid_axes, map_seeds, padded_seed_keys, take_seeds

__all__ = ["RUN_OPTIONS", "FastPath", "check_policy", "episode_sweep"]

#: The per-call options a simulator takes from ``jaxpriv.sweep`` itself or a test (not from a study file).
RUN_OPTIONS = ("chunk", "reward_sum", "reward_sums", "private")


class FastPath(NamedTuple):
    """A policy's exact episode-level simulator bound to its factory's static options.

    Attributes:
      simulate: the kernel, ``simulate(learner, params, env_params, key, horizon, seeds, checkpoints,
        **options, **run_options) -> jaxpriv.Result`` (with ``episodes`` and ``pulls``); it runs
        every check of the simulation (the learner's ``check``, its horizon, arms and privacy claim).
      options: ``(name, value)`` pairs of the factory's static options the simulator needs
        (hashable: a fast path compares and hashes by value, as a ``Spec`` field should).
      envs: the environments (``Spec.name``) the simulator is exact for.

    Called as ``fast_path(learner, params, env_params, key, horizon, seeds, checkpoints, **run_options)``,
    with ``learner`` the policy whose spec holds it; ``run_options`` are the simulator's per-call
    options (``chunk``, a reward-sum hook, ``private``, ``instance``, ...).
    """

    simulate: Callable[..., Any]
    options: tuple[tuple[str, Any], ...] = ()
    envs: tuple[str, ...] = ("bernoulli_bandit",)

    def __call__(
        self,
        learner: Any,
        params: Any,
        env_params: Any,
        key: Any,
        horizon: int,
        seeds: int = 100,
        checkpoints: Any = "log",
        **run_options: Any,
    ) -> Any:
        return self.simulate(
            learner, params, env_params, key, horizon, seeds, checkpoints, **dict(self.options), **run_options
        )

    def file_options(self) -> list[str]:
        """The per-call options a study file may set (``simulator = { name = "episodes", ... }``), sorted:
        the simulator's keyword-only arguments, less the factory's bound ones and ``RUN_OPTIONS``."""
        bound = {name for name, _ in self.options}
        return sorted(
            name for name, p in inspect.signature(self.simulate).parameters.items()
            if p.kind is inspect.Parameter.KEYWORD_ONLY and name not in bound and name not in RUN_OPTIONS
        )  # fmt: skip


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
      ndims: the params' base ranks (``jaxpriv.sim.spec_ndims``).

    Returns:
      ``one``'s pytree with leading axes ``[G, seeds]`` (or ``[seeds]``).
    """
    seeds = _validate.positive_int("seeds", seeds)
    chunk = _validate.chunk(chunk)
    axes, size = grid_axes(params, allow_grid=True, ndims=ndims)
    keys = padded_seed_keys(as_key(key), seeds)
    out = _sweep_jit(one, axes if size else None, chunk, keys, canonical_params(params))
    return take_seeds(out, seeds, bool(size))
