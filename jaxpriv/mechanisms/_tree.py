"""The binary-tree (tree-based aggregation) mechanism for private prefix sums."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxpriv import _rng, _safe, _validate, declare
from jaxpriv._base import (
    Mechanism,
    PrefixSumInfo,
    PRNGKey,
    Spec,
    as_key,
    check_horizon,
    check_params_class,
    engine_jit,
    mechanism_step_count,
    poison_past_horizon,
    static_args,
    zero_nonfinite,
)
from jaxpriv._reduce import reduce_last
from jaxpriv.mechanisms import _accounting, _noise
from jaxpriv.mechanisms._dyadic import DyadicSums, dyadic_init, dyadic_step
from jaxpriv.mechanisms._noise import NoiseFamily, noise_family
from jaxpriv.mechanisms._sampler_floor import SamplerFloor, check_sampler_floor, tree_sampler_floor
from jaxpriv.mechanisms._variance import budget_unit_variance, describe

NOISE_FAMILIES = tuple(_noise.FAMILIES)  # the families' names: ("gamma", "laplace", "gaussian")


class TreeParams(NamedTuple):
    """Privacy parameters of a prefix-sum mechanism: exactly the budget its noise family needs.

    A budget left ``None`` never means "no privacy": a mechanism refuses params without
    the budget of its family, or with the budget of another family (``ValueError``
    naming both, in ``check`` and in ``init``). The non-private limit is an explicit
    ``inf``.

    Attributes:
      epsilon: ε of ε-DP for the whole stream: required by ``"gamma"`` and ``"laplace"``,
        refused by ``"gaussian"``; ``inf`` = no noise.
      rho: ρ of ρ-zCDP for the whole stream: required by ``"gaussian"``, refused by
        ``"gamma"`` and ``"laplace"``; ``inf`` = no noise.
      sensitivity: Δ, the bound every input is clipped to: L2 norm for
        ``"gamma"`` and ``"gaussian"``, L1 norm for ``"laplace"``.
    """

    epsilon: ArrayLike | None = None
    rho: ArrayLike | None = None
    sensitivity: ArrayLike = 1.0


class TreeState(NamedTuple):
    """State of a tree over ``D = ceil(log2 T) + 1`` levels (see ``DyadicSums``).

    Row ``i`` of ``sums.exact`` holds the most recently closed node of level
    ``i`` (a dyadic block of ``2^i`` inputs); ``sums.suffix`` holds the partial
    sums of the noisy released nodes, so each step costs ``O(d)`` amortised.
    """

    sums: DyadicSums  # exact node sums [D, d] and suffix sums of the noisy nodes [D + 1, d]
    scale: jax.Array  # shape=(), per-node noise scale (Gamma/Laplace scale, Gaussian σ)
    sensitivity: jax.Array  # shape=(), clipping bound Δ


_DOWN = 2.0**-100


def _norms(x: jax.Array, norm: str) -> tuple[jax.Array, jax.Array]:
    """``(||x||, ||x·2^-100||)`` (``[..., 1]``, L1 or L2 over the last axis) in one reduction.

    The same sums, in the same order, as ``_l1`` / ``_l2`` of ``x`` and of ``x·2^-100``, as one variadic
    reduction: XLA's CPU compile then reads ``x`` (recomputing it from its inputs: a gradient, a draw) in one
    kernel instead of two (issue 47).
    """
    return _finite_and_norms(x, norm)[1:]


def _finite_and_norms(x: jax.Array, norm: str) -> tuple[jax.Array, jax.Array, jax.Array]:
    """``(all entries finite, ||x||, ||x·2^-100||)`` (``[..., 1]``) in one variadic reduction (``_norms``; above
    ``_reduce.ONE_PASS_MAX`` entries three reductions, ``jaxpriv._reduce``)."""
    small = x * _DOWN
    terms = (jnp.abs(x), jnp.abs(small)) if norm == "l1" else (x * x, small * small)
    finite, *sums = reduce_last((jnp.isfinite(x), *terms), ("all", "sum", "sum"))
    sums = [v[..., None] for v in sums]
    norms = sums if norm == "l1" else [_safe.safe_sqrt(v) for v in sums]
    return finite[..., None], norms[0], norms[1]


def _clip(
    x: jax.Array, bound: jax.Array, norm_kind: str, norms: tuple[jax.Array, jax.Array] | None = None
) -> jax.Array:
    tiny = jnp.finfo(x.dtype).tiny
    norm, small_norm = _norms(x, norm_kind) if norms is None else norms
    plain = x * jnp.minimum(1.0, bound / jnp.maximum(norm, tiny))
    # Where the norm overflows float32 (||(1e20, 0, 0)||² = inf), ``plain`` would be 0: recompute it
    # on x·2^-100, whose norm is finite (and whose entries that matter stay normal numbers);
    # x·Δ/||x|| = x'·Δ/||x'|| for x' = x·2^-100. (Dividing by max|x_i| is not safe: XLA's CPU
    # division multiplies by a reciprocal, which flushes to zero for a peak above 2^126.)
    small = x * _DOWN
    small_norm = jnp.maximum(small_norm, tiny)
    scaled = jnp.where(bound * _DOWN >= small_norm, x, small * (bound / small_norm))
    return jnp.where(jnp.isfinite(norm), plain, scaled)


def _clipped(x: jax.Array, bound: jax.Array, norm_fn: Callable[[jax.Array], jax.Array]) -> jax.Array:
    """Where ``_clip`` scales ``x`` down (``[..., 1]``, bool): the same tests as its two branches."""
    tiny = jnp.finfo(x.dtype).tiny
    norm = norm_fn(x)
    small_norm = jnp.maximum(norm_fn(x * _DOWN), tiny)
    return jnp.where(jnp.isfinite(norm), bound / jnp.maximum(norm, tiny) < 1.0, bound * _DOWN < small_norm)


def _smooth_clip(x: jax.Array, bound: jax.Array, norm: str) -> jax.Array:
    """``_clip`` written for differentiation: finite derivatives of every order, whatever ``x`` (0 included).

    Differentiating ``_clip``'s own branches gives ``0 · inf = NaN`` from second order on (issue 45):
    the branch a ``where`` discards divides by a norm floored at ``tiny`` (``1/tiny² = inf`` in
    float32), and so does the plain branch at ``x = 0``. Here, where ``x`` is scaled down (the
    same tests as ``_clip``, on its values), ``y = Δ u`` with ``u = x / ||x||`` computed on ``x·2^-e``
    (``e`` the exponent of ``max_i |x_i|``, applied in two factors that stay normal numbers), so every
    intermediate and its derivatives are bounded; elsewhere ``y = x``.
    """
    norm_fn = _l1 if norm == "l1" else _l2
    xs, bs = jax.lax.stop_gradient(x), jax.lax.stop_gradient(bound)
    clipped = _clipped(xs, bs, norm_fn)
    _, e = jnp.frexp(jnp.max(jnp.abs(xs), -1, keepdims=True))  # max|x_i| = m 2^e, m in [0.5, 1)
    half = -e // 2
    xp = x * jnp.exp2(half.astype(x.dtype)) * jnp.exp2((-e - half).astype(x.dtype))  # max|x'_i| about 1
    if norm == "l1":
        n = jnp.sum(jnp.abs(xp), -1, keepdims=True)
    else:
        sq = jnp.sum(xp * xp, -1, keepdims=True)
        n = jnp.sqrt(jnp.where(sq > 0, sq, 1.0))
    u = xp / jnp.where(n > 0, n, 1.0)  # x / ||x|| (0 for x = 0)
    return jnp.where(clipped, jnp.where(clipped, bound, 0.0) * u, x)


def _l2(x: jax.Array) -> jax.Array:
    return _safe.safe_sqrt(jnp.sum(x * x, -1, keepdims=True))


def _l1(x: jax.Array) -> jax.Array:
    return jnp.sum(jnp.abs(x), -1, keepdims=True)


@_safe.smooth_derivatives(partial(_smooth_clip, norm="l2"))
def clip_l2(x: jax.Array, bound: jax.Array) -> jax.Array:
    """Scale ``x`` (last axis) into the L2 ball of radius ``bound``; the norm is computed scale-safely.

    Derivatives of every order (in ``x`` and ``bound``) are finite, in a ``lax.scan`` too: they are
    those of ``_smooth_clip`` (``jaxpriv._safe.smooth_derivatives``); the values are the plain code's.
    """
    return _clip(x, bound, "l2")


@_safe.smooth_derivatives(partial(_smooth_clip, norm="l1"))
def clip_l1(x: jax.Array, bound: jax.Array) -> jax.Array:
    """Scale ``x`` (last axis) into the L1 ball of radius ``bound``; the norm is computed scale-safely.

    Derivatives as ``clip_l2``'s.
    """
    return _clip(x, bound, "l1")


NORMS = ("l1", "l2")


def input_norm(noise: NoiseFamily | str) -> str:
    """The norm a noise family's inputs are clipped in: ``"l1"`` for ``"laplace"``, ``"l2"`` otherwise."""
    return noise_family(noise).input_norm


