"""docs/guide/your_algorithm.md runs as written, and a user's algorithm is one module the command line imports.

The page's Python blocks run in order in one namespace, from ``examples/`` (``import my_private_etc``); the blocks
that show a module (``# examples/<file>``) are the shipped files, character for character. The page's blocks carry
their own assertions (the noise calibrated with power, decisions against a NumPy transcription of the pseudo-code,
regret under the bound, audits with power); this test adds what a reader cannot see on the page: the refusals name
the cause, the release audit refutes a copy without noise and not the policy, both modules run from the command
line with ``--import`` (at their study files' ``[smoke]`` scale), and the study's numbers are ``jp.sweep``'s.
"""

import re
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "guide" / "your_algorithm.md"
EXAMPLES = ROOT / "examples"
MODULES = ("my_private_etc", "my_private_ogd")


def blocks(language: str = "python") -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", PAGE.read_text(), flags=re.S)


def _shown(code: str) -> str | None:
    """The shipped file a block shows (its first line ``# examples/<file>``), or ``None``."""
    first = code.splitlines()[0]
    return first[2:] if first.startswith("# examples/") else None


@pytest.fixture(scope="module")
def user_modules():
    """``examples/`` on ``sys.path`` (the page runs from there); the modules and their registrations gone after."""
    from jaxpriv.experiments import registry

    before = set(registry.LEARNERS)
    sys.path.insert(0, str(EXAMPLES))
    yield
    sys.path.remove(str(EXAMPLES))
    for name in set(registry.LEARNERS) - before:
        registry._LEARNERS.pop(name)  # the read-only LEARNERS is a view of it
    for module in MODULES:
        sys.modules.pop(module, None)


@pytest.fixture(scope="module")
def page(user_modules):
    namespace: dict = {"__name__": "your_algorithm"}
    for code in blocks():
        if _shown(code) is None:
            exec(compile(code, str(PAGE), "exec"), namespace)
    return namespace


def test_the_modules_on_the_page_are_the_shipped_files():
    shown = {_shown(code): code for code in [*blocks(), *blocks("toml")] if _shown(code)}
    assert set(shown) == {"examples/my_private_etc.py", "examples/my_private_ogd.py", "examples/my_private_etc.toml"}
    for path, code in shown.items():
        assert code == f"# {path}\n" + (ROOT / path).read_text(), path
    assert len(blocks()) == 8


def test_the_page_runs_and_its_checks_hold(page):
    assert page["result"].private is True
    assert page["ok"].ratio < 1 < page["bad"].ratio


def test_the_release_audit_refutes_a_copy_without_noise_and_not_the_policy(page):
    release, broken = page["release"], page["broken"]
    assert release.kind == "rho" and release.claim == 0.5 and release.lower < release.claim, release
    assert release.noiseless is not None and release.power > 10 * release.claim and not release.warning
    assert broken.lower > 10 * broken.claim, broken  # far above the claim: the copy has no privacy


def test_refusals_name_the_cause(page):
    import jaxpriv as jp

    policy, env, means = page["policy"], page["env"], page["means"]
    BernoulliParams, AdaCUCBParams = page["BernoulliParams"], page["AdaCUCBParams"]
    with pytest.raises(ValueError, match="PrivateETCParams"):
        jp.run(policy, env, jp.SimParams(AdaCUCBParams(rho=1.0), BernoulliParams(means)), 0, 100)
    with pytest.raises(ValueError, match="rho must be finite"):
        jp.run(policy, env, jp.SimParams(page["PrivateETCParams"](np.inf), BernoulliParams(means)), 0, 100)


def _without_imports(name: str, folder: Path) -> Path:
    """The shipped study file without its ``imports`` line: the command line's ``--import`` must bring the module."""
    text = (EXAMPLES / f"{name}.toml").read_text()
    assert "\nimports = " in text
    path = folder / f"{name}.toml"
    path.write_text(re.sub(r"\nimports = .*\n", "\n", text))
    return path


def test_both_modules_run_from_the_command_line_with_import(user_modules, tmp_path, monkeypatch, capsys):
    """``jaxpriv sweep FILE --smoke --import my_private_etc`` (a module name, from the working directory) and
    ``--import <path>.py``; then the study's private-ETC numbers are ``jp.sweep``'s with its seed, bit for bit."""
    import jaxpriv as jp
    from jaxpriv import cli
    from jaxpriv.experiments.study import StudyResult

    runs: list[StudyResult] = []
    import jaxpriv.experiments.study as study

    run_study = study.run_study
    monkeypatch.setattr(study, "run_study", lambda *a, **k: runs.append(run_study(*a, **k)) or runs[-1])
    common = ["--smoke", "--no-progress", "--no-compile-cache"]
    etc = _without_imports("my_private_etc", tmp_path)
    ogd = _without_imports("my_private_ogd", tmp_path)
    from jaxpriv.experiments import registry

    for module, name in zip(MODULES, ("private_etc", "private_ogd"), strict=True):  # the CLI imports them afresh
        sys.modules.pop(module, None)
        registry._LEARNERS.pop(name, None)
    monkeypatch.chdir(EXAMPLES)
    assert cli.main(["sweep", str(etc), "--import", "my_private_etc", "--out", str(tmp_path / "etc"), *common]) == 0
    module = str(EXAMPLES / "my_private_ogd.py")
    assert cli.main(["sweep", str(ogd), "--import", module, "--out", str(tmp_path / "ogd"), *common]) == 0
    out = capsys.readouterr().out
    assert "private ETC - UCB: rho=0.1" in out and "private OGD - OGD: rho=0.3" in out
    res = runs[0]
    s = res.study
    from my_private_etc import PrivateETCParams, private_etc

    from jaxpriv.envs import BernoulliParams, bernoulli_bandit

    means = np.array([0.75, 0.625, 0.5, 0.375, 0.25], np.float32)
    params = jp.SimParams(PrivateETCParams(np.array([0.1, 10.0], np.float32)), BernoulliParams(means))
    direct = jp.sweep(private_etc(5, 100), bernoulli_bandit(5), params, s.seed, horizon=s.horizon, seeds=s.seeds,
                      checkpoints=s.checkpoints, chunk=s.chunk)  # fmt: skip
    np.testing.assert_array_equal(res.results()["private ETC"].regret, np.asarray(direct.regret))
