"""Silver kind ``argument`` (issue 21.2): the argument / stance classifier over corpus sentences writes predicted
stances (+ probability) as silver labels, never touching Sentence.stance; ``arguments_from_run`` chains a tagger run
onto the sentences an argument run predicted pro or con; :func:`ml.silver.predicted_stances` reads them back."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from corpus.models import Sentence, Topic
from ml import silver
from ml.models import ModelVersion, SilverLabel, SilverRun
from tests.ml.test_silver import FakeTagger

pytestmark = pytest.mark.django_db


class FakeArgumentModel:
    """The loaded argument model's interface: ``predict([(topic, sentence)]) -> [{"label", "probs"}]`` with UKP
    label names (mapped to pro / con / none by its ``stances``). Remembers the pairs it was given."""

    labels = ["Argument_for", "Argument_against", "NoArgument"]
    stances = {"Argument_for": "pro", "Argument_against": "con", "NoArgument": "none"}

    def __init__(self):
        self.pairs = []

    def predict(self, pairs):
        self.pairs.extend(pairs)
        out = []
        for _topic, text in pairs:
            label = "Argument_for" if "helps" in text else "Argument_against" if "harms" in text else "NoArgument"
            probs = {k: (0.8 if k == label else 0.1) for k in self.labels}
            out.append({"label": label, "probs": probs})
        return out


@pytest.fixture
def corpus():
    nuclear = Topic.objects.create(name="nuclear energy")
    uniforms = Topic.objects.create(name="school uniforms")
    for i in range(12):
        what = ("it helps", "it harms", "the costs were mild")[i % 3]
        Sentence.objects.create(
            topic=nuclear if i < 9 else uniforms,
            text=f"Sentence {i}: {what}.",
            stance="none",
            source="crawl",
            content_hash=f"s{i}",
        )
    return nuclear


@pytest.fixture
def versions(tmp_path):
    arg = ModelVersion.objects.create(kind="argument", status="ready", artifact_path=str(tmp_path), is_active=True)
    tag = ModelVersion.objects.create(kind="tagger", status="ready", artifact_path=str(tmp_path), is_active=True)
    return arg, tag


def test_argument_run_writes_predicted_stances_apart_from_gold(corpus, versions):
    model = FakeArgumentModel()
    run = silver.start("argument", source="crawl", batch_size=5, shards=2)
    result = silver.process(run.pk, model=model)
    assert result["status"] == "done" and result["processed"] == 12 and result["shard_count"] == 2
    assert result["labelled"] == 8  # pro or con
    # the model got (topic name, sentence) pairs
    assert ("nuclear energy", "Sentence 0: it helps.") in model.pairs
    assert ("school uniforms", "Sentence 10: it harms.") in model.pairs
    first = SilverLabel.objects.get(run=run, sentence__content_hash="s0")
    assert (first.stance, first.stance_probability, first.spans) == ("pro", pytest.approx(0.8), [])
    assert first.stance_probs == {"pro": pytest.approx(0.8), "con": pytest.approx(0.1), "none": pytest.approx(0.1)}
    assert SilverLabel.objects.get(run=run, sentence__content_hash="s2").stance == "none"
    # silver never changes the sentences' own stance
    assert set(Sentence.objects.values_list("stance", flat=True)) == {"none"}
    stances = list(silver.predicted_stances(run.pk))
    assert len(stances) == 12 and [s[0] for s in stances] == sorted(s[0] for s in stances)
    args = list(silver.predicted_stances(run.pk, stances=("pro", "con"), min_probability=0.5))
    assert {s[1] for s in args} == {"pro", "con"} and len(args) == 8
    by_id = {sid: st for sid, st, _ in args}
    assert by_id[Sentence.objects.get(content_hash="s1").pk] == "con"


def test_tagger_run_over_the_arguments_of_an_argument_run(corpus, versions):
    arg_run = silver.start("argument", all_sentences=True, batch_size=4)
    silver.process(arg_run.pk, model=FakeArgumentModel())
    tag_run = silver.start("tagger", options={"arguments_from_run": arg_run.pk}, batch_size=3, shards=2)
    assert tag_run.options["arguments_from_run"] == arg_run.pk and tag_run.total == 8
    result = silver.process(tag_run.pk, model=FakeTagger())
    assert result["status"] == "done" and result["processed"] == 8
    tagged = set(SilverLabel.objects.filter(run=tag_run).values_list("sentence__content_hash", flat=True))
    assert tagged == {f"s{i}" for i in range(12) if i % 3 != 2}
    # with a topic as well: the intersection
    topical = silver.start("tagger", topic=corpus, options={"arguments_from_run": arg_run.pk})
    assert topical.total == 6
    with pytest.raises(silver.SilverError, match="no argument silver run"):
        silver.start("tagger", options={"arguments_from_run": tag_run.pk})


def test_release_rows_of_an_argument_run_carry_the_predicted_stance(corpus, versions):
    run = silver.start("argument", all_sentences=True, options={"drop_unlabelled": True})
    silver.process(run.pk, model=FakeArgumentModel())
    rows = list(silver.silver_rows(SilverRun.objects.get(pk=run.pk)))
    assert len(rows) == 8 and {r["stance"] for r in rows} == {"pro", "con"}
    assert all(r["corpus_stance"] == "none" and r["stance_probability"] == pytest.approx(0.8) for r in rows)
    assert len(list(silver.silver_rows(run, options={"drop_unlabelled": False}))) == 12


def test_cli_argument_kind_and_arguments_from_run(corpus, versions, monkeypatch):
    models = {"argument": FakeArgumentModel(), "tagger": FakeTagger()}
    monkeypatch.setattr("ml.registry.load_model", lambda v, **kw: models[v.kind])
    out = StringIO()
    call_command("silver", "start", "--kind", "argument", "--all", "--shards", "3", "--json", stdout=out)
    first = json.loads(out.getvalue())
    assert first["status"] == "done" and first["shard_count"] == 3 and first["labelled"] == 8
    out = StringIO()
    call_command("silver", "start", "--kind", "tagger", "--arguments-from-run", str(first["run"]), "--json", stdout=out)
    second = json.loads(out.getvalue())
    assert second["processed"] == 8 and second["status"] == "done"
    with pytest.raises(CommandError) as err:
        call_command("silver", "start", "--kind", "tagger", "--arguments-from-run", "9999", stdout=StringIO())
    assert err.value.returncode == 2


@pytest.mark.slow
def test_a_tiny_trained_argument_model_through_the_silver_path(tmp_artifacts):
    """The real ``argument`` model (tiny BERT from a config) loaded from its artifact by the registry."""
    from ml.versions import train_version
    from tests.ml.test_argument import TINY, planted

    version = train_version(
        "argument", rows_train=planted(240, 1), rows_dev=planted(60, 2), seed=3, hyperparameters=TINY
    )
    topics = {}
    for i, row in enumerate(planted(30, 7)):
        topic = topics.get(row["topic"]) or topics.setdefault(row["topic"], Topic.objects.create(name=row["topic"]))
        Sentence.objects.create(
            topic=topic, text=row["sentence"], stance="none", content_hash=f"p{i}", metadata={"gold": row["label"]}
        )
    run = silver.start("argument", all_sentences=True, version=version, batch_size=8, shards=2)
    result = silver.process(run.pk)
    assert result["status"] == "done" and result["processed"] == 30
    labels = list(SilverLabel.objects.filter(run=run).select_related("sentence"))
    assert len(labels) == 30 and all(lab.stance in ("pro", "con", "none") for lab in labels)
    assert all(lab.stance_probs and sum(lab.stance_probs.values()) == pytest.approx(1.0, abs=1e-4) for lab in labels)
    correct = sum(lab.stance == lab.sentence.metadata["gold"] for lab in labels)
    assert correct >= 20  # the planted signal is learnt (majority class alone: about half)
    assert set(Sentence.objects.values_list("stance", flat=True)) == {"none"}
