"""Celery tasks of the annotation engine: one-line calls into services (safe to retry)."""
from celery import shared_task

from . import services, task_types
from .agreement.snapshots import recompute


@shared_task(name="annotation.expire_reservations")
def expire_reservations() -> int:
    """Return stale reservations to the pool (schedule it every minute or so with celery beat)."""
    return services.expire_reservations()


@shared_task(name="annotation.recompute_agreement")
def recompute_agreement(project_id: int, force: bool = False) -> dict:
    """Compute and store the project's agreement snapshots (skipped when the latest covers every submission)."""
    return recompute(project_id, force=force)


# the task types' own Celery tasks (annotation/task_types/<name>/tasks.py)
task_types.package_modules("tasks")
