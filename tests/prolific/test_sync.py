"""The sync against the fake Prolific API: submissions bound to the sessions whose ids they carry, the participant's
answers confirmed (left out of the aggregates before, counted after), approve in bulk / reject with Prolific's reason
and category by the approval policy, bonuses set up and paid, returned and timed-out participants' places freed in
one sync, made-up study links given back; a second sync calls nothing that changes Prolific and changes nothing."""

from __future__ import annotations

from datetime import timedelta
from urllib.parse import urlencode

import pytest
from django.test import Client
from django.utils import timezone

from annotation import selectors, services
from annotation.models import HIT, Assignment, Worker
from prolific import publishing, sync
from prolific.models import ProlificBonus, ProlificSession, ProlificSubmission

from .conftest import STUDY_ID, make_project

pytestmark = pytest.mark.django_db


def pid(n: int) -> str:
    return f"5f1a2b3c4d5e6f7a8b9c0{n:03d}"


def sid(n: int) -> str:
    return f"64b1c2d3e4f5a6b7c8d9e{n:03d}"


@pytest.fixture
def project(fake):
    project = make_project()
    publishing.publish(project)
    return project


def participant(project, n: int, *, submit: bool = True, hit: bool = True):
    """A browser opens participant n's study link, takes a HIT and (``submit``) answers it."""
    c = Client()
    r = c.get(
        f"/prolific/{project.slug}/start/?"
        + urlencode({"PROLIFIC_PID": pid(n), "STUDY_ID": STUDY_ID, "SESSION_ID": sid(n)})
    )
    assert r.status_code == 302, r.content
    worker = Worker.objects.get(user_id=c.session["_auth_user_id"])
    assignment = services.reserve_next_assignment(project, worker) if hit else None
    if assignment is not None and submit:
        assignment = services.submit_assignment(
            assignment, worker, {i.pk: {"label": "pro"} for i in services.assignment_items(assignment)}
        )
    return c, worker, assignment


def state(project):
    return (
        sorted(
            ProlificSubmission.objects.filter(project=project).values_list(
                "submission_id", "status", "review_sent", "worker_id", "released_at"
            )
        ),
        sorted(Assignment.objects.filter(project=project).values_list("pk", "status", "worker_id")),
        sorted(ProlificBonus.objects.values_list("pk", "status", "bulk_id")),
        sorted(HIT.objects.filter(project=project).values_list("pk", "taken")),
    )


def test_sync_confirms_approves_rejects_pays_and_a_second_sync_changes_nothing(project, fake):
    good_browser, good, good_a = participant(project, 1)
    _b, _bad, bad_a = participant(project, 2)
    participant(project, 3, hit=False)  # opened the link, got no HIT
    for n in (1, 2, 3):
        fake.add_submission(pid(n), sid(n), status="AWAITING REVIEW")
    fake.add_submission(pid(4), sid(4), status="AWAITING REVIEW")  # never opened Argora's link
    # the real participant 2 is blocked (failed gold elsewhere): the gold policy rejects their submission
    services.block_worker(
        services.worker_for_external_id(pid(2), source=Worker.Source.PROLIFIC), "gold accuracy 0% on 3 gold items"
    )
    assert not selectors.counted_responses(project).exists()  # provisional answers count nowhere

    report = sync.sync_project(project)
    assert (report.submissions, report.bound, report.confirmed) == (4, 3, 2)
    assert (report.approved, report.rejected, report.waiting) == (1, 1, 2) and not report.errors
    assert report.unbound == [f"{sid(4)} by {pid(4)} (AWAITING REVIEW)"]
    # answers confirmed: the good participant's count now, under the worker Prolific confirmed
    good_a.refresh_from_db()
    assert good_a.status == "approved" and good_a.worker.external_id == pid(1)
    assert selectors.counted_responses(project).count() == 2
    assert not Worker.objects.filter(pk=good.pk).exists()  # the provisional worker is gone
    assert Assignment.objects.get(pk=bad_a.pk).status == "rejected"
    # on Prolific: one bulk approval by submission id, one rejection with the message and category it requires
    [approve] = [c for c in fake.calls if c["path"] == "submissions/bulk-approve/"]
    assert approve["body"] == {"submission_ids": [sid(1)]}
    [reject] = [c for c in fake.calls if c["path"] == f"submissions/{sid(2)}/transition/"]
    assert reject["body"]["action"] == "REJECT" and reject["body"]["rejection_category"] == "FAILED_CHECK"
    assert len(reject["body"]["message"]) >= 100
    assert (fake.submissions[sid(1)]["status"], fake.submissions[sid(2)]["status"]) == ("APPROVED", "REJECTED")
    waiting = ProlificSubmission.objects.get(submission_id=sid(3))
    assert (waiting.decision, waiting.review_sent) == ("wait", "")

    # the same browser is still the same worker: now the confirmed one
    r = good_browser.get(
        f"/prolific/{project.slug}/start/?"
        + urlencode({"PROLIFIC_PID": pid(1), "STUDY_ID": STUDY_ID, "SESSION_ID": sid(1)})
    )
    assert r.status_code == 302
    assert Worker.objects.get(user_id=good_browser.session["_auth_user_id"]).external_id == pid(1)

    # a bonus: planned, then set up and paid by the next sync
    bonus = sync.grant_bonus(project, sid(1), 50, "clear feedback on the guidelines")
    report = sync.sync_project(project)
    assert report.bonuses_paid == 1 and not report.errors
    bonus.refresh_from_db()
    assert bonus.status == "paid" and bonus.bulk_id
    [setup] = [c for c in fake.calls if c["path"] == "submissions/bonus-payments/"]
    assert setup["body"] == {"study_id": STUDY_ID, "csv_bonuses": f"{sid(1)},0.50"}
    assert fake.paid == [bonus.bulk_id] and fake.submissions[sid(1)]["bonus_payments"] == [50.0]

    # a second (third) sync: nothing that changes Prolific is called, nothing changes here
    before, calls = state(project), fake.changing_calls()
    report = sync.sync_project(project)
    assert (report.approved, report.rejected, report.bonuses_paid, report.released, report.resumed) == (0, 0, 0, 0, 0)
    assert fake.changing_calls() == calls and state(project) == before
    assert fake.paid == [bonus.bulk_id]  # paid once


