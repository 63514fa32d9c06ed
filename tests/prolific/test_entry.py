"""The study link: a STUDY_ID of another study, missing ids, a closed project or a logged-in staff account get a polite
refusal and nothing is made; a good link logs the browser in as a provisional worker for the claimed PID (never the
worker who really has it), records the session and goes to the work; the same browser comes back as the same worker
(session or cookie), another browser with the same ids does not; the finished worker goes back to Prolific."""

from __future__ import annotations

from urllib.parse import urlencode

import pytest
from django.test import Client

from annotation import identity, providers, selectors, services
from annotation.models import Assignment, Project, Worker
from prolific import publishing
from prolific.models import ProlificSession

from .conftest import STUDY_ID, make_project

pytestmark = pytest.mark.django_db
PID = "5f1a2b3c4d5e6f7a8b9c0d1e"
SESSION = "64b1c2d3e4f5a6b7c8d9e0f1"


def link(project, *, pid=PID, study=STUDY_ID, session=SESSION):
    return f"/prolific/{project.slug}/start/?" + urlencode(
        {"PROLIFIC_PID": pid, "STUDY_ID": study, "SESSION_ID": session}
    )


@pytest.fixture
def project(fake):
    project = make_project()
    publishing.publish(project)
    return project


def test_a_link_for_another_study_is_refused_politely(project):
    c = Client()
    r = c.get(link(project, study="60f6acb180a7b59ac0621fff"))
    assert r.status_code == 403 and b"This link is not for this study" in r.content
    assert b"STUDY_ID: this link belongs to another Prolific study" in r.content
    r = c.get(link(project, pid=""))
    assert r.status_code == 400 and b"PROLIFIC_PID: missing or not a Prolific id" in r.content
    r = c.get(link(project, session="a b"))
    assert r.status_code == 400 and b"SESSION_ID: missing" in r.content
    assert not Worker.objects.exists() and not ProlificSession.objects.exists()
    assert "_auth_user_id" not in c.session


def test_closed_project_and_staff_accounts_are_refused(project, staff_user):
    c = Client()
    c.force_login(staff_user)
    r = c.get(link(project))
    assert r.status_code == 409 and b"private window" in r.content
    Project.objects.filter(pk=project.pk).update(status=Project.Status.CLOSED)
    r = Client().get(link(project))
    assert r.status_code == 410 and b"This study is closed" in r.content
    assert not Worker.objects.exists()


def test_a_good_link_makes_a_provisional_worker_and_goes_to_the_work(project):
    real = services.worker_for_external_id(PID, source=Worker.Source.PROLIFIC)  # the person who really has the PID
    c = Client()
    r = c.get(link(project))
    assert r.status_code == 302 and r.url == f"/work/{project.slug}/"
    worker = Worker.objects.get(claimed_external_id=PID)
    assert worker.pk != real.pk and worker.external_id == "" and worker.source == Worker.Source.PROLIFIC
    assert worker.user is not None and not worker.user.has_usable_password() and not worker.user.is_staff
    assert int(c.session["_auth_user_id"]) == worker.user_id
    session = ProlificSession.objects.get()
    assert (session.participant_id, session.session_id, session.study_id, session.worker_id) == (
        PID,
        SESSION,
        STUDY_ID,
        worker.pk,
    )
    # its answers count nowhere until a sync confirms the PID
    assignment = services.reserve_next_assignment(project, worker)
    services.submit_assignment(
        assignment, worker, {i.pk: {"label": "pro"} for i in services.assignment_items(assignment)}
    )
    assert Assignment.objects.get(pk=assignment.pk).status == "submitted"
    assert not selectors.counted_responses(project).exists()
    assert not real.assignments.exists()


def test_the_same_browser_is_the_same_worker_another_browser_is_not(project, settings):
    c = Client()
    c.get(link(project))
    worker = Worker.objects.get(claimed_external_id=PID)
    assert c.get(link(project)).status_code == 302  # the session
    c.cookies.pop(settings.SESSION_COOKIE_NAME)  # the session is gone (e.g. expired); the signed cookie is kept
    assert c.cookies.get(identity.COOKIE)
    assert c.get(link(project)).status_code == 302
    assert int(c.session["_auth_user_id"]) == worker.user_id
    assert Worker.objects.filter(claimed_external_id=PID).count() == 1
    assert ProlificSession.objects.count() == 1
    other = Client()  # another browser with the same ids: a worker of its own
    assert other.get(link(project)).status_code == 302
    assert Worker.objects.filter(claimed_external_id=PID).count() == 2
    assert int(other.session["_auth_user_id"]) != worker.user_id
    # the same browser opening another participant's link becomes that participant's own provisional worker
    assert c.get(link(project, pid="5f1a2b3c4d5e6f7a8b9c0d99")).status_code == 302
    assert int(c.session["_auth_user_id"]) == Worker.objects.get(claimed_external_id="5f1a2b3c4d5e6f7a8b9c0d99").user_id


def test_new_claims_from_one_address_are_limited(project, settings):
    settings.ARGORA_UNCONFIRMED_PER_ADDRESS = 2
    for n in range(2):
        assert Client().get(link(project, pid=f"5f1a2b3c4d5e6f7a8b9c0d{n:02d}")).status_code == 302
    r = Client().get(link(project, pid="5f1a2b3c4d5e6f7a8b9c0d77"))
    assert r.status_code == 429 and b"Please try again later" in r.content
    assert Worker.objects.count() == 2


def test_completion_redirects_to_prolific_with_the_code(project, settings):
    c = Client()
    c.get(link(project))
    worker = Worker.objects.get(claimed_external_id=PID)
    assert providers.completion_return.get(project, worker, "completed") == {
        "url": "https://app.prolific.com/submissions/complete?cc=DONE2026",
        "code": "DONE2026",
    }
    assert providers.completion_return.get(project, worker, "screened_out") == {
        "url": "https://app.prolific.com/submissions/complete?cc=SCREEN26",
        "code": "SCREEN26",
    }
    assert providers.completion_return.get(project, worker, "something else") is None
    invited = identity.new_invite_worker()[1]  # came through an invite link, not Prolific: stays on Argora
    assert providers.completion_return.get(project, invited, "completed") is None
    other = make_project(slug="other-prolific")
    assert providers.completion_return.get(other, worker, "completed") is None
    settings.ARGORA_PROLIFIC_APP_URL = "https://app.prolific.example"
    assert providers.completion_return.get(project, worker, "completed")["url"].startswith(
        "https://app.prolific.example/"
    )
