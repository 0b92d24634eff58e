"""The rarely-switching OFUL skeleton shared by RS-OFUL and AdaC-OFUL (thesis Algorithm 9).

Algorithm 9 of the thesis: keep ``V_t = λI + Σ_{s<=t} a_s a_sᵀ`` and
``Σ_{s<=t} a_s r_s``; when ``det V_t > (1 + C) det V_τ`` (determinant doubling
for ``C = 1``) switch: ``τ = t``, recompute the centre
``θ̃_τ = V_τ^{-1}(Σ a_s r_s + Σ_{m<=ℓ} Y_m)`` (all past data; AdaC-OFUL adds one
fresh ``Y_ℓ ~ N(0, (2/ρ) I)`` per switch, the noise accumulates) and the
radius ``β̃_τ``. Between switches the centre and ellipsoid are frozen, and the
action is ``argmax_{a ∈ A_t} <θ̃_τ, a> + β̃_τ ‖a‖_{V_τ^{-1}}``, recomputed for
each new action set.

The switch test of round ``t + 1`` (which uses ``V_t``) runs at the end of
``update`` at round ``t``; this is the same test at the same time as the
thesis's "at the start of round ``t + 1``".
"""

from __future__ import annotations

from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from jaxpriv import _validate
from jaxpriv._base import Learner, NonfiniteInfo, PRNGKey, Spec, poison_past_horizon, static_args, zero_nonfinite
from jaxpriv.bandits._gope_core import clip_reward, gated, normalise_actions


def small_logdet(gram: jax.Array) -> jax.Array:
    """``log det V`` of a symmetric positive definite ``V`` by an unrolled Cholesky.

    For the small ``d`` of these bandits an unrolled factorisation of scalar
    ``jnp`` ops fuses into the scan body and vectorises over seeds, where a
    LAPACK call per step and per seed costs far more.
    """
    dim = gram.shape[-1]
    if dim > 8:
        return 2.0 * jnp.sum(jnp.log(jnp.diagonal(jnp.linalg.cholesky(gram))))
    rows = [[gram[i, j] for j in range(dim)] for i in range(dim)]
    low = [[None] * dim for _ in range(dim)]
    logdet = jnp.zeros((), gram.dtype)
    for j in range(dim):
        diag = rows[j][j] - sum((low[j][k] ** 2 for k in range(j)), jnp.zeros((), gram.dtype))
        diag = jnp.sqrt(jnp.maximum(diag, 1e-30))
        low[j][j] = diag
        logdet = logdet + 2.0 * jnp.log(diag)
        for i in range(j + 1, dim):
            acc = rows[i][j] - sum((low[i][k] * low[j][k] for k in range(j)), jnp.zeros((), gram.dtype))
            low[i][j] = acc / diag
    return logdet


def oful_radius(
    logdet: ArrayLike,
    regularization: ArrayLike,
    delta: ArrayLike,
    theta_bound: ArrayLike,
    noise_bound: ArrayLike,
    dim: int,
) -> jax.Array:
    """``β = R sqrt(2 log(1/δ) + log(det V / λ^d)) + sqrt(λ) S`` (AYPS11 Thm 2; thesis Thm C.13).

    Args:
      logdet: ``log det V``.
      regularization: ``λ``.
      delta: ``δ``.
      theta_bound: ``S >= ‖θ*‖``.
      noise_bound: ``R``, the sub-Gaussian scale of the reward noise.
      dim: ``d``.
    """
    lam = jnp.asarray(regularization, jnp.float32)
    inner = 2.0 * jnp.log(1.0 / jnp.asarray(delta, jnp.float32)) + jnp.asarray(logdet, jnp.float32)
    inner = inner - dim * jnp.log(lam)
    return jnp.asarray(noise_bound, jnp.float32) * jnp.sqrt(jnp.maximum(inner, 0.0)) + jnp.sqrt(lam) * jnp.asarray(
        theta_bound, jnp.float32
    )


