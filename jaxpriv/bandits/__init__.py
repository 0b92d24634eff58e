"""Stochastic, linear and contextual bandit policies (private and non-private).

The Section VII reproductions moved to ``jaxpriv.experiments.zcdp_bandits`` (``reproduce``) and
``jaxpriv.experiments.zcdp_bandits_linear`` (``run_setting``): the library never imports the experiment
layer. The old names ``jaxpriv.bandits.reproduce``, ``.experiment`` and ``.experiment_linear`` still
resolve, lazily, on first access.
"""

from typing import Any

from jaxpriv.bandits import design
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
from jaxpriv.bandits.episodic import EpisodeResult, episode_sweep, simulate_gope_phases, simulate_ucb_episodes
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
    "g_optimal_design",
    "gope",
    "oful_radius",
    "privacy_radius",
    "rs_oful",
    "simulate_gope_phases",
    "simulate_ucb_episodes",
    "ucb",
    "ucb_index",
]

_MOVED = {
    "reproduce": ("jaxpriv.experiments.zcdp_bandits", "reproduce"),
    "experiment": ("jaxpriv.experiments.zcdp_bandits", None),
    "experiment_linear": ("jaxpriv.experiments.zcdp_bandits_linear", None),
}


def __getattr__(name: str) -> Any:
    """The reproductions' old names, resolved lazily (they live in ``jaxpriv.experiments`` now)."""
    if name in _MOVED:
        import importlib

        module_name, attr = _MOVED[name]
        module = importlib.import_module(module_name)
        return module if attr is None else getattr(module, attr)
    raise AttributeError(f"module 'jaxpriv.bandits' has no attribute {name!r}")
