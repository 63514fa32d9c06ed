"""The annotation engine: projects, items, HITs, assignments, responses, workers and gold.

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

from . import task_types
from .task_types import get_task_type


def new_invite_token() -> str:
    return secrets.token_urlsafe(24)


def new_completion_code() -> str:
    # Upper-case, no look-alike characters: people copy it into Prolific / MTurk by hand.
    alphabet = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
    return "".join(secrets.choice(alphabet) for _ in range(10))


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
    task_type = models.CharField(max_length=100, validators=[validate_task_type],
                                 help_text="registry key of the task type, e.g. sentence_label")
    guidelines = models.TextField(blank=True, help_text="HTML shown in the instructions panel of every HIT")
    config = models.JSONField(default=dict, blank=True, help_text='task-type options, e.g. {"labels": ["pro", "con"]}')
    assignments_per_item = models.PositiveSmallIntegerField(default=3, help_text="R: responses wanted per item")
    items_per_hit = models.PositiveSmallIntegerField(default=5)
    gold_rate = models.FloatField(default=0.0, help_text="gold items added per HIT, as a fraction of its items (0..1)")
    max_hits_per_worker = models.PositiveIntegerField(null=True, blank=True, help_text="empty = unlimited")
    reward_cents = models.PositiveIntegerField(default=0)
    time_estimate_seconds = models.PositiveIntegerField(default=0)
    reservation_timeout_seconds = models.PositiveIntegerField(default=1800)
    gold_min_items = models.PositiveIntegerField(
        default=3, help_text="N: gold items a worker answers before accuracy can block them (0 = never block)")
    gold_min_accuracy = models.FloatField(default=0.7)
    invite_token = models.CharField(max_length=64, unique=True, default=new_invite_token)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.DRAFT, db_index=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="annotation_projects")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "id"]
        constraints = [
            models.CheckConstraint(condition=Q(assignments_per_item__gte=1), name="project_r_positive"),
            models.CheckConstraint(condition=Q(items_per_hit__gte=1), name="project_items_per_hit_positive"),
            models.CheckConstraint(condition=Q(gold_rate__gte=0) & Q(gold_rate__lte=1), name="project_gold_rate_0_1"),
            models.CheckConstraint(condition=Q(gold_min_accuracy__gte=0) & Q(gold_min_accuracy__lte=1),
                                   name="project_gold_accuracy_0_1"),
        ]

    def __str__(self) -> str:
        return self.name

    def save(self, *args, **kwargs):
        validate_task_type(self.task_type)  # no path writes a project of a task type that is not installed
        super().save(*args, **kwargs)

    @property
    def is_active(self) -> bool:
        return self.status == self.Status.ACTIVE

    def get_task_type(self):
        return get_task_type(self.task_type)


class Item(models.Model):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="items")
    payload = models.JSONField(default=dict)
    sentence = models.ForeignKey("corpus.Sentence", null=True, blank=True, on_delete=models.SET_NULL,
                                 related_name="annotation_items")
    external_key = models.CharField(max_length=200, blank=True)
    is_gold = models.BooleanField(default=False)
    position = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["project_id", "position", "id"]
        indexes = [models.Index(fields=["project", "is_gold", "position"])]

    def __str__(self) -> str:
        return f"{'gold ' if self.is_gold else ''}item {self.pk} of {self.project_id}"


class GoldItem(models.Model):
    item = models.OneToOneField(Item, on_delete=models.CASCADE, related_name="gold", limit_choices_to={"is_gold": True})
    expected = models.JSONField(help_text="the expected response, in the task type's response format")
    tolerance = models.FloatField(default=0.0)
    explanation = models.TextField(blank=True, help_text="shown to the worker after a miss")

    def __str__(self) -> str:
        return f"gold for item {self.item_id}"


class HIT(models.Model):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="hits")
    position = models.PositiveIntegerField(default=0)
    items = models.ManyToManyField(Item, through="HITItem", related_name="hits")
    taken = models.PositiveSmallIntegerField(default=0, help_text="assignments holding a slot (reserved/submitted/approved)")
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


class Worker(models.Model):
    class Source(models.TextChoices):
        LOCAL = "local", "Local account"
        INVITE = "invite", "Invite link"
        MTURK = "mturk", "Amazon MTurk"
        PROLIFIC = "prolific", "Prolific"

    user = models.OneToOneField(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE,
                                related_name="annotation_worker")
    external_id = models.CharField(max_length=200, blank=True,
                                   help_text="e.g. MTurk WorkerId, Prolific PID, as the platform confirmed it")
    # A platform id somebody claimed (in a URL) that the platform has not confirmed yet: such a worker is
    # provisional -- its answers count nowhere, its gold answers are not scored, and it never touches the record of
    # the worker who really has that id -- until a sync confirms the claim (services.confirm_assignment).
    claimed_external_id = models.CharField(max_length=200, blank=True, db_index=True,
                                           help_text="platform id claimed but not (yet) confirmed by the platform")
    # The secret part of the worker's recovery code (annotation.identity.recovery_code: an HMAC of the worker id and
    # this salt, shown with the completion code): typing the code in again, in any browser, makes that browser this
    # worker again. A new salt revokes the old code.
    recovery_salt = models.CharField(max_length=32, blank=True)
    source = models.CharField(max_length=10, choices=Source.choices, default=Source.LOCAL)
    blocked = models.BooleanField(default=False, db_index=True)
    blocked_reason = models.TextField(blank=True)
    blocked_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["source", "external_id"], condition=~Q(external_id=""),
                                    name="unique_worker_external_id"),
        ]

    def __str__(self) -> str:
        if self.external_id:
            return f"{self.source}:{self.external_id}"
        if self.user_id:
            return getattr(self.user, "username", f"user {self.user_id}")
        return f"worker {self.pk}"


class WorkerProjectCode(models.Model):
    """The completion code a worker gets at the end of a project (pasted into Prolific / MTurk / a lab sheet)."""

    worker = models.ForeignKey(Worker, on_delete=models.CASCADE, related_name="completion_codes")
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="completion_codes")
    code = models.CharField(max_length=32, default=new_completion_code)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["worker", "project"], name="unique_code_per_worker_project")]

    def __str__(self) -> str:
        return self.code


class Assignment(models.Model):
    class Status(models.TextChoices):
        RESERVED = "reserved", "Reserved"
        SUBMITTED = "submitted", "Submitted"
        APPROVED = "approved", "Approved"
        REJECTED = "rejected", "Rejected"
        EXPIRED = "expired", "Expired"
        # answers that arrived after the reservation ended: kept, counted in no aggregate unless staff accept them
        LATE = "late", "Late (not counted)"

    # statuses that hold one of the HIT's R slots
    HOLDING = (Status.RESERVED, Status.SUBMITTED, Status.APPROVED)
    DONE = (Status.SUBMITTED, Status.APPROVED)

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="assignments")
    hit = models.ForeignKey(HIT, on_delete=models.CASCADE, related_name="assignments")
    worker = models.ForeignKey(Worker, on_delete=models.CASCADE, related_name="assignments")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.RESERVED, db_index=True)
    reserved_at = models.DateTimeField()
    expires_at = models.DateTimeField()
    submitted_at = models.DateTimeField(null=True, blank=True)
    work_seconds = models.FloatField(null=True, blank=True, help_text="server side: submitted_at - reserved_at")
    client_seconds = models.FloatField(null=True, blank=True, help_text="active time reported by the HIT page")
    gold_items = models.ManyToManyField(Item, blank=True, related_name="gold_assignments")
    external_id = models.CharField(max_length=200, blank=True, help_text="MTurk assignmentId")
    submission_key = models.CharField(max_length=64, blank=True, help_text="hash of the submitted payload")
    feedback = models.TextField(blank=True)
    late_accepted_at = models.DateTimeField(null=True, blank=True,
                                            help_text="when staff accepted late answers (they count from then on)")

    class Meta:
        ordering = ["-reserved_at", "id"]
        indexes = [
            models.Index(fields=["project", "worker", "status"]),
            models.Index(fields=["status", "expires_at"]),
        ]
        constraints = [models.UniqueConstraint(fields=["hit", "worker"], name="one_assignment_per_hit_worker")]

    def __str__(self) -> str:
        return f"assignment {self.pk} ({self.status})"


class AssignmentDraft(models.Model):
    """The answers and feedback of a reserved assignment as the worker gives them, saved as they go, so that a
    reload, a crash or another tab restores them. Deleted when the assignment is submitted or released."""

    assignment = models.OneToOneField(Assignment, on_delete=models.CASCADE, primary_key=True, related_name="draft")
    responses = models.JSONField(default=dict, help_text="{item id: the task type's (possibly partial) answer}")
    feedback = models.TextField(blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"draft of assignment {self.assignment_id}"


class Response(models.Model):
    assignment = models.ForeignKey(Assignment, on_delete=models.CASCADE, related_name="responses")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="responses")
    data = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["assignment_id", "id"]
        constraints = [models.UniqueConstraint(fields=["assignment", "item"], name="one_response_per_item")]


class GoldRecord(models.Model):
    worker = models.ForeignKey(Worker, on_delete=models.CASCADE, related_name="gold_records")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="gold_records")
    assignment = models.ForeignKey(Assignment, on_delete=models.CASCADE, related_name="gold_records")
    correct = models.BooleanField()
    score = models.FloatField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["worker_id", "id"]
        constraints = [models.UniqueConstraint(fields=["worker", "item"], name="one_gold_record_per_worker_item")]


class AgreementSnapshot(models.Model):
    """Agreement figures of a project computed at one moment (``annotation.recompute_agreement``), so that the
    dashboards read a stored row instead of recomputing on every page view."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="agreement_snapshots")
    scope = models.CharField(max_length=200, default="project",
                             help_text='"project", "topic:<name>" or "crowd-vs-expert"')
    figures = models.JSONField(default=dict)
    n_units = models.PositiveIntegerField(default=0)
    n_coders = models.PositiveIntegerField(default=0)
    computed_at = models.DateTimeField(auto_now_add=True, db_index=True)
    based_on = models.PositiveIntegerField(default=0, help_text="submitted assignments when it was computed")

    class Meta:
        ordering = ["-computed_at", "-id"]
        indexes = [models.Index(fields=["project", "scope", "computed_at"])]

    def __str__(self) -> str:
        return f"agreement of {self.project_id} ({self.scope}) at {self.computed_at:%Y-%m-%d %H:%M}"


class Adjudication(models.Model):
    """An expert's final answer for an item (the latest one counts), recorded with who and when."""

    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="adjudications")
    answer = models.JSONField(help_text="the final answer, in the task type's response format")
    expert = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                               related_name="adjudications")
    created_at = models.DateTimeField(auto_now_add=True)
    note = models.TextField(blank=True)

    class Meta:
        ordering = ["item_id", "-created_at", "-id"]

    def __str__(self) -> str:
        return f"adjudication of item {self.item_id}"


# Models that belong to one task type live in its package (annotation/task_types/<name>/models.py), in this app.
task_types.package_modules("models")
