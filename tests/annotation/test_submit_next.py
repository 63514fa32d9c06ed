"""Submit + next in one request (``POST /api/assignments/<id>/submit/?next=1``, ``services.submit_and_reserve_next``):
the response carries the next HIT, a retried request stores the answers once and gets the same next HIT, nothing is
reserved past the project's limits (R, the per-worker quota, a block, a paused project), and a HIT costs a bounded
number of queries that does not grow with the HIT's size. The concurrent drain at the end runs on SQLite and on
PostgreSQL (whichever DATABASE_URL names)."""

import threading
from collections import Counter
from datetime import timedelta

import pytest
from django.db import connection
from django.db.models import Count
from django.utils import timezone

from annotation import services
from annotation.models import HIT, Assignment, Response, Worker
from tests.factories import ProjectFactory

from .test_api import client_for
from .test_concurrency import run_threads


def make_project(slug="sn", *, items=12, per_hit=2, r=1, labels=("pro", "con"), **kw):
    return ProjectFactory(
        name=slug,
        slug=slug,
        config={"labels": list(labels)},
        items=items,
        items_per_hit=per_hit,
        assignments_per_item=r,
        **kw,
    )


def answers(hit, label="pro"):
    return {"responses": {str(i["id"]): {"label": label} for i in hit["items"]}}


def submit_next(c, hit, label="pro"):
    return c.post(f"/api/assignments/{hit['assignment']}/submit/?next=1", answers(hit, label), format="json")


@pytest.mark.django_db
def test_submit_returns_the_next_hit_until_none_is_left(django_user_model):
    make_project(items=6, per_hit=2)
    c = client_for(django_user_model.objects.create_user("alice"))
    hit = c.post("/api/projects/sn/next/", format="json").json()
    seen = [hit["assignment"]]
    while True:
        r = submit_next(c, hit)
        assert r.status_code == 200, r.content
        body = r.json()
        assert body["status"] == "submitted" and body["assignment"] == hit["assignment"] and body["blocked"] is False
        if body["next"] is None:
            assert body["next_detail"] is None  # nothing left: no rule refused
            break
        hit = body["next"]
        # the same shape as POST .../next/, a new HIT, reserved for this worker
        assert set(hit) == {"assignment", "project", "hit", "status", "reserved_at", "expires_at", "items"}
        assert hit["status"] == "reserved" and hit["assignment"] not in seen and len(hit["items"]) == 2
        assert hit["items"][0]["payload"]["text"].startswith("s")
        seen.append(hit["assignment"])
    assert len(seen) == 3 and Response.objects.count() == 6
    assert not Assignment.objects.filter(status="reserved").exists()
    # without ?next the response is what it always was
    assert c.post("/api/projects/sn/next/", format="json").status_code == 204


@pytest.mark.django_db
def test_a_retried_request_stores_once_and_gets_the_same_next_hit(
    django_user_model, signalled, django_capture_on_commit_callbacks
):
    make_project()
    c = client_for(django_user_model.objects.create_user("alice"))
    hit = c.post("/api/projects/sn/next/", format="json").json()
    with django_capture_on_commit_callbacks(execute=True):
        first = submit_next(c, hit).json()
        again = submit_next(c, hit)
    assert again.status_code == 200
    assert again.json()["next"]["assignment"] == first["next"]["assignment"]  # the reservation it holds
    assert again.json()["submitted_at"] == first["submitted_at"]
    assert Response.objects.filter(assignment_id=hit["assignment"]).count() == 2 and Response.objects.count() == 2
    assert Assignment.objects.filter(status="reserved").count() == 1 and signalled == [hit["assignment"]]
    assert sum(HIT.objects.values_list("taken", flat=True)) == 2
    # different answers to a stored submission: 409, nothing written, nothing reserved
    r = submit_next(c, hit, "con")
    assert r.status_code == 409 and Response.objects.count() == 2
    assert Assignment.objects.count() == 2


@pytest.mark.django_db
def test_invalid_answers_reserve_nothing(django_user_model):
    make_project()
    c = client_for(django_user_model.objects.create_user("alice"))
    hit = c.post("/api/projects/sn/next/", format="json").json()
    r = c.post(
        f"/api/assignments/{hit['assignment']}/submit/?next=1",
        {"responses": {str(hit["items"][0]["id"]): {"label": "pro"}}},
        format="json",
    )
    assert r.status_code == 400 and f"responses.{hit['items'][1]['id']}" in r.json()["errors"]
    assert Assignment.objects.count() == 1 and not Response.objects.exists()


@pytest.mark.django_db
def test_the_per_worker_quota_is_kept(django_user_model):
    make_project(max_hits_per_worker=2)
    c = client_for(django_user_model.objects.create_user("alice"))
    hit = c.post("/api/projects/sn/next/", format="json").json()
    body = submit_next(c, hit).json()
    assert body["next"] is not None
    body = submit_next(c, body["next"]).json()
    assert body["status"] == "submitted" and body["next"] is None and "maximum of 2 HITs" in body["next_detail"]
    assert Assignment.objects.count() == 2 and Response.objects.count() == 4


