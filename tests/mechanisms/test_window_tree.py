"""The window tree mechanism (window-DP COCO paper, spec window_coco.md §2): structure, noise, guard rails."""

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxpriv import mechanisms
from jaxpriv.mechanisms import WindowTreeParams, window_nodes, window_tree
from jaxpriv.mechanisms._accounting import analytic_gaussian_sigma, gaussian_delta
from jaxpriv.mechanisms._tree import _prefix_sums
from jaxpriv.mechanisms._window_tree import _node_noise
from jaxpriv.testing import variance_with_stderr

# Spec §2.7 (Fig. 1 of the paper), W = 4: (clean inputs, noisy nodes) at t = 1..9. A node is
# (level, index) covering the inputs (index·2^level, (index+1)·2^level].
V = {i: (0, i - 1) for i in range(1, 10)}  # leaves v1..v9
S12, S34, S56, S78, S14, S58 = (1, 0), (1, 1), (1, 2), (1, 3), (2, 0), (2, 1)
WORKED_EXAMPLE = {
    1: (0, [V[1]]),
    2: (0, [S12]),
    3: (0, [S12, V[3]]),
    4: (0, [S14]),
    5: (1, [V[2], S34, V[5]]),
    6: (2, [S34, S56]),
    7: (3, [V[4], S56, V[7]]),
    8: (4, [S58]),
    9: (5, [V[6], S78, V[9]]),
}


def _params(noise, epsilon, delta=1e-3, sensitivity=1.0):
    """Exactly the budget of ``noise``'s guarantee: ε (Gamma, window ε-DP), ε and δ (Gaussian)."""
    return WindowTreeParams(epsilon, delta if noise == "gaussian" else None, sensitivity)


def _covered(node):
    level, index = node
    return list(range(index * 2**level + 1, (index + 1) * 2**level + 1))


def test_reference_decomposition_is_the_worked_example():
    for t, expected in WORKED_EXAMPLE.items():
        assert window_nodes(t, 4, 16) == expected, t
    # t = 7 and t = 8 are stated verbatim in the paper: v4, s56, v7 noisy (3 = log2 4 + 1); s58 alone.
    assert len(window_nodes(7, 4, 16)[1]) == 3


def _run_by_hand(tree, params, xs, key):
    """Step the mechanism in a Python loop (jitted step): the releases, the final state and the zeroed inputs."""
    state = tree.init(key, params)
    step = jax.jit(tree.step)
    out, zeroed = [], 0
    for t in range(1, xs.shape[0] + 1):
        state, release, bad = step(jax.random.key(t), state, xs[t - 1], jnp.int32(t))
        out.append(np.asarray(release, np.float64))
        zeroed += int(bad)
    return np.stack(out), state, zeroed


@pytest.mark.parametrize("noise", ["gamma", "gaussian"])
def test_mechanism_releases_the_worked_example_exactly(noise):
    """release_t = (sum of the clean inputs) + sum over D(t) of (node sum + that node's noise), at every t."""
    T, d, W = 9, 3, 4
    tree = window_tree(T, d, W, noise)
    params = _params(noise, 2.0, 1e-3, 10.0)
    xs = np.asarray(jax.random.normal(jax.random.key(3), (T, d)), np.float32)  # norms < 10: no clipping
    key = jax.random.key(7)
    releases, state, _ = _run_by_hand(tree, params, jnp.asarray(xs), key)
    scale = float(state.scale)
    for t, (clean, nodes) in WORKED_EXAMPLE.items():
        expected = xs[:clean].sum(0, dtype=np.float64)
        for node in nodes:
            eta = scale * np.asarray(_node_noise(key, jnp.int32(node[0]), jnp.int32(node[1]), d, noise, jnp.float32))
            expected = expected + xs[np.asarray(_covered(node)) - 1].sum(0) + eta
        np.testing.assert_allclose(releases[t - 1], expected, rtol=1e-5, atol=1e-4 * scale, err_msg=f"t={t}")
    if noise == "gaussian":
        return
    # The same stream through prefix_sums (a scan) with the same init key gives the same numbers.
    k_init = jax.random.split(jax.random.key(11))[0]
    by_hand, _, _ = _run_by_hand(tree, params, jnp.asarray(xs), k_init)
    scanned = np.asarray(mechanisms.prefix_sums(tree, params, xs, jax.random.key(11)))
    np.testing.assert_allclose(scanned, by_hand, rtol=1e-6, atol=1e-5 * scale)


