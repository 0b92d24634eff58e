"""Constraint sets: Euclidean projections and linear minimisation oracles.

A set is static structure (its kind and size are fixed when it is built); its
functions are pure and jit/vmap-friendly (they act on the last axis, so they
broadcast over leading batch axes). Projections are exact: closed forms for the
L2 ball and the box, the sort-based algorithm of Held, Wolfe & Crowder (1974)
/ Duchi, Shalev-Shwartz, Singer & Chandra (2008) for the simplex and the L1 ball.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxpriv import _safe, declare
from jaxpriv._reduce import reduce_last


class ConstraintSet(NamedTuple):
    """A closed convex set ``C ⊂ R^d``.

    Attributes:
      name: the kind of set (``"l2_ball"``, ``"box"``, ``"simplex"``, ``"l1_ball"``, ...).
      dim: the dimension ``d``.
      project: ``w -> argmin_{u in C} ||u - w||_2`` (last axis); ``None`` for a set
        known only through its linear oracle (learners that project reject it).
      linear_oracle: ``g -> argmin_{u in C} <g, u>`` (last axis).
      radius: ``||C||_2 = max_{u in C} ||u||_2``, the bound the papers call ``||C||``.
      diameter: ``max_{u, v in C} ||u - v||_2``.
      local_linear_oracle: ``(x, r, g) -> p``, a local linear oracle in the sense
        of Garber & Hazan (2016), Assumption 1 of the window-DP paper; ``None``
        for a set without one (projection-free window-private learners reject it).
      inner_center: ``c``, the centre of a ball ``c + r B`` inside ``C`` (inside its
        affine hull for a set that is not full-dimensional); ``None`` when unknown.
      inner_radius: ``r`` of that ball (``r <= radius``); ``None`` when unknown.
        Bandit-feedback learners play ``w + βu`` with ``w`` in the shrunk set and need it.
      local_oracle_rho: ``ρ`` of ``local_linear_oracle`` (its property 2, ``||x - p|| <= ρ r``);
        ``None`` when the set has no local linear oracle.
    """

    name: str
    dim: int
    project: Callable[[jax.Array], jax.Array] | None
    linear_oracle: Callable[[jax.Array], jax.Array]
    radius: float
    diameter: float
    local_linear_oracle: Callable[..., jax.Array] | None = None
    inner_center: tuple[float, ...] | None = None
    inner_radius: float | None = None
    local_oracle_rho: float | None = None


_F32 = np.finfo(np.float32)


def _check_float32_sizes(argument: str, **sizes: float) -> None:
    """The set's sizes (radius, diameter, ...) must be positive normal float32 numbers.

    The engine computes in float32: a radius or diameter beyond ``3.4e38`` would become ``inf``
    there (and a step size ``D/(L sqrt t)`` with it), one below ``1.2e-38`` would lose its precision.
    ``argument`` names what the caller gave (``"radius=1e+39"``).
    """
    lo, hi = float(_F32.tiny), float(_F32.max)
    for what, value in sizes.items():
        if not lo <= value <= hi:
            raise ValueError(
                f"{argument} gives the set a {what} of {value:.6g}, outside [{lo:.3g}, {hi:.3g}], the positive "
                "normal float32 numbers (the engine computes in float32)"
            )


def _check_dim_radius(dim: int, radius: float) -> None:
    from jaxpriv import _validate

    _validate.positive_int("dim", dim)
    if isinstance(radius, bool) or not (
        isinstance(radius, (int, float, np.integer, np.floating)) and 0 < radius < np.inf
    ):
        raise ValueError(f"radius must be a finite number > 0, got {radius!r}")
    _check_float32_sizes(f"radius={radius!r}", radius=float(radius), diameter=2.0 * float(radius))


def _plain_norm_ok(sq: jax.Array) -> jax.Array:
    """Whether ``sqrt(sq)``, ``sq = sum_i w_i²`` computed as is, is the norm to float rounding.

    ``sq`` must be finite (no square or partial sum overflowed) and at least ``tiny/eps²``
    (about ``8e-25`` in float32, a norm of ``9e-13``): XLA on a CPU flushes subnormal squares to
    zero, each losing less than ``tiny``, so ``d`` of them stay below ``d·eps²`` relative to ``sq``.
    """
    fi = jnp.finfo(sq.dtype)
    return jnp.isfinite(sq) & (sq >= fi.tiny / (fi.eps * fi.eps))


def _sq_and_peak_two(w: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``_sq_and_peak`` as two reductions: its derivatives (those of the projection before issue 47's merge)."""
    return jnp.sum(w * w, -1, keepdims=True), jnp.max(jnp.abs(w), -1, keepdims=True)


