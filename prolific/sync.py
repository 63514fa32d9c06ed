"""Reconciling Prolific with Argora: list the study's submissions, bind each to the session whose ids it carries,
confirm the participant's assignments, approve / reject, free the places of returned and timed-out participants, give
back what made-up study links held, set up and pay bonuses.

Run by the Celery beat entry ``prolific-sync`` (every project with a Prolific study), the panel, the admin and
``manage.py prolific sync --project P``. Every change on Prolific goes through :func:`prolific.client.call_once`
(logged before the call under a unique key), and a sync first resumes the calls an earlier one left pending, so
running it again, or after a crash half-way, repeats nothing that was done: an approval is not sent twice, and a bonus
payment (Prolific's pay endpoint is not idempotent) is never sent again blindly.

Binding. Prolific's submission id *is* the ``SESSION_ID`` of the study link, so a submission listed by Prolific for
participant P binds the sessions opened with ``PROLIFIC_PID=P&SESSION_ID=<id>``. Once the participant finished on
Prolific (awaiting review or later), their provisional worker's assignments are confirmed
(``annotation.services.confirm_assignment``): the answers count from then on, the gold answers are scored.
"""

from __future__ import annotations

import hashlib
import logging
from collections import Counter
from dataclasses import dataclass, field

from django.db import IntegrityError, transaction
from django.db.models import Q, Sum
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from annotation import identity
from annotation import services as annotation_services
from annotation.crowd import calls, pay
from annotation.crowd import sync as crowd_sync
from annotation.models import Assignment, Project, Worker
from annotation.selectors import unverified_q
from argora.errors import FieldError

from . import client as prolific_client
from .client import UNKNOWN, ProlificError, call_once, get
from .entry import stale_before
from .models import ProlificBonus, ProlificOperation, ProlificSession, ProlificStudy, ProlificSubmission
from .publishing import (
    PublishError,
    apply_create,
    apply_places,
    apply_transition,
    find_study,
    refresh_study,
    reward_cents,
    settings_for,
    wage_cents,
)

log = logging.getLogger("argora.prolific")

PAGE_SIZE = 100
APPROVE_BATCH = 200
FINISHED = ("AWAITING REVIEW", "APPROVED", "PARTIALLY APPROVED", "SCREENED OUT")
ANSWERED = (Assignment.Status.SUBMITTED, Assignment.Status.APPROVED, Assignment.Status.REJECTED, Assignment.Status.LATE)


@dataclass
class SyncReport(crowd_sync.SyncReport):
    study_status: str = ""
    submissions: int = 0
    bound: int = 0
    unbound: list = field(default_factory=list)
    confirmed: int = 0
    unconfirmed: list = field(default_factory=list)
    waiting: int = 0
    released: int = 0
    resumed: int = 0

    def platform_lines(self) -> list[str]:
        out = [
            f"study on Prolific: {self.study_status or 'unknown'}",
            f"submissions {self.submissions} ({self.bound} bound to an Argora session), assignments confirmed "
            f"{self.confirmed}",
            f"approved {self.approved}, rejected {self.rejected}, waiting {self.waiting}, places freed "
            f"{self.released}, bonuses paid {self.bonuses_paid}, pending calls resumed {self.resumed}",
        ]
        out += [f"no Argora session (no answers stored): {u}" for u in self.unbound]
        out += [f"not confirmed: {u}" for u in self.unconfirmed]
        out += [f"unknown to Prolific, given back: {e}" for e in self.excluded]
        return out


def _time(value):
    return parse_datetime(value) if isinstance(value, str) else None


def _participant(data: dict) -> str:
    return str(data.get("participant_id") or data.get("participant") or "")


def list_submissions(cfg: ProlificStudy) -> list[dict]:
    """Every submission of the study (``GET /api/v1/submissions/?study=<id>``, all pages)."""
    out: list[dict] = []
    for page in range(1, 10001):
        data = get("submissions/", params={"study": cfg.study_id, "page": page, "page_size": PAGE_SIZE}) or {}
        results = data.get("results", []) if isinstance(data, dict) else list(data)
        out.extend(results)
        nxt = ((data.get("_links") or {}).get("next") or {}).get("href") if isinstance(data, dict) else None
        if not results or not nxt:
            break
    return out