@pytest.mark.parametrize(("window", "horizon", "noise"), [(2, 37, "gamma"), (16, 200, "gamma"), (32, 300, "gaussian")])
def test_release_noise_is_the_sum_of_the_drawn_nodes_of_the_reference_decomposition(window, horizon, noise):
    """Over many blocks: n_t is the sum of draw(level, index) over window_nodes(t) (spec §2.3, §2.6).

    The step draws the suffix nodes ahead of their first use and keeps chain sums (``_shrink_suffix``);
    whatever the order of the additions, the release noise is made of exactly the reference nodes.
    """
    d = 3
    tree = window_tree(horizon, d, window, noise)
    params = _params(noise, 1.0)
    noise_t = np.asarray(_prefix_sums(tree, params, jnp.zeros((horizon, d)), jax.random.key(5))[0])
    key = jax.random.split(jax.random.key(5))[0]  # _prefix_sums's init key: the nodes' base key
    scale = float(tree.init(key, params).scale)
    nodes = {t: window_nodes(t, window, horizon)[1] for t in range(1, horizon + 1)}
    ids = sorted({node for used in nodes.values() for node in used})
    levels, indices = (jnp.asarray(x, jnp.int32) for x in zip(*ids, strict=True))
    draws = scale * np.asarray(jax.vmap(lambda h, i: _node_noise(key, h, i, d, noise, jnp.float32))(levels, indices))
    draw = dict(zip(ids, draws.astype(np.float64), strict=True))
    expected = np.stack([sum(draw[node] for node in nodes[t]) for t in range(1, horizon + 1)])
    np.testing.assert_allclose(noise_t, expected, rtol=0, atol=2e-6 * scale * d)


@pytest.mark.parametrize(("window", "horizon"), [(1, 20), (2, 37), (4, 40), (8, 100), (16, 64), (64, 40), (40, 40)])
def test_noisy_nodes_partition_the_window_and_expire_on_schedule(window, horizon):
    k_w = mechanisms.window_depth(window, horizon)
    size = 2 ** (k_w - 1)
    protected = size if window < horizon else horizon  # W >= T: every input, the full binary tree
    paths = {i: set() for i in range(1, horizon + 1)}
    for t in range(1, horizon + 1):
        clean, nodes = window_nodes(t, window, horizon)
        a_t = max(1, t - protected + 1)
        assert clean == a_t - 1, t
        covered = [i for node in nodes for i in _covered(node)]
        assert covered == list(range(a_t, t + 1)), t  # disjoint, in order, exactly the window
        assert len(nodes) <= k_w
        if window >= horizon:
            assert len(nodes) == bin(t).count("1")  # the binary mechanism: one node per set bit of t
        for node in nodes:
            for i in _covered(node):
                paths[i].add(node)
    # Privacy structure (spec §2.3): the noisy nodes an input ever enters lie on its root path in
    # its block (at most k_W of them); after t = i + W - 1 it is only in the clean part.
    for i, used in paths.items():
        assert len(used) <= k_w and len({level for level, _ in used}) == len(used), (i, used)
        assert all(i in _covered(node) for node in used)


