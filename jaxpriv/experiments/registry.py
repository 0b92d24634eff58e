"""The registry of components a study file may name: learners, environments and constraint sets.

A study file's ``[learner] name = "pftal"`` is looked up in ``LEARNERS``, ``[env] name``
in ``ENVS`` and ``[set] kind`` in ``SETS`` (``jaxpriv.experiments.study_file``). A learner
may carry its regret bound, which the study runner writes beside the measured regret.

Baselines and other experiments extend the registry with ``register_learner``,
``register_env`` and ``register_set``; a name registered twice is refused unless
``replace=True``::

    from jaxpriv.experiments import registry

    registry.register_learner("my_baseline", my_baseline, MyBaselineParams)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from jaxpriv import bandits, envs, mechanisms, oco, sets, theory
from jaxpriv.oco.dp_ftrl import dp_ftrl_learner_bound

__all__ = [
    "ENVS",
    "LEARNERS",
    "SETS",
    "Bound",
    "Component",
    "register_env",
    "register_learner",
    "register_set",
]

#: A learner's regret bound at one grid point:
#: ``(learner params, env params, the learner's static kwargs, horizon, constraint set) -> float or None``.
Bound = Callable[[Any, Any, dict[str, Any], int, Any], float | None]


class Component(NamedTuple):
    """A factory a study file may name, its params class and (optionally) its regret bound.

    Attributes:
      factory: builds the learner or environment from the static keyword arguments in the file
        (``horizon`` and ``constraint`` are supplied from the file's ``horizon`` and ``[set]``).
      params: the params NamedTuple class whose fields ``[learner.params]`` / ``[env.params]`` set.
      bound: the regret bound (see ``Bound``) or ``None``.
    """

    factory: Callable[..., Any]
    params: type
    bound: Bound | None = None


# --- the regret bounds of the registered learners -----------------------------------------------------------


def _pftal_bound(lp: Any, ep: Any, static: dict[str, Any], horizon: int, constraint: Any) -> float | None:
    """Theorem 4's bound for PFTAL with the Gamma tree (``None`` for another noise family)."""
    del ep
    if static.get("noise", "gamma") != "gamma":
        return None
    return float(
        theory.pftal_gamma_regret_bound(
            horizon, constraint.dim, lp.lipschitz, lp.strong_convexity, constraint.radius, lp.epsilon
        )
    )


def _regularized_pftal_bound(lp: Any, ep: Any, static: dict[str, Any], horizon: int, constraint: Any) -> float | None:
    """The regularized PFTAL bound at its budget (ε, or ρ for the Gaussian tree); ``H = nan`` is the tuned one."""
    del ep
    noise = static.get("noise", "gamma")
    budget = lp.rho if noise == "gaussian" else lp.epsilon
    h = np.asarray(lp.strong_convexity, np.float64)
    if np.isnan(h):
        h = theory.regularized_pftal_strength(horizon, constraint.dim, lp.lipschitz, constraint.radius, budget, noise)
    return float(
        theory.regularized_pftal_regret_bound(
            horizon, constraint.dim, lp.lipschitz, h, constraint.radius, budget, noise
        )
    )


def _ogd_bound(lp: Any, ep: Any, static: dict[str, Any], horizon: int, constraint: Any) -> float | None:
    """OGD's bound for its step-size schedule."""
    del ep
    schedule = static.get("schedule", "strongly_convex")
    return float(theory.ogd_regret_bound(horizon, lp.lipschitz, constraint.diameter, lp.strong_convexity, schedule))


def _mi_ogd_bound(lp: Any, ep: Any, static: dict[str, Any], horizon: int, constraint: Any) -> float | None:
    """MI-OGD's bound at the noise its mutual-information budget calibrates (``learning_rate = nan``: tuned)."""
    del ep, static
    stddev = mechanisms.mutual_information_to_stddev(lp.mutual_information, lp.lipschitz, constraint.dim)
    eta = None if np.isnan(np.asarray(lp.learning_rate, np.float64)) else lp.learning_rate
    return float(theory.mi_ogd_regret_bound(horizon, constraint.dim, lp.lipschitz, constraint.radius, stddev, eta))


def _adac_ucb_bound(lp: Any, ep: Any, static: dict[str, Any], horizon: int, constraint: Any) -> float | None:
    """Theorem 5.6's bound for AdaC-UCB (``None`` unless ``beta > 3``)."""
    del static, constraint
    beta = float(np.asarray(lp.beta))
    if not beta > 3:  # Theorem 5.6 needs beta > 3
        return None
    return float(bandits.adac_ucb_regret_bound(np.asarray(ep.means), horizon, float(np.asarray(lp.rho)), beta))


def _adap_ucb_bound(lp: Any, ep: Any, static: dict[str, Any], horizon: int, constraint: Any) -> float | None:
    """Theorem 7 of Azize & Basu (NeurIPS 2022) for AdaP-UCB (``None`` unless ``alpha > 3``)."""
    del static, constraint
    alpha = float(np.asarray(lp.alpha))
    if not alpha > 3:
        return None
    return float(bandits.adap_ucb_regret_bound(np.asarray(ep.means), horizon, float(np.asarray(lp.epsilon)), alpha))


def _dp_ucb_bound(lp: Any, ep: Any, static: dict[str, Any], horizon: int, constraint: Any) -> float | None:
    """DP-UCB's derived bound (``None`` unless ``alpha > 2``)."""
    del constraint
    if not float(np.asarray(lp.alpha)) > 2:
        return None
    return float(bandits.dp_ucb_regret_bound(np.asarray(ep.means), horizon, lp, noise=static.get("noise")))


def _ldp_ucb_bound(lp: Any, ep: Any, static: dict[str, Any], horizon: int, constraint: Any) -> float | None:
    """LDP-UCB's derived bound (``None`` unless ``alpha > 2``)."""
    del static, constraint
    if not float(np.asarray(lp.alpha)) > 2:
        return None
    return float(bandits.ldp_ucb_regret_bound(np.asarray(ep.means), horizon, lp))


def _dp_se_bound(lp: Any, ep: Any, static: dict[str, Any], horizon: int, constraint: Any) -> float | None:
    """DP-SE's bound from its schedule (``dp_se_regret_bound``)."""
    del static, constraint
    beta = None if lp.beta is None else float(np.asarray(lp.beta))
    return float(bandits.dp_se_regret_bound(np.asarray(ep.means), horizon, float(np.asarray(lp.epsilon)), beta))


def _dp_ftrl_bound(lp: Any, ep: Any, static: dict[str, Any], horizon: int, constraint: Any) -> float | None:
    """DP-FTRL's bound with its mechanism's exact per-step variance (``regularization = nan``: the tuned λ)."""
    del ep
    return float(dp_ftrl_learner_bound(horizon, constraint, lp, static.get("noise"), static.get("mechanism")))


# --- the registry ---------------------------------------------------------------------------------------------

LEARNERS: dict[str, Component] = {
    "pftal": Component(oco.pftal, oco.PFTALParams, _pftal_bound),
    "regularized_pftal": Component(oco.regularized_pftal, oco.RegularizedPFTALParams, _regularized_pftal_bound),
    "private_experts": Component(oco.private_experts, oco.PrivateExpertsParams),
    "ftal": Component(oco.ftal, oco.FTALParams),
    "ogd": Component(oco.ogd, oco.OGDParams, _ogd_bound),
    "mi_ogd": Component(oco.mi_ogd, oco.MIOGDParams, _mi_ogd_bound),
    "private_bandit_ftal": Component(oco.private_bandit_ftal, oco.PrivateBanditFTALParams),
    "bandit_ftal": Component(oco.bandit_ftal, oco.BanditFTALParams),
    "fkm": Component(oco.fkm, oco.FKMParams),
    "mi_bandit_ogd": Component(oco.mi_bandit_ogd, oco.MIBanditOGDParams),
    "ucb": Component(bandits.ucb, bandits.UCBParams),
    "adac_ucb": Component(bandits.adac_ucb, bandits.AdaCUCBParams, _adac_ucb_bound),
    "gope": Component(bandits.gope, bandits.GOPEParams),
    "adac_gope": Component(bandits.adac_gope, bandits.AdaCGOPEParams),
    "rs_oful": Component(bandits.rs_oful, bandits.RSOFULParams),
    "adac_oful": Component(bandits.adac_oful, bandits.AdaCOFULParams),
    "dp_ftrl": Component(oco.dp_ftrl, oco.DPFTRLParams, _dp_ftrl_bound),
    "adap_ucb": Component(bandits.adap_ucb, bandits.AdaPUCBParams, _adap_ucb_bound),
    "adap_klucb": Component(bandits.adap_klucb, bandits.AdaPKLUCBParams),
    "dp_ucb": Component(bandits.dp_ucb, bandits.DPUCBParams, _dp_ucb_bound),
    "ldp_ucb": Component(bandits.ldp_ucb, bandits.LDPUCBParams, _ldp_ucb_bound),
    "dp_se": Component(bandits.dp_se, bandits.DPSEParams, _dp_se_bound),
    "adac_gope_var": Component(bandits.adac_gope_var, bandits.AdaCGOPEVarParams),
}

ENVS: dict[str, Component] = {
    "quadratic_stream": Component(envs.quadratic_stream, envs.QuadraticParams),
    "adaptive_quadratic": Component(envs.adaptive_quadratic, envs.AdaptiveParams),
    "experts_stream": Component(envs.experts_stream, envs.ExpertsParams),
    "classification_stream": Component(envs.classification_stream, envs.ClassificationParams),
    "bernoulli_bandit": Component(envs.bernoulli_bandit, envs.BernoulliParams),
    "linear_bandit": Component(envs.linear_bandit, envs.LinearBanditParams),
    "contextual_linear_bandit": Component(envs.contextual_linear_bandit, envs.ContextualBanditParams),
}

SETS: dict[str, Callable[..., Any]] = {
    "l2_ball": sets.l2_ball,
    "box": sets.box,
    "simplex": sets.simplex,
    "l1_ball": sets.l1_ball,
}


def _check_name(table: dict[str, Any], what: str, name: str, replace: bool) -> None:
    if not isinstance(name, str) or not name:
        raise ValueError(f"a {what} name must be a non-empty string, got {name!r}")
    if name in table and not replace:
        raise ValueError(f"{what} {name!r} is already registered (pass replace=True to replace it)")


def _component(what: str, name: str, factory: Callable[..., Any], params: type, bound: Bound | None) -> Component:
    if not callable(factory):
        raise ValueError(f"{what} {name!r}: factory must be callable, got {factory!r}")
    if not (isinstance(params, type) and hasattr(params, "_fields")):
        raise ValueError(f"{what} {name!r}: params must be a NamedTuple class, got {params!r}")
    if bound is not None and not callable(bound):
        raise ValueError(f"{what} {name!r}: bound must be callable or None, got {bound!r}")
    return Component(factory, params, bound)


def register_learner(
    name: str, factory: Callable[..., Any], params: type, bound: Bound | None = None, replace: bool = False
) -> Component:
    """Let study files name a learner: ``[learner] name = <name>``.

    Args:
      name: the name in the study file.
      factory: the learner's factory (its keyword arguments are the table's static keys).
      params: its params NamedTuple class (the fields of ``[learner.params]``).
      bound: its regret bound (see ``Bound``), written beside the measured regret; or ``None``.
      replace: replace a learner already registered under ``name``.

    Returns:
      The registered ``Component``.

    Raises:
      ValueError: ``name`` is taken (and ``replace`` is false), or an argument has the wrong kind.
    """
    _check_name(LEARNERS, "learner", name, replace)
    LEARNERS[name] = _component("learner", name, factory, params, bound)
    return LEARNERS[name]


def register_env(name: str, factory: Callable[..., Any], params: type, replace: bool = False) -> Component:
    """Let study files name an environment: ``[env] name = <name>``.

    Args:
      name: the name in the study file.
      factory: the environment's factory.
      params: its params NamedTuple class (the fields of ``[env.params]``).
      replace: replace an environment already registered under ``name``.

    Returns:
      The registered ``Component``.

    Raises:
      ValueError: ``name`` is taken (and ``replace`` is false), or an argument has the wrong kind.
    """
    _check_name(ENVS, "env", name, replace)
    ENVS[name] = _component("env", name, factory, params, None)
    return ENVS[name]


def register_set(name: str, factory: Callable[..., Any], replace: bool = False) -> Callable[..., Any]:
    """Let study files name a constraint set: ``[set] kind = <name>`` (its keyword arguments beside it).

    Args:
      name: the kind in the study file.
      factory: builds the set from the table's keyword arguments.
      replace: replace a set already registered under ``name``.

    Returns:
      ``factory``.

    Raises:
      ValueError: ``name`` is taken (and ``replace`` is false), or ``factory`` is not callable.
    """
    _check_name(SETS, "set", name, replace)
    if not callable(factory):
        raise ValueError(f"set {name!r}: factory must be callable, got {factory!r}")
    SETS[name] = factory
    return factory
