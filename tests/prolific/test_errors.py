"""Prolific's errors handled without losing state: a 401 says to check PROLIFIC_API_TOKEN; a 429 is retried after its
Retry-After (bounded, the waits recorded, never slept); a 5xx leaves the call pending and local state untouched, and
the next sync resumes it; a call that is not safe to repeat (paying bonuses) is looked up or left for a person, never
sent twice blindly; an interrupted draft creation is found again, not duplicated."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command

from annotation.models import Assignment
from prolific import client, publishing, sync
from prolific.models import ProlificBonus, ProlificOperation, ProlificStudy, ProlificSubmission

from .conftest import STUDY_ID, make_project
from .test_sync import participant, pid, sid

pytestmark = pytest.mark.django_db


def test_401_says_check_the_token_and_the_call_resumes_once_fixed(fake, settings):
    project = make_project()
    settings.PROLIFIC_API_TOKEN = "wrong"
    with pytest.raises(client.ProlificError) as err:
        publishing.create_study(project)
    assert err.value.status == 401 and "check PROLIFIC_API_TOKEN" in str(err.value)
    op = ProlificOperation.objects.get()
    assert (op.status, op.http_status) == ("pending", 401)
    assert ProlificStudy.objects.get(project=project).study_id == ""
    settings.PROLIFIC_API_TOKEN = ""  # no token: nothing is called or logged
    with pytest.raises(client.ProlificError) as err:
        client.call_once("x", "x", "POST", "studies/")
    assert str(err.value).startswith("PROLIFIC_API_TOKEN: not set")
    assert ProlificOperation.objects.count() == 1
    settings.PROLIFIC_API_TOKEN = "test-token-prolific"
    assert publishing.create_study(project).study_id == STUDY_ID
    assert ProlificOperation.objects.get().status == "done" and len(fake.studies) == 1


def test_429_is_retried_after_retry_after_bounded(fake):
    project = make_project()
    fake.fail("POST", r"^studies/$", 429, times=2, retry_after="7")
    assert publishing.create_study(project).study_id == STUDY_ID
    assert fake.sleeps == [7.0, 7.0]
    fake.fail("POST", r"transition/$", 429, times=1, retry_after="3600")  # an hour: never wait that long
    publishing.publish(project)
    assert fake.sleeps[-1] == client.MAX_SLEEP
    # more 429s than retries: the call stays pending (Prolific did nothing), the next try goes through
    fake.fail("PATCH", r"^studies/", 429, times=client.MAX_RETRIES + 1, retry_after="1")
    with pytest.raises(client.ProlificError) as err:
        publishing.add_places(project, 2)
    assert err.value.status == 429
    op = ProlificOperation.objects.get(operation="places")
    assert (op.status, op.http_status) == ("pending", 429)
    assert ProlificStudy.objects.get(project=project).places == 10  # unchanged here
    assert publishing.add_places(project, 2).places == 12
    assert ProlificOperation.objects.get(operation="places").status == "done"


def test_5xx_leaves_the_approval_pending_and_the_next_sync_resumes_it(fake):
    project = make_project()
    publishing.publish(project)
    _c, _w, a = participant(project, 1)
    fake.add_submission(pid(1), sid(1), status="AWAITING REVIEW")
    fake.fail("POST", r"bulk-approve/$", 503, times=client.MAX_RETRIES + 1)
    report = sync.sync_project(project)
    assert report.approved == 0 and "503" in report.errors[0]
    assert fake.sleeps == list(client.BACKOFF)  # bounded back-off, recorded
    op = ProlificOperation.objects.get(operation="approve")
    assert (op.status, op.http_status) == ("pending", 503)
    rec = ProlificSubmission.objects.get(submission_id=sid(1))
    assert rec.review_sent == "" and Assignment.objects.get(pk=a.pk).status == "submitted"  # nothing half-written
    assert fake.submissions[sid(1)]["status"] == "AWAITING REVIEW"
    report = sync.sync_project(project)
    assert report.resumed == 1 and not report.errors
    assert ProlificOperation.objects.get(operation="approve").status == "done"
    assert Assignment.objects.get(pk=a.pk).status == "approved"
    assert fake.submissions[sid(1)]["status"] == "APPROVED"


def test_an_approval_whose_answer_was_lost_is_sent_again_safely(fake):
    project = make_project()
    publishing.publish(project)
    participant(project, 1)
    fake.add_submission(pid(1), sid(1), status="AWAITING REVIEW")
    fake.fail("POST", r"bulk-approve/$", 500, times=client.MAX_RETRIES + 1, after=True)  # done, answer lost
    assert sync.sync_project(project).errors
    assert fake.submissions[sid(1)]["status"] == "APPROVED"
    report = sync.sync_project(project)  # bulk approve is idempotent: resumed, done
    assert report.resumed == 1 and ProlificSubmission.objects.get(submission_id=sid(1)).review_sent == "approve"


def test_an_interrupted_draft_is_found_again_not_duplicated(fake):
    project = make_project()
    fake.fail("POST", r"^studies/$", 502, after=True)  # Prolific made the draft, the answer was lost
    with pytest.raises(client.ProlificError):
        publishing.create_study(project)
    assert len(fake.studies) == 1 and ProlificStudy.objects.get(project=project).study_id == ""
    assert publishing.create_study(project).study_id == STUDY_ID
    assert len(fake.studies) == 1  # looked up by its internal name, not created twice
    assert ProlificOperation.objects.get().error == "found on Prolific after an interrupted call"


def _approved_with_bonus(fake):
    project = make_project()
    publishing.publish(project)
    participant(project, 1)
    fake.add_submission(pid(1), sid(1), status="AWAITING REVIEW")
    sync.sync_project(project)
    sync.grant_bonus(project, sid(1), 75, "extra effort")
    return project


def test_a_bonus_payment_whose_answer_was_lost_is_looked_up_not_paid_twice(fake):
    project = _approved_with_bonus(fake)
    fake.fail("POST", r"^bulk-bonus-payments/.*/pay/$", 500, after=True)
    report = sync.sync_project(project)
    assert report.bonuses_paid == 0 and report.errors
    assert ProlificBonus.objects.get().status == "set-up" and len(fake.paid) == 1
    report = sync.sync_project(project)  # the payment shows in the submission's bonus_payments: done
    assert report.bonuses_paid == 0 and report.resumed == 1 and not report.errors
    assert ProlificBonus.objects.get().status == "paid" and len(fake.paid) == 1
    assert fake.submissions[sid(1)]["bonus_payments"] == [75.0]


def test_an_unknown_payment_outcome_waits_for_a_person(fake):
    project = _approved_with_bonus(fake)
    fake.fail("POST", r"^bulk-bonus-payments/.*/pay/$", 502)  # not paid, but we cannot know that
    sync.sync_project(project)
    report = sync.sync_project(project)
    op = ProlificOperation.objects.get(operation="bonus_pay")
    assert op.status == "uncertain" and fake.paid == [] and ProlificBonus.objects.get().status == "set-up"
    assert any("not safe to repeat" in e for e in report.errors)
    assert sync.sync_project(project).errors and fake.paid == []  # still not sent again
    out = io.StringIO()
    call_command("prolific", "resolve", "--key", op.key, "--not-happened", stdout=out)  # checked on Prolific
    assert f"{op.key}: pending" in out.getvalue()
    report = sync.sync_project(project)
    assert not report.errors and len(fake.paid) == 1 and ProlificBonus.objects.get().status == "paid"
    # resolved as happened: marked done and the bonuses paid, without a call
    project2 = make_project(slug="second-prolific")
    cfg2 = ProlificStudy.objects.get(project=project2)
    cfg2.study_id = "64ffffffffffffffffffffff"
    cfg2.save()
    sub = ProlificSubmission.objects.create(
        project=project2, submission_id="64fffffffffffffffffffff1", participant_id=pid(5), status="APPROVED"
    )
    bonus = ProlificBonus.objects.create(
        project=project2, submission=sub, amount_cents=10, reason="r", status="set-up", bulk_id="b1"
    )
    stuck = ProlificOperation.objects.create(
        key="bonus-pay:b1",
        operation="bonus_pay",
        method="POST",
        path="bulk-bonus-payments/b1/pay/",
        status="uncertain",
        repeatable=False,
        project=project2,
        context={"bonuses": [bonus.pk]},
    )
    sync.resolve_operation(stuck.key, happened=True)
    assert ProlificBonus.objects.get(pk=bonus.pk).status == "paid"


def test_a_crash_after_paying_leaves_a_pending_call_that_is_looked_up_not_repeated(fake, monkeypatch):
    project = _approved_with_bonus(fake)
    real_finish = client._finish

    def crash(op, *args, **kwargs):
        if op.operation == "bonus_pay":
            raise RuntimeError("the worker process died")
        return real_finish(op, *args, **kwargs)

    monkeypatch.setattr(client, "_finish", crash)
    with pytest.raises(RuntimeError):
        sync.sync_project(project)
    op = ProlificOperation.objects.get(operation="bonus_pay")
    assert (op.status, op.attempts, op.http_status) == ("pending", 1, 0) and len(fake.paid) == 1
    monkeypatch.setattr(client, "_finish", real_finish)
    report = sync.sync_project(project)
    assert report.resumed == 1 and not report.errors
    assert ProlificBonus.objects.get().status == "paid" and len(fake.paid) == 1  # found, not paid again
