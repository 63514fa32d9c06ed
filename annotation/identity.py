"""Who an invite-link worker is, across visits, without a password.

An invite link makes a new worker: a Django user without a usable password, logged in for this browser. Two things
keep that identity when the session ends ("Log out", a cleared session, another browser):

- a signed, HttpOnly cookie (:data:`COOKIE`, a year) that names the user: the invite link opened again in the same
  browser logs that user in instead of minting a second worker (who would get the same items again and another
  completion code);
- a recovery code shown with the completion code (:func:`recovery_code`): typed into ``/work/recover/`` in any
  browser, it logs that browser in as the worker. It is an HMAC of the worker id and a per-worker salt (nothing
  secret is stored; a new salt revokes it) and attempts are limited per client address.

Only passwordless, non-staff users are ever logged in this way: an account with a password (staff, a local
annotator) logs in with it.

A recruitment platform's entry page (Prolific's study link) logs a browser in the same way as a worker it made itself
(a provisional worker: :func:`user_for_worker`); once the platform confirmed who that was, :func:`adopt_worker` makes
the browser's user the confirmed worker, so the same browser stays the same worker.
"""

from __future__ import annotations

import base64
import re
import secrets
from datetime import timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.signing import BadSignature
from django.db import transaction
from django.utils.crypto import constant_time_compare, salted_hmac

from argora import counters
from argora.oidc import signs_in_with_provider

from .auth import remember_worker
from .models import Worker
from .services import worker_for_user

COOKIE = "argora_worker"
COOKIE_SALT = "argora.annotation.worker-cookie"
COOKIE_AGE = timedelta(days=365)
RECOVERY_SALT = "argora.annotation.recovery-code"
RECOVERY_ATTEMPTS = 20  # per client address and hour
RECOVERY_KEY = "argora:recovery-attempts:{}"
_CODE = re.compile(r"^W(\d{1,12})-?([A-Z2-7]{4})-?([A-Z2-7]{4})-?([A-Z2-7]{4})$")


class TooManyAttempts(Exception):
    """Too many recovery codes tried from one address in the last hour."""


def _signable(user) -> bool:
    # an account that signs in with the institution's provider (argora.oidc) is passwordless too, but no worker
    return bool(
        user is not None
        and user.is_active
        and not user.is_staff
        and not user.is_superuser
        and not user.has_usable_password()
        and not signs_in_with_provider(user)
    )


def _new_passwordless_user():
    user_model = get_user_model()
    while True:
        username = f"worker-{secrets.token_hex(5)}"
        if not user_model.objects.filter(username=username).exists():
            break
    return user_model.objects.create_user(username=username, password=None)


@transaction.atomic
def new_invite_worker(*, pid: str = "") -> tuple:
    """A new passwordless user and its worker (source ``invite``, or ``prolific`` with a PID). A Prolific PID in an
    invite link is recorded as ``link_id`` only: never used to log in, never taken as the platform's id (anyone can
    type someone else's PID; a Prolific study's own link, :mod:`prolific.entry`, makes a claim a sync confirms)."""
    user = _new_passwordless_user()
    worker = worker_for_user(user, source=Worker.Source.PROLIFIC if pid else Worker.Source.INVITE)
    if pid:  # recorded for the researcher, never as the platform's id (no platform confirmed it)
        Worker.objects.filter(pk=worker.pk).update(link_id=pid)
    return user, worker


@transaction.atomic
def user_for_worker(worker: Worker):
    """The passwordless user that logs a browser in as ``worker`` (a platform's worker without an account, e.g. a
    provisional Prolific worker): the worker's own user when it has a passwordless one, else a new one bound to it.
    ``None`` for a worker whose user logs in with a password (that account logs in itself)."""
    locked = Worker.objects.select_for_update(of=("self",)).select_related("user").get(pk=worker.pk)
    if locked.user_id is not None:
        return locked.user if _signable(locked.user) else None
    user = _new_passwordless_user()
    Worker.objects.filter(pk=locked.pk).update(user=user)
    worker.user = user
    remember_worker(user, worker)
    return user


