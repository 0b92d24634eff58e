"""The window tree mechanism: running sums that are private for the ``W`` most recent inputs only.

Window privacy (Bolot et al. 2013, "privacy with expiration"; Definition 6 of the
window-DP projection-free COCO paper, WI-IAT 2020): input ``i`` is protected in
every release up to time ``i + W - 1`` and in none after. The mechanism releases
``s_t = sum_{i<a_t} v_i + sum_{N in D(t)} (clean(N) + η_N)`` with ``a_t = max(1, t - W + 1)``:
the expired inputs enter as one exact sum, and the window ``[a_t, t]`` is
partitioned into at most ``log2 W + 1`` dyadic tree nodes, each with its own
noise ``η_N`` drawn once (spec ``window_coco.md`` §2.2–§2.3). As the nodes partition
the window, ``s_t = sum_{i<=t} v_i + n_t`` with ``n_t = sum_{N in D(t)} η_N`` exactly.

Implementation (spec §2.6). The stream is cut into blocks of ``B = 2^m`` inputs.
At ``t`` (block-local index ``j = (t - 1) mod B + 1``) ``D(t)`` is the prefix
decomposition of ``j`` inside the current block (the nodes at the set bits of
``j``, as in the binary tree) and, from the second block on, the suffix
decomposition of length ``B - j`` of the previous block (mirrored). Every node
is used at a contiguous range of steps (left children and block roots in the
prefix phase, right children in the suffix phase, never both), so its noise is
drawn when it is first used, from a key that is a function of the node alone,
``fold_in(fold_in(key, level), index)`` for the node covering
``(index·2^level, (index+1)·2^level]``, and only running noise sums are kept:
memory ``O(d log W)`` per seed, about two node draws per step amortised.
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxpriv import _validate
from jaxpriv._base import Mechanism, PRNGKey, poison_past_horizon, zero_nonfinite
from jaxpriv.mechanisms import _accounting, _noise
from jaxpriv.mechanisms._dyadic import trailing_zeros
from jaxpriv.mechanisms._tree import NEIGHBOURING, clip_l2, popcount
from jaxpriv.mechanisms._variance import PrefixSumInfo, register

WINDOW_NOISE_FAMILIES = ("gamma", "gaussian")
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
    """The release rule of spec §2.3 in plain Python: ``(clean, nodes)`` at step ``t``.

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
    """Privacy parameters of a window tree.

    Attributes:
      epsilon: ε of window ε-DP (``"gamma"``) or window (ε, δ)-DP (``"gaussian"``); ``inf`` = no noise.
      delta: δ in ``(0, 1)`` of window (ε, δ)-DP (``"gaussian"`` only; ignored by ``"gamma"``).
      sensitivity: Δ, the L2 bound every input is clipped to (the paper's ``L + μD``
        for gradients of ``L``-Lipschitz losses).
    """

    epsilon: ArrayLike = float("inf")
    delta: ArrayLike = 1e-5
    sensitivity: ArrayLike = 1.0


class WindowTreeState(NamedTuple):
    """State of a window tree with blocks of ``B = 2^m`` inputs.

    The release at ``t`` is ``total + prefix[0] + suffix[0]`` (the suffix only from the second block on).
    """

    key: jax.Array  # the base key; node noise is a function of (key, level, index)
    total: jax.Array  # shape=[d], exact running sum of the clipped inputs (compensated summation)
    compensation: jax.Array  # shape=[d], Kahan compensation of ``total``
    prefix: jax.Array  # shape=[m + 2, d], row h: noise of the current block's prefix nodes at set bits >= h of j
    suffix: jax.Array  # shape=[m + 1, d], row h: noise of the previous block's suffix nodes at set bits >= h of B - j
    scale: jax.Array  # shape=(), per-node noise scale (Gamma scale or Gaussian σ)
    sensitivity: jax.Array  # shape=(), clipping bound Δ
    nonfinite: jax.Array  # shape=(), int32, inputs with a NaN / ±inf entry, replaced by zero


def window_node_scale(
    noise: str,
    epsilon: ArrayLike,
    delta: ArrayLike,
    sensitivity: ArrayLike,
    depth: int,
    calibration: str = "paper",
) -> jax.Array:
    """Per-node noise scale for one input's sensitivity ``s`` and ``k_W = depth``.

    * ``"gamma"`` (Lemma 1, eqs. (11)/(15)): ``||η|| ~ Gamma(d, k_W s/ε)``; returns ``k_W s/ε``.
    * ``"gaussian"``, ``calibration="paper"`` (Lemma 3, eqs. (13)/(16) read with ``ln²``):
      ``σ² = 8 s² k_W² ln²(2/δ)/ε²``.
    * ``"gaussian"``, ``calibration="composition"`` (spec §2.4, not the paper's): the ``<= k_W``
      nodes one input touches form one Gaussian mechanism of L2 sensitivity ``sqrt(k_W)·s``,
      ``σ = sqrt(k_W) s sqrt(2 ln(1.25/δ))/ε`` (Dwork & Roth, Thm A.1; valid for ε < 1).
    """
    eps = jnp.asarray(epsilon, jnp.float32)
    s = jnp.asarray(sensitivity, jnp.float32)
    if noise == "gamma":
        return _accounting.gamma_node_scale(eps, s, depth)
    d = jnp.asarray(delta, jnp.float32)
    if calibration == "paper":
        return np.sqrt(8.0) * s * depth * jnp.log(2.0 / d) / eps
    return np.sqrt(depth) * s * jnp.sqrt(2.0 * jnp.log(1.25 / d)) / eps


