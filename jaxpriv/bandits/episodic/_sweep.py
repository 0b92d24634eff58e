"""``simulate_episodes``: run a learner by its own exact episode-level simulator (``Spec.fast_path``).

The driver (``episode_sweep``) and the policy check (``check_policy``) live in
``jaxpriv.bandits._fast_path``, below the policies whose modules hold the simulators; they are
re-exported here. An episode run returns the engine's ``jaxpriv.Result`` (no ``loss`` or ``best``:
it draws each episode's reward sum, not the rounds' losses; ``episodes`` and ``pulls`` instead);
``EpisodeResult`` is kept as another name of ``Result`` for existing code.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from jaxpriv._base import Learner, PRNGKey, spec_of
from jaxpriv.bandits._fast_path import check_policy, episode_sweep
from jaxpriv.sim import Result

__all__ = ["EpisodeResult", "check_policy", "episode_sweep", "simulate_episodes"]

#: Deprecated: an episode run returns a ``jaxpriv.Result`` (``episodes`` and ``pulls`` set, ``loss`` and
#: ``best`` ``None``); this name is kept for existing code.
EpisodeResult = Result


def factory_of(params: Any, factories: Mapping[type, Callable[..., Learner]], note: str = "") -> Callable[..., Learner]:
    """The factory of the algorithm ``params``'s class names: exactly one of ``factories``' classes, never a subclass.

    Raises:
      ValueError: ``params`` is of none of them (``note`` is added to the message).
    """
    factory = factories.get(type(params))
    if factory is None:
        names = [c.__name__ for c in factories]
        kind = type(params)
        raise ValueError(
            f"params must be {', '.join(names[:-1])} or {names[-1]} (exactly: the class names the algorithm "
            f"simulated{note}), got {kind.__module__}.{kind.__qualname__}"
        )
    return factory


def simulate_episodes(
    learner: Learner,
    params: Any,
    env_params: Any,
    key: PRNGKey,
    horizon: int,
    seeds: int = 100,
    checkpoints: Any = "log",
    **options: Any,
) -> Result:
    """Run ``learner`` by its own exact episode-level simulator (its ``spec.fast_path``).

    The policy's factory puts the simulator of its algorithm in its spec, bound to the factory's
    static options (index, noise family, phase rule, clipping, ...): the learner, not its params
    class, says what is simulated. AdaC-UCB, AdaP-UCB, AdaP-KLUCB and episodic UCB run episode by
    episode on a Bernoulli bandit, AdaC-GOPE, AdaC-GOPE-Var and GOPE phase by phase on a linear
    bandit, DP-SE epoch by epoch, Anytime-Lazy-UCB release by release and leader change by leader
    change; the step-level policy stays the reference. ``jaxpriv.sweep(learner, env, SimParams(params,
    env_params), key, horizon, seeds, checkpoints, simulator="episodes")`` runs the same simulator with
    the same keys, and saves and resumes it (``save=``).

    Args:
      learner: a policy with an exact episode simulator (``adac_ucb(K)``, ``adac_gope_var(K, d, T)``, ...).
      params: the learner's params (exactly its class; a leaf with a leading grid axis is swept).
      env_params: the instance: ``[K]`` means or ``BernoulliParams`` (UCB family, DP-SE, Anytime-Lazy-UCB),
        ``LinearBanditParams`` (GOPE family).
      key: the base key; seed ``i`` uses ``split(key, seeds)[i]`` at every grid point.
      horizon: ``T`` (at most the learner's horizon).
      seeds: the number of runs.
      checkpoints: ``None``, ``"log"`` or a sequence of steps; ``T`` is always included.
      **options: the simulator's per-call options: ``chunk``, a reward-sum hook with ``private``;
        for the GOPE family ``instance`` and ``exact_pulls`` (see the simulators).

    Returns:
      A ``Result`` with leading axes ``[G, seeds]`` (or ``[seeds]``): ``regret``, ``episodes`` (the
      episodes, phases, epochs or releases started at or before each checkpoint), ``pulls`` (each arm's
      pulls at ``T``) and ``private``; ``loss`` and ``best`` are ``None``.

    Raises:
      ValueError: the learner has no episode simulator, or the simulator's refusals (another params
        class, a horizon past the learner's, a finite budget with a hook and ``private=True``, ...).
    """
    fast_path = spec_of(learner).fast_path
    if fast_path is None:
        name = spec_of(learner).name or "this learner"
        raise ValueError(
            f"{name} has no exact episode simulator (its spec's fast_path is None): "
            "run it step by step with jaxpriv.sweep"
        )
    return fast_path(learner, params, env_params, key, horizon, seeds, checkpoints, **options)
