"""Staff and experts after the work: approving or rejecting a submitted assignment, removing one, and an expert's
final answer of an item (adjudication)."""

from __future__ import annotations

from django.db import transaction
from django.db.models import F

from ..models import HIT, Adjudication, Assignment, Item
from ..task_types import ResponseInvalid, get_task_type
from .errors import AdjudicationRefused, AssignmentNotOpen


def set_assignment_status(assignment: Assignment, status: str) -> Assignment:
    """Staff review: approve or reject a submitted assignment (a rejection frees its slot for another worker)."""
    if status not in (Assignment.Status.APPROVED, Assignment.Status.REJECTED):
        raise ValueError("status must be approved or rejected")
    with transaction.atomic():
        locked = Assignment.objects.select_for_update(no_key=True).get(pk=assignment.pk)
        if locked.status == status:
            return locked
        if locked.status not in Assignment.DONE:
            raise AssignmentNotOpen(f"only submitted assignments can be {status}")
        if status == Assignment.Status.REJECTED:
            HIT.objects.filter(pk=locked.hit_id).update(taken=F("taken") - 1)
        locked.status = status
        locked.save(update_fields=["status"])
    return locked


def do_release_assignment(assignment: Assignment) -> bool:
    """Delete an assignment (with its responses and gold records) and give its slot back to the HIT.

    The one way staff remove an assignment (the admin's delete goes through here), so that ``HIT.taken`` stays
    the number of assignments holding a slot: the assignment and its HIT are locked (``select_for_update``) in
    one transaction, the counter is decremented only if the assignment held a slot (reserved / submitted /
    approved; a rejected or expired one gave it back already), then the row is deleted. Returns ``False`` when
    the assignment was gone already (a second click, a concurrent delete).
    """
    with transaction.atomic():
        locked = Assignment.objects.select_for_update().filter(pk=assignment.pk).values("hit_id", "status").first()
        if locked is None:
            return False
        if locked["status"] in Assignment.HOLDING:
            HIT.objects.select_for_update(no_key=True).filter(pk=locked["hit_id"]).values_list("pk").first()
            HIT.objects.filter(pk=locked["hit_id"], taken__gt=0).update(taken=F("taken") - 1)
        Assignment.objects.filter(pk=assignment.pk).delete()
    return True


def adjudicate_item(item: Item, answer: dict, *, expert, note: str = "") -> Adjudication:
    """Record an expert's final answer for ``item`` (who and when), checked by the task type like a worker's
    response (:meth:`~annotation.task_types.base.TaskType.adjudicate`, which also applies what the task type keeps
    besides the :class:`~annotation.models.Adjudication` row, e.g. the aspect export's ``payload["adjudicated"]``).
    All or nothing; raises :class:`AdjudicationRefused` naming the field."""
    project = item.project
    tt = get_task_type(project.task_type)
    if not isinstance(answer, dict):
        raise AdjudicationRefused("answer", "expected an object")
    with transaction.atomic():
        try:
            cleaned = tt.adjudicate(project, item, answer, expert=expert)
        except ResponseInvalid as exc:
            raise AdjudicationRefused(exc.field, exc.reason) from None
        return Adjudication.objects.create(item=item, answer=cleaned, expert=expert, note=note or "")
