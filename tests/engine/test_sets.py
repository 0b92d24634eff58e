"""Constraint sets: exact projections (idempotent, feasible, variational inequality) and linear oracles."""

import collections
import functools
import itertools
import re

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from jaxpriv import sets
from jaxpriv.sim import _check, _scan

DIM = 4
SETS = {
    "l2_ball": sets.l2_ball(DIM, 1.5),
    "box": sets.box(DIM, -0.5, 1.0),
    "simplex": sets.simplex(DIM),
    "l1_ball": sets.l1_ball(DIM, 1.5),
}
TOL = 1e-5  # float32 rounding of O(1) quantities


def membership_violation(c: sets.ConstraintSet, w: np.ndarray) -> np.ndarray:
    """How far each row of ``w`` is outside ``c`` (0 inside), from the set's definition, not its projection."""
    w = np.asarray(w, np.float64)
    if c.name == "l2_ball":
        return np.maximum(np.linalg.norm(w, axis=-1) - c.radius, 0.0)
    if c.name == "box":
        return np.max(np.maximum(w - 1.0, 0.0) + np.maximum(-0.5 - w, 0.0), axis=-1)
    if c.name == "simplex":
        return np.abs(w.sum(-1) - 1.0) + np.maximum(-w, 0.0).max(-1)
    if c.name == "l1_ball":
        return np.maximum(np.abs(w).sum(-1) - c.radius, 0.0)
    raise AssertionError(c.name)


def vertices(c: sets.ConstraintSet) -> np.ndarray:
    """All vertices of a polytope, by enumeration (small dimension)."""
    eye = np.eye(DIM)
    if c.name == "box":
        return np.array(list(itertools.product([-0.5, 1.0], repeat=DIM)))
    if c.name == "simplex":
        return eye
    if c.name == "l1_ball":
        return c.radius * np.concatenate([eye, -eye])
    raise AssertionError(c.name)


def points_in(c: sets.ConstraintSet, seed: int, n: int) -> np.ndarray:
    """Random points of ``c``: random convex combinations of vertices, or scaled directions for the ball."""
    rng = np.random.default_rng(seed)
    if c.name == "l2_ball":
        g = rng.standard_normal((n, DIM))
        r = rng.uniform(size=(n, 1)) ** (1 / DIM)
        return c.radius * r * g / np.linalg.norm(g, axis=1, keepdims=True)
    v = vertices(c)
    return rng.dirichlet(np.ones(len(v)), n) @ v


def variational_gap(c: sets.ConstraintSet, x: np.ndarray, p: np.ndarray, u: np.ndarray) -> float:
    """``max <x - p, u - p>`` over pairs: ``<= 0`` iff ``p`` is the projection of ``x`` (given ``p ∈ C``)."""
    return float(np.max(np.einsum("nd,mnd->mn", x - p, u[:, None, :] - p[None, :, :])))


@pytest.mark.parametrize("name", list(SETS))
def test_projection_is_idempotent_feasible_and_satisfies_the_variational_inequality(name):
    c = SETS[name]
    x = 2.0 * np.asarray(jax.random.normal(jax.random.key(0), (400, DIM)))
    x[:50] *= 0.1  # some points already inside
    p = np.asarray(jax.jit(c.project)(jnp.asarray(x, jnp.float32)), np.float64)
    assert membership_violation(c, p).max() < TOL
    again = np.asarray(jax.jit(c.project)(jnp.asarray(p, jnp.float32)), np.float64)
    np.testing.assert_allclose(again, p, atol=TOL)
    u = points_in(c, 1, 200)
    assert variational_gap(c, x, p, u) < 1e-4
    # Power: the same check rejects a feasible point that is not the projection.
    other = points_in(c, 2, len(p))
    wrong = np.asarray(jax.jit(c.project)(jnp.asarray(0.5 * p + 0.5 * other, jnp.float32)), np.float64)
    moved = np.linalg.norm(wrong - p, axis=1) > 0.05
    assert moved.sum() > 100
    for i in np.flatnonzero(moved)[:20]:  # <x - q, p - q> >= ||p - q||² when q != p = Π(x)
        assert variational_gap(c, x[i : i + 1], wrong[i : i + 1], p[i : i + 1]) > 1e-3


