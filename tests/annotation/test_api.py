"""JSON API: next / submit / progress with session (CSRF) and token auth; errors name the field and write nothing."""

import pytest
from django.core.management import call_command
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotation import services
from annotation.models import Assignment, Response
from tests.factories import ProjectFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def project():
    return ProjectFactory(
        name="Api", slug="api", config={"labels": ["pro", "con"]}, items=4, items_per_hit=2, assignments_per_item=1
    )


def client_for(user):
    c = APIClient()
    c.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.get_or_create(user=user)[0].key}")
    return c


@pytest.fixture
def alice(django_user_model):
    return django_user_model.objects.create_user("alice", password="pw-alice-123")


@pytest.fixture
def bob(django_user_model):
    return django_user_model.objects.create_user("bob", password="pw-bob-123")


def next_hit(client, slug="api"):
    return client.post(f"/api/projects/{slug}/next/", format="json")


def test_next_then_submit_then_retry(project, alice):
    c = client_for(alice)
    r = next_hit(c)
    assert r.status_code == 200, r.content
    body = r.json()
    assert len(body["items"]) == 2 and body["items"][0]["payload"]["text"] == "s0" and body["expires_at"]
    assert next_hit(c).json()["assignment"] == body["assignment"]  # resumes the held HIT
    payload = {
        "responses": {str(i["id"]): {"label": "pro"} for i in body["items"]},
        "feedback": "ok",
        "client_seconds": 12.5,
    }
    r = c.post(f"/api/assignments/{body['assignment']}/submit/", payload, format="json")
    assert r.status_code == 200 and r.json()["status"] == "submitted" and r.json()["blocked"] is False
    r = c.post(f"/api/assignments/{body['assignment']}/submit/", payload, format="json")
    assert r.status_code == 200 and Response.objects.count() == 2
    payload["responses"] = {str(i["id"]): {"label": "con"} for i in body["items"]}
    r = c.post(f"/api/assignments/{body['assignment']}/submit/", payload, format="json")
    assert r.status_code == 409 and "already submitted" in r.json()["detail"]
    assert next_hit(c).json()["assignment"] != body["assignment"]


def test_nothing_left_is_204(project, alice, bob):
    a, b, c = client_for(alice), client_for(bob), client_for(type(alice).objects.create_user("carol"))
    assert next_hit(a).status_code == 200 and next_hit(b).status_code == 200
    assert next_hit(c).status_code == 204


def test_an_assignment_id_no_row_can_have_is_404(project, alice):
    """The submission's one-statement read is raw SQL: an id beyond the column's range (found by the API fuzz) is a
    404 like any unknown id, never a 500 (SQLite raised OverflowError)."""
    c = client_for(alice)
    payload = {"responses": {"1": {"label": "pro"}}}
    for pk in (2**63, 2899162501284618567680):
        r = c.post(f"/api/assignments/{pk}/submit/", payload, format="json")
        assert r.status_code == 404, (pk, r.status_code)
    assert c.post("/api/assignments/987654/submit/", payload, format="json").status_code == 404


def test_invalid_submission_is_400_naming_the_field(project, alice):
    c = client_for(alice)
    body = next_hit(c).json()
    first, second = body["items"][0]["id"], body["items"][1]["id"]
    url = f"/api/assignments/{body['assignment']}/submit/"
    r = c.post(url, {"responses": {str(first): {"label": "maybe"}, str(second): {"label": "pro"}}}, format="json")
    assert r.status_code == 400 and r.json()["errors"] == {f"responses.{first}.label": "must be one of: pro, con"}
    r = c.post(url, {"responses": {str(first): {"label": "pro"}, "424242": {"label": "pro"}}}, format="json")
    assert r.status_code == 400
    assert "424242" in str(r.json()["errors"]) and f"responses.{second}" in r.json()["errors"]
    r = c.post(url, {"responses": "pro"}, format="json")
    assert r.status_code == 400 and "responses" in r.json()["errors"]
    r = c.post(
        url,
        {"responses": {str(first): {"label": "pro"}, str(second): {"label": "pro"}}, "client_seconds": "soon"},
        format="json",
    )
    assert r.status_code == 400 and "client_seconds" in r.json()["errors"]
    assert not Response.objects.exists() and Assignment.objects.get().status == "reserved"


def test_someone_elses_assignment_is_403(project, alice, bob):
    body = next_hit(client_for(alice)).json()
    r = client_for(bob).post(
        f"/api/assignments/{body['assignment']}/submit/",
        {"responses": {str(i["id"]): {"label": "pro"} for i in body["items"]}},
        format="json",
    )
    assert r.status_code == 403 and "not held by you" in r.json()["detail"]
    assert not Response.objects.exists()
    assert client_for(bob).post("/api/assignments/999999/submit/", {"responses": {}}, format="json").status_code == 404


def test_blocked_worker_gets_403_with_reason(project, alice):
    services.block_worker(services.worker_for_user(alice), "gold accuracy too low")
    r = next_hit(client_for(alice))
    assert r.status_code == 403 and r.json()["detail"] == "gold accuracy too low"


