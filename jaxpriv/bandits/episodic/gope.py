"""Episode-level simulator of GOPE / AdaC-GOPE / AdaC-GOPE-Var: one scan step per phase.

Within a phase of (AdaC-)GOPE the actions do not depend on the phase's rewards
(Step 2 of Algorithm 8 fixes ``T_ℓ(a)`` before the phase starts), and the phase
only uses its rewards through the per-arm sums ``S_a = Σ_{t in phase, a_t = a} r_t``.
So a whole phase can be simulated at once by drawing ``S_a`` from its exact
distribution. With Gaussian rewards ``r = <θ*, a> + σ η`` and ``n_a`` pulls,
``S_a ~ N(n_a <θ*, a>, n_a σ²)`` exactly (``clip=False``, the paper's setup).
With clipped rewards (``clip=True``), ``S_a`` is a sum of ``n_a`` i.i.d.
clipped Gaussians: it is drawn exactly (``n_a`` draws, masked) when
``n_a <= exact_pulls``, and from the Gaussian with the clipped reward's exact
mean and variance otherwise (CLT; Berry–Esseen error ``O(n_a^{-1/2})`` in
Kolmogorov distance, ``< 0.06`` at ``n_a = 64`` and shrinking after): an
*approximation*, documented as such.

The pseudo-regret is exact in both cases: support arms are played in index
order (as in the step-level policy), so the number of pulls of arm ``a`` by
any round ``s`` of the phase is ``clip(s - t_start - off_a, 0, n_a)``; the last
phase is truncated at ``T``. ``T = 10^7`` costs ``O(log T)`` scan steps.

The phase arithmetic (design, ``c_ℓ``, ``T_ℓ(a)``, least squares, noise,
elimination) is the one of the step-level policies (``_gope_core``): same
algorithm, two simulators. The step-level policies are the reference. AdaC-GOPE-Var
(``adac_gope_var``, whose fast path runs this simulator) differs from AdaC-GOPE only in ``close_phase``'s
``noise_placement="sums"`` (one ``N(0, 2/ρ)`` per support action's reward sum),
which this simulator calls with the same per-arm sums, so it is exact for it too.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache, partial
from typing import Any

import jax
import jax.numpy as jnp
from jax.scipy.special import ndtr

from jaxpriv import _validate
from jaxpriv._base import Learner, PRNGKey, check_horizon, check_params_class, spec_of
from jaxpriv.bandits import _gope_core as core
from jaxpriv.bandits.adac_gope import AdaCGOPEParams, adac_gope
from jaxpriv.bandits.episodic._sweep import EpisodeResult, check_policy, episode_sweep, simulate_episodes
from jaxpriv.bandits.gope import GOPEParams, gope
from jaxpriv.envs.linear_bandits import LinearBanditParams, linear_bandit, unit_sphere
from jaxpriv.sim import SimParams, normalize_checkpoints, spec_ndims

__all__ = ["INSTANCES", "clipped_gaussian_moments", "gaussian_reward_sums", "simulate", "simulate_gope_phases"]

RewardSums = Callable[[PRNGKey, jax.Array, jax.Array, jax.Array], jax.Array]
#: Why a ``reward_sums`` hook voids the guarantee (``_validate.opt_outs``).
HOOK = "the per-arm reward sums come from the hook, not clipped per reward to [-1, 1]"
#: The one table of the old entry point: params class -> the step-level factory it names.
_FACTORIES = {AdaCGOPEParams: adac_gope, GOPEParams: gope}
#: How the instance is drawn: fixed (from params), θ* per run, or actions and θ* per run.
INSTANCES = ("fixed", "random_theta", "random")


def clipped_gaussian_moments(mean: jax.Array, stddev: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Mean and variance of ``clip(mean + stddev·Z, -1, 1)``, ``Z ~ N(0, 1)``, in closed form."""
    mu = jnp.asarray(mean, jnp.float32)
    s = jnp.asarray(stddev, jnp.float32)
    safe = jnp.maximum(s, 1e-12)
    a = (-1.0 - mu) / safe
    b = (1.0 - mu) / safe
    pa, pb = ndtr(a), ndtr(b)
    phi_a = jnp.exp(-0.5 * a * a) / jnp.sqrt(2.0 * jnp.pi)
    phi_b = jnp.exp(-0.5 * b * b) / jnp.sqrt(2.0 * jnp.pi)
    mid = pb - pa
    m1 = -pa + (1.0 - pb) + mu * mid + s * (phi_a - phi_b)
    m2 = pa + (1.0 - pb) + mu**2 * mid + 2.0 * mu * s * (phi_a - phi_b) + s**2 * (mid + a * phi_a - b * phi_b)
    clipped = jnp.clip(mu, -1.0, 1.0)
    m1 = jnp.where(s > 0, m1, clipped)
    var = jnp.where(s > 0, jnp.maximum(m2 - m1**2, 0.0), 0.0)
    return m1, var