@pytest.mark.parametrize(("window", "horizon"), [(1, 13), (50, 50)])
def test_zero_noise_is_the_exact_running_sum(window, horizon):
    tree = window_tree(horizon, 2, window)
    xs = np.asarray(jax.random.uniform(jax.random.key(0), (horizon, 2), minval=-0.7, maxval=0.7), np.float32)
    out = np.asarray(mechanisms.prefix_sums(tree, WindowTreeParams(epsilon=jnp.inf), xs, 0))
    np.testing.assert_allclose(out, np.cumsum(xs.astype(np.float64), 0), rtol=1e-6, atol=1e-5)


@pytest.mark.parametrize("noise", ["gamma", "gaussian"])
def test_release_variance_is_the_number_of_noisy_nodes_times_the_node_variance(noise):
    T, d, W, n = 20, 3, 8, 10_000
    tree = window_tree(T, d, W, noise)
    params = _params(noise, jnp.float32(1.0), jnp.float32(1e-2), jnp.float32(0.5))
    scale = float(mechanisms.window_node_scale(noise, 1.0, 1e-2, 0.5, mechanisms.window_depth(W, T)))
    node_var = float(mechanisms.window_node_variance(noise, scale, d))
    xs = jnp.zeros((T, d))
    keys = jax.random.split(jax.random.key(5), n)
    noise_draws = np.asarray(jax.vmap(lambda k: _prefix_sums(tree, params, xs, k)[0])(keys))
    counts = [len(window_nodes(t, W, T)[1]) for t in range(1, T + 1)]
    assert max(counts) == 4 and min(counts) == 1  # log2 8 + 1 at t = 9, 11, ...; one node at multiples of 8
    oracle = mechanisms.release_variance(tree, params, np.arange(1, T + 1))  # the declared variance
    np.testing.assert_allclose(oracle, np.array(counts) * node_var, rtol=1e-5)
    info = mechanisms.describe(tree)
    assert (info.name, info.horizon, info.dim, info.noise, info.neighbouring) == (
        "window_tree",
        T,
        d,
        mechanisms.noise_family(noise),
        "add_remove",
    )
    assert (info.scope, info.structure) == ("window", "window")
    for t, k_t in enumerate(counts, 1):
        var, se = variance_with_stderr(noise_draws[:, t - 1, 0], mean=0.0)  # one coordinate: independent samples
        assert abs(var - k_t * node_var) < 5 * se, (t, var, k_t * node_var, se)
        for wrong in (k_t - 1, k_t + 1):  # a variance off by one node is rejected by the same test
            assert abs(var - wrong * node_var) > 5 * se, (t, wrong)


