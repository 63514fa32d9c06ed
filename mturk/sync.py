"""Reconciling MTurk with Argora: refresh HIT status (GetHIT), list assignments, approve / reject, reject in
Argora the assignments MTurk does not know (made-up ids, see :func:`exclude_unknown`), pay bonuses, notify workers.

Run by the Celery beat entry ``mturk-sync`` (every project with MTurk HITs), the admin action and
``manage.py mturk sync --project P``. Each change on MTurk goes through :func:`mturk.client.call_once`
(logged before the call under a unique key), so running a sync again, or after a crash half-way, repeats
nothing that was done: an approved assignment is not approved twice, a bonus is not paid twice
(SendBonus carries a UniqueRequestToken derived from the key, and an interrupted bonus is first looked up
with ListBonusPayments).
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass, field
from datetime import timedelta
from decimal import Decimal

from django.db import IntegrityError, transaction
from django.db.models import Q, Sum
from django.utils import timezone

from annotation import services as annotation_services
from annotation.crowd import calls, pay
from annotation.crowd import sync as crowd_sync
from annotation.models import Assignment, Project, Worker

from . import payments
from .client import RULES, MTurkError, call_once, get_client, request_token
from .models import MTurkAssignment, MTurkBonus, MTurkHIT, MTurkOperation, MTurkProjectSettings
from .publishing import _parse_time, refresh_hit, settings_for, sync_blocks

log = logging.getLogger("argora.mturk")

STATUSES = ["Submitted", "Approved", "Rejected"]


@dataclass
class SyncReport(crowd_sync.SyncReport):
    hits: int = 0
    assignments: int = 0
    matched: int = 0
    unmatched: list = field(default_factory=list)
    blocks: int = 0
    hit_status: dict = field(default_factory=dict)

    def platform_lines(self) -> list[str]:
        out = [
            f"HITs {self.hits}, MTurk assignments {self.assignments} ({self.matched} matched to Argora)",
            f"approved {self.approved}, rejected {self.rejected}, bonuses paid {self.bonuses_paid}, "
            f"workers blocked {self.blocks}",
        ]
        if self.hit_status:
            out.append("HIT status on MTurk: " + ", ".join(f"{k} {v}" for k, v in sorted(self.hit_status.items())))
        out += [f"not in Argora (no stored answers): {a}" for a in self.unmatched]
        out += [f"rejected in Argora, unknown to MTurk: {a}" for a in self.excluded]
        return out


def list_assignments(row: MTurkHIT) -> list[dict]:
    client = get_client(row.sandbox)
    out: list[dict] = []
    token = None
    for _ in range(1000):
        kwargs = {"HITId": row.mturk_hit_id, "MaxResults": 100, "AssignmentStatuses": STATUSES}
        if token:
            kwargs["NextToken"] = token
        page = client.list_assignments_for_hit(**kwargs)
        out.extend(page.get("Assignments", []))
        token = page.get("NextToken")
        if not token:
            break
    return out


def _local_assignment(data: dict) -> Assignment | None:
    """The Argora assignment of an assignment MTurk listed (same assignmentId, done by that workerId, confirmed or
    claimed); a claimed one is confirmed now (:func:`annotation.services.confirm_assignment`: its answers count from
    now on and its gold answers are scored for the real worker)."""
    assignment = (
        Assignment.objects.select_related("worker")
        .filter(
            Q(worker__external_id=data["WorkerId"]) | Q(worker__claimed_external_id=data["WorkerId"]),
            external_id=data["AssignmentId"],
            worker__source=Worker.Source.MTURK,
        )
        .first()
    )
    if assignment is not None and assignment.worker.claimed_external_id:
        confirmed = annotation_services.confirm_assignment(
            assignment, source=Worker.Source.MTURK, external_id=data["WorkerId"]
        )
        if confirmed is None:
            log.warning(
                "mturk sync: assignment %s (assignmentId %s) could not be confirmed for workerId %s",
                assignment.pk,
                data["AssignmentId"],
                data["WorkerId"],
            )
        return confirmed
    return assignment


def _record(row: MTurkHIT, data: dict, assignment: Assignment | None) -> MTurkAssignment:
    values = {
        "mturk_hit": row,
        "worker_id": data["WorkerId"],
        "status": data.get("AssignmentStatus", ""),
        "assignment": assignment,
        "accepted_at": _parse_time(data.get("AcceptTime")),
        "submitted_at": _parse_time(data.get("SubmitTime")),
    }
    try:
        with transaction.atomic():
            rec, _ = MTurkAssignment.objects.update_or_create(mturk_assignment_id=data["AssignmentId"], defaults=values)
    except IntegrityError:  # the Argora assignment is linked to another MTurk assignment row: keep that link
        values.pop("assignment")
        rec, _ = MTurkAssignment.objects.update_or_create(mturk_assignment_id=data["AssignmentId"], defaults=values)
    return rec


def decide(cfg: MTurkProjectSettings, assignment: Assignment | None) -> tuple[str, str]:
    """("approve" | "reject" | "wait", reason) for an MTurk assignment in status Submitted."""
    if assignment is None:
        return "wait", "no answers were stored in Argora for this assignment: review it by hand"
    if assignment.status == Assignment.Status.APPROVED:
        return "approve", ""
    if assignment.status == Assignment.Status.REJECTED:
        return "reject", cfg.reject_reason
    if assignment.status != Assignment.Status.SUBMITTED:
        return "wait", f"the Argora assignment is {assignment.status}"
    if cfg.approval_policy == MTurkProjectSettings.Approval.AUTO:
        return "approve", ""
    if cfg.approval_policy == MTurkProjectSettings.Approval.GOLD:
        worker = assignment.worker
        if worker.blocked:
            return "reject", cfg.reject_reason
        return "approve", ""
    return "wait", "waiting for staff review in Argora"


def approve(rec: MTurkAssignment, *, sandbox: bool, project: Project, feedback: str = "") -> None:
    params = {"AssignmentId": rec.mturk_assignment_id}
    if feedback:
        params["RequesterFeedback"] = feedback[:1024]
    call_once(
        f"approve:{rec.mturk_assignment_id}",
        "approve_assignment",
        params,
        sandbox=sandbox,
        project=project,
        already_done=lambda _op: _status_is(rec, sandbox, "Approved"),
    )
    MTurkAssignment.objects.filter(pk=rec.pk).update(status="Approved")
    if rec.assignment is not None and rec.assignment.status == Assignment.Status.SUBMITTED:
        annotation_services.set_assignment_status(rec.assignment, Assignment.Status.APPROVED)


def reject(rec: MTurkAssignment, reason: str, *, sandbox: bool, project: Project) -> None:
    call_once(
        f"reject:{rec.mturk_assignment_id}",
        "reject_assignment",
        {"AssignmentId": rec.mturk_assignment_id, "RequesterFeedback": (reason or "Rejected.")[:1024]},
        sandbox=sandbox,
        project=project,
        already_done=lambda _op: _status_is(rec, sandbox, "Rejected"),
    )
    MTurkAssignment.objects.filter(pk=rec.pk).update(status="Rejected")
    if rec.assignment is not None and rec.assignment.status == Assignment.Status.SUBMITTED:
        annotation_services.set_assignment_status(rec.assignment, Assignment.Status.REJECTED)


def _status_is(rec: MTurkAssignment, sandbox: bool, status: str) -> dict | None:
    answer = get_client(sandbox).get_assignment(AssignmentId=rec.mturk_assignment_id)
    if answer.get("Assignment", {}).get("AssignmentStatus") == status:
        return {"found": status}
    return None


# --- bonuses ------------------------------------------------------------------------------------
def grant_bonus(
    project: Project, assignment_id: str, amount_cents: int, reason: str, *, kind: str = "manual"
) -> MTurkBonus:
    """Plan a bonus (paid by the next sync). ``assignment_id`` is MTurk's AssignmentId."""
    rec = MTurkAssignment.objects.filter(mturk_assignment_id=assignment_id).first()
    if rec is None:
        raise MTurkError(f"unknown MTurk assignment {assignment_id!r}: run a sync first")
    if amount_cents < 1:
        raise MTurkError("a bonus must be at least 1 cent")
    if not reason.strip():
        raise MTurkError("give the worker a reason for the bonus (MTurk shows it to them)")
    return MTurkBonus.objects.create(
        project=project,
        assignment_id=assignment_id,
        worker_id=rec.worker_id,
        amount_cents=amount_cents,
        reason=reason.strip(),
        kind=kind,
    )


