"""Silver runs ask the trainer spec (``TrainerSpec.silver``, :class:`ml.registry.SilverSpec`), never a kind name: a
kind registered only here annotates sentences, chains a stance run, and shapes its release rows; a kind without a
silver spec is refused."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from annotation.task_types import all_task_types
from corpus.models import FactVariable, Sentence, Topic
from ml import registry, silver
from ml.models import ModelVersion
from ml.registry import SilverSpec
from tests.ml.fakes import register_fake

pytestmark = pytest.mark.django_db


class Model:
    """A loaded model that tags the word "wind" and calls a sentence pro when it mentions "good"."""

    def predict(self, texts, variables):
        return [
            {
                "spans": [{"begin": t.index("wind"), "end": t.index("wind") + 4, "confidence": 0.7}]
                if "wind" in t
                else [],
                "confidence": 0.5,
                "n_variables": len(v),
            }
            for t, v in zip(texts, variables)
        ]


def predict_spans(model, batch):
    assert batch.batch_size == len(batch.texts)
    return model.predict(batch.texts, batch.variables())


def predict_stances(model, batch):
    return [
        {
            "stance": "pro" if "good" in text else "none",
            "stance_probability": 0.9,
            "stance_probs": {"pro": 0.9, "none": 0.1},
            "topic_name": name,
        }
        for name, text in zip(batch.topic_names(), batch.texts)
    ]


def release_row(row, label, sentence):
    return dict(row, words=len(sentence.text.split()), predicted=label.stance)


@pytest.fixture
def kinds(tmp_path):
    register_fake("spans_here", silver=SilverSpec(predict=predict_spans, release_row=release_row))
    register_fake("stances_here", silver=SilverSpec(predict=predict_stances, stances=True))
    register_fake("no_silver")
    for kind in ("spans_here", "stances_here", "no_silver"):
        ModelVersion.objects.create(kind=kind, status="ready", artifact_path=str(tmp_path), is_active=True)
    yield
    for kind in ("spans_here", "stances_here", "no_silver"):
        registry.unregister_trainer(kind)


@pytest.fixture
def corpus():
    energy = Topic.objects.create(name="energy")
    FactVariable.objects.create(topic=energy, text="wind farms", status=FactVariable.Status.ACTIVE)
    for i, text in enumerate(["Wind is good: wind power.", "Coal is dirty.", "good wind, good sun.", "Nothing."]):
        Sentence.objects.create(topic=energy, text=text, stance="none", content_hash=f"e{i}")
    return energy


def test_a_kind_declared_only_by_its_spec_runs_chains_and_shapes_its_rows(kinds, corpus):
    assert {"spans_here", "stances_here"} <= set(registry.silver_kinds())
    assert "no_silver" not in registry.silver_kinds()
    stances = silver.start("stances_here", topic=corpus, batch_size=3)
    assert silver.process(stances.pk, model=Model())["labelled"] == 2  # "good" twice: pro counts as labelled
    assert [s for _, s, _ in silver.predicted_stances(stances.pk)] == ["pro", "none", "pro", "none"]

    spans = silver.start("spans_here", options={"arguments_from_run": stances.pk}, batch_size=2)
    assert spans.total == 2  # the sentences the stance run predicted pro
    result = silver.process(spans.pk, model=Model())
    assert result["status"] == "done" and result["labelled"] == 2
    rows = list(silver.silver_rows(spans))
    assert [r["sentence"] for r in rows] == ["Wind is good: wind power.", "good wind, good sun."]
    assert rows[0]["spans"][0]["begin"] == 14  # the first lower-case "wind"
    assert rows[0]["words"] == 5 and rows[0]["predicted"] == ""  # the kind's own release fields

    with pytest.raises(silver.SilverError, match="no argument silver run"):  # a span run predicts no stances
        silver.start("spans_here", options={"arguments_from_run": spans.pk})


def test_a_kind_without_a_silver_spec_is_refused(kinds, corpus):
    with pytest.raises(silver.SilverError, match="'no_silver' is not a silver kind .*spans_here"):
        silver.start("no_silver", all_sentences=True)
    with pytest.raises(silver.SilverError, match="'nope' is not a silver kind"):
        silver.start("nope", all_sentences=True)


def test_the_real_silver_kinds_come_from_their_trainer_modules():
    assert {"tagger", "argspan", "argspanscheme", "argument"} <= set(registry.silver_kinds())
    assert registry.get_trainer("argument").silver.stances and not registry.get_trainer("tagger").silver.stances
    assert registry.get_trainer("ranker").silver is None


def test_silver_and_the_loop_name_no_trainer_kind_and_no_task_type():
    """What a kind or a task type does is declared in its own package (SilverSpec, TaskType.retrain_kinds): the
    silver service and the retrain loop ask for it instead of naming them."""
    names = set(registry.trainer_kinds()) | {t.name for t in all_task_types()}
    ml = Path(silver.__file__).parent
    for module in ("silver.py", "loop.py"):
        text = (ml / module).read_text(encoding="utf-8")
        named = sorted(n for n in names if re.search(r"[\"'`]%s[\"'`]|task_types\.%s\b" % (n, n), text))
        assert named == [], f"ml/{module} names {named}"