def test_calibration_formulas_and_full_window():
    T, s, eps, delta = 64, 0.5, 2.0, 1e-3
    for window, k in [(1, 1), (2, 2), (8, 4), (64, 7), (1000, 7)]:
        assert mechanisms.window_depth(window, T) == k
    k = 4  # W = 8
    assert float(mechanisms.window_node_scale("gamma", eps, delta, s, k)) == pytest.approx(k * s / eps)
    paper = float(mechanisms.window_node_scale("gaussian", eps, delta, s, k))
    assert paper**2 == pytest.approx(8 * s**2 * k**2 * np.log(2 / delta) ** 2 / eps**2, rel=1e-5)  # eq. (13)
    comp = float(mechanisms.window_node_scale("gaussian", eps, delta, s, k, "composition"))
    # The analytic Gaussian of sensitivity sqrt(k) s (Balle & Wang 2018, Thm 8), rounded up by < 1e-4.
    exact = float(analytic_gaussian_sigma(eps, delta, np.sqrt(k) * s))
    assert exact <= comp <= exact * (1 + 1e-4)
    assert gaussian_delta(comp, np.sqrt(k) * s, eps) <= delta
    assert comp < paper
    # Replace-one neighbours double the sensitivity; W >= T is the binary tree's calibration.
    add = window_tree(T, 2, 8).init(jax.random.key(0), WindowTreeParams(eps, sensitivity=s))
    rep = window_tree(T, 2, 8, neighbouring="replace").init(jax.random.key(0), WindowTreeParams(eps, sensitivity=s))
    assert float(rep.scale) == pytest.approx(2 * float(add.scale))
    full = window_tree(T, 2, T).init(jax.random.key(0), WindowTreeParams(eps, sensitivity=s))
    binary = mechanisms.binary_tree(T, 2).init(jax.random.key(0), mechanisms.TreeParams(epsilon=eps, sensitivity=s))
    assert float(full.scale) == pytest.approx(float(binary.scale))
    # The variance oracle: W >= T is the binary tree's; below T a release sums at most k_W nodes
    # (popcount(j) + popcount(B - j) = 1 + the carries of j + (B - j) = B).
    t = np.arange(1, T + 1)
    tree_p = mechanisms.TreeParams(epsilon=eps, sensitivity=s)
    np.testing.assert_allclose(
        mechanisms.release_variance(window_tree(T, 2, T), WindowTreeParams(eps, sensitivity=s), t),
        mechanisms.release_variance(mechanisms.binary_tree(T, 2), tree_p, t),
        rtol=1e-12,
    )
    counts = np.array([len(window_nodes(int(u), 8, T)[1]) for u in t])
    rep_var = mechanisms.release_variance(
        window_tree(T, 2, 8, neighbouring="replace"), WindowTreeParams(eps, sensitivity=s), t
    )
    np.testing.assert_allclose(rep_var, counts * 3 * (k * 2 * s / eps) ** 2, rtol=1e-12)
    assert counts.max() == k
    replace = window_tree(T, 2, 8, neighbouring="replace")
    assert mechanisms.calibrated_sensitivity(replace, WindowTreeParams(jnp.inf)) == 2.0
    inf = mechanisms.release_variance(window_tree(T, 2, 8), WindowTreeParams(jnp.inf), t)
    assert np.all(inf == 0.0)
    # The composition calibration's oracle is the σ init computes (float32, rounded up).
    gauss = window_tree(T, 2, 8, "gaussian", calibration="composition")
    p = WindowTreeParams(eps, delta, s)
    scale = float(gauss.init(jax.random.key(0), p).scale)
    np.testing.assert_allclose(mechanisms.release_variance(gauss, p, t), counts * scale**2, rtol=1e-6)


def test_inputs_are_clipped_to_the_sensitivity():
    tree = window_tree(4, 2, 2)
    xs = np.array([[30.0, 40.0], [0.3, 0.4], [0.0, 0.0], [-6.0, 8.0]], np.float32)
    out = np.asarray(mechanisms.prefix_sums(tree, WindowTreeParams(jnp.inf, sensitivity=2.0), xs, 0))
    clipped = np.array([[1.2, 1.6], [0.3, 0.4], [0.0, 0.0], [-1.2, 1.6]])
    np.testing.assert_allclose(out, np.cumsum(clipped, 0), rtol=1e-6, atol=1e-6)


# --- guard rails -----------------------------------------------------------------------------------


def test_horizon_is_declared_and_a_step_past_it_is_nan():
    tree = window_tree(8, 2, 4)
    assert tree.horizon == 8
    with pytest.raises(ValueError, match="horizon") as e:
        mechanisms.prefix_sums(tree, WindowTreeParams(1.0), np.ones((20, 2), np.float32), 0)
    assert {20, 8} <= {int(v) for v in re.findall(r"\d+", str(e.value))}
    state = tree.init(jax.random.key(0), WindowTreeParams(1.0))
    step = jax.jit(tree.step)
    for t in range(1, 9):
        state, release, _ = step(jax.random.key(t), state, jnp.ones(2), jnp.int32(t))
        assert np.all(np.isfinite(np.asarray(release)))
    _, release, _ = step(jax.random.key(9), state, jnp.ones(2), jnp.int32(9))
    assert np.all(np.isnan(np.asarray(release)))


