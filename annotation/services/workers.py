"""Workers: who they are (a Django user, a platform id, an unconfirmed claim), whether they may work (blocked, admitted
to a project) and the completion codes they are given."""

from __future__ import annotations

from django.db import IntegrityError, transaction
from django.utils import timezone

from ..auth import cached_worker, remember_worker
from ..models import Admission, Project, Worker, WorkerProjectCode


def worker_for_user(user, *, source: str = "local") -> Worker:
    """The Worker of a Django user, created on first use."""
    known, worker = cached_worker(user)
    if not known:
        worker = Worker.objects.filter(user=user).first()
    if worker is not None:
        return worker
    try:
        with transaction.atomic():
            worker = Worker.objects.create(user=user, source=source)
    except IntegrityError:  # created by a concurrent request
        worker = Worker.objects.get(user=user)
    remember_worker(user, worker)
    return worker


def worker_for_external_id(external_id: str, *, source: str) -> Worker:
    """The Worker with an external id (MTurk WorkerId, Prolific PID), created on first use."""
    if not external_id:
        raise ValueError("external_id is empty")
    worker = Worker.objects.filter(source=source, external_id=external_id).first()
    if worker is not None:
        return worker
    try:
        with transaction.atomic():
            return Worker.objects.create(source=source, external_id=external_id)
    except IntegrityError:
        return Worker.objects.get(source=source, external_id=external_id)


def provisional_worker(source: str, claimed_id: str) -> Worker:
    """A new worker for an identity a platform has not confirmed (an MTurk workerId or a Prolific PID in a URL).

    Each unconfirmed claim gets its own provisional worker, so that a made-up claim never touches the record of the
    worker who really has that id: their gold record, block, quota and completed HITs. Its answers are left out of
    every aggregate and export (:func:`annotation.selectors.unverified_q`) and its gold answers are scored only when
    the platform confirms the claim (:func:`confirm_assignment`)."""
    if not claimed_id:
        raise ValueError("claimed_id is empty")
    return Worker.objects.create(source=source, claimed_external_id=claimed_id)


def confirmed_worker(source: str, external_id: str) -> Worker | None:
    """The worker a platform has confirmed as ``external_id``, if any."""
    return Worker.objects.filter(source=source, external_id=external_id).first() if external_id else None


def block_worker(worker: Worker, reason: str, *, now=None, keep_first: bool = False) -> Worker:
    """Block ``worker`` from new HITs, with a reason they are shown: the one way a worker is blocked (staff; a gold
    accuracy below the project's minimum, :func:`annotation.services.gold.score_gold`, inside the submission's
    transaction). ``keep_first``: a worker blocked already keeps the reason and time of that first block."""
    rows = Worker.objects.filter(pk=worker.pk)
    if keep_first:
        rows = rows.filter(blocked=False)
    rows.update(blocked=True, blocked_reason=reason, blocked_at=now or timezone.now())
    worker.refresh_from_db(fields=["blocked", "blocked_reason", "blocked_at"])
    return worker


def unblock_worker(worker: Worker) -> Worker:
    Worker.objects.filter(pk=worker.pk).update(blocked=False, blocked_reason="", blocked_at=None)
    worker.refresh_from_db(fields=["blocked", "blocked_reason", "blocked_at"])
    return worker


def admit_worker(project: Project, worker: Worker, *, via: str = "invite") -> None:
    """``worker`` came in through one of ``project``'s doors (its invite link, its Prolific study link): it may
    take the project's HITs (:func:`annotation.access.worker_admitted`)."""
    Admission.objects.get_or_create(project=project, worker=worker, defaults={"via": via[:20]})


def completion_code(project: Project, worker: Worker, *, kind: str = WorkerProjectCode.Kind.COMPLETED) -> str:
    """A random code, stable per worker x project x kind (``completed``, or ``screened_out`` for a worker the
    study's qualification screened out), created on first call."""
    mine = WorkerProjectCode.objects.filter(project=project, worker=worker, kind=kind)
    code = mine.values_list("code", flat=True).first()
    if code:
        return code
    try:
        with transaction.atomic():
            return WorkerProjectCode.objects.create(project=project, worker=worker, kind=kind).code
    except IntegrityError:
        return mine.get().code
