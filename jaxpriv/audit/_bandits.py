"""The bandit driver: AdaC-UCB on reward tables that differ in one reward, and the Interactive-DP schedule."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxpriv._base import Learner
from jaxpriv.audit._bounds import NOISE_FREE, Audit, finish, noise_free_params, with_noise_free
from jaxpriv.audit._learners import audit_release
from jaxpriv.audit._runs import check_runs, learner_runs, learner_states
from jaxpriv.audit._scores import node_scores, path_nodes
from jaxpriv.bandits.adac_gope_var import adac_gope_var
from jaxpriv.bandits.adac_ucb import adac_ucb
from jaxpriv.bandits.adap_klucb import adap_klucb
from jaxpriv.bandits.adap_ucb import adap_ucb
from jaxpriv.bandits.dp_se import dp_se
from jaxpriv.bandits.dp_ucb import CENTRE, dp_ucb
from jaxpriv.bandits.hanna_gope import hanna_gope
from jaxpriv.bandits.ldp_ucb import ldp_ucb
from jaxpriv.bandits.li_zhou_ji_gope import li_zhou_ji_gope
from jaxpriv.mechanisms._accounting import tree_depth
from jaxpriv.mechanisms._noise import GAUSSIAN, LAPLACE, NoiseFamily


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
    forced: bool = False,
    level: float = 1.0,
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
      params: ``AdaCUCBParams`` (claim: ρ), or the params of another policy on the same skeleton
        (``learner``): the claim is their ``rho`` if set, else their ``epsilon`` (ε-DP, e.g. AdaP-UCB).
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
      forced: with ``pull = 1``, the adversary's schedule too: arm 0 at round 1 (the canary, ``n = 1``),
        then ``warmup`` pulls of arm 1, then the recommended arms (arm 1's release is then nearly
        noiseless, which the Laplace policies need: at ``n = 1`` arm 1's noise is as large as arm 0's).
      level: arm 1's reward in the forced schedules (default 1).

    Raises:
      ValueError: ``canary`` outside ``(0, 1]`` without ``beyond_bound``; a bad ``pull`` or
        ``warmup``; a horizon that ends before the forced schedule; too few runs; bad params.
    """
    runs = check_runs(runs)
    label = "adac_ucb"
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
    if pull == 1 and forced:
        free = 1 + warmup
        if horizon <= free:
            raise ValueError(f"horizon must be > {free} (the forced schedule for pull=1), got {horizon!r}")
        adac_ucb_schedule(2, warmup)  # validates warmup
        queries = jnp.asarray(np.concatenate([[0], np.ones(warmup), np.full(horizon - free, -1)]).astype(np.int32))
        tables[:, :, 1] = level
        tables[1, 0, 0] = canary
    elif pull == 1:
        tables[1, 0, 0] = canary
        free = 2  # rounds 1, 2 are the initial pulls
    else:
        forced, canary_round, _, free = adac_ucb_schedule(int(pull), warmup)
        if horizon <= free:
            raise ValueError(f"horizon must be > {free} (the forced schedule for pull={pull}), got {horizon!r}")
        queries = jnp.asarray(np.concatenate([forced, np.full(horizon - free, -1, np.int32)]))
        tables[:, :, 1] = level
        tables[1, canary_round - 1, 0] = canary
    arms = learner_runs(learner, params, key, runs, tables, bandit=True, queries=queries)[:, :, :horizon]
    later = arms[:, :, free:] == 0
    first = np.where(later.any(-1), later.argmax(-1) + free + 1, horizon + 1)
    scores = -first.astype(np.float64)
    kind, claim = budget_claim(params)
    label = label if pull == 1 and not forced else f"{label}[pull {pull}{', forced' if pull == 1 else ''}]"
    return finish(name or label, kind, claim, scores, alpha, runs)


def _float32_tree(params: Any) -> Any:
    return jax.tree.map(lambda v: jnp.asarray(v, jnp.float32), params)


def budget_claim(params: Any) -> tuple[str, float]:
    """``("rho", ρ)`` for params with a ρ budget (a Gaussian mechanism), else ``("epsilon", ε)``."""
    rho = getattr(params, "rho", None)
    if rho is not None:
        return "rho", float(np.asarray(rho))
    return "epsilon", float(np.asarray(params.epsilon))


