"""Read side of the corpus: small query functions used by the REST API (and anything else that reads).

Every function returns a queryset (or one row / ``None``); none of them writes.
"""

from __future__ import annotations

from django.db.models import Count, Prefetch, QuerySet

from . import hashing
from .models import DebateNode, DebateTree, FactVariable, Release, Sentence, Topic


# --- topics -------------------------------------------------------------------------------------
def topic_list() -> QuerySet[Topic]:
    return Topic.objects.order_by("name")


def topic_by_ref(ref: int | str) -> Topic | None:
    """A topic by id (an int, or a string of digits) or by name (exact first, then case-insensitive)."""
    if isinstance(ref, int) or (isinstance(ref, str) and ref.strip().isdigit()):
        topic = Topic.objects.filter(pk=int(ref)).first()
        if topic is not None or isinstance(ref, int):
            return topic
    name = str(ref).strip()
    if not name:
        return None
    topic = Topic.objects.filter(name=name).first()
    if topic is None:
        matches = list(Topic.objects.filter(name__iexact=name)[:2])
        topic = matches[0] if len(matches) == 1 else None
    return topic


def topic_by_slug(slug: str, *, exclude_pk: int | None = None) -> Topic | None:
    qs = Topic.objects.filter(slug=slug)
    if exclude_pk is not None:
        qs = qs.exclude(pk=exclude_pk)
    return qs.first()


def topic_content_counts(topic: Topic) -> tuple[int, int]:
    """(sentences, facts) of a topic: rows whose content hash includes the topic name."""
    return topic.sentences.count(), topic.facts.count()


# --- sentences ----------------------------------------------------------------------------------
def sentence_list(
    *, topic: Topic | None = None, stance: str | None = None, search: str | None = None
) -> QuerySet[Sentence]:
    qs = Sentence.objects.select_related("topic")
    if topic is not None:
        qs = qs.filter(topic=topic)
    if stance:
        qs = qs.filter(stance=stance)
    if search:
        qs = qs.filter(text__icontains=search)
    return qs.order_by("id")


def sentence_with_same_content(topic: Topic, text: str, *, exclude_pk: int | None = None) -> Sentence | None:
    qs = Sentence.objects.filter(content_hash=hashing.sentence_hash(topic.name, text))
    if exclude_pk is not None:
        qs = qs.exclude(pk=exclude_pk)
    return qs.first()


# --- fact KB ------------------------------------------------------------------------------------
def fact_list(
    *, topic: Topic | None = None, status: str | None = None, origin: str | None = None
) -> QuerySet[FactVariable]:
    qs = FactVariable.objects.select_related("topic")
    if topic is not None:
        qs = qs.filter(topic=topic)
    if status:
        qs = qs.filter(status=status)
    if origin:
        qs = qs.filter(origin=origin)
    return qs.order_by("id")


def fact_with_same_content(topic: Topic, text: str, *, exclude_pk: int | None = None) -> FactVariable | None:
    qs = FactVariable.objects.filter(content_hash=hashing.fact_hash(topic.name, text))
    if exclude_pk is not None:
        qs = qs.exclude(pk=exclude_pk)
    return qs.first()


# --- debate trees -------------------------------------------------------------------------------
def debate_list(*, topic: Topic | None = None) -> QuerySet[DebateTree]:
    qs = DebateTree.objects.select_related("topic").annotate(node_count=Count("nodes"))
    if topic is not None:
        qs = qs.filter(topic=topic)
    return qs.order_by("id")


def debate_detail_queryset() -> QuerySet[DebateTree]:
    nodes = DebateNode.objects.order_by("id")
    return (
        DebateTree.objects.select_related("topic")
        .annotate(node_count=Count("nodes"))
        .prefetch_related(Prefetch("nodes", queryset=nodes))
        .order_by("id")
    )


# --- releases -----------------------------------------------------------------------------------
def release_list() -> QuerySet[Release]:
    return Release.objects.select_related("creator").prefetch_related("files").order_by("-created_at", "-id")
