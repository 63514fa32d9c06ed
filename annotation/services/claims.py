"""Platforms that hand out HITs themselves (MTurk): a slot of the HIT the platform named, reserved for a confirmed
worker (:func:`reserve_hit`) or for an id only claimed in a URL (:func:`reserve_hit_for_claim`), and the move of a
claim's assignment and study-phase records to the worker once the platform confirms the id
(:func:`confirm_assignment`, :func:`merge_claim`)."""

from __future__ import annotations

import hashlib

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from argora import counters

from .. import selectors
from ..models import HIT, Assignment, GoldRecord, Participation, Project, TrainingAnswer, Worker, WorkerProjectCode
from .allocation import add_gold, expire_reservations, quota_reached
from .errors import HITAlreadyDone, HITFull, TooManyUnconfirmed, WorkerBlocked
from .gold import score_stored_gold
from .items import remember
from .workers import confirmed_worker, provisional_worker, worker_for_external_id

UNCONFIRMED_ADDRESS_KEY = "argora:unconfirmed:{}:{}"


def reserve_hit_for_claim(
    project: Project,
    hit_id: int,
    *,
    source: str,
    claimed_id: str,
    external_id: str,
    expires_at,
    client: str = "",
    now=None,
) -> Assignment:
    """Reserve a slot of the HIT a platform named for an identity it has not confirmed yet (an MTurk accept: the
    workerId and assignmentId in the URL cannot be checked before a sync lists them).

    The reservation goes to a new provisional worker (:func:`provisional_worker`), never to the worker who really
    has that id. What may be checked now is: the confirmed worker with that id, if any, is not blocked, has not done
    this HIT and is under the project's HIT quota; the claim holds at most ``ARGORA_UNCONFIRMED_PER_WORKER`` open
    unconfirmed reservations in the project; the client address has made at most ``ARGORA_UNCONFIRMED_PER_ADDRESS``
    unconfirmed accepts in the project within a reservation's lifetime. Raises :class:`WorkerBlocked`,
    :class:`HITAlreadyDone`, :class:`QuotaReached`, :class:`TooManyUnconfirmed`, :class:`HITFull`.
    """
    now = now or timezone.now()
    real = confirmed_worker(source, claimed_id)
    if real is not None:
        if real.blocked:
            raise WorkerBlocked(real.blocked_reason)
        if Assignment.objects.filter(hit_id=hit_id, worker=real).exists():
            raise HITAlreadyDone("you have already done this HIT; please return it")
    claims = Assignment.objects.filter(project=project, worker__source=source, worker__claimed_external_id=claimed_id)
    if project.max_hits_per_worker is not None:
        used = claims.exclude(status__in=(Assignment.Status.EXPIRED, Assignment.Status.REJECTED)).count()
        if real is not None:
            used += (
                Assignment.objects.filter(project=project, worker=real)
                .exclude(status=Assignment.Status.EXPIRED)
                .count()
            )
        if used >= project.max_hits_per_worker:
            raise quota_reached(project)
    per_worker = int(getattr(settings, "ARGORA_UNCONFIRMED_PER_WORKER", 2))
    if claims.filter(status=Assignment.Status.RESERVED, expires_at__gt=now).count() >= per_worker:
        raise TooManyUnconfirmed(
            f"you hold {per_worker} unsubmitted HITs of this study; submit or return one before accepting another"
        )
    if client:
        per_address = int(getattr(settings, "ARGORA_UNCONFIRMED_PER_ADDRESS", 6))
        key = UNCONFIRMED_ADDRESS_KEY.format(project.pk, hashlib.sha256(client.encode()).hexdigest()[:16])
        window = max(1, int((expires_at - now).total_seconds()))
        try:
            accepted = counters.bump(key, window=window)
        except counters.CounterUnavailable:
            raise TooManyUnconfirmed(
                "the server cannot take new HITs of this study for a moment; please try again in a minute"
            ) from None
        if accepted > per_address:
            raise TooManyUnconfirmed("too many HITs of this study were accepted from your network; try again later")
    return reserve_hit(
        project, provisional_worker(source, claimed_id), hit_id, external_id=external_id, expires_at=expires_at, now=now
    )


def reserve_hit(project: Project, worker: Worker, hit_id: int, *, external_id: str, expires_at, now=None) -> Assignment:
    """Reserve a slot of one given HIT for a worker, for a platform that hands out HITs itself (MTurk: the worker
    accepted that HIT there). ``external_id``: the platform's assignment id, stored on the assignment.

    The same rules as :func:`reserve_next_assignment`, in one transaction with the worker row locked: a blocked
    worker is refused (:class:`WorkerBlocked`); a slot is taken only with ``UPDATE ... WHERE taken < R``; gold items
    are interleaved. A worker who returned the HIT on the platform and accepted it again keeps their assignment
    (a new ``external_id``; an expired one is revived if a slot is free). Raises :class:`HITAlreadyDone` when the
    worker submitted it, :class:`HITFull` when no slot is left (after giving stale reservations back once).
    """
    now = now or timezone.now()
    r = selectors.item_order(project)["cap"]  # R, or r_max of adaptive R (never above R)
    for attempt in range(2):
        with transaction.atomic():
            locked = Worker.objects.select_for_update(no_key=True).get(pk=worker.pk)
            if locked.blocked:
                raise WorkerBlocked(locked.blocked_reason)
            existing = Assignment.objects.select_for_update(no_key=True).filter(hit_id=hit_id, worker=worker).first()
            if existing is not None:
                if existing.status in Assignment.DONE or existing.status == Assignment.Status.REJECTED:
                    raise HITAlreadyDone("you have already done this HIT; please return it")
                revived = existing.status != Assignment.Status.EXPIRED or bool(
                    HIT.objects.filter(pk=hit_id, taken__lt=r).update(taken=F("taken") + 1)
                )
                if revived:
                    if existing.status == Assignment.Status.EXPIRED:
                        existing.status = Assignment.Status.RESERVED
                        existing.reserved_at = now
                    existing.external_id = external_id
                    existing.expires_at = expires_at
                    existing.save(update_fields=["status", "reserved_at", "external_id", "expires_at"])
                    return existing
            elif HIT.objects.filter(pk=hit_id, taken__lt=r).update(taken=F("taken") + 1):
                assignment = Assignment.objects.create(
                    project=project,
                    hit_id=hit_id,
                    worker=worker,
                    status=Assignment.Status.RESERVED,
                    reserved_at=now,
                    expires_at=expires_at,
                    external_id=external_id,
                )
                remember(assignment, gold_ids=add_gold(project, worker, assignment))
                return assignment
        if attempt == 0 and expire_reservations(now=now, project=project):
            continue  # stale reservations gave slots back: try once more
        break
    raise HITFull("every slot of this HIT is taken in Argora; please return the HIT")


