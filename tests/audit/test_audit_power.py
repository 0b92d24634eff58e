"""Every audit reports its power (``Audit.ceiling``, ``Audit.noiseless``, ``Audit.power``) and warns when it has none.

The learner audited is a toy bandit policy that releases round 1's reward plus ``N(0, 1/(2ρ))`` into its state
and always plays arm 0: its actions never see the canary (``audit_learner`` has no power, even on a copy without
noise), its release does (``audit_release`` has power; the copy without noise is refuted).
"""

import warnings
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxpriv import Learner, Spec
from jaxpriv import audit as A
from jaxpriv.audit._bounds import finish


class ToyParams(NamedTuple):
    rho: float


class ToyState(NamedTuple):
    release: jax.Array
    sigma: jax.Array


def toy(scale: float = 1.0) -> Learner:
    """Releases round 1's reward + N(0, scale² / (2ρ)) (``scale = 0``: a copy without noise); plays arm 0."""

    def init(key, params):
        del key
        return ToyState(jnp.zeros((), jnp.float32), scale * jnp.sqrt(0.5 / jnp.asarray(params.rho, jnp.float32)))

    def act(key, state, t):
        del key, state, t
        return jnp.zeros((), jnp.int32)

    def update(key, state, action, reward, t):
        del action
        noisy = jnp.clip(reward, 0.0, 1.0) + state.sigma * jax.random.normal(key, (), jnp.float32)
        return state._replace(release=jnp.where(t == 1, noisy, state.release))

    return Learner(init, act, update, spec=Spec("toy", ToyParams, private=True, num_arms=2))


TABLES = np.zeros((2, 2), np.float32)
TABLES[1, 0] = 1.0  # round 1's reward (whatever the arm, audit_learner's loss-value tables): 0 (A) against 1 (B)


@pytest.mark.parametrize("kind", ["epsilon", "rho"])
def test_the_ceiling_is_the_bound_of_perfectly_separated_scores(kind):
    runs = 400
    scores = np.stack([np.zeros(runs), np.ones(runs)])
    res = finish("perfect", kind, 0.5, scores, 0.05, runs)
    assert res.lower == pytest.approx(res.ceiling, rel=1e-12)
    assert res.ceiling == A.ceiling(kind, runs - runs // 2, runs - runs // 2, 0.05)
    assert res.power == res.ceiling and res.noiseless is None and res.warning == ""
    assert A.ceiling(kind, 10 * runs, 10 * runs, 0.05) > res.ceiling  # more runs, more power


def test_too_few_runs_warn_and_say_so():
    scores = np.stack([np.zeros(20), np.ones(20)])
    with pytest.warns(UserWarning, match="no power against its claim: at 20 runs per side"):
        res = finish("few", "epsilon", 5.0, scores, 0.05, 20)
    assert res.ceiling < 5.0 and "run more runs" in res.warning


def test_an_audit_of_the_actions_that_cannot_see_the_canary_warns():
    with pytest.warns(UserWarning, match="a copy without noise.*is not refuted either"):
        res = A.audit_learner(toy(), ToyParams(0.5), 0, TABLES, 400, kind="rho", claim=0.5, name="toy actions")
    assert res.lower == 0.0 and res.noiseless == 0.0 and res.power == 0.0 and "toy actions" in res.warning
    assert res.ceiling > 10 * res.claim  # the runs were enough: the statistic is blind


def test_the_release_audit_has_power_and_refutes_a_copy_without_noise():
    policy = toy()
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # it has power: no warning
        ok = A.audit_release(policy, ToyParams(0.5), 1, 2000, statistic="release", horizon=2)
        # the copy without noise, its statistic a function of the state
        bad = A.audit_release(toy(0.0), ToyParams(0.5), 1, 2000, statistic=lambda s: s.release, horizon=2)
    assert ok.component == "toy[release]" and ok.kind == "rho" and ok.claim == 0.5
    assert 0.2 < ok.lower < ok.claim, ok  # one Gaussian release with sensitivity 1: exactly rho = 0.5
    assert ok.noiseless is not None and ok.noiseless > 10 * ok.claim and ok.warning == ""
    assert bad.lower > 10 * bad.claim and bad.lower == pytest.approx(bad.ceiling), bad
    # the same audit through audit_bandit_release (the same compiled runs): the same numbers
    again = A.audit_bandit_release(policy, ToyParams(0.5), 1, 2000, statistic="release", horizon=2)
    assert again.lower == ok.lower and again.noiseless == ok.noiseless


def test_the_release_audit_names_bad_input():
    with pytest.raises(ValueError, match="not a field of the learner's state"):
        A.audit_release(toy(), ToyParams(0.5), 0, 100, statistic="noisy")
    with pytest.raises(ValueError, match="statistic is required"):
        A.audit_bandit_release(toy(), ToyParams(0.5), 0, 100)
    with pytest.raises(ValueError, match="statistic is for a learner of yours"):
        A.audit_bandit_release("ldp_ucb", ToyParams(0.5), 0, 100, statistic="sums")
    with pytest.raises(ValueError, match="exactly one round"):
        A.audit_release(toy(), ToyParams(0.5), 0, 100, statistic="release", tables=np.zeros((2, 2, 2)))
    with pytest.raises(ValueError, match="noiseless must be"):
        A.audit_release(toy(), ToyParams(0.5), 0, 100, statistic="release", noiseless="yes")  # type: ignore[arg-type]
