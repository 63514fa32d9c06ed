"""Celery tasks of the ML side (``gpu`` queue: every ``ml.tasks.*`` name is routed there; :func:`gpu_task` gives late
acks and requeue on worker loss, so a worker killed mid-training leaves the message to be delivered again).

Each task is one call into :mod:`ml.loop` / :mod:`ml.versions` / :mod:`ml.silver`; the Celery task id is passed on,
so a redelivered task reuses its :class:`~ml.models.ModelVersion` row instead of creating a second one, and a task
whose version is already ready returns it. (``ml.tasks.selfcheck``, the GPU-queue health check, lives in
:mod:`argora.tasks`.)
"""

from __future__ import annotations

from celery import shared_task
from django.urls import reverse

from annotation import model_annotators
from annotation.models import Project
from argora.celery import gpu_task
from argora.jobs import result_link
from argora.progress import celery_progress

from . import silver as silver_runs
from . import versions
from .loop import maybe_retrain as retrain_loop
from .loop import train_and_activate


def _project(project_id):
    if project_id is None:
        return None
    return Project.objects.get(pk=project_id)


@gpu_task(name="ml.tasks.train")
def train(
    self,
    kind,
    project_id=None,
    data=None,
    seed=13,
    hyperparameters=None,
    activate="if_better",
    base_model=None,
    dev_data=None,
) -> dict:
    """Train a version of ``kind`` from ``data`` (a file or folder readable on the worker) or the project's labels.
    Returns :func:`ml.loop.train_and_activate`'s outcome and a link to the version's page (``url``, ``link_text``)."""
    outcome = train_and_activate(
        kind,
        project=_project(project_id),
        data=data,
        dev_data=dev_data,
        seed=int(seed),
        hyperparameters=hyperparameters,
        base_model=base_model,
        activate=activate,
        progress=celery_progress(self),
        task_id=self.request.id or "",
    )
    return {
        **outcome,
        **result_link(
            reverse("ml:model-detail", args=[outcome["version"]]), f"Model version #{outcome['version']} ({kind})"
        ),
    }


@gpu_task(name="ml.tasks.maybe_retrain")
def maybe_retrain(self, project_id, force=False) -> list:
    """The retrain loop for one project (enqueued, debounced, after submissions; see :mod:`ml.loop`)."""
    project = Project.objects.filter(pk=project_id).first()
    if project is None:  # deleted since
        return []
    return retrain_loop(project, progress=celery_progress(self), task_id=self.request.id or "", force=bool(force))


@gpu_task(name="ml.tasks.silver")
def silver(self, run_id) -> dict:
    """Silver annotation run ``run_id`` (see :mod:`ml.silver`), its shards one after the other; a redelivered task
    continues from the checkpoints."""
    return silver_runs.process(int(run_id), progress=celery_progress(self), task_id=self.request.id or "")


@gpu_task(name="ml.tasks.silver_shard")
def silver_shard(self, run_id, index) -> dict:
    """One shard of a sharded silver run (a ``chord`` member, :func:`ml.silver._enqueue`): late ack and requeue on
    worker loss (:func:`argora.celery.gpu_task`), so a killed worker's shard is delivered again and continues after
    its checkpoint; a done shard returns at once. The worker's hostname is kept on the shard row. The last shard to
    end finalises the run (:func:`ml.silver.finalise`) even if the chord callback never runs."""
    return silver_runs.process_shard(
        int(run_id),
        int(index),
        progress=celery_progress(self),
        task_id=self.request.id or "",
        worker=self.request.hostname or "",
    )


@shared_task(name="ml.silver_finalise", queue="default")
def silver_finalise(run_id) -> dict:
    """Chord callback of a sharded silver run: run-wide statistics from the shards (sums, scheme sums for the scheme
    means), done when every shard is. Idempotent; not an ``ml.tasks.*`` name, so it runs on the default queue."""
    return silver_runs.summary(silver_runs.finalise(int(run_id)))


@gpu_task(name="ml.tasks.model_annotate")
def model_annotate(self, annotator_id) -> dict:
    """A registry model annotator answers the project's items it has not answered (:func:`annotation.model_annotators.run`;
    a redelivered task goes on with the rest)."""
    return model_annotators.run(int(annotator_id), progress=celery_progress(self), task_id=self.request.id or "")


@shared_task(bind=True, name="ml.llm_annotate", queue="default", acks_late=True, reject_on_worker_lost=True)
def llm_annotate(self, annotator_id) -> dict:
    """An LLM model annotator (an HTTP client: the default queue, not an ``ml.tasks.*`` name), like
    :func:`model_annotate`."""
    return model_annotators.run(int(annotator_id), progress=celery_progress(self), task_id=self.request.id or "")


@shared_task(name="ml.recover_interrupted", queue="default")
def recover_interrupted() -> list:
    """Periodic (beat): training runs with no heartbeat for 4 beats are failed and re-sent under their task id;
    silver runs left ``running`` without a heartbeat are marked interrupted and resumed from their checkpoint
    (:func:`ml.silver.recover_interrupted`; their entries carry ``"run"``, the training ones ``"version"``).

    Needed where a broker loses the unacknowledged message of a worker killed outright (kombu's filesystem
    transport); harmless elsewhere. Not an ``ml.tasks.*`` name, so it runs on the default queue.
    """
    return versions.recover_interrupted(requeue=True) + silver_runs.recover_interrupted(requeue=True)