def guard_input(x: ArrayLike, bound: jax.Array, norm: str, dtype: Any) -> tuple[jax.Array, jax.Array]:
    """The input guard of every prefix-sum mechanism: zero a non-finite input, then clip it to ``bound``.

    ``x`` is cast to ``dtype``; an input with any NaN / ±inf entry becomes the zero vector
    (``jaxpriv._base.zero_nonfinite``: zero lies in every ball, so the guarantee holds); the
    result is scaled into the ``norm`` ball of radius ``bound`` (``clip_l1`` / ``clip_l2``,
    scale-safe). The privacy guarantee holds whatever the caller passes in.

    Args:
      x: the input, shape ``[d]`` (or ``[..., d]``: the norm is over the last axis).
      bound: the clipping bound Δ (the state's ``sensitivity``).
      norm: ``"l1"`` or ``"l2"`` (static; ``input_norm(noise)`` for a noise family).
      dtype: the mechanism's dtype.

    Returns:
      ``(x, bad)``: the guarded input, and ``1`` (int32) if it had a non-finite entry, else ``0``
      (the step's count, which the mechanism's ``step`` returns).
    """
    if norm not in NORMS:
        raise ValueError(f"norm must be one of {NORMS}, got {norm!r}")
    x = jnp.asarray(x, dtype)
    if x.ndim == 1:  # one input (the engine's, under vmap): the test and the norms in one reduction
        return (_guard_l1 if norm == "l1" else _guard_l2)(x, bound)
    x, bad = zero_nonfinite(x)  # [..., d]: one test over the whole array, as zero_nonfinite's rule
    clip = clip_l1 if norm == "l1" else clip_l2
    return clip(x, bound), bad