def test_manual_and_auto_policies(project, fake):
    cfg = publishing.settings_for(project)
    cfg.approval_policy = "manual"
    cfg.save()
    _c, _w, a = participant(project, 1)
    fake.add_submission(pid(1), sid(1), status="AWAITING REVIEW")
    assert sync.sync_project(project).waiting == 1  # waits for the staff review in Argora
    services.set_assignment_status(Assignment.objects.get(pk=a.pk), "approved")
    report = sync.sync_project(project)
    assert report.approved == 1 and fake.submissions[sid(1)]["status"] == "APPROVED"
    cfg.approval_policy = "auto"
    cfg.save()
    _c, _w, a2 = participant(project, 2)
    fake.add_submission(pid(2), sid(2), status="AWAITING REVIEW")
    assert sync.sync_project(project).approved == 1
    assert Assignment.objects.get(pk=a2.pk).status == "approved"


def test_returned_and_timed_out_participants_free_their_places_in_one_sync(project, fake):
    _c, _w1, reserved1 = participant(project, 1, submit=False)
    _c, _w2, reserved2 = participant(project, 2, submit=False)
    _c, _w3, answered3 = participant(project, 3)  # answered, then returned the study on Prolific
    assert sum(HIT.objects.filter(project=project).values_list("taken", flat=True)) == 3
    fake.add_submission(pid(1), sid(1), status="RETURNED")
    fake.add_submission(pid(2), sid(2), status="TIMED-OUT")
    fake.add_submission(pid(3), sid(3), status="RETURNED")
    report = sync.sync_project(project)
    assert report.released == 3 and not report.errors
    assert Assignment.objects.get(pk=reserved1.pk).status == "expired"
    assert Assignment.objects.get(pk=reserved2.pk).status == "expired"
    assert Assignment.objects.get(pk=answered3.pk).status == "rejected"  # never counted, its slot back
    assert sum(HIT.objects.filter(project=project).values_list("taken", flat=True)) == 0
    assert ProlificSession.objects.filter(released_at__isnull=True).count() == 0
    assert not fake.changing_calls()[2:]  # nothing sent to Prolific for them (after create + publish)
    # the items are back in the pool: the next participant gets the first HIT again
    _c, _w, fresh = participant(project, 9, submit=False)
    assert fresh.hit_id == reserved1.hit_id
    before = state(project)
    assert sync.sync_project(project).released == 0 and state(project) == before


def test_all_pages_are_listed_and_made_up_links_are_given_back(project, fake, monkeypatch):
    monkeypatch.setattr(sync, "PAGE_SIZE", 2)
    for n in range(1, 6):
        fake.add_submission(pid(n), sid(n), status="ACTIVE")
    _c, _forger, forged = participant(project, 77)  # a PID / SESSION_ID pair Prolific never issued
    _c, _w, recent = participant(project, 78)
    ProlificSession.objects.filter(participant_id=pid(77)).update(started_at=timezone.now() - timedelta(hours=25))
    report = sync.sync_project(project)
    assert report.submissions == 5
    pages = [c["query"]["page"] for c in fake.calls if c["path"] == "submissions/"]
    assert pages == ["1", "2", "3"]
    assert report.excluded == [f"session {sid(77)} claiming PID {pid(77)} (1 place(s))"]
    assert Assignment.objects.get(pk=forged.pk).status == "rejected"
    assert Assignment.objects.get(pk=recent.pk).status == "submitted"  # still within Prolific's maximum time


def test_wage_topups_for_slow_approved_work(project, fake):
    _c, _w, a = participant(project, 1)
    fake.add_submission(pid(1), sid(1), status="AWAITING REVIEW")
    sync.sync_project(project)
    Assignment.objects.filter(pk=a.pk).update(work_seconds=20 * 60)  # 20 min for a 150 p reward at GBP 9.00/h
    [bonus] = sync.plan_wage_topups(project)
    assert (bonus.amount_cents, bonus.kind) == (150, "wage-topup")  # 300 p owed - 150 p reward
    assert sync.plan_wage_topups(project) == []  # one top-up per submission


def test_reviews_made_on_prolific_are_mirrored(project, fake):
    _c, _w, a1 = participant(project, 1)
    _c, _w, a2 = participant(project, 2)
    fake.add_submission(pid(1), sid(1), status="APPROVED")  # e.g. a completion code that approves automatically
    fake.add_submission(pid(2), sid(2), status="REJECTED")  # rejected by hand on Prolific
    report = sync.sync_project(project)
    assert (report.confirmed, report.approved, report.rejected) == (2, 0, 0)
    assert Assignment.objects.get(pk=a1.pk).status == "approved"
    assert Assignment.objects.get(pk=a2.pk).status == "rejected"
    assert len(fake.changing_calls()) == 2  # create + publish only
