"""Sharded silver runs (issue 21.3) in one process: contiguous id ranges, per-shard checkpoints, an idempotent
finaliser that sums the shard counters and scheme sums, per-shard recovery, the chord on an eager Celery, and the
CLI's per-shard status."""

from __future__ import annotations

import itertools
import json
import threading
from datetime import timedelta
from io import StringIO
from unittest import mock

import pytest
from django.core.management import call_command
from django.db import connection
from django.utils import timezone

from corpus.models import Sentence, Topic
from ml import silver
from ml.models import ModelVersion, SilverLabel, SilverRun, SilverShard
from tests.ml.test_silver import FakeTagger

pytestmark = pytest.mark.django_db


class FakeSchemes(FakeTagger):
    """Also predicts two scheme probabilities that depend on the sentence number."""

    def predict(self, texts, variables=None, *, batch_size=64):
        out = super().predict(texts, variables, batch_size=batch_size)
        for t, o in zip(texts, out):
            n = int(t.split()[1])
            o["schemes"] = {"From Consequence": (n % 4) / 4, "Others": 1 - (n % 4) / 4}
        return out


@pytest.fixture
def corpus():
    topic = Topic.objects.create(name="nuclear energy")
    for i in range(30):
        Sentence.objects.create(
            topic=topic,
            text=f"Sentence {i} about {'costs' if i % 2 else 'safety'}.",
            stance="pro",
            source="cc",
            content_hash=f"h{i}",
        )
    Sentence.objects.create(topic=Topic.objects.create(name="other"), text="Elsewhere 0.", content_hash="x")
    return topic


@pytest.fixture
def version(tmp_path):
    return ModelVersion.objects.create(
        kind="argspanscheme", status="ready", artifact_path=str(tmp_path), is_active=True
    )


def _ids(topic):
    return list(Sentence.objects.filter(topic=topic).order_by("pk").values_list("pk", flat=True))


def test_shards_are_contiguous_ranges_covering_the_selection(corpus, version):
    run = silver.start("argspanscheme", topic=corpus, shards=4, batch_size=4)
    shards = list(run.shards.order_by("index"))
    ids = _ids(corpus)
    assert [s.index for s in shards] == [0, 1, 2, 3] and run.total == 30 and run.options["shards"] == 4
    assert shards[0].first_id == ids[0] and shards[-1].last_id == ids[-1]
    totals = [s.total for s in shards]
    assert sum(totals) == 30 and max(totals) - min(totals) <= 1
    for a, b in itertools.pairwise(shards):
        assert a.last_id < b.first_id
    assert all(s.last_sentence_id == s.first_id - 1 and s.status == "pending" for s in shards)
    by_size = silver.start("argspanscheme", topic=corpus, shard_size=10)
    assert by_size.shards.count() == 3
    tiny = silver.start("argspanscheme", topic=corpus, shards=100)
    assert tiny.shards.count() == 30  # never more shards than sentences
    with pytest.raises(silver.SilverError, match="shards"):
        silver.start("argspanscheme", topic=corpus, shards=0)


def test_shards_in_any_order_then_the_finaliser_sums_them(corpus, version):
    run = silver.start("argspanscheme", topic=corpus, shards=3, batch_size=4)
    model = FakeSchemes()
    for index in (2, 0):
        out = silver.process_shard(run.pk, index, model=model, worker="w1", task_id=f"t{index}")
        assert out["status"] == "done" and out["worker"] == "w1" and out["task_id"] == f"t{index}"
    run.refresh_from_db()
    assert run.status == "running"  # shard 1 still pending: the (early) chord callback changes nothing
    assert silver.finalise(run.pk).status == "running"
    silver.process_shard(run.pk, 1, model=model)  # the last shard finalises the run itself
    run.refresh_from_db()
    assert run.status == "done" and run.processed == 30 and run.labelled == 30 and run.finished_at
    labels = list(SilverLabel.objects.filter(run=run).values_list("sentence_id", flat=True))
    assert sorted(labels) == _ids(corpus)
    # run-wide statistics: the scheme means over all 30 sentences, from the summed shard sums
    expected = sum((i % 4) / 4 for i in range(30)) / 30
    assert run.scheme_means()["From Consequence"] == pytest.approx(expected)
    assert sum(s.batches for s in run.shards.all()) == run.batches
    # idempotent: a redelivered shard and a second callback change nothing
    assert silver.process_shard(run.pk, 1, model=FakeTagger(crash_on=1))["status"] == "done"
    assert silver.finalise(run.pk).processed == 30 and SilverLabel.objects.filter(run=run).count() == 30


