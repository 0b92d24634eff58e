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

What is audited here (``audit_tree``, ``audit_pftal``, ``audit_adac_ucb``, ``audit_prefix_sums``,
``audit_window_tree``, ``audit_learner`` / ``audit_oco``; ``jaxpriv audit`` prints them all):

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
  is the round at which arm 0 is next recommended.

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
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial
from statistics import NormalDist
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxpriv._base import Learner, Mechanism, as_key, engine_jit
from jaxpriv.mechanisms._accounting import tree_depth
from jaxpriv.mechanisms._tree import TreeParams
from jaxpriv.mechanisms._variance import describe

_NORMAL = NormalDist()
KINDS = ("epsilon", "rho")


# ----------------------------------------------------------------------------- the arithmetic


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (modified Lentz), float64 scalars."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c = 1.0
    d = 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 100001):
        m2 = 2 * m
        for aa in (m * (b - m) * x / ((qam + m2) * (a + m2)), -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))):
            d = 1.0 + aa * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + aa / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-16:
            break
    return h


def betainc(a: float, b: float, x: float) -> float:
    """The regularised incomplete beta function ``I_x(a, b)`` in float64 (host side, no SciPy).

    Numerical Recipes' continued fraction (modified Lentz) with the symmetry
    ``I_x(a,b) = 1 - I_{1-x}(b,a)`` for ``x > (a+1)/(a+b+2)``; relative accuracy about 1e-14.
    """
    a, b, x = float(a), float(b), float(x)
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x > (a + 1.0) / (a + b + 2.0):
        return 1.0 - front * _betacf(b, a, 1.0 - x) / b
    return front * _betacf(a, b, x) / a


def _beta_quantile(q: float, a: float, b: float) -> float:
    """``x`` with ``I_x(a, b) = q``, by bisection (80 halvings of [0, 1]: below float64 resolution)."""
    lo, hi = 0.0, 1.0
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        if betainc(a, b, mid) < q:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def cp_lower(k: int, n: int, level: float) -> float:
    """One-sided Clopper–Pearson lower bound: ``P(p >= cp_lower) >= 1 - level`` for ``k ~ Bin(n, p)``."""
    k, n = _counts(k, n)
    return 0.0 if k == 0 else _beta_quantile(level, k, n - k + 1)


def cp_upper(k: int, n: int, level: float) -> float:
    """One-sided Clopper–Pearson upper bound: ``P(p <= cp_upper) >= 1 - level`` for ``k ~ Bin(n, p)``."""
    k, n = _counts(k, n)
    return 1.0 if k == n else _beta_quantile(1.0 - level, k + 1, n - k)


def clopper_pearson(k: int, n: int, alpha: float = 0.05) -> tuple[float, float]:
    """The exact (Clopper & Pearson 1934) two-sided ``1 - alpha`` interval for a binomial proportion.

    ``lower = B⁻¹(alpha/2; k, n-k+1)`` and ``upper = B⁻¹(1-alpha/2; k+1, n-k)``, with
    ``B⁻¹`` the Beta quantile (bisection on the regularised incomplete beta); ``lower = 0``
    for ``k = 0`` and ``upper = 1`` for ``k = n``. For ``k = 0`` the upper end is
    ``1 - (alpha/2)^(1/n)``, for ``k = n`` the lower end ``(alpha/2)^(1/n)``.

    Raises:
      ValueError: ``n < 1``, ``k`` outside ``0..n`` or ``alpha`` outside (0, 1).
    """
    _alpha(alpha)
    return cp_lower(k, n, alpha / 2), cp_upper(k, n, alpha / 2)


def _counts(k: Any, n: Any) -> tuple[int, int]:
    if int(n) != n or n < 1:
        raise ValueError(f"n must be an integer >= 1, got {n!r}")
    if int(k) != k or not 0 <= k <= n:
        raise ValueError(f"k must be an integer in [0, n={n}], got {k!r}")
    return int(k), int(n)


def _alpha(alpha: float) -> float:
    if not 0.0 < float(alpha) < 1.0:
        raise ValueError(f"alpha must be in (0, 1) (the audit's confidence is 1 - alpha), got {alpha!r}")
    return float(alpha)


def epsilon_from_rates(fpr: float, tpr: float, delta: float = 0.0) -> float:
    """``log((tpr - δ) / fpr)``: the ε that a test with these rates requires of an ``(ε, δ)``-DP component.

    ``0`` when the test is no better than chance; ``inf`` when ``fpr = 0 < tpr - δ``.
    """
    num = tpr - delta
    if num <= 0 or num <= fpr:
        return 0.0
    return math.inf if fpr <= 0 else math.log(num / fpr)


def gdp_mu_from_rates(fpr: float, fnr: float) -> float:
    """``Φ⁻¹(1 - fpr) - Φ⁻¹(fnr)``: the μ a test with these rates requires of a μ-GDP component.

    Every μ-GDP component's trade-off curve lies above ``G_μ(α) = Φ(Φ⁻¹(1-α) - μ)``
    (Dong, Roth & Su 2022, Def. 2.4), so a test with rates ``(fpr, fnr)`` needs
    ``fnr >= G_μ(fpr)``, i.e. the returned μ. Clamped at 0 (chance), ``inf`` at a rate 0.
    """
    if fpr <= 0 or fnr <= 0:
        return math.inf if fpr + fnr < 1 else 0.0
    if fpr >= 1 or fnr >= 1:
        return 0.0
    return max(0.0, _NORMAL.inv_cdf(1.0 - fpr) - _NORMAL.inv_cdf(fnr))