def _guard_plain(x: jax.Array, bound: jax.Array, norm: str) -> tuple[jax.Array, jax.Array]:
    """``clip(zero_nonfinite(x))`` with the finiteness test and the clip's two norms in one reduction.

    The same numbers as ``zero_nonfinite`` then ``clip_l1`` / ``clip_l2``: a finite ``x`` is clipped with the
    norms of ``x``; a non-finite one gives 0 (its norms replaced by those of 0, which are 0). One variadic
    reduction over ``x`` instead of a finiteness test and then the norms of the zeroed input: XLA's CPU
    compile reads ``x`` (PFTAL: recomputes the gradient from the point and the draw) in one kernel, not two
    (issue 47).
    """
    finite, n0, n1 = _finite_and_norms(x, norm)
    x = jnp.where(finite, x, 0.0)
    clipped = _clip(x, bound, norm, (jnp.where(finite, n0, 0.0), jnp.where(finite, n1, 0.0)))
    return clipped, (~finite[..., 0]).astype(jnp.int32)


def _smooth_guard(x: jax.Array, bound: jax.Array, norm: str) -> tuple[jax.Array, jax.Array]:
    """``_guard_plain`` for differentiation: ``zero_nonfinite`` then ``_smooth_clip`` (as before the merge)."""
    x, bad = zero_nonfinite(x)
    return _smooth_clip(x, bound, norm), bad


_guard_l2 = _safe.smooth_derivatives(partial(_smooth_guard, norm="l2"))(partial(_guard_plain, norm="l2"))
_guard_l1 = _safe.smooth_derivatives(partial(_smooth_guard, norm="l1"))(partial(_guard_plain, norm="l1"))


def budget_field(noise: NoiseFamily | str) -> str:
    """The params field that holds the budget of ``noise``'s family: ``"epsilon"`` or ``"rho"``.

    For code written once for every family:
    ``TreeParams(**{budget_field(noise): value}, sensitivity=1.0)``.
    """
    return noise_family(noise).budget


