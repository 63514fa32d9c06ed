"""REST representations of the corpus. Serializers validate and shape data; writes happen in the views' write
functions (see :mod:`corpus.api`), never in ``save()``. Every error names the field it is about."""

from __future__ import annotations

from urllib.parse import quote

from django.urls import NoReverseMatch, reverse
from django.utils.text import slugify
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from . import hashing, selectors
from .models import (
    DebateNode,
    DebateTree,
    FactVariable,
    Release,
    ReleaseFile,
    Sentence,
    Topic,
)


@extend_schema_field(
    {"oneOf": [{"type": "integer"}, {"type": "string"}], "description": "Topic id, or topic name (case-insensitive)."}
)
class TopicRefField(serializers.Field):
    """A topic given by id or by name; represented by its id."""

    default_error_messages = {
        "invalid": "Give a topic id (integer) or a topic name (string).",
        "unknown": "No topic with id or name {value!r}.",
    }

    def to_internal_value(self, data):
        if isinstance(data, bool) or not isinstance(data, (int, str)):
            self.fail("invalid")
        topic = selectors.topic_by_ref(data)
        if topic is None:
            self.fail("unknown", value=data)
        return topic

    def to_representation(self, value):
        return value.pk


def _require_text(value: str) -> str:
    if not hashing.normalise(value):
        raise serializers.ValidationError("Text is empty (only whitespace).")
    return value


# --- topics -------------------------------------------------------------------------------------
class TopicSerializer(serializers.ModelSerializer):
    synonyms = serializers.ListField(
        child=serializers.CharField(max_length=200),
        required=False,
        help_text="Synonyms used by the topic-relevance filter.",
    )

    class Meta:
        model = Topic
        fields = ["id", "name", "slug", "synonyms", "description", "created_at"]
        read_only_fields = ["slug", "created_at"]

    def validate_name(self, value: str) -> str:
        value = value.strip()
        if not value:
            raise serializers.ValidationError("Name is empty.")
        if self.instance is None:
            slug = slugify(value)[:200] or "topic"
            clash = selectors.topic_by_slug(slug)
            if clash is not None:
                raise serializers.ValidationError(
                    f"Topic {clash.name!r} (id {clash.pk}) already has the slug {slug!r}; choose a different name."
                )
        elif value.lower() != self.instance.name.lower():
            sentences, facts = selectors.topic_content_counts(self.instance)
            if sentences or facts:
                raise serializers.ValidationError(
                    f"This topic has {sentences} sentences and {facts} facts whose content hashes include its "
                    "name; renaming it (other than changing case) would break re-import deduplication."
                )
        return value


# --- sentences ----------------------------------------------------------------------------------
class SentenceSerializer(serializers.ModelSerializer):
    topic = TopicRefField()
    topic_name = serializers.CharField(source="topic.name", read_only=True)
    metadata = serializers.DictField(required=False)

    class Meta:
        model = Sentence
        fields = [
            "id",
            "topic",
            "topic_name",
            "text",
            "stance",
            "source",
            "external_id",
            "document",
            "position",
            "content_hash",
            "metadata",
            "created_at",
        ]
        read_only_fields = ["document", "position", "content_hash", "created_at"]

    def validate_text(self, value: str) -> str:
        return _require_text(value)

    def validate(self, attrs):
        topic = attrs.get("topic") or getattr(self.instance, "topic", None)
        if topic is None:  # a required field: DRF has refused the request already
            return attrs
        text = attrs.get("text", getattr(self.instance, "text", ""))
        same = selectors.sentence_with_same_content(topic, text, exclude_pk=getattr(self.instance, "pk", None))
        if same is not None:
            raise serializers.ValidationError(
                {"text": f"Sentence {same.pk} on topic {topic.name!r} already has this text (same content hash)."}
            )
        return attrs