@pytest.mark.parametrize("name", list(SETS))
def test_projection_is_batched_and_matches_a_per_point_vmap(name):
    c = SETS[name]
    x = jax.random.normal(jax.random.key(2), (3, 5, DIM))  # jitted whole: one compilation, not one per primitive
    batched, per_point = jax.jit(c.project)(x), jax.jit(jax.vmap(jax.vmap(c.project)))(x)
    np.testing.assert_allclose(batched, per_point, rtol=1e-6, atol=1e-6)


def test_simplex_and_l1_projections_agree_with_optax():
    x = 2.0 * jax.random.normal(jax.random.key(3), (300, DIM))
    simplex = jax.jit(jax.vmap(optax.projections.projection_simplex))(x)
    np.testing.assert_allclose(jax.jit(SETS["simplex"].project)(x), simplex, atol=TOL)
    l1 = jax.jit(jax.vmap(lambda v: optax.projections.projection_l1_ball(v, 1.5)))(x)
    np.testing.assert_allclose(jax.jit(SETS["l1_ball"].project)(x), l1, atol=TOL)


@pytest.mark.parametrize("name", ["box", "simplex", "l1_ball"])
def test_linear_oracle_returns_a_minimising_vertex(name):
    c = SETS[name]
    g = np.asarray(jax.random.normal(jax.random.key(4), (500, DIM)), np.float64)
    v = vertices(c)
    best = (g @ v.T).min(axis=1)
    lmo = np.asarray(c.linear_oracle(jnp.asarray(g, jnp.float32)), np.float64)
    assert membership_violation(c, lmo).max() < TOL
    np.testing.assert_allclose(np.sum(g * lmo, axis=1), best, atol=1e-5)


def test_l2_ball_linear_oracle_beats_every_sampled_point():
    c = SETS["l2_ball"]
    g = np.asarray(jax.random.normal(jax.random.key(5), (50, DIM)), np.float64)
    lmo = np.asarray(c.linear_oracle(jnp.asarray(g, jnp.float32)), np.float64)
    np.testing.assert_allclose(np.sum(g * lmo, 1), -c.radius * np.linalg.norm(g, axis=1), rtol=1e-5)
    u = points_in(c, 6, 2000)
    assert np.all(np.sum(g * lmo, 1)[:, None] <= g @ u.T + 1e-5)


@pytest.mark.parametrize("name", list(SETS))
def test_radius_and_diameter(name):
    c = SETS[name]
    pts = np.concatenate([points_in(c, 7, 2000)] + ([vertices(c)] if name != "l2_ball" else []))
    assert np.linalg.norm(pts, axis=1).max() <= c.radius + TOL
    if name != "l2_ball":
        v = vertices(c)
        np.testing.assert_allclose(np.linalg.norm(v, axis=1).max(), c.radius, rtol=1e-6)
        diam = max(np.linalg.norm(a - b) for a in v for b in v)
        np.testing.assert_allclose(diam, c.diameter, rtol=1e-6)


@pytest.mark.parametrize(
    ("make", "arg"),
    [
        (lambda: sets.box(0), "dim"),
        (lambda: sets.box(2, 1.0, 1.0), "low"),
        (lambda: sets.simplex(2, total=0.0), "total"),
        (lambda: sets.l1_ball(2, radius=-1.0), "radius"),
        (lambda: sets.l2_ball(2.5), "dim"),
    ],
)
def test_bad_static_arguments_raise_value_error_naming_them(make, arg):
    with pytest.raises(ValueError, match=arg):
        make()


def test_require_projection_rejects_a_set_known_only_by_its_linear_oracle():
    lmo_only = SETS["simplex"]._replace(name="polytope", project=None)
    with pytest.raises(ValueError, match="constraint"):
        sets.require_projection(lmo_only)
    assert sets.require_projection(SETS["box"]) is SETS["box"]


