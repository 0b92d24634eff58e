"""The Section VII reproduction entry point: files, contents, and the registry."""

import json

import numpy as np
import pytest

from jaxpriv.experiments import zcdp_bandits as experiment
from jaxpriv.experiments.zcdp_bandits import Scale, Setting, SettingRuns, register_setting, reproduce

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _fake_simulate(key, rhos, horizon, checkpoints, seeds):
    # Non-private regret sqrt(t) for every seed; the private one adds 10/rho (+ seed-dependent noise
    # that averages to 0), so the gap is exactly 10/rho and the PoP 10/(rho sqrt(t)).
    del key
    steps = np.asarray(checkpoints)
    base = np.tile(np.sqrt(steps), (seeds, 1))
    wiggle = np.where(np.arange(seeds) % 2 == 0, 1.0, -1.0)[:, None]
    priv = base[None] + (10.0 / rhos)[:, None, None] + wiggle[None]
    return SettingRuns(steps, priv, base)


FAKE = Setting(
    name="_fake_for_tests",
    title="fake",
    private_name="P",
    nonprivate_name="NP",
    full=Scale((0.1, 1.0, 10.0), (100, 1000), (1.0,), 1000, 4),
    reduced=Scale((0.1, 1.0, 10.0), (10, 100), (1.0, 0.5), 100, 4),
    simulate=_fake_simulate,
    config={"note": "test"},
)


@pytest.fixture(scope="module", autouse=True)
def _fake_setting():
    register_setting(FAKE, replace=True)
    yield
    experiment.SETTINGS.pop(FAKE.name, None)


def test_outputs_and_their_contents(tmp_path):
    out = reproduce(FAKE.name, tmp_path, key=3)
    for name in ("regret_gap", "pop", "npz", "json"):
        assert out.files[name].exists() and out.files[name].stat().st_size > 0
    assert out.files["regret_gap"].read_bytes()[:8] == PNG_MAGIC
    assert out.files["pop"].read_bytes()[:8] == PNG_MAGIC
    data = np.load(out.files["npz"])
    rhos = data["rhos"]
    np.testing.assert_allclose(rhos, [0.1, 0.5, 1.0, 10.0])  # union of both panels' grids
    assert data["private_regret"].shape == (4, 4, data["steps"].size)
    assert data["nonprivate_regret"].shape == (4, data["steps"].size)
    assert {10, 100}.issubset(set(data["steps"].tolist())) and data["steps"][-1] == 100
    summary = json.loads(out.files["json"].read_text())
    assert summary == json.loads(json.dumps(out.summary))
    assert summary["key"] == 3 and summary["runs"] == 4 and summary["full_scale"] is False
    assert {"jaxpriv", "jax", "numpy"}.issubset(summary["versions"])
    for r in rhos:
        gap, se = summary["regret_gap"][f"rho={r:g}"]["100"]
        assert gap == pytest.approx(10.0 / r) and se >= 0
        assert summary["price_of_privacy"][f"rho={r:g}"]["100"] == pytest.approx(10.0 / (r * 10.0))


def test_full_scale_and_seed_override(tmp_path):
    out = reproduce(FAKE.name, tmp_path, full_scale=True, seeds=6)
    assert out.summary["runs"] == 6 and out.summary["full_scale"] is True
    assert np.load(out.files["npz"])["steps"][-1] == 1000


def test_bad_input():
    with pytest.raises(ValueError, match="setting"):
        reproduce("no_such_setting", "/tmp/unused")
    with pytest.raises(ValueError, match="already registered"):
        register_setting(FAKE)
    with pytest.raises(ValueError, match="seeds"):
        reproduce(FAKE.name, "/tmp/unused", seeds=1)


def test_finite_setting_at_tiny_scale(tmp_path):
    # The real finite-armed setting, reduced scale with 20 runs: AdaC-UCB at rho = 0.01 pays a
    # clearly positive price at T = 1e6, and the paper's grids are used.
    out = reproduce("finite", tmp_path, seeds=20)
    s = out.summary
    assert s["rhos"] == [0.01, 0.1, 0.5, 1.0, 10.0, 100.0, 500.0, 1000.0]
    gap, se = s["regret_gap"]["rho=0.01"]["1000000"]
    assert gap > 4 * se
    assert s["nonprivate_regret"]["1000000"] > s["nonprivate_regret"]["10000"] > 0
    data = np.load(out.files["npz"])
    assert data["private_regret"].shape[:2] == (8, 20)
    assert np.all(np.diff(data["nonprivate_regret"], axis=-1) >= 0)


def _shared_seed_simulate(key, rhos, horizon, checkpoints, seeds):
    # Regret that varies a lot from seed to seed (1000 * seed), shared by both arms (common random
    # numbers), and a private arm 5 above it plus a small seed-dependent wiggle (+-1).
    del key
    steps = np.asarray(checkpoints)
    base = 1000.0 * np.arange(seeds, dtype=np.float64)[:, None] * np.ones(steps.size)
    wiggle = np.where(np.arange(seeds) % 2 == 0, 1.0, -1.0)[:, None]
    priv = base[None] + 5.0 + wiggle[None] + 0.0 * np.asarray(rhos)[:, None, None]
    return SettingRuns(steps, priv, base)


def test_the_gap_standard_error_is_that_of_the_paired_differences(tmp_path):
    # Issue 27: the linear-bandit gap carried error bars of +-13,000 around gaps of tens, because its
    # standard error treated the two arms as independent though they share the seed keys.
    setting = FAKE._replace(name="_paired_for_tests", simulate=_shared_seed_simulate)
    register_setting(setting, replace=True)
    try:
        out = reproduce(setting.name, tmp_path, key=0)
    finally:
        experiment.SETTINGS.pop(setting.name, None)
    runs = out.summary["runs"]
    diff = 5.0 + np.where(np.arange(runs) % 2 == 0, 1.0, -1.0)
    paired_se = diff.std(ddof=1) / np.sqrt(runs)  # the spread of the gap itself
    regret_se = (1000.0 * np.arange(runs)).std(ddof=1) / np.sqrt(runs)  # the spread of the regret
    for by_t in out.summary["regret_gap"].values():
        gap, se = by_t["100"]
        assert gap == pytest.approx(5.0)
        assert se == pytest.approx(paired_se, rel=1e-9)
        assert se < regret_se / 100
