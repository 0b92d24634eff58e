"""The window tree mechanism: running sums that are private for the ``W`` most recent inputs only.

Window privacy (Bolot et al. 2013, "privacy with expiration"; Definition 6 of the
window-DP projection-free COCO paper, WI-IAT 2020): input ``i`` is protected in
every release up to time ``i + W - 1`` and in none after. The mechanism releases
``s_t = sum_{i<a_t} v_i + sum_{N in D(t)} (clean(N) + η_N)`` with ``a_t = max(1, t - W + 1)``:
the expired inputs enter as one exact sum, and the window ``[a_t, t]`` is
partitioned into at most ``log2 W + 1`` dyadic tree nodes, each with its own
noise ``η_N`` drawn once (§III-A, the release rule as reconstructed in
docs/algorithms/window.md, 'Decoding choices'). As the nodes partition
the window, ``s_t = sum_{i<=t} v_i + n_t`` with ``n_t = sum_{N in D(t)} η_N`` exactly.

Implementation. The stream is cut into blocks of ``B = 2^m`` inputs.
At ``t`` (block-local index ``j = (t - 1) mod B + 1``) ``D(t)`` is the prefix
decomposition of ``j`` inside the current block (the nodes at the set bits of
``j``, as in the binary tree) and, from the second block on, the suffix
decomposition of length ``B - j`` of the previous block (mirrored). Every node
is used at a contiguous range of steps (left children and block roots in the
prefix phase, right children in the suffix phase, never both). Its noise is a
function of the node alone, ``draw(level, index)`` from the key
``fold_in(fold_in(key, level), index)`` for the node covering
``(index·2^level, (index+1)·2^level]``, so it is the same vector whenever it is
drawn: the prefix node is drawn when it closes, the suffix nodes a few steps
ahead of their first use (``_shrink_suffix``), and only running noise sums are
kept. Any computation that sums the same nodes gives the same release up to the
order of the float32 additions. A step draws exactly two nodes, one batch, and
reads and writes a few rows in place: no branch and no loop over levels;
memory ``O(d log W)`` per seed.
"""

from __future__ import annotations

from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import scipy.optimize
from jax.typing import ArrayLike

from jaxpriv import _rng, _validate
from jaxpriv._base import Mechanism, PrefixSumInfo, PRNGKey, Spec, poison_past_horizon, static_args
from jaxpriv._inplace import get_row, set_row, set_rows
from jaxpriv._kahan import KahanSum, kahan_add
from jaxpriv.mechanisms import _accounting
from jaxpriv.mechanisms._dyadic import trailing_zeros
from jaxpriv.mechanisms._noise import GAMMA, GAUSSIAN, NoiseFamily, noise_family
from jaxpriv.mechanisms._tree import NEIGHBOURING, guard_input, popcount

WINDOW_NOISE_FAMILIES = (GAMMA.name, GAUSSIAN.name)  # window ε-DP (pure) and window (ε, δ)-DP
GAUSSIAN_CALIBRATIONS = ("paper", "composition")


def _ceil_log2(n: int) -> int:
    return (n - 1).bit_length()


def window_levels(window: int, horizon: int) -> int:
    """``m``: blocks have ``B = 2^m`` inputs, ``m = min(ceil(log2 W), ceil(log2 T))``.

    ``W >= T`` gives one block covering the whole stream: the full binary tree over ``T``.
    """
    return min(_ceil_log2(window), _ceil_log2(horizon))


def window_depth(window: int, horizon: int) -> int:
    """``k_W = ceil(log2 W) + 1`` (``tree_depth(T)`` when ``W >= T``): the nodes one input can enter.

    Each node gets ``1/k_W`` of the budget (eqs. (11), (13), (15), (16)).
    """
    return window_levels(window, horizon) + 1


def window_nodes(t: int, window: int, horizon: int) -> tuple[int, list[tuple[int, int]]]:
    """The release rule (§III-A) in plain Python: ``(clean, nodes)`` at step ``t``.

    The rule as reconstructed in docs/algorithms/window.md, 'Decoding choices'.

    ``clean`` is the number of expired inputs ``a_t - 1`` that enter the release as
    one exact sum; ``nodes`` are the noisy nodes ``D(t)``, left to right, each as
    ``(level, index)`` covering the inputs ``(index·2^level, (index+1)·2^level]``.
    The reference the mechanism is tested against; not used in compiled code.
    """
    m = window_levels(window, horizon)
    size = 2**m
    k, j = (t - 1) // size + 1, (t - 1) % size + 1
    start = (k - 1) * size
    suffix = []
    if k >= 2 and j < size:  # the suffix of length B - j of the previous block, largest node rightmost
        end, length = start, size - j
        for h in range(m - 1, -1, -1):
            if (length >> h) & 1:
                suffix.append((h, (end >> h) - 1))
                end -= 2**h
        suffix.reverse()
    prefix = []
    s = start
    for h in range(m, -1, -1):
        if (j >> h) & 1:
            prefix.append((h, s >> h))
            s += 2**h
    clean = start - (size - j) if k >= 2 and j < size else start
    return clean, suffix + prefix