def check_budget(component: str, params: Any, noise: NoiseFamily | str) -> None:
    """The budget of ``noise``'s family is given (ε for gamma/laplace, ρ for gaussian) and no other is.

    Static (``None``-ness is pytree structure), so ``init`` calls it under ``jit`` too.
    """
    family = noise_family(noise)
    other = "epsilon" if family.budget == "rho" else "rho"
    _validate.budget(component, family, params, needs=(family.budget,), refuses=(other,))


def check_budget_values(
    component: str, params: Any, noise: NoiseFamily | str, floor: float = _validate.FLOAT32_TINY_BUDGET
) -> None:
    """``check_budget``, then the budget's values: in ``(0, inf]``, numeric, not below ``floor``.

    For any params with ``epsilon`` / ``rho`` fields (a mechanism's or a learner's). A learner
    passes ``floor`` and checks its own floor after (``jaxpriv.oco._floor``).
    """
    check_budget(component, params, noise)
    field = noise_family(noise).budget
    _validate.budget_value(field, getattr(params, field), floor)


def tree_node_scale(
    component: str, params: TreeParams, noise: NoiseFamily | str, factor: float, depth: int, dtype
) -> jax.Array:
    """The scale of one node of a depth-``depth`` tree, the budget split over its levels (checks the budget)."""
    family = noise_family(noise)
    check_budget(component, params, family)
    sens = factor * jnp.asarray(params.sensitivity, dtype)
    return jnp.asarray(family.node_scale(getattr(params, family.budget), sens, depth), dtype)


def tree_node_variance(
    noise: NoiseFamily | str, params: TreeParams, sensitivity: np.ndarray, dim: int, depth: int
) -> np.ndarray:
    """One node's variance, the budget split ``depth`` ways (ρ/D: variance × D; ε/D: × D²)."""
    return budget_unit_variance(noise, params, sensitivity, dim) * (depth**2 if noise_family(noise).pure else depth)


def check_tree_params(
    params: TreeParams,
    noise: NoiseFamily | str,
    component: str = "binary_tree",
    sampler_floor: SamplerFloor | None = None,
) -> None:
    """Raise ``ValueError`` for a missing or wrong-family budget, a budget ``<= 0``, or a bad sensitivity.

    With ``sampler_floor`` (the trees): also for a finite budget whose float32 samplers' δ floor
    exceeds ``SAMPLER_DELTA_MAX`` (``check_sampler_floor``).
    """
    check_budget_values(component, params, noise)
    _validate.numeric("sensitivity", params.sensitivity)
    _validate.nonnegative("sensitivity", params.sensitivity)
    check_sampler_floor(component, params, sampler_floor)


NEIGHBOURING = ("add_remove", "replace")


