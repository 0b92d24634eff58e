"""Noise families (``NoiseFamily``: budget, norm, guarantee, sampler, calibration, tail, score).

Each family owns what is proved about it: its unit-scale sampler, the node noise scale of a tree for a
budget (``node_scale``), the δ floor its float32 sampler's bounded support leaves per node
(``node_floor_log``) and the likelihood-ratio score of its nodes that the audits use (``score``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxpriv import _rng, _validate
from jaxpriv._base import PRNGKey
from jaxpriv.mechanisms._support import (
    SAMPLER_SUPPORT,
    _gamma_node_floor,
    _gaussian_node_log_complement,
    _laplace_node_floor,
)


def gamma_norm(key: PRNGKey, shape: tuple[int, ...], dtype=jnp.float32) -> jax.Array:
    """Unit-scale Gamma-norm noise: density ``∝ exp(-||n||_2)`` on ``R^d``, ``d = shape[-1]``.

    A uniformly random direction times a radius ``r ~ Gamma(shape=d, scale=1)``.
    As ``d`` is an integer, ``r`` is drawn exactly as a sum of ``d`` unit
    exponentials, which avoids the rejection sampler of ``jax.random.gamma``.
    Then ``E||n||² = d(d+1)`` and each coordinate has variance ``d+1``.
    """
    k_dir, k_rad = _rng.split(key)
    g = _rng.normal(k_dir, shape, dtype)
    radius = _rng.exponential(k_rad, shape, dtype).sum(-1, keepdims=True)
    norm = jnp.sqrt(jnp.sum(g * g, -1, keepdims=True))
    return g * (radius / jnp.maximum(norm, jnp.finfo(dtype).tiny))


def laplace(key: PRNGKey, shape: tuple[int, ...], dtype=jnp.float32) -> jax.Array:
    """I.i.d. unit Laplace per coordinate (variance 2): a unit exponential with a random sign (``_rng.laplace``)."""
    return _rng.laplace(key, shape, dtype)


def gaussian(key: PRNGKey, shape: tuple[int, ...], dtype=jnp.float32) -> jax.Array:
    """I.i.d. standard normal per coordinate."""
    return _rng.normal(key, shape, dtype)


def _gamma_unit_variance(dim: int) -> float:
    return dim + 1.0


def _laplace_unit_variance(dim: int) -> float:
    del dim
    return 2.0


def _gaussian_unit_variance(dim: int) -> float:
    del dim
    return 1.0


def _calibration_inputs(name: str, budget: ArrayLike, sensitivity: ArrayLike) -> None:
    """Concrete inputs of a closed-form calibration: a budget in ``[0, inf]`` and a sensitivity ``>= 0``."""
    _validate.numeric(name, budget)
    _validate.nonnegative(name, budget, allow_inf=True)
    _validate.numeric("sensitivity", sensitivity)
    _validate.nonnegative("sensitivity", sensitivity, allow_inf=True)


def gamma_node_scale(epsilon: ArrayLike, sensitivity: ArrayLike, depth: int) -> jax.Array:
    """Gamma-norm node noise: radius ``~ Gamma(shape=d, scale=D·Δ/ε)`` (Algorithm 2, line 9).

    Density ``∝ exp(-ε ||n||_2 / (Δ D))``: each node is ε/D-DP for L2 sensitivity Δ.
    """
    _calibration_inputs("epsilon", epsilon, sensitivity)
    return depth * jnp.asarray(sensitivity, jnp.float32) / jnp.asarray(epsilon, jnp.float32)


def laplace_node_scale(epsilon: ArrayLike, sensitivity: ArrayLike, depth: int) -> jax.Array:
    """Laplace node noise ``b = D·Δ/ε`` per coordinate, Δ the L1 sensitivity."""
    _calibration_inputs("epsilon", epsilon, sensitivity)
    return depth * jnp.asarray(sensitivity, jnp.float32) / jnp.asarray(epsilon, jnp.float32)


def gaussian_node_stddev(rho: ArrayLike, sensitivity: ArrayLike, depth: int) -> jax.Array:
    """Gaussian node noise ``σ = Δ sqrt(D / (2ρ))``: each node is ρ/D-zCDP, so the tree is ρ-zCDP."""
    _calibration_inputs("rho", rho, sensitivity)
    rho = jnp.asarray(rho, jnp.float32)
    return jnp.asarray(sensitivity, jnp.float32) * jnp.sqrt(depth / (2.0 * rho))


# One node's floor: ``log`` of the mass a neighbour's shift leaves inside its support, for the whole
# tree's budget split ``depth`` ways (``_accounting.sampler_delta_floor`` derives each; ``_support``).


def _log_complement(node: float) -> float:
    return np.log1p(-node) if node < 1.0 else -np.inf


def _gamma_node_floor_log(budget: float, depth: int, dim: int) -> float:
    return _log_complement(_gamma_node_floor(float(budget / depth), dim))


def _laplace_node_floor_log(budget: float, depth: int, dim: int) -> float:
    del dim
    return _log_complement(_laplace_node_floor(float(budget / depth), -SAMPLER_SUPPORT["laplace"][0]))


def _gaussian_node_floor_log(budget: float, depth: int, dim: int) -> float:
    return _gaussian_node_log_complement(float(np.sqrt(2.0 * budget / depth)), dim)


# The audits' score of B (canary ``high·e_1``) vs A (``low·e_1``) from noisy nodes ``[..., levels, d]``:
# the exact log-likelihood ratio of the family, up to a factor (``audit._scores.node_scores``).


def _clip_score(nodes: np.ndarray, low: float, high: float) -> np.ndarray:
    """``Σ_i clip(y_i1, low, high)``: Laplace's exact LR, and the Gamma-norm's in one dimension."""
    return np.clip(nodes[..., 0], low, high).sum(-1)


def _gamma_score(nodes: np.ndarray, low: float, high: float) -> np.ndarray:
    """``Σ_i ||y_i - low e_1|| - ||y_i - high e_1||`` (exact; the clip in one dimension)."""
    if nodes.shape[-1] == 1:
        return _clip_score(nodes, low, high)
    e = np.zeros(nodes.shape[-1])
    e[0] = 1.0
    return (np.linalg.norm(nodes - low * e, axis=-1) - np.linalg.norm(nodes - high * e, axis=-1)).sum(-1)


def _gaussian_score(nodes: np.ndarray, low: float, high: float) -> np.ndarray:
    """``Σ_i y_i1`` (exact LR)."""
    del low, high
    return nodes[..., 0].sum(-1)


@dataclass(frozen=True, eq=False)
class NoiseFamily:
    """A noise family: what a mechanism built with ``noise=...`` reads about its noise.

    One instance per family (``GAMMA``, ``LAPLACE``, ``GAUSSIAN``); code reads the attribute or calls
    the method a branch is about (``family.node_scale(...)``, ``family.pure``) rather than comparing
    families. Every public factory takes a family or its name (``noise="gaussian"`` and
    ``noise=GAUSSIAN`` build the same mechanism); ``noise_family`` turns either into the object once,
    and the mechanism keeps the object (``PrefixSumInfo.noise``). What is saved keeps the name
    (``Spec.static``, settings, fingerprints): ``str(family)`` is ``family.name``.

    Attributes:
      name: ``"gamma"``, ``"laplace"`` or ``"gaussian"``.
      budget: the params field it is calibrated from in a prefix-sum mechanism: ``"epsilon"``
        (ε-DP) or ``"rho"`` (ρ-zCDP). (The window tree calibrates Gaussian noise from ε and δ.)
      guarantee: the guarantee that budget buys: ``"ε-DP"`` or ``"ρ-zCDP"``.
      norm: the norm its sensitivity is measured in (and inputs are clipped in): 1 (Laplace) or 2.
      sub_gaussian: its tails are Gaussian (Gaussian noise); else exponential (Laplace, Gamma-norm:
        sub-gamma, with a scale term in a Bernstein bound).
      sampler: ``(key, shape, dtype) -> unit draws`` (``gamma_norm``, ``laplace``, ``gaussian``).
      variance: ``dim -> `` the per-coordinate variance of one unit draw (``unit_variance``).
      calibration: ``(budget, sensitivity, depth) -> scale``: the node noise scale of a ``depth``-level
        tree (``node_scale``).
      floor: ``(budget, depth, dim) -> log`` of one node's mass left inside a neighbour's support by
        the float32 sampler's bounded support (``node_floor_log``).
      scorer: ``(nodes, low, high) -> scores``: the audits' likelihood-ratio score (``score``).
    """

    name: str
    budget: str
    guarantee: str
    norm: int
    sub_gaussian: bool
    sampler: Callable[..., jax.Array] = field(repr=False)
    variance: Callable[[int], float] = field(repr=False)
    calibration: Callable[..., jax.Array] = field(repr=False)
    floor: Callable[[float, int, int], float] = field(repr=False)
    scorer: Callable[[np.ndarray, float, float], np.ndarray] = field(repr=False)

    @property
    def pure(self) -> bool:
        """Pure ε-DP (ε splits over a tree's ``D`` levels: node variance × D²); else ρ-zCDP (× D)."""
        return self.budget == "epsilon"

    @property
    def input_norm(self) -> str:
        """``"l1"`` or ``"l2"``: the ``norm`` as ``guard_input`` names it."""
        return "l1" if self.norm == 1 else "l2"

    def sample(self, key: PRNGKey, shape: tuple[int, ...], dtype=jnp.float32) -> jax.Array:
        """Unit-scale draws of shape ``shape`` in ``dtype`` (``sampler``; the mechanisms scale them).

        Raises:
          ValueError: ``dtype`` is not a floating dtype (the draws are real numbers).
        """
        if not jnp.issubdtype(np.dtype(dtype), jnp.floating):
            raise ValueError(
                f"{self.name}.sample: dtype must be a floating dtype (float32, ...), got {np.dtype(dtype)}"
            )
        return self.sampler(key, shape, dtype)

    def unit_variance(self, dim: int) -> float:
        """Per-coordinate variance of one unit draw of dimension ``dim``: ``d + 1`` (Gamma), 2 (Laplace), 1."""
        return self.variance(dim)

    def scaled_variance(self, scale, dim: int):
        """Per-coordinate variance of ``scale`` times a unit draw: ``unit_variance(dim) · scale²``.

        Just ``scale²`` where the unit variance is 1 (Gaussian): no multiplication by one enters a
        traced computation (its jaxpr, and so the engine's fingerprints, stay as they were).
        """
        unit = self.unit_variance(dim)
        return scale**2 if unit == 1.0 else unit * scale**2

    def node_scale(self, budget: ArrayLike, sensitivity: ArrayLike, depth: int) -> jax.Array:
        """The per-node noise scale of a ``depth``-level tree for the whole tree's ``budget`` (ε, or ρ).

        ``gamma_node_scale`` (radius scale ``DΔ/ε``), ``laplace_node_scale`` (``DΔ/ε``) or
        ``gaussian_node_stddev`` (``Δ sqrt(D/(2ρ))``); traceable, float32, 0 for an infinite budget.
        """
        return self.calibration(budget, sensitivity, depth)

    def node_floor_log(self, budget: float, depth: int, dim: int) -> float:
        """``log(1 - δ₁)``: one node's sampler floor ``δ₁`` for the tree's ``budget`` split ``depth`` ways (host).

        The node shift is ``s = budget/D`` (ε-DP families) or ``sqrt(2ρ/D)`` (Gaussian); ``δ₁(s)`` as
        ``_accounting.sampler_delta_floor`` derives it for the family (``-inf`` where it is 1).
        """
        return self.floor(budget, depth, dim)

    def score(self, nodes: np.ndarray, low: float, high: float) -> np.ndarray:
        """The log-likelihood ratio (up to a factor) of canary ``high·e_1`` vs ``low·e_1``, summed over nodes.

        ``nodes`` is ``[..., levels, d]`` (float64). Gaussian: ``Σ_i y_i1``; Laplace (and Gamma-norm in
        one dimension): ``Σ_i clip(y_i1, low, high)``; Gamma-norm: ``Σ_i ||y_i - low e_1|| - ||y_i - high e_1||``.
        """
        return self.scorer(nodes, low, high)

    def __str__(self) -> str:
        return self.name

    def __static__(self) -> str:  # how ``Spec.static`` keeps it (``jaxpriv._base.static_args``): by name
        return self.name

    def __repr__(self) -> str:
        return f"NoiseFamily({self.name!r})"

    def __reduce__(self):  # pickled and copied as the one instance of its name
        return noise_family, (self.name,)


GAMMA = NoiseFamily(
    "gamma",
    "epsilon",
    "ε-DP",
    2,
    False,
    gamma_norm,
    _gamma_unit_variance,
    calibration=gamma_node_scale,
    floor=_gamma_node_floor_log,
    scorer=_gamma_score,
)
LAPLACE = NoiseFamily(
    "laplace",
    "epsilon",
    "ε-DP",
    1,
    False,
    laplace,
    _laplace_unit_variance,
    calibration=laplace_node_scale,
    floor=_laplace_node_floor_log,
    scorer=_clip_score,
)
GAUSSIAN = NoiseFamily(
    "gaussian",
    "rho",
    "ρ-zCDP",
    2,
    True,
    gaussian,
    _gaussian_unit_variance,
    calibration=gaussian_node_stddev,
    floor=_gaussian_node_floor_log,
    scorer=_gaussian_score,
)

#: Every family, by name, in the order ``NOISE_FAMILIES`` lists them.
FAMILIES: dict[str, NoiseFamily] = {f.name: f for f in (GAMMA, LAPLACE, GAUSSIAN)}


def noise_family(noise: NoiseFamily | str, allowed: tuple[str, ...] | None = None, name: str = "noise") -> NoiseFamily:
    """The ``NoiseFamily`` of ``noise``: a family, or its name (``"gamma"``, ``"laplace"``, ``"gaussian"``).

    Args:
      noise: a ``NoiseFamily`` or its name.
      allowed: the names of the families the caller accepts (default: all of them).
      name: the argument's name, for the message.

    Raises:
      ValueError: anything else (a wrong type or unknown name, or a family outside ``allowed``);
        the message lists the accepted families. A ``NoiseFamily`` that is not one of the three
        instances (``dataclasses.replace(GAMMA, sampler=...)``, a copy built by hand) is refused
        whatever its name: its sampler and calibration are not the ones the guarantee is proved for.
    """
    allowed = tuple(FAMILIES) if allowed is None else allowed
    if isinstance(noise, NoiseFamily) and FAMILIES.get(noise.name) is not noise:
        raise ValueError(
            f"{name} must be one of the noise families GAMMA, LAPLACE, GAUSSIAN (or their names {allowed}), "
            f"got another NoiseFamily object named {noise.name!r}: a family is identified by the object, not its "
            "name (its sampler and calibration are what the privacy guarantee is proved for)"
        )
    family = noise if isinstance(noise, NoiseFamily) else FAMILIES.get(noise) if isinstance(noise, str) else None
    if family is None or family.name not in allowed:
        raise ValueError(f"{name} must be one of {allowed}, got {noise!r}")
    return family
