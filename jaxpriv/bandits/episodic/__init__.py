"""Exact episode- and phase-level simulators of the episodic bandit policies: one scan step per episode.

Where a policy's decisions change only at episode or phase boundaries, the whole episode is advanced
at once, its sufficient statistics drawn from their exact distribution. Each simulator lives in its
policy's own module and is held by the policy's spec (``Spec.fast_path``, a ``FastPath`` holding the
function): AdaC-UCB, AdaP-UCB, AdaP-KLUCB and episodic UCB (``_episodic_ucb.simulate``), AdaC-GOPE,
AdaC-GOPE-Var and GOPE (``_gope_core.simulate``), DP-SE (``dp_se.simulate``) and Anytime-Lazy-UCB
(``anytime_lazy_ucb.simulate``: one step per release or change of the leading arm). One entry point
runs them: ``jaxpriv.sweep(learner, env, params, ..., simulator="episodes")`` (which also saves and
resumes, ``save=``), or ``simulate_episodes(learner, params, env_params, ...)`` here, with the same
keys. Both return a ``jaxpriv.Result`` (``EpisodeResult`` is another name of it). The entry points
named by a params class (``simulate_ucb_episodes``, ``simulate_gope_phases``, ``simulate_dp_se_epochs``)
build the learner that class names and run it the same way; they are kept for existing code. The
simulators share their index, calibration and phase arithmetic with the step-level policies of
``jaxpriv.bandits``, which remain the reference.
"""

from jaxpriv.bandits.episodic._sweep import EpisodeResult, episode_sweep, simulate_episodes
from jaxpriv.bandits.episodic.dp_se import simulate_dp_se_epochs
from jaxpriv.bandits.episodic.gope import simulate_gope_phases
from jaxpriv.bandits.episodic.ucb import simulate_ucb_episodes

__all__ = [
    "EpisodeResult",
    "episode_sweep",
    "simulate_dp_se_epochs",
    "simulate_episodes",
    "simulate_gope_phases",
    "simulate_ucb_episodes",
]
