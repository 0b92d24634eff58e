"""Regret bounds of the papers, evaluated for a run's constants: the one home of every bound of the library.

The online convex optimisation bounds are traceable ``jnp``; the finite-armed bandits' are float64 on the host.
The learners' modules re-export the bounds of their algorithm (``oco.dp_ftrl_regret_bound``,
``bandits.dp_ucb_regret_bound`` evaluates ``bernstein_regret_bound`` for the learner's mechanism, ...).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxpriv import _validate
from jaxpriv.mechanisms import _accounting
from jaxpriv.mechanisms import _mutual_information as _mi
from jaxpriv.mechanisms._noise import GAMMA, NoiseFamily, noise_family


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
    var = _accounting.node_variance(GAMMA, epsilon, tree_sensitivity(GAMMA, dim, lipschitz), depth, dim)
    return pftal_regret_bound(horizon, dim, lipschitz, strong_convexity, radius, var, depth)


def pftal_mechanism_regret_bound(
    horizon: ArrayLike,
    dim: int,
    lipschitz: ArrayLike,
    strong_convexity: ArrayLike,
    radius: ArrayLike,
    release_variance: ArrayLike,
) -> jax.Array:
    """Theorem 4's bound for PFTAL with any prefix-sum mechanism (``oco.pftal(..., mechanism=...)``).

    The proof uses the tree only through ``E||n_t|| <= sqrt(d · Var_t)`` for the noise
    ``n_t`` of one release; ``pftal_regret_bound`` bounds ``Var_t`` by ``D σ²_node``.
    Here ``release_variance`` is the mechanism's worst per-step, per-coordinate variance,
    ``max_t jaxpriv.mechanisms.release_variance(mechanism, TreeParams(ε, ρ, L), t)``
    (the params ``oco.pftal`` passes it; ``sqrt(d) L`` for a Laplace family).
    """
    return pftal_regret_bound(horizon, dim, lipschitz, strong_convexity, radius, release_variance, 1)


def tree_sensitivity(noise: NoiseFamily | str, dim: int, clip: ArrayLike) -> jax.Array:
    """The sensitivity PFTAL's tree is calibrated to for inputs clipped to L2 norm ``clip``.

    Replace-one neighbours: ``2·clip``; the Laplace family measures it in the
    L1 norm, ``2 sqrt(d) clip`` (see ``oco.pftal``).
    """
    factor = 2.0 * (dim**0.5 if noise_family(noise).norm == 1 else 1.0)
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


def _unit_noise_norm(noise: NoiseFamily | str, budget: ArrayLike, depth: int, dim: int) -> jax.Array:
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
    noise: NoiseFamily | str = "gamma",
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
    noise: NoiseFamily | str = "gamma",
    depth: int | None = None,
    unit_noise_norm: ArrayLike | None = None,
) -> jax.Array:
    """The ``H`` of Theorem 11: the exact minimiser of ``regularized_pftal_regret_bound``.

    With ``G = L + 2HR`` and one release's noise ``E||n|| <= c G``
    (``c = sqrt(D d σ²_node)/Δ``), the bound is ``κ G²/H + H T R²/2`` with
    ``κ = 2 (1 + c)(1 + ln T)``, i.e. ``κL²/H + 4κLR + H (4κ + T/2) R²``,
    minimised at ``H = (L/R) sqrt(κ / (4κ + T/2))``. For the Gamma tree
    ``c ~ d D^{1.5}/ε``, so ``H ~ sqrt(d log^{2.5} T / (ε T))``: the paper's
    choice (Theorem 11 states it up to constants; these are the proof's). At
    ``ε = inf``, ``H ~ (L/R) sqrt(4 (1 + ln T) / T)`` (regularised FTAL). Where ``κ`` overflows
    float32 (tiny budgets), ``H`` is its limit ``L/(2R)``, never NaN.

    ``unit_noise_norm``: ``c`` itself, for another prefix-sum mechanism
    (``sqrt(d · max_t Var_t)`` per unit clip, ``oco.regularized_pftal(mechanism=...)``);
    ``noise``, ``budget`` and ``depth`` are then unused for ``c``.
    """
    depth = _accounting.tree_depth(horizon) if depth is None else depth
    if unit_noise_norm is None:
        c = _unit_noise_norm(noise, budget, depth, dim)
    else:
        c = jnp.asarray(unit_noise_norm, jnp.float32)
    kappa = 2.0 * (1.0 + c) * _harmonic_bound(horizon)
    t = jnp.asarray(horizon, jnp.float32)
    lip = jnp.asarray(lipschitz, jnp.float32)
    r = jnp.asarray(radius, jnp.float32)
    # κ/(4κ + T/2) -> 1/4 as κ -> inf: at tiny budgets the variance behind c overflows float32 (Gamma
    # tree, ε < 1e-18) and inf/inf would make H NaN; the limit keeps every finite κ's number as it was.
    denom = 4.0 * kappa + 0.5 * t
    return (lip / r) * jnp.sqrt(jnp.where(jnp.isfinite(denom), kappa / denom, 0.25))


def private_experts_regret_bound(
    horizon: int,
    num_experts: int,
    strong_convexity: ArrayLike,
    budget: ArrayLike,
    noise: NoiseFamily | str = "gamma",
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


# --- bandit feedback: FKM, bandit FTAL / Algorithm 3 (Smith & Thakurta §3, App. D–E), MI bandit OGD -------

BANDIT_PRESETS = ("oblivious", "adaptive", "general_convex")
ADVERSARIES = ("oblivious", "adaptive")

# The bandit learners keep their point in the shrunk set c + s(C - c), s = (1 - ξ)(1 - SHRINK_MARGIN)
# (``oco.one_point.shrink_factor``): the margin (1.5e-5 of the set's size) absorbs the float32 rounding of
# c + s(x - c) + βu, so every played point lies in C exactly, not up to an ulp. Here because the bounds'
# effective ξ depends on it and the theory imports no learner.
SHRINK_MARGIN = 2.0**-16


def _shrink_xi(exploration: ArrayLike, inner_radius: ArrayLike) -> jax.Array:
    """The effective ``ξ = 1 - s`` of the shrunk set ``c + s(C - c)`` (``oco.one_point.shrink_factor``)."""
    beta = jnp.asarray(exploration, jnp.float32)
    return 1.0 - (1.0 - beta / jnp.asarray(inner_radius, jnp.float32)) * (1.0 - SHRINK_MARGIN)


def bandit_ftal_exploration(horizon: int, sphere_dim: int, inner_radius: ArrayLike, preset: str) -> jax.Array:
    """The sampling radius ``β`` of Theorem 6 / Theorem 17 (Smith & Thakurta 2013), for a set's scale.

    The theorems take ``β = p/T^{1/3}`` (oblivious adversary) and ``β = p/T^{1/4}``
    (adaptive adversary; general convex losses, Theorem 17) with ``ξ = β/r``, for a
    set in the paper's scale. We take ``ξ = β/r = min(p/T^a, 1/2)``, i.e.
    ``β = r min(p/T^a, 1/2)``: the theorems' choice for ``r = 1``, scale free, and
    capped at half the inner radius for horizons ``T^a < 2p``, where the
    theorems' ``β`` would leave an empty shrunk set. ``p`` is the dimension of the
    sphere (``oco.one_point.sphere_dim``).
    """
    if preset not in BANDIT_PRESETS:
        raise ValueError(f"preset must be one of {BANDIT_PRESETS}, got {preset!r}")
    a = 1.0 / 3.0 if preset == "oblivious" else 0.25
    xi = jnp.minimum(sphere_dim / jnp.asarray(horizon, jnp.float32) ** a, 0.5)
    return jnp.asarray(inner_radius, jnp.float32) * xi


def bandit_ftal_regularization(horizon: int, preset: str) -> jax.Array:
    """Theorem 17's regulariser strength ``H = 1/T^{1/4}`` for ``"general_convex"``; 0 for the other presets."""
    if preset not in BANDIT_PRESETS:
        raise ValueError(f"preset must be one of {BANDIT_PRESETS}, got {preset!r}")
    if preset != "general_convex":
        return jnp.zeros((), jnp.float32)
    return jnp.asarray(horizon, jnp.float32) ** -0.25


def private_bandit_ftal_regret_bound(
    horizon: int,
    dim: int,
    lipschitz: ArrayLike,
    strong_convexity: ArrayLike,
    loss_bound: ArrayLike,
    radius: ArrayLike,
    inner_radius: ArrayLike,
    outer_radius: ArrayLike,
    exploration: ArrayLike,
    budget: ArrayLike = float("inf"),
    noise: NoiseFamily | str = "gamma",
    adversary: str = "adaptive",
    regularization: ArrayLike = 0.0,
    sphere_dim: int | None = None,
    depth: int | None = None,
) -> jax.Array:
    """Theorems 6 and 17 of Smith & Thakurta 2013 (Algorithm 3) with the constants of their proofs.

    The proof (Lemmas 13–16, Appendix E.2 eq. (39)) bounds the expected regret at
    the played points by

    ``3βL_h T + ξ R_c L_h T + 2G²(1 + ln T)/H' + 2 E||n|| G (1 + ln T)/H' + γ + λ T ||C||²/2``

    * ``3βL_h T + ξR_c L_h T``: smoothing and playing ``w + βu`` (Lemma 13), with
      ``ξ`` the effective shrink (``β/r`` and the float32 margin of
      ``SHRINK_MARGIN``) and ``R_c`` the outer radius about the inner
      centre the set is shrunk towards (``sets.bandit_radii``);
    * ``2G²(1 + ln T)/H'``: FTAL on the surrogates (eq. (23)), strong convexity
      ``H' = H + λ``, Lipschitz ``G = pB/β + λ||C|| + H'||C||`` (the one-point
      estimate, the regulariser's gradient, the quadratic term);
    * ``2 E||n|| G (1 + ln T)/H'``: the tree's noise (eqs. (31)–(32), Lemma 8), with
      ``E||n|| <= sqrt(D d σ²_node)`` for the tree calibrated to the replace-one
      sensitivity ``2pB/β`` of the clipped estimates. Eq. (32) prints an extra
      ``1/β`` that the derivation (Lemma 8 with sensitivity ``pB/β``) does not
      give and that would contradict Theorem 6's ``T^{2/3}``; we follow the derivation;
    * ``γ = 2pB||C|| sqrt(T)/β`` against an adaptive adversary (Lemma 15), 0 against
      an oblivious one (Lemma 16);
    * ``λT||C||²/2``: the regulariser's bias (Theorem 17, as eq. (16)); 0 when ``λ = 0``.

    Theorem 6 is ``λ = 0`` with ``β = bandit_ftal_exploration(...)``: ``Õ(pT^{2/3})``
    (oblivious) and ``Õ(pT^{3/4})`` (adaptive); Theorem 17 (general convex, ``H = 0``)
    is ``λ = T^{-1/4}``, ``β ∝ p/T^{1/4}``: ``Õ(pT^{3/4})`` (see
    ``private_bandit_ftal_general_convex_regret_bound``). ``budget = inf`` gives the
    non-private bandit FTAL (Theorem 12 / Appendix D with our ``β``).

    Args:
      horizon: ``T``.
      dim: ``d``, the dimension of the points and of the tree's noise.
      lipschitz: ``L`` of the losses on ``C``.
      strong_convexity: ``H >= 0`` of the losses.
      loss_bound: ``B``, ``|f_t| <= B`` on ``C``.
      radius: ``||C||_2``.
      inner_radius, outer_radius: ``r`` and ``R_c`` of ``sets.bandit_radii``.
      exploration: ``β``.
      budget: ε (``"gamma"``, ``"laplace"``) or ρ (``"gaussian"``); ``inf`` for no noise.
      noise: the tree's noise family.
      adversary: ``"adaptive"`` or ``"oblivious"``.
      regularization: ``λ >= 0``.
      sphere_dim: ``p`` (default ``d``; ``d - 1`` for the simplex).
      depth: the tree's ``D`` (default ``ceil(log2 T) + 1``).
    """
    if adversary not in ADVERSARIES:
        raise ValueError(f"adversary must be one of {ADVERSARIES}, got {adversary!r}")
    p = dim if sphere_dim is None else sphere_dim
    depth = _accounting.tree_depth(horizon) if depth is None else depth
    t = jnp.asarray(horizon, jnp.float32)
    beta = jnp.asarray(exploration, jnp.float32)
    lam = jnp.asarray(regularization, jnp.float32)
    h_total = jnp.asarray(strong_convexity, jnp.float32) + lam
    big_r = jnp.asarray(radius, jnp.float32)
    bound = jnp.asarray(loss_bound, jnp.float32)
    lip_h = jnp.asarray(lipschitz, jnp.float32) + lam * big_r
    estimate = p * bound / beta
    smoothing = (3.0 * beta + _shrink_xi(beta, inner_radius) * jnp.asarray(outer_radius, jnp.float32)) * lip_h * t
    var = _accounting.node_variance(noise, budget, tree_sensitivity(noise, dim, estimate), depth, dim)
    ftal = pftal_regret_bound(horizon, dim, estimate + lam * big_r, h_total, big_r, var, depth)
    gamma = 2.0 * estimate * big_r * jnp.sqrt(t) if adversary == "adaptive" else 0.0
    return smoothing + ftal + gamma + 0.5 * lam * t * big_r * big_r


def bandit_ftal_regret_bound(
    horizon: int,
    dim: int,
    lipschitz: ArrayLike,
    strong_convexity: ArrayLike,
    loss_bound: ArrayLike,
    radius: ArrayLike,
    inner_radius: ArrayLike,
    outer_radius: ArrayLike,
    exploration: ArrayLike,
    adversary: str = "adaptive",
    regularization: ArrayLike = 0.0,
    sphere_dim: int | None = None,
) -> jax.Array:
    """Non-private bandit FTAL (Smith & Thakurta 2013, §3.1, Theorem 12): the bound of
    ``private_bandit_ftal_regret_bound`` without the tree's noise term."""
    return private_bandit_ftal_regret_bound(
        horizon,
        dim,
        lipschitz,
        strong_convexity,
        loss_bound,
        radius,
        inner_radius,
        outer_radius,
        exploration,
        float("inf"),
        GAMMA,
        adversary,
        regularization,
        sphere_dim,
    )


def private_bandit_ftal_general_convex_regret_bound(
    horizon: int,
    dim: int,
    lipschitz: ArrayLike,
    loss_bound: ArrayLike,
    radius: ArrayLike,
    inner_radius: float,
    outer_radius: ArrayLike,
    budget: ArrayLike,
    noise: NoiseFamily | str = "gamma",
    adversary: str = "adaptive",
    sphere_dim: int | None = None,
) -> jax.Array:
    """Theorem 17 of Smith & Thakurta 2013: general convex ``L``-Lipschitz losses, regularised Algorithm 3.

    ``private_bandit_ftal_regret_bound`` with ``H = 0``, Theorem 17's ``λ = T^{-1/4}``
    and ``β = bandit_ftal_exploration(T, p, r, "general_convex")`` (``ξ = p/T^{1/4}``):
    ``Õ(pT^{3/4})`` for both adversaries (the ``γ`` term is ``O(T^{3/4})`` too).
    """
    p = dim if sphere_dim is None else sphere_dim
    beta = bandit_ftal_exploration(horizon, p, inner_radius, "general_convex")
    lam = bandit_ftal_regularization(horizon, "general_convex")
    return private_bandit_ftal_regret_bound(
        horizon,
        dim,
        lipschitz,
        0.0,
        loss_bound,
        radius,
        inner_radius,
        outer_radius,
        beta,
        budget,
        noise,
        adversary,
        lam,
        p,
    )


def fkm_regret_bound(
    horizon: ArrayLike,
    sphere_dim: int,
    lipschitz: ArrayLike,
    loss_bound: ArrayLike,
    diameter: ArrayLike,
    inner_radius: ArrayLike,
    outer_radius: ArrayLike,
    exploration: ArrayLike,
    learning_rate: ArrayLike | None = None,
) -> jax.Array:
    """FKM bandit gradient descent (``oco.fkm``): ``D²/(2η) + (η/2) T (pB/β)² + 3βLT + ξ R_c L T``.

    Zinkevich's fixed-step bound for projected gradient descent on the smoothed
    losses ``f̂_t`` over the shrunk set (diameter ``<= D``), fed the one-point
    estimates (``E[ĝ_t | past] = ∇f̂_t``, ``||ĝ_t|| <= pB/β``), plus Lemma 13 of
    Smith & Thakurta (FKM05, Lemma 2 and §3.2) for smoothing and shrinking.
    Exact constants; against adaptive adversaries. At the default ``η = Dβ/(pB sqrt T)``
    (``fkm_learning_rate``) the first two terms are ``D pB sqrt(T)/β``.
    """
    t = jnp.asarray(horizon, jnp.float32)
    beta = jnp.asarray(exploration, jnp.float32)
    diam = jnp.asarray(diameter, jnp.float32)
    g = sphere_dim * jnp.asarray(loss_bound, jnp.float32) / beta
    if learning_rate is None:
        learning_rate = fkm_learning_rate(horizon, sphere_dim, loss_bound, diameter, beta)
    eta = jnp.asarray(learning_rate, jnp.float32)
    smoothing = (3.0 * beta + _shrink_xi(beta, inner_radius) * jnp.asarray(outer_radius, jnp.float32)) * t
    return diam * diam / (2.0 * eta) + 0.5 * eta * t * g * g + smoothing * jnp.asarray(lipschitz, jnp.float32)


def fkm_learning_rate(
    horizon: ArrayLike, sphere_dim: int, loss_bound: ArrayLike, diameter: ArrayLike, exploration: ArrayLike
) -> jax.Array:
    """``η = Dβ/(pB sqrt T)``: the minimiser of ``fkm_regret_bound``'s first two terms."""
    g = sphere_dim * jnp.asarray(loss_bound, jnp.float32) / jnp.asarray(exploration, jnp.float32)
    return jnp.asarray(diameter, jnp.float32) / (g * jnp.sqrt(jnp.asarray(horizon, jnp.float32)))


def fkm_exploration(
    horizon: ArrayLike,
    sphere_dim: int,
    lipschitz: ArrayLike,
    loss_bound: ArrayLike,
    diameter: ArrayLike,
    inner_radius: ArrayLike,
    outer_radius: ArrayLike,
) -> jax.Array:
    """The ``β`` minimising ``fkm_regret_bound`` at its ``η``: ``T^{-1/4} sqrt(DpB/((3 + R_c/r)L))``, at most ``r/2``.

    The bound is ``DpB sqrt(T)/β + (3 + R_c/r) L β T`` (FKM05's ``O(T^{3/4})``);
    the cap keeps the shrunk set non-empty for short horizons (and ``L = 0``).
    """
    r = jnp.asarray(inner_radius, jnp.float32)
    c = (3.0 + jnp.asarray(outer_radius, jnp.float32) / r) * jnp.asarray(lipschitz, jnp.float32)
    num = jnp.asarray(diameter, jnp.float32) * sphere_dim * jnp.asarray(loss_bound, jnp.float32)
    beta = jnp.asarray(horizon, jnp.float32) ** -0.25 * jnp.sqrt(num / c)
    return jnp.minimum(beta, 0.5 * r)


def mi_bandit_ogd_learning_rate(
    horizon: ArrayLike,
    dim: int,
    lipschitz: ArrayLike,
    loss_bound: ArrayLike,
    radius: ArrayLike,
    stddev: ArrayLike,
    exploration: ArrayLike,
    sphere_dim: int | None = None,
) -> jax.Array:
    """``η = B / sqrt(T (p²(F/δ + L)² + dσ²))``: the minimiser of Theorem 4's bound (MI poster) over ``η``."""
    p = dim if sphere_dim is None else sphere_dim
    clip = _mi.bandit_clip_bound(loss_bound, lipschitz, exploration, p)
    s = jnp.asarray(stddev, jnp.float32)
    power = clip * clip + dim * s * s
    return jnp.asarray(radius, jnp.float32) / jnp.sqrt(power * jnp.asarray(horizon, jnp.float32))


def mi_bandit_ogd_regret_bound(
    horizon: ArrayLike,
    dim: int,
    lipschitz: ArrayLike,
    loss_bound: ArrayLike,
    radius: ArrayLike,
    stddev: ArrayLike,
    exploration: ArrayLike,
    learning_rate: ArrayLike | None = None,
    sphere_dim: int | None = None,
    inner_radius: ArrayLike | None = None,
    outer_radius: ArrayLike | None = None,
) -> jax.Array:
    """Theorem 4 of Zhang & Venkatasubramaniam 2018 (bandit): ``B²/(2η) + (η/2)T(d²(F/δ + L)² + dσ²) + 3TLδ``.

    The poster prints ``F/η`` inside the bound; ``F/δ`` is the consistent reading
    (``||z_t|| <= d(F/δ + L)``, as in its Theorem 3). ``B = max_{w∈S} ||w||_2``
    (``radius``), ``F`` the loss bound, ``δ`` the exploration radius. ``d²`` is
    ``p²`` with ``p`` the sphere's dimension (``d - 1`` for the simplex).

    ``oco.mi_bandit_ogd`` projects onto the shrunk set ``c + (1 - ξ)(S - c)``,
    ``ξ = δ/r``, so that the played point stays in ``S`` (FKM's remedy; the
    poster plays outside ``S`` instead): given ``inner_radius`` and
    ``outer_radius`` (``sets.bandit_radii``) the bound adds the shrinking cost
    ``ξ R_c L T`` (Lemma 13 of Smith & Thakurta). At Theorem 4's ``η``
    (``mi_bandit_ogd_learning_rate``, the default) the first two terms are
    ``B sqrt(T (p²(F/δ + L)² + dσ²))``.
    """
    p = dim if sphere_dim is None else sphere_dim
    if learning_rate is None:
        learning_rate = mi_bandit_ogd_learning_rate(horizon, dim, lipschitz, loss_bound, radius, stddev, exploration, p)
    eta = jnp.asarray(learning_rate, jnp.float32)
    clip = _mi.bandit_clip_bound(loss_bound, lipschitz, exploration, p)
    s = jnp.asarray(stddev, jnp.float32)
    b = jnp.asarray(radius, jnp.float32)
    t = jnp.asarray(horizon, jnp.float32)
    lip = jnp.asarray(lipschitz, jnp.float32)
    delta = jnp.asarray(exploration, jnp.float32)
    bound = b * b / (2.0 * eta) + 0.5 * eta * t * (clip * clip + dim * s * s) + 3.0 * t * lip * delta
    if inner_radius is not None:
        bound = bound + _shrink_xi(delta, inner_radius) * jnp.asarray(outer_radius, jnp.float32) * lip * t
    return bound


def mi_bandit_ogd_exploration(
    horizon: ArrayLike,
    dim: int,
    lipschitz: ArrayLike,
    loss_bound: ArrayLike,
    radius: ArrayLike,
    inner_radius: ArrayLike,
    outer_radius: ArrayLike,
    mutual_information: ArrayLike,
    sphere_dim: int | None = None,
) -> jax.Array:
    """The ``δ`` minimising ``mi_bandit_ogd_regret_bound`` (with the shrinking cost) at Theorem 4's ``η``.

    With ``σ`` set from the budget ``C`` by Theorem 3, ``p²(F/δ + L)² + dσ² =
    κ² p²(F/δ + L)²`` with ``κ² = 1/(1 - e^{-2C/d})``, so the bound is
    ``Bκp sqrt(T)(F/δ + L) + (3 + R_c/r) L δ T``, minimised at
    ``δ = T^{-1/4} sqrt(BκpF / ((3 + R_c/r) L))`` (Theorem 4's ``δ ~ T^{-1/4}``,
    ``η ~ T^{-3/4}``); at most ``r/2``, so the shrunk set is never empty.
    """
    p = dim if sphere_dim is None else sphere_dim
    c_mi = jnp.asarray(mutual_information, jnp.float32)
    kappa = 1.0 / jnp.sqrt(-jnp.expm1(-2.0 * c_mi / dim))
    r = jnp.asarray(inner_radius, jnp.float32)
    c = (3.0 + jnp.asarray(outer_radius, jnp.float32) / r) * jnp.asarray(lipschitz, jnp.float32)
    num = jnp.asarray(radius, jnp.float32) * kappa * p * jnp.asarray(loss_bound, jnp.float32)
    delta = jnp.asarray(horizon, jnp.float32) ** -0.25 * jnp.sqrt(num / c)
    return jnp.minimum(delta, 0.5 * r)


# --- window-private COCO (WDP-COCOP / WDP-COCOL; docs/algorithms/window.md, 'Decoding choices') ---------


def _window_g(lipschitz: ArrayLike, strong_convexity: ArrayLike, diameter: ArrayLike) -> jax.Array:
    """``G = L + μD``, the Lipschitz constant of the quadratic surrogates on the set."""
    return jnp.asarray(lipschitz, jnp.float32) + jnp.asarray(strong_convexity, jnp.float32) * jnp.asarray(
        diameter, jnp.float32
    )


def wdp_cocop_regret_inequality(
    horizon: ArrayLike, lipschitz: ArrayLike, strong_convexity: ArrayLike, diameter: ArrayLike, noise_max: ArrayLike
) -> jax.Array:
    """The explicit regret bound of WDP-COCOP given the realised noise (derived:
    docs/algorithms/window.md, 'Decoding choices'):

    ``Regret(T) <= (G/μ)(2G + N_T)(1 + ln T)``, ``G = L + μD``, ``N_T = max_{t<T} ||ĝ_t - g_t||_2``
    (``oco.wdp_cocop`` reports it in its Info's ``noise_max``: ``Result.info``, ``Rollout.info``). FTL on the
    ``G``-Lipschitz, ``μ``-strongly convex surrogates (Hazan, Agarwal & Kale 2007) plus the leader's shift
    ``||n_t||/(μt)`` (Smith & Thakurta 2013, Lemma 8, tightened). Deterministic given the noise.
    """
    g = _window_g(lipschitz, strong_convexity, diameter)
    mu = jnp.asarray(strong_convexity, jnp.float32)
    return (g / mu) * (2.0 * g + jnp.asarray(noise_max, jnp.float32)) * _harmonic_bound(horizon)


def wdp_cocol_regret_inequality(
    horizon: ArrayLike,
    lipschitz: ArrayLike,
    strong_convexity: ArrayLike,
    diameter: ArrayLike,
    rho: float,
    noise_bound: ArrayLike,
) -> jax.Array:
    """The explicit regret bound of WDP-COCOL with the proven constants (derived:
    docs/algorithms/window.md, 'Decoding choices'):

    ``Regret(T) <= [16ρ²G² + 10(1 + ρ)G N] ln(1 + T/C₀)/μ + C₀μD²/2``, ``C₀ = 8ρ²``, ``G = L + μD``,
    on the event ``max_t ||ĝ_t - g_t|| <= N`` (``N`` the bound the radii were built on:
    ``oco.wdp_cocol``'s ``noise_bound``; ``N = 0`` for ``oco.garber_hazan``).
    """
    g = _window_g(lipschitz, strong_convexity, diameter)
    mu = jnp.asarray(strong_convexity, jnp.float32)
    n = jnp.asarray(noise_bound, jnp.float32)
    c0 = 8.0 * rho * rho
    t = jnp.asarray(horizon, jnp.float32)
    log_term = jnp.log1p(t / c0)
    return (16.0 * rho * rho * g * g + 10.0 * (1.0 + rho) * g * n) * log_term / mu + 0.5 * c0 * mu * jnp.asarray(
        diameter, jnp.float32
    ) ** 2


def wdp_regret_order(
    algorithm: str,
    noise: NoiseFamily | str,
    horizon: ArrayLike,
    dim: int,
    window: int,
    lipschitz: ArrayLike,
    strong_convexity: ArrayLike,
    diameter: ArrayLike,
    epsilon: ArrayLike,
    delta: ArrayLike = 1e-5,
    beta: ArrayLike = 0.01,
) -> jax.Array:
    """Theorems 3, 4, 6 and 7 of the window-DP COCO paper in clean form, the ``O(·)`` with constant 1.

    With ``G = L + μD`` and ``k_W = ceil(log2 W) + 1`` for the printed ``log2 W`` (which vanishes at
    ``W = 1``):

    * ``("cocop", "gamma")``, Theorem 3, and ``("cocol", "gamma")``, Theorem 6:
      ``d G² k_W^{1.5} ln(d/β) ln T/(με)``;
    * ``("cocop", "gaussian")``, Theorem 4: ``sqrt(d) G² k_W^{1.5} ln(1/δ) sqrt(ln(d/β)) ln T/(με)``;
    * ``("cocol", "gaussian")``, Theorem 7:
      ``max(sqrt(d) ε, k_W^{1.5} ln(1/δ) sqrt(ln(d/β))) sqrt(d) G² ln T/(με)``.

    Orders, not bounds: compare their growth in ``T`` and ``W`` with measured regret, not their values.
    """
    if algorithm not in ("cocop", "cocol"):
        raise ValueError(f"algorithm must be one of ('cocop', 'cocol'), got {algorithm!r}")
    family = noise_family(noise, ("gamma", "gaussian"))
    k = _accounting.tree_depth(window)  # ceil(log2 W) + 1
    g = _window_g(lipschitz, strong_convexity, diameter)
    mu = jnp.asarray(strong_convexity, jnp.float32)
    eps = jnp.asarray(epsilon, jnp.float32)
    beta = jnp.asarray(beta, jnp.float32)
    log_t = jnp.log(jnp.asarray(horizon, jnp.float32))
    if not family.sub_gaussian:  # the Gamma radius' (exponential) tail
        return dim * g * g * k**1.5 * jnp.log(dim / beta) * log_t / (mu * eps)
    gauss = k**1.5 * jnp.log(1.0 / jnp.asarray(delta, jnp.float32)) * jnp.sqrt(jnp.log(dim / beta))
    if algorithm == "cocop":
        return dim**0.5 * g * g * gauss * log_t / (mu * eps)
    return jnp.maximum(dim**0.5 * eps, gauss) * dim**0.5 * g * g * log_t / (mu * eps)


# --- DP-FTRL (Kairouz et al. 2021; ``oco.dp_ftrl``) ----------------------------------------------------------


def _noise_norm_sum(horizon: int, dim: int, variance: ArrayLike) -> jax.Array:
    """``Σ_{t=1}^{T-1} sqrt(d Var_t)``: the bound on ``Σ_{t<T} E||n_t||``, per step or from one worst value."""
    v = jnp.asarray(variance, jnp.float32)
    if v.ndim >= 1 and v.shape[-1] == horizon:
        return jnp.sum(jnp.sqrt(dim * v[..., : horizon - 1]), axis=-1)
    if v.ndim == 0 or v.shape[-1] == 1:
        per_step = jnp.sqrt(dim * (v if v.ndim == 0 else v[..., 0]))
        return (horizon - 1) * per_step
    raise ValueError(
        f"release_variance must be a scalar, have a last axis of length 1 (one value for every step) or of "
        f"length T={horizon} (steps 1..T), got shape {v.shape}"
    )


def dp_ftrl_regularization(
    horizon: int, dim: int, lipschitz: ArrayLike, diameter: ArrayLike, release_variance: ArrayLike
) -> jax.Array:
    """The ``λ`` minimising ``dp_ftrl_regret_bound``: ``λ* = sqrt(T L² + 2 L S) / D``.

    The bound is ``λD²/2 + A/λ`` with ``A = T L²/2 + L S``, ``S = Σ_{t=1}^{T-1} sqrt(d Var_t)``,
    minimised at ``λ* = sqrt(2A)/D``, where it equals ``D sqrt(T L² + 2 L S)``. Without noise
    (``S = 0``): ``λ* = L sqrt(T)/D`` and the bound ``L D sqrt(T)``.

    Args:
      horizon: ``T``.
      dim: ``d``.
      lipschitz: ``L``.
      diameter: ``D``, the diameter of ``C`` (bounds ``||u - w_1||`` for every ``u ∈ C``).
      release_variance: the per-coordinate variance of the release noise ``n_t``: shape ``[..., T]``
        (steps ``1..T``, e.g. ``jaxpriv.mechanisms.release_variance(mech, TreeParams(ε, ρ, L), arange(1, T+1))``),
        or a scalar / ``[..., 1]`` bound used for every step (e.g. the worst step's).
    """
    lip = jnp.asarray(lipschitz, jnp.float32)
    s = _noise_norm_sum(horizon, dim, release_variance)
    return jnp.sqrt(horizon * lip * lip + 2.0 * lip * s) / jnp.asarray(diameter, jnp.float32)


def dp_ftrl_regret_bound(
    horizon: int,
    dim: int,
    lipschitz: ArrayLike,
    diameter: ArrayLike,
    regularization: ArrayLike,
    release_variance: ArrayLike,
) -> jax.Array:
    """Expected regret of DP-FTRL with a fixed quadratic regulariser, with constants.

    ``E[Regret(T)] <= λD²/2 + T L²/(2λ) + (L/λ) Σ_{t=1}^{T-1} sqrt(d Var_t)``,

    for convex ``L``-Lipschitz losses on ``C`` (diameter ``D``), any adversary (adaptive
    included), where ``Var_t`` is the per-coordinate variance of the noise ``n_t`` of the
    ``t``-th release ``ṽ_t = Σ_{s<=t} g_s + n_t``. Derivation:

    1. Convexity: ``Regret(T) = Σ f_t(w_t) - f_t(u) <= Σ_t <g_t, w_t - u>`` for ``u`` the best
       fixed point in hindsight, ``g_t = ∇f_t(w_t)``, ``||g_t|| <= L`` (so the clip is inactive).
    2. Split ``w_t = ŵ_t + (w_t - ŵ_t)`` with ``ŵ_{t+1} = Π_C(w_1 - G_t/λ)``, ``G_t = Σ_{s<=t} g_s``:
       the noiseless FTRL iterate on the (adaptively chosen) linear losses ``<g_t, ·>``
       with regulariser ``ψ(w) = (λ/2)||w - w_1||² + I_C(w)``; ``ŵ_1 = w_1``.
    3. FTRL with a fixed ``λ``-strongly convex regulariser (the strong FTRL lemma, e.g.
       Orabona, *A Modern Introduction to Online Learning*, Lemma 7.8 / Cor. 7.9): with
       ``F_t = ψ + Σ_{s<t} <g_s, ·>``, ``F_{t+1}(ŵ_t) - min F_{t+1} <= ||g_t||²/(2λ)`` (``F_t``
       is ``λ``-strongly convex and minimised at ``ŵ_t``, and adding the linear ``<g_t, ·>``
       lowers its minimum by at most ``||g_t||²/(2λ)``); telescoping,
       ``Σ <g_t, ŵ_t - u> <= ψ(u) - ψ(w_1) + Σ ||g_t||²/(2λ) <= λD²/2 + T L²/(2λ)``, for every
       ``u ∈ C`` at once (so also for the data-dependent best point).
    4. Stability: ``w_{t+1} = Π_C(w_1 - (G_t + n_t)/λ)`` and the projection is 1-Lipschitz, so
       ``||w_{t+1} - ŵ_{t+1}|| <= ||n_t||/λ``; with ``||g_t|| <= L`` (Cauchy–Schwarz),
       ``Σ_t <g_t, w_t - ŵ_t> <= (L/λ) Σ_{t=1}^{T-1} ||n_t||``.
    5. ``E||n_t|| <= sqrt(E||n_t||²) = sqrt(d Var_t)`` (Jensen; ``n_t`` has ``d`` coordinates of
       variance ``Var_t``, mean 0, and does not depend on the data).

    The noise term is ``(L/λ) Σ_t sqrt(d) σ_t``, ``σ_t`` the mechanism's per-step standard
    deviation: ``O((L/λ) T sqrt(d log T / ρ) L)`` for the Gaussian tree. At the tuned ``λ``
    (``dp_ftrl_regularization``) the bound is ``D sqrt(T L² + 2 L S)``,
    ``S = Σ_{t<T} sqrt(d Var_t)``: ``L D sqrt(T)`` without noise (the non-private FTRL
    bound), ``O(L D sqrt(T) (1 + (sqrt(d) σ/L)^{1/2}))`` for a constant ``σ_t = σ``: the order
    of Kairouz et al.'s regret bound for DP-FTRL.

    Args:
      horizon: ``T``.
      dim: ``d``.
      lipschitz: ``L``.
      diameter: ``D``.
      regularization: ``λ > 0``; ``nan`` evaluates the bound at ``dp_ftrl_regularization``'s ``λ``.
      release_variance: as in ``dp_ftrl_regularization`` (0 for no noise).
    """
    lip = jnp.asarray(lipschitz, jnp.float32)
    d = jnp.asarray(diameter, jnp.float32)
    lam = jnp.asarray(regularization, jnp.float32)
    lam = jnp.where(jnp.isnan(lam), dp_ftrl_regularization(horizon, dim, lipschitz, diameter, release_variance), lam)
    s = _noise_norm_sum(horizon, dim, release_variance)
    return 0.5 * lam * d * d + horizon * lip * lip / (2.0 * lam) + lip * s / lam


# --- finite-armed bandits (float64, on the host; rewards in ``[0, 1]``) ---------------------------------------
# AdaC-UCB (Theorem 5.6), AdaP-UCB (Azize & Basu 2022, Theorem 7) and its lower bound (Theorem 3), DP-SE (its
# schedule's constants), and the sub-gamma confidence-bound argument of DP-UCB and LDP-UCB (``bernstein_regret_bound``:
# the learners turn their mechanism's noise into its variance and scale, ``bandits.dp_ucb_regret_bound``).


def adac_ucb_regret_bound(means: ArrayLike, horizon: int, rho: float, beta: float) -> float:
    """Theorem 5.6: ``Σ_{Δ_a>0} (8β log T/Δ_a + 8 sqrt(β log T/ρ) + 2β/(β-3))`` for β > 3.

    Evaluated in float64 for rewards in ``[0, 1]``; ``rho = inf`` gives the
    non-private bound.
    """
    if not beta > 3:
        raise ValueError(f"beta must be > 3 for Theorem 5.6, got {beta!r}")
    if not rho > 0:
        raise ValueError(f"rho must be in (0, inf], got {rho!r}")
    horizon = _validate.positive_int("horizon", horizon)
    mu = np.asarray(means, np.float64)
    gaps = mu.max() - mu
    gaps = gaps[gaps > 0]
    log_t = math.log(horizon)
    per_arm = 8 * beta * log_t / gaps + 8 * math.sqrt(beta * log_t / rho) + 2 * beta / (beta - 3)
    return float(per_arm.sum())


def adap_ucb_regret_bound(means: ArrayLike, horizon: int, epsilon: float, alpha: float) -> float:
    """Theorem 7 of Azize & Basu (NeurIPS 2022): ``Σ_{Δ_a>0} (16α log T / min{Δ_a, ε} + α/(α - 3))`` for α > 3.

    Evaluated in float64 for rewards in ``[0, 1]``; ``epsilon = inf`` gives ``min{Δ_a, ε} = Δ_a``.
    (The thesis's restatement, Theorem 5.3, has ``3α/(α - 3)`` as the additive term; the NeurIPS
    statement's ``α/(α - 3)`` is used here.)

    Raises:
      ValueError: ``means`` is not a non-empty ``[K]`` array of finite means in ``[0, 1]`` (the theorem's
        rewards lie in ``[0, 1]``, as ``adap_lower_bound`` requires), ``alpha <= 3``, ``epsilon <= 0`` or
        ``horizon`` is not a positive integer.
    """
    mu = np.asarray(means, np.float64)
    if mu.ndim != 1 or mu.size < 1 or not np.all(np.isfinite(mu)) or np.any((mu < 0) | (mu > 1)):
        raise ValueError(
            f"means must be a non-empty [K] array of arm means in [0, 1] (rewards in [0, 1]), got {means!r}"
        )
    if not alpha > 3:
        raise ValueError(f"alpha must be > 3 for Theorem 7, got {alpha!r}")
    if not epsilon > 0:
        raise ValueError(f"epsilon must be in (0, inf], got {epsilon!r}")
    horizon = _validate.positive_int("horizon", horizon)
    gaps = mu.max() - mu
    gaps = gaps[gaps > 0]
    per_arm = 16 * alpha * math.log(horizon) / np.minimum(gaps, epsilon) + alpha / (alpha - 3)
    return float(per_arm.sum())


def adap_lower_bound(means: ArrayLike, horizon: int, epsilon: float) -> float:
    """Azize & Basu (NeurIPS 2022), Theorem 3 for Bernoulli arms: ``Σ_{Δ_a>0} Δ_a log T / min(kl(μ_a, μ*), 6 ε Δ_a)``.

    The asymptotic (``T → ∞``) problem-dependent lower bound on the regret of any consistent
    ε-global DP policy, with ``d_inf = kl(μ_a, μ*)`` and ``t_inf = Δ_a`` for Bernoulli
    distributions; ``epsilon = inf`` gives the Lai–Robbins bound. Evaluated in float64.
    (Theorem 8's upper bound for AdaP-KLUCB, ``Σ (C₁(α) Δ_a log T / min{d_inf(μ_a, μ*), C₂ ε Δ_a}
    + α/(α - 3))``, matches it up to constants ``C₁(α), C₂`` the paper does not give.)
    """
    if not epsilon > 0:
        raise ValueError(f"epsilon must be in (0, inf], got {epsilon!r}")
    horizon = _validate.positive_int("horizon", horizon)
    mu = np.asarray(means, np.float64)
    if mu.ndim != 1 or mu.size < 1 or not np.all(np.isfinite(mu)) or np.any((mu < 0) | (mu > 1)):
        raise ValueError(f"means must be a non-empty [K] array of arm means in [0, 1] (Bernoulli arms), got {means!r}")
    best = mu.max()
    sub = mu[mu < best]
    gaps = best - sub
    with np.errstate(divide="ignore"):
        kl = sub * np.log(np.where(sub > 0, sub / best, 1.0)) + (1 - sub) * np.log(
            np.where(best < 1, (1 - sub) / (1 - best), np.inf)
        )
    return float(np.sum(gaps * math.log(horizon) / np.minimum(kl, 6 * epsilon * gaps)))


def dp_se_regret_bound(means: ArrayLike, horizon: int, epsilon: float, beta: float | None = None) -> float:
    """The expected pseudo-regret bound at ``T`` that the implemented schedule gives, all constants explicit.

    With probability ``>= 1 - β π²/12`` every released mean of every epoch is within
    ``h_e + c_e`` of the arm's mean (Hoeffding: ``2e^{-L₈}``; Laplace: ``e^{-L₄}``, a
    union bound over ``S`` and ``e``). On that event the best arm is never eliminated
    and, because ``R_e > 32 L₈/Δ_e²`` and ``R_e > 8 L₄/(εΔ_e)`` give
    ``4(h_e + c_e) < Δ_e``, arm ``a`` is eliminated by the end of epoch
    ``e_a = ⌈log₂(1/Δ_a)⌉``. Hence (the argument of Sajed & Sheffet's Theorem,
    whose ``O(Σ_a log T/Δ_a + K log T/ε)`` it instantiates)::

        E[Reg(T)] <= Σ_{Δ_a>0} Δ_a min(T, Σ_{e<=e_a} R_e(|S| = K)) + (π²/12) β T max_a Δ_a.

    Evaluated in float64 for rewards in ``[0, 1]``; ``epsilon = inf`` is non-private.

    Args:
      means: ``[K]`` arm means.
      horizon: ``T``.
      epsilon: ε in ``(0, inf]``.
      beta: β in ``(0, 1)``; ``None`` is ``1/T``.

    Returns:
      The bound, a float.
    """
    horizon = _validate.positive_int("horizon", horizon)
    if not epsilon > 0:
        raise ValueError(f"epsilon must be in (0, inf], got {epsilon!r}")
    beta = 1.0 / horizon if beta is None else float(beta)
    if not 0 < beta < 1:
        raise ValueError(f"beta must be in (0, 1), got {beta!r}")
    mu = np.asarray(means, np.float64)
    K = mu.shape[-1]
    gaps = mu.max() - mu
    inv_eps = 0.0 if math.isinf(epsilon) else 1.0 / epsilon
    total = 0.0
    for gap in gaps[gaps > 0]:
        e_a = max(1, math.ceil(math.log2(1.0 / gap) - 1e-12))
        pulls = 0.0
        for e in range(1, e_a + 1):
            base = math.log(K) + 2 * math.log(e) + math.log(1.0 / beta)
            l8, l4 = base + math.log(8.0), base + math.log(4.0)
            pulls += math.floor(max(32 * l8 * 4.0**e, 8 * l4 * 2.0**e * inv_eps) + 1)
        total += gap * min(float(horizon), pulls)
    return float(total + math.pi**2 / 12 * beta * horizon * gaps.max())


def pulls_bound(
    gap: float, horizon: int, alpha: float, variance: float, max_scale: float, sampling_variance: float = 0.25
) -> float:
    """``n*``: the least ``n >= 1`` with ``(sqrt(2(n σ² + V) L_T) + b L_T)/n < gap/2`` (float64).

    ``σ²`` is the per-pull sampling variance proxy (1/4 for rewards in ``[0, 1]``), ``V`` and
    ``b`` the release noise's worst variance and Laplace scale. ``n*`` is the largest root of
    ``(gap²/4) n² - (gap b L + 2 σ² L) n + b² L² - 2 V L``, rounded down, plus one.
    """
    log_t = math.log(2.0) + alpha * math.log(horizon)
    a = gap * gap / 4.0
    b = gap * max_scale * log_t + 2.0 * sampling_variance * log_t
    c = max_scale * max_scale * log_t * log_t - 2.0 * variance * log_t
    root = (b + math.sqrt(b * b - 4.0 * a * c)) / (2.0 * a)
    return float(math.floor(root) + 1.0)


def bernstein_regret_bound(
    means: ArrayLike,
    horizon: int,
    alpha: float,
    variance: float,
    max_scale: float,
    what: str,
    sampling_variance: float = 0.25,
) -> float:
    """``Σ_{Δ_a>0} Δ_a min(T, n_a* + K^{2-α}/(α-2))`` for a sub-gamma ``(n σ² + V, b)`` confidence bound.

    Proof: let ``n_a* = pulls_bound(Δ_a, ...)``; ``B(n, t) <= B̄(n, T)`` (``L_t <= L_T``, ``V(n) <= V``,
    ``b(n) <= b``) and ``B̄`` decreases in ``n``. After ``n_a*`` pulls, ``2 B(N_a, t) < Δ_a``, so arm
    ``a`` beats the optimal arm at ``t`` only if the optimal arm's lower bound or ``a``'s upper
    bound fails at one of the ``< t`` counts it may have, each with probability ``t^{-α}/2``:
    ``E N_a(T) <= n_a* + Σ_{t>K} t^{1-α} <= n_a* + K^{2-α}/(α-2)``.
    """
    if not alpha > 2:
        raise ValueError(f"alpha must be > 2 for the regret bound of {what}, got {alpha!r}")
    horizon = _validate.positive_int("horizon", horizon)
    mu = np.asarray(means, np.float64).reshape(-1)
    K = mu.size
    gaps = mu.max() - mu
    tail = K ** (2.0 - alpha) / (alpha - 2.0)
    total = 0.0
    for gap in gaps[gaps > 0]:
        n_star = pulls_bound(float(gap), horizon, alpha, variance, max_scale, sampling_variance)
        total += float(gap) * min(float(horizon), n_star + tail)
    return total


def anytime_lazy_ucb_regret_bound(means: ArrayLike, horizon: int, epsilon: float) -> float:
    """Anytime-Lazy-UCB (``jaxpriv.bandits.anytime_lazy_ucb``): the bound derived for its index's constants.

    ``R_T <= Σ_{Δ_j>0} Δ_j min(T, 2 m_j - 1 + Σ_{t=K+1}^{T} 3 (⌊log2 t⌋ + 1) t^{-3})``, with ``u_j`` the least
    integer ``n`` with ``w_T(n) = sqrt(3 log T/(2n)) + 3 log T/(ε n) <= Δ_j/2`` and ``m_j`` the least power of
    two ``>= u_j``; ``O(Σ log T/Δ_j + K log T/ε)``, the order of Hu, Huang & Mehta (2021).

    Proof. An arm's batches are its rewards ``1``, ``2-3``, ``4-7``, ... (sizes ``1, 2, 4, ...``): fixed
    i.i.d. blocks of its reward stack, each with its own ``Lap(1/(ε n))`` draw. Arm ``j`` is pulled at
    ``t > K`` only if (a) the optimal arm's index is below ``μ*``, or (b) ``I_j(t) > μ*``. (a): for the
    optimal arm's current batch, of one of the ``⌊log2 t⌋ + 1`` possible sizes ``n``, the mean falls
    ``sqrt(3 log t/(2n))`` below its expectation with probability ``<= t^{-3}`` (Hoeffding) and the noise
    ``3 log t/(ε n)`` below 0 with probability ``½ t^{-3}``. (b): once ``j``'s released batch has size
    ``n >= u_j``, ``2 w_t(n) <= 2 w_T(n) <= Δ_j``, so ``I_j(t) > μ*`` needs the batch mean or the noise to
    exceed its width, again ``<= 1.5 t^{-3}`` per possible size. ``j``'s released batch has size ``>= u_j``
    once its batch of size ``m_j`` has closed, after ``1 + 2 + ... + m_j = 2 m_j - 1`` pulls. Summing over
    ``t``: ``E N_j(T) <= 2 m_j - 1 + Σ_{t>K} 3 (⌊log2 t⌋ + 1) t^{-3}``, and ``N_j <= T``.

    Raises:
      ValueError: ``means`` is not a non-empty ``[K]`` array of means in ``[0, 1]``, ``epsilon <= 0`` or
        ``horizon`` is not a positive integer.
    """
    mu = np.asarray(means, np.float64)
    if mu.ndim != 1 or mu.size < 1 or not np.all(np.isfinite(mu)) or np.any((mu < 0) | (mu > 1)):
        raise ValueError(f"means must be a non-empty [K] array of arm means in [0, 1], got {means!r}")
    if not epsilon > 0:
        raise ValueError(f"epsilon must be in (0, inf], got {epsilon!r}")
    horizon = _validate.positive_int("horizon", horizon)
    K = mu.size
    log_t = math.log(horizon)
    steps = np.arange(K + 1, horizon + 1, dtype=np.float64)
    tail = float(np.sum(3.0 * (np.floor(np.log2(steps)) + 1.0) * steps**-3.0)) if steps.size else 0.0
    privacy = 0.0 if math.isinf(epsilon) else 3.0 * log_t / epsilon
    total = 0.0
    gaps = mu.max() - mu
    for gap in gaps[gaps > 0]:
        # w_T(n) <= gap/2  <=>  (gap/2) s² - sqrt(1.5 log T) s - 3 log T/ε >= 0 with s = sqrt(n).
        half = 0.5 * float(gap)
        s = (math.sqrt(1.5 * log_t) + math.sqrt(1.5 * log_t + 4.0 * half * privacy)) / (2.0 * half)
        u = max(1, math.ceil(s * s))
        m = 1 << max(0, math.ceil(math.log2(u)))
        total += float(gap) * min(float(horizon), 2.0 * m - 1.0 + tail)
    return total


# --- reconstructions: GOPE with noise on the per-action sums (bandits.hanna_gope, bandits.li_zhou_ji_gope) ------


def sums_gope_phase_constant(
    phase: int, num_actions: int, dim: int, delta: float, scale: float, laplace: bool, support: int
) -> float:
    """``c_ℓ`` of ``bandits._gope_core.sums_phase_constant`` in float64 (a copy: theory imports no learner).

    ``c⁰ = (8d/β²) log(4/δ_{K,ℓ})``, ``c₁ = (c⁰ + sqrt(c⁰² + 4v|S|dc⁰))/2`` with ``v = σ²`` (Gaussian) or
    ``4b²`` (Laplace), and for Laplace ``c = max(c₁, 4√2 b d log(4/δ_{K,ℓ})/β)``; the derivation is in the core's
    docstring (constants ours).
    """
    beta = 2.0**-phase
    log_term = math.log(4.0 * num_actions * phase * (phase + 1.0) / delta)
    c0 = 8.0 * dim / beta**2 * log_term
    v = (4.0 if laplace else 1.0) * scale**2
    c = 0.5 * (c0 + math.sqrt(c0**2 + 4.0 * v * support * dim * c0))
    if laplace:
        c = max(c, 4.0 * math.sqrt(2.0) * scale * dim * log_term / beta)
    return c


def sums_gope_regret_bound(
    horizon: int,
    num_actions: int,
    dim: int,
    delta: float,
    scale: float,
    laplace: bool,
    support: int | None = None,
) -> float:
    """A high-probability regret bound for the reconstructions ``hanna_gope`` / ``li_zhou_ji_gope`` (derived here).

    On the event that every arm's error is ``<= β_ℓ`` in every phase (probability ``>= 1 - δ``: union over arms
    and phases of ``δ_{K,ℓ} = δ/(Kℓ(ℓ+1))``, which ``sums_gope_phase_constant`` is built for, with an exact
    G-optimal design), every arm kept in phase ``ℓ`` has gap ``<= 4β_{ℓ-1} = 8β_ℓ`` (and ``<= 2`` for unit
    actions and ``‖θ*‖ <= 1``), and phase ``ℓ`` lasts at most ``c_ℓ + |S_ℓ|`` rounds:
    ``R_T <= Σ_ℓ min(c_ℓ + |S|, T - t_ℓ) min(2, 8β_ℓ)``, summed over the phases that start before ``T``.

    Args:
      horizon: ``T``.
      num_actions: ``K``.
      dim: ``d``.
      delta: the confidence δ.
      scale: the per-sum noise scale (Laplace ``b = 2/ε`` or Gaussian ``σ``; 0: GOPE's bound).
      laplace: the noise family (Laplace or Gaussian).
      support: a bound on the design's support (default ``min(K, d(d+1)/2)``, the small-support design's).

    Returns:
      The bound (float).
    """
    support = min(num_actions, dim * (dim + 1) // 2) if support is None else int(support)
    total, used, phase = 0.0, 0.0, 1
    while used < horizon:
        length = min(sums_gope_phase_constant(phase, num_actions, dim, delta, scale, laplace, support) + support,
                     horizon - used)  # fmt: skip
        total += length * min(2.0, 8.0 * 2.0**-phase)
        used += length
        phase += 1
    return total


def linpriv_regret_bound(
    horizon: int,
    dim: int,
    epsilon: float,
    delta: float = 0.001,
    regularization: float = 1.0,
    theta_bound: float = 1.0,
    noise_bound: float = 1.0,
) -> float:
    """The regret bound of the LinPriv reconstruction (``bandits.linpriv``), the seed's rectified form (derived here).

    Azize & Basu (App. F-C) rectify Neel & Roth's Theorem 5: the elliptical potential lemma bounds
    ``Σ_t min(1, ‖x_t‖²_{V_{t-1}^{-1}}) <= 2d log(1 + T/(dλ))``, and Cauchy–Schwarz then multiplies the
    *private* radius too by ``sqrt(2dT log(1 + T/(dλ)))`` (the formulas of App. F-C are lost in our copy
    of the paper; this is the argument its text states). With ``‖x‖ <= 1``, ``‖θ*‖ <= S``, per-round
    regret ``<= min(2, 2(β_T + γ_T)‖x_t‖_{V^{-1}})``, on the event (probability ``>= 1 - 2δ``) that
    OFUL's ellipsoid and ``linpriv_noise_radius`` hold:
    ``R_T <= 2 max(1, β_T + γ_T) sqrt(2dT log(1 + T/(dλ)))`` with
    ``β_T = R sqrt(2 log(1/δ) + d log(1 + T/(dλ))) + √λ S`` and ``γ_T`` at ``λ_min(V) = λ``.
    Order: ``O(d√T log T + d^{3/2} √T log² T / ε)``; the constants are ours.
    """
    depth = max(1, math.ceil(math.log2(max(horizon, 1)))) + 1
    log_det = dim * math.log(1.0 + horizon / (dim * regularization))
    beta = noise_bound * math.sqrt(2.0 * math.log(1.0 / delta) + log_det) + math.sqrt(regularization) * theta_bound
    if math.isinf(epsilon):
        gamma = 0.0
    else:
        b = depth * 2.0 * math.sqrt(dim) / epsilon
        log_term = math.log(2.0 * dim * horizon / delta)
        u = b * max(math.sqrt(8.0 * depth * log_term), 2.0 * math.sqrt(2.0) * log_term)
        gamma = math.sqrt(dim) * u / math.sqrt(regularization)
    return 2.0 * max(1.0, beta + gamma) * math.sqrt(2.0 * horizon * log_det)


# --- POCP with implicit gradient descent (Jain, Kothari & Thakurta, COLT 2012) -------------------------------


def pocp_sensitivity(lipschitz: ArrayLike, strong_convexity: ArrayLike) -> jax.Array:
    """``λ = 2L/H``: the iterate ``x̂_t`` of IGD (``η_t = 1/(Ht)``) moves by at most ``λ/t`` when one loss is replaced.

    The linearly decreasing sensitivity of ``jaxpriv.oco.pocp``: a replaced loss at step ``τ`` moves the
    (clipped) gradient by ``<= 2L``, so ``x̂_{τ+1}`` by ``<= 2L/(H(τ+1))``; every later implicit step is a
    ``s/(s+1)``-contraction (``Π_C`` of ``(s x̂_s + c_s)/(s+1)``, ``c_s`` the same on both sides), so
    ``||x̂_t - x̂'_t|| <= 2L/(H(τ+1)) · (τ+1)/t = 2L/(H t)`` for every ``τ < t``.
    """
    return 2.0 * jnp.asarray(lipschitz, jnp.float32) / jnp.asarray(strong_convexity, jnp.float32)


def pocp_noise_multiplier(horizon: int, epsilon: ArrayLike, delta: ArrayLike) -> jax.Array:
    """``c = sqrt(T - 1) · σ₁(ε, δ)``: POCP adds ``N(0, (c λ/t)² I)`` to the iterate played at step ``t >= 2``.

    The ``T - 1`` data-dependent releases ``x̃_t = x̂_t + b_t`` (``t = 2..T``) are Gaussian mechanisms of
    sensitivity ``Δ_t = λ/t`` and noise ``σ_t = c Δ_t``: each has noise multiplier ``c``, and their adaptive
    composition is the Gaussian mechanism with ``μ = sqrt(sum_t Δ_t²/σ_t²) = sqrt(T - 1)/c`` (Dong, Roth &
    Su 2022, Cor. 3.3). ``σ₁(ε, δ)`` is the analytic Gaussian mechanism's noise per unit sensitivity (Balle &
    Wang 2018, Thm. 8; ``mechanisms.analytic_gaussian_stddev``, never below the exact value), so the
    whole sequence is (ε, δ)-DP. 0 for ``T = 1`` (no release depends on the data).
    """
    unit = _accounting.analytic_gaussian_stddev(epsilon, delta, 1.0)
    return math.sqrt(max(int(horizon) - 1, 0)) * unit


def pocp_noise_stddev(
    t: ArrayLike, horizon: int, epsilon: ArrayLike, delta: ArrayLike, lipschitz: ArrayLike, strong_convexity: ArrayLike
) -> jax.Array:
    """``σ_t = c · 2L/(H t)`` for ``t >= 2`` and 0 at ``t = 1`` (``pocp_noise_multiplier``, ``pocp_sensitivity``)."""
    tf = jnp.asarray(t, jnp.float32)
    scale = pocp_noise_multiplier(horizon, epsilon, delta) * pocp_sensitivity(lipschitz, strong_convexity)
    return jnp.where(tf >= 2, scale / tf, 0.0)


def pocp_regret_bound(
    horizon: int,
    dim: int,
    lipschitz: ArrayLike,
    strong_convexity: ArrayLike,
    diameter: ArrayLike,
    epsilon: ArrayLike,
    delta: ArrayLike,
) -> jax.Array:
    """Expected regret of ``jaxpriv.oco.pocp`` (POCP with implicit gradient descent), exact constants.

    For ``H``-strongly convex losses with gradients ``||∇f_t|| <= L`` on a set of diameter ``D`` in ``R^d``:

    ``E[Regret(T)] <= H D²/2 + (L + H D)² ln(T + 1)/(2H) + L sqrt(d) · c · (2L/H) · ln T``,

    ``c = pocp_noise_multiplier(T, ε, δ)``. Proof. With ``w_t = Π_C(x̂_t + b_t)`` the point played and
    ``g_t = ∇f_t(w_t)``, strong convexity gives ``f_t(w_t) - f_t(u) <= f̃_t(w_t) - f̃_t(u)`` for the
    surrogate ``f̃_t(x) = <g_t, x - w_t> + (H/2)||x - w_t||²`` and every ``u ∈ C``. Split
    ``f̃_t(w_t) - f̃_t(u) = [f̃_t(x̂_t) - f̃_t(u)] + [f̃_t(w_t) - f̃_t(x̂_t)]``. (i) IGD on ``f̃_t`` with
    ``η_t = 1/(Ht)``: the ``(1 + η_t H)``-strong convexity of the step's objective gives
    ``f̃_t(x̂_{t+1}) - f̃_t(u) <= (Ht/2)||u - x̂_t||² - (H(t+1)/2)||u - x̂_{t+1}||² - (Ht/2)||x̂_{t+1} - x̂_t||²``,
    which telescopes to ``H D²/2``; and ``f̃_t(x̂_t) - f̃_t(x̂_{t+1}) - (Ht/2)||x̂_{t+1} - x̂_t||²
    <= ||G_t||²/(2H(t+1))`` with ``G_t = ∇f̃_t(x̂_t)``, ``||G_t|| <= L + HD``; ``sum_{t<=T} 1/(t+1) <= ln(T+1)``.
    (ii) ``f̃_t(w_t) - f̃_t(x̂_t) <= L||w_t - x̂_t|| <= L||b_t||`` (``Π_C`` is non-expansive, ``x̂_t ∈ C``),
    ``E||b_t|| <= sqrt(d) σ_t``, ``σ_t = 2Lc/(Ht)`` for ``t >= 2`` (``b_1 = 0``), ``sum_{t=2}^T 1/t <= ln T``.
    The noise term is ``O(sqrt(d T log(1/δ)) L² log T/(H ε))``: the ``Õ(sqrt(T) log(1/δ)/ε)`` of the paper.
    """
    t = float(horizon)
    lip = jnp.asarray(lipschitz, jnp.float32)
    h = jnp.asarray(strong_convexity, jnp.float32)
    diam = jnp.asarray(diameter, jnp.float32)
    igd = 0.5 * h * diam**2 + (lip + h * diam) ** 2 * math.log(t + 1.0) / (2.0 * h)
    c = pocp_noise_multiplier(horizon, epsilon, delta)
    return igd + lip * math.sqrt(dim) * c * (2.0 * lip / h) * math.log(t)


# --- Shariff & Sheffet 2018: joint-DP LinUCB (bandits.private_linucb) ----------------------------------------


def private_linucb_node_stddev(horizon: int, rho: float, action_bound: float = 1.0, reward_bound: float = 1.0) -> float:
    """The per-entry node noise ``s`` of ``bandits.private_linucb``'s tree (host, float64).

    ``binary_tree(T, (d+1)², "gaussian")`` with sensitivity ``Δ = sqrt(2) L̃²``, ``L̃² = L² + B²`` (the exact
    replace-one sensitivity of ``vec(z zᵀ)``: ``‖z zᵀ - z' z'ᵀ‖²_F = ‖z‖⁴ + ‖z'‖⁴ - 2 (zᵀz')² <= 2 L̃⁴``),
    ``D = ceil(log2 T) + 1`` nodes per input each with ``ρ/D``, so ``s² = D Δ²/(2ρ) = D L̃⁴/ρ``; 0 at ``ρ = inf``.
    """
    depth = _accounting.tree_depth(int(horizon))
    lsq = float(action_bound) ** 2 + float(reward_bound) ** 2
    rho = float(rho)
    return 0.0 if math.isinf(rho) else math.sqrt(2.0) * lsq * math.sqrt(depth / (2.0 * rho))


def private_linucb_constants(
    horizon: int,
    dim: int,
    rho: float,
    alpha: float = 0.05,
    action_bound: float = 1.0,
    reward_bound: float = 1.0,
    regularization: float = 0.0,
) -> dict[str, float]:
    """``Υ``, ``ρ_min``, ``ρ_max``, ``γ`` and the shift ``2Υ + λ`` of ``bandits.private_linucb`` (host, float64).

    ``Υ = sqrt(D) s (2 sqrt(d+1) + sqrt(2 log(4T/α)))``, ``ρ_min = Υ + λ``, ``ρ_max = 3Υ + λ``,
    ``γ = sqrt(D/2) s (sqrt(d) + sqrt(2 log(4T/α)))/sqrt(ρ_min)`` (derivation in
    ``bandits.private_linucb_regularizer``: the paper's bounded-regulariser assumption, w.p. ``>= 1 - α/2``).
    """
    s = private_linucb_node_stddev(horizon, rho, action_bound, reward_bound)
    depth = _accounting.tree_depth(int(horizon))
    tail = math.sqrt(2.0 * math.log(4.0 * horizon / alpha))
    upsilon = math.sqrt(depth) * s * (2.0 * math.sqrt(dim + 1) + tail)
    rho_min = upsilon + regularization
    h_norm = math.sqrt(depth / 2.0) * s * (math.sqrt(dim) + tail)
    gamma = h_norm / math.sqrt(rho_min) if h_norm > 0 else 0.0
    return {
        "node_stddev": s,
        "upsilon": upsilon,
        "rho_min": rho_min,
        "rho_max": 3.0 * upsilon + regularization,
        "gamma": gamma,
        "shift": 2.0 * upsilon + regularization,
    }


def private_linucb_radius(
    t: int,
    dim: int,
    rho_min: float,
    rho_max: float,
    gamma: float,
    alpha: float = 0.05,
    theta_bound: float = 1.0,
    noise_bound: float = 1.0,
    action_bound: float = 1.0,
) -> float:
    """``β_t = R sqrt(2 log(2/α) + d log(1 + t L²/(d ρ_min))) + S sqrt(ρ_max) + γ`` (Shariff & Sheffet, Prop. 4)."""
    inner = 2.0 * math.log(2.0 / alpha) + dim * math.log1p(t * action_bound**2 / (dim * rho_min))
    return noise_bound * math.sqrt(inner) + theta_bound * math.sqrt(rho_max) + gamma


def _linucb_theorem5(
    c: dict[str, float], horizon: int, dim: int, alpha: float, theta_bound: float, noise_bound: float,
    action_bound: float,
) -> float:  # fmt: skip
    """Theorem 5's ``max(β_T, S L) sqrt(8 T d log(1 + T L²/(d ρ_min)))`` at the constants ``c`` of either variant."""
    beta = private_linucb_radius(
        horizon, dim, c["rho_min"], c["rho_max"], c["gamma"], alpha, theta_bound, noise_bound, action_bound
    )
    potential = dim * math.log1p(horizon * action_bound**2 / (dim * c["rho_min"]))
    return max(beta, theta_bound * action_bound) * math.sqrt(8.0 * horizon * potential)


def private_linucb_regret_bound(
    horizon: int,
    dim: int,
    rho: float,
    alpha: float = 0.05,
    theta_bound: float = 1.0,
    noise_bound: float = 1.0,
    action_bound: float = 1.0,
    reward_bound: float = 1.0,
    regularization: float = 0.0,
) -> float:
    """Shariff & Sheffet 2018, Theorem 5, for ``bandits.private_linucb``: w.p. ``>= 1 - α``,

    ``Regret(T) <= max(β_T, S L) sqrt(8 T d log(1 + T L²/(d ρ_min)))``

    with ``β_T`` of ``private_linucb_radius`` and ``ρ_min``, ``ρ_max``, ``γ`` of ``private_linucb_constants``.
    Proof. On the event of probability ``>= 1 - α`` (regularisers bounded, self-normalised bound),
    ``θ*`` lies in every ellipsoid ``‖θ - θ̃_{t-1}‖_{Ṽ_{t-1}} <= β_{t-1}``, so optimism gives the round's regret
    ``r_t <= 2 β_{t-1} ‖x_t‖_{Ṽ_{t-1}⁻¹}``, and ``r_t <= 2 S L``; hence ``r_t <= 2 max(β_T, S L)
    min(1, ‖x_t‖_{U_{t-1}⁻¹})`` with ``U_t = V_t + ρ_min I ≼ Ṽ_t`` (``β_t`` grows with ``t``). Cauchy–Schwarz
    and the elliptical potential ``Σ_t min(1, ‖x_t‖²_{U_{t-1}⁻¹}) <= 2 log(det U_T/ρ_min^d) <= 2 d log(1 +
    T L²/(d ρ_min))`` (Abbasi-Yadkori et al. 2011, Lemma 11) give the bound. It assumes the linear model
    ``E[y | x] = <θ*, x>`` with ``R``-sub-Gaussian noise, ``|<θ*, x>| <= S L``, and that the clipping to
    ``‖x‖ <= L``, ``|y| <= B`` never binds. At the tree's noise ``ρ_min ≈ Υ = Õ(sqrt(d) L̃²/sqrt(ρ))``, so
    ``S sqrt(ρ_max) + γ`` dominates ``β_T`` unless ``ρ`` is large: vacuous (above ``2 S L T``) for small ``T``.
    """
    c = private_linucb_constants(horizon, dim, rho, alpha, action_bound, reward_bound, regularization)
    return _linucb_theorem5(c, horizon, dim, alpha, theta_bound, noise_bound, action_bound)


def private_linucb_wishart_constants(
    horizon: int,
    dim: int,
    epsilon: float,
    delta: float,
    alpha: float = 0.05,
    action_bound: float = 1.0,
    reward_bound: float = 1.0,
    regularization: float = 0.0,
) -> dict[str, float]:
    """``k``, ``ρ_min``, ``ρ_max``, ``γ``, shift ``λ`` of ``bandits.private_linucb(..., noise="wishart")`` (host).

    ``k = ceil(d + 1 + 224 m ln(8m/δ) ln(2/δ)/ε²)``, ``m = ceil(log2 T) + 1`` (Shariff & Sheffet §4.1 with Sheffet
    2015, Theorem 4.1); with ``Δ = sqrt(d) + sqrt(2 ln(8T/α))`` and ``L̃² = L² + B²``: ``ρ_min = L̃² (sqrt(k) - Δ)² + λ``,
    ``ρ_max = L̃² (sqrt(m k) + Δ)² + λ``, ``γ = L̃ (sqrt(d) + sqrt(2 ln(4T/α)))`` (derivation in
    ``bandits.private_linucb_wishart_regularizer``). No noise (``ε = inf``): ``k = inf``, ``(λ, λ, 0)``.
    """
    m = _accounting.tree_depth(int(horizon))
    lam = float(regularization)
    if math.isinf(float(epsilon)):
        return {"dof": math.inf, "rho_min": lam, "rho_max": lam, "gamma": 0.0, "shift": lam}
    k = math.ceil(dim + 1 + 224.0 * m * math.log(8.0 * m / delta) * math.log(2.0 / delta) / float(epsilon) ** 2)
    lsq = float(action_bound) ** 2 + float(reward_bound) ** 2
    spread = math.sqrt(dim) + math.sqrt(2.0 * math.log(8.0 * horizon / alpha))
    return {
        "dof": float(k),
        "rho_min": lsq * max(math.sqrt(k) - spread, 0.0) ** 2 + lam,
        "rho_max": lsq * (math.sqrt(m * k) + spread) ** 2 + lam,
        "gamma": math.sqrt(lsq) * (math.sqrt(dim) + math.sqrt(2.0 * math.log(4.0 * horizon / alpha))),
        "shift": lam,
    }


def private_linucb_wishart_regret_bound(
    horizon: int,
    dim: int,
    epsilon: float,
    delta: float,
    alpha: float = 0.05,
    theta_bound: float = 1.0,
    noise_bound: float = 1.0,
    action_bound: float = 1.0,
    reward_bound: float = 1.0,
    regularization: float = 0.0,
) -> float:
    """Theorem 5 of Shariff & Sheffet for the Wishart variant: ``max(β_T, S L) sqrt(8 T d log(1 + T L²/(d ρ_min)))``.

    The same proof as ``private_linucb_regret_bound`` with ``ρ_min``, ``ρ_max``, ``γ`` of
    ``private_linucb_wishart_constants`` (w.p. ``>= 1 - α``). With noise, ``ρ_max ≈ m k L̃²`` and
    ``k = Θ(m log²(m/δ)/ε²)`` make ``S sqrt(ρ_max)`` dominate: vacuous (above ``2 S L T``) unless ``T`` is very
    large, as the paper's corollary's ``n/log(n) >> k`` requires.
    """
    c = private_linucb_wishart_constants(
        horizon, dim, epsilon, delta, alpha, action_bound, reward_bound, regularization
    )
    return _linucb_theorem5(c, horizon, dim, alpha, theta_bound, noise_bound, action_bound)