@declare.mechanism("binary_tree", params=TreeParams)
def binary_tree(
    horizon: int, dim: int, noise: NoiseFamily | str = "gamma", neighbouring: str = "add_remove", dtype=jnp.float32
) -> Mechanism:
    """Tree-based aggregation: private prefix sums ``v_t ≈ sum_{s<=t} x_s`` of a vector stream.

    At step ``t`` (1-based) the node of level ``i = trailing_zeros(t)`` closes:
    it absorbs the open nodes below it and ``x_t`` and gets fresh noise. The
    release is the sum of the noisy nodes at the set bits of ``t``, so its
    noise is ``popcount(t)`` independent node draws.

    Privacy (event level, adaptively chosen inputs; Smith & Thakurta 2013,
    Appendix B.1): every input is clipped to norm Δ and enters at most
    ``D = ceil(log2 T) + 1`` nodes, each released with a ``1/D`` share of the
    budget. The neighbouring relation fixes the sensitivity ``s`` of one input:

    * ``neighbouring="add_remove"`` (default): streams differ by one input
      replaced with zero (added or removed); ``s = Δ``.
    * ``neighbouring="replace"``: streams differ by one input replaced with any
      other input of norm ``<= Δ``; ``s = 2Δ``. (With ``"add_remove"``
      calibration, a replace-one change is only 2ε-DP / 4ρ-zCDP.)

    Node noise for that sensitivity ``s``:

    * ``"gamma"``: ε-DP, L2 norm; node noise with density
      ``∝ exp(-ε||n||_2 / (D s))`` (Algorithm 2, line 9): per-coordinate
      variance ``(d+1)(D s/ε)²``.
    * ``"laplace"``: ε-DP, L1 norm; i.i.d. ``Lap(D s/ε)`` per coordinate:
      variance ``2(D s/ε)²``.
    * ``"gaussian"``: ρ-zCDP, L2 norm; ``N(0, D s²/(2ρ) I)`` per node.

    An infinite budget gives zero noise and the exact prefix sums. The float32
    samplers' bounded support adds a δ floor to the guarantee
    (``sampler_delta_floor``, declared as the spec's ``sampler_floor``): ``check``
    refuses a finite budget whose floor exceeds ``SAMPLER_DELTA_MAX`` (1e-5).

    Guard rails. An input with a NaN or ±inf entry is replaced by the zero
    vector before clipping (``guard_input``) and counted: ``step`` returns the step's count
    (``returns_count=True``; what ``prefix_sums`` and the engine report), and no counter lives in
    the state. Zero is within every sensitivity bound,
    so the guarantee holds, and every release equals that of the same stream
    with the input set to zero. The tree declares ``horizon=T``: ``prefix_sums``,
    ``run`` and ``sweep`` refuse a longer stream, and a step at ``t > T`` (or
    ``t < 1``) stepped by hand returns a NaN release rather than a sum that has
    silently lost the closed levels.

    Args:
      horizon: ``T >= 1``, the number of inputs; fixes ``D``.
      dim: ``d >= 1``, the dimension of each input.
      noise: ``"gamma"``, ``"laplace"`` or ``"gaussian"``, or the ``NoiseFamily`` (``GAMMA``, ...).
      neighbouring: ``"add_remove"`` (sensitivity Δ) or ``"replace"`` (2Δ).
      dtype: dtype of the state and of the releases.

    Returns:
      A ``Mechanism`` with params ``TreeParams``; ``step(key, state, x, t)``
      returns ``(state, v_t, nonfinite)`` for ``x`` of shape ``[d]`` and ``t`` in ``1..T``.

    Examples:
      >>> import jax, jax.numpy as jnp
      >>> tree = binary_tree(horizon=8, dim=1)
      >>> xs = jnp.ones((8, 1))
      >>> prefix_sums(tree, TreeParams(epsilon=jnp.inf), xs, jax.random.key(0))[:, 0]  # the explicit non-private limit
      Array([1., 2., 3., 4., 5., 6., 7., 8.], dtype=float32)

    References:
      Smith & Thakurta, (Nearly) Optimal Algorithms for Private Online
      Learning in Full-information and Bandit Settings, NeurIPS 2013,
      Algorithm 2. Dwork, Naor, Pitassi, Rothblum 2010; Chan, Shi, Song 2011.
    """
    horizon = _validate.horizon(horizon)
    dim = _validate.positive_int("dim", dim)
    noise = noise_family(noise)  # the family object, kept by info, the check and the closures
    neighbouring = _validate.choice("neighbouring", neighbouring, NEIGHBOURING)
    factor = 2.0 if neighbouring == "replace" else 1.0  # sensitivity of one input, per unit clip bound
    depth = _accounting.tree_depth(horizon)
    sampler = noise.sampler
    norm = noise.input_norm
    sampler_floor = tree_sampler_floor("binary_tree", noise, depth, dim)

    def init_fn(key: PRNGKey, params: TreeParams) -> TreeState:
        del key
        scale = tree_node_scale("binary_tree", params, noise, factor, depth, dtype)
        return TreeState(
            sums=dyadic_init(depth, dim, dtype),
            scale=scale,
            sensitivity=jnp.asarray(params.sensitivity, dtype),
        )

    def step_fn(key: PRNGKey, state: TreeState, x: ArrayLike, t: jax.Array) -> tuple[TreeState, jax.Array, jax.Array]:
        x, bad = guard_input(x, state.sensitivity, norm, dtype)
        noise = state.scale * sampler(key, (dim,), dtype)  # fresh noise for the node that closes at t
        sums, release = dyadic_step(state.sums, x, t, noise)
        release = poison_past_horizon(release, t, horizon)
        return state._replace(sums=sums), release, bad

    def sensitivity_fn(params: TreeParams) -> np.ndarray:
        return factor * np.asarray(params.sensitivity, np.float64)

    def variance_fn(params: TreeParams, t: np.ndarray) -> np.ndarray:
        # popcount(t) independent nodes, each with the budget split D ways
        return popcount(t) * tree_node_variance(noise, params, sensitivity_fn(params), dim, depth)

    static = static_args(noise=noise, dtype=np.dtype(dtype).name)
    info = PrefixSumInfo(
        "binary_tree", horizon, dim, noise, neighbouring, sensitivity_fn, variance_fn, structure="dyadic"
    )
    return Mechanism(
        init_fn,
        step_fn,
        partial(check_tree_params, noise=noise, sampler_floor=sampler_floor),
        horizon,
        info=info,
        spec=Spec(private=True, static=static, sampler_floor=sampler_floor),
        returns_count=True,
    )


