"""Sync with botocore's Stubber: list, reconcile, approve / reject with a reason, bonuses, and a re-sync after a
simulated crash in the middle of SendBonus pays nothing twice."""
from __future__ import annotations

from datetime import datetime, timezone as dt_timezone

import pytest
from botocore.exceptions import ClientError
from django.utils import timezone

from annotation import services
from annotation.models import Assignment, Worker
from mturk import binding, client, sync
from mturk.client import request_token
from mturk.models import MTurkAssignment, MTurkBonus, MTurkHIT, MTurkOperation

from .conftest import make_project

pytestmark = pytest.mark.django_db
HIT_ID = "3SYNCHITXXXXXXXXXXXXXXXXXXXXXX"
T = datetime(2025, 5, 1, 12, 0, tzinfo=dt_timezone.utc)


def setup_project():
    project = make_project(hits=1, r=3)
    mhit = MTurkHIT.objects.create(project=project, hit=project.hits.get(), mturk_hit_id=HIT_ID, sandbox=True,
                                   max_assignments=3, reward_cents=26, created_at=timezone.now())
    return project, mhit


def do_hit(project, mhit, assignment_id, worker_id):
    b = binding.bind(project, mhit, assignment_id=assignment_id, worker_id=worker_id,
                     turk_submit_to="https://workersandbox.mturk.com")
    assignment, worker = binding.assignment_for(b, project)
    responses = {item.pk: {"label": "pro"} for item in services.assignment_items(assignment)}
    return services.submit_assignment(assignment, worker, responses)


def mturk_assignment(aid, wid, status="Submitted"):
    return {"AssignmentId": aid, "WorkerId": wid, "HITId": HIT_ID, "AssignmentStatus": status,
            "AcceptTime": T, "SubmitTime": T, "Answer": "<QuestionFormAnswers/>"}


def listing(stub, *assignments):
    stub.add_response("list_assignments_for_hit", {"NumResults": len(assignments), "Assignments": list(assignments)},
                      {"HITId": HIT_ID, "MaxResults": 100, "AssignmentStatuses": ["Submitted", "Approved", "Rejected"]})