@pytest.mark.parametrize("noise", ["gamma", "gaussian"])
def test_nonfinite_input_is_zeroed_and_counted(noise):
    T, d = 16, 2
    tree = window_tree(T, d, 4, noise)
    params = _params(noise, 1.0, 1e-3, 1.0)
    xs = np.asarray(jax.random.normal(jax.random.key(1), (T, d)), np.float32) * 0.3
    bad = xs.copy()
    bad[3, 0], bad[9, 1] = np.nan, np.inf
    zeroed = xs.copy()
    zeroed[3], zeroed[9] = 0.0, 0.0
    key = jax.random.key(4)
    out_bad, state, counted = _run_by_hand(tree, params, jnp.asarray(bad), key)
    out_zero, _, none = _run_by_hand(tree, params, jnp.asarray(zeroed), key)
    np.testing.assert_array_equal(out_bad, out_zero)
    assert (counted, none) == (2, 0) and "nonfinite" not in type(state)._fields


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"window": 0}, "window"),
        ({"window": 3}, "window"),
        ({"window": 2.0}, "window"),
        ({"noise": "laplace"}, "noise"),
        ({"calibration": "rdp"}, "calibration"),
        ({"horizon": 0}, "horizon"),
    ],
)
def test_bad_static_arguments_raise(kwargs, name):
    args = {"horizon": 16, "dim": 2, "window": 4} | kwargs
    with pytest.raises(ValueError, match=name):
        window_tree(**args)


def test_window_rounding_and_bad_params():
    rounded = window_tree(16, 2, 3, round_window=True)  # W = 3 rounded up to 4: the same nodes, the same k_W
    xs = np.ones((16, 2), np.float32)
    out = mechanisms.prefix_sums(rounded, WindowTreeParams(1.0), xs, 0)
    np.testing.assert_array_equal(
        np.asarray(out), np.asarray(mechanisms.prefix_sums(window_tree(16, 2, 4), WindowTreeParams(1.0), xs, 0))
    )
    gauss = window_tree(16, 1, 4, "gaussian")
    for params, name in [
        (WindowTreeParams(epsilon=0.0, delta=1e-5), "epsilon must be"),
        (WindowTreeParams(epsilon=1.0, delta=1.0), "delta must be"),
        (WindowTreeParams(epsilon=1.0, delta=0.0), "delta must be"),
        (WindowTreeParams(epsilon=1.0, delta=float("nan")), "delta must be"),
        (WindowTreeParams(epsilon=1.0, delta="1e-5"), "delta must be a number"),
        (WindowTreeParams(epsilon=1e-31, delta=1e-5), "epsilon must be >= 1e-30"),
        (WindowTreeParams(epsilon=1.0, delta=1e-5, sensitivity=-1.0), "sensitivity"),
    ]:
        with pytest.raises(ValueError, match=name):
            mechanisms.prefix_sums(gauss, params, np.ones((4, 1), np.float32), 0)


# --- the budget a family needs (never "no privacy" by default) --------------------------------------


@pytest.mark.parametrize(
    ("noise", "params", "message"),
    [
        ("gamma", WindowTreeParams(), r"needs epsilon .*got no budget"),
        (
            "gamma",
            WindowTreeParams(1.0, 1e-5),
            r"window ε-DP and needs epsilon \(and no delta\); got epsilon=.*, delta=",
        ),
        ("gaussian", WindowTreeParams(), r"window \(ε, δ\)-DP and needs epsilon and delta; got no budget"),
        ("gaussian", WindowTreeParams(1.0), r"needs epsilon and delta; got epsilon=[^,]*\. Give"),
        ("gaussian", WindowTreeParams(delta=1e-5), r"needs epsilon and delta; got delta=[^,]*\. Give"),
    ],
)
def test_a_missing_or_foreign_budget_is_refused_in_check_and_in_init(noise, params, message):
    tree = window_tree(16, 1, 4, noise)
    with pytest.raises(ValueError, match=message):
        tree.check(params)
    with pytest.raises(ValueError, match=message):  # None is structure: refused under jit too
        jax.jit(tree.init)(jax.random.key(0), params)
    with pytest.raises(ValueError, match=message):
        mechanisms.prefix_sums(tree, params, np.ones((16, 1), np.float32), 0)


