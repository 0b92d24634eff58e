"""Online classification streams: logistic regression and the hinge loss, one example per step.

The comparator has no closed form; it is solved with optax on the summed
realised loss (projected first-order method) and reports a certified bound on
its own suboptimality (``jaxpriv.Result.gap``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.typing import ArrayLike

from jaxpriv import _rng, _validate, declare
from jaxpriv._base import Env, EnvInfo, PRNGKey, Spec, static_args
from jaxpriv.mechanisms import clip_l2
from jaxpriv.sets import ConstraintSet, require_projection

LOSSES = ("logistic", "hinge")
DATASETS = ("synthetic", "breast_cancer")


class ClassificationParams(NamedTuple):
    """Params of a classification stream.

    Attributes:
      direction: ``[d]`` (or a scalar, broadcast), synthetic data only: the
        labelling direction ``θ``; ``y_t = sign(<θ, x_t>)`` before flips.
      label_noise: in ``[0, 1/2]``, synthetic data only: the probability that a label is flipped.
    """

    direction: ArrayLike = 1.0
    label_noise: ArrayLike = 0.1


class ClassificationState(NamedTuple):
    data_key: jax.Array  # the stream's data key: example t is a function of fold_in(data_key, t)
    direction: jax.Array  # shape=[d]
    label_noise: jax.Array  # shape=()


def load_breast_cancer_features() -> tuple[np.ndarray, np.ndarray]:
    """The Wisconsin diagnostic breast cancer data (569 × 30), shipped inside scikit-learn.

    Features are standardised (zero mean, unit variance per column); labels are
    ``±1`` (``+1`` benign). Rows are not yet norm-scaled.

    Raises:
      ImportError: scikit-learn is not installed (``pip install 'jaxpriv[data]'``).
    """
    try:
        from sklearn.datasets import load_breast_cancer
    except ImportError as err:  # pragma: no cover - exercised only without the extra
        raise ImportError(
            "the breast_cancer stream needs scikit-learn, which ships the data set in its wheel: "
            "pip install 'jaxpriv[data]' (or pip install scikit-learn)"
        ) from err
    data = load_breast_cancer()
    x = np.asarray(data.data, np.float64)
    x = (x - x.mean(0)) / x.std(0)
    y = np.where(np.asarray(data.target) == 1, 1.0, -1.0)
    return x.astype(np.float32), y.astype(np.float32)


def _loss_fns(loss: str, smoothing: float):
    """``(loss(m), dloss/dm(m), smoothed dloss/dm(m))`` of the margin ``m = y <w, x>``."""
    if loss == "logistic":

        def value(m):
            return jax.nn.softplus(-m)

        def slope(m):
            return -jax.nn.sigmoid(-m)

        def smooth(m, mu=None):  # already smooth: no Huber width
            del mu
            return slope(m)

        return value, slope, smooth

    def value(m):
        return jnp.maximum(0.0, 1.0 - m)

    def slope(m):
        return jnp.where(m < 1.0, -1.0, 0.0)

    def smooth_slope(m, mu=smoothing):  # Huber-smoothed hinge: the derivative is -clip((1 - m)/μ, 0, 1)
        return -jnp.clip((1.0 - m) / mu, 0.0, 1.0)

    return value, slope, smooth_slope


# --- the comparator's solver and its certificates -----------------------------------------------


def _huber_widths(smoothing: float, solver_steps: int) -> Callable[[jax.Array], jax.Array]:
    """``k -> μ_k``: the hinge's Huber width at solver iteration ``k``.

    Geometric from ``max(smoothing, 1)`` down to ``smoothing`` over the first half of the
    iterations, then constant (a continuation: wide and well conditioned first, then accurate).
    """
    mu_final = smoothing
    mu_start = max(mu_final, 1.0)
    warm = max(solver_steps // 2, 1)

    def mu_at(k):
        frac = jnp.minimum(jnp.asarray(k, jnp.float32) / warm, 1.0)
        return mu_start * (mu_final / mu_start) ** frac

    return mu_at


def _learning_rate(
    loss: str, radius: float, huber_width: Callable[[jax.Array], jax.Array]
) -> float | Callable[[jax.Array], jax.Array]:
    """The solver's step: ``4/R²`` for the logistic loss (its average is ``R²/4``-smooth), ``μ_k/R²`` for the hinge.

    The Huber-smoothed hinge of width ``μ`` is ``R²/μ``-smooth on features of norm ``<= R``.
    """
    if loss == "logistic":
        return 4.0 / radius**2

    def learning_rate(k):
        return huber_width(k) / radius**2

    return learning_rate


class _Solver(NamedTuple):
    """What the comparator's solver needs besides the data (fixed when the stream is built).

    Attributes:
      constraint: the set ``C`` (its projection).
      smooth_slope: ``(m, μ) -> dℓ_μ/dm``, the (smoothed) loss's slope at the margin ``m``.
      huber_width: ``k -> μ_k`` (``_huber_widths``).
      learning_rate: a float or ``k -> η_k`` (``_learning_rate``).
      steps: the number of iterations.
    """

    constraint: ConstraintSet
    smooth_slope: Callable[..., jax.Array]
    huber_width: Callable[[jax.Array], jax.Array]
    learning_rate: float | Callable[[jax.Array], jax.Array]
    steps: int


def _mean_grad(
    yx: jax.Array, mask: jax.Array, tf: jax.Array, w: jax.Array, slope_fn: Callable[[jax.Array], jax.Array]
) -> jax.Array:
    """``(1/t) sum_{s<=t} ℓ'(y_s <w, x_s>) y_s x_s``: the gradient of the average loss of the prefix."""
    return jnp.sum((mask * slope_fn(yx @ w))[:, None] * yx, axis=0) / tf


