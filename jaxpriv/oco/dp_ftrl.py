"""DP-FTRL (Kairouz, McMahan, Song, Thakkar, Thakurta, Xu, ICML 2021): FTRL on tree-aggregated noisy gradients."""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxpriv import _validate, declare
from jaxpriv._base import (
    Learner,
    Mechanism,
    NonfiniteInfo,
    PRNGKey,
    Spec,
    mechanism_step_count,
    spec_of,
    static_args,
)
from jaxpriv.mechanisms import NoiseFamily, TreeParams, noise_family, release_variance
from jaxpriv.mechanisms._sampler_floor import check_sampler_floor, sampler_floor_of
from jaxpriv.mechanisms._tree import check_budget, check_budget_values
from jaxpriv.oco import _floor
from jaxpriv.oco._shared import prefix_sum_mechanism
from jaxpriv.sets import ConstraintSet, require_projection
from jaxpriv.theory import dp_ftrl_regret_bound, dp_ftrl_regularization

__all__ = [
    "DPFTRLParams",
    "DPFTRLState",
    "dp_ftrl",
    "dp_ftrl_learner_bound",
    "dp_ftrl_regret_bound",
    "dp_ftrl_regularization",
]


class DPFTRLParams(NamedTuple):
    """Params of DP-FTRL.

    Exactly the budget of the learner's noise family is given: ``epsilon`` for the
    ``"gamma"`` / ``"laplace"`` trees, ``rho`` for a ``"gaussian"`` mechanism. A missing
    budget, or one of another family, is a ``ValueError`` (never "no privacy"); the
    non-private limit is an explicit ``inf``.

    Attributes:
      epsilon: ε of ε-DP (``"gamma"`` / ``"laplace"``); ``inf`` = no noise.
      rho: ρ of ρ-zCDP (``"gaussian"``); ``inf`` = no noise.
      lipschitz: ``L``, the Lipschitz constant of the (convex) losses on ``C``: the clipping bound.
      regularization: ``λ > 0`` of the regulariser ``(λ/2)||w - w_1||²``; ``nan`` (the
        default) selects the ``λ`` that minimises the regret bound for the run's constants
        and mechanism (``dp_ftrl_regularization``), computed in ``init``.
    """

    epsilon: ArrayLike | None = None
    rho: ArrayLike | None = None
    lipschitz: ArrayLike = 1.0
    regularization: ArrayLike = float("nan")


class DPFTRLState(NamedTuple):
    w: jax.Array  # shape=[d], the point played next
    start: jax.Array  # shape=[d], w_1 = Π_C(0), the regulariser's centre
    regularization: jax.Array  # shape=(), λ
    tree: Any  # the prefix-sum mechanism's state: private sums of the clipped gradients


# --- the learner -------------------------------------------------------------------------------------------


def _unit_params(noise: NoiseFamily | str, clip: float) -> TreeParams:
    """Budget 1 of ``noise``'s family and the unit clip: the variance at any budget and ``L`` is a rescaling."""
    return TreeParams(**{noise_family(noise).budget: 1.0}, sensitivity=clip)


def _learner_variance(
    horizon: int, dim: int, params: DPFTRLParams, noise: NoiseFamily | str, mechanism: Mechanism
) -> np.ndarray:
    """``Var_t``, ``t = 1..T``, of the learner's mechanism at ``params`` (float64, host)."""
    clip = float(np.sqrt(dim)) if noise_family(noise).norm == 1 else 1.0
    tp = TreeParams(params.epsilon, params.rho, clip * np.asarray(params.lipschitz, np.float64))
    return release_variance(mechanism, tp, np.arange(1, horizon + 1))


def dp_ftrl_learner_bound(
    horizon: int,
    constraint: ConstraintSet,
    params: DPFTRLParams,
    noise: NoiseFamily | str | None = None,
    mechanism: Mechanism | None = None,
) -> float:
    """``dp_ftrl_regret_bound`` for ``dp_ftrl(horizon, constraint, noise, mechanism)`` run with ``params``.

    The mechanism's exact per-step variances at the params' budget and clip (host, float64),
    ``D = constraint.diameter``, ``λ = params.regularization`` (``nan``: the tuned one). Scalar params.
    """
    mech, noise = prefix_sum_mechanism(horizon, constraint.dim, noise, mechanism)
    check_budget_values("dp_ftrl", params, noise)
    var = _learner_variance(horizon, constraint.dim, params, noise, mech)
    return float(
        dp_ftrl_regret_bound(horizon, constraint.dim, params.lipschitz, constraint.diameter, params.regularization, var)
    )


def dp_ftrl_bound(params: DPFTRLParams, env_params: Any, spec: Spec, horizon: int) -> float | None:
    """DP-FTRL's bound with its mechanism's exact per-step variance (``regularization = nan``: the tuned λ)."""
    del env_params
    a = declare.arguments(spec)
    return dp_ftrl_learner_bound(horizon, a["constraint"], params, a["noise"], declare.rebuild(a["mechanism"]))


