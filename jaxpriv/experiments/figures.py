"""Figures as named recipes over ``jaxpriv.plot``: what a study file's ``[[figures]]`` entries draw.

Every study writes ``regret.png`` (``regret_vs_t``), ``final_regret.png`` (``final_vs_budget`` with each
learner's bound) and, with a ``reference``, ``paired.png`` (``paired_difference``); a ``[[figures]]`` entry
adds one more figure, named by its ``recipe``, into ``file`` (default ``<recipe>.png``), with its options:

``regret_vs_t``
    regret against ``t`` (mean, 95% band): ``learners`` (labels; default all), ``grid_points`` (indices; default
    up to six, evenly spread), ``logx``, ``logy``.
``final_vs_budget``
    final regret against a swept axis with each learner's bound dashed: ``learners``, ``axis`` (default the
    first swept scalar), ``logx``, ``logy``.
``paired_difference``
    each learner minus ``reference`` (default the study's) against ``t``, paired-SE bands: ``learners``,
    ``grid_points``; its table (``<file stem>.csv``): the final differences with their paired SEs and whether each
    is within float32 round-off (``within_roundoff``, the rule of the study files page, on the regrets alone).
``price_of_privacy``
    regret(private) − regret(non-private) against ``t``, paired SE: the non-private run is the learner
    ``nonprivate`` (a label) at the same grid point, or, without it, the same learner at the ``inf`` value of
    ``axis``; one line per private grid point (``values``: those of ``axis`` only). ``relative = true`` draws
    Azize & Basu's ``PoP(t) = (Reg_priv − Reg_nonpriv) / Reg_nonpriv`` (of the means) instead, ``until`` the last
    ``t`` drawn. Its table ``<file stem>.csv``: the final difference, its paired SE, the relative price.
``gap_vs_budget``
    ``Reg(learner) − Reg(reference)`` (a panel per learner of ``learners``, default ``learner``) at the
    checkpoints ``at`` (default ``T``; those past ``T`` left out) against the budget ``axis``, one
    line per ``t``, a ``band`` (default 2) paired SEs wide: Azize & Basu's regret gap against ρ for several
    horizons (anytime learners: one run gives every horizon). Table: per ``t`` and budget the gap, its paired SE and
    the relative price.
``knee``
    one learner's final regret against the budget ``axis``, its bound, and the knee where the high-privacy
    asymptote ``B/ε`` (``B`` the median of ``ε·regret`` over the budgets ``<= high_privacy``, default 0.05)
    meets the non-private plateau ``A`` (the ``inf`` budget, else the largest): ``ε_knee = B/A``; with
    ``lower_bound = true`` on a Bernoulli bandit, [N22] Theorem 3's lower bound
    (``jaxpriv.theory.adap_lower_bound``) and its knee ``max kl/(6Δ)`` are drawn too. Table ``knee.csv``.
``final_vs_static``
    final regret against a learner's numeric static argument ``static`` (``"window"``): one line per registry name
    over its learners that set it (``WDP-COCOP`` at ``W = 2, 16, 128``), the learners without it as dotted
    lines at their value; ``learners``, ``logx``, ``logy``.
``regret_vs_horizon``
    (a file with ``horizons``) final regret against ``T`` per learner and grid point, log-log; beside it
    ``slopes.csv`` (always written for ``horizons``).

Each recipe is ``(study, data, options) -> (Figure, table rows or None)``; nothing here runs a sweep.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from jaxpriv import plot
from jaxpriv.experiments._outputs import mean_se
from jaxpriv.experiments._tables import within_roundoff
from jaxpriv.experiments.study_file import Study, StudyLearner

__all__ = ["RECIPES", "Data", "draw", "fmt", "knee", "label_of"]


class Data(NamedTuple):
    """What a recipe draws from: the checkpoints ``[m]``, regret ``[L, G, S, m]``, each learner's bound ``[G]``."""

    steps: np.ndarray
    regret: np.ndarray
    bounds: list[np.ndarray | None]

    @property
    def final(self) -> np.ndarray:
        """``[L, G, S]``: the final regret."""
        return self.regret[..., -1]


