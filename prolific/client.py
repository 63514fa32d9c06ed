"""A small client for Prolific's REST API and the idempotent, logged call wrapper.

The token comes from the environment only (``PROLIFIC_API_TOKEN``), sent as ``Authorization: Token <token>``; the base
URL is ``ARGORA_PROLIFIC_API_URL`` (tests point it at a local fake server). Errors are one type,
:class:`ProlificError`, with Prolific's HTTP status and message:

- 401: a clear "check PROLIFIC_API_TOKEN" error;
- 429: the call is retried after ``Retry-After`` (seconds or an HTTP date), at most :data:`MAX_RETRIES` times and
  never sleeping longer than :data:`MAX_SLEEP` seconds per wait (the sleep function is injectable:
  :func:`set_sleep`); a 429 means Prolific did nothing, so a retry is always safe;
- 5xx and network errors: retried with a bounded back-off only when the call is safe to repeat; otherwise, and when
  the retries run out, the caller gets the error and :func:`call_once` leaves the operation pending (or, for a call
  that must not be repeated blindly, ``uncertain``) with local state untouched.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urljoin

import requests
from django.conf import settings

from annotation.crowd import calls
from argora import http

from .models import ProlificOperation

log = logging.getLogger("argora.prolific")

MAX_RETRIES = 3  # extra attempts after a 429 / 5xx / network error
MAX_SLEEP = 30.0  # seconds, per wait
BACKOFF = (1.0, 2.0, 4.0)
TIMEOUT = (5.0, 30.0)  # connect, read


class ProlificError(Exception):
    """A Prolific call failed for a reason a person can read (``str(exc)``); ``status`` is Prolific's HTTP status
    (0: no answer)."""

    def __init__(self, message: str, *, status: int = 0):
        super().__init__(message)
        self.status = status

    @property
    def refused(self) -> bool:
        """Prolific answered and did nothing (4xx, a 429 included): sending the call again is safe."""
        return 400 <= self.status < 500


@dataclass
class Answer:
    status: int
    data: Any
    headers: Any = field(default_factory=dict)


_sleep: Callable[[float], None] = time.sleep


def set_sleep(fn: Callable[[float], None] | None) -> None:
    """Replace how the client waits between retries (``None``: ``time.sleep``); tests record instead of waiting."""
    global _sleep
    _sleep = fn or time.sleep


def base_url() -> str:
    return settings.ARGORA_PROLIFIC_API_URL.rstrip("/") + "/"


def require_token() -> str:
    token = (settings.PROLIFIC_API_TOKEN or "").strip()
    if not token:
        raise ProlificError(
            "PROLIFIC_API_TOKEN: not set; create an API token in Prolific (Settings -> API token) and "
            "put it in the environment"
        )
    return token


def _message(response: requests.Response) -> str:
    """Prolific's error text: ``{"error": {"title", "detail"}}``, ``{"detail": ...}`` or field errors."""
    try:
        body = response.json()
    except ValueError:
        return (response.text or response.reason or "").strip()[:500]
    if isinstance(body, dict):
        err = body.get("error")
        if isinstance(err, dict):
            detail = err.get("detail")
            if isinstance(detail, (dict, list)):
                detail = json.dumps(detail)
            return " - ".join(str(p) for p in (err.get("title"), detail) if p)[:500]
        for name in ("detail", "message"):
            if body.get(name):
                return str(body[name])[:500]
        return "; ".join(f"{k}: {v}" for k, v in body.items())[:500]
    return str(body)[:500]


def request(
    method: str,
    path: str,
    *,
    body: Any = None,
    params: dict | None = None,
    repeatable: bool = True,
    retries: int = MAX_RETRIES,
) -> Answer:
    """One API call (with at most ``retries`` retries). ``path`` is relative to the API root, e.g. ``studies/``.
    ``repeatable=False``: an answer that leaves the outcome unknown (5xx, network) is not retried."""
    token = require_token()
    url = urljoin(base_url(), path.lstrip("/"))
    headers = {"Authorization": f"Token {token}", "Accept": "application/json", "User-Agent": "argora"}
    retries = max(0, min(int(retries), MAX_RETRIES))
    for attempt in range(retries + 1):
        last = attempt == retries
        try:
            response = requests.request(method, url, json=body, params=params, headers=headers, timeout=TIMEOUT)
        except requests.RequestException as exc:
            if repeatable and not last:
                _sleep(BACKOFF[min(attempt, len(BACKOFF) - 1)])
                continue
            raise ProlificError(f"{method} {path}: no answer from Prolific ({type(exc).__name__}: {exc})") from exc
        status = response.status_code
        if status == 429 and not last:
            wait = http.retry_after(response, max_seconds=MAX_SLEEP)
            log.info("prolific %s %s: 429, retrying in %.1f s", method, path, wait)
            _sleep(wait)
            continue
        if status >= 500 and repeatable and not last:
            _sleep(BACKOFF[min(attempt, len(BACKOFF) - 1)])
            continue
        if status == 401:
            raise ProlificError(
                f"{method} {path}: Prolific refused the API token (401 {_message(response)}): check PROLIFIC_API_TOKEN",
                status=401,
            )
        if status == 429:
            raise ProlificError(
                f"{method} {path}: Prolific is rate-limiting (429) after {retries} retries; try "
                f"again later (a sync resumes its calls)",
                status=429,
            )
        if status >= 400:
            raise ProlificError(f"{method} {path}: {status} {_message(response)}", status=status)
        try:
            data = response.json() if response.content else None
        except ValueError:
            data = response.text
        return Answer(status, data, response.headers)  # case-insensitive (HTTP/2 sends lower-case names)
    raise AssertionError("unreachable")  # pragma: no cover


