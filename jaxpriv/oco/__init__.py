"""Full-information (and bandit-feedback) online convex optimisation learners."""

from jaxpriv.oco.ftal import FTALParams, FTALState, ftal
from jaxpriv.oco.ogd import OGDParams, OGDState, ogd
from jaxpriv.oco.pftal import PFTALParams, PFTALState, pftal

__all__ = [
    "FTALParams",
    "FTALState",
    "OGDParams",
    "OGDState",
    "PFTALParams",
    "PFTALState",
    "ftal",
    "ogd",
    "pftal",
]
