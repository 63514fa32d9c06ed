"""Concurrency: 50 simulated workers (threads, each with its own DB connection) drain a project of 200 items
with R = 3. Runs on SQLite (IMMEDIATE transactions serialise writers) and PostgreSQL (SKIP LOCKED, and the
one-statement reserve / submit paths)."""

import threading
import time
from collections import Counter
from datetime import timedelta

import pytest
from django.db import connection, connections, transaction
from django.db.models import Count
from django.utils import timezone

from annotation import services
from annotation.models import HIT, Assignment, GoldRecord, Item, Response, Worker
from annotation.services import allocation
from tests.factories import ProjectFactory
from tests.xdist_isolation import one_process_at_a_time

pytestmark = pytest.mark.django_db(transaction=True)

N_ITEMS, R, PER_HIT, N_WORKERS = 200, 3, 5, 50
TIME_BOUND_S = 240


def run_threads(target, args_list, bound=TIME_BOUND_S):
    """Run ``target(*args)`` in one thread each; every thread closes its own connection; bounded in time. Under
    pytest-xdist, one process at a time runs its threads (PostgreSQL allows 100 connections)."""
    errors: list[BaseException] = []
    start = threading.Barrier(len(args_list))

    def body(*args):
        try:
            start.wait(timeout=60)
            target(*args)
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=body, args=args, daemon=True) for args in args_list]
    with one_process_at_a_time("many-connections"):  # under xdist, one such test at a time on the machine
        deadline = time.monotonic() + bound
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=max(0.1, deadline - time.monotonic()))
    assert not any(t.is_alive() for t in threads), f"workers still running after {bound} s"
    assert not errors, f"{len(errors)} worker(s) failed, first: {errors[0]!r}"


def make_project(**kw):
    return ProjectFactory(name="Drain", items=N_ITEMS, assignments_per_item=R, items_per_hit=PER_HIT, **kw)


def make_workers(django_user_model, n, prefix="w"):
    return [services.worker_for_user(django_user_model.objects.create_user(f"{prefix}{i}")) for i in range(n)]


def drain(project, worker, acked: list, lock: threading.Lock, *, retry_every=4):
    n = 0
    while (a := services.reserve_next_assignment(project, worker)) is not None:
        items = services.assignment_items(a)
        responses = {str(i.pk): {"label": ("pro", "con", "none")[(i.pk + worker.pk) % 3]} for i in items}
        done = services.submit_assignment(a, worker, responses, client_seconds=1.0)
        n += 1
        if n % retry_every == 0:  # a client that retries its POST: must be a no-op
            again = services.submit_assignment(a, worker, responses, client_seconds=1.0)
            assert again.pk == done.pk
        with lock:
            acked.append((done.pk, worker.pk, tuple(sorted(i.pk for i in items))))


def check_drained(project, acked):
    items = list(Item.objects.filter(project=project, is_gold=False).values_list("pk", flat=True))
    per_item = Counter(
        Response.objects.filter(assignment__project=project, assignment__status="submitted").values_list(
            "item_id", flat=True
        )
    )
    assert len(items) == N_ITEMS
    assert all(per_item[pk] == R for pk in items), Counter(per_item[pk] for pk in items)
    # no worker answered an item twice
    twice = (
        Response.objects.filter(assignment__project=project)
        .values("assignment__worker", "item")
        .annotate(n=Count("pk"))
        .filter(n__gt=1)
    )
    assert not twice.exists()
    # every acknowledged submission is stored exactly once, and nothing else is
    assert len(acked) == len({pk for pk, _, _ in acked}) == N_ITEMS * R // PER_HIT
    stored = set(Assignment.objects.filter(project=project, status="submitted").values_list("pk", flat=True))
    assert stored == {pk for pk, _, _ in acked}
    assert Response.objects.filter(assignment__project=project, item__is_gold=False).count() == N_ITEMS * R
    for pk, _worker_pk, item_ids in acked:
        assert sorted(Response.objects.filter(assignment_id=pk).values_list("item_id", flat=True)) == list(item_ids)
    assert set(HIT.objects.filter(project=project).values_list("taken", flat=True)) == {R}
    assert not Assignment.objects.filter(project=project, status="reserved").exists()


def test_50_workers_drain_200_items_with_r_3(django_user_model, signalled):
    project = make_project()
    workers = make_workers(django_user_model, N_WORKERS)
    acked, lock = [], threading.Lock()
    t0 = time.monotonic()
    run_threads(lambda w: drain(project, w, acked, lock), [(w,) for w in workers])
    elapsed = time.monotonic() - t0
    check_drained(project, acked)
    # one signal per stored submission, none for the retries
    assert sorted(signalled) == sorted(pk for pk, _, _ in acked)
    print(f"{connection.vendor}: {len(acked)} HITs by {N_WORKERS} workers in {elapsed:.1f} s")


