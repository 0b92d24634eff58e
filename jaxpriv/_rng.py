"""Random numbers for the step loop: the Threefry hash written out, and cheap exact transforms.

On a CPU, ``jax.random`` lowers the Threefry-2x32 hash as a rolled loop (a
``while`` of 5 iterations per call); inside the engine's ``lax.scan`` every draw
then becomes a nested loop of small kernels, and its transforms use ``log1p``
and ``erf_inv``, which XLA's CPU backend evaluates slowly. This module computes
the same hash with its 20 rounds written out (one fused elementwise kernel) and:

* ``fold_in``, ``split`` and ``uniform``: bit for bit the keys of ``jax.random.fold_in``
  and ``jax.random.split`` and the numbers of ``jax.random.uniform`` (default
  ``threefry2x32`` keys, partitionable mode, the default of JAX); any other key
  or mode falls back to ``jax.random``;
* ``normal`` and ``exponential``: exact in distribution (the same 23-bit uniform
  grid and float32 accuracy as ``jax.random``) but not the same numbers:
  ``normal`` uses both 32-bit words of each hash and Giles' single-precision
  ``erfinv`` with ``log((1-u)(1+u))``; ``exponential`` is ``-log(1 - u)``;
* the tails: where a word's 23 bits are at their extreme value, its spare low bits refine the
  last cell, so ``exponential`` reaches ``32 ln 2``, ``laplace`` ``±31 ln 2`` and ``normal``
  ``[-6.444, 6.275]`` (``jax.random``: ``23 ln 2`` and ``[-5.420, 5.220]``); every other draw is
  as before. The bounded support still costs a δ: ``jaxpriv.mechanisms._accounting.sampler_delta_floor``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

PRNGKey = jax.Array  # a typed PRNG key (jaxpriv._base.PRNGKey)

_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))


def _rotl(v: jax.Array, r: int) -> jax.Array:
    return lax.shift_left(v, np.uint32(r)) | lax.shift_right_logical(v, np.uint32(32 - r))


def threefry2x32(k1: jax.Array, k2: jax.Array, x1: jax.Array, x2: jax.Array) -> tuple[jax.Array, jax.Array]:
    """The Threefry-2x32 hash (20 rounds) of counters ``(x1, x2)`` under key ``(k1, k2)``, unrolled."""
    ks = (k1, k2, k1 ^ k2 ^ np.uint32(0x1BD11BDA))
    a, b = x1 + ks[0], x2 + ks[1]
    for i in range(5):
        for r in _ROTATIONS[i % 2]:
            a = a + b
            b = a ^ _rotl(b, r)
        a = a + ks[(i + 1) % 3]
        b = b + ks[(i + 2) % 3] + np.uint32(i + 1)
    return a, b


def _fast(key: PRNGKey) -> bool:
    return str(jax.random.key_impl(key)) == "threefry2x32" and bool(jax.config.jax_threefry_partitionable)


def _hash(key: PRNGKey, counts: jax.Array) -> tuple[jax.Array, jax.Array]:
    data = jax.random.key_data(key)
    zero = jnp.zeros_like(counts)
    return threefry2x32(data[..., 0, None], data[..., 1, None], zero, counts)


def _wrap(a: jax.Array, b: jax.Array, like: PRNGKey) -> PRNGKey:
    return jax.random.wrap_key_data(jnp.stack([a, b], -1), impl=jax.random.key_impl(like))


def fold_in(key: PRNGKey, data: jax.Array) -> PRNGKey:
    """``jax.random.fold_in(key, data)`` (the same key), for a scalar key and a scalar int32 ``data``."""
    if not _fast(key) or jnp.ndim(key) or jnp.ndim(data):
        return jax.random.fold_in(key, data)
    a, b = _hash(key, jnp.asarray(data, jnp.uint32)[None])
    return _wrap(a[0], b[0], key)


def split(key: PRNGKey, num: int = 2) -> PRNGKey:
    """``jax.random.split(key, num)`` (the same keys), for a scalar key."""
    if not _fast(key) or jnp.ndim(key):
        return jax.random.split(key, num)
    a, b = _hash(key, jnp.arange(num, dtype=jnp.uint32))
    return _wrap(a, b, key)


def bits(key: PRNGKey, n: int) -> jax.Array:
    """``n`` uniform uint32 words from a scalar key: both words of ``ceil(n/2)`` hashes of counters ``0, 1, ...``."""
    if not _fast(key) or jnp.ndim(key):
        return jax.random.bits(key, (n,), jnp.uint32)
    # A concatenate of the two words of ceil(n/2) hashes: the words one kernel, the draw another. For odd n the
    # second half is cut before the concatenate, since ``concatenate([a, b])[:n]`` let XLA fuse the hash into
    # the normal draw's kernel (~20x slower per element). A branch-free form (word j the a word of hash j for
    # j < h, else the b word of hash j - h), which XLA fuses into the draw's kernel, was the normal's from 16
    # words on for a while: on a near-idle core it was slower at every length measured (0.89-0.98x,
    # docs/performance.md, issue 47's "long rows"), though faster under load. Measurements: docs/performance.md,
    # issue 47's "Odd d" and "The random words by length", and issue 25's vectorised words.
    h = -(-n // 2)
    a, b = _hash(key, jnp.arange(h, dtype=jnp.uint32))
    return jnp.concatenate([a, b[: n - h]])


def _unit(words: jax.Array) -> jax.Array:
    """Floats in ``[1, 2)`` on the grid ``2^-23`` from the top 23 bits."""
    return lax.bitcast_convert_type(lax.shift_right_logical(words, np.uint32(9)) | np.uint32(0x3F800000), jnp.float32)


# The tails. ``_unit`` reads the top 23 bits of a word; the 9 low bits (8 in ``laplace``, whose
# sign is bit 0) are spare. Where the 23 bits are all at their extreme value (probability 2^-23),
# the draw is refined with the spare bits of the same word: the last cell of the 2^-23 grid is cut
# into 2^9 (2^8) cells, so the tail reaches 2^-32 (2^-31) instead of 2^-23, and every other draw
# keeps its bits (its operations are unchanged; the refined value only enters through a
# ``jnp.where``, branch-free). The refined values are exact in float32 (small integers times a power
# of two) and go through the same ``log`` as the others. ``_accounting.SAMPLER_SUPPORT`` records the
# supports and ``sampler_delta_floor`` the δ they imply. A second word per draw would reach further
# but is hashed for every element in vectorised code: 1.2-1.9x on one large array, 4-5x per value
# in the engine's scan (measured: docs/algorithms/mechanisms.md, "The samplers' tails"), not taken.
_TOP = np.uint32(0x7FFFFF)  # the top 23 bits, all ones
_LOW9 = np.uint32(0x1FF)
_LOW8 = np.uint32(0xFF)


def _one_minus_u(words: jax.Array) -> jax.Array:
    """``1 - u`` of ``exponential``: ``k 2^-23``, ``k = 2^23 - top``; in the last cell ``(512 - low) 2^-32``."""
    tail = (np.uint32(512) - (words & _LOW9)).astype(jnp.float32) * np.float32(2.0**-32)
    return jnp.where(lax.shift_right_logical(words, np.uint32(9)) == _TOP, tail, 2.0 - _unit(words))


def _laplace_one_minus_u(words: jax.Array) -> jax.Array:
    """``1 - u`` of ``laplace``'s magnitude: as ``_one_minus_u`` with bits 1..8 (bit 0 is the sign): down to 2^-31."""
    low = lax.shift_right_logical(words, np.uint32(1)) & _LOW8
    tail = (np.uint32(256) - low).astype(jnp.float32) * np.float32(2.0**-31)
    return jnp.where(lax.shift_right_logical(words, np.uint32(9)) == _TOP, tail, 2.0 - _unit(words))


