"""Environments: loss streams and bandit instances."""

from jaxpriv.envs._comparator import exact_comparator
from jaxpriv.envs.adaptive import AdaptiveParams, AdaptiveState, adaptive_quadratic
from jaxpriv.envs.bandit_feedback import bandit_feedback
from jaxpriv.envs.bandits import PAPER_MEANS, BernoulliParams, BernoulliState, bernoulli_bandit
from jaxpriv.envs.classification import (
    ClassificationParams,
    ClassificationState,
    classification_stream,
    load_breast_cancer_features,
)
from jaxpriv.envs.experts import ExpertsParams, ExpertsState, experts_stream
from jaxpriv.envs.linear_bandits import (
    ContextualBanditParams,
    ContextualBanditState,
    ContextualFeedback,
    LinearBanditParams,
    LinearBanditState,
    contextual_linear_bandit,
    linear_bandit,
    sample_linear_instance,
)
from jaxpriv.envs.quadratic import QuadraticParams, QuadraticState, QuadraticStats, quadratic_stream
from jaxpriv.envs.regression import (
    RegressionFeedback,
    RegressionParams,
    RegressionState,
    RegressionStats,
    ball_least_squares,
    regression_stream,
)

__all__ = [
    "PAPER_MEANS",
    "AdaptiveParams",
    "AdaptiveState",
    "BernoulliParams",
    "BernoulliState",
    "ClassificationParams",
    "ClassificationState",
    "ContextualBanditParams",
    "ContextualBanditState",
    "ContextualFeedback",
    "ExpertsParams",
    "ExpertsState",
    "LinearBanditParams",
    "LinearBanditState",
    "QuadraticParams",
    "QuadraticState",
    "QuadraticStats",
    "RegressionFeedback",
    "RegressionParams",
    "RegressionState",
    "RegressionStats",
    "adaptive_quadratic",
    "ball_least_squares",
    "bandit_feedback",
    "bernoulli_bandit",
    "classification_stream",
    "contextual_linear_bandit",
    "exact_comparator",
    "experts_stream",
    "linear_bandit",
    "load_breast_cancer_features",
    "quadratic_stream",
    "regression_stream",
    "sample_linear_instance",
]
