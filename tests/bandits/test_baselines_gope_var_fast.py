"""AdaC-GOPE-Var's phase-level fast path (its ``Spec.fast_path``: ``simulate_episodes``) against its step level."""

import jax
import numpy as np
import pytest

import jaxpriv as jp
from jaxpriv.bandits.adac_gope import AdaCGOPEParams
from jaxpriv.bandits.adac_gope_var import adac_gope_var
from jaxpriv.bandits.episodic import simulate_episodes
from jaxpriv.bandits.episodic.gope import simulate_gope_phases
from jaxpriv.envs.linear_bandits import linear_bandit, sample_linear_instance
from jaxpriv.testing import ks_two_sample, mean_with_stderr, variance_with_stderr

# Eight arms in R^2 on the circle, low reward noise (σ = 0.05) and a small budget: the privacy noise on the
# per-action sums dominates the phases' estimates, and where it goes (the sums, or the whitened statistic)
# shows in the spread of the regret (AdaC-GOPE-Var's is about twice AdaC-GOPE's here).
INSTANCE = sample_linear_instance(jax.random.key(3), 8, 2)._replace(noise_stddev=0.05)
K, D, T, SEEDS = 8, 2, 3000, 400
PARAMS = AdaCGOPEParams(INSTANCE.actions, rho=0.01, delta=0.1)


def _snap(a, b, rtol=1e-4):
    """Map two samples onto shared atoms (float32 sums in two orders split an atom of the regret)."""
    pooled = np.sort(np.concatenate([a, b]))
    new = np.concatenate([[True], np.diff(pooled) > rtol * np.maximum(1.0, np.abs(pooled[1:]))])
    reps = pooled[new]

    def ids(v):
        return np.searchsorted(reps, v + rtol * np.maximum(1.0, np.abs(v)), side="right")

    return ids(a), ids(b)


@pytest.fixture(scope="module")
def step_regret():
    learner, env = adac_gope_var(K, D, T, clip=False, private=False), linear_bandit(K, D)  # unclipped
    res = jp.sweep(learner, env, jp.SimParams(PARAMS, INSTANCE), jax.random.key(0), T, SEEDS, checkpoints=[T])
    return np.asarray(res.regret[:, -1], np.float64)


def _gaps():
    means = np.asarray(INSTANCE.actions, np.float64) @ np.asarray(INSTANCE.theta, np.float64)
    return means.max() - means


def test_var_fast_path_matches_step_level_in_distribution(step_regret):
    learner = adac_gope_var(K, D, T, clip=False, private=False)  # unclipped: not private
    fast = simulate_episodes(learner, PARAMS, INSTANCE, jax.random.key(5), T, SEEDS, [T])
    assert fast.private is False
    fast_regret = np.asarray(fast.regret[:, -1], np.float64)
    stat, crit = ks_two_sample(*_snap(step_regret, fast_regret))
    assert stat < crit, (stat, crit)
    m1, s1 = mean_with_stderr(step_regret)
    m2, s2 = mean_with_stderr(fast_regret)
    assert abs(m1 - m2) < 4 * np.hypot(s1, s2), (m1, s1, m2, s2)
    v1, e1 = variance_with_stderr(step_regret)
    v2, e2 = variance_with_stderr(fast_regret)
    assert abs(v1 - v2) < 4 * np.hypot(e1, e2), (v1, e1, v2, e2)
    np.testing.assert_allclose(np.asarray(fast.pulls, np.float64) @ _gaps(), fast_regret, rtol=1e-4)


def test_the_comparison_has_power_against_the_whitened_placement(step_regret):
    # AdaC-GOPE's fast path (same ρ, same phase lengths, the noise on the whitened statistic): its regret's
    # variance differs from the step-level AdaC-GOPE-Var's by many standard errors.
    fast = simulate_gope_phases(PARAMS, INSTANCE, jax.random.key(5), T, SEEDS, [T], clip=False, private=False)
    v1, e1 = variance_with_stderr(step_regret)
    v2, e2 = variance_with_stderr(np.asarray(fast.regret[:, -1], np.float64))
    assert v1 - v2 > 4 * np.hypot(e1, e2), (v1, e1, v2, e2)