class WindowTreeParams(NamedTuple):
    """Privacy parameters of a window tree: exactly the budget its noise family needs.

    A budget left ``None`` never means "no privacy": the tree refuses params without the
    budget of its family, or with a field of another family (``ValueError`` in ``check``
    and in ``init``). The non-private limit is an explicit ``epsilon=inf``.

    Attributes:
      epsilon: ε of window ε-DP (``"gamma"``) or of window (ε, δ)-DP (``"gaussian"``);
        required by both; ``inf`` = no noise.
      delta: δ in ``(0, 1)`` of window (ε, δ)-DP: required by ``"gaussian"``, refused by
        ``"gamma"`` (pure ε-DP: a δ there suggests a Gaussian guarantee was meant).
      sensitivity: Δ, the L2 bound every input is clipped to (``L`` for gradients of
        ``L``-Lipschitz losses; the paper's ``L + μD``).
    """

    epsilon: ArrayLike | None = None
    delta: ArrayLike | None = None
    sensitivity: ArrayLike = 1.0


class WindowTreeState(NamedTuple):
    """State of a window tree with blocks of ``B = 2^m`` inputs.

    The release at ``t`` is ``total`` plus the prefix noise (``prefix`` row ``tz(j)``) plus, from the
    second block on, the suffix noise (``_suffix_noise`` at the lowest set bit of ``B - j``).
    """

    key: jax.Array  # the base key; node noise is a function of (key, level, index)
    total: jax.Array  # shape=[d], exact running sum of the clipped inputs (compensated summation)
    compensation: jax.Array  # shape=[d], Kahan compensation of ``total``
    prefix: jax.Array  # shape=[m + 2, d], row h (a set bit of j): noise of the prefix nodes at set bits >= h of j
    suffix: jax.Array  # shape=[2(m + 1), d], rows 2h, 2h + 1: chain sums and chain bases of the suffix (_shrink_suffix)
    scale: jax.Array  # shape=(), per-node noise scale (Gamma scale or Gaussian σ)
    sensitivity: jax.Array  # shape=(), clipping bound Δ


def window_node_scale(
    noise: NoiseFamily | str,
    epsilon: ArrayLike,
    delta: ArrayLike,
    sensitivity: ArrayLike,
    depth: int,
    calibration: str = "paper",
) -> jax.Array:
    """Per-node noise scale for one input's sensitivity ``s`` and ``k_W = depth`` (traceable).

    * ``"gamma"`` (Lemma 1, eqs. (11)/(15)): ``||η|| ~ Gamma(d, k_W s/ε)``; returns ``k_W s/ε``.
    * ``"gaussian"``, ``calibration="paper"`` (Lemma 3, eqs. (13)/(16) read with ``ln²``):
      ``σ² = 8 s² k_W² ln²(2/δ)/ε²``. (ε, δ)-DP only for ``ε <= paper_calibration_max_epsilon``
      (``check`` refuses larger ε).
    * ``"gaussian"``, ``calibration="composition"`` (a standard choice, not the paper's): the
      ``<= k_W`` nodes one input touches form one Gaussian mechanism of L2 sensitivity
      ``sqrt(k_W)·s`` (adaptive composition of Gaussian mechanisms is μ-GDP with
      ``μ = sqrt(k_W) s/σ``; Dong, Roth & Su 2022), calibrated exactly by the analytic Gaussian
      mechanism (Balle & Wang 2018, Thm 8): the smallest σ, rounded up, with
      ``δ(ε) <= δ`` (``_accounting.analytic_gaussian_stddev``), valid for every ε.
    """
    eps = jnp.asarray(epsilon, jnp.float32)
    s = jnp.asarray(sensitivity, jnp.float32)
    if noise_family(noise, WINDOW_NOISE_FAMILIES).pure:
        return _accounting.gamma_node_scale(eps, s, depth)
    d = jnp.asarray(delta, jnp.float32)
    if calibration == "paper":
        return np.sqrt(8.0) * s * depth * jnp.log(2.0 / d) / eps
    return _accounting.analytic_gaussian_stddev(eps, d, np.sqrt(depth) * s)


def window_gaussian_delta(epsilon: ArrayLike, delta: ArrayLike, depth: int, calibration: str) -> np.ndarray:
    """The true δ at ε of a Gaussian window tree calibrated for (ε, δ) (host, float64).

    One input enters at most ``k_W = depth`` nodes, each with noise ``N(0, σ² I)`` and
    sensitivity ``s``: together a Gaussian mechanism of sensitivity ``sqrt(k_W)·s``, whose
    exact δ(ε) is ``_accounting.gaussian_delta`` (Balle & Wang 2018, Thm 8), attained by an
    input that enters all ``k_W`` nodes (the first input of a full block). ``s`` cancels.

    Args:
      epsilon: ε (``> 0``), delta: δ in ``(0, 1)`` (the claim the tree is calibrated for).
      depth: ``k_W``.
      calibration: ``"paper"`` (the float64 formula) or ``"composition"`` (the σ ``init`` computes).

    Returns:
      δ(ε) of the calibrated tree; the claim holds where it is ``<= delta``.
    """
    if calibration == "paper":
        sigma = np.sqrt(8.0) * depth * np.log(2.0 / np.asarray(delta, np.float64)) / np.asarray(epsilon, np.float64)
    else:
        sigma = np.asarray(window_node_scale(GAUSSIAN, epsilon, delta, 1.0, depth, calibration), np.float64)
    return _accounting.gaussian_delta(sigma, np.sqrt(depth), epsilon)