def gaussian_reward_sums(
    key: PRNGKey, means: jax.Array, stddev: jax.Array, pulls: jax.Array, clip: bool = False, exact_pulls: int = 64
) -> jax.Array:
    """Per-arm sums of ``pulls[a]`` rewards ``means[a] + stddev·η``, clipped to ``[-1, 1]`` if ``clip``.

    Exact ``N(n μ, n σ²)`` without ``clip``; with ``clip``, exact (``n`` masked
    draws) for ``n <= exact_pulls``, else the moment-matched Gaussian.
    """
    n = pulls.astype(jnp.float32)
    k_clt, k_exact = jax.random.split(key)
    z = jax.random.normal(k_clt, means.shape, jnp.float32)
    if not clip:
        return n * means + stddev * jnp.sqrt(n) * z
    m1, var = clipped_gaussian_moments(means, stddev)
    clt = n * m1 + jnp.sqrt(n * var) * z
    draws = jnp.clip(means[:, None] + stddev * jax.random.normal(k_exact, (*means.shape, exact_pulls)), -1.0, 1.0)
    used = jnp.arange(exact_pulls)[None, :] < pulls[:, None]
    exact = jnp.sum(jnp.where(used, draws, 0.0), axis=1)
    return jnp.where(pulls <= exact_pulls, exact, clt)


@lru_cache(maxsize=8)
def _default_sums(clip: bool, exact_pulls: int) -> RewardSums:
    """A stable (cached) sampler object, so the simulator cache hits and nothing recompiles."""
    return partial(gaussian_reward_sums, clip=clip, exact_pulls=exact_pulls)


