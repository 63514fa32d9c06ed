"""Retraining in proportion (issue 37, point 4): the retrain loop counts and trains on the project's human labels
only (never the imported references of a corpus), within a budget (rows refused, steps / seconds capped), and every
attempt is recorded and shown in the studio (the project page and its retraining page)."""

from __future__ import annotations

import json

import pytest
import torch
from django.contrib.auth.models import Group
from django.core.cache import cache
from django.urls import reverse

from annotation import model_annotators as ma
from annotation import services
from annotation.models import AuditEntry, Item, Worker
from annotation.signals import assignment_submitted
from annotation.task_types.aspect.aggregation import adjudicate
from annotation.task_types.aspect.appf import import_appf
from annotation.task_types.span_grounding.export import project_rows
from annotation.task_types.validity_novelty import results
from argora.errors import FieldError
from argora.roles import RESEARCHER_GROUP
from ml import loop, registry, tasks, training
from ml.data import human_aspect_rows, ranker_rows_from_project, synthetic_appf
from ml.models import ModelVersion, RetrainAttempt
from ml.registry import TrainerSpec, TrainResult
from tests.annotation.task_types.validity_novelty.helpers import ROWS, csv_text, write
from tests.conftest import join_every_project
from tests.ml.test_taggers import _exported_span_project

pytestmark = pytest.mark.django_db