def privacy_radius(
    num_noisy: ArrayLike, rho: ArrayLike, delta: ArrayLike, horizon: int, dim: int, min_eigenvalue: ArrayLike
) -> jax.Array:
    """The enlargement ``sqrt((2ℓ/ρ) f(d, δ/T)) / sqrt(λ_min(V_τ))`` (Thm C.13's
    derivation with the public ``λ_min(V_τ)``, a standard choice the paper leaves open;
    docs/algorithms/zcdp_bandits.md, 'Decoding choices').

    ``Σ_{m<=ℓ} Y_m ~ N(0, (2ℓ/ρ) I)`` has ``‖·‖² <= (2ℓ/ρ)(d + 2 sqrt(d log(T/δ)) + 2 log(T/δ))``
    w.p. ``>= 1 - δ/T`` (χ² tail, thesis Lemma C.28), and
    ``‖N‖_{V^{-1}} <= ‖N‖ / sqrt(λ_min(V))``. ``0`` at ``ρ = ∞`` or before the first switch.
    """
    log_term = jnp.log(horizon / jnp.asarray(delta, jnp.float32))
    f = dim + 2.0 * jnp.sqrt(dim * log_term) + 2.0 * log_term
    var = 2.0 * jnp.asarray(num_noisy, jnp.float32) / jnp.asarray(rho, jnp.float32)
    return jnp.sqrt(var * f) / jnp.sqrt(jnp.asarray(min_eigenvalue, jnp.float32))


def self_normalized_radius(
    gram: jax.Array,
    num_noisy: ArrayLike,
    rho: ArrayLike,
    regularization: ArrayLike,
    delta: ArrayLike,
    theta_bound: ArrayLike,
    noise_bound: ArrayLike,
) -> jax.Array:
    """AdaC-OFUL's radius with the privacy noise inside the self-normalised bound (derived here).

    ``β̃_τ = sqrt(1 + c/λ_min(V_τ)) · R sqrt(2 log(1/δ) + log det(V_τ + cI) - d log λ) + sqrt(λ) S``,
    ``c = ℓσ²/R²``, ``σ² = 2/ρ`` (the per-switch noise variance), ``ℓ`` switches so far.

    Derivation. With ``r_s = <θ*, a_s> + η_s`` and ``N_ℓ = Σ_{m<=ℓ} Y_m``,
    ``θ̃_τ - θ* = V_τ^{-1}(S - λθ*)`` where ``S = Σ_{s<=τ} a_s η_s + N_ℓ``. Write each
    ``Y_m = Σ_i (σ/R) e_i · (R Z_{m,i})``, ``Z ~ N(0, 1)`` fresh: ``S`` is then one
    self-normalised martingale over the interleaved sequence of reward rounds
    (design ``a_s``, noise ``η_s``, ``R``-sub-Gaussian) and noise draws (design
    ``(σ/R) e_i``, deterministic; noise ``R Z``, exactly ``R``-sub-Gaussian), every design
    predictable. Abbasi-Yadkori, Pál & Szepesvári 2011, Theorem 1, with ``V_0 = λI`` gives,
    w.p. ``>= 1 - δ`` simultaneously at every switch, ``‖S‖_{W^{-1}} <= R sqrt(2 log(1/δ) +
    log det W - d log λ)`` with ``W = V_τ + cI``. Since ``W^{1/2} V_τ^{-1} W^{1/2}`` has
    eigenvalues ``1 + c/v_i``, ``‖S‖_{V_τ^{-1}} <= sqrt(1 + c/λ_min(V_τ)) ‖S‖_{W^{-1}}``, and
    ``‖λθ*‖_{V_τ^{-1}} <= sqrt(λ) S``. So ``‖θ̃_τ - θ*‖_{V_τ} <= β̃_τ``: the same confidence
    statement as RS-OFUL's radius, one event of probability ``1 - δ`` (the ``"robust"``
    radius spends ``δ`` on the data and another ``δ`` on the noise). As ``ρ -> ∞``,
    ``c -> 0`` and ``β̃_τ`` tends to RS-OFUL's ``β_τ`` at rate ``1/ρ`` (the ``"robust"``
    enlargement vanishes at ``1/√ρ``). ``R = 0`` uses ``R = σ`` (any ``R' >= R`` is valid).
    The radius only; the centre is the paper's ``θ̃_τ = V_τ^{-1}(Σ a_s r_s + N_ℓ)``.
    """
    dim = gram.shape[-1]
    lam = jnp.asarray(regularization, jnp.float32)
    var = 2.0 / jnp.asarray(rho, jnp.float32)
    r = jnp.asarray(noise_bound, jnp.float32)
    r = jnp.where(r > 0, r, jnp.sqrt(var))
    c = jnp.asarray(num_noisy, jnp.float32) * var / r**2
    c = jnp.where(jnp.isfinite(c), c, 0.0)  # ρ = ∞: no noise
    eye = jnp.eye(dim, dtype=jnp.float32)
    logdet_w = 2.0 * jnp.sum(jnp.log(jnp.diagonal(jnp.linalg.cholesky(gram + c * eye))))
    lam_min = jnp.linalg.eigvalsh(gram)[0]
    inner = jnp.maximum(2.0 * jnp.log(1.0 / jnp.asarray(delta, jnp.float32)) + logdet_w - dim * jnp.log(lam), 0.0)
    inflate = jnp.sqrt(1.0 + c / lam_min)
    return inflate * r * jnp.sqrt(inner) + jnp.sqrt(lam) * jnp.asarray(theta_bound, jnp.float32)