@pytest.mark.django_db
def test_r_is_kept_between_workers(django_user_model):
    make_project(items=4, per_hit=1, r=2)  # 4 HITs x 2 slots
    clients = [client_for(django_user_model.objects.create_user(n)) for n in ("a", "b", "c")]
    hits = [c.post("/api/projects/sn/next/", format="json").json() for c in clients]
    done = 0
    while any(hits):
        for i, c in enumerate(clients):
            if hits[i]:
                body = submit_next(c, hits[i]).json()
                done += 1
                hits[i] = body["next"]
    assert done == 8
    assert set(HIT.objects.values_list("taken", flat=True)) == {2}
    per_item = Counter(Response.objects.values_list("item_id", flat=True))
    assert set(per_item.values()) == {2}
    twice = Response.objects.values("assignment__worker", "item").annotate(n=Count("pk")).filter(n__gt=1)
    assert not twice.exists()


@pytest.mark.django_db
def test_a_paused_project_or_a_blocked_worker_gets_the_answers_stored_and_no_next_hit(django_user_model):
    p = make_project()
    alice = django_user_model.objects.create_user("alice")
    c = client_for(alice)
    hit = c.post("/api/projects/sn/next/", format="json").json()
    services.set_project_status(p, "paused")
    body = submit_next(c, hit).json()
    assert body["status"] == "submitted" and body["next"] is None and "not active" in body["next_detail"]
    services.set_project_status(p, "active")
    hit = c.post("/api/projects/sn/next/", format="json").json()
    services.block_worker(Worker.objects.get(user=alice), "too fast")
    body = submit_next(c, hit).json()
    assert body["status"] == "submitted" and body["next"] is None and body["next_detail"] == "too fast"
    assert Response.objects.count() == 4 and not Assignment.objects.filter(status="reserved").exists()


@pytest.mark.django_db
def test_gold_that_blocks_the_worker_keeps_the_answers_and_hands_out_nothing(django_user_model):
    p = services.create_project(
        name="g",
        slug="g",
        task_type="sentence_label",
        status="active",
        config={"labels": ["pro", "con"]},
        items_per_hit=1,
        assignments_per_item=1,
        gold_rate=1.0,
        gold_min_items=1,
        gold_min_accuracy=0.9,
    )
    services.add_items(
        p,
        [{"text": f"s{i}", "topic": "t"} for i in range(4)],
        gold=[{"payload": {"text": f"g{i}", "topic": "t"}, "expected": {"label": "con"}} for i in range(3)],
    )
    services.build_hits(p)
    c = client_for(django_user_model.objects.create_user("alice"))
    hit = c.post("/api/projects/g/next/", format="json").json()
    assert len(hit["items"]) == 2  # one gold item interleaved
    r = c.post(f"/api/assignments/{hit['assignment']}/submit/?next=1", answers(hit, "pro"), format="json")
    body = r.json()
    assert r.status_code == 200 and body["status"] == "submitted" and body["blocked"] is True
    assert body["next"] is None and "gold accuracy" in body["next_detail"]
    assert Response.objects.count() == 2 and Assignment.objects.count() == 1


@pytest.mark.django_db
def test_a_late_submission_is_kept_as_late_and_the_next_hit_is_reserved(django_user_model):
    make_project()
    c = client_for(django_user_model.objects.create_user("alice"))
    hit = c.post("/api/projects/sn/next/", format="json").json()
    Assignment.objects.filter(pk=hit["assignment"]).update(expires_at=timezone.now() - timedelta(seconds=1))
    body = submit_next(c, hit).json()
    assert body["status"] == "late" and body["next"]["assignment"] != hit["assignment"]
    assert Assignment.objects.get(pk=body["next"]["assignment"]).status == "reserved"


@pytest.mark.django_db
@pytest.mark.parametrize("per_hit", [1, 10])
def test_queries_per_hit_are_bounded_and_do_not_grow_with_its_size(
    django_user_model, per_hit, django_assert_num_queries
):
    """PostgreSQL, 4 statements: token auth with the worker; the assignment with its project, phases and items; the
    claim, the answers and the worker's lock (one statement); the worker's reservation and quota checked, a slot
    taken, the new assignment inserted and the next HIT's items read (one statement). SQLite, 8: the claim, the
    answers, the worker's state, the slot, the new assignment and the next HIT's items are statements of their own
    (there is no round trip to save). Plus the transaction's BEGIN / COMMIT (or the test transaction's SAVEPOINT /
    RELEASE)."""
    make_project(items=40, per_hit=per_hit)
    c = client_for(django_user_model.objects.create_user("alice"))
    hit = c.post("/api/projects/sn/next/", format="json").json()
    hit = submit_next(c, hit).json()["next"]
    statements = 4 if connection.vendor == "postgresql" else 8
    for _ in range(2):
        with django_assert_num_queries(statements + 2):
            r = submit_next(c, hit)
        assert r.status_code == 200 and len(r.json()["next"]["items"]) == per_hit
        hit = r.json()["next"]
    assert Response.objects.count() == 3 * per_hit


