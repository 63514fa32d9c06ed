"""Gold items: scored at submission, recorded once per worker, and a worker below the threshold is blocked."""

import pytest

from annotation import selectors, services
from annotation.models import GoldRecord, Response
from tests.factories import ProjectFactory

pytestmark = pytest.mark.django_db


def make_project(**kw):
    return ProjectFactory(name="Gold", items=20, gold=8, items_per_hit=2, gold_rate=0.5, **kw)  # one gold per HIT


@pytest.fixture
def worker(django_user_model):
    return services.worker_for_user(django_user_model.objects.create_user("gw"))


def do_hit(project, worker, gold_label):
    a = services.reserve_next_assignment(project, worker)
    responses = {i.pk: {"label": gold_label if i.is_gold else "none"} for i in services.assignment_items(a)}
    return services.submit_assignment(a, worker, responses)


def test_gold_scored_and_recorded(worker):
    project = make_project(gold_min_items=3, gold_min_accuracy=0.7)
    a = do_hit(project, worker, "pro")
    [rec] = GoldRecord.objects.filter(worker=worker)
    assert rec.correct and rec.score == 1.0 and rec.assignment == a and rec.item.is_gold
    do_hit(project, worker, "con")
    assert list(GoldRecord.objects.filter(worker=worker).order_by("id").values_list("correct", flat=True)) == [
        True,
        False,
    ]
    # gold responses are stored like any response but do not count towards items done
    assert Response.objects.filter(item__is_gold=True).count() == 2
    assert selectors.project_progress(project)["done"] == 4


def test_worker_blocked_after_n_gold_items_below_threshold(worker):
    project = make_project(gold_min_items=3, gold_min_accuracy=0.7)
    do_hit(project, worker, "con")
    do_hit(project, worker, "con")
    worker.refresh_from_db()
    assert not worker.blocked  # only 2 gold items so far: not judged yet
    do_hit(project, worker, "con")  # third miss: 0% < 70%
    worker.refresh_from_db()
    assert worker.blocked and worker.blocked_at is not None
    assert "gold accuracy 0%" in worker.blocked_reason and "3 gold items" in worker.blocked_reason
    with pytest.raises(services.WorkerBlocked) as exc:
        services.reserve_next_assignment(project, worker)
    assert "gold accuracy" in str(exc.value)
    rows = {r["worker"]: r for r in selectors.project_progress(project)["workers"]}
    assert rows[worker.pk]["blocked"] and rows[worker.pk]["gold_accuracy"] == 0.0
    assert rows[worker.pk]["reason"] == worker.blocked_reason


def test_a_gold_block_keeps_an_earlier_block_and_its_reason(worker):
    """Workers are blocked one way (services.block_worker): a gold block that comes after a staff block keeps the
    staff's reason and time, and the submission with its gold records is stored all the same."""
    project = make_project(gold_min_items=1, gold_min_accuracy=0.7)
    a = services.reserve_next_assignment(project, worker)
    services.block_worker(worker, "spam answers")
    blocked_at = worker.blocked_at
    done = services.submit_assignment(
        a, worker, {i.pk: {"label": "con" if i.is_gold else "none"} for i in services.assignment_items(a)}
    )
    worker.refresh_from_db()
    assert done.gold_scored and list(GoldRecord.objects.filter(worker=worker).values_list("correct", flat=True)) == [
        False
    ]
    assert (worker.blocked, worker.blocked_reason, worker.blocked_at) == (True, "spam answers", blocked_at)


def test_accurate_worker_is_not_blocked(worker):
    project = make_project(gold_min_items=3, gold_min_accuracy=0.6)
    for label in ["pro", "con", "pro", "pro"]:  # 3/4 = 75% >= 60%
        do_hit(project, worker, label)
    worker.refresh_from_db()
    assert not worker.blocked


def test_blocking_can_be_switched_off(worker):
    project = make_project(gold_min_items=0)
    for _ in range(4):
        do_hit(project, worker, "con")
    worker.refresh_from_db()
    assert not worker.blocked and GoldRecord.objects.filter(worker=worker, correct=False).count() == 4
