"""Model registry: atomic artifacts, failed runs, idempotent redelivery, activation rules, rollback, loading,
seed optimisation. A fake trainer kind (tests/ml/fakes.py) stands in for a real model."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest
from django.db import IntegrityError, transaction
from django.utils import timezone

from annotation.models import Project
from ml import errors, registry, seeds, splits, versions
from ml.models import ModelVersion
from tests.ml.fakes import register_fake

ROWS = [{"sentence": f"s{i}", "label": i % 2} for i in range(10)]
DEV = [{"sentence": "d1", "label": 1}]


@pytest.fixture
def fake_kind(tmp_artifacts):
    spec = register_fake("fake")
    registry.clear_model_cache()
    yield spec
    registry.unregister_trainer("fake")
    registry.clear_model_cache()


def _project(slug="p1"):
    return Project.objects.create(name=slug, slug=slug, task_type="aspect")


def _train(score=None, **kw):
    hp = dict(kw.pop("hyperparameters", {}))
    if score is not None:
        hp["score"] = score
    return versions.train_version("fake", rows_train=ROWS, rows_dev=DEV, hyperparameters=hp, **kw)


def _tmp_dirs(root: Path):
    return list((root / "models").glob(".tmp-*"))


@pytest.mark.django_db
def test_train_version_writes_artifact_atomically_and_records_everything(fake_kind, tmp_artifacts):
    project = _project()
    v = _train(0.7, project=project, seed=5, data_snapshot="file.jsonl")
    assert v.status == "ready" and not v.is_active
    final = tmp_artifacts / "models" / "fake" / str(v.pk)
    assert Path(v.artifact_path) == final and (final / "weights.json").exists() and (final / versions.MANIFEST).exists()
    assert _tmp_dirs(tmp_artifacts) == []
    assert v.metrics["primary"] == 0.7 and v.metrics["primary_metric"] == "acc" and v.metrics["dev"]["acc"] == 0.7
    assert v.seed == 5 and v.n_train == 10 and v.n_dev == 1 and v.data_snapshot == "file.jsonl"
    assert v.data_hash == splits.data_hash(ROWS, DEV) and len(v.data_hash) == 64
    assert v.trained_at is not None and v.project == project
    # the hash is canonical: key order does not matter, content does
    assert splits.data_hash([{"b": 1, "a": 2}], []) == splits.data_hash([{"a": 2, "b": 1}], [])
    assert splits.data_hash([{"a": 1}], []) != splits.data_hash([], [{"a": 1}])


@pytest.mark.django_db
def test_failed_training_leaves_no_artifact_and_records_the_error(fake_kind, tmp_artifacts):
    with pytest.raises(RuntimeError, match="exploded"):
        _train(hyperparameters={"fail": True})
    v = ModelVersion.objects.get()
    assert v.status == "failed" and "exploded" in v.error and not v.artifact_path and not v.is_active
    assert not (tmp_artifacts / "models" / "fake" / str(v.pk)).exists()
    assert _tmp_dirs(tmp_artifacts) == []
    with pytest.raises(ValueError):
        registry.activate(v)


@pytest.mark.django_db
def test_missing_primary_metric_fails_the_version(tmp_artifacts):
    from ml.registry import TrainerSpec, TrainResult

    registry.register_trainer(
        TrainerSpec(
            kind="nometric",
            train=lambda req: TrainResult(metrics={"loss": 1.0}),
            load=lambda p: None,
            primary_metric="acc",
        )
    )
    try:
        with pytest.raises(errors.TrainerError, match="primary metric 'acc'"):
            versions.train_version("nometric", rows_train=ROWS, rows_dev=DEV)
        assert ModelVersion.objects.get().status == "failed"
        assert not (tmp_artifacts / "models" / "nometric").exists() or not any(
            (tmp_artifacts / "models" / "nometric").iterdir()
        )
    finally:
        registry.unregister_trainer("nometric")


@pytest.mark.django_db
def test_unknown_kind_and_empty_data_are_refused(fake_kind):
    with pytest.raises(errors.TrainerError, match="unknown trainer kind 'nope'"):
        registry.get_trainer("nope")
    with pytest.raises(errors.TrainerError, match="no training rows"):
        versions.train_version("fake", rows_train=[], rows_dev=DEV)
    assert "fake" in registry.trainer_kinds()
    assert ModelVersion.objects.count() == 0


@pytest.mark.django_db
def test_same_task_id_reuses_the_row_and_a_ready_one_is_returned(fake_kind, tmp_artifacts):
    # an earlier delivery died mid-training: its row is still "training", with no heartbeat for a long time
    long_ago = timezone.now() - timedelta(hours=1)
    dead = ModelVersion.objects.create(kind="fake", task_id="t-1", status="training", attempts=1, heartbeat_at=long_ago)
    ModelVersion.objects.filter(pk=dead.pk).update(created_at=long_ago)
    v = _train(0.6, task_id="t-1")
    assert ModelVersion.objects.count() == 1 and v.attempts == 2 and v.status == "ready"
    again = _train(0.9, task_id="t-1")  # delivered once more after it finished: nothing is trained again
    assert again.pk == v.pk and again.primary_metric == 0.6 and ModelVersion.objects.count() == 1


@pytest.mark.django_db(transaction=True)
def test_a_duplicate_delivery_waits_for_the_live_run_and_never_harms_its_model(
    fake_kind, tmp_artifacts, tmp_path, monkeypatch
):
    """The same task delivered twice at once (a broker's redelivery while the first run is alive): the second
    waits for the first and returns its model; the first's temporary folder, row and activation are untouched."""
    import threading

    monkeypatch.setattr(versions, "HEARTBEAT_SECONDS", 0.2)
    gate, pid = tmp_path / "gate", tmp_path / "pid"
    results = {}

    def deliver(name, score):
        try:
            results[name] = _train(
                score, task_id="t-dup", hyperparameters={"block_until": str(gate), "pid_file": str(pid)}
            )
        finally:
            from django.db import connection

            connection.close()

    first = threading.Thread(target=deliver, args=("first", 0.7), daemon=True)
    first.start()
    try:
        _wait_until(lambda: pid.exists() and _tmp_dirs(tmp_artifacts))
    except AssertionError:
        gate.write_text("go")  # never leave the first run blocked
        raise
    second = threading.Thread(target=deliver, args=("second", 0.1), daemon=True)
    second.start()
    second.join(timeout=1.5)
    assert second.is_alive()  # waiting: the first run's heartbeat is fresh
    assert len(_tmp_dirs(tmp_artifacts)) == 1  # the first run's folder is still there
    gate.write_text("go")
    first.join(timeout=60)
    second.join(timeout=60)
    v = ModelVersion.objects.get()
    assert (v.status, v.attempts, v.primary_metric) == ("ready", 1, 0.7)
    assert results["first"].pk == results["second"].pk == v.pk and results["second"].status == "ready"
    assert registry.activate(v) and ModelVersion.objects.get().is_active
    assert _tmp_dirs(tmp_artifacts) == []


def _wait_until(predicate, timeout=30.0):
    import time

    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


@pytest.mark.django_db
def test_activate_only_if_better_and_one_active_per_scope(fake_kind):
    project = _project()
    first = _train(0.7, project=project)
    assert registry.activate(first, only_if_better=True)  # nothing active: the first one wins
    worse = _train(0.6, project=project)
    assert registry.activate(worse, only_if_better=True) is False
    tie = _train(0.7, project=project)
    assert registry.activate(tie, only_if_better=True) is False  # strictly better only
    better = _train(0.8, project=project)
    assert registry.activate(better, only_if_better=True) is True
    active = ModelVersion.objects.filter(is_active=True)
    assert list(active) == [ModelVersion.objects.get(pk=better.pk)]
    assert registry.active_version("fake", project).pk == better.pk
    # a global version is separate: the project keeps its own, other projects fall back to the global one
    glob = _train(0.1)
    assert registry.activate(glob, only_if_better=True)
    assert registry.active_version("fake", project).pk == better.pk
    assert registry.active_version("fake", _project("other")).pk == glob.pk
    assert registry.active_version("fake", _project("third"), exact=True) is None


@pytest.mark.django_db
def test_lower_is_better_metric(tmp_artifacts):
    register_fake("fake_loss", higher_is_better=False)
    try:
        a = versions.train_version("fake_loss", rows_train=ROWS, rows_dev=DEV, hyperparameters={"score": 0.5})
        registry.activate(a)
        b = versions.train_version("fake_loss", rows_train=ROWS, rows_dev=DEV, hyperparameters={"score": 0.9})
        assert registry.activate(b, only_if_better=True) is False
        c = versions.train_version("fake_loss", rows_train=ROWS, rows_dev=DEV, hyperparameters={"score": 0.2})
        assert registry.activate(c, only_if_better=True) is True
    finally:
        registry.unregister_trainer("fake_loss")


@pytest.mark.django_db
def test_database_refuses_two_active_versions_of_a_scope(fake_kind):
    a, b = _train(0.1), _train(0.2)
    ModelVersion.objects.filter(pk=a.pk).update(is_active=True)
    with pytest.raises(IntegrityError), transaction.atomic():
        ModelVersion.objects.filter(pk=b.pk).update(is_active=True)
    failed = ModelVersion.objects.create(kind="fake", status="failed")
    with pytest.raises(IntegrityError), transaction.atomic():  # only a ready version can be active
        ModelVersion.objects.filter(pk=failed.pk).update(is_active=True, status="failed")


@pytest.mark.django_db
def test_rollback_reactivates_the_previous_version(fake_kind):
    project = _project()
    a, b, c = (_train(s, project=project) for s in (0.5, 0.6, 0.7))
    for v in (a, b, c):
        registry.activate(v)
    back = registry.rollback("fake", project)
    assert back.pk == b.pk and back.is_active
    assert ModelVersion.objects.get(pk=c.pk).status == "archived"
    assert registry.rollback("fake", project).pk == a.pk
    assert registry.rollback("fake", project) is None  # nothing older
    assert registry.active_version("fake", project).pk == a.pk
    assert registry.activate(ModelVersion.objects.get(pk=c.pk))  # an archived version can be activated again
    assert ModelVersion.objects.get(pk=c.pk).status == "ready"


@pytest.mark.django_db
def test_load_model_is_cached(fake_kind, monkeypatch):
    v = _train(0.5, seed=3)
    calls = []
    original = fake_kind.load
    monkeypatch.setattr(fake_kind, "load", lambda p: calls.append(p) or original(p))
    m1 = registry.load_model(v)
    m2 = registry.load_model(ModelVersion.objects.get(pk=v.pk))
    assert m1 is m2 and m1["seed"] == 3 and len(calls) == 1


def test_stable_split_groups_and_is_stable():
    rows = [{"sentence": f"s{i // 3}", "n": i} for i in range(60)]
    train, dev = splits.stable_split(rows, key="sentence")
    assert train and dev and len(train) + len(dev) == 60
    assert not {r["sentence"] for r in train} & {r["sentence"] for r in dev}
    more = rows + [{"sentence": f"new{i}", "n": 100 + i} for i in range(30)]
    _, dev2 = splits.stable_split(more, key="sentence")
    assert {r["sentence"] for r in dev} <= {r["sentence"] for r in dev2}  # old dev members stay dev
    t, d = splits.stable_split([{"sentence": "a"}, {"sentence": "b"}], key="sentence", dev_fraction=0.01)
    assert len(t) == 1 and len(d) == 1


def test_seed_optimise_probes_every_seed_and_continues_only_the_best():
    final = {1: 0.50, 2: 0.80, 3: 0.65}
    log = []

    def factory(seed):
        def run(steps):
            log.append((seed, steps))
            return final[seed] * steps / 100

        return run

    best, run, scores = seeds.seed_optimise_runs(factory, [1, 2, 3], total_steps=100)
    assert best == 2 and log == [(1, 20), (2, 20), (3, 20)] and scores[2] == pytest.approx(0.16)
    assert run(100) == pytest.approx(0.8) and log[-1] == (2, 100)
    assert seeds.seed_optimise(factory, [1, 2, 3], total_steps=10, probe_fraction=0.2) == 2
    assert seeds.seed_optimise(factory, [1, 2, 3], total_steps=100, higher_is_better=False) == 1
    with pytest.raises(ValueError):
        seeds.seed_optimise(factory, [], total_steps=10)


@pytest.mark.django_db
def test_recover_interrupted_marks_stale_training_failed(fake_kind):
    from datetime import timedelta

    from django.utils import timezone

    stale = ModelVersion.objects.create(
        kind="fake", task_id="t-x", status="training", heartbeat_at=timezone.now() - timedelta(hours=1)
    )
    fresh = ModelVersion.objects.create(kind="fake", task_id="t-y", status="training", heartbeat_at=timezone.now())
    found = versions.recover_interrupted(older_than=60)
    assert [f["version"] for f in found] == [stale.pk]
    assert ModelVersion.objects.get(pk=stale.pk).status == "failed"
    assert ModelVersion.objects.get(pk=fresh.pk).status == "training"


# --- a worker killed mid-training ------------------------------------------------------------------


def _wait_for(predicate, timeout=90.0, what="condition"):
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def _read_pid(path: Path):
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    return int(text) if text else None


def _assert_nothing_ready(artifacts: Path):
    assert not ModelVersion.objects.filter(status="ready").exists()
    kind_dir = artifacts / "models" / "fake_worker"
    assert not kind_dir.exists() or not any(kind_dir.iterdir())  # no final artifact folder


def _is_redis() -> bool:
    from django.conf import settings

    return settings.CELERY_BROKER_URL.startswith(("redis://", "rediss://"))


def _train_kwargs(tmp_path: Path, gate: Path, pid_file: Path) -> dict:
    data = tmp_path / "rows.jsonl"
    data.write_text(
        "".join(
            json.dumps({"text": f"t{i}", "label": i % 2, "split": "dev" if i < 2 else "train"}) + "\n" for i in range(8)
        )
    )
    return {
        "kind": "fake_worker",
        "data": str(data),
        "hyperparameters": {"block_until": str(gate), "pid_file": str(pid_file)},
        "activate": "if_better",
    }


@pytest.mark.worker
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_killed_pool_child_leaves_no_ready_artifact_and_the_task_is_redelivered(tmp_path, settings):
    """prefork: SIGKILL the child running the training; the parent rejects the message (requeue), it runs again."""
    import os
    import signal

    from ml.tasks import train
    from tests.worker_utils import start_worker

    settings.ARTIFACT_ROOT = tmp_path / "artifacts"  # the worker gets the same root through the environment
    os.environ["ARGORA_ARTIFACT_ROOT"] = str(settings.ARTIFACT_ROOT)
    # the redelivery takes over once the killed run has missed 4 heartbeats: 1 s apart here (15 s by default)
    os.environ["ARGORA_MODEL_HEARTBEAT_SECONDS"] = "1"
    gate, pid_file = tmp_path / "gate", tmp_path / "pid"
    try:
        with start_worker(pool="prefork", extra_args=("--include", "tests.ml.worker_fake")) as worker:
            result = train.apply_async(kwargs=_train_kwargs(tmp_path, gate, pid_file))
            first_pid = _wait_for(lambda: _read_pid(pid_file), what="the first training run")
            assert first_pid != worker.proc.pid
            pid_file.unlink()
            os.kill(first_pid, signal.SIGKILL)
            _assert_nothing_ready(settings.ARTIFACT_ROOT)
            second_pid = _wait_for(lambda: _read_pid(pid_file), what="the redelivered run")  # blocked at the gate
            assert second_pid != first_pid
            _assert_nothing_ready(settings.ARTIFACT_ROOT)
            row = ModelVersion.objects.get()
            assert row.status == "training" and row.attempts == 2 and row.task_id == result.id
            gate.write_text("go")
            outcome = result.get(timeout=90)
        v = ModelVersion.objects.get()
        assert outcome["version"] == v.pk and v.status == "ready" and v.is_active and v.attempts == 2
        assert Path(v.artifact_path) == settings.ARTIFACT_ROOT / "models" / "fake_worker" / str(v.pk)
        assert (Path(v.artifact_path) / "weights.json").exists()
        assert list((settings.ARTIFACT_ROOT / "models").glob(".tmp-*")) == []  # the killed run's temp folder is gone
    finally:
        os.environ.pop("ARGORA_ARTIFACT_ROOT", None)


@pytest.mark.worker
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_killed_worker_leaves_no_ready_artifact_and_a_new_worker_completes_the_task(tmp_path, settings, monkeypatch):
    """solo pool: SIGKILL the whole worker. Redis redelivers the unacknowledged message to the next worker after
    ``visibility_timeout`` (3 s here, set on that worker's command line for the test only). The filesystem
    transport keeps unacknowledged messages only in the dead worker's memory: ``manage.py models recover --requeue``
    re-sends the run under the same task id. The workers beat every second (``ARGORA_MODEL_HEARTBEAT_SECONDS``, 15
    by default), so the second one takes the dead run over after 4 s of silence instead of 60."""
    import os
    import signal

    from django.core.management import call_command

    from ml.tasks import train
    from tests.worker_utils import start_worker

    settings.ARTIFACT_ROOT = tmp_path / "artifacts"
    os.environ["ARGORA_ARTIFACT_ROOT"] = str(settings.ARTIFACT_ROOT)
    monkeypatch.setenv("ARGORA_MODEL_HEARTBEAT_SECONDS", "1")  # read by the workers at start-up
    gate, pid_file = tmp_path / "gate", tmp_path / "pid"
    include = ("--include", "tests.ml.worker_fake")
    fast_restore = (
        (
            "--",
            'broker.transport_options=(json){"visibility_timeout": 3, "unacked_restore_interval": 1, '
            '"unacked_restore_throttle": 1}',
        )
        if _is_redis()
        else ()
    )
    try:
        with start_worker(extra_args=include) as worker:
            result = train.apply_async(kwargs=_train_kwargs(tmp_path, gate, pid_file))
            pid = _wait_for(lambda: _read_pid(pid_file), what="the training run")
            assert pid == worker.proc.pid  # solo pool: the task runs in the worker process itself
            worker.proc.send_signal(signal.SIGKILL)
            worker.proc.wait(timeout=30)
        _assert_nothing_ready(settings.ARTIFACT_ROOT)
        assert ModelVersion.objects.get().status == "training"
        gate.write_text("go")
        if not _is_redis():
            call_command("models", "recover", "--older-than", "0", "--requeue")
        with start_worker(extra_args=include + fast_restore, purge=False):
            outcome = result.get(timeout=90)
        v = ModelVersion.objects.get()
        assert outcome["version"] == v.pk and v.status == "ready" and v.attempts == 2 and v.task_id == result.id
        assert (Path(v.artifact_path) / "weights.json").exists()
        assert list((settings.ARTIFACT_ROOT / "models").glob(".tmp-*")) == []
    finally:
        os.environ.pop("ARGORA_ARTIFACT_ROOT", None)


@pytest.mark.django_db  # the task also sweeps silver runs (none here)
def test_beat_recovers_interrupted_runs_on_the_default_queue(settings):
    """The periodic task is scheduled, routes to `default` (not the busy gpu queue) and calls the registry."""
    from unittest import mock

    from argora.celery import app
    from ml import tasks

    assert settings.CELERY_BEAT_SCHEDULE["recover-interrupted-training"]["task"] == "ml.recover_interrupted"
    assert app.amqp.router.route({}, "ml.recover_interrupted")["queue"].name == "default"
    with mock.patch("ml.versions.recover_interrupted", return_value=[{"version": 7}]) as recover:
        assert tasks.recover_interrupted() == [{"version": 7}]
    recover.assert_called_once_with(requeue=True)


@pytest.mark.django_db
def test_admin_rollback_action_uses_the_registry_like_the_cli(fake_kind, admin_client):
    """The admin's rollback action does what ``manage.py models rollback`` does: the active version is archived and
    the previous one re-activated, per (kind, project) of the selected versions; with nothing older, a warning."""
    project = _project()
    a, b = (_train(s, project=project) for s in (0.5, 0.6))
    g1, g2 = _train(0.1), _train(0.2)  # global scope
    for v in (a, b, g1, g2):
        registry.activate(v)
    url = "/admin/ml/modelversion/"
    r = admin_client.post(url, {"action": "rollback_selected", "_selected_action": [b.pk, a.pk, g2.pk]}, follow=True)
    assert r.status_code == 200
    texts = [str(m) for m in r.context["messages"]]
    assert f"fake of project p1: rolled back, version {a.pk} is active" in texts
    assert f"fake (global): rolled back, version {g1.pk} is active" in texts
    assert registry.active_version("fake", project).pk == a.pk
    assert ModelVersion.objects.get(pk=b.pk).status == "archived"
    assert registry.active_version("fake", None).pk == g1.pk
    r = admin_client.post(url, {"action": "rollback_selected", "_selected_action": [a.pk]}, follow=True)
    assert any("no earlier ready version" in str(m) for m in r.context["messages"])
    assert registry.active_version("fake", project).pk == a.pk  # nothing changed


@pytest.mark.worker
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_duplicate_delivery_to_a_second_worker_leaves_the_model_ready_and_active(tmp_path, settings):
    """Two workers; the same training task delivered twice (what Redis does when a job outlives its visibility
    timeout): the second delivery waits for the live first run instead of deleting its folder and failing its
    version -- one version, ready, active, trained once."""
    import os

    from ml.tasks import train
    from tests.worker_utils import start_worker

    settings.ARTIFACT_ROOT = tmp_path / "artifacts"
    os.environ["ARGORA_ARTIFACT_ROOT"] = str(settings.ARTIFACT_ROOT)
    gate, pid_file = tmp_path / "gate", tmp_path / "pid"
    include = ("--include", "tests.ml.worker_fake")
    try:
        with start_worker(extra_args=include) as first, start_worker(extra_args=include, purge=False) as second:
            kwargs = _train_kwargs(tmp_path, gate, pid_file)
            result = train.apply_async(kwargs=kwargs, task_id="dup-train-1")
            running = _wait_for(lambda: _read_pid(pid_file), what="the first delivery's run")
            train.apply_async(kwargs=kwargs, task_id="dup-train-1")  # the duplicate

            def logged(what: str) -> int:
                return sum(
                    w.log_path.read_text(errors="replace").count(f"[dup-train-1] {what}") for w in (first, second)
                )

            _wait_for(lambda: logged("received") >= 2, what="the duplicate delivery")
            assert running == _read_pid(pid_file)  # the duplicate did not start a run of its own
            row = ModelVersion.objects.get()
            assert row.status == "training" and row.attempts == 1
            assert len(list((settings.ARTIFACT_ROOT / "models").glob(".tmp-*"))) == 1  # the live run's folder stays
            gate.write_text("go")
            outcome = result.get(timeout=90)
            _wait_for(lambda: logged("succeeded") >= 2, what="both deliveries to finish")
        v = ModelVersion.objects.get()
        assert (v.status, v.attempts, v.is_active) == ("ready", 1, True) and outcome["version"] == v.pk
        assert (Path(v.artifact_path) / "weights.json").exists()
        assert list((settings.ARTIFACT_ROOT / "models").glob(".tmp-*")) == []
    finally:
        os.environ.pop("ARGORA_ARTIFACT_ROOT", None)
