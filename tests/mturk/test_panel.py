"""The staff panel's POST actions (publish, sync, block list, wage top-ups, expire, extend), every MTurk call
through botocore's Stubber; refusals name the field and call nothing."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from botocore.stub import ANY
from django.contrib.messages import get_messages
from django.test import Client
from django.utils import timezone

from annotation import services
from annotation.models import Assignment, Worker
from mturk import binding, tasks
from mturk.client import request_token
from mturk.models import MTurkBonus, MTurkHIT, MTurkOperation

from .conftest import hit_response, make_project

pytestmark = pytest.mark.django_db
PAST = datetime(2015, 1, 1, tzinfo=UTC)


@pytest.fixture(autouse=True)
def public_url(settings):
    settings.ARGORA_PUBLIC_URL = "https://argora.example.org"


@pytest.fixture
def staff(staff_user):
    c = Client()
    c.force_login(staff_user)
    return c


def post(c, project, **data):
    r = c.post(f"/mturk/projects/{project.slug}/", data)
    assert r.status_code == 302 and r.url == f"/mturk/projects/{project.slug}/"
    out = [(m.level_tag, m.message) for m in get_messages(r.wsgi_request)]
    c.cookies.pop("messages", None)  # read: the next request starts with none (as the panel's GET would do)
    return out


def published(project, hit_id="3PANELHITXXXXXXXXXXXXXXXXXXXXX"):
    return MTurkHIT.objects.create(
        project=project,
        hit=project.hits.order_by("position").first(),
        mturk_hit_id=hit_id,
        sandbox=True,
        max_assignments=3,
        reward_cents=26,
        created_at=timezone.now(),
        expires_at=datetime(2030, 1, 1, tzinfo=UTC),
    )


def test_publish_needs_the_confirmation_then_creates_the_hit(staff, stub):
    project = make_project(hits=1)
    assert post(staff, project, action="publish") == [
        ("error", "confirm: tick the box to confirm the cost before publishing")
    ]
    assert not MTurkHIT.objects.exists()
    hit = project.hits.get()
    stub.add_response(
        "create_hit",
        hit_response("3PUBHITXXXXXXXXXXXXXXXXXXXXXX"),
        {
            "MaxAssignments": 3,
            "AutoApprovalDelayInSeconds": 259200,
            "LifetimeInSeconds": 604800,
            "AssignmentDurationInSeconds": 3600,
            "Reward": "0.26",
            "Title": ANY,
            "Keywords": ANY,
            "Description": ANY,
            "Question": ANY,
            "QualificationRequirements": ANY,
            "RequesterAnnotation": f"argora:{project.slug}:{hit.pk}",
            "UniqueRequestToken": request_token(f"create_hit:sandbox:{hit.pk}"),
        },
    )
    assert post(staff, project, action="publish", confirm="yes") == [("success", "published 1 HIT(s) on sandbox")]
    assert MTurkHIT.objects.get().mturk_hit_id == "3PUBHITXXXXXXXXXXXXXXXXXXXXXX"
    # publishing again creates nothing (no call: the Stubber would fail on one)
    assert post(staff, project, action="publish", confirm="yes") == [("success", "published 0 HIT(s) on sandbox")]


def test_publish_refusal_names_the_field(staff, stub, settings):
    project = make_project(hits=1)
    settings.ARGORA_PUBLIC_URL = "http://argora.example.org"
    [(level, text)] = post(staff, project, action="publish", confirm="yes")
    assert level == "error" and text.startswith("ARGORA_PUBLIC_URL: ")
    assert not MTurkOperation.objects.exists()


def test_sync_runs_as_a_job_after_commit(staff, stub, monkeypatch, django_capture_on_commit_callbacks):
    project = make_project(hits=1)
    row = published(project)
    b = binding.bind(
        project,
        row,
        assignment_id="3PANELASSIGNXXXXXXXXXXXXXXXXX",
        worker_id="APANELWORKER",
        turk_submit_to="https://workersandbox.mturk.com",
    )
    a, worker = binding.assignment_for(b, project)
    services.submit_assignment(a, worker, {i.pk: {"label": "pro"} for i in services.assignment_items(a)})
    ran = []
    monkeypatch.setattr(
        tasks.sync_project_task, "delay", lambda pk: ran.append(tasks.sync_project_task.apply(args=(pk,)).get())
    )
    stub.add_response("get_hit", hit_response(row.mturk_hit_id, status="Unassignable"), {"HITId": row.mturk_hit_id})
    stub.add_response(
        "list_assignments_for_hit",
        {
            "NumResults": 1,
            "Assignments": [
                {
                    "AssignmentId": "3PANELASSIGNXXXXXXXXXXXXXXXXX",
                    "WorkerId": "APANELWORKER",
                    "HITId": row.mturk_hit_id,
                    "AssignmentStatus": "Submitted",
                    "SubmitTime": PAST,
                }
            ],
        },
        {"HITId": row.mturk_hit_id, "MaxResults": 100, "AssignmentStatuses": ["Submitted", "Approved", "Rejected"]},
    )
    stub.add_response("approve_assignment", {}, {"AssignmentId": "3PANELASSIGNXXXXXXXXXXXXXXXXX"})
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        assert post(staff, project, action="sync") == [("success", "sync queued (see Jobs)")]
    assert len(callbacks) == 1 and len(ran) == 1
    assert (ran[0]["approved"], ran[0]["hit_status"]) == (1, {"Unassignable": 1})
    assert Assignment.objects.get(pk=a.pk).status == "approved"
    assert MTurkHIT.objects.get(pk=row.pk).status == "Unassignable"


def test_block_list_wage_topups_expire_and_extend(staff, stub):
    project = make_project(hits=1)
    row = published(project)
    bad = services.worker_for_external_id("APANELBAD", source=Worker.Source.MTURK)
    services.block_worker(bad, "gold accuracy 0% on 3 gold items")
    stub.add_response("list_worker_blocks", {"NumResults": 0, "WorkerBlocks": []}, {"MaxResults": 100})
    stub.add_response(
        "create_worker_block", {}, {"WorkerId": "APANELBAD", "Reason": "gold accuracy 0% on 3 gold items"}
    )
    assert post(staff, project, action="sync_blocks") == [("success", "blocked 1 worker(s) on MTurk")]

    # wage top-ups: an approved assignment that took 5 min for 26 c ($3.12/h) gets 38 c (760 c/h x 300 s -> 64 c)
    b = binding.bind(
        project,
        row,
        assignment_id="3PANELSLOWXXXXXXXXXXXXXXXXXXX",
        worker_id="APANELSLOW",
        turk_submit_to="https://workersandbox.mturk.com",
    )
    a, worker = binding.assignment_for(b, project)
    services.submit_assignment(a, worker, {i.pk: {"label": "pro"} for i in services.assignment_items(a)})
    Assignment.objects.filter(pk=a.pk).update(work_seconds=300, status="approved")
    from mturk.models import MTurkAssignment

    MTurkAssignment.objects.create(
        mturk_hit=row,
        mturk_assignment_id="3PANELSLOWXXXXXXXXXXXXXXXXXXX",
        worker_id="APANELSLOW",
        status="Approved",
        assignment=a,
    )
    msg = "the next sync pays them"
    assert post(staff, project, action="wage_topups") == [("success", f"planned 1 wage top-up bonus(es); {msg}")]
    assert MTurkBonus.objects.get().amount_cents == 38
    assert post(staff, project, action="wage_topups") == [("success", f"planned 0 wage top-up bonus(es); {msg}")]

    stub.add_response("update_expiration_for_hit", {}, {"HITId": row.mturk_hit_id, "ExpireAt": PAST})
    assert post(staff, project, action="expire") == [("success", "expired 1 HIT(s)")]
    assert MTurkHIT.objects.get(pk=row.pk).status == "Expired"

    [(level, text)] = post(staff, project, action="extend", hours="soon")
    assert level == "error" and text == "hours: 'soon' is not a whole number of hours"
    [(level, text)] = post(staff, project, action="extend", hours="0")
    assert level == "error" and text.startswith("hours: extend by 1 to 8760 hours")
    stub.add_response("update_expiration_for_hit", {}, {"HITId": row.mturk_hit_id, "ExpireAt": ANY})
    before = timezone.now()
    assert post(staff, project, action="extend", hours="48") == [("success", "extended 1 HIT(s)")]
    after = timezone.now()
    row.refresh_from_db()
    # 48 h from the request's clock, cut to whole seconds: between before + 48 h - 1 s and after + 48 h
    assert row.status == "Assignable" and row.expires_at.microsecond == 0
    assert before + timedelta(hours=48, seconds=-1) < row.expires_at <= after + timedelta(hours=48)
    # and expire again after the extension: a new call
    stub.add_response("update_expiration_for_hit", {}, {"HITId": row.mturk_hit_id, "ExpireAt": PAST})
    assert post(staff, project, action="expire") == [("success", "expired 1 HIT(s)")]


def test_mturk_refusal_and_unknown_action_and_access(staff, stub, client):
    project = make_project(hits=1)
    row = published(project)
    stub.add_client_error(
        "update_expiration_for_hit",
        service_error_code="RequestError",
        http_status_code=400,
        service_message="Hit not found.",
        expected_params={"HITId": row.mturk_hit_id, "ExpireAt": PAST},
    )
    [(level, text)] = post(staff, project, action="expire")
    assert level == "error" and "Hit not found." in text
    assert MTurkHIT.objects.get(pk=row.pk).status == "Assignable"  # MTurk refused: nothing marked
    assert post(staff, project, action="drop_tables") == [
        ("error", "action: unknown action 'drop_tables' or no MTurk settings")
    ]
    # not staff: sent to the login page, nothing called
    r = client.post(f"/mturk/projects/{project.slug}/", {"action": "expire"})
    assert r.status_code == 302 and "login" in r.url


def test_mturk_admin_pages_and_refresh_action(stub, admin_user_obj):
    from django.contrib import admin
    from django.urls import reverse

    from mturk.models import MTurkAssignment, MTurkProjectSettings

    project = make_project(hits=1)
    row = published(project)
    rec = MTurkAssignment.objects.create(
        mturk_hit=row, mturk_assignment_id="3ADMINASSIGNXXXXXXXXXXXXXXXXX", worker_id="AADMIN", status="Submitted"
    )
    bonus = MTurkBonus.objects.create(
        project=project, assignment_id=rec.mturk_assignment_id, worker_id="AADMIN", amount_cents=10, reason="thanks"
    )
    op = MTurkOperation.objects.create(key="k", operation="approve_assignment", project=project)
    c = Client()
    c.force_login(admin_user_obj)
    objects = {
        MTurkProjectSettings: project.mturk,
        MTurkHIT: row,
        MTurkAssignment: rec,
        MTurkBonus: bonus,
        MTurkOperation: op,
    }
    assert {m for m in admin.site._registry if m._meta.app_label == "mturk"} == set(objects)
    for model, obj in objects.items():
        info = (model._meta.app_label, model._meta.model_name)
        for url in (reverse("admin:%s_%s_changelist" % info), reverse("admin:%s_%s_change" % info, args=[obj.pk])):
            assert c.get(url).status_code == 200, url
    for model in (MTurkHIT, MTurkAssignment, MTurkOperation):  # mirrors of MTurk / the call log: no add
        assert c.get(reverse(f"admin:mturk_{model._meta.model_name}_add")).status_code == 403
    page = c.get(reverse("admin:mturk_mturkassignment_change", args=[rec.pk])).content.decode()
    assert 'name="assignment"' not in page and 'name="status"' not in page
    stub.add_response("get_hit", hit_response(row.mturk_hit_id, status="Reviewable"), {"HITId": row.mturk_hit_id})
    r = c.post(reverse("admin:mturk_mturkhit_changelist"), {"action": "refresh_status", "_selected_action": [row.pk]})
    assert r.status_code == 302 and MTurkHIT.objects.get(pk=row.pk).status == "Reviewable"
