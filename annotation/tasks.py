"""Celery tasks of the annotation engine: one-line calls into services (safe to retry)."""

from celery import shared_task

from argora.progress import celery_progress

from . import services, task_types
from .agreement.snapshots import recompute
from .models import Project
from .studio import services as studio_services


@shared_task(name="annotation.expire_reservations")
def expire_reservations() -> int:
    """Return stale reservations to the pool (schedule it every minute or so with celery beat)."""
    return services.expire_reservations()


@shared_task(name="annotation.recompute_agreement")
def recompute_agreement(project_id: int, force: bool = False) -> dict:
    """Compute and store the project's agreement snapshots (skipped when the latest covers every submission)."""
    return recompute(project_id, force=force)


@shared_task(name="annotation.reorder_hits")
def reorder_hits(project_id: int) -> dict:
    """Put the project's open HITs in its item order (active learning; :func:`annotation.services.reorder_hits`)."""
    return services.reorder_hits(Project.objects.get(pk=project_id))


@shared_task(bind=True, name="annotation.studio_import")
def studio_import(self, spec: dict) -> dict:
    """The studio's import: a new project, its items from an upload or the corpus, its HITs; all or nothing
    (:func:`annotation.studio.services.run_import`)."""
    return studio_services.run_import(spec, progress=celery_progress(self), job=self.request.id)


# the task types' own Celery tasks (annotation/task_types/<name>/tasks.py)
task_types.package_modules("tasks")