#: AdaC-OFUL's confidence radii (``adac_oful(radius=...)``).
RADII = ("self_normalized", "robust")
#: Diagnostic ablations of AdaC-OFUL (not private): the noise alone, or the enlarged radius alone.
ABLATIONS = (None, "noise", "radius")


class OFULState(NamedTuple):
    """State of RS-OFUL / AdaC-OFUL.

    Attributes:
      actions: shape=[K, d], the (normalised) action set of the coming round (zeros before round 1).
      gram: shape=[d, d], ``V_t = λI + Σ a_s a_sᵀ``.
      stat: shape=[d], ``Σ a_s r_s``.
      noise_sum: shape=[d], ``Σ_{m<=ℓ} Y_m`` (zeros for RS-OFUL).
      logdet_tau: shape=(), ``log det V_τ``.
      theta_tilde: shape=[d], the frozen centre ``θ̃_τ``.
      gram_inv_tau: shape=[d, d], ``V_τ^{-1}``.
      radius: shape=(), ``β̃_τ``.
      num_switches: shape=(), int32, ``ℓ``: switches (noisy updates) so far.
      rho, delta, regularization, log_switch, theta_bound, noise_bound, action_bound: shape=(),
        calibrated params (``log_switch = log(1 + C)``; ``theta_bound`` is ``S·L`` in the
        normalised coordinates when ``clip``).
    """

    actions: jax.Array
    gram: jax.Array
    stat: jax.Array
    noise_sum: jax.Array
    logdet_tau: jax.Array
    theta_tilde: jax.Array
    gram_inv_tau: jax.Array
    radius: jax.Array
    num_switches: jax.Array
    rho: jax.Array
    delta: jax.Array
    regularization: jax.Array
    log_switch: jax.Array
    theta_bound: jax.Array
    noise_bound: jax.Array
    action_bound: jax.Array


# The pieces of ``update`` (thesis Algorithm 9): add the round's data, test for a switch, and at a
# switch draw the noise, refit the centre and recompute the radius.


def _observe(state: OFULState, feedback: Any, clip: bool) -> tuple[OFULState, jax.Array]:
    """Round ``t``'s data (Algorithm 9, last line): ``V_t = V_{t-1} + a_t a_tᵀ``, ``Σ a_s r_s += a_t r_t``, ``A_{t+1}``.

    With ``clip`` the action is ``(a/L)/max(1, ‖a/L‖)`` and the reward is clipped to
    ``[-1, 1]`` (the sensitivity 2 of §5.1); a NaN / ±inf reward counts as 0. ``V_t`` is kept
    exactly symmetric. No noise: the design is public (Remark 5.13). Also returns the bad-reward flag (int32).
    """
    a = normalise_actions(feedback.action_vector, state.action_bound, clip)
    r, bad = zero_nonfinite(jnp.asarray(feedback.reward, jnp.float32))  # 0 is inside [-1, 1]
    r = clip_reward(r, clip)
    gram = state.gram + jnp.outer(a, a)
    gram = 0.5 * (gram + gram.T)
    return state._replace(
        gram=gram,
        stat=state.stat + a * r,
        actions=normalise_actions(feedback.next_actions, state.action_bound, clip),
    ), bad


def _switch_due(state: OFULState) -> jax.Array:
    """The test ``det V_t > (1 + C) det V_τ`` of Algorithm 9, in logs: ``log det V_t > log(1 + C) + log det V_τ``."""
    return small_logdet(state.gram) > state.log_switch + state.logdet_tau


def _add_switch_noise(key: PRNGKey, noise_sum: jax.Array, rho: jax.Array) -> jax.Array:
    """``Σ_{m<=ℓ} Y_m``: the running sum plus a fresh ``Y_ℓ ~ N(0, (2/ρ) I_d)`` (Algorithm 9, "sample Y_ℓ").

    The Gaussian mechanism for the episode's ``Σ a_s r_s`` of ℓ2 sensitivity 2: ``σ² = 2²/(2ρ)``,
    ρ-zCDP per switch (thesis §C.1.3); the sum is kept, not redrawn ("the price of not forgetting").
    """
    stddev = jnp.sqrt(2.0 / rho)  # Gaussian mechanism, ℓ2 sensitivity 2
    return noise_sum + stddev * jax.random.normal(key, noise_sum.shape, jnp.float32)


