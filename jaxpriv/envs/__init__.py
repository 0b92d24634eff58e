"""Environments: loss streams and bandit instances."""

from jaxpriv.envs.bandits import PAPER_MEANS, BernoulliParams, BernoulliState, bernoulli_bandit
from jaxpriv.envs.quadratic import QuadraticParams, QuadraticState, QuadraticStats, quadratic_stream

__all__ = [
    "PAPER_MEANS",
    "BernoulliParams",
    "BernoulliState",
    "QuadraticParams",
    "QuadraticState",
    "QuadraticStats",
    "bernoulli_bandit",
    "quadratic_stream",
]
