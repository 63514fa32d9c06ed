"""Celery tasks of the annotation engine: one-line calls into services (safe to retry)."""
from celery import shared_task

from . import services


@shared_task(name="annotation.expire_reservations")
def expire_reservations() -> int:
    """Return stale reservations to the pool (schedule it every minute or so with celery beat)."""
    return services.expire_reservations()