def _sessions(rec: ProlificSubmission):
    return ProlificSession.objects.filter(
        project=rec.project_id, session_id=rec.submission_id, participant_id=rec.participant_id
    )


def record(project: Project, data: dict) -> ProlificSubmission:
    """The submission row as Prolific reports it, bound to the first session with its ids."""
    values = {
        "project": project,
        "participant_id": _participant(data),
        "study_id": data.get("study_id") or "",
        "status": str(data.get("status") or "").upper(),
        "started_at": _time(data.get("started_at")),
        "completed_at": _time(data.get("completed_at")),
        "entered_code": data.get("entered_code") or "",
    }
    rec, _ = ProlificSubmission.objects.update_or_create(submission_id=data["id"], defaults=values)
    if rec.session_id is None:
        session = _sessions(rec).order_by("started_at", "pk").first()
        if session is not None:
            ProlificSubmission.objects.filter(pk=rec.pk).update(session=session)
            rec.session = session
    return rec


# --- confirming -----------------------------------------------------------------------------------
def confirm(rec: ProlificSubmission, report: SyncReport | None = None) -> int:
    """Prolific lists submission ``rec`` of its participant as finished: the assignments of the sessions with its
    ids move from their provisional workers to the confirmed worker (their answers count from now on) and the
    browsers' users become that worker. Idempotent; returns how many assignments were confirmed now."""
    pid, now, confirmed = rec.participant_id, timezone.now(), 0
    real = rec.worker
    for session in _sessions(rec).select_related("worker__user"):
        worker = session.worker
        if worker is None:
            continue
        user = worker.user
        provisional = (
            worker.source == Worker.Source.PROLIFIC and not worker.external_id and worker.claimed_external_id == pid
        )
        for assignment in Assignment.objects.filter(project=rec.project_id, worker=worker).order_by("pk"):
            done = assignment
            if provisional:
                done = annotation_services.confirm_assignment(
                    assignment, source=Worker.Source.PROLIFIC, external_id=pid
                )
                if done is None:
                    if report is not None:
                        report.unconfirmed.append(
                            f"assignment {assignment.pk} of {pid} (the participant holds "
                            "another assignment of the same HIT)"
                        )
                    continue
                confirmed += 1
            rec.assignments.add(done)
            real = done.worker
        if not provisional:
            real = real or worker
            continue
        real = real or annotation_services.confirmed_worker(Worker.Source.PROLIFIC, pid)
        if real is not None and not Worker.objects.filter(pk=worker.pk).exists():  # all moved: the browser is `real`
            try:
                with transaction.atomic():
                    ProlificSession.objects.filter(pk=session.pk).update(worker=real, confirmed_at=now)
            except IntegrityError:  # another browser's session with the same ids holds that row already
                ProlificSession.objects.filter(pk=session.pk).update(confirmed_at=now)
            if user is not None:
                identity.adopt_worker(user, real)
    if real is not None and rec.worker_id != real.pk:
        ProlificSubmission.objects.filter(pk=rec.pk).update(worker=real)
        rec.worker = real
    return confirmed


# --- freeing places -------------------------------------------------------------------------------
def _free(session: ProlificSession, now) -> int:
    """Give back what a session holds: its reservations end now (the items go back to the pool) and its answers that
    no platform confirmed are rejected in Argora (they would never count; their slots go back too)."""
    worker, n = session.worker, 0
    if worker is not None:
        for assignment in Assignment.objects.filter(
            project=session.project_id, worker=worker, status=Assignment.Status.RESERVED
        ):
            n += bool(annotation_services.release_reservation(assignment, worker))
        for assignment in Assignment.objects.filter(
            project=session.project_id, worker=worker, status__in=Assignment.DONE
        ).filter(unverified_q()):
            try:
                annotation_services.set_assignment_status(assignment, Assignment.Status.REJECTED)
                n += 1
            except annotation_services.SubmissionError:  # changed meanwhile: nothing to give back
                pass
    ProlificSession.objects.filter(pk=session.pk).update(released_at=now)
    return n


