"""Model invariants, the task-type registry and the sentence_label task type, project/item/HIT set-up."""

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from annotation import services
from annotation.models import HIT, Assignment, GoldItem, HITItem, Item, Project, Response, Worker
from annotation.task_types import ResponseInvalid, all_task_types, get_task_type
from corpus.models import Sentence, Topic
from tests.factories import ProjectFactory

pytestmark = pytest.mark.django_db


def make_project(n=10, **kw):
    kw.setdefault("name", "P")
    return ProjectFactory(items=[{"sentence_id": None, "text": f"sentence {i}", "topic": "t"} for i in range(n)], **kw)


def test_registry_knows_sentence_label():
    tt = get_task_type("sentence_label")
    assert tt.name == "sentence_label" and tt.template == "task_types/sentence_label/hit.html"
    assert "sentence_label" in [t.name for t in all_task_types()]
    with pytest.raises(KeyError):
        get_task_type("no_such_type")


def test_sentence_label_validates_and_aggregates():
    project = make_project(n=1)
    item = project.items.get()
    tt = project.get_task_type()
    assert tt.validate_response(project, item, {"label": "con"}) == {"label": "con"}
    for bad, field in [
        ({"label": "maybe"}, "label"),
        ({}, "label"),
        ("pro", "label"),
        ({"label": "pro", "x": 1}, "x"),
        ({"label": 3}, "label"),
    ]:
        with pytest.raises(ResponseInvalid) as exc:
            tt.validate_response(project, item, bad)
        assert exc.value.field == field
    agg = tt.aggregate(project, item, [{"label": "pro"}, {"label": "con"}, {"label": "con"}])
    assert agg == {"label": "con", "counts": {"pro": 1, "con": 2}, "share": 2 / 3, "n": 3}
    # a tie goes to the label listed first in the config
    assert tt.aggregate(project, item, [{"label": "con"}, {"label": "pro"}])["label"] == "pro"
    row = tt.export_row(project, item, [{"label": "none"}])
    assert row["label"] == "none" and row["text"] == "sentence 0"


def test_create_project_rejects_bad_config_and_unknown_type():
    with pytest.raises(services.ProjectInvalid) as exc:
        services.create_project(name="X", task_type="sentence_label", config={"labels": []})
    assert exc.value.field == "config.labels"
    with pytest.raises(services.ProjectInvalid) as exc:
        services.create_project(name="X", task_type="nope")
    assert exc.value.field == "task_type"
    with pytest.raises(services.ProjectInvalid) as exc:
        services.create_project(name="X", task_type="sentence_label", gold_rate=1.5)
    assert exc.value.field == "gold_rate"
    assert not Project.objects.exists()


def test_slug_and_invite_token_unique_and_regenerable():
    a = services.create_project(name="Same name", task_type="sentence_label")
    b = services.create_project(name="Same name", task_type="sentence_label")
    assert a.slug != b.slug and a.invite_token != b.invite_token and len(a.invite_token) >= 20
    old = a.invite_token
    services.regenerate_invite_token(a)
    a.refresh_from_db()
    assert a.invite_token != old


def test_build_hits_puts_every_item_in_exactly_one_hit_and_is_idempotent():
    project = make_project(n=12, items_per_hit=5)
    assert HIT.objects.filter(project=project).count() == 3
    assert sorted(HIT.objects.filter(project=project).values_list("position", flat=True)) == [0, 1, 2]
    assert HITItem.objects.filter(hit__project=project).count() == 12
    assert services.build_hits(project) == 0
    services.add_items(project, [{"text": "late", "topic": "t"}])
    assert services.build_hits(project) == 1
    assert HITItem.objects.filter(hit__project=project).count() == 13


def test_add_items_with_invalid_gold_writes_nothing():
    project = services.create_project(name="G", task_type="sentence_label", config={"labels": ["pro", "con"]})
    with pytest.raises(services.ProjectInvalid) as exc:
        services.add_items(project, [{"text": "a"}], gold=[{"payload": {"text": "g"}, "expected": {"label": "none"}}])
    assert exc.value.field == "gold[0].expected.label"
    assert not Item.objects.filter(project=project).exists()
    services.add_items(project, [{"text": "a"}], gold=[{"payload": {"text": "g"}, "expected": {"label": "pro"}}])
    gold = GoldItem.objects.get(item__project=project)
    assert gold.item.is_gold and gold.expected == {"label": "pro"}


def test_items_from_corpus_sentences_link_the_sentence():
    topic = Topic.objects.create(name="nuclear energy")
    s = Sentence.objects.create(topic=topic, text="Nuclear power is clean.", stance="pro", content_hash="h1")
    project = services.create_project(name="C", task_type="sentence_label")
    [item] = services.add_items_from_rows(project, Sentence.objects.all())
    item.refresh_from_db()
    assert item.sentence_id == s.pk and item.payload == {"sentence_id": s.pk, "text": s.text, "topic": "nuclear energy"}


def test_constraints_hold_in_the_database(django_user_model):
    project = make_project(n=5)
    hit = HIT.objects.get(project=project)
    worker = services.worker_for_user(django_user_model.objects.create_user("w1"))
    assert services.worker_for_user(worker.user) == worker
    a = services.reserve_next_assignment(project, worker)
    with pytest.raises(IntegrityError), transaction.atomic():
        Assignment.objects.create(
            project=project, hit=hit, worker=worker, reserved_at=a.reserved_at, expires_at=a.expires_at
        )
    item = hit.items.first()
    Response.objects.create(assignment=a, item=item, data={"label": "pro"})
    with pytest.raises(IntegrityError), transaction.atomic():
        Response.objects.create(assignment=a, item=item, data={"label": "con"})
    other = HIT.objects.create(project=project, position=9)
    with pytest.raises(IntegrityError), transaction.atomic():
        HITItem.objects.create(hit=other, item=item, position=0)
    Worker.objects.create(source="mturk", external_id="A1")
    with pytest.raises(IntegrityError), transaction.atomic():
        Worker.objects.create(source="mturk", external_id="A1")
    Worker.objects.create(source="prolific", external_id="A1")  # same id, other platform: fine
    assert services.worker_for_external_id("A1", source="mturk").source == "mturk"
    with pytest.raises(IntegrityError), transaction.atomic():
        Project.objects.filter(pk=project.pk).update(gold_rate=2.0)


def test_completion_code_is_stable_per_worker_and_project(django_user_model):
    p1, p2 = make_project(n=1, name="A"), make_project(n=1, name="B")
    w = services.worker_for_user(django_user_model.objects.create_user("w"))
    w2 = services.worker_for_user(django_user_model.objects.create_user("w2"))
    code = services.completion_code(p1, w)
    assert code == services.completion_code(p1, w) and len(code) >= 8
    assert services.completion_code(p2, w) != code and services.completion_code(p1, w2) != code


def test_no_project_is_saved_with_a_task_type_that_is_not_installed():
    with pytest.raises(ValidationError, match="unknown task type 'sentence-label'"):
        Project(name="Typo", slug="typo", task_type="sentence-label").save()
    with pytest.raises(ValidationError) as exc:
        Project(name="Typo", slug="typo", task_type="sentence-label").full_clean()
    assert "task_type" in exc.value.message_dict
    assert not Project.objects.exists()
