"""The study phases inside MTurk's ExternalQuestion frame (Django's test client): a worker whose claimed workerId has
not passed them gets consent, instructions and training on accept -- nothing reserved -- then the HIT; the survey
comes after the first submitted HIT, before the hand-off to MTurk; a screened-out worker hands the HIT back with the
screened-out code and gets no HIT again; only the signed token is trusted; a sync's confirmation moves the record."""

from __future__ import annotations

import json
from urllib.parse import urlencode, urlsplit

import pytest
from django.test import Client
from django.utils import timezone

from annotation import phases, services
from annotation.models import Assignment, Participation, Worker, WorkerProjectCode
from mturk.models import MTurkHIT

from .conftest import make_project

pytestmark = pytest.mark.django_db
HIT_ID = "3PHASEHITXXXXXXXXXXXXXXXXXXXXX"
TURK = "https://workersandbox.mturk.com"
TRAINING = [
    ("Solar panels lower bills.", "pro", "A reason for solar power."),
    ("Solar panels need rare metals.", "con", "A reason against solar power."),
    ("The roof faces south.", "none", "A fact: no reason either way."),
]


@pytest.fixture
def project():
    project = make_project(hits=1, r=2)
    services.add_items(
        project,
        [],
        gold=[
            {
                "payload": {"text": t, "topic": "solar"},
                "expected": {"label": label},
                "explanation": why,
                "training": True,
            }
            for t, label, why in TRAINING
        ],
    )
    phases.configure(
        project,
        {
            "consent_required": True,
            "consent_text": "You agree that we record your answers.",
            "instructions_required": True,
            "training_enabled": True,
            "pass_threshold": 0.6,
            "max_attempts": 2,
            "survey_enabled": True,
            "survey_questions": [
                {"name": "clarity", "label": "Clear?", "kind": "likert", "scale": ["No", "Yes"], "required": True}
            ],
        },
    )
    MTurkHIT.objects.create(
        project=project,
        hit=project.hits.get(),
        mturk_hit_id=HIT_ID,
        reward_cents=26,
        max_assignments=2,
        created_at=timezone.now(),
    )
    return project


def accept_url(project, aid, wid="AWORKERA") -> str:
    return f"/mturk/external/{project.slug}/?" + urlencode(
        {"assignmentId": aid, "hitId": HIT_ID, "workerId": wid, "turkSubmitTo": TURK}
    )


def follow(c, response, *, limit=5):
    """Follow redirects by hand (MTurk's frame would); returns the last response and the URL it came from."""
    url = None
    while response.status_code == 302 and limit:
        url = response["Location"]
        response = c.get(url)
        limit -= 1
    return response, url


def training_item_ids(project):
    return [i.pk for i in phases.selectors.training_items(project)]


def go_through(c, project, aid, wid, labels):
    """Accept, consent, read the instructions and answer the training with ``labels``; returns the last page."""
    page, url = follow(c, c.get(accept_url(project, aid, wid)))
    assert page.status_code == 200 and "X-Frame-Options" not in page.headers
    assert urlsplit(url).path == f"/mturk/external/{project.slug}/study/consent/"
    assert 'class="topbar"' in page.content.decode() and "/studio/" not in page.content.decode()
    page, url = follow(c, c.post(url, {"consent": "yes"}))
    assert urlsplit(url).path.endswith("/study/instructions/")
    page, url = follow(c, c.post(url))
    assert urlsplit(url).path.endswith("/study/training/")
    for item_id, label in zip(training_item_ids(project), labels):
        r = c.post(url, json.dumps({"responses": {str(item_id): {"label": label}}}), content_type="application/json")
        assert r.status_code == 200, r.content
        feedback = c.get(r.json()["next"])
        assert feedback.status_code == 200 and "Expected answer" in feedback.content.decode()
    return feedback


