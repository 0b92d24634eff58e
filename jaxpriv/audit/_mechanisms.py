"""Per-mechanism drivers: the binary tree, any declared prefix-sum mechanism, the window tree."""

from __future__ import annotations

from typing import Any

import numpy as np

from jaxpriv._base import Mechanism
from jaxpriv.audit._bounds import Audit, budget_claim, finish
from jaxpriv.audit._runs import canary_ends, canary_label, canary_releases, check_runs, declared
from jaxpriv.audit._scores import heldout_fisher_scores, node_scores, path_nodes
from jaxpriv.mechanisms._accounting import tree_depth
from jaxpriv.mechanisms._noise import NoiseFamily, noise_family
from jaxpriv.mechanisms._tree import TreeParams
from jaxpriv.mechanisms._window_tree import window_levels, window_tree


def audit_tree(
    mechanism: Mechanism,
    params: TreeParams,
    key: Any,
    runs: int = 20000,
    *,
    position: int = 1,
    alpha: float = 0.05,
    canary: float | None = None,
    beyond_bound: bool = False,
    name: str | None = None,
) -> Audit:
    """Audit a binary tree (any noise family) with one canary at ``position``, in one vmapped batch.

    Neighbours, in the relation the tree declares (``describe(mechanism).neighbouring``):
    every input is zero except the one at ``position``, which is ``0`` vs ``Δ e_1``
    (``"add_remove"``) or ``-Δ e_1`` vs ``+Δ e_1`` (``"replace"``), with ``Δ = params.sensitivity``
    the declared clipping bound (or ``canary <= Δ``). Statistic: the exact log-likelihood ratio
    of the noisy nodes on the canary's path (``node_scores``), recovered from the releases:
    it sees every released node the canary enters. A release sums the nodes at the set bits of
    ``t``, so a right child is never released: the canary at ``position`` spends the share of
    its left-child (and root) ancestors only, the whole budget at ``position = 1`` when the
    ``D`` levels all close within the horizon (``T`` a power of two). For the Gamma-norm family the bound
    is tight only in one dimension (build the tree with ``dim=1``): in ``d > 1`` the
    worst-case privacy loss needs the noise aligned with the canary, a rare event.

    A canary beyond the bound (``canary > Δ`` with ``beyond_bound=True``, e.g. ``2Δ``) audits the
    clipping: the tree clips every input to ``Δ``, so its claim covers any input and a correct
    tree shows the loss of a canary ``Δ``; the statistic is the exact log-likelihood ratio for
    the canary as given (unclipped), so a tree that clips to a looser bound ``b > Δ`` shows
    ``min(c, b)/Δ`` times the claim (``2Δ``-clip, ``2Δ``-canary: twice ε, four times ρ).

    Returns an ``Audit``: ``kind="epsilon"`` (``"gamma"``, ``"laplace"``; ε-DP, the ``"union"``
    of nothing: holdout threshold) or ``kind="rho"`` (``"gaussian"``; the μ-GDP bound as ρ = μ²/2).
    The claim is ``params.epsilon`` or ``params.rho``, the tree's guarantee for the whole stream.

    Raises:
      ValueError: ``mechanism`` declares no neighbouring relation (not a jaxpriv prefix-sum
        mechanism) or is not a binary tree; a canary beyond the declared bound without
        ``beyond_bound``; too few runs for the confidence; bad params.
    """
    info = declared(mechanism)
    if info.structure != "dyadic" or info.scope != "event":  # the statistic reads the tree's nodes back
        raise ValueError(f"audit_tree audits binary_tree mechanisms, got {info.name!r}")
    runs = check_runs(runs)
    if mechanism.check is not None:
        mechanism.check(params)
    horizon, dim, noise = info.horizon, info.dim, info.noise
    if not 1 <= int(position) <= horizon:
        raise ValueError(f"position must be in [1, {horizon}] (the tree's horizon), got {position!r}")
    bound = float(np.asarray(params.sensitivity))
    low, high = canary_ends(info.neighbouring, bound, canary, beyond_bound)
    releases = canary_releases(mechanism, params, key, runs, horizon, dim, int(position), low, high)
    nodes = path_nodes(releases, int(position), tree_depth(horizon), horizon)
    scores = node_scores(nodes, noise, low, high)
    kind, claim = budget_claim(params, noise)
    label = name or f"binary_tree[{noise}, {info.neighbouring}{canary_label(bound, high)}]"
    return finish(label, kind, claim, scores, alpha, runs)


