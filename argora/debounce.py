"""Enqueue a Celery task at most once per time window, after the current transaction commits.

The one helper for "a burst of events, one job": the first call in a window takes a cache lock (``cache.add``)
that lives ``window`` seconds and enqueues the task on commit; later calls in the window do nothing. The task
itself must be idempotent (it may still run twice when the cache is cleared or the lock expires early).
"""

from __future__ import annotations

import logging

from django.core.cache import cache
from django.db import transaction

log = logging.getLogger(__name__)


def enqueue_once(
    key: str, task, *, window: int, args=(), kwargs=None, countdown: int = 0, force: bool = False, robust: bool = True
) -> bool:
    """Enqueue ``task`` with ``args`` / ``kwargs`` after commit unless ``key`` was taken in the last ``window``
    seconds; ``force`` skips the window. A cache that is down or hung (a call waits ``ARGORA_SERVICE_TIMEOUT`` / 4 at
    most, and in a request no longer than its budget allows: :mod:`argora.budget`) is logged and nothing is enqueued.
    ``robust``: a broker that is down is logged, never raised into the request that triggered the job. Returns whether
    the task was enqueued."""
    if not force:
        try:
            if not cache.add(key, 1, timeout=max(1, int(window))):
                return False
        except Exception:  # noqa: BLE001 - a cache that is down or hung never fails the request that triggered this
            log.warning(
                "cache unavailable: %s not enqueued now (a later event or beat's sweep will)", key, exc_info=True
            )
            return False
    kwargs = dict(kwargs or {})
    transaction.on_commit(lambda: task.apply_async(args=list(args), kwargs=kwargs, countdown=countdown), robust=robust)
    return True
