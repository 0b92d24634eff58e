"""Eager validation of static arguments and concrete params (never inside jit)."""

from __future__ import annotations

from typing import Any

import jax
import numpy as np


def _concrete(value: Any) -> np.ndarray | None:
    """``value`` as a NumPy array, or ``None`` when it is a tracer (skip checks)."""
    if isinstance(value, jax.core.Tracer):
        return None
    try:
        return np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError, jax.errors.ConcretizationTypeError):
        return None


def positive_int(name: str, value: Any, minimum: int = 1) -> int:
    """A static integer argument ``>= minimum``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value}")
    return int(value)


def chunk(value: Any, name: str = "chunk") -> int | None:
    """A seed batch size: ``None`` (all seeds in one batch) or an integer ``>= 1``.

    The one check of every entry point that batches seeds (``sweep``, ``map_seeds``, ``tune``,
    ``jaxpriv.testing.rollout``, the episode sweeps): ``0``, ``-1``, ``2.5`` or ``True`` is a
    ``ValueError`` naming ``name``, before anything is compiled.
    """
    return None if value is None else positive_int(name, value)


#: Every horizon is below this: the engine's clock ``t`` and the components' step counters are int32,
#: and some reach ``T + 1`` (the bandit factories' bound since they were written).
HORIZON_LIMIT = 2**31 - 1


def horizon(value: Any, name: str = "horizon") -> int:
    """A horizon ``T``: an integer in ``[1, 2**31 - 1)`` (``HORIZON_LIMIT``; int32 clock and counters).

    Every factory that takes a horizon and the engine refuse a longer one here, before
    anything is built or traced: past it the int32 clock would wrap around inside JAX.
    """
    value = positive_int(name, value)
    if value >= HORIZON_LIMIT:
        raise ValueError(f"{name} must be < 2**31 - 1 (the clock and step counters are int32), got {value}")
    return value


def seed(name: str, value: Any) -> int:
    """An integer seed in ``[0, 2**64)``, the range of ``jaxpriv._base.as_key`` (every bit counts).

    A negative seed, one of ``2**64`` or more, a bool, a float or a string raises ``ValueError``
    naming ``name``: ``jax.random.key`` would keep only the low 32 bits of a large one
    (``2**32`` gives seed 0's numbers) and wrap a negative one around (``-1`` runs as ``2**32 - 1``).
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name} must be an integer seed in [0, 2**64), got {value!r}")
    if not 0 <= int(value) < 2**64:
        raise ValueError(f"{name} must be an integer seed in [0, 2**64), got {int(value)}")
    return int(value)


def choice(name: str, value: Any, allowed: tuple[str, ...]) -> str:
    """A static string argument among ``allowed``."""
    if value not in allowed:
        raise ValueError(f"{name} must be one of {allowed}, got {value!r}")
    return value


def positive(name: str, value: Any, allow_inf: bool = True) -> None:
    """All entries ``> 0`` (``inf`` allowed when ``allow_inf``), no NaN."""
    v = _concrete(value)
    if v is None:
        return
    bad = np.isnan(v) | (v <= 0) | (np.isinf(v) & (not allow_inf))
    if np.any(bad):
        rng = "(0, inf]" if allow_inf else "(0, inf)"
        raise ValueError(f"{name} must be in {rng}, got {value!r}")


def nonnegative(name: str, value: Any, allow_inf: bool = False) -> None:
    """All entries ``>= 0`` and finite unless ``allow_inf``."""
    v = _concrete(value)
    if v is None:
        return
    bad = np.isnan(v) | (v < 0) | (np.isinf(v) & (not allow_inf))
    if np.any(bad):
        rng = "[0, inf]" if allow_inf else "[0, inf)"
        raise ValueError(f"{name} must be in {rng}, got {value!r}")


def in_open_interval(name: str, value: Any, lo: float, hi: float) -> None:
    """All entries strictly inside ``(lo, hi)``."""
    v = _concrete(value)
    if v is None:
        return
    if np.any(np.isnan(v) | (v <= lo) | (v >= hi)):
        raise ValueError(f"{name} must be in ({lo}, {hi}), got {value!r}")


def in_closed_interval(name: str, value: Any, lo: float, hi: float) -> None:
    """All entries inside ``[lo, hi]``."""
    v = _concrete(value)
    if v is None:
        return
    if np.any(np.isnan(v) | (v < lo) | (v > hi)):
        raise ValueError(f"{name} must be in [{lo}, {hi}], got {value!r}")


