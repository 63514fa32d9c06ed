"""The crowd platforms' call log and its call-once rule: one set of functions for ``mturk/`` and ``prolific/``.

A call that changes something on a platform (pay a bonus, approve, create a HIT or a study) must not happen twice,
yet a worker can die between the call and writing its answer down. So every such call is a row of the platform's
:class:`~annotation.crowd.models.CallLog`, keyed by what makes it unique:

1. :func:`begin` writes (and commits) the row *before* the call; a row already ``done`` is returned, nothing is sent;
2. a row an earlier attempt left behind (a crash, no answer) is a retry: the platform's ``already_done(row)`` may look
   the outcome up and answer the response (then it is done, no call), ``None`` (not done: call again, with the logged
   request) or :data:`UNKNOWN`; a call that is not ``repeatable`` whose outcome is unknown is not sent again: the row
   becomes ``uncertain`` and waits for a person (:func:`resolve`);
3. the platform makes the call and marks the row :func:`mark_done`, :func:`mark_failed` (the platform refused) or
   :func:`mark_pending` (no answer: the next sync resumes it, :func:`pending`).

What differs between platforms (the log model, the error type, what counts as interrupted, the fields an attempt
resets) is a :class:`Rules`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import QuerySet
from django.utils import timezone

from .models import CallLog, CallStatus

UNKNOWN = object()  # what an ``already_done`` lookup returns when it cannot tell

Finish = Callable[..., CallLog]


def _always(_op: CallLog) -> bool:
    return True


def _interrupted(_op: CallLog) -> str:
    return "interrupted"


@dataclass(frozen=True)
class Rules:
    """A platform's side of the call log."""

    log: type[CallLog]
    platform: str  # "MTurk", "Prolific": in the notes a person reads
    error: Callable[[str], Exception]  # the platform's error type, built from a message
    resolve_hint: str = "check on {platform}, then resolve it"
    interrupted: Callable[[CallLog], bool] = _always  # a retry whose outcome may be unknown (lookup first)
    describe: Callable[[CallLog], str] = _interrupted  # how an interrupted call is described to a person
    reset: dict = field(default_factory=dict)  # fields each attempt resets (e.g. the last HTTP status)


@dataclass
class Attempt:
    """What :func:`begin` found: ``done`` (nothing to send: ``op`` is the done row) or a call to make now."""

    op: CallLog
    created: bool
    retry: bool
    done: bool = False


def _set(op: CallLog, **values: Any) -> CallLog:
    """Write ``values`` in one UPDATE (no save: the row may have changed meanwhile) and on the instance."""
    type(op).objects.filter(pk=op.pk).update(**values)
    for name, value in values.items():
        setattr(op, name, value)
    return op


def write_before(log: type[CallLog], key: str, defaults: dict) -> tuple[CallLog, bool]:
    """The row for ``key``, written and committed before any call (a concurrent writer's row is taken as it is)."""
    try:
        with transaction.atomic():
            return log.objects.get_or_create(key=key, defaults=defaults)
    except IntegrityError:
        return log.objects.get(key=key), False


def mark_done(op: CallLog, response: Any, *, note: str = "", logged: Any = None, **extra: Any) -> CallLog:
    """The call happened: done with its response, in one statement (a crash before it leaves the row pending).
    ``logged``: what the log keeps when it must not keep all of ``response`` (a secret); the caller still gets it."""
    values = {
        "status": CallStatus.DONE,
        "response": response if logged is None else logged,
        "done_at": timezone.now(),
        "error": note,
        **extra,
    }
    _set(op, **values)
    op.response = response
    return op


def mark_failed(op: CallLog, error: str, **extra: Any) -> CallLog:
    """The platform answered and refused: failed (a later call under the same key tries again)."""
    return _set(op, status=CallStatus.FAILED, error=error, **extra)


def mark_pending(op: CallLog, error: str, **extra: Any) -> CallLog:
    """No usable answer (network, 5xx, rate limit): pending, so the next sync resumes it."""
    return _set(op, status=CallStatus.PENDING, error=error, **extra)


def mark_uncertain(op: CallLog, error: str) -> CallLog:
    """The outcome is unknown and the call is not safe to repeat: a person checks on the platform (:func:`resolve`)."""
    return _set(op, status=CallStatus.UNCERTAIN, error=error)


def pending(log: type[CallLog], project) -> QuerySet:
    """A project's calls that an earlier run left pending, oldest first (what a sync resumes)."""
    return log.objects.filter(project=project, status=CallStatus.PENDING).order_by("created_at", "pk")


def begin(
    rules: Rules,
    key: str,
    defaults: dict,
    *,
    already_done: Callable[[CallLog], Any] | None = None,
    finish: Finish = mark_done,
) -> Attempt:
    """Steps 1 and 2 of the module's rule: the row is written, an earlier outcome looked up; returns the
    :class:`Attempt` (its attempt counted) or raises ``rules.error`` for an uncertain call."""
    op, created = write_before(rules.log, key, defaults)
    if op.status == CallStatus.DONE:
        return Attempt(op, created, retry=False, done=True)
    if op.status == CallStatus.UNCERTAIN:
        raise rules.error(
            f"{op.operation} ({key}): the outcome of an interrupted call is unknown and it is not sent "
            f"again; {rules.resolve_hint.format(platform=rules.platform, key=key)}"
        )
    retry = not created and op.attempts > 0
    if retry and rules.interrupted(op):
        found = already_done(op) if already_done is not None else UNKNOWN
        if found is not UNKNOWN and found is not None:
            return Attempt(
                finish(op, found, note=f"found on {rules.platform} after an interrupted call"),
                created,
                retry=True,
                done=True,
            )
        if found is UNKNOWN and not op.repeatable:
            text = (
                f"{rules.describe(op)}; not sent again because it is not safe to repeat: check on "
                f"{rules.platform} and resolve it"
            )
            mark_uncertain(op, text)
            raise rules.error(f"{op.operation} ({key}): {text}")
    _set(op, attempts=op.attempts + 1, status=CallStatus.PENDING, **rules.reset)
    return Attempt(op, created, retry=retry)


def resolve(rules: Rules, op: CallLog, *, happened: bool) -> CallLog:
    """A person checked an ``uncertain`` (or stuck pending) call on the platform: ``happened`` marks it done,
    otherwise it is pending again with no attempt counted (sent once more by the next sync). The call's local effect
    is the platform's to apply."""
    if op.status == CallStatus.DONE:
        raise rules.error(f"key: {op.key!r} is done already")
    if happened:
        _set(
            op,
            status=CallStatus.DONE,
            done_at=timezone.now(),
            error=f"resolved by hand: it happened on {rules.platform}",
        )
    else:
        _set(op, status=CallStatus.PENDING, attempts=0, error="resolved by hand: it did not happen", **rules.reset)
    op.refresh_from_db()
    return op