def release(rec: ProlificSubmission, now=None) -> int:
    """A returned or timed-out submission: its sessions' places go back to the pool at once. Idempotent."""
    now = now or timezone.now()
    n = sum(_free(session, now) for session in _sessions(rec).filter(released_at__isnull=True))
    ProlificSubmission.objects.filter(pk=rec.pk).update(released_at=now)
    rec.released_at = now
    log.info("prolific %s %s (%s): %d place(s) given back", rec.submission_id, rec.status, rec.participant_id, n)
    return n


def exclude_unknown(project: Project, cfg: ProlificStudy, listed: set[tuple[str, str]], *, now=None) -> list[str]:
    """Study links Prolific does not know (made-up PID / SESSION_ID pairs) hold reservations and unconfirmed answers;
    once Prolific would list them by now (:func:`prolific.entry.stale_before`), they are given back."""
    now = now or timezone.now()
    out = []
    stale = (
        ProlificSession.objects.filter(
            project=project,
            study_id=cfg.study_id,
            released_at__isnull=True,
            started_at__lt=stale_before(cfg, now),
            worker__isnull=False,
            worker__claimed_external_id__gt="",
        )
        .select_related("worker")
        .order_by("pk")
    )
    for session in stale:
        if (session.session_id, session.participant_id) in listed:
            continue
        n = _free(session, now)
        out.append(f"session {session.session_id} claiming PID {session.participant_id} ({n} place(s))")
    return out


# --- approving / rejecting --------------------------------------------------------------------------
def decide(cfg: ProlificStudy, rec: ProlificSubmission) -> tuple[str, str]:
    """("approve" | "reject" | "wait", reason) for a submission awaiting review."""
    answered = [a for a in rec.assignments.all() if a.status in ANSWERED]
    if not answered:
        return "wait", "no answers of this participant are stored in Argora: review it by hand"
    rejected = [a for a in answered if a.status == Assignment.Status.REJECTED]
    if len(rejected) == len(answered):
        return "reject", cfg.rejection_message
    if cfg.approval_policy == ProlificStudy.Approval.MANUAL:
        if any(a.status in (Assignment.Status.SUBMITTED, Assignment.Status.LATE) for a in answered):
            return "wait", "waiting for staff review in Argora"
        return ("reject", cfg.rejection_message) if rejected else ("approve", "")
    if cfg.approval_policy == ProlificStudy.Approval.GOLD and rec.worker is not None and rec.worker.blocked:
        return "reject", cfg.rejection_message
    return "approve", ""


def _digest(values) -> str:
    return hashlib.sha256(",".join(str(v) for v in values).encode()).hexdigest()[:24]


def _review_locally(rec: ProlificSubmission, status: str) -> None:
    for assignment in rec.assignments.filter(status__in=Assignment.DONE):
        try:
            annotation_services.set_assignment_status(assignment, status)
        except annotation_services.SubmissionError:
            pass


def approve(project: Project, cfg: ProlificStudy, recs: list[ProlificSubmission]) -> int:
    """Bulk approve (``POST /api/v1/submissions/bulk-approve/`` with submission ids), in batches."""
    n = 0
    ids = sorted(r.submission_id for r in recs)
    for i in range(0, len(ids), APPROVE_BATCH):
        batch = ids[i : i + APPROVE_BATCH]
        op = call_once(
            f"approve:{cfg.study_id}:{_digest(batch)}",
            "approve",
            "POST",
            "submissions/bulk-approve/",
            {"submission_ids": batch},
            project=project,
            context={"submissions": batch},
        )
        n += apply_approve(op)
    return n


def apply_approve(op: ProlificOperation) -> int:
    n = 0
    for rec in ProlificSubmission.objects.filter(submission_id__in=op.context.get("submissions", [])):
        if rec.review_sent != "approve":
            ProlificSubmission.objects.filter(pk=rec.pk).update(review_sent="approve", status="APPROVED")
            _review_locally(rec, Assignment.Status.APPROVED)
        n += 1
    return n


def reject(project: Project, cfg: ProlificStudy, rec: ProlificSubmission, message: str) -> None:
    """``POST /api/v1/submissions/{id}/transition/`` REJECT with the message and category Prolific requires."""
    op = call_once(
        f"reject:{rec.submission_id}",
        "reject",
        "POST",
        f"submissions/{rec.submission_id}/transition/",
        {"action": "REJECT", "message": message, "rejection_category": cfg.rejection_category},
        project=project,
        context={"submissions": [rec.submission_id]},
    )
    apply_reject(op)