def trailing_shape(name: str, value: Any, shape: tuple[int, ...]) -> None:
    """The trailing dimensions of ``value`` equal ``shape`` (a leading grid axis is allowed)."""
    s = np.shape(value)
    if len(shape) and tuple(s[len(s) - len(shape) :]) != tuple(shape):
        raise ValueError(f"{name} must have trailing shape {shape}, got shape {s}")


# The budget floor of the components that declare none of their own (the mechanisms, the bandits of
# jaxpriv.bandits): below it, Δ/ε overflows (or ε itself rounds to zero) when the engine casts params to
# float32. The learners of jaxpriv.oco refuse their own floor instead, where their arithmetic breaks
# (jaxpriv.oco._floor; docs/guide/sharp_edges.md), and pass ``floor=`` to ``budget_value``.
FLOAT32_TINY_BUDGET = 1e-30


def budget(
    component: str,
    family: Any,
    params: Any,
    needs: tuple[str, ...],
    refuses: tuple[str, ...] = (),
    guarantee: str | None = None,
) -> None:
    """The budget fields a family needs are given, and none of another family is.

    A budget field left ``None`` never means "no privacy": the non-private limit is an
    explicit ``inf``. This is a static check (``None`` is part of a params pytree's
    structure, not a value), so it also runs inside ``init`` under ``jit``: a component
    cannot be initialised without the budget of the guarantee it implements.

    Args:
      component: the component's name, for the message (``"binary_tree"``).
      family: the noise family: a ``jaxpriv.mechanisms.NoiseFamily`` (``GAUSSIAN``), or its name
        (``"gaussian"``) when ``guarantee`` is given.
      params: a params NamedTuple.
      needs: the fields the family's guarantee needs (``("rho",)``).
      refuses: budget fields of other families, which must be ``None``.
      guarantee: the guarantee's name (``"ρ-zCDP"``); the family's ``guarantee`` by default.

    Raises:
      ValueError: a needed field is ``None`` or a refused one is set; the message names
        what was given and what the family needs.
    """
    if guarantee is None:
        guarantee = family.guarantee  # a NoiseFamily names its own (this module sits below the mechanisms)
    name = getattr(family, "name", family)
    missing = [f for f in needs if getattr(params, f, None) is None]
    extra = [f for f in refuses if getattr(params, f, None) is not None]
    if not (missing or extra):
        return
    given = [f"{f}={_short(getattr(params, f))}" for f in (*needs, *refuses) if getattr(params, f, None) is not None]
    needed = " and ".join(needs)
    raise ValueError(
        f"{component} with noise={name!r} is {guarantee} and needs {needed}"
        + (f" (and no {' or '.join(refuses)})" if refuses else "")
        + f"; got {', '.join(given) if given else 'no budget'}. "
        + f"Give {needed} ({needs[0]}=inf is the explicit non-private limit)"
        + (f", or build it with the noise family that {', '.join(extra)} belongs to." if extra else ".")
    )


def budget_value(name: str, value: Any, floor: float = FLOAT32_TINY_BUDGET) -> None:
    """A privacy budget: all entries in ``(0, inf]``, numeric, and not below ``floor``.

    ``inf`` is the explicit non-private limit. A budget below ``floor`` is refused: by default
    ``FLOAT32_TINY_BUDGET`` (1e-30), which passes a float64 check but whose noise scale overflows, or
    which becomes 0, once the engine computes in float32. A learner of ``jaxpriv.oco`` passes the
    least budget any learner takes (``jaxpriv.oco._floor.MIN_BUDGET``) and checks its own floor.
    """
    numeric(name, value)
    positive(name, value)
    v = _concrete(value)
    if v is not None and np.any((v > 0) & (v < floor)):
        raise ValueError(
            f"{name} must be >= {floor:g} (smaller budgets give noise that float32 cannot represent), got {value!r}"
        )


