"""Exact episode- and phase-level simulators of the episodic bandit policies: one scan step per episode.

Where a policy's decisions change only at episode or phase boundaries, the whole
episode is advanced at once, its sufficient statistics drawn from their exact
distribution: ``simulate_ucb_episodes`` (AdaC-UCB, AdaP-UCB, AdaP-KLUCB and episodic UCB,
``ucb``), ``simulate_gope_phases`` (AdaC-GOPE and GOPE, ``gope``; AdaC-GOPE-Var through its
learner) ``simulate_dp_se_epochs`` (DP-SE, ``dp_se``) and Anytime-Lazy-UCB's event simulator (``lazy``: one step
per release or change of the leading arm, through ``simulate_episodes`` only), all run over seeds and a params grid by
``episode_sweep``. Each policy's factory puts its simulator in its spec (``Spec.fast_path``):
``simulate_episodes(learner, params, env_params, ...)`` runs the learner's own, and the three
entry points above build the learner their params class names (one table each) and run it. They
share their index, calibration and phase arithmetic with the step-level policies of
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
