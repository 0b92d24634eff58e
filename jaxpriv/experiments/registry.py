"""The registry of components a study file may name: learners, environments, constraint sets and mechanisms.

A study file's ``[learner] name = "pftal"`` (or a ``[[learners]]`` entry's) is looked up in
``LEARNERS``, ``[env] name`` in ``ENVS``, ``[set] kind`` in ``SETS`` and a learner's
``mechanism = "honaker_tree"`` (or ``mechanism = {name = "blt", buffers = 4}``) in ``MECHANISMS``
(``jaxpriv.experiments.study_file``). A learner may carry its regret bound, which the study
runner writes beside the measured regret, and, when it takes a prefix-sum mechanism, the
dimension that mechanism must be built for (``mechanism_dim``; the file supplies the horizon
and ``neighbouring = "replace"``, the relation every learner's guarantee is stated under).

Every learner family of the library is registered: the full-information and bandit-feedback
convex learners (PFTAL and its regularised / experts / bandit versions, FTAL, OGD, MI-OGD,
DP-FTRL, FKM, MI-bandit-OGD, online Frank–Wolfe, Garber–Hazan), the window-private learners
(WDP-COCOP, WDP-COCOL), and the stochastic, linear and contextual bandit policies.

The tables are read-only views: a component enters them only through one call of
``register_learner``, ``register_env``, ``register_set`` or ``register_mechanism``, which checks
it first (the params class, when not given, is the built component's own ``Spec.params``); a
name registered twice is refused unless ``replace=True``::

    from jaxpriv.experiments import registry

    registry.register_learner("my_baseline", my_baseline)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, NamedTuple

import numpy as np

from jaxpriv import bandits, envs, mechanisms, oco, sets, theory
from jaxpriv.oco.dp_ftrl import dp_ftrl_learner_bound

__all__ = [
    "ENVS",
    "LEARNERS",
    "MECHANISMS",
    "SETS",
    "Bound",
    "Component",
    "register_env",
    "register_learner",
    "register_mechanism",
    "register_set",
]

#: A learner's regret bound at one grid point:
#: ``(learner params, env params, the learner's static kwargs, horizon, constraint set) -> float or None``.
Bound = Callable[[Any, Any, dict[str, Any], int, Any], float | None]

#: The dimension a learner's prefix-sum mechanism is built for: ``(the learner's static kwargs, constraint set) -> d``.
MechanismDim = Callable[[dict[str, Any], Any], int]


class Component(NamedTuple):
    """A factory a study file may name, its params class and (optionally) its regret bound.

    Attributes:
      factory: builds the learner or environment from the static keyword arguments in the file
        (``horizon`` and ``constraint`` are supplied from the file's ``horizon`` and ``[set]``).
      params: the params NamedTuple class whose fields ``[learner.params]`` / ``[env.params]`` set; ``None``:
        the built component's ``Spec.params`` (a component registered with one call, ``register_learner(name,
        factory)``).
      bound: the regret bound (see ``Bound``) or ``None``.
      mechanism_dim: for a learner taking a prefix-sum mechanism (a ``mechanism`` argument), the
        dimension to build it for (see ``MechanismDim``); ``None``: the learner takes none.
    """

    factory: Callable[..., Any]
    params: type | None
    bound: Bound | None = None
    mechanism_dim: MechanismDim | None = None


# --- the regret bounds of the registered learners -----------------------------------------------------------


def _pftal_bound(lp: Any, ep: Any, static: dict[str, Any], horizon: int, constraint: Any) -> float | None:
    """Theorem 4's bound for PFTAL with the Gamma tree (``None`` for another noise family or mechanism)."""
    del ep
    if static.get("noise") not in (None, "gamma") or static.get("mechanism") is not None:
        return None
    return float(
        theory.pftal_gamma_regret_bound(
            horizon, constraint.dim, lp.lipschitz, lp.strong_convexity, constraint.radius, lp.epsilon
        )
    )


