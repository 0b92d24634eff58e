"""Private Follow-the-Approximate-Leader, bandit version: Smith & Thakurta 2013, Algorithm 3 (Appendix E)."""

from __future__ import annotations

from typing import NamedTuple

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
from jaxpriv.mechanisms import NoiseFamily, TreeParams, tree_depth
from jaxpriv.mechanisms._sampler_floor import check_sampler_floor, sampler_floor_of
from jaxpriv.mechanisms._tree import check_budget, check_budget_values
from jaxpriv.oco import _floor, one_point
from jaxpriv.oco._shared import (
    PRESETS,
    BanditFTALState,
    check_bandit_ftal_params,
    estimate,
    init_state,
    next_state,
    played_point,
    prefix_sum_mechanism,
    preset_values,
)
from jaxpriv.sets import ConstraintSet


class PrivateBanditFTALParams(NamedTuple):
    """Params of private bandit FTAL (Algorithm 3).

    Attributes:
      epsilon: ε of ε-DP (``"gamma"`` / ``"laplace"`` trees); ``inf`` = no noise.
      rho: ρ of ρ-zCDP (``"gaussian"`` tree); ``inf`` = no noise.
      Exactly the budget of the noise family is given; a missing budget, or one of another
      family, is a ``ValueError`` (the non-private limit is an explicit ``inf``).
      loss_bound: ``B > 0``, ``|f_t| <= B`` on ``C``; the estimates are clipped to ``pB/β``.
      strong_convexity: ``H >= 0``; ``nan``: the preset's (1, or 0 for ``"general_convex"``).
      exploration: ``β ∈ (0, r)``; ``nan``: the preset's (``theory.bandit_ftal_exploration``).
      regularization: ``λ >= 0``; ``nan``: the preset's (0, or ``T^{-1/4}`` for ``"general_convex"``).
    """

    epsilon: ArrayLike | None = None
    rho: ArrayLike | None = None
    loss_bound: ArrayLike = 1.0
    strong_convexity: ArrayLike = float("nan")
    exploration: ArrayLike = float("nan")
    regularization: ArrayLike = float("nan")


def _example(horizon: int, dim: int) -> declare.ExampleRun:
    """``private_bandit_ftal`` at one small configuration (``jaxpriv.testing.learner_examples``)."""
    from jaxpriv.envs._settings import setting

    s = setting("bandit_feedback", dim)
    return (
        private_bandit_ftal(horizon, s.constraint),
        s.env,
        PrivateBanditFTALParams(epsilon=1.0, loss_bound=4.0),
        s.params,
    )


