"""Keyset (cursor) pagination of ``/api/sentences/`` (issue 25, :mod:`argora.pagination`): a cursor page and the last
page run no OFFSET and no COUNT(*); walking the next links yields every row once, in id order, and so does walking
back from the last page; filters hold across pages; a forged cursor is HTTP 400 naming ``cursor``."""

from __future__ import annotations

from urllib.parse import parse_qs, urlparse

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from corpus import hashing
from corpus.models import Sentence, Topic

pytestmark = pytest.mark.django_db

N = 130  # 3 pages of 50 (the last one short)


@pytest.fixture
def api(django_user_model):
    client = APIClient()
    client.force_authenticate(django_user_model.objects.create_user("reader", "r@example.org", "pw-reader-123"))
    return client


@pytest.fixture
def sentence_ids(settings):
    assert settings.REST_FRAMEWORK["PAGE_SIZE"] == 50
    topics = [Topic.objects.create(name="Nuclear energy"), Topic.objects.create(name="Gun control")]
    Sentence.objects.bulk_create(
        Sentence(
            topic=topics[i % 2],
            text=f"sentence {i}",
            stance=["pro", "con"][i % 2],
            content_hash=hashing.sentence_hash(topics[i % 2].name, f"sentence {i}"),
        )
        for i in range(N)
    )
    return list(Sentence.objects.order_by("id").values_list("id", flat=True))


def _get(api, url, params=None):
    with CaptureQueriesContext(connection) as ctx:
        r = api.get(url, params or {})
    assert r.status_code == 200, r.content
    return r.json(), [q["sql"].upper() for q in ctx.captured_queries]


def _ids(body):
    return [row["id"] for row in body["results"]]


def test_walking_the_next_links_yields_every_row_once_and_cursor_pages_run_no_offset_or_count(api, sentence_ids):
    body, sql = _get(api, "/api/sentences/")
    assert body["count"] == N and body["previous"] is None
    assert "cursor=" in body["next"] and "page=" not in body["next"]
    seen = _ids(body)
    pages = 1
    while body["next"]:
        body, sql = _get(api, body["next"])
        pages += 1
        assert body["count"] is None
        assert not [q for q in sql if " OFFSET " in q or "COUNT(" in q], sql
        seen += _ids(body)
    assert seen == sentence_ids and pages == 3
    # and back again from the last page by the previous links
    body, sql = _get(api, "/api/sentences/", {"page": "last"})
    assert not [q for q in sql if " OFFSET " in q or "COUNT(" in q], sql
    assert _ids(body) == sentence_ids[-50:] and body["next"] is None  # the last 50 rows (no count to align)
    back = _ids(body)
    while body["previous"]:
        body, sql = _get(api, body["previous"])
        assert not [q for q in sql if " OFFSET " in q or "COUNT(" in q], sql
        assert body["next"] is not None
        back = _ids(body) + back
    assert back == sentence_ids


def test_a_previous_link_is_the_page_before_and_filters_carry_over(api, sentence_ids, django_user_model):
    first, _ = _get(api, "/api/sentences/")
    second, _ = _get(api, first["next"])
    again, _ = _get(api, second["previous"])
    assert _ids(again) == _ids(first) == sentence_ids[:50] and again["previous"] is None
    staff = APIClient()
    staff.force_authenticate(
        django_user_model.objects.create_user("boss", "b@example.org", "pw-boss-1234", is_staff=True)
    )
    pro = list(Sentence.objects.filter(stance="pro").order_by("id").values_list("id", flat=True))
    body, _ = _get(staff, "/api/sentences/", {"stance": "pro"})
    seen = _ids(body)
    while body["next"]:
        assert "stance=pro" in body["next"]
        body, _ = _get(staff, body["next"])
        seen += _ids(body)
    assert seen == pro


def test_numbered_pages_still_answer_with_their_count(api, sentence_ids):
    body, _ = _get(api, "/api/sentences/", {"page": 2})
    assert _ids(body) == sentence_ids[50:100] and body["count"] == N
    nxt = parse_qs(urlparse(body["next"]).query)
    assert "cursor" in nxt and "page" not in nxt
    after, _ = _get(api, body["next"])
    assert _ids(after) == sentence_ids[100:]
    assert api.get("/api/sentences/", {"page": 9}).status_code == 404


@pytest.mark.parametrize("cursor", ["nonsense", "eDo1", "YTp4"])  # undecodable, "x:5", "a:x"
def test_a_forged_cursor_is_400_naming_it(api, sentence_ids, cursor):
    r = api.get("/api/sentences/", {"cursor": cursor})
    assert r.status_code == 400 and "cursor" in r.json()
