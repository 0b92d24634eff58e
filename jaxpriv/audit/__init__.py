"""Empirical privacy audits: a statistical lower bound on the privacy loss of a mechanism or a learner.

An audit runs a component many times on two neighbouring inputs ``A`` and ``B``
(in one compiled, vmapped batch), turns each run's output into a score (large
means "looks like B"), and asks how well a threshold on the score tells the two
apart. A test with false-positive rate ``α`` and false-negative rate ``β`` can
exist only if the component's privacy loss is at least

* ``ε >= log((1 - β - δ) / α)`` for ``(ε, δ)``-DP (Kairouz, Oh & Viswanath 2015;
  the auditing recipe of Jagielski, Ullman & Oprea 2020 and Nasr et al. 2021);
* ``μ >= Φ⁻¹(1 - α) - Φ⁻¹(β)`` for ``μ``-Gaussian DP (the trade-off curve
  ``G_μ`` of Dong, Roth & Su 2022); a Gaussian mechanism that is ``ρ``-zCDP is
  exactly ``sqrt(2ρ)``-GDP, so ``ρ >= μ²/2`` for such a mechanism.

The rates are estimated from finite samples, so each is replaced by its
Clopper–Pearson bound in the conservative direction; the result is a lower bound
that holds with probability at least ``1 - alpha`` over the audit's randomness.
The threshold (and which tail) is chosen on a held-out half of each sample and
the bound is evaluated on the other half (``thresholds=None``), or, for a
data-independent list of thresholds, by a union bound over them. Either way the
choice of the threshold is paid for and the confidence is honest.

A lower bound above the claimed value is a proof, at that confidence, that the
implementation is less private than it claims. A lower bound below the claim
proves nothing about privacy; it says the audit could not refute the claim with
its sample, statistic and neighbouring inputs (Steinke, Nasr & Jagielski 2023).

Power. Every ``Audit`` says how large a lower bound it could have returned: ``ceiling``, the bound
of a test that separates the two sides perfectly at these runs and this confidence (no audit can
exceed it), and, where it was run, ``noiseless``, the same audit's bound on a copy of the component
without noise (the component at a budget ``NOISE_FREE`` = 10⁶ times the claim, or a copy the caller
gives: ``noiseless=``); ``Audit.power`` is the smaller. An audit whose power is below its claim cannot
refute it whatever the component does: it warns (``UserWarning``) and says why in ``Audit.warning``.
The copy without noise runs by default for a component of yours (``audit_learner``, ``audit_release``,
``audit_bandit_release(learner, ...)``); the built-in drivers report the ceiling (their statistics are
the exact likelihood ratios, or documented), and take ``noiseless=True`` where it applies.

What is audited here (``audit_tree``, ``audit_pftal``, ``audit_adac_ucb``, ``audit_adap_ucb``,
``audit_bandit_release``, ``audit_dp_ftrl``, ``audit_prefix_sums``, ``audit_window_tree``,
``audit_learner`` / ``audit_oco``, ``audit_release``; ``jaxpriv audit`` prints them all):

* the binary tree (``jaxpriv.mechanisms.binary_tree``), all three noise families:
  one canary of the full sensitivity at ``position``; the statistic is the exact
  log-likelihood ratio of the released noisy tree nodes on the canary's path (recovered
  from the releases by differences; right children are never released), which sees the
  whole budget at ``position = 1``;
* Honaker's tree, the square-root factorization and BLT (``audit_prefix_sums``, any
  prefix-sum mechanism that declares its neighbouring relation): the same canary; the
  statistic is a Fisher direction ``Σ⁻¹(mean_B - mean_A)`` on the releases, learned on a
  held-out half of the runs (``heldout_fisher_scores``): the exact likelihood ratio for
  Gaussian releases ``A x + correlated noise``, a weaker linear statistic otherwise;
* the window tree (``audit_window_tree``): window ε-DP (Gamma) or window (ε, δ)-DP (Gaussian,
  the bound is on ε at the claimed δ); only the releases the claim covers (up to
  ``position + W - 1``) are used; the exact path statistic at ``position = 1`` (or ``W >= T``),
  the held-out Fisher statistic otherwise;
* PFTAL: replace-one on one round's loss (gradient ``-L u`` vs ``+L u``); the
  points played reveal the tree's releases when the constraint set is large
  enough for the projection to stay inactive, then the tree's statistic;
* regularised PFTAL, private experts, private bandit FTAL, WDP-COCOP, WDP-COCOL
  (``audit_oco``): replace-one on one round's feedback, the adversarial choice documented per
  learner; the statistic is the held-out Fisher direction on the points played;
* AdaC-UCB: reward tables that differ in one reward of arm 0 (0 vs 1): its first (an episode of
  ``n = 1`` reward), or, through an Interactive-DP adversary's schedule of query arms, its third
  (``pull=3``: an episode of ``n = 2``, where the noise's scaling with ``n`` shows); the statistic
  is the round at which arm 0 is next recommended;
* AdaP-UCB and AdaP-KLUCB (``audit_adap_ucb``): AdaC-UCB's neighbours, schedules and statistic, claim ε
  (Laplace releases); ``forced=True`` puts ``pull = 1`` through the adversary's schedule too (arm 1 nearly
  noiseless), and a small public ``α`` keeps the index monotone in the release (at ``α = 3.1`` the
  bonus saturates the statistic: no power);
* DP-SE, LDP-UCB, DP-UCB and AdaC-GOPE-Var (``audit_bandit_release``): one reward of arm 0 replaced; the
  statistic is the released statistic their proofs privatise (the actions are its post-processing),
  read from the state: DP-SE's epoch-1 noisy mean, LDP-UCB's privatised report, DP-UCB's tree releases
  (arm 0 queried every round; the tree's exact path statistic), AdaC-GOPE-Var's phase-1 ``θ̃``;
* DP-FTRL (``audit_dp_ftrl``): PFTAL's replace-one adversary; the points reveal the tree's releases
  (``ṽ_t = -λ w_{t+1}``), then the tree's statistic;
* any learner, yours included, on the statistic its proof releases (``audit_release``, or
  ``audit_bandit_release(learner, ..., statistic=...)``): a state field or a function of the state after the
  last round, on two feedback tables that differ in one round (default: a bandit's round-1 reward of arm 0).

Clipping. Every component clips its inputs to a declared bound, so its claim covers any input.
A canary at the bound cannot tell a correct clip from a looser one; ``beyond_bound=True`` with a
canary beyond the bound (the trees, the other prefix-sum mechanisms, the window tree, PFTAL's
gradients, AdaC-UCB's rewards) can: a correct component shows the loss of a canary at the bound,
one that clips too loosely (or not at all) up to ``canary / bound`` times the claim (for ε;
its square for ρ). ``jaxpriv audit`` has ``2Δ`` rows for the binary tree's three families, Honaker's
tree, the square-root factorization, BLT and the window tree.

Not audited: MI-OGD and MI bandit OGD state mutual information, not DP, so no
hypothesis test between two neighbouring inputs lower-bounds their claim (the
mutual information is an average over the data distribution, not a worst case
over pairs); they are documented exclusions.

Layout (one job per module): ``_bounds`` (scores to a lower bound: Clopper–Pearson, the
ε / μ bounds from the rates, the threshold's selection, ``Audit``), ``_scores`` (outputs to
scores), ``_runs`` (canaries and the compiled, vmapped batches of runs), and the drivers
``_mechanisms`` (the trees and any prefix-sum mechanism), ``_learners`` (PFTAL, any learner,
the private OCO learners, DP-FTRL) and ``_bandits`` (AdaC-UCB, AdaP-UCB / AdaP-KLUCB, the bandits audited
on their released statistics).
"""

