"""The float32 samplers' bounded support, and what one tree node's noise leaks through it (host, float64).

``SAMPLER_SUPPORT`` and the per-node floors of ``_accounting.sampler_delta_floor`` (documented there): each
noise family carries its own node floor (``NoiseFamily.node_floor_log``), so this module sits below
``_noise``.
"""

from __future__ import annotations

import numpy as np
import scipy.special
from jax.typing import ArrayLike

# The float32 samplers' bounded support and the δ it implies (host, float64).
#
# jaxpriv._rng draws from 32-bit words: a unit exponential is -log(1 - u), 1 - u on the grid
# k·2^-23, its last cell refined by the word's 9 spare bits down to 2^-32; Laplace's magnitude
# the same with 8 spare bits (bit 0 is its sign) down to 2^-31; a normal is sqrt(2) erfinv(u),
# its two end cells refined by 9 bits to 1 ± u = 2^-33 and 3·2^-33. The largest values are the
# float32 numbers below (tests/mechanisms/test_sampler_tails.py feeds the extreme words to the
# transforms and finds exactly these). Before the refinement they were 15.942385 (exponential,
# Laplace) and [-5.419983, 5.220113] (normal).
SAMPLER_SUPPORT = {
    "exponential": (0.0, float(np.float32(32 * np.log(2.0)))),  # [0, 22.18071]
    "laplace": (-float(np.float32(31 * np.log(2.0))), float(np.float32(31 * np.log(2.0)))),  # ±21.487562
    "normal": (float(np.float32(-6.4439335)), float(np.float32(6.2751713))),  # Φ⁻¹(2^-34), Φ⁻¹(1 - 1.5·2^-33)
}


def _concave_envelope_at(y: np.ndarray, h: np.ndarray, x: float) -> float:
    """The least concave majorant of the points ``(y, h)`` (``y`` increasing, ``y[0] = 0``) at ``x``."""
    hull: list[int] = []
    for i in range(len(y)):
        while len(hull) >= 2:
            a, b = hull[-2], hull[-1]
            # drop b if it lies on or below the chord from a to i
            if (h[b] - h[a]) * (y[i] - y[a]) <= (h[i] - h[a]) * (y[b] - y[a]):
                hull.pop()
            else:
                break
        hull.append(i)
    return float(np.interp(x, y[hull], h[hull]))


def _gaussian_coordinate_floor(x: ArrayLike) -> np.ndarray:
    """Mass of a unit normal conditioned on ``[lo, hi]`` within ``x >= 0`` of its nearer end.

    ``max(P(N < lo + x), P(N > hi - x))``: the outputs that a neighbour whose noise is shifted by
    ``x`` along this coordinate (away from that end) cannot produce. In log space, no cancellation.
    """
    lo, hi = SAMPLER_SUPPORT["normal"]
    x = np.asarray(x, np.float64)
    z = 1.0 - scipy.special.ndtr(lo) - scipy.special.ndtr(-hi)

    def near(end: float, cap: float) -> np.ndarray:  # Φ(min(end + x, cap)) - Φ(end)
        a = np.minimum(end + x, cap)
        return scipy.special.ndtr(a) * -np.expm1(scipy.special.log_ndtr(end) - scipy.special.log_ndtr(a))

    mass = np.maximum(near(lo, hi), near(-hi, -lo)) / z  # P(N > hi - x) = Φ(x - hi) - Φ(-hi)
    return np.clip(np.where(x > 0, mass, 0.0), 0.0, 1.0)


def _laplace_node_floor(s: float, m: float) -> float:
    """``P(N < s - M)`` for a unit Laplace conditioned on ``[-M, M]`` (the mass a shift ``s`` uncovers)."""
    if s <= 0.0:
        return 0.0
    if s >= 2.0 * m:
        return 1.0
    x = s - m
    cdf = 0.5 * np.exp(x) if x <= 0 else 1.0 - 0.5 * np.exp(-x)
    below = 0.5 * np.exp(-m)
    return float(min(1.0, (cdf - below) / -np.expm1(-m)))


def _gamma_node_floor(s: float, d: int) -> float:
    """A Gamma-norm node's ``δ(s)`` bound: radial ``d e^-M (e^s - 1)`` + directional ``e^s (1 - Z_N^d)``, over P(A)."""
    if s <= 0.0:
        return 0.0
    m = SAMPLER_SUPPORT["exponential"][1]
    lo, hi = SAMPLER_SUPPORT["normal"]
    if d == 1:  # the direction is a fair sign: the Laplace formula with the exponential's end
        return _laplace_node_floor(s, m)
    log_zn = np.log1p(-(scipy.special.ndtr(lo) + scipy.special.ndtr(-hi)))
    log_ze = np.log1p(-np.exp(-m))
    log_pa = d * (log_zn + log_ze)
    radial = d * np.exp(-m) * np.expm1(s)
    directional = np.exp(s) * -np.expm1(d * log_zn)
    return float(min(1.0, (radial + directional) / np.exp(log_pa)))


def _gaussian_node_log_complement(s: float, d: int) -> float:
    """``log`` of one node's mass *inside* the neighbour's support, minimised over shifts ``||x||_2 <= s`` (a bound)."""
    if s <= 0.0:
        return 0.0
    lo, hi = SAMPLER_SUPPORT["normal"]
    width = hi - lo
    if s >= width:
        return -np.inf
    total = s * s
    # H(y) = -log(1 - g(sqrt(y))) on [0, s²], on a grid dense near 0 (where H is concave) and overall.
    y = np.unique(np.concatenate([[0.0], total * np.geomspace(1e-12, 1.0, 2000), total * np.linspace(0.0, 1.0, 2001)]))
    with np.errstate(divide="ignore"):
        h = -np.log1p(-_gaussian_coordinate_floor(np.sqrt(y)))
    # H increases: on (y_i, y_i+1] it is at most H(y_i+1), so the envelope of the points
    # (y_i, H(y_i+1)) bounds H's envelope from above (a certified bound, not a grid estimate).
    upper = np.append(h[1:], h[-1])
    return -d * _concave_envelope_at(y, upper, total / d)
