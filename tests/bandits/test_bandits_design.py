"""G-optimal design by Frank–Wolfe: the Kiefer–Wolfowitz condition, spans, gating."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxpriv.bandits.design import design_gram, g_optimal_design, leverages, pinv_on_span, span_projector
from jaxpriv.envs.linear_bandits import unit_sphere


def _random_sets(seed, n, k, d, gaussian=False):
    keys = jax.random.split(jax.random.key(seed), n)
    if gaussian:  # unnormalised rows of varying norms
        return jax.vmap(lambda key: jax.random.normal(key, (k, d)) * jnp.array([0.2, 1.0, 3.0])[:d])(keys)
    return jax.vmap(lambda key: unit_sphere(key, (k,), d))(keys)


@pytest.mark.parametrize(("k", "d", "gaussian"), [(10, 3, False), (40, 5, False), (6, 3, True), (25, 2, True)])
def test_frank_wolfe_meets_kiefer_wolfowitz(k, d, gaussian):
    tol = 1e-3
    sets = _random_sets(k * 100 + d, 100, k, d, gaussian)
    des = jax.jit(jax.vmap(lambda x: g_optimal_design(x, tol=tol, max_iters=5000)))(sets)
    g = np.asarray(des.g)
    # Kiefer–Wolfowitz: g(π) >= d for every design, = d at the optimum; FW certifies (1 + tol) d.
    assert np.all(g <= (1 + tol) * d * (1 + 1e-5)), g.max()
    assert np.all(g >= d * (1 - 1e-4)), g.min()
    assert np.all(np.asarray(des.rank) == d)
    np.testing.assert_allclose(np.asarray(des.weights).sum(-1), 1.0, rtol=1e-5)
    # g recomputed independently (NumPy, float64) from the returned weights.
    for x, w in zip(np.asarray(sets[:10], np.float64), np.asarray(des.weights[:10], np.float64), strict=True):
        v = (x * w[:, None]).T @ x
        g_np = np.max(np.einsum("kd,de,ke->k", x, np.linalg.inv(v), x))
        assert g_np <= (1 + tol) * d * (1 + 1e-4)
    # Power: the uniform design (no iterations) violates the bound on these sets.
    uniform = jax.vmap(lambda x: g_optimal_design(x, tol=tol, run=False))(sets)
    assert np.mean(np.asarray(uniform.g) > (1 + tol) * d) > 0.5
    assert np.all(np.asarray(uniform.iters) == 0)


def test_design_on_a_subspace_uses_the_rank():
    x = unit_sphere(jax.random.key(3), (10,), 3)
    for arms, r in (([2, 5], 2), ([4], 1), ([0, 1, 7], 3)):
        mask = jnp.zeros(10, bool).at[jnp.asarray(arms)].set(True)
        des = g_optimal_design(x, mask)
        assert int(des.rank) == r
        assert float(des.g) <= (1 + 1e-3) * r * (1 + 1e-5)
        w = np.asarray(des.weights)
        assert np.all(w[~np.asarray(mask)] == 0)
        np.testing.assert_allclose(w.sum(), 1.0, rtol=1e-6)
    # Three coplanar arms in R^3: rank 2, and the pseudo-inverse acts on the plane only.
    plane = jnp.array([[1.0, 0, 0], [0, 1.0, 0], [0.6, 0.8, 0]])
    proj, rank = span_projector(plane, jnp.ones(3, bool))
    assert int(rank) == 2
    np.testing.assert_allclose(np.asarray(proj), np.diag([1.0, 1.0, 0.0]), atol=1e-6)
    v = design_gram(plane, jnp.array([2.0, 3.0, 1.0]))
    np.testing.assert_allclose(np.asarray(pinv_on_span(v, proj)), np.linalg.pinv(np.asarray(v)), atol=1e-5)
    assert np.all(np.asarray(leverages(plane, pinv_on_span(v, proj))) > 0)
