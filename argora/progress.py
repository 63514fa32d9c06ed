"""Progress reporting shared by Celery tasks, management commands and plain service calls.

Services take a ``progress`` callable ``progress(done, total, description="")`` and call it as
they go. The caller decides where it shows up:

- :func:`celery_progress` stores it in the cache under the task id (visible at once to other processes, even
  while the job holds a database transaction open) and as the task's ``PROGRESS`` state (``update_state``
  meta, which the admin's task results show); the jobs page (``/jobs/``) and the API (``/api/jobs/<id>/``)
  read it through :func:`argora.jobs.job_state`;
- :func:`cli_progress` draws a tqdm bar on stderr for management commands;
- :func:`null_progress` ignores it.
"""
from __future__ import annotations

import sys
import time
from contextlib import contextmanager
from typing import Iterator, Protocol

from django.core.cache import cache


class Progress(Protocol):
    def __call__(self, done: int, total: int | None, description: str = "") -> None: ...


def null_progress(done: int, total: int | None, description: str = "") -> None:
    return None


PROGRESS_KEY = "argora:job-progress:{}"
PROGRESS_TTL = 7 * 24 * 3600


def write_progress(task_id: str, meta: dict) -> None:
    cache.set(PROGRESS_KEY.format(task_id), meta, PROGRESS_TTL)


def read_progress(task_id: str) -> dict | None:
    return cache.get(PROGRESS_KEY.format(task_id))


def celery_progress(task, min_interval: float = 0.5) -> Progress:
    """Report progress as the task's PROGRESS state; throttled to one write per ``min_interval`` s, except that the
    first report of a new phase (another ``description``) and the last one (``done >= total``) always go out."""
    last = [0.0, None]

    def report(done: int, total: int | None, description: str = "") -> None:
        now = time.monotonic()
        finished = total is not None and done >= total
        if not finished and description == last[1] and now - last[0] < min_interval:
            return
        last[0], last[1] = now, description
        task_id = getattr(task.request, "id", None)
        if task_id is None:  # called directly, not through a worker
            return
        meta = {"done": done, "total": total, "description": description,
                "percent": round(100.0 * done / total, 1) if total else None}
        write_progress(task_id, meta)
        task.update_state(state="PROGRESS", meta=meta)

    return report


@contextmanager
def cli_progress(description: str = "", stream=None, disable: bool | None = None) -> Iterator[Progress]:
    """A tqdm progress bar on stderr; hidden when stderr is not a terminal unless ``disable=False``."""
    from tqdm import tqdm

    stream = stream or sys.stderr
    if disable is None:
        disable = not getattr(stream, "isatty", lambda: False)()
    bar = tqdm(total=None, desc=description, file=stream, disable=disable, unit="row")

    def report(done: int, total: int | None, desc: str = "") -> None:
        if total is not None and bar.total != total:
            bar.total = total
        if desc:
            bar.set_description(desc, refresh=False)
        bar.n = done
        bar.refresh()

    try:
        yield report
    finally:
        bar.close()

