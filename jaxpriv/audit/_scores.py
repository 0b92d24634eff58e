"""Outputs to scores: the binary tree's path-node likelihood ratio and the held-out Fisher statistic.

A score is large when a run "looks like B"; ``_bounds`` turns two samples of scores into a lower bound.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from jaxpriv.mechanisms._noise import NoiseFamily, noise_family


def path_nodes(releases: np.ndarray, position: int, depth: int, horizon: int) -> np.ndarray:
    """The noisy tree nodes that contain the input at ``position``, from the releases ``[..., T, d]``.

    The node of level ``i`` holding ``position`` closes at ``t_c = (⌊(p-1)/2^i⌋ + 1) 2^i``. A release
    ``v_t`` sums the nodes at the set bits of ``t``, so only left children (even ``⌊(p-1)/2^i⌋``) and
    roots are ever released; such a node equals ``v_{t_c} - v_{t_c - 2^i}`` (``v_0 = 0``). Right
    children (never released: the canary's loss there is nil) and nodes closing after the horizon
    are skipped. Returns ``[..., levels, d]``.
    """
    nodes = []
    for i in range(depth):  # a host loop over the D levels
        close = (((position - 1) >> i) + 1) << i
        if close > horizon:
            break
        if ((position - 1) >> i) & 1:  # a right child: never part of a release
            continue
        prev = close - (1 << i)
        node = releases[..., close - 1, :] - (releases[..., prev - 1, :] if prev >= 1 else 0.0)
        nodes.append(node)
    return np.stack(nodes, axis=-2)


def node_scores(nodes: np.ndarray, noise: NoiseFamily | str, low: float, high: float) -> np.ndarray:
    """The log-likelihood ratio (up to a factor) of B (canary ``high·e_1``) vs A (``low·e_1``), summed over nodes.

    Gaussian: ``Σ_i y_i1`` (exact LR). Laplace, and Gamma-norm in one dimension:
    ``Σ_i clip(y_i1, low, high)`` (exact LR: ``|y - low| - |y - high|`` is that clip up to a
    constant). Gamma-norm in ``d > 1``: ``Σ_i ||y_i - low e_1|| - ||y_i - high e_1||`` (exact).
    """
    s = noise_family(noise).score(np.asarray(nodes, np.float64), low, high)  # the family's own likelihood ratio
    return np.round(s / (high - low), 9)  # exact atoms (clip) stay exact; float noise is not a threshold


def heldout_fisher_scores(features: Any) -> np.ndarray:
    """Scores from a linear statistic learned on a held-out half of the runs (Fisher's discriminant).

    ``features`` is ``[2, runs, k]`` (side A, side B). The first ``runs // 2`` runs of each side
    estimate the mean difference ``m = mean_B - mean_A`` and the pooled within-side covariance
    ``Σ``; the direction ``w = (Σ + λI)⁻¹ m`` (``λ`` a 1e-9 relative ridge, for features that
    never vary, e.g. a saturated projection) scores the other runs, ``s = <w, x>``. For
    releases ``y = μ_side + Gaussian noise`` with a common covariance, ``<w, y>`` is the exact
    log-likelihood-ratio statistic up to the estimation error of ``w``; for any other noise it is
    a valid, weaker statistic. The direction depends on the held-out runs only, so the evaluated
    runs stay independent of it and the confidence of the bound stays honest.

    Returns ``[2, runs - runs // 2]`` float64 scores (larger means "B").

    Raises:
      ValueError: fewer than 4 runs per side, or non-finite features.
    """
    x = np.asarray(features, np.float64)
    if x.ndim != 3 or x.shape[0] != 2 or x.shape[1] < 4:
        raise ValueError(f"features must be [2, runs >= 4, k] (half of the runs learn the statistic), got {x.shape}")
    if not np.all(np.isfinite(x)):
        raise ValueError("features must be finite")
    half = x.shape[1] // 2
    train, test = x[:, :half], x[:, half:]
    means = train.mean(axis=1)
    centred = (train - means[:, None]).reshape(-1, x.shape[2])
    cov = centred.T @ centred / max(centred.shape[0] - 2, 1)
    ridge = 1e-9 * max(float(np.trace(cov)) / x.shape[2], 1e-30)
    w = np.linalg.solve(cov + ridge * np.eye(x.shape[2]), means[1] - means[0])
    return test @ w