def uniform(key: PRNGKey, shape: tuple[int, ...] = (), dtype=jnp.float32) -> jax.Array:
    """``jax.random.uniform(key, shape)`` on ``[0, 1)`` (the same numbers): one hash per word, both words xor-ed."""
    if dtype != jnp.float32 or not _fast(key) or jnp.ndim(key):
        return jax.random.uniform(key, shape, dtype)
    a, b = _hash(key, jnp.arange(int(np.prod(shape)), dtype=jnp.uint32))
    return jnp.maximum(0.0, _unit(a ^ b) - 1.0).reshape(shape)


def _erfinv_of_w(w: jax.Array, tail: bool = False) -> jax.Array:
    """``erfinv(x)/x`` from ``w = -log((1-x)(1+x))``: Giles' single-precision branches, and a tail branch.

    ``tail=True`` (static) adds a polynomial in ``sqrt(w)`` for ``w > W_TAIL`` (the refined end
    cells of ``normal``, ``14.56 <= w <= 22.2``, where Giles' second branch, fitted up to ``w = 16.6``, is
    off by up to 6e-4): a least-squares fit of degree 4 to SciPy's ``ndtri`` in float64, relative error
    < 2e-7 in float32 (tests/mechanisms/test_sampler_tails.py). Elsewhere the two branches, as before.

    The branch is chosen from ``w`` itself, not from a mask of the end cells: ``normal``'s ``w`` is at most
    14.333 outside the end cells and at least 14.557 inside them (every word checked,
    tests/mechanisms/test_sampler_tails.py), so ``w > W_TAIL`` selects exactly the end cells and every
    draw keeps its bits. It is also what keeps the CPU fast: with the mask read in two places (the
    ``log``'s argument and this branch) XLA's CPU compile of a sweep ran 1.35-1.6x slower (issue 47,
    docs/performance.md).
    """
    small = w - 2.5
    p = jnp.float32(2.81022636e-08)
    for c in (3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503, -0.00417768164):
        p = c + p * small
    for c in (0.246640727, 1.50140941):
        p = c + p * small
    root = jnp.sqrt(w)
    big = root - 3.0
    q = jnp.float32(-0.000200214257)
    for c in (0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613, 0.00943887047):
        q = c + q * big
    for c in (1.00167406, 2.83297682):
        q = c + q * big
    if not tail:
        return jnp.where(w < 5.0, p, q)
    far = root - 4.3
    r = jnp.float32(_ERFINV_TAIL[0])
    for c in _ERFINV_TAIL[1:]:
        r = c + r * far
    return jnp.where(w < 5.0, p, jnp.where(w > W_TAIL, r, q))


