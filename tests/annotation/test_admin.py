"""Admin smoke test of the annotation models, and the Assignment admin that cannot bypass the HIT slot counter."""

from __future__ import annotations

import pytest
from django.contrib import admin
from django.urls import reverse

from annotation import phases, services
from annotation.models import (
    HIT,
    Assignment,
    GoldItem,
    GoldRecord,
    Item,
    ModelAnnotator,
    ModelAnswer,
    ModelAnswerFailure,
    Participation,
    Project,
    Response,
    StudyPhases,
    Worker,
    WorkerProjectCode,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def data(django_user_model):
    project = services.create_project(
        name="Admin smoke",
        task_type="sentence_label",
        status="active",
        config={"labels": ["pro", "con"]},
        assignments_per_item=2,
        items_per_hit=1,
        gold_rate=1.0,
        gold_min_items=1,
    )
    services.add_items(
        project,
        [{"text": "s0", "topic": "t"}, {"text": "s1", "topic": "t"}],
        gold=[{"payload": {"text": "g", "topic": "t"}, "expected": {"label": "con"}}],
    )
    services.build_hits(project)
    worker = services.worker_for_user(django_user_model.objects.create_user("ann"))
    a = services.reserve_next_assignment(project, worker)
    items = services.assignment_items(a)
    assert any(i.is_gold for i in items)
    services.submit_assignment(a, worker, {i.pk: {"label": "pro"} for i in items})  # misses the gold: blocked
    services.completion_code(project, worker)
    other = services.worker_for_user(django_user_model.objects.create_user("other"))
    held = services.reserve_next_assignment(project, other)
    return project, worker, a, other, held


@pytest.fixture
def root(client, admin_user_obj):
    client.force_login(admin_user_obj)
    return client


def test_every_annotation_admin_page_opens(root, data):
    project, worker, a, _, _ = data
    assert Worker.objects.get(pk=worker.pk).blocked  # so that the gold record and the block show up
    objects = {
        Project: project,
        Item: Item.objects.filter(project=project).first(),
        HIT: a.hit,
        Assignment: a,
        Response: Response.objects.filter(assignment=a).first(),
        Worker: worker,
        WorkerProjectCode: WorkerProjectCode.objects.get(worker=worker),
        GoldItem: GoldItem.objects.first(),
        GoldRecord: GoldRecord.objects.get(worker=worker),
        StudyPhases: phases.configure(project, {"consent_required": True, "consent_text": "I agree."}),
        Participation: phases.record_consent(project, worker, agreed=True),
    }
    registered = {m for m in admin.site._registry if m._meta.app_label == "annotation"}
    # the model annotators' pages need a run of an annotator: tests/annotation/test_model_annotators.py opens them
    assert registered - {ModelAnnotator, ModelAnswer, ModelAnswerFailure} == set(objects)
    for model, obj in objects.items():
        info = (model._meta.app_label, model._meta.model_name)
        model_admin = admin.site._registry[model]
        for url in (reverse("admin:%s_%s_changelist" % info), reverse("admin:%s_%s_change" % info, args=[obj.pk])):
            assert root.get(url).status_code == 200, url
        deletable = model_admin.has_delete_permission(_request(root), obj)  # participation records are evidence
        assert root.get(reverse("admin:%s_%s_delete" % info, args=[obj.pk])).status_code == (200 if deletable else 403)
        if model_admin.has_add_permission(_request(root)):
            assert root.get(reverse("admin:%s_%s_add" % info)).status_code == 200, model


def _request(client):
    from django.contrib.auth import get_user_model
    from django.test import RequestFactory

    request = RequestFactory().get("/")
    request.user = get_user_model().objects.get(username="root")
    return request


def test_assignment_admin_is_read_only_and_cannot_add(root, data):
    _, _, a, other, held = data
    assert root.get(reverse("admin:annotation_assignment_add")).status_code == 403
    page = root.get(reverse("admin:annotation_assignment_change", args=[held.pk])).content.decode()
    for field in ("status", "hit", "worker", "project", "reserved_at", "expires_at", "external_id"):
        assert f'name="{field}"' not in page, field
    before = HIT.objects.get(pk=held.hit_id).taken
    # a forged POST to the change form cannot move the assignment, its worker or its status
    response = root.post(
        reverse("admin:annotation_assignment_change", args=[held.pk]),
        {
            "status": "expired",
            "hit": a.hit_id,
            "worker": a.worker_id,
            "project": held.project_id,
            "responses-TOTAL_FORMS": "0",
            "responses-INITIAL_FORMS": "0",
        },
    )
    assert response.status_code in (200, 302)
    after = Assignment.objects.get(pk=held.pk)
    assert (after.status, after.hit_id, after.worker_id) == ("reserved", held.hit_id, other.pk)
    assert HIT.objects.get(pk=held.hit_id).taken == before


def test_delete_in_the_admin_releases_the_slot(root, data):
    project, _worker, a, other, held = data
    assert HIT.objects.get(pk=held.hit_id).taken == 2  # a (submitted) and held (reserved) share the first HIT
    response = root.post(reverse("admin:annotation_assignment_delete", args=[held.pk]), {"post": "yes"})
    assert response.status_code == 302
    assert not Assignment.objects.filter(pk=held.pk).exists()
    assert HIT.objects.get(pk=held.hit_id).taken == 1
    # bulk delete of a submitted one: slot and responses go; a second delete of a gone row changes nothing
    response = root.post(
        reverse("admin:annotation_assignment_changelist"),
        {"action": "delete_selected", "_selected_action": [a.pk], "post": "yes"},
    )
    assert response.status_code == 302
    assert HIT.objects.get(pk=a.hit_id).taken == 0 and not Response.objects.filter(assignment_id=a.pk).exists()
    assert services.do_release_assignment(a) is False
    assert HIT.objects.get(pk=a.hit_id).taken == 0
    # the freed slots can be taken again
    again = services.reserve_next_assignment(project, other)
    assert again.hit_id == a.hit_id and HIT.objects.get(pk=a.hit_id).taken == 1


def test_release_of_a_rejected_assignment_does_not_decrement_twice(data):
    _, _, a, _, held = data
    services.set_assignment_status(a, Assignment.Status.REJECTED)  # gives its slot back itself
    assert HIT.objects.get(pk=a.hit_id).taken == 1
    assert services.do_release_assignment(a) is True
    assert HIT.objects.get(pk=a.hit_id).taken == 1  # only the reserved one (held) still holds a slot
    assert services.do_release_assignment(held) is True
    assert HIT.objects.get(pk=a.hit_id).taken == 0


def test_deleting_a_worker_releases_their_slots(root, data):
    _, _, _, other, held = data
    response = root.post(reverse("admin:annotation_worker_delete", args=[other.pk]), {"post": "yes"})
    assert response.status_code == 302
    assert not Worker.objects.filter(pk=other.pk).exists()
    assert HIT.objects.get(pk=held.hit_id).taken == 1