def audit_adap_ucb(
    params: Any,
    key: Any,
    runs: int = 20000,
    *,
    klucb: bool = False,
    learner: Learner | None = None,
    **kwargs: Any,
) -> Audit:
    """Audit AdaP-UCB (``jaxpriv.bandits.adap_ucb``) or AdaP-KLUCB (``klucb=True``), two arms: ``audit_adac_ucb``.

    The same skeleton, neighbours, schedules (``pull=1``, ``pull>=2``) and statistic as AdaC-UCB's audit;
    each released mean is ``(sum of n rewards)/n + Lap(1/(ε n))``, the Laplace mechanism with sensitivity
    ``1/n``: ε-DP at every ``n``. Claim: ``params.epsilon`` (ε-DP). ``kwargs``: those of ``audit_adac_ucb``.
    For AdaP-KLUCB, ``μ̆ = Clip_{0,1}(μ̃ + α log(t)/(ε n))`` saturates at 1 (the shift is ``3.4`` at
    ``α = 3.1``, ``t = 3``): a small ``α`` (the table's 0.01) keeps the index a strictly monotone function
    of ``μ̃`` on the canary's range, so the statistic sees the release (α is public and does not enter ε).
    """
    name = "adap_klucb" if klucb else "adap_ucb"
    if learner is None:
        learner = adap_klucb(2) if klucb else adap_ucb(2)
    pull, forced = kwargs.get("pull", 1), kwargs.get("forced", False)
    suffix = "" if pull == 1 and not forced else f"[pull {pull}{', forced' if pull == 1 else ''}]"
    kwargs.setdefault("name", name + suffix)
    return audit_adac_ucb(params, key, runs, learner=learner, **kwargs)


RELEASE_BANDITS = ("dp_se", "dp_ucb", "ldp_ucb", "adac_gope_var", "hanna_gope", "li_zhou_ji_gope")
# The GOPE family audited through phase 1's θ̃ (standard-basis actions): its builder and the score's noise family.
_GOPE_RELEASES = {"adac_gope_var": (adac_gope_var, GAUSSIAN), "hanna_gope": (hanna_gope, LAPLACE),
                  "li_zhou_ji_gope": (li_zhou_ji_gope, GAUSSIAN)}  # fmt: skip


