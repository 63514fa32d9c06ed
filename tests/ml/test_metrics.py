"""recall@k (Arg-CTRL Table 2) on a hand-computed example, rows grouped per sentence, splits, in-/cross-topic."""

from __future__ import annotations

import json

import pytest

from ml.data import (
    group_sentences,
    leave_one_topic_out,
    ranker_rows,
    ranker_rows_from_file,
    read_ranker_rows,
    split_by_sentence,
    synthetic_appf,
    synthetic_ranker_rows,
)
from ml.errors import TrainerError
from ml.metrics import RandomScorer, cross_topic, evaluate_scorer, in_topic, ranking_metrics, ranking_order, recall_at_k

S1 = "We need background checks for buyers."
S2 = "Cheap clean safe green solar power works."
S3 = "Nothing to see here."


class TableScorer:
    """Scores from a {(begin, length): score} table, 0 for every other candidate."""

    name = "table"

    def __init__(self, table):
        self.table = table

    def score(self, sentence_text, topic, candidates):
        return [self.table.get((sentence_text, c.begin, c.length), 0.0) for c in candidates]


def span(text, phrase):
    return (text.index(phrase), len(phrase))


def test_recall_at_k_single_sentence():
    ranked = [(0, 1), (5, 2), (9, 3), (20, 4)]
    assert recall_at_k(ranked, [(5, 2), (20, 4)], 1) == 0.0
    assert recall_at_k(ranked, [(5, 2), (20, 4)], 2) == 0.5
    assert recall_at_k(ranked, [(5, 2), (20, 4)], 4) == 1.0
    assert recall_at_k(ranked, [(5, 3)], 4) == 0.0  # exact span only
    assert recall_at_k(ranked, [], 4) is None


def test_recall_at_k_hand_computed_example():
    rows = (
        ranker_rows(S1, [span(S1, "background checks"), span(S1, "buyers")], topic="gun control")
        + ranker_rows(S2, [span(S2, "Cheap clean safe green solar")], topic="nuclear energy")  # 5 tokens
        + ranker_rows(S3, [], topic="nuclear energy")
    )
    table = {
        (S1, *span(S1, "need background checks")): 0.9,
        (S1, *span(S1, "background checks")): 0.8,
        (S1, *span(S1, "checks")): 0.8,  # tie with "background checks": the longer n-gram goes first
        (S1, *span(S1, "for buyers")): 0.5,
        (S1, *span(S1, "buyers")): 0.4,
    }
    # S1 ranking: need background checks, background checks, checks, for buyers, buyers, (zeros...)
    # S1: recall@1 = 0/2, @2 = 1/2, @4 = 1/2, @5 = 2/2.  S2: its 5-token aspect is no candidate: 0 at every k.
    # S3 has no aspect: skipped.  Means over 2 sentences: @1 = 0, @2 = .25, @4 = .25, @5 = .5
    m = evaluate_scorer(TableScorer(table), rows, ks=(1, 2, 4, 5))
    assert m["recall@1"] == 0.0
    assert m["recall@2"] == pytest.approx(0.25)
    assert m["recall@4"] == pytest.approx(0.25)
    assert m["recall@5"] == pytest.approx(0.5)
    assert m["sentences"] == 2 and m["no_aspect_sentences"] == 1
    assert m["candidates"] == len(rows)


def test_ranking_order_breaks_ties_like_the_hit_page():
    spans = [(10, 3), (0, 6), (0, 3), (4, 2)]
    assert ranking_order(spans, [0.5, 0.5, 0.5, 0.9], [1, 2, 1, 1]) == [3, 1, 2, 0]


def test_ranking_metrics_checks_lengths_and_reports_mse():
    groups = group_sentences(ranker_rows(S1, [span(S1, "buyers")]))
    targets = [groups[0].scores]
    m = ranking_metrics(groups, targets, ks=(1,))
    assert m["mse"] == 0.0 and m["recall@1"] == 1.0  # the Step 2a targets themselves rank "buyers" first
    with pytest.raises(ValueError):
        ranking_metrics(groups, [[0.0]], ks=(1,))


def test_gold_spans_come_from_the_rows_or_from_the_aspect_unigrams():
    rows = ranker_rows(S1, [span(S1, "background checks"), span(S1, "buyers")], topic="t")
    assert group_sentences(rows)[0].gold == [span(S1, "background checks"), span(S1, "buyers")]
    bare = [{k: v for k, v in r.items() if k != "aspects"} for r in rows]
    assert group_sentences(bare)[0].gold == [span(S1, "background checks"), span(S1, "buyers")]
    g = group_sentences(rows)[0]
    assert len(g.spans) == len(rows) and g.topic == "t" and max(g.n_tokens) == 4