def test_50_workers_drain_with_gold_items_and_blocks_under_concurrency(django_user_model, signalled):
    """gold_rate > 0: every HIT gets 2 gold items, so every submission runs the gold branch (scored in the
    submit transaction) while 49 others allocate and submit. 10 workers answer gold wrong and are blocked after
    their first HIT (N = 2 gold items, accuracy 0 < 0.7); the block is global to the worker (Worker.blocked)."""
    project = make_project(gold_rate=0.4, gold_min_items=2, gold_min_accuracy=0.7)
    labels = ("pro", "con", "none")
    services.add_items(
        project,
        [],
        gold=[{"payload": {"text": f"g{i}", "topic": "t"}, "expected": {"label": labels[i % 3]}} for i in range(12)],
    )
    expected = {
        item.pk: item.gold.expected["label"]
        for item in Item.objects.filter(project=project, is_gold=True).select_related("gold")
    }
    workers = make_workers(django_user_model, N_WORKERS)
    bad = {w.pk for w in workers[:10]}
    acked, lock = [], threading.Lock()

    def drain_with_gold(worker):
        n = 0
        while True:
            try:
                a = services.reserve_next_assignment(project, worker)
            except services.WorkerBlocked:
                assert worker.pk in bad
                return
            if a is None:
                return
            items = services.assignment_items(a)
            responses = {}
            for i in items:
                if i.is_gold:
                    right = expected[i.pk]
                    label = labels[(labels.index(right) + 1) % 3] if worker.pk in bad else right
                else:
                    label = labels[(i.pk + worker.pk) % 3]
                responses[str(i.pk)] = {"label": label}
            done = services.submit_assignment(a, worker, responses, client_seconds=1.0)
            n += 1
            if n % 2 == 0:  # a retried POST of a submission with gold items: still a no-op
                assert services.submit_assignment(a, worker, responses, client_seconds=1.0).pk == done.pk
            with lock:
                acked.append((done.pk, worker.pk, tuple(sorted(i.pk for i in items))))

    t0 = time.monotonic()
    run_threads(drain_with_gold, [(w,) for w in workers])
    elapsed = time.monotonic() - t0
    check_drained(project, acked)
    assert sorted(signalled) == sorted(pk for pk, _, _ in acked)
    # every submitted assignment scored each of its gold items once (none seen twice by a worker)
    links = Assignment.gold_items.through.objects.filter(assignment__project=project)
    assert GoldRecord.objects.filter(item__project=project).count() == links.count() > 0
    assert all(len(item_ids) <= PER_HIT + 2 for _, _, item_ids in acked)
    per_worker = Counter(pk for _, pk, _ in acked)
    for record in GoldRecord.objects.filter(item__project=project):
        assert record.correct == (record.worker_id not in bad)
    blocked = set(Worker.objects.filter(blocked=True).values_list("pk", flat=True))
    gold_seen = Counter(GoldRecord.objects.filter(item__project=project).values_list("worker_id", flat=True))
    # blocked exactly when N gold items were answered below the threshold: the bad workers who got a HIT, after it
    assert blocked == {pk for pk in bad if gold_seen[pk] >= 2}
    assert all(per_worker[pk] <= 1 for pk in bad)
    assert blocked and all(
        "below 70%" in r for r in Worker.objects.filter(blocked=True).values_list("blocked_reason", flat=True)
    )
    print(
        f"{connection.vendor}: {len(acked)} HITs with gold by {N_WORKERS} workers in {elapsed:.1f} s, "
        f"{len(blocked)} blocked"
    )


def test_abandoned_reservations_expire_and_the_project_still_drains(django_user_model):
    project = make_project(reservation_timeout_seconds=600)
    quitters = make_workers(django_user_model, 10, prefix="q")
    abandoned = [services.reserve_next_assignment(project, w) for w in quitters]  # reserve and walk away
    assert all(abandoned)
    workers = make_workers(django_user_model, 20)
    acked, lock = [], threading.Lock()
    run_threads(lambda w: drain(project, w, acked, lock), [(w,) for w in workers])
    # the abandoned slots are still held, so the project is not done yet
    assert len(acked) == N_ITEMS * R // PER_HIT - 10
    assert services.expire_reservations(now=timezone.now() + timedelta(seconds=601)) == 10
    late = make_workers(django_user_model, 10, prefix="late")
    run_threads(lambda w: drain(project, w, acked, lock), [(w,) for w in late])
    check_drained(project, acked)
    assert Assignment.objects.filter(project=project, status="expired").count() == 10


def test_concurrent_retries_of_one_submission_store_it_once(django_user_model, signalled):
    project = make_project()
    [worker] = make_workers(django_user_model, 1)
    a = services.reserve_next_assignment(project, worker)
    responses = {i.pk: {"label": "pro"} for i in services.assignment_items(a)}
    results, lock = [], threading.Lock()

    def submit():
        done = services.submit_assignment(a, worker, responses)
        with lock:
            results.append((done.pk, done.submitted_at))

    run_threads(submit, [()] * 8, bound=60)
    assert len(set(results)) == 1 and len(results) == 8
    assert Response.objects.filter(assignment=a).count() == PER_HIT
    assert signalled == [a.pk]


