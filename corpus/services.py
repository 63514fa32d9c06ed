"""Write side of the corpus: every change to topics, sentences and the fact KB goes through one function here,
used by the REST API, the admin and the KB review page (imports have their own pipeline, :mod:`corpus.importers`).

Each write runs in one transaction; a content-hash clash (the up-front check of the API or a concurrent duplicate)
is a :class:`~argora.errors.FieldError` on the field. A fact variable's status (accept / merge / reject / retire)
changes only through :func:`change_fact_status`, which checks the merge rules and tells the apps above through
:data:`corpus.signals.fact_changed` (span grounding re-points the spans mapped to it).
"""

from __future__ import annotations

from django.db import IntegrityError, transaction
from django.utils import timezone

from argora.errors import FieldError

from . import hashing
from .models import FactVariable, Sentence, Topic
from .signals import fact_changed, fact_uses

STATE_FIELDS = ("status", "merged_into")


def _save_unique(obj, field: str = "text"):
    """Save in its own savepoint; a unique clash (a concurrent duplicate) is a FieldError on ``field``."""
    try:
        with transaction.atomic():
            obj.save()
    except IntegrityError as exc:
        raise FieldError(field, f"Duplicate: {exc}") from exc
    return obj


def create_topic(*, name: str, synonyms: list[str] | None = None, description: str = "") -> Topic:
    return _save_unique(Topic(name=name, synonyms=synonyms or [], description=description), "name")


def update_topic(topic: Topic, **fields) -> Topic:
    for key, value in fields.items():
        setattr(topic, key, value)
    return _save_unique(topic, "name")


def create_sentence(
    *,
    topic: Topic,
    text: str,
    stance: str = "none",
    source: str = "",
    external_id: str = "",
    metadata: dict | None = None,
) -> Sentence:
    sentence = Sentence(
        topic=topic,
        text=text,
        stance=stance,
        source=source,
        external_id=external_id,
        metadata=metadata or {},
        content_hash=hashing.sentence_hash(topic.name, text),
    )
    return _save_unique(sentence)


# --- the fact KB ------------------------------------------------------------------------------------
def create_fact(
    *,
    topic: Topic,
    text: str,
    metadata: dict | None = None,
    status: str | None = None,
    merged_into: FactVariable | None = None,
    **fields,
) -> FactVariable:
    """A new fact variable (content hash from topic + text). A variable created merged is checked like a merge."""
    fact = FactVariable(
        topic=topic, text=text, metadata=metadata or {}, content_hash=hashing.fact_hash(topic.name, text), **fields
    )
    with transaction.atomic():
        _save_unique(fact)
        if status is not None and (status != fact.status or merged_into is not None):
            fact = change_fact_status(fact.pk, status, into=merged_into)
    return fact


def update_fact(fact: FactVariable, *, user=None, **fields) -> FactVariable:
    """Change a variable's text / topic / origin / metadata (the hash follows); ``status`` and ``merged_into`` go
    through :func:`change_fact_status`."""
    state = {key: fields.pop(key) for key in STATE_FIELDS if key in fields}
    with transaction.atomic():
        for key, value in fields.items():
            setattr(fact, key, value)
        fact.content_hash = hashing.fact_hash(fact.topic.name, fact.text)
        _save_unique(fact)
        status = state.get("status", fact.status)
        into = state.get("merged_into", fact.merged_into if status == FactVariable.Status.MERGED else None)
        if state and (status != fact.status or getattr(into, "pk", None) != fact.merged_into_id):
            fact = change_fact_status(fact.pk, status, into=into, user=user)
    return fact


def change_fact_status(fact_id: int, status: str, *, into=None, user=None, only_pending: bool = False) -> FactVariable:
    """Set a variable's status, the one way a fact is accepted, merged, rejected or retired.

    ``merged`` needs ``into``: another, active variable of the same topic; any other status clears the merge target.
    ``only_pending``: the review page's actions, which apply to proposals awaiting review only. The variable is
    locked; the decision is stamped in ``metadata["review"]`` (action, by, at); :data:`~corpus.signals.fact_changed`
    is sent in the transaction. Raises :class:`~argora.errors.FieldError` (``variable``, ``status``, ``into``).
    """
    if status not in FactVariable.Status.values:
        raise FieldError("status", f"must be one of {', '.join(FactVariable.Status.values)}")
    with transaction.atomic():
        fact = FactVariable.objects.select_for_update().filter(pk=fact_id).first()
        if fact is None:
            raise FieldError("variable", f"no fact variable {fact_id}")
        if only_pending and fact.status != FactVariable.Status.PENDING:
            raise FieldError("variable", f"variable {fact_id} is {fact.status}, not pending review")
        target = None
        if status == FactVariable.Status.MERGED:
            target = _merge_target(fact, into)
        fact.status = status
        fact.merged_into = target
        review = {
            "action": _ACTION.get(status, status),
            "by": getattr(user, "username", None),
            "at": timezone.now().isoformat(),
        }
        if target is not None:
            review["into"] = target.pk
        fact.metadata = {**(fact.metadata or {}), "review": review}
        fact.save(update_fields=["status", "merged_into", "metadata"])
        fact_changed.send(sender=FactVariable, fact=fact)
    return fact


_ACTION: dict[str, str] = {
    FactVariable.Status.ACTIVE: "accept",
    FactVariable.Status.MERGED: "merge",
    FactVariable.Status.REJECTED: "reject",
}


def _merge_target(fact: FactVariable, into) -> FactVariable:
    into_id = getattr(into, "pk", into)
    try:
        into_id = int(into_id)
    except (TypeError, ValueError):
        raise FieldError("merged_into", "choose the variable to merge into") from None
    return check_merge(fact, FactVariable.objects.select_for_update().filter(pk=into_id).first(), into_id)


def check_merge(fact: FactVariable, target: FactVariable | None, into_id=None) -> FactVariable:
    """The merge rules (a FieldError on ``merged_into``): another variable, of the same topic, that is active;
    returns ``target`` once it passes."""
    if target is None or target.pk == fact.pk:
        raise FieldError("merged_into", f"no other fact variable {into_id if target is None else target.pk}")
    if target.topic_id != fact.topic_id:
        raise FieldError("merged_into", f"variable {target.pk} belongs to another topic")
    if target.status != FactVariable.Status.ACTIVE:
        raise FieldError("merged_into", f"variable {target.pk} is {target.status}; merge into an active variable")
    return target


def delete_fact(fact: FactVariable) -> None:
    """Delete a fact variable that nothing refers to; else a FieldError on ``id`` naming the uses (retire a variable
    in use by rejecting or merging it)."""
    with transaction.atomic():
        fact = FactVariable.objects.select_for_update().get(pk=fact.pk)
        uses = [f"{n} variable{'s' if n != 1 else ''} merged into it" for n in [fact.merged.count()] if n]
        for _receiver, found in fact_uses.send(sender=FactVariable, fact=fact):
            uses += list(found or [])
        if uses:
            raise FieldError(
                "id",
                f"fact variable {fact.pk} is in use ({'; '.join(uses)}); reject or merge it instead of deleting it",
            )
        fact.delete()