def test_explicit_infinite_epsilon_is_the_non_private_limit_for_both_families():
    xs = np.ones((8, 1), np.float32)
    for noise, params in [("gamma", WindowTreeParams(jnp.inf)), ("gaussian", WindowTreeParams(jnp.inf, 1e-5))]:
        for calibration in ("paper", "composition"):
            tree = window_tree(8, 1, 4, noise, calibration=calibration)
            np.testing.assert_array_equal(
                np.asarray(mechanisms.prefix_sums(tree, params, xs, 0))[:, 0], np.arange(1, 9)
            )


def test_paper_calibration_is_refused_beyond_the_epsilon_where_it_is_dp():
    """Lemma 3's σ makes the tree μ-GDP with μ growing like ε: above ε_max its true δ exceeds the claim."""
    T, W, delta = 16, 4, 1e-5
    k = mechanisms.window_depth(W, T)
    eps_max = mechanisms.paper_calibration_max_epsilon(delta, k)
    assert 6000 < eps_max < 7000  # k_W = 3
    below, above = 0.999 * eps_max, 1.01 * eps_max
    assert mechanisms.window_gaussian_delta(below, delta, k, "paper") <= delta
    assert mechanisms.window_gaussian_delta(above, delta, k, "paper") > delta  # the refusal is needed
    paper = window_tree(T, 1, W, "gaussian")
    paper.check(WindowTreeParams(below, delta))
    with pytest.raises(ValueError, match=r"calibration='paper'.*not \(ε, δ\)-DP.*calibration='composition'"):
        paper.check(WindowTreeParams(above, delta))
    with pytest.raises(ValueError, match="calibration='paper'"):  # one bad entry of a grid
        paper.check(WindowTreeParams(np.array([1.0, above]), delta))
    window_tree(T, 1, W, "gaussian", calibration="composition").check(WindowTreeParams(above, delta))


@pytest.mark.parametrize("neighbouring", ["add_remove", "replace"])
def test_composition_calibration_of_the_tree_meets_the_claim_on_a_traced_privacy_grid(neighbouring):
    """init under jit + vmap (one compile): the true δ of the node σ, for sensitivity sqrt(k_W)·s, is in [δ/2, δ]."""
    T, W, s = 64, 8, 0.7
    tree = window_tree(T, 2, W, "gaussian", neighbouring, "composition")
    k = mechanisms.window_depth(W, T)
    factor = 2.0 if neighbouring == "replace" else 1.0
    eps, delta = np.meshgrid(np.geomspace(0.01, 100.0, 13), np.array([1e-3, 1e-5, 1e-8]))
    params = WindowTreeParams(jnp.asarray(eps.ravel()), jnp.asarray(delta.ravel()), jnp.float32(s))
    init = jax.jit(jax.vmap(tree.init, in_axes=(None, WindowTreeParams(0, 0, None))))
    scale = np.asarray(init(jax.random.key(0), params).scale, np.float64)
    true = gaussian_delta(scale, np.sqrt(k) * factor * s, eps.ravel())
    assert np.all(true <= delta.ravel()), (true / delta.ravel()).max()
    assert np.all(true >= 0.5 * delta.ravel()), (true / delta.ravel()).min()
    # The release noise variance the oracle declares is that σ's.
    oracle = mechanisms.release_variance(tree, WindowTreeParams(1.0, 1e-5, s), np.array([1]))
    one = float(tree.init(jax.random.key(0), WindowTreeParams(1.0, 1e-5, s)).scale) ** 2
    np.testing.assert_allclose(oracle, [one], rtol=1e-6)
