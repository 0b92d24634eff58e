"""Private Follow-the-Approximate-Leader (PFTAL), Smith & Thakurta 2013, Algorithm 1."""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxpriv import _validate, declare, theory
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
from jaxpriv.mechanisms import DyadicSums, NoiseFamily, TreeParams, dyadic_init, tree_depth
from jaxpriv.mechanisms._sampler_floor import check_sampler_floor, sampler_floor_of
from jaxpriv.mechanisms._tree import check_budget, check_budget_values
from jaxpriv.oco import _floor
from jaxpriv.oco._shared import dyadic_prefix_sum, leader_point, prefix_sum_mechanism
from jaxpriv.sets import ConstraintSet, require_projection


class PFTALParams(NamedTuple):
    """Params of PFTAL.

    Exactly the budget of the learner's noise family is given: ``epsilon`` for the
    ``"gamma"`` / ``"laplace"`` trees, ``rho`` for a ``"gaussian"`` mechanism. A missing
    budget, or one of another family, is a ``ValueError`` (never "no privacy"); the
    non-private limit is an explicit ``inf``.

    Attributes:
      epsilon: ε of ε-DP (``"gamma"`` / ``"laplace"`` trees); ``inf`` = no noise.
      rho: ρ of ρ-zCDP (``"gaussian"`` mechanisms); ``inf`` = no noise.
      lipschitz: ``L``, the Lipschitz constant of the losses on ``C``.
      strong_convexity: ``H > 0``.
    """

    epsilon: ArrayLike | None = None
    rho: ArrayLike | None = None
    lipschitz: ArrayLike = 1.0
    strong_convexity: ArrayLike = 1.0


class PFTALState(NamedTuple):
    w: jax.Array  # shape=[d], the point played next
    points: DyadicSums  # exact dyadic sums of the points played so far
    strong_convexity: jax.Array  # shape=()
    tree: Any  # the prefix-sum mechanism's state (TreeState for the paper's tree): private sums of the gradients


def pftal_bound(params: PFTALParams, env_params: Any, spec: Spec, horizon: int) -> float | None:
    """Theorem 4's regret bound at ``params`` for the Gamma binary tree (``None`` with another family or mechanism)."""
    del env_params
    a = declare.arguments(spec)
    if a["noise"] != "gamma" or a["mechanism"].name != "binary_tree":
        return None
    c = a["constraint"]
    lipschitz, strong_convexity, epsilon = params.lipschitz, params.strong_convexity, params.epsilon
    return float(theory.pftal_gamma_regret_bound(horizon, c.dim, lipschitz, strong_convexity, c.radius, epsilon))


def _example(horizon: int, dim: int) -> declare.ExampleRun:
    """``pftal`` at one small configuration (``jaxpriv.testing.learner_examples``)."""
    from jaxpriv.envs._settings import setting

    s = setting("ball", dim)
    return pftal(horizon, s.constraint), s.env, PFTALParams(epsilon=1.0, lipschitz=2.0), s.params


