"""The samplers' δ floor as a contract (issue 35): every tree component refuses, in its ``check`` and before
compiling, a finite budget whose floor exceeds ``SAMPLER_DELTA_MAX``; it accepts the others and every infinite
budget; studies (the shipped demo among them) record the floor per learner and grid point in ``settings.json``."""

import json
import re
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxpriv as jp
from jaxpriv import bandits, envs, oco, sets, sim
from jaxpriv import mechanisms as M
from jaxpriv.experiments import study
from jaxpriv.mechanisms import _accounting

ROOT = Path(__file__).resolve().parents[2]
T = 2**10  # D = 11
D = M.tree_depth(T)
BALL = sets.l2_ball(3)
SIMPLEX = sets.simplex(3)
BUDGETS = np.array([0.1, 1.0, 5.0, 10.0, 30.0, 100.0, 300.0, np.inf])


def _refused(floors: np.ndarray, budgets: np.ndarray) -> np.ndarray:
    return np.isfinite(budgets) & (floors > M.SAMPLER_DELTA_MAX)


def test_the_stated_delta_is_exported_and_documented():
    assert M.SAMPLER_DELTA_MAX == 1e-5
    assert M.sampler_delta_floor is _accounting.sampler_delta_floor
    assert M.SAMPLER_SUPPORT is _accounting.SAMPLER_SUPPORT
    for page in ("docs/algorithms/mechanisms.md", "docs/guide/sharp_edges.md"):
        text = (ROOT / page).read_text()
        assert "SAMPLER_DELTA_MAX" in text and "1e-5" in text, page


# --- the mechanisms --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("factory", [M.binary_tree, M.honaker_tree])
@pytest.mark.parametrize("noise", ["gamma", "laplace", "gaussian"])
def test_a_tree_refuses_exactly_the_budgets_whose_floor_exceeds_the_stated_delta(factory, noise):
    dim = 3
    tree = factory(T, dim, noise)
    floor = M.sampler_floor_of(tree)
    assert floor == M.SamplerFloor(factory.__name__, noise, D, dim)
    name = M.budget_field(noise)
    expected = M.sampler_delta_floor(noise, BUDGETS, D, dim)
    refused = _refused(expected, BUDGETS)
    assert refused.any() and (~refused).sum() >= 4  # both sides of the stated δ are exercised
    np.testing.assert_array_equal(M.component_delta_floor(tree, M.TreeParams(**{name: BUDGETS})), expected)
    for b, f, bad in zip(BUDGETS, expected, refused, strict=True):
        params = M.TreeParams(**{name: b})
        if not bad:
            tree.check(params)
            continue
        with pytest.raises(ValueError) as err:
            tree.check(params)
        msg = str(err.value)
        assert msg.startswith(f"{factory.__name__}: {name}={b:g} is refused"), msg
        assert f"δ floor of {f:.3g}" in msg and "SAMPLER_DELTA_MAX = 1e-05" in msg, msg
        largest = float(re.search(rf"largest {name} accepted here is about ([0-9.e+-]+)", msg).group(1))
        assert M.sampler_delta_floor(noise, largest * 0.999, D, dim) <= M.SAMPLER_DELTA_MAX
        assert M.sampler_delta_floor(noise, largest * 1.01, D, dim) > M.SAMPLER_DELTA_MAX


def test_every_grid_value_is_checked_and_the_message_names_the_grid_point():
    tree = M.binary_tree(T, 3, "gaussian")
    tree.check(M.TreeParams(rho=jnp.array([0.1, 1.0, 10.0, jnp.inf])))
    with pytest.raises(ValueError, match=r"binary_tree: rho=30 \(grid point 2\) is refused"):
        tree.check(M.TreeParams(rho=jnp.array([0.1, 1.0, 30.0, 100.0, jnp.inf])))


def test_infinite_budgets_are_never_refused_though_their_floor_is_one():
    for noise in ("gamma", "laplace", "gaussian"):
        tree = M.binary_tree(T, 3, noise)
        params = M.TreeParams(**{M.budget_field(noise): np.inf})
        tree.check(params)
        assert float(M.component_delta_floor(tree, params)) == 1.0  # no noise: no guarantee at all


