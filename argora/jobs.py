"""Read side of background jobs: one view of a Celery task's state and progress for the UI, API and CLI."""
from __future__ import annotations

from celery.result import AsyncResult
from django_celery_results.models import TaskResult


def job_state(task_id: str) -> dict:
    """State, progress meta and result of a task, from the result backend."""
    result = AsyncResult(task_id)
    state = result.state
    info = result.info
    progress = info if state == "PROGRESS" and isinstance(info, dict) else None
    payload = {"id": task_id, "state": state, "progress": progress, "result": None, "error": None}
    if state == "SUCCESS":
        payload["result"] = info if isinstance(info, (dict, list, str, int, float, bool)) or info is None else repr(info)
        payload["progress"] = {"percent": 100.0}
    elif state == "FAILURE":
        payload["error"] = repr(info)
    row = TaskResult.objects.filter(task_id=task_id).only("task_name", "date_created", "date_done").first()
    if row is not None:
        payload.update(name=row.task_name, created=row.date_created, done=row.date_done)
    return payload


def recent_jobs(limit: int = 50):
    return TaskResult.objects.order_by("-date_created")[:limit]
