"""The bandit driver: AdaC-UCB on reward tables that differ in one reward, and the Interactive-DP schedule."""

from __future__ import annotations

import math
from typing import Any

import jax.numpy as jnp
import numpy as np

from jaxpriv._base import Learner
from jaxpriv.audit._bounds import Audit, finish
from jaxpriv.audit._runs import check_runs, learner_runs
from jaxpriv.bandits.adac_ucb import adac_ucb


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
    runs = check_runs(runs)
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
    arms = learner_runs(learner, params, key, runs, tables, bandit=True, queries=queries)[:, :, :horizon]
    later = arms[:, :, free:] == 0
    first = np.where(later.any(-1), later.argmax(-1) + free + 1, horizon + 1)
    scores = -first.astype(np.float64)
    claim = float(np.asarray(params.rho))
    return finish(name or ("adac_ucb" if pull == 1 else f"adac_ucb[pull {pull}]"), "rho", claim, scores, alpha, runs)