def confirm_assignment(assignment: Assignment, *, source: str, external_id: str, now=None) -> Assignment | None:
    """The platform confirmed that ``external_id`` did ``assignment`` (an MTurk sync listed its assignmentId under
    that WorkerId): the assignment moves from its provisional worker to the confirmed worker (created on first use),
    its gold answers are scored now -- which may block that worker, as at submission -- and its answers count from
    now on. Idempotent; ``None`` (nothing changed, logged by the caller) when the assignment's provisional worker
    claimed another id, or when the confirmed worker already holds an assignment of the same HIT."""
    now = now or timezone.now()
    with transaction.atomic():
        locked = Assignment.objects.select_for_update().select_related("worker", "project").get(pk=assignment.pk)
        provisional = locked.worker
        if provisional.source == source and provisional.external_id == external_id:
            return locked  # confirmed already
        if provisional.claimed_external_id != external_id or provisional.source != source:
            return None
        worker = worker_for_external_id(external_id, source=source)
        if Assignment.objects.filter(hit_id=locked.hit_id, worker=worker).exists():
            return None
        Assignment.objects.filter(pk=locked.pk).update(worker=worker)
        locked.worker = worker
        GoldRecord.objects.filter(assignment=locked).delete()  # none are scored for a provisional worker
        if locked.status in Assignment.DONE and score_stored_gold(locked, worker, now):
            worker.refresh_from_db(fields=["blocked", "blocked_reason", "blocked_at"])
        # the claim's study phases (consent, training, survey) are the confirmed worker's now
        merge_claim(locked.project, worker, source=source, claimed_id=external_id)
        if not provisional.assignments.exists():
            provisional.delete()
    return locked


_KEEP_FIRST = ("consent_at", "instructions_opened_at")


def merge_claim(project: Project, worker: Worker, *, source: str, claimed_id: str) -> Participation | None:
    """The platform confirmed that ``worker`` has the id ``claimed_id``: the claim's phase records in ``project``
    become the worker's. With no record of their own, the (latest) claim record moves to them; else what their
    record lacks is taken from the claims -- consent, instructions, a training decision with its answers, the survey
    -- and the claim records are deleted, with their provisional workers once these hold no assignment. Runs inside
    :func:`confirm_assignment`'s transaction; returns the worker's record (``None``: none)."""
    claims = list(selectors.claim_participations(project, source, claimed_id).select_for_update())
    claims = [c for c in claims if c.worker_id != worker.pk]
    own = Participation.objects.select_for_update().filter(project=project, worker=worker).first()
    if not claims:
        return own
    for claim in claims:
        provisional = claim.worker
        if own is None:
            Participation.objects.filter(pk=claim.pk).update(worker=worker, platform_assignment="")
            WorkerProjectCode.objects.filter(
                project=project, worker=provisional, kind=WorkerProjectCode.Kind.SCREENED_OUT
            ).update(worker=worker)
            own = Participation.objects.select_for_update().get(pk=claim.pk)
        else:
            _fold(project, own, claim, worker)
            claim.delete()
        if not provisional.assignments.exists() and not provisional.participations.exists():
            provisional.delete()
    return own


def _fold(project: Project, own: Participation, claim: Participation, worker: Worker) -> None:
    """Fill what ``own`` lacks from ``claim`` (own values win)."""
    fields = []
    for name in _KEEP_FIRST:
        if getattr(own, name) is None and getattr(claim, name) is not None:
            setattr(own, name, getattr(claim, name))
            fields.append(name)
            if name == "consent_at":
                own.consent_version = claim.consent_version
                fields.append("consent_version")
    if not own.outcome and (claim.outcome or claim.attempts_finished > own.attempts_finished):
        TrainingAnswer.objects.filter(participation=own).delete()
        TrainingAnswer.objects.filter(participation=claim).update(participation=own)
        for name in ("attempt", "attempts_finished", "training_score", "qualified_at", "screened_out_at"):
            setattr(own, name, getattr(claim, name))
            fields.append(name)
        if (
            claim.screened_out_at
            and not WorkerProjectCode.objects.filter(
                project=project, worker=worker, kind=WorkerProjectCode.Kind.SCREENED_OUT
            ).exists()
        ):
            WorkerProjectCode.objects.filter(
                project=project, worker=claim.worker, kind=WorkerProjectCode.Kind.SCREENED_OUT
            ).update(worker=worker)
    if own.survey_at is None and claim.survey_at is not None:
        own.survey, own.survey_at = claim.survey, claim.survey_at
        fields += ["survey", "survey_at"]
    if fields:
        own.save(update_fields=fields + ["updated_at"])
