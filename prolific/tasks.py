"""Celery tasks of the Prolific integration: one-line calls into services; safe to retry (every Prolific call is
logged under a unique key before it is made, see prolific.client.call_once)."""

from celery import shared_task

from annotation.models import Project

from . import sync


@shared_task(name="prolific.sync_project")
def sync_project_task(project_id: int) -> dict:
    return sync.sync_project(Project.objects.get(pk=project_id)).as_dict()


@shared_task(name="prolific.sync_all")
def sync_all_task() -> dict:
    """The periodic sync (CELERY_BEAT_SCHEDULE["prolific-sync"])."""
    return sync.sync_all()
