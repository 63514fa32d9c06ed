"""Progress reporting shared by Celery tasks, management commands and plain service calls.

Services take a ``progress`` callable ``progress(done, total, description="")`` and call it as
they go. The caller decides where it shows up:

- :func:`celery_progress` stores it in the cache under the task id (visible at once to other processes, even
  while the job holds a database transaction open) and as the task's ``PROGRESS`` state (``update_state``
  meta, which the admin's task results show); the jobs page (``/jobs/``) and the API (``/api/jobs/<id>/``)
  read it through :func:`argora.jobs.job_state`;
- :func:`cli_progress` draws a tqdm bar on stderr for management commands; when stderr is not a terminal (a log
  file, ``nohup``, a CI job, a pipe) it writes plain lines instead, ``[H:MM:SS] description: done/total (P%)
  phase``, one every ``ARGORA_PROGRESS_SECONDS`` (default 30) -- nothing for a command that ends sooner -- and
  a last one when such a command finishes (:func:`line_progress`);
- :func:`null_progress` ignores it.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Protocol

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
    last_time, last_description = 0.0, None

    def report(done: int, total: int | None, description: str = "") -> None:
        nonlocal last_time, last_description
        now = time.monotonic()
        finished = total is not None and done >= total
        if not finished and description == last_description and now - last_time < min_interval:
            return
        last_time, last_description = now, description
        task_id = getattr(task.request, "id", None)
        if task_id is None:  # called directly, not through a worker
            return
        meta = {
            "done": done,
            "total": total,
            "description": description,
            "percent": round(100.0 * done / total, 1) if total else None,
        }
        write_progress(task_id, meta)
        task.update_state(state="PROGRESS", meta=meta)

    return report


DEFAULT_LINE_SECONDS = 30.0


def line_seconds() -> float:
    """Seconds between two plain progress lines (``ARGORA_PROGRESS_SECONDS``, default 30; 0: every report)."""
    try:
        return max(0.0, float(os.environ.get("ARGORA_PROGRESS_SECONDS", DEFAULT_LINE_SECONDS)))
    except ValueError:
        return DEFAULT_LINE_SECONDS


def _clock(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


class LineProgress:
    """Progress as plain lines for a stream that is not a terminal: the first once ``every`` seconds have passed
    since the start, then one every ``every`` seconds; :meth:`close` writes the last state when a line was
    written before (a command that ends within ``every`` seconds writes nothing)."""

    def __init__(self, description: str = "", stream=None, every: float | None = None, clock=time.monotonic):
        self.description, self.stream = description, stream or sys.stderr
        self.every = line_seconds() if every is None else float(every)
        self.clock = clock
        self.started = self.last = clock()
        self.lines = 0
        self.state: tuple[int, int | None, str] | None = None

    def line(self, done: int, total: int | None, desc: str = "") -> str:
        parts = [
            f"[{_clock(self.clock() - self.started)}]",
            f"{self.description}:" if self.description else "",
            f"{done}/{total}" if total else str(done),
            f"({100.0 * done / total:.0f}%)" if total else "",
            desc,
        ]
        return " ".join(p for p in parts if p)

    def _write(self) -> None:
        if self.state is None:  # nothing reported yet
            return
        done, total, desc = self.state
        try:
            self.stream.write(self.line(done, total, desc) + "\n")
            self.stream.flush()
        except (OSError, ValueError):  # a closed pipe: progress is not worth failing for
            return
        self.lines += 1
        self.last = self.clock()

    def __call__(self, done: int, total: int | None, description: str = "") -> None:
        self.state = (done, total, description or (self.state[2] if self.state else ""))
        if self.clock() - self.last >= self.every:
            self._write()

    def close(self) -> None:
        if self.lines and self.state is not None:
            self._write()


@contextmanager
def line_progress(description: str = "", stream=None, every: float | None = None) -> Iterator[Progress]:
    """:class:`LineProgress` as a context (the last line written on exit)."""
    reporter = LineProgress(description, stream, every)
    try:
        yield reporter
    finally:
        reporter.close()


@contextmanager
def cli_progress(description: str = "", stream=None, disable: bool | None = None) -> Iterator[Progress]:
    """A tqdm progress bar on stderr when it is a terminal (or ``disable=False``); plain lines
    (:func:`line_progress`) when it is not; nothing with ``disable=True``."""
    from tqdm import tqdm

    stream = stream or sys.stderr
    if disable is None and not getattr(stream, "isatty", lambda: False)():
        with line_progress(description, stream) as lines:
            yield lines
        return
    bar = tqdm(total=None, desc=description, file=stream, disable=bool(disable), unit="row")

    def report(done: int, total: int | None, description: str = "") -> None:  # the Progress signature
        if total is not None and bar.total != total:
            bar.total = total
        if description:
            bar.set_description(description, refresh=False)
        bar.n = done
        bar.refresh()

    try:
        yield report
    finally:
        bar.close()