def window_node_variance(noise: str, scale: ArrayLike, dim: int) -> jax.Array:
    """Per-coordinate variance of one node's noise: ``(d+1)·scale²`` (Gamma-norm) or ``σ²`` (Gaussian)."""
    scale = jnp.asarray(scale, jnp.float32)
    return (dim + 1) * scale**2 if noise == "gamma" else scale**2


def window_noise_bound(noise: str, scale: ArrayLike, depth: int, dim: int, horizon: int, beta: ArrayLike) -> jax.Array:
    """``N`` with ``P(max_{t<=T} ||n_t||_2 <= N) >= 1 - β`` (spec §2.5, union-bound versions).

    * Gamma: at most ``2T + k`` nodes are ever drawn, each ``||η|| ~ Gamma(d, θ)`` is
      ``<= dθ ln(d·3T/β)`` with probability ``>= 1 - β/(3T)`` (Prop. A2), and ``n_t`` sums at most
      ``k`` of them: ``N = k d θ ln(3 d T / β)``.
    * Gaussian: ``n_t ~ N(0, k_t σ² I)`` with ``k_t <= k`` and Lipschitz concentration of the norm:
      ``N = σ sqrt(k) (sqrt(d) + sqrt(2 ln(T/β)))``.
    """
    scale = jnp.asarray(scale, jnp.float32)
    beta = jnp.asarray(beta, jnp.float32)
    if noise == "gamma":
        return depth * dim * scale * jnp.log(3.0 * dim * horizon / beta)
    return scale * np.sqrt(depth) * (np.sqrt(dim) + jnp.sqrt(2.0 * jnp.log(horizon / beta)))


def check_window_tree_params(params: WindowTreeParams, noise: str) -> None:
    """Raise ``ValueError`` for ε ``<= 0``, δ outside ``(0, 1)`` (Gaussian) or a bad sensitivity."""
    _validate.positive("epsilon", params.epsilon)
    if noise == "gaussian":
        _validate.in_open_interval("delta", params.delta, 0.0, 1.0)
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