def test_a_gamma_tree_of_very_high_dimension_is_refused_at_every_budget_and_says_so():
    # The Gamma-norm bound's directional term, d(1 - Z_N)/P(A) per node, does not shrink with the budget.
    tree = M.binary_tree(2**14, 3000, "gamma")
    with pytest.raises(ValueError, match="No epsilon keeps it below"):
        tree.check(M.TreeParams(epsilon=1.0))
    M.binary_tree(2**14, 3000, "laplace").check(M.TreeParams(epsilon=1.0))


def test_the_factorizations_and_the_bare_window_tree_declare_no_floor():
    for mech in (M.sqrt_factorization(64, 3), M.blt(64, 3), M.window_tree(64, 3, 4)):
        assert M.sampler_floor_of(mech) is None
    M.sqrt_factorization(64, 3).check(M.TreeParams(rho=1e3))  # not covered: not refused
    assert M.sampler_floor_of(oco.pftal(64, BALL, mechanism=M.blt(64, 3, neighbouring="replace"))) is None


def test_a_traced_budget_is_not_checked():
    tree = M.binary_tree(T, 3, "gamma")

    @jax.jit
    def traced(eps):
        tree.check(M.TreeParams(epsilon=eps))
        return eps

    assert float(traced(jnp.float32(1e3))) == 1e3


# --- the learners ----------------------------------------------------------------------------------------------


def _learners():
    """(component name, learner, params at budget b, the floor's tree) for every learner on a tree of the samplers."""
    window = M.window_depth(4, T)
    return [
        ("pftal", oco.pftal(T, BALL), lambda b: oco.PFTALParams(b, lipschitz=2.0), ("gamma", D, 3)),
        ("pftal", oco.pftal(T, BALL, "laplace"), lambda b: oco.PFTALParams(b, lipschitz=2.0), ("laplace", D, 3)),
        (
            "pftal",
            oco.pftal(T, BALL, mechanism=M.honaker_tree(T, 3, "gaussian", "replace")),
            lambda b: oco.PFTALParams(rho=b, lipschitz=2.0),
            ("gaussian", D, 3),
        ),
        ("regularized_pftal", oco.regularized_pftal(T, BALL), lambda b: oco.RegularizedPFTALParams(b), ("gamma", D, 3)),
        ("private_experts", oco.private_experts(T, 4), lambda b: oco.PrivateExpertsParams(b), ("gamma", D, 4)),
        (
            "private_bandit_ftal",
            oco.private_bandit_ftal(T, BALL, "gaussian"),
            lambda b: oco.PrivateBanditFTALParams(rho=b),
            ("gaussian", D, 3),
        ),
        ("dp_ftrl", oco.dp_ftrl(T, BALL), lambda b: oco.DPFTRLParams(b, lipschitz=2.0), ("gamma", D, 3)),
        ("dp_ucb", bandits.dp_ucb(3, T), lambda b: bandits.DPUCBParams(b), ("laplace", D, 1)),
        ("wdp_cocop", oco.wdp_cocop(T, SIMPLEX, 4), lambda b: oco.WDPParams(b), ("gamma", window, 3)),
        ("wdp_cocol", oco.wdp_cocol(T, SIMPLEX, 4), lambda b: oco.WDPParams(b), ("gamma", window, 3)),
    ]


@pytest.mark.parametrize("index", range(10))
def test_each_learner_refuses_in_its_check_exactly_where_its_trees_floor_exceeds_the_stated_delta(index):
    component, learner, make, (noise, depth, dim) = _learners()[index]
    expected = M.sampler_delta_floor(noise, BUDGETS, depth, dim)
    np.testing.assert_array_equal(M.component_delta_floor(learner, make(BUDGETS)), expected)
    refused = _refused(expected, BUDGETS)
    assert refused.any() and (~refused).sum() >= 3
    for b, bad in zip(BUDGETS, refused, strict=True):
        if bad:
            with pytest.raises(ValueError, match=rf"^{component}: \w+={b:g} is refused.*SAMPLER_DELTA_MAX = 1e-05"):
                learner.check(make(b))
        else:
            learner.check(make(b))
    with pytest.raises(ValueError, match=r"\(grid point 1\) is refused"):  # a grid: every value is checked
        learner.check(make(BUDGETS[refused][:1].repeat(2) * np.array([0.001, 1.0])))


