"""Participants arriving from Prolific and leaving for it.

:func:`enter` is the study link (``/prolific/<slug>/start/?PROLIFIC_PID=&STUDY_ID=&SESSION_ID=``): nothing in that URL
is trusted. The PID is a *claim*: the browser becomes a provisional worker for it
(``annotation.services.provisional_worker``, a passwordless user logged in through :mod:`annotation.identity`), whose
answers count nowhere until a sync finds submission ``SESSION_ID`` of participant ``PROLIFIC_PID`` on Prolific. The
same browser coming back (its session, or the signed worker cookie) is the same worker; another browser with the same
ids gets a worker of its own, never the first one's.

:func:`completion_return` fills ``annotation.providers.completion_return``: a worker who came through Prolific for
this project is sent back to Prolific with the study's COMPLETED (or screened-out) code, which the page also shows, so
nobody copies a code by hand.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from datetime import timedelta
from urllib.parse import quote

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from annotation import identity
from annotation import services as annotation_services
from annotation.models import Project, Worker
from argora import counters

from .models import ProlificSession, ProlificStudy

PROLIFIC_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
ENTRY_KEY = "argora:prolific-entries:{}:{}"


class EntryRefused(Exception):
    """A polite refusal page: ``heading``, ``lines``, HTTP ``status``."""

    def __init__(self, heading: str, lines: list[str], *, status: int):
        super().__init__("; ".join(lines))
        self.heading, self.lines, self.status = heading, lines, status


@dataclass
class Entry:
    worker: Worker
    user: object
    session: ProlificSession


def _client_key(project: Project, client: str) -> str:
    return ENTRY_KEY.format(project.pk, hashlib.sha256(client.encode()).hexdigest()[:16])


def _claims(worker: Worker | None, pid: str) -> bool:
    """The worker is this browser's worker for ``pid`` (provisional for it, or confirmed as it)."""
    return (
        worker is not None
        and worker.source == Worker.Source.PROLIFIC
        and pid in (worker.claimed_external_id, worker.external_id)
    )


def enter(
    project: Project, *, pid: str, study_id: str, session_id: str, current_user=None, client: str = "", now=None
) -> Entry:
    """The worker (and passwordless user) this browser is for this study link; records the session. Raises
    :class:`EntryRefused` (closed project, ids missing, a link for another study, too many new claims from one
    address, a logged-in account with a password)."""
    now = now or timezone.now()
    if project.status != Project.Status.ACTIVE:
        raise EntryRefused(
            "This study is closed",
            [f"{project.name} takes no more answers. Please return the study on Prolific."],
            status=410,
        )
    for name, value in (("PROLIFIC_PID", pid), ("STUDY_ID", study_id), ("SESSION_ID", session_id)):
        if not PROLIFIC_ID.match(value or ""):
            raise EntryRefused(
                "This link is incomplete",
                [f"{name}: missing or not a Prolific id. Please open the study again from Prolific."],
                status=400,
            )
    cfg = ProlificStudy.objects.filter(project=project).first()
    if cfg is None or not cfg.study_id or cfg.study_id != study_id:
        raise EntryRefused(
            "This link is not for this study",
            [
                "STUDY_ID: this link belongs to another Prolific study. Please open the study again from Prolific, or "
                "return it if the problem persists."
            ],
            status=403,
        )
    user = current_user if current_user is not None and current_user.is_authenticated else None
    if user is not None and (user.is_staff or user.is_superuser or user.has_usable_password()):
        raise EntryRefused(
            "You are logged in with an account",
            [
                f"This browser is logged in as {user.get_username()}. To take part as a Prolific participant, open the "
                "study link in a private window (or log out first)."
            ],
            status=409,
        )
    worker = identity.worker_of(user)
    if not _claims(worker, pid):
        window = max(60, int(project.reservation_timeout_seconds))
        if client:
            key = _client_key(project, client)
            try:
                opened = counters.bump(key, window=window)
            except counters.CounterUnavailable:
                raise EntryRefused(
                    "Please try again in a minute", ["The study cannot take new participants for a moment."], status=503
                ) from None
            if opened > int(getattr(settings, "ARGORA_UNCONFIRMED_PER_ADDRESS", 6)):
                raise EntryRefused(
                    "Please try again later",
                    ["Too many new participants opened this study from your network just now."],
                    status=429,
                )
        worker = annotation_services.provisional_worker(Worker.Source.PROLIFIC, pid)
        user = identity.user_for_worker(worker)
    try:
        with transaction.atomic():
            session, _ = ProlificSession.objects.get_or_create(
                session_id=session_id,
                participant_id=pid,
                worker=worker,
                defaults={
                    "project": project,
                    "study_id": study_id,
                    "started_at": now,
                    "client": hashlib.sha256(client.encode()).hexdigest()[:16] if client else "",
                },
            )
    except IntegrityError:  # the same browser twice at once
        session = ProlificSession.objects.get(session_id=session_id, participant_id=pid, worker=worker)
    return Entry(worker=worker, user=user, session=session)


def came_through_prolific(project: Project, worker: Worker | None) -> bool:
    if worker is None or worker.pk is None:
        return False
    sessions = ProlificSession.objects.filter(project=project)
    if sessions.filter(worker=worker).exists():
        return True
    return bool(
        worker.source == Worker.Source.PROLIFIC
        and worker.external_id
        and sessions.filter(participant_id=worker.external_id).exists()
    )


def completion_return(project: Project, worker: Worker | None, outcome: str) -> dict | None:
    """``{"url": "<ARGORA_PROLIFIC_APP_URL>/submissions/complete?cc=<code>", "code": <code>}`` for a worker who
    entered this project through Prolific (``outcome``: ``"completed"`` -> the study's COMPLETED code,
    ``"screened_out"`` -> its screened-out code); else ``None`` (the worker stays on Argora's page)."""
    cfg = ProlificStudy.objects.filter(project=project).exclude(study_id="").first()
    if cfg is None or not came_through_prolific(project, worker):
        return None
    code = {"completed": cfg.completed_code, "screened_out": cfg.screened_out_code}.get(outcome, "")
    if not code:
        return None
    return {
        "url": f"{settings.ARGORA_PROLIFIC_APP_URL.rstrip('/')}/submissions/complete?cc={quote(code)}",
        "code": code,
    }


def stale_before(cfg: ProlificStudy, now=None):
    """Sessions started before this should be listed by Prolific by now (its maximum time is under 24 hours)."""
    now = now or timezone.now()
    return now - timedelta(minutes=cfg.maximum_allowed_minutes or 24 * 60)
