"""Split-half reliability: generic over score functions, seeded, Spearman-Brown optional."""

from collections import defaultdict

import numpy as np
import pytest

from annotation.agreement import (
    AgreementError,
    AgreementUndefined,
    judgements_from_records,
    spearman_brown,
    split_half_reliability,
)


def test_perfectly_consistent_annotators_give_one():
    J = {u: [(a, float(u)) for a in range(4)] for u in range(20)}
    r = split_half_reliability(J, n_splits=5, seed=1)
    assert r["rho"] == pytest.approx(1.0)
    assert r["reported"] == "rho" and len(r["per_split"]) == 5


def test_seeded_and_spearman_brown():
    rng = np.random.default_rng(0)
    truth = rng.normal(size=60)
    J = {u: [(a, truth[u] + rng.normal()) for a in range(4)] for u in range(60)}
    r1 = split_half_reliability(J, seed=3, spearman_brown_correction=True)
    r2 = split_half_reliability(J, seed=3, spearman_brown_correction=True)
    assert r1 == r2
    assert r1["n_splits"] == 25
    assert 0 < r1["rho"] < r1["rho_spearman_brown"] < 1
    assert r1["rho_spearman_brown"] == pytest.approx(2 * r1["rho"] / (1 + r1["rho"]))
    assert r1["reported"] == "rho_spearman_brown"
    assert split_half_reliability(J, seed=4)["rho"] != r1["rho"]


def test_spearman_brown_values():
    assert spearman_brown(0.5) == pytest.approx(2 / 3)
    assert spearman_brown(0.66) == pytest.approx(1.32 / 1.66)
    with pytest.raises(AgreementError):
        spearman_brown(1.5)


def bws_counting(judgements):
    """BWS counting score per item: (#best - #worst) / #appearances; a unit is a tuple of items."""
    best, worst, seen = defaultdict(int), defaultdict(int), defaultdict(int)
    for unit, (b, w) in judgements:
        for item in unit:
            seen[item] += 1
        best[b] += 1
        worst[w] += 1
    return {i: (best[i] - worst[i]) / seen[i] for i in seen}


def test_custom_score_function_bws_style():
    rng = np.random.default_rng(2)
    items = list(range(24))
    quality = {i: i for i in items}
    records = []
    for _t in range(120):
        tup = tuple(int(x) for x in rng.choice(items, 4, replace=False))
        for worker in range(4):
            noisy = {i: quality[i] + rng.normal(scale=4) for i in tup}
            records.append((tup, f"w{worker}", (max(noisy, key=noisy.get), min(noisy, key=noisy.get))))
    J = judgements_from_records(records)
    r = split_half_reliability(J, bws_counting, n_splits=25, seed=0)
    assert r["rho"] > 0.7
    assert r["n_items_mean"] == pytest.approx(24)


def test_units_with_one_judgement_are_skipped_and_empty_input_errors():
    J = {u: [(a, float(u)) for a in range(2)] for u in range(10)}
    J["lonely"] = [("a", 1.0)]
    assert split_half_reliability(J, n_splits=3)["n_units_skipped"] == 1
    with pytest.raises(AgreementError, match="at least 2 judgements"):
        split_half_reliability({"u": [("a", 1.0)]})


def test_constant_scores_are_undefined():
    J = {u: [(a, 1.0) for a in range(4)] for u in range(10)}
    with pytest.raises(AgreementUndefined):
        split_half_reliability(J, n_splits=3)