#: ``normal``'s ``w`` above which the tail branch of ``_erfinv_of_w`` applies: between the largest ``w``
#: outside the end cells (14.333, the cells next to them) and the smallest inside (14.557).
W_TAIL = np.float32(14.45)


# erfinv(x)/x in sqrt(w) - 4.3 for 15 <= w <= 22.5 (fitted on a grid of 20001 points, relative error).
_ERFINV_TAIL = (
    2.0019217205924944e-04,
    -5.79564064289606e-04,
    6.245381772714087e-04,
    1.0100456094504318,
    4.142724045702594,
)


def erfinv(x: jax.Array) -> jax.Array:
    """Giles' single-precision ``erfinv`` on ``(-1, 1)`` (M. Giles, 2010), with ``log`` rather than ``log1p``."""
    return _erfinv_of_w(-jnp.log((1.0 - x) * (1.0 + x))) * x


def normal(key: PRNGKey, shape: tuple[int, ...], dtype=jnp.float32) -> jax.Array:
    """Standard normals ``sqrt(2) erfinv(u)``, ``u`` uniform on the open grid of ``(-1, 1)`` (as ``jax.random``).

    The grid: ``u = -1 + 2^-24 + m 2^-22`` for the top 23 bits ``m`` of a word (each value a
    quarter of the way into its cell of width ``2^-22``, as ``jax.random``). In the two end cells
    (``m = 0`` and ``m = 2^23 - 1``) the 9 spare bits ``l`` cut the cell into 512 cells of width
    ``2^-31``, each again represented a quarter of the way in: ``1 + u`` (``1 - u``) is
    ``k 2^-33`` with ``k = 4l + 1`` (``2047 - 4l``), exact in float32, and ``erfinv``'s ``w``
    is computed from it (with a tail branch) rather than from ``u``. The support grows from
    ``[-5.420, 5.220]`` to ``[-6.444, 6.275]``; every draw outside the end cells keeps its bits.
    """
    if dtype != jnp.float32 or not _fast(key) or jnp.ndim(key):
        return jax.random.normal(key, shape, dtype)
    return _normal_from_words(bits(key, int(np.prod(shape)))).reshape(shape)


