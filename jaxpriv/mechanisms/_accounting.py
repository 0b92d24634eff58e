"""Privacy accounting and noise calibration.

The calibrations and the closed-form conversions are traceable ``jnp`` functions: they
accept arrays (so they vmap over privacy grids) and treat an infinite budget as "no
noise" (the calibrated scale is exactly 0). Concrete inputs are validated eagerly
(``ValueError`` naming the argument); inside ``jit`` (tracers) the checks are skipped.

The exact Gaussian accounting (``gaussian_delta``, ``analytic_gaussian_sigma``) and the
tighter zCDP conversion (``zcdp_to_dp_tight``) are float64 NumPy/SciPy functions for the
host; ``analytic_gaussian_stddev`` is the traceable calibration, never below the exact one.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import scipy.optimize
import scipy.special
from jax.scipy import special as jspecial
from jax.typing import ArrayLike

from jaxpriv import _validate
from jaxpriv.mechanisms._noise import NoiseFamily, noise_family
from jaxpriv.mechanisms._noise import _calibration_inputs as _calibration_inputs

# The node calibrations and the samplers' support live with the families (``_noise``, ``_support``);
# re-exported here, where the accounting's readers look for them.
from jaxpriv.mechanisms._noise import gamma_node_scale as gamma_node_scale
from jaxpriv.mechanisms._noise import gaussian_node_stddev as gaussian_node_stddev
from jaxpriv.mechanisms._noise import laplace_node_scale as laplace_node_scale
from jaxpriv.mechanisms._support import SAMPLER_SUPPORT as SAMPLER_SUPPORT
from jaxpriv.mechanisms._support import _gaussian_coordinate_floor as _gaussian_coordinate_floor


def tree_depth(horizon: int) -> int:
    """``D = ceil(log2 T) + 1``: levels of the tree over ``T`` leaves (Algorithm 2, line 1).

    A leaf enters at most ``D`` nodes, so each node gets ``1/D`` of the budget.
    """
    if horizon < 1:
        raise ValueError(f"horizon must be an integer >= 1, got {horizon}")
    return (horizon - 1).bit_length() + 1


def _budget(name: str, value: ArrayLike) -> None:
    """A budget given to a conversion: numeric, every entry in ``[0, inf]`` (0 and ``inf`` are limits)."""
    _validate.numeric(name, value)
    _validate.nonnegative(name, value, allow_inf=True)


def _delta(value: ArrayLike) -> None:
    """δ of an (ε, δ) guarantee: numeric, every entry in ``(0, 1)``."""
    _validate.numeric("delta", value)
    _validate.in_open_interval("delta", value, 0.0, 1.0)


def dp_to_zcdp(epsilon: ArrayLike) -> jax.Array:
    """ε-DP implies ρ-zCDP with ``ρ = ε²/2`` (Bun & Steinke 2016, Prop. 1.4).

    Raises:
      ValueError: a concrete ``epsilon`` that is not a number in ``[0, inf]``.
    """
    _budget("epsilon", epsilon)
    epsilon = jnp.asarray(epsilon, jnp.float32)
    return 0.5 * epsilon**2


def zcdp_to_dp(rho: ArrayLike, delta: ArrayLike) -> jax.Array:
    """ρ-zCDP implies ``(ρ + 2 sqrt(ρ log(1/δ)), δ)``-DP (Bun & Steinke 2016, Prop. 1.3).

    The closed form, traceable; ``zcdp_to_dp_tight`` (host, float64) gives a smaller ε.

    Raises:
      ValueError: a concrete ``rho`` outside ``[0, inf]`` or ``delta`` outside ``(0, 1)``.
    """
    _budget("rho", rho)
    _delta(delta)
    rho = jnp.asarray(rho, jnp.float32)
    delta = jnp.asarray(delta, jnp.float32)
    return rho + 2.0 * jnp.sqrt(rho * jnp.log(1.0 / delta))


def zcdp_to_dp_tight(rho: ArrayLike, delta: ArrayLike) -> np.ndarray:
    """ρ-zCDP implies (ε, δ)-DP, through Rényi DP with ``dp_accounting`` (host, float64, NumPy).

    ρ-zCDP is RDP of every order ``α > 1`` with ``D_α <= αρ`` (Bun & Steinke 2016, Def. 1.1):
    a ``dp_accounting.ZCDpEvent`` composed into an ``RdpAccountant``, whose ``get_epsilon``
    converts the curve with ``ε = min_α [αρ + log(1 - 1/α) - log(αδ)/(α - 1)]`` (Canonne,
    Kamath & Steinke 2020, Prop. 12; Asoodeh et al. 2020). The minimum runs over the
    accountant's default orders, a dense grid, and the order ``α* = 1 + sqrt(log(1/δ)/ρ)`` at
    which the closed form ``zcdp_to_dp`` is attained; there ``log(1 - 1/α) - log(α)/(α - 1) < 0``,
    so the result is below ``zcdp_to_dp(rho, delta)`` for every ``ρ > 0``. A conversion for
    *any* ρ-zCDP mechanism: a single Gaussian mechanism (μ-GDP, ``μ = sqrt(2ρ)``) has the
    exact, smaller ε of ``gaussian_delta``.

    Args:
      rho: ρ in ``[0, inf]`` (array).
      delta: δ in ``(0, 1)`` (array, broadcast against ``rho``).

    Returns:
      ε (float64, the broadcast shape): 0 at ``ρ = 0``, ``inf`` at ``ρ = inf``.

    Raises:
      ValueError: ``rho`` outside ``[0, inf]`` or ``delta`` outside ``(0, 1)``.
      ImportError: the optional ``dp-accounting`` is missing (``pip install jaxpriv[accounting]``).
    """
    _budget("rho", rho)
    _delta(delta)
    try:
        import dp_accounting
        from dp_accounting.rdp import rdp_privacy_accountant
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError(
            "zcdp_to_dp_tight needs the optional dependency dp-accounting: pip install jaxpriv[accounting]"
        ) from e
    rho64, delta64 = np.broadcast_arrays(np.asarray(rho, np.float64), np.asarray(delta, np.float64))
    base = np.concatenate(
        [np.asarray(rdp_privacy_accountant.DEFAULT_RDP_ORDERS, np.float64), np.geomspace(1.001, 1e6, 400)]
    )

    def one(r: float, d: float) -> float:
        if r == 0.0 or np.isinf(r):
            return r
        star = 1.0 + np.sqrt(np.log(1.0 / d) / r)
        orders = np.unique(np.concatenate([base, star * np.exp(np.linspace(-1.0, 1.0, 401)), [star]]))
        accountant = rdp_privacy_accountant.RdpAccountant(list(orders[orders > 1.0]))
        accountant.compose(dp_accounting.ZCDpEvent(float(r)))
        return float(accountant.get_epsilon(float(d)))

    return np.vectorize(one, otypes=[np.float64])(rho64, delta64)


def gaussian_delta(sigma: ArrayLike, sensitivity: ArrayLike, epsilon: ArrayLike) -> np.ndarray:
    """The exact δ(ε) of the Gaussian mechanism ``N(0, σ²)`` with L2 sensitivity Δ (host, float64).

    Balle & Wang 2018, "Improving the Gaussian mechanism for differential privacy",
    Theorem 8: with ``μ = Δ/σ``,
    ``δ(ε) = Φ(μ/2 - ε/μ) - e^ε Φ(-μ/2 - ε/μ)``, the smallest δ for which the mechanism is
    (ε, δ)-DP (equivalently, μ-GDP; Dong, Roth & Su 2022, Cor. 2.13). Adaptive compositions
    of Gaussian mechanisms whose sensitivities satisfy ``sum Δ_i² <= Δ²`` have the same δ(ε).
    Computed in log space: ``δ = Φ(a)(1 - e^r)`` with ``r = ε + log Φ(b) - log Φ(a)``; for
    ``a < 0`` the identity ``(b² - a²)/2 = ε`` gives ``r = log erfcx(-b/√2) - log erfcx(-a/√2)``,
    free of the cancellation of ε against ``log Φ`` (stable for large ε).

    Args:
      sigma: σ in ``[0, inf]``.
      sensitivity: Δ in ``[0, inf)``.
      epsilon: ε in ``[0, inf]``. All three broadcast.

    Returns:
      δ in ``[0, 1]`` (float64): 0 where ``Δ = 0``, ``σ = inf`` or (``ε = inf`` and ``σ > 0``);
      1 where ``σ = 0 < Δ`` (a deterministic release).

    Raises:
      ValueError: a negative, NaN or non-numeric argument, or an infinite sensitivity.
    """
    _budget("sigma", sigma)
    _validate.numeric("sensitivity", sensitivity)
    _validate.nonnegative("sensitivity", sensitivity)
    _budget("epsilon", epsilon)
    s, d, e = np.broadcast_arrays(*(np.asarray(v, np.float64) for v in (sigma, sensitivity, epsilon)))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        mu = d / s
        finite = (mu > 0) & np.isfinite(mu) & np.isfinite(e)
        m = np.where(finite, mu, 1.0)
        eps = np.where(finite, e, 0.0)
        a = m / 2 - eps / m
        b = -m / 2 - eps / m
        la = scipy.special.log_ndtr(a)
        direct = eps + scipy.special.log_ndtr(b) - la
        scaled = np.log(scipy.special.erfcx(-b / np.sqrt(2))) - np.log(scipy.special.erfcx(-a / np.sqrt(2)))
        r = np.minimum(np.where(a < 0, scaled, direct), 0.0)
        delta = np.exp(la) * -np.expm1(r)
    deterministic = np.isinf(mu) & (d > 0)
    return np.where(finite, np.clip(delta, 0.0, 1.0), np.where(deterministic, 1.0, 0.0))


def _gdp_lower(epsilon: ArrayLike, delta: ArrayLike, xp: Any = np) -> Any:
    """A μ at which the Gaussian mechanism is certainly (ε, δ)-DP (``μ = Δ/σ``), ``> 0`` for ``δ > 0``.

    The larger of (i) the root of ``Φ(μ/2 - ε/μ) = δ`` (``δ(ε) <= Φ(μ/2 - ε/μ)``):
    ``μ = 2ε/(z + sqrt(z² + 2ε))``, ``z = Φ⁻¹(1 - δ)`` (written without cancellation for both
    signs of ``z``), and (ii) the exact solution at ``ε = 0`` (``δ(ε) <= δ(0) = erf(μ/(2√2))``):
    ``μ = 2√2 erfinv(δ)``.
    """
    special = scipy.special if xp is np else jspecial
    z = -special.ndtri(delta)
    root = xp.sqrt(z * z + 2.0 * epsilon)
    safe = xp.where(z > 0, z + root, 1.0)
    first = xp.where(z > 0, 2.0 * epsilon / safe, root - z)
    return xp.maximum(first, 2.0 * np.sqrt(2.0) * special.erfinv(delta))


def analytic_gaussian_sigma(epsilon: ArrayLike, delta: ArrayLike, sensitivity: ArrayLike = 1.0) -> np.ndarray:
    """The smallest σ for which the Gaussian mechanism is (ε, δ)-DP (host, float64; vectorised).

    The analytic Gaussian mechanism (Balle & Wang 2018, Theorem 8 and Algorithm 1): the
    root in σ of ``gaussian_delta(σ, Δ, ε) = δ``, valid for every ε (the classical
    ``σ = Δ sqrt(2 ln(1.25/δ))/ε`` holds for ε < 1 only). Solved by ``brentq`` in
    ``log μ``, ``μ = Δ/σ``, from a certified lower end (``_gdp_lower``); the returned σ is
    then rounded up until ``gaussian_delta(σ, Δ, ε) <= δ`` holds in float64.

    Args:
      epsilon: ε in ``[0, inf]`` (``inf`` gives σ = 0).
      delta: δ in ``(0, 1)``.
      sensitivity: Δ in ``[0, inf)``. All three broadcast.

    Returns:
      σ (float64), of the broadcast shape.

    Raises:
      ValueError: ``epsilon`` outside ``[0, inf]``, ``delta`` outside ``(0, 1)``, a negative or
        infinite ``sensitivity``.
    """
    _budget("epsilon", epsilon)
    _delta(delta)
    _validate.numeric("sensitivity", sensitivity)
    _validate.nonnegative("sensitivity", sensitivity)
    e, d, s = np.broadcast_arrays(*(np.asarray(v, np.float64) for v in (epsilon, delta, sensitivity)))

    def one(eps: float, dlt: float) -> float:
        """σ per unit sensitivity: ``1/μ*``."""
        if np.isinf(eps):
            return 0.0
        target = np.log(dlt)

        def excess(log_mu: float) -> float:
            with np.errstate(divide="ignore"):
                return float(np.log(gaussian_delta(np.exp(-log_mu), 1.0, eps)) - target)

        lo = float(np.log(_gdp_lower(eps, dlt)))
        hi = lo + np.log(2.0)
        while excess(hi) <= 0.0:
            lo, hi = hi, hi + np.log(2.0)
        if excess(lo) < 0.0:
            lo = scipy.optimize.brentq(excess, lo, hi, xtol=1e-14, rtol=4 * np.finfo(float).eps)
        sigma = float(np.exp(-lo))
        # Round up until the claim holds exactly in float64: one ulp at a time for the first 64 steps
        # (the numbers of every budget that ever needed fewer), then steps that double, so that a budget
        # where float64 cancels (tiny ε with δ <= 1e-10: the root's δ(σ) is rounding noise) ends in
        # about a hundred steps instead of hanging (issue 45).
        step, steps = 0.0, 0
        while gaussian_delta(sigma, 1.0, eps) > dlt:
            steps += 1
            if steps <= 64:
                sigma = float(np.nextafter(sigma, np.inf))
                continue
            step = max(2.0 * step, float(np.spacing(sigma)))
            sigma += step
            if not np.isfinite(sigma):
                raise ValueError(
                    f"analytic_gaussian_sigma: no finite σ certifies (epsilon={eps!r}, delta={dlt!r}) in float64"
                )
        return sigma

    unit = np.vectorize(one, otypes=[np.float64])(e, d)
    return s * unit


# Iterations of the traced bisection in log μ over a bracket of width log 16: 2^-32 of it is
# far below the float32 resolution of log μ.
_BISECTION_STEPS = 32


def analytic_gaussian_stddev(
    epsilon: ArrayLike, delta: ArrayLike, sensitivity: ArrayLike = 1.0, dtype=jnp.float32
) -> jax.Array:
    """Traceable analytic-Gaussian calibration: a σ that is never below ``analytic_gaussian_sigma``.

    For params traced under ``jit`` / ``vmap`` (a privacy grid compiles once): a
    fixed-iteration bisection in ``log μ`` (``μ = Δ/σ``) over ``[μ_0, 16 μ_0]``, ``μ_0`` the
    certified lower end of ``_gdp_lower``, in ``dtype`` with ``jax.scipy.special.log_ndtr``. A
    point is accepted only if an *upper bound* of its δ is ``<= δ``: the computed
    ``log δ = log Φ(a) + log(1 - e^r)`` is taken with ``r`` lowered and ``log Φ(a)`` raised by
    a bound on their rounding error in ``dtype`` (``16u`` times their magnitudes, ``u`` the
    unit roundoff), and ``log δ`` lowered likewise. The result is the accepted (lower) end of
    the bracket shrunk by ``16u``, so rounding of ``σ = Δ/μ`` cannot cross the exact value.
    Where float32 cannot resolve ``1 - e^r`` (ε ≲ 1e-3 with δ ≲ 1e-12) the bound falls back
    towards ``μ_0``: σ stays valid but is larger than needed (up to 4×). The tests check
    ``gaussian_delta(σ) <= δ`` in float64 on the host, and ``>= δ/2`` on the usual grid.

    Args:
      epsilon: ε in ``(0, inf]`` (``inf`` gives σ = 0).
      delta: δ in ``(0, 1)``.
      sensitivity: Δ ``>= 0``.
      dtype: the computation's float dtype.

    Returns:
      σ (``dtype``), of the broadcast shape.

    Raises:
      ValueError: concrete arguments out of range (skipped for tracers).
    """
    _validate.numeric("epsilon", epsilon)
    _validate.positive("epsilon", epsilon)
    _delta(delta)
    _validate.numeric("sensitivity", sensitivity)
    _validate.nonnegative("sensitivity", sensitivity)
    eps_in = jnp.asarray(epsilon, dtype)
    delta = jnp.asarray(delta, dtype)
    private = jnp.isfinite(eps_in)
    eps = jnp.where(private, eps_in, 1.0)
    u = float(jnp.finfo(dtype).eps)
    slack = 16.0 * u
    target = jnp.log(delta) - slack * (jnp.abs(jnp.log(delta)) + 1.0)

    def accepted(log_mu: jax.Array) -> jax.Array:
        mu = jnp.exp(log_mu)
        a = mu / 2 - eps / mu
        la = jspecial.log_ndtr(a)
        lb = jspecial.log_ndtr(-mu / 2 - eps / mu)
        r = jnp.minimum(eps + lb - la, 0.0) - slack * (jnp.abs(la) + jnp.abs(lb) + eps + 1.0)
        upper = la + slack * (jnp.abs(la) + 1.0) + jnp.log(-jnp.expm1(r))
        return upper <= target

    def body(_, bracket):
        lo, hi = bracket
        mid = 0.5 * (lo + hi)
        ok = accepted(mid)
        return jnp.where(ok, mid, lo), jnp.where(ok, hi, mid)

    lo = jnp.log(_gdp_lower(eps, delta, jnp))
    lo, _ = jax.lax.fori_loop(0, _BISECTION_STEPS, body, (lo, lo + np.log(16.0)))
    mu = jnp.exp(lo) * (1.0 - slack)
    sigma = jnp.asarray(sensitivity, dtype) / mu
    return jnp.where(private, sigma, jnp.zeros_like(sigma))


def node_scale(
    noise: NoiseFamily | str, epsilon: ArrayLike, rho: ArrayLike, sensitivity: ArrayLike, depth: int
) -> jax.Array:
    """The per-node noise scale of a ``depth``-level tree in family ``noise``: ``NoiseFamily.node_scale``.

    Of its budget: ``epsilon`` for the ε-DP families, ``rho`` for the Gaussian (``gamma_node_scale``,
    ``laplace_node_scale``, ``gaussian_node_stddev``).
    """
    family = noise_family(noise)
    return family.node_scale(epsilon if family.pure else rho, sensitivity, depth)


def gaussian_stddev(rho: ArrayLike, sensitivity: ArrayLike) -> jax.Array:
    """Gaussian mechanism ``σ = Δ / sqrt(2ρ)`` for ρ-zCDP (Bun & Steinke 2016, Prop. 1.6)."""
    _calibration_inputs("rho", rho, sensitivity)
    rho = jnp.asarray(rho, jnp.float32)
    return jnp.asarray(sensitivity, jnp.float32) / jnp.sqrt(2.0 * rho)


def node_variance(
    noise: NoiseFamily | str, budget: ArrayLike, sensitivity: ArrayLike, depth: int, dim: int
) -> jax.Array:
    """Exact per-coordinate variance of one tree node's noise.

    Gamma-norm: ``(d+1)(DΔ/ε)²``; Laplace: ``2(DΔ/ε)²``; Gaussian: ``DΔ²/(2ρ)``.
    ``budget`` is ε for the first two and ρ for the Gaussian family.
    """
    family = noise_family(noise)
    return family.scaled_variance(family.node_scale(budget, sensitivity, depth), dim)


# ---------------------------------------------------------------------------------------------
# The δ that the float32 samplers' bounded support (``SAMPLER_SUPPORT``, ``_support``) adds (host, float64).

#: The stated δ: the largest ``sampler_delta_floor`` a tree component accepts (issue 35). Every
#: component whose noise reaches its releases through a tree of these samplers (``binary_tree``,
#: ``honaker_tree`` and the learners built on them, the WDP learners' window tree) refuses in its
#: ``check``, before compiling, a finite budget whose floor exceeds it (``jaxpriv.mechanisms.
#: check_sampler_floor``). 1e-5 is the δ conventionally stated beside ε (below ``1/n`` for the
#: ``n <= 10^5`` records it is quoted with; ``1/T = 6e-5`` at the demo's ``T = 2^14``): a floor above
#: it means the samplers alone break a claim as strong as (ε, 1e-5). It refuses the budgets where
#: a node's shift nears the support: for trees of 11-15 levels, Gaussian ρ above 12-16, Laplace ε
#: above 91-119, Gamma ε above 71-93 at d = 3 (33-40 at d = 100); for one node, ρ above 2 and ε
#: above 5-11; Gamma-norm trees of d >~ 2500 at every budget (the bound's directional term). It
#: accepts the demo's ε ∈ {0.1, 1, 10, ∞} for every family (d <= 100) and every budget the
#: library's examples, notebooks and tests run (docs/algorithms/mechanisms.md, "The stated δ").
SAMPLER_DELTA_MAX = 1e-5


def sampler_delta_floor(noise: NoiseFamily | str, budget: ArrayLike, depth: int, dim: int) -> np.ndarray:
    """The δ that the float32 samplers' bounded support adds to a tree's guarantee (host, float64).

    The samplers of ``jaxpriv._rng`` cannot draw beyond ``SAMPLER_SUPPORT``, so a node's noise
    is, at best, the exact law *conditioned on that support*, and a release near one end of its
    support is one the neighbouring stream cannot produce. The guarantee is then (ε, δ) with δ at
    least this floor, whatever the scale. Each of the ``depth`` nodes that an input enters gets
    ``budget/depth`` (ε/D, or ρ/D), so a neighbour shifts a node's unit-scale noise by at most
    ``s = ε/D`` (Laplace, Gamma: scale ``DΔ/ε``, sensitivity Δ) or ``s = sqrt(2ρ/D)`` (Gaussian:
    ``σ = Δ sqrt(D/(2ρ))``); the node floor ``δ₁(s)`` composes over the ``D`` independent
    nodes to ``1 - (1 - δ₁)^D``. In the conditioned model:

    * ``"laplace"`` (exact): the tree is (ε, δ)-DP for exactly this δ and no smaller. A unit
      Laplace on ``[-M, M]`` (``M = 31 ln 2``) shifted by ``s`` along one coordinate leaves the
      mass ``δ₁ = (e^(s-M) - e^(-M)) / (2(1 - e^(-M)))`` outside the neighbour's support (while
      ``s <= M``); on the common support the density ratio stays within ``e^s``. Spreading an
      L1 shift over coordinates gives less (``δ₁`` is convex in ``s``).
    * ``"gaussian"`` (the singular mass, an upper bound within the spread of the shift): the
      mass of outputs outside the neighbour's support, ``1 - Π_j (1 - g(x_j))^D`` for a shift
      ``x`` with ``||x||_2 <= s``, ``g`` the normal's mass within ``x_j`` of the nearer end of
      ``[lo, hi]`` (``_gaussian_coordinate_floor``). A spread shift can give more than a
      concentrated one (``g`` grows linearly at first), so the maximum over ``x`` is bounded by
      ``d`` times the concave envelope of ``y -> -log(1 - g(sqrt(y)))`` at ``s²/d`` (Jensen);
      shifts split equally over ``k <= d`` coordinates attain at least 2/3 of it (tested). A
      ρ-zCDP tree's (ε, δ) conversion holds with ``δ/Z + floor``, ``Z >= 1 - 2.4e-10·dD`` the
      support's mass: add the floor to the converted δ.
    * ``"gamma"`` (an upper bound): the noise is the exact Gamma-norm noise conditioned on the
      event ``A`` that its ``d`` exponentials lie in ``[0, M_E]`` (``M_E = 32 ln 2``) and its
      ``d`` normals in ``[lo, hi]``. With ``a(n) = P(A | n)``, the node's
      ``δ(ε/D) <= E[(a(n) - a(n - v))_+] / P(A)`` (exact noise ``n``; pure DP of the exact law),
      and ``a = a_radius · a_direction`` splits it into a radial part, at most
      ``d e^(-M_E) (e^s - 1)`` (a radius that the neighbour's exponentials cannot reach needs one
      of them in ``(M_E - s, M_E]``), and a directional part, at most ``e^s (1 - Z_N^d)``
      (``Z_N`` the normal's support mass). The directional part does not shrink with ``s``: the
      bound is loose for small node budgets. At ``d = 1`` the direction is a sign, fair on the
      sampler's grid, and the function returns the exact floor, the Laplace formula with ``M_E``
      (half the bound's radial term).

    The model leaves out the grid itself: a float32 sampler is discrete, and exact DP of a
    float32 release needs more than its support (Mironov 2012, "On significance of the least
    significant bits"); this floor is what the support alone costs.

    Args:
      noise: ``"gamma"``, ``"laplace"`` or ``"gaussian"``.
      budget: the whole tree's ε (gamma, laplace) or ρ (gaussian), in ``[0, inf]`` (array).
        ``inf`` gives 1 (a deterministic release: no guarantee), 0 gives 0.
      depth: ``D``, the nodes an input enters, each with ``budget/D``; 1 for a single node.
      dim: ``d``, the dimension.

    Returns:
      δ (float64, the shape of ``budget``), in ``[0, 1]``.

    Raises:
      ValueError: an unknown family, a budget outside ``[0, inf]``, ``depth`` or ``dim`` < 1.
    """
    family = noise_family(noise)
    _budget(family.budget, budget)
    if int(depth) != depth or depth < 1:
        raise ValueError(f"depth must be an integer >= 1, got {depth}")
    if int(dim) != dim or dim < 1:
        raise ValueError(f"dim must be an integer >= 1, got {dim}")
    b = np.asarray(budget, np.float64)
    flat = b.ravel()
    out = np.empty_like(flat)
    for i, value in enumerate(flat):
        if value / depth > 700.0:  # inf, or a node budget no float64 tail reaches: no guarantee
            out[i] = 1.0
            continue
        node_log = family.node_floor_log(value, depth, int(dim))
        out[i] = -np.expm1(depth * node_log) if np.isfinite(node_log) else 1.0
    return np.clip(out.reshape(b.shape), 0.0, 1.0)
