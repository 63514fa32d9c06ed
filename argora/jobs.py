"""Read side of background jobs: one view of a Celery task's state and progress for the UI, API and CLI.

A task that makes something a person can open (a release, a model version, imported rows) says so in its result
dict with the two keys of :func:`result_link`: ``"url"`` (a path on this site) and ``"link_text"``; the job pages
show that link when the job is done, and the rest of the result as readable label/value rows.
"""

from __future__ import annotations

import json

from celery.result import AsyncResult
from django.utils.http import url_has_allowed_host_and_scheme
from django_celery_results.models import TaskResult

from . import readable
from .progress import read_progress

FINISHED = {"SUCCESS", "FAILURE", "REVOKED"}
LINK_URL, LINK_TEXT = "url", "link_text"
# the badge of each Celery state: (text, css class)
STATES = {
    "PENDING": ("waiting", "waiting"),
    "RECEIVED": ("waiting", "waiting"),
    "STARTED": ("running", "running"),
    "PROGRESS": ("running", "running"),
    "RETRY": ("retrying", "running"),
    "SUCCESS": ("done", "ok"),
    "FAILURE": ("failed", "bad"),
    "REVOKED": ("cancelled", "bad"),
}

# A Celery task id as Argora makes them (a UUID, or "<uuid>:<kind>" for a retrain step); anything else is a 404.
JOB_ROUTE = r"^jobs/(?P<task_id>[A-Za-z0-9][A-Za-z0-9:._-]{0,254})/$"


def _jsonable(value):
    return value if isinstance(value, (dict, list, str, int, float, bool)) or value is None else repr(value)


def result_link(url: str, text: str) -> dict:
    """The keys a task adds to its result dict to link the job pages to what it made:
    ``{**summary, **result_link(reverse(...), "Release corpus 1.0")}``. ``url`` must be a path on this site."""
    return {LINK_URL: url, LINK_TEXT: text}


def link_of(result) -> dict | None:
    """``{"url", "text"}`` from a result made with :func:`result_link`; None when it names none, or names anything
    but a path on this site (a result is data: never a ``javascript:`` or another host's link)."""
    if not isinstance(result, dict) or not isinstance(result.get(LINK_URL), str):
        return None
    url = result[LINK_URL]
    if not url.startswith("/") or not url_has_allowed_host_and_scheme(url, allowed_hosts=None):
        return None
    text = result.get(LINK_TEXT)
    return {"url": url, "text": text if isinstance(text, str) and text.strip() else "Open the result"}


def badge(state: str) -> dict:
    text, css = STATES.get(state, (state.lower(), "waiting"))
    return {"state": state, "text": text, "css": css}


def readable_fields(state: str, progress: dict | None, result, error) -> dict:
    """What the pages show of a job: the badge, the progress line, the result as rows and its link."""
    percent = (progress or {}).get("percent")
    return {
        "badge": badge(state),
        "progress_text": readable.progress_text(progress),
        "percent": float(percent) if isinstance(percent, (int, float)) else None,
        "summary": readable.summary(result, skip=(LINK_URL, LINK_TEXT)) if state == "SUCCESS" else [],
        "link": link_of(result) if state == "SUCCESS" else None,
        "error_line": (str(error).strip().splitlines() or [""])[-1][:300] if error else "",
    }


def job_state(task_id: str) -> dict:
    """State, progress and result of a task, and what the pages show of them (:func:`readable_fields`).

    The state and result come from the result backend in ONE read (two reads could straddle the task's end).
    While the task runs, progress comes from the cache, where :func:`argora.progress.celery_progress` writes it
    outside any database transaction the job may hold open.
    """
    result = AsyncResult(task_id)
    meta = result.backend.get_task_meta(task_id)
    state = meta.get("status", "PENDING")
    info = meta.get("result")
    payload = {"id": task_id, "state": state, "progress": None, "result": None, "error": None}
    error_text = None
    if state == "SUCCESS":
        payload["result"] = _jsonable(info)
        payload["progress"] = {"percent": 100.0}
    elif state in FINISHED:
        payload["error"] = repr(info) if not isinstance(info, str) else info
        error_text = f"{type(info).__name__}: {info}" if isinstance(info, BaseException) else payload["error"]
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
    payload.update(readable_fields(payload["state"], payload["progress"], payload["result"], error_text))
    payload["title"] = task_title(payload.get("name")) or f"Job {task_id}"
    return payload


def task_title(name: str | None) -> str:
    """``"corpus.import_corpus_file"`` -> ``"Import corpus file"``."""
    return readable.label(name.rsplit(".", 1)[-1]) if name else ""


def _stored(text):
    try:
        return json.loads(text) if text else None
    except (TypeError, ValueError):
        return text


def recent_jobs(limit: int = 50) -> list[dict]:
    """The newest jobs for the list page, each with its badge, progress line and result link."""
    rows = []
    for row in TaskResult.objects.order_by("-date_created")[:limit]:
        state, stored = row.status, _stored(row.result)
        progress = error = None
        if state not in FINISHED:
            progress = read_progress(row.task_id) or (
                stored if state == "PROGRESS" and isinstance(stored, dict) else None
            )
            if progress is not None:
                state = "PROGRESS"
        elif state != "SUCCESS":
            error = stored
            if isinstance(stored, dict):  # Celery's JSON form of the exception
                message = stored.get("exc_message", "")
                if isinstance(message, (list, tuple)):
                    message = " ".join(str(m) for m in message)
                error = f"{stored.get('exc_type', 'Error')}: {message}"
        rows.append(
            {
                "id": row.task_id,
                "name": row.task_name,
                "title": task_title(row.task_name) or f"Job {row.task_id}",
                "state": state,
                "progress": progress,
                "created": row.date_created,
                "done": row.date_done,
                **readable_fields(state, progress, stored, error),
            }
        )
    return rows