# Relative float32 rounding allowed for between the host's σ and the one ``init`` computes.
_PAPER_ROUNDING = 2.0**-16


def paper_calibration_max_epsilon(delta: float, depth: int) -> float:
    """The largest ε at which the ``"paper"`` calibration (Lemma 3) is (ε, δ)-DP, for ``k_W = depth``.

    With ``σ = sqrt(8) s k_W ln(2/δ)/ε`` the tree is μ-GDP with ``μ = ε/(sqrt(8 k_W) ln(2/δ))``,
    which grows with ε: its δ(ε) exceeds the claim above this ε (e.g. at ``k_W = 1``:
    ε ≈ 793 at δ = 1e-3, 2090 at δ = 1e-5, 5240 at δ = 1e-8, 31.7 at δ = 0.5; more for larger
    ``k_W``). Host, float64, ``brentq`` on ``log ε``; a float32 rounding margin is kept.
    """
    target = np.log(delta)

    def excess(log_eps: float) -> float:
        eps = np.exp(log_eps)
        sigma = np.sqrt(8.0) * depth * np.log(2.0 / delta) / eps * (1.0 - _PAPER_ROUNDING)
        with np.errstate(divide="ignore"):
            return float(np.log(_accounting.gaussian_delta(sigma, np.sqrt(depth), eps)) - target)

    lo, hi = 0.0, 1.0
    while excess(hi) <= 0.0:
        lo, hi = hi, hi + 1.0
    while excess(lo) > 0.0:
        lo, hi = lo - 1.0, lo
    return float(np.exp(scipy.optimize.brentq(excess, lo, hi, xtol=1e-12)))


def window_node_variance(noise: NoiseFamily | str, scale: ArrayLike, dim: int) -> jax.Array:
    """Per-coordinate variance of one node's noise: ``(d+1)·scale²`` (Gamma-norm) or ``σ²`` (Gaussian)."""
    scale = jnp.asarray(scale, jnp.float32)
    return noise_family(noise, WINDOW_NOISE_FAMILIES).scaled_variance(scale, dim)


def window_noise_bound(
    noise: NoiseFamily | str, scale: ArrayLike, depth: int, dim: int, horizon: int, beta: ArrayLike
) -> jax.Array:
    """``N`` with ``P(max_{t<=T} ||n_t||_2 <= N) >= 1 - β`` (Lemmas 2 and 4 in
    union-bound versions, derived: docs/algorithms/window.md, 'Decoding choices').

    * Gamma: at most ``2T + k`` nodes are ever drawn, each ``||η|| ~ Gamma(d, θ)`` is
      ``<= dθ ln(d·3T/β)`` with probability ``>= 1 - β/(3T)`` (Prop. A2), and ``n_t`` sums at most
      ``k`` of them: ``N = k d θ ln(3 d T / β)``.
    * Gaussian: ``n_t ~ N(0, k_t σ² I)`` with ``k_t <= k`` and Lipschitz concentration of the norm:
      ``N = σ sqrt(k) (sqrt(d) + sqrt(2 ln(T/β)))``.
    """
    scale = jnp.asarray(scale, jnp.float32)
    beta = jnp.asarray(beta, jnp.float32)
    if not noise_family(noise, WINDOW_NOISE_FAMILIES).sub_gaussian:  # Prop. A2: the Gamma radius' (exponential) tail
        return depth * dim * scale * jnp.log(3.0 * dim * horizon / beta)
    return scale * np.sqrt(depth) * (np.sqrt(dim) + jnp.sqrt(2.0 * jnp.log(horizon / beta)))


def check_window_budget(component: str, params: Any, noise: NoiseFamily | str) -> None:
    """The fields of ``noise``'s guarantee are given, and no other: ε (``"gamma"``), ε and δ (``"gaussian"``).

    Static (``None``-ness is pytree structure), so ``init`` calls it under ``jit`` too. For any
    params with ``epsilon`` / ``delta`` fields (the tree's, the WDP learners').
    """
    if not noise_family(noise, WINDOW_NOISE_FAMILIES).pure:
        _validate.budget(component, noise, params, needs=("epsilon", "delta"), guarantee="window (ε, δ)-DP")
    else:
        _validate.budget(component, noise, params, needs=("epsilon",), refuses=("delta",), guarantee="window ε-DP")


