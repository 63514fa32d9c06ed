"""``--data TRAIN --dev DEV`` keeps every training row (issue 23: ~20 % of TRAIN was dropped by TRAIN's own hash
split), and rows marked ``split: "test"`` reach the version's test metrics, never training or selection."""

from __future__ import annotations

import json

import pytest

from ml import loop, registry, splits, versions
from ml.data import ranker_rows_from_file
from ml.models import ModelVersion
from ml.registry import TrainerSpec, TrainResult
from tests.ml.fakes import fake_load, fake_train, register_fake

pytestmark = pytest.mark.django_db


def appf_line(i: int, topic: str = "gun control", split: str | None = None) -> dict:
    sentence = f"Sentence {i} says background checks number {i} save lives ."
    aspect = "background checks"
    row = {
        "hash": f"h{i:08d}",
        "topic": topic,
        "stance": "Argument_for",
        "sentence": sentence,
        "aspect_pos_string": [aspect],
        "aspect_pos": [f"({sentence.index(aspect)},{len(aspect)})"],
    }
    if split:
        row["split"] = split
    return row


def write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture
def fake_kind(tmp_artifacts):
    seen = {}

    def train(req):
        seen.update(train=list(req.rows_train), dev=list(req.rows_dev), test=list(req.rows_test))
        return fake_train(req)

    spec = registry.register_trainer(
        TrainerSpec(
            kind="fake_split",
            train=train,
            load=fake_load,
            primary_metric="acc",
            evaluate=lambda model, rows: {"acc": 0.25, "n": len(rows), "majority_acc": 0.5},
        )
    )
    registry.clear_model_cache()
    yield spec, seen
    registry.unregister_trainer("fake_split")
    registry.clear_model_cache()


@pytest.mark.parametrize("kind", ["tagger", "ranker"])
def test_explicit_dev_file_keeps_every_training_row(tmp_path, kind):
    train_file = write(tmp_path / "train.jsonl", [appf_line(i) for i in range(40)])
    dev_file = write(tmp_path / "dev.jsonl", [appf_line(100 + i) for i in range(6)])
    spec = registry.get_trainer(kind)
    all_train = sum(len(part) for part in spec.rows_from_file(train_file)[:2])
    all_dev = sum(len(part) for part in spec.rows_from_file(dev_file)[:2])
    train, dev = loop.rows_from_file(kind, train_file, dev_path=dev_file)
    assert len(train) == all_train and len(dev) == all_dev  # before: only the train side of TRAIN's hash split
    sentences = {r.get("sentence") or r.get("text") for r in train}
    assert len(sentences) == 40 and not sentences & {r.get("sentence") or r.get("text") for r in dev}


def test_a_file_of_split_train_rows_is_not_hash_split_when_dev_is_given(tmp_path):
    train_file = write(tmp_path / "train.jsonl", [appf_line(i, split="train") for i in range(30)])
    dev_file = write(tmp_path / "dev.jsonl", [appf_line(100 + i, split="dev") for i in range(5)])
    train, dev = loop.rows_from_file("tagger", train_file, dev_path=dev_file)
    assert len(train) == 30 and len(dev) == 5
    # the ranker kind reads the same files into label rows: every n-gram row of the 30 sentences stays
    all_rows = sum(
        len(p) for p in ranker_rows_from_file(write(tmp_path / "nosplit.jsonl", [appf_line(i) for i in range(30)]))
    )
    train, _ = loop.rows_from_file("ranker", train_file, dev_path=dev_file)
    assert len(train) == all_rows


def test_default_reader_with_dev_file_keeps_train_rows_and_sets_test_rows_apart(fake_kind, tmp_path):
    rows = [{"text": f"t{i}", "label": 1, "split": "test" if i < 3 else "train"} for i in range(20)]
    train, dev, test = loop.rows_from_file_parts(
        "fake_split",
        write(tmp_path / "a.jsonl", rows),
        dev_path=write(tmp_path / "b.jsonl", [{"text": "d", "label": 0}]),
    )
    assert len(train) == 17 and [r["text"] for r in dev] == ["d"] and [r["text"] for r in test] == ["t0", "t1", "t2"]


def test_test_rows_give_test_metrics_and_are_never_trained_or_selected_on(fake_kind, tmp_path):
    _spec, seen = fake_kind
    rows = (
        [{"text": f"t{i}", "label": 1, "split": "train"} for i in range(10)]
        + [{"text": f"d{i}", "label": 0, "split": "dev"} for i in range(4)]
        + [{"text": f"x{i}", "label": 0, "split": "test"} for i in range(5)]
    )
    out = loop.train_and_activate("fake_split", data=write(tmp_path / "all.jsonl", rows), activate="always")
    assert {r["text"][0] for r in seen["train"]} == {"t"} and {r["text"][0] for r in seen["dev"]} == {"d"}
    assert [r["text"] for r in seen["test"]] == [f"x{i}" for i in range(5)]
    metrics = ModelVersion.objects.get(pk=out["version"]).metrics
    # the fake trainer reports no test metrics: the registry scored the saved model with spec.evaluate
    assert metrics["test"] == {"acc": 0.25, "n": 5, "majority_acc": 0.5} and metrics["n_test"] == 5
    assert metrics["test_evaluated_by"] == "registry" and metrics["dev"]["n_dev"] == 4


def test_test_rows_inside_the_dev_list_are_moved_out_and_the_trainer_may_report_its_own(tmp_artifacts):
    seen = {}

    def train(req):
        seen["dev"], seen["test"] = len(req.rows_dev), len(req.rows_test)
        (req.output_dir / "weights.json").write_text("{}")
        return TrainResult(metrics={"acc": 0.5}, test_metrics={"acc": 0.7, "n": len(req.rows_test)})

    registry.register_trainer(TrainerSpec(kind="own_test", train=train, load=fake_load, primary_metric="acc"))
    try:
        dev = [{"text": "d"}] * 3 + [{"text": "x", "split": "test"}] * 2
        v = versions.train_version("own_test", rows_train=[{"text": "t"}], rows_dev=dev)
    finally:
        registry.unregister_trainer("own_test")
    assert seen == {"dev": 3, "test": 2} and v.n_dev == 3
    assert v.metrics["test"] == {"acc": 0.7, "n": 2} and v.metrics["test_evaluated_by"] == "trainer"


def test_without_test_rows_nothing_changes(tmp_artifacts):
    register_fake("fake_plain")
    try:
        v = versions.train_version("fake_plain", rows_train=[{"label": 1}], rows_dev=[{"label": 1}])
    finally:
        registry.unregister_trainer("fake_plain")
    assert "test" not in v.metrics and "n_test" not in v.metrics
    assert v.data_hash == splits.data_hash([{"label": 1}], [{"label": 1}])
