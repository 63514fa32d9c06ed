"""The retrain loop: M new aggregated labels since the active version's snapshot -> train -> activate only if
better on the dev split; the submission receiver enqueues a debounced ml.tasks.maybe_retrain after commit."""

from __future__ import annotations

import json

import pytest

from annotation import services
from annotation.models import Item
from annotation.task_types.aspect.aggregation import adjudicate
from annotation.task_types.aspect.appf import import_appf
from ml import loop, registry
from ml.data import ranker_rows_from_project
from ml.models import ModelVersion
from ml.registry import TrainerSpec, TrainResult
from ml.trainers.ranker import rows_from_file as ranker_rows_from_file
from tests.factories import ProjectFactory

pytestmark = pytest.mark.django_db

SENTENCES = [
    ("gun control", "Universal background checks save lives.", ["background checks"]),
    ("gun control", "Gun bans punish law-abiding owners.", ["law-abiding owners"]),
    ("school uniforms", "Uniforms reduce bullying at school.", ["bullying"]),
    ("death penalty", "Innocent people have been executed.", ["Innocent people"]),
    ("abortion", "Women have a right to choose.", ["a right to choose"]),
    ("nuclear energy", "Nuclear energy is clean but expensive.", ["clean", "expensive"]),
    ("cloning", "Cloning is unsafe and unnatural.", ["unsafe"]),
    ("minimum wage", "A higher minimum wage reduces poverty.", ["poverty"]),
    ("marijuana", "Legal marijuana brings tax revenue.", ["tax revenue"]),
    ("abortion", "Late abortions are rarely needed.", []),
]


def write_appf(path, rows):
    lines = []
    for i, (topic, sentence, aspects) in enumerate(rows):
        lines.append(
            json.dumps(
                {
                    "hash": f"h{abs(hash(sentence)) % 10**8:08d}{i}",
                    "topic": topic,
                    "stance": "Argument_for",
                    "sentence": sentence,
                    "aspect_pos_string": aspects,
                    "aspect_pos": [f"({sentence.index(a)},{len(a)})" for a in aspects],
                }
            )
        )
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


class Scores:
    """A fake "ranker" kind: each training run reports the next score; evaluate() gives the stored dev score."""

    def __init__(self, scores, evaluate=None):
        self.scores = list(scores)
        self.seen: list[tuple[int, int]] = []
        # the readers are the real ranker kinds' (App. F files and an aspect project's final answers as label rows)
        self.spec = TrainerSpec(
            kind="ranker",
            train=self.train,
            load=self.load,
            primary_metric="ndcg",
            evaluate=evaluate,
            rows_from_file=ranker_rows_from_file,
            rows_from_project=ranker_rows_from_project,
        )

    def train(self, req):
        self.seen.append((len(req.rows_train), len(req.rows_dev)))
        assert all({"sentence", "candidate", "score"} <= set(r) for r in req.rows_train)  # §3.1 Step 2a rows
        score = self.scores.pop(0)
        (req.output_dir / "model.json").write_text(json.dumps({"score": score}))
        return TrainResult(metrics={"ndcg": score})

    @staticmethod
    def load(path):
        return json.loads((path / "model.json").read_text())


@pytest.fixture
def ranker_kind(tmp_artifacts, monkeypatch):
    # the items' candidate lists are ranked by the active "ranker" version when there is one (ml.rankers): these
    # fake versions are not real rankers, so the page-building side keeps to the baseline ranker here
    import importlib.util

    if importlib.util.find_spec("ml.rankers") is not None:
        monkeypatch.setattr("ml.rankers.active_ranker", lambda project=None: None)
    previous = registry._TRAINERS.get("ranker")
    holder = {}

    def use(scores, evaluate=None):
        holder["fake"] = Scores(scores, evaluate)
        registry.register_trainer(holder["fake"].spec)
        return holder["fake"]

    yield use
    registry.unregister_trainer("ranker")
    if previous is not None:
        registry.register_trainer(previous)
    registry.clear_model_cache()


@pytest.fixture
def project():
    return ProjectFactory(
        name="Aspects",
        slug="aspects-loop",
        task_type="aspect",
        assignments_per_item=2,
        items_per_hit=4,
        engine={"retrain_every": 4},
        items=0,
        build=False,
    )


def add_labels(project, tmp_path, rows, name):
    """Import the rows, then an expert adjudicates each new item with its reference spans: human labels (an
    imported reference alone is no label, tests/ml/test_retrain_budget.py)."""
    before = set(Item.objects.filter(project=project).values_list("pk", flat=True))
    import_appf(write_appf(tmp_path / name, rows), project)
    for item in Item.objects.filter(project=project).exclude(pk__in=before):
        reference = item.payload.get("reference") or {}
        adjudicate(
            item,
            [[a["begin"], a["length"]] for a in reference.get("aspects") or []],
            no_aspect=not reference.get("aspects"),
            by="expert",
        )


def test_retrain_every_setting_and_project_engine(project, settings):
    assert loop.retrain_every(project) == 4
    project.config = {"retrain_every": 9}  # a task-type option of that name is no engine setting
    project.engine = {}
    settings.ARGORA_RETRAIN_EVERY = 7
    assert loop.retrain_every(project) == 7
    del settings.ARGORA_RETRAIN_EVERY
    assert loop.retrain_every(project) == 50
    assert loop.retrain_kinds(project) == ["ranker"]
    project.task_type = "bws_similarity"
    assert loop.retrain_kinds(project) == []


