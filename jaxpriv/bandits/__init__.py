"""Stochastic, linear and contextual bandit policies (private and non-private).

The Section VII reproductions are the shipped study files ``zcdp_bandits_finite``, ``zcdp_bandits_linear`` and
``zcdp_bandits_contextual`` (``jaxpriv sweep NAME``, ``jaxpriv.experiments.study.run_study``): the library never
imports the experiment layer.
"""

from jaxpriv.bandits import design
from jaxpriv.bandits._episodic_ucb import EpisodicUCBState
from jaxpriv.bandits._gope_core import GOPEState
from jaxpriv.bandits._oful_core import OFULState
from jaxpriv.bandits.adac_gope import AdaCGOPEParams, adac_gope
from jaxpriv.bandits.adac_gope_var import adac_gope_var
from jaxpriv.bandits.adac_oful import AdaCOFULParams, adac_oful, oful_radius, privacy_radius
from jaxpriv.bandits.adac_ucb import (
    AdaCUCBParams,
    adac_ucb,
    adac_ucb_index,
    adac_ucb_noise_stddev,
    adac_ucb_regret_bound,
)
from jaxpriv.bandits.adap_klucb import AdaPKLUCBParams, adap_klucb, adap_klucb_index, adap_lower_bound
from jaxpriv.bandits.adap_ucb import AdaPUCBParams, adap_noise_scale, adap_ucb, adap_ucb_index, adap_ucb_regret_bound
from jaxpriv.bandits.anytime_lazy_ucb import (
    AnytimeLazyUCBParams,
    anytime_lazy_ucb,
    anytime_lazy_ucb_index,
    anytime_lazy_ucb_regret_bound,
)
from jaxpriv.bandits.design import Design, g_optimal_design
from jaxpriv.bandits.dp_se import DPSEParams, DPSEState, dp_se, dp_se_regret_bound
from jaxpriv.bandits.dp_ts import (
    DPTSParams,
    DPTSState,
    LazyDPTSParams,
    LazyState,
    dp_ts,
    dp_ts_posterior,
    dp_ts_shift,
    lazy_dp_ts,
    lazy_dp_ts_posterior,
    lazy_dp_ts_sample,
)
from jaxpriv.bandits.dp_ucb import DPUCBParams, DPUCBState, dp_ucb, dp_ucb_bonus, dp_ucb_index, dp_ucb_regret_bound
from jaxpriv.bandits.episodic import (
    EpisodeResult,
    episode_sweep,
    simulate_dp_se_epochs,
    simulate_episodes,
    simulate_gope_phases,
    simulate_ucb_episodes,
)
from jaxpriv.bandits.gope import GOPEParams, gope
from jaxpriv.bandits.hanna_gope import HannaGOPEParams, hanna_gope
from jaxpriv.bandits.ldp_ucb import LDPUCBParams, LDPUCBState, ldp_ucb, ldp_ucb_bonus, ldp_ucb_regret_bound
from jaxpriv.bandits.li_zhou_ji_gope import LiZhouJiGOPEParams, li_zhou_ji_gope
from jaxpriv.bandits.linpriv import LinPrivParams, LinPrivState, linpriv, linpriv_noise_radius
from jaxpriv.bandits.oful import RSOFULParams, rs_oful
from jaxpriv.bandits.private_linucb import (
    PrivateLinUCBParams,
    PrivateLinUCBState,
    PrivateLinUCBWishartParams,
    private_linucb,
    private_linucb_radius,
    private_linucb_regularizer,
)
from jaxpriv.bandits.ucb import UCBParams, ucb, ucb_index

__all__ = [
    "AdaCGOPEParams",
    "AdaCOFULParams",
    "AdaCUCBParams",
    "AdaPKLUCBParams",
    "AdaPUCBParams",
    "AnytimeLazyUCBParams",
    "DPSEParams",
    "DPSEState",
    "DPTSParams",
    "DPTSState",
    "DPUCBParams",
    "DPUCBState",
    "Design",
    "EpisodeResult",
    "EpisodicUCBState",
    "GOPEParams",
    "GOPEState",
    "HannaGOPEParams",
    "LDPUCBParams",
    "LDPUCBState",
    "LazyDPTSParams",
    "LazyState",
    "LiZhouJiGOPEParams",
    "LinPrivParams",
    "LinPrivState",
    "OFULState",
    "PrivateLinUCBParams",
    "PrivateLinUCBState",
    "PrivateLinUCBWishartParams",
    "RSOFULParams",
    "UCBParams",
    "adac_gope",
    "adac_gope_var",
    "adac_oful",
    "adac_ucb",
    "adac_ucb_index",
    "adac_ucb_noise_stddev",
    "adac_ucb_regret_bound",
    "adap_klucb",
    "adap_klucb_index",
    "adap_lower_bound",
    "adap_noise_scale",
    "adap_ucb",
    "adap_ucb_index",
    "adap_ucb_regret_bound",
    "anytime_lazy_ucb",
    "anytime_lazy_ucb_index",
    "anytime_lazy_ucb_regret_bound",
    "design",
    "dp_se",
    "dp_se_regret_bound",
    "dp_ts",
    "dp_ts_posterior",
    "dp_ts_shift",
    "dp_ucb",
    "dp_ucb_bonus",
    "dp_ucb_index",
    "dp_ucb_regret_bound",
    "episode_sweep",
    "g_optimal_design",
    "gope",
    "hanna_gope",
    "lazy_dp_ts",
    "lazy_dp_ts_posterior",
    "lazy_dp_ts_sample",
    "ldp_ucb",
    "ldp_ucb_bonus",
    "ldp_ucb_regret_bound",
    "li_zhou_ji_gope",
    "linpriv",
    "linpriv_noise_radius",
    "oful_radius",
    "privacy_radius",
    "private_linucb",
    "private_linucb_radius",
    "private_linucb_regularizer",
    "rs_oful",
    "simulate_dp_se_epochs",
    "simulate_episodes",
    "simulate_gope_phases",
    "simulate_ucb_episodes",
    "ucb",
    "ucb_index",
]
