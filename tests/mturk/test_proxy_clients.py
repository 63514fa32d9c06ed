"""Behind the TLS proxy every accept arrives from the proxy's address: the per-address cap on unconfirmed MTurk
accepts counts the forwarded client (argora.clientaddr), so a crowd is not locked out by one shared address."""

from __future__ import annotations

import pytest
from django.test import Client
from django.utils import timezone

from mturk.models import MTurkHIT

from .conftest import make_project

pytestmark = pytest.mark.django_db
TURK = "https://workersandbox.mturk.com"
PROXY = "10.0.0.5"


@pytest.fixture
def crowd_project(settings):
    settings.ARGORA_UNCONFIRMED_PER_ADDRESS = 6
    settings.ARGORA_TRUSTED_PROXIES = [PROXY]
    project = make_project(hits=7, r=3)
    for n, hit in enumerate(project.hits.order_by("position")):
        MTurkHIT.objects.create(
            project=project,
            hit=hit,
            mturk_hit_id=f"3HIT{n}",
            reward_cents=26,
            max_assignments=3,
            created_at=timezone.now(),
        )
    return project


def accept(project, n: int, forwarded: str) -> int:
    c = Client(REMOTE_ADDR=PROXY, HTTP_X_FORWARDED_FOR=forwarded)
    return c.get(
        f"/mturk/external/{project.slug}/",
        {"assignmentId": f"ASSIGN{n}", "hitId": f"3HIT{n}", "workerId": f"AWORKER{n}", "turkSubmitTo": TURK},
    ).status_code


def test_seven_clients_through_one_proxy_are_not_locked_out(crowd_project):
    assert [accept(crowd_project, n, f"198.51.100.{n + 1}") for n in range(7)] == [200] * 7


def test_seven_accepts_of_one_client_are_capped_whatever_it_forwards(crowd_project):
    # the client writes a new left-most address every time; the proxy appends the one it saw
    codes = [accept(crowd_project, n, f"192.0.2.{n + 1}, 198.51.100.77") for n in range(7)]
    assert codes == [200] * 6 + [429]