@_safe.smooth_derivatives(_sq_and_peak_two)
def _sq_and_peak(w: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``(sum_i w_i², max_i |w_i|)`` (last axis, kept) in one reduction: the same sum and maximum as two.

    One variadic reduction, so XLA's CPU compile reads ``w`` (or recomputes it) in one kernel, not two (issue 47);
    above ``_reduce.ONE_PASS_MAX`` entries two (vectorised: faster there, ``jaxpriv._reduce``).
    Differentiated, it is ``_sq_and_peak_two`` (JAX's derivative of a variadic reduction rounds differently).
    """
    sq, peak = reduce_last((w * w, jnp.abs(w)), ("sum", "max"))
    return sq[..., None], peak[..., None]


def _scaled(w: jax.Array, s: jax.Array | None = None) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
    """``(s, u, n, nonzero)`` with ``w = s·u``, ``s = max_i |w_i|`` and ``n = ||u||_2 ∈ [1, sqrt(d)]`` (last axis).

    Nothing overflows or underflows whatever the magnitude of ``w`` (finite entries): ``w`` is
    first brought near 1 by an exact power of two (``1/s`` itself would be subnormal for
    ``s > 8.5e37``, and XLA flushes subnormals to zero). For ``w = 0``: ``u = 0``, ``n = 1``
    and ``nonzero`` is false. The ``where``s keep gradients finite.
    """
    s = jnp.max(jnp.abs(w), -1, keepdims=True) if s is None else s  # or given: max_i |w_i|
    big, small = 2.0**64, 2.0**-64
    pre = jnp.where(s > big, small, jnp.where(s < small, big, 1.0)).astype(w.dtype)
    s1 = s * pre  # in [2^-64, 2^64] unless w = 0 (or w is subnormal, which XLA reads as 0)
    u = (w * pre) / jnp.where(s1 > 0, s1, 1.0).astype(w.dtype)
    nsq = jnp.sum(u * u, -1, keepdims=True)
    nonzero = nsq > 0
    return s, u, jnp.sqrt(jnp.where(nonzero, nsq, 1.0).astype(w.dtype)), nonzero


@declare.set("l2_ball")
def l2_ball(dim: int, radius: float = 1.0) -> ConstraintSet:
    """The Euclidean ball ``{w : ||w||_2 <= radius}``.

    Projection and linear oracle are scale-safe: where ``sum_i w_i²`` would overflow or
    lose precision in float32 (a norm beyond about ``1.8e19`` or below about ``9e-13``), the norm is
    taken of ``w / max_i |w_i|`` instead, so ``project([1e20, 0, 0])`` is ``[radius, 0, 0]`` and
    ``linear_oracle([1e-30, 0, 0])`` is ``[-radius, 0, 0]``. Elsewhere the numbers are those of
    the plain formula, bit for bit. Non-finite inputs give NaN.
    """
    _check_dim_radius(dim, radius)
    r = float(radius)

    def project(w: jax.Array) -> jax.Array:
        sq, peak = _sq_and_peak(w)
        ok = _plain_norm_ok(sq)
        norm = jnp.sqrt(jnp.where(ok, sq, 1.0).astype(sq.dtype))
        plain = w * jnp.minimum(1.0, r / jnp.maximum(norm, jnp.finfo(w.dtype).tiny))
        s, u, n, nonzero = _scaled(w, peak)
        inside = ~nonzero | (s <= r / n)  # ||w|| = s·n <= r, without forming s·n
        return jnp.where(ok, plain, jnp.where(inside, w, u * (r / n)))

    def linear_oracle(g: jax.Array) -> jax.Array:
        sq = jnp.sum(g * g, -1, keepdims=True)
        ok = _plain_norm_ok(sq)
        norm = jnp.sqrt(jnp.where(ok, sq, 1.0).astype(sq.dtype))
        plain = -r * g / jnp.maximum(norm, jnp.finfo(g.dtype).tiny)
        _, u, n, _ = _scaled(g)
        return jnp.where(ok, plain, -r * u / n)

    # Inner ball: the ball itself (r = R, centre 0).
    return ConstraintSet("l2_ball", dim, project, linear_oracle, r, 2.0 * r, None, (0.0,) * dim, r)


def require_projection(constraint: ConstraintSet, name: str = "constraint") -> ConstraintSet:
    """Raise ``ValueError`` (naming ``name``) unless ``constraint`` is a set with a projection."""
    if not isinstance(constraint, ConstraintSet):
        raise ValueError(f"{name} must be a jaxpriv.sets.ConstraintSet, got {type(constraint).__name__}")
    if constraint.project is None:
        raise ValueError(f"{name}: the set {constraint.name!r} has no Euclidean projection")
    return constraint


@declare.set("box")
def box(dim: int, low: float = -1.0, high: float = 1.0) -> ConstraintSet:
    """The box ``{w : low <= w_i <= high}`` (the L∞ ball when ``low = -high``).

    Projection: coordinatewise clipping. Linear oracle: ``low`` where ``g_i > 0``,
    ``high`` elsewhere (a vertex).
    """
    from jaxpriv import _validate

    _validate.positive_int("dim", dim)
    lo, hi = float(low), float(high)
    if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
        raise ValueError(f"low and high must be finite with low < high, got low={low!r}, high={high!r}")
    _check_float32_sizes(
        f"low={low!r}, high={high!r}",
        radius=float(np.sqrt(dim) * max(abs(lo), abs(hi))),
        diameter=float(np.sqrt(dim) * (hi - lo)),
        **{"half side": 0.5 * (hi - lo)},
    )

    def project(w: jax.Array) -> jax.Array:
        return jnp.clip(w, lo, hi)

    def linear_oracle(g: jax.Array) -> jax.Array:
        return jnp.where(g > 0, jnp.asarray(lo, g.dtype), jnp.asarray(hi, g.dtype))

    radius = float(np.sqrt(dim) * max(abs(lo), abs(hi)))
    # Inner ball: centred at the box's centre, radius half the side.
    centre = (0.5 * (lo + hi),) * dim
    return ConstraintSet(
        "box", dim, project, linear_oracle, radius, float(np.sqrt(dim) * (hi - lo)), None, centre, 0.5 * (hi - lo)
    )


#: Up to this many coordinates, a sort is done by pairwise ranks (``_sort_ascending``, ``_move_mass``).
RANK_SORT_MAX = 32


def _sort_ascending(x: jax.Array) -> jax.Array:
    """``jnp.sort(x, axis=-1)`` for finite or infinite entries; by pairwise ranks up to ``RANK_SORT_MAX``.

    The same values in the same order (zeros may trade signs): the rank of entry ``i`` is the
    number of entries before it (smaller, or equal at a lower position), and each output slot
    takes the one entry of its rank through a one-hot matrix (adding zeros: exact). This is
    elementwise work and sums over ``d``, which XLA fuses and vectorises over the leading (seed)
    axes, where its CPU ``sort`` handles one short row at a time (measured 1.6 us per row of 10,
    about a third of a WDP-COCOP step). ``O(d²)`` work: longer rows keep ``jnp.sort``. A sorting
    network (Batcher's, min/max on columns) ran about 1.2x faster still but added 4 s to a
    window learner's compile time. NaN entries are the caller's to replace.
    """
    d = x.shape[-1]
    if d > RANK_SORT_MAX or d < 2:
        return jnp.sort(x, axis=-1)
    return _to_order(_rank_onehot(x), x)


def _rank_onehot(key: jax.Array) -> jax.Array:
    """``onehot[..., i, p]``: entry ``i`` of ``key`` is at position ``p`` of its increasing order, ties by position.

    The rank of ``i`` is the number of entries before it (smaller, or equal at a lower position):
    the order of a stable sort, as a permutation matrix to move values through (adding zeros: exact).
    The count is unrolled over ``j`` (``d`` elementwise steps on the row) rather than a reduction
    over a ``[..., d, d]`` comparison: on a GPU, XLA (jax 0.11.2, H200) emitted that reduction at 10⁶
    seeds as one Triton kernel tiled 1024 x 10 x 10 that spilled 35 KB of registers per thread and
    took ``ptxas`` about 20 s, twice (autotuning, then the build): WDP-COCOP's sweep compiled in 44 s.
    """
    d = key.shape[-1]
    idx = jnp.arange(d)
    rank = jnp.zeros(key.shape, jnp.int32)
    for j in range(d):  # static, over coordinates: entries before i are smaller, or tied at j < i
        kj = key[..., j : j + 1]
        rank = rank + ((kj < key) | ((kj == key) & (j < idx))).astype(jnp.int32)
    return rank[..., :, None] == idx


def _to_order(onehot: jax.Array, v: jax.Array) -> jax.Array:
    """``v`` (last axis) in the order of ``onehot`` (``_rank_onehot``): slot ``p`` gets ``v_i`` if ``onehot[i, p]``.

    Unrolled over ``i`` (elementwise on the row, no ``[..., d, d]`` reduction; see ``_rank_onehot``).
    """
    out = jnp.where(onehot[..., 0, :], v[..., :1], 0.0)
    for i in range(1, v.shape[-1]):  # static; adding zeros: exact
        out = out + jnp.where(onehot[..., i, :], v[..., i : i + 1], 0.0)
    return out


def _from_order(onehot: jax.Array, x: jax.Array) -> jax.Array:
    """``_to_order``'s inverse: ``x`` (last axis, in the order of ``onehot``) back to the input's order.

    Slot ``i`` gets ``x_p`` at its rank ``p`` (``onehot[i, p]``); unrolled over ``p`` like ``_to_order``
    (adding zeros: exact).
    """
    out = jnp.where(onehot[..., 0], x[..., :1], 0.0)
    for p in range(1, x.shape[-1]):  # static
        out = out + jnp.where(onehot[..., p], x[..., p : p + 1], 0.0)
    return out


def _prefix_sums(x: jax.Array) -> jax.Array:
    """``sum_{j <= p} x_j`` at each ``p`` of the last axis, as ``jnp.cumsum`` adds them, without a ``reduce-window``.

    A masked sum unrolled over ``j``: ``s += where(p >= j, x_j, 0)`` for ``j = 1, ..., d - 1`` on the
    whole row, from ``s = x_0``. Each slot adds its ``x_j`` left to right as ``jnp.cumsum`` does, and
    zeros after (exact; an infinite entry is never multiplied by the mask): the numbers of XLA's CPU
    ``reduce-window`` bit for bit up to ``d = 17`` (measured; beyond, XLA rewrites it into another
    order). Elementwise work on the row, each step read by the next only: one fusion (see
    ``_project_simplex``). ``O(d²)``: for short rows.
    """
    d = x.shape[-1]
    p = jnp.arange(d)
    s = jnp.broadcast_to(x[..., :1], x.shape)
    for j in range(1, d):  # static, over coordinates
        s = s + jnp.where(p >= j, x[..., j : j + 1], 0.0)
    return s


def _project_simplex(v: jax.Array, total: float) -> jax.Array:
    """Exact projection of ``v`` (last axis) onto ``{w >= 0, sum w = total}``, sort-based.

    With ``u`` sorted decreasingly and ``k`` the largest index with
    ``u_k > (sum_{j<=k} u_j - total)/k``, the projection is ``max(v - θ, 0)``
    with ``θ = (sum_{j<=k} u_j - total)/k`` (Duchi et al. 2008, Figure 1).

    Scale-safe: the projection does not change when a constant is added to every entry,
    so an input whose largest entry exceeds ``total`` in magnitude is first shifted by that
    entry (``v - max v``). Without the shift, ``sum u_j - total`` loses ``total`` to rounding
    once the entries are large (``[1e8, 0, 0]`` went to ``[0, 0, 0]``, off the simplex) and
    overflows near ``3.4e38``.

    The output is formed in the sorted order, ``max(u - θ, 0)``, and moved back to ``v``'s
    order (through the rank sort's one-hot matrix: slot ``i`` gets the value at its rank; a
    scatter through the sort's permutation beyond ``RANK_SORT_MAX``), rather than as
    ``max(v - shift - θ, 0)`` from ``v`` again: XLA may recompute a fused ``v`` in each
    consumer and contract the multiply that made it into
    ``v - shift`` (one rounding instead of two), while the sort read the rounded product; the
    output was then off by up to an ulp of ``|v|``, more than ``total`` once ``|v| >~ 1e7·total``
    (PFTAL at ε = 1e-8 played ``[0, 228.6, 0, 0]``; issue 35). Every number is now computed once
    from the sorted values: the same operations on the same numbers as the formula with a
    rounded ``v``, so the result equals it bit for bit wherever ``v`` was rounded. Measured on
    one CPU core (PFTAL and WDP-COCOP sweeps, T = 1024, 256 seeds): 2-6% slower at d = 5-10,
    about 20% at d = 40 (the scatter).

    No gather and no cumulative sum up to ``RANK_SORT_MAX`` (issue 36): the partial sums
    ``sum_{j<=k} u_j`` are a masked sum over the lower triangle, unrolled over ``j`` in
    ``jnp.cumsum``'s order (``_prefix_sums``), the sum at the support's end ``k`` a one-hot select
    summed over the axis, and the move back the one-hot matrix above, its sum over ranks unrolled
    likewise (adding zeros: exact): elementwise work on the row, which XLA fuses.
    ``jnp.cumsum`` is a ``reduce-window`` and ``take_along_axis`` a ``gather``; on an NVIDIA H200
    (jax 0.11.2, 2026-11-27), WDP-COCOP on ``simplex(10)``, which had both, ran at 2.4e8
    seed-steps/s up to 1e5 seeds but about 4x slower from 3e5 seeds on, with 47-55 s of compile
    (7.5 s below), where learners without them showed no such cliff. Without them it ran at 3.1e8
    at 3e5 and 1e6 seeds (measured on the same GPU); the compile time had another cause
    (``_rank_onehot``). The numbers are those of
    ``jnp.cumsum`` and the gathers bit for bit up to ``d = 17`` (measured on the CPU); beyond,
    XLA's ``reduce-window`` added in another order, and the outputs differ in up to 0.6% of rows,
    by at most an eighth of an ulp of ``total`` (measured, d = 18-32). On the CPU (WDP-COCOP sweep,
    T = 1024, 256 seeds, 2 shared cores): the same time per step, fewer bytes per seed-step. (The
    sums as ``jnp.sum`` over a ``d × d`` select, also free of both, cost 5-7% more CPU time: XLA's
    CPU backend writes a float select out before it reduces; log-step shifted adds cost 1-2% and
    add in other orders.) Longer rows keep ``jnp.cumsum``, the gather and the scatter.
    A NaN entry of ``v`` stays NaN in the output; ``_onto_simplex`` is a last guard.
    """
    d = v.shape[-1]
    # -sort(-v): a NaN entry (last in the sort's order) becomes +inf in -v, last too; u is then -inf there
    # rather than NaN, which the prefix condition below excludes alike (the output keeps v's NaN).
    neg = -v
    key = jnp.where(jnp.isnan(neg), jnp.inf, neg)
    ranked = 2 <= d <= RANK_SORT_MAX
    if ranked:  # _sort_ascending's rank sort; its one-hot matrix moves the output back
        onehot = _rank_onehot(key)
        u = -_to_order(onehot, key)
        unsort = partial(_from_order, onehot)

    elif d < 2:
        u = -key

        def unsort(x: jax.Array) -> jax.Array:
            return x

    else:
        iota = jnp.broadcast_to(jnp.arange(d), key.shape)
        sorted_key, order = jax.lax.sort((key, iota), num_keys=1)
        u = -sorted_key

        def unsort(x: jax.Array) -> jax.Array:
            return jnp.put_along_axis(jnp.zeros_like(x), order, x, axis=-1, inplace=False)

    top = u[..., :1]
    shift = jnp.where(jnp.abs(top) <= total, jnp.zeros_like(top), top)  # the sort order is unchanged
    u = u - shift
    if ranked:  # the partial sums as jnp.cumsum adds them, elementwise work fused with the rest
        css = _prefix_sums(u) - total
    else:
        css = jnp.cumsum(u, axis=-1) - total
    ks = jnp.arange(1, d + 1, dtype=v.dtype)
    # cond is true exactly on a prefix; a partial sum that overflowed to -inf (entries near -3.4e38
    # after the shift) would make u - css/k = +inf there, outside the prefix: such entries are never
    # in the support.
    cond = (u - css / ks > 0) & jnp.isfinite(css)
    k = jnp.maximum(jnp.sum(cond, axis=-1, keepdims=True), 1)
    if ranked:  # css[k - 1] by a one-hot select (adding zeros: exact)
        css_k = jnp.sum(jnp.where(jnp.arange(d) == k - 1, css, 0.0), axis=-1, keepdims=True)
    else:
        css_k = jnp.take_along_axis(css, k - 1, axis=-1)
    theta = css_k / k.astype(v.dtype)
    w = jnp.where(jnp.isnan(v), v, unsort(jnp.maximum(u - theta, 0.0)))
    return _onto_simplex(w, v, total)


def _onto_simplex(w: jax.Array, v: jax.Array, total: float) -> jax.Array:
    """``w >= 0`` (last axis) unchanged when ``|sum w - total| <= SUM_TOLERANCE·d·total``, else put back on the simplex.

    A consistent evaluation of the projection sums to ``total`` within ``1.5·d`` ulps; this guard
    catches what would still escape (a compiler that recomputes a value differently in two places):
    such an output is rescaled to ``w·total/sum w`` (non-negative, summing to ``total`` within ``d``
    ulps); an all-zero one becomes the vertex ``total·e_i`` at ``i = argmax v``. NaN sums (a NaN in
    ``v``) are left as they are.
    """
    d = w.shape[-1]
    s = jnp.sum(w, axis=-1, keepdims=True)
    tol = SUM_TOLERANCE * d * total
    ok = ~(jnp.abs(s - total) > tol)  # NaN: left alone (the output keeps v's NaN)
    positive = s > 0
    rescaled = (w / jnp.where(positive, s, 1.0).astype(w.dtype)) * total
    vertex = total * jax.nn.one_hot(jnp.argmax(v, axis=-1), d, dtype=w.dtype)
    return jnp.where(ok, w, jnp.where(positive, rescaled, vertex))


#: ``_onto_simplex``'s tolerance per coordinate, relative to ``total``: 2 float32 ulps of 1. A consistent
#: evaluation of the projection sums to ``total`` within ``0.75·d`` ulps for almost every row and within
#: ``1.5·d`` for all measured (d = 2 to 100, inputs of scale 0.1 to 1e4; the largest, 4.5 ulps at d = 3, in a few
#: rows of 10⁵ at d = 3 and 5), so the guard leaves every such output as it is, bit for bit.
SUM_TOLERANCE = 2.0 * float(np.finfo(np.float32).eps)


@declare.set("simplex")
def simplex(dim: int, total: float = 1.0) -> ConstraintSet:
    """The simplex ``{w >= 0 : sum_i w_i = total}`` (``total = 1``: the experts' set ``Δ_p``).

    Projection: the exact sort-based algorithm, ``O(d log d)`` (for ``d <= 32`` the sort is by
    pairwise ranks and the partial sums are unrolled masked sums, which XLA vectorises over seeds;
    the same numbers: ``_project_simplex``). Linear oracle:
    the vertex ``total·e_i`` at ``i = argmin_i g_i``. Local linear oracle: Garber &
    Hazan's simplex construction, ``ρ = sqrt(d)`` (``simplex_local_oracle``).
    """
    from jaxpriv import _validate

    _validate.positive_int("dim", dim)
    r = float(total)
    if not (np.isfinite(r) and r > 0):
        raise ValueError(f"total must be a finite number > 0, got {total!r}")
    _check_float32_sizes(f"total={total!r}", radius=r, diameter=r * float(np.sqrt(2.0)))

    def project(w: jax.Array) -> jax.Array:
        return _project_simplex(w, r)

    def linear_oracle(g: jax.Array) -> jax.Array:
        return r * jax.nn.one_hot(jnp.argmin(g, axis=-1), dim, dtype=g.dtype)

    diameter = r * float(np.sqrt(2.0)) if dim > 1 else 0.0
    # Inner ball, inside the affine hull {sum w = total} (the simplex is not full-dimensional): centred at
    # the barycentre total/d·1, radius the distance to a facet, total/sqrt(d(d-1)). None for d = 1 (a point).
    centre = (r / dim,) * dim if dim > 1 else None
    inner = r / float(np.sqrt(dim * (dim - 1))) if dim > 1 else None
    return ConstraintSet(
        "simplex",
        dim,
        project,
        linear_oracle,
        r,
        diameter,
        simplex_local_oracle(dim, r),
        centre,
        inner,
        float(np.sqrt(dim)),
    )


@declare.set("l1_ball")
def l1_ball(dim: int, radius: float = 1.0) -> ConstraintSet:
    """The cross-polytope ``{w : ||w||_1 <= radius}``.

    Projection: ``w`` itself inside the ball, else ``sign(w)·Π_{simplex(radius)}(|w|)``
    (Duchi et al. 2008, section 4). Linear oracle: ``-radius·sign(g_i)·e_i`` at
    ``i = argmax_i |g_i|``. Local linear oracle: the simplex construction on a
    lift of the ball, ``ρ = 2 sqrt(d)`` (``l1_ball_local_oracle``).
    """
    _check_dim_radius(dim, radius)
    r = float(radius)

    def project(w: jax.Array) -> jax.Array:
        inside = jnp.sum(jnp.abs(w), -1, keepdims=True) <= r
        return jnp.where(inside, w, jnp.sign(w) * _project_simplex(jnp.abs(w), r))

    def linear_oracle(g: jax.Array) -> jax.Array:
        i = jnp.argmax(jnp.abs(g), axis=-1)
        e = jax.nn.one_hot(i, dim, dtype=g.dtype)
        g_i = jnp.sum(jnp.where(e > 0, g, 0.0), -1, keepdims=True)  # g at i by a one-hot select, not a gather
        sign = jnp.where(g_i > 0, -1.0, 1.0).astype(g.dtype)
        return r * sign * e

    # Inner ball: the largest Euclidean ball inside the cross-polytope, centre 0, radius R/sqrt(d).
    inner = r / float(np.sqrt(dim))
    return ConstraintSet(
        "l1_ball",
        dim,
        project,
        linear_oracle,
        r,
        2.0 * r,
        l1_ball_local_oracle(dim, r),
        (0.0,) * dim,
        inner,
        2.0 * float(np.sqrt(dim)),
    )


SET_KINDS = ("l2_ball", "box", "simplex", "l1_ball")


def bandit_radii(constraint: ConstraintSet, name: str = "constraint") -> tuple[float, float]:
    """``(r, R_c)``: the inner radius and the outer radius about the inner centre ``c``, for bandit learners.

    ``c + r B ⊆ C ⊆ c + R_c B`` (within the affine hull for the simplex): the
    sandwich ``rB ⊆ C ⊆ RB`` of Smith & Thakurta 2013 (section 1) and FKM 2005,
    about ``c = constraint.inner_center`` rather than the origin. ``R_c`` is exact
    for the four kinds of this module (``l2_ball``, ``l1_ball``: ``R``; ``box``: half
    its diameter; ``simplex``: ``total sqrt((d-1)/d)``, the distance from the
    barycentre to a vertex) and the bound ``||C|| + ||c||`` for any other set.

    Raises:
      ValueError: (naming ``name``) the set has no known inner ball.
    """
    if not isinstance(constraint, ConstraintSet):
        raise ValueError(f"{name} must be a jaxpriv.sets.ConstraintSet, got {type(constraint).__name__}")
    r = constraint.inner_radius
    if r is None or constraint.inner_center is None or not 0 < r < np.inf:
        raise ValueError(
            f"{name}: the set {constraint.name!r} (dim={constraint.dim}) has no known inner ball c + rB with r > 0; "
            "bandit-feedback learners need one to keep the played point w + βu in the set"
        )
    if constraint.name in ("l2_ball", "l1_ball"):
        outer = constraint.radius
    elif constraint.name == "box":
        outer = 0.5 * constraint.diameter
    elif constraint.name == "simplex":
        outer = constraint.radius * float(np.sqrt((constraint.dim - 1) / constraint.dim))
    else:
        outer = constraint.radius + float(np.linalg.norm(np.asarray(constraint.inner_center, np.float64)))
    return float(r), float(outer)


# --- local linear oracles (Garber & Hazan 2016; Assumption 1 of the window-DP COCO paper) ------------


def _move_mass(z: jax.Array, c: jax.Array, mass: jax.Array) -> jax.Array:
    """``argmin <c, y>`` over ``{y >= 0, sum y = sum z, ||y - z||_1 <= 2·mass}`` for one vector ``z >= 0``.

    Moves ``mass`` (at most ``sum z``) from the coordinates with the largest ``c`` (in
    decreasing order, each emptied before the next) onto the coordinate with the smallest
    ``c``: the vertex direction the linear oracle returns. One sort of ``c``; up to
    ``RANK_SORT_MAX`` coordinates by pairwise ranks, with the partial sums as unrolled masked sums
    (no gather, no cumulative sum: see ``_project_simplex``).
    """
    d = z.shape[-1]
    if d > RANK_SORT_MAX:
        neg_c, zs, order = jax.lax.sort((-c, z, jnp.arange(d)), num_keys=1)  # decreasing c
        del neg_c

        def unsort(v: jax.Array) -> jax.Array:
            return jnp.zeros_like(z).at[order].set(v)

    else:  # short rows: the same order (decreasing c, ties by coordinate) by pairwise ranks, no sort
        onehot = _rank_onehot(-c)
        zs = _to_order(onehot, z)
        unsort = partial(_from_order, onehot)

    before = (jnp.cumsum(zs) if d > RANK_SORT_MAX else _prefix_sums(zs)) - zs
    take = jnp.clip(mass - before, 0.0, zs)
    removed = unsort(take)
    gain = mass * jax.nn.one_hot(jnp.argmin(c), d, dtype=z.dtype)
    return z - removed + gain


def simplex_local_oracle(dim: int, total: float = 1.0) -> Callable[..., jax.Array]:
    """The local linear oracle of the simplex ``{w >= 0 : sum w = total}`` (Garber & Hazan 2016).

    ``LLOO(x, r, g)`` moves the mass ``Δ = min(sqrt(d) r / 2, total)`` from the
    coordinates of ``x`` with the largest ``g`` onto the vertex ``argmin_i g_i`` (the
    linear oracle's answer). Every ``y`` in the simplex with ``||y - x||_2 <= r`` has
    ``||y - x||_1 <= min(sqrt(d) r, 2·total) = 2Δ``, and the returned ``p`` minimises
    ``<g, y>`` over all such ``y`` with ``||y - x||_1 <= 2Δ``, so (Assumption 1)
    ``<g, p> <= <g, y>`` for every ``y`` in ``B(x, r) ∩ Δ`` and
    ``||p - x||_2 <= ||p - x||_1 <= 2Δ <= ρ r`` with ``ρ = sqrt(d)``.
    Garber's construction (guest post on S. Bubeck's blog, 2013; docs/algorithms/window.md, 'Decoding choices').

    Returns:
      ``(x[..., d], r[...], g[..., d]) -> p[..., d]``, broadcasting over leading axes.
    """
    root_d = float(np.sqrt(dim))

    def one(x: jax.Array, r: jax.Array, g: jax.Array) -> jax.Array:
        mass = jnp.minimum(0.5 * root_d * r, total).astype(x.dtype)
        return _move_mass(x, g, mass)

    return jnp.vectorize(one, signature="(d),(),(d)->(d)")


def l1_ball_local_oracle(dim: int, radius: float = 1.0) -> Callable[..., jax.Array]:
    """A local linear oracle of the L1 ball ``{w : ||w||_1 <= R}``, through the simplex one.

    The ball is the image of the simplex ``{z = (u, v, s) >= 0 : sum z = R}`` in
    ``R^{2d+1}`` under ``w = u - v``. ``x`` is lifted canonically,
    ``x' = (x⁺, x⁻, R - ||x||_1)``, the objective to ``(g, -g, 0)``, and the simplex
    step moves the mass ``Δ = min(sqrt(d) r, R)``; ``p = u - v`` of the result.
    For every ``y`` of the ball, ``||y' - x'||_1 = ||y - x||_1 + |‖y‖_1 - ‖x‖_1| <= 2 sqrt(d) ||y - x||_2``,
    so every ``y`` in ``B(x, r)`` is reached by a lifted point within the simplex step's
    L1 budget ``2Δ`` and ``<g, p> <= <g, y>`` (property 1); ``||p - x||_2 <= ||p' - x'||_1 <= 2Δ``
    gives ``ρ = 2 sqrt(d)`` (property 2). The vertex gaining the mass is the ball's
    linear-oracle vertex ``-R sign(g_i) e_i``, ``i = argmax |g_i|`` (the slack ``s``, i.e. the
    centre, when ``g = 0``).

    Returns:
      ``(x[..., d], r[...], g[..., d]) -> p[..., d]``, broadcasting over leading axes.
    """
    root_d = float(np.sqrt(dim))

    def one(x: jax.Array, r: jax.Array, g: jax.Array) -> jax.Array:
        slack = jnp.maximum(radius - jnp.sum(jnp.abs(x)), 0.0)
        lifted = jnp.concatenate([jnp.maximum(x, 0.0), jnp.maximum(-x, 0.0), slack[None]])
        cost = jnp.concatenate([g, -g, jnp.zeros((1,), g.dtype)])
        mass = jnp.minimum(root_d * r, radius).astype(x.dtype)
        moved = _move_mass(lifted, cost, mass)
        return moved[:dim] - moved[dim : 2 * dim]

    return jnp.vectorize(one, signature="(d),(),(d)->(d)")


def require_local_oracle(constraint: ConstraintSet, name: str = "constraint") -> ConstraintSet:
    """Raise ``ValueError`` (naming ``name``) unless ``constraint`` has a local linear oracle and its ``ρ``."""
    if not isinstance(constraint, ConstraintSet):
        raise ValueError(f"{name} must be a jaxpriv.sets.ConstraintSet, got {type(constraint).__name__}")
    rho = constraint.local_oracle_rho
    if constraint.local_linear_oracle is None or rho is None or not 0 < rho < np.inf:
        raise ValueError(
            f"{name}: the set {constraint.name!r} has no local linear oracle (with its ρ); "
            "projection-free window-private learners need one: use sets.simplex or sets.l1_ball"
        )
    return constraint
