"""The ExternalQuestion page with Django's test client: preview, accept (binding), submit, hand-off to MTurk,
framing headers, CSRF-free cross-site POST, and refusals of forged ids (403, nothing written)."""

from __future__ import annotations

import json
from urllib.parse import parse_qs, urlsplit

import pytest
from django.test import Client
from django.utils import timezone

from annotation import services
from annotation.models import Assignment, Response, Worker
from mturk.models import MTurkHIT

from .conftest import make_project

pytestmark = pytest.mark.django_db
HIT_ID = "3EXTHITXXXXXXXXXXXXXXXXXXXXXXX"
TURK = "https://workersandbox.mturk.com"


@pytest.fixture
def project():
    project = make_project(hits=1, r=2)
    MTurkHIT.objects.create(
        project=project,
        hit=project.hits.get(),
        mturk_hit_id=HIT_ID,
        reward_cents=26,
        max_assignments=2,
        created_at=timezone.now(),
    )
    return project


def url(project, **q):
    from urllib.parse import urlencode

    return f"/mturk/external/{project.slug}/?" + urlencode(q)


def accept(c, project, aid="3ASSIGNAXXXXXXXXXXXXXXXXXXXXXX", wid="AWORKERA"):
    return c.get(url(project, assignmentId=aid, hitId=HIT_ID, workerId=wid, turkSubmitTo=TURK))


def submit_url(response) -> str:
    html = response.content.decode()
    start = html.index('data-submit-url="') + len('data-submit-url="')
    return html[start : html.index('"', start)].replace("&amp;", "&")


def test_preview_shows_the_items_read_only_and_reserves_nothing(project):
    r = Client().get(url(project, assignmentId="ASSIGNMENT_ID_NOT_AVAILABLE", hitId=HIT_ID))
    assert r.status_code == 200
    html = r.content.decode()
    assert 'id="mturk-preview"' in html and html.count("data-item-id=") == 4
    assert "X-Frame-Options" not in r.headers  # MTurk frames this page
    assert Assignment.objects.count() == 0 and Worker.objects.count() == 0


def test_accept_submit_and_hand_off(project):
    c = Client(enforce_csrf_checks=True)  # MTurk's page is cross-site: no CSRF cookie, the binding authenticates
    r = accept(c, project)
    assert r.status_code == 200 and "X-Frame-Options" not in r.headers
    # the workerId in the URL is a claim until a sync confirms it: a provisional worker holds the HIT
    worker = Worker.objects.get(source=Worker.Source.MTURK, claimed_external_id="AWORKERA")
    assert worker.external_id == "" and not Worker.objects.filter(external_id="AWORKERA").exists()
    assignment = Assignment.objects.get(worker=worker)
    assert assignment.external_id == "3ASSIGNAXXXXXXXXXXXXXXXXXXXXXX" and assignment.status == "reserved"
    assert assignment.hit_id == project.hits.get().pk
    # reloading the page (same assignmentId) binds the same assignment
    assert accept(c, project).status_code == 200 and Assignment.objects.count() == 1
    target = submit_url(r)
    assert urlsplit(target).path == f"/mturk/external/{project.slug}/submit/"
    responses = {str(item.pk): {"label": "con"} for item in services.assignment_items(assignment)}
    r = c.post(target, json.dumps({"responses": responses, "client_seconds": 42}), content_type="application/json")
    assert r.status_code == 200, r.content
    assert r.json()["status"] == "submitted"
    assert Response.objects.filter(assignment=assignment).count() == 4
    # hit.js then loads next_url: the hand-off form posting assignmentId to turkSubmitTo/mturk/externalSubmit
    r = c.get(target)
    html = r.content.decode()
    assert r.status_code == 200 and "X-Frame-Options" not in r.headers
    assert f'action="{TURK}/mturk/externalSubmit"' in html
    assert 'name="assignmentId" value="3ASSIGNAXXXXXXXXXXXXXXXXXXXXXX"' in html


def test_plain_form_post_without_javascript(project):
    c = Client(enforce_csrf_checks=True)
    r = accept(c, project)
    assignment = Assignment.objects.get()
    data = {"assignment": assignment.pk, "feedback": "fine"}
    data.update({f"item-{item.pk}-label": "pro" for item in services.assignment_items(assignment)})
    r = c.post(submit_url(r), data)
    assert r.status_code == 200 and 'id="mturk-submit-form"' in r.content.decode()
    assignment.refresh_from_db()
    assert assignment.status == "submitted" and assignment.feedback == "fine"