def _regularized_pftal_bound(lp: Any, ep: Any, static: dict[str, Any], horizon: int, constraint: Any) -> float | None:
    """The regularized PFTAL bound at its budget (ε, or ρ for the Gaussian tree); ``H = nan`` is the tuned one.

    ``None`` with another prefix-sum mechanism than the paper's tree.
    """
    del ep
    if static.get("mechanism") is not None:
        return None
    noise = static.get("noise") or "gamma"
    budget = getattr(lp, mechanisms.noise_family(noise).budget)
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
    return float(
        bandits.dp_ucb_regret_bound(
            np.asarray(ep.means), horizon, lp, noise=static.get("noise"), mechanism=static.get("mechanism")
        )
    )


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


def _anytime_lazy_ucb_bound(lp: Any, ep: Any, static: dict[str, Any], horizon: int, constraint: Any) -> float | None:
    """Anytime-Lazy-UCB's bound derived for its index (``theory.anytime_lazy_ucb_regret_bound``)."""
    del static, constraint
    return float(theory.anytime_lazy_ucb_regret_bound(np.asarray(ep.means), horizon, float(np.asarray(lp.epsilon))))


def _private_linucb_bound(lp: Any, ep: Any, static: dict[str, Any], horizon: int, constraint: Any) -> float | None:
    """Shariff & Sheffet's Theorem 5 at the policy's constants, w.p. 1 - α: ``theory.private_linucb_regret_bound``,
    or ``theory.private_linucb_wishart_regret_bound`` for ``noise = "wishart"`` (the fields follow the params class).
    """
    del ep, constraint
    values = [float(np.asarray(v)) for v in lp]
    wishart = static.get("noise", "gaussian") == "wishart"
    bound = theory.private_linucb_wishart_regret_bound if wishart else theory.private_linucb_regret_bound
    return float(bound(horizon, int(static["dim"]), *values))


def _pocp_bound(lp: Any, ep: Any, static: dict[str, Any], horizon: int, constraint: Any) -> float | None:
    """POCP's (IGD instance) expected-regret bound at its (ε, δ) (``theory.pocp_regret_bound``)."""
    del ep, static
    return float(
        theory.pocp_regret_bound(
            horizon, constraint.dim, lp.lipschitz, lp.strong_convexity, constraint.diameter, lp.epsilon, lp.delta
        )
    )


def _dp_ftrl_bound(lp: Any, ep: Any, static: dict[str, Any], horizon: int, constraint: Any) -> float | None:
    """DP-FTRL's bound with its mechanism's exact per-step variance (``regularization = nan``: the tuned λ)."""
    del ep
    return float(dp_ftrl_learner_bound(horizon, constraint, lp, static.get("noise"), static.get("mechanism")))


def _sums_gope_bound(laplace: bool) -> Bound:
    """The elimination bound of a reconstruction (``theory.sums_gope_regret_bound``) at its noise scale."""
    placement = "sums_laplace" if laplace else "sums_analytic"

    def bound(lp: Any, ep: Any, static: dict[str, Any], horizon: int, constraint: Any) -> float | None:
        del ep, constraint
        k, d = int(static["num_actions"]), int(static["dim"])
        support = None if static.get("small_support", True) else k
        scale = float(bandits._gope_core.sum_noise_scale(lp, placement))
        return float(theory.sums_gope_regret_bound(horizon, k, d, float(np.asarray(lp.delta)), scale, laplace, support))

    return bound


def _linpriv_bound(lp: Any, ep: Any, static: dict[str, Any], horizon: int, constraint: Any) -> float | None:
    """The LinPriv reconstruction's rectified bound (``theory.linpriv_regret_bound``), w.p. 1 - 2δ."""
    del ep, constraint
    values = [float(np.asarray(v)) for v in (lp.epsilon, lp.delta, lp.regularization, lp.theta_bound, lp.noise_bound)]
    return float(theory.linpriv_regret_bound(horizon, int(static["dim"]), *values))