def _solve(solver: _Solver, yx: jax.Array, mask: jax.Array, tf: jax.Array) -> jax.Array:
    """``ŵ``: projected SGD with Nesterov momentum (optax) on the prefix's smoothed average loss, from ``Π_C(0)``."""
    constraint = solver.constraint
    opt = optax.sgd(solver.learning_rate, momentum=0.9, nesterov=True)
    w0 = constraint.project(jnp.zeros(yx.shape[-1:], jnp.float32))

    def solver_step(k, carry):
        w, opt_state = carry
        grad = _mean_grad(yx, mask, tf, w, lambda m: solver.smooth_slope(m, solver.huber_width(k)))
        updates, opt_state = opt.update(grad.astype(jnp.float32), opt_state, w)
        return constraint.project(optax.apply_updates(w, updates)), opt_state

    w, _ = jax.lax.fori_loop(0, solver.steps, solver_step, (w0, opt.init(w0)))
    return w


def _frank_wolfe_gap(constraint: ConstraintSet, grad: jax.Array, w: jax.Array) -> jax.Array:
    """``max_{u∈C} <∇F(ŵ), ŵ - u>`` (via the set's linear oracle): bounds ``F(ŵ) - min_C F`` for a convex ``F``."""
    return jnp.dot(grad, w) - jnp.dot(grad, constraint.linear_oracle(grad))


def _hinge_duality_gap(constraint: ConstraintSet, best: jax.Array, alpha: jax.Array, yx: jax.Array) -> jax.Array:
    """``F(ŵ) - D(α)`` for the summed hinge ``F``: weak duality makes it a bound on ``F(ŵ) - min_C F``.

    ``D(α) = sum_s α_s - max_{u∈C} <sum_s α_s y_s x_s, u>`` for any ``α ∈ [0, 1]^t`` (here the
    smoothed loss's slopes at ``ŵ``, zero past ``t``), since ``max(0, 1 - m) >= α (1 - m)``.
    """
    v = jnp.sum(alpha[:, None] * yx, axis=0)
    dual = jnp.sum(alpha) - jnp.dot(v, constraint.linear_oracle(-v))
    return best - dual