def plan_wage_topups(project: Project) -> list[MTurkBonus]:
    """One bonus per approved MTurk assignment whose own working time paid less than the wage floor:
    target wage x work_seconds (rounded up) - reward (:func:`annotation.crowd.pay.plan_topup`). At most one top-up
    per assignment."""
    cfg = settings_for(project)
    created = []
    recs = (
        MTurkAssignment.objects.filter(
            mturk_hit__project=project,
            status="Approved",
            assignment__isnull=False,
            assignment__work_seconds__isnull=False,
        )
        .exclude(mturk_assignment_id__in=MTurkBonus.objects.filter(kind=MTurkBonus.WAGE_TOPUP).values("assignment_id"))
        .select_related("assignment", "mturk_hit")
    )
    for rec in recs:
        minutes = rec.assignment.work_seconds / 60
        bonus = pay.plan_topup(
            MTurkBonus,
            hourly_cents=cfg.target_hourly_wage_cents,
            seconds=rec.assignment.work_seconds,
            reward_cents=rec.mturk_hit.reward_cents,
            project=project,
            assignment_id=rec.mturk_assignment_id,
            worker_id=rec.worker_id,
            reason=(
                f"Top-up so that your {minutes:.1f} minutes of work pay at least "
                f"{payments.dollars(cfg.target_hourly_wage_cents)}/hour. Thank you!"
            ),
        )
        if bonus is not None:
            created.append(bonus)
    return created