def check_window_budget_values(
    component: str,
    params: Any,
    noise: NoiseFamily | str,
    calibration: str,
    depth: int,
    floor: float = _validate.FLOAT32_TINY_BUDGET,
) -> None:
    """``check_window_budget``, then the values: ε in ``(0, inf]``, δ in ``(0, 1)``, and a valid calibration.

    ε below ``floor`` is refused; a learner passes ``floor`` and checks its own floor after
    (``jaxpriv.oco._floor``).

    The ``"paper"`` Gaussian calibration is refused where it does not deliver the claimed
    (ε, δ) (``window_gaussian_delta`` above ``delta``, i.e. ε above
    ``paper_calibration_max_epsilon``); the message names ``calibration="composition"``.
    """
    check_window_budget(component, params, noise)
    _validate.budget_value("epsilon", params.epsilon, floor)
    if noise_family(noise).pure:  # window ε-DP: no δ
        return
    _validate.budget_value("delta", params.delta)
    _validate.in_open_interval("delta", params.delta, 0.0, 1.0)
    if calibration != "paper":
        return
    eps, delta = (_validate._concrete(v) for v in (params.epsilon, params.delta))
    if eps is None or delta is None:
        return
    eps, delta = np.broadcast_arrays(eps, delta)
    finite = np.isfinite(eps)
    sigma = np.sqrt(8.0) * depth * np.log(2.0 / delta) / np.where(finite, eps, 1.0) * (1.0 - _PAPER_ROUNDING)
    true = np.where(finite, _accounting.gaussian_delta(sigma, np.sqrt(depth), np.where(finite, eps, 1.0)), 0.0)
    bad = np.flatnonzero(true > delta)
    if bad.size:
        i = bad[0]
        e, d = float(eps.flat[i]), float(delta.flat[i])
        raise ValueError(
            f"{component}: calibration='paper' (Lemma 3, σ² = 8 s² k_W² ln²(2/δ)/ε²) is not (ε, δ)-DP at "
            f"epsilon={e:g}, delta={d:g} (k_W={depth}): its true δ is {float(true.flat[i]):.3g}; it holds for "
            f"epsilon <= {paper_calibration_max_epsilon(d, depth):.4g} at this delta. Use calibration='composition' "
            "(the analytic Gaussian, valid for every epsilon)."
        )


def check_window_tree_params(
    params: WindowTreeParams, noise: NoiseFamily | str, calibration: str = "paper", depth: int = 1
) -> None:
    """Raise ``ValueError`` for a bad budget (``check_window_budget_values``) or a bad sensitivity."""
    check_window_budget_values("window_tree", params, noise, calibration, depth)
    _validate.numeric("sensitivity", params.sensitivity)
    _validate.nonnegative("sensitivity", params.sensitivity)


def check_window(window: int, horizon: int, round_window: bool) -> int:
    """``window`` as an int; ``ValueError`` for ``W < 1`` or ``W < T`` not a power of two (unless rounded)."""
    if isinstance(window, bool) or not isinstance(window, (int, np.integer)) or window < 1:
        raise ValueError(f"window must be an integer >= 1 (a power of two, or >= horizon), got {window!r}")
    window = int(window)
    if window < horizon and window & (window - 1) and not round_window:
        up = 2 ** _ceil_log2(window)
        raise ValueError(
            f"window must be a power of two (1, 2, 4, ...) or >= horizon={horizon}, got {window}; "
            f"use window={up}, or round_window=True to round it up to {up}"
        )
    return window


def _node_noise(
    key: PRNGKey, level: jax.Array, index: jax.Array, dim: int, noise: NoiseFamily | str, dtype
) -> jax.Array:
    """Unit-scale noise of the node ``(level, index)``: the same vector whenever it is asked for."""
    k = _rng.fold_in(_rng.fold_in(key, level), index)  # jax.random.fold_in's keys, the hash written out
    return noise_family(noise).sample(k, (dim,), dtype)


# The pieces of ``window_tree``, in the order of a step. ``draw(level, index)`` is the unit-scale
# noise of a node (``_node_noise`` bound to the tree's key, ``d``, family and dtype).


def _calibrate(
    key: PRNGKey,
    params: WindowTreeParams,
    *,
    noise: str,
    calibration: str,
    factor: float,
    levels: int,
    dim: int,
    dtype,
) -> WindowTreeState:
    """``init``: the per-node scale for ``s = factor·Δ`` and ``k_W = levels + 1``, and empty sums.

    The scale is ``window_node_scale`` (Lemma 1, eqs. (11)/(15) for Gamma; Lemma 3,
    eqs. (13)/(16), or the analytic Gaussian for ``"composition"``), computed once here so
    ``step`` takes no params. The noise rows start at zero: ``prefix`` has
    ``m + 2`` rows (row ``m + 1`` stays zero, the "nothing above" of a full block),
    ``suffix`` ``2(m + 1)`` (rows ``2m``, ``2m + 1`` stay zero; ``_shrink_suffix``).
    """
    check_window_budget("window_tree", params, noise)
    sens = factor * jnp.asarray(params.sensitivity, dtype)
    scale = window_node_scale(noise, params.epsilon, params.delta, sens, levels + 1, calibration)
    zero = jnp.zeros(dim, dtype)
    return WindowTreeState(
        key=key,
        total=zero,
        compensation=zero,
        prefix=jnp.zeros((levels + 2, dim), dtype),
        suffix=jnp.zeros((2 * (levels + 1), dim), dtype),
        scale=jnp.asarray(scale, dtype),
        sensitivity=jnp.asarray(params.sensitivity, dtype),
    )


