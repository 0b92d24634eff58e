"""Environments: loss streams and bandit instances."""

from jaxpriv.envs.quadratic import QuadraticParams, QuadraticState, QuadraticStats, quadratic_stream

__all__ = ["QuadraticParams", "QuadraticState", "QuadraticStats", "quadratic_stream"]
