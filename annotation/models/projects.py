"""Projects and what they are made of: items, gold items, HITs and their item slots.

Invariants live here as constraints; the state changes (allocation, submission, expiry) live in
:mod:`annotation.services` and run in transactions with row locks.

One counter on :class:`HIT` is denormalised on purpose, so that "give me the next HIT" is one indexed
row lock and not a count over assignments: ``taken`` = assignments that hold a slot (reserved + submitted
+ approved); never above the project's R (checked with ``taken < R`` in the same UPDATE that increments
it). Submission does not touch the HIT row, so submitting never blocks allocation.
"""

from __future__ import annotations

import secrets

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q

from argora.html import clean_html

from ..task_types import base as task_type_contract
from ..task_types import get_task_type


def new_invite_token() -> str:
    return secrets.token_urlsafe(24)


def new_completion_code() -> str:
    # Upper-case, no look-alike characters: people copy it into Prolific / MTurk by hand.
    alphabet = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
    return "".join(secrets.choice(alphabet) for _ in range(10))


# The engine's own settings and records of a project, kept in ``Project.engine`` (never in ``config``, which holds
# only the task type's options): the item order, the retrain loop's settings, the studio's import / addition
# records and the guidelines' Markdown source. Migration 0012 moved them out of ``config``.
ENGINE_KEYS = task_type_contract.ENGINE_KEYS  # one list, in the contract both sides read


def validate_task_type(value: str) -> None:
    """A project's task type must be registered: the admin, the API, the studio, the CLI and ``Project.save`` all
    refuse any other (``sentence-label`` for ``sentence_label`` would otherwise make every page of the project
    fail)."""
    try:
        get_task_type(value)
    except KeyError as exc:
        raise ValidationError(str(exc.args[0]), code="unknown_task_type") from None


class Project(models.Model):
    class Status(models.TextChoices):
        DRAFT = "draft", "Draft"
        ACTIVE = "active", "Active"
        PAUSED = "paused", "Paused"
        CLOSED = "closed", "Closed"

    name = models.CharField(max_length=200)
    slug = models.SlugField(max_length=200, unique=True)
    task_type = models.CharField(
        max_length=100, validators=[validate_task_type], help_text="registry key of the task type, e.g. sentence_label"
    )
    guidelines = models.TextField(blank=True, help_text="HTML shown in the instructions panel of every HIT")
    config = models.JSONField(default=dict, blank=True, help_text='task-type options, e.g. {"labels": ["pro", "con"]}')
    engine = models.JSONField(
        default=dict,
        blank=True,
        help_text="the engine's settings and records of the project (item order, retraining, studio imports and "
        "additions, the guidelines' Markdown source); the task type's options stay in config",
    )
    assignments_per_item = models.PositiveSmallIntegerField(default=3, help_text="R: responses wanted per item")
    items_per_hit = models.PositiveSmallIntegerField(default=5)
    gold_rate = models.FloatField(default=0.0, help_text="gold items added per HIT, as a fraction of its items (0..1)")
    max_hits_per_worker = models.PositiveIntegerField(null=True, blank=True, help_text="empty = unlimited")
    reward_cents = models.PositiveIntegerField(default=0)
    time_estimate_seconds = models.PositiveIntegerField(default=0)
    reservation_timeout_seconds = models.PositiveIntegerField(default=1800)
    gold_min_items = models.PositiveIntegerField(
        default=3, help_text="N: gold items a worker answers before accuracy can block them (0 = never block)"
    )
    gold_min_accuracy = models.FloatField(default=0.7)
    invite_token = models.CharField(max_length=64, unique=True, default=new_invite_token)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.DRAFT, db_index=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="annotation_projects"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "id"]
        constraints = [
            models.CheckConstraint(condition=Q(assignments_per_item__gte=1), name="project_r_positive"),
            models.CheckConstraint(condition=Q(items_per_hit__gte=1), name="project_items_per_hit_positive"),
            models.CheckConstraint(condition=Q(gold_rate__gte=0) & Q(gold_rate__lte=1), name="project_gold_rate_0_1"),
            models.CheckConstraint(
                condition=Q(gold_min_accuracy__gte=0) & Q(gold_min_accuracy__lte=1), name="project_gold_accuracy_0_1"
            ),
        ]

    def __str__(self) -> str:
        return self.name

    def save(self, *args, **kwargs):
        validate_task_type(self.task_type)  # no path writes a project of a task type that is not installed
        self.guidelines = clean_html(self.guidelines)  # nor guidelines with a script (API, admin, CLI: argora.html)
        super().save(*args, **kwargs)

    @property
    def is_active(self) -> bool:
        return self.status == self.Status.ACTIVE

    def get_task_type(self):
        return get_task_type(self.task_type)


class Item(models.Model):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="items")
    payload = models.JSONField(default=dict)
    sentence = models.ForeignKey(
        "corpus.Sentence", null=True, blank=True, on_delete=models.SET_NULL, related_name="annotation_items"
    )
    external_key = models.CharField(max_length=200, blank=True)
    is_gold = models.BooleanField(default=False)
    # A training item is a gold item (expected answer + explanation) shown only in the study's training phase
    # (annotation.phases): never in a HIT, never interleaved as gold, in no count, agreement figure or item export.
    is_training = models.BooleanField(
        default=False, help_text="shown only in the training phase; never in a HIT or any count"
    )
    position = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["project_id", "position", "id"]
        indexes = [models.Index(fields=["project", "is_gold", "position"])]
        constraints = [
            models.CheckConstraint(condition=Q(is_training=False) | Q(is_gold=True), name="training_item_is_gold")
        ]

    def __str__(self) -> str:
        kind = "training " if self.is_training else "gold " if self.is_gold else ""
        return f"{kind}item {self.pk} of {self.project_id}"


class GoldItem(models.Model):
    item = models.OneToOneField(Item, on_delete=models.CASCADE, related_name="gold", limit_choices_to={"is_gold": True})
    expected = models.JSONField(help_text="the expected response, in the task type's response format")
    tolerance = models.FloatField(default=0.0)
    explanation = models.TextField(
        blank=True, help_text="shown to the worker after a miss (training items: after every answer)"
    )

    def __str__(self) -> str:
        return f"gold for item {self.item_id}"


class HIT(models.Model):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="hits")
    position = models.PositiveIntegerField(default=0)
    items = models.ManyToManyField(Item, through="HITItem", related_name="hits")
    taken = models.PositiveSmallIntegerField(
        default=0, help_text="assignments holding a slot (reserved/submitted/approved)"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = "HIT"
        ordering = ["project_id", "position", "id"]
        indexes = [models.Index(fields=["project", "taken", "position"])]
        constraints = [
            models.UniqueConstraint(fields=["project", "position"], name="unique_hit_position"),
        ]

    def __str__(self) -> str:
        return f"HIT {self.position} of {self.project}"


class HITItem(models.Model):
    hit = models.ForeignKey(HIT, on_delete=models.CASCADE, related_name="hit_items")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="hit_items")
    position = models.PositiveSmallIntegerField(default=0)

    class Meta:
        ordering = ["hit_id", "position"]
        constraints = [
            # every (non-gold) item is in exactly one HIT
            models.UniqueConstraint(fields=["item"], name="item_in_one_hit"),
            models.UniqueConstraint(fields=["hit", "position"], name="unique_hititem_position"),
        ]

    def __str__(self) -> str:
        return f"item {self.item_id} at {self.position} of HIT {self.hit_id}"
