"""Stochastic finite-armed bandits: the Bernoulli K-armed bandit.

The environment reports the pseudo-regret ``max_b μ_b - μ_{a_t}`` of the round
(Azize & Basu, SaTML 2024, §VII; thesis eq. (5.3)), so the engine's cumulative
regret is ``Σ_t Δ_{a_t} = Σ_a Δ_a N_a(T)``; the loss is ``-reward``.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxpriv import _rng, _validate, declare
from jaxpriv._base import Env, EnvInfo, PRNGKey, Spec, nan_unless_valid_arm

#: The means of the paper's finite-armed experiment (Section VII, as in Sajed & Sheffet, ICML 2019).
PAPER_MEANS: tuple[float, ...] = (0.75, 0.625, 0.5, 0.375, 0.25)


class BernoulliParams(NamedTuple):
    """Params of ``bernoulli_bandit``.

    Attributes:
      means: ``[K]``, the arms' success probabilities, each in ``[0, 1]``.
    """

    means: ArrayLike = PAPER_MEANS


class BernoulliState(NamedTuple):
    means: jax.Array  # shape=[K], float32
    gaps: jax.Array  # shape=[K], float32, max(means) - means


@declare.env("bernoulli_bandit", params=BernoulliParams)
def bernoulli_bandit(num_arms: int) -> Env:
    """The Bernoulli ``K``-armed bandit: arm ``a`` pays ``1`` with probability ``μ_a``, else ``0``.

    Each step draws the rewards of *all* arms from the step key, as
    ``r_a = 1[u < μ_a]`` for one uniform ``u``, and reveals the chosen arm's,
    so the reward stream does not depend on the actions: common random numbers
    across learners and privacy levels. Each arm's reward is Bernoulli(μ_a)
    and independent across rounds; the arms are coupled within a round, which
    a bandit learner (one arm observed per round) cannot see. The per-step
    regret is the pseudo-regret ``Δ_{a_t} = max_b μ_b - μ_{a_t}``.

    Args:
      num_arms: ``K >= 2``.

    Returns:
      An ``Env`` with params ``BernoulliParams``; actions are int32 arm indices,
      the feedback is the float32 reward in ``{0, 1}``.

    Examples:
      >>> import jax, jax.numpy as jnp
      >>> env = bernoulli_bandit(3)
      >>> state = env.reset(jax.random.key(0), BernoulliParams(jnp.array([0.9, 0.5, 0.1])))
      >>> _, reward, info = env.step(jax.random.key(1), state, jnp.int32(1), jnp.int32(1))
      >>> round(float(info.regret), 6)
      0.4

    References:
      Azize & Basu, Concentrated Differential Privacy for Bandits, SaTML 2024, §VII
      (means {0.75, 0.625, 0.5, 0.375, 0.25}).
    """
    num_arms = _validate.positive_int("num_arms", num_arms, minimum=2)

    def check(params: BernoulliParams) -> None:
        _validate.trailing_shape("means", params.means, (num_arms,))
        means = _validate._concrete(params.means)
        if means is not None and np.any(np.isnan(means) | (means < 0) | (means > 1)):
            raise ValueError(f"means must lie in [0, 1], got {params.means!r}")

    def reset_fn(key: PRNGKey, params: BernoulliParams) -> BernoulliState:
        del key
        means = jnp.broadcast_to(jnp.asarray(params.means, jnp.float32), (num_arms,))
        return BernoulliState(means=means, gaps=jnp.max(means) - means)

    def step_fn(key: PRNGKey, state: BernoulliState, action: jax.Array, t: jax.Array):
        del t
        # One uniform decides every arm's reward (u < μ_a): all arms' rewards come from the step
        # key, so the stream does not depend on the action (common random numbers), and each arm's
        # reward is Bernoulli(μ_a). The learner sees one arm per round, so the coupling across
        # arms is invisible to it; one draw instead of K keeps the step cheap.
        u = _rng.uniform(key, (), jnp.float32)
        rewards = (u < state.means).astype(jnp.float32)
        reward, regret = nan_unless_valid_arm((rewards[action], state.gaps[action]), action, num_arms)
        return state, reward, EnvInfo(loss=-reward, regret=regret, stats=())

    spec = Spec(
        num_arms=num_arms,
        action_shape=(),
        ndims=(("means", 1),),
    )
    return Env(reset_fn, step_fn, None, check, spec=spec)