@lru_cache(maxsize=64)
def _gope_simulator(
    num_actions: int,
    dim: int,
    horizon: int,
    checkpoints: tuple[int, ...],
    private: bool,
    clip: bool,
    calibration: str,
    instance: str,
    design_tol: float,
    design_iters: int,
    reward_sums: RewardSums,
    ablation: str | None = None,
    phase_length: str = "joint",
    noise_placement: str = "whitened",
    small_support: bool = False,
) -> Callable[[PRNGKey, SimParams], tuple[jax.Array, jax.Array, jax.Array]]:
    ckpts = jnp.asarray(checkpoints, jnp.int32)
    num_scan = core.max_phases(horizon) + 1
    explore, noisy = core.ablation_parts(private, ablation)

    def one(key: PRNGKey, params: SimParams):
        lp, ep = params.learner, params.env
        k_inst, k_run = jax.random.split(key)
        env_actions = jnp.asarray(ep.actions, jnp.float32)
        theta = jnp.asarray(ep.theta, jnp.float32)
        if instance == "random":
            k_a, k_t = jax.random.split(k_inst)
            env_actions = unit_sphere(k_a, (num_actions,), dim)
            theta = unit_sphere(k_t, (), dim)
        elif instance == "random_theta":
            theta = unit_sphere(k_inst, (), dim)
        learner_actions = env_actions if instance == "random" else lp.actions
        means = env_actions @ theta
        gaps = jnp.max(means) - means
        stddev = jnp.asarray(ep.noise_stddev, jnp.float32)
        x = core.normalise_actions(learner_actions, lp.action_bound, clip)
        released = private and noise_placement in core.SUM_RELEASES
        if released:  # the reconstructions (hanna_gope, li_zhou_ji_gope): their budget sets the per-sum noise
            rho = jnp.asarray(jnp.inf, jnp.float32)
            scale = core.sum_noise_scale(lp, noise_placement)
        else:
            rho = jnp.asarray(lp.rho, jnp.float32) if private else jnp.asarray(jnp.inf, jnp.float32)
            scale = jnp.zeros((), jnp.float32)
        delta = jnp.asarray(lp.delta, jnp.float32)

        def body(carry, ell):
            active, t_used, pulls_at, phases_at = carry
            k_sum, k_noise = jax.random.split(jax.random.fold_in(k_run, ell))
            started = t_used < horizon
            plan = core.plan_phase(
                x,
                active,
                phase=ell,
                rho=rho,
                delta=delta,
                num_actions=num_actions,
                horizon=horizon,
                private=explore,
                design_tol=design_tol,
                design_iters=design_iters,
                run=started,
                rule=phase_length,
                noise_placement=noise_placement,
                scale=scale,
                small_support=small_support,
            )
            alloc = jnp.where(started, plan.alloc, 0)
            off = jnp.cumsum(alloc) - alloc  # support arms are played in index order
            left = horizon - t_used
            n = jnp.clip(left - off, 0, alloc)  # the last phase is truncated at T
            complete = started & (jnp.sum(alloc) <= left)
            pulls_at = pulls_at + jnp.clip(ckpts[:, None] - t_used - off[None, :], 0, n[None, :])
            phases_at = phases_at + (started & (ckpts > t_used)).astype(jnp.int32)
            sums = reward_sums(k_sum, means, stddev, n)
            rel = core.close_phase(
                k_noise,
                x,
                active=active,
                pulls=n,
                reward_sums=sums,
                phase=ell,
                c=plan.c,
                rho=rho,
                private=noisy,
                calibration=calibration,
                noise_placement=noise_placement,
                scale=scale,
            )
            active = jnp.where(complete, rel.active, active)
            # Sums of int32 counts are int64 under JAX_ENABLE_X64: keep the carry's dtypes.
            t_used = (t_used + jnp.sum(n)).astype(jnp.int32)
            return (active, t_used, pulls_at.astype(jnp.int32), phases_at), None

        m = ckpts.shape[0]
        init = (
            jnp.ones((num_actions,), bool),
            jnp.zeros((), jnp.int32),
            jnp.zeros((m, num_actions), jnp.int32),
            jnp.zeros((m,), jnp.int32),
        )
        phases = jnp.arange(1, num_scan + 1, dtype=jnp.int32)
        (_, _, pulls_at, phases_at), _ = jax.lax.scan(body, init, phases)
        regret = pulls_at.astype(jnp.float32) @ gaps
        return regret, phases_at, pulls_at[-1]

    return one


