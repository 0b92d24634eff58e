"""What a step costs, read off the compiled program (issue 36): no branch over tree levels, in-place updates.

Every learner of the study-file registry is compiled (not run) with ``jaxpriv.testing.step_cost``:
at most one conditional in the whole sweep (the engine's comparator at the checkpoints, for an
environment whose comparator runs a solver), and the tree-based learners' bytes per seed-step stay
far below a pass over their tree arrays per step.
"""

import jax
import numpy as np
import pytest

import jaxpriv as jp
from jaxpriv import envs, oco, sets
from jaxpriv.experiments import registry
from jaxpriv.sim import SimParams, _scan
from jaxpriv.testing import StepCost, learner_examples, step_cost

EXAMPLES = learner_examples(64, 10)

#: Learners whose step still runs a loop: the experts' simplex projection, GOPE's design and
#: elimination, OFUL's switch test, AdaP-KLUCB's KL index (bisection), the reconstructions (below).
#: (The window learners' suffix loop is gone: test_the_window_tree_step_has_no_nested_loop.) private_linucb's
#: step has none: its one loop is the contextual environment's draw (``jax.random.normal``'s rolled Threefry hash).
NESTED_LOOPS = {
    "private_experts",
    "gope",
    "adac_gope",
    "adac_gope_var",
    "rs_oful",
    "adac_oful",
    "adap_klucb",
    "private_linucb",
    # the reconstructions: GOPE's design and elimination (and the small-support pruning), LinPriv's per-step
    # eigvalsh and Cholesky solve, PQFTL's per-step eigh, and DNPR's Laplace draw of p coordinates per node
    # (jax.random's rolled Threefry hash, as the contextual environment's draw)
    "hanna_gope",
    "li_zhou_ji_gope",
    "linpriv",
    "pqftl",
    "dnpr_experts",
}

_BRANCH_FREE: dict[str, StepCost] = {}


def branch_free_cost(name: str) -> StepCost:
    """The learner's example compiled once (not run) in the branch-free checkpoint form, for every test that reads it.

    On an accelerator a small batch runs the exact comparators (quadratic, experts) branch-free, so a sweep there has
    no conditional at all, and any conditional left is the learner's own step (or a solver comparator's). The
    learner's step is the same program in every checkpoint form.
    """
    if name not in _BRANCH_FREE:
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(_scan, "_checkpoint_form", lambda batch, **_: "branch_free")  # where the step reads it
            _BRANCH_FREE[name] = step_cost(*EXAMPLES[name], horizon=64, seeds=8, with_bytes=False)
    return _BRANCH_FREE[name]


def test_every_registered_learner_has_an_example():
    assert set(registry.LEARNERS) <= set(EXAMPLES)


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_no_learner_branches_in_its_step(name):
    # One compile per learner, in the form with the fewest conditionals (branch_free_cost): none here means at most
    # the engine's one on a CPU (checked for a solver comparator by test_a_solver_comparator_is_..., for the row
    # under the conditional by test_a_large_batch_...).
    cost = branch_free_cost(name)
    assert cost.loops == 0 or name in NESTED_LOOPS, cost
    # an example environment with a solver comparator (not ``exact``: pqftl's regression_stream, bisection with a
    # certified gap), like the classification stream's, stays under the checkpoint conditional
    env = EXAMPLES[name][1]
    solver = env.comparator is not None and not env.exact  # a bandit has no comparator: its regret is per step
    assert cost.conditionals == (1 if solver else 0), cost


@pytest.mark.parametrize("name", ["ogd", "adac_ucb", "private_experts"])
def test_a_large_batch_on_an_accelerator_has_the_one_conditional(name, monkeypatch):
    # From BRANCH_FREE_MAX_BATCH on, the whole checkpoint row is under the step's one conditional, with or
    # without a comparator (the quadratic stream's, none for a bandit, the experts'); the learner adds none.
    monkeypatch.setattr(_scan, "_checkpoint_form", lambda batch, **_: "row_under_cond")
    cost = step_cost(*EXAMPLES[name], horizon=64, seeds=8, with_bytes=False)
    assert cost.conditionals == 1 and cost.body_conditionals == 1, cost


def test_a_solver_comparator_is_the_one_conditional_and_runs_at_checkpoints_only():
    ball = sets.l2_ball(3)
    env = envs.classification_stream(ball, 64)
    params = SimParams(oco.PFTALParams(epsilon=1.0, lipschitz=2.0), envs.ClassificationParams(np.ones(3, np.float32)))
    cost = step_cost(oco.pftal(64, ball), env, params, horizon=64, seeds=8, with_bytes=False)
    assert cost.conditionals == 1 and cost.body_conditionals == 1, cost
    assert _scan._checkpoint_form(8) == "comparator_under_cond"  # the CPU: exact comparators are under it too