def apply_reject(op: ProlificOperation) -> int:
    n = 0
    for rec in ProlificSubmission.objects.filter(submission_id__in=op.context.get("submissions", [])):
        if rec.review_sent != "reject":
            ProlificSubmission.objects.filter(pk=rec.pk).update(review_sent="reject", status="REJECTED")
            _review_locally(rec, Assignment.Status.REJECTED)
        n += 1
    return n


# --- bonuses --------------------------------------------------------------------------------------
def grant_bonus(
    project: Project, submission_id: str, amount_cents: int, reason: str, *, kind: str = "manual"
) -> ProlificBonus:
    """Plan a bonus for a submission of this project (the next sync sets it up and pays it)."""
    rec = ProlificSubmission.objects.filter(project=project, submission_id=submission_id).first()
    if rec is None:
        raise FieldError(
            "submission", f"unknown Prolific submission {submission_id!r} in this project: run a sync first"
        )
    try:
        amount_cents = int(amount_cents)
    except (TypeError, ValueError):
        raise FieldError("amount_cents", f"{amount_cents!r} is not a whole number of cents") from None
    if amount_cents < 1:
        raise FieldError("amount_cents", "a bonus must be at least 1 cent")
    if not (reason or "").strip():
        raise FieldError("reason", "say why (kept for the research team)")
    return ProlificBonus.objects.create(
        project=project, submission=rec, amount_cents=amount_cents, reason=reason.strip()[:500], kind=kind
    )


def plan_wage_topups(project: Project) -> list[ProlificBonus]:
    """One bonus per approved submission whose working time (its assignments' ``work_seconds``) paid less than the
    study's hourly wage: wage x time (rounded up) - reward (:func:`annotation.crowd.pay.plan_topup`). At most one
    top-up per submission."""
    cfg = settings_for(project)
    reward, _source = reward_cents(cfg)
    wage = wage_cents(cfg)
    created = []
    recs = (
        ProlificSubmission.objects.filter(project=project)
        .filter(Q(review_sent="approve") | Q(status="APPROVED"))
        .exclude(bonuses__kind=ProlificBonus.WAGE_TOPUP)
    )
    for rec in recs:
        seconds = rec.assignments.filter(status__in=Assignment.DONE).aggregate(s=Sum("work_seconds"))["s"] or 0
        bonus = pay.plan_topup(
            ProlificBonus,
            hourly_cents=wage,
            seconds=seconds,
            reward_cents=reward,
            project=project,
            submission=rec,
            reason=f"top-up: {seconds / 60:.1f} min of work at {wage / 100:.2f}/h",
        )
        if bonus is not None:
            created.append(bonus)
    return created


def set_up_bonuses(project: Project, cfg: ProlificStudy) -> None:
    planned = list(
        ProlificBonus.objects.filter(project=project, status=ProlificBonus.Status.PLANNED)
        .select_related("submission")
        .order_by("pk")
    )
    if not planned:
        return
    ids = [b.pk for b in planned]
    csv = "\n".join(f"{b.submission.submission_id},{b.amount_cents / 100:.2f}" for b in planned)
    # a set-up pays nothing: sending it again after an unknown outcome only makes an unused record on Prolific
    op = call_once(
        f"bonus-setup:{cfg.study_id}:{_digest(ids)}",
        "bonus_setup",
        "POST",
        "submissions/bonus-payments/",
        {"study_id": cfg.study_id, "csv_bonuses": csv},
        project=project,
        context={"bonuses": ids},
    )
    apply_bonus_setup(op)


def apply_bonus_setup(op: ProlificOperation) -> int:
    bulk_id = op.response.get("id") if isinstance(op.response, dict) else None
    if not bulk_id:
        return 0
    return ProlificBonus.objects.filter(
        pk__in=op.context.get("bonuses", []), status=ProlificBonus.Status.PLANNED
    ).update(status=ProlificBonus.Status.SET_UP, bulk_id=bulk_id)