@pytest.mark.parametrize("make", [oco.wdp_cocop, oco.wdp_cocol])
@pytest.mark.parametrize("calibration", ["paper", "composition"])
def test_the_gaussian_window_learners_floor_is_their_node_shift_s_over_sigma(make, calibration):
    learner = make(T, SIMPLEX, 4, "gaussian", calibration=calibration)
    k = M.window_depth(4, T)
    eps = np.array([1.0, 10.0, 30.0, 100.0, np.inf])
    params = oco.WDPParams(eps, 1e-5)
    sigma = np.asarray(M.window_node_scale("gaussian", eps[:-1], 1e-5, 1.0, k, calibration), np.float64)
    rho = k / (2.0 * sigma**2)  # a node's unit-scale shift sqrt(2ρ/k) is s/σ
    got = M.component_delta_floor(learner, params)
    np.testing.assert_allclose(got[:-1], M.sampler_delta_floor("gaussian", rho, k, 3), rtol=1e-3)
    assert got[-1] == 1.0
    refused = _refused(got, eps)
    if calibration == "composition":
        assert refused.tolist() == [False, False, True, True, False]
    for e, bad in zip(eps, refused, strict=True):
        if bad:
            with pytest.raises(ValueError, match=r"window \(ε, δ\)-DP.*largest epsilon accepted here at delta=1e-05"):
                learner.check(oco.WDPParams(e, 1e-5))
        else:
            learner.check(oco.WDPParams(e, 1e-5))


def test_a_sweep_refuses_before_compiling():
    env = envs.quadratic_stream(BALL)
    params = jp.SimParams(oco.PFTALParams(jnp.array([1.0, 300.0]), lipschitz=2.0), envs.QuadraticParams())
    before = sim.compile_count()
    with pytest.raises(ValueError, match=r"pftal: epsilon=300 \(grid point 1\) is refused"):
        jp.sweep(oco.pftal(T, BALL), env, params, 0, T, seeds=2)
    assert sim.compile_count() == before


@pytest.mark.parametrize("noise", ["gamma", "laplace", "gaussian"])
@pytest.mark.parametrize("dim", [1, 3, 10, 100])
def test_the_demos_budgets_are_accepted_for_every_family(noise, dim):
    # ε ∈ {0.1, 1, 10, ∞} (ρ for the Gaussian) at the demo's T = 2^14, d = 1..100.
    learner = oco.pftal(2**14, sets.l2_ball(dim), noise)
    name = M.budget_field(noise)
    learner.check(oco.PFTALParams(**{name: jnp.array([0.1, 1.0, 10.0, jnp.inf])}, lipschitz=2.0))


# --- settings.json ---------------------------------------------------------------------------------------------

STUDY = """
name = "floors"
horizon = 64
seeds = 4
chunk = 4
checkpoints = [32]
{extra}
[set]
kind = "l2_ball"
dim = 2

[env]
name = "quadratic_stream"
[env.params]
center = [0.3, 0.3]
"""

SINGLE = """
[learner]
name = "pftal"
noise = "laplace"
[learner.params]
epsilon = [1.0, 40.0, inf]
lipschitz = [0.5, 2.0]
"""

COMPARE = """
reference = "FTAL"
[grid]
rho = [0.5, 5.0]

[[learners]]
name = "pftal"
label = "tree"
mechanism = { name = "binary_tree", noise = "gaussian" }
[learners.params]
lipschitz = 2.0

[[learners]]
name = "pftal"
label = "BLT"
mechanism = "blt"
[learners.params]
lipschitz = 2.0

[[learners]]
name = "ftal"
label = "FTAL"
"""


def _support():
    return {k: [lo, hi] for k, (lo, hi) in M.SAMPLER_SUPPORT.items()}


def test_a_studys_settings_record_the_floor_per_grid_point(tmp_path):
    path = tmp_path / "floors.toml"
    path.write_text(STUDY.format(extra=SINGLE))
    res = study.run_study(path, tmp_path / "out", progress=False)
    settings = json.loads(res.files["json"].read_text())
    assert settings["sampler_delta_max"] == 1e-5 and settings["sampler_support"] == _support()
    floor = settings["sampler_delta_floor"]
    depth = M.tree_depth(64)
    assert {k: v for k, v in floor.items() if k != "floor"} == {
        "mechanism": "binary_tree",
        "noise": "laplace",
        "nodes_per_input": depth,
        "dim": 2,
    }
    eps = np.repeat([1.0, 40.0, np.inf], 2)  # the product grid, epsilon first
    np.testing.assert_array_equal(floor["floor"], M.sampler_delta_floor("laplace", eps, depth, 2))
    assert floor["floor"][-1] == 1.0