def simulate_gope_phases(
    params: AdaCGOPEParams | GOPEParams,
    env_params: LinearBanditParams,
    key: PRNGKey,
    horizon: int,
    seeds: int = 100,
    checkpoints: Any = "log",
    *,
    clip: bool = True,
    calibration: str = "safe",
    instance: str = "fixed",
    design_tol: float = 1e-3,
    design_iters: int = 5000,
    exact_pulls: int = 64,
    chunk: int | None = None,
    reward_sums: RewardSums | None = None,
    policy: Learner | None = None,
    ablation: str | None = None,
    phase_length: str = "joint",
    private: bool = True,
) -> EpisodeResult:
    """AdaC-GOPE (``AdaCGOPEParams``) or GOPE (``GOPEParams``), phase by phase.

    One scan step per phase (``O(log T)`` steps), vmapped over seeds and over a
    params grid with common random numbers (``episode_sweep``). The algorithm
    is that of ``adac_gope`` / ``gope`` built with the same static options (looked up once from
    the params class), run by its own fast path (``simulate_episodes``); each
    support arm's reward sum is drawn from its distribution (module docstring:
    exact without ``clip``) and the regret is exact. AdaC-GOPE-Var takes ``AdaCGOPEParams`` too:
    simulate it with ``simulate_episodes(adac_gope_var(K, d, T, ...), params, env_params, ...)``.

    Args:
      params: ``AdaCGOPEParams`` (AdaC-GOPE) or ``GOPEParams``, exactly: any other class (a
        subclass) is refused; a leaf with a leading grid axis (e.g. ``rho=[G]``) is swept.
      env_params: ``LinearBanditParams`` (the true actions, θ*, noise σ).
      key: the base key; seed ``i`` uses ``split(key, seeds)[i]``.
      horizon: ``T >= K``.
      seeds: the number of runs.
      checkpoints: ``None``, ``"log"`` or a sequence of steps; ``T`` is always included.
      clip, calibration, design_tol, design_iters: as in ``adac_gope``. ``clip=False`` (and ``calibration="paper"``)
        void the guarantee: a finite ``rho`` then needs ``private=False``.
      instance: ``"fixed"`` (the params' actions and θ*), ``"random_theta"``
        (θ* per run on the sphere, as ``linear_bandit(random_theta=True)``) or
        ``"random"`` (actions and θ* per run on the sphere, the paper's §VII;
        the learner's ``actions`` are then replaced by the run's).
      exact_pulls: with ``clip``, sums of at most this many pulls are drawn exactly.
      chunk: run the seeds in batches of this size.
      reward_sums: ``(key, means[K], stddev, pulls[K]) -> sums[K]`` (a test hook;
        default ``gaussian_reward_sums``). A hook's sums are not clipped per reward, so the
        guarantee does not hold: a finite ``rho`` then needs ``private=False``.
      policy: optional, the step-level ``adac_gope`` / ``gope`` these phases stand
        in for; a ``horizon`` past the one it was built for raises ``ValueError``
        naming both (its phase lengths are capped at its own horizon), and so does a
        policy of another factory or params class (another algorithm: ``adac_gope_var``, whose
        phases ``simulate_episodes(policy, ...)`` runs).
      phase_length: AdaC-GOPE's phase-length rule, ``"joint"`` (default) or ``"paper"`` (see ``adac_gope``).
      ablation: ``None``, or, with ``AdaCGOPEParams``, ``"noise"`` (private) / ``"exploration"``
        (no noise: needs ``private=False`` at a finite ``rho``); see ``adac_gope``.
      private: ``False`` runs an opt-out above (``clip=False``, ``ablation="exploration"``,
        ``calibration="paper"``, a ``reward_sums`` hook) at a finite ``rho``, the result marked
        not private (``EpisodeResult.private``).

    Returns:
      An ``EpisodeResult``: ``regret[..., m]``, ``episodes[..., m]`` (phases
      started at or before each checkpoint), ``pulls[..., K]`` (``N_a(T)``), and
      ``private``, whether the simulated policy's guarantee holds.
    """
    num_actions, dim = (int(s) for s in jnp.shape(params.actions)[-2:])
    horizon = _validate.horizon(horizon)
    factory = _FACTORIES.get(type(params))  # the class names the algorithm: exactly one of these, never a subclass
    if factory is None:
        kind = type(params)
        raise ValueError(
            "params must be AdaCGOPEParams or GOPEParams (exactly: the class names the algorithm simulated; "
            f"AdaC-GOPE-Var: simulate_episodes(adac_gope_var(...), ...)), got {kind.__module__}.{kind.__qualname__}"
        )
    core.ablation_parts(factory is adac_gope, ablation)
    if factory is adac_gope:
        learner = adac_gope(
            num_actions, dim, horizon, clip, calibration, design_tol, design_iters, ablation, phase_length,
            private=private,
        )  # fmt: skip
    else:
        learner = gope(num_actions, dim, horizon, clip, design_tol, design_iters)
    check_horizon(horizon, policy, "policy")
    check_policy(learner, policy, dict(spec_of(learner).fast_path.options)["simulates"])
    return simulate_episodes(
        learner,
        params,
        env_params,
        key,
        horizon,
        seeds,
        checkpoints,
        instance=instance,
        exact_pulls=exact_pulls,
        chunk=chunk,
        reward_sums=reward_sums,
        private=private,
    )