# --- the dimension of a learner's prefix-sum mechanism ------------------------------------------------------


def _set_dim(static: dict[str, Any], constraint: Any) -> int:
    """The constraint set's dimension: the gradient sums of the convex learners."""
    del static
    return int(constraint.dim)


def _experts_dim(static: dict[str, Any], constraint: Any) -> int:
    """The number of experts: the cost-vector sums of ``private_experts``."""
    del constraint
    return int(static["num_experts"])


def _arm_dim(static: dict[str, Any], constraint: Any) -> int:
    """One: DP-UCB's per-arm reward sums."""
    del static, constraint
    return 1


# --- the registry ---------------------------------------------------------------------------------------------

_LEARNERS: dict[str, Component] = {
    "pftal": Component(oco.pftal, oco.PFTALParams, _pftal_bound, _set_dim),
    "regularized_pftal": Component(
        oco.regularized_pftal, oco.RegularizedPFTALParams, _regularized_pftal_bound, _set_dim
    ),
    "private_experts": Component(oco.private_experts, oco.PrivateExpertsParams, None, _experts_dim),
    "ftal": Component(oco.ftal, oco.FTALParams),
    "ogd": Component(oco.ogd, oco.OGDParams, _ogd_bound),
    "mi_ogd": Component(oco.mi_ogd, oco.MIOGDParams, _mi_ogd_bound),
    "private_bandit_ftal": Component(oco.private_bandit_ftal, oco.PrivateBanditFTALParams, None, _set_dim),
    "bandit_ftal": Component(oco.bandit_ftal, oco.BanditFTALParams),
    "fkm": Component(oco.fkm, oco.FKMParams),
    "mi_bandit_ogd": Component(oco.mi_bandit_ogd, oco.MIBanditOGDParams),
    "ucb": Component(bandits.ucb, bandits.UCBParams),
    "adac_ucb": Component(bandits.adac_ucb, bandits.AdaCUCBParams, _adac_ucb_bound),
    "gope": Component(bandits.gope, bandits.GOPEParams),
    "adac_gope": Component(bandits.adac_gope, bandits.AdaCGOPEParams),
    "rs_oful": Component(bandits.rs_oful, bandits.RSOFULParams),
    "adac_oful": Component(bandits.adac_oful, bandits.AdaCOFULParams),
    # params from the built learner's Spec: PrivateLinUCBParams, or PrivateLinUCBWishartParams with noise = "wishart"
    "private_linucb": Component(bandits.private_linucb, None, _private_linucb_bound),
    "dp_ftrl": Component(oco.dp_ftrl, oco.DPFTRLParams, _dp_ftrl_bound, _set_dim),
    "adap_ucb": Component(bandits.adap_ucb, bandits.AdaPUCBParams, _adap_ucb_bound),
    "adap_klucb": Component(bandits.adap_klucb, bandits.AdaPKLUCBParams),
    "dp_ucb": Component(bandits.dp_ucb, bandits.DPUCBParams, _dp_ucb_bound, _arm_dim),
    "ldp_ucb": Component(bandits.ldp_ucb, bandits.LDPUCBParams, _ldp_ucb_bound),
    "dp_se": Component(bandits.dp_se, bandits.DPSEParams, _dp_se_bound),
    "adac_gope_var": Component(bandits.adac_gope_var, bandits.AdaCGOPEParams),
    "wdp_cocop": Component(oco.wdp_cocop, oco.WDPParams),
    "wdp_cocol": Component(oco.wdp_cocol, oco.WDPParams),
    "online_frank_wolfe": Component(oco.online_frank_wolfe, oco.OFWParams),
    "garber_hazan": Component(oco.garber_hazan, oco.GarberHazanParams),
    "pocp": Component(oco.pocp, oco.POCPParams, _pocp_bound),
    # Hu & Hegde (UAI 2022) and Hu, Huang & Mehta (2021): DP-TS's and Lazy-DP-TS's theorems are stated in O(.) only.
    "dp_ts": Component(bandits.dp_ts, bandits.DPTSParams),
    "lazy_dp_ts": Component(bandits.lazy_dp_ts, bandits.LazyDPTSParams),
    "anytime_lazy_ucb": Component(bandits.anytime_lazy_ucb, bandits.AnytimeLazyUCBParams, _anytime_lazy_ucb_bound),
    # Reconstructions (docs/algorithms/baselines.md): the papers were out of reach, built from the seeds' descriptions.
    "hanna_gope": Component(bandits.hanna_gope, bandits.HannaGOPEParams, _sums_gope_bound(True)),
    "li_zhou_ji_gope": Component(bandits.li_zhou_ji_gope, bandits.LiZhouJiGOPEParams, _sums_gope_bound(False)),
    "linpriv": Component(bandits.linpriv, bandits.LinPrivParams, _linpriv_bound),
    # Smith & Thakurta's Table 1 states DNPR10's O(p sqrt(T) / eps) in O(.) only: no numeric bound registered.
    "dnpr_experts": Component(oco.dnpr_experts, oco.DNPRExpertsParams),
    # Smith & Thakurta state PQFTL's regret as poly(log T) only: no numeric bound registered.
    "pqftl": Component(oco.pqftl, oco.PQFTLParams),
}

