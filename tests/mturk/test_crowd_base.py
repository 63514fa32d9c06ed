"""The crowd platforms' shared base (``annotation.crowd``) as MTurk uses it: a call that is not safe to repeat and
whose outcome was lost is not sent again (uncertain) until a person resolves it; the wage top-up is computed once
for both platforms and planned at most once per piece of work; both syncs report in one shape."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotation.crowd import calls, pay
from annotation.crowd import sync as crowd_sync
from mturk import client
from mturk import sync as mturk_sync
from mturk.models import MTurkBonus, MTurkOperation
from mturk.payments import reward_for_wage as mturk_rule
from prolific import sync as prolific_sync
from prolific.publishing import reward_for_wage as prolific_rule

from .conftest import make_project

pytestmark = pytest.mark.django_db

NOTIFY = {"Subject": "s", "MessageText": "m", "WorkerIds": ["AWORKER"]}


def test_an_interrupted_call_that_is_not_safe_to_repeat_waits_for_a_person(stub):
    project = make_project()
    MTurkOperation.objects.create(
        key="notify:1", operation="notify_workers", request=NOTIFY, project=project, attempts=1, repeatable=False
    )  # an attempt was made; its answer was lost
    with pytest.raises(client.MTurkError, match="not safe to repeat"):
        client.call_once("notify:1", "notify_workers", NOTIFY, sandbox=True, project=project)
    op = MTurkOperation.objects.get(key="notify:1")
    assert op.status == "uncertain" and op.attempts == 1
    with pytest.raises(client.MTurkError, match="outcome of an interrupted call is unknown"):
        client.call_once("notify:1", "notify_workers", NOTIFY, sandbox=True, project=project)  # still not sent

    op = calls.resolve(client.RULES, op, happened=False)  # checked on MTurk: it did not happen
    assert (op.status, op.attempts) == ("pending", 0)
    stub.add_response("notify_workers", {"NotifyWorkersFailureStatuses": []}, NOTIFY)
    op = client.call_once("notify:1", "notify_workers", NOTIFY, sandbox=True, project=project)
    assert (op.status, op.attempts) == ("done", 1)
    assert client.call_once("notify:1", "notify_workers", NOTIFY, sandbox=True, project=project).pk == op.pk
    with pytest.raises(client.MTurkError, match="done already"):
        calls.resolve(client.RULES, op, happened=True)


def test_a_resolved_call_that_happened_is_done_without_a_call(stub):
    project = make_project()
    op = MTurkOperation.objects.create(
        key="notify:2",
        operation="notify_workers",
        request=NOTIFY,
        project=project,
        attempts=1,
        repeatable=False,
        status="uncertain",
    )
    op = calls.resolve(client.RULES, op, happened=True)
    assert op.status == "done" and op.done_at is not None and "happened on MTurk" in op.error
    assert list(calls.pending(MTurkOperation, project)) == []


def test_wage_topup_is_the_same_rule_for_both_platforms():
    assert pay.reward_for_wage(760, 300) == 64  # 63.33 cents, rounded up
    assert pay.reward_for_wage(760, 0) == 0
    assert pay.topup_cents(760, 300, 26) == 38
    assert pay.topup_cents(760, 300, 80) == 0  # the reward paid enough: nothing owed
    assert mturk_rule(1200, 450) == prolific_rule(1200, 7.5) == 150


def test_one_wage_topup_per_piece_of_work():
    project = make_project()
    fields = {"project": project, "assignment_id": "A1", "worker_id": "W1", "reason": "top-up"}
    first = pay.plan_topup(MTurkBonus, hourly_cents=760, seconds=300, reward_cents=26, **fields)
    assert first is not None and (first.amount_cents, first.kind, first.status) == (38, "wage-topup", "planned")
    assert not first.paid
    assert pay.plan_topup(MTurkBonus, hourly_cents=760, seconds=600, reward_cents=26, **fields) is None
    assert (
        pay.plan_topup(MTurkBonus, hourly_cents=760, seconds=60, reward_cents=26, **dict(fields, assignment_id="A2"))
        is None
    )  # nothing owed
    assert MTurkBonus.objects.count() == 1


def test_both_syncs_report_in_one_shape():
    for report in (
        mturk_sync.SyncReport(approved=2, errors=["boom"], wage_warning="low"),
        prolific_sync.SyncReport(approved=2, errors=["boom"], wage_warning="low"),
    ):
        assert isinstance(report, crowd_sync.SyncReport)
        data = report.as_dict()
        assert {"approved", "rejected", "bonuses_paid", "excluded", "errors", "wage_warning"} <= set(data)
        assert report.lines()[-2:] == ["ERROR: boom", "WARNING: low"]
        assert any("approved 2" in line for line in report.lines())


def test_resolve_from_the_command_line(stub):
    project = make_project()
    MTurkOperation.objects.create(
        key="notify:3",
        operation="notify_workers",
        request=NOTIFY,
        project=project,
        attempts=1,
        repeatable=False,
        status="uncertain",
    )
    out = io.StringIO()
    call_command("mturk", "resolve", "--key", "notify:3", "--not-happened", stdout=out)
    assert out.getvalue().strip() == "notify:3: pending"
    with pytest.raises(CommandError, match="no MTurk call is logged"):
        call_command("mturk", "resolve", "--key", "nothing", "--happened")


def test_the_admin_lists_calls_and_bonuses_by_the_shared_status(admin_client):
    project = make_project()
    bonus = MTurkBonus.objects.create(
        project=project, assignment_id="A1", worker_id="W1", amount_cents=5, reason="thanks", status="paid"
    )
    MTurkOperation.objects.create(key="bonus:1", operation="send_bonus", project=project, status="uncertain")
    page = admin_client.get("/admin/mturk/mturkbonus/?status__exact=paid")
    assert page.status_code == 200 and "W1" in page.content.decode()
    assert admin_client.get(f"/admin/mturk/mturkbonus/{bonus.pk}/change/").status_code == 200
    page = admin_client.get("/admin/mturk/mturkoperation/?status__exact=uncertain")
    assert page.status_code == 200 and "bonus:1" in page.content.decode()
