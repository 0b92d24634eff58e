"""Stochastic, linear and contextual bandit policies (private and non-private)."""

from jaxpriv.bandits._episodic_ucb import EpisodicUCBState
from jaxpriv.bandits.adac_ucb import (
    AdaCUCBParams,
    adac_ucb,
    adac_ucb_index,
    adac_ucb_noise_stddev,
    adac_ucb_regret_bound,
)
from jaxpriv.bandits.ucb import UCBParams, ucb, ucb_index

__all__ = [
    "AdaCUCBParams",
    "EpisodicUCBState",
    "UCBParams",
    "adac_ucb",
    "adac_ucb_index",
    "adac_ucb_noise_stddev",
    "adac_ucb_regret_bound",
    "ucb",
    "ucb_index",
]