def test_concurrent_different_answers_store_exactly_one(django_user_model, signalled):
    project = make_project()
    [worker] = make_workers(django_user_model, 1)
    a = services.reserve_next_assignment(project, worker)
    items = services.assignment_items(a)
    outcomes, lock = [], threading.Lock()

    def submit(label):
        try:
            services.submit_assignment(a, worker, {i.pk: {"label": label} for i in items})
            outcome = ("stored", label)
        except services.AssignmentNotOpen:
            outcome = ("refused", label)
        with lock:
            outcomes.append(outcome)

    run_threads(submit, [(label,) for label in ("pro", "con", "none") * 3], bound=60)
    stored = [label for kind, label in outcomes if kind == "stored"]
    # the winner's retries (same answers) are no-ops that succeed; every other answer is refused
    assert len(set(stored)) == 1 and len(stored) == 3
    assert set(Response.objects.filter(assignment=a).values_list("data__label", flat=True)) == {stored[0]}
    assert Response.objects.filter(assignment=a).count() == PER_HIT and signalled == [a.pk]


def test_one_worker_in_many_tabs_gets_one_reservation(django_user_model):
    project = make_project()
    [worker] = make_workers(django_user_model, 1)
    got, lock = [], threading.Lock()

    def reserve():
        a = services.reserve_next_assignment(project, worker)
        with lock:
            got.append(a.pk)

    run_threads(reserve, [()] * 10, bound=60)
    assert len(set(got)) == 1 and len(got) == 10
    assert Assignment.objects.filter(project=project, worker=worker).count() == 1
    assert sum(HIT.objects.filter(project=project).values_list("taken", flat=True)) == 1


def test_submissions_racing_the_expiry_sweep_end_consistent(django_user_model, signalled):
    project = make_project(reservation_timeout_seconds=600)
    workers = make_workers(django_user_model, 20)
    held = [(w, services.reserve_next_assignment(project, w)) for w in workers]
    later = timezone.now() + timedelta(seconds=601)
    outcomes, lock = [], threading.Lock()

    def submit(w, a):
        # in time: submitted; after the sweep expired it: kept as late answers (no slot, counted nowhere)
        done = services.submit_assignment(a, w, {i.pk: {"label": "pro"} for i in services.assignment_items(a)})
        with lock:
            outcomes.append((a.pk, "stored" if done.status == "submitted" else done.status))

    def sweep():
        for _ in range(5):
            services.expire_reservations(now=later, project=project)

    run_threads(lambda f, *args: f(*args), [(submit, w, a) for w, a in held] + [(sweep,)], bound=120)
    services.expire_reservations(now=later, project=project)
    by_status = dict(Assignment.objects.filter(project=project).values_list("pk", "status"))
    assert len(outcomes) == len(held) and {outcome for _, outcome in outcomes} <= {"stored", "late"}
    for pk, outcome in outcomes:
        # every answer is stored: submitted (holding a slot) or late (holding none)
        assert by_status[pk] == ("submitted" if outcome == "stored" else "late"), (pk, outcome)
        assert Response.objects.filter(assignment_id=pk).count() == PER_HIT
    assert sorted(signalled) == sorted(pk for pk, outcome in outcomes if outcome == "stored")
    submitted = sum(1 for _, outcome in outcomes if outcome == "stored")
    assert sum(HIT.objects.filter(project=project).values_list("taken", flat=True)) == submitted


@pytest.mark.postgres
def test_a_free_hit_locked_by_an_allocation_in_flight_is_waited_for_without_waiting_on_its_lock(
    django_user_model, monkeypatch
):
    """PostgreSQL: the only free HIT is locked by another transaction (an allocation in flight). The reservation
    never queues on that lock (a queue on row locks is what deadlocked 50 workers on the last free HITs): it tries
    SKIP LOCKED again after short pauses, and gets the HIT once the other transaction has committed. With nothing
    free at all it answers None at once, without a pause."""
    project = make_project()
    hit = HIT.objects.filter(project=project).order_by("position").first()
    HIT.objects.filter(project=project).exclude(pk=hit.pk).update(taken=R)  # every other HIT is full
    worker, late = make_workers(django_user_model, 2)
    pauses, real_sleep = [], time.sleep
    monkeypatch.setattr(allocation.time, "sleep", lambda s: (pauses.append(s), real_sleep(s)))
    locked, release = threading.Event(), threading.Event()

    def hold_the_lock():
        with transaction.atomic():
            HIT.objects.select_for_update(no_key=True).get(pk=hit.pk)
            locked.set()
            release.wait(timeout=30)

    holder = threading.Thread(target=lambda: (hold_the_lock(), connections.close_all()), daemon=True)
    holder.start()
    assert locked.wait(timeout=30)
    threading.Timer(0.05, release.set).start()  # the other transaction ends while the reservation tries again
    a = services.reserve_next_assignment(project, worker)
    holder.join(timeout=30)
    assert a is not None and a.hit_id == hit.pk and pauses  # it paused and tried again, and got the HIT
    assert HIT.objects.get(pk=hit.pk).taken == 1
    HIT.objects.filter(pk=hit.pk).update(taken=R)
    pauses.clear()
    assert services.reserve_next_assignment(project, late) is None and pauses == []
