"""ValNov aggregation and instance weights on hand-computed examples (ties, don't know, any R)."""

import pytest

from annotation.task_types.validity_novelty.aggregation import (
    aggregate_dimension,
    aggregate_responses,
    count_votes,
    target,
)
from annotation.task_types.validity_novelty.weights import (
    CONFIDENCE_POINTS,
    POSSIBLE_WEIGHTS,
    instance_weight,
    weight_distribution,
)

Y, N, D = "yes", "no", "dont_know"


@pytest.mark.parametrize(
    "votes, label, confidence",
    [
        ([Y, Y, Y], 1, "very confident"),
        ([N, N, N], -1, "very confident"),
        ([Y, Y, D], 1, "confident"),  # two agree, the third abstains
        ([D, N, N], -1, "confident"),
        ([Y, Y, N], 1, "majority"),  # two agree, one disagrees
        ([N, Y, N], -1, "majority"),
        ([Y, N, D], 0, "defeasible"),  # a tie: no majority
        ([D, D, D], 0, "defeasible"),  # nobody can decide
        ([D, D, Y], 0, "defeasible"),  # a "don't know" majority is unknown, too
        ([D, N, D], 0, "defeasible"),
        ([Y, N], 0, "defeasible"),  # R = 2 tie
        ([Y], 1, "very confident"),  # R = 1
        ([Y, Y, N, D], 1, "majority"),  # R = 4: 2 > 1 > 1
        ([Y, Y, D, D], 0, "defeasible"),  # R = 4: tie between yes and don't know
        ([N, N, N, D, D], -1, "confident"),  # R = 5
        ([], 0, "defeasible"),
    ],
)
def test_majority_and_confidence(votes, label, confidence):
    for dim in ("validity", "novelty"):
        res = aggregate_dimension(dim, votes)
        assert (res.label, res.confidence, res.n) == (label, confidence, len(votes))
        assert res.counts == {"yes": votes.count(Y), "no": votes.count(N), "dont_know": votes.count(D)}


def test_targets_tie_in_validity_is_unknown_tie_in_novelty_is_half():
    assert aggregate_dimension("validity", [Y, N, D]).target is None
    assert aggregate_dimension("novelty", [Y, N, D]).target == 0.5
    assert aggregate_dimension("novelty", [D, D, Y]).target == 0.5
    assert aggregate_dimension("validity", [Y, Y, N]).target == 1.0
    assert aggregate_dimension("novelty", [N, N, Y]).target == 0.0
    assert (target("validity", 0), target("novelty", 0), target("novelty", -1)) == (None, 0.5, 0.0)
    with pytest.raises(ValueError):
        target("validity", 2)


def test_bad_votes_are_refused():
    with pytest.raises(ValueError, match="yes, no, dont_know"):
        count_votes(["maybe"])
    assert count_votes([None, "", Y]) == {"yes": 1, "no": 0, "dont_know": 0}


def test_aggregate_responses_by_hand():
    # validity: yes, yes, no -> 1 (majority, 0.25); novelty: no, don't know, no -> -1 (confident, 1)
    agg = aggregate_responses(
        [{"validity": Y, "novelty": N}, {"validity": Y, "novelty": D}, {"validity": N, "novelty": N}]
    )
    assert agg["validity"]["label"] == 1 and agg["validity"]["confidence"] == "majority"
    assert agg["novelty"]["label"] == -1 and agg["novelty"]["confidence"] == "confident"
    assert agg["weight"] == 1 + 0.25 + 1 == 2.25
    assert agg["n"] == 3
    # a tie in both: validity unknown (target None), novelty 0.5; no agreement at all -> weight 1
    tie = aggregate_responses(
        [{"validity": Y, "novelty": Y}, {"validity": N, "novelty": N}, {"validity": D, "novelty": D}]
    )
    assert (tie["validity"]["label"], tie["validity"]["target"]) == (0, None)
    assert (tie["novelty"]["label"], tie["novelty"]["target"]) == (0, 0.5)
    assert tie["weight"] == 1.0


@pytest.mark.parametrize(
    "val, nov, weight",
    [
        ("defeasible", "defeasible", 1.0),  # no agreement at all: the minimum
        ("very confident", "very confident", 5.0),  # full agreement on both: the maximum
        ("majority", "majority", 1.5),  # ValNov App. A.1, Example 1
        ("very confident", "majority", 3.25),  # ValNov App. A.1, Example 2
        ("majority", "very confident", 3.25),
        ("confident", "defeasible", 2.0),
        ("confident", "confident", 3.0),
        ("very confident", "confident", 4.0),
        ("majority", "defeasible", 1.25),
        ("confident", "majority", 2.25),
    ],
)
def test_weight_rule(val, nov, weight):
    assert instance_weight(val, nov) == weight


def test_weights_are_monotone_and_bounded():
    order = ["defeasible", "majority", "confident", "very confident"]
    pts = [CONFIDENCE_POINTS[w] for w in order]
    assert pts == sorted(pts) and len(set(pts)) == 4
    assert POSSIBLE_WEIGHTS == (1.0, 1.25, 1.5, 2.0, 2.25, 3.0, 3.25, 4.0, 5.0)
    with pytest.raises(ValueError, match="unknown confidence word"):
        instance_weight("sure", "majority")


def test_weight_from_votes_unanimous_vs_split():
    full = aggregate_responses([{"validity": Y, "novelty": N}] * 3)
    assert full["weight"] == 5.0
    split = aggregate_responses(
        [{"validity": Y, "novelty": D}, {"validity": N, "novelty": D}, {"validity": D, "novelty": Y}]
    )
    assert split["weight"] == 1.0


def test_weight_distribution():
    dist = weight_distribution([1.5, 1.5, 5.0])
    by = {d["weight"]: d for d in dist}
    assert [d["weight"] for d in dist] == list(POSSIBLE_WEIGHTS)
    assert by[1.5]["count"] == 2 and by[5.0]["count"] == 1 and by[1.0]["count"] == 0
    assert by[1.5]["share"] == pytest.approx(2 / 3)
    assert all(d["share"] == 0 for d in weight_distribution([]))