def _node_noise(key: PRNGKey, level: jax.Array, index: jax.Array, dim: int, noise: str, dtype) -> jax.Array:
    """Unit-scale noise of the node ``(level, index)``: the same vector whenever it is asked for."""
    k = jax.random.fold_in(jax.random.fold_in(key, level), index)
    return _noise.SAMPLERS[noise](k, (dim,), dtype)


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
    """The window tree mechanism (spec §2): running sums private for the last ``W`` inputs.

    Releases ``s_t ≈ sum_{i<=t} v_i``: the inputs older than the window ``[t - W + 1, t]``
    enter exactly, the window is covered by at most ``k_W = ceil(log2 W) + 1`` noisy
    dyadic nodes (``window_nodes``), each drawn once, so ``s_t - sum v_i`` is the sum of
    ``|D(t)|`` independent node noises.

    Privacy: window ε-DP (``"gamma"``) or window (ε, δ)-DP (``"gaussian"``) with window
    ``W`` (Definition 6), event level, adaptively chosen inputs. Every input is clipped
    to L2 norm Δ (``WindowTreeParams.sensitivity``) and, over all releases in which it is
    protected, enters at most ``k_W`` noisy nodes (its root path in its block); each node is
    released with a ``1/k_W`` share of the budget (Lemmas 1 and 3; basic composition).
    The neighbouring relation fixes the sensitivity ``s`` of one input, as in ``binary_tree``:

    * ``neighbouring="add_remove"`` (default; the paper's Δ₂, e.g. ``L + μD`` for gradients):
      one input replaced with zero, ``s = Δ``;
    * ``neighbouring="replace"``: one input replaced with any other of norm ``<= Δ``, ``s = 2Δ``.

    Node noise for that ``s`` (``window_node_scale``):

    * ``"gamma"``: density ``∝ exp(-ε||η||_2/(k_W s))`` (eqs. (11)/(15)); per-coordinate
      variance ``(d+1)(k_W s/ε)²``.
    * ``"gaussian"``: ``N(0, σ² I)``, ``calibration="paper"``: ``σ² = 8 s² k_W² ln²(2/δ)/ε²``
      (eqs. (13)/(16); the OCR's exponent on ``ln`` is read as 2, spec §2.4);
      ``calibration="composition"``: ``σ = sqrt(k_W) s sqrt(2 ln(1.25/δ))/ε``, the ``<= k_W``
      node values of one input taken as one Gaussian mechanism (spec §2.4 [STD]; much smaller).

    Window size. ``W`` must be a power of two (the paper's assumption) or ``>= T``.
    ``W >= T`` protects every input in every release: the mechanism is the full binary
    tree over ``T`` (``k_W = ceil(log2 T) + 1``, the nodes at the set bits of ``t``),
    with the calibration of ``binary_tree``. ``round_window=True`` rounds any other
    ``W`` up to ``2^ceil(log2 W)``: window-``2^ceil(log2 W)`` privacy implies window-``W``
    privacy, and ``k_W`` (the ``ceil`` of eqs. (11)/(13)) is unchanged.

    Guard rails: an input with a NaN / ±inf entry is replaced by zero before clipping and
    counted in ``WindowTreeState.nonfinite``; the mechanism declares ``horizon=T``
    (``prefix_sums``, ``run`` and ``sweep`` refuse a longer stream) and a release at
    ``t > T`` stepped by hand is NaN. The step key is not used: node noise is a
    function of the key given to ``init`` and of the node (spec §2.6).

    Args:
      horizon: ``T >= 1``.
      dim: ``d >= 1``.
      window: ``W >= 1``, a power of two or ``>= T`` (see above).
      noise: ``"gamma"`` (window ε-DP) or ``"gaussian"`` (window (ε, δ)-DP).
      neighbouring: ``"add_remove"`` (``s = Δ``) or ``"replace"`` (``s = 2Δ``).
      calibration: Gaussian σ, ``"paper"`` or ``"composition"`` (ignored by ``"gamma"``).
      round_window: round a ``W < T`` that is not a power of two up to one.
      dtype: dtype of the state and of the releases.

    Returns:
      A ``Mechanism`` with params ``WindowTreeParams``; ``step(key, state, x, t)`` returns
      ``(state, s_t)``; memory ``O(d log W)`` per seed. It is registered with
      ``describe`` / ``release_variance``: the release variance at ``t`` is ``|D(t)|``
      times the node variance ``window_node_variance``.

    Raises:
      ValueError: a bad static argument (naming it and its allowed values); ``check``:
        ``epsilon <= 0``, ``delta`` outside ``(0, 1)`` (Gaussian) or a negative sensitivity.

    Examples:
      >>> import jax, jax.numpy as jnp
      >>> from jaxpriv.mechanisms import prefix_sums
      >>> tree = window_tree(horizon=8, dim=1, window=4)
      >>> prefix_sums(tree, WindowTreeParams(epsilon=jnp.inf), jnp.ones((8, 1)), jax.random.key(0))[:, 0]
      Array([1., 2., 3., 4., 5., 6., 7., 8.], dtype=float32)

    References:
      Window-DP projection-free COCO (WI-IAT 2020), §III-A, Lemmas 1–4, Theorems 1–2;
      Bolot, Fawaz, Muthukrishnan, Nikolov, Taft, Private decayed predicate sums on
      streams, ICDT 2013; spec ``window_coco.md`` §2.
    """
    horizon = _validate.positive_int("horizon", horizon)
    dim = _validate.positive_int("dim", dim)
    window = check_window(window, horizon, round_window)
    noise = _validate.choice("noise", noise, WINDOW_NOISE_FAMILIES)
    neighbouring = _validate.choice("neighbouring", neighbouring, NEIGHBOURING)
    calibration = _validate.choice("calibration", calibration, GAUSSIAN_CALIBRATIONS)
    factor = 2.0 if neighbouring == "replace" else 1.0
    m = window_levels(window, horizon)
    size = 2**m
    depth = m + 1
    has_suffix = size < horizon  # a second block exists

    def init_fn(key: PRNGKey, params: WindowTreeParams) -> WindowTreeState:
        sens = factor * jnp.asarray(params.sensitivity, dtype)
        scale = window_node_scale(noise, params.epsilon, params.delta, sens, depth, calibration)
        zero = jnp.zeros(dim, dtype)
        return WindowTreeState(
            key=key,
            total=zero,
            compensation=zero,
            prefix=jnp.zeros((m + 2, dim), dtype),
            suffix=jnp.zeros((m + 1, dim), dtype),
            scale=jnp.asarray(scale, dtype),
            sensitivity=jnp.asarray(params.sensitivity, dtype),
            nonfinite=jnp.zeros((), jnp.int32),
        )

    def node(key, level, index):
        return _node_noise(key, level, index, dim, noise, dtype)

    def shrink_suffix(suffix: jax.Array, key: PRNGKey, length: jax.Array, end: jax.Array, scale: jax.Array):
        """The suffix shrinks from length ``B - j + 1`` to ``B - j``: ``c = tz(B - j + 1)`` new nodes, levels ``< c``.

        Rows ``>= c`` keep their sums except row ``c``, which drops the old node of level ``c``;
        rows ``h < c`` add the new nodes of levels ``h..c-1``. A loop with the (unbatched)
        trip count ``c`` draws each new node once: ``O(d)`` work per step amortised, one
        compiled body whatever ``W``.
        """
        c = trailing_zeros(length + 1)
        padded = jnp.concatenate([suffix, jnp.zeros_like(suffix[:1])])  # row m + 1: zero
        base = jax.lax.dynamic_index_in_dim(padded, c + 1, 0, keepdims=False)
        suffix = jax.lax.dynamic_update_index_in_dim(padded, base, c, 0)[: m + 1]

        def body(i, carry):
            rows, acc = carry
            h = c - 1 - i  # from level c - 1 down to 0
            upper = (length >> (h + 1)) << (h + 1)  # bits of the length above level h
            acc = acc + scale * node(key, h, ((end - upper) >> h) - 1)  # the node ends at end - upper
            return jax.lax.dynamic_update_index_in_dim(rows, acc, h, 0), acc

        rows, _ = jax.lax.fori_loop(0, c, body, (suffix, base))
        return rows

    def step_fn(key: PRNGKey, state: WindowTreeState, x: ArrayLike, t: jax.Array) -> tuple[WindowTreeState, jax.Array]:
        del key  # node noise comes from the state's key and the node id
        t = jnp.asarray(t, jnp.int32)
        x, bad = zero_nonfinite(jnp.asarray(x, dtype))
        x = clip_l2(x, state.sensitivity)
        # Exact running sum, compensated (float32-accurate over long horizons, O(d) memory).
        y = x - state.compensation
        total = state.total + y
        compensation = (total - state.total) - y
        # Prefix of the current block: the node closing at t (level tz(j)) joins the set bits above it.
        j = (t - 1) % size + 1
        level = trailing_zeros(j)
        eta = state.scale * node(state.key, level, (t >> level) - 1)
        fresh = j == 1
        below = jnp.where(fresh, 0.0, jax.lax.dynamic_index_in_dim(state.prefix, level + 1, 0, keepdims=False))
        value = below + eta
        rows = jnp.arange(m + 2, dtype=jnp.int32)[:, None]
        prefix = jnp.where(rows <= level, value, jnp.where(fresh, 0.0, state.prefix))
        release_noise = value
        suffix = state.suffix
        if has_suffix:
            # Suffix of length B - j of the previous block (ending at end = t - j).
            length = size - j
            suffix = shrink_suffix(state.suffix, state.key, length, t - j, state.scale)
            release_noise = release_noise + jnp.where(t > size, suffix[0], 0.0)
        release = poison_past_horizon(total + release_noise, t, horizon)
        new_state = state._replace(
            total=total,
            compensation=compensation,
            prefix=prefix,
            suffix=suffix,
            nonfinite=state.nonfinite + bad,
        )
        return new_state, release

    def sensitivity_fn(params: WindowTreeParams) -> np.ndarray:
        return factor * np.asarray(params.sensitivity, np.float64)

    def variance_fn(params: WindowTreeParams, t: np.ndarray) -> np.ndarray:
        # |D(t)| independent nodes: popcount(j) prefix nodes and, from the second block on,
        # popcount(B - j) suffix nodes of the previous block (window_nodes).
        j = (t - 1) % size + 1
        nodes = popcount(j) + np.where((t > size) & (j < size), popcount(size - j), 0)
        return nodes * _node_variance64(noise, calibration, params, sensitivity_fn(params), depth, dim)

    mechanism = Mechanism(init_fn, step_fn, partial(check_window_tree_params, noise=noise), horizon)
    info = PrefixSumInfo("window_tree", horizon, dim, noise, neighbouring, sensitivity_fn, variance_fn)
    return register(mechanism, info)


def _node_variance64(
    noise: str, calibration: str, params: WindowTreeParams, s: np.ndarray, depth: int, dim: int
) -> np.ndarray:
    """``window_node_variance(window_node_scale(...))`` in float64 on the host (the variance oracle's node)."""
    eps = np.asarray(params.epsilon, np.float64)
    with np.errstate(divide="ignore"):
        if noise == "gamma":
            return (dim + 1.0) * (depth * s / eps) ** 2
        delta = np.asarray(params.delta, np.float64)
        if calibration == "paper":
            return 8.0 * (s * depth * np.log(2.0 / delta) / eps) ** 2
        return depth * s**2 * 2.0 * np.log(1.25 / delta) / eps**2
