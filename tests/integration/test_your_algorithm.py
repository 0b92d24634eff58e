"""docs/guide/your_algorithm.md runs as written: its code blocks, executed in order in one namespace.

The page's blocks carry their own assertions (the noise calibrated with power against 20% less noise, the decisions
against a NumPy transcription of the pseudo-code, regret under the bound, the audit refuting half the noise); this
test adds what a reader cannot see on the page: the refusals name the cause, and the study's numbers are the sweep's.
"""

import re
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "guide" / "your_algorithm.md"


def blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", PAGE.read_text(), flags=re.S)


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    namespace: dict = {"__name__": "your_algorithm"}
    for code in blocks():
        exec(compile(code, str(PAGE), "exec"), namespace)
    yield namespace
    from jaxpriv.experiments import registry

    registry._LEARNERS.pop("private_etc", None)  # the read-only LEARNERS is a view of it


def test_the_page_has_its_six_blocks():
    assert len(blocks()) == 6


def test_the_page_runs_and_its_checks_hold(page):
    assert page["result"].private is True
    assert page["ok"].ratio < 1 < page["bad"].ratio


def test_refusals_name_the_cause(page):
    import jaxpriv as jp

    policy, env, means = page["policy"], page["env"], page["means"]
    BernoulliParams, AdaCUCBParams = page["BernoulliParams"], page["AdaCUCBParams"]
    with pytest.raises(ValueError, match="PrivateETCParams"):
        jp.run(policy, env, jp.SimParams(AdaCUCBParams(rho=1.0), BernoulliParams(means)), 0, 100)
    with pytest.raises(ValueError, match="rho must be finite"):
        jp.run(policy, env, jp.SimParams(page["PrivateETCParams"](np.inf), BernoulliParams(means)), 0, 100)


def test_the_study_equals_the_sweep_with_the_same_seed(page):
    """The study's private-ETC numbers are jp.sweep's with the study's seed, bit for bit (one resume, one key)."""
    import jaxpriv as jp

    res = page["res"]
    study = res.study
    params = jp.SimParams(
        page["PrivateETCParams"](np.array([0.1, 1.0, 10.0], np.float32)), page["BernoulliParams"](page["means"])
    )
    direct = jp.sweep(
        page["private_etc"](5, 100),
        page["env"],
        params,
        study.seed,
        horizon=study.horizon,
        seeds=study.seeds,
        checkpoints=study.checkpoints,
        chunk=study.chunk,
    )
    np.testing.assert_array_equal(res.results()["private ETC"].regret, np.asarray(direct.regret))
