"""Worker quality: leave-one-out majority agreement, gold accuracy, crowd-model competence."""

import numpy as np
import pytest

from annotation.agreement import AgreementError, crowd_competence, gold_accuracy, loo_majority_agreement


def test_loo_majority_hand_example():
    records = [
        ("w1", "u1", "a"),
        ("w2", "u1", "a"),
        ("w3", "u1", "b"),
        ("w1", "u2", "a"),
        ("w2", "u2", "b"),  # w1 vs {b}: miss; w2 vs {a}: miss
        ("w1", "u3", "a"),
    ]  # nobody else: not counted
    q = loo_majority_agreement(records)
    # u1: w1's others = {a:1, b:1} -> tie, w1 says a -> 1/2; w2 same -> 1/2; w3's others = {a:2} -> 0
    # u2: w1's others = {b} -> 0; w2's others = {a} -> 0
    assert q["w1"] == {"agreement": pytest.approx(0.25), "n": 2}
    assert q["w2"] == {"agreement": pytest.approx(0.25), "n": 2}
    assert q["w3"] == {"agreement": pytest.approx(0.0), "n": 1}


def test_gold_accuracy():
    q = gold_accuracy([("a", True), ("a", False), ("a", True), ("b", False)])
    assert q["a"] == {"accuracy": pytest.approx(2 / 3), "correct": 2, "n": 3}
    assert q["b"]["accuracy"] == 0.0


def synthetic(seed=0):
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 2, 150)
    accuracy = {"good": 0.95, "ok": 0.85, "fair": 0.75, "spammer": 0.5}
    return [
        (w, t, int(truth[t] if rng.random() < acc else 1 - truth[t])) for t in range(150) for w, acc in accuracy.items()
    ]


@pytest.mark.parametrize("method", ["dawid_skene", "mace"])
def test_crowd_competence_ranks_workers(method):
    res = crowd_competence(synthetic(), method=method, n_iter=30, n_restarts=2)
    comp = res["competence"]
    assert comp["good"] > comp["fair"] > comp["spammer"]
    assert len(res["labels"]) == 150


def test_crowd_competence_errors():
    with pytest.raises(AgreementError):
        crowd_competence([], method="dawid_skene")
    with pytest.raises(AgreementError, match="unknown crowd model"):
        crowd_competence(synthetic(), method="glad")
