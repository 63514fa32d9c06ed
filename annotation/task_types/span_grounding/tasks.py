"""Celery tasks for span grounding: one-line calls into the services (idempotent, safe to retry). Encoding runs on
the ``gpu`` queue."""

from __future__ import annotations

from annotation.models import Project
from argora.celery import gpu_task
from argora.progress import celery_progress
from corpus.models import Topic

from .normalisation import normalise_pending, normalise_project

__all__ = ["normalise_pending_task", "normalise_project_task"]


@gpu_task(name="annotation.spans.normalise_project")
def normalise_project_task(self, project_id: int, threshold: float = 0.85, cluster_threshold: float = 0.75) -> dict:
    return normalise_project(
        Project.objects.get(pk=project_id),
        threshold=threshold,
        cluster_threshold=cluster_threshold,
        progress=celery_progress(self),
    )


@gpu_task(name="annotation.spans.normalise_pending")
def normalise_pending_task(
    self, topic_id: int | None = None, threshold: float = 0.85, cluster_threshold: float = 0.75
) -> dict:
    topic = Topic.objects.get(pk=topic_id) if topic_id else None
    return normalise_pending(
        topic, threshold=threshold, cluster_threshold=cluster_threshold, progress=celery_progress(self)
    )
