"""Prolific's webhooks: verifying a delivery, acting on it, and subscribing to them.

Verifying (Prolific's "Verifying" page): each delivery carries ``X-Prolific-Request-Signature`` and
``X-Prolific-Request-Timestamp``; the signature is ``base64(HMAC-SHA256(secret, timestamp + body))`` with the
workspace's hook secret (``ARGORA_PROLIFIC_WEBHOOK_SECRET``). A delivery without a valid signature, or whose timestamp
is more than ``ARGORA_PROLIFIC_WEBHOOK_MAX_AGE`` seconds away from now (a replay), is refused and changes nothing.
Prolific's own example signs the JSON as Python's ``json.dumps`` writes it; the raw body and that form are both
accepted (both need the secret). A delivery is handled once: once per ``X-Event-ID`` (Prolific retries) and once
per signed timestamp + body (:func:`delivery_key`), so a captured delivery replayed within the maximum age under a
fresh ``X-Event-ID`` does nothing (200). Every field it stores is checked first (400 naming the field, nothing
written): text, no longer than its column.

Acting: ``submission.status.change`` updates the submission row; RETURNED or TIMED-OUT gives the participant's
places back at once (:func:`prolific.sync.release`); ``study.status.change`` updates the study's status.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time

from django.conf import settings
from django.db import IntegrityError, transaction
from django.urls import reverse

from argora.errors import FieldError
from argora.inputs import parse_json

from .client import call_once
from .models import ProlificOperation, ProlificSession, ProlificStudy, ProlificSubmission, ProlificWebhookEvent
from .sync import release

SIGNATURE = "X-Prolific-Request-Signature"
TIMESTAMP = "X-Prolific-Request-Timestamp"
EVENT_ID = "X-Event-ID"
EVENTS = ("submission.status.change", "study.status.change")


class WebhookRefused(Exception):
    """Not a delivery from Prolific (403): ``str(exc)`` says why."""

    status = 403


def sign(secret: str, timestamp: str, body: bytes) -> str:
    return base64.b64encode(hmac.new(secret.encode(), timestamp.encode() + body, hashlib.sha256).digest()).decode()


def verify(body: bytes, headers, *, secret: str | None = None, now: float | None = None) -> str:
    """Raise :class:`WebhookRefused` unless ``body`` was signed by Prolific with the hook secret, recently; returns
    the signed timestamp (as sent)."""
    secret = settings.ARGORA_PROLIFIC_WEBHOOK_SECRET if secret is None else secret
    if not secret:
        raise WebhookRefused("webhooks are not configured (ARGORA_PROLIFIC_WEBHOOK_SECRET is empty)")
    signature = (headers.get(SIGNATURE) or "").strip()
    stamp = (headers.get(TIMESTAMP) or "").strip()
    if not signature or not stamp:
        raise WebhookRefused(f"{SIGNATURE} and {TIMESTAMP} are required")
    try:
        sent = float(stamp)
    except ValueError:
        raise WebhookRefused(f"{TIMESTAMP} is not a UNIX timestamp") from None
    if sent > 1e11:  # milliseconds (the docs say a UNIX timestamp; seconds are what we have seen documented)
        sent /= 1000
    now = time.time() if now is None else now
    if abs(now - sent) > int(settings.ARGORA_PROLIFIC_WEBHOOK_MAX_AGE):
        raise WebhookRefused(f"{TIMESTAMP} is too old or in the future (a replayed delivery?)")
    forms = [body]
    try:
        forms.append(json.dumps(json.loads(body.decode("utf-8"))).encode())
    except (UnicodeDecodeError, ValueError):
        pass
    if not any(hmac.compare_digest(sign(secret, stamp, form).encode(), signature.encode()) for form in forms):
        raise WebhookRefused("the signature does not match")
    return stamp


def delivery_key(stamp: str, payload: dict) -> str:
    """What a delivery says, signed: SHA-256 of its timestamp and its JSON written one way (keys sorted, no spaces),
    so the raw body and the re-spaced form that also verifies are one delivery, whatever X-Event-ID comes with it."""
    canonical = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(f"{stamp}\n{canonical}".encode()).hexdigest()


def _text(payload: dict, name: str, longest: int) -> str:
    """``payload[name]`` as text (absent or null: empty); a FieldError (400) when it is not a string or longer than
    the column it is stored in or compared with."""
    value = payload.get(name)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise FieldError(name, "expected a string")
    if len(value) > longest:
        raise FieldError(name, f"at most {longest} characters")
    return value


def _longest(model, name: str) -> int:
    return model._meta.get_field(name).max_length


def read_event(payload: dict) -> dict:
    """The fields of a delivery the webhook uses, checked against the columns that keep them (400 naming the field):
    ``event_type``, ``resource_id`` (a submission or study id), ``status`` (upper case; required with
    ``resource_id`` for the two events acted on) and ``participant_id``."""
    event_type = _text(payload, "event_type", _longest(ProlificWebhookEvent, "event_type"))
    status_column = ProlificStudy if event_type == "study.status.change" else ProlificSubmission
    event = {
        "event_type": event_type,
        "resource_id": _text(
            payload,
            "resource_id",
            min(
                _longest(ProlificSubmission, "submission_id"),
                _longest(ProlificStudy, "study_id"),
                _longest(ProlificWebhookEvent, "resource_id"),
            ),
        ),
        "status": _text(payload, "status", _longest(status_column, "status")).upper(),
        "participant_id": _text(payload, "participant_id", _longest(ProlificSession, "participant_id")),
    }
    if event_type in EVENTS:
        for name in ("resource_id", "status"):
            if not event[name]:
                raise FieldError(name, "missing")
    return event


def receive(body: bytes, headers) -> str:
    """Verify, parse and act on one delivery, once (per ``X-Event-ID`` and per :func:`delivery_key`: a replay of a
    signed delivery under a fresh id does nothing); returns what was done. Raises :class:`WebhookRefused` (403) or
    :class:`argora.errors.FieldError` (400, nothing written)."""
    stamp = verify(body, headers)
    payload = parse_json(body or b"{}")
    if not isinstance(payload, dict):
        raise FieldError("body", "expected a JSON object")
    event_id = (headers.get(EVENT_ID) or "").strip()
    longest = _longest(ProlificWebhookEvent, "event_id")
    if len(event_id) > longest:
        raise FieldError(EVENT_ID, f"at most {longest} characters")
    event = read_event(payload)
    key = delivery_key(stamp, payload)
    with transaction.atomic():
        if event_id and ProlificWebhookEvent.objects.filter(event_id=event_id).exists():
            return f"event {event_id} was handled already"
        try:
            with transaction.atomic():  # the row first: a twin delivery waits on it here, then finds it
                row = ProlificWebhookEvent.objects.create(
                    event_id=event_id or None,
                    delivery=key,
                    event_type=event["event_type"],
                    resource_id=event["resource_id"],
                    payload=payload,
                )
        except IntegrityError:
            return "this delivery was handled already (a replay, or the same event under another X-Event-ID)"
        outcome = handle(event)
        ProlificWebhookEvent.objects.filter(pk=row.pk).update(outcome=outcome[:300])
    return outcome


def handle(event: dict) -> str:
    """Act on a delivery's fields (:func:`read_event`)."""
    event_type, resource_id, status = event["event_type"], event["resource_id"], event["status"]
    if event_type == "study.status.change":
        n = ProlificStudy.objects.filter(study_id=resource_id).update(status=status)
        return f"study {resource_id}: {status} ({n} project(s))"
    if event_type != "submission.status.change":
        return f"{event_type or 'event'}: not used"
    pid = event["participant_id"]
    rec = ProlificSubmission.objects.filter(submission_id=resource_id).first()
    if rec is None:
        session = ProlificSession.objects.filter(session_id=resource_id)
        session = (session.filter(participant_id=pid) if pid else session).order_by("started_at", "pk").first()
        if session is None:
            return f"submission {resource_id}: no Argora session has it; nothing to do"
        rec = ProlificSubmission.objects.create(
            project_id=session.project_id,
            submission_id=resource_id,
            participant_id=session.participant_id,
            study_id=session.study_id,
            status=status,
            session=session,
        )
    else:
        ProlificSubmission.objects.filter(pk=rec.pk).update(status=status)
        rec.status = status
    if status in ProlificSubmission.RELEASING and rec.released_at is None:
        return f"submission {resource_id}: {status}, {release(rec)} place(s) given back"
    return f"submission {resource_id}: {status}"


