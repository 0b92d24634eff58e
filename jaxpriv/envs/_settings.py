"""The small environments the learners' examples run on (``declare.learner(..., example=...)``).

``jaxpriv.testing`` re-exports them (``from jaxpriv.testing import setting``, for a user's example); the built-in
learners import them from here (``envs`` is below ``oco`` and ``bandits``, ``testing`` above them).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from jaxpriv import sets
from jaxpriv.envs.bandit_feedback import bandit_feedback
from jaxpriv.envs.bandits import BernoulliParams, bernoulli_bandit
from jaxpriv.envs.experts import ExpertsParams, experts_stream
from jaxpriv.envs.linear_bandits import (
    ContextualBanditParams,
    LinearBanditParams,
    contextual_linear_bandit,
    linear_bandit,
)
from jaxpriv.envs.quadratic import QuadraticParams, quadratic_stream
from jaxpriv.envs.regression import RegressionParams, regression_stream

__all__ = ["SETTINGS", "Setting", "setting"]


class Setting(NamedTuple):
    """An environment a learner's example runs on (``setting``): the environment, its params, and what a learner
    built for it takes (the constraint set of a stream, the action vectors of a linear bandit)."""

    env: Any
    params: Any
    constraint: Any = None
    actions: Any = None


#: The settings ``setting`` builds, by kind.
SETTINGS = ("ball", "bandit_feedback", "simplex", "experts", "regression", "bernoulli", "linear", "contextual")


def setting(kind: str, dim: int) -> Setting:
    """One of the small environments the learners' examples run on (``declare.learner(..., example=...)``).

    ``"ball"``: a quadratic stream on the unit L2 ball of ``R^dim`` (centre 0.1, ``H = 1``, drift 0.3);
    ``"bandit_feedback"``: its bandit-feedback version; ``"simplex"``: the quadratic stream on the simplex
    (centre its barycentre); ``"experts"``: the experts stream over ``dim`` experts; ``"regression"``: online
    linear regression on the unit ball (``w* = 0.1``); ``"bernoulli"``: ``dim`` arms, means 0.8 … 0.2;
    ``"linear"``: a linear bandit of ``dim`` unit actions in ``R^3`` (normal draws of ``default_rng(0)``,
    ``θ = (0.6, 0.8, 0)``); ``"contextual"``: a contextual linear bandit of ``dim`` actions in ``R^3``.

    Raises:
      ValueError: an unknown ``kind``.
    """
    d = k = dim
    if kind in ("ball", "bandit_feedback", "regression"):
        ball = sets.l2_ball(d)
        if kind == "regression":
            return Setting(regression_stream(ball), RegressionParams(np.full(d, 0.1, np.float32)), ball)
        quad = quadratic_stream(ball)
        env = quad if kind == "ball" else bandit_feedback(quad)
        return Setting(env, QuadraticParams(1.0, np.full(d, 0.1, np.float32), 0.3), ball)
    if kind == "simplex":
        simplex = sets.simplex(d)
        env_params = QuadraticParams(1.0, np.full(d, 1.0 / d, np.float32), 0.3)
        return Setting(quadratic_stream(simplex), env_params, simplex)
    if kind == "experts":
        return Setting(experts_stream(d), ExpertsParams())
    if kind == "bernoulli":
        return Setting(bernoulli_bandit(k), BernoulliParams(np.linspace(0.8, 0.2, k, dtype=np.float32)))
    if kind == "linear":
        actions = np.random.default_rng(0).normal(size=(k, 3)).astype(np.float32)
        actions /= np.linalg.norm(actions, axis=1, keepdims=True)
        theta = np.array([0.6, 0.8, 0.0], np.float32)
        return Setting(linear_bandit(k, 3), LinearBanditParams(actions, theta, 1.0), actions=actions)
    if kind == "contextual":
        env_params = ContextualBanditParams(theta=np.array([0.6, 0.8, 0.0], np.float32))
        return Setting(contextual_linear_bandit(k, 3), env_params)
    raise ValueError(f"kind must be one of {SETTINGS}, got {kind!r}")