@declare.learner("pftal", params=PFTALParams, bound=pftal_bound, mechanism_dim="constraint", example=_example)
def pftal(
    horizon: int,
    constraint: ConstraintSet,
    noise: NoiseFamily | str | None = None,
    mechanism: Mechanism | None = None,
) -> Learner:
    """PFTAL for ``L``-Lipschitz, ``H``-strongly convex losses on a convex set ``C``.

    Line 4 of Algorithm 1, ``argmin_{w∈C} <v_t, w> + (H/2) sum_{τ<=t} ||w - w_τ||²``,
    is an isotropic quadratic, so it is exactly the projection
    ``w_{t+1} = Π_C((W_t - v_t / H) / t)``, where ``v_t`` is the tree's private
    prefix sum of the gradients ``∇f_τ(w_τ)`` and ``W_t`` the (public) sum of the
    points played, kept as exact dyadic sums (float32-accurate over long horizons).

    Privacy (replace-one neighbouring loss sequences, as in the paper, against
    adaptive adversaries): the tree is fed ``∇f_t(w_t)``, clipped to
    ``||·||_2 <= L`` (``||·||_1 <= sqrt(d) L`` for the Laplace family), and
    calibrated to the replace-one sensitivity ``2L`` of one clipped gradient
    (``binary_tree(..., neighbouring="replace")``): the whole sequence of points
    is ε-DP (``"gamma"``, ``"laplace"``) or ρ-zCDP (``"gaussian"``). The paper
    (proof of Theorem 3, Appendix B.1) calibrates to ``L + H||C||``, a bound on
    the norm of one surrogate gradient; that covers a replaced loss (a change of
    up to ``2L``) only when ``L <= H||C||``, so we use the exact ``2L`` instead.

    Regret (Theorem 4): ``E[Regret(T)] = O(p (L + H||C||)² log^{2.5} T / (εH))``;
    ``jaxpriv.theory.pftal_regret_bound`` evaluates it with the proof's constants.

    Another prefix-sum mechanism (``mechanism=``): any mechanism of
    ``jaxpriv.mechanisms`` (``honaker_tree``, ``sqrt_factorization``, ``blt``, or a
    ``binary_tree``) built for ``(T', d)`` with ``T' >= T``, ``d = dim(C)`` and
    ``neighbouring="replace"``. The learner passes it
    ``TreeParams(epsilon, rho, sensitivity=L)`` (``sqrt(d) L`` for a Laplace family):
    the mechanism clips each gradient to that bound and calibrates its noise to
    the replace-one sensitivity ``2L`` (times its encoder's column norm for a
    factorization). The points are then ε-DP or ρ-zCDP as that mechanism states
    (the sequence of points is post-processing of its releases); the regret bound
    is Theorem 4's with the tree's ``D σ²_node`` replaced by the mechanism's worst
    per-step variance: ``jaxpriv.theory.pftal_mechanism_regret_bound``.

    Args:
      horizon: ``T``, fixes the depth of the tree.
      constraint: the set ``C`` (its projection is used); any set of ``jaxpriv.sets``.
      noise: the tree's noise family, ``"gamma"`` (the paper's, the default), ``"laplace"``
        or ``"gaussian"``: shorthand for ``binary_tree(T, d, noise, neighbouring="replace")``.
      mechanism: a prefix-sum mechanism instead of the paper's tree (see above); its
        noise family is then the learner's (``noise``, if given, must agree).

    Returns:
      A ``Learner`` with params ``PFTALParams``; feedback is the gradient at the played point.
      With an infinite budget (and gradients within the clipping bound) it
      reproduces ``ftal(constraint, horizon)`` bit for bit.

    Raises:
      ValueError: ``constraint`` has no projection, or a static argument is invalid
        (a ``mechanism`` of another shape, a shorter horizon, add/remove neighbours, or
        a ``noise`` that disagrees with it);
        ``check`` raises it for ``strong_convexity <= 0``, a negative ``lipschitz``
        or a budget ``<= 0`` or
        below the learner's floor (where its float32 arithmetic breaks, docs/guide/sharp_edges.md).

    References:
      Smith & Thakurta, (Nearly) Optimal Algorithms for Private Online Learning
      in Full-information and Bandit Settings, NeurIPS 2013, Algorithm 1.
    """
    require_projection(constraint)
    tree, noise = prefix_sum_mechanism(horizon, constraint.dim, noise, mechanism)
    depth = tree_depth(horizon)
    # The Laplace tree clips the L1 norm: ||g||_1 <= sqrt(d) ||g||_2 <= sqrt(d) L.
    norm_factor = float(np.sqrt(constraint.dim)) if noise.norm == 1 else 1.0

    def tree_params(params: PFTALParams) -> TreeParams:
        return TreeParams(params.epsilon, params.rho, norm_factor * jnp.asarray(params.lipschitz, jnp.float32))

    release_std = _floor.ReleaseStd(tree, horizon)
    name, power = _floor.budget_name(noise), _floor.budget_power(noise)

    def check(params: PFTALParams) -> None:
        _validate.positive("strong_convexity", params.strong_convexity, allow_inf=False)
        _validate.nonnegative("lipschitz", params.lipschitz)
        check_budget_values("pftal", params, noise, _floor.MIN_BUDGET)
        check_sampler_floor("pftal", params, sampler_floor_of(tree))  # the samplers' δ floor
        values = _floor.concrete(getattr(params, name), params.lipschitz, params.strong_convexity)
        if values is not None:  # the budget floor (docs/guide/sharp_edges.md): v_t/H must stay finite
            budget, lip, h = values
            clip = norm_factor * lip
            mech_params = TreeParams(**{name: budget}, sensitivity=clip)
            detail = f"T={horizon}, d={constraint.dim}, noise='{noise}'"
            dim, radius = constraint.dim, constraint.radius
            args = (release_std, mech_params, horizon, dim, radius, clip, h, detail)
            _floor.check_ftal_leader("pftal", name, power, *args)

    def init_fn(key: PRNGKey, params: PFTALParams) -> PFTALState:
        check_budget("pftal", params, noise)
        w1 = constraint.project(jnp.zeros(constraint.dim, jnp.float32))
        return PFTALState(
            w=w1,
            points=dyadic_init(depth, constraint.dim),
            strong_convexity=jnp.asarray(params.strong_convexity, jnp.float32),
            tree=tree.init(key, tree_params(params)),
        )

    def act_fn(key: PRNGKey, state: PFTALState, t: jax.Array) -> jax.Array:
        del key, t
        return state.w

    def update_fn(
        key: PRNGKey, state: PFTALState, action: jax.Array, grad: jax.Array, t: jax.Array
    ) -> tuple[PFTALState, NonfiniteInfo]:
        tree_state, v, bad = mechanism_step_count(tree, key, state.tree, grad, t)  # bad: the gradient it zeroed
        points, total_w = dyadic_prefix_sum(state.points, jnp.asarray(action, jnp.float32), t)
        w = constraint.project(leader_point(total_w, v, state.strong_convexity, t))
        return state._replace(w=w, points=points, tree=tree_state), NonfiniteInfo(bad)

    private = spec_of(tree).private is not False
    static = static_args(noise=noise, mechanism=tree)  # the family and tree that run (not None)
    spec = Spec(private=private, static=static, sampler_floor=sampler_floor_of(tree))
    return Learner(init_fn, act_fn, update_fn, check, horizon, spec=spec, returns_info=True)