def numeric(name: str, value: Any) -> None:
    """``value`` is a number or a numeric array (not a string, bool or object)."""
    if isinstance(value, jax.core.Tracer):
        return
    if isinstance(value, (str, bytes)) or (isinstance(value, np.ndarray) and value.dtype.kind in "USO"):
        raise ValueError(f"{name} must be a number or a numeric array, got {value!r} ({type(value).__name__})")
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError, jax.errors.ConcretizationTypeError):
        return
    if arr.dtype.kind not in "iuf":
        raise ValueError(f"{name} must be a number or a numeric array, got {value!r} (dtype {arr.dtype})")


def _short(value: Any) -> str:
    arr = np.asarray(value) if not isinstance(value, jax.core.Tracer) else None
    if arr is None:
        return "<traced>"
    return repr(arr.item()) if arr.size == 1 else f"<array of shape {arr.shape}>"


def finite(name: str, value: Any) -> None:
    """All entries finite: no NaN, no ``±inf`` (a location, a direction, a set of vectors)."""
    v = _concrete(value)
    if v is not None and not np.all(np.isfinite(v)):
        raise ValueError(f"{name} must be finite (no NaN or inf), got {value!r}")


def no_nan(name: str, value: Any) -> None:
    """No NaN entry (``inf`` is left to the field's own check)."""
    v = _concrete(value)
    if v is not None and np.any(np.isnan(v)):
        raise ValueError(f"{name} must not contain NaN, got {value!r}")


def representable(name: str, value: Any) -> None:
    """A params leaf the engine can cast without changing it: numeric, within float32 / int32.

    The engine casts float leaves to float32 and integer leaves to int32
    (``jaxpriv.sim.canonical_params``): a finite float beyond ``3.4e38`` would become ``inf``
    and an integer beyond ``2**31 - 1`` would wrap around, silently. ``inf`` and NaN are left to
    the fields' own checks (``inf`` is a meaningful budget; NaN a default in some learners).
    """
    numeric(name, value)
    if isinstance(value, jax.core.Tracer):
        return
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError, jax.errors.ConcretizationTypeError):
        return
    if arr.size == 0:
        return
    if arr.dtype.kind in "iu":
        lo, hi = np.iinfo(np.int32).min, np.iinfo(np.int32).max
        if arr.min() < lo or arr.max() > hi:
            raise ValueError(f"{name} must fit in int32 [{lo}, {hi}] (the engine computes in int32), got {value!r}")
    elif arr.dtype.kind == "f":
        top = float(np.finfo(np.float32).max)
        with np.errstate(invalid="ignore"):
            big = np.isfinite(arr) & (np.abs(arr.astype(np.float64)) > top)
        if np.any(big):
            raise ValueError(
                f"{name} must be within ±{top:.4g} (float32, which the engine computes in; "
                f"{float(arr[big].flat[0])!r} would become inf), got {value!r}"
            )


def opt_outs(private: Any, **switches: str | None) -> tuple[str, ...]:
    """The privacy opt-outs switched on at a private component's construction, each with its reason.

    ``switches`` maps an option as written (``"clip_rewards=False"``) to why the guarantee then
    fails (``"rewards outside [0, 1] are not clipped"``), or to ``None`` when that option is off.
    ``private`` is the factory's own argument and must be a bool: ``False`` says the caller knows
    the guarantee does not hold (``refuse_finite_budget`` then accepts any budget).

    Returns:
      ``"option (reason)"`` for every option switched on.
    """
    if not isinstance(private, (bool, np.bool_)):
        raise ValueError(f"private must be True or False, got {private!r}")
    return tuple(f"{option} ({why})" for option, why in switches.items() if why is not None)


def refuse_finite_budget(
    component: str, name: str, value: Any, reasons: tuple[str, ...], guarantee: str, private: bool = True
) -> None:
    """Refuse a finite budget for a component built with opt-outs of its guarantee, unless ``private=False``.

    A configuration whose stated guarantee does not hold is never run under a finite budget
    as if it did: the caller gives ``name=inf`` (nothing is claimed), or builds the component
    with ``private=False`` (it then declares itself not private, and ``Result.private`` and the
    saved settings say so). Concrete values only; tracers are skipped.
    """
    if not reasons or not private:
        return
    v = _concrete(value)
    if v is None or not np.any(np.isfinite(v)):
        return
    raise ValueError(
        f"{component} built with {'; '.join(reasons)} does not give its {guarantee} guarantee, so a finite "
        f"{name} ({_short(value)}) is refused: give {name}=inf, or build it with private=False to run it "
        "as a non-private configuration (its results are then marked private: false)"
    )
