"""Training runs: a :class:`~ml.models.ModelVersion` row per run, atomic artifacts, heartbeats, duplicate deliveries,
interrupted runs.

Test rows
    Rows marked ``split: "test"`` are never trained on or selected on: :func:`train_version` takes them as
    ``rows_test`` (and moves any ``split: "test"`` row it finds among ``rows_dev`` there: a kind's
    ``rows_from_file`` may return test rows inside its dev list tagged that way), passes the dev rows alone as
    ``TrainRequest.rows_dev`` (early stopping, thresholds, seed choice) and the test rows as
    ``TrainRequest.rows_test``, only for the final ``TrainResult.test_metrics``. A trainer that reports no test
    metrics gets them from here: the finished artifact is loaded and ``spec.evaluate(model, rows_test)``
    scores it. They are stored as ``metrics["test"]`` (with ``metrics["n_test"]``).

Versions
    :func:`train_version` creates a :class:`~ml.models.ModelVersion` row (``training``), runs the kind's trainer
    (:func:`ml.registry.get_trainer`) into ``ARTIFACT_ROOT/models/.tmp-<id>-a<attempt>-<uuid>/`` and only when it
    returned renames that folder to ``ARTIFACT_ROOT/models/<kind>/<id>/`` (same file system: an atomic rename) and
    marks the row ``ready`` with its metrics (``{"dev": {...}, "primary": <dev primary metric>, "primary_metric":
    name}``). On any exception the temporary folder is removed and the row is ``failed`` with the error; a worker
    that dies (SIGKILL, OOM) leaves the row ``training`` and at most a ``.tmp-*`` folder, never a final folder.
    ``task_id`` makes a run idempotent, and a run owns its row by its attempt number: a redelivered Celery task
    whose version is ready gets it without training again; one that arrives while the first delivery still runs
    (its heartbeat is fresh: a thread refreshes ``heartbeat_at`` while a run trains) waits for that run and returns
    its result; one whose first delivery died (no heartbeat for 4 intervals) or failed takes the row over
    (``attempts`` + 1). A run only ever marks its own attempt ready or failed, so a duplicate delivery can never
    fail, deactivate or delete another's model. Activation and loading are the registry's (:mod:`ml.registry`).

Interrupted runs
    :func:`stop_marks_interrupted` (a command's run: SIGTERM / Ctrl-C), :func:`sweep_interrupted` (pages and
    commands, before they list versions) and :func:`recover_interrupted` (the beat task ``ml.recover_interrupted``,
    ``manage.py models recover``; with ``requeue`` it sends ``ml.tasks.train`` again: the one Celery task <->
    service import pair of this module).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import signal
import threading
import time
import traceback
import uuid
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from argora.progress import Progress, null_progress

from .errors import TrainerError
from .models import ModelVersion
from .registry import TrainRequest, TrainResult, active_version, get_trainer
from .splits import data_hash, split_test, untagged
from .training import apply_threads

log = logging.getLogger(__name__)

MANIFEST = "argora-model.json"
HEARTBEAT_SECONDS = float(os.environ.get("ARGORA_MODEL_HEARTBEAT_SECONDS", "15"))


# --- paths -----------------------------------------------------------------------------------------


def models_root() -> Path:
    return Path(settings.ARTIFACT_ROOT) / "models"


def final_dir(kind: str, version_id: int) -> Path:
    return models_root() / kind / str(version_id)


# --- heartbeat -------------------------------------------------------------------------------------


class _Heartbeat:
    """Refreshes ``heartbeat_at`` of a training version every ``interval`` s from a daemon thread."""

    def __init__(self, version_id: int, attempt: int, interval: float | None = None):
        self.version_id, self.attempt = version_id, attempt
        self.interval = HEARTBEAT_SECONDS if interval is None else interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"ml-heartbeat-{version_id}", daemon=True)

    def __enter__(self):
        # not inside a transaction (tests, callers holding one): another connection's write would only wait on it
        if self.interval > 0 and not connection.in_atomic_block:
            self._thread.start()
        return self

    def _run(self) -> None:
        try:
            while not self._stop.wait(self.interval):
                try:
                    ModelVersion.objects.filter(
                        pk=self.version_id, attempts=self.attempt, status=ModelVersion.Status.TRAINING
                    ).update(heartbeat_at=timezone.now())
                except Exception:  # noqa: BLE001 - a missed beat is not an error of the training
                    log.debug("heartbeat of model version %s failed", self.version_id, exc_info=True)
        finally:
            connection.close()

    def __exit__(self, *exc):
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)
        return False


# --- training --------------------------------------------------------------------------------------

STALE_AFTER_BEATS = 4  # a training run without a heartbeat for this many intervals is taken to be dead


def _alive(version) -> bool:
    last = version.heartbeat_at or version.created_at
    return (timezone.now() - last).total_seconds() < STALE_AFTER_BEATS * HEARTBEAT_SECONDS


def _claim_row(
    kind,
    *,
    project,
    base_model,
    seed,
    hyperparameters,
    data_snapshot,
    digest,
    n_train,
    n_dev,
    task_id,
    request,
    snapshot_labels,
    parent,
):
    """``(row, claimed)``: the row this run trains, owned by this run's attempt number (``row.attempts``).

    A new task: a new row. The same task delivered again (``task_id``; a broker redelivers a message whose worker
    died, or one held longer than its visibility timeout): a ready row is returned untouched; a row whose run is
    still alive (its heartbeat is fresh) is returned with ``claimed=False`` -- the caller waits for that run; a row
    whose run died, or that failed, is taken over (``attempts`` + 1: the earlier attempt can no longer change it)."""
    now = timezone.now()
    values = {
        "kind": kind,
        "project": project,
        "base_model": base_model or "",
        "seed": seed,
        "hyperparameters": hyperparameters,
        "data_snapshot": data_snapshot,
        "data_hash": digest,
        "n_train": n_train,
        "n_dev": n_dev,
        "request": request or {},
        "snapshot_labels": snapshot_labels,
        "parent": parent,
        "heartbeat_at": now,
    }
    if task_id:
        with transaction.atomic():
            existing = ModelVersion.objects.select_for_update().filter(task_id=task_id, kind=kind).first()
            if existing is not None:
                if existing.status in (ModelVersion.Status.READY, ModelVersion.Status.ARCHIVED) or (
                    existing.status == ModelVersion.Status.TRAINING and _alive(existing)
                ):
                    return existing, False
                for name, value in values.items():
                    setattr(existing, name, value)
                existing.status = ModelVersion.Status.TRAINING
                existing.error = ""
                existing.attempts += 1
                existing.save()
                log.warning(
                    "model version %s: task %s delivered again after its run died; attempt %s takes over",
                    existing.pk,
                    task_id,
                    existing.attempts,
                )
                return existing, True
    version = ModelVersion.objects.create(task_id=task_id or "", attempts=1, **values)
    return version, True


def _wait_for_run(version):
    """Wait while another delivery's run of ``version`` is alive; the row once it is finished (ready / failed), or
    ``None`` when that run died (the caller takes over)."""
    while True:
        version.refresh_from_db()
        if version.status != ModelVersion.Status.TRAINING:
            return version
        if not _alive(version):
            return None
        time.sleep(max(0.2, min(HEARTBEAT_SECONDS, 5.0)))


def train_version(
    kind: str,
    *,
    rows_train: list[dict],
    rows_dev: list[dict],
    rows_test: list[dict] | None = None,
    project=None,
    base_model: str | None = None,
    seed: int = 13,
    hyperparameters: dict | None = None,
    data_snapshot: str = "",
    progress: Progress = null_progress,
    task_id: str = "",
    request: dict | None = None,
    snapshot_labels: int | None = None,
    parent=None,
):
    """Train one version of ``kind`` (see the module docstring); returns the ModelVersion (ready or failed).

    ``rows_test`` (and any ``split: "test"`` row of ``rows_dev`` or ``rows_train``) give the test metrics only.
    Exceptions of the trainer are recorded on the row (``failed`` + ``error``) and re-raised.
    """
    spec = get_trainer(kind)
    rows_train, test_in_train = split_test(rows_train)
    rows_dev, test_in_dev = split_test(rows_dev)
    rows_test = list(rows_test or []) + test_in_dev + test_in_train
    if not rows_train:
        raise TrainerError("data: no training rows")
    hyperparameters = dict(hyperparameters or {})
    base_model = spec.base_model_for(base_model)
    digest = data_hash(rows_train, rows_dev, rows_test)
    threads = apply_threads()  # --threads / $ARGORA_TORCH_THREADS / one per process on CPU
    if parent is None:
        parent = active_version(kind, project, exact=True)
    while True:
        version, claimed = _claim_row(
            kind,
            project=project,
            base_model=base_model,
            seed=seed,
            hyperparameters=hyperparameters,
            data_snapshot=data_snapshot,
            digest=digest,
            n_train=len(rows_train),
            n_dev=len(rows_dev),
            task_id=task_id,
            request=request,
            snapshot_labels=snapshot_labels,
            parent=parent,
        )
        if claimed:
            break
        finished = _wait_for_run(version)  # a duplicate delivery: the running one does the work
        if finished is not None:
            return finished
    attempt = version.attempts

    root = models_root()
    root.mkdir(parents=True, exist_ok=True)
    for stale in root.glob(f".tmp-{version.pk}-*"):  # what dead attempts of this task left behind
        if not stale.name.startswith(f".tmp-{version.pk}-a{attempt}-"):
            shutil.rmtree(stale, ignore_errors=True)
    tmp = root / f".tmp-{version.pk}-a{attempt}-{uuid.uuid4().hex}"
    tmp.mkdir()
    target = final_dir(kind, version.pk)
    renamed = False
    try:
        with _Heartbeat(version.pk, attempt):
            result = spec.train(
                TrainRequest(
                    kind=kind,
                    rows_train=rows_train,
                    rows_dev=rows_dev,
                    base_model=base_model,
                    seed=seed,
                    hyperparameters=hyperparameters,
                    output_dir=tmp,
                    progress=progress,
                    project=project,
                    rows_test=rows_test,
                )
            )
            if not isinstance(result, TrainResult):
                raise TrainerError(f"trainer {kind!r} returned {type(result).__name__}, not a TrainResult")
            test_metrics = dict(result.test_metrics) if result.test_metrics else None
            test_by = "trainer" if test_metrics else None
            if rows_test and test_metrics is None and spec.evaluate is not None:
                progress(0, len(rows_test), f"evaluating {len(rows_test)} test rows")
                test_metrics = dict(spec.evaluate(spec.load(tmp), untagged(rows_test)) or {})
                test_by = "registry"
        dev_metrics = dict(result.metrics or {})
        primary = dev_metrics.get(spec.primary_metric)
        if not isinstance(primary, (int, float)) or primary != primary:  # missing or NaN
            raise TrainerError(
                f"trainer {kind!r} did not report its primary metric {spec.primary_metric!r} "
                f"on the dev rows (got {sorted(dev_metrics)})"
            )
        metrics = {"dev": dev_metrics, "primary": float(primary), "primary_metric": spec.primary_metric}
        if test_metrics:
            metrics["test"] = test_metrics
            metrics["test_evaluated_by"] = test_by
        if rows_test:
            metrics["n_test"] = len(rows_test)
            if not test_metrics:
                log.warning(
                    "model version %s: %s test rows but kind %r reports no test metrics and has no evaluate",
                    version.pk,
                    len(rows_test),
                    kind,
                )
        metrics["info"] = dict(result.info or {}, torch_threads=threads)
        (tmp / MANIFEST).write_text(
            json.dumps(
                {
                    "kind": kind,
                    "version": version.pk,
                    "project": getattr(project, "pk", None),
                    "base_model": base_model,
                    "seed": seed,
                    "hyperparameters": hyperparameters,
                    "data_snapshot": data_snapshot,
                    "data_hash": digest,
                    "n_train": len(rows_train),
                    "n_dev": len(rows_dev),
                    "n_test": len(rows_test),
                    "metrics": metrics,
                    "trained_at": timezone.now().isoformat(),
                },
                indent=2,
                default=str,
            )
        )
        target.parent.mkdir(parents=True, exist_ok=True)
        with transaction.atomic():
            locked = ModelVersion.objects.select_for_update().get(pk=version.pk)
            if locked.status != ModelVersion.Status.TRAINING or locked.attempts != attempt:
                # another attempt took the row over (this run was taken for dead) or finished it: not ours to change
                shutil.rmtree(tmp, ignore_errors=True)
                return locked
            if target.exists():  # left by a run that died between rename and commit: never marked ready
                shutil.rmtree(target)
            os.rename(tmp, target)
            renamed = True
            ModelVersion.objects.filter(pk=version.pk).update(
                status=ModelVersion.Status.READY,
                metrics=metrics,
                artifact_path=str(target),
                error="",
                trained_at=timezone.now(),
                heartbeat_at=timezone.now(),
            )
        version.refresh_from_db()
        return version
    except BaseException as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        if renamed:
            shutil.rmtree(target, ignore_errors=True)
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise  # the worker is going down: leave the row "training" for the redelivery
        error = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        try:  # only the row this attempt still owns: never one another attempt took over or finished
            ModelVersion.objects.filter(pk=version.pk, attempts=attempt, status=ModelVersion.Status.TRAINING).update(
                status=ModelVersion.Status.FAILED, error=f"{error}\n\n{traceback.format_exc()}"[:20000]
            )
        except Exception:  # noqa: BLE001
            log.exception("could not mark model version %s failed", version.pk)
        raise


# --- interrupted runs ------------------------------------------------------------------------------

INTERRUPTED = "interrupted"


def status_of(version) -> str:
    """The status a person reads: ``interrupted`` for a failed version whose run was stopped or lost (its error
    starts with "interrupted"), else the stored status."""
    if version.status == ModelVersion.Status.FAILED and (version.error or "").startswith(INTERRUPTED):
        return INTERRUPTED
    return version.status


def mark_interrupted(task_id: str, reason: str) -> int:
    """Mark the versions of ``task_id`` still ``training`` as interrupted (``failed``, error "interrupted: ...")
    at once; returns how many. For a run stopped by a signal in its own process (:func:`stop_marks_interrupted`)."""
    if not task_id:
        return 0
    return ModelVersion.objects.filter(task_id=task_id, status=ModelVersion.Status.TRAINING).update(
        status=ModelVersion.Status.FAILED, error=f"{INTERRUPTED}: {reason} at {timezone.now().isoformat()}"
    )


@contextlib.contextmanager
def stop_marks_interrupted(task_id: str):
    """A block that trains versions under ``task_id`` (a command's run): SIGTERM ends it like Ctrl-C
    (``SystemExit(143)`` raised in the main thread) and either marks its ``training`` versions interrupted before
    the exception goes on, so a killed run never waits for ``models recover`` or the beat task. (SIGKILL cannot be
    caught: such a run is swept as soon as its heartbeat is stale, :func:`sweep_interrupted`.)"""
    previous = None
    main = threading.current_thread() is threading.main_thread()

    def on_term(signum, frame):
        raise SystemExit(128 + signum)

    if main:
        previous = signal.signal(signal.SIGTERM, on_term)
    try:
        yield
    except (KeyboardInterrupt, SystemExit) as exc:
        reason = (
            "stopped by SIGINT (Ctrl-C)"
            if isinstance(exc, KeyboardInterrupt)
            else f"stopped by SIGTERM (exit {exc.code})"
            if exc.code == 128 + signal.SIGTERM
            else f"exit {exc.code}"
        )
        try:
            n = mark_interrupted(task_id, reason)
            log.warning("training %s %s: %s version(s) marked interrupted", task_id, reason, n)
        except Exception:  # noqa: BLE001 - the process is going down anyway
            log.exception("could not mark the versions of %s interrupted", task_id)
        raise
    finally:
        if main and previous is not None:
            signal.signal(signal.SIGTERM, previous)


def sweep_interrupted() -> list[dict]:
    """Mark every version still ``training`` whose heartbeat is older than the stale limit (4 heartbeats, 60 s by
    default) interrupted, without re-sending it; what ``manage.py train``, ``models list`` and ``/ml/models/`` do
    first, so a killed run shows as interrupted without waiting for the beat task or ``models recover``."""
    return recover_interrupted(requeue=False)


LOST = f"{INTERRUPTED}: no sign of life since "
RESENT = "; re-sent as ml.tasks.train "


def recover_interrupted(*, older_than: float | None = None, requeue: bool = False) -> list[dict]:
    """Versions still ``training`` whose run gave no sign of life for ``older_than`` seconds (default: 4 heartbeats).

    They are marked ``failed`` ("interrupted: no sign of life since ..."); with ``requeue`` their training request
    is sent again as ``ml.tasks.train`` under the same task id (so it reuses the row) -- and so is that of a version
    an earlier sweep without ``requeue`` (:func:`sweep_interrupted`) marked so and nobody re-sent yet (never one
    stopped on purpose: Ctrl-C / SIGTERM, :func:`stop_marks_interrupted`). Needed where the broker loses
    unacknowledged messages of a worker that was killed outright: kombu's filesystem transport keeps them only in
    the worker's memory. Redis redelivers by itself after ``visibility_timeout``; RabbitMQ when the connection
    drops; a killed pool child (prefork) is requeued by its parent thanks to ``reject_on_worker_lost``.
    """
    older_than = 4 * HEARTBEAT_SECONDS if older_than is None else older_than
    cutoff = timezone.now() - timedelta(seconds=older_than)
    found: dict[int, dict] = {}
    for version in ModelVersion.objects.filter(status=ModelVersion.Status.TRAINING):
        last = version.heartbeat_at or version.created_at
        if last > cutoff:
            continue
        updated = ModelVersion.objects.filter(pk=version.pk, status=ModelVersion.Status.TRAINING).update(
            status=ModelVersion.Status.FAILED, error=f"{LOST}{last.isoformat()}"
        )
        if updated:
            found[version.pk] = {
                "version": version.pk,
                "kind": version.kind,
                "task_id": version.task_id,
                "requeued": None,
            }
    if not requeue:
        return list(found.values())
    from .tasks import train  # cycle: the Celery task <-> service pair (ml.tasks imports this module)

    lost = ModelVersion.objects.filter(status=ModelVersion.Status.FAILED, error__startswith=LOST).exclude(
        error__contains=RESENT
    )
    for version in lost:
        req = version.request or {}
        item = found.setdefault(
            version.pk, {"version": version.pk, "kind": version.kind, "task_id": version.task_id, "requeued": None}
        )
        if not req.get("kind") or req.get("loop"):
            continue
        kwargs = {
            k: req.get(k)
            for k in ("kind", "project_id", "data", "dev_data", "seed", "hyperparameters", "base_model", "activate")
            if k in req
        }
        if not ModelVersion.objects.filter(
            pk=version.pk, status=ModelVersion.Status.FAILED, error=version.error
        ).update(error=f"{version.error}{RESENT}"):
            continue  # changed meanwhile (another sweep re-sent it, or a redelivery took it over)
        result = train.apply_async(kwargs=kwargs, task_id=version.task_id or None)
        ModelVersion.objects.filter(pk=version.pk, status=ModelVersion.Status.FAILED).update(
            error=f"{version.error}{RESENT}{result.id}"
        )
        item["requeued"] = result.id
    return list(found.values())