def test_phases_come_first_inside_the_frame_then_the_hit_then_the_survey_then_mturk(project):
    preview = Client().get(f"/mturk/external/{project.slug}/?assignmentId=ASSIGNMENT_ID_NOT_AVAILABLE&hitId={HIT_ID}")
    assert (
        "Before your first HIT of this study: your consent, the instructions, a short training"
        in preview.content.decode()
    )
    c = Client(enforce_csrf_checks=True)  # cross-site frame: the signed token authenticates, not a CSRF cookie
    feedback = go_through(c, project, "3ASSIGN1", "AWORKERA", ["pro", "con", "pro"])  # 2 of 3 right: 67% >= 60%
    assert Assignment.objects.count() == 0  # nothing reserved during the phases
    record = Participation.objects.get(project=project)
    assert record.worker.claimed_external_id == "AWORKERA" and record.worker.external_id == ""
    assert record.qualified_at is not None and record.platform_assignment == "3ASSIGN1"
    html = feedback.content.decode()
    start = html.index('id="training-continue" href="') + len('id="training-continue" href="')
    result = c.get(html[start : html.index('"', start)].replace("&amp;", "&"))
    assert "You qualified" in result.content.decode()
    # "Start the task" goes back to the ExternalQuestion URL, which now binds and shows the HIT
    html = result.content.decode()
    start = html.index('id="start-task" href="') + len('id="start-task" href="')
    hit_page = c.get(html[start : html.index('"', start)].replace("&amp;", "&"))
    assert hit_page.status_code == 200 and 'id="hit-form"' in hit_page.content.decode()
    assignment = Assignment.objects.get()
    assert assignment.external_id == "3ASSIGN1" and assignment.worker.claimed_external_id == "AWORKERA"
    html = hit_page.content.decode()
    start = html.index('data-submit-url="') + len('data-submit-url="')
    target = html[start : html.index('"', start)].replace("&amp;", "&")
    answers = {str(i.pk): {"label": "pro"} for i in services.assignment_items(assignment)}
    assert c.post(target, json.dumps({"responses": answers}), content_type="application/json").status_code == 200
    # the hand-off waits for the survey (once per worker)
    r = c.get(target)
    assert r.status_code == 302 and "/study/survey/" in r["Location"]
    survey_url = r["Location"]
    r = c.post(survey_url, {"q-clarity": ""})
    assert r.status_code == 400 and "clarity: please answer" in r.content.decode()
    r = c.post(survey_url, {"q-clarity": "2"})
    assert r.status_code == 302 and urlsplit(r["Location"]).path == f"/mturk/external/{project.slug}/submit/"
    handoff = c.get(r["Location"]).content.decode()
    assert f'action="{TURK}/mturk/externalSubmit"' in handoff and 'value="3ASSIGN1"' in handoff
    assert Participation.objects.get(pk=record.pk).survey == {"clarity": 2}
    # a second HIT of the same worker: no phases, no survey
    r = c.get(accept_url(project, "3ASSIGN2", "AWORKERA"))
    assert r.status_code == 200 and 'id="hit-form"' in r.content.decode()
    # MTurk confirms the first assignment: the phase record is the confirmed worker's now
    services.confirm_assignment(assignment, source=Worker.Source.MTURK, external_id="AWORKERA")
    real = Worker.objects.get(source=Worker.Source.MTURK, external_id="AWORKERA")
    moved = Participation.objects.get(project=project)
    assert moved.worker == real and moved.qualified_at and moved.survey == {"clarity": 2}


def test_a_worker_who_fails_twice_hands_the_hit_back_with_the_screened_out_code_and_gets_no_hit(project):
    c = Client()
    go_through(c, project, "3ASSIGNX", "AWORKERB", ["none", "none", "pro"])
    record = Participation.objects.get(project=project)
    page, url = follow(c, c.get(accept_url(project, "3ASSIGNX", "AWORKERB")))
    assert urlsplit(url).path.endswith("/study/result/") and "try once more" in page.content.decode()
    r = c.post(url, {"attempt": "1"})
    assert r.status_code == 302 and "/study/training/" in r["Location"]
    training = r["Location"]
    for item_id in training_item_ids(project):
        c.post(training, json.dumps({"responses": {str(item_id): {"label": "pro"}}}), content_type="application/json")
    record.refresh_from_db()
    assert record.screened_out_at is not None and record.attempts_finished == 2
    page, url = follow(c, c.get(accept_url(project, "3ASSIGNX", "AWORKERB")))
    html = page.content.decode()
    code = WorkerProjectCode.objects.get(worker=record.worker, kind="screened_out").code
    assert urlsplit(url).path.endswith("/study/screened-out/") and code in html
    assert f'action="{TURK}/mturk/externalSubmit"' in html and 'name="assignmentId" value="3ASSIGNX"' in html
    assert 'name="outcome" value="screened_out"' in html
    assert Assignment.objects.count() == 0
    # another HIT of the same worker: please return it, nothing reserved
    r = c.get(accept_url(project, "3ASSIGNY", "AWORKERB"))
    assert r.status_code == 403 and "return" in r.content.decode()
    assert Assignment.objects.count() == 0


def test_only_the_signed_token_is_trusted(project):
    c = Client()
    r = c.get(accept_url(project, "3ASSIGNZ", "AWORKERC"))
    token_url = r["Location"]
    assert c.get(token_url.replace("token=", "token=x")).status_code == 403
    assert c.get(f"/mturk/external/{project.slug}/study/consent/").status_code == 403
    other = make_project(slug="other-study")
    r = c.get(token_url.replace(f"/external/{project.slug}/", f"/external/{other.slug}/"))
    assert r.status_code == 403
    r = c.post(token_url.replace("/study/next/", "/study/consent/").replace("token=", "token=y"), {"consent": "yes"})
    assert r.status_code == 403
    assert not Participation.objects.filter(consent_at__isnull=False).exists()