def _find_paid(op: ProlificOperation):
    """After an interrupted pay call: each bonus's amount among its submission's ``bonus_payments``? Prolific pays
    asynchronously, so "not there yet" cannot tell: :data:`prolific.client.UNKNOWN`."""
    bonuses = list(ProlificBonus.objects.filter(pk__in=op.context.get("bonuses", [])).select_related("submission"))
    for submission_id in {b.submission.submission_id for b in bonuses}:
        paid = Counter(
            int(round(float(x))) for x in ((get(f"submissions/{submission_id}/") or {}).get("bonus_payments") or [])
        )
        want = Counter(b.amount_cents for b in bonuses if b.submission.submission_id == submission_id)
        if any(paid[amount] < count for amount, count in want.items()):
            return UNKNOWN
    return {"found": "bonus_payments"} if bonuses else UNKNOWN


def pay_bonuses(project: Project, cfg: ProlificStudy) -> int:
    """Set up the planned bonuses (one bulk record), then pay each set-up record once."""
    set_up_bonuses(project, cfg)
    paid = 0
    for bulk_id in (
        ProlificBonus.objects.filter(project=project, status=ProlificBonus.Status.SET_UP)
        .order_by("bulk_id")
        .values_list("bulk_id", flat=True)
        .distinct()
    ):
        ids = list(
            ProlificBonus.objects.filter(project=project, bulk_id=bulk_id, status=ProlificBonus.Status.SET_UP)
            .order_by("pk")
            .values_list("pk", flat=True)
        )
        op = call_once(
            f"bonus-pay:{bulk_id}",
            "bonus_pay",
            "POST",
            f"bulk-bonus-payments/{bulk_id}/pay/",
            None,
            project=project,
            repeatable=False,
            already_done=_find_paid,
            context={"bonuses": ids},
        )
        paid += apply_bonus_pay(op)
    return paid


def apply_bonus_pay(op: ProlificOperation) -> int:
    return ProlificBonus.objects.filter(
        pk__in=op.context.get("bonuses", []), status=ProlificBonus.Status.SET_UP
    ).update(status=ProlificBonus.Status.PAID, paid_at=timezone.now())


# --- pending calls --------------------------------------------------------------------------------
def _find_created(op: ProlificOperation):
    cfg = ProlificStudy.objects.filter(project_id=op.project_id).first()
    return find_study(cfg) if cfg is not None else UNKNOWN


# each logged call's local effect (applied after it is done, also when a later sync resumes it) and, for the calls
# that are not safe to repeat, how an interrupted one is looked up on Prolific
APPLY = {
    "create_study": apply_create,
    "transition": apply_transition,
    "places": apply_places,
    "approve": apply_approve,
    "reject": apply_reject,
    "bonus_setup": apply_bonus_setup,
    "bonus_pay": apply_bonus_pay,
}
ALREADY = {"bonus_pay": _find_paid, "create_study": _find_created}


def resume_pending(project: Project, report: SyncReport) -> None:
    """The calls an earlier run left pending (a crash, a 429 or 5xx, a network error): sent again under their own
    key (a call that is not safe to repeat is first looked up), then their effect is applied here."""
    for op in calls.pending(ProlificOperation, project):
        if op.operation not in APPLY:
            continue
        try:
            done = call_once(
                op.key,
                op.operation,
                op.method,
                op.path,
                op.request.get("body"),
                project=project,
                repeatable=op.repeatable,
                already_done=ALREADY.get(op.operation),
                context=op.context,
            )
        except ProlificError as exc:
            report.errors.append(str(exc))
            continue
        APPLY[op.operation](done)
        report.resumed += 1


def resolve_operation(key: str, *, happened: bool) -> ProlificOperation:
    """A person checked an uncertain call on Prolific: ``happened`` -> done and its local effect applied (e.g. the
    bonuses marked paid); otherwise pending again, sent once more by the next sync."""
    op = ProlificOperation.objects.filter(key=key).first()
    if op is None:
        raise FieldError("key", f"no Prolific call is logged under {key!r}")
    try:
        op = prolific_client.mark(op, happened=happened)
    except ProlificError as exc:
        raise FieldError("key", str(exc).split(": ", 1)[-1]) from None
    if happened and op.operation in APPLY:
        APPLY[op.operation](op)
    return op


