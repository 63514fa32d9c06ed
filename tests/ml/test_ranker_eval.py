"""Ranker evaluation as Arg-CTRL Table 2 reports it, with what the table leaves out: recall@k beside the lexical
baseline and the oracle recall of the 1-4-gram candidates (a gold aspect longer than 4 tokens is no candidate, so
no ranking finds it); test rows scored into the version's test metrics, never selected on; ``TrainerSpec.evaluate``
for ``models evaluate``; cross-topic with the baseline and the oracle per held-out topic."""

from __future__ import annotations

import json

import pytest

from corpus.tokens import tokenize
from ml import errors, registry
from ml.data import SentenceRows, group_sentences, ranker_rows, split_by_sentence
from ml.registry import TrainRequest
from ml.trainers.ranker import evaluate, oracle_recall, ranking_eval, rows_from_file
from tests.ml.aspect_data import aspect_rows
from tests.ml.test_rankers import TINY_HP, tiny_bert  # noqa: F401  (the module-scoped tiny BERT fixture)


def rows_of(appf_rows):
    out = []
    for r in appf_rows:
        spans = [tuple(int(x) for x in p.strip("()").split(",")) for p in r["aspect_pos"]]
        out.extend(ranker_rows(r["sentence"], spans, topic=r["topic"]))
    return out


def test_oracle_recall_is_the_share_of_gold_aspects_that_are_candidates():
    groups = [
        SentenceRows("s1", "t", spans=[(0, 3), (4, 5), (4, 12)], gold=[(0, 3), (4, 20)]),  # 1 of 2
        SentenceRows("s2", "t", spans=[(0, 3)], gold=[(0, 3)]),  # 1 of 1
        SentenceRows("s3", "t", spans=[(0, 3)], gold=[]),
    ]  # skipped
    assert oracle_recall(groups) == pytest.approx((0.5 + 1.0) / 2)


def test_long_aspects_bound_recall_at_k_by_the_oracle():
    rows = rows_of(aspect_rows(30, seed=7))
    groups = group_sentences(rows)
    expected = []
    for r in aspect_rows(30, seed=7):
        lengths = [len(tokenize(s)) for s in r["aspect_pos_string"]]
        expected.append(sum(n <= 4 for n in lengths) / len(lengths))
    assert oracle_recall(groups) == pytest.approx(sum(expected) / len(expected))
    assert 0.3 < oracle_recall(groups) < 1.0  # 5- and 6-token aspects are no candidates

    class Perfect:  # scores the gold spans first: recall@k reaches the oracle, never more
        def score_groups(self, groups):
            return [[1.0 if s in g.gold else 0.0 for s in g.spans] for g in groups]

    m = ranking_eval(Perfect(), groups, Perfect())
    assert m["recall@20"] == pytest.approx(m["oracle_recall"]) and m["baseline_recall@20"] == m["recall@20"]
    m = evaluate(Perfect(), rows)
    assert {f"baseline_recall@{k}" for k in (5, 10, 15, 20)} <= set(m) and m["recall@10"] <= m["oracle_recall"]


def test_rows_from_file_keeps_test_rows_of_app_f_files_and_folders(tmp_path):
    appf = (
        [dict(r, split="train") for r in aspect_rows(8, seed=1)]
        + [dict(r, split="dev") for r in aspect_rows(3, seed=2)]
        + [dict(r, split="test") for r in aspect_rows(2, seed=3)]
    )
    data = tmp_path / "appf.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in appf))
    train, dev = rows_from_file(data)
    assert len({r["sentence"] for r in train}) == 8
    assert len({r["sentence"] for r in dev if r["split"] == "dev"}) == 3
    assert len({r["sentence"] for r in dev if r["split"] == "test"}) == 2
    folder = tmp_path / "split"
    folder.mkdir()
    for part, seed, n in (("train", 1, 8), ("dev", 2, 3), ("test", 3, 2)):
        (folder / f"{part}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in aspect_rows(n, seed=seed)))
    train, dev = rows_from_file(folder)
    assert len({r["sentence"] for r in train}) == 8
    assert {r["split"] for r in dev} == {"dev", "test"}
    with pytest.raises(errors.TrainerError, match="train.jsonl and dev.jsonl"):
        rows_from_file(tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["span_ranker", "ranker"])
def test_test_rows_are_scored_by_evaluate_and_never_change_the_dev_figures(kind, tiny_bert, tmp_path):  # noqa: F811
    spec = registry.get_trainer(kind)
    train, dev, test = (
        rows_of(aspect_rows(16, seed=1)),
        rows_of(aspect_rows(4, seed=2)),
        rows_of(aspect_rows(4, seed=3)),
    )
    hp = dict(TINY_HP, max_steps=6)
    results = {}
    for name, rows_dev in (("plain", dev), ("tagged", dev + [dict(r, split="test") for r in test])):
        out = tmp_path / name
        out.mkdir()
        results[name] = (
            spec.train(
                TrainRequest(
                    kind=kind,
                    rows_train=train,
                    rows_dev=rows_dev,
                    base_model=tiny_bert,
                    seed=3,
                    hyperparameters=hp,
                    output_dir=out,
                )
            ),
            out,
        )
    plain, (tagged, out) = results["plain"][0], results["tagged"]
    assert plain.test_metrics is None
    for key in ("recall@10", "baseline_recall@10", "oracle_recall", "sentences"):
        assert tagged.metrics[key] == pytest.approx(plain.metrics[key]), key  # dev figures: test rows unseen
    m = tagged.test_metrics
    assert m["sentences"] == 4 and 0.0 < m["oracle_recall"] < 1.0
    assert {f"recall@{k}" for k in (5, 10, 15, 20)} | {f"baseline_recall@{k}" for k in (5, 10, 15, 20)} <= set(m)
    again = spec.evaluate(spec.load(out), test)  # what `models evaluate VERSION --data test.jsonl` computes
    assert set(again) == set(m) and all(again[k] == pytest.approx(m[k], abs=1e-6) for k in m)


@pytest.mark.slow
def test_cross_topic_reports_the_baseline_and_the_oracle_per_held_out_topic(tiny_bert, tmp_path):  # noqa: F811
    spec = registry.get_trainer("span_ranker")
    rows = rows_of(aspect_rows(18, seed=4, topics=("cloning", "minimum wage", "nuclear energy")))
    train, dev = split_by_sentence(rows, dev_fraction=0.25, seed=1)
    result = spec.train(
        TrainRequest(
            kind="span_ranker",
            rows_train=train,
            rows_dev=dev,
            base_model=tiny_bert,
            seed=1,
            hyperparameters=dict(TINY_HP, max_steps=2, eval="cross-topic"),
            output_dir=tmp_path,
        )
    )
    per_topic = result.info["cross_topic"]["per_topic"]
    assert set(per_topic) == {"cloning", "minimum wage", "nuclear energy"}
    for key in ("recall@10", "baseline_recall@10", "oracle_recall"):
        vals = [m[key] for m in per_topic.values()]
        assert result.metrics[f"cross_topic_{key}"] == pytest.approx(sum(vals) / len(vals)), key
    assert all(m["recall@10"] <= m["oracle_recall"] + 1e-9 for m in per_topic.values())
