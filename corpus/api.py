"""Corpus REST API (DRF): topics, sentences, the fact KB, debate trees, releases.

Thin viewsets: reads go through :mod:`corpus.selectors`, query strings through :mod:`corpus.filters`, and the
few writes through the ``create_*`` / ``update_*`` functions below (one transaction each; a race on a content
hash becomes the same HTTP 400 as the up-front duplicate check).
"""
from __future__ import annotations

from django.db import IntegrityError, transaction
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import mixins, permissions, serializers, viewsets

from . import hashing, selectors
from .filters import DebateFilter, FactFilter, SentenceFilter
from .models import FactVariable, Sentence, Topic
from .serializers import (DebateTreeDetailSerializer, DebateTreeSerializer, FactVariableSerializer,
                          ReleaseSerializer, SentenceSerializer, TopicSerializer)


class IsStaffOrReadOnly(permissions.BasePermission):
    """Any authenticated user reads; only staff write."""

    def has_permission(self, request, view):
        if not (request.user and request.user.is_authenticated):
            return False
        return request.method in permissions.SAFE_METHODS or request.user.is_staff


# --- writes (candidates for corpus/services.py) --------------------------------------------------
def _save_unique(obj, field: str = "text"):
    """Save in its own savepoint; a unique clash (a concurrent duplicate) is a 400 on ``field``."""
    try:
        with transaction.atomic():
            obj.save()
    except IntegrityError as exc:
        raise serializers.ValidationError({field: f"Duplicate: {exc}"}) from exc
    return obj


def create_topic(*, name: str, synonyms: list[str] | None = None, description: str = "") -> Topic:
    return _save_unique(Topic(name=name, synonyms=synonyms or [], description=description), "name")


def update_topic(topic: Topic, **fields) -> Topic:
    for key, value in fields.items():
        setattr(topic, key, value)
    return _save_unique(topic, "name")


def create_sentence(*, topic: Topic, text: str, stance: str = "none", source: str = "", external_id: str = "",
                    metadata: dict | None = None) -> Sentence:
    sentence = Sentence(topic=topic, text=text, stance=stance, source=source, external_id=external_id,
                        metadata=metadata or {}, content_hash=hashing.sentence_hash(topic.name, text))
    return _save_unique(sentence)


def create_fact(*, topic: Topic, text: str, metadata: dict | None = None, **fields) -> FactVariable:
    fact = FactVariable(topic=topic, text=text, metadata=metadata or {},
                        content_hash=hashing.fact_hash(topic.name, text), **fields)
    return _save_unique(fact)


def delete_fact(fact: FactVariable) -> None:
    """Delete a fact variable that nothing refers to; else HTTP 400 on ``id`` naming the uses (retire a variable in
    use by rejecting or merging it: ``status`` / the KB review page)."""
    from annotation.task_types.span_grounding.kb import fact_uses

    with transaction.atomic():
        fact = FactVariable.objects.select_for_update().get(pk=fact.pk)
        uses = fact_uses(fact)
        if uses:
            raise serializers.ValidationError({"id": f"fact variable {fact.pk} is in use ({'; '.join(uses)}); "
                                                     f"reject or merge it instead of deleting it"})
        fact.delete()


def update_fact(fact: FactVariable, **fields) -> FactVariable:
    for key, value in fields.items():
        setattr(fact, key, value)
    fact.content_hash = hashing.fact_hash(fact.topic.name, fact.text)
    return _save_unique(fact)


# --- views --------------------------------------------------------------------------------------
class TopicViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.CreateModelMixin,
                   mixins.UpdateModelMixin, viewsets.GenericViewSet):
    """Topics. Authenticated users read; staff create and update."""

    serializer_class = TopicSerializer
    permission_classes = [IsStaffOrReadOnly]

    def get_queryset(self):
        return selectors.topic_list()

    def perform_create(self, serializer):
        serializer.instance = create_topic(**serializer.validated_data)

    def perform_update(self, serializer):
        serializer.instance = update_topic(serializer.instance, **serializer.validated_data)


@extend_schema_view(list=extend_schema(parameters=[SentenceFilter]))
class SentenceViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.CreateModelMixin,
                      viewsets.GenericViewSet):
    """Argument sentences, ordered by id. Authenticated users read; staff add sentences."""

    serializer_class = SentenceSerializer
    permission_classes = [IsStaffOrReadOnly]

    def get_queryset(self):
        if self.action == "list":
            return selectors.sentence_list(**SentenceFilter.from_request(self.request))
        return selectors.sentence_list()

    def perform_create(self, serializer):
        serializer.instance = create_sentence(**serializer.validated_data)


@extend_schema_view(list=extend_schema(parameters=[FactFilter]))
class FactVariableViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.CreateModelMixin,
                          mixins.UpdateModelMixin, mixins.DestroyModelMixin, viewsets.GenericViewSet):
    """The fact knowledge base (ArgU). Authenticated users read; staff create, update and delete (only a variable
    nothing refers to: one in use is rejected or merged instead, HTTP 400 otherwise)."""

    serializer_class = FactVariableSerializer
    permission_classes = [IsStaffOrReadOnly]

    def get_queryset(self):
        if self.action == "list":
            return selectors.fact_list(**FactFilter.from_request(self.request))
        return selectors.fact_list()

    def perform_create(self, serializer):
        serializer.instance = create_fact(**serializer.validated_data)

    def perform_update(self, serializer):
        serializer.instance = update_fact(serializer.instance, **serializer.validated_data)

    def perform_destroy(self, instance):
        delete_fact(instance)


@extend_schema_view(list=extend_schema(parameters=[DebateFilter]))
class DebateTreeViewSet(viewsets.ReadOnlyModelViewSet):
    """Debate trees (read-only); the detail view carries all nodes."""

    def get_queryset(self):
        if self.action == "list":
            return selectors.debate_list(**DebateFilter.from_request(self.request))
        return selectors.debate_detail_queryset()

    def get_serializer_class(self):
        return DebateTreeSerializer if self.action == "list" else DebateTreeDetailSerializer


class ReleaseViewSet(viewsets.ReadOnlyModelViewSet):
    """Dataset releases with their files and checksums (staff only, read-only)."""

    serializer_class = ReleaseSerializer
    permission_classes = [permissions.IsAdminUser]

    def get_queryset(self):
        return selectors.release_list()
