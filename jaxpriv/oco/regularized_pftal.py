"""Regularised PFTAL for general convex losses, Smith & Thakurta 2013, Appendix C (Theorem 11)."""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxpriv import _validate, declare, theory
from jaxpriv._base import Learner, Mechanism, PRNGKey, Spec, spec_of, static_args
from jaxpriv.mechanisms import GAMMA, NoiseFamily, TreeParams, describe, noise_family, release_variance, tree_depth
from jaxpriv.mechanisms._sampler_floor import check_sampler_floor, sampler_floor_of
from jaxpriv.mechanisms._tree import check_budget, check_budget_values
from jaxpriv.oco import _floor
from jaxpriv.oco._shared import prefix_sum_mechanism
from jaxpriv.oco.pftal import PFTALParams, PFTALState, pftal
from jaxpriv.sets import ConstraintSet, require_projection


class RegularizedPFTALParams(NamedTuple):
    """Params of regularised PFTAL.

    Attributes:
      epsilon: ε of ε-DP (``"gamma"`` / ``"laplace"`` trees); ``inf`` = no noise.
      rho: ρ of ρ-zCDP (``"gaussian"`` tree); ``inf`` = no noise.
      Exactly the budget of the noise family is given; a missing budget, or one of another
      family, is a ``ValueError`` (the non-private limit is an explicit ``inf``).
      lipschitz: ``L``, the Lipschitz constant of the (convex) losses ``f_t`` on ``C``.
      strong_convexity: ``H > 0``, the strength of the regulariser ``(H/2)||w||²``;
        ``nan`` (the default) selects Theorem 11's ``H`` for the run's constants
        (``jaxpriv.theory.regularized_pftal_strength``), computed in ``init``.
    """

    epsilon: ArrayLike | None = None
    rho: ArrayLike | None = None
    lipschitz: ArrayLike = 1.0
    strong_convexity: ArrayLike = float("nan")


def regularized_pftal_bound(params: RegularizedPFTALParams, env_params: Any, spec: Spec, horizon: int) -> float | None:
    """The regularized PFTAL bound at its budget (ε, or ρ for the Gaussian tree); ``H = nan`` is the tuned one.

    ``None`` with another prefix-sum mechanism than the paper's binary tree.
    """
    del env_params
    a = declare.arguments(spec)
    if dict(a["base"].static)["mechanism"].name != "binary_tree":
        return None
    c, noise = a["constraint"], a["noise"]  # the family that runs, by name
    budget = getattr(params, noise.budget)
    h = np.asarray(params.strong_convexity, np.float64)
    if np.isnan(h):
        h = theory.regularized_pftal_strength(horizon, c.dim, params.lipschitz, c.radius, budget, noise)
    return float(theory.regularized_pftal_regret_bound(horizon, c.dim, params.lipschitz, h, c.radius, budget, noise))


def _example(horizon: int, dim: int) -> declare.ExampleRun:
    """``regularized_pftal`` at one small configuration (``jaxpriv.testing.learner_examples``)."""
    from jaxpriv.envs._settings import setting

    s = setting("ball", dim)
    return regularized_pftal(horizon, s.constraint), s.env, RegularizedPFTALParams(epsilon=1.0, lipschitz=2.0), s.params


