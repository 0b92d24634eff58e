"""Each private learner's budget floor: the smallest budget its float32 arithmetic carries (host, float64).

A budget ``b`` (ε, ρ or the mutual-information ``C``) sets the learner's noise, and the noise
sets the largest numbers its update forms in float32: the mechanism's release ``v_t``, the
unconstrained leader ``v_t/H`` it projects, a tuned step size's ``dσ²``. Each of them is of the
form ``m·b^(-p) + c`` (``p = 1`` for a scale ``∝ 1/ε``, ``1/2`` for a standard deviation
``∝ 1/sqrt(ρ)``), computed here on the host from the learner's static arguments (horizon,
dimension, noise family, mechanism) and its concrete params (``L``, ``H``, ...). The learner's
floor is the smallest ``b`` at which every such number stays below ``LIMIT``, float32's largest
number over ``HEADROOM`` (a sum or a division by ``t`` after it); below it a release overflows to
``inf`` and the played point becomes NaN (steps dropped) or leaves the set. The projections
are scale-safe for every finite input (``jaxpriv.sets``), so a finite leader is all they need.

A release's magnitude is bounded by ``TAIL`` standard deviations of its exact variance
(``mechanisms.release_variance``'s oracle, at the step where it is largest). For the binary
and window trees this is a sure bound, not a probable one: their samplers cannot draw beyond
``mechanisms._accounting.SAMPLER_SUPPORT`` (an exponential ``<= 22.2``, a Laplace ``<= 21.5``, a normal
``<= 6.45`` in magnitude), so one node's noise is at most about 22 of its standard deviations and a
release sums at most 64 nodes (``sqrt(64)·22 < 177 < TAIL``). For the factorization mechanisms
(Honaker, square root, BLT) a release is a weighted sum of many draws: ``TAIL`` standard
deviations is exceeded with probability far below ``e^-100``.

No budget below ``MIN_BUDGET`` (``2^-120``, about ``7.5e-37``) is accepted: its reciprocal times a
tree depth must stay a float32 number with room to spare (``D/(2ρ)`` in a Gaussian node's σ,
``2C/d`` in the mutual-information σ must not be subnormal).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from jaxpriv.mechanisms import NoiseFamily, describe, noise_family

F32_MAX = float(np.finfo(np.float32).max)
#: The learner's arithmetic after its largest number (a sum with the played points, a division by ``t``).
HEADROOM = 2.0**4
#: Largest number a learner may form: ``F32_MAX / HEADROOM``, about ``2.1e37``.
LIMIT = F32_MAX / HEADROOM
#: A release's magnitude bound, in standard deviations of its noise (see the module docstring).
TAIL = 2.0**10
#: The least budget of any learner (``2^-120``, about ``7.5e-37``).
MIN_BUDGET = 2.0**-120


class Term:
    """A number the learner forms in float32: ``noise·b^(-power) + fixed`` at budget ``b`` (noise given at ``b``).

    Attributes:
      what: what it is, for the message (``"the tree's release v_t/H"``).
      noise: ``[...]`` float64, its budget-dependent part at the budget checked.
      power: ``p`` of ``b^(-p)``.
      fixed: ``[...]`` float64, the part that does not depend on the budget (the clean sums).
    """

    def __init__(self, what: str, noise: Any, power: float, fixed: Any = 0.0):
        self.what, self.power = what, float(power)
        self.noise = np.asarray(noise, np.float64)
        self.fixed = np.asarray(fixed, np.float64)

    def floor(self, budget: np.ndarray) -> np.ndarray:
        """The least budget at which this number stays below ``LIMIT`` (``inf`` when none does)."""
        room = LIMIT - self.fixed
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            ratio = np.where(room > 0, self.noise / np.where(room > 0, room, 1.0), np.inf)
            out = budget * ratio ** (1.0 / self.power)
        out = np.where(np.isnan(out), np.inf, out)
        return np.where(self.noise > 0, out, np.where(room > 0, 0.0, np.inf))


class ReleaseStd:
    """``sqrt(max_t Var_t)`` of a prefix-sum mechanism's release, per coordinate (host, float64).

    The step ``t*`` of the largest variance does not depend on the params (every oracle is a
    count of nodes, or a fixed weight per step, times one node's variance), so it is found once,
    on the first params given, over ``t = 1..T``, and each call evaluates the oracle at ``t*`` only.
    """

    def __init__(self, mechanism: Any, horizon: int):
        self.info = describe(mechanism)
        self.horizon = int(horizon)
        self.step: int | None = None

    def __call__(self, params: Any) -> np.ndarray:
        if self.step is None:
            unit = type(params)(*(None if v is None else float(np.ravel(np.asarray(v, np.float64))[0]) for v in params))
            ones = ("epsilon", "rho", "sensitivity")  # a zero sensitivity (L = 0) would make every step's 0 the max
            unit = unit._replace(**{f: 1.0 for f in ones if getattr(unit, f, None) is not None})
            var = np.asarray(self.info.variance(unit, np.arange(1, self.horizon + 1)), np.float64)
            self.step = int(np.argmax(var)) + 1
        with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
            var = np.asarray(self.info.variance(params, np.asarray(self.step)), np.float64)
        return np.sqrt(var)


def concrete(*values: Any) -> list[np.ndarray] | None:
    """The values as float64 arrays, or ``None`` when any is traced (the floor is then not checked)."""
    from jaxpriv._validate import _concrete

    out = [_concrete(v) for v in values]
    return None if any(v is None for v in out) else out


def check(component: str, name: str, value: Any, terms: Sequence[Term], detail: str) -> None:
    """Raise ``ValueError`` when a finite budget ``value`` is below the learner's floor (naming both).

    The floor is the largest of ``MIN_BUDGET`` and every term's floor, elementwise over a grid.
    ``inf`` (no noise) is always accepted.
    """
    budget = np.asarray(value, np.float64)
    floors = [np.broadcast_to(np.asarray(MIN_BUDGET), budget.shape)] + [term.floor(budget) for term in terms]
    shape = np.broadcast_shapes(*(f.shape for f in floors))
    stack = np.stack([np.broadcast_to(f, shape) for f in floors])
    floor = stack.max(axis=0)
    bad = np.isfinite(budget) & (budget < floor)
    if not np.any(bad):
        return
    i = np.flatnonzero(np.broadcast_to(bad, shape))[0]
    which = int(np.argmax(stack.reshape(len(floors), -1)[:, i]))
    f = float(floor.flat[i])
    b = float(np.broadcast_to(budget, shape).flat[i])
    why = (
        "every budget's reciprocal must fit float32 with room"
        if which == 0
        else f"{terms[which - 1].what} would exceed {LIMIT:.3g} (float32's largest number over {HEADROOM:g})"
    )
    where = "" if budget.ndim == 0 else f" at grid point {i}"
    if not np.isfinite(f):
        raise ValueError(
            f"{name}: no finite budget of {component} ({detail}) keeps its float32 arithmetic finite: "
            f"{why} even without noise; got {name}={b:g}{where}"
        )
    raise ValueError(
        f"{name} must be >= {f:.3g} for {component} ({detail}): below this floor {why}, and the learner's "
        f"float32 arithmetic breaks (its releases overflow, steps are dropped or the played point leaves the "
        f"set); got {name}={b:g}{where}"
    )


def budget_name(noise: NoiseFamily | str) -> str:
    """The budget field of a noise family: ``"rho"`` (Gaussian, ρ-zCDP) or ``"epsilon"``."""
    return noise_family(noise).budget


def budget_power(noise: NoiseFamily | str) -> float:
    """``p`` of a release's magnitude ``∝ b^(-p)``: ``1/2`` for ρ (``σ ∝ 1/sqrt(ρ)``), 1 for ε."""
    return 1.0 if noise_family(noise).pure else 0.5


def release_term(std: np.ndarray, dim: int, divisor: Any, fixed: Any, power: float, what: str) -> Term:
    """The release ``v_t`` (L2 norm ``<= TAIL·sqrt(d)·std`` plus its clean sum) divided by ``min(1, divisor)``."""
    mult = np.maximum(1.0, 1.0 / np.asarray(divisor, np.float64))
    return Term(what, TAIL * np.sqrt(dim) * np.asarray(std, np.float64) * mult, power, fixed * mult)


def check_ftal_leader(
    component: str,
    name: str,
    power: float,
    std: ReleaseStd,
    mechanism_params: Any,
    horizon: int,
    dim: int,
    radius: float,
    clip: Any,
    strong_convexity: Any,
    detail: str,
) -> None:
    """The floor of an FTAL-type learner: its release ``v_t`` and its leader ``(W_t - v_t/H)/t`` stay finite.

    ``name``, ``power``: the budget field of ``mechanism_params`` and the power of its noise law;
    ``mechanism_params``: the mechanism's params at the budget checked (``TreeParams`` or
    ``WindowTreeParams``, sensitivity ``clip``); ``strong_convexity``: ``H`` (float64, broadcast).
    """
    budget = np.asarray(getattr(mechanism_params, name), np.float64)
    fixed = horizon * (np.asarray(clip, np.float64) + radius)  # the clean gradient sum and the played points' sum
    term = release_term(std(mechanism_params), dim, strong_convexity, fixed, power, "the noisy gradient sum v_t/H")
    check(component, name, budget, [term], detail)


def check_mutual_information(
    component: str,
    budget: Any,
    clip: Any,
    learning_rate: Any,
    default_rate_bound: Any,
    shrink: Any,
    horizon: int,
    dim: int,
    detail: str,
) -> None:
    """The floor of an MI-private OGD learner: ``θ_t = -sum z̃_s``, ``ηθ_t``, the default ``η``'s ``dσ²T`` stay finite.

    ``σ = clip / sqrt(d (e^{2C/d} - 1)) <= clip / sqrt(2C)`` (``e^x - 1 >= x``): the bound, ``∝ C^(-1/2)``,
    is used, so the floor holds for the exact ``σ`` too. ``learning_rate``: ``η``, ``nan`` for the
    default, which is at most ``default_rate_bound``; ``shrink``: ``s`` of ``c + (y - c)/s`` (1: none).
    """
    budget, clip = np.asarray(budget, np.float64), np.asarray(clip, np.float64)
    eta = np.asarray(learning_rate, np.float64)
    default = np.isnan(eta)
    mult = np.maximum(1.0, np.where(default, default_rate_bound, eta)) / np.asarray(shrink, np.float64)
    sigma_unit = clip / np.sqrt(2.0)  # σ <= sigma_unit · C^(-1/2)
    noise = TAIL * np.sqrt(dim) * horizon * sigma_unit * mult
    terms = [
        Term("the noisy gradient sum ηθ_t", noise, 0.5, horizon * clip * mult),
        Term("the default η's dσ²T", np.where(default, dim * horizon * sigma_unit**2, 0.0), 1.0, horizon * clip**2),
    ]
    check(component, "mutual_information", budget, terms, detail)