@declare.env("classification_stream", params=ClassificationParams)
def classification_stream(
    constraint: ConstraintSet,
    horizon: int,
    loss: str = "logistic",
    data: str = "synthetic",
    feature_radius: float = 1.0,
    solver_steps: int = 400,
    smoothing: float = 0.02,
) -> Env:
    """Online logistic regression or hinge-loss classification on a data stream.

    Step ``t`` reveals one example ``(x_t, y_t)``, ``y_t ∈ {-1, +1}``, and the
    (sub)gradient of ``f_t(w) = ℓ(y_t <w, x_t>)`` at the played point, with
    ``ℓ(m) = log(1 + e^{-m})`` (``"logistic"``) or ``max(0, 1 - m)`` (``"hinge"``).
    Every feature vector is scaled into ``||x_t||_2 <= feature_radius`` (rows
    beyond it are scaled back onto it), so the losses are convex and
    ``L = feature_radius``-Lipschitz on any set; neither is strongly convex.

    The examples are a deterministic function of a data key kept in the state
    and of ``t`` (oblivious: they do not depend on the learner), so the
    comparator can regenerate the first ``t`` of them:

    * ``"synthetic"``: ``x_t = feature_radius · clip(g/sqrt(d), 1)`` with
      ``g ~ N(0, I_d)``, ``y_t = sign(<θ, x_t>)`` flipped with probability
      ``label_noise``.
    * ``"breast_cancer"``: the Wisconsin diagnostic breast cancer data (569
      examples, ``d = 30``) shipped inside scikit-learn (the optional extra
      ``jaxpriv[data]``; no download), standardised and each row scaled to
      norm ``feature_radius``; ``x_t`` is drawn uniformly with replacement.

    The comparator ``min_{w∈C} sum_{s<=t} f_s(w)`` is solved with optax: projected
    SGD with Nesterov momentum (step ``4/R²`` for the logistic loss, whose
    average is ``R²/4``-smooth; for the hinge, on its Huber smoothing of width
    ``smoothing``, step ``smoothing/R²``), ``solver_steps`` iterations from
    ``Π_C(0)``, on the average loss. The reported best loss is the *true*
    summed loss at the solver's point ``ŵ`` (an upper bound on the minimum),
    and the reported gap certifies it:

    * logistic: the Frank–Wolfe gap ``max_{u∈C} <∇F(ŵ), ŵ - u>``, via the set's linear oracle;
    * hinge: the duality gap ``F(ŵ) - [sum_s α_s - max_{u∈C} <sum_s α_s y_s x_s, u>]``
      with ``α_s ∈ [0, 1]`` the smoothed loss's slopes at ``ŵ`` (weak duality).

    Either way ``F(ŵ) - gap <= min_C F <= F(ŵ)``: the exact regret lies in
    ``[regret, regret + gap]``. Cost per checkpoint: ``solver_steps × horizon × d``.

    Args:
      constraint: the set ``C`` (projection and linear oracle are used).
      horizon: ``T``, the longest prefix the comparator regenerates (static shapes).
      loss: ``"logistic"`` or ``"hinge"``.
      data: ``"synthetic"`` or ``"breast_cancer"`` (then ``constraint.dim`` must be 30).
      feature_radius: ``R``, the L2 bound of the features (the Lipschitz constant).
      solver_steps: iterations of the comparator's solver.
      smoothing: ``μ``, the Huber width of the hinge used by the solver (the
        reported loss and gap are for the exact hinge).

    Returns:
      An ``Env`` with params ``ClassificationParams``; its comparator returns ``(best, gap)``.
    """
    require_projection(constraint)
    horizon = _validate.horizon(horizon)
    loss = _validate.choice("loss", loss, LOSSES)
    data = _validate.choice("data", data, DATASETS)
    solver_steps = _validate.positive_int("solver_steps", solver_steps)
    radius = float(feature_radius)
    if not 0 < radius < float("inf"):
        raise ValueError(f"feature_radius must be a finite number > 0, got {feature_radius!r}")
    if not 0 < float(smoothing) < float("inf"):
        raise ValueError(f"smoothing must be a finite number > 0, got {smoothing!r}")
    dim = constraint.dim
    value, slope, smooth_slope = _loss_fns(loss, float(smoothing))
    if data == "breast_cancer":
        feats, labels = load_breast_cancer_features()
        if dim != feats.shape[1]:
            raise ValueError(f"constraint: the breast_cancer stream has d = {feats.shape[1]} features, got dim={dim}")
        feats = radius * feats / np.linalg.norm(feats, axis=1, keepdims=True)  # every row at norm R
        feats_j, labels_j = jnp.asarray(feats), jnp.asarray(labels)
    huber_width = _huber_widths(float(smoothing), solver_steps)
    solver = _Solver(constraint, smooth_slope, huber_width, _learning_rate(loss, radius, huber_width), solver_steps)
    ts = jnp.arange(1, horizon + 1, dtype=jnp.int32)

    def check(params: ClassificationParams) -> None:
        _validate.in_closed_interval("label_noise", params.label_noise, 0.0, 0.5)
        _validate.finite("direction", params.direction)
        if jnp.ndim(params.direction) >= 1:
            _validate.trailing_shape("direction", params.direction, (dim,))

    def reset_fn(key: PRNGKey, params: ClassificationParams) -> ClassificationState:
        return ClassificationState(
            data_key=key,
            direction=jnp.broadcast_to(jnp.asarray(params.direction, jnp.float32), (dim,)),
            label_noise=jnp.asarray(params.label_noise, jnp.float32),
        )

    def example(state: ClassificationState, t: jax.Array) -> tuple[jax.Array, jax.Array]:
        key = _rng.fold_in(state.data_key, t)  # jax.random's keys, the hash written out (jaxpriv._rng)
        if data == "breast_cancer":
            i = jax.random.randint(key, (), 0, feats_j.shape[0])
            return feats_j[i], labels_j[i]
        k_x, k_flip = _rng.split(key)
        x = radius * clip_l2(jax.random.normal(k_x, (dim,), jnp.float32) / float(np.sqrt(dim)), 1.0)
        y = jnp.where(jnp.dot(state.direction, x) >= 0, 1.0, -1.0)
        flip = jax.random.bernoulli(k_flip, state.label_noise)
        return x, jnp.where(flip, -y, y)

    def step_fn(key: PRNGKey, state: ClassificationState, action: jax.Array, t: jax.Array):
        del key  # the data come from the state's data key, so the comparator can replay them
        w = jnp.asarray(action, jnp.float32)
        x, y = example(state, t)
        m = y * jnp.dot(w, x)
        grad = slope(m) * y * x
        info = EnvInfo(loss=value(m), regret=jnp.zeros((), jnp.float32), stats=())
        return state, grad, info

    def replay(state: ClassificationState, t: jax.Array) -> tuple[jax.Array, jax.Array]:
        """``(yx, mask)``: the rows ``y_s x_s`` of every ``s <= horizon`` (regenerated), and ``1[s <= t]``."""
        xs, ys = jax.vmap(lambda s: example(state, s))(ts)
        mask = (ts <= t).astype(jnp.float32)
        return ys[:, None] * xs, mask

    def comparator(state: ClassificationState, stats: tuple, t: jax.Array) -> tuple[jax.Array, jax.Array]:
        del stats
        yx, mask = replay(state, t)
        tf = jnp.asarray(t, jnp.float32)
        w = _solve(solver, yx, mask, tf)
        margins = yx @ w
        best = jnp.sum(mask * value(margins))  # the exact loss at ŵ: an upper bound on the minimum
        if loss == "logistic":
            gap = _frank_wolfe_gap(constraint, tf * _mean_grad(yx, mask, tf, w, slope), w)
        else:
            gap = _hinge_duality_gap(constraint, best, mask * -smooth_slope(margins), yx)
        return best, jnp.maximum(gap, 0.0)

    static = static_args(feature_radius=radius, smoothing=float(smoothing))  # as floats
    spec = Spec(static=static, action_shape=(dim,), ndims=(("direction", 1),))
    return Env(reset_fn, step_fn, comparator, check, horizon=horizon, spec=spec)
