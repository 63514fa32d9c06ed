"""The array fast paths the project table uses give the numbers of their references: pairwise Cohen's kappa vs
scikit-learn, the vectorised bootstrap vs one resample at a time, leave-one-out and Dawid-Skene vs the record-based
functions and crowd-kit."""

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from annotation.agreement import (
    AgreementUndefined,
    bootstrap_alpha,
    crowd_competence,
    loo_majority_agreement,
    pairwise_cohen_kappa,
    percent_agreement,
)
from annotation.agreement import alpha as alpha_mod
from annotation.agreement.kappa import pairwise_kappa_codes, unit_agreement_codes
from annotation.agreement.quality import dawid_skene_codes, loo_majority_codes


def random_codes(rng, coders, units, labels, agree=0.7, missing=0.2):
    truth = rng.integers(0, labels, units)
    X = np.where(rng.random((coders, units)) < agree, truth, rng.integers(0, labels, (coders, units)))
    X[rng.random(X.shape) < missing] = -1
    return X


@pytest.mark.parametrize("seed,coders,units,labels", [(0, 2, 50, 2), (1, 5, 200, 4), (2, 8, 300, 3), (3, 3, 12, 6)])
def test_pairwise_kappa_equals_sklearn_on_random_data(seed, coders, units, labels):
    rng = np.random.default_rng(seed)
    X = random_codes(rng, coders, units, labels)
    names = [f"c{i}" for i in range(coders)]
    pw = pairwise_kappa_codes(X, names)
    assert len(pw["pairs"]) == coders * (coders - 1) // 2
    valid = []
    for p in pw["pairs"]:
        i, j = names.index(p["a"]), names.index(p["b"])
        both = (X[i] >= 0) & (X[j] >= 0)
        assert p["n_units"] == int(both.sum())
        expected = cohen_kappa_score(X[i, both], X[j, both])
        assert p["kappa"] == pytest.approx(expected, abs=1e-12)
        assert p["percent_agreement"] == pytest.approx(float(np.mean(X[i, both] == X[j, both])))
        valid.append(expected)
    assert pw["kappa"] == pytest.approx(float(np.mean(valid)), abs=1e-12)
    # the same through the public label-matrix function (labels as strings, None = missing)
    labels_matrix = [[None if v < 0 else f"L{v}" for v in row] for row in X]
    assert pairwise_cohen_kappa(labels_matrix, names)["kappa"] == pytest.approx(pw["kappa"], abs=1e-12)


def test_pairwise_kappa_undefined_pair_is_listed_and_left_out():
    X = np.array([[0, 0, 0, -1], [0, 0, 0, 1], [1, 0, 1, 1]])
    pw = pairwise_kappa_codes(X, ["a", "b", "c"])
    ab = pw["pairs"][0]
    assert ab["kappa"] is None and "same label" in ab["reason"] and ab["percent_agreement"] == 1.0
    assert pw["n_pairs"] == 2
    with pytest.raises(AgreementUndefined):
        pairwise_kappa_codes(np.array([[0, 0], [0, 0]]))


def test_unit_agreement_codes_by_hand():
    # unit 1: a a b -> 1 agreeing pair of 3; unit 2: a a -> 1; unit 3: one label -> NaN
    share, m = unit_agreement_codes(np.array([[0, 0, -1], [0, 0, 1], [1, -1, -1]]))
    assert share[0] == pytest.approx(1 / 3) and share[1] == 1.0 and np.isnan(share[2])
    assert m.tolist() == [3, 2, 1]
    assert percent_agreement([["a", "a", None], ["a", "a", "b"], ["b", None, None]]) == pytest.approx((1 / 3 + 1) / 2)


def test_vectorised_bootstrap_is_the_loop_on_real_values():
    """Real-valued interval data (no repeated per-unit terms): the same draws as the one-at-a-time loop."""
    rng = np.random.default_rng(4)
    X = rng.normal(size=(4, 60)) + rng.normal(size=60)
    X[rng.random(X.shape) < 0.15] = np.nan
    ci = bootstrap_alpha(X, "interval", n_boot=400, seed=9)
    Xp, _, _ = alpha_mod._pairable(alpha_mod.reliability_matrix(X, "interval"))
    values, undefined = alpha_mod._bootstrap_loop(Xp, "interval", 400, np.random.default_rng(9))
    low, high = np.percentile(values, [2.5, 97.5])
    assert ci["low"] == pytest.approx(low, abs=1e-12) and ci["high"] == pytest.approx(high, abs=1e-12)
    assert ci["n_undefined"] == undefined == 0


def test_pattern_bootstrap_matches_the_loop_in_distribution():
    """Nominal labels of a few coders repeat a few count patterns: resampled through their multinomial, which has
    the distribution of resampling units -- the CI lies within Monte Carlo error of the loop's, and is seeded."""
    rng = np.random.default_rng(5)
    X = random_codes(rng, 6, 3000, 3, missing=0.1).astype(float)
    X[X < 0] = np.nan
    ci = bootstrap_alpha(X, "nominal", n_boot=2000, seed=1)
    Xp, _, _ = alpha_mod._pairable(alpha_mod.reliability_matrix(X, "nominal"))
    values, _ = alpha_mod._bootstrap_loop(Xp, "nominal", 2000, np.random.default_rng(1))
    low, high = np.percentile(values, [2.5, 97.5])
    assert abs(ci["low"] - low) < 0.004 and abs(ci["high"] - high) < 0.004
    assert bootstrap_alpha(X, "nominal", n_boot=2000, seed=1) == ci


def test_vectorised_bootstrap_counts_undefined_resamples_like_the_loop():
    X = np.array([[1, 1, 1, 2.0], [1, 1, 1, 2.0]])
    for level in ("nominal", "interval"):
        ci = bootstrap_alpha(X * 0.1 if level == "interval" else X, level, n_boot=200, seed=0)
        Xp, _, _ = alpha_mod._pairable(alpha_mod.reliability_matrix(X * 0.1 if level == "interval" else X, level))
        _, undefined = alpha_mod._bootstrap_loop(Xp, level, 200, np.random.default_rng(0))
        assert ci["n_undefined"] == undefined > 0


@pytest.mark.parametrize("seed,coders,units,labels", [(0, 5, 60, 3), (1, 8, 400, 3), (2, 4, 30, 6)])
def test_loo_codes_equal_the_record_function(seed, coders, units, labels):
    rng = np.random.default_rng(seed)
    X = random_codes(rng, coders, units, labels)
    agreement, n = loo_majority_codes(X)
    ref = loo_majority_agreement((c, u, int(X[c, u])) for c in range(coders) for u in range(units) if X[c, u] >= 0)
    for c in range(coders):
        assert n[c] == ref[c]["n"]
        assert agreement[c] == pytest.approx(ref[c]["agreement"], abs=1e-12)


@pytest.mark.parametrize("seed,coders,units,labels", [(0, 5, 60, 3), (1, 8, 300, 3), (2, 4, 30, 5)])
def test_dawid_skene_codes_equal_crowd_kit(seed, coders, units, labels):
    rng = np.random.default_rng(seed)
    X = random_codes(rng, coders, units, labels)
    ours = dawid_skene_codes(X)
    ck = crowd_competence([(c, u, int(X[c, u])) for c in range(coders) for u in range(units) if X[c, u] >= 0])
    for c in range(coders):
        assert ours["competence"][c] == pytest.approx(ck["competence"][c], abs=1e-9)
    assert {u: int(ours["labels"][u]) for u in ck["labels"]} == {u: int(v) for u, v in ck["labels"].items()}
