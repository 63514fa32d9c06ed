"""The one per-key counter of the rate limits (claims per client address, recovery codes per address): a number in
the cache that lives ``window`` seconds from its first count.

A cache that is down or hung (its calls end within the request's budget: :mod:`argora.budget`) cannot count: the
limit then holds closed -- :class:`CounterUnavailable`, which each caller answers as "try again in a moment" (a
429/503, never a 500) rather than letting anyone past an uncounted limit.
"""

from __future__ import annotations

import logging

from django.core.cache import cache

log = logging.getLogger(__name__)


class CounterUnavailable(Exception):
    """The cache did not answer: nothing could be counted."""


def bump(key: str, *, window: int) -> int:
    """Count one more under ``key`` and return the count (1 for the first in the window)."""
    try:
        cache.add(key, 0, timeout=max(1, int(window)))
        try:
            return cache.incr(key)
        except ValueError:  # expired between add and incr
            cache.set(key, 1, timeout=max(1, int(window)))
            return 1
    except Exception as exc:  # noqa: BLE001 - a cache that is down or hung: the limit holds closed
        log.warning("cache unavailable: rate-limit counter %s not counted", key, exc_info=True)
        raise CounterUnavailable(str(exc)) from exc
