"""Fidelity of the zCDP linear bandits to the paper's conclusions (issue 10).

As ρ -> ∞ AdaC-OFUL / AdaC-GOPE must converge to RS-OFUL / GOPE ("free privacy in
the low-privacy regime"), the private radius must still cover θ*, and the price of
privacy at a fixed ρ must fall with t ("no asymptotic price of privacy").
The earlier choices (``radius="robust"``, ``phase_length="paper"``) fail the first
check at ρ = 10³: their enlargement vanishes only at rate 1/√ρ.
"""

import jax
import jax.numpy as jnp
import numpy as np

import jaxpriv as jp
from jaxpriv.bandits.adac_gope import AdaCGOPEParams
from jaxpriv.bandits.adac_oful import AdaCOFULParams, adac_oful, self_normalized_radius
from jaxpriv.bandits.episodic import simulate_gope_phases
from jaxpriv.bandits.gope import GOPEParams
from jaxpriv.bandits.oful import RSOFULParams, oful_radius, rs_oful
from jaxpriv.envs.linear_bandits import ContextualBanditParams, contextual_linear_bandit, sample_linear_instance
from jaxpriv.testing import rollout

K, D = 10, 3
BOUND = 2.5  # the contextual setting's public action bound (the shipped study zcdp_bandits_contextual)


def paired_gap(private, base):
    """Mean and standard error of the per-seed difference (common random numbers)."""
    diff = np.asarray(private, np.float64) - np.asarray(base, np.float64)
    return diff.mean(), diff.std(ddof=1) / np.sqrt(diff.size)


def test_self_normalized_radius_by_hand_and_its_limits():
    gram = np.array([[5.0, 1.0, 0.0], [1.0, 4.0, 0.5], [0.0, 0.5, 3.0]])
    lam, delta, s, r, ell, rho = 0.1, 0.001, 2.5, 1.0, 4, 0.5
    c = ell * (2 / rho) / r**2
    w = gram + c * np.eye(3)
    inner = 2 * np.log(1 / delta) + np.linalg.slogdet(w)[1] - 3 * np.log(lam)
    want = np.sqrt(1 + c / np.linalg.eigvalsh(gram)[0]) * r * np.sqrt(inner) + np.sqrt(lam) * s
    got = self_normalized_radius(jnp.asarray(gram, jnp.float32), ell, rho, lam, delta, s, r)
    np.testing.assert_allclose(float(got), want, rtol=1e-5)
    # ρ = ∞ is RS-OFUL's radius exactly; large ρ approaches it at rate 1/ρ
    logdet = float(np.linalg.slogdet(gram)[1])
    base = float(oful_radius(logdet, lam, delta, s, r, 3))
    at_inf = float(self_normalized_radius(jnp.asarray(gram, jnp.float32), ell, jnp.inf, lam, delta, s, r))
    np.testing.assert_allclose(at_inf, base, rtol=1e-5)
    excess = [
        float(self_normalized_radius(jnp.asarray(gram, jnp.float32), ell, q, lam, delta, s, r)) - base
        for q in (1e2, 1e3)
    ]
    assert 8 < excess[0] / excess[1] < 12  # ∝ 1/ρ (the robust enlargement: ∝ 1/√ρ, a ratio of 3.2)


