"""Scores to a lower bound: Clopper–Pearson, the ε and GDP-μ bounds from FPR/FNR, the threshold's selection.

Everything here is host-side float64 arithmetic on two samples of scores (NumPy, SciPy); the
drivers in ``_mechanisms``, ``_learners`` and ``_bandits`` produce the scores.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from statistics import NormalDist
from typing import Any, NamedTuple

import numpy as np
import scipy.special

from jaxpriv.mechanisms._noise import NoiseFamily, noise_family

_NORMAL = NormalDist()
KINDS = ("epsilon", "rho")  # what an ``Audit`` bounds: ε of (ε, δ)-DP, or ρ of a Gaussian mechanism


def betainc(a: float, b: float, x: float) -> float:
    """The regularised incomplete beta function ``I_x(a, b)`` in float64 (host side, ``scipy.special.betainc``).

    ``0`` for ``x <= 0`` and ``1`` for ``x >= 1``; ``I_x(k, n - k + 1) = P(Bin(n, x) >= k)`` for integers.
    """
    a, b, x = float(a), float(b), float(x)
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    return float(scipy.special.betainc(a, b, x))


def cp_lower(k: int, n: int, level: float) -> float:
    """One-sided Clopper–Pearson lower bound: ``P(p >= cp_lower) >= 1 - level`` for ``k ~ Bin(n, p)``.

    The Beta quantile ``B⁻¹(level; k, n-k+1)``: ``scipy.special.betaincinv``, the function behind
    ``scipy.stats.beta.ppf`` (without ``scipy.stats``'s import time).
    """
    k, n = _counts(k, n)
    return 0.0 if k == 0 else float(scipy.special.betaincinv(k, n - k + 1, level))


def cp_upper(k: int, n: int, level: float) -> float:
    """One-sided Clopper–Pearson upper bound: ``P(p <= cp_upper) >= 1 - level`` for ``k ~ Bin(n, p)``.

    The upper Beta quantile ``B⁻¹(1 - level; k+1, n-k)``: ``scipy.special.betainccinv`` at ``level``, the
    function behind ``scipy.stats.beta.isf``.
    """
    k, n = _counts(k, n)
    return 1.0 if k == n else float(scipy.special.betainccinv(k + 1, n - k, level))


def clopper_pearson(k: int, n: int, alpha: float = 0.05) -> tuple[float, float]:
    """The exact (Clopper & Pearson 1934) two-sided ``1 - alpha`` interval for a binomial proportion.

    ``lower = B⁻¹(alpha/2; k, n-k+1)`` and ``upper = B⁻¹(1-alpha/2; k+1, n-k)``, with
    ``B⁻¹`` the Beta quantile (``scipy.stats.beta``'s ``ppf`` for the lower end and ``isf`` at
    ``alpha/2`` for the upper, through ``scipy.special``); ``lower = 0`` for ``k = 0`` and ``upper = 1`` for ``k = n``.
    For ``k = 0`` the upper end is ``1 - (alpha/2)^(1/n)``, for ``k = n`` the lower end ``(alpha/2)^(1/n)``.

    Args:
      k: successes, an integer in ``0..n``.
      n: trials, an integer ``>= 1``.
      alpha: ``1 - confidence``.

    Returns:
      ``(lower, upper)``.

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
      ceiling: the largest lower bound this audit can return at its runs and confidence: the bound of a test
        that separates the two sides perfectly on the evaluated runs (``ceiling``). No lower bound can exceed it,
        so a claim above it cannot be refuted at these runs, whatever the component does.
      noiseless: the lower bound of the same audit (same neighbours, statistic, runs and keys) on a copy of the
        component without noise, where one was run (``None`` otherwise): the component at a budget
        ``NOISE_FREE`` times the claim, or a copy the caller gave. Below the claim, the statistic cannot see the
        canary well enough to refute even a component with no privacy at all.
      warning: why the audit has no power against its claim (``""`` when it has): the sentence of the
        ``UserWarning`` the audit emitted.
    """

    component: str
    kind: str
    claim: float
    lower: float
    confidence: float
    runs: int
    bound: Bound
    delta: float = 0.0
    ceiling: float = math.inf
    noiseless: float | None = None
    warning: str = ""

    @property
    def ratio(self) -> float:
        """``lower / claim``: above 1 refutes the claim at the stated confidence."""
        return self.lower / self.claim

    @property
    def power(self) -> float:
        """The largest lower bound the audit showed it can return: ``noiseless`` where it was run (capped by
        ``ceiling``), else ``ceiling``. Below ``claim``, a lower bound under the claim proves nothing."""
        return self.ceiling if self.noiseless is None else min(self.ceiling, self.noiseless)


#: The budget multiplier of the copy without noise an audit runs to measure its power (``Audit.noiseless``): the
#: noise scale falls by 10⁶ (ε) or 10³ (ρ), far below any canary, while the code that runs stays the same.
NOISE_FREE = 1e6


def ceiling(kind: str, n_a: int, n_b: int, alpha: float, delta: float = 0.0) -> float:
    """The largest lower bound ``finish`` can return from ``n_a`` / ``n_b`` evaluated runs per side.

    The bound of a test that calls every A-run A and every B-run B (``fpr = 0``, ``tpr = 1``), each rate replaced
    by its Clopper–Pearson end at level ``alpha / 2``: ``ε = log((α'^{1/n_b} - δ) / (1 - α'^{1/n_a}))`` or
    ``ρ = μ²/2`` with ``μ = Φ⁻¹(α'^{1/n_a}) - Φ⁻¹(1 - α'^{1/n_b})``, ``α' = alpha / 2``. E.g. 10000 evaluated runs
    per side at confidence 0.95: ε ≤ 7.9, ρ ≤ 22.8.
    """
    fpr_hi = cp_upper(0, n_a, alpha / 2)
    tpr_lo = cp_lower(n_b, n_b, alpha / 2)
    if kind == "rho":
        return mu_to_rho(gdp_mu_from_rates(fpr_hi, 1.0 - tpr_lo))
    return epsilon_from_rates(fpr_hi, tpr_lo, delta)


def budget_claim(params: Any, noise: NoiseFamily | str) -> tuple[str, float]:
    """``("rho", params.rho)`` for the Gaussian family, ``("epsilon", params.epsilon)`` otherwise."""
    kind = noise_family(noise).budget
    return kind, float(np.asarray(params.rho if kind == "rho" else params.epsilon))


def finish(component: str, kind: str, claim: float, scores: Any, alpha: float, runs: int, delta: float = 0.0) -> Audit:
    """The ``Audit`` of a component from its scores on A and B: the claim beside its lower bound.

    Args:
      component: the table's name.
      kind: ``"rho"`` (``gdp_mu_lower_bound``, reported as ``ρ = μ²/2``) or ``"epsilon"``
        (``epsilon_lower_bound`` at ``delta``).
      claim: the claimed ε or ρ.
      scores: ``[2, m]`` scores, side A then side B.
      alpha: ``1 - confidence``.
      runs: runs per side (reported).
      delta: the δ of an ``(ε, δ)`` claim.

    Returns:
      The ``Audit``, with its ``ceiling``; when the ceiling is below the claim, a ``UserWarning`` says the audit
      cannot refute the claim at these runs (and ``Audit.warning`` holds the sentence).
    """
    if kind == "rho":
        b = gdp_mu_lower_bound(scores[0], scores[1], alpha)
        result = Audit(component, kind, float(claim), mu_to_rho(b.value), b.confidence, runs, b)
    else:
        b = epsilon_lower_bound(scores[0], scores[1], alpha, delta=delta)
        result = Audit(component, kind, float(claim), b.value, b.confidence, runs, b, float(delta))
    top = ceiling(kind, b.fpr[1], b.tpr[1], alpha, float(delta))
    result = result._replace(ceiling=top)
    if top < result.claim:
        name = "ρ" if kind == "rho" else "ε"
        return _warn(
            result,
            f"{component}: this audit has no power against its claim: at {runs} runs per side and confidence "
            f"{result.confidence:g} the largest lower bound it can return is {name} >= {top:.3g}, below the claim "
            f"{result.claim:g}, so its lower bound cannot refute the claim: run more runs",
        )
    return result


def _warn(result: Audit, sentence: str) -> Audit:
    warnings.warn(sentence, UserWarning, stacklevel=4)
    return result._replace(warning=sentence)


def noise_free_params(params: Any, kind: str) -> Any | None:
    """``params`` with the budget of the claim (``rho`` for ``kind="rho"``, else ``epsilon``) ``NOISE_FREE`` times
    larger: the component's copy without noise; ``None`` when ``params`` is not a NamedTuple with that field."""
    field = "rho" if kind == "rho" else "epsilon"
    if field not in getattr(params, "_fields", ()) or getattr(params, field) is None:
        return None
    return params._replace(**{field: float(np.asarray(getattr(params, field), np.float64)) * NOISE_FREE})


def with_noise_free(result: Audit, rerun: Callable[[], Audit] | None, copy: str) -> Audit:
    """``result`` with the lower bound of ``rerun()`` (the same audit on a copy without noise, named ``copy``).

    Nothing is run when ``rerun`` is ``None``, when the ceiling is already below the claim (``finish`` warned) or
    when ``result`` refutes the claim (its power is shown). When
    the copy without noise is not refuted either, a ``UserWarning`` says so (the statistic does not see the
    canary) and ``Audit.warning`` holds the sentence.
    """
    if rerun is None or result.ceiling < result.claim or result.lower >= result.claim:
        return result  # no copy; no power at these runs (finish warned); or refuted: power shown
    with warnings.catch_warnings():  # the copy's own ceiling is this audit's
        warnings.simplefilter("ignore", UserWarning)
        free = rerun()
    result = result._replace(noiseless=free.lower)
    if free.lower < result.claim:
        name = "ρ" if result.kind == "rho" else "ε"
        return _warn(
            result,
            f"{result.component}: this audit has no power against its claim: {copy} is not refuted either "
            f"({name} >= {free.lower:.3g} against the claim {result.claim:g}): its statistic cannot tell the two "
            "neighbours apart well enough, and a lower bound below the claim proves nothing; audit the released "
            "statistic (jaxpriv.audit.audit_release(learner, ..., statistic=...)) or choose other neighbours",
        )
    return result
