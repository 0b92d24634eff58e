"""Full-information (and bandit-feedback) online convex optimisation learners."""

from jaxpriv.oco import one_point
from jaxpriv.oco._shared import dyadic_prefix_sum
from jaxpriv.oco.bandit_ftal import BanditFTALParams, BanditFTALState, bandit_ftal
from jaxpriv.oco.dnpr_experts import DNPRExpertsParams, DNPRExpertsState, dnpr_experts, dnpr_perturbation_range
from jaxpriv.oco.dp_ftrl import DPFTRLParams, DPFTRLState, dp_ftrl, dp_ftrl_regret_bound, dp_ftrl_regularization
from jaxpriv.oco.fkm import FKMParams, FKMState, fkm
from jaxpriv.oco.ftal import FTALParams, FTALState, ftal
from jaxpriv.oco.mi_bandit_ogd import MIBanditOGDParams, MIBanditOGDState, mi_bandit_ogd
from jaxpriv.oco.mi_ogd import MIOGDParams, MIOGDState, mi_ogd
from jaxpriv.oco.ogd import OGDParams, OGDState, ogd
from jaxpriv.oco.online_frank_wolfe import GarberHazanParams, OFWParams, OFWState, garber_hazan, online_frank_wolfe
from jaxpriv.oco.pftal import PFTALParams, PFTALState, pftal
from jaxpriv.oco.pocp import POCPParams, POCPState, pocp
from jaxpriv.oco.pqftl import PQFTLParams, PQFTLState, pqftl, pqftl_node_stddev, pqftl_shift
from jaxpriv.oco.private_bandit_ftal import PrivateBanditFTALParams, private_bandit_ftal
from jaxpriv.oco.private_experts import PrivateExpertsParams, private_experts
from jaxpriv.oco.regularized_pftal import RegularizedPFTALParams, regularized_pftal
from jaxpriv.oco.wdp_cocol import WDPCOCOLState, wdp_cocol
from jaxpriv.oco.wdp_cocop import WDPCOCOPState, WDPParams, wdp_cocop

__all__ = [
    "BanditFTALParams",
    "BanditFTALState",
    "DNPRExpertsParams",
    "DNPRExpertsState",
    "DPFTRLParams",
    "DPFTRLState",
    "FKMParams",
    "FKMState",
    "FTALParams",
    "FTALState",
    "GarberHazanParams",
    "MIBanditOGDParams",
    "MIBanditOGDState",
    "MIOGDParams",
    "MIOGDState",
    "OFWParams",
    "OFWState",
    "OGDParams",
    "OGDState",
    "PFTALParams",
    "PFTALState",
    "POCPParams",
    "POCPState",
    "PQFTLParams",
    "PQFTLState",
    "PrivateBanditFTALParams",
    "PrivateExpertsParams",
    "RegularizedPFTALParams",
    "WDPCOCOLState",
    "WDPCOCOPState",
    "WDPParams",
    "bandit_ftal",
    "dnpr_experts",
    "dnpr_perturbation_range",
    "dp_ftrl",
    "dp_ftrl_regret_bound",
    "dp_ftrl_regularization",
    "dyadic_prefix_sum",
    "fkm",
    "ftal",
    "garber_hazan",
    "mi_bandit_ogd",
    "mi_ogd",
    "ogd",
    "one_point",
    "online_frank_wolfe",
    "pftal",
    "pocp",
    "pqftl",
    "pqftl_node_stddev",
    "pqftl_shift",
    "private_bandit_ftal",
    "private_experts",
    "regularized_pftal",
    "wdp_cocol",
    "wdp_cocop",
]
