"""The staff panel: staff only; the settings form saves through the service and shows refusals next to their field;
create / publish (after ticking the cost) / pause / add places / bonuses call the services; a sync runs as a job after
commit; the page renders the submissions, bonuses and call log; the admin pages render."""

from __future__ import annotations

import pytest
from django.contrib.messages import get_messages
from django.test import Client

from annotation import services
from annotation.models import Project
from prolific import publishing, sync, tasks
from prolific.models import ProlificBonus, ProlificStudy

from .conftest import STUDY_ID, make_project
from .test_sync import participant, pid, sid

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff(staff_user):
    c = Client()
    c.force_login(staff_user)
    return c


def post(c, project, **data):
    r = c.post(f"/prolific/projects/{project.slug}/", data)
    assert r.status_code == 302 and r.url == f"/prolific/projects/{project.slug}/", r.content[:500]
    out = [(m.level_tag, m.message) for m in get_messages(r.wsgi_request)]
    c.cookies.pop("messages", None)
    return out


SETTINGS = {
    "action": "settings",
    "name": "Stance of sentences",
    "description": "Say for or against.",
    "places": 20,
    "estimated_minutes": 8,
    "device_compatibility": "desktop",
    "completed_code": "OKCODE01",
    "screened_out_code": "OUTCODE1",
    "approval_policy": "gold",
    "rejection_category": "FAILED_CHECK",
    "rejection_message": "x" * 120,
    "screened_out_code_type": "SCREENED_OUT",
    "completed_actions": '[{"action": "MANUALLY_REVIEW"}]',
    "screened_out_actions": '[{"action": "MANUALLY_REVIEW"}]',
}


def test_staff_only(fake, client):
    project = make_project()
    r = client.get(f"/prolific/projects/{project.slug}/")
    assert r.status_code == 302 and "/login/" in r.url


def test_settings_form_saves_and_refuses_by_field(fake, staff):
    project = services.create_project(
        name="Fresh",
        slug="fresh",
        task_type="sentence_label",
        config={"labels": ["pro", "con"]},
        status=Project.Status.DRAFT,
    )
    r = staff.get(f"/prolific/projects/{project.slug}/")
    assert r.status_code == 200 and b"Save settings" in r.content and b"Create draft" not in r.content
    r = staff.post(f"/prolific/projects/{project.slug}/", dict(SETTINGS, reward_cents=50))  # 50 p for 8 min
    assert r.status_code == 400 and b"reward_cents: \xc2\xa30.50 for 8 min pays" in r.content
    assert not ProlificStudy.objects.exists()
    assert post(staff, project, **SETTINGS) == [("success", "study settings saved")]
    cfg = ProlificStudy.objects.get(project=project)
    assert (cfg.places, cfg.estimated_minutes, cfg.completed_code) == (20, 8, "OKCODE01")


def test_actions_and_the_sync_job(fake, staff, monkeypatch, django_capture_on_commit_callbacks):
    project = make_project()
    assert post(staff, project, action="publish") == [
        ("error", "confirm: tick the box to accept the cost before publishing")
    ]
    assert not fake.changing_calls()
    assert post(staff, project, action="create") == [("success", f"draft study {STUDY_ID} created on Prolific")]
    assert post(staff, project, action="publish", confirm="yes") == [
        ("success", f"study {STUDY_ID} published (ACTIVE)")
    ]
    assert post(staff, project, action="pause") == [("success", "study paused (PAUSED)")]
    assert post(staff, project, action="start") == [("success", "study started again (ACTIVE)")]
    assert post(staff, project, action="add_places", places="x") == [("error", "places: 'x' is not a whole number")]
    assert post(staff, project, action="add_places", places="5") == [("success", "the study has 15 places now")]
    assert post(staff, project, action="nope") == [("error", "action: unknown action 'nope'")]

    participant(project, 1)
    fake.add_submission(pid(1), sid(1), status="AWAITING REVIEW")
    ran = []
    monkeypatch.setattr(
        tasks.sync_project_task, "delay", lambda pk: ran.append(tasks.sync_project_task.apply(args=(pk,)).get())
    )
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        assert post(staff, project, action="sync") == [("success", "sync queued (see Jobs)")]
    assert len(callbacks) == 1 and ran[0]["approved"] == 1
    assert post(staff, project, action="bonus", submission=sid(1), amount_cents="25", reason="thanks") == [
        ("success", "bonus of £0.25 planned; the next sync pays it")
    ]
    assert post(staff, project, action="bonus", submission=sid(1), amount_cents="0", reason="x") == [
        ("error", "amount_cents: a bonus must be at least 1 cent")
    ]
    assert post(staff, project, action="wage_topups") == [
        ("success", "planned 0 wage top-up bonus(es); the next sync pays them")
    ]
    r = staff.get(f"/prolific/projects/{project.slug}/")
    assert r.status_code == 200
    for text in (STUDY_ID, sid(1), "APPROVED", "thanks", "POST approve", "approve:", "£0.25", "£1.50 per place"):
        assert text.encode() in r.content or text in r.content.decode(), text
    assert ProlificBonus.objects.get().status == "planned"


def test_admin_pages(fake, admin_user_obj):
    project = make_project()
    publishing.publish(project)
    participant(project, 1)
    fake.add_submission(pid(1), sid(1), status="AWAITING REVIEW")
    sync.sync_project(project)
    c = Client()
    c.force_login(admin_user_obj)
    for model in (
        "prolificstudy",
        "prolificsession",
        "prolificsubmission",
        "prolificbonus",
        "prolificoperation",
        "prolificwebhookevent",
    ):
        r = c.get(f"/admin/prolific/{model}/")
        assert r.status_code == 200, model
    cfg = ProlificStudy.objects.get()
    url = f"/admin/prolific/prolificstudy/{cfg.pk}/change/"
    assert c.get(url).status_code == 200
    data = {f: getattr(cfg, f) if getattr(cfg, f) is not None else "" for f in publishing.EDITABLE}
    data.update(completed_actions='[{"action": "MANUALLY_REVIEW"}]', screened_out_actions='[{"action": "OTHER"}]')
    r = c.post(url, dict(data, reward_cents=10))  # below the wage floor: the form says so, nothing is saved
    assert r.status_code == 200 and "below the wage floor" in r.content.decode()
    r = c.post(url, dict(data, places=99))  # the study exists on Prolific
    assert r.status_code == 200 and "add places" in r.content.decode()
    r = c.post(url, dict(data, name="A better title", screened_out_actions="[]"))
    assert r.status_code == 200 and "a list of actions" in r.content.decode()
    r = c.post(url, dict(data, name="A better title"))
    assert r.status_code == 302
    cfg.refresh_from_db()
    assert (cfg.name, cfg.reward_cents, cfg.screened_out_actions) == ("A better title", None, [{"action": "OTHER"}])