def bonus_key(bonus: MTurkBonus) -> str:
    return f"bonus:{bonus.pk}"


def bonus_reason(bonus: MTurkBonus) -> str:
    # the reference lets an interrupted payment be found again with ListBonusPayments
    return f"{bonus.reason} [ref {bonus_key(bonus)}]"


def _find_bonus(bonus: MTurkBonus, sandbox: bool) -> dict | None:
    client = get_client(sandbox)
    token = None
    want = Decimal(payments.mturk_amount(bonus.amount_cents))
    for _ in range(100):
        kwargs = {"AssignmentId": bonus.assignment_id, "MaxResults": 100}
        if token:
            kwargs["NextToken"] = token
        page = client.list_bonus_payments(**kwargs)
        for p in page.get("BonusPayments", []):
            if Decimal(str(p.get("BonusAmount", "0"))) == want and f"[ref {bonus_key(bonus)}]" in p.get("Reason", ""):
                return {"found": "ListBonusPayments", "GrantTime": str(p.get("GrantTime", ""))}
        token = page.get("NextToken")
        if not token:
            return None
    return None


def pay_bonus(bonus: MTurkBonus, *, sandbox: bool) -> MTurkOperation:
    key = bonus_key(bonus)
    params = {
        "WorkerId": bonus.worker_id,
        "BonusAmount": payments.mturk_amount(bonus.amount_cents),
        "AssignmentId": bonus.assignment_id,
        "Reason": bonus_reason(bonus),
        "UniqueRequestToken": request_token(key),
    }
    op = call_once(
        key,
        "send_bonus",
        params,
        sandbox=sandbox,
        project=bonus.project,
        already_done=lambda _op: _find_bonus(bonus, sandbox),
        duplicate_ok=True,
    )
    MTurkBonus.objects.filter(pk=bonus.pk).update(status=MTurkBonus.Status.PAID, paid_at=timezone.now())
    return op


def resolve_operation(key: str, *, happened: bool) -> MTurkOperation:
    """A person checked an uncertain (or stuck) call on MTurk: ``happened`` marks it done, otherwise it is pending
    again. Its local effect (a bonus marked paid, an assignment's status) follows at the next sync, whose call under
    the same key finds the row done."""
    op = MTurkOperation.objects.filter(key=key).first()
    if op is None:
        raise MTurkError(f"key: no MTurk call is logged under {key!r}")
    return calls.resolve(RULES, op, happened=happened)