def mu_to_rho(mu: float) -> float:
    """``ρ = μ²/2``: the zCDP parameter of the Gaussian mechanism that is exactly μ-GDP (``μ = Δ/σ``)."""
    return 0.5 * float(mu) ** 2


def rho_to_mu(rho: float) -> float:
    """``μ = sqrt(2ρ)``: the Gaussian mechanism with ``σ = Δ/sqrt(2ρ)`` is ``ρ``-zCDP and ``μ``-GDP."""
    return math.sqrt(2.0 * float(rho))


class Bound(NamedTuple):
    """An empirical lower bound on a privacy parameter, from two samples of scores.

    Attributes:
      value: the lower bound (ε for ``epsilon_lower_bound``, μ for ``gdp_mu_lower_bound``):
        the true parameter is at least ``value`` with probability ``>= confidence``.
      confidence: ``1 - alpha``.
      threshold: the threshold of the test; runs with ``score >= threshold`` (``tail=+1``)
        or ``score < threshold`` (``tail=-1``) are called "B".
      tail: ``+1`` or ``-1``.
      fpr: ``(count, n)`` of A-runs called B, on the evaluation sample.
      tpr: ``(count, n)`` of B-runs called B, on the evaluation sample.
      method: ``"holdout"`` or ``"union"``.
    """

    value: float
    confidence: float
    threshold: float
    tail: int
    fpr: tuple[int, int]
    tpr: tuple[int, int]
    method: str


