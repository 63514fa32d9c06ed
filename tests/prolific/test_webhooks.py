"""Webhooks: a delivery with a bad, missing or stale signature is refused with 403 and changes nothing; a signed
RETURNED or TIMED-OUT event frees the participant's reservation at once; other events update the submission row; a
retried delivery (same X-Event-ID) counts once, and so does a replay of a signed delivery under a fresh X-Event-ID;
a field longer than the column that keeps it is a 400 naming it; ``prolific hooks`` subscribes the endpoint (secret,
subscription, confirmation) once."""

from __future__ import annotations

import io
import json
import time

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client

from annotation.models import HIT, Assignment
from prolific import publishing, webhooks
from prolific.models import ProlificOperation, ProlificSubmission, ProlificWebhookEvent
from tests.annotation.test_concurrency import run_threads

from .conftest import make_project, signed
from .test_sync import participant, pid, sid

pytestmark = pytest.mark.django_db
URL = "/prolific/webhook/"


def event(n: int, status: str) -> bytes:
    return json.dumps(
        {"resource_id": sid(n), "event_type": "submission.status.change", "participant_id": pid(n), "status": status}
    ).encode()


def post(body: bytes, **headers):
    return Client().post(URL, data=body, content_type="application/json", **headers)


@pytest.fixture
def project(fake):
    project = make_project()
    publishing.publish(project)
    return project


def taken(project):
    return sum(HIT.objects.filter(project=project).values_list("taken", flat=True))


def test_a_bad_signature_is_refused_and_changes_nothing(project):
    _c, _w, a = participant(project, 1, submit=False)
    body = event(1, "RETURNED")
    for headers in (
        signed(body, secret="not-the-secret"),  # forged
        signed(b'{"status": "APPROVED"}'),  # signed for another body
        signed(body, stamp=time.time() - 3600),  # replayed an hour later
        {},
    ):  # unsigned
        r = post(body, **headers)
        assert r.status_code == 403, headers
    assert Assignment.objects.get(pk=a.pk).status == "reserved" and taken(project) == 1
    assert not ProlificSubmission.objects.exists() and not ProlificWebhookEvent.objects.exists()


def test_no_secret_configured_refuses_everything(project, settings):
    settings.ARGORA_PROLIFIC_WEBHOOK_SECRET = ""
    body = event(1, "RETURNED")
    r = post(body, **signed(body, secret=""))
    assert r.status_code == 403 and "ARGORA_PROLIFIC_WEBHOOK_SECRET" in r.json()["detail"]


@pytest.mark.parametrize("status", ["RETURNED", "TIMED-OUT"])
def test_returned_or_timed_out_frees_the_reservation_at_once(project, status):
    _c, _w, a = participant(project, 1, submit=False)
    assert taken(project) == 1
    body = event(1, status)
    r = post(body, HTTP_X_EVENT_ID="evt-1", **signed(body))
    assert r.status_code == 200 and r.json()["detail"] == f"submission {sid(1)}: {status}, 1 place(s) given back"
    assert Assignment.objects.get(pk=a.pk).status == "expired" and taken(project) == 0
    rec = ProlificSubmission.objects.get(submission_id=sid(1))
    assert (rec.status, rec.participant_id, rec.session.participant_id) == (status, pid(1), pid(1))
    # Prolific retries a delivery: the same event counts once
    r = post(body, HTTP_X_EVENT_ID="evt-1", **signed(body))
    assert r.json()["detail"] == "event evt-1 was handled already"
    assert ProlificWebhookEvent.objects.count() == 1


def test_other_events_update_the_row_only(project):
    _c, _w, a = participant(project, 1)
    body = event(1, "AWAITING REVIEW")
    assert post(body, **signed(body)).status_code == 200
    assert ProlificSubmission.objects.get(submission_id=sid(1)).status == "AWAITING REVIEW"
    assert Assignment.objects.get(pk=a.pk).status == "submitted"
    assert a.worker.claimed_external_id == pid(1)  # a webhook confirms nothing: the sync does
    body = event(55, "RETURNED")  # no Argora session has it
    r = post(body, **signed(body))
    assert r.status_code == 200 and "no Argora session" in r.json()["detail"]
    body = json.dumps(
        {"resource_id": "60f6acb180a7b59ac0621f9e", "event_type": "study.status.change", "status": "PAUSED"}
    ).encode()
    assert post(body, **signed(body)).status_code == 200
    assert publishing.settings_for(project).status == "PAUSED"
    body = b'{"event_type": "submission.status.change", "status": "RETURNED"}'
    r = post(body, **signed(body))
    assert r.status_code == 400 and r.json() == {"errors": {"resource_id": "missing"}}
    body = b"not json"
    assert post(body, **signed(body)).status_code == 400


def test_python_json_dumps_form_of_the_body_is_accepted(project):
    """Prolific's own example signs ``json.dumps(body)``; a compact raw body signed that way verifies too."""
    _c, _w, a = participant(project, 1, submit=False)
    payload = {
        "resource_id": sid(1),
        "event_type": "submission.status.change",
        "participant_id": pid(1),
        "status": "RETURNED",
    }
    raw = json.dumps(payload, separators=(",", ":")).encode()
    assert post(raw, **signed(json.dumps(payload).encode())).status_code == 200
    assert Assignment.objects.get(pk=a.pk).status == "expired"