from jaxpriv.audit._bandits import adac_ucb_schedule, audit_adac_ucb, audit_adap_ucb, audit_bandit_release
from jaxpriv.audit._bounds import (
    KINDS,
    NOISE_FREE,
    Audit,
    Bound,
    betainc,
    ceiling,
    clopper_pearson,
    cp_lower,
    cp_upper,
    epsilon_from_rates,
    epsilon_lower_bound,
    gdp_mu_from_rates,
    gdp_mu_lower_bound,
    mu_to_rho,
    rho_to_mu,
)
from jaxpriv.audit._learners import LEARNERS, audit_dp_ftrl, audit_learner, audit_oco, audit_pftal, audit_release
from jaxpriv.audit._mechanisms import audit_prefix_sums, audit_tree, audit_window_tree
from jaxpriv.audit._scores import heldout_fisher_scores

__all__ = [
    "KINDS",
    "LEARNERS",
    "NOISE_FREE",
    "Audit",
    "Bound",
    "adac_ucb_schedule",
    "audit_adac_ucb",
    "audit_adap_ucb",
    "audit_bandit_release",
    "audit_dp_ftrl",
    "audit_learner",
    "audit_oco",
    "audit_pftal",
    "audit_prefix_sums",
    "audit_release",
    "audit_tree",
    "audit_window_tree",
    "betainc",
    "ceiling",
    "clopper_pearson",
    "cp_lower",
    "cp_upper",
    "epsilon_from_rates",
    "epsilon_lower_bound",
    "gdp_mu_from_rates",
    "gdp_mu_lower_bound",
    "heldout_fisher_scores",
    "mu_to_rho",
    "rho_to_mu",
]
