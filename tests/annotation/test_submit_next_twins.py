"""Twins: two identical ``POST /api/assignments/<id>/submit/?next=1`` of one HIT at once (a double click, a client
that retries before the first answer came). The second answers what the first answered -- the same next HIT, or the
same reason why there is none, and the same ``blocked`` -- whichever of them stores the answers and whichever
sweeps the project's stale reservations. The interleavings are forced (a twin runs inside the other one's step),
so the tests are deterministic; the PostgreSQL one holds the row the way the first twin's sweep does."""

import threading
from datetime import timedelta

import pytest
from django.db import connections, transaction
from django.utils import timezone

from annotation import services
from annotation.models import HIT, Assignment
from annotation.services import allocation

from .test_api import client_for
from .test_submit_next import answers, make_project


def stale_last_hit(project, django_user_model):
    """The project's other HIT is held by a reservation that has ended but that no sweep has given back yet."""
    other = services.worker_for_user(django_user_model.objects.create_user("quitter"))
    held = services.reserve_next_assignment(project, other)
    Assignment.objects.filter(pk=held.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    return held


def twin_inside(monkeypatch, module, name, twin):
    """Run ``twin()`` once, inside the first call of ``<module>.<name>`` (before that call's own work): ``module`` is
    where the caller looks the name up (``services`` for a view, ``allocation`` for the allocation's own calls)."""
    real, ran, started = getattr(module, name), [], []

    def first_the_twin(*args, **kwargs):
        if not started:
            started.append(True)  # the twin's own calls are plain ones
            ran.append(twin())
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, first_the_twin)
    return ran


@pytest.mark.django_db
def test_a_twin_that_swept_first_and_took_the_freed_hit_is_answered_alike(django_user_model, monkeypatch):
    """Nothing is free but a stale reservation. The twin sweeps it and takes the freed HIT while this request is
    between its first look and its own sweep (which then gives nothing back): both answer that HIT."""
    project = make_project(items=4, per_hit=2)  # two HITs, R = 1
    user = django_user_model.objects.create_user("alice")
    c = client_for(user)
    hit = c.post("/api/projects/sn/next/", format="json").json()
    quitter = stale_last_hit(project, django_user_model)
    worker = services.worker_for_user(user)
    responses = {i["id"]: {"label": "pro"} for i in hit["items"]}

    def twin():
        _done, following, refusal = services.submit_and_reserve_next(
            services.submittable_assignment(hit["assignment"]), worker, responses, fresh=True
        )
        return following and following.pk, refusal and str(refusal)

    ran = twin_inside(monkeypatch, allocation, "expire_reservations", twin)
    body = c.post(f"/api/assignments/{hit['assignment']}/submit/?next=1", answers(hit), format="json").json()
    [(twin_next, twin_refusal)] = ran
    assert twin_next is not None and twin_refusal is None
    assert body["next"] is not None and body["next"]["assignment"] == twin_next and body["next_detail"] is None
    assert Assignment.objects.get(pk=twin_next).hit_id == quitter.hit_id
    assert Assignment.objects.filter(project=project, status="reserved").count() == 1
    assert HIT.objects.get(pk=quitter.hit_id).taken == 1


@pytest.mark.django_db
def test_a_twin_whose_answers_blocked_the_worker_is_answered_alike(django_user_model, monkeypatch):
    """The twin stores the answers first and its gold answers block the worker, after this request read the worker:
    this request answers blocked too, with the same reason and no next HIT."""
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
    user = django_user_model.objects.create_user("alice")
    c = client_for(user)
    hit = c.post("/api/projects/g/next/", format="json").json()
    worker = services.worker_for_user(user)
    responses = {i["id"]: {"label": "pro"} for i in hit["items"]}  # the gold item answered wrong

    def twin():
        _done, following, refusal = services.submit_and_reserve_next(
            services.submittable_assignment(hit["assignment"]), worker, responses, fresh=True
        )
        return following, str(refusal)

    ran = twin_inside(monkeypatch, services, "submittable_assignment", twin)
    body = c.post(f"/api/assignments/{hit['assignment']}/submit/?next=1", answers(hit), format="json").json()
    [(twin_next, twin_refusal)] = ran
    assert twin_next is None and "gold accuracy" in twin_refusal
    assert (body["status"], body["blocked"], body["next"], body["next_detail"]) == (
        "submitted",
        True,
        None,
        twin_refusal,
    )


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_stale_reservation_being_swept_right_now_is_waited_for(django_user_model, monkeypatch):
    """PostgreSQL: the twin's sweep holds the stale reservation's row (the sweep skips rows locked by others) when
    this request finds nothing free; it pauses, looks again once that sweep has committed, and gets the freed HIT."""
    project = make_project(items=4, per_hit=2)
    mine = services.worker_for_user(django_user_model.objects.create_user("alice"))
    first = services.reserve_next_assignment(project, mine)
    services.submit_assignment(first, mine, {i.pk: {"label": "pro"} for i in services.assignment_items(first)})
    stale = stale_last_hit(project, django_user_model)
    locked, release = threading.Event(), threading.Event()

    def sweeping_twin():  # what the twin's sweep does to the row, holding it a moment
        with transaction.atomic():
            qs = Assignment.objects.filter(pk=stale.pk, status=Assignment.Status.RESERVED)
            qs.select_for_update(no_key=True).get()
            locked.set()
            release.wait(timeout=30)
            qs.update(status=Assignment.Status.EXPIRED)
            HIT.objects.filter(pk=stale.hit_id).update(taken=0)

    holder = threading.Thread(target=lambda: (sweeping_twin(), connections.close_all()), daemon=True)
    pauses = []

    def pause(seconds):  # the twin's sweep commits during this request's first pause
        pauses.append(seconds)
        release.set()
        holder.join(timeout=30)

    monkeypatch.setattr(allocation.time, "sleep", pause)
    holder.start()
    assert locked.wait(timeout=30)
    got = services.reserve_next_assignment(project, mine)
    assert got is not None and got.hit_id == stale.hit_id and len(pauses) == 1
    assert HIT.objects.get(pk=stale.hit_id).taken == 1