def audit_prefix_sums(
    mechanism: Mechanism,
    params: Any,
    key: Any,
    runs: int = 20000,
    *,
    position: int = 1,
    alpha: float = 0.05,
    canary: float | None = None,
    beyond_bound: bool = False,
    name: str | None = None,
) -> Audit:
    """Audit any prefix-sum mechanism of ``jaxpriv.mechanisms`` with one canary, statistic learned on held-out runs.

    Neighbours, in the relation the mechanism declares (``describe(mechanism).neighbouring``):
    every input is zero except the one at ``position``, ``0`` vs ``Δ e_1`` (``"add_remove"``)
    or ``-Δ e_1`` vs ``+Δ e_1`` (``"replace"``), ``Δ = params.sensitivity`` (or ``canary <= Δ``;
    ``canary > Δ`` with ``beyond_bound=True`` audits the clipping, as in ``audit_tree``).
    Statistic: ``heldout_fisher_scores`` on the first coordinate of all ``T`` releases (those
    before ``position`` too: with correlated noise they help cancel it). The releases are
    ``A x + Gaussian noise`` for ``sqrt_factorization``, ``blt`` and the Gaussian trees, so the
    statistic is the exact likelihood ratio, learned on half the runs (Nasr et al. 2021's
    "best test" for the Gaussian mechanism); for the Gamma and Laplace families (Honaker's
    estimator mixes the nodes, so no closed-form path statistic exists) it is a valid linear
    statistic, weaker than the likelihood ratio. Half of each side's runs learn the direction,
    and ``epsilon_lower_bound`` / ``gdp_mu_lower_bound`` split the other half again for the
    threshold: the bound is evaluated on a quarter of the runs. ``audit_tree`` keeps the exact
    path statistic of the binary tree.

    Claim: ``params.epsilon`` (ε-DP; ``"gamma"``, ``"laplace"``) or ``params.rho`` (ρ-zCDP of a
    Gaussian mechanism, compared through μ-GDP, ``ρ = μ²/2``), for the whole stream.

    Raises:
      ValueError: ``mechanism`` declares no neighbouring relation (not built by
        ``jaxpriv.mechanisms``; the window tree: ``audit_window_tree``); a canary beyond the
        declared bound without ``beyond_bound``; ``position`` outside ``[1, T]``; too few runs for
        the confidence; bad params.
    """
    info = declared(mechanism)
    runs = check_runs(runs)
    if mechanism.check is not None:
        mechanism.check(params)
    if not 1 <= int(position) <= info.horizon:
        raise ValueError(f"position must be in [1, {info.horizon}] (the mechanism's horizon), got {position!r}")
    bound = float(np.asarray(params.sensitivity))
    low, high = canary_ends(info.neighbouring, bound, canary, beyond_bound)
    releases = canary_releases(mechanism, params, key, runs, info.horizon, info.dim, int(position), low, high)
    scores = heldout_fisher_scores(releases[..., 0])
    kind, claim = budget_claim(params, info.noise)
    label = name or f"{info.name}[{info.noise}, {info.neighbouring}{canary_label(bound, high)}]"
    return finish(label, kind, claim, scores, alpha, runs)