def _example(horizon: int, dim: int) -> declare.ExampleRun:
    """``dp_ftrl`` at one small configuration (``jaxpriv.testing.learner_examples``)."""
    from jaxpriv.envs._settings import setting

    s = setting("ball", dim)
    return dp_ftrl(horizon, s.constraint), s.env, DPFTRLParams(epsilon=1.0, lipschitz=2.0), s.params


@declare.learner("dp_ftrl", params=DPFTRLParams, bound=dp_ftrl_bound, mechanism_dim="constraint", example=_example)
def dp_ftrl(
    horizon: int,
    constraint: ConstraintSet,
    noise: NoiseFamily | str | None = None,
    mechanism: Mechanism | None = None,
) -> Learner:
    """DP-FTRL for convex ``L``-Lipschitz losses on a convex set ``C``.

    Follow the regularised leader on the linearised losses with a private prefix sum of
    the gradients: ``w_1 = Π_C(0)`` and

    ``w_{t+1} = argmin_{w ∈ C} <ṽ_t, w> + (λ/2)||w - w_1||² = Π_C(w_1 - ṽ_t/λ)``,

    where ``ṽ_t`` is the prefix-sum mechanism's release of ``Σ_{s<=t} clip(∇f_s(w_s))``
    (an isotropic quadratic: the argmin is exactly the projection). With an infinite budget
    this is lazy projected online gradient descent with constant step ``1/λ`` (dual averaging).

    Privacy (replace-one neighbouring loss sequences, against adaptive adversaries): the
    mechanism is fed ``∇f_t(w_t)``, clipped to ``||·||_2 <= L`` (``||·||_1 <= sqrt(d) L`` for the
    Laplace family), and calibrated to the replace-one sensitivity ``2L`` of one clipped
    gradient (``binary_tree(..., neighbouring="replace")``, as ``oco.pftal``); the sequence of
    points is post-processing of its releases: ε-DP (``"gamma"``, ``"laplace"``) or ρ-zCDP
    (``"gaussian"``), or as the given ``mechanism`` states. Kairouz et al. use the Gaussian
    tree (with Honaker's estimator as an option) under (ε, δ)-DP; ``noise="gaussian"`` is it
    under ρ-zCDP (``jaxpriv.mechanisms.zcdp_to_dp`` converts).

    Regret (``dp_ftrl_regret_bound``, derived there step by step):
    ``E[Regret(T)] <= λD²/2 + T L²/(2λ) + (L/λ) Σ_{t=1}^{T-1} sqrt(d Var_t)``, ``D`` the diameter of
    ``C``, ``Var_t`` the mechanism's exact per-coordinate variance at step ``t``
    (``jaxpriv.mechanisms.release_variance`` at ``TreeParams(ε, ρ, L)``). The default
    ``regularization = nan`` takes its minimiser ``λ* = sqrt(T L² + 2 L S)/D``,
    ``S = Σ_{t<T} sqrt(d Var_t)`` (``dp_ftrl_regularization``): ``S`` is computed once on the
    host in float64 at budget 1 and unit clip and rescaled in ``init`` (``∝ L/sqrt(ρ)``
    Gaussian, ``∝ L/ε`` otherwise), so a sweep over budgets does not recompile.

    Another prefix-sum mechanism (``mechanism=``): any mechanism of ``jaxpriv.mechanisms``
    (``honaker_tree``, ``sqrt_factorization``, ``blt``, or a ``binary_tree``) built for
    ``(T' >= T, d = dim(C))`` with ``neighbouring="replace"``; the learner passes it
    ``TreeParams(ε, ρ, sensitivity=L)`` (``sqrt(d) L`` for a Laplace family), and the bound and
    the tuned ``λ`` use its variances.

    Args:
      horizon: ``T``: the mechanism's horizon and the tuned ``λ``'s.
      constraint: the set ``C`` (its projection is used); any set of ``jaxpriv.sets``.
      noise: ``"gamma"`` (the default tree), ``"laplace"`` or ``"gaussian"``: shorthand for
        ``binary_tree(T, d, noise, neighbouring="replace")``; with ``mechanism``, ``None`` or its family.
      mechanism: a prefix-sum mechanism instead of the tree (see above).

    Returns:
      A ``Learner`` with params ``DPFTRLParams``; feedback is the gradient at the played point.

    Raises:
      ValueError: ``constraint`` has no projection, or a static argument is invalid (a
        ``mechanism`` of another shape, a shorter horizon, add/remove neighbours, a ``noise``
        that disagrees with it); ``check`` raises it for a missing or wrong-family budget, a
        budget ``<= 0`` or
        below the learner's floor (where its float32 arithmetic breaks, docs/guide/sharp_edges.md),
        a negative ``lipschitz`` (``<= 0`` or infinite with the tuned ``λ``),
        or a ``regularization`` that is neither ``nan`` nor in ``(0, inf)``.

    References:
      P. Kairouz, B. McMahan, S. Song, O. Thakkar, A. Thakurta, Z. Xu. Practical and Private
      (Deep) Learning without Sampling or Shuffling. ICML 2021 (DP-FTRL, Algorithm 1).
    """
    require_projection(constraint)
    dim = constraint.dim
    tree, noise = prefix_sum_mechanism(horizon, dim, noise, mechanism)
    # The Laplace tree clips the L1 norm: ||g||_1 <= sqrt(d) ||g||_2 <= sqrt(d) L.
    norm_factor = float(np.sqrt(dim)) if noise.norm == 1 else 1.0
    diameter = float(constraint.diameter)
    unit_var = release_variance(tree, _unit_params(noise, norm_factor), np.arange(1, horizon + 1))
    unit_noise_sum = float(np.sum(np.sqrt(dim * unit_var[: horizon - 1])))  # S at budget 1, L = 1
    release_std = _floor.ReleaseStd(tree, horizon)

    def tree_params(params: DPFTRLParams) -> TreeParams:
        return TreeParams(params.epsilon, params.rho, norm_factor * jnp.asarray(params.lipschitz, jnp.float32))

    def regularization(params: DPFTRLParams) -> jax.Array:
        lip = jnp.asarray(params.lipschitz, jnp.float32)
        family = noise
        budget = jnp.asarray(getattr(params, family.budget), jnp.float32)
        per_unit = budget if family.pure else jnp.sqrt(budget)
        s = lip * unit_noise_sum / per_unit  # S = Σ_{t<T} sqrt(d Var_t) at (budget, L); 0 at inf
        tuned = jnp.sqrt(horizon * lip * lip + 2.0 * lip * s) / diameter
        lam = jnp.asarray(params.regularization, jnp.float32)
        return jnp.where(jnp.isnan(lam), tuned, lam)

    def check(params: DPFTRLParams) -> None:
        lam = _validate._concrete(params.regularization)
        if lam is not None and np.any(~np.isnan(lam) & ~((lam > 0) & np.isfinite(lam))):
            raise ValueError(f"regularization must be in (0, inf), or nan for the tuned λ, got {lam!r}")
        _validate.nonnegative("lipschitz", params.lipschitz)
        if lam is not None and np.any(np.isnan(lam)):  # the tuned λ is proportional to L
            _validate.positive("lipschitz", params.lipschitz, allow_inf=False)
        check_budget_values("dp_ftrl", params, noise, _floor.MIN_BUDGET)
        check_sampler_floor("dp_ftrl", params, sampler_floor_of(tree))  # the samplers' δ floor
        name, power = _floor.budget_name(noise), _floor.budget_power(noise)
        values = _floor.concrete(getattr(params, name), params.lipschitz, params.regularization)
        if values is None:
            return
        # The budget floor (docs/guide/sharp_edges.md): the release v_t, v_t/λ and the tuned λ's 2LS stay finite.
        budget, lip, _ = values
        clip = norm_factor * lip
        lam_used = np.asarray(regularization(params), np.float64)
        noise_sum = 2.0 * lip * lip * unit_noise_sum / (budget if noise.pure else np.sqrt(budget))
        noise_sum = np.where(np.isnan(values[2]), noise_sum, 0.0)  # only the tuned λ (regularization = nan) forms it
        std = release_std(TreeParams(**{name: budget}, sensitivity=clip))
        terms = [
            _floor.release_term(std, dim, lam_used, horizon * clip, power, "the noisy gradient sum v_t/λ"),
            _floor.Term("the tuned λ's 2LS (S: the noise norms summed)", noise_sum, power),
        ]
        _floor.check("dp_ftrl", name, budget, terms, f"T={horizon}, d={dim}, noise='{noise}'")

    def init_fn(key: PRNGKey, params: DPFTRLParams) -> DPFTRLState:
        check_budget("dp_ftrl", params, noise)
        w1 = constraint.project(jnp.zeros(dim, jnp.float32))
        return DPFTRLState(
            w=w1, start=w1, regularization=regularization(params), tree=tree.init(key, tree_params(params))
        )

    def act_fn(key: PRNGKey, state: DPFTRLState, t: jax.Array) -> jax.Array:
        del key, t
        return state.w

    def update_fn(key: PRNGKey, state: DPFTRLState, action: jax.Array, grad: jax.Array, t: jax.Array) -> DPFTRLState:
        del action
        tree_state, v, bad = mechanism_step_count(tree, key, state.tree, grad, t)  # bad: the gradient it zeroed
        w = constraint.project(state.start - v / state.regularization)
        return state._replace(w=w, tree=tree_state), NonfiniteInfo(bad)

    static = static_args(noise=noise, mechanism=tree)  # the family and tree that run (not None)
    private = spec_of(tree).private is not False
    spec = Spec(private=private, static=static, sampler_floor=sampler_floor_of(tree))
    return Learner(init_fn, act_fn, update_fn, check, horizon, spec=spec, returns_info=True)
