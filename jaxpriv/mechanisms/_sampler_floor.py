"""The samplers' δ floor as a contract: declared by each tree component, refused above ``SAMPLER_DELTA_MAX``.

``_accounting.sampler_delta_floor`` gives the δ that the float32 samplers' bounded support adds
to a tree whose nodes each get ``budget/depth``. A component whose noise comes from those samplers
through such a tree declares what its floor is computed from (a ``SamplerFloor``, on its ``init``:
``Spec(..., sampler_floor=...)``), and its ``check`` refuses, on concrete values and before
anything compiles, a finite budget whose floor exceeds ``SAMPLER_DELTA_MAX`` (``check_sampler_floor``).
The studies and the demo record the floor per learner and grid point in ``settings.json``
(``sampler_settings``). Host, float64.

Covered: ``binary_tree`` and ``honaker_tree`` (each input enters ``D = tree_depth(T)`` nodes), the
learners built on them (PFTAL, regularised PFTAL, private experts, private bandit FTAL, DP-FTRL,
DP-UCB), the WDP learners' window tree (``k_W = window_depth(W, T)`` nodes; its Gaussian noise,
calibrated from (ε, δ), as a per-node shift ``s/σ``; δ is the learner's own claimed parameter, so,
as POCP's, its floor must also stay below that δ: ``delta_claimed``), and, since issue 45, the releases outside a
tree: POCP's ``T - 1`` Gaussian releases (``"gaussian_releases"``: each shifted by ``1/c`` in units of
its noise, ``c`` from (ε, δ) by the analytic Gaussian mechanism; δ is POCP's own claimed parameter,
so its floor must also stay below that δ: ``delta_claimed``), Lazy-DP-TS's and Anytime-Lazy-UCB's
lazy release (``"lazy_release"``: each reward enters one ``Lap(1/ε)`` draw, a one-node Laplace
floor) and DP-TS's hybrid mechanism (``"hybrid"``: at most two Laplace nodes of ``ε/2`` per reward,
the worst case, see ``jaxpriv.bandits.dp_ts``). Not covered (no declaration, ``None`` in
``settings.json``): the square-root factorization and BLT (transformed Gaussian noise), MI-OGD's
per-step noise, the other bandits' own Laplace and Gaussian draws, private LinUCB's Wishart draws,
and the ``window_tree`` mechanism used on its own (its ``check`` is
``_window_tree.check_window_tree_params``).
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import numpy as np

from jaxpriv import _validate
from jaxpriv.mechanisms._accounting import (
    SAMPLER_DELTA_MAX,
    SAMPLER_SUPPORT,
    analytic_gaussian_sigma,
    sampler_delta_floor,
)
from jaxpriv.mechanisms._noise import NoiseFamily, noise_family

#: Where the derivation, the tables and the stated δ are documented.
DOCS = "docs/algorithms/mechanisms.md, 'The samplers' tails'"


@functools.lru_cache(maxsize=4096)
def _floor_at(noise: str, budget: float, depth: int, dim: int) -> float:
    """``sampler_delta_floor`` at one budget (cached: a Gaussian value costs about 10 ms)."""
    return float(sampler_delta_floor(noise, budget, depth, dim))


class SamplerFloor(NamedTuple):
    """What a component's samplers' δ floor is computed from (declared in its spec, ``Spec.sampler_floor``).

    Attributes:
      mechanism: the tree the noise goes through: ``"binary_tree"``, ``"honaker_tree"`` or ``"window_tree"``;
        or the releases outside a tree: ``"gaussian_releases"`` (POCP), ``"lazy_release"`` (Lazy-DP-TS,
        Anytime-Lazy-UCB), ``"hybrid"`` (DP-TS).
      noise: its family: ``"gamma"``, ``"laplace"`` or ``"gaussian"``.
      depth: the nodes (releases) one input enters, each with ``budget/depth`` (``D``, the window tree's ``k_W``,
        POCP's ``T - 1``).
      dim: ``d``, the dimension of a node's noise.
      calibration: the Gaussian calibration from (ε, δ) to the node's σ (the window tree's ``"paper"`` or
        ``"composition"``; POCP's is ``"composition"``); ``None`` otherwise.
      delta_claimed: δ is the component's own claimed parameter (POCP): its floor is refused above
        ``min(δ, SAMPLER_DELTA_MAX)``, not only above ``SAMPLER_DELTA_MAX``.
    """

    mechanism: str
    noise: str
    depth: int
    dim: int
    calibration: str | None = None
    delta_claimed: bool = False

    @property
    def family(self) -> NoiseFamily:
        """The ``NoiseFamily`` named by ``noise``."""
        return noise_family(self.noise)

    @property
    def window_delta(self) -> bool:
        """Gaussian noise calibrated from (ε, δ) (a Gaussian window tree, POCP); its floor goes through a ρ."""
        return self.mechanism in _DELTA_CALIBRATED and not self.family.pure

    @property
    def budget_name(self) -> str:
        """The params field of the budget: ``"rho"`` for a Gaussian tree, ``"epsilon"`` otherwise (window trees too)."""
        return "epsilon" if self.mechanism in _DELTA_CALIBRATED else self.family.budget

    @property
    def guarantee(self) -> str:
        """The guarantee the floor weakens, for messages."""
        if self.mechanism == "gaussian_releases":
            return "(ε, δ)-DP"
        if self.mechanism == "window_tree":
            return "window ε-DP" if self.family.pure else "window (ε, δ)-DP"
        return self.family.guarantee if self.family.pure else f"{self.family.guarantee} (and its (ε, δ) conversions)"

    def budget(self, params: Any) -> np.ndarray | None:
        """The concrete budget of ``params`` (float64), or ``None`` when it is traced or missing."""
        value = getattr(params, self.budget_name, None)
        return None if value is None else _validate._concrete(value)

    def floor(self, params: Any) -> np.ndarray | None:
        """The floor at every budget of ``params`` (float64, the budget's shape; 1 at an infinite budget).

        ``None`` when the budget (or a window tree's δ) is traced or missing. A budget outside
        ``[0, inf]`` gives NaN (the component's own checks refuse it).
        """
        budget = self.budget(params)
        if budget is None:
            return None
        if self.window_delta:
            delta = None if getattr(params, "delta", None) is None else _validate._concrete(params.delta)
            if delta is None:
                return None
            budget = _window_gaussian_rho(budget, delta, self.depth, self.calibration or "paper")
        out = np.full(budget.shape, np.nan)
        for i, value in enumerate(budget.flat):
            if value >= 0:  # NaN and negative budgets stay NaN
                out.flat[i] = _floor_at(self.noise, float(value), self.depth, self.dim)
        return out

    def describe(self) -> dict[str, Any]:
        """The model, as recorded in ``settings.json``."""
        out = {"mechanism": self.mechanism, "noise": self.noise, "nodes_per_input": self.depth, "dim": self.dim}
        if self.calibration is not None:
            out["calibration"] = self.calibration
        if self.delta_claimed:
            out["delta_claimed"] = True
        return out

    def limit(self, params: Any) -> np.ndarray | float:
        """The largest floor accepted: ``SAMPLER_DELTA_MAX``, and no more than the claimed δ (``delta_claimed``)."""
        if not self.delta_claimed:
            return SAMPLER_DELTA_MAX
        delta = None if getattr(params, "delta", None) is None else _validate._concrete(params.delta)
        return SAMPLER_DELTA_MAX if delta is None else np.minimum(np.asarray(delta, np.float64), SAMPLER_DELTA_MAX)


#: The mechanisms whose Gaussian noise is calibrated from (ε, δ): their floor goes through a ρ.
_DELTA_CALIBRATED = ("window_tree", "gaussian_releases")


def _window_gaussian_rho(epsilon: np.ndarray, delta: np.ndarray, depth: int, calibration: str) -> np.ndarray:
    """The ρ whose node shift ``sqrt(2ρ/k_W)`` is the window tree's ``s/σ`` at (ε, δ) (``inf`` at ε = inf).

    A Gaussian window tree's node has ``σ = s·u(ε, δ)``, ``s`` one input's sensitivity, so a
    neighbour shifts its unit-scale noise by ``1/u``: the floor of ``sampler_delta_floor``'s
    Gaussian model with ``ρ = k_W/(2u²)``. ``"paper"``: ``u = sqrt(8) k_W ln(2/δ)/ε``;
    ``"composition"``: the exact analytic σ for sensitivity ``sqrt(k_W)`` (never above the traced
    one ``init`` uses, so the floor is never understated).
    """
    eps, delta = np.broadcast_arrays(np.asarray(epsilon, np.float64), np.asarray(delta, np.float64))
    ok = np.isfinite(eps) & (eps > 0) & (delta > 0) & (delta < 1)
    e, d = np.where(ok, eps, 1.0), np.where(ok, delta, 0.5)
    if calibration == "paper":
        unit = np.sqrt(8.0) * depth * np.log(2.0 / d) / e
    else:
        unit = np.asarray(analytic_gaussian_sigma(e, d, np.sqrt(depth)), np.float64)
    rho = depth / (2.0 * unit * unit)
    return np.where(ok, rho, np.where(np.isposinf(eps), np.inf, np.nan))


def tree_sampler_floor(
    mechanism: str, noise: NoiseFamily | str, depth: int, dim: int, calibration: str | None = None
) -> SamplerFloor:
    """The ``SamplerFloor`` of a tree (``calibration`` only for a Gaussian window tree); it keeps the family's name."""
    floor = SamplerFloor(mechanism, noise_family(noise).name, int(depth), int(dim), calibration)
    # A Gaussian window tree is calibrated from its learner's own (ε, δ): like POCP's releases, its floor
    # is refused above that δ too (``delta_claimed``), not only above ``SAMPLER_DELTA_MAX`` (issue 45).
    return floor._replace(delta_claimed=True) if floor.window_delta else floor._replace(calibration=None)


def sampler_floor_of(component: Any) -> SamplerFloor | None:
    """The ``SamplerFloor`` a ``Mechanism`` or ``Learner`` declares (``Spec.sampler_floor``), or ``None``.

    ``None``: not covered (or a component without a spec).
    """
    spec = component.spec
    value = None if spec is None else spec.sampler_floor
    return value if isinstance(value, SamplerFloor) else None


def component_delta_floor(component: Any, params: Any) -> np.ndarray | None:
    """The samplers' δ floor of ``component`` at every budget of ``params`` (its own params class), or ``None``.

    ``None`` where the component declares no floor (not a tree component, or a mechanism the
    floor does not cover) or where the budget is traced.
    """
    floor = sampler_floor_of(component)
    return None if floor is None else floor.floor(params)


def check_sampler_floor(component: str, params: Any, floor: SamplerFloor | None) -> None:
    """Refuse a finite budget whose samplers' δ floor exceeds ``SAMPLER_DELTA_MAX`` (``ValueError``).

    Every value of a swept budget is checked; the message names the first refused one (and its grid
    point), its floor, the stated δ and the largest budget accepted there. ``inf`` (no noise) is
    never refused; a traced budget, or ``floor=None`` (not covered), is not checked.
    """
    if floor is None:
        return
    values = floor.floor(params)
    if values is None:
        return
    budget = np.broadcast_to(floor.budget(params), values.shape)
    limits = np.broadcast_to(floor.limit(params), values.shape)
    bad = np.isfinite(budget) & (values > limits)
    if not np.any(bad):
        return
    i = int(np.flatnonzero(bad)[0])
    name, b, f, limit = floor.budget_name, float(budget.flat[i]), float(values.flat[i]), float(limits.flat[i])
    where = "" if values.ndim == 0 else f" (grid point {i})"
    delta = None
    if floor.window_delta:
        delta = float(np.broadcast_to(_validate._concrete(params.delta), values.shape).flat[i])
    if limit < SAMPLER_DELTA_MAX:  # POCP: the floor is above the δ it claims
        raise ValueError(
            f"{component}: epsilon={b:g}, delta={delta:g}{where} is refused: the float32 samplers' bounded support "
            f"(SAMPLER_SUPPORT) leaves a δ floor of {f:.3g} under its {floor.guarantee} guarantee "
            f"({floor.depth} Gaussian releases of dimension {floor.dim} per input), above the claimed delta={delta:g}: "
            f"the claim would hold only with δ >= {f:.3g}. Give a delta of at least {f:.3g} (or a smaller epsilon); "
            f"{DOCS}."
        )
    largest = _largest_accepted(floor, b, delta)
    model = (
        f"noise={floor.noise!r}, {floor.depth} nodes per input, each with {name}/{floor.depth}, d={floor.dim}"
        if floor.mechanism != "gaussian_releases"
        else f"{floor.depth} Gaussian releases of dimension {floor.dim} per input"
    )
    at = "" if delta is None else f" at delta={delta:g}"
    hint = (
        f"the largest {name} accepted here{at} is about {largest:.3g}"
        if largest is not None
        else f"no {name} keeps it below that here (the Gamma bound grows with d: use noise='laplace' or 'gaussian')"
    )
    raise ValueError(
        f"{component}: {name}={b:g}{where} is refused: the float32 samplers' bounded support "
        f"(SAMPLER_SUPPORT) leaves a δ floor of {f:.3g} under its {floor.guarantee} guarantee "
        f"({model}), "
        f"above the stated δ SAMPLER_DELTA_MAX = {SAMPLER_DELTA_MAX:g}: the claim would hold only with δ >= {f:.3g}. "
        f"{hint[0].upper() + hint[1:]}; an infinite {name} (no noise) is always accepted ({DOCS})."
    )


def _largest_accepted(floor: SamplerFloor, refused: float, delta: float | None) -> float | None:
    """About the largest budget below ``refused`` whose floor is at most ``SAMPLER_DELTA_MAX`` (``None``: none)."""

    def at(b: float) -> float:
        if delta is None:
            return _floor_at(floor.noise, b, floor.depth, floor.dim)
        rho = float(_window_gaussian_rho(np.asarray(b), np.asarray(delta), floor.depth, floor.calibration or "paper"))
        return _floor_at(floor.noise, rho, floor.depth, floor.dim)

    lo, hi = refused, refused
    while at(lo) > SAMPLER_DELTA_MAX:
        hi, lo = lo, lo / 16.0
        if lo < 1e-30:
            return None
    for _ in range(40):  # geometric bisection: at(lo) <= max < at(hi)
        mid = float(np.sqrt(lo * hi))
        if at(mid) > SAMPLER_DELTA_MAX:
            hi = mid
        else:
            lo = mid
    return lo


def sampler_settings(components: dict[str, tuple[Any, Any]], size: int) -> dict[str, Any]:
    """The ``settings.json`` record: the stated δ, the supports and each component's floor per grid point.

    Args:
      components: label -> ``(component, params)``, the component's own params whose budget has
        ``size`` values (or one, repeated).
      size: the number of grid points.

    Returns:
      ``{"delta_max", "support", "floor"}``; ``floor[label]`` is ``None`` where the component
      declares no floor, else its model (``SamplerFloor.describe``) and ``"floor"``: one float per
      grid point (1 at an infinite budget: no noise, no guarantee).
    """
    floors: dict[str, Any] = {}
    for label, (component, params) in components.items():
        model = sampler_floor_of(component)
        values = None if model is None else model.floor(params)
        if values is None:
            floors[label] = None
            continue
        flat = np.ravel(values) if np.size(values) != 1 else np.repeat(np.ravel(values), size)
        floors[label] = model.describe() | {"floor": [None if np.isnan(v) else float(v) for v in flat]}
    return {
        "delta_max": SAMPLER_DELTA_MAX,
        "support": {k: [float(lo), float(hi)] for k, (lo, hi) in SAMPLER_SUPPORT.items()},
        "floor": floors,
    }


def pocp_sampler_floor(horizon: int, dim: int) -> SamplerFloor | None:
    """POCP's floor: ``T - 1`` Gaussian releases of dimension ``d``, each shifted by ``1/c`` in units of its noise.

    A replaced loss at step ``τ`` moves ``x̂_t`` by ``Δ_t = λ/t`` for every ``t > τ`` and the release ``x̃_t`` gets
    ``N(0, (c Δ_t)² I)``: a shift of ``1/c`` unit normals, in every one of the ``T - 1`` releases (``τ = 1``).
    ``c = sqrt(T - 1) σ₁(ε, δ)`` (``theory.pocp_noise_multiplier``): the window tree's ``"composition"`` model with
    ``k = T - 1`` nodes (``ρ = 1/(2σ₁²)``, node shift ``sqrt(2ρ/k) = 1/c``), so the floor is
    ``1 - (1 - g_d(1/c))^(T-1)``. The exact float64 ``σ₁`` is never above the traced one, so the floor is never
    understated. ``None`` at ``T = 1`` (no release reads the data).
    """
    if horizon <= 1:
        return None
    return SamplerFloor("gaussian_releases", "gaussian", int(horizon) - 1, int(dim), "composition", True)


#: Lazy-DP-TS's and Anytime-Lazy-UCB's floor: each reward enters one released batch mean, with ``Lap(1/(ε n))`` for
#: sensitivity ``1/n``: one Laplace node shifted by ``ε`` (7.6e-4 at ε = 15, 0.11 at 20, 0.985 at 25; refused from
#: ε ≈ 11.6).
LAZY_RELEASE_FLOOR = SamplerFloor("lazy_release", "laplace", 1, 1)

#: DP-TS's floor: a reward of a block of size ``2^r`` enters ``r + 1`` p-sums with ``Lap(2(r + 1)/ε)`` and the
#: block's ``Lap(2/ε)`` release, a shift of ``ε/(2(r + 1))`` and ``ε/2`` unit Laplace draws. ``-log(1 - δ₁(s))``
#: is convex in ``s`` and 0 at 0, so ``r + 1`` nodes of ``s/(r + 1)`` leave at most what one node of ``s`` does:
#: the worst case is ``r = 0``, two nodes of ``ε/2`` (the model here).
HYBRID_FLOOR = SamplerFloor("hybrid", "laplace", 2, 1)
