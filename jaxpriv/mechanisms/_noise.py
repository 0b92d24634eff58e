"""Noise families (``NoiseFamily``: budget, norm, guarantee, sampler) and their unit-scale samplers."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import jax
import jax.numpy as jnp
import numpy as np

from jaxpriv import _rng
from jaxpriv._base import PRNGKey


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


@dataclass(frozen=True, eq=False)
class NoiseFamily:
    """A noise family: what a mechanism built with ``noise=...`` reads about its noise.

    One instance per family (``GAMMA``, ``LAPLACE``, ``GAUSSIAN``); compare them by identity
    (``family is GAUSSIAN``) or, better, read the attribute the branch is about. Every public
    factory takes a family or its name (``noise="gaussian"`` and ``noise=GAUSSIAN`` build the same
    mechanism); ``noise_family`` turns either into the object. What is saved or printed keeps the
    name (``PrefixSumInfo.noise``, settings, fingerprints): ``str(family)`` is ``family.name``.

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
    """

    name: str
    budget: str
    guarantee: str
    norm: int
    sub_gaussian: bool
    sampler: Callable[..., jax.Array] = field(repr=False)
    variance: Callable[[int], float] = field(repr=False)

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

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"NoiseFamily({self.name!r})"

    def __reduce__(self):  # pickled and copied as the one instance of its name
        return noise_family, (self.name,)


GAMMA = NoiseFamily("gamma", "epsilon", "ε-DP", 2, False, gamma_norm, _gamma_unit_variance)
LAPLACE = NoiseFamily("laplace", "epsilon", "ε-DP", 1, False, laplace, _laplace_unit_variance)
GAUSSIAN = NoiseFamily("gaussian", "rho", "ρ-zCDP", 2, True, gaussian, _gaussian_unit_variance)

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
