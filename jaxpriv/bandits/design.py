"""G-optimal experimental design by Frank–Wolfe (Fedorov–Wynn), in JAX.

For a finite set ``A ⊂ R^d`` and a design ``π`` (a probability vector on
``A``): ``V(π) = Σ_a π(a) a aᵀ``, ``f(π) = log det V(π)`` and
``g(π) = max_a ‖a‖²_{V(π)^{-1}}``. By Kiefer–Wolfowitz (thesis Thm 5.9)
maximising ``f`` and minimising ``g`` are equivalent and ``g(π*) = d``.
Frank–Wolfe with exact line search on ``f`` (Fedorov–Wynn; Khachiyan; the thesis, p. 126, names
Frank–Wolfe without a tolerance: docs/algorithms/zcdp_bandits.md, 'Decoding choices')::

    w_i = a_iᵀ V(π)^{-1} a_i;   i* = argmax_i w_i;   stop when w_{i*} <= (1 + tol) d
    γ = (w_{i*}/d - 1) / (w_{i*} - 1);   π <- (1 - γ) π + γ e_{i*}

plus Wolfe's *away steps* (Atwood 1973; Todd 2016, §3.4): when the arm of
smallest leverage ``j`` in the support is further from ``d`` than ``i*`` is,
move weight away from it, ``π <- (1 + γ) π - γ e_j`` with the exact step
``γ = (d - w_j) / (d (w_j - 1))`` capped at ``π_j / (1 - π_j)`` (a drop step,
which removes ``j`` from the support). The plain Fedorov–Wynn iteration
converges at rate ``O(1/k)`` (about 800 iterations for ``tol = 1e-3`` on ten
arms in ``R^3``); with away steps the convergence is linear and supports stay
small (Kiefer–Wolfowitz: ``|Supp| <= d(d+1)/2`` exists).

**Sets that do not span R^d.** After eliminations the active set may span only
an ``r``-dimensional subspace (``r < d``; e.g. one or two arms left in
``R^3``). The design then lives in that span: ``V(π)^{-1}`` is the
pseudo-inverse on the span, and Kiefer–Wolfowitz reads ``g(π*) = r``
(a standard choice the paper leaves open: work in ``span(A_ℓ)``). The span's projector ``P`` comes from the
eigendecomposition of the (well-scaled) uniform-design Gram matrix, and
``V^+ = (V + (I - P))^{-1} - (I - P)``, solved by Cholesky.

Everything is a pure function of fixed-shape arrays (a boolean ``mask`` marks
the active arms), so it jits and vmaps; iterations run in a ``lax.while_loop``
bounded by a static ``max_iters``.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

#: Relative eigenvalue threshold deciding the span of the active arms.
SPAN_RTOL = 1e-5


class Design(NamedTuple):
    """A (near) G-optimal design.

    Attributes:
      weights: shape=[K], float32, ``π`` (zero outside the mask; sums to 1).
      g: shape=(), ``g(π) = max_{a active} ‖a‖²_{V(π)^+}``.
      rank: shape=(), int32, ``r = dim span(active arms)``; optimal ``g`` is ``r``.
      iters: shape=(), int32, the Frank–Wolfe iterations used.
    """

    weights: jax.Array
    g: jax.Array
    rank: jax.Array
    iters: jax.Array


def span_projector(actions: ArrayLike, mask: ArrayLike) -> tuple[jax.Array, jax.Array]:
    """The orthogonal projector onto ``span{a_i : mask_i}`` and its rank.

    Args:
      actions: ``[K, d]``.
      mask: ``[K]`` bool, the active arms.

    Returns:
      ``(P [d, d], rank int32)``.
    """
    x = jnp.asarray(actions, jnp.float32) * jnp.asarray(mask, jnp.float32)[:, None]
    gram = x.T @ x / jnp.maximum(jnp.sum(jnp.asarray(mask, jnp.float32)), 1.0)
    lam, vec = jnp.linalg.eigh(gram)
    keep = lam > SPAN_RTOL * jnp.maximum(jnp.max(lam), 1e-30)
    proj = (vec * keep.astype(jnp.float32)) @ vec.T
    return proj, jnp.sum(keep).astype(jnp.int32)


def pinv_on_span(gram: ArrayLike, proj: ArrayLike) -> jax.Array:
    """``V^+`` for a PSD ``V`` whose range is the range of the projector ``P``.

    ``V + s(I - P)`` is positive definite (``s = tr(V)/d`` keeps it well
    conditioned) and its inverse is ``V^+ + (I - P)/s``; solved by Cholesky.
    """
    gram = jnp.asarray(gram, jnp.float32)
    dim = gram.shape[-1]
    eye = jnp.eye(dim, dtype=jnp.float32)
    comp = eye - proj
    s = jnp.maximum(jnp.trace(gram) / dim, 1e-30)
    chol = jnp.linalg.cholesky(gram + s * comp)
    inv = jax.scipy.linalg.cho_solve((chol, True), eye)
    inv = inv - comp / s
    return 0.5 * (inv + inv.T)


def sqrt_pinv_on_span(gram: ArrayLike, proj: ArrayLike) -> jax.Array:
    """The symmetric ``(V^+)^{1/2}`` on the range of ``P`` (eigendecomposition)."""
    gram = jnp.asarray(gram, jnp.float32)
    dim = gram.shape[-1]
    comp = jnp.eye(dim, dtype=jnp.float32) - proj
    s = jnp.maximum(jnp.trace(gram) / dim, 1e-30)
    lam, vec = jnp.linalg.eigh(gram + s * comp)
    root = (vec * jax.lax.rsqrt(jnp.maximum(lam, 1e-30))) @ vec.T
    return root - comp / jnp.sqrt(s)


def design_gram(actions: ArrayLike, weights: ArrayLike) -> jax.Array:
    """``V(π) = Σ_a π(a) a aᵀ`` (also ``Σ_a T(a) a aᵀ`` for integer allocations)."""
    x = jnp.asarray(actions, jnp.float32)
    w = jnp.asarray(weights, jnp.float32)
    return (x * w[:, None]).T @ x


def leverages(actions: ArrayLike, gram_pinv: ArrayLike) -> jax.Array:
    """``w_i = a_iᵀ V^+ a_i`` for every row."""
    x = jnp.asarray(actions, jnp.float32)
    return jnp.einsum("kd,de,ke->k", x, gram_pinv, x)


def g_optimal_design(
    actions: ArrayLike,
    mask: ArrayLike | None = None,
    tol: float = 1e-3,
    max_iters: int = 5000,
    run: ArrayLike = True,
) -> Design:
    """A G-optimal design on the active arms by Frank–Wolfe with exact line search.

    Starts from the uniform design on the active arms and iterates until
    ``g(π) <= (1 + tol)·r`` or ``max_iters`` (``r`` the rank of the
    active set, ``r = d`` when it spans ``R^d``). By Kiefer–Wolfowitz the
    optimum is ``g = r``, so the stopping rule certifies near-optimality.

    Args:
      actions: ``[K, d]``, the rows ``a_i``.
      mask: ``[K]`` bool, the active arms (default: all). At least one.
      tol: the relative tolerance of the stopping rule (static).
      max_iters: iteration cap (static).
      run: a traced bool; ``False`` skips the iterations (0 iterations, the
        uniform design). Under ``vmap`` the loop then costs nothing unless
        some batch element runs: the phase-level gate of GOPE.

    Returns:
      A ``Design``.

    References:
      Lattimore & Szepesvári, Bandit Algorithms (2020), §21.1 (Kiefer–Wolfowitz,
      Frank–Wolfe); Todd, Minimum-Volume Ellipsoids (2016), the Fedorov–Wynn step.
    """
    x = jnp.asarray(actions, jnp.float32)
    k = x.shape[0]
    mask = jnp.ones((k,), bool) if mask is None else jnp.asarray(mask, bool)
    proj, rank = span_projector(x, mask)
    r = rank.astype(jnp.float32)
    maskf = mask.astype(jnp.float32)
    pi0 = maskf / jnp.maximum(jnp.sum(maskf), 1.0)

    def score(pi):
        w = leverages(x, pinv_on_span(design_gram(x, pi), proj))
        return jnp.where(mask, w, -jnp.inf)

    def cond(carry):
        _, w, it = carry
        return jnp.asarray(run, bool) & (it < max_iters) & (jnp.max(w) > (1.0 + tol) * r)

    def body(carry):
        pi, w, it = carry
        i = jnp.argmax(w)
        wi = w[i]
        on = mask & (pi > 0.0)
        j = jnp.argmin(jnp.where(on, w, jnp.inf))
        wj, pj = w[j], pi[j]
        # Toward step on a_i (exact line search): γ = (w_i/r - 1) / (w_i - 1).
        g_to = jnp.clip((wi / r - 1.0) / jnp.maximum(wi - 1.0, 1e-12), 0.0, 1.0)
        toward = (1.0 - g_to) * pi + g_to * jax.nn.one_hot(i, k, dtype=jnp.float32)
        # Away step from a_j (exact line search): γ = (r - w_j) / (r (w_j - 1)), at most π_j/(1 - π_j).
        g_max = pj / jnp.maximum(1.0 - pj, 1e-12)
        g_aw = jnp.clip((r - wj) / jnp.maximum(r * (wj - 1.0), 1e-12), 0.0, g_max)
        away = (1.0 + g_aw) * pi - g_aw * jax.nn.one_hot(j, k, dtype=jnp.float32)
        away = jnp.where(jnp.arange(k) == j, jnp.where(g_aw >= g_max, 0.0, away), away)
        use_away = ((r - wj) > (wi - r)) & (wj > 1.0) & (pj < 1.0)
        pi = jnp.maximum(jnp.where(use_away, away, toward), 0.0)
        pi = pi / jnp.sum(pi)
        return pi, score(pi), it + 1

    pi, w, it = jax.lax.while_loop(cond, body, (pi0, score(pi0), jnp.zeros((), jnp.int32)))
    return Design(weights=pi, g=jnp.max(w), rank=rank, iters=it)


def small_support_cap(dim: int) -> int:
    """``d(d+1)/2``: the support size ``prune_support`` reduces a design to (Kiefer–Wolfowitz's bound)."""
    return dim * (dim + 1) // 2


def prune_support(actions: ArrayLike, weights: ArrayLike, tol: float = 1e-6) -> jax.Array:
    """A design with at most ``d(d+1)/2`` support points and the same information matrix (Carathéodory).

    The reconstructions' small-support design (``hanna_gope``, ``li_zhou_ji_gope``; the choice is
    ours, docs/algorithms/baselines.md, 'Reconstructions'): weights at or below ``tol`` are dropped,
    then, while the support has more than ``m = d(d+1)/2`` points, a null vector ``z`` of the
    ``m × (m+1)`` matrix of ``vec(a aᵀ)`` (upper triangle) over the first ``m + 1`` support points
    is found (SVD), its sign chosen so that ``Σ z <= 0``, and ``π <- π + t z`` with the largest
    ``t`` keeping ``π >= 0``: ``V(π) = Σ π(a) a aᵀ`` is unchanged (up to float32 rounding), one
    support point leaves and the total weight does not grow. ``K - m`` iterations (static), each a
    no-op once the support is small enough.

    Args:
      actions: ``[K, d]``.
      weights: ``[K]``, a design (e.g. ``g_optimal_design(...).weights``).
      tol: weights ``<= tol`` count as off the support (``_gope_core.SUPPORT_TOL``).

    Returns:
      ``[K]`` float32 weights with at most ``d(d+1)/2`` entries above ``tol`` (the others zero).
    """
    x = jnp.asarray(actions, jnp.float32)
    k, dim = x.shape
    w0 = jnp.asarray(weights, jnp.float32)
    w0 = jnp.where(w0 > tol, w0, 0.0)
    m = small_support_cap(dim)
    if k <= m:
        return w0
    rows, cols = np.triu_indices(dim)
    feats = (x[:, :, None] * x[:, None, :])[:, rows, cols]  # [K, m]

    def body(_, w):
        on = w > 0.0
        order = jnp.argsort(jnp.logical_not(on), stable=True)[: m + 1]  # the first m + 1 support points
        _, _, vh = jnp.linalg.svd(feats[order].T, full_matrices=True)
        z = vh[-1]
        z = jnp.where(jnp.sum(z) > 0.0, -z, z)
        wz = w[order]
        ratio = jnp.where(z < 0.0, wz / jnp.maximum(-z, 1e-30), jnp.inf)
        j = jnp.argmin(ratio)
        moved = jnp.maximum(wz + ratio[j] * z, 0.0).at[j].set(0.0)
        moved = jnp.where(moved > tol, moved, 0.0)
        return jnp.where(jnp.sum(on) > m, w.at[order].set(moved), w)

    return jax.lax.fori_loop(0, k - m, body, w0)
