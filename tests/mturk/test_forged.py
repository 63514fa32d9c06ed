"""A hostile crowd on MTurk's ExternalQuestion (issue 22, items 1-2). Nothing in the URL is checked before a sync
lists the assignment, so:

1. a made-up accept with a real worker's workerId never touches that worker: it gets a provisional worker, its
   (wrong) gold answers are not scored, the real worker is not blocked, can still do the same HIT, and only what MTurk
   confirms is scored against them;
2. made-up accepts cannot take every slot of a study: open unconfirmed reservations are capped per claimed workerId
   and per client address.
"""

from __future__ import annotations

import pytest
from django.test import Client
from django.utils import timezone

from annotation import services
from annotation.models import HIT, Assignment, GoldRecord, Item, Worker
from mturk import binding, sync
from mturk.models import MTurkHIT

from .conftest import hit_response, make_project

pytestmark = pytest.mark.django_db
HIT_ID = "3FORGEHITXXXXXXXXXXXXXXXXXXXXX"
TURK = "https://workersandbox.mturk.com"


@pytest.fixture
def gold_project():
    """One HIT of 4 items with 2 gold items per assignment; 2 gold answers below 50 % block a worker."""
    project = make_project(hits=1, r=3)
    services.add_items(
        project,
        [],
        gold=[
            {"payload": {"text": f"Gold sentence {i}.", "topic": "nuclear energy"}, "expected": {"label": "pro"}}
            for i in range(2)
        ],
    )
    project.gold_rate, project.gold_min_items, project.gold_min_accuracy = 0.5, 2, 0.5
    project.save(update_fields=["gold_rate", "gold_min_items", "gold_min_accuracy"])
    MTurkHIT.objects.create(
        project=project,
        hit=project.hits.get(),
        mturk_hit_id=HIT_ID,
        reward_cents=26,
        max_assignments=3,
        created_at=timezone.now(),
    )
    return project


def answer(project, assignment_id, worker_id, *, gold_label, client="10.0.0.1"):
    mhit = MTurkHIT.objects.get(mturk_hit_id=HIT_ID)
    b = binding.bind(
        project, mhit, assignment_id=assignment_id, worker_id=worker_id, turk_submit_to=TURK, client=client
    )
    assignment, worker = binding.assignment_for(b, project)
    items = services.assignment_items(assignment)
    assert sum(i.is_gold for i in items) == 2
    return services.submit_assignment(
        assignment, worker, {i.pk: {"label": gold_label if i.is_gold else "con"} for i in items}
    )


def test_a_forged_accept_never_touches_the_real_worker(gold_project, stub):
    forged = answer(gold_project, "FORGEDASSIGNMENT1", "AREALWORKER", gold_label="none")  # every gold answer wrong
    assert forged.worker.claimed_external_id == "AREALWORKER" and forged.worker.external_id == ""
    assert not Worker.objects.filter(external_id="AREALWORKER").exists()
    assert not GoldRecord.objects.exists() and not Worker.objects.filter(blocked=True).exists()
    # the real worker accepts the same HIT on MTurk and does it, gold right
    real = answer(gold_project, "3REALASSIGNMENTXXXXXXXXXXXXXXX", "AREALWORKER", gold_label="pro")
    assert real.status == "submitted" and real.pk != forged.pk
    # MTurk lists the real assignment only: it is confirmed for AREALWORKER and its gold scored; the forged stays out
    stub.add_response("get_hit", hit_response(HIT_ID), {"HITId": HIT_ID})
    stub.add_response(
        "list_assignments_for_hit",
        {
            "NumResults": 1,
            "Assignments": [
                {
                    "AssignmentId": "3REALASSIGNMENTXXXXXXXXXXXXXXX",
                    "WorkerId": "AREALWORKER",
                    "HITId": HIT_ID,
                    "AssignmentStatus": "Approved",
                }
            ],
        },
        {"HITId": HIT_ID, "MaxResults": 100, "AssignmentStatuses": ["Submitted", "Approved", "Rejected"]},
    )
    sync.sync_project(gold_project, blocks=False)
    worker = Worker.objects.get(source="mturk", external_id="AREALWORKER")
    assert not worker.blocked
    assert Assignment.objects.get(pk=real.pk).worker == worker
    assert list(GoldRecord.objects.values_list("worker_id", "correct")) == [(worker.pk, True)] * 2
    assert Assignment.objects.get(pk=forged.pk).worker.claimed_external_id == "AREALWORKER"  # still unconfirmed


def test_confirmed_wrong_gold_answers_block_the_worker_then(gold_project):
    a = answer(gold_project, "3WRONGASSIGNMENTXXXXXXXXXXXXXX", "ACARELESS", gold_label="none")
    assert not GoldRecord.objects.exists()
    confirmed = services.confirm_assignment(a, source="mturk", external_id="ACARELESS")
    assert confirmed.worker.external_id == "ACARELESS" and confirmed.worker.blocked
    assert "gold accuracy 0%" in confirmed.worker.blocked_reason
    assert not Worker.objects.filter(claimed_external_id="ACARELESS").exists()  # the provisional worker is gone
    # the confirmed worker is blocked: a new accept under that id is refused
    with pytest.raises(services.WorkerBlocked):
        answer(gold_project, "3NEXTASSIGNMENTXXXXXXXXXXXXXXX", "ACARELESS", gold_label="pro")
    # confirming twice changes nothing
    assert services.confirm_assignment(confirmed, source="mturk", external_id="ACARELESS").pk == confirmed.pk
    assert GoldRecord.objects.count() == 2


def test_forged_accepts_cannot_take_every_slot(settings):
    """15 anonymous GETs with made-up accepts from one address: capped, and the study keeps free slots."""
    settings.ARGORA_UNCONFIRMED_PER_ADDRESS = 4
    project = make_project(hits=5, r=3)
    for n, hit in enumerate(project.hits.order_by("position")):
        MTurkHIT.objects.create(
            project=project,
            hit=hit,
            mturk_hit_id=f"3HIT{n}",
            reward_cents=26,
            max_assignments=3,
            created_at=timezone.now(),
        )
    c = Client(REMOTE_ADDR="203.0.113.7")
    codes = []
    for n in range(15):
        r = c.get(
            f"/mturk/external/{project.slug}/",
            {"assignmentId": f"MADEUP{n}", "hitId": f"3HIT{n % 5}", "workerId": f"AFAKE{n}", "turkSubmitTo": TURK},
        )
        codes.append(r.status_code)
    assert codes.count(200) == 4 and set(codes[4:]) == {429}
    assert sum(HIT.objects.filter(project=project).values_list("taken", flat=True)) == 4
    # another address still gets in; one claimed workerId holds at most 2 open HITs
    other = Client(REMOTE_ADDR="198.51.100.9")
    got = [
        other.get(
            f"/mturk/external/{project.slug}/",
            {"assignmentId": f"SAME{n}", "hitId": f"3HIT{n}", "workerId": "ASAMEWORKER", "turkSubmitTo": TURK},
        ).status_code
        for n in range(3)
    ]
    assert got == [200, 200, 429]


def test_unconfirmed_answers_never_reach_aggregates(gold_project):
    answer(gold_project, "FORGEDASSIGNMENT2", "ANYONE", gold_label="pro")
    from annotation import selectors

    assert selectors.item_responses(gold_project) == {}
    assert Item.objects.filter(project=gold_project, is_gold=False).count() == 4
