"""Per-learner drivers: PFTAL (the tree's exact statistic), any learner on two feedback tables, the OCO learners."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import jax
import numpy as np

from jaxpriv._base import Learner, Mechanism, spec_of
from jaxpriv.audit._bounds import KINDS, NOISE_FREE, Audit, budget_claim, finish, noise_free_params, with_noise_free
from jaxpriv.audit._runs import canary_ends, check_runs, learner_runs, learner_states
from jaxpriv.audit._scores import heldout_fisher_scores, node_scores, path_nodes
from jaxpriv.mechanisms._accounting import tree_depth
from jaxpriv.mechanisms._noise import NoiseFamily, noise_family
from jaxpriv.mechanisms._variance import describe
from jaxpriv.oco.dp_ftrl import dp_ftrl
from jaxpriv.oco.pftal import pftal
from jaxpriv.oco.private_bandit_ftal import PrivateBanditFTALParams, private_bandit_ftal
from jaxpriv.oco.private_experts import PrivateExpertsParams, private_experts
from jaxpriv.oco.regularized_pftal import RegularizedPFTALParams, regularized_pftal
from jaxpriv.oco.wdp_cocol import wdp_cocol
from jaxpriv.oco.wdp_cocop import WDPParams, wdp_cocop
from jaxpriv.sets import l2_ball, simplex


def audit_pftal(
    params: Any,
    key: Any,
    runs: int = 20000,
    *,
    horizon: int = 8,
    noise: NoiseFamily | str = "gamma",
    mechanism: Mechanism | None = None,
    position: int = 1,
    alpha: float = 0.05,
    canary: float | None = None,
    beyond_bound: bool = False,
    name: str | None = None,
) -> Audit:
    """Audit PFTAL (``jaxpriv.oco.pftal``) in one dimension, replace-one on one round's loss.

    Neighbouring loss sequences (the paper's replace-one relation): an adaptive
    adversary reveals gradient 0 at every round except ``position``, where it
    reveals ``-L`` (sequence A) or ``+L`` (sequence B), ``L = params.lipschitz``:
    e.g. ``f_t(w) = (H/2)(w - w_t)²`` and, at ``position``, ``f(w) = ∓L w + (H/2)(w - w_t)²``
    (gradient ``∓L`` at the played point): the two losses differ by the full
    replace-one sensitivity ``2L``. The constraint set is the ball of radius
    ``1e4``, so the projection stays inactive and the points played reveal the
    tree's releases exactly: ``v_t = H (Σ_{s<=t} w_s - t w_{t+1})``. The statistic
    is then the tree's path-node log-likelihood ratio (``audit_tree``).

    Args:
      params: ``PFTALParams``; the claim is its ε (``"gamma"``, ``"laplace"``) or ρ (``"gaussian"``).
      key: PRNG key or integer seed.
      runs: runs per side.
      horizon: ``T`` (a power of two: every level of the tree closes).
      noise: the tree's family, or ``mechanism``: a ``binary_tree(T, 1, ..., "replace")``.
      position: the replaced round.
      alpha: ``1 - confidence``.
      canary: the size of the replaced gradient, ``-c`` vs ``+c`` (default ``c = L``); ``c > L``
        with ``beyond_bound=True`` audits the clipping of the gradients to ``L`` (a correct
        learner shows the loss of ``c = L``; the statistic is the exact one for ``±c`` unclipped).

    Raises:
      ValueError: as ``audit_tree``; a ``mechanism`` that is not a binary tree.
    """
    runs = check_runs(runs)
    learner = pftal(horizon, l2_ball(1, 1e4), None if mechanism is not None else noise, mechanism)
    if mechanism is not None:
        info = describe(mechanism)
        if info.structure != "dyadic" or info.scope != "event":
            raise ValueError(f"audit_pftal's statistic needs a binary_tree mechanism, got {info.name!r}")
        noise = info.noise
    learner.check(params)
    lip, low, high, tables = _gradient_canary(params, horizon, position, canary, beyond_bound)
    w = learner_runs(learner, params, key, runs, tables).astype(np.float64)
    h = float(np.asarray(params.strong_convexity))
    t = np.arange(1, horizon + 1)[:, None]
    releases = h * (np.cumsum(w[:, :, :-1], axis=2) - t * w[:, :, 1:])  # v_t for t = 1..T
    # the tree saw gradients -c / +c; its node LLR is that of the tree with canary ends (-c, c)
    return _tree_path_audit("pftal", releases, params, noise, lip, low, high, int(position), name, alpha, runs)


def _gradient_canary(
    params: Any, horizon: int, position: int, canary: float | None, beyond_bound: bool
) -> tuple[float, float, float, np.ndarray]:
    """``(L, low, high, tables)`` of a one-dimensional replace-one audit on round ``position``'s gradient.

    ``tables`` is ``[2, T, 1]``: gradient 0 at every round but ``position``, where it is ``low`` (A) or
    ``high`` (B) (``canary_ends`` of the replace-one relation at ``L = params.lipschitz``).
    """
    if not 1 <= int(position) <= horizon:
        raise ValueError(f"position must be in [1, {horizon}], got {position!r}")
    lip = float(np.asarray(params.lipschitz))
    low, high = canary_ends("replace", lip, canary, beyond_bound)
    tables = np.zeros((2, horizon, 1), np.float32)
    tables[0, position - 1, 0], tables[1, position - 1, 0] = low, high
    return lip, low, high, tables


def _tree_path_audit(
    learner: str,
    releases: np.ndarray,
    params: Any,
    noise: NoiseFamily | str,
    lip: float,
    low: float,
    high: float,
    position: int,
    name: str | None,
    alpha: float,
    runs: int,
) -> Audit:
    """The audit of a tree learner from its releases ``[2, runs, T, 1]``: the tree's path-node likelihood ratio."""
    horizon = releases.shape[-2]
    nodes = path_nodes(releases, position, tree_depth(horizon), horizon)
    scores = node_scores(nodes, noise, low, high)
    kind, claim = budget_claim(params, noise)
    label = f"{learner}[{noise}{', gradient ' + format(high / lip, 'g') + 'L' if high > lip * (1 + 1e-6) else ''}]"
    return finish(name or label, kind, claim, scores, alpha, runs)


def audit_dp_ftrl(
    params: Any,
    key: Any,
    runs: int = 20000,
    *,
    horizon: int = 8,
    noise: NoiseFamily | str = "gamma",
    learner: Learner | None = None,
    position: int = 1,
    alpha: float = 0.05,
    canary: float | None = None,
    beyond_bound: bool = False,
    name: str | None = None,
) -> Audit:
    """Audit DP-FTRL (``jaxpriv.oco.dp_ftrl``) in one dimension, replace-one on one round's loss, as ``audit_pftal``.

    The adversary reveals gradient 0 at every round except ``position``, ``-L`` (A) vs ``+L`` (B),
    ``L = params.lipschitz`` (linear losses: the gradient is the same at every point): the replace-one
    sensitivity ``2L`` the tree is calibrated to. On the ball of radius ``1e4`` the projection stays
    inactive and the points reveal the releases: ``w_{t+1} = w_1 - ṽ_t/λ``, ``w_1 = 0``, so
    ``ṽ_t = -λ w_{t+1}`` (``λ`` read from ``init``: the given one, or the tuned one). Statistic: the
    tree's exact path-node log-likelihood ratio (``audit_tree``'s). The claim is ``params.epsilon``
    (``"gamma"``, ``"laplace"``) or ``params.rho`` (``"gaussian"``).

    Args:
      params: ``DPFTRLParams``; give ``regularization`` (e.g. 1): the tuned ``λ`` for the ball of radius
        ``1e4`` is so small that the points reach its boundary (a ``ValueError``).
      key: PRNG key or integer seed.
      runs: runs per side.
      horizon: ``T`` (a power of two: every level closes).
      noise: the tree's family (the default learner ``dp_ftrl(T, l2_ball(1, 1e4), noise)``); a
        ``learner`` given instead must be a DP-FTRL on a 1-d set the projection leaves alone.
      position: the replaced round.
      alpha: ``1 - confidence``.
      canary: the replaced gradient's size ``c`` (default ``L``); ``c > L`` with ``beyond_bound`` audits the clip.

    Raises:
      ValueError: ``position`` outside ``[1, T]``; a bad canary; too few runs; bad params.
    """
    runs = check_runs(runs)
    learner = dp_ftrl(horizon, l2_ball(1, 1e4), noise) if learner is None else learner
    learner.check(params)
    lip, low, high, tables = _gradient_canary(params, horizon, position, canary, beyond_bound)
    lam = float(learner.init(jax.random.key(0), params).regularization)
    w = learner_runs(learner, params, key, runs, tables).astype(np.float64)
    if np.any(np.abs(w) >= 1e4 * (1 - 1e-6)):  # a projection at the default ball's boundary: the points hide ṽ_t
        raise ValueError("the points reached the ball of radius 1e4 (the projection hides the releases): raise λ")
    releases = -lam * w[:, :, 1:]  # ṽ_t for t = 1..T (w_1 = 0)
    return _tree_path_audit("dp_ftrl", releases, params, noise, lip, low, high, int(position), name, alpha, runs)


def audit_learner(
    learner: Learner,
    params: Any,
    key: Any,
    tables: Any,
    runs: int = 20000,
    *,
    kind: str,
    claim: float,
    delta: float = 0.0,
    points: int | None = None,
    interact: int | None = None,
    alpha: float = 0.05,
    name: str = "learner",
    noiseless: bool | Learner = True,
) -> Audit:
    """Audit a full-information (or loss-value) learner on two neighbouring feedback tables.

    ``tables`` is ``[2, T, ...]``: the feedback revealed at round ``t`` is ``tables[side, t-1]``
    (a gradient, a cost vector, or a loss value; an adaptive adversary can reveal it whatever
    the learner plays, e.g. the gradient of a linear loss plus a quadratic centred at the
    played point). The tables must differ in one round only: that is the replace-one (or
    add/remove) relation the claim is about, and the caller names the adversarial choice.
    All ``2 × runs`` runs are one compiled, vmapped batch (``learner_runs``). Statistic:
    ``heldout_fisher_scores`` on the points played ``w_1..w_{points}`` (default all ``T + 1``:
    the last one is the point the learner would play next), optionally with the products of
    every coordinate with the first coordinate of the point played at round ``interact``
    (for one-point bandit estimates ``(p/β) f(ŵ_t) u_t``, whose sign is the direction ``u_t``
    visible in that point).

    Args:
      learner: the learner; ``params`` its params.
      key: PRNG key or integer seed.
      tables: ``[2, T, ...]`` feedback, differing in one round.
      runs: runs per side.
      kind: ``"epsilon"`` or ``"rho"`` (a Gaussian mechanism's ρ-zCDP, via μ-GDP).
      claim: the claimed ε or ρ; ``delta`` the δ of an ``(ε, δ)`` claim.
      points: how many of the points the claim covers (window privacy: fewer).
      interact: the 1-based round whose point multiplies the features (see above).
      alpha: ``1 - confidence``.
      name: the table's name.
      noiseless: the power check (``Audit.noiseless``): ``True`` (default) runs the same audit on the learner at
        a budget ``NOISE_FREE`` times the claim (``params``' ``rho`` or ``epsilon`` field, by ``kind``; skipped when
        it has none); a ``Learner``: your copy without noise, at ``params``; ``False``: none. When the copy
        without noise is not refuted, the audit has no power: a ``UserWarning`` and ``Audit.warning`` say so.

    Returns:
      The ``Audit``: the claim, the lower bound, its ``ceiling`` and ``noiseless`` results (``Audit.power``).

    Raises:
      ValueError: ``kind`` unknown; tables that are not two of the same shape, or that differ
        in no round or in more than one; ``points`` or ``interact`` out of range; too few runs.
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    runs = check_runs(runs)
    tab = np.asarray(tables, np.float32)
    if tab.ndim < 2 or tab.shape[0] != 2:
        raise ValueError(f"tables must be [2, T, ...] (side A, side B), got shape {tab.shape}")
    horizon = tab.shape[1]
    differs = np.any((tab[0] != tab[1]).reshape(horizon, -1), axis=1)
    if int(differs.sum()) != 1:
        raise ValueError(f"neighbouring tables must differ in exactly one round, they differ in {int(differs.sum())}")
    points = horizon + 1 if points is None else int(points)
    if not 1 <= points <= horizon + 1:
        raise ValueError(f"points must be in [1, {horizon + 1}], got {points!r}")
    if learner.check is not None and noiseless is not _THE_COPY:
        learner.check(params)
    rerun, copy = _noise_free(noiseless, learner, params, kind)
    w = learner_runs(learner, params, key, runs, tab).astype(np.float64)
    w = w.reshape(2, runs, horizon + 1, -1)
    feats = w[:, :, :points].reshape(2, runs, -1)
    if interact is not None:
        if not 1 <= int(interact) <= points:
            raise ValueError(f"interact must be in [1, points={points}], got {interact!r}")
        feats = np.concatenate([feats, feats * w[:, :, int(interact) - 1, :1]], axis=-1)
    result = finish(name, kind, float(claim), heldout_fisher_scores(feats), alpha, runs, delta)
    same = {"kind": kind, "claim": claim, "delta": delta, "points": points, "interact": interact, "alpha": alpha,
            "name": name, "noiseless": _THE_COPY}  # fmt: skip
    if rerun is None:
        return result
    return with_noise_free(result, lambda: audit_learner(rerun[0], rerun[1], key, tab, runs, **same), copy)


#: ``noiseless=`` of the power check's own rerun: no further copy, and the learner's budget check is not run (the
#: copy measures power and claims no privacy; a budget ``NOISE_FREE`` times the claim may be refused by it, e.g. the
#: samplers' δ floor). The rerun keeps the same ``Learner`` object, so its compiled batch is reused.
_THE_COPY = cast(bool, object())


def _noise_free(noiseless: bool | Learner, learner: Learner, params: Any, kind: str) -> tuple[Any, str]:
    """``((learner, params) of the copy without noise, its description)``, or ``(None, "")`` for none."""
    if isinstance(noiseless, Learner):
        return (noiseless, params), "the copy without noise given (noiseless=)"
    if noiseless is not True:
        if noiseless is not False and noiseless is not _THE_COPY:
            raise ValueError(f"noiseless must be True, False or a Learner (a copy without noise), got {noiseless!r}")
        return None, ""
    free = noise_free_params(params, kind)
    if free is None:
        return None, ""
    field = "rho" if kind == "rho" else "epsilon"
    return (learner, free), f"the same learner at {field} x {NOISE_FREE:g} (a copy without noise)"


def audit_release(
    learner: Learner,
    params: Any,
    key: Any,
    runs: int = 20000,
    *,
    statistic: str | Callable[[Any], Any],
    tables: Any = None,
    horizon: int = 8,
    canary: float = 1.0,
    alpha: float = 0.05,
    name: str | None = None,
    noiseless: bool | Learner = True,
) -> Audit:
    """Audit any learner on the statistic its proof releases, read from its state after the last round.

    A private learner's proof usually privatises one statistic (a noisy sum, a noisy mean, a noisy gradient) and
    every action is post-processing of it; the actions can hide it (an argmax of two noisy means barely moves
    with one reward), so ``audit_learner`` on the actions may have no power where this audit has it.
    Neighbours: ``tables`` (``[2, T, ...]``, differing in one round); default, for a bandit policy with ``K`` arms
    (``Spec.num_arms``): every reward 0 but round 1's reward of arm 0, 0 (A) against ``canary`` (B), ``T =
    horizon`` rounds (the policy must pull arm 0 at round 1 for the canary to enter; give ``tables`` otherwise).
    The feedback at ``t`` is ``tables[side, t-1, a_t]`` for a bandit policy, ``tables[side, t-1]`` otherwise (a
    gradient, a cost vector). Statistic: ``statistic`` after round ``T``, a state field's name or a traceable
    function of the state; one number is the score itself (both tails are tried), a vector is scored by the
    held-out Fisher direction (``heldout_fisher_scores``: the exact likelihood ratio for a Gaussian release). The
    claim is ``params.rho`` (ρ-zCDP of a Gaussian mechanism, via μ-GDP) if set, else ``params.epsilon``.

    Args:
      learner: the learner (yours or the library's); ``params`` its params.
      key: PRNG key or integer seed.
      runs: runs per side.
      statistic: the released statistic: a field of the learner's state (``"noisy"``), or ``state -> array``.
      tables: the two neighbouring feedback tables (default: the bandit canary above).
      horizon: ``T`` of the default tables.
      canary: the differing reward of the default tables.
      alpha: ``1 - confidence``.
      name: the table's name (default ``<Spec.name>[release]``).
      noiseless: the power check (``audit_learner``'s): ``True`` runs the learner at a budget ``NOISE_FREE``
        times the claim, a ``Learner`` is your copy without noise, ``False`` none.

    Returns:
      The ``Audit`` (its ``ceiling``, ``noiseless`` and ``power``; a ``UserWarning`` when it has no power).

    Raises:
      ValueError: no budget field in ``params``; default tables for a learner without ``Spec.num_arms``; tables
        that are not ``[2, T, ...]`` differing in exactly one round; a statistic that is no field of the state or
        not finite; too few runs; bad params (the learner's ``check``).
    """
    runs = check_runs(runs)
    if not isinstance(learner, Learner):
        raise ValueError(f"learner must be a jaxpriv.Learner, got {type(learner).__name__}")
    if not (isinstance(statistic, str) or callable(statistic)):
        raise ValueError(f"statistic must be a state field's name or a function of the state, got {statistic!r}")
    spec = spec_of(learner)
    bandit = spec.num_arms is not None
    if tables is None:
        if not bandit:
            raise ValueError(f"{spec.name or 'the learner'} declares no number of arms (Spec.num_arms): give tables")
        if int(horizon) != horizon or horizon < 1:
            raise ValueError(f"horizon must be an integer >= 1, got {horizon!r}")
        tab = np.zeros((2, int(horizon), spec.num_arms), np.float32)
        tab[1, 0, 0] = canary
    else:
        tab = np.asarray(tables, np.float32)
    if tab.ndim < 2 + bandit or tab.shape[0] != 2:
        raise ValueError(f"tables must be [2, T, ...] (side A, side B), got shape {tab.shape}")
    rounds = tab.shape[1]
    differs = np.any((tab[0] != tab[1]).reshape(rounds, -1), axis=1)
    if int(differs.sum()) != 1:
        raise ValueError(f"neighbouring tables must differ in exactly one round, they differ in {int(differs.sum())}")
    kind = "rho" if getattr(params, "rho", None) is not None else "epsilon"
    if kind == "epsilon" and getattr(params, "epsilon", None) is None:
        raise ValueError(f"params {type(params).__name__} has no rho or epsilon: the claim is read from its budget")
    claim = float(np.asarray(params.rho if kind == "rho" else params.epsilon))
    if learner.check is not None and noiseless is not _THE_COPY:
        learner.check(params)
    rerun, copy = _noise_free(noiseless, learner, params, kind)
    if isinstance(statistic, str):
        fields = getattr(jax.eval_shape(learner.init, jax.random.key(0), params), "_fields", ())
        if statistic not in fields:
            raise ValueError(f"statistic {statistic!r} is not a field of the learner's state {fields}")
    y = learner_states(learner, params, key, runs, tab, statistic, bandit=bandit, last=True)
    y = np.asarray(y, np.float64).reshape(2, runs, -1)
    if not np.all(np.isfinite(y)):
        raise ValueError("the statistic must be finite in every run")
    scores = y[..., 0] if y.shape[-1] == 1 else heldout_fisher_scores(y)
    label = name or f"{spec.name or 'learner'}[release]"
    result = finish(label, kind, claim, scores, alpha, runs)
    if rerun is None:
        return result
    same = {"statistic": statistic, "tables": tab, "alpha": alpha, "name": label, "noiseless": _THE_COPY}
    return with_noise_free(result, lambda: audit_release(rerun[0], rerun[1], key, runs, **same), copy)


LEARNERS = ("regularized_pftal", "private_experts", "private_bandit_ftal", "wdp_cocop", "wdp_cocol")


def audit_oco(
    learner: str,
    key: Any,
    runs: int = 20000,
    *,
    noise: NoiseFamily | str = "gamma",
    horizon: int = 8,
    position: int = 1,
    window: int = 4,
    params: Any = None,
    alpha: float = 0.05,
    name: str | None = None,
    noiseless: bool | Learner = False,
) -> Audit:
    """Audit one of the private OCO learners in one dimension, with the documented adversarial neighbours.

    Every learner states event-level privacy of the whole sequence of points against an
    adaptive adversary, for one loss replaced (replace-one); the adversary below reveals
    zero feedback at every round except ``position``, where the two sequences differ by the
    most the learner's calibration allows a loss to move its input:

    * ``"regularized_pftal"`` (``l2_ball(1, 1)``, ``H = 0.1``, ``L = 1``): gradient of ``f_p``
      ``-L`` vs ``+L``. The tree's input is ``∇f_t + H w_t`` (clip ``L + H||C||``), calibrated to
      ``2(L + H||C||)``; the ``H w_t`` part is the same on both sides, so a replaced loss moves
      the input by ``2L`` only: the true loss is at most ``L/(L + H||C||) = 0.91`` of the claim.
    * ``"private_experts"`` (``p = 2`` experts, ``H = 0.1``): cost vector ``(1, 0)`` vs ``(0, 1)``
      at round ``p``, the largest change of a ``{0,1}^p`` cost (norm ``sqrt p``) against the
      calibration ``2(sqrt p + H)``: at most ``sqrt p/(2(sqrt p + H)) = 0.47`` of the claim.
    * ``"private_bandit_ftal"`` (``l2_ball(1, 1)``, the ``"oblivious"`` preset, ``B = 1``): the
      loss of round ``p`` is the constant ``-B`` vs ``+B`` (``|f| <= B``), so the estimate
      ``(p/β) f u_p`` moves by the full ``2pB/β``; statistic with ``interact=position`` (the
      sign of the estimate is the direction ``u_p`` visible in the point played at ``p``;
      ``position=1`` makes it exact, ``w†_1`` being the centre).
    * ``"wdp_cocop"`` (``l2_ball(1, 1)``) and ``"wdp_cocol"`` (``simplex(2)``), both
      ``sensitivity="replace"`` (clip ``L``, calibration ``2L``), window ``W``: gradient
      ``-L e_1`` vs ``+L e_1``. Only the points computed from the covered releases
      ``s_1..s_{p+W-1}`` are used, i.e. ``w_1..w_{p+W}``. Claim: window ε-DP (``"gamma"``) or
      window (ε, δ)-DP (``"gaussian"``, the bound is on ε at that δ).

    Default params: exactly the budget of the family, ε = 1 (``"gamma"``, ``"laplace"``) or ρ = 0.5
    (Gaussian trees); the window learners ε = 1, with δ = 1e-5 for the Gaussian family only,
    ``L = μ = 1``; pass ``params`` to audit others. Statistic: ``audit_learner``'s held-out
    Fisher direction on the points; the projection is often active (the points are clipped to
    the set), so the points are a non-linear function of the releases and the bound is weaker
    than the mechanism's. ``noiseless``: ``audit_learner``'s power check (default ``False``: the
    ``Audit.ceiling`` only; ``True`` doubles the runs).

    Raises:
      ValueError: an unknown learner (the known ones named) or noise family; ``position``
        outside ``[1, T]``; too few runs.
    """
    if learner not in LEARNERS:
        raise ValueError(f"learner must be one of {LEARNERS}, got {learner!r}")
    if not 1 <= int(position) <= horizon:
        raise ValueError(f"position must be in [1, {horizon}], got {position!r}")
    i = int(position) - 1
    family = noise_family(noise)
    kind = "epsilon" if learner.startswith("wdp") else family.budget  # the window learners claim (ε, δ) or ε
    budget = {"rho": 0.5} if kind == "rho" else {"epsilon": 1.0}  # exactly the budget of the family
    delta, points, interact = 0.0, None, None
    if learner == "regularized_pftal":
        model = regularized_pftal(horizon, l2_ball(1, 1.0), noise)
        if params is None:
            params = RegularizedPFTALParams(**budget, lipschitz=1.0, strong_convexity=0.1)
        tables = np.zeros((2, horizon, 1), np.float32)
        tables[0, i], tables[1, i] = -float(params.lipschitz), float(params.lipschitz)
    elif learner == "private_experts":
        model = private_experts(horizon, 2, noise)
        if params is None:
            params = PrivateExpertsParams(**budget, strong_convexity=0.1)
        tables = np.zeros((2, horizon, 2), np.float32)
        tables[0, i, 0], tables[1, i, 1] = 1.0, 1.0
    elif learner == "private_bandit_ftal":
        model = private_bandit_ftal(horizon, l2_ball(1, 1.0), noise)
        if params is None:
            params = PrivateBanditFTALParams(**budget, loss_bound=1.0)
        tables = np.zeros((2, horizon), np.float32)
        tables[0, i], tables[1, i] = -float(params.loss_bound), float(params.loss_bound)
        interact, points = int(position), horizon  # no point is played at T + 1 (it is NaN)
    else:
        constraint = l2_ball(1, 1.0) if learner == "wdp_cocop" else simplex(2)
        factory = wdp_cocop if learner == "wdp_cocop" else wdp_cocol
        model = factory(horizon, constraint, window, noise, "replace")
        if params is None:  # window ε-DP (Gamma) or window (ε, δ)-DP (Gaussian): δ only for the Gaussian family
            delta_budget = None if family.pure else 1e-5
            params = WDPParams(epsilon=1.0, delta=delta_budget, lipschitz=1.0, strong_convexity=1.0)
        tables = np.zeros((2, horizon, constraint.dim), np.float32)
        tables[0, i, 0], tables[1, i, 0] = -float(params.lipschitz), float(params.lipschitz)
        points = min(horizon, int(position) + window - 1) + 1
        delta = 0.0 if family.pure else float(params.delta)
    claim = float(np.asarray(params.rho if kind == "rho" else params.epsilon))
    return audit_learner(
        model,
        params,
        key,
        tables,
        runs,
        kind=kind,
        claim=claim,
        delta=delta,
        points=points,
        interact=interact,
        alpha=alpha,
        name=name or f"{learner}[{noise}]",
        noiseless=noiseless,
    )