def get(path: str, params: dict | None = None) -> Any:
    return request("GET", path, params=params).data


# --- the logged call ------------------------------------------------------------------------------
UNKNOWN = calls.UNKNOWN  # what an ``already_done`` lookup returns when it cannot tell


def _interrupted(op: ProlificOperation) -> bool:
    """Left pending with no answer, or a 5xx: it may have happened (a 4xx refusal did not)."""
    return op.status == ProlificOperation.Status.PENDING and (op.http_status == 0 or op.http_status >= 500)


RULES = calls.Rules(
    log=ProlificOperation,
    platform="Prolific",
    error=ProlificError,
    interrupted=_interrupted,
    describe=lambda op: f"interrupted (last answer: {op.http_status or 'none'})",
    reset={"http_status": 0},
    resolve_hint="check on Prolific, then run `manage.py prolific resolve --key {key} --happened|--not-happened`",
)


def call_once(
    key: str,
    operation: str,
    method: str,
    path: str,
    body: Any = None,
    *,
    project=None,
    repeatable: bool = True,
    already_done: Callable[[ProlificOperation], Any] | None = None,
    context: dict | None = None,
    redact: tuple[str, ...] = (),
) -> ProlificOperation:
    """Make the Prolific call ``method path body`` at most once per ``key`` (:mod:`annotation.crowd.calls`).

    1. the log row (``key`` unique) is written and committed *before* the call;
    2. a row already ``done`` returns at once (no call); an ``uncertain`` one raises (a person resolves it);
    3. a row left pending by an interrupted attempt (a crash, a network error, a 5xx) is a retry: the logged request
       is sent again exactly; first ``already_done(row)`` may look the outcome up on Prolific: a response (done, no
       call), ``None`` (not done: call) or :data:`UNKNOWN`; a call that is not ``repeatable`` whose outcome cannot
       be looked up is not sent again: the row becomes ``uncertain``;
    4. after the call the row is ``done`` with the response; a refusal (4xx but 401 / 403 / 429) marks it
       ``failed``; anything else leaves it ``pending`` for the next sync. Errors raise :class:`ProlificError`.
    """
    require_token()  # nothing is logged when no call can be made
    attempt = calls.begin(
        RULES,
        key,
        {
            "operation": operation,
            "method": method,
            "path": path,
            "request": {"body": body},
            "project": project,
            "repeatable": repeatable,
            "context": context or {},
        },
        already_done=already_done,
        finish=lambda op, response, note="": _finish(op, response, note=note, redact=redact),
    )
    op = attempt.op
    if attempt.done:
        if attempt.retry:
            log.info("prolific %s %s: found done on Prolific, not called again", operation, key)
        return op
    if not attempt.created:  # a retry repeats the logged request exactly
        method, path, body = op.method, op.path, op.request.get("body")
    log.info("prolific call %s %s %s key=%s attempt=%d", operation, method, path, key, op.attempts)
    try:
        answer = request(method, path, body=body if method != "GET" else None, repeatable=op.repeatable)
    except ProlificError as exc:
        status = exc.status
        if exc.refused and status not in (401, 403, 429):
            calls.mark_failed(op, str(exc), http_status=status)
        else:
            calls.mark_pending(op, str(exc), http_status=status)
        log.warning("prolific %s %s failed: %s", operation, key, exc)
        raise
    data = answer.data if isinstance(answer.data, (dict, list)) else {"text": answer.data or ""}
    if isinstance(data, dict) and answer.headers.get("X-Hook-Secret"):
        data = dict(data, _x_hook_secret=answer.headers.get("X-Hook-Secret"))
    return _finish(op, data, redact=redact, http_status=answer.status)


def _scrub(value, redact: tuple[str, ...]):
    if isinstance(value, dict):
        return {k: ("<redacted>" if k in redact else _scrub(v, redact)) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrub(v, redact) for v in value]
    return value


def _finish(
    op: ProlificOperation, response, *, note: str = "", redact: tuple[str, ...] = (), http_status: int | None = None
) -> ProlificOperation:
    """Mark the row done, in one statement: a crash before it leaves the row pending with no answer recorded (an
    interrupted call, looked up or resolved by a person when it is not safe to repeat). The caller sees the whole
    answer once (e.g. a new webhook secret), the log keeps it with ``redact`` keys scrubbed."""
    extra = {} if http_status is None else {"http_status": http_status}
    return calls.mark_done(op, response, note=note, logged=_scrub(response, redact) if redact else None, **extra)


def mark(op: ProlificOperation, *, happened: bool) -> ProlificOperation:
    """A person checked an ``uncertain`` (or stuck pending) call on Prolific: ``happened`` marks it done, otherwise it
    is pending again (sent once more by the next sync). :func:`prolific.sync.resolve_operation` calls this and applies
    the call's local effect."""
    return calls.resolve(RULES, op, happened=happened)