def test_sync_approves_rejects_and_reports_unmatched(stub):
    project, mhit = setup_project()
    good = do_hit(project, mhit, "3ASSIGNGOODXXXXXXXXXXXXXXXXXXX", "AGOODWORKER")
    bad = do_hit(project, mhit, "3ASSIGNBADXXXXXXXXXXXXXXXXXXXX", "ABADWORKER")
    services.block_worker(bad.worker, "gold accuracy 0% on 3 gold items")
    listing(stub, mturk_assignment("3ASSIGNGOODXXXXXXXXXXXXXXXXXXX", "AGOODWORKER"),
            mturk_assignment("3ASSIGNBADXXXXXXXXXXXXXXXXXXXX", "ABADWORKER"),
            mturk_assignment("3ASSIGNFORGEDXXXXXXXXXXXXXXXXX", "ANOANSWERS"))
    stub.add_response("approve_assignment", {}, {"AssignmentId": "3ASSIGNGOODXXXXXXXXXXXXXXXXXXX"})
    stub.add_response("reject_assignment", {}, {
        "AssignmentId": "3ASSIGNBADXXXXXXXXXXXXXXXXXXXX",
        "RequesterFeedback": "Your answers failed our quality checks (control questions with known answers)."})
    stub.add_response("list_worker_blocks", {"NumResults": 0, "WorkerBlocks": []}, {"MaxResults": 100})
    stub.add_response("create_worker_block", {}, {"WorkerId": "ABADWORKER",
                                                  "Reason": "gold accuracy 0% on 3 gold items"})
    report = sync.sync_project(project)
    assert (report.assignments, report.matched, report.approved, report.rejected, report.blocks) == (3, 2, 1, 1, 1)
    assert report.unmatched == ["3ASSIGNFORGEDXXXXXXXXXXXXXXXXX by ANOANSWERS"] and not report.errors
    assert Assignment.objects.get(pk=good.pk).status == "approved"
    assert Assignment.objects.get(pk=bad.pk).status == "rejected"
    assert MTurkAssignment.objects.get(mturk_assignment_id="3ASSIGNGOODXXXXXXXXXXXXXXXXXXX").status == "Approved"
    assert sync.cost_so_far(project)["total_cents"] == 26 + 5

    # a second sync: MTurk now reports them approved/rejected; nothing is called again (the ops are done)
    listing(stub, mturk_assignment("3ASSIGNGOODXXXXXXXXXXXXXXXXXXX", "AGOODWORKER", "Approved"),
            mturk_assignment("3ASSIGNBADXXXXXXXXXXXXXXXXXXXX", "ABADWORKER", "Rejected"),
            mturk_assignment("3ASSIGNFORGEDXXXXXXXXXXXXXXXXX", "ANOANSWERS"))
    stub.add_response("list_worker_blocks", {"NumResults": 1, "WorkerBlocks": [{"WorkerId": "ABADWORKER"}]},
                      {"MaxResults": 100})
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
    params = {"WorkerId": "ABONUSWORKER", "BonusAmount": "0.50", "AssignmentId": "3ASSIGNBONUSXXXXXXXXXXXXXXXXXX",
              "Reason": f"Great explanations [ref bonus:{bonus.pk}]",
              "UniqueRequestToken": request_token(f"bonus:{bonus.pk}")}
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
    crash_after_the_call(monkeypatch)            # ... and Argora dies before marking it done
    with pytest.raises(RuntimeError):
        sync.sync_project(project)
    op = MTurkOperation.objects.get(key=f"bonus:{bonus.pk}")
    assert (op.status, op.attempts) == ("pending", 1)
    assert not MTurkBonus.objects.get(pk=bonus.pk).paid

    # re-sync: the pending bonus is looked up first and found, so SendBonus is not called again
    listing(stub, mturk_assignment("3ASSIGNBONUSXXXXXXXXXXXXXXXXXX", "ABONUSWORKER", "Approved"))
    stub.add_response("list_bonus_payments", {"NumResults": 1, "BonusPayments": [
        {"WorkerId": "ABONUSWORKER", "BonusAmount": "0.50", "AssignmentId": "3ASSIGNBONUSXXXXXXXXXXXXXXXXXX",
         "Reason": params["Reason"], "GrantTime": T}]},
        {"AssignmentId": "3ASSIGNBONUSXXXXXXXXXXXXXXXXXX", "MaxResults": 100})
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
    stub.add_response("list_bonus_payments", {"NumResults": 0, "BonusPayments": []},
                      {"AssignmentId": "3ASSIGNBONUSXXXXXXXXXXXXXXXXXX", "MaxResults": 100})
    stub.add_client_error("send_bonus", service_error_code="RequestError", http_status_code=400,
                          service_message="The request with this UniqueRequestToken was already processed "
                                          "(request id 1234).", expected_params=params)
    report = sync.sync_project(project)
    assert report.bonuses_paid == 1 and not report.errors
    assert MTurkOperation.objects.get(key=f"bonus:{bonus.pk}").status == "done"
    assert MTurkBonus.objects.filter(paid=True).count() == 1


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
    stub.add_response("notify_workers", {"NotifyWorkersFailureStatuses": []},
                      {"Subject": "New HITs", "MessageText": "We published more HITs.", "WorkerIds": ["ASLOWWORKER"]})
    assert sync.notify_workers(project, "New HITs", "We published more HITs.", ["ASLOWWORKER"]) == 1
    assert sync.notify_workers(project, "New HITs", "We published more HITs.", ["ASLOWWORKER"]) == 1  # logged: no call


def test_failed_call_is_logged_with_mturks_reason(stub):
    project, mhit = setup_project()
    do_hit(project, mhit, "3ASSIGNFAILXXXXXXXXXXXXXXXXXXX", "AFAILWORKER")
    listing(stub, mturk_assignment("3ASSIGNFAILXXXXXXXXXXXXXXXXXXX", "AFAILWORKER"))
    stub.add_client_error("approve_assignment", service_error_code="RequestError", http_status_code=400,
                          service_message="This operation can be called with a status of: Submitted")
    report = sync.sync_project(project)
    assert report.approved == 0 and "This operation can be called" in report.errors[0]
    op = MTurkOperation.objects.get(key="approve:3ASSIGNFAILXXXXXXXXXXXXXXXXXXX")
    assert op.status == "failed" and "RequestError" in op.error
    assert isinstance(ClientError, type)