def test_an_accelerator_computes_the_checkpoint_row_branch_free_only_for_small_batches(monkeypatch):
    # The rule: a conditional's fixed cost per step against the per-step row's cost per seed-step.
    assert _scan._checkpoint_form(1, "gpu") == _scan._checkpoint_form(10**4, "gpu") == "branch_free"
    assert _scan._checkpoint_form(_scan.BRANCH_FREE_MAX_BATCH, "gpu") == "row_under_cond"
    assert _scan._checkpoint_form(10**6, "tpu") == "row_under_cond"
    assert _scan._checkpoint_form(1, "cpu") == _scan._checkpoint_form(10**6, "cpu") == "comparator_under_cond"
    # The CPU without a comparator (a bandit): the row is the only work at a checkpoint, under the conditional.
    assert _scan._checkpoint_form(1, "cpu", comparator=False) == "row_under_cond"
    assert _scan._checkpoint_form(10**4, "gpu", comparator=False) == "branch_free"
    # The engine tells the step the batch it compiles: seeds x grid points of one call (here a chunk).
    seen = []
    monkeypatch.setattr(_scan, "_checkpoint_form", lambda batch, **_: seen.append(batch) or "comparator_under_cond")
    learner, env, params = learner_examples(16, 3)["ogd"]
    grid = params._replace(learner=params.learner._replace(strong_convexity=np.array([0.5, 1.0], np.float32)))
    jp.sweep(learner, env, grid, jax.random.key(0), 16, seeds=6, chunk=3)
    assert seen and set(seen) == {2 * 3}, seen
    seen.clear()  # the segmented driver alike
    jp.sweep(learner, env, grid, jax.random.key(0), 16, seeds=6, chunk=3, segment=8)
    assert seen and set(seen) == {2 * 3}, seen


def test_the_tree_step_touches_rows_not_arrays():
    # Before (a switch over levels, one-row updates that XLA emitted as whole-array rewrites): PFTAL's
    # bytes per seed-step grew with the tree's depth (6.2 KB at T = 64, 8.2 KB at T = 1024, d = 10).
    # Now a step reads three rows and writes two of each tree: the same bytes at any depth. (5.9 KB at 8
    # seeds before the quadratic stream's loss and regret became one reduction; 5.0-5.1 KB after; 4.2-4.3 KB since
    # the normal draws are computed once and the loss and regret are one variadic reduction, issue 47; 3.8-3.9 KB
    # since FTAL's leader point is written once, read by the projection's kernels; 3.56-3.61 KB since the input
    # guard's finiteness test and norms, the clip's two norms and the projection's two reductions are one each;
    # 3.47-3.52 KB since the engine's Kahan sums need no copy of the old total; 3.39-3.44 KB and no copy in the
    # body since the engine compiles with XLA:CPU's copy insertion by regions.)
    costs = [step_cost(*learner_examples(h, 10)["pftal"], horizon=h, seeds=8) for h in (64, 4096)]
    for cost in costs:
        assert cost.conditionals == 1 and cost.loops == 0  # the comparator's, at the checkpoints
        assert cost.copies == 0, cost
        assert cost.bytes_per_seed_step < 3500, cost
    assert abs(costs[1].bytes_per_seed_step - costs[0].bytes_per_seed_step) < 250, costs


@pytest.mark.parametrize("name", ["wdp_cocop", "wdp_cocol"])
def test_the_window_tree_step_has_no_nested_loop(name):
    # Before: the window tree drew the suffix's new nodes (up to log2 W of them at a step) in a fori_loop
    # with a data-dependent trip count, a nested while loop in every step (W = 16, d = 10: 1 loop, 8 copies,
    # 12.6 KB per seed-step). Now one suffix node is drawn ahead at every step, in one batch with the
    # prefix node, and the rows are updated in place: no loop, no branch of the learner's. (The compile that
    # test_no_learner_branches_in_its_step reads: the exact comparator is branch-free there, so no conditional at all.)
    cost = branch_free_cost(name)
    assert cost.loops == 0 and cost.conditionals == 0, cost


@pytest.mark.parametrize("name", ["ogd", "adac_ucb", "solver"])
def test_the_three_checkpoint_forms_give_the_same_numbers(name, monkeypatch):
    # An exact comparator (OGD's quadratic stream), none (a bandit), a solver (the classification stream):
    # the checkpoint rows do not depend on where the row is computed and written.
    if name == "solver":
        ball = sets.l2_ball(3)
        env = envs.classification_stream(ball, 32)
        params = SimParams(oco.OGDParams(1.0, 2.0), envs.ClassificationParams(np.ones(3, np.float32)))
        learner = oco.ogd(ball)
    else:
        learner, env, params = learner_examples(32, 3)[name]
    results = []
    for form in ("comparator_under_cond", "row_under_cond", "branch_free"):
        monkeypatch.setattr(_scan, "_checkpoint_form", lambda batch, form=form, **_: form)
        r = jp.sweep(learner, env, params, jax.random.key(3), 32, seeds=4, checkpoints=[1, 5, 17, 32])
        results.append(r)  # and through the segmented driver: checkpoints inside and at the ends of segments
        results.append(jp.sweep(learner, env, params, jax.random.key(3), 32, 4, [1, 5, 16, 32], chunk=2, segment=16))
    for i, r in enumerate(results[2:], 2):
        for field in ("regret", "loss", "best", "gap"):
            a, b = getattr(results[i % 2], field), getattr(r, field)
            assert (a is None and b is None) or np.array_equal(np.asarray(a), np.asarray(b)), (name, field)