# --- the rank sort behind the simplex projection ------------------------------------------------------


@pytest.mark.parametrize("n", [2, 3, 10, 17, 31, 32, 33])
def test_rank_sort_equals_sort_and_projection_keeps_its_numbers(n):
    from jaxpriv.sets import RANK_SORT_MAX, _project_simplex, _sort_ascending

    rng = np.random.default_rng(n)
    x = (rng.normal(size=(4000, n)) * rng.choice([1e-3, 1.0, 1e8], size=(4000, 1))).astype(np.float32)
    x[::3, -1] = x[::3, 0]  # ties
    x[::7, 0] = np.inf
    assert np.array_equal(np.asarray(jax.jit(_sort_ascending)(jnp.asarray(x))), np.sort(x, axis=-1))
    # The projection with the rank sort is the projection with jnp.sort, NaN entries included.
    x[::11, n // 2] = np.nan
    ours = np.asarray(jax.jit(lambda v: _project_simplex(v, 1.0))(x))
    neg = -x
    u = -np.sort(np.where(np.isnan(neg), np.inf, neg), axis=-1).astype(np.float32)
    top = u[:, :1]
    shift = np.where(np.abs(top) <= 1.0, 0.0, top).astype(np.float32)
    with np.errstate(invalid="ignore"):
        css = np.cumsum(u - shift, axis=-1, dtype=np.float32) - np.float32(1.0)
        cond = ((u - shift) - css / np.arange(1, n + 1, dtype=np.float32) > 0) & np.isfinite(css)
        k = np.maximum(cond.sum(-1, keepdims=True), 1)
        theta = np.take_along_axis(css, k - 1, axis=-1) / k.astype(np.float32)
        ref = np.maximum(x - shift - theta, 0.0)
    np.testing.assert_allclose(ours, ref, rtol=2e-6, atol=1e-6 * np.abs(x[np.isfinite(x)]).max())
    assert np.array_equal(np.isnan(ours), np.isnan(ref))
    assert (n <= RANK_SORT_MAX) == (n < 33)


# --- no gather, no cumulative sum in a step on the simplex (issue 36) ---------------------------------------


def _lowered_step_ops(name: str, dim: int) -> collections.Counter:
    """Opcodes in the scan body of ``name``'s sweep (``learner_examples(64, dim)``, 8 seeds), lowered as
    ``step_cost`` compiles it: the program XLA receives from JAX, before its own passes, on any backend."""
    from jaxpriv.testing import _opcode

    return collections.Counter(_opcode(ins) for ins in _lowered_step_body(name, dim))


@functools.cache
def _lowered_step_body(name: str, dim: int) -> tuple[str, ...]:
    """The instructions of ``_lowered_step_ops``'s scan body (with the computations it calls).

    Lowered once per ``(name, dim)`` in this module (the tests below read the same bodies)."""
    from jaxpriv import sim
    from jaxpriv.testing import _called, _computations, _opcode, _reachable, learner_examples

    learner, env, params = learner_examples(64, dim)[name]
    ckpts = sim.normalize_checkpoints(64, "log")
    params = _check._prepare(learner, env, params, allow_grid=False, horizon=64)[0]

    def one(key, p):
        carry = _scan._init_carry(learner, env, ckpts, key, p)
        return _scan._outputs(learner, env, _scan._advance(learner, env, ckpts, 64, carry, np.int32(0)))

    keys = jax.random.split(jax.random.key(0), 8)
    hlo = jax.jit(jax.vmap(one, in_axes=(0, None))).lower(keys, params).as_text(dialect="hlo")
    comps = _computations(hlo)
    bodies = [
        n
        for lines in comps.values()
        for ins in lines
        if _opcode(ins) == "while"
        for n in _called(ins)
        if ins.split("body=", 1)[1].lstrip("%").startswith(n)
    ]
    body = max(bodies, key=lambda n: len(_reachable(comps, n)))  # the scan over the horizon: the largest
    return tuple(ins for n in _reachable(comps, body) for ins in comps[n])


@pytest.mark.parametrize("name", ["wdp_cocop", "wdp_cocol", "garber_hazan", "online_frank_wolfe"])
@pytest.mark.parametrize("dim", [10, 32])
def test_a_step_on_the_simplex_has_no_gather_and_no_cumulative_sum(name, dim):
    # Measured on an NVIDIA H200 (jax 0.11.2, 2026-11-27): WDP-COCOP on simplex(10), W = 16, ran at
    # 2.4e8 seed-steps/s up to 1e5 seeds but at 6.7e7-7.5e7 from 3e5 seeds on, with 47-55 s of compile
    # (7.5 s below); PFTAL, OGD and AdaC-UCB showed no such cliff. What WDP-COCOP had and they lacked: the
    # simplex projection's and the local oracle's jnp.cumsum (a reduce-window) and take_along_axis (a
    # gather), suspected of the cliff. Up to RANK_SORT_MAX coordinates these are now unrolled masked sums
    # and one-hot selects (elementwise work and reductions over the last axis, which XLA fuses). The
    # environment's comparator projects onto the simplex too (Frank-Wolfe's step has no projection).
    from jaxpriv.sets import RANK_SORT_MAX

    assert dim <= RANK_SORT_MAX
    ops = _lowered_step_ops(name, dim)
    assert ops["reduce-window"] == 0 and ops["gather"] == 0, ops
    assert ops["scatter"] == 0 and ops["sort"] == 0, ops
    assert ops["select"] > 0 and ops["add"] > 0, ops  # the body was found (the control below: d = 33)


@pytest.mark.parametrize("name", ["wdp_cocop", "garber_hazan", "online_frank_wolfe"])
def test_the_rank_sort_reduces_no_pairwise_matrix(name):
    # Measured on an NVIDIA H200 (jax 0.11.2, 2026-11-27): WDP-COCOP's sweep at 1e6 seeds took 44 s to
    # compile (2 s on a CPU). Its time went to one fusion: the rank count, a sum over the last axis of the
    # [seeds, d, d] pairwise comparison, which XLA emitted as a Triton kernel tiled 1024 x 10 x 10 that
    # spilled 35 KB of registers; ptxas took ~20 s on it, once to autotune and once to build it. The
    # counts and the moves through the one-hot matrix are now unrolled over coordinates: no reduction in
    # the step yields a value per seed and coordinate ([8, 10]: a sum over the pairwise [8, 10, 10]).
    reduces = [ins for ins in _lowered_step_body(name, 10) if " reduce(" in ins]
    per_coordinate = [ins for ins in reduces if re.search(r"= \(?[a-z0-9]+\[8,10\]", ins)]
    assert reduces and not per_coordinate, per_coordinate


def test_beyond_the_rank_sort_a_step_on_the_simplex_still_sorts():
    # The control of the test above: at d > RANK_SORT_MAX the projection keeps jnp.sort, cumsum and a
    # scatter, and the counter finds them in the same scan body.
    ops = _lowered_step_ops("wdp_cocop", 33)
    assert ops["sort"] > 0 and ops["reduce-window"] > 0 and ops["scatter"] > 0, ops


@pytest.mark.parametrize("n", [2, 3, 10, 17])
def test_the_unrolled_partial_sums_are_cumsums_bit_for_bit(n):
    # _prefix_sums adds left to right as XLA's CPU reduce-window (jnp.cumsum) does for d <= 17 (beyond,
    # XLA rewrites the reduce-window into another order); infinite entries stay out of the masked slots.
    from jaxpriv.sets import _prefix_sums

    rng = np.random.default_rng(n)
    x = (rng.normal(size=(4000, n)) * rng.choice([1e-3, 1.0, 1e8], size=(4000, 1))).astype(np.float32)
    x[::7, -1] = -np.inf
    ours = np.asarray(jax.jit(_prefix_sums)(jnp.asarray(x)))
    np.testing.assert_array_equal(ours, np.asarray(jax.jit(lambda v: jnp.cumsum(v, axis=-1))(jnp.asarray(x))))
    assert np.isfinite(ours[::7, :-1]).all()
