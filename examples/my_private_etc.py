"""Private explore-then-commit: a ρ-zCDP bandit policy of one's own, in one module (docs/guide/your_algorithm.md).

Algorithm. Rounds ``1..Km`` pull the ``K`` arms in turn, ``m`` times each, on a schedule fixed in advance; at
round ``Km`` the policy releases every arm's reward sum plus ``N(0, 1/(2ρ))`` and commits to the arm with the
largest release for the rest of the run.

Privacy. ρ-zCDP for reward tables that differ in one reward in ``[0, 1]`` (replace-one). The schedule reads no
data; a reward enters one arm's sum once, so the vector of sums has L2 sensitivity 1, and the Gaussian mechanism
with variance ``Δ²/(2ρ)`` is ρ-zCDP (Bun & Steinke 2016, Proposition 1.6); every action after it is
post-processing. Rewards are clipped to ``[0, 1]`` in ``update``, so the guarantee holds for any environment.

Regret. For ``T >= Km`` and gaps ``Δ_a = μ* - μ_a``: at most
``Σ_a Δ_a [m + (T - Km)(exp(-mΔ_a²/8) + exp(-ρm²Δ_a²/8))]`` (Hoeffding for the sums' difference, the Gaussian
tail for the noise's).

The declaration (``@declare.learner``) registers it for study files when this module is imported: run it with
``jaxpriv sweep examples/my_private_etc.toml`` (its ``imports`` names this file), or
``jaxpriv sweep study.toml --import my_private_etc`` from this folder.
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxpriv import Learner, NonfiniteInfo, Spec, declare


class PrivateETCParams(NamedTuple):
    """The zCDP budget ρ > 0 (traced: a grid of ρ compiles once)."""

    rho: float


class PrivateETCState(NamedTuple):
    noise: jax.Array  # [K] N(0, 1/(2ρ)) per arm, drawn once at init
    sums: jax.Array  # [K] the exploration phase's reward sums (exact, never released)
    noisy: jax.Array  # [K] the one release, sums + noise, set at round K m
    arm: jax.Array  # the arm committed to (int32)


def private_etc_regret_bound(means, horizon: int, explore: int, rho: float) -> float:
    """The bound above: Σ_a Δ_a [m + (T - K m)(exp(-mΔ²/8) + exp(-ρ m² Δ²/8))]."""
    gaps = np.max(means) - np.asarray(means, np.float64)
    gaps = gaps[gaps > 0]
    tails = np.exp(-explore * gaps**2 / 8) + np.exp(-rho * explore**2 * gaps**2 / 8)
    return float(np.sum(gaps * (explore + (horizon - len(means) * explore) * tails)))


def private_etc_bound(params: PrivateETCParams, env_params, spec: Spec, horizon: int) -> float:
    """The bound at one grid point of a study: the policy's params, the environment's, its spec, the horizon."""
    explore = declare.arguments(spec)["explore"]  # the factory's arguments, recorded by the declaration
    return private_etc_regret_bound(np.asarray(env_params.means), horizon, explore, float(np.asarray(params.rho)))


@declare.learner("private_etc", params=PrivateETCParams, bound=private_etc_bound)
def private_etc(num_arms: int, explore: int) -> Learner:
    """Explore-then-commit with one Gaussian release of the arms' reward sums: ρ-zCDP (the module's docstring)."""
    if num_arms < 2 or explore < 1:
        raise ValueError(f"need num_arms >= 2 and explore >= 1, got {num_arms} and {explore}")
    last = num_arms * explore  # the round of the release

    def check(params: PrivateETCParams) -> None:
        rho = np.asarray(params.rho, np.float64)
        if not (np.all(np.isfinite(rho)) and np.all(rho > 0)):  # the guarantee needs noise
            raise ValueError(f"rho must be finite and > 0, got {rho}")

    def init(key, params: PrivateETCParams) -> PrivateETCState:
        sigma = jnp.sqrt(0.5 / jnp.asarray(params.rho, jnp.float32))  # sensitivity 1: σ² = 1/(2ρ)
        zeros = jnp.zeros(num_arms, jnp.float32)
        noise = sigma * jax.random.normal(key, (num_arms,), jnp.float32)
        return PrivateETCState(noise, zeros, zeros, jnp.zeros((), jnp.int32))

    def act(key, state: PrivateETCState, t):
        del key  # deterministic given the state
        return jnp.where(t <= last, (t - 1) % num_arms, state.arm).astype(jnp.int32)

    def update(key, state: PrivateETCState, action, reward, t) -> tuple[PrivateETCState, NonfiniteInfo]:
        del key
        bad = ~jnp.isfinite(reward)
        reward = jnp.clip(jnp.where(bad, 0.0, reward), 0.0, 1.0)  # the guarantee assumes rewards in [0, 1]
        exploring = t <= last
        sums = state.sums + jnp.where(exploring, reward, 0.0) * jax.nn.one_hot(action, num_arms)
        release = t == last  # branch-free on the shared clock: a select, not a lax.cond
        noisy = jnp.where(release, sums + state.noise, state.noisy)
        arm = jnp.where(release, jnp.argmax(noisy), state.arm).astype(jnp.int32)
        counted = (bad & exploring).astype(jnp.int32)  # a NaN / ±inf reward counted as 0: the step's Info
        return PrivateETCState(state.noise, sums, noisy, arm), NonfiniteInfo(counted)

    spec = Spec(private=True, num_arms=num_arms)  # the declaration fills its name, params class and arguments
    return Learner(init, act, update, check, spec=spec, returns_info=True)