def test_hooks_subscribe_once(fake, settings):
    settings.ARGORA_PROLIFIC_WEBHOOK_SECRET = ""
    out = webhooks.register(workspace_id="63722982f9cc073ecc730f6b")
    assert out["secret"] == "prolific-made-secret-value"
    assert out["target_url"] == "https://argora.example.org/prolific/webhook/"
    [sub] = fake.subscriptions.values()
    assert sub["is_enabled"] and sub["event_type"] == "submission.status.change" and out["subscriptions"] == [sub["id"]]
    secret_op = ProlificOperation.objects.get(operation="hook_secret")
    assert secret_op.response["value"] == "<redacted>"  # the secret is not kept in the database
    calls = fake.changing_calls()
    settings.ARGORA_PROLIFIC_WEBHOOK_SECRET = "prolific-made-secret-value"
    out = io.StringIO()
    call_command("prolific", "hooks", "--workspace", "63722982f9cc073ecc730f6b", stdout=out)
    assert fake.changing_calls() == calls  # logged: nothing is subscribed twice
    assert "subscriptions" in out.getvalue() and "new hook secret" not in out.getvalue()
    settings.ARGORA_PROLIFIC_WORKSPACE_ID = ""
    with pytest.raises(CommandError) as cmd:
        call_command("prolific", "hooks", stdout=io.StringIO())
    assert cmd.value.returncode == 2 and str(cmd.value).startswith("prolific: workspace: give the Prolific workspace")
    settings.ARGORA_PUBLIC_URL = "http://argora.example.org"
    with pytest.raises(CommandError) as cmd:
        call_command("prolific", "hooks", "--workspace", "w", stdout=io.StringIO())
    assert cmd.value.returncode == 2 and "target_url" in str(cmd.value)


def test_a_replay_under_a_fresh_event_id_does_nothing(project):
    """Someone who captured a signed delivery sends it again, within the maximum age, under new X-Event-IDs (and
    re-spaced: that form verifies too): 200, and the submission's status does not go back."""
    _c, _w, a = participant(project, 1, submit=False)
    first = event(1, "AWAITING REVIEW")
    first_headers = signed(first)
    assert post(first, HTTP_X_EVENT_ID="evt-1", **first_headers).status_code == 200
    later = event(1, "RETURNED")
    assert post(later, HTTP_X_EVENT_ID="evt-2", **signed(later)).status_code == 200
    assert Assignment.objects.get(pk=a.pk).status == "expired"
    respaced = json.dumps(json.loads(first), indent=2).encode()
    for n, body in enumerate((first, respaced, first)):
        headers = {"HTTP_X_EVENT_ID": f"evt-replay-{n}"} if n < 2 else {}  # also with no X-Event-ID at all
        r = post(body, **headers, **first_headers)
        assert r.status_code == 200 and "handled already" in r.json()["detail"], r.content
    assert ProlificSubmission.objects.get(submission_id=sid(1)).status == "RETURNED"
    assert ProlificWebhookEvent.objects.count() == 2 and taken(project) == 0
    # the same event sent again later is a new delivery (a new signed timestamp): handled, and harmless
    r = post(later, HTTP_X_EVENT_ID="evt-3", **signed(later, stamp=time.time() + 2))
    assert r.status_code == 200 and r.json()["detail"] == f"submission {sid(1)}: RETURNED"


@pytest.mark.parametrize(
    "field, value, reason",
    [
        ("status", "S" * 300, "at most 30 characters"),  # ProlificSubmission.status
        ("status", 7, "expected a string"),
        ("resource_id", "r" * 65, "at most 64 characters"),
        ("participant_id", "p" * 65, "at most 64 characters"),
        ("event_type", "e" * 61, "at most 60 characters"),
        ("resource_id", ["not", "text"], "expected a string"),
    ],
)
def test_a_field_longer_than_its_column_is_400_naming_it_and_nothing_is_written(project, field, value, reason):
    _c, _w, a = participant(project, 1, submit=False)
    payload = {**json.loads(event(1, "RETURNED")), field: value}
    body = json.dumps(payload).encode()
    r = post(body, HTTP_X_EVENT_ID="evt-long", **signed(body))
    assert r.status_code == 400 and r.json() == {"errors": {field: reason}}
    assert not ProlificWebhookEvent.objects.exists() and not ProlificSubmission.objects.exists()
    assert Assignment.objects.get(pk=a.pk).status == "reserved" and taken(project) == 1


def test_a_long_study_status_or_event_id_is_400(project):
    body = json.dumps(
        {"resource_id": "60f6acb180a7b59ac0621f9e", "event_type": "study.status.change", "status": "P" * 41}
    ).encode()
    r = post(body, **signed(body))
    assert r.status_code == 400 and r.json() == {"errors": {"status": "at most 40 characters"}}  # ProlificStudy.status
    body = event(1, "RETURNED")
    r = post(body, HTTP_X_EVENT_ID="x" * 101, **signed(body))
    assert r.status_code == 400 and r.json() == {"errors": {"X-Event-ID": "at most 100 characters"}}
    assert publishing.settings_for(project).status != "P" * 41 and not ProlificWebhookEvent.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_the_same_delivery_twice_at_once_is_handled_once(fake, monkeypatch):
    """Two copies of one signed delivery arrive at the same moment under different X-Event-IDs: one is handled."""
    project = make_project()
    publishing.publish(project)
    _c, _w, a = participant(project, 1, submit=False)
    body = event(1, "RETURNED")
    headers = signed(body)
    handled, real = [], webhooks.handle
    monkeypatch.setattr(webhooks, "handle", lambda e: (handled.append(e), time.sleep(0.2), real(e))[-1])
    answers = []
    run_threads(
        lambda n: answers.append(post(body, HTTP_X_EVENT_ID=f"evt-{n}", **headers).json()["detail"]),
        [(0,), (1,)],
        bound=60,
    )
    assert len(handled) == 1 and sorted("handled already" in d for d in answers) == [False, True], answers
    assert Assignment.objects.get(pk=a.pk).status == "expired" and taken(project) == 0