_ENVS: dict[str, Component] = {
    "quadratic_stream": Component(envs.quadratic_stream, envs.QuadraticParams),
    "adaptive_quadratic": Component(envs.adaptive_quadratic, envs.AdaptiveParams),
    "experts_stream": Component(envs.experts_stream, envs.ExpertsParams),
    "classification_stream": Component(envs.classification_stream, envs.ClassificationParams),
    "bernoulli_bandit": Component(envs.bernoulli_bandit, envs.BernoulliParams),
    "linear_bandit": Component(envs.linear_bandit, envs.LinearBanditParams),
    "contextual_linear_bandit": Component(envs.contextual_linear_bandit, envs.ContextualBanditParams),
    "regression_stream": Component(envs.regression_stream, envs.RegressionParams),
}

_SETS: dict[str, Callable[..., Any]] = {
    "l2_ball": sets.l2_ball,
    "box": sets.box,
    "simplex": sets.simplex,
    "l1_ball": sets.l1_ball,
}

#: The prefix-sum mechanisms a learner's ``mechanism`` may name: built as ``factory(horizon, dim, **table)``
#: with the file's horizon, the learner's ``mechanism_dim`` and ``neighbouring = "replace"`` unless the table
#: says otherwise (the learners refuse any other relation). The window tree is not among them: the window
#: learners (``wdp_cocop``, ``wdp_cocol``) build their own from ``window``, and the full-stream learners'
#: params carry no ``delta`` for it.
_MECHANISMS: dict[str, Callable[..., Any]] = {
    "binary_tree": mechanisms.binary_tree,
    "honaker_tree": mechanisms.honaker_tree,
    "sqrt_factorization": mechanisms.sqrt_factorization,
    "blt": mechanisms.blt,
}


# The tables study files read: read-only views (MappingProxyType). A component enters them only through
# ``register_learner`` / ``register_env`` / ``register_set`` / ``register_mechanism``, which check it first.
LEARNERS: Mapping[str, Component] = MappingProxyType(_LEARNERS)
ENVS: Mapping[str, Component] = MappingProxyType(_ENVS)
SETS: Mapping[str, Callable[..., Any]] = MappingProxyType(_SETS)
MECHANISMS: Mapping[str, Callable[..., Any]] = MappingProxyType(_MECHANISMS)


def _check_name(table: Mapping[str, Any], what: str, name: str, replace: bool) -> None:
    if not isinstance(name, str) or not name:
        raise ValueError(f"a {what} name must be a non-empty string, got {name!r}")
    if name in table and not replace:
        raise ValueError(f"{what} {name!r} is already registered (pass replace=True to replace it)")