class PublicSentenceSerializer(serializers.ModelSerializer):
    """A sentence as a non-staff user reads it: the text and where it comes from, never a label (its stance, or
    labels kept in its metadata, can be the expected answer of a gold item)."""

    topic = TopicRefField(read_only=True)
    topic_name = serializers.CharField(source="topic.name", read_only=True)

    class Meta:
        model = Sentence
        fields = ["id", "topic", "topic_name", "text", "document", "position", "created_at"]
        read_only_fields = fields


# --- fact KB ------------------------------------------------------------------------------------
class FactVariableSerializer(serializers.ModelSerializer):
    topic = TopicRefField()
    topic_name = serializers.CharField(source="topic.name", read_only=True)
    metadata = serializers.DictField(required=False)

    class Meta:
        model = FactVariable
        fields = [
            "id",
            "topic",
            "topic_name",
            "text",
            "origin",
            "status",
            "merged_into",
            "content_hash",
            "metadata",
            "created_at",
        ]
        read_only_fields = ["content_hash", "created_at"]

    def validate_text(self, value: str) -> str:
        return _require_text(value)

    def validate(self, attrs):
        topic = attrs.get("topic") or getattr(self.instance, "topic", None)
        if topic is None:  # a required field: DRF has refused the request already
            return attrs
        text = attrs.get("text", getattr(self.instance, "text", ""))
        pk = getattr(self.instance, "pk", None)
        same = selectors.fact_with_same_content(topic, text, exclude_pk=pk)
        if same is not None:
            raise serializers.ValidationError(
                {"text": f"Fact {same.pk} on topic {topic.name!r} already has this text (same content hash)."}
            )
        return attrs


# --- debate trees -------------------------------------------------------------------------------
class DebateNodeSerializer(serializers.ModelSerializer):
    class Meta:
        model = DebateNode
        fields = ["id", "parent", "path", "depth", "stance", "text", "reference_path"]


class PublicDebateNodeSerializer(DebateNodeSerializer):
    """A debate node as a non-staff user reads it: no stance (a label: the answer a rating or stance item asks)."""

    class Meta(DebateNodeSerializer.Meta):
        fields = ["id", "parent", "path", "depth", "text", "reference_path"]


class DebateTreeSerializer(serializers.ModelSerializer):
    node_count = serializers.IntegerField(read_only=True)

    class Meta:
        model = DebateTree
        fields = ["id", "title", "topic", "source", "node_count", "created_at"]


class DebateTreeDetailSerializer(DebateTreeSerializer):
    nodes = DebateNodeSerializer(many=True, read_only=True)

    class Meta(DebateTreeSerializer.Meta):
        fields = DebateTreeSerializer.Meta.fields + ["metadata", "nodes"]


class PublicDebateTreeDetailSerializer(DebateTreeSerializer):
    nodes = PublicDebateNodeSerializer(many=True, read_only=True)

    class Meta(DebateTreeSerializer.Meta):
        fields = DebateTreeSerializer.Meta.fields + ["nodes"]


# --- releases -----------------------------------------------------------------------------------
def release_file_url(release_pk: int, name: str) -> str:
    """Path of the download view of one release file (``release-file``), or its literal path until it exists."""
    try:
        return reverse("release-file", args=[release_pk, name])
    except NoReverseMatch:
        return f"/releases/{release_pk}/files/{quote(name)}"


class ReleaseFileSerializer(serializers.ModelSerializer):
    url = serializers.SerializerMethodField()

    class Meta:
        model = ReleaseFile
        fields = ["name", "rows", "size", "sha256", "url"]

    @extend_schema_field(OpenApiTypes.STR)
    def get_url(self, obj: ReleaseFile) -> str:
        return release_file_url(obj.release_id, obj.name)


class ReleaseSerializer(serializers.ModelSerializer):
    creator: serializers.SlugRelatedField = serializers.SlugRelatedField(
        slug_field="username", read_only=True, allow_null=True
    )
    files = ReleaseFileSerializer(many=True, read_only=True)

    class Meta:
        model = Release
        fields = [
            "id",
            "name",
            "version",
            "kind",
            "status",
            "config",
            "created_at",
            "published_at",
            "creator",
            "error",
            "files",
        ]
        read_only_fields = fields
