"""When the agreement figures are recomputed: at most once per window per project, after commit
(:func:`argora.debounce.enqueue_once` with the ``annotation.recompute_agreement`` task)."""

from __future__ import annotations

from annotation.tasks import recompute_agreement
from argora.debounce import enqueue_once

DEBOUNCE_SECONDS = 30
DEBOUNCE_KEY = "argora:agreement-recompute:{}"
FIRST_VIEW_SECONDS = 600  # a dashboard's first view of a large project enqueues its first snapshot at most this often
FIRST_VIEW_KEY = "argora:agreement-first-view:{}"


def schedule_recompute(project_id: int, *, delay: int | None = None, force: bool = False) -> bool:
    """Enqueue ``annotation.recompute_agreement`` (after commit) at most once per ``delay`` seconds per project.

    The first call in a window takes a cache lock that lives ``delay`` seconds and enqueues the task with
    ``countdown=delay``, so every submission in the window is in the figures the task computes. Returns whether
    a task was enqueued. ``force`` (the "recompute now" button) skips the window and the countdown, and a broker
    that is down then fails the request (a submission's recompute never does).
    """
    delay = DEBOUNCE_SECONDS if delay is None else delay
    return enqueue_once(
        DEBOUNCE_KEY.format(project_id),
        recompute_agreement,
        window=delay,
        args=[project_id],
        kwargs={"force": True} if force else {},
        countdown=0 if force else delay,
        force=force,
        robust=not force,
    )


def schedule_first_snapshot(project_id: int) -> bool:
    """A large project's first snapshot, asked for by a dashboard page: enqueued at most once per
    :data:`FIRST_VIEW_SECONDS`."""
    return enqueue_once(
        FIRST_VIEW_KEY.format(project_id), recompute_agreement, window=FIRST_VIEW_SECONDS, args=[project_id]
    )
