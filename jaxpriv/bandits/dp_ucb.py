"""DP-UCB: UCB on per-arm reward sums released by private prefix-sum mechanisms (Mishra & Thakurta 2015).

One prefix-sum mechanism per arm (vmapped over the arms), advanced only when its arm
is pulled: arm ``a``'s mechanism runs on its own clock, the pull count ``N_a``. The
index adds to the private mean a Bernstein (sub-gamma) bonus that covers the
sampling error and the mechanism's release noise together, computed from the
mechanism's exact variance at ``N_a`` (``jaxpriv.mechanisms.release_variance``,
tabulated on the host for a unit budget at construction).

The bonus (derived here; the printed index is uncertain, docs/algorithms/baselines.md, 'Decoding choices')
----------------------------------------------------------------------------------------------------------
Let ``S̃_a(n) = S_a(n) + Z_a(n)`` be arm ``a``'s released sum after ``n`` pulls, ``S_a(n)``
the sum of its first ``n`` rewards in ``[0, 1]`` (i.i.d., mean ``μ_a``) and ``Z_a(n)`` the
release noise, independent of the rewards, with exact variance ``V(n)``. A centred ``X``
is *sub-gamma* ``(v, c)`` when ``log E e^{λX} <= λ² v / (2(1 - c|λ|))`` for ``|λ| < 1/c``
(Boucheron, Lugosi & Massart 2013, §2.4); then ``P(X > sqrt(2 v x) + c x) <= e^{-x}``, and
sums of independent sub-gamma ``(v_i, c_i)`` are sub-gamma ``(Σ v_i, max c_i)``.

* a reward: ``r - μ`` is sub-gamma ``(1/4, 0)`` (Hoeffding's lemma, ``λ²/8``);
* a Laplace variable of scale ``b``: ``-log(1 - b²λ²) <= (2b²) λ² / (2(1 - b|λ|))``
  (with ``s = b|λ|``: ``-log(1-s) - s <= s²/(2(1-s))`` and ``-log(1+s) <= -s + s²/2``), i.e.
  sub-gamma ``(its variance 2b², b)``. The trees' release noise is a sum of independent
  Laplace node draws (Gamma-norm noise in one dimension is Laplace) with coefficients in
  ``[0, 1]`` (1 for ``binary_tree``; Honaker's weights for ``honaker_tree``), so ``Z(n)`` is
  sub-gamma ``(V(n), b_max(n))`` with ``b_max(n) <= min(b_node, sqrt(V(n)/2))``;
* Gaussian release noise (any mechanism under ρ-zCDP): sub-gamma ``(V(n), 0)``.

Hence ``S̃_a(n) - n μ_a`` is sub-gamma ``(n/4 + V(n), b_max(n))`` on both sides, and with
``L_t = log(2/δ_t) = log 2 + α log t`` (``δ_t = t^{-α}``)

    ``P(|S̃_a(n)/n - μ_a| > B(n, t)) <= t^{-α}``,
    ``B(n, t) = (sqrt(2 (n/4 + V(n)) L_t) + b_max(n) L_t) / n``.

With the noise off (``V = b = 0``) ``B = sqrt(L_t / (2n))``, the Hoeffding bonus of UCB.
For Laplace sums this is the Bernstein form of Chan, Shi & Song (2011), Lemma 2.8 /
Corollary 2.9 (``|Y| <= sqrt(8 ln(2/δ)) max(sqrt(Σ b_i²), b_max sqrt(ln(2/δ)))``), with the
smaller constant of the sub-gamma bound; it uses the exact variance instead of the
worst case ``popcount(n) <= D`` nodes.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxpriv import _validate, declare
from jaxpriv._base import (
    Learner,
    Mechanism,
    NonfiniteInfo,
    PRNGKey,
    Spec,
    mechanism_step_count,
    spec_of,
    static_args,
    zero_nonfinite,
)
from jaxpriv.bandits import _episodic_ucb
from jaxpriv.mechanisms import NoiseFamily, TreeParams, binary_tree, describe, noise_family, release_variance
from jaxpriv.mechanisms._sampler_floor import check_sampler_floor, sampler_floor_of
from jaxpriv.mechanisms._tree import check_budget, check_budget_values
from jaxpriv.theory import bernstein_regret_bound

#: The built-in prefix-sum mechanisms DP-UCB accepts: every event-level one (``describe(mechanism).scope``).
MECHANISMS = ("binary_tree", "honaker_tree", "sqrt_factorization", "blt")
#: The node structures whose release noise is a sum of independent node draws with coefficients in [0, 1]
#: (``describe(mechanism).structure``: the binary tree's and Honaker's).
_NODE_SUMS = ("dyadic", "honaker")
#: Rewards are centred before they enter a mechanism: ``r - 1/2`` in ``[-1/2, 1/2]``.
CENTRE = 0.5


class DPUCBParams(NamedTuple):
    """Params of ``dp_ucb``: exactly the budget of the mechanism's noise family.

    Attributes:
      epsilon: ε of ε-DP (``"laplace"`` / ``"gamma"`` mechanisms); required by them,
        refused by Gaussian ones. ``inf``, given explicitly, is the non-private limit.
      rho: ρ of ρ-zCDP (``"gaussian"`` mechanisms); required by them, refused otherwise.
      alpha: the exploration exponent α > 0: the confidence bound at step ``t`` fails with
        probability at most ``t^{-α}`` per arm and count (the regret bound needs α > 2).
    """

    epsilon: ArrayLike | None = None
    rho: ArrayLike | None = None
    alpha: ArrayLike = 3.0


class DPUCBState(NamedTuple):
    """State of ``dp_ucb`` (one seed)."""

    trees: Any  # the K mechanisms' states, every leaf with a leading axis of size K
    counts: jax.Array  # shape=[K], int32, N_a: pulls of each arm (each arm's mechanism clock)
    sums: jax.Array  # shape=[K], float32, the released private reward sums S̃_a(N_a)
    alpha: jax.Array  # shape=(), float32, α
    noise_scale: jax.Array  # shape=(), float32, 1/ε (ε-DP) or 1/sqrt(ρ) (zCDP); 0 when non-private


class NoiseTable(NamedTuple):
    """The release noise of one arm's mechanism at a unit budget (ε = 1 or ρ = 1), on the host.

    Attributes:
      stddev: ``[T + 1]`` float64, ``sqrt(V_1(n))`` for ``n = 0..T`` (0 at ``n = 0``); the
        release's standard deviation at budget ε is ``stddev/ε``, at ρ ``stddev/sqrt(ρ)``.
      node_scale: the largest Laplace node scale at ε = 1 (``inf`` when unknown, 0 for Gaussian
        noise); the bonus's ``b_max(n) = min(node_scale, stddev[n]/sqrt 2)/ε``.
      noise: the noise family.
      sensitivity: the clipping bound ``Δ`` given to the mechanism (1/2 for ``"replace"``
        neighbours, 1 for ``"add_remove"``): a replace-one change of a reward in ``[0, 1]``
        moves its (centred) input by at most 1, the sensitivity the noise is calibrated to.
    """

    stddev: np.ndarray
    node_scale: float
    noise: NoiseFamily
    sensitivity: float


def arm_mechanism(
    horizon: int, noise: NoiseFamily | str | None = None, mechanism: Mechanism | None = None
) -> Mechanism:
    """One arm's prefix-sum mechanism: the paper's Laplace tree, or a checked ``mechanism``.

    Raises:
      ValueError: ``mechanism`` is not an event-level prefix sum (``MECHANISMS``; not the window
        tree), is not one-dimensional, has a horizon shorter than ``horizon``, or a noise family other than ``noise``.
    """
    if mechanism is None:
        noise = "laplace" if noise is None else noise_family(noise, ("laplace", "gamma", "gaussian"))
        return binary_tree(horizon, 1, noise, neighbouring="replace")
    info = describe(mechanism)
    if info.scope != "event":
        raise ValueError(
            f"mechanism must be an event-level prefix sum, one of {MECHANISMS} (a per-arm prefix sum), "
            f"got {info.name!r} (scope {info.scope!r})"
        )
    if info.dim != 1:
        raise ValueError(f"mechanism must be built for dim=1 (one reward per pull), got dim={info.dim}")
    if info.horizon < horizon:
        raise ValueError(f"mechanism's horizon must be >= {horizon} (an arm can be pulled T times), got {info.horizon}")
    if noise is not None and noise_family(noise) is not info.noise:
        raise ValueError(f"noise must be None or {info.noise.name!r} (the mechanism's family), got {noise!r}")
    return mechanism


def noise_table(mechanism: Mechanism, horizon: int) -> NoiseTable:
    """The exact release noise of ``mechanism`` for counts ``0..horizon`` at a unit budget (host, float64)."""
    info = describe(mechanism)
    sensitivity = 0.5 if info.neighbouring == "replace" else 1.0
    family = info.noise
    unit = TreeParams(**{family.budget: 1.0}, sensitivity=sensitivity)
    var = release_variance(mechanism, unit, np.arange(1, horizon + 1))
    stddev = np.sqrt(np.concatenate([[0.0], np.reshape(var, -1)]))
    if family.sub_gaussian:  # no scale term
        node = 0.0
    elif info.structure in _NODE_SUMS:
        node = float(stddev[1] / math.sqrt(2.0))  # one node at n = 1: its variance is 2 b_node²
    else:
        node = math.inf
    return NoiseTable(stddev, node, info.noise, sensitivity)


def budget_noise_scale(params: DPUCBParams, noise: NoiseFamily | str) -> jax.Array:
    """``1/ε`` (ε-DP families) or ``1/sqrt(ρ)`` (Gaussian), float32; 0 for an infinite budget."""
    if not noise_family(noise).pure:
        return jax.lax.rsqrt(jnp.asarray(params.rho, jnp.float32))
    return 1.0 / jnp.asarray(params.epsilon, jnp.float32)


def confidence_log(t: ArrayLike, alpha: ArrayLike) -> jax.Array:
    """``L_t = log(2/δ_t) = log 2 + α log t``: the two-sided failure probability is ``δ_t = t^{-α}``."""
    t = jnp.maximum(jnp.asarray(t, jnp.float32), 1.0)
    return jnp.float32(math.log(2.0)) + jnp.asarray(alpha, jnp.float32) * jnp.log(t)


def dp_ucb_bonus(
    counts: ArrayLike, t: ArrayLike, alpha: ArrayLike, variance: ArrayLike, max_scale: ArrayLike = 0.0
) -> jax.Array:
    """The bonus ``B(n, t) = (sqrt(2 (n/4 + V) L_t) + b L_t) / n``, ``L_t = log 2 + α log t``.

    ``P(|S̃(n)/n - μ| > B(n, t)) <= t^{-α}`` for the mean of ``n`` rewards in ``[0, 1]`` plus
    release noise that is sub-gamma ``(V, b)`` (see the module docstring).

    Args:
      counts: ``n >= 1`` (float32 after conversion; 0 is treated as 1).
      t: the step (``L_t`` uses ``max(t, 1)``).
      alpha: α.
      variance: ``V``, the release noise's variance at ``n`` (0: no noise).
      max_scale: ``b``, the largest Laplace scale in the noise (0 for Gaussian noise).

    Returns:
      float32 bonuses, broadcast over the arguments.
    """
    n = jnp.maximum(jnp.asarray(counts, jnp.float32), 1.0)
    log_t = confidence_log(t, alpha)
    spread = jnp.sqrt(2.0 * log_t * (0.25 * n + jnp.asarray(variance, jnp.float32)))
    return (spread + jnp.asarray(max_scale, jnp.float32) * log_t) / n


def _noise_at(table: NoiseTable, stddev: jax.Array, counts: jax.Array, noise_scale: jax.Array):
    """``(V(n), b_max(n))`` at the budget of ``noise_scale``, gathered from the unit table."""
    sd = stddev[jnp.clip(counts, 0, stddev.shape[0] - 1)]
    var = jnp.square(sd * noise_scale)
    if table.noise.sub_gaussian:
        return var, jnp.zeros_like(var)
    scale = jnp.minimum(jnp.float32(table.node_scale), sd * jnp.float32(1.0 / math.sqrt(2.0))) * noise_scale
    return var, scale


def dp_ucb_bound(params: DPUCBParams, env_params: Any, spec: Spec, horizon: int) -> float | None:
    """DP-UCB's derived bound (``dp_ucb_regret_bound``; ``None`` unless ``alpha > 2``)."""
    if not float(np.asarray(params.alpha)) > 2:
        return None
    a = declare.arguments(spec)
    means = np.asarray(env_params.means)
    mech = declare.rebuild(a["mechanism"])
    return float(dp_ucb_regret_bound(means, horizon, params, noise=a["noise"], mechanism=mech))


