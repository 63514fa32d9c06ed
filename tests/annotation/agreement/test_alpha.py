"""Krippendorff's alpha: published worked example, the `krippendorff` package, the naive reference, edge cases."""

import math

import krippendorff
import numpy as np
import pytest

from annotation.agreement import AgreementError, AgreementUndefined, alpha_report, bootstrap_alpha, krippendorff_alpha
from annotation.agreement.alpha import _interval_sums, _pairable
from annotation.agreement.reference import naive_alpha

nan = np.nan
# Krippendorff (2011) "Computing Krippendorff's Alpha-Reliability", sec. C: 4 coders x 12 units, missing values.
K2011 = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, nan, nan, nan],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, nan, 3],
    [nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, nan],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, nan],
]
PUBLISHED = {"nominal": 0.743, "ordinal": 0.815, "interval": 0.849, "ratio": 0.797}


@pytest.mark.parametrize("level", list(PUBLISHED))
def test_krippendorff_2011_worked_example(level):
    ours = krippendorff_alpha(K2011, level)
    assert round(ours, 3) == PUBLISHED[level]
    assert ours == pytest.approx(krippendorff.alpha(K2011, level_of_measurement=level), abs=1e-12)
    assert ours == pytest.approx(naive_alpha(K2011, level), abs=1e-12)


def test_report_counts_pairable_units_and_values():
    r = alpha_report(K2011, "nominal")
    # unit 12 has a single value: not pairable; 40 pairable values (Krippendorff 2011: n = 40)
    assert (r.n_units, r.n_values, r.n_coders, r.n_units_total) == (11, 40, 4, 12)
    assert r.as_dict()["alpha"] == r.alpha


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval", "ratio"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_matrices_match_package_and_naive(level, seed):
    rng = np.random.default_rng(seed)
    X = rng.integers(1, 7, size=(int(rng.integers(2, 7)), 60)).astype(float)
    X[rng.random(X.shape) < 0.3] = nan
    ours = krippendorff_alpha(X, level)
    assert ours == pytest.approx(krippendorff.alpha(X, level_of_measurement=level), abs=1e-10)
    assert ours == pytest.approx(naive_alpha(X.tolist(), level), abs=1e-10)


def test_none_and_labels_for_nominal():
    data = [["pro", "con", "pro", None], ["pro", "con", "con", ""], ["pro", None, "con", "none"]]
    coded = [[0, 1, 0, nan], [0, 1, 1, nan], [0, nan, 1, 2]]
    assert krippendorff_alpha(data, "nominal") == pytest.approx(krippendorff_alpha(coded, "nominal"))


def test_labels_rejected_at_metric_levels():
    with pytest.raises(AgreementError, match="not a number"):
        krippendorff_alpha([["a", "b"], ["a", "b"]], "interval")


def test_interval_on_many_distinct_real_values_without_the_cube():
    # 4 coders x 3,400 real-valued scores: every value distinct (the package would need 13,600^2 x 3,400 floats)
    rng = np.random.default_rng(7)
    truth = rng.normal(size=3400)
    X = truth + rng.normal(scale=0.5, size=(4, 3400))
    X[rng.random(X.shape) < 0.1] = nan
    a = krippendorff_alpha(X, "interval")
    assert 0.7 < a < 0.85  # signal variance 1, noise 0.25: alpha ~ 0.8
    # brute force over pairs on a slice agrees with the sum-of-squares formula
    Xs = X[:, :300]
    Xp, present, m = _pairable(Xs)
    d_o, d_e, _n = _interval_sums(Xp, present, m)
    brute_o = sum(
        2 * sum((v[i] - v[j]) ** 2 for i in range(len(v)) for j in range(i + 1, len(v))) / (len(v) - 1)
        for v in ([x for x in col if not math.isnan(x)] for col in Xp.T)
    )
    vals = Xp[present]
    brute_e = float(np.sum((vals[:, None] - vals[None, :]) ** 2))
    assert d_o == pytest.approx(brute_o, rel=1e-9)
    assert d_e == pytest.approx(brute_e, rel=1e-9)
    small = X[:, :60]  # the package builds units x values x values: keep it small
    assert krippendorff_alpha(small, "interval") == pytest.approx(
        krippendorff.alpha(small, level_of_measurement="interval")
    )


def test_ratio_and_ordinal_on_many_distinct_values_match_package_on_small_data():
    rng = np.random.default_rng(3)
    X = rng.gamma(2.0, size=(3, 80))
    X[0, :5] = nan
    for level in ("ordinal", "ratio"):
        assert krippendorff_alpha(X, level) == pytest.approx(krippendorff.alpha(X, level_of_measurement=level))


def test_perfect_agreement_is_one():
    assert krippendorff_alpha([[1, 2, 3, nan], [1, 2, 3, 4]], "interval") == pytest.approx(1.0)


def test_one_coder_is_a_clear_error():
    with pytest.raises(AgreementError, match="at least 2 coders"):
        krippendorff_alpha([[1, 2, 3]], "nominal")


def test_no_pairable_values_is_a_clear_error():
    with pytest.raises(AgreementError, match="no pairable values"):
        krippendorff_alpha([[1, nan, 2], [nan, 3, nan]], "nominal")


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval", "ratio"])
def test_all_identical_values_is_undefined_not_nan(level):
    with pytest.raises(AgreementUndefined, match="identical"):
        krippendorff_alpha([[2, 2, 2], [2, 2, nan]], level)


def test_bad_inputs():
    with pytest.raises(AgreementError, match="unknown level"):
        krippendorff_alpha([[1, 2], [1, 2]], "cardinal")
    with pytest.raises(AgreementError, match="non-negative"):
        krippendorff_alpha([[1, -2], [1, 2]], "ratio")
    with pytest.raises(AgreementError, match="coders x units"):
        krippendorff_alpha([1, 2, 3], "nominal")


def test_bootstrap_ci_is_seeded_and_brackets_alpha():
    rng = np.random.default_rng(0)
    truth = rng.integers(0, 3, 400)
    X = np.where(rng.random((3, 400)) < 0.8, truth, rng.integers(0, 3, (3, 400))).astype(float)
    r = alpha_report(X, "nominal", bootstrap=300, seed=5)
    ci = r.ci
    assert ci["low"] < r.alpha < ci["high"]
    assert ci["high"] - ci["low"] < 0.2
    assert bootstrap_alpha(X, "nominal", n_boot=300, seed=5) == ci
    assert bootstrap_alpha(X, "nominal", n_boot=300, seed=6) != ci


def test_bootstrap_rejects_bad_parameters():
    with pytest.raises(AgreementError):
        bootstrap_alpha(K2011, "nominal", n_boot=10, confidence=1.5)