@pytest.mark.parametrize("tamper", ["workerId", "assignmentId", "hitId", "binding"])
def test_tampered_submit_is_refused_and_writes_nothing(project, tamper):
    c = Client()
    r = accept(c, project)
    assignment = Assignment.objects.get()
    target = submit_url(r)
    parts = urlsplit(target)
    q = {k: v[0] for k, v in parse_qs(parts.query).items()}
    q[tamper] = q[tamper][:-2] + "ZZ"
    from urllib.parse import urlencode

    responses = {str(item.pk): {"label": "con"} for item in services.assignment_items(assignment)}
    r = c.post(parts.path + "?" + urlencode(q), json.dumps({"responses": responses}), content_type="application/json")
    assert r.status_code == 403
    assert Response.objects.count() == 0
    assert Assignment.objects.get().status == "reserved"


def test_forged_worker_on_someone_elses_assignment_is_refused(project):
    c = Client()
    assert accept(c, project).status_code == 200
    r = accept(c, project, wid="AFORGER")  # same assignmentId, another workerId
    assert r.status_code == 403
    assert (
        Assignment.objects.count() == 1
        and not Worker.objects.filter(external_id="AFORGER", assignments__isnull=False).exists()
    )


def test_unknown_hit_bad_submit_to_and_blocked_worker(project):
    c = Client()
    assert c.get(url(project, assignmentId="3A", hitId="NOPE", workerId="W", turkSubmitTo=TURK)).status_code == 404
    r = c.get(url(project, assignmentId="3A", hitId=HIT_ID, workerId="W", turkSubmitTo="https://evil.example"))
    assert r.status_code == 400
    w = services.worker_for_external_id("ABLOCKED", source=Worker.Source.MTURK)
    services.block_worker(w, "gold accuracy too low")
    r = accept(c, project, aid="3ASSIGNBXXXXXXXXXXXXXXXXXXXXXX", wid="ABLOCKED")
    assert r.status_code == 403 and Assignment.objects.count() == 0


def test_fake_turk_only_when_enabled(settings):
    settings.ARGORA_MTURK_FAKE_TURK = False
    settings.DEBUG = False
    assert Client().post("/mturk/_test/turk/mturk/externalSubmit", {"assignmentId": "x"}).status_code == 404
    settings.ARGORA_MTURK_FAKE_TURK = True
    r = Client().post("/mturk/_test/turk/mturk/externalSubmit", {"assignmentId": "x"})
    assert r.status_code == 200 and "x" in r.content.decode()


def test_panel_for_staff(project, staff_user, stub):
    c = Client()
    c.force_login(staff_user)
    stub.add_response("get_account_balance", {"AvailableBalance": "10000.00"}, {})
    r = c.get(f"/mturk/projects/{project.slug}/")
    html = r.content.decode()
    assert r.status_code == 200 and "$10000.00" in html and HIT_ID in html and 'id="cost-preview"' in html
    assert Client().get(f"/mturk/projects/{project.slug}/").status_code == 302  # anonymous -> login


def data_url(response, name: str) -> str:
    html = response.content.decode()
    start = html.index(f'data-{name}="') + len(f'data-{name}="')
    return html[start : html.index('"', start)].replace("&amp;", "&")


def test_answers_are_saved_as_a_draft_and_back_after_mturk_reloads_the_frame(project):
    c = Client(enforce_csrf_checks=True)
    r = accept(c, project)
    draft = data_url(r, "draft-url")
    assert urlsplit(draft).path == f"/mturk/external/{project.slug}/draft/"
    assignment = Assignment.objects.get()
    first = services.assignment_items(assignment)[0]
    body = {"fields": {str(first.pk): {"label": "none"}}, "feedback": "half done"}
    assert c.put(draft, json.dumps(body), content_type="application/json").status_code == 204
    html = accept(c, project).content.decode()
    assert f'name="item-{first.pk}-label" value="none" checked' in html and "half done</textarea>" in html
    # the binding is the key: without it, or for another HIT's item, nothing is saved
    bare = (
        draft.split("?")[0]
        + "?"
        + "&".join(p for p in urlsplit(draft).query.split("&") if not p.startswith("binding="))
    )
    assert c.put(bare, json.dumps(body), content_type="application/json").status_code == 403
    other = {"fields": {"99999": {"label": "pro"}}}
    r = c.put(draft, json.dumps(other), content_type="application/json")
    assert r.status_code == 400 and "fields.99999" in r.json()["errors"]