def label_of(study: Study, g: int, keys: tuple[str, ...] | None = None) -> str:
    """Grid point ``g`` as ``"epsilon=1, lipschitz=0.5"`` (over ``keys``; default: every swept key)."""
    keys = tuple(study.grid) if keys is None else keys
    return ", ".join(f"{k.split('.')[-1]}={fmt(study.grid[k][g])}" for k in keys) or study.learner_name


def fmt(v: Any) -> str:
    """A grid value as text: ``"inf"``, the ``%g`` form, or ``"[a b c]"`` for a vector."""
    v = np.asarray(v)
    if v.ndim:
        return "[" + " ".join(f"{x:g}" for x in v.ravel()) + "]"
    return "inf" if np.isinf(v) else f"{float(v):g}"


def _shown(study: Study, most: int) -> np.ndarray:
    """Up to ``most`` grid points, evenly spread."""
    return np.unique(np.linspace(0, study.size - 1, min(study.size, most)).round().astype(int))


def _loglog(steps: np.ndarray) -> bool:
    return bool(np.all(steps > 0) and steps[-1] >= 100)


def _columns(panels: int) -> int:
    """Columns of a figure of ``panels`` panels: up to three per row, two for four (a 2×2 grid, no empty slot)."""
    return 2 if panels == 4 else min(panels, 3)