def _refit(gram: jax.Array, target: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    """``(θ̃_τ, V_τ^{-1}, log det V_τ)`` from one Cholesky factor of ``V_τ = V_t`` (Algorithm 9, the θ̃ line).

    ``θ̃_τ = V_τ^{-1} target`` with ``target = Σ_{s<=t} a_s r_s + Σ_{m<=ℓ} Y_m`` (all past
    data, cumulative noise; ``Y ≡ 0`` for RS-OFUL). ``V_τ^{-1}`` is returned unsymmetrised.
    """
    c = jnp.linalg.cholesky(gram)
    theta = jax.scipy.linalg.cho_solve((c, True), target)
    inv = jax.scipy.linalg.cho_solve((c, True), jnp.eye(gram.shape[-1], dtype=jnp.float32))
    return theta, inv, 2.0 * jnp.sum(jnp.log(jnp.diagonal(c)))


def _switch_radius(
    state: OFULState, num_noisy: jax.Array, logdet: jax.Array, radius: str, enlarge: bool, horizon: int
) -> jax.Array:
    """``β̃_τ``, the radius of the frozen ellipsoid ``‖θ - θ̃_τ‖_{V_τ} <= β̃_τ``
    (thesis Thm C.13; docs/algorithms/zcdp_bandits.md, 'Decoding choices').

    * not ``enlarge`` (RS-OFUL, the ``"noise"`` ablation): ``β_τ``, ``oful_radius`` (AYPS11 Thm 2);
    * ``"self_normalized"``: ``self_normalized_radius``, the noise inside the self-normalised bound;
    * ``"robust"``: ``β_τ + privacy_radius`` (Thm C.13 with ``λ_min(V_τ)``, a standard choice).

    ``num_noisy = ℓ`` counts this switch.
    """
    gram, rho, lam, delta = state.gram, state.rho, state.regularization, state.delta
    if enlarge and radius == "self_normalized":
        return self_normalized_radius(gram, num_noisy, rho, lam, delta, state.theta_bound, state.noise_bound)
    rad = oful_radius(logdet, lam, delta, state.theta_bound, state.noise_bound, gram.shape[-1])
    if enlarge and radius == "robust":
        rad = rad + privacy_radius(num_noisy, rho, delta, horizon, gram.shape[-1], jnp.linalg.eigvalsh(gram)[0])
    return rad


def _switch(key: PRNGKey, state: OFULState, add_noise: bool, enlarge: bool, radius: str, horizon: int) -> OFULState:
    """A switch, ``τ = t`` (Algorithm 9, the body of the ``if``): noise, centre, ``V_τ^{-1}``, radius; ``ℓ += 1``."""
    num = state.num_switches + 1
    noise_sum = _add_switch_noise(key, state.noise_sum, state.rho) if add_noise else state.noise_sum
    theta, inv, logdet = _refit(state.gram, state.stat + noise_sum)
    return state._replace(
        noise_sum=noise_sum,
        logdet_tau=logdet,
        theta_tilde=theta,
        gram_inv_tau=0.5 * (inv + inv.T),
        radius=_switch_radius(state, num, logdet, radius, enlarge, horizon),
        num_switches=num,
    )


def rarely_switching_oful(
    num_actions: int,
    dim: int,
    horizon: int,
    *,
    private: bool,
    clip: bool = True,
    radius: str = "self_normalized",
    ablation: str | None = None,
    params_class: type | None = None,
    claim: bool = True,
) -> Learner:
    """RS-OFUL (``private=False``) or AdaC-OFUL; see ``oful.rs_oful`` / ``adac_oful.adac_oful``.

    ``params_class`` is the one params class the policy takes; ``claim`` is ``adac_oful``'s
    ``private`` argument (``False``: the caller knows the guarantee does not hold).
    """
    radius = _validate.choice("radius", radius, RADII)
    if ablation not in ABLATIONS:
        raise ValueError(f"ablation must be one of {ABLATIONS}, got {ablation!r}")
    if ablation is not None and not private:
        raise ValueError("ablation applies to AdaC-OFUL (private params) only")
    reasons = (
        _validate.opt_outs(
            claim,
            **{
                "clip=False": None
                if clip
                else "rewards outside [-1, 1] and actions outside the unit ball are not clipped",
                f"ablation={ablation!r}": {
                    None: None,
                    "noise": None,  # the same noise with RS-OFUL's radius: still private
                    "radius": "a diagnostic: no noise is added",
                }[ablation],
            },
        )
        if private
        else _validate.opt_outs(claim)
    )
    add_noise = private and ablation != "radius"
    enlarge = private and ablation != "noise"
    num_actions = _validate.positive_int("num_actions", num_actions, minimum=2)
    dim = _validate.positive_int("dim", dim)
    horizon = _validate.horizon(horizon)
    if horizon < num_actions:
        raise ValueError(f"horizon must be >= num_actions={num_actions}, got {horizon}")
    eye = jnp.eye(dim, dtype=jnp.float32)

    def check(params: Any) -> None:
        _validate.in_open_interval("delta", params.delta, 0.0, 1.0)
        _validate.positive("regularization", params.regularization, allow_inf=False)
        _validate.positive("switch_factor", params.switch_factor, allow_inf=False)
        _validate.positive("theta_bound", params.theta_bound, allow_inf=False)
        _validate.nonnegative("noise_bound", params.noise_bound)
        _validate.positive("action_bound", params.action_bound, allow_inf=False)
        if private:
            _validate.budget_value("rho", params.rho)
            _validate.refuse_finite_budget("adac_oful", "rho", params.rho, reasons, "ρ-zCDP", claim)

    def init_fn(key: PRNGKey, params: Any) -> OFULState:
        del key
        lam = jnp.asarray(params.regularization, jnp.float32)
        delta = jnp.asarray(params.delta, jnp.float32)
        bound = jnp.asarray(params.theta_bound, jnp.float32)
        if clip:  # the policy works with a/L, where r = <L θ*, a/L>
            bound = bound * jnp.asarray(params.action_bound, jnp.float32)
        noise_bound = jnp.asarray(params.noise_bound, jnp.float32)
        logdet0 = dim * jnp.log(lam)
        return OFULState(
            actions=jnp.zeros((num_actions, dim), jnp.float32),
            gram=lam * eye,
            stat=jnp.zeros((dim,), jnp.float32),
            noise_sum=jnp.zeros((dim,), jnp.float32),
            logdet_tau=logdet0,
            theta_tilde=jnp.zeros((dim,), jnp.float32),
            gram_inv_tau=eye / lam,
            radius=oful_radius(logdet0, lam, delta, bound, noise_bound, dim),
            num_switches=jnp.zeros((), jnp.int32),
            rho=jnp.asarray(params.rho, jnp.float32) if private else jnp.asarray(jnp.inf, jnp.float32),
            delta=delta,
            regularization=lam,
            log_switch=jnp.log1p(jnp.asarray(params.switch_factor, jnp.float32)),
            theta_bound=bound,
            noise_bound=noise_bound,
            action_bound=jnp.asarray(params.action_bound, jnp.float32),
        )

    def act_fn(key: PRNGKey, state: OFULState, t: jax.Array) -> jax.Array:
        x = state.actions
        width = jnp.sqrt(jnp.maximum(jnp.einsum("kd,de,ke->k", x, state.gram_inv_tau, x), 0.0))
        scores = x @ state.theta_tilde + state.radius * width
        blind = jax.random.randint(key, (), 0, num_actions, jnp.int32)  # round 1: A_1 not seen yet
        arm = jnp.where(t == 1, blind, jnp.argmax(scores).astype(jnp.int32))
        return poison_past_horizon(arm, t, horizon)  # -1 past T: the radius is calibrated for T

    def update_fn(
        key: PRNGKey, state: OFULState, action: jax.Array, feedback: Any, t: jax.Array
    ) -> tuple[OFULState, NonfiniteInfo]:
        del action, t
        state, bad = _observe(state, feedback, clip)
        switch = partial(_switch, key, add_noise=add_noise, enlarge=enlarge, radius=radius, horizon=horizon)
        return gated(_switch_due(state), switch, state), NonfiniteInfo(bad)

    name = "adac_oful" if private else "rs_oful"
    static = static_args(
        num_actions=num_actions,
        dim=dim,
        horizon=horizon,
        private=private,
        clip=clip,
        radius=radius,
        ablation=ablation,
        claim=claim,
    )
    spec = Spec(name, params_class, private=private and claim and not reasons, static=static, num_arms=num_actions)
    return Learner(init_fn, act_fn, update_fn, check, horizon, spec=spec, returns_info=True)
