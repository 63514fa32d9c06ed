"""The HIT page's context, shared by every way a worker reaches it (invite links: :mod:`annotation.views`; MTurk's
ExternalQuestion: :mod:`mturk.views`). Each caller adds what only it knows (progress of a local worker, an MTurk
preview) and renders its own template around ``annotation/hit.html``'s parts."""

from __future__ import annotations

import time

from .forms import FEEDBACK_MAX, errors_by_item


def duration_text(seconds: int) -> str:
    """``45 s`` below 90 seconds, else whole minutes (``3 min``)."""
    return f"{seconds} s" if seconds < 90 else f"{round(seconds / 60)} min"


def hit_context(
    project,
    items,
    *,
    assignment=None,
    values=None,
    item_errors=None,
    general_errors=(),
    feedback: str = "",
    feedback_error: str = "",
    reward_cents: int | None = None,
    submit_url: str = "",
    next_url: str = "",
    draft_url: str = "",
    extend_url: str = "",
    stop_url: str = "",
    **extra,
) -> dict:
    """Context of the HIT page for ``items`` (in the order shown): the task type's per-item context, the answers
    given so far (``values``: ``{item id: {field: value}}``, after a refused submission) and their errors."""
    task_type = project.get_task_type()
    values = values or {}
    item_errors = item_errors or {}
    shared = task_type.page_context(project)  # the task type reads its own config keys; the engine names none
    entries = []
    for number, item in enumerate(items, start=1):
        ctx = {"text": item.payload.get("text", ""), "topic": item.payload.get("topic", ""), **shared}
        ctx.update(task_type.item_context(project, item))
        entries.append(
            {
                "item": item,
                "ctx": ctx,
                "number": number,
                "value": values.get(item.pk, {}),
                "error": item_errors.get(item.pk, ""),
            }
        )
    reward = project.reward_cents if reward_cents is None else reward_cents
    return {
        "project": project,
        "task_type": task_type,
        "assignment": assignment,
        "items": entries,
        "answered": sum(1 for e in entries if e["value"]),
        "general_errors": list(general_errors),
        "feedback": feedback,
        "feedback_error": feedback_error,
        "feedback_max": FEEDBACK_MAX,
        "show_instructions": True,
        "hits_done": 0,
        "hits_available": 0,
        "max_hits": None,
        "expires_at": assignment.expires_at if assignment is not None else None,
        # the deadline and the server's clock in ms since the epoch: the page's countdown corrects the browser's clock
        "expires_ms": int(assignment.expires_at.timestamp() * 1000) if assignment is not None else None,
        "server_now_ms": int(time.time() * 1000),
        "time_estimate": duration_text(project.time_estimate_seconds),
        "reward": f"${reward / 100:.2f}",
        "submit_url": submit_url,
        "next_url": next_url,
        "draft_url": draft_url,
        "extend_url": extend_url,
        "stop_url": stop_url,
        **extra,
    }


def refused_submission(errors: dict[str, str], item_ids) -> dict:
    """A refused submission's errors (``services.ValidationFailed.errors``) as :func:`hit_context` arguments: per
    item, the feedback field's, and the rest."""
    per_item, general = errors_by_item(errors, item_ids)
    return {
        "item_errors": per_item,
        "feedback_error": errors.get("feedback", ""),
        "general_errors": [g for g in general if not g.startswith("feedback:")],
    }
