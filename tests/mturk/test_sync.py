"""Sync with botocore's Stubber: list, reconcile, approve / reject with a reason, bonuses, and a re-sync after a
simulated crash in the middle of SendBonus pays nothing twice."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from botocore.exceptions import ClientError
from django.utils import timezone

from annotation import services
from annotation.models import Assignment, Worker
from mturk import binding, client, sync
from mturk.client import request_token
from mturk.models import MTurkAssignment, MTurkBonus, MTurkHIT, MTurkOperation

from .conftest import hit_response, make_project

pytestmark = pytest.mark.django_db
HIT_ID = "3SYNCHITXXXXXXXXXXXXXXXXXXXXXX"
T = datetime(2025, 5, 1, 12, 0, tzinfo=UTC)


def setup_project():
    project = make_project(hits=1, r=3)
    mhit = MTurkHIT.objects.create(
        project=project,
        hit=project.hits.get(),
        mturk_hit_id=HIT_ID,
        sandbox=True,
        max_assignments=3,
        reward_cents=26,
        created_at=timezone.now(),
    )
    return project, mhit


def do_hit(project, mhit, assignment_id, worker_id):
    b = binding.bind(
        project,
        mhit,
        assignment_id=assignment_id,
        worker_id=worker_id,
        turk_submit_to="https://workersandbox.mturk.com",
    )
    assignment, worker = binding.assignment_for(b, project)
    responses = {item.pk: {"label": "pro"} for item in services.assignment_items(assignment)}
    return services.submit_assignment(assignment, worker, responses)


def mturk_assignment(aid, wid, status="Submitted"):
    return {
        "AssignmentId": aid,
        "WorkerId": wid,
        "HITId": HIT_ID,
        "AssignmentStatus": status,
        "AcceptTime": T,
        "SubmitTime": T,
        "Answer": "<QuestionFormAnswers/>",
    }


def listing(stub, *assignments, hit_status="Assignable", hit_id=HIT_ID):
    """What a sync asks per MTurk HIT: GetHIT (status, expiry), then ListAssignmentsForHIT."""
    stub.add_response("get_hit", hit_response(hit_id, status=hit_status), {"HITId": hit_id})
    stub.add_response(
        "list_assignments_for_hit",
        {"NumResults": len(assignments), "Assignments": list(assignments)},
        {"HITId": hit_id, "MaxResults": 100, "AssignmentStatuses": ["Submitted", "Approved", "Rejected"]},
    )


def test_sync_approves_rejects_and_reports_unmatched(stub):
    project, mhit = setup_project()
    good = do_hit(project, mhit, "3ASSIGNGOODXXXXXXXXXXXXXXXXXXX", "AGOODWORKER")
    bad = do_hit(project, mhit, "3ASSIGNBADXXXXXXXXXXXXXXXXXXXX", "ABADWORKER")
    # the real ABADWORKER is blocked (e.g. by another study's gold checks); the sync confirms the assignment for them
    services.block_worker(
        services.worker_for_external_id("ABADWORKER", source=Worker.Source.MTURK), "gold accuracy 0% on 3 gold items"
    )
    listing(
        stub,
        mturk_assignment("3ASSIGNGOODXXXXXXXXXXXXXXXXXXX", "AGOODWORKER"),
        mturk_assignment("3ASSIGNBADXXXXXXXXXXXXXXXXXXXX", "ABADWORKER"),
        mturk_assignment("3ASSIGNFORGEDXXXXXXXXXXXXXXXXX", "ANOANSWERS"),
    )
    stub.add_response("approve_assignment", {}, {"AssignmentId": "3ASSIGNGOODXXXXXXXXXXXXXXXXXXX"})
    stub.add_response(
        "reject_assignment",
        {},
        {
            "AssignmentId": "3ASSIGNBADXXXXXXXXXXXXXXXXXXXX",
            "RequesterFeedback": "Your answers failed our quality checks (control questions with known answers).",
        },
    )
    stub.add_response("list_worker_blocks", {"NumResults": 0, "WorkerBlocks": []}, {"MaxResults": 100})
    stub.add_response(
        "create_worker_block", {}, {"WorkerId": "ABADWORKER", "Reason": "gold accuracy 0% on 3 gold items"}
    )
    report = sync.sync_project(project)
    assert (report.assignments, report.matched, report.approved, report.rejected, report.blocks) == (3, 2, 1, 1, 1)
    assert report.unmatched == ["3ASSIGNFORGEDXXXXXXXXXXXXXXXXX by ANOANSWERS"] and not report.errors
    assert Assignment.objects.get(pk=good.pk).status == "approved"
    assert Assignment.objects.get(pk=bad.pk).status == "rejected"
    assert MTurkAssignment.objects.get(mturk_assignment_id="3ASSIGNGOODXXXXXXXXXXXXXXXXXXX").status == "Approved"
    assert sync.cost_so_far(project)["total_cents"] == 26 + 5

    # a second sync: MTurk now reports them approved/rejected; nothing is called again (the ops are done)
    listing(
        stub,
        mturk_assignment("3ASSIGNGOODXXXXXXXXXXXXXXXXXXX", "AGOODWORKER", "Approved"),
        mturk_assignment("3ASSIGNBADXXXXXXXXXXXXXXXXXXXX", "ABADWORKER", "Rejected"),
        mturk_assignment("3ASSIGNFORGEDXXXXXXXXXXXXXXXXX", "ANOANSWERS"),
    )
    stub.add_response(
        "list_worker_blocks", {"NumResults": 1, "WorkerBlocks": [{"WorkerId": "ABADWORKER"}]}, {"MaxResults": 100}
    )
    report = sync.sync_project(project)
    assert (report.approved, report.rejected, report.blocks) == (0, 0, 0)


def test_manual_policy_follows_staff_review(stub):
    project, mhit = setup_project()
    project.mturk.approval_policy = "manual"
    project.mturk.save()
    a = do_hit(project, mhit, "3ASSIGNAXXXXXXXXXXXXXXXXXXXXXX", "AWORKERA")
    listing(stub, mturk_assignment("3ASSIGNAXXXXXXXXXXXXXXXXXXXXXX", "AWORKERA"))
    assert sync.sync_project(project).approved == 0  # waits for the staff review
    services.set_assignment_status(a, "approved")
    listing(stub, mturk_assignment("3ASSIGNAXXXXXXXXXXXXXXXXXXXXXX", "AWORKERA"))
    stub.add_response("approve_assignment", {}, {"AssignmentId": "3ASSIGNAXXXXXXXXXXXXXXXXXXXXXX"})
    assert sync.sync_project(project).approved == 1


def _approved_with_bonus(stub):
    project, mhit = setup_project()
    do_hit(project, mhit, "3ASSIGNBONUSXXXXXXXXXXXXXXXXXX", "ABONUSWORKER")
    listing(stub, mturk_assignment("3ASSIGNBONUSXXXXXXXXXXXXXXXXXX", "ABONUSWORKER", "Approved"))
    sync.sync_project(project)
    bonus = sync.grant_bonus(project, "3ASSIGNBONUSXXXXXXXXXXXXXXXXXX", 50, "Great explanations")
    params = {
        "WorkerId": "ABONUSWORKER",
        "BonusAmount": "0.50",
        "AssignmentId": "3ASSIGNBONUSXXXXXXXXXXXXXXXXXX",
        "Reason": f"Great explanations [ref bonus:{bonus.pk}]",
        "UniqueRequestToken": request_token(f"bonus:{bonus.pk}"),
    }
    return project, bonus, params


def crash_after_the_call(monkeypatch):
    real = client._finish
    calls = {"n": 0}

    def finish(op, response, **kw):
        if op.operation == "send_bonus" and calls["n"] == 0:
            calls["n"] += 1
            raise RuntimeError("worker killed after MTurk paid, before Argora wrote it down")
        return real(op, response, **kw)

    monkeypatch.setattr(client, "_finish", finish)


def test_resync_after_a_crash_mid_bonus_finds_the_payment_and_pays_no_second_bonus(stub, monkeypatch):
    project, bonus, params = _approved_with_bonus(stub)
    listing(stub, mturk_assignment("3ASSIGNBONUSXXXXXXXXXXXXXXXXXX", "ABONUSWORKER", "Approved"))
    stub.add_response("send_bonus", {}, params)  # MTurk pays ...
    crash_after_the_call(monkeypatch)  # ... and Argora dies before marking it done
    with pytest.raises(RuntimeError):
        sync.sync_project(project)
    op = MTurkOperation.objects.get(key=f"bonus:{bonus.pk}")
    assert (op.status, op.attempts) == ("pending", 1)
    assert not MTurkBonus.objects.get(pk=bonus.pk).paid

    # re-sync: the pending bonus is looked up first and found, so SendBonus is not called again
    listing(stub, mturk_assignment("3ASSIGNBONUSXXXXXXXXXXXXXXXXXX", "ABONUSWORKER", "Approved"))
    stub.add_response(
        "list_bonus_payments",
        {
            "NumResults": 1,
            "BonusPayments": [
                {
                    "WorkerId": "ABONUSWORKER",
                    "BonusAmount": "0.50",
                    "AssignmentId": "3ASSIGNBONUSXXXXXXXXXXXXXXXXXX",
                    "Reason": params["Reason"],
                    "GrantTime": T,
                }
            ],
        },
        {"AssignmentId": "3ASSIGNBONUSXXXXXXXXXXXXXXXXXX", "MaxResults": 100},
    )
    assert sync.sync_project(project).bonuses_paid == 1
    op.refresh_from_db()
    assert op.status == "done" and op.attempts == 1 and "found on MTurk" in op.error
    assert MTurkBonus.objects.get(pk=bonus.pk).paid

    # and again: nothing about the bonus is called at all
    listing(stub, mturk_assignment("3ASSIGNBONUSXXXXXXXXXXXXXXXXXX", "ABONUSWORKER", "Approved"))
    assert sync.sync_project(project).bonuses_paid == 0
    assert sync.cost_so_far(project)["bonuses_cents"] == 50
    assert sync.cost_so_far(project)["bonus_fees_cents"] == 10


def test_retried_bonus_reuses_the_request_token(stub, monkeypatch):
    project, bonus, params = _approved_with_bonus(stub)
    listing(stub, mturk_assignment("3ASSIGNBONUSXXXXXXXXXXXXXXXXXX", "ABONUSWORKER", "Approved"))
    stub.add_response("send_bonus", {}, params)
    crash_after_the_call(monkeypatch)
    with pytest.raises(RuntimeError):
        sync.sync_project(project)
    # the payment is not listed yet: the retry sends the same UniqueRequestToken, MTurk refuses the duplicate
    listing(stub, mturk_assignment("3ASSIGNBONUSXXXXXXXXXXXXXXXXXX", "ABONUSWORKER", "Approved"))
    stub.add_response(
        "list_bonus_payments",
        {"NumResults": 0, "BonusPayments": []},
        {"AssignmentId": "3ASSIGNBONUSXXXXXXXXXXXXXXXXXX", "MaxResults": 100},
    )
    stub.add_client_error(
        "send_bonus",
        service_error_code="RequestError",
        http_status_code=400,
        service_message="The request with this UniqueRequestToken was already processed (request id 1234).",
        expected_params=params,
    )
    report = sync.sync_project(project)
    assert report.bonuses_paid == 1 and not report.errors
    assert MTurkOperation.objects.get(key=f"bonus:{bonus.pk}").status == "done"
    assert MTurkBonus.objects.filter(status="paid").count() == 1


def test_wage_topups_and_notify(stub):
    project, mhit = setup_project()
    a = do_hit(project, mhit, "3ASSIGNSLOWXXXXXXXXXXXXXXXXXXX", "ASLOWWORKER")
    Assignment.objects.filter(pk=a.pk).update(work_seconds=300)  # 5 minutes for a 26 c HIT: $3.12/h
    listing(stub, mturk_assignment("3ASSIGNSLOWXXXXXXXXXXXXXXXXXXX", "ASLOWWORKER"))
    stub.add_response("approve_assignment", {}, {"AssignmentId": "3ASSIGNSLOWXXXXXXXXXXXXXXXXXXX"})
    report = sync.sync_project(project)
    assert "below the floor" in report.wage_warning
    (topup,) = sync.plan_wage_topups(project)
    assert topup.amount_cents == 38  # 760 c/h x 300 s = 63.3 -> 64 c owed, 26 paid
    assert sync.plan_wage_topups(project) == []  # one top-up per assignment
    stub.add_response(
        "notify_workers",
        {"NotifyWorkersFailureStatuses": []},
        {"Subject": "New HITs", "MessageText": "We published more HITs.", "WorkerIds": ["ASLOWWORKER"]},
    )
    assert sync.notify_workers(project, "New HITs", "We published more HITs.", ["ASLOWWORKER"]) == 1
    assert sync.notify_workers(project, "New HITs", "We published more HITs.", ["ASLOWWORKER"]) == 1  # logged: no call


def test_failed_call_is_logged_with_mturks_reason(stub):
    project, mhit = setup_project()
    do_hit(project, mhit, "3ASSIGNFAILXXXXXXXXXXXXXXXXXXX", "AFAILWORKER")
    listing(stub, mturk_assignment("3ASSIGNFAILXXXXXXXXXXXXXXXXXXX", "AFAILWORKER"))
    stub.add_client_error(
        "approve_assignment",
        service_error_code="RequestError",
        http_status_code=400,
        service_message="This operation can be called with a status of: Submitted",
    )
    report = sync.sync_project(project)
    assert report.approved == 0 and "This operation can be called" in report.errors[0]
    op = MTurkOperation.objects.get(key="approve:3ASSIGNFAILXXXXXXXXXXXXXXXXXXX")
    assert op.status == "failed" and "RequestError" in op.error
    assert isinstance(ClientError, type)


def test_sync_refreshes_hit_status_and_expiry(stub):
    project, mhit = setup_project()
    later = datetime(2026, 2, 1, 9, 30, tzinfo=UTC)
    stub.add_response(
        "get_hit", hit_response(HIT_ID, status="Reviewable", expiration=later, max_assignments=3), {"HITId": HIT_ID}
    )
    stub.add_response(
        "list_assignments_for_hit",
        {"NumResults": 0, "Assignments": []},
        {"HITId": HIT_ID, "MaxResults": 100, "AssignmentStatuses": ["Submitted", "Approved", "Rejected"]},
    )
    report = sync.sync_project(project, blocks=False)
    assert report.hit_status == {"Reviewable": 1} and not report.errors
    row = MTurkHIT.objects.get(pk=mhit.pk)
    assert (row.status, row.expires_at, row.max_assignments) == ("Reviewable", later, 3) and row.synced_at
    # GetHIT failing is reported; the listing still runs and the stored status stays
    stub.add_client_error(
        "get_hit",
        service_error_code="ServiceFault",
        http_status_code=500,
        service_message="try again",
        expected_params={"HITId": HIT_ID},
    )
    stub.add_response(
        "list_assignments_for_hit",
        {"NumResults": 0, "Assignments": []},
        {"HITId": HIT_ID, "MaxResults": 100, "AssignmentStatuses": ["Submitted", "Approved", "Rejected"]},
    )
    report = sync.sync_project(project, blocks=False)
    assert len(report.errors) == 1 and "get_hit" in report.errors[0] and "try again" in report.errors[0]
    assert MTurkHIT.objects.get(pk=mhit.pk).status == "Reviewable"


def test_fabricated_assignment_counts_for_nothing_and_sync_frees_its_slot(stub, tmp_artifacts):
    """A made-up assignmentId / workerId for a known hitId gets a binding (MTurk cannot prove it when the page
    opens), but its answers stay out of the aggregates until a sync matches it, and a sync rejects it (slot
    back to the pool) once MTurk still does not know it an assignment duration after it was submitted."""
    from annotation import selectors
    from annotation.models import HIT
    from corpus.releases import build_release, release_file_path

    project, mhit = setup_project()
    real = do_hit(project, mhit, "3ASSIGNREALXXXXXXXXXXXXXXXXXXX", "AREALWORKER")
    fake_b = binding.bind(
        project,
        mhit,
        assignment_id="MADEUPASSIGNMENT",
        worker_id="AMADEUPWORKER",
        turk_submit_to="https://workersandbox.mturk.com",
    )
    fake, fake_worker = binding.assignment_for(fake_b, project)
    services.submit_assignment(fake, fake_worker, {i.pk: {"label": "con"} for i in services.assignment_items(fake)})
    assert HIT.objects.get(pk=mhit.hit_id).taken == 2
    # before any sync neither counts (MTurk has confirmed neither)
    assert selectors.item_responses(project) == {}
    assert len(selectors.item_responses(project, include_unverified=True)[real.hit.hit_items.first().item_id]) == 2
    assert selectors.project_progress(project)["unverified_assignments"] == 2

    # sync 1: MTurk lists the real one (approved under the gold policy); the fake one is too recent to judge
    listing(stub, mturk_assignment("3ASSIGNREALXXXXXXXXXXXXXXXXXXX", "AREALWORKER"))
    stub.add_response("approve_assignment", {}, {"AssignmentId": "3ASSIGNREALXXXXXXXXXXXXXXXXXXX"})
    report = sync.sync_project(project, blocks=False)
    assert report.approved == 1 and report.excluded == []
    counted = selectors.item_responses(project)
    assert counted and all(r == [{"label": "pro"}] for r in counted.values())  # the real answers only
    assert [a["label"] for a in selectors.aggregated_items(project)] == ["pro"] * 4
    assert Assignment.objects.get(pk=fake.pk).status == "submitted"

    # sync 2, an assignment duration (3600 s) later: MTurk still does not know it -> rejected, slot freed
    Assignment.objects.filter(pk=fake.pk).update(submitted_at=timezone.now() - timezone.timedelta(seconds=3601))
    listing(stub, mturk_assignment("3ASSIGNREALXXXXXXXXXXXXXXXXXXX", "AREALWORKER", "Approved"))
    report = sync.sync_project(project, blocks=False)
    assert report.excluded == [
        f"Argora assignment {fake.pk} (assignmentId MADEUPASSIGNMENT by workerId AMADEUPWORKER, unconfirmed)"
    ]
    assert Assignment.objects.get(pk=fake.pk).status == "rejected"
    assert Assignment.objects.get(pk=real.pk).status == "approved"  # never touched
    assert HIT.objects.get(pk=mhit.hit_id).taken == 1
    assert selectors.project_progress(project)["unverified_assignments"] == 0
    assert not MTurkOperation.objects.filter(key__contains="MADEUPASSIGNMENT").exists()  # nothing asked of MTurk
    # the released data hold the real worker's answers only
    release = build_release("nuclear", "1.0", kind="annotations", config={"project": project.slug})
    rows = [json.loads(line) for line in release_file_path(release, "annotations.jsonl").read_text().splitlines()]
    confirmed = Assignment.objects.get(pk=real.pk).worker  # the sync moved it to the confirmed AREALWORKER
    assert confirmed.external_id == "AREALWORKER" and confirmed.pk != real.worker_id
    assert [[a["worker"] for a in r["annotations"]] for r in rows] == [[confirmed.pk]] * 4
    # a third sync changes nothing
    listing(stub, mturk_assignment("3ASSIGNREALXXXXXXXXXXXXXXXXXXX", "AREALWORKER", "Approved"))
    assert sync.sync_project(project, blocks=False).excluded == []


def test_no_rejection_when_a_listing_failed(stub):
    project, mhit = setup_project()
    fake_b = binding.bind(
        project,
        mhit,
        assignment_id="MADEUPASSIGNMENT2",
        worker_id="AMADEUPWORKER2",
        turk_submit_to="https://workersandbox.mturk.com",
    )
    fake, worker = binding.assignment_for(fake_b, project)
    services.submit_assignment(fake, worker, {i.pk: {"label": "con"} for i in services.assignment_items(fake)})
    Assignment.objects.filter(pk=fake.pk).update(submitted_at=timezone.now() - timezone.timedelta(hours=2))
    stub.add_response("get_hit", hit_response(HIT_ID), {"HITId": HIT_ID})
    stub.add_client_error("list_assignments_for_hit", service_error_code="ServiceFault", http_status_code=500)
    report = sync.sync_project(project, blocks=False)
    assert report.errors and report.excluded == []
    assert Assignment.objects.get(pk=fake.pk).status == "submitted"  # not judged on an incomplete listing


@pytest.mark.parametrize("mturk_status, calls_again", [("Approved", False), ("Submitted", True)])
def test_interrupted_approval_is_looked_up_with_get_assignment(stub, mturk_status, calls_again):
    project, mhit = setup_project()
    a = do_hit(project, mhit, "3ASSIGNLOOKXXXXXXXXXXXXXXXXXXX", "ALOOKWORKER")
    # a crash after ApproveAssignment was sent, before Argora marked it done: the log row is pending
    MTurkOperation.objects.create(
        key="approve:3ASSIGNLOOKXXXXXXXXXXXXXXXXXXX",
        operation="approve_assignment",
        project=project,
        request={"AssignmentId": "3ASSIGNLOOKXXXXXXXXXXXXXXXXXXX"},
        attempts=1,
    )
    listing(stub, mturk_assignment("3ASSIGNLOOKXXXXXXXXXXXXXXXXXXX", "ALOOKWORKER"))
    stub.add_response(
        "get_assignment",
        {
            "Assignment": {
                "AssignmentId": "3ASSIGNLOOKXXXXXXXXXXXXXXXXXXX",
                "WorkerId": "ALOOKWORKER",
                "HITId": HIT_ID,
                "AssignmentStatus": mturk_status,
            }
        },
        {"AssignmentId": "3ASSIGNLOOKXXXXXXXXXXXXXXXXXXX"},
    )
    if calls_again:  # not approved on MTurk yet: the call is made again (same parameters)
        stub.add_response("approve_assignment", {}, {"AssignmentId": "3ASSIGNLOOKXXXXXXXXXXXXXXXXXXX"})
    report = sync.sync_project(project, blocks=False)
    assert report.approved == 1 and not report.errors
    op = MTurkOperation.objects.get(key="approve:3ASSIGNLOOKXXXXXXXXXXXXXXXXXXX")
    assert op.status == "done" and op.attempts == (2 if calls_again else 1)
    assert ("found on MTurk" in op.error) is not calls_again
    assert Assignment.objects.get(pk=a.pk).status == "approved"