def write_rows(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def planted_answer(payload: dict) -> dict:
    """A worker's rule: the last single-word candidate offered is the aspect."""
    offered = [c for c in payload["candidates"] + payload["more"] if " " not in c["text"]]
    return {"aspects": [max(offered, key=lambda c: c["begin"])["id"]], "no_aspect": False, "not_in_lists": False}


def crowd_answers(project, worker, hits: int) -> list[Item]:
    """``hits`` HITs answered by ``worker`` through the services (crowd responses); the items answered."""
    answered = []
    for _ in range(hits):
        assignment = services.reserve_next_assignment(project, worker)
        items = services.assignment_items(assignment)
        services.submit_assignment(assignment, worker, {str(i.pk): planted_answer(i.payload) for i in items})
        answered.extend(items)
    return answered


class Recording:
    """A fake "ranker" kind reading the real ranker kinds' project rows: records the rows it is handed."""

    def __init__(self):
        self.seen: list[tuple[list, list]] = []
        self.spec = TrainerSpec(
            kind="ranker",
            train=self.train,
            load=lambda path: {},
            primary_metric="ndcg",
            rows_from_project=ranker_rows_from_project,
        )

    def train(self, req):
        self.seen.append((req.rows_train, req.rows_dev))
        (req.output_dir / "model.json").write_text("{}")
        return TrainResult(metrics={"ndcg": 0.5})


class TinyLoop:
    """A fake "ranker" kind that trains a real (tiny) model through ml.training.TrainLoop: 500 planned steps."""

    def __init__(self):
        self.loops = []
        self.spec = TrainerSpec(
            kind="ranker",
            train=self.train,
            load=lambda path: {},
            primary_metric="ndcg",
            rows_from_project=ranker_rows_from_project,
        )

    def train(self, req):
        loop_ = self.run_loop()
        (req.output_dir / "model.json").write_text("{}")
        return TrainResult(metrics={"ndcg": 0.5}, info={"steps": loop_.step})

    def run_loop(self):
        model = torch.nn.Linear(2, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda step: 1.0)
        x, y = torch.ones(4, 2), torch.zeros(4, 1)
        loop_ = training.TrainLoop(
            model,
            opt,
            sched,
            lambda batch: ((model(x) - y) ** 2).mean(),
            lambda epoch: iter(range(100)),
            device="cpu",
            total=500,
            epochs=5,
            evaluate=lambda: {"ndcg": 0.5},
            better=training.higher("ndcg"),
        )
        loop_.run()
        self.loops.append(loop_)
        return loop_


@pytest.fixture
def kind(tmp_artifacts, monkeypatch):
    monkeypatch.setattr("ml.rankers.active_ranker", lambda project=None: None)  # fake versions rank nothing
    previous = registry._TRAINERS.get("ranker")

    def use(fake):
        registry.register_trainer(fake.spec)
        return fake

    yield use
    registry.unregister_trainer("ranker")
    if previous is not None:
        registry.register_trainer(previous)
    registry.clear_model_cache()


def import_project(tmp_path, n: int):
    """An aspect project of ``n`` App. F rows imported with their reference answers, 3 items per HIT."""
    project = services.create_project(
        name="Imported aspects",
        slug="imported-aspects",
        task_type="aspect",
        assignments_per_item=1,
        items_per_hit=3,
        status="active",
        engine={"retrain_every": 6},
    )
    import_appf(write_rows(tmp_path / "appf.jsonl", synthetic_appf(n, seed=7)), project)
    services.build_hits(project)
    return project


@pytest.fixture
def imported(tmp_path):
    return import_project(tmp_path, 40)


@pytest.fixture
def worker(django_user_model):
    return services.worker_for_user(django_user_model.objects.create_user("crowd-1"))


@pytest.fixture
def rclient(client, django_user_model):
    user = django_user_model.objects.create_user("researcher", password="pw-research-123", is_staff=True)
    user.groups.add(Group.objects.get(name=RESEARCHER_GROUP))
    leave = join_every_project(user)
    client.force_login(user)
    yield client
    leave()


def page(client, project) -> str:
    resp = client.get(reverse("annotation:studio-project", args=[project.slug]))
    assert resp.status_code == 200
    return resp.content.decode()


def test_imported_references_are_no_labels_and_rows_come_from_the_human_labels_only(tmp_path, worker, kind):
    imported = import_project(tmp_path, 1000)
    assert Item.objects.filter(project=imported).count() == 1000
    assert ranker_rows_from_project(imported) == ([], [], 0)  # 1,000 references: not one label
    assert registry.get_trainer("tagger").rows_from_project(imported)[2] == 0
    assert loop.maybe_retrain(imported)[0]["skipped"] == "0 new labels, retrain every 6"
    answered = crowd_answers(imported, worker, hits=2)  # 6 crowd answers
    assert len(answered) == 6
    train, dev, n_labels = ranker_rows_from_project(imported)
    assert n_labels == 6
    texts = {i.payload["text"] for i in answered}
    assert {r["sentence"] for r in train + dev} == texts
    tagger_train, tagger_dev, n = registry.get_trainer("tagger").rows_from_project(imported)
    assert n == 6 and {r["sentence"] for r in tagger_train + tagger_dev} == texts

    # an expert's adjudication is a human label too
    other = Item.objects.filter(project=imported).exclude(pk__in=[i.pk for i in answered]).order_by("pk").first()
    adjudicate(other, [], no_aspect=True, by="expert")
    assert len(human_aspect_rows(imported)) == 7

    fake = kind(Recording())
    [out] = loop.maybe_retrain(imported)
    assert out["labels"] == 7 and out["new"] == 7 and out["activated"]
    [(rows_train, rows_dev)] = fake.seen  # what train_version handed the trainer: the 7 sentences' rows only
    assert {r["sentence"] for r in rows_train + rows_dev} == texts | {other.payload["text"]}
    assert out["rows"] == len(rows_train) + len(rows_dev)
    attempt = RetrainAttempt.objects.get(kind="ranker", state="finished")
    assert attempt.n_labels == 7 and attempt.rows == out["rows"] and attempt.version_id == out["version"]


def test_over_max_rows_is_refused_with_its_reason_until_the_budget_is_raised(imported, worker, kind, rclient):
    fake = kind(Recording())
    crowd_answers(imported, worker, hits=2)
    loop.update_retrain_settings(imported, {"retrain_max_rows": 10})
    [out] = loop.maybe_retrain(imported)
    assert "exceed the budget of 10 rows (retrain_max_rows)" in out["refused"]
    assert fake.seen == [] and not ModelVersion.objects.exists()
    refused = RetrainAttempt.objects.get(kind="ranker")
    assert refused.state == "refused" and refused.n_labels == 6 and refused.rows > 10
    html = page(rclient, imported)
    assert 'id="retraining"' in html and "refused" in html and "exceed the budget of 10 rows" in html
    assert "at most 10 rows" in html

    # the researcher raises the budget on the retraining page (audit-logged); the next check trains
    url = reverse("annotation:studio-retraining", args=[imported.slug])
    resp = rclient.post(
        url, {"retrain_every": "6", "retrain_max_rows": "100000", "retrain_max_steps": "", "retrain_max_seconds": ""}
    )
    assert resp.status_code == 302
    imported.refresh_from_db()
    assert imported.engine["retrain_max_rows"] == 100000 and "retrain_max_steps" not in imported.engine
    assert "retrain_max_rows" not in imported.config
    entries = AuditEntry.objects.filter(project=imported, action="retraining").order_by("id")
    assert [e.detail for e in entries] == [{"retrain_max_rows": [None, 10]}, {"retrain_max_rows": [10, 100000]}]
    [out] = loop.maybe_retrain(imported)
    assert out["activated"] and len(fake.seen) == 1
    html = page(rclient, imported)
    assert "finished" in html and f"version #{out['version']}" in html


def test_the_retraining_page_refuses_bad_values_naming_the_field(imported, rclient):
    url = reverse("annotation:studio-retraining", args=[imported.slug])
    resp = rclient.get(url)
    assert resp.status_code == 200 and 'name="retrain_max_steps"' in resp.content.decode()
    before = (dict(imported.config), dict(imported.engine))
    for field, value in (("retrain_max_rows", "-1"), ("retrain_max_steps", "many"), ("retrain_every", "2.5")):
        resp = rclient.post(url, {field: value})
        assert resp.status_code == 400, field
        assert f'id="{field}-errors"' in resp.content.decode(), field
    imported.refresh_from_db()
    assert (imported.config, imported.engine) == before and not AuditEntry.objects.filter(action="retraining").exists()
    # the service refuses what the form would not send, naming the key, and writes nothing
    with pytest.raises(FieldError) as exc:
        loop.update_retrain_settings(imported, {"retrain_max_seconds": -3})
    assert exc.value.field == "retrain_max_seconds"
    with pytest.raises(FieldError) as exc:
        loop.update_retrain_settings(imported, {"retrain_often": 3})
    assert exc.value.field == "retrain_often"


def test_training_stops_at_the_step_cap_and_the_version_records_it(imported, worker, kind, settings):
    fake = kind(TinyLoop())
    crowd_answers(imported, worker, hits=2)
    settings.ARGORA_RETRAIN_MAX_STEPS = 7  # the default when the project sets none
    assert loop.retrain_budget(imported)["max_steps"] == 7
    [out] = loop.maybe_retrain(imported)
    [trained] = fake.loops
    assert trained.step == 7 and trained.capped == "max_steps" and out["capped"] == "max_steps"
    assert trained.evals[-1]["step"] == 7  # the capped weights were evaluated once more
    version = ModelVersion.objects.get(pk=out["version"])
    assert version.status == "ready"
    assert version.metrics["budget"]["capped"] == "max_steps" and version.metrics["budget"]["steps"] == 7
    attempt = RetrainAttempt.objects.get(kind="ranker", state="finished")
    assert attempt.steps == 7 and attempt.capped == "max_steps" and "max steps budget after 7 steps" in attempt.reason

    # without a cap the same run goes to its planned 500 steps
    imported.engine = {**imported.engine, "retrain_max_steps": 0, "retrain_max_seconds": 0}
    [again] = loop.maybe_retrain(imported, force=True)
    assert fake.loops[-1].step == 500 and fake.loops[-1].capped == "" and again["capped"] == ""


def test_the_wall_clock_cap_is_checked_between_steps(monkeypatch):
    clock = {"now": 1000.0}

    def tick():  # a fake clock: every reading is one second later (no wall-clock timing in the test)
        clock["now"] += 1.0
        return clock["now"]

    monkeypatch.setattr(training.time, "monotonic", tick)
    spec = TinyLoop()
    with training.budget(max_seconds=5) as spent:
        spec.run_loop()
    [trained] = spec.loops
    assert spent.capped == "max_seconds" and trained.capped == "max_seconds" and 0 < trained.step < 500


def test_a_queued_check_is_shown_then_becomes_the_attempt(
    imported, worker, kind, rclient, monkeypatch, django_capture_on_commit_callbacks
):
    kind(Recording())
    cache.delete(loop.DEBOUNCE_KEY.format(imported.pk))
    sent = []
    monkeypatch.setattr(tasks.maybe_retrain, "apply_async", lambda args=None, **kw: sent.append(args))
    with django_capture_on_commit_callbacks(execute=True):
        crowd_answers(imported, worker, hits=1)  # after commit, the submission's receiver enqueues the check
    assert sent == [[imported.pk]]
    [queued] = RetrainAttempt.objects.filter(project=imported)
    assert queued.state == "queued" and queued.kind == ""
    html = page(rclient, imported)
    assert 'id="retrain-queued"' in html and "queued" in html
    assignment_submitted.send(sender=None, assignment=imported.assignments.first())  # debounced: no second row
    assert RetrainAttempt.objects.filter(project=imported).count() == 1

    [out] = loop.maybe_retrain(imported)  # 3 new labels of 6: the check is recorded as skipped, with its counts
    queued.refresh_from_db()
    assert queued.state == "skipped" and queued.kind == "ranker" and queued.new_labels == 3
    assert queued.reason == "3 new labels, retrain every 6" == out["skipped"]
    html = page(rclient, imported)
    assert 'id="retrain-queued"' not in html and "3 new labels, retrain every 6" in html
    cache.delete(loop.DEBOUNCE_KEY.format(imported.pk))


def test_valnov_rows_come_from_crowd_answers_never_from_the_imported_labels(tmp_path):

    project = results.get_project("vn-retrain", create=True, items_per_hit=3, status="active")  # 3 votes an item
    results.import_file(project, write(tmp_path, csv_text(ROWS)))  # 5 items with imported labels
    spec = registry.get_trainer("valnov")
    assert spec.rows_from_project(project) == ([], [], 0)
    for k in range(3):  # a complete panel on the first HIT's items: no, yes
        worker = Worker.objects.create(external_id=f"w{k}", source="prolific")
        assignment = services.reserve_next_assignment(project, worker)
        items = services.assignment_items(assignment)
        services.submit_assignment(assignment, worker, {str(i.pk): {"validity": "no", "novelty": "yes"} for i in items})
    train, dev, n = spec.rows_from_project(project)
    assert n == len(items) == 3 and len(train) + len(dev) == 3
    assert {r["conclusion"] for r in train + dev} == {i.payload["conclusion"] for i in items}
    assert {(r["label_validity"], r["label_novelty"]) for r in train + dev} == {(-1, 1)}  # the crowd's, not imported


def test_a_model_annotators_answers_are_no_labels_even_when_included(imported, worker, settings):

    settings.ARGORA_LLM_BASE_URL, settings.ARGORA_LLM_MODEL = "https://llm.example/v1", "fake-model"
    answered = crowd_answers(imported, worker, hits=1)
    others = list(Item.objects.filter(project=imported).exclude(pk__in=[i.pk for i in answered]).order_by("pk")[:6])
    annotator = ma.create_annotator(imported, name="a model", kind="llm")
    stored, _ = ma.store_answers(annotator, others, [{"item": i.pk, "data": planted_answer(i.payload)} for i in others])
    assert stored == 6
    ma.set_included(annotator, True)  # counted in the project's results -- still no training label
    assert ranker_rows_from_project(imported)[2] == 3
    assert {r["sentence"] for r in human_aspect_rows(imported)} == {i.payload["text"] for i in answered}


def test_span_rows_leave_an_included_model_annotators_answers_out(tmp_path, django_user_model, settings):

    project, _, _, _ = _exported_span_project(tmp_path, django_user_model, n=4)
    before = registry.get_trainer("argspan").rows_from_project(project)
    assert before[2] == 4
    settings.ARGORA_LLM_BASE_URL, settings.ARGORA_LLM_MODEL = "https://llm.example/v1", "fake-model"
    annotator = ma.create_annotator(project, name="a model", kind="llm")
    items = list(Item.objects.filter(project=project).order_by("pk"))
    assert ma.store_answers(annotator, items, [{"item": i.pk, "data": {"spans": []}} for i in items])[0] == 4
    exported = list(project_rows(project))
    ma.set_included(annotator, True)
    assert list(project_rows(project)) != exported  # the results count the included model ...
    assert registry.get_trainer("argspan").rows_from_project(project) == before  # ... training never does
