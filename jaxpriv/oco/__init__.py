"""Full-information (and bandit-feedback) online convex optimisation learners."""

from jaxpriv.oco.ftal import FTALParams, FTALState, dyadic_prefix_sum, ftal
from jaxpriv.oco.mi_ogd import MIOGDParams, MIOGDState, mi_ogd
from jaxpriv.oco.ogd import OGDParams, OGDState, ogd
from jaxpriv.oco.pftal import PFTALParams, PFTALState, pftal
from jaxpriv.oco.private_experts import PrivateExpertsParams, private_experts
from jaxpriv.oco.regularized_pftal import RegularizedPFTALParams, regularized_pftal

__all__ = [
    "FTALParams",
    "FTALState",
    "MIOGDParams",
    "MIOGDState",
    "OGDParams",
    "OGDState",
    "PFTALParams",
    "PFTALState",
    "PrivateExpertsParams",
    "RegularizedPFTALParams",
    "dyadic_prefix_sum",
    "ftal",
    "mi_ogd",
    "ogd",
    "pftal",
    "private_experts",
    "regularized_pftal",
]