# --- notifications ------------------------------------------------------------------------------
def notify_workers(
    project: Project, subject: str, message: str, worker_ids: list[str], *, sandbox: bool | None = None
) -> int:
    """NotifyWorkers in batches of 100; each batch logged once (same text to the same workers = one call)."""
    if not subject.strip() or not message.strip():
        raise MTurkError("give a subject and a message")
    sandbox = settings_for(project).sandbox if sandbox is None else sandbox
    ids = sorted(set(worker_ids))
    sent = 0
    for i in range(0, len(ids), 100):
        batch = ids[i : i + 100]
        digest = hashlib.sha256("\n".join([subject, message, *batch]).encode()).hexdigest()[:32]
        call_once(
            f"notify:{project.pk}:{digest}",
            "notify_workers",
            {"Subject": subject[:200], "MessageText": message[:4096], "WorkerIds": batch},
            sandbox=sandbox,
            project=project,
        )
        sent += len(batch)
    return sent


# --- assignments MTurk does not know -------------------------------------------------------------
def exclude_unknown(project: Project, cfg: MTurkProjectSettings, known: dict[int, set[str]], *, now=None) -> list[str]:
    """Reject (in Argora only) the submitted / approved assignments of MTurk workers that MTurk does not know.

    MTurk's ExternalQuestion cannot prove an assignmentId / workerId when the page opens, so a made-up pair for
    a known hitId gets a binding, a slot and can store answers. Those answers are left out of the aggregates
    while unconfirmed (``annotation.selectors.unverified_q``); here, once every MTurk HIT of an Argora HIT has been
    listed (``known``: Argora HIT id -> AssignmentIds MTurk listed, all environments), an assignment that no sync
    ever matched, whose assignmentId MTurk did not list, and that was submitted longer than the assignment
    duration ago (MTurk would list it by now if a worker had accepted it there) is rejected: its slot goes back
    to the pool and its answers stop counting. Nothing is called on MTurk (it has no such assignment).
    """
    now = now or timezone.now()
    cutoff = now - timedelta(seconds=cfg.assignment_duration_seconds)
    done = []
    candidates = (
        Assignment.objects.filter(
            project=project,
            hit_id__in=list(known),
            status__in=Assignment.DONE,
            worker__source=Worker.Source.MTURK,
            worker__claimed_external_id__gt="",
            mturk_assignment__isnull=True,
            submitted_at__lt=cutoff,
        )
        .select_related("worker")
        .order_by("pk")
    )
    for assignment in candidates:
        if (
            assignment.external_id in known[assignment.hit_id]
            or MTurkAssignment.objects.filter(mturk_assignment_id=assignment.external_id).exists()
        ):
            continue  # MTurk knows it (a later sync links it)
        try:
            annotation_services.set_assignment_status(assignment, Assignment.Status.REJECTED)
        except annotation_services.SubmissionError:  # changed meanwhile (e.g. rejected by staff): nothing to do
            continue
        line = (
            f"Argora assignment {assignment.pk} (assignmentId {assignment.external_id} by workerId "
            f"{assignment.worker.claimed_external_id}, unconfirmed)"
        )
        log.warning(
            "mturk sync %s: rejected %s: MTurk does not know it %s s after it was submitted",
            project.slug,
            line,
            cfg.assignment_duration_seconds,
        )
        done.append(line)
    return done


