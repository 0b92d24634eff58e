"""The baselines' other experiments: AdaC-GOPE vs -Var (AdaP-KLUCB against ε and DP-FTRL vs PFTAL are shipped study
files: tests/experiments/test_shipped_studies.py)."""

import numpy as np
import pytest

from jaxpriv import cli
from jaxpriv.experiments import baselines_gope


def test_bad_arguments(tmp_path):
    with pytest.raises(ValueError, match="seeds"):
        baselines_gope.compare_gope(tmp_path, seeds=1)


def test_gope_comparison_pairs_the_seeds(tmp_path):
    # At ρ = ∞ both algorithms are GOPE on the same seed keys: the paired difference is exactly 0, seed by
    # seed (common random numbers: same instance, same reward sums). At ρ = 1 the noise differs (smaller ρ
    # makes the first phase outlast T = 10⁴: no phase closes, no noise is drawn).
    res = baselines_gope.compare_gope(tmp_path, seeds=6, horizon=10**4, rhos=(1.0, np.inf))
    for path in res.files.values():
        assert path.exists() and path.stat().st_size > 0
    data = np.load(res.files["npz"])
    np.testing.assert_array_equal(data["adac_gope"][1], data["adac_gope_var"][1])
    assert res.table[1]["diff"] == 0.0 and res.table[1]["diff_se"] == 0.0
    assert not np.array_equal(data["adac_gope"][0], data["adac_gope_var"][0])
    d = data["adac_gope_var"][0, :, -1] - data["adac_gope"][0, :, -1]
    assert res.table[0]["diff"] == pytest.approx(d.mean())
    assert res.table[0]["diff_se"] == pytest.approx(d.std(ddof=1) / np.sqrt(6))


def test_the_moved_experiments_name_their_study_files(tmp_path, capsys):
    for experiment, name in (("epsilon", "adap_klucb_epsilon"), ("oco", "dp_ftrl_vs_pftal_quadratic")):
        argv = ["baselines", "--experiment", experiment, "--out", str(tmp_path / experiment), "--no-compile-cache"]
        assert cli.main(argv) == 2
        assert f"jaxpriv baselines: error: --experiment {experiment} is the shipped study {name}" in (
            capsys.readouterr().err
        )
