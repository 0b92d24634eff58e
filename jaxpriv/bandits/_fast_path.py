"""A bandit policy's exact episode-level simulator, as its factory puts it in ``Spec.fast_path``.

The factory knows which simulator runs its algorithm and with which static options (the index,
the noise family, the phase rule, ...); ``FastPath`` binds them, so that
``jaxpriv.bandits.episodic.simulate_episodes(learner, ...)`` runs the learner's own simulator
without looking at its params class. The simulators live in ``jaxpriv.bandits.episodic``, which
imports the factories: they are imported when a fast path is called, not here.
"""

from __future__ import annotations

import importlib
from typing import Any, NamedTuple

__all__ = ["FastPath"]


class FastPath(NamedTuple):
    """``jaxpriv.bandits.episodic.<module>.simulate`` bound to a factory's static options.

    Attributes:
      module: the simulator's module in ``jaxpriv.bandits.episodic`` (``"ucb"``, ``"gope"``, ``"dp_se"``, ``"lazy"``).
      options: ``(name, value)`` pairs of the factory's static options the simulator needs
        (hashable: a fast path compares and hashes by value, as a ``Spec`` field should).

    Called as ``fast_path(learner, params, env_params, key, horizon, seeds, checkpoints, **run_options)``,
    with ``learner`` the policy whose spec holds it (its ``check``, horizon, arms and privacy claim
    are the simulation's); ``run_options`` are the simulator's per-call options (``chunk``, a
    reward-sum hook, ``private``, ...).
    """

    module: str
    options: tuple[tuple[str, Any], ...] = ()

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
        simulate = importlib.import_module(f"jaxpriv.bandits.episodic.{self.module}").simulate
        return simulate(
            learner, params, env_params, key, horizon, seeds, checkpoints, **dict(self.options), **run_options
        )
