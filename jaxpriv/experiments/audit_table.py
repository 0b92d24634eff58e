"""The privacy-audit table: every audited component's claim beside its empirical lower bound (``jaxpriv audit``)."""

from __future__ import annotations

import time

import numpy as np

from jaxpriv import audit
from jaxpriv import mechanisms as M
from jaxpriv.bandits.adac_gope import AdaCGOPEParams
from jaxpriv.bandits.adac_ucb import AdaCUCBParams
from jaxpriv.bandits.adap_klucb import AdaPKLUCBParams
from jaxpriv.bandits.adap_ucb import AdaPUCBParams
from jaxpriv.bandits.dp_se import DPSEParams
from jaxpriv.bandits.dp_ucb import DPUCBParams
from jaxpriv.bandits.ldp_ucb import LDPUCBParams
from jaxpriv.oco.dp_ftrl import DPFTRLParams
from jaxpriv.oco.pftal import PFTALParams

EXCLUDED = {
    "mi_ogd, mi_bandit_ogd": "mutual-information guarantee, not DP: no two-input test lower-bounds it",
}


def _tree_params(noise: M.NoiseFamily | str) -> M.TreeParams:
    """Exactly the budget of the family: ε = 1 (``"gamma"``, ``"laplace"``) or ρ = 0.5 (``"gaussian"``)."""
    return M.TreeParams(**_pftal_budget(noise), sensitivity=1.0)


def _pftal_budget(noise: M.NoiseFamily | str) -> dict[str, float]:
    return {"epsilon": 1.0} if M.noise_family(noise).pure else {"rho": 0.5}


def _pftal_params(noise: str) -> PFTALParams:
    return PFTALParams(**_pftal_budget(noise), lipschitz=1.0, strong_convexity=1.0)


