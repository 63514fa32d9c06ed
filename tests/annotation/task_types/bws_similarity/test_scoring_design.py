"""Counting scores on a hand-computed example; the tuple design's frequencies and repeats."""

import pytest

from annotation.task_types.bws_similarity.design import design_stats, make_tuples
from annotation.task_types.bws_similarity.scoring import (
    InvalidJudgement,
    Judgement,
    counting_scores,
    counting_scores_loop,
    encode,
)


def test_counting_scores_hand_computed():
    # two tuples, three annotators on the first, two on the second
    t1, t2 = ("a", "b", "c", "d"), ("a", "c", "e", "f")
    js = [
        Judgement(1, "w1", "T", "a", "d", t1),
        Judgement(1, "w2", "T", "a", "c", t1),
        Judgement(1, "w3", "T", "b", "d", t1),
        Judgement(2, "w1", "T", "e", "a", t2),
        Judgement(2, "w2", "T", "a", "f", t2),
    ]
    s = counting_scores(js)
    # a: shown 5 times, best 3 (w1, w2 on t1; w2 on t2), worst 1 (w1 on t2): (3-1)/5 = 0.4 -> 0.7
    assert s["a"] == {
        "score": pytest.approx(0.7),
        "raw": pytest.approx(0.4),
        "best": 3,
        "worst": 1,
        "appearances": 5,
        "topic": "T",
    }
    # b: 3 shown, best 1 -> 1/3 -> 2/3; c: 5 shown... c is in t1 (3) and t2 (2): worst 1 -> -1/5 -> 0.4
    assert s["b"]["score"] == pytest.approx(2 / 3)
    assert (s["c"]["appearances"], s["c"]["worst"], s["c"]["score"]) == (5, 1, pytest.approx(0.4))
    # d: worst 2 of 3 -> -2/3 -> 1/6; e: best 1 of 2 -> 0.75; f: worst 1 of 2 -> 0.25
    assert s["d"]["score"] == pytest.approx(1 / 6)
    assert s["e"]["score"] == pytest.approx(0.75)
    assert s["f"]["score"] == pytest.approx(0.25)
    loop = counting_scores_loop([(j.items, j.best, j.worst) for j in js])
    assert loop == pytest.approx({k: v["score"] for k, v in s.items()})


@pytest.mark.parametrize(
    "bad, reason",
    [
        (Judgement(1, "w", "T", "a", "a", ("a", "b", "c", "d")), "must differ"),
        (Judgement(1, "w", "T", "x", "a", ("a", "b", "c", "d")), "best"),
        (Judgement(1, "w", "T", "a", "b", ("a", "a", "c", "d")), "twice"),
    ],
)
def test_encode_refuses_bad_judgements(bad, reason):
    with pytest.raises(InvalidJudgement, match=reason):
        encode([Judgement(0, "w", "T", "a", "b", ("a", "b", "c", "d")), bad])


def test_encode_refuses_inconsistent_rows():
    ok = Judgement(1, "w1", "T", "a", "b", ("a", "b", "c", "d"))
    with pytest.raises(InvalidJudgement, match="twice") as exc:
        encode([ok, ok])
    assert exc.value.index == 1
    with pytest.raises(InvalidJudgement, match="other pairs"):
        encode([ok, Judgement(1, "w2", "T", "a", "b", ("a", "b", "c", "e"))])
    with pytest.raises(InvalidJudgement, match="topic"):
        encode([ok, Judgement(2, "w2", "U", "a", "b", ("a", "b", "c", "e"))])


@pytest.mark.parametrize(
    "n, n_tuples", [(4, 8), (5, 10), (7, 14), (10, 20), (13, 26), (50, 100), (101, 202), (30, 17), (425, 850)]
)
def test_design_frequencies_differ_by_at_most_one_and_no_tuple_repeats_a_pair(n, n_tuples):
    pairs = [f"p{i}" for i in range(n)]
    tuples = make_tuples(pairs, n_tuples, seed=3)
    stats = design_stats(tuples)
    assert stats["tuples"] == n_tuples
    assert all(len(t) == 4 for t in tuples)
    assert stats["tuples_with_repeats"] == 0
    assert stats["max_freq"] - stats["min_freq"] <= 1
    if 4 * n_tuples >= n:
        assert stats["items"] == n


def test_design_default_is_2n_tuples_each_pair_in_8_and_seeded():
    pairs = [f"p{i}" for i in range(37)]
    tuples = make_tuples(pairs, seed=1)
    assert len(tuples) == 74
    stats = design_stats(tuples)
    assert stats["min_freq"] == stats["max_freq"] == 8
    assert make_tuples(pairs, seed=1) == tuples
    assert make_tuples(pairs, seed=2) != tuples
    with pytest.raises(ValueError):
        make_tuples(["a", "b", "c"])
    with pytest.raises(ValueError):
        make_tuples(["a", "a", "b", "c", "d"])