# --- the sync -----------------------------------------------------------------------------------
def sync_project(project: Project, *, blocks: bool = True) -> SyncReport:
    """Refresh every MTurk HIT of the project (GetHIT: status, expiry), list its assignments, reconcile,
    approve/reject, reject Argora assignments that MTurk does not know, pay pending bonuses, sync blocks."""
    cfg = settings_for(project)
    report = SyncReport()
    known: dict[int, set[str]] = {}
    incomplete: set[int] = set()  # Argora HITs with an MTurk HIT that could not be listed this time
    for row in MTurkHIT.objects.filter(project=project).select_related("hit"):
        report.hits += 1
        try:
            refresh_hit(row)
        except Exception as exc:  # noqa: BLE001 - the status is informative; the listing below still runs
            report.errors.append(f"{row.mturk_hit_id}: get_hit: {exc}")
        report.hit_status[row.status] = report.hit_status.get(row.status, 0) + 1
        try:
            listed = list_assignments(row)
        except Exception as exc:  # noqa: BLE001 - one HIT failing does not stop the others
            report.errors.append(f"{row.mturk_hit_id}: {exc}")
            incomplete.add(row.hit_id)
            continue
        known.setdefault(row.hit_id, set()).update(d["AssignmentId"] for d in listed)
        for data in listed:
            report.assignments += 1
            assignment = _local_assignment(data)
            rec = _record(row, data, assignment)
            if assignment is not None:
                report.matched += 1
            if data.get("AssignmentStatus") != "Submitted":
                continue
            action, reason = decide(cfg, assignment)
            try:
                if action == "approve":
                    approve(rec, sandbox=row.sandbox, project=project)
                    report.approved += 1
                elif action == "reject":
                    reject(rec, reason, sandbox=row.sandbox, project=project)
                    report.rejected += 1
                elif assignment is None:
                    report.unmatched.append(f"{data['AssignmentId']} by {data['WorkerId']}")
            except MTurkError as exc:
                report.errors.append(str(exc))
        MTurkHIT.objects.filter(pk=row.pk).update(synced_at=timezone.now())
    report.excluded = exclude_unknown(project, cfg, {k: v for k, v in known.items() if k not in incomplete})
    for bonus in MTurkBonus.objects.filter(project=project).exclude(status=MTurkBonus.Status.PAID).order_by("pk"):
        sandbox = (
            MTurkAssignment.objects.filter(mturk_assignment_id=bonus.assignment_id)
            .values_list("mturk_hit__sandbox", flat=True)
            .first()
        )
        try:
            pay_bonus(bonus, sandbox=cfg.sandbox if sandbox is None else sandbox)
            report.bonuses_paid += 1
        except MTurkError as exc:
            report.errors.append(str(exc))
    if blocks:
        try:
            report.blocks = sync_blocks(sandbox=cfg.sandbox, project=project)
        except Exception as exc:  # noqa: BLE001 - the block list failing does not stop the rest of the sync
            report.errors.append(f"block list: {exc}")
    report.wage_warning = payments.wage_check(project)["warning"]
    log.info("mturk sync %s: %s", project.slug, "; ".join(report.lines()))
    return report


def sync_all() -> dict:
    """Every project with MTurk HITs (the periodic task)."""
    out = {}
    for project in Project.objects.filter(mturk_hits__isnull=False, mturk__isnull=False).distinct():
        out[project.slug] = sync_project(project).as_dict()
    return out


# --- money so far -------------------------------------------------------------------------------
def cost_so_far(project: Project) -> dict:
    """Rewards of approved MTurk assignments + bonuses paid, with MTurk's fees (cents)."""
    cfg = MTurkProjectSettings.objects.filter(project=project).first()
    masters = bool(cfg and cfg.require_masters)
    reward = fee = 0
    for rec in MTurkAssignment.objects.filter(mturk_hit__project=project, status="Approved").select_related(
        "mturk_hit"
    ):
        reward += rec.mturk_hit.reward_cents
        fee += payments.fee_cents(rec.mturk_hit.reward_cents, rec.mturk_hit.max_assignments, masters=masters)
    paid = MTurkBonus.objects.filter(project=project, status=MTurkBonus.Status.PAID)
    bonuses = list(paid.values_list("amount_cents", flat=True))
    bonus_total = sum(bonuses)
    bonus_fee = sum(payments.bonus_fee_cents(b) for b in bonuses)
    pending = (
        MTurkBonus.objects.filter(project=project)
        .exclude(status=MTurkBonus.Status.PAID)
        .aggregate(s=Sum("amount_cents"))["s"]
        or 0
    )
    return {
        "rewards_cents": reward,
        "reward_fees_cents": fee,
        "bonuses_cents": bonus_total,
        "bonus_fees_cents": bonus_fee,
        "total_cents": reward + fee + bonus_total + bonus_fee,
        "pending_bonuses_cents": pending,
    }
