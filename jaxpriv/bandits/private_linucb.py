"""Joint-DP LinUCB with a tree of noisy Gram matrices (Shariff & Sheffet, NeurIPS 2018): Gaussian or Wishart noise.

**The guarantee is JOINT differential privacy** (Kearns et al. 2014): the actions shown to every *other* user
are private with respect to user ``t``'s data (context and reward); the action shown to user ``t`` itself is
not (it depends on user ``t``'s own context, which is the point). Standard DP of the whole action sequence
forces linear regret (shown in the paper), which is why the paper, and this module, state joint DP.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxpriv import _rng, _validate, declare, theory
from jaxpriv._base import Learner, NonfiniteInfo, PRNGKey, Spec, mechanism_step_count, poison_past_horizon, static_args
from jaxpriv.bandits.dp_ts import _gamma_at_least_one
from jaxpriv.mechanisms import TreeParams, TreeState, binary_tree, tree_depth
from jaxpriv.mechanisms._dyadic import dyadic_init, dyadic_step
from jaxpriv.mechanisms._noise import NoiseFamily, noise_family
from jaxpriv.mechanisms._sampler_floor import check_sampler_floor, sampler_floor_of

SQRT2 = math.sqrt(2.0)

__all__ = [
    "NOISES",
    "PrivateLinUCBParams",
    "PrivateLinUCBState",
    "PrivateLinUCBWishartParams",
    "private_linucb",
    "private_linucb_radius",
    "private_linucb_regularizer",
    "private_linucb_wishart_dof",
    "private_linucb_wishart_regularizer",
    "wishart",
]

#: The node noises of ``private_linucb``: the paper's two mechanisms (§4.2 Gaussian, §4.1 Wishart).
NOISES = ("gaussian", "wishart")

#: The largest Wishart degrees of freedom ``k`` accepted (``ε`` below about 1e-12 at ``δ = 1e-5``, ``T = 1e4``):
#: float32 holds ``k`` (to 3.4e38; ``ε² < 1.2e-38`` flushes to 0 and makes it ``inf``, which ``init`` reads as
#: "no noise"), and the tree's sums of ``m <= 64`` draws ``~ L̃² k`` and ``ρ_max ≈ L̃² m k`` stay 1e6 times below
#: float32's largest number for ``L̃² <= 50``. The Gamma sampler behind the draws is right at every finite shape.
MAX_WISHART_DOF = 1e30

FLOAT32_TINY = float(np.finfo(np.float32).tiny)


class PrivateLinUCBParams(NamedTuple):
    """Params of ``private_linucb`` (traced: a grid of any field compiles once).

    Attributes:
      rho: the zCDP budget ``ρ > 0`` of the tree's releases (``inf``: no noise, needs ``regularization > 0``).
        The policy is then ρ-zCDP-jointly private, hence ``(ρ + 2 sqrt(ρ log(1/δ)), δ)``-jointly DP for
        every ``δ ∈ (0, 1)`` (``jaxpriv.mechanisms.zcdp_to_dp``).
      alpha: the failure probability ``α ∈ (0, 1)`` of the regret bound (the paper's ``α``): the regulariser
        bounds fail w.p. ``<= α/2``, the self-normalised bound w.p. ``<= α/2`` (0.05).
      theta_bound: ``S >= ‖θ*‖`` (1).
      noise_bound: ``R``, the sub-Gaussian scale of the reward noise (the paper's ``σ``; 1).
      action_bound: ``L``: every action vector is clipped to ``‖x‖ <= L`` (1).
      reward_bound: ``B``: every reward is clipped to ``[-B, B]`` (1).
      regularization: ``λ >= 0``, added to the paper's shift (``0``: the paper's algorithm exactly).
    """

    rho: ArrayLike
    alpha: ArrayLike = 0.05
    theta_bound: ArrayLike = 1.0
    noise_bound: ArrayLike = 1.0
    action_bound: ArrayLike = 1.0
    reward_bound: ArrayLike = 1.0
    regularization: ArrayLike = 0.0


class PrivateLinUCBWishartParams(NamedTuple):
    """Params of ``private_linucb(..., noise="wishart")`` (traced: a grid of any field compiles once).

    Attributes:
      epsilon: ``ε > 0`` of the policy's ``(ε, δ)``-joint DP (``inf``: no noise, needs ``regularization > 0``).
      delta: ``δ ∈ (0, 1)`` of the same guarantee (no default: the Wishart mechanism is ``(ε, δ)``-DP only).
      alpha, theta_bound, noise_bound, action_bound, reward_bound, regularization: as in ``PrivateLinUCBParams``
        (``regularization = 0``: the paper's Wishart algorithm exactly, with no shift).
    """

    epsilon: ArrayLike
    delta: ArrayLike
    alpha: ArrayLike = 0.05
    theta_bound: ArrayLike = 1.0
    noise_bound: ArrayLike = 1.0
    action_bound: ArrayLike = 1.0
    reward_bound: ArrayLike = 1.0
    regularization: ArrayLike = 0.0


class PrivateLinUCBState(NamedTuple):
    """State of ``private_linucb``.

    Attributes:
      actions: shape=[K, d], the clipped action set of the coming round (zeros before round 1).
      exact: shape=[d+1, d+1], ``M_t = Σ_{s<=t} z_s z_sᵀ`` with ``z_s = (x_s, y_s)`` (never released; kept for
        diagnostics: ``release - exact`` is the tree's noise).
      release: shape=[(d+1)²], the tree's noisy prefix sum of ``vec(z_s z_sᵀ)`` at the last update (row-major).
      theta: shape=[d], ``θ̃ = Ṽ⁻¹ ũ``.
      gram_inv: shape=[d, d], ``Ṽ⁻¹``.
      radius: shape=(), ``β`` for the coming round.
      shift: shape=(), ``2Υ + λ``, added to the noisy Gram matrix.
      rho_min, rho_max, gamma: shape=(), the regulariser bounds ``Υ + λ``, ``3Υ + λ`` and ``γ``.
      alpha: shape=(), the failure probability ``α``.
      theta_bound, noise_bound, action_bound, reward_bound: shape=(), the calibrated params.
      tree: the binary tree's state over ``vec(z zᵀ)`` (Wishart noise: its ``scale`` is ``L̃²``, the Wishart's
        scale ``L̃² I``, 0 without noise).
      dof: shape=(), the Wishart mechanism's degrees of freedom ``k`` per node (0 with Gaussian noise).
    """

    actions: jax.Array
    exact: jax.Array
    release: jax.Array
    theta: jax.Array
    gram_inv: jax.Array
    radius: jax.Array
    shift: jax.Array
    rho_min: jax.Array
    rho_max: jax.Array
    gamma: jax.Array
    alpha: jax.Array
    theta_bound: jax.Array
    noise_bound: jax.Array
    action_bound: jax.Array
    reward_bound: jax.Array
    tree: TreeState
    dof: jax.Array


def private_linucb_wishart_dof(epsilon: ArrayLike, delta: ArrayLike, dim: int, horizon: int) -> jax.Array:
    """``k = ceil(d + 1 + 224 m ln(8m/δ) ln(2/δ)/ε²)``: the Wishart node noise's degrees of freedom (paper §4.1).

    ``m = D = ceil(log2 T) + 1`` nodes per input. Each node is the Wishart mechanism of Sheffet (2015, Theorem
    4.1, as quoted in Shariff & Sheffet's appendix: for ``ε₀ ∈ (0, 1)``, ``δ₀ ∈ (0, 1/e)`` and rows of norm
    ``<= L̃``, ``AᵀA + W``, ``W ~ W_p(L̃² I, k₀)``, is ``(ε₀, δ₀)``-DP w.r.t. changing one row when
    ``k₀ >= p + 28 ln(4/δ₀)/ε₀²``), here with ``p = d + 1`` and the paper's per-node budget
    ``(ε₀, δ₀) = (ε/sqrt(8 m ln(2/δ)), δ/(2m))``: ``28 ln(4/δ₀)/ε₀² = 224 m ln(8m/δ) ln(2/δ)/ε²``. The float32
    value is raised by a relative ``1e-6`` before the ceiling, so ``k`` is never below the real threshold (a larger
    ``k`` keeps the theorem's guarantee). ``inf`` at ``ε = inf`` (no noise).
    """
    m = tree_depth(horizon)
    eps = jnp.asarray(epsilon, jnp.float32)
    dlt = jnp.asarray(delta, jnp.float32)
    threshold = (dim + 1) + 224.0 * m * jnp.log(8.0 * m / dlt) * jnp.log(2.0 / dlt) / (eps * eps)
    return jnp.where(jnp.isinf(eps), jnp.inf, jnp.ceil(threshold * (1.0 + 1e-6)))


def private_linucb_wishart_regularizer(
    dof: ArrayLike, scale: ArrayLike, dim: int, horizon: int, alpha: ArrayLike, regularization: ArrayLike = 0.0
) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
    """``(shift, ρ_min, ρ_max, γ)`` for Wishart node noise (paper §4.1, Proposition of the accurate bounds).

    At round ``t`` the release carries ``N_t ~ W_{d+1}(L̃² I, c_t k)``, ``c_t = popcount(t) ∈ [1, m]`` (the sum of
    ``c_t`` independent node draws), ``L̃² = scale``. ``H_t = N_t[:d, :d] + λ I`` (no shift: a Wishart is PSD;
    ``λ`` = ``regularization``, 0 in the paper) and ``h_t = N_t[:d, d]``. With ``Δ = sqrt(d) + sqrt(2 ln(8T/α))``:

    * the eigenvalues of ``N_t[:d, :d] ~ W_d(L̃² I, c_t k)`` lie in ``L̃² (sqrt(c_t k) ± Δ)²`` w.p.
      ``>= 1 - α/(4T)`` (Sheffet 2015, Lemma A.3, quoted by the paper), so ``ρ_min = L̃² (sqrt(k) - Δ)² + λ``
      (``c_t >= 1``) and ``ρ_max = L̃² (sqrt(m k) + Δ)² + λ`` (``c_t <= m``). (The paper writes ``m k`` in both:
      its bound for a release that sums exactly ``m`` nodes; a binary tree's release sums ``popcount(t)``.)
    * writing ``N_t = L̃² [Z, z]ᵀ[Z, z]`` with ``Z``, ``z`` standard Gaussian, ``‖h_t‖²_{H_t⁻¹} <= L̃² zᵀ P z`` with
      ``P`` the projection on ``Z``'s column space (rank ``d``), a ``L̃² χ²(d)`` variable, so
      ``γ = L̃ (sqrt(d) + sqrt(2 ln(4T/α)))`` w.p. ``>= 1 - α/(4T)`` (Laurent & Massart). The paper's box omits
      the factor ``L̃`` (its authors' code, ``PrivateBandits.jl``, keeps it: ``γ = sqrt(eigmax(S)) (...)``).

    A union bound over the ``T`` rounds: both hold at every round w.p. ``>= 1 - α/2`` (as the Gaussian variant).
    At ``dof = inf`` (no noise): ``(λ, λ, λ, 0)``.
    """
    m = tree_depth(horizon)
    a = jnp.asarray(alpha, jnp.float32)
    lam = jnp.asarray(regularization, jnp.float32)
    k = jnp.asarray(dof, jnp.float32)
    noisy = jnp.isfinite(k)
    k = jnp.where(noisy, k, 0.0)
    lsq = jnp.where(noisy, jnp.asarray(scale, jnp.float32), 0.0)
    spread = math.sqrt(dim) + jnp.sqrt(2.0 * jnp.log(8.0 * horizon / a))
    rho_min = lsq * jnp.maximum(jnp.sqrt(k) - spread, 0.0) ** 2 + lam
    rho_max = lsq * (jnp.sqrt(m * k) + spread) ** 2 + lam
    gamma = jnp.sqrt(lsq) * (math.sqrt(dim) + jnp.sqrt(2.0 * jnp.log(4.0 * horizon / a)))
    return lam, rho_min, rho_max, gamma


def wishart(key: PRNGKey, dof: ArrayLike, width: int) -> jax.Array:
    """One ``W ~ W_p(I, k)`` (``p = width``, real ``k >= p + 1``, traced) by the Bartlett decomposition.

    ``W = A Aᵀ`` with ``A`` lower triangular, ``A_ii² ~ χ²(k - i)`` (``i = 0..p-1``) and ``A_ij ~ N(0, 1)`` below
    the diagonal (Bartlett 1933; the law of the Cholesky factor of a Wishart matrix). ``χ²(ν) = 2 Gamma(ν/2)``
    by the loop-free Marsaglia–Tsang sampler of ``bandits.dp_ts`` (shape ``ν/2 >= 1``; exact but for an event of
    probability ``< 4e-11`` per draw, and right in float32 at every finite shape since issue 45: before, its
    acceptance test cancelled from shape ~1e4 and the χ² draws were not χ²(k) for ε below about 0.15, KS p = 1e-23
    at k = 6.7e7). No loop in the step: ``p`` Gamma draws and ``p(p-1)/2`` normals.
    """
    k_chi, k_norm = _rng.split(key)
    idx = jnp.arange(width, dtype=jnp.float32)
    chi2 = 2.0 * _gamma_at_least_one(k_chi, 0.5 * (jnp.asarray(dof, jnp.float32) - idx))
    normals = _rng.normal(k_norm, (width, width), jnp.float32)
    low = jnp.tril(normals, -1) + jnp.diag(jnp.sqrt(chi2))
    return low @ low.T


def private_linucb_regularizer(
    node_stddev: ArrayLike, dim: int, horizon: int, alpha: ArrayLike, regularization: ArrayLike = 0.0
) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
    """``(shift, ρ_min, ρ_max, γ)``: the paper's shifted regulariser and its bounds (§4, Gaussian noise).

    The tree's release of ``vec(M_t)`` carries ``W_t``, a ``(d+1)×(d+1)`` matrix of i.i.d. ``N(0, c_t s²)``
    entries (``s``: ``node_stddev``, ``c_t = popcount(t) <= D = ceil(log2 T) + 1``). The policy uses
    ``N_t = (W_t + W_tᵀ)/2`` (the paper's symmetric noise: off-diagonal variance ``c_t s²/2``, diagonal
    ``c_t s²``) and the regulariser ``H_t = N_t[:d, :d] + (2Υ + λ) I``, ``h_t = N_t[:d, d]``.

    * ``‖N_t‖ <= ‖W_t‖ <= sqrt(D) s (2 sqrt(d+1) + sqrt(2 log(4T/α))) =: Υ`` w.p. ``>= 1 - α/(4T)``
      (``E‖G‖ <= 2 sqrt(k)`` for a ``k×k`` standard Gaussian ``G``, Gordon; ``‖·‖`` is 1-Lipschitz in the
      Frobenius norm, Gaussian concentration), so ``ρ_min I ≼ H_t ≼ ρ_max I`` with ``ρ_min = Υ + λ``,
      ``ρ_max = 3Υ + λ``: the paper's ``ρ_min = Υ``, ``ρ_max = 3Υ`` at ``λ = 0`` (the authors' code,
      ``PrivateBandits.jl``, ``GaussianMechanism``: ``ρ_min = σ_max``, ``ρ_max = ρ_min + 2σ_max``, shift
      ``ρ_min + σ_max``; an earlier LaTeX draft of theirs shifts by ``Υ + 1`` instead, ``ρ_min = 1``).
    * ``‖h_t‖ <= sqrt(D/2) s (sqrt(d) + sqrt(2 log(4T/α)))`` w.p. ``>= 1 - α/(4T)`` (same argument), so
      ``‖h_t‖_{H_t⁻¹} <= ‖h_t‖/sqrt(ρ_min) =: γ``.

    A union bound over the ``T`` rounds: both hold at every round w.p. ``>= 1 - α/2`` (the paper's
    Assumption: bounded regularisers w.p. ``1 - α/2``).
    """
    s = jnp.asarray(node_stddev, jnp.float32)
    depth = tree_depth(horizon)
    tail = jnp.sqrt(2.0 * jnp.log(4.0 * horizon / jnp.asarray(alpha, jnp.float32)))
    upsilon = math.sqrt(depth) * s * (2.0 * math.sqrt(dim + 1) + tail)
    lam = jnp.asarray(regularization, jnp.float32)
    rho_min = upsilon + lam
    rho_max = 3.0 * upsilon + lam
    h_norm = math.sqrt(depth / 2.0) * s * (math.sqrt(dim) + tail)
    gamma = jnp.where(h_norm > 0, h_norm / jnp.sqrt(rho_min), 0.0)
    return 2.0 * upsilon + lam, rho_min, rho_max, gamma


def private_linucb_radius(
    t: ArrayLike,
    dim: int,
    rho_min: ArrayLike,
    rho_max: ArrayLike,
    gamma: ArrayLike,
    alpha: ArrayLike,
    theta_bound: ArrayLike,
    noise_bound: ArrayLike,
    action_bound: ArrayLike,
) -> jax.Array:
    """``β_t = R sqrt(2 log(2/α) + d log(1 + t L²/(d ρ_min))) + S sqrt(ρ_max) + γ`` (the paper's Proposition 4).

    With ``Ṽ_t = V_t + H_t`` and ``θ̃_t - θ* = Ṽ_t⁻¹(Σ x_s η_s + h_t - H_t θ*)``: on the event of
    ``private_linucb_regularizer``, ``Ṽ_t ≽ V_t + ρ_min I``, so ``‖Σ x_s η_s‖_{Ṽ_t⁻¹} <= R sqrt(2 log(2/α)
    + log det(V_t + ρ_min I)/ρ_min^d)`` (Abbasi-Yadkori et al. 2011, Theorem 1, w.p. ``>= 1 - α/2``) and
    ``log det(V_t + ρ_min I)/ρ_min^d <= d log(1 + t L²/(d ρ_min))`` (the data's ``log det`` is private: the
    policy uses its public bound); ``‖H_t θ*‖_{Ṽ_t⁻¹} <= ‖θ*‖_{H_t} <= S sqrt(ρ_max)``;
    ``‖h_t‖_{Ṽ_t⁻¹} <= ‖h_t‖_{H_t⁻¹} <= γ``. So ``‖θ̃_t - θ*‖_{Ṽ_t} <= β_t`` at every ``t`` w.p. ``>= 1 - α``.
    (The paper states ``log(ρ_max/ρ_min + t L²/(d ρ_min))`` inside; ``1 + ...`` is the same derivation's.)
    """
    tf = jnp.asarray(t, jnp.float32)
    lmin = jnp.asarray(rho_min, jnp.float32)
    lsq = jnp.asarray(action_bound, jnp.float32) ** 2
    inner = 2.0 * jnp.log(2.0 / jnp.asarray(alpha, jnp.float32)) + dim * jnp.log1p(tf * lsq / (dim * lmin))
    return (
        jnp.asarray(noise_bound, jnp.float32) * jnp.sqrt(inner)
        + jnp.asarray(theta_bound, jnp.float32) * jnp.sqrt(jnp.asarray(rho_max, jnp.float32))
        + jnp.asarray(gamma, jnp.float32)
    )


def _clip_norm(x: jax.Array, bound: jax.Array) -> jax.Array:
    """``x / max(1, ‖x‖/L)`` over the last axis: ``‖x‖ <= L`` (the calibration's bound), directions kept."""
    norm = jnp.sqrt(jnp.sum(x * x, axis=-1, keepdims=True))
    return x / jnp.maximum(1.0, norm / bound)


def _spd_inverse(gram: jax.Array) -> jax.Array:
    """``V⁻¹`` of a symmetric positive definite ``V`` by an unrolled Cholesky factorisation (``d <= 8``).

    Scalar ``jnp`` ops fuse into the step and vectorise over seeds, with no loop in the compiled program (a
    LAPACK inverse compiles to loops on a CPU). Beyond ``d = 8``: ``jnp.linalg.inv``. On the event of
    probability ``< α/2`` where the shifted noisy matrix is not positive definite, the pivots are floored at
    ``1e-30`` (finite, not meaningful: the regret bound excludes that event; privacy is unaffected).
    """
    dim = gram.shape[-1]
    if dim > 8:
        return jnp.linalg.inv(gram)
    zero = jnp.zeros((), gram.dtype)
    low: list[list[Any]] = [[zero] * dim for _ in range(dim)]
    for j in range(dim):
        diag = gram[j, j] - sum((low[j][k] ** 2 for k in range(j)), zero)
        low[j][j] = jnp.sqrt(jnp.maximum(diag, 1e-30))
        for i in range(j + 1, dim):
            low[i][j] = (gram[i, j] - sum((low[i][k] * low[j][k] for k in range(j)), zero)) / low[j][j]
    inv_low: list[list[Any]] = [[zero] * dim for _ in range(dim)]  # L⁻¹, lower triangular
    for i in range(dim):
        inv_low[i][i] = 1.0 / low[i][i]
        for j in range(i):
            inv_low[i][j] = -sum((low[i][k] * inv_low[k][j] for k in range(j, i)), zero) / low[i][i]
    inv_l = jnp.stack([jnp.stack(row) for row in inv_low])
    return inv_l.T @ inv_l  # V⁻¹ = L⁻ᵀ L⁻¹


def _finite_or_zero(x: jax.Array) -> tuple[jax.Array, jax.Array]:
    bad = ~jnp.all(jnp.isfinite(x))
    return jnp.where(bad, jnp.zeros_like(x), x), bad


def _initial_state(
    params: Any, num_actions: int, dim: int, tree: TreeState, constants: tuple, dof: jax.Array
) -> PrivateLinUCBState:
    """Both variants' state before round 1 (``constants``: ``(shift, rho_min, rho_max, gamma)``)."""
    f32 = jnp.float32
    width = dim + 1
    shift, rho_min, rho_max, gamma = constants
    return PrivateLinUCBState(
        actions=jnp.zeros((num_actions, dim), f32),
        exact=jnp.zeros((width, width), f32),
        release=jnp.zeros((width * width,), f32),
        theta=jnp.zeros((dim,), f32),
        gram_inv=jnp.eye(dim, dtype=f32),
        radius=jnp.zeros((), f32),
        shift=shift,
        rho_min=rho_min,
        rho_max=rho_max,
        gamma=gamma,
        alpha=jnp.asarray(params.alpha, f32),
        theta_bound=jnp.asarray(params.theta_bound, f32),
        noise_bound=jnp.asarray(params.noise_bound, f32),
        action_bound=jnp.asarray(params.action_bound, f32),
        reward_bound=jnp.asarray(params.reward_bound, f32),
        tree=tree,
        dof=dof,
    )


def _solve(state: PrivateLinUCBState, release: jax.Array, m: jax.Array, gram: jax.Array, t: jax.Array):
    """Step 2: ``θ̃ = H⁻¹ (noisy Σ x y)`` from the release's symmetric ``m`` and the shifted ``gram``, round ``t + 1``'s
    radius."""
    dim = gram.shape[0]
    inv = _spd_inverse(gram)
    inv = 0.5 * (inv + inv.T)
    radius = private_linucb_radius(
        t,
        dim,
        state.rho_min,
        state.rho_max,
        state.gamma,
        state.alpha,
        state.theta_bound,
        state.noise_bound,
        state.action_bound,
    )
    return state._replace(release=release, theta=inv @ m[:dim, dim], gram_inv=inv, radius=radius)


def _play(key: PRNGKey, state: PrivateLinUCBState, t: jax.Array, num_actions: int, horizon: int) -> jax.Array:
    """Step 3: the optimistic action; round 1 is played blind (``A_1`` is not seen yet)."""
    x = state.actions
    width_k = jnp.sqrt(jnp.maximum(jnp.einsum("kd,de,ke->k", x, state.gram_inv, x), 0.0))
    scores = x @ state.theta + state.radius * width_k
    u = _rng.uniform(key, (), jnp.float32)  # the unrolled hash: no loop in the step
    blind = jnp.minimum((u * num_actions).astype(jnp.int32), num_actions - 1)
    arm = jnp.where(t == 1, blind, jnp.argmax(scores).astype(jnp.int32))
    return poison_past_horizon(arm, t, horizon)


def _observe(state: PrivateLinUCBState, feedback: Any) -> tuple[PrivateLinUCBState, jax.Array, jax.Array]:
    """The round's ``z = (x, y)`` clipped to ``‖x‖ <= L``, ``|y| <= B`` (the calibration's, Sheffet's row bound
    ``‖z‖² <= L̃²``), non-finite inputs zeroed; returns the state with the next actions and the exact sum,
    ``z zᵀ`` and whether the round's feedback had a non-finite entry (int32, the step's Info)."""
    x, bad_x = _finite_or_zero(jnp.asarray(feedback.action_vector, jnp.float32))
    y, bad_y = _finite_or_zero(jnp.asarray(feedback.reward, jnp.float32))
    nxt, bad_n = _finite_or_zero(jnp.asarray(feedback.next_actions, jnp.float32))
    x = _clip_norm(x, state.action_bound)
    y = jnp.clip(y, -state.reward_bound, state.reward_bound)
    z = jnp.concatenate([x, y[None]])
    outer = jnp.outer(z, z)
    state = state._replace(
        actions=_clip_norm(nxt, state.action_bound),
        exact=state.exact + outer,
    )
    return state, outer, (bad_x | bad_y | bad_n).astype(jnp.int32)


def private_linucb_bound(params: Any, env_params: Any, spec: Spec, horizon: int) -> float | None:
    """Shariff & Sheffet's Theorem 5 at the policy's constants, w.p. 1 - α: ``theory.private_linucb_regret_bound``,
    or ``theory.private_linucb_wishart_regret_bound`` for ``noise = "wishart"`` (the fields follow the params class).
    """
    del env_params
    a = declare.arguments(spec)
    values = [float(np.asarray(v)) for v in params]
    wishart = a.get("noise", "gaussian") == "wishart"
    bound = theory.private_linucb_wishart_regret_bound if wishart else theory.private_linucb_regret_bound
    return float(bound(horizon, int(a["dim"]), *values))


def _example(horizon: int, dim: int) -> declare.ExampleRun:
    """``private_linucb`` at one small configuration (``jaxpriv.testing.learner_examples``)."""
    from jaxpriv.envs._settings import setting

    s = setting("contextual", dim)
    return private_linucb(dim, 3, horizon), s.env, PrivateLinUCBParams(1.0), s.params


@declare.learner(
    "private_linucb", bound=private_linucb_bound, example=_example
)  # the params class follows noise: from its spec
def private_linucb(num_actions: int, dim: int, horizon: int, noise: NoiseFamily | str = "gaussian") -> Learner:
    """Joint-DP LinUCB (Shariff & Sheffet 2018, Algorithm 1 with the tree of §4, Gaussian or Wishart noise).

    **Joint DP, not DP**: what user ``t`` sees (its own action) depends on its own context; what every other
    user sees is private with respect to user ``t``'s context and reward.

    Algorithm 1 (LinUCB with changing regularisers ``H_t``, ``h_t``) with the tree of §4, per round ``t``, with
    ``z_s = (x_s, y_s)`` (steps as numbered here; the constants below are re-derived, docs/algorithms/baselines.md,
    and checked against the authors' LaTeX draft and Julia code, github.com/roshanshariff/PrivateBandits.jl,
    ``private-bandits.tex`` and ``src/DifferentialPrivacy.jl``: the published PDF was not available):

    1. (the tree, §4) ``M̃_{t-1} = M_{t-1} + N_{t-1}``: the noisy prefix sum of ``z_s z_sᵀ``, one binary tree over
       the flattened ``(d+1)×(d+1)`` matrix, symmetrised (``N = (W + Wᵀ)/2``);
    2. (the shifted regulariser) ``Ṽ_{t-1} = M̃_{t-1}[:d, :d] + (2Υ + λ) I = V_{t-1} + H_{t-1}``,
       ``ũ_{t-1} = M̃_{t-1}[:d, d] = u_{t-1} + h_{t-1}``; ``θ̃ = Ṽ⁻¹ ũ``;
    3. play ``x_t = argmax_{x ∈ A_t} <θ̃, x> + β_{t-1} ‖x‖_{Ṽ_{t-1}⁻¹}``
       (``private_linucb_radius``; ``Υ``, ``γ``, ``ρ_min``, ``ρ_max``: ``private_linucb_regularizer``);
    4. observe ``y_t``; feed ``vec(z_t z_tᵀ)`` to the tree.

    Round 1 is played uniformly at random (the action set of round ``t`` arrives with the feedback of round
    ``t - 1``, ``envs.contextual_linear_bandit``).

    Privacy (ρ-zCDP of the tree; the paper states (ε, δ)-joint DP): neighbouring inputs replace
    one user's ``(x_t, y_t)`` by any other (replace-one: the paper's "t-neighbours", which differ in one
    round's decision set and reward). ``x`` is clipped to ``‖x‖ <= L`` and ``y`` to ``[-B, B]`` inside
    ``update``, so ``‖vec(z zᵀ)‖ = ‖z‖² <= L̃² = L² + B²``. The replace-one ℓ2 sensitivity of ``vec(z zᵀ)``
    is ``sqrt(2) L̃²``, not the generic ``2L̃²``: ``<z zᵀ, z' z'ᵀ>_F = (zᵀz')² >= 0``, so
    ``‖z zᵀ - z' z'ᵀ‖²_F = ‖z‖⁴ + ‖z'‖⁴ - 2 (zᵀz')² <= 2 L̃⁴``, with equality for orthogonal ``z``, ``z'`` of
    norm ``L̃`` (``d + 1 >= 2``: the bound is attained). (Removing a user, ``z' = 0``, changes it by
    ``‖z‖² <= L̃²``: covered too.) The tree is ``binary_tree(T, (d+1)², "gaussian")`` given that
    sensitivity ``Δ = sqrt(2) L̃²`` directly (its calibration uses only ``‖in - in'‖ <= Δ`` for any two
    inputs; it clips inputs to ``‖·‖ <= Δ``, which never binds here): node noise ``N(0, D Δ²/(2ρ))`` per
    entry, ``D Δ²/(2ρ) = D L̃⁴/ρ``, and all ``T`` releases are ρ-zCDP. (Until issue 38 the tree was built
    with ``neighbouring="replace"``, i.e. ``Δ = 2L̃²``: sqrt(2) times more noise than the guarantee needs.)
    Every action shown to user ``s`` is a function of the releases before ``s`` and user
    ``s``'s own context: by the billboard lemma (Hsu et al. 2014, Lemma 9) the actions to all users other
    than ``t`` are ρ-zCDP in user ``t``'s data, i.e. ``(ρ + 2 sqrt(ρ log(1/δ)), δ)``-jointly DP for every
    ``δ`` (Bun & Steinke 2016, Prop. 1.3). The paper calibrates ``σ² = 16 m L̃⁴ log(4/δ)²/ε²`` per entry
    of its symmetric node noise for (ε, δ)-JDP; here the same symmetric Gaussian noise is calibrated by
    zCDP, whose conversion gives a smaller ε at the same noise. Non-finite feedback (a NaN / ±inf reward,
    action vector or next action set) is replaced by zero and counted in the step's Info (``NonfiniteInfo``).

    Regret (the paper's Theorem 5 with Proposition 4; ``jaxpriv.theory.private_linucb_regret_bound``): if
    ``|<θ*, x>| <= S L`` and the rewards are ``<θ*, x> + η`` with ``R``-sub-Gaussian ``η`` (clipping to
    ``[-B, B]`` and ``‖x‖ <= L`` never binds), then w.p. ``>= 1 - α``

    ``Regret(T) <= max(β_T, S L) sqrt(8 T d log(1 + T L²/(d ρ_min)))``;

    with the tree's noise ``ρ_min = Υ = Õ(sqrt(d) L̃² log T /sqrt(ρ))``, i.e. ``Õ(d^{3/4} sqrt(T) L̃ / ρ^{1/4})``
    (the paper's ``Õ(d^{3/4} sqrt(T/ε))`` shape).

    **Wishart noise** (``noise="wishart"``, the paper's first mechanism; params ``PrivateLinUCBWishartParams``,
    ``(ε, δ)``-joint DP): every tree node adds ``W ~ W_{d+1}(L̃² I, k)`` to its sum of ``z zᵀ`` (Sheffet 2015's
    Wishart mechanism; ``wishart``, Bartlett decomposition with traced ``k``), with
    ``k = ceil(d + 1 + 224 m ln(8m/δ) ln(2/δ)/ε²)`` (``private_linucb_wishart_dof``): each node is
    ``(ε₀, δ₀) = (ε/sqrt(8 m ln(2/δ)), δ/(2m))``-DP (Sheffet 2015, Theorem 4.1: ``k₀ >= d + 1 +
    28 ln(4/δ₀)/ε₀²``, for ``ε₀ < 1``, ``δ₀ < 1/e``, replace-one row of norm ``<= L̃``), and the ``m = D`` nodes an
    input enters compose adaptively to ``(ε/2 + m ε₀ (e^{ε₀} - 1), m δ₀ + δ/2)``-DP (advanced composition,
    Dwork, Rothblum & Vadhan 2010; Dwork & Roth 2014, Thm 3.20), which ``check`` requires to be ``<= (ε, δ)``
    (it refuses ``ε₀ >= 1`` or a composed ε above ``ε``). The releases are not symmetrised (a Wishart matrix is
    symmetric) and not shifted: ``H_t = N_t[:d, :d] + λ I`` is PSD; ``ρ_min``, ``ρ_max``, ``γ``:
    ``private_linucb_wishart_regularizer``. The tree's releases are then ``(ε, δ)``-DP and, by the billboard
    lemma as above, the policy is ``(ε, δ)``-jointly DP. Regret: Theorem 5 at these constants
    (``jaxpriv.theory.private_linucb_wishart_regret_bound``); ``ρ_min ≈ L̃² k`` with ``k = Θ(m log²(m/δ)/ε²)``
    makes the regulariser dominate until ``T >> k`` (the paper's corollary assumes ``n/log n >> k``).
    The Wishart draws are not covered by the float32 samplers' δ-floor
    accounting (``Spec.sampler_floor = None``, like the bandits' own Gaussian draws), nor is the Gamma sampler's
    ``< 4e-11`` per-draw failure event counted in δ (a node's noise is within total variation ``η = (d + 1) 4e-11``
    of the exact Wishart, which adds at most ``(1 + e^{ε₀}) η`` per node, ``<= m (1 + e)(d + 1) 4e-11`` in all:
    about ``9e-9`` at ``m = 15``, ``d = 3``).

    Args:
      num_actions: ``K >= 2`` actions per round.
      dim: ``d >= 1``.
      horizon: ``T >= K``: fixes the tree's depth ``D = ceil(log2 T) + 1`` and the union bound.
      noise: ``"gaussian"`` or the family ``GAUSSIAN`` (default; ρ-zCDP, params ``PrivateLinUCBParams``) or
        ``"wishart"`` ((ε, δ)-DP, params ``PrivateLinUCBWishartParams``).

    Returns:
      A ``Learner`` with params ``PrivateLinUCBParams`` (``"gaussian"``) or ``PrivateLinUCBWishartParams``
      (``"wishart"``; any other class is refused); feedback ``ContextualFeedback``.

    Raises:
      ValueError: ``num_actions < 2``, ``horizon < num_actions``, an unknown ``noise``; from ``check``:
        ``rho <= 0``, ``rho = inf`` (or ``epsilon = inf``) with ``regularization = 0`` (no regulariser),
        ``alpha ∉ (0, 1)``, non-positive or infinite ``theta_bound`` / ``action_bound`` / ``reward_bound``,
        negative ``noise_bound`` or ``regularization``, a ρ whose float32 samplers' δ floor is too large;
        Wishart: ``epsilon <= 0``, ``delta ∉ (0, 1)``, a per-node ``ε₀ >= 1`` or a composition above ``ε``, a
        ``delta`` below float32's smallest normal number (0 in float32: ``k`` would be infinite, read as no
        noise), or ``k > MAX_WISHART_DOF`` (``epsilon = 1e-30``: ``k`` overflows float32).

    References:
      R. Shariff, O. Sheffet. Differentially Private Contextual Linear Bandits. NeurIPS 2018 (arXiv
      1810.00068), Algorithm 1, §4 (tree-based noise, Gaussian noise), Proposition 4, Theorem 5.
      Y. Abbasi-Yadkori, D. Pál, Cs. Szepesvári. Improved Algorithms for Linear Stochastic Bandits. NeurIPS 2011.
      J. Hsu et al. Private Matchings and Allocations. STOC 2014 (the billboard lemma).
      O. Sheffet. Private Approximations of the 2nd-Moment Matrix Using Existing Techniques in Linear
      Regression. arXiv 1507.00056 (2015), Theorem 4.1, Lemma A.3 (as quoted by Shariff & Sheffet's appendix).
    """
    if isinstance(noise, NoiseFamily):  # the family object, as every noise= accepts it (Wishart has no object)
        noise = noise_family(noise, ("gaussian",)).name
    noise = _validate.choice("noise", noise, NOISES)
    if noise == "wishart":
        return _private_linucb_wishart(num_actions, dim, horizon)
    num_actions = _validate.positive_int("num_actions", num_actions, minimum=2)
    dim = _validate.positive_int("dim", dim)
    horizon = _validate.horizon(horizon)
    if horizon < num_actions:
        raise ValueError(f"horizon must be >= num_actions={num_actions}, got {horizon}")
    width = dim + 1
    # add_remove calibration with Δ = sqrt(2) L̃²: the exact replace-one sensitivity of vec(z zᵀ) (docstring)
    tree = binary_tree(horizon, width * width, "gaussian", neighbouring="add_remove")
    eye = jnp.eye(dim, dtype=jnp.float32)

    def tree_params(params: PrivateLinUCBParams) -> TreeParams:
        lsq = jnp.asarray(params.action_bound, jnp.float32) ** 2 + jnp.asarray(params.reward_bound, jnp.float32) ** 2
        return TreeParams(rho=params.rho, sensitivity=SQRT2 * lsq)  # ‖z zᵀ - z' z'ᵀ‖_F <= sqrt(2) (L² + B²)

    def check(params: PrivateLinUCBParams) -> None:
        _validate.budget_value("rho", params.rho)
        _check_common(params)
        rho, lam = _validate._concrete(params.rho), _validate._concrete(params.regularization)
        if rho is not None and lam is not None and np.any(np.isinf(rho) & (lam <= 0)):  # broadcast over a grid
            raise ValueError("private_linucb: rho=inf (no noise) leaves no regulariser: give regularization > 0")
        check_sampler_floor("private_linucb", params, sampler_floor_of(tree))  # the float32 samplers' δ floor
        tree.check(tree_params(params))  # the tree's own checks

    def _fit(state: PrivateLinUCBState, release: jax.Array, t: jax.Array) -> PrivateLinUCBState:
        """Steps 1–2: the symmetrised release, the shifted noisy Gram matrix, ``θ̃`` and round ``t + 1``'s radius."""
        w = release.reshape(width, width)
        m = 0.5 * (w + w.T)  # the paper's symmetric noise
        return _solve(state, release, m, m[:dim, :dim] + state.shift * eye, t)

    def init_fn(key: PRNGKey, params: PrivateLinUCBParams) -> PrivateLinUCBState:
        tree_state = tree.init(key, tree_params(params))
        constants = private_linucb_regularizer(tree_state.scale, dim, horizon, params.alpha, params.regularization)
        state = _initial_state(params, num_actions, dim, tree_state, constants, jnp.zeros((), jnp.float32))
        return _fit(state, state.release, jnp.zeros((), jnp.int32))  # round 1's (unused: played blind)

    def act_fn(key: PRNGKey, state: PrivateLinUCBState, t: jax.Array) -> jax.Array:
        return _play(key, state, t, num_actions, horizon)

    def update_fn(
        key: PRNGKey, state: PrivateLinUCBState, action: jax.Array, feedback: Any, t: jax.Array
    ) -> tuple[PrivateLinUCBState, NonfiniteInfo]:
        del action
        state, outer, bad = _observe(state, feedback)
        tree_state, release, tree_bad = mechanism_step_count(tree, key, state.tree, outer.reshape(-1), t)
        return _fit(state._replace(tree=tree_state), release, t), NonfiniteInfo(bad + tree_bad)

    static = static_args(noise=declare.OMIT)  # the Gaussian tree (the default): recorded as before ``noise``
    spec = Spec(
        params=PrivateLinUCBParams,
        private=True,
        static=static,
        num_arms=num_actions,
        sampler_floor=sampler_floor_of(tree),
    )
    return Learner(init_fn, act_fn, update_fn, check, horizon, spec=spec, returns_info=True)


def _check_common(params: Any) -> None:
    _validate.in_open_interval("alpha", params.alpha, 0.0, 1.0)
    _validate.positive("theta_bound", params.theta_bound, allow_inf=False)
    _validate.nonnegative("noise_bound", params.noise_bound)
    _validate.positive("action_bound", params.action_bound, allow_inf=False)
    _validate.positive("reward_bound", params.reward_bound, allow_inf=False)
    _validate.nonnegative("regularization", params.regularization)


def _private_linucb_wishart(num_actions: int, dim: int, horizon: int) -> Learner:
    """``private_linucb(..., noise="wishart")``: the same policy on a tree of Wishart-noised ``Σ z zᵀ`` (§4.1)."""
    num_actions = _validate.positive_int("num_actions", num_actions, minimum=2)
    dim = _validate.positive_int("dim", dim)
    horizon = _validate.horizon(horizon)
    if horizon < num_actions:
        raise ValueError(f"horizon must be >= num_actions={num_actions}, got {horizon}")
    width = dim + 1
    depth = tree_depth(horizon)  # the paper's m
    eye = jnp.eye(dim, dtype=jnp.float32)

    def check(params: PrivateLinUCBWishartParams) -> None:
        _validate.budget_value("epsilon", params.epsilon)
        _validate.in_open_interval("delta", params.delta, 0.0, 1.0)
        _check_common(params)
        eps, dlt = _validate._concrete(params.epsilon), _validate._concrete(params.delta)
        lam = _validate._concrete(params.regularization)
        if eps is not None and lam is not None and np.any(np.isinf(eps) & (lam <= 0)):
            raise ValueError("private_linucb: epsilon=inf (no noise) leaves no regulariser: give regularization > 0")
        if eps is None or dlt is None:
            return
        eps, dlt = np.broadcast_arrays(np.asarray(eps, np.float64), np.asarray(dlt, np.float64))
        if np.any(dlt < FLOAT32_TINY):  # δ = 1e-300 is 0 in float32: k = inf, read as "no noise"
            raise ValueError(
                f"private_linucb (wishart): delta={params.delta!r} is below float32's smallest normal number "
                f"{FLOAT32_TINY:.3g}: the traced degrees of freedom would be infinite (no noise added)"
            )
        finite = np.isfinite(eps)
        with np.errstate(divide="ignore", over="ignore"):
            dof = np.where(finite, width + 224.0 * depth * np.log(8.0 * depth / dlt) * np.log(2.0 / dlt) / eps**2, 0.0)
        if np.any(dof > MAX_WISHART_DOF):
            worst = float(np.max(dof))
            raise ValueError(
                f"private_linucb (wishart): epsilon={params.epsilon!r}, delta={params.delta!r} give Wishart degrees of "
                f"freedom k = {worst:.3g} (m = {depth}), above MAX_WISHART_DOF = {MAX_WISHART_DOF:g}: in float32 k "
                "overflows (or ε² underflows and k becomes inf, read as no noise), and the tree's sums of m draws and "
                "ρ_max ≈ L̃² m k leave float32's range: give a larger epsilon"
            )
        if np.any(dlt / (2.0 * depth) >= 1.0 / math.e):  # Theorem 4.1's δ₀ < 1/e (only at m = 1: T = 1)
            raise ValueError("private_linucb (wishart): the per-node δ₀ = δ/(2m) must be < 1/e (Sheffet 2015, Thm 4.1)")
        eps0 = np.where(finite, eps, 0.0) / np.sqrt(8.0 * depth * np.log(2.0 / dlt))
        composed = np.where(finite, eps, 0.0) / 2.0 + depth * eps0 * np.expm1(eps0)
        if np.any(finite & (eps0 >= 1.0)):
            raise ValueError(
                "private_linucb (wishart): the per-node ε₀ = ε/sqrt(8 m ln(2/δ)) must be < 1 (Sheffet 2015, "
                f"Theorem 4.1), got max {float(np.max(np.where(finite, eps0, 0.0))):.3g} (m = {depth}): lower epsilon"
            )
        if np.any(finite & (composed > eps * (1.0 + 1e-9))):
            raise ValueError(
                "private_linucb (wishart): advanced composition of the m per-node (ε₀, δ₀) exceeds ε "
                "(ε/2 + m ε₀ (e^ε₀ - 1) > ε): lower epsilon"
            )

    def _fit(state: PrivateLinUCBState, release: jax.Array, t: jax.Array) -> PrivateLinUCBState:
        m = release.reshape(width, width)  # symmetric already (a Wishart draw)
        gram = m[:dim, :dim] + state.shift * eye + jnp.where(t == 0, 1.0, 0.0) * eye  # t = 0: no data, no noise yet
        return _solve(state, release, m, gram, t)

    def init_fn(key: PRNGKey, params: PrivateLinUCBWishartParams) -> PrivateLinUCBState:
        del key
        f32 = jnp.float32
        lsq = jnp.asarray(params.action_bound, f32) ** 2 + jnp.asarray(params.reward_bound, f32) ** 2
        dof = private_linucb_wishart_dof(params.epsilon, params.delta, dim, horizon)
        noisy = jnp.isfinite(dof)
        scale = jnp.where(noisy, lsq, 0.0)  # the Wishart's scale matrix L̃² I (0: no noise)
        shift, rho_min, rho_max, gamma = private_linucb_wishart_regularizer(
            dof, lsq, dim, horizon, params.alpha, params.regularization
        )
        tree_state = TreeState(
            sums=dyadic_init(depth, width * width, f32),
            scale=scale,
            sensitivity=lsq,
        )
        state = _initial_state(
            params, num_actions, dim, tree_state, (shift, rho_min, rho_max, gamma), jnp.where(noisy, dof, 0.0)
        )
        return _fit(state, state.release, jnp.zeros((), jnp.int32))  # round 1's (unused: played blind)

    def act_fn(key: PRNGKey, state: PrivateLinUCBState, t: jax.Array) -> jax.Array:
        return _play(key, state, t, num_actions, horizon)

    def update_fn(
        key: PRNGKey, state: PrivateLinUCBState, action: jax.Array, feedback: Any, t: jax.Array
    ) -> tuple[PrivateLinUCBState, NonfiniteInfo]:
        del action
        state, outer, bad = _observe(state, feedback)
        # the node closing at t gets a fresh W_{d+1}(L̃² I, k) (k >= d + 2 keeps the Bartlett shapes >= 1)
        draw = state.tree.scale * wishart(key, jnp.maximum(state.dof, width + 1.0), width)
        sums, release = dyadic_step(state.tree.sums, outer.reshape(-1), t, draw.reshape(-1))
        release = poison_past_horizon(release, t, horizon)
        return _fit(state._replace(tree=state.tree._replace(sums=sums)), release, t), NonfiniteInfo(bad)

    spec = Spec(
        params=PrivateLinUCBWishartParams,
        private=True,
        num_arms=num_actions,
        sampler_floor=None,  # not covered: the Bartlett draws (docstring)
    )
    return Learner(init_fn, act_fn, update_fn, check, horizon, spec=spec, returns_info=True)
