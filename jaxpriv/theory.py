"""Regret bounds of the papers, evaluated for a run's constants (traceable ``jnp``)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from jaxpriv.mechanisms import _accounting


def _harmonic_bound(horizon: ArrayLike) -> jax.Array:
    """``sum_{t<=T} 1/t <= 1 + ln T``."""
    return 1.0 + jnp.log(jnp.asarray(horizon, jnp.float32))


def pftal_regret_bound(
    horizon: ArrayLike,
    dim: int,
    lipschitz: ArrayLike,
    strong_convexity: ArrayLike,
    radius: ArrayLike,
    node_variance: ArrayLike,
    depth: int,
) -> jax.Array:
    """Theorem 4 of Smith & Thakurta 2013 with the constants of its proof (Appendix B.2).

    With ``G = L + H||C||`` (the Lipschitz constant of the quadratic surrogates):

    * Fact 9 and Claim 10 give the noise-free part ``2 G² (1 + ln T) / H``
      (``sum_{t<=T} 1/t <= 1 + ln T``);
    * Lemma 8, eqs. (13)–(15), adds ``2 E||n|| G (1 + ln T) / H``, where ``n``
      is the tree noise of one release: at most ``D`` nodes, so
      ``E||n|| <= sqrt(E||n||²) <= sqrt(D d σ²_node)``.

    For Gamma-norm noise ``σ²_node = (d+1)(DG/ε)²`` and the second term is
    ``O(d G² D^{1.5} log T / (εH)) = O(d G² log^{2.5} T / (εH))``, the
    statement of Theorem 4. (The paper's Lemma 8 writes the constant 4 where
    its own eqs. (14)–(15) give 2·E||n||; we follow the derivation.)

    Args:
      horizon: ``T``.
      dim: ``d``.
      lipschitz: ``L``.
      strong_convexity: ``H``.
      radius: ``||C||_2``.
      node_variance: per-coordinate variance of one node's noise
        (``jaxpriv.mechanisms.node_variance``; 0 for no noise).
      depth: ``D`` of the tree.
    """
    t = jnp.asarray(horizon, jnp.float32)
    h = jnp.asarray(strong_convexity, jnp.float32)
    g = jnp.asarray(lipschitz, jnp.float32) + h * jnp.asarray(radius, jnp.float32)
    harmonic = _harmonic_bound(t)
    noise_norm = jnp.sqrt(depth * dim * jnp.asarray(node_variance, jnp.float32))
    return 2.0 * g * g * harmonic / h + 2.0 * noise_norm * g * harmonic / h


def pftal_gamma_regret_bound(
    horizon: int, dim: int, lipschitz: ArrayLike, strong_convexity: ArrayLike, radius: ArrayLike, epsilon: ArrayLike
) -> jax.Array:
    """``pftal_regret_bound`` for ``oco.pftal``'s Gamma-norm tree at privacy ε.

    The tree is calibrated to the replace-one sensitivity ``2L`` of the clipped
    gradients (see ``oco.pftal``): ``σ²_node = (d+1)(2DL/ε)²``.
    """
    depth = _accounting.tree_depth(horizon)
    var = _accounting.node_variance("gamma", epsilon, tree_sensitivity("gamma", dim, lipschitz), depth, dim)
    return pftal_regret_bound(horizon, dim, lipschitz, strong_convexity, radius, var, depth)


def tree_sensitivity(noise: str, dim: int, clip: ArrayLike) -> jax.Array:
    """The sensitivity PFTAL's tree is calibrated to for inputs clipped to L2 norm ``clip``.

    Replace-one neighbours: ``2·clip``; the Laplace family measures it in the
    L1 norm, ``2 sqrt(d) clip`` (see ``oco.pftal``).
    """
    factor = 2.0 * (dim**0.5 if noise == "laplace" else 1.0)
    return factor * jnp.asarray(clip, jnp.float32)


def ftal_regret_bound(
    horizon: ArrayLike, lipschitz: ArrayLike, strong_convexity: ArrayLike, radius: ArrayLike
) -> jax.Array:
    """Non-private FTAL: ``2 (L + H||C||)² (1 + ln T) / H``.

    Smith & Thakurta 2013, Fact 9 and Claim 10 (the noise-free part of the proof
    of Theorem 4): the forward regret of the quadratic surrogates, whose
    Lipschitz constant is ``L + H||C||``. Exact constants, no ``O(·)``.
    """
    return pftal_regret_bound(horizon, 1, lipschitz, strong_convexity, radius, 0.0, 1)


def ogd_regret_bound(
    horizon: ArrayLike,
    lipschitz: ArrayLike,
    diameter: ArrayLike = 1.0,
    strong_convexity: ArrayLike = 1.0,
    schedule: str = "sqrt",
) -> jax.Array:
    """Regret bound of projected online gradient descent (``jaxpriv.oco.ogd``), exact constants.

    * ``"sqrt"``, ``η_t = D/(L sqrt t)``: ``D²/(2η_T) + (L²/2) sum_t η_t <= (3/2) D L sqrt T``
      (Zinkevich 2003, Theorem 1) for convex ``L``-Lipschitz losses on a set of diameter ``D``.
    * ``"strongly_convex"``, ``η_t = 1/(H t)``: ``L² (1 + ln T) / (2H)`` (Hazan, Agarwal &
      Kale 2007, Theorem 1) for ``H``-strongly convex losses with gradients bounded by ``L``.
    """
    t = jnp.asarray(horizon, jnp.float32)
    lip = jnp.asarray(lipschitz, jnp.float32)
    if schedule == "sqrt":
        return 1.5 * jnp.asarray(diameter, jnp.float32) * lip * jnp.sqrt(t)
    if schedule == "strongly_convex":
        return lip * lip * _harmonic_bound(t) / (2.0 * jnp.asarray(strong_convexity, jnp.float32))
    raise ValueError(f"schedule must be one of ('strongly_convex', 'sqrt'), got {schedule!r}")


def _unit_noise_norm(noise: str, budget: ArrayLike, depth: int, dim: int) -> jax.Array:
    """``c`` with ``sqrt(D d σ²_node) = c Δ``: the bound on ``E||n||`` of one release per unit L2 sensitivity.

    The tree is calibrated to ``tree_sensitivity`` (replace-one; L1 for Laplace).
    """
    sens = tree_sensitivity(noise, dim, 1.0)
    return jnp.sqrt(depth * dim * _accounting.node_variance(noise, budget, sens, depth, dim))


def regularized_pftal_regret_bound(
    horizon: int,
    dim: int,
    lipschitz: ArrayLike,
    strong_convexity: ArrayLike,
    radius: ArrayLike,
    budget: ArrayLike,
    noise: str = "gamma",
    depth: int | None = None,
) -> jax.Array:
    """Eq. (17) of Smith & Thakurta 2013 (Appendix C) with the constants of the proof of Theorem 4.

    PFTAL runs on ``h_t(w) = f_t(w) + (H/2)||w||²``: ``h_t`` is ``H``-strongly convex
    and ``(L + H||C||)``-Lipschitz on ``C``, so its surrogates are
    ``G = L + 2H||C||``-Lipschitz (the tree's clipping bound). Theorem 4's bound
    for ``h`` (``pftal_regret_bound``) plus the regularisation bias ``H T ||C||²/2``
    of eq. (16) bounds the expected regret on ``f``.

    Args:
      horizon: ``T``.
      dim: ``d``.
      lipschitz: ``L`` of the unregularised losses.
      strong_convexity: ``H``, the regularisation strength.
      radius: ``||C||_2``.
      budget: ε (``"gamma"``, ``"laplace"``) or ρ (``"gaussian"``); ``inf`` for no noise.
      noise: the tree's noise family.
      depth: the tree's depth ``D`` (default ``ceil(log2 T) + 1``).
    """
    depth = _accounting.tree_depth(horizon) if depth is None else depth
    h = jnp.asarray(strong_convexity, jnp.float32)
    r = jnp.asarray(radius, jnp.float32)
    lip_h = jnp.asarray(lipschitz, jnp.float32) + h * r
    # E||n|| <= c G with G = L + 2H||C|| >= the tree's clip L + H||C|| (conservative, as in Theorem 11's H).
    var = _accounting.node_variance(noise, budget, tree_sensitivity(noise, dim, lip_h + h * r), depth, dim)
    bias = 0.5 * h * jnp.asarray(horizon, jnp.float32) * r * r
    return pftal_regret_bound(horizon, dim, lip_h, h, r, var, depth) + bias


def regularized_pftal_strength(
    horizon: int,
    dim: int,
    lipschitz: ArrayLike,
    radius: ArrayLike,
    budget: ArrayLike,
    noise: str = "gamma",
    depth: int | None = None,
) -> jax.Array:
    """The ``H`` of Theorem 11: the exact minimiser of ``regularized_pftal_regret_bound``.

    With ``G = L + 2HR`` and one release's noise ``E||n|| <= c G``
    (``c = sqrt(D d σ²_node)/Δ``), the bound is ``κ G²/H + H T R²/2`` with
    ``κ = 2 (1 + c)(1 + ln T)``, i.e. ``κL²/H + 4κLR + H (4κ + T/2) R²``,
    minimised at ``H = (L/R) sqrt(κ / (4κ + T/2))``. For the Gamma tree
    ``c ~ d D^{1.5}/ε``, so ``H ~ sqrt(d log^{2.5} T / (ε T))``: the paper's
    choice (Theorem 11 states it up to constants; these are the proof's). At
    ``ε = inf``, ``H ~ (L/R) sqrt(4 (1 + ln T) / T)`` (regularised FTAL).
    """
    depth = _accounting.tree_depth(horizon) if depth is None else depth
    c = _unit_noise_norm(noise, budget, depth, dim)
    kappa = 2.0 * (1.0 + c) * _harmonic_bound(horizon)
    t = jnp.asarray(horizon, jnp.float32)
    lip = jnp.asarray(lipschitz, jnp.float32)
    r = jnp.asarray(radius, jnp.float32)
    return (lip / r) * jnp.sqrt(kappa / (4.0 * kappa + 0.5 * t))


def private_experts_regret_bound(
    horizon: int,
    num_experts: int,
    strong_convexity: ArrayLike,
    budget: ArrayLike,
    noise: str = "gamma",
    depth: int | None = None,
) -> jax.Array:
    """Table 1, first row (Smith & Thakurta 2013): regularised PFTAL on ``Δ_p`` with costs in ``{0,1}^p``.

    ``regularized_pftal_regret_bound`` with ``L = sqrt(p)`` (``||c_t||_2 <= sqrt p``)
    and ``||Δ_p||_2 = 1``: ``O(sqrt(p T) log^{2.5} T / ε)`` at the ``H`` of
    ``regularized_pftal_strength``; the table states it up to constants.
    """
    return regularized_pftal_regret_bound(
        horizon, num_experts, float(num_experts) ** 0.5, strong_convexity, 1.0, budget, noise, depth
    )


def mi_ogd_learning_rate(
    horizon: ArrayLike, dim: int, lipschitz: ArrayLike, radius: ArrayLike, stddev: ArrayLike
) -> jax.Array:
    """Theorem 2's step size ``η = B / sqrt((L² + d σ²) T)`` (Zhang & Venkatasubramaniam 2018)."""
    lip = jnp.asarray(lipschitz, jnp.float32)
    s = jnp.asarray(stddev, jnp.float32)
    power = lip * lip + dim * s * s
    return jnp.asarray(radius, jnp.float32) / jnp.sqrt(power * jnp.asarray(horizon, jnp.float32))


def mi_ogd_regret_bound(
    horizon: ArrayLike,
    dim: int,
    lipschitz: ArrayLike,
    radius: ArrayLike,
    stddev: ArrayLike,
    learning_rate: ArrayLike | None = None,
) -> jax.Array:
    """Theorem 2 of Zhang & Venkatasubramaniam 2018: ``B²/(2η) + (η/2) T (L² + d σ²)``.

    The expected regret of MI-private OGD (``jaxpriv.oco.mi_ogd``) on ``L``-Lipschitz
    convex losses over a set with ``max_{w∈S} ||w||_2 <= B``: lazy projection is
    follow-the-regularised-leader with ``||w||²/(2η)`` on the noisy linearised losses,
    and ``E||z_t + v_t||² <= L² + d σ²``. Exact constants. At Theorem 2's
    ``η = B / sqrt((L² + dσ²) T)`` (the default) it equals ``B sqrt((L² + d σ²) T)``.
    """
    if learning_rate is None:
        learning_rate = mi_ogd_learning_rate(horizon, dim, lipschitz, radius, stddev)
    eta = jnp.asarray(learning_rate, jnp.float32)
    lip = jnp.asarray(lipschitz, jnp.float32)
    s = jnp.asarray(stddev, jnp.float32)
    b = jnp.asarray(radius, jnp.float32)
    t = jnp.asarray(horizon, jnp.float32)
    return b * b / (2.0 * eta) + 0.5 * eta * t * (lip * lip + dim * s * s)
