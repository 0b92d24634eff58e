"""Private mechanisms: prefix sums (tree, Honaker, square root, BLT), their variance oracle, noise, accounting."""

from jaxpriv.mechanisms._accounting import (
    dp_to_zcdp,
    gamma_node_scale,
    gaussian_node_stddev,
    gaussian_stddev,
    laplace_node_scale,
    node_variance,
    tree_depth,
    zcdp_to_dp,
)
from jaxpriv.mechanisms._dyadic import DyadicSums, dyadic_init, dyadic_step, trailing_zeros
from jaxpriv.mechanisms._honaker import HonakerState, honaker_tree, honaker_weights
from jaxpriv.mechanisms._mutual_information import (
    bandit_clip_bound,
    bandit_mutual_information_to_stddev,
    bandit_stddev_to_mutual_information,
    mutual_information_to_stddev,
    stddev_to_mutual_information,
)
from jaxpriv.mechanisms._noise import gamma_norm
from jaxpriv.mechanisms._sqrt_factorization import (
    SQRT_MAX_ELEMENTS,
    SqrtState,
    sqrt_coefficients,
    sqrt_factorization,
)
from jaxpriv.mechanisms._tree import (
    NEIGHBOURING,
    NOISE_FAMILIES,
    TreeParams,
    TreeState,
    binary_tree,
    clip_l1,
    clip_l2,
    prefix_sums,
)
from jaxpriv.mechanisms._variance import PrefixSumInfo, calibrated_sensitivity, describe, release_variance

__all__ = [
    "NEIGHBOURING",
    "NOISE_FAMILIES",
    "SQRT_MAX_ELEMENTS",
    "DyadicSums",
    "HonakerState",
    "PrefixSumInfo",
    "SqrtState",
    "TreeParams",
    "TreeState",
    "bandit_clip_bound",
    "bandit_mutual_information_to_stddev",
    "bandit_stddev_to_mutual_information",
    "binary_tree",
    "calibrated_sensitivity",
    "clip_l1",
    "clip_l2",
    "describe",
    "dp_to_zcdp",
    "dyadic_init",
    "dyadic_step",
    "gamma_node_scale",
    "gamma_norm",
    "gaussian_node_stddev",
    "gaussian_stddev",
    "honaker_tree",
    "honaker_weights",
    "laplace_node_scale",
    "mutual_information_to_stddev",
    "node_variance",
    "prefix_sums",
    "release_variance",
    "sqrt_coefficients",
    "sqrt_factorization",
    "stddev_to_mutual_information",
    "trailing_zeros",
    "tree_depth",
    "zcdp_to_dp",
]