# --- the sync -------------------------------------------------------------------------------------
def sync_project(project: Project) -> SyncReport:
    """Resume pending calls, refresh the study, list and reconcile its submissions, give back unknown sessions,
    pay bonuses."""
    cfg = settings_for(project)
    if not cfg.study_id:
        raise PublishError("study_id", "create the study on Prolific first")
    report = SyncReport()
    resume_pending(project, report)
    try:
        refresh_study(cfg)
    except ProlificError as exc:
        report.errors.append(f"study: {exc}")
    report.study_status = cfg.status
    try:
        listed = list_submissions(cfg)
    except ProlificError as exc:
        report.errors.append(f"submissions: {exc}")
        listed = None
    if listed is not None:
        to_approve = []
        for data in listed:
            if not data.get("id"):
                continue
            rec = record(project, data)
            report.submissions += 1
            report.bound += rec.session_id is not None
            if rec.session_id is None:
                report.unbound.append(f"{rec.submission_id} by {rec.participant_id} ({rec.status})")
            if rec.status in ProlificSubmission.RELEASING:
                if rec.released_at is None:
                    report.released += release(rec)
                continue
            if rec.status in FINISHED or rec.status == "REJECTED":
                report.confirmed += confirm(rec, report)
            if rec.status == "REJECTED" and rec.review_sent != "reject":  # rejected on Prolific by hand
                _review_locally(rec, Assignment.Status.REJECTED)
            elif rec.status == "APPROVED" and rec.review_sent != "approve":  # by hand, or a code that auto-approves
                _review_locally(rec, Assignment.Status.APPROVED)
            if rec.status != "AWAITING REVIEW" or rec.review_sent:
                continue
            action, reason = decide(cfg, rec)
            ProlificSubmission.objects.filter(pk=rec.pk).update(decision=action, decision_reason=reason[:300])
            if action == "approve":
                to_approve.append(rec)
            elif action == "reject":
                try:
                    reject(project, cfg, rec, reason)
                    report.rejected += 1
                except ProlificError as exc:
                    report.errors.append(str(exc))
            else:
                report.waiting += 1
        if to_approve:
            try:
                report.approved += approve(project, cfg, to_approve)
            except ProlificError as exc:
                report.errors.append(str(exc))
        listed_pairs = {(str(d.get("id")), _participant(d)) for d in listed}
        report.excluded = exclude_unknown(project, cfg, listed_pairs)
    try:
        report.bonuses_paid = pay_bonuses(project, cfg)
    except ProlificError as exc:
        report.errors.append(str(exc))
    ProlificStudy.objects.filter(pk=cfg.pk).update(synced_at=timezone.now())
    log.info("prolific sync %s: %s", project.slug, "; ".join(report.lines()))
    return report


def sync_all() -> dict:
    """Every project with a study on Prolific (the periodic task)."""
    out = {}
    for cfg in ProlificStudy.objects.exclude(study_id="").select_related("project"):
        try:
            out[cfg.project.slug] = sync_project(cfg.project).as_dict()
        except (ProlificError, FieldError) as exc:
            out[cfg.project.slug] = {"errors": [str(exc)]}
    return out


def cost_so_far(project: Project) -> dict:
    """Rewards of approved submissions and bonuses paid (cents, without Prolific's fees)."""
    cfg = ProlificStudy.objects.filter(project=project).first()
    reward = reward_cents(cfg)[0] if cfg else 0
    approved = (
        ProlificSubmission.objects.filter(project=project)
        .filter(Q(review_sent="approve") | Q(status="APPROVED"))
        .count()
    )
    bonuses = ProlificBonus.objects.filter(project=project)
    paid = bonuses.filter(status=ProlificBonus.Status.PAID).aggregate(s=Sum("amount_cents"))["s"] or 0
    pending = bonuses.exclude(status=ProlificBonus.Status.PAID).aggregate(s=Sum("amount_cents"))["s"] or 0
    return {
        "approved": approved,
        "rewards_cents": approved * reward,
        "bonuses_cents": paid,
        "pending_bonuses_cents": pending,
        "total_cents": approved * reward + paid,
    }
