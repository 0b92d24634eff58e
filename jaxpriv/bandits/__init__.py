"""Stochastic, linear and contextual bandit policies (private and non-private).

Importing ``experiment_linear`` registers the ``"linear"`` and ``"contextual"`` settings of ``reproduce``.
"""

from jaxpriv.bandits import design, experiment, experiment_linear
from jaxpriv.bandits._episodic_ucb import EpisodicUCBState
from jaxpriv.bandits._gope_core import GOPEState
from jaxpriv.bandits._oful_core import OFULState
from jaxpriv.bandits.adac_gope import AdaCGOPEParams, adac_gope
from jaxpriv.bandits.adac_oful import AdaCOFULParams, adac_oful, oful_radius, privacy_radius
from jaxpriv.bandits.adac_ucb import (
    AdaCUCBParams,
    adac_ucb,
    adac_ucb_index,
    adac_ucb_noise_stddev,
    adac_ucb_regret_bound,
)
from jaxpriv.bandits.design import Design, g_optimal_design
from jaxpriv.bandits.episodic import EpisodeResult, episode_sweep, simulate_ucb_episodes
from jaxpriv.bandits.experiment import reproduce
from jaxpriv.bandits.fast_gope import simulate_gope_phases
from jaxpriv.bandits.gope import GOPEParams, gope
from jaxpriv.bandits.oful import RSOFULParams, rs_oful
from jaxpriv.bandits.ucb import UCBParams, ucb, ucb_index

__all__ = [
    "AdaCGOPEParams",
    "AdaCOFULParams",
    "AdaCUCBParams",
    "Design",
    "EpisodeResult",
    "EpisodicUCBState",
    "GOPEParams",
    "GOPEState",
    "OFULState",
    "RSOFULParams",
    "UCBParams",
    "adac_gope",
    "adac_oful",
    "adac_ucb",
    "adac_ucb_index",
    "adac_ucb_noise_stddev",
    "adac_ucb_regret_bound",
    "design",
    "episode_sweep",
    "experiment",
    "experiment_linear",
    "g_optimal_design",
    "gope",
    "oful_radius",
    "privacy_radius",
    "reproduce",
    "rs_oful",
    "simulate_gope_phases",
    "simulate_ucb_episodes",
    "ucb",
    "ucb_index",
]
