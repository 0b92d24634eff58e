"""jaxpriv._rng: the written-out Threefry keys match jax.random; the samplers are exact in distribution."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from jaxpriv import _rng


@pytest.mark.parametrize("t", [0, 1, 7, 4096, 2**31 - 1])
def test_fold_in_matches_jax(t):
    key = jax.random.key(42)
    ours = jax.jit(_rng.fold_in)(key, jnp.int32(t))
    assert np.array_equal(jax.random.key_data(ours), jax.random.key_data(jax.random.fold_in(key, jnp.int32(t))))


@pytest.mark.parametrize("num", [1, 2, 3, 5])
def test_split_matches_jax_under_vmap(num):
    keys = jax.random.split(jax.random.key(3), 6)
    ours = jax.vmap(lambda k: _rng.split(_rng.fold_in(k, jnp.int32(9)), num))(keys)
    ref = jax.vmap(lambda k: jax.random.split(jax.random.fold_in(k, jnp.int32(9)), num))(keys)
    assert np.array_equal(jax.random.key_data(ours), jax.random.key_data(ref))


@pytest.mark.parametrize("shape", [(), (1,), (5,), (3, 4)])
def test_uniform_matches_jax(shape):
    keys = jax.random.split(jax.random.key(8), 4)
    ours = jax.vmap(lambda k: _rng.uniform(k, shape))(keys)
    assert np.array_equal(ours, jax.vmap(lambda k: jax.random.uniform(k, shape, jnp.float32))(keys))


def test_other_impl_falls_back_to_jax_random():
    key = jax.random.key(1, impl="rbg")
    assert np.array_equal(jax.random.key_data(_rng.split(key, 3)), jax.random.key_data(jax.random.split(key, 3)))
    assert np.array_equal(_rng.normal(key, (4,)), jax.random.normal(key, (4,), jnp.float32))


def test_erfinv_matches_jax():
    x = jnp.linspace(-0.9999999, 0.9999999, 100_001, dtype=jnp.float32)
    ref = jax.scipy.special.erfinv(x)
    np.testing.assert_allclose(_rng.erfinv(x), ref, rtol=1e-5, atol=1e-7)


def _draws(sampler, n_keys=40_000, dim=5):
    keys = jax.random.split(jax.random.key(11), n_keys)
    return np.asarray(jax.jit(jax.vmap(lambda k: sampler(k, (dim,))))(keys), np.float64)


def test_normal_is_standard_normal():
    x = _draws(_rng.normal)
    assert stats.kstest(x.ravel(), "norm").pvalue > 1e-3
    # coordinates of one draw (both words of one hash) and of different keys are uncorrelated
    c = np.corrcoef(x.T)
    assert np.max(np.abs(c - np.eye(5))) < 0.03


def test_exponential_is_unit_exponential():
    x = _draws(_rng.exponential)
    assert x.min() >= 0.0
    assert stats.kstest(x.ravel(), "expon").pvalue > 1e-3
    assert np.max(np.abs(np.corrcoef(x.T) - np.eye(5))) < 0.03


def test_laplace_is_unit_laplace():
    x = _draws(_rng.laplace)
    assert stats.kstest(x.ravel(), "laplace").pvalue > 1e-3
    # the sign (lowest bit) is independent of the magnitude (top bits) and fair
    assert abs(np.mean(x > 0) - 0.5) < 4 * 0.5 / np.sqrt(x.size)
    assert abs(np.corrcoef(np.sign(x).ravel(), np.abs(x).ravel())[0, 1]) < 4 / np.sqrt(x.size)
    assert np.max(np.abs(np.corrcoef(x.T) - np.eye(5))) < 0.03
    # power: a Laplace of scale 0.9 fails the same KS test
    assert stats.kstest(0.9 * x.ravel(), "laplace").pvalue < 1e-3


def _two_draws_kernels(n: int, m: int, steps: int, seeds: int) -> list[str]:
    """The kernels of a compiled ``vmap(scan)`` that draws ``n`` and ``m`` normals per step (as the engine compiles)."""
    import re

    from jaxpriv._base import ENGINE_COMPILER_OPTIONS

    def one(key):
        def body(c, t):
            x, y = _rng.normal(_rng.fold_in(key, t), (n,)), _rng.normal(_rng.fold_in(key, t + 8), (m,))
            return c + jnp.sum(x * x) + jnp.max(x) + jnp.sum(y * y) + jnp.max(y), None

        return jax.lax.scan(body, jnp.float32(0), jnp.arange(steps))[0]

    keys = jax.random.split(jax.random.key(0), seeds)
    hlo = jax.jit(jax.vmap(one), compiler_options=ENGINE_COMPILER_OPTIONS).lower(keys).compile().as_text()
    return re.split(r"\n(?=%?[\w.\-]+ \()", hlo)


def test_odd_draws_read_their_words_not_the_hash():
    """A draw of an odd number of normals (PFTAL at d = 3) is one kernel reading the materialised words.

    With the words cut as ``concatenate([a, b])[:n]``, XLA's CPU compile fused the Threefry hash into the
    normal's kernel for every odd ``n`` (not for even ``n``), and that kernel ran ~20x slower per element:
    PFTAL at d = 3 took as long as at d = 10 (issue 47). The words are the same as that cut's.
    """
    import re

    key = jax.random.key(5)
    for n in (1, 3, 5, 6):
        a, b = _rng._hash(key, jnp.arange(-(-n // 2), dtype=jnp.uint32))
        assert np.array_equal(_rng.bits(key, n), jnp.concatenate([a, b])[:n])

    kernels = _two_draws_kernels(3, 5, steps=8, seeds=64)
    draws = [k for k in kernels if re.search(r"ROOT %\S+ = f32\[[\d,]+\]\{[\d,]+\} divide", k)]
    assert draws, "no normal draw's kernel (computed_once's division) found"
    assert not [k.split(" ")[0] for k in draws if " xor(" in k], "the hash is fused into a normal draw's kernel"


def test_long_normal_draws_read_their_words_not_the_hash():
    """A long draw (17 normals) is, like a short one, a kernel reading the materialised words (issue 47).

    For a while the words of 16 normals and more were a branch-free kernel that XLA fused into the draw's
    (the same words): on a near-idle core that was slower at every length measured (OGD at d = 16-64
    0.91-0.98x, PFTAL at d = 100 0.89x), so ``normal`` takes the concatenate at every length. Fails if the
    hash is fused into the long draw's kernel again.
    """
    import re

    key = jax.random.key(5)
    for n in (16, 17, 33):
        a, b = _rng._hash(key, jnp.arange(-(-n // 2), dtype=jnp.uint32))
        assert np.array_equal(_rng.bits(key, n), jnp.concatenate([a, b])[:n])
        assert np.array_equal(_rng.normal(key, (n,)), _rng._normal_from_words(_rng.bits(key, n)))

    kernels = _two_draws_kernels(10, 17, steps=4, seeds=16)
    root = r"ROOT %\S+ = f32\[\d+,(\d+)\]\{[\d,]+\} divide"  # a normal draw's kernel: computed_once's division
    draws = {int(m.group(1)): k for k in kernels if (m := re.search(root, k))}
    assert sorted(draws) == [10, 17], sorted(draws)
    assert " xor(" not in draws[10] and " xor(" not in draws[17], "the hash is fused into a draw's kernel"