def test_a_crash_mid_shard_resumes_after_the_shard_checkpoint(corpus, version):
    run = silver.start("argspanscheme", topic=corpus, shards=2, batch_size=4)
    _first, second = run.shards.order_by("index")
    with pytest.raises(RuntimeError, match="worker lost"):
        silver.process_shard(run.pk, 1, model=FakeSchemes(crash_on=3))  # 2 batches of shard 1 committed
    second.refresh_from_db()
    run.refresh_from_db()
    assert second.status == "failed" and second.processed == 8 and run.status == "failed"
    assert "worker lost" in run.error and second.last_sentence_id > second.first_id - 1
    SilverShard.objects.filter(pk=second.pk).update(status="running")  # as if SIGKILLed: left running
    out = silver.process_shard(run.pk, 1, model=FakeSchemes())  # the redelivered message
    assert out["status"] == "done" and out["processed"] == second.total and out["attempts"] == 2
    silver.process_shard(run.pk, 0, model=FakeSchemes())
    run.refresh_from_db()
    assert run.status == "done" and run.processed == 30
    assert sorted(SilverLabel.objects.filter(run=run).values_list("sentence_id", flat=True)) == _ids(corpus)


def test_a_second_worker_on_the_same_shard_stops_when_the_checkpoint_moved(corpus, version):
    run = silver.start("argspanscheme", topic=corpus, shards=1, batch_size=5)
    shard = run.shards.get()
    calls = []

    class Racing(FakeSchemes):
        def predict(self, texts, variables=None, *, batch_size=64):
            calls.append(len(texts))
            if len(calls) == 2:  # another worker commits this shard's next batch meanwhile
                SilverShard.objects.filter(pk=shard.pk).update(last_sentence_id=moved + 5)
            return super().predict(texts, variables, batch_size=batch_size)

    moved = _ids(corpus)[4]
    out = silver.process_shard(run.pk, 0, model=Racing())
    assert out["status"] == "running" and out["processed"] == 5  # stopped, nothing written twice
    assert SilverLabel.objects.filter(run=run).count() == 5


def test_cancel_stops_every_shard(corpus, version):
    run = silver.start("argspanscheme", topic=corpus, shards=3, batch_size=5)
    silver.process_shard(run.pk, 0, model=FakeSchemes())
    silver.cancel(run)
    assert silver.process_shard(run.pk, 1, model=FakeSchemes())["status"] == "cancelled"
    assert silver.process_shard(run.pk, 2, model=FakeSchemes())["status"] == "cancelled"
    run.refresh_from_db()
    assert run.status == "cancelled" and run.processed == 10
    silver.resume(run)
    assert silver.process(run.pk, model=FakeSchemes())["status"] == "done"
    assert SilverLabel.objects.filter(run=run).count() == 30


def _age(shard, seconds):
    SilverShard.objects.filter(pk=shard.pk).update(
        status="running", heartbeat_at=timezone.now() - timedelta(seconds=seconds)
    )


def test_recovery_requeues_a_stale_shard_alone_while_the_run_lives(corpus, version, django_capture_on_commit_callbacks):
    run = silver.start("argspanscheme", topic=corpus, shards=3, batch_size=5)
    dead, alive, _done = run.shards.order_by("index")
    silver.process_shard(run.pk, 2, model=FakeSchemes())
    SilverRun.objects.filter(pk=run.pk).update(status="running", heartbeat_at=timezone.now() - timedelta(hours=1))
    _age(dead, 600)
    _age(alive, 2)
    with mock.patch("ml.tasks.silver_shard.apply_async") as send, django_capture_on_commit_callbacks(execute=True):
        found = silver.recover_interrupted(older_than=60, requeue=True)
    assert found == [
        {
            "run": run.pk,
            "shard": 0,
            "kind": "argspanscheme",
            "processed": 0,
            "last_sentence_id": dead.last_sentence_id,
            "requeued": True,
        }
    ]
    send.assert_called_once_with(args=[run.pk, 0])
    assert SilverShard.objects.get(pk=dead.pk).status == "pending"
    assert SilverRun.objects.get(pk=run.pk).status == "running"  # the run itself is not interrupted
    # every worker gone: the run is taken whole and sent again as a chord of its unfinished shards
    _age(dead, 600)
    _age(alive, 600)
    with mock.patch("ml.silver._enqueue") as enqueue, django_capture_on_commit_callbacks(execute=True):
        found = silver.recover_interrupted(older_than=60, requeue=True)
    assert [f["run"] for f in found] == [run.pk] and "shard" not in found[0]
    enqueue.assert_called_once()
    assert set(run.shards.values_list("status", flat=True)) == {"pending", "done"}