def _component(
    what: str, name: str, factory: Callable[..., Any], params: type | None, bound: Bound | None,
    mechanism_dim: MechanismDim | None = None,
) -> Component:  # fmt: skip
    if not callable(factory):
        raise ValueError(f"{what} {name!r}: factory must be callable, got {factory!r}")
    if params is not None and not (isinstance(params, type) and hasattr(params, "_fields")):
        raise ValueError(f"{what} {name!r}: params must be a NamedTuple class or None (its spec's), got {params!r}")
    if bound is not None and not callable(bound):
        raise ValueError(f"{what} {name!r}: bound must be callable or None, got {bound!r}")
    if mechanism_dim is not None and not callable(mechanism_dim):
        raise ValueError(f"{what} {name!r}: mechanism_dim must be callable or None, got {mechanism_dim!r}")
    return Component(factory, params, bound, mechanism_dim)


def register_learner(
    name: str,
    factory: Callable[..., Any],
    params: type | None = None,
    bound: Bound | None = None,
    replace: bool = False,
    mechanism_dim: MechanismDim | None = None,
) -> Component:
    """Let study files name a learner: ``[learner] name = <name>`` (or in a ``[[learners]]`` entry).

    Args:
      name: the name in the study file.
      factory: the learner's factory (its keyword arguments are the table's static keys).
      params: its params NamedTuple class (the fields of ``[learner.params]``); ``None`` (default): the class
        the built learner's own ``Spec`` names (``jaxpriv.Spec.params``), read when a study file builds it.
      bound: its regret bound (see ``Bound``), written beside the measured regret; or ``None``.
      replace: replace a learner already registered under ``name``.
      mechanism_dim: for a factory with a ``mechanism`` argument, the dimension of the prefix-sum
        mechanism a file's ``mechanism = ...`` builds for it (see ``MechanismDim``); ``None``: the
        file may not name one.

    Returns:
      The registered ``Component``.

    Raises:
      ValueError: ``name`` is taken (and ``replace`` is false), or an argument has the wrong kind.
    """
    _check_name(_LEARNERS, "learner", name, replace)
    _LEARNERS[name] = _component("learner", name, factory, params, bound, mechanism_dim)
    return _LEARNERS[name]


def register_env(
    name: str, factory: Callable[..., Any], params: type | None = None, replace: bool = False
) -> Component:
    """Let study files name an environment: ``[env] name = <name>``.

    Args:
      name: the name in the study file.
      factory: the environment's factory.
      params: its params NamedTuple class (the fields of ``[env.params]``); ``None`` (default): its ``Spec``'s.
      replace: replace an environment already registered under ``name``.

    Returns:
      The registered ``Component``.

    Raises:
      ValueError: ``name`` is taken (and ``replace`` is false), or an argument has the wrong kind.
    """
    _check_name(_ENVS, "env", name, replace)
    _ENVS[name] = _component("env", name, factory, params, None)
    return _ENVS[name]


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
    _check_name(_SETS, "set", name, replace)
    if not callable(factory):
        raise ValueError(f"set {name!r}: factory must be callable, got {factory!r}")
    _SETS[name] = factory
    return factory


def register_mechanism(name: str, factory: Callable[..., Any], replace: bool = False) -> Callable[..., Any]:
    """Let a learner in a study file name a prefix-sum mechanism: ``mechanism = <name>``.

    Args:
      name: the name in the study file.
      factory: ``factory(horizon, dim, **kwargs)`` -> a prefix-sum ``Mechanism`` (the table's other keys
        are its keyword arguments).
      replace: replace a mechanism already registered under ``name``.

    Returns:
      ``factory``.

    Raises:
      ValueError: ``name`` is taken (and ``replace`` is false), or ``factory`` is not callable.
    """
    _check_name(_MECHANISMS, "mechanism", name, replace)
    if not callable(factory):
        raise ValueError(f"mechanism {name!r}: factory must be callable, got {factory!r}")
    _MECHANISMS[name] = factory
    return factory
