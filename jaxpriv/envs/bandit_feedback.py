"""Bandit feedback for any loss stream: the learner sees only the loss value at the point it played."""

from __future__ import annotations

import jax

from jaxpriv._base import Env, EnvInfo, PRNGKey


def bandit_feedback(env: Env) -> Env:
    """The same loss stream, revealing only ``f_t(ŵ_t)``: the bandit setting of FKM05 / Smith & Thakurta §3.

    ``step`` runs the wrapped environment at the played point ``ŵ_t`` (the
    learner's action) and returns the loss value ``f_t(ŵ_t)`` as the feedback
    instead of the gradient. Everything else is the wrapped environment's:
    the same losses and random stream (the same keys give the same ``f_t``), the
    same comparator, the same ``relative`` mode and horizon, so the regret is
    eq. (1) of Smith & Thakurta, ``sum_t f_t(ŵ_t) - min_{w∈C} sum_t f_t(w)``,
    at the played points. Full-information and bandit learners run on shared
    seeds in one engine; no second engine.

    A non-finite loss value is passed on as it is: the engine leaves that step
    out of the regret and counts it (``Result.nonfinite_steps``), and the bandit
    learners of ``jaxpriv.oco`` replace it by zero before use and count it
    (``Result.nonfinite_inputs``).

    Args:
      env: any loss stream of ``jaxpriv.envs`` (``quadratic_stream``, ``experts_stream``,
        ``classification_stream``, ``adaptive_quadratic``) or any ``Env`` whose
        ``EnvInfo.loss`` is the loss at the action.

    Returns:
      An ``Env`` with the wrapped environment's params; feedback is a scalar (float32).
    """
    if not isinstance(env, Env):
        raise ValueError(f"env must be a jaxpriv.Env, got {type(env).__name__}")

    def step_fn(key: PRNGKey, state, action: jax.Array, t: jax.Array):
        state, _, info = env.step(key, state, action, t)  # the gradient is dropped (and compiled away)
        return state, info.loss, EnvInfo(info.loss, info.regret, info.stats)

    inner = env.spec
    spec = None if inner is None else inner._replace(name=f"bandit_feedback({inner.name})", static=(("env", inner),))
    return env._replace(step=step_fn, spec=spec)