def _block_position(t: jax.Array, size: int) -> tuple[jax.Array, jax.Array]:
    """``(j, tz(j))``: the block-local index ``j = (t - 1) mod B + 1`` of step ``t``.

    ``tz(j)`` is the level of the prefix node that closes at ``t``: the node
    ``(tz(j), (t >> tz(j)) - 1)``, covering ``(t - 2^tz(j), t]``.
    """
    j = (t - 1) % size + 1
    return j, trailing_zeros(j)


def _advance_prefix(prefix: jax.Array, eta: jax.Array, j: jax.Array, level: jax.Array) -> tuple[jax.Array, jax.Array]:
    """The prefix decomposition of ``j`` in the current block (the binary tree's nodes at the set bits of ``j``).

    Row ``h``, at a set bit ``h`` of ``j``, is the noise of the nodes at the set bits ``>= h``
    (rows at clear bits are stale and never read; row ``m + 1`` stays zero). Going from
    ``j - 1`` to ``j`` clears the bits below ``level = tz(j)`` and sets bit ``level``: row
    ``level`` becomes the row of the next set bit of ``j`` above ``level`` (the zero row if none:
    ``j = 1`` opens a block) plus ``eta``, the noise of the node closing at ``t``, drawn at its
    first use. One row read, one written, in place. Returns the rows and row ``level``, the
    prefix part of ``n_t``, read back from the written array.
    """
    rest = j & (j - 1)  # j without bit level
    above = jnp.where(rest == 0, prefix.shape[-2] - 1, trailing_zeros(rest))  # the next set bit, or zero row m + 1
    value = get_row(prefix, above) + eta
    prefix = set_row(prefix, value, level)
    return prefix, get_row(prefix, level)


def _suffix_noise(suffix: jax.Array, t: jax.Array, h: jax.Array, size: int) -> jax.Array:
    """The noise of the previous block's suffix nodes at the set bits ``>= h`` of its length (bit ``h`` set).

    Bit ``h`` was set by the last drop of a node of level ``c > h``: at the step ``a + 1`` with
    ``a`` the largest multiple of ``2^(h+1)`` up to ``t - 1`` and ``c = min(tz(a), m)``. The noise is
    that chain's base (``suffix`` row ``2c + 1``) plus its own nodes of levels ``h..c-1``
    (row ``2h``). ``h = m``: rows ``2m`` and ``2m + 1`` are zero.
    """
    start = jax.lax.shift_left(jax.lax.shift_right_logical(t - 1, h + 1), h + 1)
    chain = trailing_zeros(start | size)
    return get_row(suffix, 2 * chain + 1) + get_row(suffix, 2 * h)


def _suffix_node(t: jax.Array, size: int) -> tuple[jax.Array, jax.Array]:
    """The suffix node drawn ahead at ``t`` (``_shrink_suffix``): level ``c = min(tz(t - 1), m)`` and its index."""
    c = trailing_zeros((t - 1) | size)  # min(tz(t - 1), m); m at t = 1
    return c, jax.lax.shift_right_arithmetic(t - 1 - size, c) + 2


def _shrink_suffix(
    suffix: jax.Array, eta: jax.Array, t: jax.Array, j: jax.Array, levels: int
) -> tuple[jax.Array, jax.Array]:
    """The previous block's suffix shrinks from length ``B - j + 1`` to ``L = B - j``.

    The suffix of length ``L`` ending at ``t - j`` is the decomposition mirrored: the node of
    level ``h`` at each set bit of ``L``, largest rightmost. At ``t`` the leftmost node, of level
    ``c = tz(L + 1) = min(tz(t - 1), m)``, is dropped and ``c`` nodes of levels ``c - 1..0``
    (the right children down its left edge, each used from here on only) take its place.

    So that a step draws one suffix node rather than up to ``m`` (a loop, or ``m`` draws), the
    nodes are drawn ahead: node noise is a function of the node alone, so a node may be drawn
    before its first use. The chain of ``c = min(tz(a), m)`` nodes of the drop at ``a + 1`` is
    drawn one node a step, its level-``i`` node at step ``a + 1 - 2^i`` (from level ``c - 1``
    down to level 0 at step ``a``), and summed from the top as drawn: row ``2i`` holds the
    chain's nodes of levels ``i..c-1``. So step ``s`` draws the node of level
    ``c_s = min(tz(s - 1), m)`` of the chain of ``a = s - 1 + 2^(c_s)``, which covers
    ``(a - B + 2^(c_s), a - B + 2^(c_s + 1)]`` (``_suffix_node``; ``eta`` is its noise; at
    ``c_s = m``, once a block, it is not used). The chains in progress nest, and a chain's row
    ``2i`` is next written when its bit ``i`` of ``L`` is cleared. At the drop, row ``2c + 1``
    gets the chain's base: the noise of the nodes at the set bits of ``L`` above ``c``. The
    noise at a set bit ``h`` of ``L`` is then its chain's base plus its chain row ``2h``
    (``_suffix_noise``): the nodes of the spec's sum, added in another order (the last bits of
    the float32 sum may differ from adding them one by one). Two rows written (``2c``,
    ``2c + 1``: one block) and five read, in place; rows ``2m``, ``2m + 1`` stay zero. In the
    first block the rows fill with the chains of the second (and unused ones); the release
    masks the suffix there. Returns the rows and the suffix part of ``n_t``, read back from
    the written array.
    """
    size = 2**levels
    length = size - j
    c = trailing_zeros((t - 1) | size)  # min(tz(t - 1), m); m at t = 1 (the level of _suffix_node)
    high = jax.lax.shift_left(jax.lax.shift_right_logical(length, c + 1), c + 1)  # the bits of L above c
    base = _suffix_noise(suffix, t, trailing_zeros(high | size), size)  # at the next set bit, or the zero level m
    # The node drawn, of level c, belongs to the chain of the drop at a + 1, a = t - 1 + 2^c (bit c + 1 of
    # a is set iff bit c + 1 of t - 1 is clear): it is the chain's top node when min(tz(a), m) = c + 1.
    first = ((jax.lax.shift_right_logical(t - 1, c + 1) & 1) == 0) | (c + 1 >= levels)
    above_in_chain = jnp.where(first, 0.0, get_row(suffix, 2 * c + 2))
    chain = jnp.where(c < levels, above_in_chain + eta, 0.0)
    suffix = set_rows(suffix, jnp.stack([chain, base.astype(chain.dtype)], axis=-2), 2 * c)
    return suffix, _suffix_noise(suffix, t, trailing_zeros(length | size), size)


