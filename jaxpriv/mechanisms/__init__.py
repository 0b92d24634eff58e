"""Private mechanisms: the binary tree, noise samplers and accounting."""

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
from jaxpriv.mechanisms._mutual_information import mutual_information_to_stddev, stddev_to_mutual_information
from jaxpriv.mechanisms._noise import gamma_norm
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
from jaxpriv.mechanisms._window_tree import (
    GAUSSIAN_CALIBRATIONS,
    WINDOW_NOISE_FAMILIES,
    WindowTreeParams,
    WindowTreeState,
    window_depth,
    window_node_scale,
    window_node_variance,
    window_nodes,
    window_noise_bound,
    window_tree,
)

__all__ = [
    "NEIGHBOURING",
    "NOISE_FAMILIES",
    "DyadicSums",
    "TreeParams",
    "TreeState",
    "binary_tree",
    "clip_l1",
    "clip_l2",
    "dp_to_zcdp",
    "dyadic_init",
    "dyadic_step",
    "gamma_node_scale",
    "gamma_norm",
    "gaussian_node_stddev",
    "gaussian_stddev",
    "laplace_node_scale",
    "mutual_information_to_stddev",
    "node_variance",
    "prefix_sums",
    "stddev_to_mutual_information",
    "trailing_zeros",
    "tree_depth",
    "zcdp_to_dp",
    "GAUSSIAN_CALIBRATIONS",
    "WINDOW_NOISE_FAMILIES",
    "WindowTreeParams",
    "WindowTreeState",
    "window_depth",
    "window_node_scale",
    "window_node_variance",
    "window_nodes",
    "window_noise_bound",
    "window_tree",
]
