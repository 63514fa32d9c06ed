"""``argora.http.retry_after``: the one reading of a 429's ``Retry-After`` (Prolific's client and the LLM client)."""

from __future__ import annotations

import email.utils
from datetime import timedelta

import requests
from django.utils import timezone

from argora.http import retry_after
from ml import llm


def _response(value: str | None) -> requests.Response:
    r = requests.Response()
    r.status_code = 429
    if value is not None:
        r.headers["Retry-After"] = value
    return r


def test_seconds_dates_and_bounds():
    assert retry_after(_response("7"), max_seconds=30) == 7.0
    assert retry_after(_response("3600"), max_seconds=30) == 30.0  # never an hour
    assert retry_after(_response("-5"), max_seconds=30) == 0.0
    assert retry_after(_response(None), max_seconds=30) == 1.0  # absent: a second
    assert retry_after(_response("soon"), max_seconds=30) == 1.0  # unreadable: a second
    assert retry_after(_response(None), max_seconds=0.5) == 0.5
    later = email.utils.format_datetime(timezone.now() + timedelta(seconds=20), usegmt=True)
    assert 15 <= retry_after(_response(later), max_seconds=30) <= 20
    earlier = email.utils.format_datetime(timezone.now() - timedelta(seconds=20), usegmt=True)
    assert retry_after({"Retry-After": earlier}, max_seconds=30) == 0.0  # headers alone will do


def test_the_llm_client_reads_it_within_its_own_bound(settings):
    settings.ARGORA_LLM_MAX_SLEEP = 12
    assert llm.retry_after(_response("60")) == 12.0
    assert llm.retry_after(_response("3")) == 3.0
