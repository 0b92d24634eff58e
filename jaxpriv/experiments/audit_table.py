"""The privacy-audit table: every audited component's claim beside its empirical lower bound (``jaxpriv audit``)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from jaxpriv import audit
from jaxpriv import mechanisms as M
from jaxpriv.bandits.adac_gope import AdaCGOPEParams
from jaxpriv.bandits.adac_ucb import AdaCUCBParams
from jaxpriv.bandits.adap_klucb import AdaPKLUCBParams
from jaxpriv.bandits.adap_ucb import AdaPUCBParams
from jaxpriv.bandits.anytime_lazy_ucb import AnytimeLazyUCBParams, anytime_lazy_ucb
from jaxpriv.bandits.dp_se import DPSEParams
from jaxpriv.bandits.dp_ucb import DPUCBParams
from jaxpriv.bandits.hanna_gope import HannaGOPEParams
from jaxpriv.bandits.ldp_ucb import LDPUCBParams
from jaxpriv.bandits.li_zhou_ji_gope import LiZhouJiGOPEParams
from jaxpriv.oco.dp_ftrl import DPFTRLParams
from jaxpriv.oco.pftal import PFTALParams

EXCLUDED = {
    "mi_ogd, mi_bandit_ogd": "mutual-information guarantee, not DP: no two-input test lower-bounds it",
    "linpriv (reconstructed)": "no adversary here drives a contextual policy; its release is a Laplace binary tree "
    "(binary_tree[laplace], audited above); its actions are post-processing",
    "dnpr_experts (reconstructed)": "its release is binary_tree[laplace, replace] of the centred cost vectors "
    "(audited above); its plays post-process it and a data-independent FTPL draw",
    "pqftl (reconstructed)": "an analytic-Gaussian tree over (x xᵀ, y x) at (ε, δ); no adversary of audit_oco feeds "
    "examples (x, y); not audited",
}


class _Row(NamedTuple):
    """One audit: ``audit(*args, key=seed + key, runs=runs, alpha=alpha, **kwargs)``."""

    audit: Callable[..., audit.Audit]
    key: int  # the offset of its PRNG key from the table's seed
    args: tuple[Any, ...]
    kwargs: dict[str, Any]


def _row(fn: Callable[..., audit.Audit], key: int, *args: Any, **kwargs: Any) -> _Row:
    return _Row(fn, key, args, kwargs)


#: The claims: ε = 1 for the pure families (Gamma, Laplace), ρ = 0.5 for the Gaussian ones.
_EPS, _RHO = {"epsilon": 1.0}, {"rho": 0.5}
#: A canary of twice the clipping bound: a correct mechanism clips it and shows the loss of a canary at the
#: bound; one that clips too loosely shows up to twice ε (four times ρ).
_BEYOND = {"canary": 2.0, "beyond_bound": True}
_OCO_GAUSSIAN = ("regularized_pftal", "private_experts", "private_bandit_ftal")


def _table() -> tuple[_Row, ...]:
    """The rows of ``jaxpriv audit``, in order (built on call: the mechanisms are not made at import)."""
    tree, honaker, sqrt, blt, window = M.binary_tree, M.honaker_tree, M.sqrt_factorization, M.blt, M.WindowTreeParams
    t_eps, t_rho = M.TreeParams(**_EPS, sensitivity=1.0), M.TreeParams(**_RHO, sensitivity=1.0)
    adap, adap_kl = AdaPUCBParams(epsilon=1.0, alpha=0.01), AdaPKLUCBParams(epsilon=1.0, alpha=0.01)
    gope_actions = np.eye(2, dtype=np.float32)  # standard-basis actions: the release of phase 1
    A = audit
    return (
        # the binary tree: three families, both relations (exact path statistic)
        _row(A.audit_tree, 0, tree(horizon=4, dim=1, noise="gamma", neighbouring="add_remove"), t_eps),
        _row(A.audit_tree, 1, tree(horizon=4, dim=1, noise="laplace", neighbouring="add_remove"), t_eps),
        _row(A.audit_tree, 2, tree(horizon=4, dim=1, noise="gaussian", neighbouring="add_remove"), t_rho),
        _row(A.audit_tree, 3, tree(horizon=4, dim=1, noise="gamma", neighbouring="replace"), t_eps),
        # PFTAL, two families
        _row(A.audit_pftal, 10, PFTALParams(**_EPS, lipschitz=1.0, strong_convexity=1.0), horizon=8, noise="gamma"),
        _row(A.audit_pftal, 11, PFTALParams(**_RHO, lipschitz=1.0, strong_convexity=1.0), horizon=8, noise="gaussian"),
        # AdaC-UCB: a canary in an n = 1 episode and, by the Interactive-DP adversary's schedule, in an n = 2 one
        _row(A.audit_adac_ucb, 20, AdaCUCBParams(rho=0.5), horizon=32, pull=1),
        _row(A.audit_adac_ucb, 21, AdaCUCBParams(rho=0.5), horizon=32, pull=3),
        # AdaP-UCB / AdaP-KLUCB on the same schedules (α = 0.01 keeps the index monotone in the release; the forced
        # schedule leaves arm 1 nearly noiseless)
        _row(A.audit_adap_ucb, 90, adap, klucb=False, horizon=32, pull=1, forced=True, level=1.0),
        _row(A.audit_adap_ucb, 91, adap, klucb=False, horizon=32, pull=3, forced=False, level=0.75),
        _row(A.audit_adap_ucb, 92, adap_kl, klucb=True, horizon=32, pull=1, forced=True, level=1.0),
        _row(A.audit_adap_ucb, 93, adap_kl, klucb=True, horizon=32, pull=3, forced=False, level=0.75),
        # DP-SE, LDP-UCB, DP-UCB (Laplace tree), AdaC-GOPE-Var: their released statistics
        _row(A.audit_bandit_release, 94, "dp_se", DPSEParams(epsilon=1.0, beta=0.9), horizon=4),
        _row(A.audit_bandit_release, 95, "ldp_ucb", LDPUCBParams(epsilon=1.0), horizon=4),
        _row(A.audit_bandit_release, 96, "dp_ucb", DPUCBParams(epsilon=1.0), horizon=4),
        _row(A.audit_bandit_release, 97, "adac_gope_var", AdaCGOPEParams(actions=gope_actions, rho=0.5), horizon=4),
        # the reconstructions on the per-action sums, as AdaC-GOPE-Var: Hanna (Laplace, ε-DP), Li–Zhou–Ji (analytic
        # Gaussian, (ε, 1e-5)-DP)
        _row(A.audit_bandit_release, 101, "hanna_gope", HannaGOPEParams(actions=gope_actions, epsilon=1.0), horizon=4),
        _row(
            A.audit_bandit_release,
            102,
            "li_zhou_ji_gope",
            LiZhouJiGOPEParams(actions=gope_actions, epsilon=1.0, dp_delta=1e-5),
            horizon=4,
        ),
        # Anytime-Lazy-UCB from its actions: two arms, three rounds, round 1's reward 0 against 1; each arm's first
        # batch is released as r + Lap(1/eps) and round 3 plays the larger release
        _row(
            A.audit_learner,
            100,
            anytime_lazy_ucb(2, tie_break="first"),
            AnytimeLazyUCBParams(epsilon=1.0),
            tables=np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0]], np.float32),
            kind="epsilon",
            claim=1.0,
            name="anytime_lazy_ucb[2 arms, T=3, actions]",
        ),
        # DP-FTRL, as PFTAL
        _row(A.audit_dp_ftrl, 98, DPFTRLParams(**_EPS, lipschitz=1.0, regularization=1.0), horizon=8, noise="gamma"),
        _row(A.audit_dp_ftrl, 99, DPFTRLParams(**_RHO, lipschitz=1.0, regularization=1.0), horizon=8, noise="gaussian"),
        # the other prefix-sum mechanisms: statistic learned on held-out runs (exact LR for Gaussian noise)
        _row(A.audit_prefix_sums, 30, honaker(horizon=4, dim=1, noise="gamma"), t_eps),
        _row(A.audit_prefix_sums, 31, honaker(horizon=4, dim=1, noise="laplace"), t_eps),
        _row(A.audit_prefix_sums, 32, honaker(horizon=4, dim=1, noise="gaussian"), t_rho),
        _row(A.audit_prefix_sums, 33, sqrt(horizon=8, dim=1), t_rho),
        _row(A.audit_prefix_sums, 34, blt(horizon=8, dim=1), t_rho),
        # the window tree: Gamma; Gaussian with both calibrations
        *(
            _row(
                A.audit_window_tree,
                key,
                window(epsilon=1.0, delta=delta, sensitivity=1.0),
                horizon=8,
                window=4,
                noise=noise,
                calibration=calibration,
                name=f"window_tree[{name}W=4, T=8]",
            )
            for key, noise, delta, calibration, name in (
                (40, "gamma", None, "paper", "gamma, "),
                (41, "gaussian", 1e-5, "paper", "gaussian, paper, "),
                (42, "gaussian", 1e-5, "composition", "gaussian, composition, "),
            )
        ),
        # the private OCO learners (audit.audit_oco's adversaries): every one with Gamma noise, three with Gaussian
        # noise (the window learners' Gaussian rows would be 0 at δ = 1e-5, as the window tree's show)
        *(_row(A.audit_oco, 50 + i, name, noise="gamma", horizon=8) for i, name in enumerate(A.LEARNERS)),
        *(
            _row(A.audit_oco, 50 + len(A.LEARNERS) + i, name, noise="gaussian", horizon=8)
            for i, name in enumerate(_OCO_GAUSSIAN)
        ),
        # the clipping: every mechanism again with a canary of twice its bound
        _row(A.audit_tree, 70, tree(horizon=4, dim=1, noise="gamma"), t_eps, **_BEYOND),
        _row(A.audit_tree, 71, tree(horizon=4, dim=1, noise="laplace"), t_eps, **_BEYOND),
        _row(A.audit_tree, 72, tree(horizon=4, dim=1, noise="gaussian"), t_rho, **_BEYOND),
        _row(A.audit_prefix_sums, 75, honaker(horizon=4, dim=1, noise="gamma"), t_eps, **_BEYOND),
        _row(A.audit_prefix_sums, 76, sqrt(horizon=8, dim=1), t_rho, **_BEYOND),
        _row(A.audit_prefix_sums, 77, blt(horizon=8, dim=1), t_rho, **_BEYOND),
        _row(
            A.audit_window_tree,
            79,
            window(epsilon=1.0, sensitivity=1.0),
            horizon=8,
            window=4,
            name="window_tree[gamma, W=4, T=8, canary 2Δ]",
            **_BEYOND,
        ),
    )


def audit_rows(runs: int = 20000, seed: int = 0, alpha: float = 0.05) -> list[audit.Audit]:
    """Audit every private component but the MI ones (``EXCLUDED``): mechanisms, learners, bandits; fixed keys.

    One audit per row of the table (``_table``), in its order, row ``r`` with the key ``seed + r.key``:
    the binary tree (three families, both relations; exact path statistic), PFTAL (two families),
    AdaC-UCB (a canary in an ``n = 1`` episode and, through the Interactive-DP adversary's
    schedule, in an ``n = 2`` one: the noise's scaling with ``n``), the baselines (AdaP-UCB and AdaP-KLUCB
    on the same two schedules; DP-SE, LDP-UCB, DP-UCB (Laplace tree), AdaC-GOPE-Var and the reconstructions
    Hanna and Li–Zhou–Ji (standard-basis actions, phase 1) on their released statistics; Anytime-Lazy-UCB
    from its actions (two arms, three
    rounds); DP-FTRL, two families, as PFTAL), Honaker's tree (three
    families), the square-root factorization and BLT (held-out Fisher statistic), the window
    tree (Gamma; Gaussian with both calibrations) and the private OCO learners
    (``audit.audit_oco``'s adversaries; window learners with Gamma noise: their Gaussian rows
    would be 0 at δ = 1e-5, as the window tree's show). Then every mechanism again with a canary
    of twice its clipping bound (``beyond_bound``): a correct one clips it and shows the loss of a
    canary at the bound; one that clips too loosely shows up to twice ε (four times ρ).
    """
    return [r.audit(*r.args, key=seed + r.key, runs=runs, alpha=alpha, **r.kwargs) for r in _table()]


def _parameter(row: audit.Audit) -> str:
    if row.kind == "rho":
        return "ρ"
    return f"ε (δ={row.delta:g})" if row.delta > 0 else "ε"


def print_table(runs: int = 20000, seed: int = 0, alpha: float = 0.05) -> list[audit.Audit]:
    """Print the table (markdown) and the wall time; returns the rows.

    The last column is each audit's power (``Audit.power``): the largest lower bound it can return at these runs
    (its ``ceiling``, or its result on a copy without noise where one was run), marked "no power" below the claim.
    """
    t0 = time.perf_counter()
    rows = audit_rows(runs=runs, seed=seed, alpha=alpha)
    wall = time.perf_counter() - t0
    print("| component | parameter | claim | lower bound | confidence | runs per side | lower / claim | power |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        power = f"{r.power:.3g}" + (" (no power)" if r.warning else "")
        print(
            f"| {r.component} | {_parameter(r)} | {r.claim:g} | {r.lower:.3f} | "
            f"{r.confidence:.2f} | {r.runs} | {r.ratio:.2f} | {power} |"
        )
    for name, why in EXCLUDED.items():
        print(f"| {name} | | | — | | | {why} | |")
    print(f"\n{len(rows)} audits in {wall:.1f} s (CPU, compilation included)")
    return rows