def test_anonymous_and_unknown_project(project, alice):
    assert APIClient().post("/api/projects/api/next/").status_code in (401, 403)
    assert next_hit(client_for(alice), slug="nope").status_code == 404


def test_session_auth_requires_csrf(project, alice):
    c = APIClient(enforce_csrf_checks=True)
    assert c.login(username="alice", password="pw-alice-123")
    r = c.post("/api/projects/api/next/")
    assert r.status_code == 403 and "CSRF" in r.json()["detail"]
    assert not Assignment.objects.exists()


def test_progress_is_staff_only(project, alice, staff_user):
    assert client_for(alice).get("/api/projects/api/progress/").status_code == 403
    next_hit(client_for(alice))
    r = client_for(staff_user).get("/api/projects/api/progress/")
    assert r.status_code == 200
    body = r.json()
    assert body["items"] == 4 and body["needed"] == 4 and body["done"] == 0 and body["assignments"]["reserved"] == 1


def test_schema_is_valid():
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", "/dev/null")


def test_next_never_sends_reference_answers_to_the_worker(alice):
    """Imported reference labels, adjudications and private keys stay on the server."""
    p = services.create_project(
        name="Hidden",
        slug="hidden",
        task_type="sentence_label",
        status="active",
        config={"labels": ["pro", "con"]},
        items_per_hit=2,
        assignments_per_item=1,
    )
    from corpus.models import Sentence, Topic

    topic = Topic.objects.create(name="t")
    sentences = [
        Sentence.objects.create(topic=topic, text=f"h{i}", stance="pro", content_hash=f"h{i}") for i in range(2)
    ]
    services.add_items(
        p,
        [
            {
                "text": f"h{i}",
                "topic": "t",
                "reference": {"label": "pro"},
                "sentence_id": s.pk,
                "adjudicated": {"label": "con"},
                "extra": {"col": "x"},
                "_note": "n",
            }
            for i, s in enumerate(sentences)
        ],
    )
    services.build_hits(p)
    body = next_hit(client_for(alice), "hidden").json()
    for item in body["items"]:
        assert item["payload"]["text"].startswith("h")
        # no corpus id either: the corpus holds the sentence's label, a gold item's expected answer
        assert not {"reference", "adjudicated", "extra", "_note", "sentence_id"} & set(item["payload"]), item["payload"]


def test_submit_reports_the_block_its_gold_answers_caused(alice):
    p = services.create_project(
        name="Gold api",
        slug="gold-api",
        task_type="sentence_label",
        status="active",
        config={"labels": ["pro", "con"]},
        items_per_hit=1,
        assignments_per_item=1,
        gold_rate=1.0,
        gold_min_items=2,
        gold_min_accuracy=0.7,
    )
    services.add_items(
        p,
        [{"text": f"s{i}", "topic": "t"} for i in range(4)],
        gold=[{"payload": {"text": f"g{i}", "topic": "t"}, "expected": {"label": "pro"}} for i in range(4)],
    )
    services.build_hits(p)
    c = client_for(alice)
    seen = []
    for _ in range(2):
        body = next_hit(c, "gold-api").json()
        assert len(body["items"]) == 2  # one item + one gold item
        payload = {"responses": {str(i["id"]): {"label": "con"} for i in body["items"]}}  # the gold answer is wrong
        r = c.post(f"/api/assignments/{body['assignment']}/submit/", payload, format="json")
        assert r.status_code == 200, r.content
        seen.append(r.json()["blocked"])
        retry = c.post(f"/api/assignments/{body['assignment']}/submit/", payload, format="json")
        assert retry.json()["blocked"] == seen[-1]  # a retry reports the state the submission left
    assert seen == [False, True]  # judged after the second gold item: 0% < 70%
    assert next_hit(c, "gold-api").status_code == 403


def test_token_auth_reads_the_worker_with_the_user(project, alice, django_assert_num_queries):
    from annotation.auth import WorkerTokenAuthentication
    from annotation.selectors import worker_of_user

    key = Token.objects.create(user=alice).key
    user, _ = WorkerTokenAuthentication().authenticate_credentials(key)
    worker = services.worker_for_user(user)  # no worker yet (the token read None): created
    with django_assert_num_queries(0):
        assert services.worker_for_user(user) == worker and worker_of_user(user) == worker
    user, _ = WorkerTokenAuthentication().authenticate_credentials(key)
    with django_assert_num_queries(0):  # read with the token
        assert worker_of_user(user) == worker and services.worker_for_user(user) == worker
    services.block_worker(worker, "test")
    user, _ = WorkerTokenAuthentication().authenticate_credentials(key)
    assert services.worker_for_user(user).blocked  # each authentication reads the current row
    from rest_framework.exceptions import AuthenticationFailed

    with pytest.raises(AuthenticationFailed):
        WorkerTokenAuthentication().authenticate_credentials("nope")