def _release(
    total: jax.Array, prefix_noise: jax.Array, suffix_noise: jax.Array | None, t: jax.Array, size: int, horizon: int
) -> jax.Array:
    """``s_t = sum_{i<=t} v_i + n_t`` with ``n_t = sum_{N in D(t)} η_N`` (§III-A).

    ``n_t`` is the prefix nodes' noise plus, from the second block on (``t > B``), the
    previous block's suffix nodes' (``suffix_noise`` is ``None`` when there is one block).
    NaN past the horizon.
    """
    release_noise = prefix_noise
    if suffix_noise is not None:
        release_noise = release_noise + jnp.where(t > size, suffix_noise, 0.0)
    return poison_past_horizon(total + release_noise, t, horizon)


def _window_tree_step(
    state: WindowTreeState,
    x: ArrayLike,
    t: jax.Array,
    *,
    noise: str,
    levels: int,
    horizon: int,
    dim: int,
    dtype,
) -> tuple[WindowTreeState, jax.Array, jax.Array]:
    """One step: clip and add ``x`` exactly, update the prefix and suffix noise, release (and the zeroed-input count).

    Branch-free and loop-free: the level logic is scalar arithmetic on the shared clock ``t``,
    two nodes are drawn (the prefix node closing at ``t`` and one suffix node ahead), and the
    noise rows are read and written in place (``jaxpriv._inplace``), ``O(d)`` whatever ``W``.
    """
    t = jnp.asarray(t, jnp.int32)
    size = 2**levels
    x, bad = guard_input(x, state.sensitivity, "l2", dtype)
    # Exact running sum, compensated (float32-accurate over long horizons, O(d) memory).
    total, compensation = kahan_add(KahanSum(state.total, state.compensation), x)
    draw = partial(_node_noise, state.key, dim=dim, noise=noise, dtype=dtype)
    j, level = _block_position(t, size)
    nodes = [(level, (t >> level) - 1)]  # the prefix node closing at t
    if size < horizon:  # a second block exists: the suffix of length B - j of the previous one, ending at t - j
        nodes.append(_suffix_node(t, size))
    node_levels, node_indices = (jnp.stack(x) for x in zip(*nodes, strict=True))
    eta = state.scale * jax.vmap(draw)(node_levels, node_indices)  # the step's nodes in one batch: one set of kernels
    prefix, prefix_noise = _advance_prefix(state.prefix, eta[0], j, level)
    suffix, suffix_noise = state.suffix, None
    if size < horizon:
        suffix, suffix_noise = _shrink_suffix(state.suffix, eta[1], t, j, levels)
    release = _release(total, prefix_noise, suffix_noise, t, size, horizon)
    new_state = state._replace(
        total=total,
        compensation=compensation,
        prefix=prefix,
        suffix=suffix,
    )
    return new_state, release, bad


def _release_variance(
    params: WindowTreeParams, t: np.ndarray, noise: str, calibration: str, factor: float, levels: int, dim: int
) -> np.ndarray:
    """The variance oracle: ``|D(t)|`` times the node variance (host, float64).

    ``|D(t)|`` independent nodes: ``popcount(j)`` prefix nodes and, from the second block
    on, ``popcount(B - j)`` suffix nodes of the previous block (``window_nodes``).
    """
    size = 2**levels
    j = (t - 1) % size + 1
    nodes = popcount(j) + np.where((t > size) & (j < size), popcount(size - j), 0)
    sens = factor * np.asarray(params.sensitivity, np.float64)
    return nodes * _node_variance64(noise, calibration, params, sens, levels + 1, dim)