def simulate(
    learner: Learner,
    params: Any,
    env_params: LinearBanditParams,
    key: PRNGKey,
    horizon: int,
    seeds: int = 100,
    checkpoints: Any = "log",
    *,
    simulates: str,
    noisy: bool,
    clip: bool,
    calibration: str,
    design_tol: float,
    design_iters: int,
    ablation: str | None,
    phase_length: str,
    noise_placement: str,
    small_support: bool = False,
    instance: str = "fixed",
    exact_pulls: int = 64,
    chunk: int | None = None,
    reward_sums: RewardSums | None = None,
    private: bool = True,
) -> EpisodeResult:
    """A phased-elimination policy's fast path (``Spec.fast_path``, ``FastPath("gope", ...)``): its phases.

    ``simulates`` names the algorithm; ``noisy`` (AdaC-GOPE, AdaC-GOPE-Var) / not (GOPE), ``clip``,
    ``calibration``, ``design_tol``, ``design_iters``, ``ablation``, ``phase_length`` and
    ``noise_placement`` (and a reconstruction's ``small_support``) are the factory's
    (``_gope_core.phased_elimination``). The per-call options
    (``instance``, ``exact_pulls``, ``chunk``, ``reward_sums``, ``private``) are ``simulate_gope_phases``'s;
    ``private=False`` here only marks a ``reward_sums`` hook's run (the learner's own opt-outs are its spec's).
    """
    spec = spec_of(learner)
    num_actions, dim = (int(s) for s in jnp.shape(params.actions)[-2:])
    horizon = _validate.horizon(horizon)
    check_horizon(horizon, learner, "learner")
    instance = _validate.choice("instance", instance, INSTANCES)
    exact_pulls = _validate.positive_int("exact_pulls", exact_pulls)
    if spec.num_arms is not None and spec.num_arms != num_actions:
        raise ValueError(f"the learner ({spec.name}) plays {spec.num_arms} actions but params has {num_actions}")
    check_params_class(learner, params, "learner", "params")
    learner.check(params)  # with the opt-outs of the factory (clip, ablation, calibration) refused at a finite rho
    hook = _validate.opt_outs(private, reward_sums=None if reward_sums is None else HOOK)
    if noisy:
        budget = "epsilon" if noise_placement in core.SUM_RELEASES else "rho"
        guarantee = core.SUM_RELEASES[noise_placement][1] if budget == "epsilon" else "ρ-zCDP"
        _validate.refuse_finite_budget(
            f"simulate_gope_phases ({simulates})", budget, getattr(params, budget), hook, guarantee, private
        )
    holds = bool(spec.private) and not hook
    linear_bandit(num_actions, dim, random_theta=instance != "fixed").check(env_params)
    if reward_sums is None:
        reward_sums = _default_sums(clip, exact_pulls)
    ckpts = normalize_checkpoints(horizon, checkpoints)
    one = _gope_simulator(
        num_actions,
        dim,
        horizon,
        ckpts,
        noisy,
        clip,
        calibration,
        instance,
        float(design_tol),
        int(design_iters),
        reward_sums,
        ablation,
        phase_length,
        noise_placement,
        small_support,
    )
    ndims = spec_ndims(learner, linear_bandit(num_actions, dim))
    regret, episodes, pulls = episode_sweep(one, SimParams(params, env_params), key, seeds, chunk, ndims)
    return EpisodeResult(jnp.asarray(ckpts, jnp.int32), regret, episodes, pulls, holds)
