"""Private Follow-the-Approximate-Leader (PFTAL), Smith & Thakurta 2013, Algorithm 1."""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxpriv import _validate
from jaxpriv._base import Learner, PRNGKey
from jaxpriv.mechanisms import DyadicSums, TreeParams, TreeState, binary_tree, dyadic_init, tree_depth
from jaxpriv.oco.ftal import dyadic_prefix_sum, leader_point
from jaxpriv.sets import ConstraintSet, require_projection


class PFTALParams(NamedTuple):
    """Params of PFTAL.

    Attributes:
      epsilon: ε of ε-DP (``"gamma"`` / ``"laplace"`` trees); ``inf`` = no noise.
      rho: ρ of ρ-zCDP (``"gaussian"`` tree); ``inf`` = no noise.
      lipschitz: ``L``, the Lipschitz constant of the losses on ``C``.
      strong_convexity: ``H > 0``.
    """

    epsilon: ArrayLike = float("inf")
    rho: ArrayLike = float("inf")
    lipschitz: ArrayLike = 1.0
    strong_convexity: ArrayLike = 1.0


class PFTALState(NamedTuple):
    w: jax.Array  # shape=[d], the point played next
    points: DyadicSums  # exact dyadic sums of the points played so far
    strong_convexity: jax.Array  # shape=()
    tree: TreeState  # private sums of the gradients


def pftal(horizon: int, constraint: ConstraintSet, noise: str = "gamma") -> Learner:
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

    Args:
      horizon: ``T``, fixes the depth of the tree.
      constraint: the set ``C`` (its projection is used); any set of ``jaxpriv.sets``.
      noise: the tree's noise family, ``"gamma"`` (the paper's), ``"laplace"`` or ``"gaussian"``.

    Returns:
      A ``Learner`` with params ``PFTALParams``; feedback is the gradient at the played point.
      With ``epsilon = rho = inf`` (and gradients within the clipping bound) it
      reproduces ``ftal(constraint, horizon)`` bit for bit.

    Raises:
      ValueError: ``constraint`` has no projection, or a static argument is invalid;
        ``check`` raises it for ``strong_convexity <= 0``, a negative ``lipschitz``
        or a budget ``<= 0``.

    References:
      Smith & Thakurta, (Nearly) Optimal Algorithms for Private Online Learning
      in Full-information and Bandit Settings, NeurIPS 2013, Algorithm 1.
    """
    require_projection(constraint)
    tree = binary_tree(horizon, constraint.dim, noise, neighbouring="replace")
    depth = tree_depth(horizon)
    # The Laplace tree clips the L1 norm: ||g||_1 <= sqrt(d) ||g||_2 <= sqrt(d) L.
    norm_factor = float(np.sqrt(constraint.dim)) if noise == "laplace" else 1.0

    def tree_params(params: PFTALParams) -> TreeParams:
        return TreeParams(params.epsilon, params.rho, norm_factor * jnp.asarray(params.lipschitz, jnp.float32))

    def check(params: PFTALParams) -> None:
        _validate.positive("strong_convexity", params.strong_convexity, allow_inf=False)
        _validate.nonnegative("lipschitz", params.lipschitz)
        if noise == "gaussian":
            _validate.positive("rho", params.rho)
        else:
            _validate.positive("epsilon", params.epsilon)

    def init_fn(key: PRNGKey, params: PFTALParams) -> PFTALState:
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

    def update_fn(key: PRNGKey, state: PFTALState, action: jax.Array, grad: jax.Array, t: jax.Array) -> PFTALState:
        tree_state, v = tree.step(key, state.tree, grad, t)
        points, total_w = dyadic_prefix_sum(state.points, jnp.asarray(action, jnp.float32), t)
        w = constraint.project(leader_point(total_w, v, state.strong_convexity, t))
        return state._replace(w=w, points=points, tree=tree_state)

    return Learner(init_fn, act_fn, update_fn, check, horizon)