def _normal_w(words: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``(w, u)`` of ``normal``: ``erfinv``'s ``w = -log((1 - u)(1 + u))`` (refined in the end cells) and ``u``."""
    lo = np.nextafter(np.float32(-1.0), np.float32(0.0))
    u = jnp.maximum(lo, (_unit(words) - 1.0) * (1.0 - lo) + lo)
    top = lax.shift_right_logical(words, np.uint32(9))
    lower, upper = top == 0, top == _TOP
    end = lower | upper
    # In an end cell 1 + u (1 - u) is t = k 2^-33, k = 4l + 1 (2047 - 4l); (1 - u)(1 + u) = t(2 - t) is
    # taken as 2t (relative error t/2 <= 2^-23, below the float32 rounding of w); the factor x of
    # erfinv(x) = x · erfinv(x)/x stays u (|u - x| <= 2^-22 there, within erfinv's float32 accuracy).
    four = lax.shift_left(words & _LOW9, np.uint32(2))
    k = jnp.where(lower, four | np.uint32(1), np.uint32(2047) - four)
    w = -jnp.log(jnp.where(end, k.astype(jnp.float32) * np.float32(2.0**-32), (1.0 - u) * (1.0 + u)))
    return w, u


def _normal_from_words(words: jax.Array) -> jax.Array:
    """``normal``'s transform of uint32 words (float32, the words' shape)."""
    w, u = _normal_w(words)
    return computed_once(np.float32(np.sqrt(2.0)) * (_erfinv_of_w(w, tail=True) * u))


def computed_once(x: jax.Array) -> jax.Array:
    """``x`` itself (``x / (1 + 0·x)``: exact for finite ``x``), which XLA's CPU compile then computes once.

    XLA treats the division as expensive and does not duplicate it into the kernels that read ``x``: ``x`` is
    written once and read by each consumer. Without it, the cheap polynomial behind a normal draw is fused into
    every consumer, and each re-reads its inputs (the hash words, the ``log``, the ``sqrt``: three ``[d]`` rows
    instead of one). CPU compile, d = 10, XLA's cost analysis of a sweep's step (issue 47): OGD 2255 -> 1935 B
    per seed-step, PFTAL (Gamma tree) 4666 -> 4026, PFTAL (Gaussian tree) 4422 -> 3862. A non-finite ``x``
    becomes NaN (``0·inf``); the samplers' outputs are always finite.
    """
    return x / (1.0 + 0.0 * x)


def laplace(key: PRNGKey, shape: tuple[int, ...], dtype=jnp.float32) -> jax.Array:
    """Unit Laplace numbers: ``-log(1 - u)`` from the top 23 bits of a word, its sign from the lowest bit.

    Exact in distribution (a unit exponential with an independent fair sign), on the same
    grid as ``exponential``, its last cell refined by bits 1-8 (up to ``31 ln 2``); not the
    numbers of ``jax.random.laplace``.
    """
    if dtype != jnp.float32 or not _fast(key) or jnp.ndim(key):
        return jax.random.laplace(key, shape, dtype)
    return _laplace_from_words(bits(key, int(np.prod(shape)))).reshape(shape)


def _laplace_from_words(words: jax.Array) -> jax.Array:
    """``laplace``'s transform of uint32 words (float32, the words' shape)."""
    magnitude = -jnp.log(_laplace_one_minus_u(words))
    return jnp.where((words & np.uint32(1)) == 1, -magnitude, magnitude)


def exponential(key: PRNGKey, shape: tuple[int, ...], dtype=jnp.float32) -> jax.Array:
    """Unit exponentials ``-log(1 - u)``, ``u`` uniform on ``{0, 2^-23, ..., 1 - 2^-23}`` as in ``jax.random``.

    The last cell (``1 - u = 2^-23``) is refined by the word's 9 low bits to ``(512 - l) 2^-32``:
    the largest value is ``32 ln 2 = 22.18`` (``jax.random``: ``23 ln 2 = 15.94``).
    """
    if dtype != jnp.float32 or not _fast(key) or jnp.ndim(key):
        return jax.random.exponential(key, shape, dtype)
    return _exponential_from_words(bits(key, int(np.prod(shape)))).reshape(shape)


def _exponential_from_words(words: jax.Array) -> jax.Array:
    """``exponential``'s transform of uint32 words (float32, the words' shape)."""
    return -jnp.log(_one_minus_u(words))