@declare.learner(
    "regularized_pftal",
    params=RegularizedPFTALParams,
    bound=regularized_pftal_bound,
    mechanism_dim="constraint",
    example=_example,
)
def regularized_pftal(
    horizon: int,
    constraint: ConstraintSet,
    noise: NoiseFamily | str | None = None,
    mechanism: Mechanism | None = None,
) -> Learner:
    """PFTAL on ``h_t(w) = f_t(w) + (H/2)||w||²`` for ``L``-Lipschitz convex losses (Appendix C).

    Algorithm 1 run on the regularised losses: the tree is fed
    ``∇h_t(w_t) = ∇f_t(w_t) + H w_t`` and the next point is
    ``Π_C(mean(w_1..w_t) - v_t/(H t))``. ``h_t`` is ``H``-strongly convex and
    ``(L + H||C||)``-Lipschitz on ``C``, so the tree clips its inputs to
    ``L + H||C||`` and, as in PFTAL, is calibrated to the replace-one sensitivity
    ``2(L + H||C||)`` (Appendix B.1's argument applied to ``h``).

    Privacy: as PFTAL, ε-DP (``"gamma"``, ``"laplace"``) or ρ-zCDP
    (``"gaussian"``) for the whole sequence of points, event level (one loss
    function replaced), against adaptive adversaries; the regulariser is data independent.

    Regret (Theorem 11): with ``H = sqrt(p log^{2.5} T / (εT))`` (up to constants),
    ``E[Regret(T)] = O~(sqrt(p T)/ε)``. The default ``strong_convexity = nan``
    uses the exact minimiser of eq. (17) with the proof's constants
    (``theory.regularized_pftal_strength``); ``theory.regularized_pftal_regret_bound``
    evaluates the bound.

    Another prefix-sum mechanism (``mechanism=``), as in ``oco.pftal`` (built for
    ``(T' >= T, d)`` with ``neighbouring="replace"``): the points are then private as that
    mechanism states, and Theorem 11's ``H`` uses its noise instead of the tree's: ``c`` above
    becomes ``sqrt(d · max_t Var_t)`` with ``Var_t`` its ``release_variance`` per unit clip
    (``sqrt(d)`` for a Laplace family), computed once on the host in float64 at budget 1 and
    scaled by ``1/ρ`` (Gaussian) or ``1/ε²``; ``theory.regularized_pftal_strength(...,
    unit_noise_norm=c)``.

    Args:
      horizon: ``T``; fixes the tree's depth and Theorem 11's ``H``.
      constraint: the set ``C`` (its projection is used).
      noise: ``"gamma"`` (the paper's; ``None`` means it), ``"laplace"`` or ``"gaussian"``; with
        ``mechanism``, ``None`` or that mechanism's family.
      mechanism: a prefix-sum mechanism instead of the paper's tree (see above).

    Returns:
      A ``Learner`` with params ``RegularizedPFTALParams``; feedback is the
      gradient of ``f_t`` (not ``h_t``) at the played point.

    Raises:
      ValueError: ``constraint`` has no projection or a static argument is bad;
        ``check``: ``strong_convexity <= 0``, a negative ``lipschitz``, a budget ``<= 0``
        or below the learner's floor (where its float32 arithmetic breaks, docs/guide/sharp_edges.md).

    References:
      Smith & Thakurta, (Nearly) Optimal Algorithms for Private Online Learning
      in Full-information and Bandit Settings, NeurIPS 2013, Appendix C.
    """
    require_projection(constraint)
    base = pftal(horizon, constraint, noise, mechanism)
    # The family object that runs (the closures keep it): the mechanism's, or the given one (Gamma by default).
    noise = describe(mechanism).noise if mechanism is not None else GAMMA if noise is None else noise_family(noise)
    depth = tree_depth(horizon)
    dim, radius = constraint.dim, constraint.radius
    # The Laplace tree clips the L1 norm (as in pftal).
    norm_factor = float(np.sqrt(dim)) if noise.norm == 1 else 1.0
    unit_variance = None
    if mechanism is not None:
        steps = np.arange(1, horizon + 1)
        unit = TreeParams(**{noise.budget: 1.0}, sensitivity=norm_factor)
        unit_variance = float(np.max(release_variance(mechanism, unit, steps)))

    # The base learner's mechanism and its largest release std.
    release_std = _floor.ReleaseStd(prefix_sum_mechanism(horizon, dim, noise, mechanism)[0], horizon)

    def unit_noise_norm(budget: ArrayLike) -> jax.Array | None:
        if unit_variance is None:
            return None
        b = jnp.asarray(budget, jnp.float32)
        scale = b * b if noise.pure else b  # variance ∝ 1/ε² (pure ε-DP), 1/ρ (Gaussian)
        return jnp.sqrt(dim * unit_variance / scale)

    def strength(params: RegularizedPFTALParams) -> jax.Array:
        budget = getattr(params, noise.budget)
        theorem = theory.regularized_pftal_strength(
            horizon, dim, params.lipschitz, radius, budget, noise, depth, unit_noise_norm(budget)
        )
        h = jnp.asarray(params.strong_convexity, jnp.float32)
        return jnp.where(jnp.isnan(h), theorem, h)

    def base_params(params: RegularizedPFTALParams) -> PFTALParams:
        h = strength(params)
        return PFTALParams(params.epsilon, params.rho, jnp.asarray(params.lipschitz, jnp.float32) + h * radius, h)

    def check(params: RegularizedPFTALParams) -> None:
        h = _validate._concrete(params.strong_convexity)
        if h is not None and np.any(~np.isnan(h) & ~((h > 0) & np.isfinite(h))):
            raise ValueError(f"strong_convexity must be in (0, inf) or nan (Theorem 11's H), got {h!r}")
        _validate.nonnegative("lipschitz", params.lipschitz)
        if h is not None and np.any(np.isnan(h)):  # Theorem 11's H is proportional to L
            _validate.positive("lipschitz", params.lipschitz, allow_inf=False)
        check_budget_values("regularized_pftal", params, noise, _floor.MIN_BUDGET)
        check_sampler_floor("regularized_pftal", params, sampler_floor_of(base))  # the samplers' δ floor
        name = _floor.budget_name(noise)
        values = _floor.concrete(getattr(params, name), params.lipschitz, params.strong_convexity)
        if values is not None:  # the budget floor (docs/guide/sharp_edges.md): v_t/H must stay finite
            budget, lip, _ = values
            h_used = np.asarray(strength(params), np.float64)
            clip = norm_factor * (lip + h_used * radius)
            mech_params = TreeParams(**{name: budget}, sensitivity=clip)
            power, detail = _floor.budget_power(noise), f"T={horizon}, d={dim}, noise='{noise}'"
            args = (release_std, mech_params, horizon, dim, radius, clip, h_used, detail)
            _floor.check_ftal_leader("regularized_pftal", name, power, *args)

    def init_fn(key: PRNGKey, params: RegularizedPFTALParams) -> PFTALState:
        check_budget("regularized_pftal", params, noise)
        return base.init(key, base_params(params))

    def update_fn(key: PRNGKey, state: PFTALState, action: jax.Array, grad: jax.Array, t: jax.Array) -> PFTALState:
        w = jnp.asarray(action, jnp.float32)
        return base.update(key, state, action, jnp.asarray(grad, jnp.float32) + state.strong_convexity * w, t)

    private = spec_of(base).private is not False
    static = static_args(noise=noise, base=base, mechanism=declare.OMIT)  # the base learner holds the mechanism
    spec = Spec(private=private, static=static, sampler_floor=sampler_floor_of(base))
    return Learner(init_fn, base.act, update_fn, check, base.horizon, spec=spec, returns_info=True)
