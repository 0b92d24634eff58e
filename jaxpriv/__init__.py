"""jaxpriv: differentially private online learning and private bandits, at scale, in JAX.

Mechanisms, learners and environments are NamedTuples of pure functions over
explicit state pytrees; ``run`` scans one experiment over the horizon and
``sweep`` vmaps it over seeds and a params grid in one compiled call.
"""

from jaxpriv import audit, bandits, declare, envs, mechanisms, oco, plot, sets, stats, theory, tidy, tune
from jaxpriv._base import Env, EnvInfo, Learner, Mechanism, NoInfo, NonfiniteInfo, PRNGKey, Spec, reductions
from jaxpriv.sim import Result, Rollout, SimParams, log_checkpoints, rollout, run, summarize, sweep, use_cpu_cores
from jaxpriv.stats import Stats, SweepStats
from jaxpriv.tidy import open_results

__version__ = "0.1.0"

__all__ = [
    "Env",
    "EnvInfo",
    "Learner",
    "Mechanism",
    "NoInfo",
    "NonfiniteInfo",
    "PRNGKey",
    "Result",
    "Rollout",
    "SimParams",
    "Spec",
    "Stats",
    "SweepStats",
    "__version__",
    "audit",
    "bandits",
    "declare",
    "envs",
    "log_checkpoints",
    "mechanisms",
    "oco",
    "open_results",
    "plot",
    "reductions",
    "rollout",
    "run",
    "sets",
    "stats",
    "summarize",
    "sweep",
    "theory",
    "tidy",
    "tune",
    "use_cpu_cores",
]