def audit_bandit_release(
    component: str | Learner,
    params: Any,
    key: Any,
    runs: int = 20000,
    *,
    horizon: int = 8,
    noise: NoiseFamily | str = "laplace",
    learner: Learner | None = None,
    alpha: float = 0.05,
    canary: float = 1.0,
    beyond_bound: bool = False,
    name: str | None = None,
    statistic: str | Callable[[Any], Any] | None = None,
    noiseless: bool | Learner | None = None,
) -> Audit:
    """Audit a bandit whose privacy is that of a released statistic in its state: DP-SE, DP-UCB, LDP-UCB (two arms).

    ``component`` a ``Learner`` (a policy of yours): ``audit_release(component, params, key, runs,
    statistic=statistic, horizon=horizon, canary=canary, ...)``: the statistic you name (a state field, or a
    function of the state) after round ``horizon``, on reward tables that differ in round 1's reward of arm 0;
    ``noiseless`` (default ``True`` there) measures the audit's power on a copy without noise.

    Neighbours: reward tables that differ in arm 0's first reward, 0 (A) or ``canary`` (B, default 1, the
    bound of ``[0, 1]``). The policies' proofs release a statistic (the actions are post-processing of
    it), so the statistic audited is that release, read from the state after each round (``learner_states``):

    * ``"dp_se"``: the noisy mean of arm 0 at the end of epoch 1, ``(sum of R_1 rewards)/R_1 + Lap(1/(ε R_1))``
      (``state.released``; the run lasts the ``2 R_1`` rounds of the epoch, ``R_1`` read from ``init``);
      the canary moves it by ``1/R_1``: score ``clip(y, 0, 1/R_1)``, the exact log-likelihood ratio.
    * ``"ldp_ucb"``: arm 0's first privatised reward ``r + Lap(1/ε)`` (``state.sums`` after round 1;
      ``horizon`` is ignored: 2 rounds): the ε-local DP report itself; exact score ``clip(y, 0, 1)``.
    * ``"dp_ucb"``: arm 0's private sums ``S̃_0(n)``, ``n = 1..T``, the releases of its tree
      (``binary_tree(T, 1, noise, "replace")`` on the centred rewards ``r - 1/2``). The Interactive-DP
      adversary queries arm 0 at every round (each arm's tree is private for adaptively chosen inputs),
      every reward but the canary is ``1/2`` (centred 0): the tree's path statistic (``audit_tree``'s, exact)
      sees the whole budget at ``T`` a power of two. Claim ε (``"laplace"``, ``"gamma"``) or ρ (``"gaussian"``).
    * ``"adac_gope_var"`` (rewards in ``[-1, 1]``: arm 0's first reward is ``-canary`` (A) vs ``+canary`` (B),
      the replace-one sensitivity 2): ``θ̃_1`` at the end of phase 1 (``state.theta_tilde``; the run lasts
      phase 1's ``Σ_a T_1(a)`` rounds, read from ``init``). With ``params.actions`` the standard basis,
      ``θ̃_1[0] = (R_0 + Z_0)/T_1(a_0)``, ``Z_0 ~ N(0, 2/ρ)``: the Gaussian mechanism of the per-action sums,
      exactly ``sqrt(2ρ)``-GDP; the score ``θ̃_1[0]`` is its exact statistic. ``horizon``: the policy's ``T``
      (default 8 is raised to 4096, phase 1 must close within it).
    * ``"hanna_gope"``, ``"li_zhou_ji_gope"`` (the reconstructions; as ``"adac_gope_var"``): ``θ̃_1[0] =
      (R_0 + Z_0)/T_1(a_0)`` with ``Z_0 ~ Lap(2/ε)`` (Hanna: the score ``clip(T_1(a_0) θ̃_1[0], -canary, canary)``,
      the Laplace mechanism's exact statistic; claim ε) or ``N(0, σ²)``, ``σ`` the analytic Gaussian mechanism's
      for ``(ε, dp_delta)`` at sensitivity 2 (Li–Zhou–Ji: the score ``θ̃_1[0]``, exact; claim ε at δ = ``dp_delta``).

    Args:
      component: one of ``RELEASE_BANDITS``, or a ``Learner`` (see above).
      params: the component's params; the claim is their ``rho`` if set, else ``epsilon``.
      key: PRNG key or integer seed.
      runs: runs per side.
      horizon: ``T`` (``"dp_ucb"``: the trees' horizon).
      noise: the tree's family (``"dp_ucb"``).
      learner: the policy (default the library's, two arms, built for the run's horizon).
      alpha: ``1 - confidence``.
      canary: arm 0's first reward in table B; ``canary > 1`` needs ``beyond_bound`` (audits the clipping:
        the exact statistic of the unclipped canary).
      statistic: for a ``Learner`` only: the released statistic to read (``audit_release``).
      noiseless: the power check (``audit_learner``'s): for a built-in name, default ``False`` (``Audit.ceiling``
        only; ``True`` runs the audit again at ``NOISE_FREE`` times the budget); for a ``Learner``, default ``True``.

    Raises:
      ValueError: an unknown component; a bad canary; too few runs; bad params; a statistic with a built-in name
        or none with a ``Learner``.
    """
    if isinstance(component, Learner):
        if statistic is None:
            raise ValueError("statistic is required to audit a learner of yours: a state field's name or a function")
        if learner is not None:
            raise ValueError("give the learner as component, not as learner=")
        return audit_release(
            component, params, key, runs, statistic=statistic, horizon=horizon, canary=canary, alpha=alpha,
            name=name, noiseless=True if noiseless is None else noiseless,
        )  # fmt: skip
    if statistic is not None:
        raise ValueError(f"statistic is for a learner of yours; {component!r} reads its own released statistic")
    if component not in RELEASE_BANDITS:
        raise ValueError(f"component must be one of {RELEASE_BANDITS}, got {component!r}")
    runs = check_runs(runs)
    if not (0 < canary <= 1 or (beyond_bound and canary > 1 and math.isfinite(canary))):
        raise ValueError(
            f"canary must be in (0, 1] (the declared reward range), got {canary!r}; "
            "pass beyond_bound=True to audit the clipping with a reward outside the range"
        )
    kind, claim = budget_claim(params)
    delta = 0.0  # the δ of an (ε, δ) claim (Li–Zhou–Ji)
    if component == "ldp_ucb":
        learner = ldp_ucb(2) if learner is None else learner
        learner.check(params)
        tables = np.zeros((2, 2, 2), np.float32)
        tables[1, 0, 0] = canary
        y = learner_states(learner, params, key, runs, tables, "sums", bandit=True, last=True)[..., 0]
        scores = node_scores(y[..., None, None], LAPLACE, 0.0, canary)
        label = "ldp_ucb[report]"
    elif component in _GOPE_RELEASES:
        build, family = _GOPE_RELEASES[component]
        num_actions, dim = np.shape(params.actions)
        if learner is None:
            learner = build(num_actions, dim, max(horizon, 4096))
        learner.check(params)
        alloc = np.asarray(learner.init(jax.random.key(0), _float32_tree(params)).alloc)
        rounds = int(np.sum(alloc))
        tables = np.zeros((2, rounds, num_actions), np.float32)
        tables[0, 0, 0], tables[1, 0, 0] = -canary, canary
        y = learner_states(learner, params, key, runs, tables, "theta_tilde", bandit=True, last=True)
        scores = y[..., 0].astype(np.float64)
        if family is LAPLACE:  # the noisy sum S̃_0 = T_1(a_0) θ̃_1[0]: the Laplace likelihood ratio's clip
            scores = node_scores((scores * float(alloc[0]))[..., None, None], LAPLACE, -canary, canary)
        delta = float(np.asarray(params.dp_delta)) if component == "li_zhou_ji_gope" else 0.0
        label = f"{component}[phase 1, {rounds} rounds]"
    elif component == "dp_se":
        if learner is None:  # R_1 does not depend on T (but for its cap): build at a long horizon, then at 2 R_1
            reps = int(dp_se(2, 1 << 20).init(jax.random.key(0), params).reps)
            learner = dp_se(2, 2 * reps)
        learner.check(params)
        reps = int(learner.init(jax.random.key(0), params).reps)
        if learner.horizon is not None and learner.horizon < 2 * reps:
            raise ValueError(
                f"the learner's horizon must be >= 2 R_1 = {2 * reps} (epoch 1 closes), got {learner.horizon}"
            )
        tables = np.zeros((2, 2 * reps, 2), np.float32)
        tables[1, 0, 0] = canary
        y = learner_states(learner, params, key, runs, tables, "released", bandit=True, last=True)[..., 0]
        scores = node_scores(y[..., None, None], LAPLACE, 0.0, canary / reps)
        label = f"dp_se[epoch 1, R_1={reps}]"
    else:
        learner = dp_ucb(2, horizon, noise=noise) if learner is None else learner
        learner.check(params)
        tables = np.full((2, horizon, 2), CENTRE, np.float32)
        tables[0, 0, 0], tables[1, 0, 0] = 0.0, canary
        queries = jnp.zeros(horizon, jnp.int32)  # the adversary pulls arm 0 every round
        sums = learner_states(learner, params, key, runs, tables, "sums", bandit=True, queries=queries)[..., 0]
        releases = sums.astype(np.float64) - CENTRE * np.arange(1, horizon + 1)  # the tree's v_1..v_T
        nodes = path_nodes(releases[..., None], 1, tree_depth(horizon), horizon)
        scores = node_scores(nodes, GAUSSIAN if kind == "rho" else LAPLACE, -CENTRE, canary - CENTRE)
        label = f"dp_ucb[{noise}, T={horizon}]"
    if canary > 1:
        label = label[:-1] + f", canary {canary:g}]"
    result = finish(name or label, kind, claim, scores, alpha, runs, delta)
    if not noiseless:
        return result
    free = noise_free_params(params, kind) if noiseless is True else params
    if free is None:
        return result
    copy = f"{component} at {kind} x {NOISE_FREE:g}" if noiseless is True else "the copy without noise given"
    again = {"horizon": horizon, "noise": noise, "alpha": alpha, "canary": canary, "beyond_bound": beyond_bound,
             "name": name, "noiseless": False}  # fmt: skip
    policy = learner if noiseless is True else noiseless
    return with_noise_free(result, lambda: audit_bandit_release(component, free, key, runs, learner=policy, **again),
                           copy)  # fmt: skip
