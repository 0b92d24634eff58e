"""LinPriv (Neel & Roth 2018), as Azize & Basu (§V, App. F-C) describe it — a reconstruction, not a transcription.

OFUL whose reward statistic ``Σ x_s r_s`` is released at every step by a binary tree with Laplace node noise
(ε-global DP, contexts public). Only the abstract of Neel & Roth (ICML 2018) was within reach; every choice the
sources leave open is ours and marked as such (docs/algorithms/baselines.md, 'Reconstructions').
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxpriv import _validate, declare, theory
from jaxpriv._base import (
    Learner,
    NonfiniteInfo,
    PRNGKey,
    Spec,
    mechanism_step_count,
    poison_past_horizon,
    zero_nonfinite,
)
from jaxpriv.bandits._gope_core import clip_reward, normalise_actions
from jaxpriv.bandits._oful_core import oful_radius, small_logdet
from jaxpriv.mechanisms import TreeParams, binary_tree
from jaxpriv.mechanisms._sampler_floor import sampler_floor_of

__all__ = ["LinPrivParams", "LinPrivState", "linpriv", "linpriv_noise_radius"]


class LinPrivParams(NamedTuple):
    """Params of ``linpriv``.

    Attributes:
      epsilon: ε of ε-DP (global, for the rewards; ``inf``: no noise, OFUL updated every round).
      delta: the confidence ``δ ∈ (0, 1)`` of each of the two radii (data and noise): ``1 - 2δ`` overall.
      regularization: ``λ > 0`` (1, ours).
      theta_bound: ``S >= ‖θ*‖`` (1).
      noise_bound: ``R``, the sub-Gaussian scale of the reward noise (1).
      action_bound: ``L``, a public bound on ``‖x‖`` used with ``clip=True`` (1).
    """

    epsilon: ArrayLike
    delta: ArrayLike = 0.001
    regularization: ArrayLike = 1.0
    theta_bound: ArrayLike = 1.0
    noise_bound: ArrayLike = 1.0
    action_bound: ArrayLike = 1.0


class LinPrivState(NamedTuple):
    """State of ``linpriv``.

    Attributes:
      actions: shape=[K, d], the (normalised) action set of the coming round (zeros before round 1).
      gram: shape=[d, d], ``V_t = λI + Σ x_s x_sᵀ`` (public: the contexts are public).
      tree: the Laplace tree's state (``Σ x_s r_s``).
      released: shape=[d], ``b̃_t``, the tree's release after round ``t``.
      epsilon, delta, regularization, theta_bound, noise_bound, action_bound: shape=(), the params.
    """

    actions: jax.Array
    gram: jax.Array
    tree: Any
    released: jax.Array
    epsilon: jax.Array
    delta: jax.Array
    regularization: jax.Array
    theta_bound: jax.Array
    noise_bound: jax.Array
    action_bound: jax.Array


def linpriv_noise_radius(
    epsilon: ArrayLike, delta: ArrayLike, horizon: int, dim: int, min_eigenvalue: ArrayLike
) -> jax.Array:
    """``γ_t``: w.p. ``>= 1 - δ`` the tree's release noise ``N_t`` has ``‖N_t‖_{V_t^{-1}} <= γ_t`` at every ``t``.

    Derived here (constants ours). Each coordinate of ``N_t`` is a sum of at most ``D = ⌈log2 T⌉ + 1``
    i.i.d. ``Lap(b)``, ``b = D·2√d/ε`` (the tree's node scale for L1 sensitivity ``2√d``). ``Lap(b)`` has
    ``E e^{λZ} <= e^{2λ²b²}`` for ``|λ| <= 1/(√2 b)``, so (Chernoff, sub-exponential) a coordinate exceeds
    ``u = b max(sqrt(8 D log(2dT/δ)), 2√2 log(2dT/δ))`` w.p. ``<= δ/(dT)``; a union bound over the ``d``
    coordinates and ``T`` steps gives ``‖N_t‖₂ <= √d u``, and ``‖N‖_{V^{-1}} <= ‖N‖₂/sqrt(λ_min(V_t))``.
    """
    depth = max(1, math.ceil(math.log2(max(horizon, 1)))) + 1
    b = depth * 2.0 * math.sqrt(dim) / jnp.asarray(epsilon, jnp.float32)
    log_term = jnp.log(2.0 * dim * horizon / jnp.asarray(delta, jnp.float32))
    u = b * jnp.maximum(jnp.sqrt(8.0 * depth * log_term), 2.0 * np.sqrt(2.0) * log_term)
    return jnp.sqrt(float(dim)) * u / jnp.sqrt(jnp.asarray(min_eigenvalue, jnp.float32))


def linpriv_bound(params: LinPrivParams, env_params: Any, spec: Spec, horizon: int) -> float | None:
    """The rectified bound of this reconstruction (``theory.linpriv_regret_bound``), w.p. ``1 - 2δ``."""
    del env_params
    p = params
    values = [float(np.asarray(v)) for v in (p.epsilon, p.delta, p.regularization, p.theta_bound, p.noise_bound)]
    return float(theory.linpriv_regret_bound(horizon, int(declare.arguments(spec)["dim"]), *values))


def _example(horizon: int, dim: int) -> declare.ExampleRun:
    """``linpriv`` at one small configuration (``jaxpriv.testing.learner_examples``)."""
    from jaxpriv.envs._settings import setting

    s = setting("contextual", dim)
    return linpriv(dim, 3, horizon), s.env, LinPrivParams(1.0), s.params


@declare.learner("linpriv", params=LinPrivParams, bound=linpriv_bound, example=_example)
def linpriv(
    num_actions: int,
    dim: int,
    horizon: int,
    clip: bool = True,
    *,
    private: bool = True,
) -> Learner:
    """After LinPriv (Neel & Roth 2018), as Azize & Basu describe it — a reconstruction: ε-DP OFUL with a tree.

    [Z] §V item 3, App. F-C: "an ε-global DP extension of OFUL ... the reward statistics are estimated at
    each time-step ... using a tree-based mechanism"; contexts public (possibly adversarial). Ours ([REC],
    on the seed's contextual instance: one θ*, ``K`` fresh actions per round):

    * ``V_t = λI + Σ_{s<=t} x_s x_sᵀ`` is public (no noise); ``b_t = Σ_{s<=t} x_s r_s`` is released by
      ``mechanisms.binary_tree(T, d, "laplace", "replace")`` with inputs clipped to L1 norm ``√d``
      (``‖x‖₂ <= 1``, ``|r| <= 1``): node noise ``Lap(D·2√d/ε)`` per coordinate;
    * ``θ̃_t = V_t^{-1} b̃_t``; play ``argmax_{x ∈ A_{t+1}} <x, θ̃_t> + (β_t + γ_t) ‖x‖_{V_t^{-1}}`` with
      OFUL's ``β_t = R sqrt(2 log(1/δ) + log det V_t - d log λ) + √λ S`` (``oful_radius``) and ``γ_t``
      covering the tree's noise (``linpriv_noise_radius``, derived there; ``λ_min(V_t)`` is public);
    * round 1 plays a uniformly random action (``A_1`` not seen yet), as ``adac_oful``.

    Privacy: ε-DP (global; hence ``ε²/2``-zCDP) for reward sequences differing in one round's reward, the
    contexts public: the tree is ε-DP for replace-one streams of inputs of L1 norm ``<= √d`` (adaptively
    chosen inputs, Smith & Thakurta App. B.1), and the actions are post-processing of its releases and
    the public contexts.

    Regret (``theory.linpriv_regret_bound``; the seed's rectified form, App. F-C: the elliptical potential
    lemma with Cauchy–Schwarz, so the private radius is multiplied by ``sqrt(dT log T)``): w.p.
    ``>= 1 - 2δ``, ``R_T <= 2 max(1, β_T + γ_T) sqrt(2dT log(1 + T/(dλ)))`` with ``γ_T`` at ``λ_min = λ``:
    ``O(d√T log T + d^{3/2} √T log² T / ε)`` — our constants.

    Privacy hygiene: ``clip=True`` clips rewards to ``[-1, 1]`` and maps actions to ``(x/L)/max(1, ‖x/L‖)``;
    ``clip=False`` voids the guarantee and refuses a finite ``epsilon`` unless built with ``private=False``.

    Args:
      num_actions: ``K >= 2`` actions per round.
      dim: ``d``.
      horizon: ``T >= K`` (fixes the tree's depth).
      clip: the privacy-hygiene switch (default ``True``).
      private: ``False`` declares the policy not private; required for ``clip=False`` at a finite ``epsilon``.

    Returns:
      A ``Learner`` with params ``LinPrivParams`` for ``contextual_linear_bandit``; actions are int32 indices.

    References:
      A. Azize, D. Basu. Concentrated Differential Privacy for Bandits. IEEE SaTML 2024, §V, App. F-C;
      S. Neel, A. Roth. Mitigating Bias in Adaptive Data Gathering via Differential Privacy. ICML 2018
      (abstract only); Abbasi-Yadkori, Pál & Szepesvári 2011 (OFUL).
    """
    num_actions = _validate.positive_int("num_actions", num_actions, minimum=2)
    dim = _validate.positive_int("dim", dim)
    horizon = _validate.horizon(horizon)
    if horizon < num_actions:
        raise ValueError(f"horizon must be >= num_actions={num_actions}, got {horizon}")
    reasons = _validate.opt_outs(
        private, **{"clip=False": None if clip else "rewards and actions are not clipped to the sensitivity bound"}
    )
    tree = binary_tree(horizon, dim, "laplace", "replace")
    l1_bound = float(np.sqrt(dim))  # ‖x r‖₁ <= √d ‖x‖₂ |r| <= √d
    eye = jnp.eye(dim, dtype=jnp.float32)

    def tree_params(params: LinPrivParams) -> TreeParams:
        return TreeParams(epsilon=params.epsilon, sensitivity=l1_bound)

    def check(params: LinPrivParams) -> None:
        _validate.numeric("epsilon", params.epsilon)
        _validate.budget_value("epsilon", params.epsilon)
        _validate.refuse_finite_budget("linpriv", "epsilon", params.epsilon, reasons, "ε-DP", private)
        tree.check(tree_params(params))  # the samplers' δ floor among its checks
        _validate.in_open_interval("delta", params.delta, 0.0, 1.0)
        _validate.positive("regularization", params.regularization, allow_inf=False)
        _validate.positive("theta_bound", params.theta_bound, allow_inf=False)
        _validate.nonnegative("noise_bound", params.noise_bound)
        _validate.positive("action_bound", params.action_bound, allow_inf=False)

    def init_fn(key: PRNGKey, params: LinPrivParams) -> LinPrivState:
        lam = jnp.asarray(params.regularization, jnp.float32)
        bound = jnp.asarray(params.theta_bound, jnp.float32)
        if clip:  # the policy works with x/L, where r = <L θ*, x/L>
            bound = bound * jnp.asarray(params.action_bound, jnp.float32)
        tp = jax.tree.map(lambda v: jnp.asarray(v, jnp.float32), tree_params(params))
        return LinPrivState(
            actions=jnp.zeros((num_actions, dim), jnp.float32),
            gram=lam * eye,
            tree=tree.init(key, tp),
            released=jnp.zeros((dim,), jnp.float32),
            epsilon=jnp.asarray(params.epsilon, jnp.float32),
            delta=jnp.asarray(params.delta, jnp.float32),
            regularization=lam,
            theta_bound=bound,
            noise_bound=jnp.asarray(params.noise_bound, jnp.float32),
            action_bound=jnp.asarray(params.action_bound, jnp.float32),
        )

    def act_fn(key: PRNGKey, state: LinPrivState, t: jax.Array) -> jax.Array:
        chol = jnp.linalg.cholesky(state.gram)
        theta = jax.scipy.linalg.cho_solve((chol, True), state.released)
        inv = jax.scipy.linalg.cho_solve((chol, True), eye)
        beta = oful_radius(
            small_logdet(state.gram), state.regularization, state.delta, state.theta_bound, state.noise_bound, dim
        )
        lam_min = jnp.linalg.eigvalsh(state.gram)[0]
        gamma = linpriv_noise_radius(state.epsilon, state.delta, horizon, dim, lam_min)
        x = state.actions
        width = jnp.sqrt(jnp.maximum(jnp.einsum("kd,de,ke->k", x, inv, x), 0.0))
        scores = x @ theta + (beta + gamma) * width
        blind = jax.random.randint(key, (), 0, num_actions, jnp.int32)  # round 1: A_1 not seen yet
        arm = jnp.where(t == 1, blind, jnp.argmax(scores).astype(jnp.int32))
        return poison_past_horizon(arm, t, horizon)

    def update_fn(
        key: PRNGKey, state: LinPrivState, action: jax.Array, feedback: Any, t: jax.Array
    ) -> tuple[LinPrivState, NonfiniteInfo]:
        del action
        x = normalise_actions(feedback.action_vector, state.action_bound, clip)
        r, bad = zero_nonfinite(jnp.asarray(feedback.reward, jnp.float32))  # 0 is inside [-1, 1]
        r = clip_reward(r, clip)
        tree_state, released, tree_bad = mechanism_step_count(tree, key, state.tree, x * r, t)
        gram = state.gram + jnp.outer(x, x)
        return state._replace(
            actions=normalise_actions(feedback.next_actions, state.action_bound, clip),
            gram=0.5 * (gram + gram.T),
            tree=tree_state,
            released=released,
        ), NonfiniteInfo(bad + tree_bad)  # the reward zeroed here, or the vector x·r by the tree

    spec = Spec(
        private=private and not reasons,
        num_arms=num_actions,
        sampler_floor=sampler_floor_of(tree),
    )
    return Learner(init_fn, act_fn, update_fn, check, horizon, spec=spec, returns_info=True)
