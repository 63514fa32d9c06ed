"""Expert review of proposed KB variables: accept, merge into an existing variable, or reject (ArgU §3.2.4:
"add those facts to the KB"). Each action is :func:`corpus.services.change_fact_status` on a
pending proposal (the row locked in a transaction, so two experts clicking at once cannot both act on it).

Any status change of a proposal (here, in the API or the admin) also re-points the normalised spans of its community
(:class:`annotation.task_types.span_grounding.models.SpanNormalisation`, written by :func:`annotation.task_types.span_grounding.normalisation.normalise_project`)
in the same transaction (:func:`remap_on_fact_change`): accept -> the spans map to the new variable (method ``new``), merge -> to the target
(``merged``), reject -> they stay unmapped (Others). The export then emits those ids."""

from __future__ import annotations

from argora.errors import FieldError
from corpus.models import FactVariable, Topic
from corpus.services import change_fact_status

from .models import SpanNormalisation
from .normalisation import proposal_mapping

ACTIONS = ("accept", "merge", "reject")


def pending_by_topic(topic_slug: str | None = None) -> list[dict]:
    """``[{"topic", "pending": [FactVariable], "active": [FactVariable]}]`` for the review page, topics by name."""
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


def _remap_spans(proposal) -> int:
    """Point the spans of ``proposal``'s community where its new state says (see the module docstring)."""
    variable, method = proposal_mapping(proposal)
    return SpanNormalisation.objects.filter(proposal=proposal).update(variable_id=variable, method=method)


def remap_on_fact_change(sender, fact=None, **kwargs) -> None:
    """Receiver of :data:`corpus.signals.fact_changed` (connected in :mod:`.receivers`): a proposal that was
    accepted, merged or rejected -- on this page, in the API or in the admin -- re-points its spans."""
    if fact is not None:
        _remap_spans(fact)


def do_accept_variable(variable_id: int, *, user=None):
    """A pending proposal joins the KB (status active; origin stays ``proposed``)."""
    return change_fact_status(variable_id, FactVariable.Status.ACTIVE, user=user, only_pending=True)


def do_merge_variable(variable_id: int, into_id, *, user=None):
    """A pending proposal is the same fact as the active variable ``into_id`` of its topic (status merged)."""
    return change_fact_status(variable_id, FactVariable.Status.MERGED, into=into_id, user=user, only_pending=True)


def do_reject_variable(variable_id: int, *, user=None):
    return change_fact_status(variable_id, FactVariable.Status.REJECTED, user=user, only_pending=True)


def review(variable_id: int, action: str, *, into=None, user=None):
    """Dispatch one review action (``accept`` / ``merge`` / ``reject``)."""
    if action == "accept":
        return do_accept_variable(variable_id, user=user)
    if action == "merge":
        return do_merge_variable(variable_id, into, user=user)
    if action == "reject":
        return do_reject_variable(variable_id, user=user)
    raise FieldError("action", f"{action!r} is not one of {', '.join(ACTIONS)}")