def window_tree(
    horizon: int,
    dim: int,
    window: int,
    noise: str = "gamma",
    neighbouring: str = "add_remove",
    calibration: str = "paper",
    round_window: bool = False,
    dtype=jnp.float32,
) -> Mechanism:
    """The window tree mechanism (§III-A of the WI-IAT 2020 paper): running sums private for the last ``W`` inputs.

    Releases ``s_t ≈ sum_{i<=t} v_i``: the inputs older than the window ``[t - W + 1, t]``
    enter exactly, the window is covered by at most ``k_W = ceil(log2 W) + 1`` noisy
    dyadic nodes (``window_nodes``), each drawn once, so ``s_t - sum v_i`` is the sum of
    ``|D(t)|`` independent node noises.

    Privacy: window ε-DP (``"gamma"``) or window (ε, δ)-DP (``"gaussian"``) with window
    ``W`` (Definition 6), event level, adaptively chosen inputs. Every input is clipped
    to L2 norm Δ (``WindowTreeParams.sensitivity``) and, over all releases in which it is
    protected, enters at most ``k_W`` noisy nodes (its root path in its block). Gamma noise
    and the paper's Gaussian σ give each node a ``1/k_W`` share of the budget (Lemmas 1 and 3;
    basic composition); ``calibration="composition"`` calibrates the ``k_W`` nodes jointly.
    The neighbouring relation fixes the sensitivity ``s`` of one input, as in ``binary_tree``:

    * ``neighbouring="add_remove"`` (default, as ``binary_tree``): one input replaced with
      zero, ``s = Δ``;
    * ``neighbouring="replace"``: one input replaced with any other of norm ``<= Δ``, ``s = 2Δ``
      (the relation of the paper's Definitions 4 and 6: neighbouring loss sequences differ
      in one entry).

    Defaults: ``window_tree(T, d, W)`` is Gamma noise, window ε-DP under add/remove of one
    input (``s = Δ``); ``noise="gaussian"`` is window (ε, δ)-DP under the same relation with
    Lemma 3's σ (``calibration="paper"``), accepted only for ε where that σ is (ε, δ)-DP.

    Node noise for that ``s`` (``window_node_scale``):

    * ``"gamma"``: density ``∝ exp(-ε||η||_2/(k_W s))`` (eqs. (11)/(15)); per-coordinate
      variance ``(d+1)(k_W s/ε)²``.
    * ``"gaussian"``: ``N(0, σ² I)``, ``calibration="paper"``: ``σ² = 8 s² k_W² ln²(2/δ)/ε²``
      (eqs. (13)/(16); the exponent on ``ln``, unreadable in the available text, is read as 2:
      docs/algorithms/window.md, 'Decoding choices'). Its exact δ(ε)
      (``window_gaussian_delta``: the ``k_W`` nodes of one input are one Gaussian mechanism of
      sensitivity ``sqrt(k_W) s``) stays below δ for ε up to ``paper_calibration_max_epsilon``
      (hundreds to thousands for δ <= 1e-3, e.g. 2090 at δ = 1e-5, ``k_W = 1``; 31.7 at
      δ = 0.5) and exceeds it above: ``check`` refuses those ε.
      ``calibration="composition"`` (a standard choice, not the paper's; much smaller σ): the same ``k_W``
      node values calibrated exactly as one Gaussian mechanism of sensitivity ``sqrt(k_W) s``
      by the analytic Gaussian mechanism (Balle & Wang 2018, Thm 8; rounded up), valid for
      every ε. (Up to this version it used ``σ = sqrt(k_W) s sqrt(2 ln(1.25/δ))/ε``, whose true
      δ exceeds the claim for ε ≳ 8.4 at δ = 1e-5.)

    Window size. ``W`` must be a power of two (the paper's assumption) or ``>= T``.
    ``W >= T`` protects every input in every release: the mechanism is the full binary
    tree over ``T`` (``k_W = ceil(log2 T) + 1``, the nodes at the set bits of ``t``),
    with the calibration of ``binary_tree``. ``round_window=True`` rounds any other
    ``W`` up to ``2^ceil(log2 W)``: window-``2^ceil(log2 W)`` privacy implies window-``W``
    privacy, and ``k_W`` (the ``ceil`` of eqs. (11)/(13)) is unchanged.

    Guard rails: an input with a NaN / ±inf entry is replaced by zero before clipping and
    counted (``step`` returns ``(state, release, nonfinite)``); the mechanism declares ``horizon=T``
    (``prefix_sums``, ``run`` and ``sweep`` refuse a longer stream) and a release at
    ``t > T`` stepped by hand is NaN. The step key is not used: node noise is a
    function of the key given to ``init`` and of the node.

    Args:
      horizon: ``T >= 1``.
      dim: ``d >= 1``.
      window: ``W >= 1``, a power of two or ``>= T`` (see above).
      noise: ``"gamma"`` (window ε-DP) or ``"gaussian"`` (window (ε, δ)-DP).
      neighbouring: ``"add_remove"`` (``s = Δ``) or ``"replace"`` (``s = 2Δ``).
      calibration: Gaussian σ, ``"paper"`` (Lemma 3) or ``"composition"`` (analytic Gaussian);
        ignored by ``"gamma"``.
      round_window: round a ``W < T`` that is not a power of two up to one.
      dtype: dtype of the state and of the releases.

    Returns:
      A ``Mechanism`` with params ``WindowTreeParams``; ``step(key, state, x, t)`` returns
      ``(state, s_t)``; memory ``O(d log W)`` per seed. Its ``info`` (``describe``) carries
      the exact variance oracle of ``release_variance``: the release variance at ``t`` is
      ``|D(t)|`` times the node variance ``window_node_variance``.

    Raises:
      ValueError: a bad static argument (naming it and its allowed values); ``check``: a
        missing budget (``epsilon``; and ``delta`` for ``"gaussian"``) or a ``delta`` given to
        ``"gamma"`` (also in ``init``), ``epsilon <= 0``, ``delta`` outside ``(0, 1)``, an ε
        beyond the ``"paper"`` calibration's range, or a negative sensitivity.

    Examples:
      >>> import jax, jax.numpy as jnp
      >>> from jaxpriv.mechanisms import prefix_sums
      >>> tree = window_tree(horizon=8, dim=1, window=4)
      >>> prefix_sums(tree, WindowTreeParams(epsilon=jnp.inf), jnp.ones((8, 1)), jax.random.key(0))[:, 0]
      Array([1., 2., 3., 4., 5., 6., 7., 8.], dtype=float32)

    References:
      Window-DP projection-free COCO (WI-IAT 2020), §III-A, Lemmas 1–4, Theorems 1–2;
      Bolot, Fawaz, Muthukrishnan, Nikolov, Taft, Private decayed predicate sums on
      streams, ICDT 2013; docs/algorithms/window.md, 'Decoding choices'.
    """
    horizon = _validate.horizon(horizon)
    dim = _validate.positive_int("dim", dim)
    window = check_window(window, horizon, round_window)
    noise = noise_family(noise, WINDOW_NOISE_FAMILIES)  # the family object, kept by info, the check and the closures
    neighbouring = _validate.choice("neighbouring", neighbouring, NEIGHBOURING)
    calibration = _validate.choice("calibration", calibration, GAUSSIAN_CALIBRATIONS)
    factor = 2.0 if neighbouring == "replace" else 1.0
    m = window_levels(window, horizon)

    def init_fn(key: PRNGKey, params: WindowTreeParams) -> WindowTreeState:
        return _calibrate(
            key, params, noise=noise, calibration=calibration, factor=factor, levels=m, dim=dim, dtype=dtype
        )

    def step_fn(
        key: PRNGKey, state: WindowTreeState, x: ArrayLike, t: jax.Array
    ) -> tuple[WindowTreeState, jax.Array, jax.Array]:
        del key  # node noise comes from the state's key and the node id
        return _window_tree_step(state, x, t, noise=noise, levels=m, horizon=horizon, dim=dim, dtype=dtype)

    def sensitivity_fn(params: WindowTreeParams) -> np.ndarray:
        return factor * np.asarray(params.sensitivity, np.float64)

    def variance_fn(params: WindowTreeParams, t: np.ndarray) -> np.ndarray:
        return _release_variance(params, t, noise, calibration, factor, m, dim)

    static = static_args(
        horizon=horizon,
        dim=dim,
        window=window,
        noise=noise,
        neighbouring=neighbouring,
        calibration=calibration,
        round_window=round_window,
        dtype=np.dtype(dtype).name,
    )
    return Mechanism(
        init_fn,
        step_fn,
        partial(check_window_tree_params, noise=noise, calibration=calibration, depth=m + 1),
        horizon,
        info=PrefixSumInfo(
            "window_tree", horizon, dim, noise, neighbouring, sensitivity_fn, variance_fn, "window", "window"
        ),
        spec=Spec("window_tree", WindowTreeParams, private=True, static=static),
        returns_count=True,
    )


def _node_variance64(
    noise: NoiseFamily | str, calibration: str, params: WindowTreeParams, s: np.ndarray, depth: int, dim: int
) -> np.ndarray:
    """``window_node_variance(window_node_scale(...))`` in float64 on the host (the variance oracle's node)."""
    eps = np.asarray(params.epsilon, np.float64)
    family = noise_family(noise, WINDOW_NOISE_FAMILIES)
    with np.errstate(divide="ignore"):
        if family.pure:
            return family.scaled_variance(depth * s / eps, dim)
        delta = np.asarray(params.delta, np.float64)
        if calibration == "paper":
            return 8.0 * (s * depth * np.log(2.0 / delta) / eps) ** 2
        # The σ init computes (float32, rounded up), per unit sensitivity.
        unit = np.asarray(window_node_scale(noise, eps, delta, 1.0, depth, calibration), np.float64)
        return (unit * s) ** 2