def test_split_by_sentence_keeps_sentences_whole_and_is_seeded():
    rows = synthetic_ranker_rows(20)
    train, dev = split_by_sentence(rows, dev_fraction=0.25, seed=5)
    assert {r["sentence"] for r in train}.isdisjoint({r["sentence"] for r in dev})
    assert len({r["sentence"] for r in dev}) == 5 and len(train) + len(dev) == len(rows)
    assert split_by_sentence(rows, dev_fraction=0.25, seed=5) == (train, dev)
    assert split_by_sentence(rows, dev_fraction=0.25, seed=6) != (train, dev)


def test_leave_one_topic_out():
    rows = synthetic_ranker_rows(16)
    folds = list(leave_one_topic_out(rows))
    assert len(folds) == 8
    for topic, train, test in folds:
        assert test and all(r["topic"] == topic for r in test) and all(r["topic"] != topic for r in train)


class Oracle:
    """Scores = the Step 2a targets of every row it was shown (a perfect ranker)."""

    name = "oracle"

    def __init__(self, rows):
        self.table = {(r["sentence"], r["begin"], r["length"]): r["score"] for r in rows}

    def score(self, sentence_text, topic, candidates):
        return [self.table[(sentence_text, c.begin, c.length)] for c in candidates]


def test_in_topic_and_cross_topic_helpers():
    rows = synthetic_ranker_rows(32)
    seen = []

    def train_fn(rows_train, rows_dev):
        seen.append(({r["topic"] for r in rows_train}, {r["topic"] for r in rows_dev}))
        return Oracle(rows_dev)

    m = in_topic(train_fn, rows, dev_fraction=0.25, seed=1)
    assert m["setting"] == "in-topic" and m["recall@5"] == 1.0
    m = cross_topic(train_fn, rows)
    assert set(m["per_topic"]) == {r["topic"] for r in rows} and m["recall@5"] == 1.0
    for train_topics, dev_topics in seen[1:]:
        assert len(dev_topics) == 1 and dev_topics.isdisjoint(train_topics)
    rand = cross_topic(lambda tr, dev: RandomScorer(1), rows)
    assert 0 <= rand["recall@5"] < 0.6


# --- file readers --------------------------------------------------------------------------------------


def test_ranker_rows_from_an_appf_file(tmp_path):
    path = tmp_path / "aspects.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in synthetic_appf(10)), encoding="utf-8")
    train, dev = ranker_rows_from_file(path, dev_fraction=0.2, seed=13)
    assert len({r["sentence"] for r in dev}) == 2 and len({r["sentence"] for r in train}) == 8
    assert {"sentence", "candidate", "score", "begin", "length", "topic", "aspects"} <= set(train[0])
    assert ranker_rows_from_file(path, dev_fraction=0.2, seed=13) == (train, dev)


def test_ranker_rows_from_a_label_row_file_keep_their_split(tmp_path):
    rows = synthetic_ranker_rows(4)
    sentences = sorted({r["sentence"] for r in rows})
    for r in rows:
        r["split"] = "dev" if r["sentence"] == sentences[0] else ("test" if r["sentence"] == sentences[1] else "train")
    path = tmp_path / "labels.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    train, dev = ranker_rows_from_file(path)
    assert {r["sentence"] for r in dev} == {sentences[0]}
    assert {r["sentence"] for r in train} == set(sentences[2:])


@pytest.mark.parametrize(
    "line, reason",
    [
        ('{"sentence": "a b", "candidate": "a"}', "2: missing key"),
        ('{"sentence": "a b", "candidate": "a", "score": 0.5, "begin": 2, "length": 9}', "2: candidate span"),
        ('{"sentence": "a b", "candidate": "a", "score": 3, "begin": 0, "length": 1}', "2: score 3.0 is outside"),
        ("[1]", "2: expected a JSON object, got list"),
    ],
)
def test_bad_label_rows_name_file_and_line(tmp_path, line, reason):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"sentence": "a b", "candidate": "a", "score": 1, "begin": 0, "length": 1}\n' + line + "\n")
    with pytest.raises(TrainerError, match=f"bad.jsonl:{reason}"):
        read_ranker_rows(path)


def test_bad_appf_file_names_file_and_line(tmp_path):
    row = synthetic_appf(1)[0]
    bad = dict(row, aspect_pos=["(0,3)"], aspect_pos_string=["zzz"])
    path = tmp_path / "appf.jsonl"
    path.write_text(json.dumps(row) + "\n" + json.dumps(dict(bad, hash="other")) + "\n")
    with pytest.raises(TrainerError, match="appf.jsonl:2: aspect_pos"):
        read_ranker_rows(path)
