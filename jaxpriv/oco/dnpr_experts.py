"""DNPR10's experts algorithm, as Smith & Thakurta (§1, Table 1) describe it — a reconstruction, not a transcription.

Follow the noisy leader: the cumulative cost of every expert counted by one binary tree with Laplace node noise,
calibrated to a whole replaced cost vector (the neighbouring notion of Smith & Thakurta's Table 1), plus a one-time
follow-the-perturbed-leader perturbation. Dwork, Naor, Pitassi & Rothblum (STOC 2010) were out of reach; every
choice the description leaves open is ours and marked as such (docs/algorithms/baselines.md, 'Reconstructions').
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from jaxpriv import _validate, declare
from jaxpriv._base import Learner, NonfiniteInfo, PRNGKey, Spec, mechanism_step_count
from jaxpriv.mechanisms import TreeParams, binary_tree
from jaxpriv.mechanisms._sampler_floor import sampler_floor_of

__all__ = ["DNPRExpertsParams", "DNPRExpertsState", "dnpr_experts", "dnpr_perturbation_range"]


class DNPRExpertsParams(NamedTuple):
    """Params of ``dnpr_experts``.

    Attributes:
      epsilon: ε of ε-DP (``inf``: no tree noise; the policy is then follow-the-perturbed-leader).
    """

    epsilon: ArrayLike


class DNPRExpertsState(NamedTuple):
    """State of ``dnpr_experts``.

    Attributes:
      tree: the Laplace tree's state over the centred costs ``c_s - 1/2``.
      released: shape=[p], the tree's release ``Σ_{s<=t} (c_s - 1/2) + N_t`` after round ``t``.
      perturbation: shape=[p], the one-time FTPL perturbation ``P ~ U[0, r]^p`` (``dnpr_perturbation_range``).
    """

    tree: Any
    released: jax.Array
    perturbation: jax.Array


def dnpr_perturbation_range(horizon: int, num_experts: int) -> float:
    """``r = sqrt(pT/2)``: the FTPL perturbation's range (ours; Kalai & Vempala 2005, Thm 1.1(a)).

    FTPL with ``P ~ U[0, 1/η]^p`` drawn once, against an oblivious sequence of costs in ``[0, 1]^p`` on the
    experts' vertices (ℓ1 diameter 2, ``‖c‖₁ <= p``, per-round cost ``<= 1``), has
    ``E[R_T] <= 2/η + η p T``; ``η = sqrt(2/(pT))`` gives ``2 sqrt(2pT)``.
    """
    return math.sqrt(num_experts * horizon / 2.0)


# Smith & Thakurta's Table 1 states DNPR10's O(p sqrt(T) / eps) in O(.) only: no numeric bound declared.
def _example(horizon: int, dim: int) -> declare.ExampleRun:
    """``dnpr_experts`` at one small configuration (``jaxpriv.testing.learner_examples``)."""
    from jaxpriv.envs._settings import setting

    s = setting("experts", dim)
    return dnpr_experts(horizon, dim), s.env, DNPRExpertsParams(1.0), s.params


@declare.learner("dnpr_experts", params=DNPRExpertsParams, example=_example)
def dnpr_experts(horizon: int, num_experts: int) -> Learner:
    """After Dwork, Naor, Pitassi & Rothblum 2010, as Smith & Thakurta describe it — a reconstruction: private experts.

    [ST] §1 'Previous approaches' and Table 1: experts on ``Δ_p`` with costs ``c_t ∈ {0, 1}^p``; adapted to the
    whole cost vector replaced, DNPR10's algorithm gives ``O(p√T/ε)``. Ours ([REC]):

    * one tree of ``p``-vectors, ``mechanisms.binary_tree(T, p, "laplace", "replace")``, counts the centred
      costs ``c_s - 1/2`` (L1 norm ``<= p/2``, clipped there by the tree): node noise ``Lap(D p/ε)`` per
      coordinate, ``D = ⌈log2 T⌉ + 1`` — the L1 sensitivity ``p`` of a whole replaced cost vector. Centring
      moves every expert's count by the same ``t/2``, so the leader is unchanged.
    * play the vertex ``e_i``, ``i = argmin_j (ṽ_{t-1, j} + P_j)`` (ties: the lowest index), ``ṽ`` the tree's
      last release: follow the leader of the noisy counts.
    * the tree's noise alone does not give the √T rate: its scale ``D p/ε`` does not grow with ``T``, and on an
      oblivious alternating sequence follow-the-leader with bounded perturbations pays ``≈ T`` (the
      ``experts_stream(pattern="alternating")`` stream). So a one-time FTPL perturbation ``P ~ U[0, r]^p``,
      ``r = sqrt(pT/2)`` (``dnpr_perturbation_range``), is added, drawn at ``init`` from the run's key.

    Privacy: ε-DP for the sequence of plays, against one whole cost vector replaced (adaptive inputs, the
    tree's guarantee: Smith & Thakurta App. B.1): the plays are post-processing of the tree's releases and of
    ``P``, which does not depend on the data.

    Regret: ``O(p√T/ε)`` in [ST]'s Table 1 (stated in ``O(·)`` only: no numeric bound is registered); the
    FTPL part alone has ``E[R_T] <= 2 sqrt(2pT)`` (``dnpr_perturbation_range``). Not derived here: the cost of
    the tree's time-varying noise.

    Args:
      horizon: ``T``.
      num_experts: ``p >= 1``.

    Returns:
      A ``Learner`` with params ``DNPRExpertsParams`` for ``envs.experts_stream(p)``: it plays a vertex of the
      simplex; feedback is the cost vector ``c_t``.

    References:
      A. Smith, A. Thakurta. (Nearly) Optimal Algorithms for Private Online Learning in Full-information and
      Bandit Settings. NeurIPS 2013, §1 and Table 1; C. Dwork, M. Naor, T. Pitassi, G. Rothblum. Differential
      Privacy under Continual Observation. STOC 2010 (not within reach); A. Kalai, S. Vempala. Efficient
      Algorithms for Online Decision Problems. JCSS 2005 (FTPL).
    """
    horizon = _validate.horizon(horizon)
    p = _validate.positive_int("num_experts", num_experts)
    tree = binary_tree(horizon, p, "laplace", "replace")
    radius = dnpr_perturbation_range(horizon, p)

    def tree_params(params: DNPRExpertsParams) -> TreeParams:
        return TreeParams(epsilon=params.epsilon, sensitivity=p / 2.0)  # replace-one: 2Δ = p

    def check(params: DNPRExpertsParams) -> None:
        _validate.numeric("epsilon", params.epsilon)
        _validate.budget_value("epsilon", params.epsilon)
        tree.check(tree_params(params))

    def init_fn(key: PRNGKey, params: DNPRExpertsParams) -> DNPRExpertsState:
        k_tree, k_perturb = jax.random.split(key)
        tp = jax.tree.map(lambda v: jnp.asarray(v, jnp.float32), tree_params(params))
        return DNPRExpertsState(
            tree=tree.init(k_tree, tp),
            released=jnp.zeros((p,), jnp.float32),
            perturbation=radius * jax.random.uniform(k_perturb, (p,), jnp.float32),
        )

    def act_fn(key: PRNGKey, state: DNPRExpertsState, t: jax.Array) -> jax.Array:
        del key, t
        return jax.nn.one_hot(jnp.argmin(state.released + state.perturbation), p, dtype=jnp.float32)

    def update_fn(
        key: PRNGKey, state: DNPRExpertsState, action: jax.Array, costs: jax.Array, t: jax.Array
    ) -> tuple[DNPRExpertsState, NonfiniteInfo]:
        del action
        c = jnp.asarray(costs, jnp.float32)
        bad = jnp.any(~jnp.isfinite(c))
        c = jnp.where(bad, 0.5, jnp.clip(c, 0.0, 1.0))  # a non-finite vector counts as all 1/2 (centred: zero)
        tree_state, released, tree_bad = mechanism_step_count(tree, key, state.tree, c - 0.5, t)
        # the cost vector replaced by 1/2 here or by zero in the tree, if any (the step's Info: a NaN / inf entry)
        return state._replace(tree=tree_state, released=released), NonfiniteInfo(bad.astype(jnp.int32) + tree_bad)

    spec = Spec(private=True, sampler_floor=sampler_floor_of(tree))
    return Learner(init_fn, act_fn, update_fn, check, horizon, spec=spec, returns_info=True)
