"""Read side of background jobs: one view of a Celery task's state and progress for the UI, API and CLI."""
from __future__ import annotations

from celery.result import AsyncResult
from django_celery_results.models import TaskResult

from .progress import read_progress

FINISHED = {"SUCCESS", "FAILURE", "REVOKED"}

# A Celery task id as Argora makes them (a UUID, or "<uuid>:<kind>" for a retrain step); anything else is a 404.
JOB_ROUTE = r"^jobs/(?P<task_id>[A-Za-z0-9][A-Za-z0-9:._-]{0,254})/$"


def _jsonable(value):
    return value if isinstance(value, (dict, list, str, int, float, bool)) or value is None else repr(value)


def job_state(task_id: str) -> dict:
    """State, progress and result of a task.

    The state and result come from the result backend in ONE read (two reads could straddle the task's end).
    While the task runs, progress comes from the cache, where :func:`argora.progress.celery_progress` writes it
    outside any database transaction the job may hold open.
    """
    result = AsyncResult(task_id)
    meta = result.backend.get_task_meta(task_id)
    state = meta.get("status", "PENDING")
    info = meta.get("result")
    payload = {"id": task_id, "state": state, "progress": None, "result": None, "error": None}
    if state == "SUCCESS":
        payload["result"] = _jsonable(info)
        payload["progress"] = {"percent": 100.0}
    elif state in FINISHED:
        payload["error"] = repr(info) if not isinstance(info, str) else info
    else:
        progress = read_progress(task_id)
        if progress is None and state == "PROGRESS" and isinstance(info, dict):
            progress = info
        if progress is not None:
            payload["state"] = "PROGRESS"
            payload["progress"] = progress
    row = TaskResult.objects.filter(task_id=task_id).only("task_name", "date_created", "date_done").first()
    if row is not None:
        payload.update(name=row.task_name, created=row.date_created, done=row.date_done)
    return payload


def recent_jobs(limit: int = 50):
    return TaskResult.objects.order_by("-date_created")[:limit]