@declare.learner("private_bandit_ftal", params=PrivateBanditFTALParams, mechanism_dim="constraint", example=_example)
def private_bandit_ftal(
    horizon: int,
    constraint: ConstraintSet,
    noise: NoiseFamily | str | None = None,
    preset: str = "oblivious",
    mechanism: Mechanism | None = None,
) -> Learner:
    """Private bandit FTAL (Algorithm 3): bandit FTAL whose estimate sums come from the binary tree.

    Lines 2–7 of Algorithm 3: play ``ŵ_t = w†_t + βu_t``, pass the one-point
    estimate ``ĝ_t = (p/β) f_t(ŵ_t) u_t`` to the tree with L2 bound ``pB/β``, and
    take ``w†_{t+1} = argmin_{w∈(1-ξ)C} <v†_t, w> + (H/2) sum_τ ||w - w†_τ||²`` (eq. (9)),
    ``ξ = β/r``: the projection of ``(W_t - v†_t/H)/t`` onto the shrunk set
    ``c + (1 - ξ)(C - c)`` (``jaxpriv.oco.bandit_ftal`` for the details, the
    presets and the regularised general-convex version, where the regulariser's
    exact gradient ``λw†_τ`` is added outside the tree: it does not depend on the data).

    Privacy (Theorem 5; replace-one neighbouring loss sequences, event level):
    the tree is fed ``ĝ_t``, clipped to ``||·||_2 <= pB/β`` (``||·||_1 <= sqrt(d) pB/β``
    for the Laplace family; the clip is active only when ``|f_t| > B``), and is
    calibrated to the replace-one sensitivity ``2pB/β`` of one clipped estimate
    (``binary_tree(..., neighbouring="replace")``, the rule ``oco.pftal`` documents:
    the paper passes the bound ``pB/β``, which covers a change of one input only
    under add/remove). The whole sequence of points is then ε-DP (``"gamma"``,
    ``"laplace"``) or ρ-zCDP (``"gaussian"``), also against adaptive adversaries
    (Appendix B.1). The direction ``u_t`` is visible in the played point; the
    sensitivity bound holds for every direction, so the guarantee holds
    conditionally on the directions. A non-finite loss value is replaced by 0
    (an estimate of 0, inside the clip) and counted in the step's Info
    (``NonfiniteInfo``), with the estimates the tree zeroed.

    Regret (Theorem 6; Theorem 17 for ``"general_convex"``): ``Õ(pT^{2/3}χ)``
    (oblivious preset, oblivious adversary), ``Õ(pT^{3/4}χ)`` (adaptive); with the
    proofs' constants ``theory.private_bandit_ftal_regret_bound`` (for the paper's tree).

    Another prefix-sum mechanism (``mechanism=``), as in ``oco.pftal``: any mechanism of
    ``jaxpriv.mechanisms`` (``honaker_tree``, ``sqrt_factorization``, ``blt``) built for
    ``(T' >= T, d)`` with ``neighbouring="replace"``; it is given the clip ``pB/β`` and
    calibrates to ``2pB/β`` times its own factor. The points are then ε-DP or ρ-zCDP as that
    mechanism states. The presets (``H``, ``λ``, ``β``) do not depend on the noise, so they are
    unchanged; ``theory.private_bandit_ftal_regret_bound`` stays the tree's bound (its privacy
    term is the tree's variance, an upper bound for the Honaker tree, not the factorizations').

    Args:
      horizon: ``T``; fixes the tree's depth and the presets; declared.
      constraint: the set ``C``; needs a projection and an inner ball (``sets.bandit_radii``).
      noise: the tree's noise family, ``"gamma"`` (the paper's; ``None`` means it), ``"laplace"`` or
        ``"gaussian"``; with ``mechanism``, ``None`` or that mechanism's family.
      preset: ``"oblivious"``, ``"adaptive"`` or ``"general_convex"`` (Theorem 6's two
        parameter choices and Theorem 17's).
      mechanism: a prefix-sum mechanism instead of the paper's tree (see above).

    Returns:
      A ``Learner`` with params ``PrivateBanditFTALParams``; feedback is the loss value
      at the played point (``envs.bandit_feedback``). With an infinite budget
      (and ``|f_t| <= B``) it reproduces ``bandit_ftal(horizon, constraint, preset)`` bit for bit.

    Raises:
      ValueError: a set without projection or inner ball, a bad static argument, a
        ``mechanism`` that does not fit (as ``oco.pftal``);
        ``check``: ``β ∉ (0, r)``, ``B <= 0``, ``H < 0``, ``λ < 0``, ``H + λ <= 0``, a budget ``<= 0``
        or below the learner's floor (where its float32 arithmetic breaks, docs/guide/sharp_edges.md).

    References:
      Smith & Thakurta, (Nearly) Optimal Algorithms for Private Online Learning
      in Full-information and Bandit Settings, NeurIPS 2013, §3.2, Algorithm 3,
      Theorems 5, 6 and 17.
    """
    horizon = _validate.horizon(horizon)
    preset = _validate.choice("preset", preset, PRESETS)
    r, _ = one_point.require_inner_ball(constraint)
    tree, noise = prefix_sum_mechanism(horizon, constraint.dim, noise, mechanism)
    p = one_point.sphere_dim(constraint)
    depth = tree_depth(horizon)
    # The Laplace tree clips the L1 norm: ||g||_1 <= sqrt(d) ||g||_2 <= sqrt(d) pB/β.
    norm_factor = float(np.sqrt(constraint.dim)) if noise.norm == 1 else 1.0

    release_std = _floor.ReleaseStd(tree, horizon)
    name = _floor.budget_name(noise)

    def check(params: PrivateBanditFTALParams) -> None:
        _validate.positive("loss_bound", params.loss_bound, allow_inf=False)
        check_budget_values("private_bandit_ftal", params, noise, _floor.MIN_BUDGET)
        check_sampler_floor("private_bandit_ftal", params, sampler_floor_of(tree))  # the samplers' δ floor
        check_bandit_ftal_params(params, horizon, p, r, preset)
        values = _floor.concrete(
            getattr(params, name), params.loss_bound, params.strong_convexity, params.exploration, params.regularization
        )
        if values is None:
            return
        # The budget floor (docs/guide/sharp_edges.md): the leader (W_t - (v_t + λW_t)/(H + λ))/t, then
        # c + (y - c)/s onto the shrunk set, must stay finite.
        budget, bound = values[:2]
        h, lam, beta = (np.asarray(v, np.float64) for v in preset_values(params, horizon, p, r, preset))
        clip = norm_factor * p * bound / beta
        divisor = np.asarray(one_point.shrink_factor(beta, r), np.float64) / np.maximum(1.0, 1.0 / (h + lam))
        fixed = horizon * (clip + constraint.radius * (1.0 + lam))
        std = release_std(TreeParams(**{name: budget}, sensitivity=clip))
        power = _floor.budget_power(noise)
        term = _floor.release_term(std, constraint.dim, divisor, fixed, power, "the leader v_t/(H + λ)")
        _floor.check("private_bandit_ftal", name, budget, [term], f"T={horizon}, d={constraint.dim}, noise='{noise}'")

    def init_fn(key: PRNGKey, params: PrivateBanditFTALParams) -> BanditFTALState:
        check_budget("private_bandit_ftal", params, noise)
        k_sphere, k_tree = jax.random.split(key)
        h, lam, beta = preset_values(params, horizon, p, r, preset)
        clip = norm_factor * p * jnp.asarray(params.loss_bound, jnp.float32) / beta
        tree_state = tree.init(k_tree, TreeParams(params.epsilon, params.rho, clip))
        return init_state(k_sphere, h, lam, beta, tree_state, constraint, depth, r)

    def act_fn(key: PRNGKey, state: BanditFTALState, t: jax.Array) -> jax.Array:
        del key
        return played_point(state, constraint, t, horizon)

    def update_fn(
        key: PRNGKey, state: BanditFTALState, action: jax.Array, loss: jax.Array, t: jax.Array
    ) -> tuple[BanditFTALState, NonfiniteInfo]:
        del action  # the played point is w†_t + βu_t, u_t kept in the state
        g, bad = estimate(state, constraint, loss, t)
        # the tree zeroes a non-finite input (counted: tree_bad), clips, adds the node noise
        tree_state, v, tree_bad = mechanism_step_count(tree, key, state.sums, g, t)
        # its own count (a non-finite loss value) plus the one-point estimate the tree zeroed
        return next_state(state, constraint, tree_state, v, t), NonfiniteInfo(bad + tree_bad)

    private = spec_of(tree).private is not False
    static = static_args(noise=noise, mechanism=tree)  # the family and tree that run (not None)
    floor = sampler_floor_of(tree)
    spec = Spec(private=private, static=static, sampler_floor=floor)
    return Learner(init_fn, act_fn, update_fn, check, horizon, spec=spec, returns_info=True)