@pytest.mark.django_db(transaction=True)
def test_50_workers_drain_with_submit_and_next_concurrently(django_user_model, signalled):
    """Every worker goes through the study with one call per HIT while 49 others do the same (every 4th call
    retried): each item gets exactly R answers, every acknowledged submission is stored once, no slot is left."""
    r, per_hit, n_items = 3, 5, 200
    project = make_project("drain", items=n_items, per_hit=per_hit, r=r)
    workers = [services.worker_for_user(django_user_model.objects.create_user(f"w{i}")) for i in range(50)]
    acked, lock = [], threading.Lock()

    def work(worker):
        a = services.reserve_next_assignment(project, worker)
        n = 0
        while a is not None:
            responses = {i.pk: {"label": "pro"} for i in services.assignment_items(a)}
            done, nxt, refusal = services.submit_and_reserve_next(a, worker, responses)
            assert refusal is None
            n += 1
            if n % 4 == 0:  # a retried request: stores nothing, hands back the same next HIT
                again, nxt2, _ = services.submit_and_reserve_next(a, worker, responses)
                assert again.pk == done.pk and (nxt2 and nxt2.pk) == (nxt and nxt.pk)
            with lock:
                acked.append(done.pk)
            a = nxt

    run_threads(work, [(w,) for w in workers])
    assert len(acked) == len(set(acked)) == n_items * r // per_hit
    assert set(Assignment.objects.filter(project=project, status="submitted").values_list("pk", flat=True)) == set(
        acked
    )
    per_item = Counter(Response.objects.filter(assignment__project=project).values_list("item_id", flat=True))
    assert len(per_item) == n_items and set(per_item.values()) == {r}
    assert not Response.objects.values("assignment__worker", "item").annotate(n=Count("pk")).filter(n__gt=1).exists()
    assert set(HIT.objects.filter(project=project).values_list("taken", flat=True)) == {r}
    assert not Assignment.objects.filter(project=project, status="reserved").exists()
    assert sorted(signalled) == sorted(acked)


@pytest.mark.postgres
@pytest.mark.django_db
def test_postgresql_prepares_the_per_hit_statements_and_the_answers_stay_exact(django_user_model):
    """After a few HITs on one connection the server holds the per-HIT statements prepared (token auth, the
    assignment read, the claim, the allocation), each run from its prepared form since; the ORM's statements stay
    unprepared (bound on the client). HITs of another size reuse the same claim statement (the answers travel as one
    JSON parameter). Every answer is still stored once, with its value, whatever characters it holds."""
    assert connection.settings_dict["OPTIONS"]["prepare_threshold"] == 5
    labels = ['pro "quoted" \\ back\\slash', "contra \u2014 \u00fcn\u00efc\u00f6d\u00e9 \U0001f389 \u2028 end"]
    c = client_for(django_user_model.objects.create_user("alice"))
    submitted, expected = [], []
    for slug, per_hit in (("sn", 3), ("sn5", 5)):
        make_project(slug, items=40, per_hit=per_hit, labels=labels)
        hit = c.post(f"/api/projects/{slug}/next/", format="json").json()
        for n in range(8):
            r = submit_next(c, hit, label=labels[n % 2])
            assert r.status_code == 200
            submitted.append(hit["assignment"])
            expected += [labels[n % 2]] * per_hit
            hit = r.json()["next"]
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement, generic_plans + custom_plans FROM pg_prepared_statements")
        prepared = cursor.fetchall()
    tables = [
        next(
            t
            for t in ("authtoken_token", "annotation_assignment_gold_items", "annotation_response", "annotation_hit")
            if f'"{t}"' in statement
        )
        for statement, _ in prepared
    ]
    assert sorted(tables) == [
        "annotation_assignment_gold_items",
        "annotation_hit",
        "annotation_response",
        "authtoken_token",
    ], prepared
    assert all(runs >= 3 for _, runs in prepared), prepared
    claim = next(runs for statement, runs in prepared if '"annotation_response"' in statement)
    assert claim == 16 - 5  # both HIT sizes ran the one statement: run unprepared 5 times, then prepared
    stored = Response.objects.filter(assignment_id__in=submitted).order_by("assignment_id", "item_id")
    assert stored.count() == 8 * 3 + 8 * 5
    assert [r.data for r in stored] == [{"label": label} for label in expected]