def _example(horizon: int, dim: int) -> declare.ExampleRun:
    """``dp_ucb`` at one small configuration (``jaxpriv.testing.learner_examples``)."""
    from jaxpriv.envs._settings import setting

    s = setting("bernoulli", dim)
    return dp_ucb(dim, horizon), s.env, DPUCBParams(epsilon=1.0), s.params


@declare.learner("dp_ucb", params=DPUCBParams, bound=dp_ucb_bound, mechanism_dim=1, example=_example)
def dp_ucb(
    num_arms: int,
    horizon: int,
    *,
    noise: NoiseFamily | str | None = None,
    mechanism: Mechanism | None = None,
    tie_break: str = "random",
) -> Learner:
    """DP-UCB: UCB whose per-arm reward sums are private prefix sums (one mechanism per arm).

    Play each arm once; then at step ``t`` play ``argmax_a S̃_a/N_a + B(N_a, t)`` with

        ``B(n, t) = (sqrt(2 (n/4 + V(n)) L_t) + b_max(n) L_t) / n``,  ``L_t = log 2 + α log t``,

    where ``S̃_a`` is arm ``a``'s reward sum released by its own prefix-sum mechanism after
    ``N_a`` pulls, ``V(n)`` that mechanism's exact release variance at count ``n`` and
    ``b_max(n)`` its largest Laplace node scale (0 for Gaussian noise). ``|S̃_a/N_a - μ_a| <=
    B`` with probability ``>= 1 - t^{-α}`` (Bernstein / sub-gamma bound; derivation in the
    module docstring, ``dp_ucb_bonus``). Rewards are clipped to ``[0, 1]`` (a NaN / ±inf reward
    becomes 0 and is counted) and centred, ``x = r - 1/2``, before they enter the mechanism;
    ``S̃_a = release + N_a/2``.

    Privacy: ε-DP (``"laplace"`` / ``"gamma"`` trees) or ρ-zCDP (Gaussian mechanisms) of the
    whole action sequence, for neighbouring reward sequences that differ in one reward
    (replace-one, rewards in ``[0, 1]``; event level; Azize & Basu, NeurIPS 2022, Def. 2). Each reward enters exactly
    one arm's mechanism, once: a replace-one change moves one input of one mechanism by at
    most 1, the sensitivity each mechanism is calibrated to (``Δ = 1/2`` with
    ``neighbouring="replace"``, i.e. ``s = 2Δ = 1``; ``Δ = 1`` with ``"add_remove"``). The
    mechanisms draw independent noise and each is private for adaptively chosen inputs, so
    conditioned on equal past releases the two worlds route every other reward identically
    and the privacy loss is that of the one mechanism holding the changed reward: ε (ρ). The
    policy's actions and counts are post-processing. The default tree splits ε over its
    ``D = ceil(log2 T) + 1`` levels: node noise ``Lap(D/ε)`` (scale ``log T/ε`` of the papers).

    Regret (``dp_ucb_regret_bound``; α > 2): ``Σ_{Δ_a>0} Δ_a (n_a* + K^{2-α}/(α-2))`` with
    ``n_a*`` the least ``n`` with ``B̄(n, T) < Δ_a/2`` (``B̄``: ``V`` and ``b_max`` at their
    worst over ``n <= T``); at most ``Σ (8 L_T/Δ_a + 4 (sqrt(2 V̄ L_T) + b̄ L_T) + c Δ_a)``,
    i.e. ``O(Σ log T/Δ_a + K log² T/ε)`` with the Laplace tree.

    Args:
      num_arms: ``K >= 2``.
      horizon: ``T >= K``; every arm's mechanism is built for ``T`` pulls.
      noise: the default tree's noise family: ``"laplace"`` (default, the papers'), ``"gamma"``
        (identical in one dimension) or ``"gaussian"`` (ρ-zCDP). With ``mechanism``: ``None``
        or that mechanism's family.
      mechanism: a one-dimensional prefix-sum mechanism of ``jaxpriv.mechanisms``
        (``binary_tree``, ``honaker_tree``, ``sqrt_factorization``, ``blt``) with horizon
        ``>= T``, e.g. ``honaker_tree(T, 1, "laplace", "replace")`` or
        ``sqrt_factorization(T, 1)`` (ρ-zCDP); either neighbouring relation.
      tie_break: ``"random"`` (uniform among maximisers) or ``"first"``.

    Returns:
      A ``Learner`` with params ``DPUCBParams`` and ``horizon=T``; actions are int32 arms.

    Examples:
      >>> import jax, jaxpriv
      >>> from jaxpriv.envs import BernoulliParams, bernoulli_bandit
      >>> res = jaxpriv.run(dp_ucb(5, 512), bernoulli_bandit(5),
      ...                   jaxpriv.SimParams(DPUCBParams(epsilon=1.0), BernoulliParams()),
      ...                   jax.random.key(0), horizon=512, checkpoints=[512])
      >>> res.regret.shape
      (1,)

    References:
      Mishra & Thakurta, (Nearly) Optimal Differentially Private Stochastic Multi-Arm Bandits,
      UAI 2015. Tossou & Dimitrakakis, Algorithms for Differentially Private Multi-Armed
      Bandits, AAAI 2016. Chan, Shi & Song, Private and Continual Release of Statistics,
      TISSEC 2011 (Lemma 2.8, Cor. 2.9). Boucheron, Lugosi & Massart, Concentration
      Inequalities, 2013, §2.4.
    """
    K = _validate.positive_int("num_arms", num_arms, minimum=2)
    T = _validate.horizon(horizon)
    if T < K:
        raise ValueError(f"horizon must be >= num_arms={K} (each arm is played once), got {T}")
    _validate.choice("tie_break", tie_break, _episodic_ucb.TIE_BREAKS)
    mech = arm_mechanism(T, noise, mechanism)
    table = noise_table(mech, T)
    family = table.noise
    stddev = np.asarray(table.stddev, np.float32)
    centred = TreeParams(epsilon=None, rho=None, sensitivity=table.sensitivity)

    def mech_params(params: DPUCBParams) -> TreeParams:
        field = family.budget
        return centred._replace(**{field: getattr(params, field)})

    def check(params: DPUCBParams) -> None:
        check_budget_values("dp_ucb", params, family)
        check_sampler_floor("dp_ucb", params, sampler_floor_of(mech))  # the samplers' δ floor
        _validate.positive("alpha", params.alpha, allow_inf=False)

    def init_fn(key: PRNGKey, params: DPUCBParams) -> DPUCBState:
        check_budget("dp_ucb", params, family)
        mp = jax.tree.map(lambda v: jnp.asarray(v, jnp.float32), mech_params(params))
        trees = jax.vmap(mech.init, in_axes=(0, None))(jax.random.split(key, K), mp)
        return DPUCBState(
            trees=trees,
            counts=jnp.zeros(K, jnp.int32),
            sums=jnp.zeros(K, jnp.float32),
            alpha=jnp.asarray(params.alpha, jnp.float32),
            noise_scale=budget_noise_scale(params, family),
        )

    def index_fn(state: DPUCBState, t: jax.Array) -> jax.Array:
        var, scale = _noise_at(table, jnp.asarray(stddev), state.counts, state.noise_scale)
        n = jnp.maximum(state.counts, 1).astype(jnp.float32)
        return state.sums / n + dp_ucb_bonus(n, t, state.alpha, var, scale)

    act_fn = _episodic_ucb.index_policy(index_fn, K, tie_break)

    def update_fn(
        key: PRNGKey, state: DPUCBState, action: jax.Array, reward: jax.Array, t: jax.Array
    ) -> tuple[DPUCBState, NonfiniteInfo]:
        del t  # the pulled arm's mechanism runs on its own clock, N_a
        action = jnp.asarray(action, jnp.int32)
        r, bad = zero_nonfinite(jnp.asarray(reward, jnp.float32))
        x = jnp.clip(r, 0.0, 1.0) - CENTRE
        clock = state.counts[action] + 1
        arm = jax.tree.map(lambda leaf: leaf[action], state.trees)
        arm, release, tree_bad = mechanism_step_count(mech, key, arm, x[None], clock)
        trees = jax.tree.map(lambda all_, one: all_.at[action].set(one), state.trees, arm)
        released = release[0] + CENTRE * clock.astype(jnp.float32)
        return state._replace(
            trees=trees,
            counts=state.counts.at[action].set(clock),
            sums=state.sums.at[action].set(released),
        ), NonfiniteInfo(bad + tree_bad)  # its own count and the pulled arm's mechanism's

    private = spec_of(mech).private is not False
    static = static_args(noise=family, mechanism=mech)  # the family and tree that run (not None)
    spec = Spec(private=private, static=static, num_arms=K, sampler_floor=sampler_floor_of(mech))
    return Learner(init_fn, act_fn, update_fn, check, T, spec=spec, returns_info=True)


