"""Sharded silver runs on two real ``celery worker`` processes (issue 21.3), PostgreSQL + Redis: both take shards of
one run, one is SIGKILLed mid-shard, Redis redelivers its unacknowledged shard message (visibility timeout from
``ARGORA_BROKER_VISIBILITY_TIMEOUT``, a few seconds here), the shard resumes after its checkpoint on the other
worker, and the run finishes with exactly one silver label per selected sentence."""

from __future__ import annotations

import os
import signal
import time

import pytest

from corpus.models import Sentence, Topic
from ml import silver
from ml.models import SilverLabel, SilverRun, SilverShard

pytestmark = [pytest.mark.worker, pytest.mark.postgres, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

WORKER_ENV = {
    "ARGORA_BROKER_VISIBILITY_TIMEOUT": "3",  # a killed worker's shard comes back after 3 s ...
    "ARGORA_BROKER_RESTORE_INTERVAL": "1",  # ... looked for every second by the live worker
    "ARGORA_SILVER_BATCH_DELAY": "0.4",  # a slow model: a shard takes a few seconds, so it can be hit mid-way
    "OMP_NUM_THREADS": "1",
}


def _wait_for(check, *, timeout: float, what: str, workers=()):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.1)
    logs = "\n".join(f"---- {w.hostname} ----\n{w.log()[-6000:]}" for w in workers)
    raise AssertionError(f"timed out waiting for {what}\n{logs}")


@pytest.fixture
def argument_version(tmp_path, settings):
    """A tiny real ``argument`` model (BERT from a config), trained in a few seconds."""
    from ml.registry import activate
    from ml.versions import train_version
    from tests.ml.test_argument import TINY, planted

    version = train_version(
        "argument", rows_train=planted(48, 1), rows_dev=planted(16, 2), seed=3, hyperparameters=dict(TINY, epochs=1)
    )
    activate(version)
    return version


def test_two_workers_share_a_run_and_a_killed_one_loses_nothing(tmp_path, settings, tmp_artifacts, argument_version):
    from tests.worker_utils import start_worker

    if not settings.CELERY_BROKER_URL.startswith(("redis://", "rediss://")):
        pytest.skip("needs Redis (redelivery after the visibility timeout)")
    topics = [Topic.objects.create(name=n) for n in ("nuclear energy", "school uniforms")]
    for i in range(64):
        Sentence.objects.create(
            topic=topics[i % 2],
            text=f"Sentence {i}: {'it helps' if i % 3 else 'it harms'}.",
            stance="none",
            content_hash=f"w{i}",
        )
    selected = set(Sentence.objects.values_list("pk", flat=True))
    saved = {k: os.environ.get(k) for k in [*WORKER_ENV, "ARGORA_ARTIFACT_ROOT"]}
    os.environ.update(WORKER_ENV, ARGORA_ARTIFACT_ROOT=str(tmp_artifacts))  # the workers' environment
    workers = []
    try:
        with start_worker() as a, start_worker(purge=False) as b:
            workers = [a, b]
            run = silver.start("argument", all_sentences=True, batch_size=2, shards=4, enqueue=True)
            assert run.shards.count() == 4

            def a_mid_shard():
                return SilverShard.objects.filter(run=run, worker=a.hostname, status="running", processed__gt=0).first()

            def both_busy():
                return {s.worker for s in SilverShard.objects.filter(run=run).exclude(worker="")} >= {
                    a.hostname,
                    b.hostname,
                }

            _wait_for(both_busy, timeout=120, what="both workers on a shard", workers=workers)
            taken = {s.index: (s.worker, s.task_id) for s in SilverShard.objects.filter(run=run).exclude(worker="")}
            assert len({w for w, _ in taken.values()}) == 2 and len({t for _, t in taken.values()}) == len(taken)
            victim = _wait_for(a_mid_shard, timeout=60, what="worker A mid-shard", workers=workers)
            a.proc.send_signal(signal.SIGKILL)
            a.proc.wait(timeout=30)
            victim.refresh_from_db()
            assert victim.status == "running" and victim.first_id <= victim.last_sentence_id < victim.last_id
            assert 0 < victim.processed < victim.total
            checkpoint = victim.last_sentence_id
            _wait_for(
                lambda: SilverRun.objects.get(pk=run.pk).status == "done",
                timeout=180,
                what="the run to finish on worker B",
                workers=workers,
            )
        run.refresh_from_db()
        shards = list(run.shards.order_by("index"))
        labels = list(SilverLabel.objects.filter(run=run).values_list("sentence_id", flat=True))
        assert len(labels) == len(selected) == 64 and set(labels) == selected  # no duplicate, none missing
        assert run.processed == 64 and run.total == 64 and all(s.status == "done" for s in shards)
        assert sum(s.processed for s in shards) == 64
        assert len({s.task_id for s in shards}) == 4  # one task per shard
        victim = next(s for s in shards if s.index == victim.index)
        assert victim.attempts >= 2 and victim.worker == b.hostname  # redelivered to the live worker ...
        assert victim.last_sentence_id == victim.last_id > checkpoint  # ... which went on after the checkpoint
    finally:
        for w in workers:
            print(f"---- celery worker log ({w.hostname}) ----\n{w.log()}")
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
