"""Stochastic, linear and contextual bandit policies (private and non-private)."""

from jaxpriv.bandits import experiment
from jaxpriv.bandits._episodic_ucb import EpisodicUCBState
from jaxpriv.bandits.adac_ucb import (
    AdaCUCBParams,
    adac_ucb,
    adac_ucb_index,
    adac_ucb_noise_stddev,
    adac_ucb_regret_bound,
)
from jaxpriv.bandits.episodic import EpisodeResult, episode_sweep, simulate_ucb_episodes
from jaxpriv.bandits.experiment import reproduce
from jaxpriv.bandits.ucb import UCBParams, ucb, ucb_index

__all__ = [
    "AdaCUCBParams",
    "EpisodeResult",
    "EpisodicUCBState",
    "UCBParams",
    "adac_ucb",
    "adac_ucb_index",
    "adac_ucb_noise_stddev",
    "adac_ucb_regret_bound",
    "episode_sweep",
    "experiment",
    "reproduce",
    "simulate_ucb_episodes",
    "ucb",
    "ucb_index",
]