def test_a_run_from_before_sharding_gets_one_shard_with_its_checkpoint(corpus, version):
    ids = _ids(corpus)
    run = SilverRun.objects.create(
        kind="argspanscheme",
        model_version=version,
        topic=corpus,
        status="failed",
        last_sentence_id=ids[9],
        processed=10,
        labelled=10,
        options={"batch_size": 7},
    )
    for pk in ids[:10]:
        SilverLabel.objects.create(run=run, sentence_id=pk)
    silver.resume(run)
    result = silver.process(run.pk, model=FakeSchemes())
    assert result["status"] == "done" and result["processed"] == 30 and result["shard_count"] == 1
    assert sorted(SilverLabel.objects.filter(run=run).values_list("sentence_id", flat=True)) == ids


def test_enqueue_sends_a_chord_that_finishes_the_run(
    corpus, version, settings, monkeypatch, django_capture_on_commit_callbacks
):
    from tests.worker_utils import eager_celery

    monkeypatch.setattr("ml.registry.load_model", lambda v, **kw: FakeSchemes())
    sent = []
    real_chord = silver.chord

    def spy(header, *args, **kwargs):
        sent.append([t.args for t in header.tasks])
        return real_chord(header, *args, **kwargs)

    monkeypatch.setattr("ml.silver.chord", spy)
    with eager_celery(settings), django_capture_on_commit_callbacks(execute=True):
        run = silver.start("argspanscheme", topic=corpus, shards=3, batch_size=4, enqueue=True)
    assert sent == [[(run.pk, 0), (run.pk, 1), (run.pk, 2)]]  # one shard task per shard
    run.refresh_from_db()
    assert run.status == "done" and run.processed == 30 and run.shards.filter(status="done").count() == 3
    assert SilverLabel.objects.filter(run=run).count() == 30
    with mock.patch("ml.tasks.silver.apply_async") as send, django_capture_on_commit_callbacks(execute=True):
        one = silver.start("argspanscheme", topic=corpus, enqueue=True)
    send.assert_called_once_with(args=[one.pk])  # one shard: the plain run task, as before


def test_cli_shards_and_per_shard_status(corpus, version, monkeypatch):
    monkeypatch.setattr("ml.registry.load_model", lambda v, **kw: FakeSchemes())
    out = StringIO()
    call_command(
        "silver",
        "start",
        "--kind",
        "argspanscheme",
        "--topic",
        corpus.slug,
        "--shards",
        "3",
        "--batch-size",
        "4",
        "--json",
        stdout=out,
    )
    result = json.loads(out.getvalue())
    assert result["status"] == "done" and result["shard_count"] == 3 and result["shards_done"] == 3
    out = StringIO()
    call_command("silver", "status", str(result["run"]), "--json", stdout=out)
    status = json.loads(out.getvalue())
    assert [s["shard"] for s in status["shards"]] == [0, 1, 2]
    assert sum(s["processed"] for s in status["shards"]) == status["processed"] == 30
    out = StringIO()
    call_command("silver", "status", str(result["run"]), stdout=out)
    text = out.getvalue()
    assert text.count("shard ") >= 3 and "3/3 shards done" in text and "30/30" in text


@pytest.mark.django_db(transaction=True)
def test_two_workers_write_their_shards_side_by_side(corpus, version):
    """Two shards processed at the same time on two database connections (two worker processes, here threads):
    each commits a batch, waits until the other has committed one too, then commits the rest. A shard that kept a
    cursor open over its sentences while writing pinned a read snapshot on SQLite, and its next ``BEGIN
    IMMEDIATE`` failed at once with "database is locked" once the other had committed (both shards were left
    running, the run never finished)."""
    Sentence.objects.bulk_create(
        [Sentence(topic=corpus, text=f"Sentence {i} about costs.", content_hash=f"m{i}") for i in range(30, 250)]
    )  # > 100 a shard: more than one read of 100 rows
    run = silver.start("argspanscheme", topic=corpus, shards=2, batch_size=4)
    both_wrote = threading.Barrier(2, timeout=60)

    class Waiting(FakeSchemes):
        def predict(self, texts, variables=None, *, batch_size=64):
            if self.calls == 1:  # the first batch is committed: wait for the other worker's first commit
                both_wrote.wait()
            return super().predict(texts, variables, batch_size=batch_size)

    outcomes, errors = {}, []

    def work(index):
        try:
            outcomes[index] = silver.process_shard(run.pk, index, model=Waiting(), worker=f"w{index}")
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(f"shard {index}: {type(exc).__name__}: {exc}")
            both_wrote.abort()
        finally:
            connection.close()

    threads = [threading.Thread(target=work, args=(i,)) for i in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert errors == []
    assert [outcomes[i]["status"] for i in (0, 1)] == ["done", "done"]
    run.refresh_from_db()
    assert run.status == "done" and run.processed == 250
    assert sorted(SilverLabel.objects.filter(run=run).values_list("sentence_id", flat=True)) == _ids(corpus)
