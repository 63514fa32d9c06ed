"""The boto3 MTurk client and the idempotent, logged call wrapper.

Credentials come from the environment only (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, or AWS_PROFILE, or an
instance role): boto3's default credential chain; nothing is stored in the database. The sandbox is the
default (per project: ``MTurkProjectSettings.sandbox``).

Tests (and anything else) can swap the client factory with :func:`set_client_factory`, e.g. to a client
wrapped in ``botocore.stub.Stubber``.
"""

from __future__ import annotations

import datetime
import decimal
import hashlib
import logging
from collections.abc import Callable
from typing import Any

from annotation.crowd import calls

from .models import MTurkOperation

log = logging.getLogger("argora.mturk")

SANDBOX_ENDPOINT = "https://mturk-requester-sandbox.us-east-1.amazonaws.com"
PRODUCTION_ENDPOINT = "https://mturk-requester.us-east-1.amazonaws.com"
REGION = "us-east-1"


class MTurkError(Exception):
    """An MTurk call failed for a reason a person can read (``str(exc)``)."""


def endpoint(sandbox: bool) -> str:
    return SANDBOX_ENDPOINT if sandbox else PRODUCTION_ENDPOINT


def _default_factory(sandbox: bool):
    import boto3

    return boto3.session.Session().client("mturk", region_name=REGION, endpoint_url=endpoint(sandbox))


_factory: Callable[[bool], Any] = _default_factory
_clients: dict[bool, Any] = {}


def set_client_factory(factory: Callable[[bool], Any] | None) -> None:
    """Replace how clients are made (``None`` = boto3 from the environment); drops cached clients."""
    global _factory
    _factory = factory or _default_factory
    _clients.clear()


def get_client(sandbox: bool = True):
    """A boto3 ``mturk`` client for the sandbox or production endpoint (cached per process)."""
    sandbox = bool(sandbox)
    if sandbox not in _clients:
        _clients[sandbox] = _factory(sandbox)
    return _clients[sandbox]


def request_token(key: str) -> str:
    """MTurk's UniqueRequestToken (at most 64 characters) derived from an operation key: a retry sends the same."""
    return "argora-" + hashlib.sha256(key.encode("utf-8")).hexdigest()[:56]


def _error_text(exc: Exception) -> str:
    response = getattr(exc, "response", None)
    if isinstance(response, dict):
        err = response.get("Error", {})
        return f"{err.get('Code', type(exc).__name__)}: {err.get('Message', '')}".strip()
    return f"{type(exc).__name__}: {exc}"


def _jsonable(value):
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items() if k != "ResponseMetadata"}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, (datetime.datetime, datetime.date)):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return str(value)
    return value


def _not_found_or_jsonable(already_done: Callable[[MTurkOperation], dict | None]):
    def lookup(op: MTurkOperation) -> dict | None:
        found = already_done(op)
        return None if found is None else _jsonable(found)

    return lookup


RULES = calls.Rules(
    log=MTurkOperation,
    platform="MTurk",
    error=MTurkError,
    resolve_hint="check on MTurk, then run `manage.py mturk resolve --key {key} --happened|--not-happened`",
)


def call_once(
    key: str,
    operation: str,
    params: dict,
    *,
    sandbox: bool,
    project=None,
    already_done: Callable[[MTurkOperation], dict | None] | None = None,
    duplicate_ok: bool = False,
) -> MTurkOperation:
    """Make the MTurk call ``operation(**params)`` at most once per ``key`` (:mod:`annotation.crowd.calls`).

    1. the log row (``key`` unique) is written and committed *before* the call;
    2. a row already ``done`` returns at once (no call);
    3. a row left behind by an earlier attempt is a retry: ``already_done(row)`` may look the outcome up on MTurk
       (e.g. ListBonusPayments) and return a response, then no call is made; otherwise the call is repeated
       with the same parameters (and so the same UniqueRequestToken). ``duplicate_ok``: on a retry, an error
       that says the token was already used counts as done;
    4. after the call the row is marked ``done`` with the response (or ``failed`` with MTurk's reason, and
       :class:`MTurkError` is raised; no answer at all leaves it ``pending`` for the next run).
    """
    attempt = calls.begin(
        RULES,
        key,
        {"operation": operation, "request": _jsonable(params), "sandbox": sandbox, "project": project},
        already_done=None if already_done is None else _not_found_or_jsonable(already_done),
        finish=lambda op, response, note="": _finish(op, response, note=note),
    )
    op = attempt.op
    if attempt.done:
        if attempt.retry:
            log.info("mturk %s %s: found done on MTurk, not called again", operation, key)
        return op
    if not attempt.created and op.request:
        params = op.request  # a retry repeats the logged request exactly (same reward, same token)
    client = get_client(sandbox)
    log.info("mturk call %s key=%s attempt=%d sandbox=%s", operation, key, op.attempts, sandbox)
    try:
        response = getattr(client, operation)(**params)
    except Exception as exc:  # botocore ClientError, connection errors...
        text = _error_text(exc)
        if attempt.retry and duplicate_ok and ("uniquerequesttoken" in text.lower() or "already" in text.lower()):
            return _finish(op, {}, note=f"duplicate request token on retry: {text}")
        if getattr(exc, "response", None) is None:
            # No answer from MTurk (network): left pending so the next run retries with the same token.
            calls.mark_pending(op, text)
            raise MTurkError(f"{operation}: {text} (will be retried)") from exc
        calls.mark_failed(op, text)
        log.warning("mturk %s %s failed: %s", operation, key, text)
        raise MTurkError(f"{operation}: {text}") from exc
    return _finish(op, _jsonable(response))


def _finish(op: MTurkOperation, response: dict, *, note: str = "") -> MTurkOperation:
    return calls.mark_done(op, response, note=note)


def account_balance(sandbox: bool = True) -> dict:
    """``{"available": "10000.00", "on_hold": None}`` (read-only, not logged)."""
    try:
        answer = get_client(sandbox).get_account_balance()
    except Exception as exc:
        raise MTurkError(f"get_account_balance: {_error_text(exc)}") from exc
    return {"available": answer.get("AvailableBalance"), "on_hold": answer.get("OnHoldBalance")}