def dp_ucb_index(learner_state: DPUCBState, t: ArrayLike, table: NoiseTable) -> jax.Array:
    """The DP-UCB indices ``S̃_a/N_a + B(N_a, t)`` of a state, for the ``noise_table`` of its mechanism."""
    stddev = jnp.asarray(np.asarray(table.stddev, np.float32))
    var, scale = _noise_at(table, stddev, jnp.asarray(learner_state.counts), learner_state.noise_scale)
    n = jnp.maximum(jnp.asarray(learner_state.counts), 1).astype(jnp.float32)
    return learner_state.sums / n + dp_ucb_bonus(n, t, learner_state.alpha, var, scale)


def dp_ucb_regret_bound(
    means: ArrayLike,
    horizon: int,
    params: DPUCBParams,
    *,
    noise: NoiseFamily | str | None = None,
    mechanism: Mechanism | None = None,
) -> float:
    """DP-UCB's regret bound (derived here; constants explicit), float64.

    ``E Reg_T <= Σ_{Δ_a>0} Δ_a min(T, n_a* + K^{2-α}/(α-2))``, α > 2, where ``n_a*`` is the
    least ``n`` with ``(sqrt(2(n/4 + V̄) L_T) + b̄ L_T)/n < Δ_a/2``, ``L_T = log 2 + α log T``,
    ``V̄ = max_{n<=T} V(n)`` and ``b̄ = max_n b_max(n)`` of the mechanism at ``params``'s
    budget. Since ``n_a* <= 8 L_T/Δ_a² + 4 (sqrt(2 V̄ L_T) + b̄ L_T)/Δ_a + 1`` this is at most
    ``Σ (8 L_T/Δ_a + 4 sqrt(2 V̄ L_T) + 4 b̄ L_T + Δ_a (1 + K^{2-α}/(α-2)))``; the Laplace
    tree has ``b̄ = D/ε`` and ``V̄ <= 2 D b̄²``, an ``O(K log² T/ε)`` privacy term.
    An infinite budget gives the non-private UCB bound.

    Args:
      means: ``[K]`` arm means in ``[0, 1]``.
      horizon: ``T``.
      params: ``DPUCBParams`` (the budget of the mechanism's family, and α > 2).
      noise, mechanism: as for ``dp_ucb``.
    """
    horizon = _validate.positive_int("horizon", horizon)
    mech = arm_mechanism(horizon, noise, mechanism)
    table = noise_table(mech, horizon)
    check_budget_values("dp_ucb", params, table.noise)
    family = table.noise
    if not family.pure:
        factor = 1.0 / math.sqrt(float(params.rho))
    else:
        factor = 1.0 / float(params.epsilon)
    sd = table.stddev[1:]
    variance = float(np.max(sd) * factor) ** 2
    if family.sub_gaussian:
        scale = 0.0
    else:
        scale = float(np.max(np.minimum(table.node_scale, sd / math.sqrt(2.0)))) * factor
    return bernstein_regret_bound(means, horizon, float(params.alpha), variance, scale, "dp_ucb")


__all__ = [
    "DPUCBParams",
    "DPUCBState",
    "NoiseTable",
    "arm_mechanism",
    "dp_ucb",
    "dp_ucb_bonus",
    "dp_ucb_index",
    "dp_ucb_regret_bound",
    "noise_table",
]
