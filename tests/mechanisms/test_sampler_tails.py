"""The samplers' refined tails (jaxpriv._rng) and the δ floor their bounded support implies (_accounting).

Every draw outside the extreme cells keeps its bits; the extreme cells reach the supports of
``SAMPLER_SUPPORT`` (measured here by feeding the extreme words to the transforms); the refined
values are the exact quantiles; ``sampler_delta_floor`` is recomputed from the measured supports.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import integrate, special

from jaxpriv import _rng
from jaxpriv.mechanisms import _accounting
from jaxpriv.mechanisms._accounting import SAMPLER_SUPPORT, sampler_delta_floor

_LOW = np.arange(512, dtype=np.uint32)
_TOP = np.uint32(0x7FFFFF)


def _words() -> np.ndarray:
    """Random words, every word of both end cells, and of the cells next to them."""
    rng = np.random.default_rng(0)
    cells = [_LOW, (np.uint32(1) << 9) | _LOW, ((_TOP - 1) << 9) | _LOW, (_TOP << 9) | _LOW]
    return np.concatenate([rng.integers(0, 2**32, 200_000, dtype=np.uint64).astype(np.uint32), *cells])


# The transforms before the tails were refined (jaxpriv._rng at a30ba29), from the same words.
def _old_normal(words):
    lo = np.nextafter(np.float32(-1.0), np.float32(0.0))
    return np.float32(np.sqrt(2.0)) * _rng.erfinv(jnp.maximum(lo, (_rng._unit(words) - 1.0) * (1.0 - lo) + lo))


def _old_exponential(words):
    return -jnp.log(2.0 - _rng._unit(words))


def _old_laplace(words):
    magnitude = -jnp.log(2.0 - _rng._unit(words))
    return jnp.where((words & np.uint32(1)) == 1, -magnitude, magnitude)


FAMILIES = {
    "normal": (_rng._normal_from_words, _old_normal, lambda top: (top == 0) | (top == _TOP)),
    "exponential": (_rng._exponential_from_words, _old_exponential, lambda top: top == _TOP),
    "laplace": (_rng._laplace_from_words, _old_laplace, lambda top: top == _TOP),
}


def _bits(x) -> np.ndarray:
    return np.asarray(x, np.float32).view(np.uint32)


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_only_the_extreme_cells_change(family):
    new, old, extreme = FAMILIES[family]
    words = _words()
    a, b = np.asarray(jax.jit(new)(jnp.asarray(words))), np.asarray(jax.jit(old)(jnp.asarray(words)))
    changed = _bits(a) != _bits(b)
    assert not np.any(changed & ~extreme(words >> 9))  # every other word: bit for bit the same draw
    assert np.sum(changed) >= 500 * (2 if family == "normal" else 1)


@pytest.mark.parametrize("family", sorted(FAMILIES))
@pytest.mark.parametrize("shape", [(1,), (3,), (10,)])
def test_samplers_are_the_transforms_of_their_words(family, shape):
    # the key-based sampler, jitted under vmap, is the transform of bits(key, n): the tests above hold for draws.
    # Both sides compiled: under the suite's XLA flags (tests/conftest.py) a compiled transform contracts
    # multiply-adds, the op-by-op one does not (the last bit of a normal).
    keys = jax.random.split(jax.random.key(3), 2000)
    drawn = jax.jit(jax.vmap(lambda k: getattr(_rng, family)(k, shape)))(keys)
    words = jax.vmap(lambda k: _rng.bits(k, int(np.prod(shape))))(keys)
    assert np.array_equal(_bits(drawn).reshape(len(keys), -1), _bits(jax.jit(FAMILIES[family][0])(words)))


def test_supports_are_what_the_extreme_words_give():
    cells = jnp.asarray(np.concatenate([_LOW, (_TOP << 9) | _LOW]))
    normal = np.asarray(_rng._normal_from_words(cells), np.float64)
    exponential = np.asarray(_rng._exponential_from_words(cells), np.float64)
    laplace = np.asarray(_rng._laplace_from_words(cells), np.float64)
    assert (normal.min(), normal.max()) == SAMPLER_SUPPORT["normal"]
    assert exponential.max() == SAMPLER_SUPPORT["exponential"][1]
    assert (laplace.min(), laplace.max()) == SAMPLER_SUPPORT["laplace"]
    # and no other word goes further (the refinement is monotone in the word)
    words = jnp.asarray(_words())
    for family, (lo, hi) in (("normal", SAMPLER_SUPPORT["normal"]), ("laplace", SAMPLER_SUPPORT["laplace"])):
        x = np.asarray(FAMILIES[family][0](words), np.float64)
        assert lo <= x.min() and x.max() <= hi
    assert np.isclose(SAMPLER_SUPPORT["exponential"][1], 32 * np.log(2), rtol=1e-7)
    assert np.isclose(SAMPLER_SUPPORT["laplace"][1], 31 * np.log(2), rtol=1e-7)
    assert np.isclose(SAMPLER_SUPPORT["normal"][0], special.ndtri(2.0**-34), rtol=4e-7)
    assert np.isclose(SAMPLER_SUPPORT["normal"][1], -special.ndtri(1.5 * 2.0**-33), rtol=4e-7)
    # before: 23 bits only
    top = jnp.asarray(np.array([0, _TOP << 9 | np.uint32(0x1FF)], np.uint32))
    assert np.allclose(np.asarray(_old_normal(top)), [-5.419983, 5.220113], atol=1e-6)
    assert np.isclose(float(_old_exponential(top)[1]), 23 * np.log(2), rtol=1e-7)


def test_refined_values_are_the_exact_quantiles():
    low = _LOW.astype(np.float64)
    exponential = np.asarray(_rng._exponential_from_words(jnp.asarray((_TOP << 9) | _LOW)), np.float64)
    np.testing.assert_allclose(exponential, -np.log((512 - low) * 2.0**-32), rtol=2e-7)
    laplace = np.abs(np.asarray(_rng._laplace_from_words(jnp.asarray((_TOP << 9) | _LOW)), np.float64))
    np.testing.assert_allclose(laplace, -np.log((256 - np.floor(low / 2)) * 2.0**-31), rtol=2e-7)
    # the normal: a quarter of the way into each sub-cell of width 2^-31 of V = erf(Z/√2) on (-1, 1)
    lower = np.asarray(_rng._normal_from_words(jnp.asarray(_LOW)), np.float64)
    upper = np.asarray(_rng._normal_from_words(jnp.asarray((_TOP << 9) | _LOW)), np.float64)
    # (within erfinv's float32 accuracy: the tail polynomial, and the factor u for x = ±(1 - t))
    np.testing.assert_allclose(lower, special.ndtri((4 * low + 1) * 2.0**-34), rtol=5e-7)
    np.testing.assert_allclose(upper, -special.ndtri((2047 - 4 * low) * 2.0**-34), rtol=5e-7)
    assert np.all(np.diff(lower) > 0) and np.all(np.diff(upper) > 0) and np.all(np.diff(exponential) > 0)
    # they lie beyond the cells next to them (the grid stays monotone in the word)
    inner = np.asarray(_rng._normal_from_words(jnp.asarray([1 << 9, (int(_TOP) - 1) << 9 | 0x1FF], jnp.uint32)))
    assert lower.max() < inner[0] and upper.min() > inner[1]


def test_erfinv_tail_branch_is_accurate():
    # the tail branch against SciPy in float64, over the refined cells' range (w from 14.56 to 22.9)
    t = 2.0 ** -np.linspace(22.0, 33.5, 2001)
    w = (-np.log(t * (2 - t))).astype(np.float32)
    assert w.min() > _rng.W_TAIL  # the branch applies to all of them
    ours = np.asarray(_rng._erfinv_of_w(jnp.asarray(w), tail=True), np.float64)
    tt = -np.expm1(0.5 * np.log1p(-np.exp(-w.astype(np.float64))))  # the t of the float32 w
    np.testing.assert_allclose(ours, -special.ndtri(tt / 2) / np.sqrt(2), rtol=2.5e-7)


def test_the_tail_branch_is_chosen_by_w_exactly_in_the_end_cells():
    # _erfinv_of_w picks its tail branch by w > W_TAIL, not by a mask of the end cells (issue 47: the mask read
    # twice made the CPU sweep 1.35-1.6x slower). Every top of 23 bits (w does not depend on the low bits outside
    # the end cells) and every word of the end cells: the two sets of w lie on either side of W_TAIL.
    tops = np.arange(2**23, dtype=np.uint32)
    inner = tops[(tops != 0) & (tops != _TOP)] << np.uint32(9)
    ends = np.concatenate([_LOW, (_TOP << 9) | _LOW])
    w_inner = np.asarray(jax.jit(lambda x: _rng._normal_w(x)[0])(jnp.asarray(inner)))
    w_ends = np.asarray(jax.jit(lambda x: _rng._normal_w(x)[0])(jnp.asarray(ends)))
    assert w_inner.max() < _rng.W_TAIL < w_ends.min()
    assert 14.3 < w_inner.max() and w_ends.min() < 14.6  # the margins the docstring states


def _mask_normal(words):
    """``normal`` as it was before issue 47: the tail branch chosen by the end-cell mask."""
    w, u = _rng._normal_w(words)
    top = words >> 9
    end = (top == 0) | (top == _TOP)
    root = jnp.sqrt(w)
    r = jnp.float32(_rng._ERFINV_TAIL[0])
    for c in _rng._ERFINV_TAIL[1:]:
        r = c + r * (root - 4.3)
    return np.float32(np.sqrt(2.0)) * (jnp.where(end, r, _rng._erfinv_of_w(w)) * u)


def test_the_normal_keeps_its_bits():
    # the same draws as the masked form, word for word (random words, both end cells and their neighbours)
    words = jnp.asarray(_words())
    assert np.array_equal(_bits(jax.jit(_rng._normal_from_words)(words)), _bits(jax.jit(_mask_normal)(words)))


# ---------------------------------------------------------------------------------------------
# The δ floor, recomputed from the measured supports.


def _measured_supports():
    cells = jnp.asarray(np.concatenate([_LOW, (_TOP << 9) | _LOW]))
    normal = np.asarray(_rng._normal_from_words(cells), np.float64)
    return (
        float(np.max(_rng._exponential_from_words(cells))),
        float(np.max(_rng._laplace_from_words(cells))),
        (normal.min(), normal.max()),
    )


@pytest.mark.parametrize("epsilon", [0.05, 1.0, 10.0, 30.0])
@pytest.mark.parametrize("depth", [1, 15])
def test_laplace_floor_is_the_uncovered_mass(epsilon, depth):
    # a unit Laplace conditioned on [-M, M], shifted by s = ε/D: the mass of [-M, s - M), integrated
    _, m, _ = _measured_supports()
    s = epsilon / depth
    density = lambda x: 0.5 * np.exp(-abs(x)) / (1 - np.exp(-m))
    node = integrate.quad(density, -m, min(s - m, m), points=[0.0] if s > m else None, epsabs=0, epsrel=1e-12)[0]
    want = 1 - (1 - node) ** depth
    assert sampler_delta_floor("laplace", epsilon, depth, 3) == pytest.approx(want, rel=1e-9)


@pytest.mark.parametrize("rho", [0.01, 1.0, 10.0])
@pytest.mark.parametrize("depth", [1, 15])
def test_gaussian_floor_in_one_dimension(rho, depth):
    # d = 1: the shift is the whole s = sqrt(2ρ/D); the larger of the two ends' uncovered masses
    _, _, (lo, hi) = _measured_supports()
    s = np.sqrt(2 * rho / depth)
    z = special.ndtr(hi) - special.ndtr(lo)
    node = max(special.ndtr(min(lo + s, hi)) - special.ndtr(lo), special.ndtr(hi) - special.ndtr(max(hi - s, lo))) / z
    assert sampler_delta_floor("gaussian", rho, depth, 1) == pytest.approx(1 - (1 - node) ** depth, rel=1e-6)


@pytest.mark.parametrize("rho", [0.001, 0.1, 1.0, 10.0])
@pytest.mark.parametrize("dim", [2, 10, 100])
def test_gaussian_floor_bounds_every_split_of_the_shift(rho, dim):
    # the bound is at least what k equal coordinates attain, and is attained within a small factor
    depth = 15
    s = np.sqrt(2 * rho / depth)
    g = _accounting._gaussian_coordinate_floor
    attained = max(1 - (1 - g(s / np.sqrt(k))) ** (k * depth) for k in range(1, dim + 1))
    bound = float(sampler_delta_floor("gaussian", rho, depth, dim))
    assert attained <= bound * (1 + 1e-9)
    assert bound <= 1.5 * attained


def test_gamma_floor_in_one_dimension_is_the_laplace_formula_with_the_exponential():
    m, _, _ = _measured_supports()
    for eps in (0.1, 1.0, 10.0):
        s = eps / 15
        node = 0.5 * (np.exp(s - m) - np.exp(-m)) / (1 - np.exp(-m))
        assert sampler_delta_floor("gamma", eps, 15, 1) == pytest.approx(1 - (1 - node) ** 15, rel=1e-9)


def test_gamma_floor_bound_from_the_measured_supports():
    m, _, (lo, hi) = _measured_supports()
    zn = special.ndtr(hi) - special.ndtr(lo)
    for d in (2, 3, 10, 100):
        for eps in (0.1, 1.0, 10.0):
            s = eps / 15
            node = (d * np.exp(-m) * np.expm1(s) + np.exp(s) * (1 - zn**d)) / ((1 - np.exp(-m)) * zn) ** d
            assert sampler_delta_floor("gamma", eps, 15, d) == pytest.approx(1 - (1 - node) ** 15, rel=1e-6)


def test_floor_reproduces_the_issue_before_the_refinement(monkeypatch):
    # issue 35's numbers for the 23-bit samplers (one node): Laplace 1.0e-7 at ε = 1 and 1.3e-3 at
    # ε = 10, the Gaussian 7.1e-5 at ρ = 1 and 0.23 at ρ = 10
    m = float(np.float32(23 * np.log(2)))
    monkeypatch.setitem(SAMPLER_SUPPORT, "laplace", (-m, m))
    monkeypatch.setitem(SAMPLER_SUPPORT, "normal", (-5.419983, 5.220113))
    np.testing.assert_allclose(sampler_delta_floor("laplace", [1.0, 10.0], 1, 1), [1.0e-7, 1.3e-3], rtol=0.05)
    np.testing.assert_allclose(sampler_delta_floor("gaussian", [1.0, 10.0], 1, 1), [7.1e-5, 0.23], rtol=0.05)


def test_floor_limits_shape_and_validation():
    for noise in ("gamma", "laplace", "gaussian"):
        out = sampler_delta_floor(noise, np.array([[0.0, np.inf], [1.0, 1e9]]), 15, 3)
        assert out.shape == (2, 2) and out[0, 0] == 0.0 and out[0, 1] == 1.0 and out[1, 1] == 1.0
        grid = sampler_delta_floor(noise, np.geomspace(1e-3, 1e3, 40), 15, 3)
        assert np.all(np.diff(grid) >= 0) and np.all((grid >= 0) & (grid <= 1))
    # splitting ε over 15 nodes lowers Laplace's floor (δ₁ convex); not so for the Gaussian's spread shift or
    # the Gamma bound's directional term, which do not vanish linearly as the node's budget shrinks
    assert sampler_delta_floor("laplace", 1.0, 15, 3) < sampler_delta_floor("laplace", 1.0, 1, 3)
    with pytest.raises(ValueError, match="noise"):
        sampler_delta_floor("cauchy", 1.0, 1, 1)
    with pytest.raises(ValueError, match="epsilon"):
        sampler_delta_floor("laplace", -1.0, 1, 1)
    with pytest.raises(ValueError, match="depth"):
        sampler_delta_floor("gamma", 1.0, 0, 1)
    with pytest.raises(ValueError, match="dim"):
        sampler_delta_floor("gaussian", 1.0, 1, 0)