def test_adac_oful_converges_to_rs_oful_and_its_price_of_privacy_falls():
    # The reduced-scale contextual setting: T = 10⁴, shared seeds (common contexts and θ*).
    horizon, seeds = 10_000, 40
    env = contextual_linear_bandit(K, D, random_theta=True)
    ep = ContextualBanditParams(theta=jnp.zeros((D,), jnp.float32))
    key, ckpts = jax.random.key(1), [horizon // 2, horizon]
    lp = AdaCOFULParams(rho=jnp.asarray([1.0, 1000.0], jnp.float32), action_bound=BOUND)
    priv = jp.sweep(adac_oful(K, D, horizon), env, jp.SimParams(lp, ep), key, horizon, seeds, ckpts)
    base = jp.sweep(
        rs_oful(K, D, horizon), env, jp.SimParams(RSOFULParams(action_bound=BOUND), ep), key, horizon, seeds, ckpts
    )
    rp, rn = np.asarray(priv.regret, np.float64), np.asarray(base.regret, np.float64)
    # ρ = 10³: the gap is within 2 standard errors of 0 (measured with radius="robust": 18.7 ± 2.9 at 20 seeds)
    gap, se = paired_gap(rp[1, :, -1], rn[:, -1])
    assert abs(gap) <= 2 * se, (gap, se)
    assert se < 0.02 * rn[:, -1].mean()  # and the test has power: a 2% price of privacy would show
    low, low_se = paired_gap(rp[0, :, -1], rn[:, -1])
    assert low > 5 * low_se  # power: at ρ = 1 privacy does cost regret
    # ρ = 1: PoP(t) = (Reg_priv - Reg_nonpriv)/Reg_nonpriv falls from T/2 to T, by more than 2 bootstrap SE

    def fall(idx):
        p, n = rp[0, idx].mean(0), rn[idx].mean(0)
        pop = (p - n) / n
        return pop[1] - pop[0]

    rng = np.random.default_rng(0)
    boot = np.array([fall(rng.integers(0, seeds, seeds)) for _ in range(2000)])
    assert fall(np.arange(seeds)) + 2 * boot.std() < 0, (fall(np.arange(seeds)), boot.std())


def test_adac_gope_converges_to_gope_and_its_price_of_privacy_falls():
    # The reduced-scale linear setting: fresh instance per run, shared seeds; GOPE does not use T, so the
    # checkpoints of one run to 10⁶ are the regrets of runs of those horizons.
    template = sample_linear_instance(jax.random.key(0))
    horizon, seeds, key, ckpts = 10**6, 100, jax.random.key(0), (10**4, 10**6)
    base = simulate_gope_phases(GOPEParams(template.actions), template, key, horizon, seeds, ckpts, instance="random")
    rn = np.asarray(base.regret, np.float64)
    params = AdaCGOPEParams(template.actions, jnp.asarray([1000.0, 0.01], jnp.float32))

    def private(rule, ablation=None):
        res = simulate_gope_phases(
            params, template, key, horizon, seeds, ckpts, instance="random", phase_length=rule, ablation=ablation
        )
        return np.asarray(res.regret, np.float64)

    rp = private("joint")
    g, se = paired_gap(rp[0, :, 0], rn[:, 0])  # ρ = 10³, T = 10⁴
    assert abs(g) <= 2 * se + 1e-3 * rn[:, 0].mean(), (g, se)
    # The decomposition (the shipped study zcdp_fidelity_linear, "joint/noise"): the noise with GOPE's phases
    # (ablation="noise", still ρ-zCDP) costs nothing at ρ = 10³, as the joint rule (measured with the default XLA
    # options: 0.0037 ± 0.0037, one pull of one run of 100 differs from GOPE's), and at ρ = 0.01 the joint rule's
    # price at T = 10⁴ is its longer phases': the noise alone costs nothing (within 2 paired SEs; measured -93 ± 80)
    # while the joint rule pays (> 2 paired SEs; 413 ± 85).
    noise = private("joint", "noise")
    g_noise, se_noise = paired_gap(noise[0, :, 0], rn[:, 0])
    assert abs(g_noise) <= 2 * se_noise + 1e-3 * rn[:, 0].mean(), (g_noise, se_noise)
    g_noise, se_noise = paired_gap(noise[1, :, 0], rn[:, 0])
    g_joint, se_joint = paired_gap(rp[1, :, 0], rn[:, 0])
    assert abs(g_noise) < 2 * se_noise and g_joint > 2 * se_joint, (g_noise, se_noise, g_joint, se_joint)
    # eq. (5.6)'s phases (phase_length="paper") still pay at ρ = 10³ (1/√ρ): the shipped study's check, at T = 10⁴
    # on 40 runs (test_shipped_studies::test_zcdp_fidelity_the_derived_choices_make_privacy_free_at_large_rho)
    # ρ = 0.01: privacy costs regret, and the price of privacy falls from 10⁴ to 10⁶ (delta-method SE)
    d = rp[1] - rn
    pop = d.mean(0) / rn.mean(0)
    pop_se = d.std(0, ddof=1) / np.sqrt(seeds) / rn.mean(0)
    assert np.all(pop > 3 * pop_se), (pop, pop_se)
    assert pop[0] - pop[1] > 3 * np.hypot(*pop_se), (pop, pop_se)


def _switches_and_misses(t, action, feedback, info, state, env_state):
    """After step ``t``: the switches so far, and whether θ* is outside the current confidence ellipsoid."""
    dev = state.theta_tilde - env_state.theta  # θ* is drawn at reset and kept
    return state.num_switches, dev @ jnp.linalg.inv(state.gram_inv_tau) @ dev > state.radius**2


def coverage(learner, params, key, horizon, seeds):
    """``[G, seeds]`` switches and switches with θ* outside ``{θ: ‖θ̃_τ - θ‖_{V_τ} <= β̃_τ}`` (``rho: [G]``)."""
    env = contextual_linear_bandit(K, D, random_theta=True)
    ep = ContextualBanditParams(theta=jnp.zeros((D,), jnp.float32))
    grid = jnp.shape(params.rho)[0]
    params = jax.tree.map(lambda v: jnp.broadcast_to(jnp.asarray(v, jnp.float32), (grid,)), params)
    out = rollout(learner, env, jp.SimParams(params, ep), key, horizon, seeds=seeds, record=_switches_and_misses)
    num_switches, outside = (np.asarray(r) for r in out.records)
    switched = np.diff(num_switches, axis=-1, prepend=0) > 0  # a learner starts with no switch
    return switched.sum(-1), (switched & outside).sum(-1)


def test_self_normalized_radius_covers_theta():
    # The paper's unclipped setup (the linear model holds exactly), δ = 0.05 so that a miss rate can be seen.
    horizon, seeds, delta = 300, 1000, 0.05
    tol = 3 * np.sqrt(delta * (1 - delta) / seeds)
    params = AdaCOFULParams(jnp.asarray([0.1, 100.0], jnp.float32), delta)
    learner = adac_oful(K, D, horizon, clip=False, private=False)  # unclipped: not private
    sw, out = coverage(learner, params, jax.random.key(2), horizon, seeds)
    assert sw.min() >= 10
    # the guarantee holds at every switch simultaneously: the runs with any miss are at most δ, at each ρ
    assert np.all(np.mean(out > 0, axis=-1) <= delta + tol), np.mean(out > 0, axis=-1)
    assert np.all(out.sum(-1) / sw.sum(-1) <= delta)
    # power: the noise with RS-OFUL's radius (no enlargement) misses at most switches at ρ = 1
    params = AdaCOFULParams(jnp.asarray([1.0], jnp.float32), delta)
    sw, out = coverage(
        adac_oful(K, D, horizon, clip=False, ablation="noise", private=False),
        params,
        jax.random.key(2),
        horizon,
        seeds,
    )
    assert np.mean(out[0] > 0) > 0.5 and out[0].sum() / sw[0].sum() > 5 * delta
