"""Private learning with experts: regularised PFTAL over the simplex (Smith & Thakurta 2013, Table 1)."""

from __future__ import annotations

from typing import NamedTuple

import jax
import numpy as np
from jax.typing import ArrayLike

from jaxpriv import _validate, declare
from jaxpriv._base import Learner, Mechanism, PRNGKey, Spec, spec_of, static_args
from jaxpriv.mechanisms import NoiseFamily
from jaxpriv.mechanisms._sampler_floor import check_sampler_floor, sampler_floor_of
from jaxpriv.oco.pftal import PFTALState
from jaxpriv.oco.regularized_pftal import RegularizedPFTALParams, regularized_pftal
from jaxpriv.sets import simplex


class PrivateExpertsParams(NamedTuple):
    """Params of private learning with experts.

    Attributes:
      epsilon: ε of ε-DP (``"gamma"`` / ``"laplace"``); ``inf`` = no noise.
      rho: ρ of ρ-zCDP (``"gaussian"``); ``inf`` = no noise.
      Exactly the budget of the noise family is given; a missing budget, or one of another
      family, is a ``ValueError`` (the non-private limit is an explicit ``inf``).
      strong_convexity: ``H > 0`` of the regulariser; ``nan`` (default): Theorem 11's ``H``.
    """

    epsilon: ArrayLike | None = None
    rho: ArrayLike | None = None
    strong_convexity: ArrayLike = float("nan")


def _example(horizon: int, dim: int) -> declare.ExampleRun:
    """``private_experts`` at one small configuration (``jaxpriv.testing.learner_examples``)."""
    from jaxpriv.envs._settings import setting

    s = setting("experts", dim)
    return private_experts(horizon, dim), s.env, PrivateExpertsParams(epsilon=1.0), s.params


@declare.learner("private_experts", params=PrivateExpertsParams, mechanism_dim="num_experts", example=_example)
def private_experts(
    horizon: int, num_experts: int, noise: NoiseFamily | str | None = None, mechanism: Mechanism | None = None
) -> Learner:
    """Learning with experts under differential privacy: Table 1, first row.

    The learner plays a distribution ``w_t ∈ Δ_p`` over ``p`` experts and
    suffers ``<c_t, w_t>`` with ``c_t ∈ {0,1}^p``. It is regularised PFTAL
    (``regularized_pftal``, Appendix C) on the simplex, whose projection is exact
    (sort-based), with ``L = sqrt(p)`` (``||c_t||_2 <= sqrt p``): the tree clips
    ``c_t + H w_t`` to ``sqrt(p) + H`` (``||w_t||_2 <= 1`` on the simplex) and, as in
    PFTAL, is calibrated to the replace-one sensitivity ``2(sqrt(p) + H)``.

    Privacy: ε-DP (ρ-zCDP for ``"gaussian"``) for the whole sequence of
    distributions, with respect to replacing one whole cost vector (stronger
    than the single-entry neighbouring of Dwork et al. 2010), against adaptive adversaries.

    Regret: ``O(sqrt(p T) log^{2.5} T / ε)`` (Table 1); with the proof's constants,
    ``jaxpriv.theory.private_experts_regret_bound``.

    Args:
      horizon: ``T``.
      num_experts: ``p >= 1``.
      noise: the tree's noise family (``None``: ``"gamma"``, the paper's; with ``mechanism``,
        ``None`` or its family).
      mechanism: a prefix-sum mechanism for ``(T' >= T, p)`` built with ``neighbouring="replace"``
        instead of the paper's tree, as ``regularized_pftal(mechanism=...)`` (``H`` from its variance).

    Returns:
      A ``Learner`` with params ``PrivateExpertsParams``; feedback is the cost vector ``c_t``.

    References:
      Smith & Thakurta, NeurIPS 2013, Table 1 and Appendix C; Dwork, Naor,
      Pitassi, Rothblum, Differential privacy under continual observation, STOC 2010.
    """
    p = _validate.positive_int("num_experts", num_experts)
    base = regularized_pftal(horizon, simplex(p), noise, mechanism)
    lipschitz = float(np.sqrt(p))

    def inner(params: PrivateExpertsParams) -> RegularizedPFTALParams:
        return RegularizedPFTALParams(params.epsilon, params.rho, lipschitz, params.strong_convexity)

    def check(params: PrivateExpertsParams) -> None:
        check_sampler_floor("private_experts", params, sampler_floor_of(base))  # the samplers' δ floor
        base.check(inner(params))

    def init_fn(key: PRNGKey, params: PrivateExpertsParams) -> PFTALState:
        return base.init(key, inner(params))

    def update_fn(key: PRNGKey, state: PFTALState, action: jax.Array, costs: jax.Array, t: jax.Array) -> PFTALState:
        return base.update(key, state, action, costs, t)

    private = spec_of(base).private is not False
    static = static_args(noise=noise, base=base, mechanism=declare.OMIT)  # the base learner holds the mechanism
    spec = Spec(private=private, static=static, sampler_floor=sampler_floor_of(base))
    return Learner(init_fn, base.act, update_fn, check, base.horizon, spec=spec, returns_info=True)