def popcount(t: np.ndarray) -> np.ndarray:
    """The number of set bits of each (non-negative, int64) ``t``, on the host."""
    t = np.asarray(t, np.int64)
    if hasattr(np, "bitwise_count"):  # NumPy >= 2: one vectorised pass (~60x faster at full-scale horizons)
        return np.bitwise_count(t).astype(np.int64)
    return sum((t >> k) & 1 for k in range(63))


@partial(engine_jit, static_argnums=0)
def _prefix_sums(mechanism: Mechanism, params: TreeParams, xs: jax.Array, key: PRNGKey) -> tuple[jax.Array, jax.Array]:
    k_init, k_steps = jax.random.split(key)
    state = mechanism.init(k_init, params)

    def body(carry, t):
        state, count = carry
        state, release, bad = mechanism_step_count(mechanism, _rng.fold_in(k_steps, t), state, xs[t - 1], t)
        return (state, count + bad), release

    start = (state, jnp.zeros((), jnp.int32))
    (_, count), releases = jax.lax.scan(body, start, jnp.arange(1, xs.shape[0] + 1, dtype=jnp.int32))
    return releases, count


class PrefixSums(NamedTuple):
    """What ``prefix_sums(..., with_nonfinite=True)`` returns.

    Attributes:
      releases: ``[T, d]``, the mechanism's release at each step.
      nonfinite_inputs: int, the inputs with a NaN / ±inf entry that the mechanism
        replaced by zero (as ``Result.nonfinite_inputs`` of the engine).
    """

    releases: jax.Array
    nonfinite_inputs: int


def prefix_sums(
    mechanism: Mechanism, params: TreeParams, xs: ArrayLike, key: PRNGKey, with_nonfinite: bool = False
) -> jax.Array | PrefixSums:
    """Run a prefix-sum mechanism over a whole stream ``xs[T, d]``; returns the releases ``[T, d]``.

    The step keys are ``fold_in(key', t)``, so the noise at ``t`` does not depend on ``T``.
    ``key`` may be an integer seed (``jax.random.key(seed)``). Inputs with a NaN / ±inf
    entry are replaced by zero inside the mechanism (its guarantee holds); their count
    is returned with ``with_nonfinite=True``, and a ``RuntimeWarning`` says how many
    whenever there are any.

    The run is in float32. A finite input of huge norm (a float64 ``1e300``, which would
    overflow float32) is not a non-finite input: it is clipped to the sensitivity like any
    other input (``x·Δ/||x||``), its direction kept to float32 precision. (On the host, a
    finite row of L1 norm above ``2^125`` is first scaled in float64 down to that norm: its
    norm still exceeds ``Δ``, so the mechanism's clip gives the same ``x·Δ/||x||``.)

    Raises:
      ValueError: the stream is longer than the mechanism's horizon (both numbers
        named), ``xs`` is not a non-empty numeric ``[T, d]`` array with the mechanism's
        ``d``, the params are another class than the mechanism's (``TreeParams``, or
        ``WindowTreeParams`` for the window tree) or invalid (a missing or wrong-family budget), or
        an input's norm exceeds ``2^125`` and ``params.sensitivity`` is not below
        ``2^125/sqrt(d)`` (such an input cannot be clipped to it in float32).
    """
    key = as_key(key)
    check_params_class(mechanism, params, "mechanism", "params")
    if mechanism.check is not None:
        mechanism.check(params)
    try:
        xs = np.asarray(xs)
    except (TypeError, ValueError) as err:
        raise ValueError(f"xs must be a numeric array of shape [T, d], got {type(xs).__name__}: {err}") from None
    if xs.dtype.kind not in "biuf":
        raise ValueError(f"xs must be a numeric array of shape [T, d], got dtype {xs.dtype}")
    if xs.ndim != 2 or xs.shape[0] < 1:
        raise ValueError(f"xs must have shape [T, d] with T >= 1, got shape {xs.shape}")
    dim = _mechanism_dim(mechanism)
    if dim is not None and xs.shape[1] != dim:
        raise ValueError(f"xs must have shape [T, {dim}] (the mechanism's dim), got shape {xs.shape}")
    check_horizon(xs.shape[0], mechanism, "mechanism", "stream length")
    if xs.dtype.kind == "f":
        xs = _fit_huge_rows(xs, params)
    params = jax.tree.map(lambda v: jnp.asarray(v, jnp.float32), params)
    releases, bad = _prefix_sums(mechanism, params, jnp.asarray(xs, jnp.float32), key)
    if isinstance(bad, jax.core.Tracer):  # called under the caller's vmap / jit: no host-side warning
        return PrefixSums(releases, bad) if with_nonfinite else releases
    bad = int(bad)
    if bad:
        warnings.warn(f"prefix_sums: {bad} input(s) had a NaN/inf entry and were replaced by zero", RuntimeWarning, 2)
    return PrefixSums(releases, bad) if with_nonfinite else releases