def audit_window_tree(
    params: Any,
    key: Any,
    runs: int = 20000,
    *,
    horizon: int = 8,
    window: int = 4,
    noise: NoiseFamily | str = "gamma",
    neighbouring: str = "add_remove",
    calibration: str = "paper",
    position: int = 1,
    mechanism: Mechanism | None = None,
    alpha: float = 0.05,
    canary: float | None = None,
    beyond_bound: bool = False,
    name: str | None = None,
) -> Audit:
    """Audit the window tree (``jaxpriv.mechanisms.window_tree``, one dimension) with one canary.

    Neighbours (the relation ``neighbouring`` of the tree, event level): every input is zero
    except the one at ``position``, ``0`` vs ``Δ`` (``"add_remove"``) or ``-Δ`` vs ``+Δ``
    (``"replace"``), ``Δ = params.sensitivity``. The claim is window privacy: the input at
    ``p = position`` is protected in the releases ``s_1..s_{p+W-1}`` only (after that it enters
    as an exact sum, by design), so the statistic sees those releases only. Statistic:

    * ``W >= T`` (the full binary tree over ``T``), or ``position = 1``: the canary's nodes are
      the binary tree's path nodes of its first block (all left children or the block root,
      released in the block's prefix phase, recovered by differences of ``s_1..s_B``,
      ``B = 2^ceil(log2 W)``; later releases hold none of them and no noise they share), and the
      statistic is their exact log-likelihood ratio (``audit_tree``'s), which sees the whole budget;
    * otherwise: ``heldout_fisher_scores`` on the covered releases (exact likelihood ratio for
      the Gaussian family; a weaker linear statistic for the Gamma family: a right child of the
      path is released only in the next block's suffix phase, mixed with other nodes).

    Claim: window ε-DP, ``params.epsilon`` (``"gamma"``), or window ``(ε, δ)``-DP with
    ``δ = params.delta`` (``"gaussian"``): the bound is on ε at that δ
    (``epsilon_lower_bound(..., delta=δ)``).

    Args:
      params: ``WindowTreeParams``.
      key: PRNG key or integer seed.
      runs: runs per side.
      horizon, window, noise, neighbouring, calibration: the tree (``window_tree(horizon, 1, ...)``).
      position: the canary's step.
      mechanism: a window tree built with these arguments, to audit instead (e.g. a modified one).
      alpha: ``1 - confidence``.
      canary: the canary's size, ``<= Δ`` (default ``Δ``).
      beyond_bound: allow ``canary > Δ``, to audit the clipping (as in ``audit_tree``).

    Raises:
      ValueError: a bad static argument or params; a canary beyond ``Δ`` without ``beyond_bound``; ``position``
        outside ``[1, T]``; too few runs.
    """
    runs = check_runs(runs)
    built = window_tree(horizon, 1, window, noise, neighbouring, calibration)  # validates the static arguments
    mechanism = built if mechanism is None else mechanism
    if mechanism.check is not None:
        mechanism.check(params)
    if not 1 <= int(position) <= horizon:
        raise ValueError(f"position must be in [1, {horizon}] (the tree's horizon), got {position!r}")
    bound = float(np.asarray(params.sensitivity))
    low, high = canary_ends(neighbouring, bound, canary, beyond_bound)
    releases = canary_releases(mechanism, params, key, runs, horizon, 1, int(position), low, high)
    m = window_levels(window, horizon)
    if window >= horizon or int(position) == 1:  # the path nodes are the binary tree's, recovered exactly
        span = horizon if window >= horizon else 2**m
        nodes = path_nodes(releases[:, :, :span], int(position), m + 1, span)
        scores = node_scores(nodes, noise, low, high)
        scores = np.stack([scores[0], scores[1]])
    else:
        covered = min(horizon, int(position) + int(window) - 1)
        scores = heldout_fisher_scores(releases[:, :, :covered, 0])
    delta = 0.0 if noise_family(noise).pure else float(np.asarray(params.delta))  # window ε-DP: no δ
    label = name or f"window_tree[{noise}, {neighbouring}, W={window}{canary_label(bound, high)}]"
    return finish(label, "epsilon", float(np.asarray(params.epsilon)), scores, alpha, runs, delta)