def _rates(a: np.ndarray, b: np.ndarray, thresholds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Counts of ``score >= c`` in each sample, for every ``c`` (sorted search; no loop)."""
    a = np.sort(a)
    b = np.sort(b)
    ka = a.size - np.searchsorted(a, thresholds, side="left")
    kb = b.size - np.searchsorted(b, thresholds, side="left")
    return ka, kb


def _check_scores(scores: Any, name: str) -> np.ndarray:
    s = np.asarray(scores, np.float64).ravel()
    if s.size == 0 or not np.all(np.isfinite(s)):
        raise ValueError(f"{name} must be a non-empty array of finite scores, got {s.size} values")
    return s


def _min_runs(level: float) -> int:
    """The smallest sample for which a perfect test can give a positive bound: ``level^(1/n) > 1/2``."""
    return math.floor(math.log(1.0 / level) / math.log(2.0)) + 1


def _wilson(k: np.ndarray, n: int, z: float, side: float) -> np.ndarray:
    """The Wilson score interval's upper (``side=+1``) or lower (``-1``) end, vectorised."""
    p = k / n
    centre = p + z * z / (2 * n)
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return np.clip((centre + side * half) / (1 + z * z / n), 0.0, 1.0)


def _best(
    scores_a: np.ndarray,
    scores_b: np.ndarray,
    alpha: float,
    value: Callable[[float, float], float],
    thresholds: np.ndarray | None,
) -> Bound:
    """The best one-threshold test, with the threshold choice paid for (holdout or union bound)."""
    alpha = _alpha(alpha)
    a = _check_scores(scores_a, "scores_a")
    b = _check_scores(scores_b, "scores_b")

    def bound_of(ka, na, kb, nb, level):
        fpr_hi = cp_upper(int(ka), na, level)  # A called B
        tpr_lo = cp_lower(int(kb), nb, level)  # B called B
        return value(fpr_hi, tpr_lo)

    if thresholds is None:
        ha, hb = a.size // 2, b.size // 2
        need = 2 * _min_runs(alpha / 2)
        if min(a.size, b.size) < need:
            raise ValueError(
                f"sample too small for confidence {1 - alpha:g}: the held-out evaluation needs at least {need} "
                f"runs per side (half of them select the threshold), got {a.size} and {b.size}"
            )
        sel_a, ev_a, sel_b, ev_b = a[:ha], a[ha:], b[:hb], b[hb:]
        grid = np.unique(np.quantile(np.concatenate([sel_a, sel_b]), np.linspace(0.0, 1.0, 257)))
        z = _NORMAL.inv_cdf(1.0 - alpha / 2)
        best = (-np.inf, float(grid[0]), 1)
        for sign in (1, -1):  # the two tails; thresholds vectorised
            if sign > 0:
                ka, kb = _rates(sel_a, sel_b, grid)
            else:  # score < c: the complement of score >= c
                ka, kb = _rates(sel_a, sel_b, grid)
                ka, kb = ha - ka, hb - kb
            # selection only (validity comes from the held-out half): Wilson score ends, close to CP's
            fpr_hi = _wilson(ka, ha, z, 1.0)
            tpr_lo = _wilson(kb, hb, z, -1.0)
            vals = np.array([value(f, t) for f, t in zip(fpr_hi, tpr_lo, strict=True)])
            i = int(np.argmax(vals))
            if vals[i] > best[0]:
                best = (float(vals[i]), float(grid[i]), sign)
        _, c, sign = best
        fa = int(np.sum(ev_a >= c) if sign > 0 else np.sum(ev_a < c))
        fb = int(np.sum(ev_b >= c) if sign > 0 else np.sum(ev_b < c))
        v = bound_of(fa, ev_a.size, fb, ev_b.size, alpha / 2)
        return Bound(v, 1 - alpha, c, sign, (fa, ev_a.size), (fb, ev_b.size), "holdout")

    grid = np.asarray(thresholds, np.float64).ravel()
    if grid.size == 0 or not np.all(np.isfinite(grid)):
        raise ValueError("thresholds must be a non-empty list of finite numbers")
    level = alpha / (2 * 2 * grid.size)  # two CP bounds per test, two tails per threshold
    need = _min_runs(level)
    if min(a.size, b.size) < need:
        raise ValueError(
            f"sample too small for confidence {1 - alpha:g} over {2 * grid.size} tests: need at least {need} runs "
            f"per side, got {a.size} and {b.size}"
        )
    best_b = Bound(0.0, 1 - alpha, float(grid[0]), 1, (0, a.size), (0, b.size), "union")
    for c in grid:
        for sign in (1, -1):
            fa = int(np.sum(a >= c) if sign > 0 else np.sum(a < c))
            fb = int(np.sum(b >= c) if sign > 0 else np.sum(b < c))
            v = bound_of(fa, a.size, fb, b.size, level)
            if v > best_b.value:
                best_b = Bound(v, 1 - alpha, float(c), sign, (fa, a.size), (fb, b.size), "union")
    return best_b


def epsilon_lower_bound(
    scores_a: Any, scores_b: Any, alpha: float = 0.05, delta: float = 0.0, thresholds: Any = None
) -> Bound:
    """A ``1 - alpha`` lower bound on ε of an ``(ε, δ)``-DP component from scores on neighbours A and B.

    For a test "call B when ``score >= c``" (or ``< c``) with false-positive rate
    ``α`` (A called B) and true-positive rate ``1 - β``, ``(ε, δ)``-DP implies
    ``ε >= log((1 - β - δ) / α)`` (Kairouz, Oh & Viswanath 2015; Jagielski et al. 2020;
    Nasr et al. 2021). ``α`` is replaced by its Clopper–Pearson upper bound and ``1 - β``
    by its lower bound, each at level ``alpha/2``.

    The threshold choice is paid for in one of two ways:

    * ``thresholds=None`` (default): the first half of each sample selects the
      threshold and the tail (among 257 pooled quantiles), the second half
      evaluates that single test: the bound is valid at ``1 - alpha``.
    * ``thresholds`` given (data-independent!): every threshold and both tails are
      evaluated on the whole samples, with a union bound (each CP at level
      ``alpha / (4 · len(thresholds))``).

    Args:
      scores_a: scores of the runs on input A (any shape; flattened).
      scores_b: scores of the runs on input B; larger should mean "B".
      alpha: ``1 - confidence``.
      delta: the δ of the claim (0 for pure ε-DP).
      thresholds: optional fixed thresholds (see above).

    Returns:
      A ``Bound`` whose ``value`` is the lower bound on ε.

    Raises:
      ValueError: a sample too small for the confidence (the minimum named), a
        non-finite score, ``alpha`` outside (0, 1).
    """
    return _best(scores_a, scores_b, alpha, lambda f, t: epsilon_from_rates(f, t, delta), _opt(thresholds))


def gdp_mu_lower_bound(scores_a: Any, scores_b: Any, alpha: float = 0.05, thresholds: Any = None) -> Bound:
    """A ``1 - alpha`` lower bound on μ of a μ-Gaussian-DP component (Dong, Roth & Su 2022).

    ``μ >= Φ⁻¹(1 - α) - Φ⁻¹(β)`` for the test's false-positive rate ``α`` and
    false-negative rate ``β``, both replaced by their Clopper–Pearson upper bounds
    (level ``alpha/2`` each); the threshold choice is paid for as in
    ``epsilon_lower_bound``. For a Gaussian mechanism (σ calibrated to ρ-zCDP),
    ``μ = sqrt(2ρ)`` exactly, so ``mu_to_rho(value)`` lower-bounds its ρ. (For a
    ρ-zCDP component that is not a Gaussian mechanism the conversion is not a
    bound: zCDP does not imply ``sqrt(2ρ)``-GDP in general.)
    """
    return _best(scores_a, scores_b, alpha, lambda f, t: gdp_mu_from_rates(f, 1.0 - t), _opt(thresholds))


def _opt(thresholds: Any) -> np.ndarray | None:
    return None if thresholds is None else np.asarray(thresholds, np.float64)


# ----------------------------------------------------------------------------- audits


class Audit(NamedTuple):
    """The result of an audit: the claim and the empirical lower bound beside it.

    Attributes:
      component: a name for the table.
      kind: ``"epsilon"`` (ε-DP) or ``"rho"`` (ρ-zCDP of a Gaussian mechanism, via μ-GDP).
      claim: the claimed ε or ρ (for the whole stream / run, as documented by the component).
      lower: the empirical lower bound on the same parameter.
      confidence: ``1 - alpha``: ``lower`` is below the true parameter with at least this probability.
      runs: runs per side (A and B).
      bound: the underlying ``Bound`` (ε, or μ for ``kind="rho"``).
      delta: the δ of an ``(ε, δ)`` claim (``kind="epsilon"``; 0 for pure ε-DP): ``lower`` bounds ε at that δ.
    """

    component: str
    kind: str
    claim: float
    lower: float
    confidence: float
    runs: int
    bound: Bound
    delta: float = 0.0

    @property
    def ratio(self) -> float:
        """``lower / claim``: above 1 refutes the claim at the stated confidence."""
        return self.lower / self.claim


def _finish(component: str, kind: str, claim: float, scores: Any, alpha: float, runs: int, delta: float = 0.0) -> Audit:
    if kind == "rho":
        b = gdp_mu_lower_bound(scores[0], scores[1], alpha)
        return Audit(component, kind, float(claim), mu_to_rho(b.value), b.confidence, runs, b)
    b = epsilon_lower_bound(scores[0], scores[1], alpha, delta=delta)
    return Audit(component, kind, float(claim), b.value, b.confidence, runs, b, float(delta))


def _check_runs(runs: int) -> int:
    if int(runs) != runs or runs < 2:
        raise ValueError(f"runs must be an integer >= 2, got {runs!r}")
    return int(runs)


def _path_nodes(releases: np.ndarray, position: int, depth: int, horizon: int) -> np.ndarray:
    """The noisy tree nodes that contain the input at ``position``, from the releases ``[..., T, d]``.

    The node of level ``i`` holding ``position`` closes at ``t_c = (⌊(p-1)/2^i⌋ + 1) 2^i``. A release
    ``v_t`` sums the nodes at the set bits of ``t``, so only left children (even ``⌊(p-1)/2^i⌋``) and
    roots are ever released; such a node equals ``v_{t_c} - v_{t_c - 2^i}`` (``v_0 = 0``). Right
    children (never released: the canary's loss there is nil) and nodes closing after the horizon
    are skipped. Returns ``[..., levels, d]``.
    """
    nodes = []
    for i in range(depth):  # a host loop over the D levels
        close = (((position - 1) >> i) + 1) << i
        if close > horizon:
            break
        if ((position - 1) >> i) & 1:  # a right child: never part of a release
            continue
        prev = close - (1 << i)
        node = releases[..., close - 1, :] - (releases[..., prev - 1, :] if prev >= 1 else 0.0)
        nodes.append(node)
    return np.stack(nodes, axis=-2)


def _node_scores(nodes: np.ndarray, noise: str, low: float, high: float) -> np.ndarray:
    """The log-likelihood ratio (up to a factor) of B (canary ``high·e_1``) vs A (``low·e_1``), summed over nodes.

    Gaussian: ``Σ_i y_i1`` (exact LR). Laplace, and Gamma-norm in one dimension:
    ``Σ_i clip(y_i1, low, high)`` (exact LR: ``|y - low| - |y - high|`` is that clip up to a
    constant). Gamma-norm in ``d > 1``: ``Σ_i ||y_i - low e_1|| - ||y_i - high e_1||`` (exact).
    """
    nodes = np.asarray(nodes, np.float64)
    if noise == "gaussian":
        s = nodes[..., 0].sum(-1)
    elif noise == "laplace" or nodes.shape[-1] == 1:
        s = np.clip(nodes[..., 0], low, high).sum(-1)
    else:
        e = np.zeros(nodes.shape[-1])
        e[0] = 1.0
        s = (np.linalg.norm(nodes - low * e, axis=-1) - np.linalg.norm(nodes - high * e, axis=-1)).sum(-1)
    return np.round(s / (high - low), 9)  # exact atoms (clip) stay exact; float noise is not a threshold


@partial(engine_jit, static_argnums=(0, 4))
def _tree_batch(mechanism: Mechanism, params: Any, streams: jax.Array, keys: jax.Array, horizon: int) -> jax.Array:
    def one(xs, key):
        k_init, k_steps = jax.random.split(key)
        state = mechanism.init(k_init, params)

        def body(state, t):
            return mechanism.step(jax.random.fold_in(k_steps, t), state, xs[t - 1], t)

        return jax.lax.scan(body, state, jnp.arange(1, horizon + 1, dtype=jnp.int32))[1]

    return jax.vmap(lambda xs, ks: jax.vmap(lambda k: one(xs, k))(ks))(streams, keys)


def _canary_releases(
    mechanism: Mechanism,
    params: Any,
    key: Any,
    runs: int,
    horizon: int,
    dim: int,
    position: int,
    low: float,
    high: float,
) -> np.ndarray:
    """Releases ``[2, runs, T, d]`` of ``mechanism`` on the two canary streams (``low`` / ``high`` at ``position``)."""
    streams = np.zeros((2, horizon, dim), np.float32)
    streams[0, position - 1, 0], streams[1, position - 1, 0] = low, high
    keys = jax.random.split(as_key(key), 2 * runs).reshape(2, runs)
    p32 = jax.tree.map(lambda v: jnp.asarray(v, jnp.float32), params)
    return np.asarray(_tree_batch(mechanism, p32, jnp.asarray(streams), keys, horizon))


def _canary_ends(
    neighbouring: str, bound: float, canary: float | None, beyond_bound: bool = False
) -> tuple[float, float]:
    """The canary's two values, ``(0, c)`` (add/remove) or ``(-c, c)`` (replace); ``c = bound`` by default.

    A canary beyond the declared clipping bound needs ``beyond_bound=True``: the component
    clips every input to the bound, so its guarantee covers any input and a correct one
    shows the loss of a canary of exactly the bound; one that clips too loosely (or not
    at all) shows up to ``c / bound`` times the claim.
    """
    if canary is None:
        canary = bound
    canary = float(canary)
    if not (0 < canary <= bound * (1 + 1e-6) or (beyond_bound and canary > bound and math.isfinite(canary))):
        raise ValueError(
            f"canary must be in (0, {bound:g}] (the component's declared input bound), got {canary!r}; "
            "pass beyond_bound=True to audit the clipping with an input beyond the bound"
        )
    return (-canary, canary) if neighbouring == "replace" else (0.0, canary)


def _canary_label(bound: float, high: float) -> str:
    """``", canary 2Δ"`` for a canary beyond the bound (the table's name), ``""`` otherwise."""
    return f", canary {high / bound:g}Δ" if high > bound * (1 + 1e-6) else ""


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
    of the noisy nodes on the canary's path (``_node_scores``), recovered from the releases:
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
    info = _declared(mechanism)
    if info.name != "binary_tree":
        raise ValueError(f"audit_tree audits binary_tree mechanisms, got {info.name!r}")
    runs = _check_runs(runs)
    if mechanism.check is not None:
        mechanism.check(params)
    horizon, dim, noise = info.horizon, info.dim, info.noise
    if not 1 <= int(position) <= horizon:
        raise ValueError(f"position must be in [1, {horizon}] (the tree's horizon), got {position!r}")
    bound = float(np.asarray(params.sensitivity))
    low, high = _canary_ends(info.neighbouring, bound, canary, beyond_bound)
    releases = _canary_releases(mechanism, params, key, runs, horizon, dim, int(position), low, high)
    nodes = _path_nodes(releases, int(position), tree_depth(horizon), horizon)
    scores = _node_scores(nodes, noise, low, high)
    kind = "rho" if noise == "gaussian" else "epsilon"
    claim = float(np.asarray(params.rho if kind == "rho" else params.epsilon))
    label = name or f"binary_tree[{noise}, {info.neighbouring}{_canary_label(bound, high)}]"
    return _finish(label, kind, claim, scores, alpha, runs)


@partial(engine_jit, static_argnums=(0, 4, 5))
def _learner_batch(
    learner: Learner,
    params: Any,
    tables: jax.Array,
    keys: jax.Array,
    horizon: int,
    bandit: bool,
    queries: jax.Array | None = None,
) -> jax.Array:
    """Actions ``[2, runs, T + 1, ...]`` of ``learner`` on two feedback tables (``[2, T, ...]``).

    Full information: the feedback at ``t`` is ``table[t-1]`` (a gradient). Bandit: ``table[t-1, a_t]``.
    The last action is the one the learner would play at ``T + 1`` (full information only; bandits
    repeat ``a_T``). Bandit ``queries`` (int32 ``[T]``, optional): the Interactive-DP adversary's
    query arm ``q_t`` (``-1``: the recommended arm ``a_t``); the learner is updated with ``q_t`` and
    ``table[t-1, q_t]``, and the recommendations ``a_t`` (its view) are returned.
    """

    def one(table, key):
        k_init, k_run = jax.random.split(key)
        state = learner.init(k_init, params)

        def body(state, t):
            k_act, k_upd = jax.random.split(jax.random.fold_in(k_run, t))
            a = learner.act(k_act, state, t)
            pulled = a if queries is None else jnp.where(queries[t - 1] >= 0, queries[t - 1], a).astype(a.dtype)
            fb = table[t - 1, pulled] if bandit else table[t - 1]
            return learner.update(k_upd, state, pulled, fb, t), a

        state, actions = jax.lax.scan(body, state, jnp.arange(1, horizon + 1, dtype=jnp.int32))
        last = actions[-1] if bandit else learner.act(k_run, state, horizon + 1)
        return jnp.concatenate([actions, last[None]], axis=0)

    return jax.vmap(lambda tab, ks: jax.vmap(lambda k: one(tab, k))(ks))(tables, keys)


def audit_pftal(
    params: Any,
    key: Any,
    runs: int = 20000,
    *,
    horizon: int = 8,
    noise: str = "gamma",
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
    from jaxpriv.oco.pftal import pftal
    from jaxpriv.sets import l2_ball

    runs = _check_runs(runs)
    learner = pftal(horizon, l2_ball(1, 1e4), None if mechanism is not None else noise, mechanism)
    if mechanism is not None:
        info = describe(mechanism)
        if info.name != "binary_tree":
            raise ValueError(f"audit_pftal's statistic needs a binary_tree mechanism, got {info.name!r}")
        noise = info.noise
    learner.check(params)
    if not 1 <= int(position) <= horizon:
        raise ValueError(f"position must be in [1, {horizon}], got {position!r}")
    lip = float(np.asarray(params.lipschitz))
    low, high = _canary_ends("replace", lip, canary, beyond_bound)
    tables = np.zeros((2, horizon, 1), np.float32)
    tables[0, position - 1, 0], tables[1, position - 1, 0] = low, high
    keys = jax.random.split(as_key(key), 2 * runs).reshape(2, runs)
    p32 = jax.tree.map(lambda v: jnp.asarray(v, jnp.float32), params)
    w = np.asarray(_learner_batch(learner, p32, jnp.asarray(tables), keys, horizon, False), np.float64)
    h = float(np.asarray(params.strong_convexity))
    t = np.arange(1, horizon + 1)[:, None]
    releases = h * (np.cumsum(w[:, :, :-1], axis=2) - t * w[:, :, 1:])  # v_t for t = 1..T
    # the tree saw gradients -c / +c; its node LLR is that of the tree with canary ends (-c, c)
    nodes = _path_nodes(releases, int(position), tree_depth(horizon), horizon)
    scores = _node_scores(nodes, noise, low, high)
    kind = "rho" if noise == "gaussian" else "epsilon"
    claim = float(np.asarray(params.rho if kind == "rho" else params.epsilon))
    label = f"pftal[{noise}{', gradient ' + format(high / lip, 'g') + 'L' if high > lip * (1 + 1e-6) else ''}]"
    return _finish(name or label, kind, claim, scores, alpha, runs)


def adac_ucb_schedule(pull: int, warmup: int = 16) -> tuple[np.ndarray, int, int, int]:
    """The Interactive-DP adversary of ``audit_adac_ucb`` for a canary at arm 0's ``pull``-th pull (``pull >= 2``).

    Queries (the arm whose reward the policy receives, whatever it recommends): round 1 arm 0
    (its first pull), rounds ``2..1+warmup`` arm 1, then arm 0 for its pulls ``2..E``,
    ``E = 2^ceil(log2 pull)``: with per-arm doubling, arm ``a``'s episodes are its pulls ``{1}``,
    ``{2}``, ``{3, 4}``, ``{5..8}``, ..., so the pull lands in the episode of pulls ``E/2+1..E``,
    whose released mean averages ``n = E/2`` rewards; it closes at round ``t_f = warmup + E``.
    After ``t_f`` the adversary queries the recommended arm (``-1``).

    Returns:
      ``(queries, canary_round, n, t_f)``: int32 queries ``[t_f]`` (pad with ``-1``), the
      1-based round of the canary pull, the episode's sample count, the last forced round.

    Raises:
      ValueError: ``pull < 2``, or ``warmup`` not a power of two ``>= 2`` (arm 1's last
        warm-up episode must close).
    """
    if int(pull) != pull or pull < 2:
        raise ValueError(f"pull must be an integer >= 2 for a forced schedule, got {pull!r}")
    if int(warmup) != warmup or warmup < 2 or warmup & (warmup - 1):
        raise ValueError(f"warmup must be a power of two >= 2 (arm 1's last episode closes), got {warmup!r}")
    pull, warmup = int(pull), int(warmup)
    end = 1 << (pull - 1).bit_length()  # E: the last pull of the episode holding ``pull``
    queries = np.concatenate([[0], np.ones(warmup), np.zeros(end - 1)]).astype(np.int32)
    return queries, 1 + warmup + (pull - 1), end // 2, warmup + end


def audit_adac_ucb(
    params: Any,
    key: Any,
    runs: int = 20000,
    *,
    horizon: int = 64,
    learner: Learner | None = None,
    alpha: float = 0.05,
    canary: float = 1.0,
    beyond_bound: bool = False,
    pull: int = 1,
    warmup: int = 16,
    name: str | None = None,
) -> Audit:
    """Audit AdaC-UCB (``jaxpriv.bandits.adac_ucb``, two arms) with reward tables that differ in one round.

    Neighbours (event-level replace-one on the reward table, the ρ-Interactive zCDP
    relation the policy claims, thesis Def. 3.5): the two tables differ in one reward of arm 0,
    0 (A) or ``canary`` (B, default 1: the full range ``[0, 1]``). Each released mean is
    ``(sum of the episode's n rewards)/n + N(0, 1/(2ρ n²))``: the canary moves exactly one of
    them, by ``canary/n``, which the noise ``1/(n sqrt(2ρ))`` makes a ``sqrt(2ρ)``-GDP release
    (for ``canary = 1``) at every ``n``. Claim: ρ (a Gaussian mechanism: μ-GDP with ``μ = sqrt(2ρ)``).

    * ``pull = 1`` (default): every reward is 0 except round 1's reward of arm 0 (its first
      pull). It enters only arm 0's first released mean ``μ̃_0 = r + N(0, 1/(2ρ))`` (``n = 1``),
      which stays in the index until arm 0 is chosen again; the statistic is minus the round at
      which arm 0 is next recommended (``-(T+1)`` if never), a monotone function of ``μ̃_0`` up to
      the later noise of arm 1. At ``n = 1`` the noise ``1/(n sqrt(2ρ))`` does not depend on how
      it scales with ``n``.
    * ``pull >= 2``: the canary is arm 0's ``pull``-th reward, in an episode of
      ``n = 2^(ceil(log2 pull) - 1)`` rewards (``pull = 3``: ``n = 2``), so the audit sees the noise's
      scaling with ``n``. The Interactive-DP adversary (paper Def. 4: it chooses the arm whose
      reward the policy receives, from a fixed table; the policy's view is its recommendations)
      fixes the schedule (``adac_ucb_schedule``): arm 0's first pull, ``warmup`` pulls of arm 1
      (reward 1, so arm 1's released mean is ``1 ± 1/((warmup/2) sqrt(2ρ))``, nearly noiseless),
      arm 0's pulls up to the end of the canary's episode (rewards 0 but the canary), then the
      recommended arms. Statistic: minus the first round after that at which arm 0 is
      recommended, a monotone function of ``μ̃_0 - μ̃_1`` while arm 0 is not replayed.

    Args:
      params: ``AdaCUCBParams``.
      key: PRNG key or integer seed.
      runs: runs per side.
      horizon: rounds per run.
      learner: the policy to audit (default ``adac_ucb(2)``); two arms.
      alpha: ``1 - confidence``.
      canary: the differing reward of arm 0 in table B (default 1, the declared bound).
      beyond_bound: allow ``canary > 1``: a reward outside the declared range that a correct
        policy clips (``clip_rewards=True``); this audits the clipping itself.
      pull: arm 0's pull that carries the canary (1: round 1, no forced schedule; ``>= 2``: the
        adversary's schedule above).
      warmup: arm 1's forced pulls for ``pull >= 2`` (a power of two).

    Raises:
      ValueError: ``canary`` outside ``(0, 1]`` without ``beyond_bound``; a bad ``pull`` or
        ``warmup``; a horizon that ends before the forced schedule; too few runs; bad params.
    """
    from jaxpriv.bandits.adac_ucb import adac_ucb

    runs = _check_runs(runs)
    learner = adac_ucb(2) if learner is None else learner
    if learner.check is not None:
        learner.check(params)
    if not (0 < canary <= 1 or (beyond_bound and canary > 1 and math.isfinite(canary))):
        raise ValueError(
            f"canary must be in (0, 1] (AdaC-UCB's declared reward range), got {canary!r}; "
            "pass beyond_bound=True to audit the clipping with a reward outside the range"
        )
    if int(pull) != pull or pull < 1:
        raise ValueError(f"pull must be an integer >= 1, got {pull!r}")
    tables = np.zeros((2, horizon, 2), np.float32)
    queries = None
    if pull == 1:
        tables[1, 0, 0] = canary
        free = 2  # rounds 1, 2 are the initial pulls
    else:
        forced, canary_round, _, free = adac_ucb_schedule(int(pull), warmup)
        if horizon <= free:
            raise ValueError(f"horizon must be > {free} (the forced schedule for pull={pull}), got {horizon!r}")
        queries = jnp.asarray(np.concatenate([forced, np.full(horizon - free, -1, np.int32)]))
        tables[:, :, 1] = 1.0
        tables[1, canary_round - 1, 0] = canary
    keys = jax.random.split(as_key(key), 2 * runs).reshape(2, runs)
    p32 = jax.tree.map(lambda v: jnp.asarray(v, jnp.float32), params)
    batch = _learner_batch(learner, p32, jnp.asarray(tables), keys, horizon, True, queries)
    arms = np.asarray(batch)[:, :, :horizon]
    later = arms[:, :, free:] == 0
    first = np.where(later.any(-1), later.argmax(-1) + free + 1, horizon + 1)
    scores = -first.astype(np.float64)
    claim = float(np.asarray(params.rho))
    return _finish(name or ("adac_ucb" if pull == 1 else f"adac_ucb[pull {pull}]"), "rho", claim, scores, alpha, runs)


# ----------------------------------------------------------------------------- generic audits (held-out statistic)


def heldout_fisher_scores(features: Any) -> np.ndarray:
    """Scores from a linear statistic learned on a held-out half of the runs (Fisher's discriminant).

    ``features`` is ``[2, runs, k]`` (side A, side B). The first ``runs // 2`` runs of each side
    estimate the mean difference ``m = mean_B - mean_A`` and the pooled within-side covariance
    ``Σ``; the direction ``w = (Σ + λI)⁻¹ m`` (``λ`` a 1e-9 relative ridge, for features that
    never vary, e.g. a saturated projection) scores the other runs, ``s = <w, x>``. For
    releases ``y = μ_side + Gaussian noise`` with a common covariance, ``<w, y>`` is the exact
    log-likelihood-ratio statistic up to the estimation error of ``w``; for any other noise it is
    a valid, weaker statistic. The direction depends on the held-out runs only, so the evaluated
    runs stay independent of it and the confidence of the bound stays honest.

    Returns ``[2, runs - runs // 2]`` float64 scores (larger means "B").

    Raises:
      ValueError: fewer than 4 runs per side, or non-finite features.
    """
    x = np.asarray(features, np.float64)
    if x.ndim != 3 or x.shape[0] != 2 or x.shape[1] < 4:
        raise ValueError(f"features must be [2, runs >= 4, k] (half of the runs learn the statistic), got {x.shape}")
    if not np.all(np.isfinite(x)):
        raise ValueError("features must be finite")
    half = x.shape[1] // 2
    train, test = x[:, :half], x[:, half:]
    means = train.mean(axis=1)
    centred = (train - means[:, None]).reshape(-1, x.shape[2])
    cov = centred.T @ centred / max(centred.shape[0] - 2, 1)
    ridge = 1e-9 * max(float(np.trace(cov)) / x.shape[2], 1e-30)
    w = np.linalg.solve(cov + ridge * np.eye(x.shape[2]), means[1] - means[0])
    return test @ w


def _declared(mechanism: Mechanism) -> Any:
    try:
        return describe(mechanism)
    except ValueError as err:
        raise ValueError(f"cannot audit a component without a declared neighbouring relation: {err}") from None


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
    info = _declared(mechanism)
    runs = _check_runs(runs)
    if mechanism.check is not None:
        mechanism.check(params)
    if not 1 <= int(position) <= info.horizon:
        raise ValueError(f"position must be in [1, {info.horizon}] (the mechanism's horizon), got {position!r}")
    bound = float(np.asarray(params.sensitivity))
    low, high = _canary_ends(info.neighbouring, bound, canary, beyond_bound)
    releases = _canary_releases(mechanism, params, key, runs, info.horizon, info.dim, int(position), low, high)
    scores = heldout_fisher_scores(releases[..., 0])
    kind = "rho" if info.noise == "gaussian" else "epsilon"
    claim = float(np.asarray(params.rho if kind == "rho" else params.epsilon))
    label = name or f"{info.name}[{info.noise}, {info.neighbouring}{_canary_label(bound, high)}]"
    return _finish(label, kind, claim, scores, alpha, runs)


def audit_window_tree(
    params: Any,
    key: Any,
    runs: int = 20000,
    *,
    horizon: int = 8,
    window: int = 4,
    noise: str = "gamma",
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
    from jaxpriv.mechanisms._window_tree import window_levels, window_tree

    runs = _check_runs(runs)
    built = window_tree(horizon, 1, window, noise, neighbouring, calibration)  # validates the static arguments
    mechanism = built if mechanism is None else mechanism
    if mechanism.check is not None:
        mechanism.check(params)
    if not 1 <= int(position) <= horizon:
        raise ValueError(f"position must be in [1, {horizon}] (the tree's horizon), got {position!r}")
    bound = float(np.asarray(params.sensitivity))
    low, high = _canary_ends(neighbouring, bound, canary, beyond_bound)
    releases = _canary_releases(mechanism, params, key, runs, horizon, 1, int(position), low, high)
    m = window_levels(window, horizon)
    if window >= horizon or int(position) == 1:  # the path nodes are the binary tree's, recovered exactly
        span = horizon if window >= horizon else 2**m
        nodes = _path_nodes(releases[:, :, :span], int(position), m + 1, span)
        scores = _node_scores(nodes, noise, low, high)
        scores = np.stack([scores[0], scores[1]])
    else:
        covered = min(horizon, int(position) + int(window) - 1)
        scores = heldout_fisher_scores(releases[:, :, :covered, 0])
    delta = float(np.asarray(params.delta)) if noise == "gaussian" else 0.0
    label = name or f"window_tree[{noise}, {neighbouring}, W={window}{_canary_label(bound, high)}]"
    return _finish(label, "epsilon", float(np.asarray(params.epsilon)), scores, alpha, runs, delta)


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
) -> Audit:
    """Audit a full-information (or loss-value) learner on two neighbouring feedback tables.

    ``tables`` is ``[2, T, ...]``: the feedback revealed at round ``t`` is ``tables[side, t-1]``
    (a gradient, a cost vector, or a loss value; an adaptive adversary can reveal it whatever
    the learner plays, e.g. the gradient of a linear loss plus a quadratic centred at the
    played point). The tables must differ in one round only: that is the replace-one (or
    add/remove) relation the claim is about, and the caller names the adversarial choice.
    All ``2 × runs`` runs are one compiled, vmapped batch (``_learner_batch``). Statistic:
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

    Raises:
      ValueError: ``kind`` unknown; tables that are not two of the same shape, or that differ
        in no round or in more than one; ``points`` or ``interact`` out of range; too few runs.
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    runs = _check_runs(runs)
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
    if learner.check is not None:
        learner.check(params)
    keys = jax.random.split(as_key(key), 2 * runs).reshape(2, runs)
    p32 = jax.tree.map(lambda v: jnp.asarray(v, jnp.float32), params)
    w = np.asarray(_learner_batch(learner, p32, jnp.asarray(tab), keys, horizon, False), np.float64)
    w = w.reshape(2, runs, horizon + 1, -1)
    feats = w[:, :, :points].reshape(2, runs, -1)
    if interact is not None:
        if not 1 <= int(interact) <= points:
            raise ValueError(f"interact must be in [1, points={points}], got {interact!r}")
        feats = np.concatenate([feats, feats * w[:, :, int(interact) - 1, :1]], axis=-1)
    return _finish(name, kind, float(claim), heldout_fisher_scores(feats), alpha, runs, delta)


LEARNERS = ("regularized_pftal", "private_experts", "private_bandit_ftal", "wdp_cocop", "wdp_cocol")


def audit_oco(
    learner: str,
    key: Any,
    runs: int = 20000,
    *,
    noise: str = "gamma",
    horizon: int = 8,
    position: int = 1,
    window: int = 4,
    params: Any = None,
    alpha: float = 0.05,
    name: str | None = None,
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
    than the mechanism's.

    Raises:
      ValueError: an unknown learner (the known ones named) or noise family; ``position``
        outside ``[1, T]``; too few runs.
    """
    import importlib

    from jaxpriv import sets

    rp, pe, pbf, cp, cl = (importlib.import_module(f"jaxpriv.oco.{m}") for m in LEARNERS)

    if learner not in LEARNERS:
        raise ValueError(f"learner must be one of {LEARNERS}, got {learner!r}")
    if not 1 <= int(position) <= horizon:
        raise ValueError(f"position must be in [1, {horizon}], got {position!r}")
    i = int(position) - 1
    kind = "rho" if noise == "gaussian" and not learner.startswith("wdp") else "epsilon"
    budget = {"rho": 0.5} if kind == "rho" else {"epsilon": 1.0}  # exactly the budget of the family
    delta, points, interact = 0.0, None, None
    if learner == "regularized_pftal":
        model = rp.regularized_pftal(horizon, sets.l2_ball(1, 1.0), noise)
        if params is None:
            params = rp.RegularizedPFTALParams(**budget, lipschitz=1.0, strong_convexity=0.1)
        tables = np.zeros((2, horizon, 1), np.float32)
        tables[0, i], tables[1, i] = -float(params.lipschitz), float(params.lipschitz)
    elif learner == "private_experts":
        model = pe.private_experts(horizon, 2, noise)
        if params is None:
            params = pe.PrivateExpertsParams(**budget, strong_convexity=0.1)
        tables = np.zeros((2, horizon, 2), np.float32)
        tables[0, i, 0], tables[1, i, 1] = 1.0, 1.0
    elif learner == "private_bandit_ftal":
        model = pbf.private_bandit_ftal(horizon, sets.l2_ball(1, 1.0), noise)
        if params is None:
            params = pbf.PrivateBanditFTALParams(**budget, loss_bound=1.0)
        tables = np.zeros((2, horizon), np.float32)
        tables[0, i], tables[1, i] = -float(params.loss_bound), float(params.loss_bound)
        interact, points = int(position), horizon  # no point is played at T + 1 (it is NaN)
    else:
        constraint = sets.l2_ball(1, 1.0) if learner == "wdp_cocop" else sets.simplex(2)
        factory = cp.wdp_cocop if learner == "wdp_cocop" else cl.wdp_cocol
        model = factory(horizon, constraint, window, noise, "replace")
        if params is None:  # window ε-DP (Gamma) or window (ε, δ)-DP (Gaussian): δ only for the Gaussian family
            delta_budget = 1e-5 if noise == "gaussian" else None
            params = cp.WDPParams(epsilon=1.0, delta=delta_budget, lipschitz=1.0, strong_convexity=1.0)
        tables = np.zeros((2, horizon, constraint.dim), np.float32)
        tables[0, i, 0], tables[1, i, 0] = -float(params.lipschitz), float(params.lipschitz)
        points = min(horizon, int(position) + window - 1) + 1
        delta = float(params.delta) if noise == "gaussian" else 0.0
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
    )


__all__ = [
    "KINDS",
    "LEARNERS",
    "Audit",
    "Bound",
    "adac_ucb_schedule",
    "audit_adac_ucb",
    "audit_learner",
    "audit_oco",
    "audit_pftal",
    "audit_prefix_sums",
    "audit_tree",
    "audit_window_tree",
    "betainc",
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
