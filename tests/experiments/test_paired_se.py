"""Honest error bars (issue 27, part 4): a gap between two arms run on shared seeds carries the paired standard error.

The linear-bandit reproduction (AdaC-GOPE − GOPE) once reported error bars of ±13,000 around gaps of tens:
its standard error was computed as if the arms were independent, so it measured the spread of the regret
(which varies a lot from instance to instance) instead of the spread of the gap (which the shared instance,
actions and noise largely cancel).
"""

import json

import numpy as np
import pytest

from jaxpriv.experiments import zcdp_bandits_linear as linear
from jaxpriv.experiments import zcdp_fidelity


@pytest.fixture(scope="module")
def small_linear(tmp_path_factory):
    """The real linear setting (fresh instance per run, shared seed keys), tiny: 12 runs to T = 4000."""
    out = tmp_path_factory.mktemp("linear")
    cfg = linear.SettingConfig("linear", rhos=(0.1, 1000.0), horizons=(1000, 4000), pop_rhos=(0.1,),
                               pop_horizon=4000, seeds=12)  # fmt: skip
    return linear.run_setting("linear", out, config=cfg), out


def test_linear_gap_se_is_the_se_of_the_per_run_gaps(small_linear):
    res, out = small_linear
    runs = res.config.seeds
    steps = res.steps.tolist()
    for i, horizon in enumerate(res.config.horizons):
        j = steps.index(horizon)
        priv, base = res.curves_private[:, :, j], res.curves_nonprivate[:, j]  # [G, S], [S], the same seeds
        diff = priv - base[None]
        paired = np.sqrt(((diff - diff.mean(1, keepdims=True)) ** 2).sum(1) / (runs - 1) / runs)
        unpaired = np.sqrt(priv.var(1, ddof=1) / runs + base.var(ddof=1) / runs)
        np.testing.assert_allclose(res.gap[i], diff.mean(1), rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(res.gap_stderr[i], paired, rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(res.gap_runs[i], diff, rtol=1e-12)  # what the figure draws its bands from
        # The regret's spread across instances is far larger than the gap's: the unpaired SE is that of the regret.
        assert np.all(res.gap_stderr[i] < unpaired / 3), (res.gap_stderr[i], unpaired)
        # At ρ = 1000 AdaC-GOPE plays GOPE's phases with negligible noise: the per-run gaps vanish and so does
        # their standard error, while the unpaired one stays at the regret's scale.
        assert res.gap_stderr[i, 1] <= 1e-3 * unpaired[1]
    saved = json.loads((out / "linear.json").read_text())["gap_stderr"]
    for i, horizon in enumerate(res.config.horizons):
        row = [saved[str(horizon)][str(r)] for r in res.config.rhos]
        np.testing.assert_allclose(row, res.gap_stderr[i].round(3), atol=1e-12)
    assert (out / "linear_gap_vs_rho.png").stat().st_size > 0


def test_fidelity_tables_use_the_paired_se():
    rng = np.random.default_rng(0)
    base = rng.normal(size=(20, 3)) * 100.0  # [S, H]: a large per-seed spread shared by both arms
    private = base[None] + 5.0 + rng.normal(size=(2, 20, 3))  # [G, S, H]
    mean, se = zcdp_fidelity._gaps(private, base)
    diff = private - base[None]
    np.testing.assert_allclose(mean, diff.mean(1), rtol=1e-12)
    np.testing.assert_allclose(se, diff.std(1, ddof=1) / np.sqrt(20), rtol=1e-12)
    assert np.all(se < 0.5)  # the gap's spread (1 / sqrt(20)), not the regret's (100 / sqrt(20))
