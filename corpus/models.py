"""The corpus store: topics, documents, argument sentences, the fact KB, debate trees, releases.

Rows that come from files carry a stable ``content_hash`` (see :mod:`corpus.hashing`), which makes every
import idempotent: re-importing the same file finds the same hashes and adds nothing.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils.text import slugify


class Stance(models.TextChoices):
    PRO = "pro", "Pro"
    CON = "con", "Con"
    NONE = "none", "None"


class Topic(models.Model):
    name = models.CharField(max_length=200, unique=True)
    slug = models.SlugField(max_length=200, unique=True)
    # Synonyms for the topic-relevance filter (Arg-CTRL App. B, Table 9): a sentence is relevant when it
    # contains a token of the topic name or of any synonym.
    synonyms = models.JSONField(default=list, blank=True)
    description = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def save(self, *args, **kwargs):
        if not self.slug:
            self.slug = slugify(self.name)[:200] or "topic"
        super().save(*args, **kwargs)


class Document(models.Model):
    """A raw text document (web page, comment...) that sentences were split from."""

    topic = models.ForeignKey(Topic, null=True, blank=True, on_delete=models.PROTECT, related_name="documents")
    title = models.CharField(max_length=500, blank=True)
    source = models.CharField(max_length=1000, blank=True, help_text="URL or file path it came from")
    text = models.TextField()
    content_hash = models.CharField(max_length=64, unique=True)
    metadata = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return self.title or self.source or f"document {self.pk}"


class Sentence(models.Model):
    """A sentence-level argument (or non-argument) on a topic, with its stance."""

    topic = models.ForeignKey(Topic, on_delete=models.PROTECT, related_name="sentences")
    text = models.TextField()
    stance = models.CharField(max_length=4, choices=Stance.choices, default=Stance.NONE, db_index=True)
    source = models.CharField(max_length=1000, blank=True, help_text="corpus / URL it came from")
    external_id = models.CharField(
        max_length=200, blank=True, db_index=True, help_text="id in the source corpus (UKP sentenceHash, JSONL id)"
    )
    document = models.ForeignKey(Document, null=True, blank=True, on_delete=models.SET_NULL, related_name="sentences")
    position = models.PositiveIntegerField(null=True, blank=True, help_text="index of the sentence in its document")
    # sha256 of the topic name and the whitespace-normalised text: stable across imports and machines.
    content_hash = models.CharField(max_length=64, unique=True)
    metadata = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["topic", "stance"])]

    def __str__(self) -> str:
        return self.text[:80]

    @property
    def is_argument(self) -> bool:
        return self.stance != Stance.NONE


class FactVariable(models.Model):
    """One entry of the fact knowledge base of a topic (ArgU §3)."""

    class Origin(models.TextChoices):
        SEED = "seed", "Seed"
        EXPERT = "expert", "Expert"
        PROPOSED = "proposed", "Proposed"

    class Status(models.TextChoices):
        ACTIVE = "active", "Active"
        PENDING = "pending", "Pending review"
        MERGED = "merged", "Merged"
        REJECTED = "rejected", "Rejected"

    topic = models.ForeignKey(Topic, on_delete=models.PROTECT, related_name="facts")
    text = models.TextField()
    origin = models.CharField(max_length=10, choices=Origin.choices, default=Origin.SEED)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.ACTIVE, db_index=True)
    merged_into = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="merged")
    content_hash = models.CharField(max_length=64, unique=True)
    metadata = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["topic_id", "id"]

    def __str__(self) -> str:
        return self.text[:80]


class DebateTree(models.Model):
    """A tree-structured debate (Kialo): the root node holds the thesis (debate-trees §2.1)."""

    title = models.CharField(max_length=500)
    topic = models.ForeignKey(Topic, null=True, blank=True, on_delete=models.PROTECT, related_name="debates")
    source = models.CharField(max_length=1000, blank=True)
    content_hash = models.CharField(max_length=64, unique=True)
    metadata = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return self.title[:80]


class DebateNode(models.Model):
    """One argument of a debate tree. ``stance`` is relative to the parent; the root has none."""

    tree = models.ForeignKey(DebateTree, on_delete=models.CASCADE, related_name="nodes")
    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.CASCADE, related_name="children")
    path = models.CharField(max_length=200, help_text='Kialo numbering, e.g. "1.2.3"')
    depth = models.PositiveIntegerField(default=0)
    stance = models.CharField(max_length=4, choices=Stance.choices, default=Stance.NONE)
    text = models.TextField()
    # A Kialo "-> See 1.4.2." node copies the referenced node's text; the reference is kept here.
    reference_path = models.CharField(max_length=200, blank=True)

    class Meta:
        ordering = ["tree_id", "id"]
        constraints = [models.UniqueConstraint(fields=["tree", "path"], name="unique_node_path_per_tree")]

    def __str__(self) -> str:
        return f"{self.path} {self.get_stance_display()}: {self.text[:60]}"


class Release(models.Model):
    """A versioned dataset release. Immutable once published (files, checksums and config)."""

    class Status(models.TextChoices):
        BUILDING = "building", "Building"
        PUBLISHED = "published", "Published"
        FAILED = "failed", "Failed"

    name = models.CharField(max_length=200)
    version = models.CharField(max_length=50)
    kind = models.CharField(max_length=50, default="sentences", help_text="which exporter built it")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.BUILDING)
    creator = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    config = models.JSONField(default=dict, blank=True, help_text="the configuration that made it")
    card = models.JSONField(
        default=dict, blank=True, help_text="the dataset card's license / citation / description (README.md)"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    published_at = models.DateTimeField(null=True, blank=True)
    directory = models.CharField(max_length=1000, blank=True, help_text="folder under ARGORA_ARTIFACT_ROOT")
    error = models.TextField(blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [models.UniqueConstraint(fields=["name", "version"], name="unique_release_name_version")]

    class Immutable(ValueError):
        """Raised when code tries to change what a published release is (see :meth:`save`)."""

    # What a published release *is*: none of these may change after publishing.
    IMMUTABLE_FIELDS = ("name", "version", "kind", "config", "card", "directory")

    def __str__(self) -> str:
        return f"{self.name} {self.version}"

    def save(self, *args, **kwargs):
        # Invariant: once published, a release's identity, configuration and folder never change.
        if self.pk is not None:
            stored = type(self).objects.filter(pk=self.pk).values("status", *self.IMMUTABLE_FIELDS).first()
            if stored is not None and stored["status"] == self.Status.PUBLISHED:
                changed = [f for f in self.IMMUTABLE_FIELDS if getattr(self, f) != stored[f]]
                if self.status != self.Status.PUBLISHED:
                    changed.append("status")
                if changed:
                    raise self.Immutable(
                        f"release {stored['name']} {stored['version']} is published and immutable; "
                        f"refusing to change {', '.join(changed)} (publish a new version instead)"
                    )
        super().save(*args, **kwargs)


class ReleaseFile(models.Model):
    release = models.ForeignKey(Release, on_delete=models.CASCADE, related_name="files")
    name = models.CharField(max_length=200, help_text="file name inside the release folder")
    rows = models.PositiveIntegerField(default=0)
    size = models.PositiveBigIntegerField(default=0)
    sha256 = models.CharField(max_length=64)

    class Meta:
        ordering = ["release_id", "name"]
        constraints = [models.UniqueConstraint(fields=["release", "name"], name="unique_release_file_name")]

    def __str__(self) -> str:
        return f"{self.release} / {self.name}"

    def save(self, *args, **kwargs):
        # The file list and checksums of a published release are fixed (they are written in one
        # transaction together with the status change; see corpus.releases.build_release).
        if (
            self.release_id is not None
            and Release.objects.filter(pk=self.release_id, status=Release.Status.PUBLISHED).exists()
        ):
            raise Release.Immutable(f"release {self.release} is published; its files cannot be changed")
        super().save(*args, **kwargs)
