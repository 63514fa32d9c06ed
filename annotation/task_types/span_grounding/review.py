"""Expert review of proposed KB variables: accept, merge into an existing variable, or reject (ArgU §3.2.4:
"add those facts to the KB"). One named action per state change; each runs in a transaction with the row locked,
so two experts clicking at once cannot both act on the same proposal.

Each action also re-points the normalised spans of the proposal's community
(:class:`annotation.task_types.span_grounding.models.SpanNormalisation`, written by :func:`annotation.task_types.span_grounding.normalisation.normalise_project`)
in the same transaction: accept -> the spans map to the new variable (method ``new``), merge -> to the target
(``merged``), reject -> they stay unmapped (Others). The export then emits those ids."""
from __future__ import annotations

from django.db import transaction
from django.utils import timezone


class ReviewError(ValueError):
    """A review action that cannot be applied (``field``, ``reason``)."""

    def __init__(self, field: str, reason: str):
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


ACTIONS = ("accept", "merge", "reject")


def pending_by_topic(topic_slug: str | None = None) -> list[dict]:
    """``[{"topic", "pending": [FactVariable], "active": [FactVariable]}]`` for the review page, topics by name."""
    from corpus.models import FactVariable, Topic

    topics = Topic.objects.filter(facts__status=FactVariable.Status.PENDING).distinct().order_by("name")
    if topic_slug:
        topics = topics.filter(slug=topic_slug)
    out = []
    for topic in topics:
        pending = list(FactVariable.objects.filter(topic=topic, status=FactVariable.Status.PENDING).order_by("id"))
        active = list(FactVariable.objects.filter(topic=topic, status=FactVariable.Status.ACTIVE).order_by("id"))
        names = {v.pk: v.text for v in active}
        for v in pending:
            norm = (v.metadata or {}).get("normalisation") or {}
            v.suggested_into = norm.get("into") if norm.get("into") in names else None
            v.suggested_action = "merge" if v.suggested_into else "accept"
            v.suggested_score = norm.get("score")
        out.append({"topic": topic, "pending": pending, "active": active})
    return out


def _locked_pending(variable_id: int):
    from corpus.models import FactVariable

    v = FactVariable.objects.select_for_update().filter(pk=variable_id).first()
    if v is None:
        raise ReviewError("variable", f"no fact variable {variable_id}")
    if v.status != FactVariable.Status.PENDING:
        raise ReviewError("variable", f"variable {variable_id} is {v.status}, not pending review")
    return v


def _stamp(v, action: str, user, **extra) -> None:
    v.metadata = {**(v.metadata or {}), "review": {"action": action, "by": getattr(user, "username", None),
                                                   "at": timezone.now().isoformat(), **extra}}


def _remap_spans(proposal) -> int:
    """Point the spans of ``proposal``'s community where its new state says (see the module docstring)."""
    from .models import SpanNormalisation
    from .normalisation import proposal_mapping

    variable, method = proposal_mapping(proposal)
    return SpanNormalisation.objects.filter(proposal=proposal).update(variable_id=variable, method=method)


def do_accept_variable(variable_id: int, *, user=None):
    """A pending proposal joins the KB (status active; origin stays ``proposed``)."""
    from corpus.models import FactVariable

    with transaction.atomic():
        v = _locked_pending(variable_id)
        v.status = FactVariable.Status.ACTIVE
        _stamp(v, "accept", user)
        v.save(update_fields=["status", "metadata"])
        _remap_spans(v)
    return v


def do_merge_variable(variable_id: int, into_id, *, user=None):
    """A pending proposal is the same fact as the active variable ``into_id`` of its topic (status merged)."""
    from corpus.models import FactVariable

    try:
        into_id = int(into_id)
    except (TypeError, ValueError):
        raise ReviewError("into", "choose the variable to merge into") from None
    with transaction.atomic():
        v = _locked_pending(variable_id)
        target = FactVariable.objects.select_for_update().filter(pk=into_id).first()
        if target is None or target.pk == v.pk:
            raise ReviewError("into", f"no other fact variable {into_id}")
        if target.topic_id != v.topic_id:
            raise ReviewError("into", f"variable {into_id} belongs to another topic")
        if target.status != FactVariable.Status.ACTIVE:
            raise ReviewError("into", f"variable {into_id} is {target.status}; merge into an active variable")
        v.status = FactVariable.Status.MERGED
        v.merged_into = target
        _stamp(v, "merge", user, into=target.pk)
        v.save(update_fields=["status", "merged_into", "metadata"])
        _remap_spans(v)
    return v


def do_reject_variable(variable_id: int, *, user=None):
    from corpus.models import FactVariable

    with transaction.atomic():
        v = _locked_pending(variable_id)
        v.status = FactVariable.Status.REJECTED
        _stamp(v, "reject", user)
        v.save(update_fields=["status", "metadata"])
        _remap_spans(v)
    return v


def review(variable_id: int, action: str, *, into=None, user=None):
    """Dispatch one review action (``accept`` / ``merge`` / ``reject``)."""
    if action == "accept":
        return do_accept_variable(variable_id, user=user)
    if action == "merge":
        return do_merge_variable(variable_id, into, user=user)
    if action == "reject":
        return do_reject_variable(variable_id, user=user)
    raise ReviewError("action", f"{action!r} is not one of {', '.join(ACTIONS)}")
