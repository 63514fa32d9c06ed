"""Corpus REST API (DRF): topics, sentences, the fact KB, debate trees, releases.

Thin viewsets: reads go through :mod:`corpus.selectors`, query strings through :mod:`corpus.filters`, and the
writes through :mod:`corpus.services` (one transaction each; a race on a content hash becomes the same HTTP 400 as
the up-front duplicate check; a fact's status and merge target change only through
:func:`corpus.services.change_fact_status`).
"""

from __future__ import annotations

from contextlib import contextmanager

from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import mixins, permissions, serializers, viewsets

from argora import access
from argora.errors import FieldError
from argora.pagination import KeysetPagination

from . import selectors, services
from .filters import DebateFilter, FactFilter, SentenceFilter
from .serializers import (
    DebateTreeDetailSerializer,
    DebateTreeSerializer,
    FactVariableSerializer,
    PublicDebateTreeDetailSerializer,
    PublicSentenceSerializer,
    ReleaseSerializer,
    SentenceSerializer,
    TopicSerializer,
)


class IsStaffOrReadOnly(permissions.BasePermission):
    """Any authenticated user reads; only staff write."""

    def has_permission(self, request, view):
        if not (request.user and request.user.is_authenticated):
            return False
        return request.method in permissions.SAFE_METHODS or request.user.is_staff


@contextmanager
def _as_validation_errors():
    """A service's FieldError as DRF's usual 400 body on this API (``{field: reason}``)."""
    try:
        yield
    except FieldError as exc:
        raise serializers.ValidationError({exc.field: exc.reason}) from None


# --- views --------------------------------------------------------------------------------------
class TopicViewSet(
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    mixins.UpdateModelMixin,
    viewsets.GenericViewSet,
):
    """Topics. Authenticated users read; staff create and update."""

    serializer_class = TopicSerializer
    permission_classes = [IsStaffOrReadOnly]

    def get_queryset(self):
        return selectors.topic_list()

    def perform_create(self, serializer):
        with _as_validation_errors():
            serializer.instance = services.create_topic(**serializer.validated_data)

    def perform_update(self, serializer):
        with _as_validation_errors():
            serializer.instance = services.update_topic(serializer.instance, **serializer.validated_data)


_READER_NOTE = (
    "Staff receive the full sentence (stance, source, external_id, content_hash, metadata too); other "
    "users receive these fields only."
)


@extend_schema_view(
    list=extend_schema(parameters=[SentenceFilter], responses=PublicSentenceSerializer, description=_READER_NOTE),
    retrieve=extend_schema(responses=PublicSentenceSerializer, description=_READER_NOTE),
)
class SentenceViewSet(
    mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.CreateModelMixin, viewsets.GenericViewSet
):
    """Argument sentences, ordered by id. Staff read everything and add sentences; other authenticated users read
    the texts without their labels (stance, metadata): a sentence's label can be a gold item's expected answer.
    Pages are keyset pages (:class:`argora.pagination.KeysetPagination`: the next / previous links carry a cursor,
    so no page of a million rows costs an OFFSET or a COUNT)."""

    serializer_class = SentenceSerializer
    permission_classes = [IsStaffOrReadOnly]
    pagination_class = KeysetPagination

    def get_serializer_class(self):
        if getattr(self, "swagger_fake_view", False):  # the schema documents the staff view
            return SentenceSerializer
        return SentenceSerializer if self.request.user.is_staff else PublicSentenceSerializer

    def get_queryset(self):
        if self.action == "list":
            filters = SentenceFilter.from_request(self.request)
            if filters.get("stance") and not self.request.user.is_staff:
                raise serializers.ValidationError({"stance": "filtering by label is for staff only"})
            return selectors.sentence_list(**filters)
        return selectors.sentence_list()

    def perform_create(self, serializer):
        with _as_validation_errors():
            serializer.instance = services.create_sentence(**serializer.validated_data)


@extend_schema_view(list=extend_schema(parameters=[FactFilter]))
class FactVariableViewSet(
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    mixins.UpdateModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet,
):
    """The fact knowledge base (ArgU). Authenticated users read; staff create, update and delete (only a variable
    nothing refers to: one in use is rejected or merged instead, HTTP 400 otherwise)."""

    serializer_class = FactVariableSerializer
    permission_classes = [IsStaffOrReadOnly]

    def get_queryset(self):
        if self.action == "list":
            return selectors.fact_list(**FactFilter.from_request(self.request))
        return selectors.fact_list()

    def perform_create(self, serializer):
        with _as_validation_errors():
            serializer.instance = services.create_fact(**serializer.validated_data)

    def perform_update(self, serializer):
        with _as_validation_errors():
            serializer.instance = services.update_fact(
                serializer.instance, user=self.request.user, **serializer.validated_data
            )

    def perform_destroy(self, instance):
        with _as_validation_errors():
            services.delete_fact(instance)


@extend_schema_view(
    list=extend_schema(parameters=[DebateFilter]),
    retrieve=extend_schema(
        responses=PublicDebateTreeDetailSerializer,
        description="Staff also receive each node's stance and the metadata.",
    ),
)
class DebateTreeViewSet(viewsets.ReadOnlyModelViewSet):
    """Debate trees (read-only); the detail view carries all nodes (for non-staff users without their stances)."""

    def get_queryset(self):
        if self.action == "list":
            return selectors.debate_list(**DebateFilter.from_request(self.request))
        return selectors.debate_detail_queryset()

    def get_serializer_class(self):
        if self.action == "list":
            return DebateTreeSerializer
        if self.request.user.is_staff or getattr(self, "swagger_fake_view", False):
            return DebateTreeDetailSerializer
        return PublicDebateTreeDetailSerializer


class TeamUser(permissions.BasePermission):
    """The staff side: a user of some project's team or a researcher (:func:`argora.access.team_user`)."""

    message = "for research teams only"

    def has_permission(self, request, view):
        return access.team_user(request.user)


class ReleaseViewSet(viewsets.ReadOnlyModelViewSet):
    """Dataset releases with their files and checksums (read-only): a project's releases to its team
    (:func:`argora.access.visible_releases`), the others to researchers."""

    serializer_class = ReleaseSerializer
    permission_classes = [permissions.IsAuthenticated, TeamUser]

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):
            return selectors.release_list()
        return access.visible_releases(self.request.user, selectors.release_list())