def worker_of(user) -> Worker | None:
    """The worker a user is, if any (without creating one)."""
    if user is None or not getattr(user, "is_authenticated", False):
        return None
    return Worker.objects.filter(user=user).first()


@transaction.atomic
def adopt_worker(user, worker: Worker) -> bool:
    """After a platform confirmed the worker a browser's provisional worker claimed to be (their assignments moved
    there, the provisional worker is gone): the browser's passwordless user becomes that worker, so the same browser
    stays the same worker. Only a passwordless user without a worker of its own, and only a worker without a user;
    ``False`` when nothing changed."""
    if not _signable(user) or Worker.objects.filter(user=user).exists():
        return False
    if not Worker.objects.filter(pk=worker.pk, user__isnull=True).update(user=user):
        return False
    worker.user = user
    remember_worker(user, worker)
    return True


def remembered_user(request):
    """The passwordless user this browser's cookie names, or ``None``."""
    try:
        pk = request.get_signed_cookie(COOKIE, salt=COOKIE_SALT, max_age=COOKIE_AGE)
    except (KeyError, BadSignature):
        return None
    user = get_user_model().objects.filter(pk=pk).first() if str(pk).isdigit() else None
    return user if _signable(user) else None


def remember(response, user) -> None:
    """Put the (passwordless) user in this browser's cookie; other users are not remembered."""
    if _signable(user):
        response.set_signed_cookie(
            COOKIE,
            str(user.pk),
            salt=COOKIE_SALT,
            max_age=int(COOKIE_AGE.total_seconds()),
            httponly=True,
            samesite="Lax",
            secure=settings.SESSION_COOKIE_SECURE,
        )


def _digest(worker_pk: int, salt: str) -> str:
    raw = salted_hmac(RECOVERY_SALT, f"{worker_pk}:{salt}", algorithm="sha256").digest()
    return base64.b32encode(raw).decode("ascii")[:12]


def recovery_code(worker: Worker) -> str:
    """The worker's recovery code (``W<id>-XXXX-XXXX-XXXX``), stable until revoked; ``""`` for a worker who logs in
    with a password or comes from a platform (MTurk) rather than an invite link."""
    user = worker.user
    if not _signable(user):
        return ""
    if not worker.recovery_salt:
        salt = secrets.token_hex(8)
        Worker.objects.filter(pk=worker.pk, recovery_salt="").update(recovery_salt=salt)
        worker.refresh_from_db(fields=["recovery_salt"])
    d = _digest(worker.pk, worker.recovery_salt)
    return f"W{worker.pk}-{d[:4]}-{d[4:8]}-{d[8:12]}"


def revoke_recovery_code(worker: Worker) -> None:
    """The old code stops working (a new one is made when next shown)."""
    Worker.objects.filter(pk=worker.pk).update(recovery_salt="")
    worker.recovery_salt = ""


def user_for_recovery_code(code: str, *, address: str = ""):
    """The user whose worker has this recovery code, or ``None``; raises :class:`TooManyAttempts` after
    :data:`RECOVERY_ATTEMPTS` tries from ``address`` within an hour."""
    key = RECOVERY_KEY.format(address or "unknown")
    try:
        attempts = counters.bump(key, window=3600)
    except counters.CounterUnavailable:
        raise TooManyAttempts("recovery codes cannot be checked for a moment; please try again in a minute") from None
    if attempts > RECOVERY_ATTEMPTS:
        raise TooManyAttempts("too many recovery codes tried from your address; please wait an hour")
    match = _CODE.match(re.sub(r"\s+", "", str(code or "")).upper())
    if not match:
        return None
    worker = Worker.objects.select_related("user").filter(pk=int(match.group(1))).exclude(recovery_salt="").first()
    if worker is None or not constant_time_compare(
        "".join(match.groups()[1:]), _digest(worker.pk, worker.recovery_salt)
    ):
        return None
    return worker.user if _signable(worker.user) else None