def audit_rows(runs: int = 20000, seed: int = 0, alpha: float = 0.05) -> list[audit.Audit]:
    """Audit every private component but the MI ones (``EXCLUDED``): mechanisms, learners, bandits; fixed keys.

    Binary tree (three families, both relations; exact path statistic), PFTAL (two families),
    AdaC-UCB (a canary in an ``n = 1`` episode and, through the Interactive-DP adversary's
    schedule, in an ``n = 2`` one: the noise's scaling with ``n``), the baselines (AdaP-UCB and AdaP-KLUCB
    on the same two schedules; DP-SE, LDP-UCB, DP-UCB (Laplace tree) and AdaC-GOPE-Var (standard-basis
    actions, phase 1) on their released statistics;
    DP-FTRL, two families, as PFTAL), Honaker's tree (three
    families), the square-root factorization and BLT (held-out Fisher statistic), the window
    tree (Gamma; Gaussian with both calibrations) and the private OCO learners
    (``audit.audit_oco``'s adversaries; window learners with Gamma noise: their Gaussian rows
    would be 0 at δ = 1e-5, as the window tree's show). Then every mechanism again with a canary
    of twice its clipping bound (``beyond_bound``): a correct one clips it and shows the loss of a
    canary at the bound; one that clips too loosely shows up to twice ε (four times ρ).
    """
    rows = [
        audit.audit_tree(
            M.binary_tree(horizon=4, dim=1, noise=noise, neighbouring=neighbouring),
            _tree_params(noise),
            key=seed + i,
            runs=runs,
            alpha=alpha,
        )
        for i, (noise, neighbouring) in enumerate(
            [("gamma", "add_remove"), ("laplace", "add_remove"), ("gaussian", "add_remove"), ("gamma", "replace")]
        )
    ]
    rows += [
        audit.audit_pftal(_pftal_params(noise), key=seed + 10 + i, runs=runs, horizon=8, noise=noise, alpha=alpha)
        for i, noise in enumerate(["gamma", "gaussian"])
    ]
    rows += [
        audit.audit_adac_ucb(AdaCUCBParams(rho=0.5), key=seed + 20 + i, runs=runs, horizon=32, pull=pull, alpha=alpha)
        for i, pull in enumerate([1, 3])
    ]
    # the baselines: AdaP-UCB / AdaP-KLUCB (ε = 1; α = 0.01 keeps the index monotone in the release), the forced
    # schedules (arm 1 nearly noiseless); DP-SE, LDP-UCB, DP-UCB, AdaC-GOPE-Var on their released statistics;
    # DP-FTRL as PFTAL
    for i, (klucb, pull) in enumerate([(False, 1), (False, 3), (True, 1), (True, 3)]):
        params = (AdaPKLUCBParams if klucb else AdaPUCBParams)(epsilon=1.0, alpha=0.01)
        rows.append(
            audit.audit_adap_ucb(
                params,
                key=seed + 90 + i,
                runs=runs,
                klucb=klucb,
                horizon=32,
                pull=pull,
                forced=pull == 1,
                level=1.0 if pull == 1 else 0.75,
                alpha=alpha,
            )
        )
    releases = [
        ("dp_se", DPSEParams(epsilon=1.0, beta=0.9)),
        ("ldp_ucb", LDPUCBParams(epsilon=1.0)),
        ("dp_ucb", DPUCBParams(epsilon=1.0)),
        ("adac_gope_var", AdaCGOPEParams(actions=np.eye(2, dtype=np.float32), rho=0.5)),
    ]
    rows += [
        audit.audit_bandit_release(name, params, key=seed + 94 + i, runs=runs, horizon=4, alpha=alpha)
        for i, (name, params) in enumerate(releases)
    ]
    rows += [
        audit.audit_dp_ftrl(
            DPFTRLParams(**_pftal_budget(noise), lipschitz=1.0, regularization=1.0),
            key=seed + 98 + i,
            runs=runs,
            horizon=8,
            noise=noise,
            alpha=alpha,
        )
        for i, noise in enumerate(["gamma", "gaussian"])
    ]
    # the other prefix-sum mechanisms: statistic learned on held-out runs (exact LR for Gaussian noise)
    others = [M.honaker_tree(horizon=4, dim=1, noise=noise) for noise in ("gamma", "laplace", "gaussian")]
    others += [M.sqrt_factorization(horizon=8, dim=1), M.blt(horizon=8, dim=1)]
    rows += [
        audit.audit_prefix_sums(mech, _tree_params(M.describe(mech).noise), key=seed + 30 + i, runs=runs, alpha=alpha)
        for i, mech in enumerate(others)
    ]
    rows += [
        audit.audit_window_tree(
            M.WindowTreeParams(epsilon=1.0, delta=None if M.noise_family(noise).pure else 1e-5, sensitivity=1.0),
            key=seed + 40 + i,
            runs=runs,
            horizon=8,
            window=4,
            noise=noise,
            calibration=calibration,
            alpha=alpha,
            name=f"window_tree[{noise}{', ' + calibration if noise == 'gaussian' else ''}, W=4, T=8]",
        )
        for i, (noise, calibration) in enumerate(
            [("gamma", "paper"), ("gaussian", "paper"), ("gaussian", "composition")]
        )
    ]
    learners = [(name, "gamma") for name in audit.LEARNERS] + [
        (name, "gaussian") for name in ("regularized_pftal", "private_experts", "private_bandit_ftal")
    ]
    rows += [
        audit.audit_oco(name, key=seed + 50 + i, runs=runs, noise=noise, horizon=8, alpha=alpha)
        for i, (name, noise) in enumerate(learners)
    ]
    # the clipping: a canary of twice the bound (a doubled clip bound shows as twice ε, four times ρ)
    beyond = {"runs": runs, "alpha": alpha, "canary": 2.0, "beyond_bound": True}
    rows += [
        audit.audit_tree(M.binary_tree(horizon=4, dim=1, noise=noise), _tree_params(noise), key=seed + 70 + i, **beyond)
        for i, noise in enumerate(["gamma", "laplace", "gaussian"])
    ]
    clipped = [
        M.honaker_tree(horizon=4, dim=1, noise="gamma"),
        M.sqrt_factorization(horizon=8, dim=1),
        M.blt(horizon=8, dim=1),
    ]
    rows += [
        audit.audit_prefix_sums(mech, _tree_params(M.describe(mech).noise), key=seed + 75 + i, **beyond)
        for i, mech in enumerate(clipped)
    ]
    rows.append(
        audit.audit_window_tree(
            M.WindowTreeParams(epsilon=1.0, sensitivity=1.0),
            key=seed + 79,
            horizon=8,
            window=4,
            name="window_tree[gamma, W=4, T=8, canary 2Δ]",
            **beyond,
        )
    )
    return rows


def _parameter(row: audit.Audit) -> str:
    if row.kind == "rho":
        return "ρ"
    return f"ε (δ={row.delta:g})" if row.delta > 0 else "ε"


def print_table(runs: int = 20000, seed: int = 0, alpha: float = 0.05) -> list[audit.Audit]:
    """Print the table (markdown) and the wall time; returns the rows."""
    t0 = time.perf_counter()
    rows = audit_rows(runs=runs, seed=seed, alpha=alpha)
    wall = time.perf_counter() - t0
    print("| component | parameter | claim | lower bound | confidence | runs per side | lower / claim |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r.component} | {_parameter(r)} | {r.claim:g} | {r.lower:.3f} | "
            f"{r.confidence:.2f} | {r.runs} | {r.ratio:.2f} |"
        )
    for name, why in EXCLUDED.items():
        print(f"| {name} | | | — | | | {why} |")
    print(f"\n{len(rows)} audits in {wall:.1f} s (CPU, compilation included)")
    return rows