_HUGE_NORM = 2.0**125  # a float32 norm above ~2^126 is clipped to 0 by XLA's CPU division (a flushed reciprocal)


def _fit_huge_rows(xs: np.ndarray, params: Any) -> np.ndarray:
    """``xs`` (float64) with each finite row of L1 norm above ``2^125`` scaled down to that norm, direction kept.

    Cast to float32 as it is, such a row would overflow to ±inf (a float64 ``1e300``) and be zeroed as a
    non-finite input, or keep a float32 norm the mechanism's clip cannot divide by. Its norm exceeds the
    sensitivity before and after the scaling, so the mechanism's clip gives the same ``x·Δ/||x||``. Rows
    with a NaN / ±inf entry are left for the mechanism to zero and count. A sensitivity too large for the
    scaled rows to still exceed it is refused (``ValueError``).
    """
    xs = np.asarray(xs, np.float64)
    with np.errstate(invalid="ignore"):
        peak = np.max(np.abs(xs), axis=1, keepdims=True)
    finite = np.isfinite(peak) & (peak > 0)
    safe_peak = np.where(finite, peak, 1.0)
    with np.errstate(invalid="ignore"):
        l1 = safe_peak * np.sum(np.abs(xs) / safe_peak, axis=1, keepdims=True)  # no float64 overflow
    over = finite & (l1 > _HUGE_NORM)
    if not np.all(np.isfinite(peak)):  # rows the mechanism zeroes: keep them non-finite, and castable without overflow
        xs = np.where(~np.isfinite(peak) & np.isfinite(xs), np.clip(xs, -_HUGE_NORM, _HUGE_NORM), xs)
    if not over.any():
        return xs
    rows = np.flatnonzero(over[:, 0])
    floor = _HUGE_NORM / np.sqrt(xs.shape[1])  # the least norm (L1 or L2) of a scaled row
    sensitivity = getattr(params, "sensitivity", None)
    try:
        bound = None if sensitivity is None else np.asarray(sensitivity, np.float64)
    except Exception:  # traced under the caller's jit / vmap: not checkable here
        bound = None
    if bound is not None and bound.size and not np.max(bound) < floor:
        raise ValueError(
            f"xs rows {rows.tolist()[:8]} have norms beyond what the mechanism clips in float32 (> 2^125) and "
            f"params.sensitivity = {sensitivity!r} is not below {floor:.3g}: they cannot be clipped to it"
        )
    return xs * np.where(over, _HUGE_NORM / np.where(over, l1, 1.0), 1.0)


def _mechanism_dim(mechanism: Mechanism) -> int | None:
    try:
        return describe(mechanism).dim
    except ValueError:
        return None
