"""A real celery worker subprocess: ping round trip, a long import with observable progress, gpu routing."""
from __future__ import annotations

import pytest

from tests.worker_utils import celery_worker_proc  # noqa: F401 - fixture

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


def test_ping_round_trip_through_broker_and_worker(celery_worker_proc):
    from argora.tasks import ping

    result = ping.delay()
    answer = result.get(timeout=60)
    assert answer["pong"] is True
    assert answer["worker"] == celery_worker_proc.hostname
    assert answer["queue"] == "default"
    assert result.state == "SUCCESS"