def _figure(panels: int, width: float = 6.4, height: float = 4.4) -> tuple[Any, list[Any]]:
    """A ``Figure`` (no pyplot, no backend) with ``panels`` axes, up to three per row (``_columns``)."""
    from matplotlib.figure import Figure

    cols = _columns(panels)
    rows = -(-panels // cols)
    scale = 1.0 if panels == 1 else 0.75
    fig = Figure(figsize=(width * scale * cols, height * scale * rows), dpi=120)
    return fig, [fig.add_subplot(rows, cols, k + 1) for k in range(panels)]


def _curves_figure(
    study: Study, steps: np.ndarray, regret: np.ndarray, pick: list[int] | None = None,
    shown: np.ndarray | None = None, logx: bool | None = None, logy: bool | None = None,
) -> Any:  # fmt: skip
    """``regret.png``: one learner: a line per grid point shown (up to 10); a comparison: a panel per grid point
    shown (up to 6) with a line per learner. Mean and 95% band, ``jaxpriv.plot.regret_vs_t``. A learner that
    depends on no swept value (FTAL and OGD in the demo) is a reference: the same curve on every panel, drawn
    grey and dashed, each with its own dash pattern and marker, so two such curves that coincide both show."""
    loglog = _loglog(steps)
    logx = loglog if logx is None else logx
    logy = loglog if logy is None else logy
    pick = list(range(len(study.labels))) if pick is None else pick
    if not study.compare:
        fig, (ax,) = _figure(1)
        curves = {label_of(study, int(g)): regret[0, g] for g in (_shown(study, 10) if shown is None else shown)}
        plot.regret_vs_t(steps, curves, ax=ax, logx=logx, logy=logy)
        ax.set_title(f"{study.name}: {study.learner_name}, {study.seeds} seeds (mean, 95% band)", fontsize=9)
    else:
        shown = _shown(study, 6) if shown is None else shown
        fig, axes = _figure(len(shown))
        for ax, g in zip(axes, shown, strict=True):
            curves = {study.labels[i]: regret[i, g] for i in pick}
            artists = plot.regret_vs_t(steps, curves, ax=ax, logx=logx, logy=logy)
            _style_references(study, pick, artists)
            ax.set_title(label_of(study, int(g)) if study.grid else study.name, fontsize=9)
            ax.legend(fontsize=7)
        refs = [study.labels[i] for i in pick if study.grid and not study.learners[i].swept]
        note = f"; {', '.join(refs)}: no {_axis_name(study)}, the same on every panel (grey, dashed)" if refs else ""
        fig.suptitle(f"{study.name}: {study.seeds} seeds, shared keys (mean, 95% band){note}", fontsize=10)
    fig.tight_layout()
    return fig


#: (dash pattern, marker) of the reference curves, in order.
_REFERENCE_STYLES = (((0, (6, 3)), "o"), ((0, (2, 2)), "s"), ((0, (8, 3, 2, 3)), "^"), ((0, (1, 3)), "D"))


def _style_references(study: Study, pick: list[int], artists: list[Any]) -> None:
    """Restyle the curves (``[line, band]`` per learner of ``pick``) of the learners without a swept value."""
    k = 0
    for n, i in enumerate(pick):
        if not study.grid or study.learners[i].swept:
            continue
        line, band = artists[2 * n], artists[2 * n + 1]
        dash, marker = _REFERENCE_STYLES[k % len(_REFERENCE_STYLES)]
        grey = str(0.15 + 0.2 * (k % 3))
        line.set(color=grey, linestyle=dash, marker=marker, markevery=0.2, markersize=3.5, zorder=3 + k)
        band.set(color=grey, alpha=0.12)
        k += 1


def _axis_name(study: Study) -> str:
    """The swept keys' short names (``epsilon``)."""
    return "/".join(k.split(".")[-1] for k in study.grid)


def _budget_axis(study: Study) -> tuple[str, ...] | None:
    """The axis drawn along ``x`` of ``final_regret.png``: the first swept scalar axis, or ``None``."""
    scalar = [a for a in study.axes if np.ndim(study.grid[a[0]]) == 1]
    return scalar[0] if scalar else None


_SYMBOLS = {"epsilon": "ε", "rho": "ρ", "delta": "δ"}


def _final_figure(
    study: Study, final: np.ndarray, bounds: list[np.ndarray | None], pick: list[int] | None = None,
    x_axis: tuple[str, ...] | None = None, logs: tuple[bool | None, bool | None] = (None, None),
) -> Any:  # fmt: skip
    """``final_regret.png``: final regret of every learner against the first swept scalar axis
    (``jaxpriv.plot.final_vs_budget``: 95% bands, the bounds dashed, an infinite budget dotted), one line per
    learner and per value of the other axes; without a swept scalar, one error bar per learner and grid point."""
    fig, (ax,) = _figure(1)
    x_axis = _budget_axis(study) if x_axis is None else x_axis
    pick = list(range(len(study.labels))) if pick is None else pick
    mean, se = mean_se(final, axis=-1)
    if x_axis is None:
        n = 0
        ticks = []
        for i in pick:
            label = study.labels[i]
            for g in range(study.size):
                ax.errorbar([n], [mean[i, g]], yerr=[1.96 * se[i, g]], fmt="o", capsize=3)
                ticks.append(label if study.size == 1 else f"{label}\n{label_of(study, g)}")
                n += 1
        ax.set_xticks(np.arange(n), ticks, fontsize=7)
        ax.set_ylabel(f"regret at T={study.horizon} (mean ± 1.96 SE)")
    else:
        x = study.grid[x_axis[0]]
        other = tuple(k for a in study.axes if a != x_axis for k in a)
        groups: dict[str, list[int]] = {}
        for g in range(study.size):
            groups.setdefault(label_of(study, g, other) if other else "", []).append(g)
        xs = x[np.isfinite(x)]
        logx = bool(xs.size and np.all(xs > 0) and xs.max() / xs.min() >= 10) if logs[0] is None else logs[0]
        ys = np.concatenate([mean.ravel(), *[b[np.isfinite(b)] for b in bounds if b is not None]])
        logy = bool(np.all(ys > 0) and ys.max() / max(ys.min(), 1e-12) >= 10) if logs[1] is None else logs[1]
        name = x_axis[0].split(".")[-1]
        for group, idx in groups.items():
            idx = np.asarray(idx)
            order = idx[np.argsort(x[idx], kind="stable")]
            takes = [_takes(study, arm, x_axis) for arm in study.learners]
            labs = {i: study.labels[i] for i in pick}
            finals = {_tag(study, lab, group): final[i][order] for i, lab in labs.items() if takes[i]}
            bds = {
                _tag(study, lab, group): bounds[i][order]
                for i, lab in labs.items()
                if takes[i] and bounds[i] is not None
            }
            xlabel = _SYMBOLS.get(name, x_axis[0])
            plot.final_vs_budget(x[order], finals, bounds=bds or None, ax=ax, xlabel=xlabel, logx=logx, logy=logy)
            for i, lab in labs.items():  # a learner without this axis: one dotted line at its value
                if not takes[i]:
                    constant = {f"{_tag(study, lab, group)} (no {name})": final[i][order[:1]]}
                    (line,) = plot.final_vs_budget([np.inf], constant, ax=ax, xlabel=xlabel, logx=logx, logy=logy)
                    if bounds[i] is not None and np.isfinite(bounds[i][order[0]]):
                        ax.axhline(bounds[i][order[0]], ls="--", lw=1.2, color=line.get_color(), label=f"{lab} bound")
        if ax.get_legend_handles_labels()[1]:
            ax.legend(fontsize=7)  # rebuilt: the bounds of the learners without the axis
        ax.set_ylabel(f"regret at T={study.horizon} (mean ± 1.96 SE)")
    env = study.env_name
    title = f"{study.name}: {', '.join(study.labels)} on {env}" if study.compare else f"{study.name}: " \
        f"{study.learner_name} on {env}"  # fmt: skip
    ax.set_title(title, fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    return fig


def _takes(study: Study, arm: StudyLearner, axis: tuple[str, ...]) -> bool:
    """Whether ``arm`` depends on the grid axis ``axis`` (one learner: always)."""
    return not study.compare or any(k in arm.axes or k.startswith("env.params.") for k in axis)


def _tag(study: Study, label: str, group: str) -> str:
    """A line's legend label: the learner's (and the other axes' values in a comparison); one learner: those values."""
    if not study.compare:
        return group or label
    return f"{label}, {group}" if group else label


def _paired_figure(
    study: Study, steps: np.ndarray, regret: np.ndarray, reference: str | None = None, pick: list[int] | None = None,
    shown: np.ndarray | None = None, loss: np.ndarray | None = None,
) -> Any:  # fmt: skip
    """``paired.png``: a panel per grid point shown (up to 6): each learner minus the reference against ``t``,
    with paired-SE bands (``jaxpriv.plot.paired_difference``). A learner within float32 round-off of the
    reference at every grid point (``jaxpriv.experiments._tables.within_roundoff``, ``loss`` the final
    cumulative losses ``[L, G, S]`` where recorded) is not drawn: the title says so."""
    reference = study.reference if reference is None else reference
    pick = list(range(len(study.labels))) if pick is None else pick
    r = study.labels.index(reference)
    final = regret[..., -1]
    sums = (lambda i: ()) if loss is None else (lambda i: (loss[i], loss[r]))
    same = [i for i in pick if i != r and np.all(within_roundoff(final[i], final[r], study.horizon, *sums(i)))]
    pick = [i for i in pick if i not in same]
    pick = pick if r in pick else [*pick, r]
    shown = _shown(study, 6) if shown is None else shown
    fig, axes = _figure(len(shown))
    for ax, g in zip(axes, shown, strict=True):
        curves = {study.labels[i]: regret[i, g] for i in pick}
        plot.paired_difference(steps, curves, reference, ax=ax, logx=_loglog(steps))
        ax.set_title(label_of(study, int(g)) if study.grid else study.name, fontsize=9)
    note = f"\n{', '.join(study.labels[i] for i in same)} − {reference}: within float32 round-off, not drawn"
    fig.suptitle(f"{study.name}: regret − regret({reference}), paired SE (shared seeds)" + (note if same else ""),
                 fontsize=10)  # fmt: skip
    fig.tight_layout()
    return fig


def _pick(study: Study, options: dict[str, Any]) -> list[int]:
    labels = options.get("learners", list(study.labels))
    return [study.labels.index(label) for label in labels]


def _points(study: Study, options: dict[str, Any]) -> np.ndarray | None:
    points = options.get("grid_points")
    if points is None:
        return None
    points = np.asarray(points, int).reshape(-1)
    if points.size == 0 or np.any(points < 0) or np.any(points >= study.size):
        raise ValueError(
            f"{study.source}: [figures.grid_points] must be grid indices in [0, {study.size}), got {points}"
        )
    return points


def _regret_vs_t(study: Study, data: Data, options: dict[str, Any]) -> tuple[Any, None]:
    fig = _curves_figure(
        study, data.steps, data.regret, _pick(study, options), _points(study, options), options.get("logx"),
        options.get("logy"),
    )  # fmt: skip
    return _titled(fig, options), None


def _final_vs_budget(study: Study, data: Data, options: dict[str, Any]) -> tuple[Any, None]:
    axis = next((a for a in study.axes if options.get("axis") in a), None)
    fig = _final_figure(
        study, data.final, data.bounds, _pick(study, options), axis, (options.get("logx"), options.get("logy"))
    )
    return _titled(fig, options), None


def _paired(study: Study, data: Data, options: dict[str, Any]) -> tuple[Any, list[dict[str, Any]]]:
    from jaxpriv import stats

    reference = options["reference"]
    fig = _paired_figure(study, data.steps, data.regret, reference, _pick(study, options), _points(study, options))
    r = study.labels.index(reference)
    rows = []
    for i in _pick(study, options):
        if i == r:
            continue
        diff, se = stats.paired_difference(data.final[i], data.final[r], axis=-1)
        roundoff = within_roundoff(data.final[i], data.final[r], study.horizon)
        for g in range(study.size):
            row = {"learner": study.labels[i], "reference": reference, "grid_point": g}
            row |= {k: fmt(v[g]) for k, v in study.grid.items()}
            row |= {"difference_mean": float(diff[g]), "difference_se": float(se[g])}
            rows.append(row | {"within_roundoff": bool(roundoff[g])})
    return _titled(fig, options), rows


def _price_of_privacy(study: Study, data: Data, options: dict[str, Any]) -> tuple[Any, list[dict[str, Any]]]:
    from jaxpriv import stats

    fig, (ax,) = _figure(1)
    rows = []
    nonprivate = options.get("nonprivate")
    axis = options.get("axis")
    values = options.get("values")
    relative = bool(options.get("relative", False))
    cols = data.steps <= options.get("until", data.steps[-1])
    for i in _pick(study, options):
        label = study.labels[i]
        if label == nonprivate:
            continue
        for g in range(study.size):
            if nonprivate is not None:
                j, h = study.labels.index(nonprivate), g
            else:
                x = study.grid[axis]
                if np.isinf(x[g]):
                    continue
                same = [k for k in range(study.size) if np.isinf(x[k]) and _others_equal(study, axis, g, k)]
                if not same:
                    continue
                j, h = i, same[0]
            if values is not None and axis is not None and not np.any(np.isclose(study.grid[axis][g], values)):
                continue
            name = f"{label}, {label_of(study, g)}" if study.grid else label
            if relative:
                base = data.regret[j, h].mean(axis=0)
                with np.errstate(divide="ignore", invalid="ignore"):
                    pop = np.where(base > 0, (data.regret[i, g].mean(axis=0) - base) / base, np.nan)
                ax.plot(data.steps[cols], pop[cols], label=name)
                ax.set_xscale("log")
            else:
                plot.price_of_privacy(data.steps[cols], data.regret[i, g][:, cols], data.regret[j, h][:, cols],
                                      ax=ax, label=name, logx=_loglog(data.steps))  # fmt: skip
            diff, se = stats.paired_difference(data.final[i, g], data.final[j, h], axis=-1)
            row = {"learner": label, "nonprivate": f"{study.labels[j]}" + (f" ({label_of(study, h)})" if axis else "")}
            row |= {k: fmt(v[g]) for k, v in study.grid.items()}
            rel = float(diff) / float(data.final[j, h].mean()) if data.final[j, h].mean() > 0 else float("nan")
            rows.append(row | {"price_mean": float(diff), "price_se": float(se), "price_relative": rel})
    if relative:
        ax.axhline(0.0, color="0.6", lw=0.8)
        ax.set_xlabel("t")
        ax.set_ylabel("PoP = (Reg_priv − Reg_nonpriv) / Reg_nonpriv", fontsize=8)
    ax.legend(fontsize=7)
    ax.set_title(f"{study.name}: price of privacy (paired SE, shared seeds)", fontsize=9)
    fig.tight_layout()
    return _titled(fig, options), rows


def _gap_vs_budget(study: Study, data: Data, options: dict[str, Any]) -> tuple[Any, list[dict[str, Any]]]:
    from jaxpriv import stats

    r = study.labels.index(options["reference"])
    if "learners" in options:
        picks = [study.labels.index(label) for label in options["learners"]]
    else:
        picks = [study.labels.index(options.get("learner", study.labels[0 if r else 1]))]
    axis = options["axis"]
    name = axis.split(".")[-1]
    x = np.asarray(study.grid[axis], np.float64)
    order = np.argsort(x, kind="stable")
    steps = list(np.asarray(data.steps).tolist())
    band = float(options.get("band", 2.0))
    fig, axes = _figure(len(picks))
    rows = []
    for ax, i in zip(axes, picks, strict=True):
        gaps = {}
        for t in options["at"]:
            c = steps.index(t)
            priv, ref = data.regret[i, :, :, c].astype(np.float64), data.regret[r, :, :, c].astype(np.float64)
            gaps[f"T = {t:.0e}"] = (priv - ref)[order]  # [G, S] per-seed gaps (paired)
            diff, se = stats.paired_difference(priv, ref, axis=-1)
            base = ref.mean(axis=-1)
            for g in order:
                row = {"learner": study.labels[i], "t": int(t), name: float(x[g])}
                row |= {"gap_mean": float(diff[g]), "gap_se": float(se[g])}
                rows.append(row | {"price_relative": float(diff[g] / base[g]) if base[g] > 0 else float("nan")})
        logx = bool(np.all(x[np.isfinite(x)] > 0))
        plot.final_vs_budget(x[order], gaps, ax=ax, band=band, xlabel=name, logx=logx, logy=False)
        ax.axhline(0.0, color="0.6", lw=0.8)
        ax.set_ylabel(f"Reg − Reg({study.labels[r]}) (±{band:g} paired SE)", fontsize=8)
        ax.set_title(f"{study.labels[i]} − {study.labels[r]}", fontsize=9)
    fig.suptitle(f"{study.name}: the regret gap against {name}", fontsize=10)
    fig.tight_layout()
    return _titled(fig, options), rows


def _others_equal(study: Study, axis: str, g: int, k: int) -> bool:
    """Whether grid points ``g`` and ``k`` agree on every swept key but ``axis``."""
    return all(np.array_equal(v[g], v[k]) for key, v in study.grid.items() if key != axis)


def knee(budgets: np.ndarray, finals: np.ndarray, high_privacy: float = 0.05) -> float:
    """Where ``B/ε`` meets the plateau ``A``: ``B = median(ε·mean regret)`` over ``ε <= high_privacy``,
    ``A`` = the mean regret at ``ε = ∞`` (or at the largest ε when the grid has no ``inf``).

    Args:
      budgets: ``[G]`` budgets.
      finals: ``[G, seeds]`` final regrets.
      high_privacy: the budgets that estimate ``B``.
    """
    eps = np.asarray(budgets, np.float64)
    m = np.asarray(finals, np.float64).mean(axis=1)
    small = np.isfinite(eps) & (eps <= high_privacy)
    if not small.any():
        raise ValueError(f"the grid needs a budget <= {high_privacy}, got {eps.tolist()}")
    plateau = m[~np.isfinite(eps)][0] if (~np.isfinite(eps)).any() else m[np.argmax(eps)]
    return float(np.median(eps[small] * m[small]) / plateau)


def _kl_knee(means: np.ndarray, constant: float) -> float:
    """``max_a kl(μ_a, μ*) / (c Δ_a)`` over the sub-optimal Bernoulli arms (c = 6: Theorem 3's; 1: the index's)."""
    mu = np.asarray(means, np.float64)
    best = mu.max()
    sub = mu[mu < best]
    kl = sub * np.log(sub / best) + (1 - sub) * np.log((1 - sub) / (1 - best))
    return float(np.max(kl / (constant * (best - sub))))


def _knee(study: Study, data: Data, options: dict[str, Any]) -> tuple[Any, list[dict[str, Any]]]:
    from jaxpriv import theory

    i = study.labels.index(options.get("learner", study.labels[0]))
    axis = options["axis"]
    x = np.asarray(study.grid[axis], np.float64)
    order = np.argsort(x, kind="stable")
    finals = data.final[i][order]
    measured = knee(x[order], finals, options["high_privacy"])
    fig, (ax,) = _figure(1)
    label = study.labels[i]
    bounds = {}
    if data.bounds[i] is not None:
        bounds[label] = data.bounds[i][order]
    row: dict[str, Any] = {"learner": label, "knee_measured": measured}
    means = getattr(study.learners[i].params.env, "means", None)
    if options.get("lower_bound", False):
        if study.env_name != "bernoulli_bandit" or means is None:
            raise ValueError(f"{study.source}: [figures.lower_bound] needs [env] name = 'bernoulli_bandit'")
        mu = np.asarray(means, np.float64).reshape(-1, np.shape(means)[-1])[0]
        lower = np.array([theory.adap_lower_bound(tuple(mu), study.horizon, float(e)) for e in x[order]])
        bounds = {label: lower}
        row |= {"knee_lower_bound": _kl_knee(mu, 6.0), "knee_index": _kl_knee(mu, 1.0)}
    artists = plot.final_vs_budget(x[order], {label: finals}, bounds=bounds or None, ax=ax,
                                   xlabel=axis.split(".")[-1])  # fmt: skip
    if options.get("lower_bound", False):
        artists[-1].set_label("lower bound ([N22] Thm 3)")
        ax.axvline(row["knee_lower_bound"], color="0.5", lw=0.8, ls="-.", label="kl / (6Δ) (the lower bound's knee)")
        ax.axvline(row["knee_index"], color="0.3", lw=0.8, ls=":", label="kl / Δ (the index's knee)")
    ax.axvline(measured, color="C3", lw=0.8, label=f"measured knee {measured:.3g}")
    ax.legend(fontsize=7)
    ax.set_title(f"{study.name}: {label}, T = {study.horizon}, {study.seeds} seeds; ±1.96 SE", fontsize=8)
    fig.tight_layout()
    return _titled(fig, options), _knee_rows(axis, x[order], finals, bounds.get(label), row)


def _knee_rows(
    axis: str, x: np.ndarray, finals: np.ndarray, bound: np.ndarray | None, knees: dict[str, Any]
) -> list[dict[str, Any]]:
    """``knee.csv``: per budget the final regret (mean, SE), the bound and the ratio to it, the paired difference to
    the non-private run (the ``inf`` budget) with its SE; the knees in every row."""
    from jaxpriv import stats

    free = np.flatnonzero(~np.isfinite(x))
    rows = []
    for g, e in enumerate(x):
        m, se = mean_se(finals[g])
        row: dict[str, Any] = {axis.split(".")[-1]: float(e), "mean": float(m), "se": float(se)}
        if bound is not None:
            row |= {"bound": float(bound[g]), "ratio": float(m) / float(bound[g])}
        if free.size:
            d, d_se = stats.paired_difference(finals[g], finals[free[0]])
            row |= {"diff_to_nonprivate": float(d), "diff_to_nonprivate_se": float(d_se)}
        rows.append(row | knees)
    return rows


def _titled(fig: Any, options: dict[str, Any]) -> Any:
    if "title" in options:
        fig.suptitle(str(options["title"]), fontsize=10)
    return fig


def _final_vs_static(study: Study, data: Data, options: dict[str, Any]) -> tuple[Any, list[dict[str, Any]]]:
    name = options["static"]
    shown = _shown(study, 6)
    fig, axes = _figure(len(shown))
    rows = []
    for ax, g in zip(axes, shown, strict=True):
        groups: dict[str, list[int]] = {}
        flat: list[int] = []
        for i in _pick(study, options):
            value = study.learners[i].static.get(name)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                groups.setdefault(study.learners[i].name, []).append(i)
            else:
                flat.append(i)
        logs = {"logx": options.get("logx", True), "logy": options.get("logy", False)}
        for idx in groups.values():
            xs = np.asarray([study.learners[i].static[name] for i in idx], np.float64)
            order = np.argsort(xs)
            finals = np.stack([data.final[idx[k], g] for k in order])
            label = study.learners[idx[0]].label.split(" ")[0] if len(idx) > 1 else study.learners[idx[0]].label
            plot.final_vs_budget(xs[order], {label: finals}, ax=ax, xlabel=name, **logs)
        for i in flat:
            plot.final_vs_budget([np.inf], {study.labels[i]: data.final[i, g][None]}, ax=ax, xlabel=name, **logs)
        ax.legend(fontsize=7)
        ax.set_title(
            label_of(study, int(g)) if study.grid else f"{study.name}: final regret against {name}", fontsize=9
        )
        for i in _pick(study, options):
            m, se = mean_se(data.final[i, g])
            row = {"learner": study.labels[i], name: study.learners[i].static.get(name, "")}
            rows.append(row | {k: fmt(v[g]) for k, v in study.grid.items()} | {"mean": float(m), "se": float(se)})
    fig.tight_layout()
    return _titled(fig, options), rows


#: recipe name -> ``(study, data, options) -> (Figure, table rows or None)`` (``regret_vs_horizon``: the runner's).
RECIPES = {
    "regret_vs_t": _regret_vs_t,
    "final_vs_budget": _final_vs_budget,
    "paired_difference": _paired,
    "price_of_privacy": _price_of_privacy,
    "knee": _knee,
    "final_vs_static": _final_vs_static,
    "gap_vs_budget": _gap_vs_budget,
}


def draw(study: Study, data: Data, options: dict[str, Any]) -> tuple[Any, list[dict[str, Any]] | None]:
    """The figure (and table) of one ``[[figures]]`` entry (``options``: its validated table)."""
    return RECIPES[options["recipe"]](study, data, options)


def regret_vs_horizon(
    study: Study, horizons: tuple[int, ...], finals: np.ndarray, options: dict[str, Any] | None = None,
    xlabel: str = "T",
) -> Any:  # fmt: skip
    """Final regret against ``T`` (log-log): ``finals`` ``[H, L, G, S]``; a line per learner and grid point.

    ``xlabel``: the axis's name (a ``[sizes]`` file's size: the same figure against ``d`` or ``p``)."""
    options = options or {}
    fig, (ax,) = _figure(1)
    t = np.asarray(horizons, np.float64)
    for i in _pick(study, options):
        for g in _shown(study, 6):
            name = f"{study.labels[i]}, {label_of(study, int(g))}" if study.grid else study.labels[i]
            plot.final_vs_budget(t, {name: finals[:, i, g]}, ax=ax, xlabel=xlabel)
    ax.set_title(f"{study.name}: final regret against {xlabel} ({study.seeds} seeds, the same keys); ±1.96 SE",
                 fontsize=8)  # fmt: skip
    fig.tight_layout()
    return _titled(fig, options)
