"""The phase arithmetic shared by GOPE, AdaC-GOPE and their episode-level simulator.

Every function here is the arithmetic of one line of Algorithm 8 of the thesis
(eq. (5.6), Steps 1–5; GOPE without the privacy terms), written once and used by both simulators: the step-level
policies (``gope.py``, ``adac_gope.py``: one scan step per round) and the
episode-level fast path (``episodic/gope.py``: one scan step per phase). The two
simulators therefore run the same algorithm.

**The exact phase-level simulator** (``simulate``, the three policies' ``Spec.fast_path``):

Episode-level simulator of GOPE / AdaC-GOPE / AdaC-GOPE-Var: one scan step per phase.

Within a phase of (AdaC-)GOPE the actions do not depend on the phase's rewards
(Step 2 of Algorithm 8 fixes ``T_ℓ(a)`` before the phase starts), and the phase
only uses its rewards through the per-arm sums ``S_a = Σ_{t in phase, a_t = a} r_t``.
So a whole phase can be simulated at once by drawing ``S_a`` from its exact
distribution. With Gaussian rewards ``r = <θ*, a> + σ η`` and ``n_a`` pulls,
``S_a ~ N(n_a <θ*, a>, n_a σ²)`` exactly (``clip=False``, the paper's setup).
With clipped rewards (``clip=True``), ``S_a`` is a sum of ``n_a`` i.i.d.
clipped Gaussians: it is drawn exactly (``n_a`` draws, masked) when
``n_a <= exact_pulls``, and from the Gaussian with the clipped reward's exact
mean and variance otherwise (CLT; Berry–Esseen error ``O(n_a^{-1/2})`` in
Kolmogorov distance, ``< 0.06`` at ``n_a = 64`` and shrinking after): an
*approximation*, documented as such.

The pseudo-regret is exact in both cases: support arms are played in index
order (as in the step-level policy), so the number of pulls of arm ``a`` by
any round ``s`` of the phase is ``clip(s - t_start - off_a, 0, n_a)``; the last
phase is truncated at ``T``. ``T = 10^7`` costs ``O(log T)`` scan steps.

The phase arithmetic (design, ``c_ℓ``, ``T_ℓ(a)``, least squares, noise,
elimination) is the one of the step-level policies (``_gope_core``): same
algorithm, two simulators. The step-level policies are the reference. AdaC-GOPE-Var
(``adac_gope_var``, whose fast path runs this simulator) differs from AdaC-GOPE only in ``close_phase``'s
``noise_placement="sums"`` (one ``N(0, 2/ρ)`` per support action's reward sum),
which this simulator calls with the same per-arm sums, so it is exact for it too.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache, partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import ndtr

from jaxpriv import _validate
from jaxpriv._base import Learner, PRNGKey, check_horizon, check_params_class, spec_of
from jaxpriv.bandits import design as _design
from jaxpriv.bandits._fast_path import FastPath, episode_sweep
from jaxpriv.envs.linear_bandits import LinearBanditParams, linear_bandit, unit_sphere
from jaxpriv.sim import Result, SimParams, normalize_checkpoints, spec_ndims

#: Design weights below this are dropped from the support ``S_ℓ`` (docs/algorithms/zcdp_bandits.md, 'Decoding choices').
SUPPORT_TOL = 1e-6
CALIBRATIONS = ("safe", "paper")
#: Diagnostic ablations of AdaC-GOPE: only the noise (GOPE's phase lengths; still private with the
#: "safe" calibration), or only the extra exploration (AdaC-GOPE's phase lengths, no noise: not private).
ABLATIONS = (None, "noise", "exploration")
#: Where AdaC-GOPE's Gaussian noise goes (``phased_elimination(noise_placement=...)``): on the
#: ``V^{-1/2}``-whitened statistic (Step 4 of Algorithm 8, AdaC-GOPE) or on the per-action reward
#: sums (AdaC-GOPE-Var, thesis Remark C.12; ``adac_gope_var``).
NOISE_PLACEMENTS = ("whitened", "sums", "sums_laplace", "sums_analytic")
#: The reconstructions' releases of the per-action sums (``hanna_gope``: Laplace, pure ε-DP;
#: ``li_zhou_ji_gope``: the analytic Gaussian mechanism, (ε, δ)-DP): placement -> (budget fields, guarantee).
SUM_RELEASES = {"sums_laplace": (("epsilon",), "ε-DP"), "sums_analytic": (("epsilon", "dp_delta"), "(ε, δ)-DP")}
#: The replace-one sensitivity of one action's reward sum (L1 = L2: one reward in [-1, 1] moves one sum by <= 2).
SUM_SENSITIVITY = 2.0


def ablation_parts(private: bool, ablation: str | None) -> tuple[bool, bool]:
    """``(private phase lengths, private noise)`` for AdaC-GOPE (``private``) under ``ablation``."""
    if ablation not in ABLATIONS:
        raise ValueError(f"ablation must be one of {ABLATIONS}, got {ablation!r}")
    if ablation is not None and not private:
        raise ValueError("ablation applies to AdaC-GOPE (private params) only")
    return private and ablation != "noise", private and ablation != "exploration"


def privacy_opt_outs(
    claim: bool, private: bool, clip: bool, ablation: str | None, calibration: str = "safe", placement: str = "whitened"
) -> tuple[str, ...]:
    """The opt-outs of AdaC-GOPE's / AdaC-GOPE-Var's guarantee in a configuration (``_validate.opt_outs``).

    ``clip=False``: rewards (and actions) are not bounded, so the sensitivity the noise is
    calibrated to is not guaranteed; ``ablation="exploration"`` adds no noise (``"noise"``, GOPE's
    phase lengths with AdaC-GOPE's noise, is private: the ``"safe"`` noise is calibrated to the
    realised design whatever the phase lengths); ``calibration="paper"`` (AdaC-GOPE) calibrates the noise
    for an exact G-optimal design, which Frank–Wolfe only approximates. ``()`` for GOPE
    (``private=False``: nothing is claimed).
    """
    if ablation not in ABLATIONS:
        raise ValueError(f"ablation must be one of {ABLATIONS}, got {ablation!r}")
    if not private:
        return _validate.opt_outs(claim)
    return _validate.opt_outs(
        claim,
        **{
            "clip=False": None if clip else "rewards outside [-1, 1] and actions outside the unit ball are not clipped",
            f"ablation={ablation!r}": {
                None: None,
                "noise": None,  # the same noise, calibrated to the realised design: still private
                "exploration": "a diagnostic: no noise is added",
            }[ablation],
            "calibration='paper'": (
                "the noise is calibrated for an exact G-optimal design, which Frank-Wolfe only approximates"
                if calibration == "paper" and placement == "whitened"
                else None
            ),
        },
    )


def normalise_actions(actions: jax.Array, action_bound: jax.Array, clip: bool) -> jax.Array:
    """The action vectors the policy computes with: ``a / L``, shrunk into the unit ball.

    With ``clip`` (the private-safe default) every row becomes
    ``(a/L) / max(1, ‖a/L‖)``, so ``‖x‖ <= 1`` as the sensitivity analysis needs
    (thesis Assumption 5.10); dividing by the public bound ``L`` keeps the model
    linear (``r = <L θ*, a/L>``) for the rows with ``‖a‖ <= L``. Without
    ``clip``: the raw rows.
    """
    x = jnp.asarray(actions, jnp.float32)
    if not clip:
        return x
    x = x / jnp.asarray(action_bound, jnp.float32)
    return x / jnp.maximum(1.0, jnp.linalg.norm(x, axis=-1, keepdims=True))


def clip_reward(reward: jax.Array, clip: bool) -> jax.Array:
    """``clip(r, -1, 1)`` (private-safe: ``|r| <= 1``, thesis Assumption 5.10) or ``r`` unchanged."""
    r = jnp.asarray(reward, jnp.float32)
    return jnp.clip(r, -1.0, 1.0) if clip else r


def confidence_level(phase: jax.Array, delta: jax.Array, num_actions: int) -> jax.Array:
    """``δ_{K,ℓ} = δ / (K ℓ (ℓ + 1))`` (thesis eq. (5.6))."""
    ell = jnp.asarray(phase, jnp.float32)
    return jnp.asarray(delta, jnp.float32) / (num_actions * ell * (ell + 1.0))


def chi2_tail(dim: int, delta: jax.Array) -> jax.Array:
    """``f(d, δ) = d + 2 sqrt(d log(2/δ)) + 2 log(2/δ)`` (thesis eq. (5.6))."""
    log_term = jnp.log(2.0 / jnp.asarray(delta, jnp.float32))
    return dim + 2.0 * jnp.sqrt(dim * log_term) + 2.0 * log_term


def phase_constant(
    phase: jax.Array,
    rho: jax.Array,
    delta: jax.Array,
    num_actions: int,
    dim: int,
    *,
    private: bool,
    rule: str = "joint",
) -> jax.Array:
    """``c_ℓ``, the phase length: ``T_ℓ(a) = ⌈c_ℓ π_ℓ(a)⌉``.

    GOPE (``private=False``), thesis eq. (5.6) without its privacy summand:
    ``c⁰_ℓ = (8d/β_ℓ²) log(4/δ_{K,ℓ})``, ``β_ℓ = 2^{-ℓ}``. With ``g² <= d/c`` (an exact
    G-optimal design) this makes ``|<θ̂_ℓ - θ*, a>| <= β_ℓ/2`` w.p. ``>= 1 - δ_{K,ℓ}/2`` for
    each arm (1-sub-Gaussian rewards).

    AdaC-GOPE, ``rule="paper"`` (eq. (5.6), the paper's eq. (4)):
    ``c_ℓ = c⁰_ℓ + (2d/β_ℓ) sqrt((2/ρ) f(d, δ_{K,ℓ}))``: the noise term is bounded
    separately, by Cauchy–Schwarz and a χ²_d tail, ``|<V^{-1/2}N, a>| <= g ‖N‖ <= β_ℓ/2``.
    The extra length vanishes as ``ρ -> ∞`` only at rate ``1/√ρ``.

    AdaC-GOPE, ``rule="joint"`` (default; derived here): for a fixed arm ``a`` the
    error ``<θ̃_ℓ - θ*, a> = <θ̂_ℓ - θ*, a> + <V^{-1/2}N_ℓ, a>`` is a sum of two independent
    terms, sub-Gaussian with variance proxy ``‖a‖²_{V^{-1}} <= g²`` and Gaussian with variance
    ``σ² ‖a‖²_{V^{-1}}``, ``σ² = 2d/(ρc)`` (the noise of Step 4; ``"safe"`` calibration
    uses ``max(g², d/c)``, the same under ``g² <= d/c``), so it is sub-Gaussian with proxy
    ``(d/c)(1 + 2d/(ρc))``. Asking for GOPE's own guarantee (``β_ℓ/2`` w.p. ``1 - δ_{K,ℓ}/2``,
    i.e. proxy ``<= d/c⁰_ℓ``) gives ``c² - c⁰c - 2dc⁰/ρ >= 0``:
    ``c_ℓ = (c⁰_ℓ + sqrt(c⁰_ℓ² + 8dc⁰_ℓ/ρ)) / 2``. Every per-arm statement Theorem 5.12's proof
    uses (``|<θ̃_ℓ - θ*, a>| <= β_ℓ`` on the good event, union over arms and phases through
    ``δ_{K,ℓ}``) holds as for eq. (5.6), with a shorter phase at every ρ; the extra length
    over GOPE is ``≈ 2d/ρ`` for large ρ (rate ``1/ρ``). Privacy does not depend on ``c``
    (the noise is calibrated to the realised ``V_ℓ``).
    """
    ell = jnp.asarray(phase, jnp.float32)
    beta = jnp.exp2(-ell)
    dk = confidence_level(phase, delta, num_actions)
    c = (8.0 * dim / beta**2) * jnp.log(4.0 / dk)
    if not private:
        return c
    rho = jnp.asarray(rho, jnp.float32)
    if rule == "paper":
        return c + (2.0 * dim / beta) * jnp.sqrt((2.0 / rho) * chi2_tail(dim, dk))
    return 0.5 * (c + jnp.sqrt(c**2 + 8.0 * dim * c / rho))


#: AdaC-GOPE's phase-length rules (``adac_gope(phase_length=...)``), see ``phase_constant``.
PHASE_LENGTHS = ("joint", "paper")


def allocation(weights: jax.Array, c: jax.Array, horizon: int) -> jax.Array:
    """``T_ℓ(a) = ⌈c_ℓ π_ℓ(a)⌉`` on the support (``π(a) > SUPPORT_TOL``), capped at ``T`` (int32).

    The cap only keeps int32 from overflowing: a phase longer than the horizon
    is truncated at ``T`` anyway.
    """
    n = jnp.ceil(jnp.minimum(c * weights, float(horizon)))
    return jnp.where(weights > SUPPORT_TOL, n, 0.0).astype(jnp.int32)


def max_phases(horizon: int) -> int:
    """A static bound on the number of phases that start within ``T`` rounds.

    Phase ``ℓ`` plays at least ``c_ℓ >= 8·4^ℓ log(4/δ_{K,ℓ}) > 8·4^ℓ`` rounds
    (``δ_{K,ℓ} < 1/4`` since ``K >= 2``), so phases up to ``L`` alone last
    more than ``T`` once ``8·4^L >= T``.
    """
    return max(1, int(np.ceil(np.log(max(horizon, 2) / 8.0) / np.log(4.0))) + 1)


class PhaseRelease(NamedTuple):
    """What closing a phase computes (Steps 3–5 of Algorithm 8).

    Attributes:
      theta_tilde: shape=[d], ``θ̃_ℓ`` (``= θ̂_ℓ`` for GOPE).
      theta_hat: shape=[d], ``θ̂_ℓ = V_ℓ^+ Σ_t a_t r_t`` (this phase's rewards only).
      gram: shape=[d, d], ``V_ℓ = Σ_a T_ℓ(a) a aᵀ``.
      g2: shape=(), ``g_ℓ² = max_{b ∈ A_ℓ} ‖b‖²_{V_ℓ^+}``.
      noise_var: shape=(), the variance of each coordinate of ``N_ℓ`` (of each ``Z_a`` for the ``"sums"`` placement).
      active: shape=[K] bool, ``A_{ℓ+1}``.
    """

    theta_tilde: jax.Array
    theta_hat: jax.Array
    gram: jax.Array
    g2: jax.Array
    noise_var: jax.Array
    active: jax.Array


def noise_variance(
    g2: jax.Array, c: jax.Array, rho: jax.Array, dim: int, *, private: bool, calibration: str
) -> jax.Array:
    """The variance of ``N_ℓ`` (the noise is ``V_ℓ^{-1/2} N_ℓ``).

    ``"safe"`` (default; docs/algorithms/zcdp_bandits.md, 'Decoding choices'): ``(2/ρ) max(g_ℓ², d/c_ℓ)``: the Gaussian
    mechanism for the ℓ2 sensitivity ``2 g_ℓ`` of ``φ_ℓ = V_ℓ^{-1/2} Σ a_s r_s``
    (thesis §C.1.3), never below the algorithm box's value. ``"paper"``:
    ``2d/(ρ c_ℓ)`` (Algorithm 8, Step 4), private only for an exact G-optimal
    design. ``0`` for GOPE or ``ρ = ∞``.
    """
    if not private:
        return jnp.zeros((), jnp.float32)
    rho = jnp.asarray(rho, jnp.float32)
    base = dim / c
    if calibration == "safe":
        base = jnp.maximum(g2, base)
    return 2.0 * base / rho


def close_phase(
    key: PRNGKey,
    x: jax.Array,
    *,
    active: jax.Array,
    pulls: jax.Array,
    reward_sums: jax.Array,
    phase: jax.Array,
    c: jax.Array,
    rho: jax.Array,
    private: bool,
    calibration: str,
    noise_placement: str = "whitened",
    scale: jax.Array | float = 0.0,
) -> PhaseRelease:
    """Steps 3–5 of Algorithm 8: least squares on this phase, Gaussian noise, elimination.

    Args:
      key: the noise key (one draw of ``N_ℓ`` per closed phase).
      x: ``[K, d]``, the (normalised) action vectors.
      active: ``[K]`` bool, ``A_ℓ``.
      pulls: ``[K]`` int32, ``T_ℓ(a)`` (the pulls of this phase).
      reward_sums: ``[K]``, ``Σ_{t in phase, a_t = a} r_t``.
      phase: ``ℓ``.
      c: ``c_ℓ``.
      rho: the zCDP budget (ignored unless ``private``).
      private: AdaC-GOPE (``True``) or GOPE.
      calibration: ``"safe"`` or ``"paper"``, see ``noise_variance`` (``"whitened"`` only).
      noise_placement: ``"whitened"`` (AdaC-GOPE, Step 4: ``θ̃ = θ̂ + V^{-1/2} N_ℓ``) or ``"sums"``
        (AdaC-GOPE-Var: ``θ̃ = V^+ Σ_{a ∈ S_ℓ} a (R_a + Z_a)``, ``Z_a ~ N(0, 2/ρ)`` i.i.d., one per
        arm pulled this phase; ``noise_var`` is then ``2/ρ``, the variance of each ``Z_a``), or a
        reconstruction's (``SUM_RELEASES``): ``Z_a ~ Lap(scale)`` (``"sums_laplace"``, ``noise_var = 2 scale²``)
        or ``N(0, scale²)`` (``"sums_analytic"``), ``rho`` then unused.
      scale: the reconstructions' per-sum noise scale (``sum_noise_scale``).

    Returns:
      A ``PhaseRelease``.
    """
    dim = x.shape[-1]
    gram = _design.design_gram(x, pulls.astype(jnp.float32))
    proj, _ = _design.span_projector(x, pulls > 0)
    gram_pinv = _design.pinv_on_span(gram, proj)
    stat = jnp.sum(x * reward_sums[:, None], axis=0)  # Σ_t a_t r_t
    theta_hat = gram_pinv @ stat
    g2 = jnp.max(jnp.where(active, _design.leverages(x, gram_pinv), 0.0))
    if private and noise_placement in SUM_RELEASES:
        # The reconstructions: each support action's reward sum (sensitivity 2) through the Laplace or the
        # analytic Gaussian mechanism (``sum_noise_scale``); θ̃ is their post-processing.
        scale = jnp.asarray(scale, jnp.float32)
        if noise_placement == "sums_laplace":
            z = scale * jax.random.laplace(key, reward_sums.shape, jnp.float32)
            noise_var = 2.0 * scale**2
        else:
            z = scale * jax.random.normal(key, reward_sums.shape, jnp.float32)
            noise_var = scale**2
        noisy_sums = reward_sums + jnp.where(pulls > 0, z, 0.0)
        theta_tilde = gram_pinv @ jnp.sum(x * noisy_sums[:, None], axis=0)
    elif private and noise_placement == "sums":
        # AdaC-GOPE-Var: the per-action sums R_a (ℓ2 sensitivity 2 for |r| <= 1: one reward moves one
        # sum by <= 2) through the Gaussian mechanism, σ² = 2²/(2ρ) = 2/ρ; θ̃ is their post-processing.
        noise_var = 2.0 / jnp.asarray(rho, jnp.float32)
        z = jnp.sqrt(noise_var) * jax.random.normal(key, reward_sums.shape, jnp.float32)
        noisy_sums = reward_sums + jnp.where(pulls > 0, z, 0.0)
        theta_tilde = gram_pinv @ jnp.sum(x * noisy_sums[:, None], axis=0)
    else:
        noise_var = noise_variance(g2, c, rho, dim, private=private, calibration=calibration)
        if private:
            root = _design.sqrt_pinv_on_span(gram, proj)
            noise = jnp.sqrt(noise_var) * jax.random.normal(key, (dim,), jnp.float32)
            theta_tilde = theta_hat + root @ noise
        else:
            theta_tilde = theta_hat
    est = x @ theta_tilde
    best = jnp.max(jnp.where(active, est, -jnp.inf))
    beta = jnp.exp2(-jnp.asarray(phase, jnp.float32))
    new_active = active & (best - est <= 2.0 * beta)
    return PhaseRelease(theta_tilde, theta_hat, gram, g2, noise_var, new_active)


class PhasePlan(NamedTuple):
    """The plan of one phase: ``c_ℓ``, the design and ``T_ℓ(a)``."""

    c: jax.Array  # shape=()
    alloc: jax.Array  # shape=[K], int32
    design: _design.Design


def plan_phase(
    x: jax.Array,
    active: jax.Array,
    *,
    phase: jax.Array,
    rho: jax.Array,
    delta: jax.Array,
    num_actions: int,
    horizon: int,
    private: bool,
    design_tol: float,
    design_iters: int,
    run: Any = True,
    rule: str = "joint",
    noise_placement: str = "whitened",
    scale: jax.Array | float = 0.0,
    small_support: bool = False,
) -> PhasePlan:
    """Steps 1–2 of Algorithm 8: G-optimal design on ``A_ℓ``, ``c_ℓ`` (``phase_constant``) and ``T_ℓ(a)``.

    The reconstructions (``noise_placement`` in ``SUM_RELEASES``): with ``small_support`` the design is pruned
    to at most ``d(d+1)/2`` points with the same ``V(π)`` (``design.prune_support``), and ``c_ℓ`` is
    ``sums_phase_constant`` for the realised support size and the per-sum noise ``scale``.
    """
    dim = x.shape[-1]
    des = _design.g_optimal_design(x, active, tol=design_tol, max_iters=design_iters, run=run)
    if small_support:
        des = des._replace(weights=_design.prune_support(x, des.weights, SUPPORT_TOL))
    if private and noise_placement in SUM_RELEASES:
        support = jnp.sum(des.weights > SUPPORT_TOL)
        c = sums_phase_constant(
            phase, delta, num_actions, dim, support=support, scale=scale, laplace=noise_placement == "sums_laplace"
        )
    else:
        c = phase_constant(phase, rho, delta, num_actions, dim, private=private, rule=rule)
    return PhasePlan(c, allocation(des.weights, c, horizon), des)


def phase_budget(params: Any, private: bool, noise_placement: str) -> tuple[jax.Array, jax.Array, jax.Array]:
    """``(ρ, scale, δ)`` of a run: AdaC-GOPE's ρ (``inf`` when not private), or a reconstruction's per-sum scale.

    The reconstructions (``noise_placement`` in ``SUM_RELEASES``, private): ``ρ = inf`` and the per-sum
    noise's ``scale`` (``sum_noise_scale``); otherwise ``scale = 0``. ``δ`` is the elimination's confidence.
    """
    if private and noise_placement in SUM_RELEASES:  # hanna_gope, li_zhou_ji_gope: their budget sets the noise
        rho = jnp.asarray(jnp.inf, jnp.float32)
        scale = sum_noise_scale(params, noise_placement)
    else:
        rho = jnp.asarray(params.rho, jnp.float32) if private else jnp.asarray(jnp.inf, jnp.float32)
        scale = jnp.zeros((), jnp.float32)
    return rho, scale, jnp.asarray(params.delta, jnp.float32)


def phase_planner(
    num_actions: int,
    horizon: int,
    explore: bool,
    design_tol: float,
    design_iters: int,
    phase_length: str,
    noise_placement: str,
    small_support: bool,
) -> Callable[..., PhasePlan]:
    """``plan_phase`` with a policy's static options bound: ``(x, active, phase=, rho=, delta=, scale=[, run=])``."""
    return partial(
        plan_phase,
        num_actions=num_actions,
        horizon=horizon,
        private=explore,
        design_tol=design_tol,
        design_iters=design_iters,
        rule=phase_length,
        noise_placement=noise_placement,
        small_support=small_support,
    )


def gated(pred: jax.Array, fn: Any, operand: Any) -> Any:
    """``fn(operand)`` where ``pred`` else ``operand``, costing nothing under ``vmap`` when no ``pred`` holds.

    A ``lax.while_loop`` that runs at most once: unbatched it is a conditional;
    batched over seeds it runs the body only at steps where some seed needs
    it (a batched ``lax.cond`` would run both branches at every step).
    """

    def body(carry):
        _, value = carry
        return jnp.zeros((), bool), fn(value)

    return jax.lax.while_loop(lambda c: c[0], body, (jnp.asarray(pred, bool), operand))[1]


def check_actions(actions: Any, num_actions: int, dim: int) -> None:
    """``actions`` has trailing shape ``[K, d]``, is finite and spans ``R^d``."""
    _validate.trailing_shape("actions", actions, (num_actions, dim))
    v = _validate._concrete(actions)
    if v is None:
        return
    if not np.all(np.isfinite(v)):
        raise ValueError("actions must be finite")
    for mat in v.reshape(-1, num_actions, dim):
        if np.linalg.matrix_rank(mat, tol=1e-6 * max(np.abs(mat).max(), 1e-30)) < dim:
            raise ValueError(f"actions must span R^{dim} (G-optimal design needs V(π) invertible), got rank < {dim}")


def check_common(params: Any, num_actions: int, dim: int, private: bool, noise_placement: str = "whitened") -> None:
    """Concrete-params checks shared by GOPE, AdaC-GOPE and the reconstructions (``SUM_RELEASES``)."""
    check_actions(params.actions, num_actions, dim)
    _validate.in_open_interval("delta", params.delta, 0.0, 1.0)
    _validate.positive("action_bound", params.action_bound, allow_inf=False)
    if not private:
        return
    if noise_placement not in SUM_RELEASES:
        _validate.budget_value("rho", params.rho)
        return
    _validate.budget_value("epsilon", params.epsilon)
    if noise_placement == "sums_analytic":
        _validate.numeric("dp_delta", params.dp_delta)
        _validate.in_open_interval("dp_delta", params.dp_delta, 0.0, 1.0)


def sum_noise_scale(params: Any, noise_placement: str) -> jax.Array:
    """The scale of the noise on each reward sum: Laplace ``b = 2/ε`` or the analytic Gaussian ``σ``.

    ``"sums_laplace"`` (``hanna_gope``): ``b = Δ/ε``, ``Δ = 2`` the L1 sensitivity of the vector of
    per-action sums (one reward replaced moves one sum by at most 2), the Laplace mechanism at ε-DP.
    ``"sums_analytic"`` (``li_zhou_ji_gope``): the smallest ``σ`` for which ``N(0, σ²)`` on a
    statistic of ℓ2 sensitivity 2 is (ε, δ)-DP (Balle & Wang 2018, Thm 8;
    ``mechanisms.analytic_gaussian_stddev``, never below the exact value). ``ε = inf`` gives 0.
    """
    eps = jnp.asarray(params.epsilon, jnp.float32)
    if noise_placement == "sums_laplace":
        return SUM_SENSITIVITY / eps
    from jaxpriv.mechanisms import analytic_gaussian_stddev  # local: only the reconstruction needs it

    return analytic_gaussian_stddev(eps, params.dp_delta, SUM_SENSITIVITY)


def sums_gope_bound(params: Any, spec: Any, horizon: int, noise_placement: str) -> float:
    """The elimination bound of a sums reconstruction (``theory.sums_gope_regret_bound``) at its noise scale.

    The Learner's ``Bound`` of ``hanna_gope`` (``"sums_laplace"``: Laplace, a sub-exponential scale term) and
    ``li_zhou_ji_gope`` (``"sums_analytic"``: Gaussian), read from the declared arguments of ``spec``.
    """
    from jaxpriv import declare, theory  # local: theory sits above the policies' cores

    a = declare.arguments(spec)
    k, d = int(a["num_actions"]), int(a["dim"])
    support = None if a.get("small_support", True) else k
    scale = float(sum_noise_scale(params, noise_placement))
    laplace = noise_placement == "sums_laplace"
    return float(theory.sums_gope_regret_bound(horizon, k, d, float(np.asarray(params.delta)), scale, laplace, support))


def sums_elimination(
    num_actions: int, dim: int, horizon: int, noise_placement: str, params_class: type, claim: bool, **options: Any
):
    """A sums reconstruction's policy: ``phased_elimination`` with noise on each support action's reward sum.

    ``options`` are the factory's ``clip``, ``design_tol``, ``design_iters`` and ``small_support``; ``claim`` its
    ``private``. The calibration is the placement's own (exact): ``calibration`` is unused.
    """
    return phased_elimination(
        num_actions,
        dim,
        horizon,
        private=True,
        noise_placement=noise_placement,
        params_class=params_class,
        claim=claim,
        **options,
    )


def sums_phase_constant(
    phase: jax.Array,
    delta: jax.Array,
    num_actions: int,
    dim: int,
    *,
    support: jax.Array,
    scale: jax.Array,
    laplace: bool,
) -> jax.Array:
    """``c_ℓ`` of the reconstructions (noise on the per-action sums; derived here, the constants ours).

    For an arm ``b`` the error of ``θ̃_ℓ`` is ``<θ̂_ℓ - θ*, b> + Σ_{a ∈ S_ℓ} w_a Z_a``,
    ``w_a = <a, V_ℓ^{-1} b>``. For a G-optimal design (``‖a‖²_{V^{-1}} <= d/c``, as GOPE's own
    constant assumes) ``|w_a| <= d/c`` and ``Σ w_a² <= |S_ℓ| d²/c²``. The first term is
    sub-Gaussian with proxy ``d/c``. Gaussian ``Z_a ~ N(0, σ²)`` add ``σ² |S_ℓ| d²/c²``; Laplace
    ``Z_a ~ Lap(b)`` have ``E e^{λZ} = 1/(1 - λ²b²) <= e^{2λ²b²}`` for ``|λ| <= 1/(√2 b)``, so they
    add ``4b² |S_ℓ| d²/c²`` to the proxy, valid for ``|λ| <= c/(√2 b d)`` (sub-exponential).
    Asking for GOPE's guarantee (``|error| <= β_ℓ/2`` w.p. ``1 - δ_{K,ℓ}/2``, i.e. proxy
    ``<= d/c⁰_ℓ``) gives ``c² - c⁰c - v|S|dc⁰ >= 0`` with ``v = σ²`` or ``4b²``:
    ``c₁ = (c⁰ + sqrt(c⁰² + 4v|S|dc⁰))/2`` (AdaC-GOPE's joint rule is ``v = 2/ρ``, ``|S| = 1``).
    For Laplace the Chernoff bound's linear regime also needs ``β_ℓ/(4√2 b d/c) >= log(4/δ_{K,ℓ})``:
    ``c₂ = 4√2 b d log(4/δ_{K,ℓ}) / β_ℓ``; ``c_ℓ = max(c₁, c₂)``. No noise (``scale = 0``): GOPE's
    ``c⁰_ℓ`` exactly. The private term grows like ``d^{3/2}√|S|`` (``|S| <= d(d+1)/2`` with the
    small-support design: ``d^{5/2}``), faster than AdaC-GOPE's ``d`` — the seed's point.
    """
    c0 = phase_constant(phase, jnp.inf, delta, num_actions, dim, private=False)
    scale = jnp.asarray(scale, jnp.float32)
    v = (4.0 if laplace else 1.0) * scale**2
    s = jnp.asarray(support, jnp.float32)
    c = 0.5 * (c0 + jnp.sqrt(c0**2 + 4.0 * v * s * dim * c0))
    if laplace:
        beta = jnp.exp2(-jnp.asarray(phase, jnp.float32))
        log_term = jnp.log(4.0 / confidence_level(phase, delta, num_actions))
        c = jnp.maximum(c, 4.0 * np.sqrt(2.0) * scale * dim * log_term / beta)
    return jnp.where(v > 0.0, c, c0)


# --- the step-level policy (one scan step per round) ------------------------------------------------


class GOPEState(NamedTuple):
    """State of GOPE / AdaC-GOPE (step level).

    Attributes:
      actions: shape=[K, d], the normalised action vectors the policy computes with.
      rho: shape=(), the zCDP budget (``inf`` for GOPE).
      delta: shape=(), the confidence δ.
      phase: shape=(), int32, the current phase ``ℓ`` (1-based).
      active: shape=[K], bool, ``A_ℓ``.
      alloc: shape=[K], int32, ``T_ℓ(a)``.
      pulled: shape=[K], int32, the pulls of each arm so far in this phase.
      reward_sum: shape=[K], float32, this phase's reward sums per arm (forgotten at phase end).
      c: shape=(), ``c_ℓ``.
      theta_tilde: shape=[d], ``θ̃`` of the last closed phase (zeros before).
      gram: shape=[d, d], ``V`` of the last closed phase.
      g2: shape=(), ``g²`` of the last closed phase.
      noise_var: shape=(), the noise variance of the last closed phase.
      num_closed: shape=(), int32, phases closed so far.
      scale: shape=(), the reconstructions' per-sum noise scale (``sum_noise_scale``; 0 for the others).
    """

    actions: jax.Array
    rho: jax.Array
    delta: jax.Array
    phase: jax.Array
    active: jax.Array
    alloc: jax.Array
    pulled: jax.Array
    reward_sum: jax.Array
    c: jax.Array
    theta_tilde: jax.Array
    gram: jax.Array
    g2: jax.Array
    noise_var: jax.Array
    num_closed: jax.Array
    scale: jax.Array


#: Each factory's algorithm, as the phase-level simulator names it in messages.
SIMULATES = {
    "adac_gope": "AdaC-GOPE (adac_gope, whitened noise)",
    "adac_gope_var": "AdaC-GOPE-Var (adac_gope_var, noise on the sums)",
    "gope": "GOPE (gope)",
    "hanna_gope": "Hanna et al. 2022, reconstructed (hanna_gope, Laplace noise on the sums)",
    "li_zhou_ji_gope": "Li, Zhou & Ji 2022, reconstructed (li_zhou_ji_gope, Gaussian noise on the sums)",
}
#: The factory name of each placement's private policy.
PLACEMENT_NAMES = {
    "whitened": "adac_gope",
    "sums": "adac_gope_var",
    "sums_laplace": "hanna_gope",
    "sums_analytic": "li_zhou_ji_gope",
}


def phased_elimination(
    num_actions: int,
    dim: int,
    horizon: int,
    *,
    private: bool,
    clip: bool = True,
    calibration: str = "safe",
    design_tol: float = 1e-3,
    design_iters: int = 5000,
    ablation: str | None = None,
    phase_length: str = "joint",
    noise_placement: str = "whitened",
    params_class: type | None = None,
    claim: bool = True,
    small_support: bool = False,
):
    """The step-level GOPE (``private=False``), AdaC-GOPE or AdaC-GOPE-Var policy.

    See ``gope`` / ``adac_gope`` / ``adac_gope_var``; ``noise_placement="sums"`` is AdaC-GOPE-Var.
    ``params_class`` is the one params class the policy takes; ``claim`` is the factory's
    ``private`` argument (``False``: the caller knows the guarantee does not hold; ``privacy_opt_outs``).
    ``noise_placement`` in ``SUM_RELEASES`` is a reconstruction (``hanna_gope``, ``li_zhou_ji_gope``), whose
    budget is ``epsilon`` (and ``dp_delta``), and ``small_support`` prunes its designs (``design.prune_support``).
    """
    from jaxpriv._base import (  # local: keep the import surface narrow
        Learner,
        NonfiniteInfo,
        Spec,
        poison_past_horizon,
        static_args,
        zero_nonfinite,
    )

    num_actions = _validate.positive_int("num_actions", num_actions, minimum=2)
    dim = _validate.positive_int("dim", dim)
    horizon = _validate.horizon(horizon)
    if horizon < num_actions:
        raise ValueError(f"horizon must be >= num_actions={num_actions}, got {horizon}")
    calibration = _validate.choice("calibration", calibration, CALIBRATIONS)
    if not 0.0 < design_tol < 1.0:
        raise ValueError(f"design_tol must be in (0, 1), got {design_tol!r}")
    design_iters = _validate.positive_int("design_iters", design_iters)
    explore, noisy = ablation_parts(private, ablation)
    planner = phase_planner(
        num_actions, horizon, explore, design_tol, design_iters, phase_length, noise_placement, small_support
    )
    phase_length = _validate.choice("phase_length", phase_length, PHASE_LENGTHS)
    noise_placement = _validate.choice("noise_placement", noise_placement, NOISE_PLACEMENTS)
    reasons = privacy_opt_outs(claim, private, clip, ablation, calibration, noise_placement)
    name = PLACEMENT_NAMES[noise_placement] if private else "gope"
    released = private and noise_placement in SUM_RELEASES
    if small_support and not released:
        raise ValueError("small_support applies to the reconstructions (noise_placement in SUM_RELEASES) only")
    budget_name, guarantee = ("epsilon", SUM_RELEASES[noise_placement][1]) if released else ("rho", "ρ-zCDP")
    # The exact phase-level simulator of this policy (``Spec.fast_path``), with the factory's static options.
    fast_path = FastPath(
        simulate,
        (
            ("simulates", SIMULATES[name]),
            ("noisy", private),
            ("clip", clip),
            ("calibration", calibration),
            ("design_tol", float(design_tol)),
            ("design_iters", design_iters),
            ("ablation", ablation),
            ("phase_length", phase_length),
            ("noise_placement", noise_placement),
            *((("small_support", small_support),) if released else ()),
        ),
        envs=("linear_bandit",),
    )

    def check(params: Any) -> None:
        check_common(params, num_actions, dim, private, noise_placement)
        if private:
            budget = getattr(params, budget_name)
            _validate.refuse_finite_budget(name, budget_name, budget, reasons, guarantee, claim)

    def init_fn(key: PRNGKey, params: Any) -> GOPEState:
        del key
        x = normalise_actions(params.actions, params.action_bound, clip)
        rho, scale, delta = phase_budget(params, private, noise_placement)
        active = jnp.ones((num_actions,), bool)
        phase = jnp.ones((), jnp.int32)
        plan = planner(x, active, phase=phase, rho=rho, delta=delta, scale=scale)
        return GOPEState(
            actions=x,
            rho=rho,
            delta=delta,
            phase=phase,
            active=active,
            alloc=plan.alloc,
            pulled=jnp.zeros((num_actions,), jnp.int32),
            reward_sum=jnp.zeros((num_actions,), jnp.float32),
            c=plan.c,
            theta_tilde=jnp.zeros((dim,), jnp.float32),
            gram=jnp.zeros((dim, dim), jnp.float32),
            g2=jnp.zeros((), jnp.float32),
            noise_var=jnp.zeros((), jnp.float32),
            num_closed=jnp.zeros((), jnp.int32),
            scale=scale,
        )

    def act_fn(key: PRNGKey, state: GOPEState, t: jax.Array) -> jax.Array:
        del key
        # Step 2: play the support's arms in index order, each T_ℓ(a) times (-1 past the horizon).
        return poison_past_horizon(jnp.argmax(state.pulled < state.alloc).astype(jnp.int32), t, horizon)

    def update_fn(
        key: PRNGKey, state: GOPEState, action: jax.Array, reward: jax.Array, t: jax.Array
    ) -> tuple[GOPEState, NonfiniteInfo]:
        del t
        r, bad = zero_nonfinite(jnp.asarray(reward, jnp.float32))  # 0 is inside [-1, 1]: privacy holds
        r = clip_reward(r, clip)
        state = state._replace(
            pulled=state.pulled.at[action].add(1),
            reward_sum=state.reward_sum.at[action].add(r),
        )
        done = jnp.all(state.pulled >= state.alloc)

        def close(s: GOPEState) -> GOPEState:
            rel = close_phase(
                key,
                s.actions,
                active=s.active,
                pulls=s.pulled,
                reward_sums=s.reward_sum,
                phase=s.phase,
                c=s.c,
                rho=s.rho,
                private=noisy,
                calibration=calibration,
                noise_placement=noise_placement,
                scale=s.scale,
            )
            nxt = s.phase + 1
            plan = planner(s.actions, rel.active, phase=nxt, rho=s.rho, delta=s.delta, scale=s.scale)
            return s._replace(
                phase=nxt,
                active=rel.active,
                alloc=plan.alloc,
                pulled=jnp.zeros_like(s.pulled),
                reward_sum=jnp.zeros_like(s.reward_sum),
                c=plan.c,
                theta_tilde=rel.theta_tilde,
                gram=rel.gram,
                g2=rel.g2,
                noise_var=rel.noise_var,
                num_closed=s.num_closed + 1,
            )

        return gated(done, close, state), NonfiniteInfo(bad)

    static = static_args(
        num_actions=num_actions,
        dim=dim,
        horizon=horizon,
        private=private,
        clip=clip,
        calibration=calibration,
        design_tol=float(design_tol),
        design_iters=design_iters,
        ablation=ablation,
        phase_length=phase_length,
        noise_placement=noise_placement,
        claim=claim,
        **({"small_support": small_support} if released else {}),
    )
    spec = Spec(
        name,
        params_class,
        private=private and claim and not reasons,
        static=static,
        num_arms=num_actions,
        ndims=(("actions", 2),),
        fast_path=fast_path,
    )
    return Learner(init_fn, act_fn, update_fn, check, horizon, spec=spec, returns_info=True)


# --- the exact phase-level simulator (Spec.fast_path): one scan step per phase ---------------------------

RewardSums = Callable[[PRNGKey, jax.Array, jax.Array, jax.Array], jax.Array]


#: Why a ``reward_sums`` hook voids the guarantee (``_validate.opt_outs``).
HOOK = "the per-arm reward sums come from the hook, not clipped per reward to [-1, 1]"


#: How the instance is drawn: fixed (from params), θ* per run, or actions and θ* per run.
INSTANCES = ("fixed", "random_theta", "random")


def clipped_gaussian_moments(mean: jax.Array, stddev: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Mean and variance of ``clip(mean + stddev·Z, -1, 1)``, ``Z ~ N(0, 1)``, in closed form."""
    mu = jnp.asarray(mean, jnp.float32)
    s = jnp.asarray(stddev, jnp.float32)
    safe = jnp.maximum(s, 1e-12)
    a = (-1.0 - mu) / safe
    b = (1.0 - mu) / safe
    pa, pb = ndtr(a), ndtr(b)
    phi_a = jnp.exp(-0.5 * a * a) / jnp.sqrt(2.0 * jnp.pi)
    phi_b = jnp.exp(-0.5 * b * b) / jnp.sqrt(2.0 * jnp.pi)
    mid = pb - pa
    m1 = -pa + (1.0 - pb) + mu * mid + s * (phi_a - phi_b)
    m2 = pa + (1.0 - pb) + mu**2 * mid + 2.0 * mu * s * (phi_a - phi_b) + s**2 * (mid + a * phi_a - b * phi_b)
    clipped = jnp.clip(mu, -1.0, 1.0)
    m1 = jnp.where(s > 0, m1, clipped)
    var = jnp.where(s > 0, jnp.maximum(m2 - m1**2, 0.0), 0.0)
    return m1, var


def gaussian_reward_sums(
    key: PRNGKey, means: jax.Array, stddev: jax.Array, pulls: jax.Array, clip: bool = False, exact_pulls: int = 64
) -> jax.Array:
    """Per-arm sums of ``pulls[a]`` rewards ``means[a] + stddev·η``, clipped to ``[-1, 1]`` if ``clip``.

    Exact ``N(n μ, n σ²)`` without ``clip``; with ``clip``, exact (``n`` masked
    draws) for ``n <= exact_pulls``, else the moment-matched Gaussian.
    """
    n = pulls.astype(jnp.float32)
    k_clt, k_exact = jax.random.split(key)
    z = jax.random.normal(k_clt, means.shape, jnp.float32)
    if not clip:
        return n * means + stddev * jnp.sqrt(n) * z
    m1, var = clipped_gaussian_moments(means, stddev)
    clt = n * m1 + jnp.sqrt(n * var) * z
    draws = jnp.clip(means[:, None] + stddev * jax.random.normal(k_exact, (*means.shape, exact_pulls)), -1.0, 1.0)
    used = jnp.arange(exact_pulls)[None, :] < pulls[:, None]
    exact = jnp.sum(jnp.where(used, draws, 0.0), axis=1)
    return jnp.where(pulls <= exact_pulls, exact, clt)


@lru_cache(maxsize=8)
def _default_sums(clip: bool, exact_pulls: int) -> RewardSums:
    """A stable (cached) sampler object, so the simulator cache hits and nothing recompiles."""
    return partial(gaussian_reward_sums, clip=clip, exact_pulls=exact_pulls)


@lru_cache(maxsize=64)
def _gope_simulator(
    num_actions: int,
    dim: int,
    horizon: int,
    checkpoints: tuple[int, ...],
    private: bool,
    clip: bool,
    calibration: str,
    instance: str,
    design_tol: float,
    design_iters: int,
    reward_sums: RewardSums,
    ablation: str | None = None,
    phase_length: str = "joint",
    noise_placement: str = "whitened",
    small_support: bool = False,
) -> Callable[[PRNGKey, SimParams], tuple[jax.Array, jax.Array, jax.Array]]:
    ckpts = jnp.asarray(checkpoints, jnp.int32)
    num_scan = max_phases(horizon) + 1
    explore, noisy = ablation_parts(private, ablation)
    planner = phase_planner(
        num_actions, horizon, explore, design_tol, design_iters, phase_length, noise_placement, small_support
    )

    def one(key: PRNGKey, params: SimParams):
        lp, ep = params.learner, params.env
        k_inst, k_run = jax.random.split(key)
        env_actions = jnp.asarray(ep.actions, jnp.float32)
        theta = jnp.asarray(ep.theta, jnp.float32)
        if instance == "random":
            k_a, k_t = jax.random.split(k_inst)
            env_actions = unit_sphere(k_a, (num_actions,), dim)
            theta = unit_sphere(k_t, (), dim)
        elif instance == "random_theta":
            theta = unit_sphere(k_inst, (), dim)
        learner_actions = env_actions if instance == "random" else lp.actions
        means = env_actions @ theta
        gaps = jnp.max(means) - means
        stddev = jnp.asarray(ep.noise_stddev, jnp.float32)
        x = normalise_actions(learner_actions, lp.action_bound, clip)
        rho, scale, delta = phase_budget(lp, private, noise_placement)

        def body(carry, ell):
            active, t_used, pulls_at, phases_at = carry
            k_sum, k_noise = jax.random.split(jax.random.fold_in(k_run, ell))
            started = t_used < horizon
            plan = planner(x, active, phase=ell, rho=rho, delta=delta, scale=scale, run=started)
            alloc = jnp.where(started, plan.alloc, 0)
            off = jnp.cumsum(alloc) - alloc  # support arms are played in index order
            left = horizon - t_used
            n = jnp.clip(left - off, 0, alloc)  # the last phase is truncated at T
            complete = started & (jnp.sum(alloc) <= left)
            pulls_at = pulls_at + jnp.clip(ckpts[:, None] - t_used - off[None, :], 0, n[None, :])
            phases_at = phases_at + (started & (ckpts > t_used)).astype(jnp.int32)
            sums = reward_sums(k_sum, means, stddev, n)
            rel = close_phase(
                k_noise,
                x,
                active=active,
                pulls=n,
                reward_sums=sums,
                phase=ell,
                c=plan.c,
                rho=rho,
                private=noisy,
                calibration=calibration,
                noise_placement=noise_placement,
                scale=scale,
            )
            active = jnp.where(complete, rel.active, active)
            # Sums of int32 counts are int64 under JAX_ENABLE_X64: keep the carry's dtypes.
            t_used = (t_used + jnp.sum(n)).astype(jnp.int32)
            return (active, t_used, pulls_at.astype(jnp.int32), phases_at), None

        m = ckpts.shape[0]
        init = (
            jnp.ones((num_actions,), bool),
            jnp.zeros((), jnp.int32),
            jnp.zeros((m, num_actions), jnp.int32),
            jnp.zeros((m,), jnp.int32),
        )
        phases = jnp.arange(1, num_scan + 1, dtype=jnp.int32)
        (_, _, pulls_at, phases_at), _ = jax.lax.scan(body, init, phases)
        regret = pulls_at.astype(jnp.float32) @ gaps
        return regret, phases_at, pulls_at[-1]

    return one


def simulate(
    learner: Learner,
    params: Any,
    env_params: LinearBanditParams,
    key: PRNGKey,
    horizon: int,
    seeds: int = 100,
    checkpoints: Any = "log",
    *,
    simulates: str,
    noisy: bool,
    clip: bool,
    calibration: str,
    design_tol: float,
    design_iters: int,
    ablation: str | None,
    phase_length: str,
    noise_placement: str,
    small_support: bool = False,
    instance: str = "fixed",
    exact_pulls: int = 64,
    chunk: int | None = None,
    reward_sums: RewardSums | None = None,
    private: bool = True,
) -> Result:
    """A phased-elimination policy's fast path (``Spec.fast_path``, ``FastPath(simulate, ...)``): its phases.

    ``simulates`` names the algorithm; ``noisy`` (AdaC-GOPE, AdaC-GOPE-Var) / not (GOPE), ``clip``,
    ``calibration``, ``design_tol``, ``design_iters``, ``ablation``, ``phase_length`` and
    ``noise_placement`` (and a reconstruction's ``small_support``) are the factory's
    (``_gope_core.phased_elimination``). The per-call options
    (``instance``, ``exact_pulls``, ``chunk``, ``reward_sums``, ``private``) are ``simulate_gope_phases``'s;
    ``private=False`` here only marks a ``reward_sums`` hook's run (the learner's own opt-outs are its spec's).
    """
    spec = spec_of(learner)
    num_actions, dim = (int(s) for s in jnp.shape(params.actions)[-2:])
    horizon = _validate.horizon(horizon)
    check_horizon(horizon, learner, "learner")
    instance = _validate.choice("instance", instance, INSTANCES)
    exact_pulls = _validate.positive_int("exact_pulls", exact_pulls)
    if spec.num_arms is not None and spec.num_arms != num_actions:
        raise ValueError(f"the learner ({spec.name}) plays {spec.num_arms} actions but params has {num_actions}")
    check_params_class(learner, params, "learner", "params")
    learner.check(params)  # with the opt-outs of the factory (clip, ablation, calibration) refused at a finite rho
    hook = _validate.opt_outs(private, reward_sums=None if reward_sums is None else HOOK)
    if noisy:
        budget = "epsilon" if noise_placement in SUM_RELEASES else "rho"
        guarantee = SUM_RELEASES[noise_placement][1] if budget == "epsilon" else "ρ-zCDP"
        _validate.refuse_finite_budget(
            f"simulate_gope_phases ({simulates})", budget, getattr(params, budget), hook, guarantee, private
        )
    holds = bool(spec.private) and not hook
    linear_bandit(num_actions, dim, random_theta=instance != "fixed").check(env_params)
    if reward_sums is None:
        reward_sums = _default_sums(clip, exact_pulls)
    ckpts = normalize_checkpoints(horizon, checkpoints)
    one = _gope_simulator(
        num_actions,
        dim,
        horizon,
        ckpts,
        noisy,
        clip,
        calibration,
        instance,
        float(design_tol),
        int(design_iters),
        reward_sums,
        ablation,
        phase_length,
        noise_placement,
        small_support,
    )
    ndims = spec_ndims(learner, linear_bandit(num_actions, dim))
    regret, episodes, pulls = episode_sweep(one, SimParams(params, env_params), key, seeds, chunk, ndims)
    return Result(jnp.asarray(ckpts, jnp.int32), regret, None, None, private=holds, episodes=episodes, pulls=pulls)