# --- subscribing ------------------------------------------------------------------------------------
def webhook_url() -> str:
    return settings.ARGORA_PUBLIC_URL.rstrip("/") + reverse("prolific:webhook")


def register(
    *,
    workspace_id: str = "",
    target_url: str = "",
    new_secret: bool = False,
    events: tuple[str, ...] = ("submission.status.change",),
) -> dict:
    """Subscribe this site's webhook endpoint to ``events`` in a Prolific workspace (create the secret first when
    none is configured or ``new_secret``; confirm each subscription with its ``X-Hook-Secret``). Logged and
    idempotent. Returns ``{"secret": new secret or None, "subscriptions": [ids], "target_url"}``: a new secret is
    shown once (the call log keeps it redacted) and must go into ``ARGORA_PROLIFIC_WEBHOOK_SECRET``."""
    workspace_id = (workspace_id or settings.ARGORA_PROLIFIC_WORKSPACE_ID or "").strip()
    if not workspace_id:
        raise FieldError("workspace", "give the Prolific workspace id (--workspace or ARGORA_PROLIFIC_WORKSPACE_ID)")
    target = (target_url or webhook_url()).strip()
    if not target.startswith("https://"):
        raise FieldError(
            "target_url", f"{target!r} is not HTTPS; Prolific only calls public https:// URLs (set ARGORA_PUBLIC_URL)"
        )
    unknown = set(events) - set(EVENTS)
    if unknown:
        raise FieldError("event", f"{sorted(unknown)[0]!r}: choose from {', '.join(EVENTS)}")
    out = {"secret": None, "subscriptions": [], "target_url": target}
    if new_secret or not settings.ARGORA_PROLIFIC_WEBHOOK_SECRET:
        seq = ProlificOperation.objects.filter(
            key__startswith=f"hook-secret:{workspace_id}:", status=ProlificOperation.Status.DONE
        ).count()
        op = call_once(
            f"hook-secret:{workspace_id}:{seq}",
            "hook_secret",
            "POST",
            "hooks/secrets/",
            {"workspace_id": workspace_id},
            redact=("value",),
        )
        out["secret"] = op.response.get("value") if isinstance(op.response, dict) else None
    digest = hashlib.sha256(target.encode()).hexdigest()[:16]
    for event in events:
        op = call_once(
            f"hook-subscribe:{workspace_id}:{event}:{digest}",
            "hook_subscribe",
            "POST",
            "hooks/subscriptions/",
            {"workspace_id": workspace_id, "event_type": event, "target_url": target},
        )
        data = op.response if isinstance(op.response, dict) else {}
        sub = data if data.get("id") else (data.get("results") or [{}])[0]
        sub_id, hook_secret = sub.get("id"), data.get("_x_hook_secret") or sub.get("secret")
        if not sub_id or not hook_secret:
            raise FieldError("subscription", f"Prolific's answer has no subscription id or X-Hook-Secret: {data}")
        call_once(
            f"hook-confirm:{sub_id}", "hook_confirm", "POST", f"hooks/subscriptions/{sub_id}/", {"secret": hook_secret}
        )
        out["subscriptions"].append(sub_id)
    return out
