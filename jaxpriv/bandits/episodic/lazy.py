"""Anytime-Lazy-UCB's exact event-level simulator: re-exported from its policy's module.

The simulator is ``jaxpriv.bandits.anytime_lazy_ucb.simulate`` (the policy's ``Spec.fast_path``; see that
module), run by ``jaxpriv.sweep(learner, env, params, ..., simulator="episodes")`` or
``jaxpriv.bandits.simulate_episodes(anytime_lazy_ucb(K), ...)``.
"""

from jaxpriv.bandits.anytime_lazy_ucb import HOOK, max_events, simulate

__all__ = ["HOOK", "max_events", "simulate"]
