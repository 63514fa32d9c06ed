"""Allocation: reserve / resume, never the same item twice, at most R slots per HIT, expiry, refusals."""

from datetime import timedelta

import pytest
from django.utils import timezone

from annotation import services
from annotation.models import HIT, Assignment
from tests.factories import ProjectFactory

pytestmark = pytest.mark.django_db


def make_project(n=10, gold=0, **kw):
    return ProjectFactory(name="Alloc", items=n, gold=gold, **kw)


@pytest.fixture
def make_worker(django_user_model):
    counter = iter(range(10**6))

    def make():
        return services.worker_for_user(django_user_model.objects.create_user(f"worker{next(counter)}"))

    return make


def answer_all(assignment, label="pro"):
    return {item.pk: {"label": label} for item in services.assignment_items(assignment)}


def test_reserve_gives_a_hit_and_resumes_the_held_one(make_worker):
    project = make_project(n=10, items_per_hit=5)
    w = make_worker()
    a = services.reserve_next_assignment(project, w)
    assert a.status == "reserved" and a.worker == w and a.expires_at > a.reserved_at
    assert (a.expires_at - a.reserved_at).total_seconds() == project.reservation_timeout_seconds
    assert services.current_assignment(project, w) == a
    assert services.reserve_next_assignment(project, w) == a  # no second reservation while holding one
    assert Assignment.objects.count() == 1
    assert HIT.objects.get(pk=a.hit_id).taken == 1


def test_worker_never_sees_an_item_twice_and_runs_out(make_worker):
    project = make_project(n=12, items_per_hit=5)  # 3 HITs
    w = make_worker()
    seen = []
    while (a := services.reserve_next_assignment(project, w)) is not None:
        items = services.assignment_items(a)
        seen += [i.pk for i in items]
        services.submit_assignment(a, w, answer_all(a))
    assert len(seen) == 12 and len(set(seen)) == 12
    assert services.reserve_next_assignment(project, w) is None


def test_no_hit_gets_more_than_r_slots(make_worker):
    project = make_project(n=5, items_per_hit=5, assignments_per_item=3)  # one HIT
    workers = [make_worker() for _ in range(4)]
    got = [services.reserve_next_assignment(project, w) for w in workers]
    assert all(got[:3]) and got[3] is None
    assert HIT.objects.get(project=project).taken == 3


def test_expired_reservation_returns_to_the_pool(make_worker):
    project = make_project(n=5, items_per_hit=5, assignments_per_item=1, reservation_timeout_seconds=60)
    w1, w2 = make_worker(), make_worker()
    a = services.reserve_next_assignment(project, w1)
    assert services.reserve_next_assignment(project, w2) is None
    later = timezone.now() + timedelta(seconds=61)
    assert services.current_assignment(project, w1, now=later) is None
    assert services.expire_reservations(now=later) == 1
    assert services.expire_reservations(now=later) == 0
    a.refresh_from_db()
    assert a.status == "expired" and HIT.objects.get(project=project).taken == 0
    b = services.reserve_next_assignment(project, w2, now=later)
    assert b is not None and b.hit_id == a.hit_id
    # the expired worker does not get the same HIT (items) again
    assert services.reserve_next_assignment(project, w1, now=later) is None


def test_reserve_expires_stale_reservations_itself(make_worker):
    project = make_project(n=5, items_per_hit=5, assignments_per_item=1, reservation_timeout_seconds=60)
    w1, w2 = make_worker(), make_worker()
    services.reserve_next_assignment(project, w1)
    b = services.reserve_next_assignment(project, w2, now=timezone.now() + timedelta(seconds=120))
    assert b is not None
    assert Assignment.objects.filter(status="expired").count() == 1


def test_refusals_blocked_inactive_quota(make_worker):
    project = make_project(n=20, items_per_hit=5, max_hits_per_worker=1)
    w = make_worker()
    a = services.reserve_next_assignment(project, w)
    services.submit_assignment(a, w, answer_all(a))
    with pytest.raises(services.QuotaReached):
        services.reserve_next_assignment(project, w)
    w2 = make_worker()
    services.block_worker(w2, "spam answers")
    with pytest.raises(services.WorkerBlocked) as exc:
        services.reserve_next_assignment(project, w2)
    assert "spam answers" in str(exc.value)
    services.unblock_worker(w2)
    assert services.reserve_next_assignment(project, w2) is not None
    services.set_project_status(project, "closed")
    with pytest.raises(services.ProjectNotActive):
        services.reserve_next_assignment(project, make_worker())


def test_gold_items_interleaved_at_rate_and_never_repeated(make_worker):
    project = make_project(n=20, gold=6, items_per_hit=5, gold_rate=0.4, gold_min_items=0)  # 2 gold per HIT
    w = make_worker()
    gold_seen = []
    for _ in range(3):
        a = services.reserve_next_assignment(project, w)
        items = services.assignment_items(a)
        assert services.assignment_items(a) == items  # stable order
        gold = [i.pk for i in items if i.is_gold]
        assert len(gold) == 2 and len(items) == 7
        gold_seen += gold
        services.submit_assignment(a, w, answer_all(a))
    assert len(gold_seen) == 6 and len(set(gold_seen)) == 6
    a = services.reserve_next_assignment(project, w)  # gold pool used up: the HIT comes without gold
    assert [i for i in services.assignment_items(a) if i.is_gold] == []
