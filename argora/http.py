"""Small helpers for the HTTP answers of outside services (Prolific, an LLM endpoint), shared so that each client
reads them the same way."""

from __future__ import annotations

import email.utils
from collections.abc import Mapping
from typing import Any

from django.utils import timezone


def retry_after(response: Any, *, max_seconds: float, default: float = 1.0) -> float:
    """Seconds a 429 (or 503) asks to wait: ``Retry-After`` as seconds or as an HTTP date, ``default`` when it is
    absent or unreadable, never below 0 nor above ``max_seconds`` (a server cannot make a worker sleep for hours).

    ``response`` is anything with ``headers`` (a ``requests.Response``) or the headers themselves."""
    headers: Mapping[str, str] = getattr(response, "headers", response) or {}
    value = (headers.get("Retry-After") or "").strip()
    if not value:
        return min(default, max_seconds)
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return min(default, max_seconds)
        seconds = (when - timezone.now()).total_seconds()
    return min(max(seconds, 0.0), float(max_seconds))