def test_a_comparisons_settings_give_null_where_no_tree_of_the_samplers_is_involved(tmp_path):
    path = tmp_path / "compare.toml"
    path.write_text(STUDY.format(extra=COMPARE))
    res = study.run_study(path, tmp_path / "out", progress=False)
    settings = json.loads(res.files["json"].read_text())
    tree, blt, ftal = settings["sampler_delta_floor"]
    np.testing.assert_array_equal(tree["floor"], M.sampler_delta_floor("gaussian", [0.5, 5.0], M.tree_depth(64), 2))
    assert blt is None and ftal is None
    assert [entry["sampler_delta_floor"] for entry in settings["learners"]] == [tree, None, None]


def test_a_study_file_with_a_refused_budget_is_refused_when_read(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text(STUDY.format(extra=SINGLE.replace("40.0", "400.0")))
    before = sim.compile_count()
    with pytest.raises(ValueError, match=r"\[learner\.params\].*epsilon=400 \(grid point 2\) is refused"):
        study.load_study(path)
    assert sim.compile_count() == before


def _demo(epsilons):
    """An ``edit`` of the shipped ``demo`` study: T = 64, 2 seeds, d = 2, PFTAL's grid ``epsilons``."""

    def edit(raw: dict) -> dict:
        raw["set"] = raw["set"] | {"dim": 2}
        raw["env"]["params"] = raw["env"]["params"] | {"center": [0.3, 0.3]}
        return raw | {"horizon": 64, "seeds": 2, "grid": {"epsilon": list(epsilons)}}

    return edit


def test_the_demos_settings_record_the_floor_per_budget(tmp_path, capsys):
    eps = (1.0, 10.0, np.inf)
    res = study.run_study("demo", tmp_path / "demo", progress=False, edit=_demo(eps))
    settings = json.loads((tmp_path / "demo" / "settings.json").read_text())
    floors = dict(zip(settings["learner"], settings["sampler_delta_floor"], strict=True))
    assert set(floors) == {"PFTAL", "FTAL", "OGD (eta=1/(Ht))"} == set(res.study.labels)
    assert floors["FTAL"] is None and floors["OGD (eta=1/(Ht))"] is None
    assert [e["sampler_delta_floor"] for e in settings["learners"]] == settings["sampler_delta_floor"]
    expected = M.sampler_delta_floor("gamma", np.float32(eps), M.tree_depth(64), 2)
    np.testing.assert_array_equal(floors["PFTAL"]["floor"], expected)
    assert floors["PFTAL"]["noise"] == "gamma" and floors["PFTAL"]["dim"] == 2
    assert settings["sampler_delta_max"] == 1e-5 and settings["sampler_support"] == _support()
    before = sim.compile_count()
    with pytest.raises(ValueError, match=r"pftal: epsilon=1000 \(grid point 1\) is refused"):
        study.run_study("demo", tmp_path / "refused", progress=False, edit=_demo((1.0, 1000.0)))
    assert sim.compile_count() == before and not (tmp_path / "refused").exists()
    capsys.readouterr()


def test_a_gaussian_window_learners_floor_is_refused_above_its_own_delta():
    """Issue 45: the window trees compared their floor to SAMPLER_DELTA_MAX (1e-5) only; at δ = 1e-8, ε = 5
    (floor 1.2e-8) and ε = 10 (1.4e-7) were accepted although the samplers alone break the claimed δ."""
    learner = oco.wdp_cocol(64, sets.simplex(3), 4, "gaussian", calibration="composition")
    learner.check(oco.WDPParams(3.0, 1e-8))  # floor 3.6e-9: accepted
    for eps in (5.0, 10.0):
        with pytest.raises(ValueError, match=r"above the claimed delta=1e-08"):
            learner.check(oco.WDPParams(eps, 1e-8))
    learner.check(oco.WDPParams(10.0, 1e-5))  # floor 1.4e-7 <= δ = 1e-5: accepted
