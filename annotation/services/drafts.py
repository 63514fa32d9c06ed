"""Drafts: the answers of a HIT saved as the worker gives them, so that a reload or another tab shows them again."""

from __future__ import annotations

import json
from typing import Any

from django.db import transaction

from ..models import Assignment, AssignmentDraft, Worker
from .errors import AssignmentNotOpen, NotYourAssignment, ValidationFailed
from .items import assignment_items

DRAFT_MAX_BYTES = 256 * 1024
DRAFT_REVISION_MAX = 2**53 - 1  # the largest integer a browser's Number holds exactly


def save_draft(
    assignment: Assignment, worker: Worker, values: Any, *, feedback: str = "", revision: Any = None
) -> AssignmentDraft:
    """Keep the answers given so far (``{item id: {field: value}}``, the HIT form's fields as
    :func:`annotation.forms.parse_item_responses` reads them; partial answers are fine, nothing is validated but
    the shape) and the feedback text, so that a reload or another tab shows them again. Only for the worker's own
    assignment while it can still take answers (reserved, or expired: its answers can still be sent late).

    ``revision`` (optional, an integer that grows with each save of a page: hit.js sends its clock in ms) orders
    saves that cross on the way: one older than the draft's is dropped and the newer draft is kept, so a slow save
    that arrives after the one a page sends as it closes cannot bring back older answers. Without it the save
    always wins."""
    if assignment.worker_id != worker.pk:
        raise NotYourAssignment("this assignment is not held by you")
    if assignment.status not in (Assignment.Status.RESERVED, Assignment.Status.EXPIRED):
        raise AssignmentNotOpen(f"this assignment is {assignment.get_status_display().lower()}; nothing to save")
    if not isinstance(values, dict):
        raise ValidationFailed({"fields": "expected an object keyed by item id"})
    if revision is not None and (
        isinstance(revision, bool) or not isinstance(revision, int) or not 0 <= revision <= DRAFT_REVISION_MAX
    ):
        raise ValidationFailed({"revision": f"expected a whole number from 0 to {DRAFT_REVISION_MAX}"})
    item_ids = {item.pk for item in assignment_items(assignment)}
    clean: dict[str, dict] = {}
    for key, fields in values.items():
        if not str(key).isdigit() or int(key) not in item_ids:
            raise ValidationFailed({f"fields.{key}": "not an item of this HIT"})
        if not isinstance(fields, dict) or not all(
            isinstance(v, str) or (isinstance(v, list) and all(isinstance(x, str) for x in v)) for v in fields.values()
        ):
            raise ValidationFailed({f"fields.{key}": "expected {field: text or list of texts}"})
        clean[str(int(key))] = fields
    if not isinstance(feedback, str) or len(feedback) > 10000:
        raise ValidationFailed({"feedback": "at most 10000 characters of text"})
    if len(json.dumps(clean, ensure_ascii=False)) > DRAFT_MAX_BYTES:
        raise ValidationFailed({"fields": f"a draft holds at most {DRAFT_MAX_BYTES // 1024} KB"})
    defaults: dict[str, Any] = {"responses": clean, "feedback": feedback}
    if revision is not None:
        defaults["revision"] = revision
    with transaction.atomic():
        kept = AssignmentDraft.objects.select_for_update().filter(assignment_id=assignment.pk).first()
        if kept is None:  # the first save (update_or_create: one racing it updates instead)
            return AssignmentDraft.objects.update_or_create(assignment_id=assignment.pk, defaults=defaults)[0]
        if revision is not None and kept.revision > revision:
            return kept  # a newer save got here first
        for name, value in defaults.items():
            setattr(kept, name, value)
        kept.save(update_fields=[*defaults, "updated_at"])
    return kept


def draft_values(assignment: Assignment) -> tuple[dict[int, dict], str]:
    """The saved answers (``{item id: {field: value}}``) and feedback of a reserved assignment, for the HIT page."""
    draft = AssignmentDraft.objects.filter(assignment_id=assignment.pk).first()
    if draft is None:
        return {}, ""
    return {int(k): v for k, v in (draft.responses or {}).items() if str(k).isdigit()}, draft.feedback
