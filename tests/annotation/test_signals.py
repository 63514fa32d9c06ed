"""``assignment_submitted``: sent once per stored submission, after the commit, with the assignment;
never for an idempotent retry, a refused submission or a rolled-back transaction."""

import threading

import pytest
from django.db import connections, transaction

from annotation import services
from annotation.models import Assignment, Response
from annotation.signals import assignment_submitted
from tests.factories import ProjectFactory


@pytest.fixture
def received():
    calls = []

    def receiver(sender, assignment, **kwargs):
        in_atomic = transaction.get_connection().in_atomic_block
        # what another connection sees at this moment: the submission must already be committed
        seen = {}

        def look():
            try:
                seen["n"] = Response.objects.filter(assignment_id=assignment.pk).count()
                seen["status"] = Assignment.objects.filter(pk=assignment.pk).values_list("status", flat=True).first()
            finally:
                connections.close_all()

        t = threading.Thread(target=look)
        t.start()
        t.join(30)
        calls.append({"sender": sender, "assignment": assignment, "in_atomic": in_atomic, **seen})

    assignment_submitted.connect(receiver, weak=False, dispatch_uid="test_signals_receiver")
    yield calls
    assignment_submitted.disconnect(dispatch_uid="test_signals_receiver")


def make_project(gold=0, **kw):
    return ProjectFactory(name="Sig", items=9, gold=gold, items_per_hit=3, **kw)


def answers(a, label="pro"):
    return {i.pk: {"label": label} for i in services.assignment_items(a)}


@pytest.fixture
def worker(django_user_model):
    return services.worker_for_user(django_user_model.objects.create_user("sig"))


@pytest.mark.django_db(transaction=True)
def test_sent_once_after_commit_with_the_assignment(worker, received):
    project = make_project()
    a = services.reserve_next_assignment(project, worker)
    done = services.submit_assignment(a, worker, answers(a))
    assert len(received) == 1
    call = received[0]
    assert call["sender"] is Assignment and call["assignment"].pk == a.pk == done.pk
    assert call["assignment"].status == "submitted" and call["assignment"].project_id == project.pk
    assert call["in_atomic"] is False
    assert call["n"] == 3 and call["status"] == "submitted"  # visible to other connections: committed


@pytest.mark.django_db(transaction=True)
def test_not_sent_for_a_retry_or_a_refused_submission(worker, django_user_model, received):
    project = make_project()
    a = services.reserve_next_assignment(project, worker)
    bad = answers(a)
    bad[next(iter(bad))] = {"label": "maybe"}
    with pytest.raises(services.ValidationFailed):
        services.submit_assignment(a, worker, bad)
    other = services.worker_for_user(django_user_model.objects.create_user("other"))
    with pytest.raises(services.NotYourAssignment):
        services.submit_assignment(a, other, answers(a))
    assert received == []
    services.submit_assignment(a, worker, answers(a))
    services.submit_assignment(a, worker, answers(a))  # identical retry: a no-op
    with pytest.raises(services.AssignmentNotOpen):
        services.submit_assignment(a, worker, answers(a, "con"))
    assert [c["assignment"].pk for c in received] == [a.pk]


@pytest.mark.django_db(transaction=True)
def test_not_sent_when_the_surrounding_transaction_rolls_back(worker, received):
    project = make_project()
    a = services.reserve_next_assignment(project, worker)
    with pytest.raises(RuntimeError), transaction.atomic():  # noqa: PT012 - the raise is the rollback under test
        services.submit_assignment(a, worker, answers(a))
        assert received == []  # not before the commit
        raise RuntimeError("roll back")
    assert received == [] and not Response.objects.exists()
    assert Assignment.objects.get(pk=a.pk).status == "reserved"
    with transaction.atomic():
        services.submit_assignment(a, worker, answers(a))
        assert received == []
    assert len(received) == 1 and received[0]["n"] == 3


@pytest.mark.django_db(transaction=True)
def test_not_sent_for_an_expired_assignment(worker, received):
    from datetime import timedelta

    from django.utils import timezone

    project = make_project(reservation_timeout_seconds=60)
    a = services.reserve_next_assignment(project, worker)
    services.expire_reservations(now=timezone.now() + timedelta(seconds=61))
    assert services.submit_assignment(a, worker, answers(a)).status == "late"  # kept, counted nowhere
    assert received == []


@pytest.mark.django_db(transaction=True)
def test_sent_for_submissions_with_gold_items(worker, received):
    project = make_project(gold=4, gold_rate=0.4, gold_min_items=0)  # 3 items -> 1 or 2 gold per HIT
    a = services.reserve_next_assignment(project, worker)
    items = services.assignment_items(a)
    assert any(i.is_gold for i in items)
    services.submit_assignment(a, worker, answers(a))
    assert len(received) == 1 and received[0]["n"] == len(items)


@pytest.mark.django_db
def test_on_commit_in_a_test_transaction(worker, received, django_capture_on_commit_callbacks):
    project = make_project()
    a = services.reserve_next_assignment(project, worker)
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        services.submit_assignment(a, worker, answers(a))
        assert received == []
    assert callbacks and len(received) == 1 and received[0]["assignment"].pk == a.pk