def test_loop_trains_after_m_labels_and_activates_only_better_versions(project, ranker_kind, tmp_path):
    fake = ranker_kind([0.50, 0.40, 0.70])
    add_labels(project, tmp_path, SENTENCES[:3], "a.jsonl")
    [out] = loop.maybe_retrain(project)
    assert out["skipped"].startswith("3 new labels") and ModelVersion.objects.count() == 0

    add_labels(project, tmp_path, SENTENCES[3:5], "b.jsonl")  # 5 labels, no version yet -> train
    [out] = loop.maybe_retrain(project)
    v1 = ModelVersion.objects.get(pk=out["version"])
    assert out["activated"] and v1.is_active and v1.snapshot_labels == 5
    assert v1.data_snapshot == "project:aspects-loop@5" and v1.parent is None
    train_rows, dev_rows = fake.seen[0]
    assert train_rows > 0 and dev_rows > 0

    [out] = loop.maybe_retrain(project)  # nothing new since the active version's snapshot
    assert out["skipped"].startswith("0 new labels") and ModelVersion.objects.count() == 1

    add_labels(project, tmp_path, SENTENCES[5:9], "c.jsonl")  # 9 labels: 4 new -> retrain; it scores worse
    [out] = loop.maybe_retrain(project)
    v2 = ModelVersion.objects.get(pk=out["version"])
    assert v2.status == "ready" and not v2.is_active and out["activated"] is False
    assert v2.parent_id == v1.pk and out["compared_with"]["how"] == "stored dev metrics"
    assert registry.active_version("ranker", project).pk == v1.pk

    [out] = loop.maybe_retrain(project)  # the losing v2 was an attempt on 9 labels: no retrain at every check
    assert out["skipped"].startswith("0 new labels") and out["since"] == 9 and ModelVersion.objects.count() == 2

    add_labels(project, tmp_path, SENTENCES[9:], "d.jsonl")  # counted from v2 (the last attempt): 10 - 9 < 4
    [out] = loop.maybe_retrain(project)
    assert out["skipped"].startswith("1 new labels") and ModelVersion.objects.count() == 2
    project.engine = {"retrain_every": 1}
    [out] = loop.maybe_retrain(project)
    v3 = ModelVersion.objects.get(pk=out["version"])
    assert out["activated"] and v3.is_active and v3.parent_id == v1.pk
    assert list(ModelVersion.objects.filter(is_active=True)) == [v3]


def test_loop_compares_on_the_new_dev_rows_when_the_spec_can_evaluate(project, ranker_kind, tmp_path):
    # the active model scores 0.9 on the new dev rows (its stored 0.3 came from an older, smaller dev split)
    fake = ranker_kind([0.30, 0.60], evaluate=lambda model, rows: {"ndcg": 0.9 if model["score"] == 0.30 else 0.0})
    add_labels(project, tmp_path, SENTENCES[:5], "a.jsonl")
    [first] = loop.maybe_retrain(project)
    add_labels(project, tmp_path, SENTENCES[5:], "b.jsonl")
    [out] = loop.maybe_retrain(project)
    assert out["activated"] is False and out["compared_with"]["primary_on_new_dev"] == 0.9
    assert registry.active_version("ranker", project).pk == first["version"]
    assert len(fake.seen) == 2


def test_loop_off_and_failed_training(project, ranker_kind, tmp_path):
    ranker_kind([])  # a training run would pop from an empty list -> IndexError
    add_labels(project, tmp_path, SENTENCES, "a.jsonl")
    project.engine = {"retrain_every": 0}
    assert loop.maybe_retrain(project)[0]["skipped"] == "retrain_every is 0"
    project.engine = {"retrain_every": 2}
    with pytest.raises(IndexError):
        loop.maybe_retrain(project)
    v = ModelVersion.objects.get()
    assert v.status == "failed" and not v.is_active
    # the per-(project, kind) lock was released: the next run tries again
    with pytest.raises(IndexError):
        loop.maybe_retrain(project)


def test_maybe_retrain_task_runs_the_loop(project, ranker_kind, tmp_path):
    from ml.tasks import maybe_retrain

    ranker_kind([0.5])
    add_labels(project, tmp_path, SENTENCES[:5], "a.jsonl")
    result = maybe_retrain.apply(args=[project.pk]).get()
    assert result[0]["activated"] is True
    assert maybe_retrain.apply(args=[10**9]).get() == []


def test_submission_receiver_enqueues_a_debounced_retrain_on_commit(
    project, monkeypatch, django_capture_on_commit_callbacks
):
    from django.core.cache import cache

    from annotation.models import Assignment
    from annotation.signals import assignment_submitted
    from ml import tasks

    cache.delete(loop.DEBOUNCE_KEY.format(project.pk))
    sent = []
    monkeypatch.setattr(tasks.maybe_retrain, "apply_async", lambda args=None, **kw: sent.append((args, kw)))
    assignment = Assignment(project=project)
    with django_capture_on_commit_callbacks(execute=True):
        assignment_submitted.send(sender=Assignment, assignment=assignment)
        assert sent == []  # only after commit
        assignment_submitted.send(sender=Assignment, assignment=assignment)  # debounced
    assert len(sent) == 1 and sent[0][0] == [project.pk] and sent[0][1]["countdown"] == loop.debounce_seconds()

    other = services.create_project(name="Off", slug="off", task_type="aspect", engine={"retrain_every": 0})
    with django_capture_on_commit_callbacks(execute=True):
        assignment_submitted.send(sender=Assignment, assignment=Assignment(project=other))
    assert len(sent) == 1
    cache.delete(loop.DEBOUNCE_KEY.format(project.pk))
