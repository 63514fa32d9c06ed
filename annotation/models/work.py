"""Who answers and what they hand in: workers, their completion codes, assignments, drafts, responses and
gold records.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import Q

from .projects import HIT, Item, Project, new_completion_code


class Worker(models.Model):
    class Source(models.TextChoices):
        LOCAL = "local", "Local account"
        INVITE = "invite", "Invite link"
        MTURK = "mturk", "Amazon MTurk"
        PROLIFIC = "prolific", "Prolific"
        MODEL = "model", "Model annotator"  # a registry model or an LLM (annotation.model_annotators)

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE, related_name="annotation_worker"
    )
    external_id = models.CharField(
        max_length=200, blank=True, help_text="e.g. MTurk WorkerId, Prolific PID, as the platform confirmed it"
    )
    # A platform id somebody claimed (in a URL) that the platform has not confirmed yet: such a worker is
    # provisional -- its answers count nowhere, its gold answers are not scored, and it never touches the record of
    # the worker who really has that id -- until a sync confirms the claim (services.confirm_assignment).
    claimed_external_id = models.CharField(
        max_length=200,
        blank=True,
        db_index=True,
        help_text="platform id claimed but not (yet) confirmed by the platform",
    )
    # An id the worker's invite link carried (``?PROLIFIC_PID=``), kept for the researcher and never trusted: it
    # names no one (anyone can type any PID), so it is neither ``external_id`` nor a claim a sync would confirm.
    link_id = models.CharField(
        max_length=200, blank=True, help_text="an id the invite link carried (?PROLIFIC_PID=), recorded, never trusted"
    )
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
            models.UniqueConstraint(
                fields=["source", "external_id"], condition=~Q(external_id=""), name="unique_worker_external_id"
            ),
        ]

    def __str__(self) -> str:
        if self.external_id:
            return f"{self.source}:{self.external_id}"
        if self.user_id:
            return getattr(self.user, "username", f"user {self.user_id}")
        return f"worker {self.pk}"


class WorkerProjectCode(models.Model):
    """The completion code a worker gets at the end of a project (pasted into Prolific / MTurk / a lab sheet): one
    per kind -- ``completed`` after their HITs, ``screened_out`` when the study's qualification screened them out
    (they never get a HIT, so never both in practice)."""

    class Kind(models.TextChoices):
        COMPLETED = "completed", "Completed"
        SCREENED_OUT = "screened_out", "Screened out"

    worker = models.ForeignKey(Worker, on_delete=models.CASCADE, related_name="completion_codes")
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="completion_codes")
    kind = models.CharField(max_length=20, choices=Kind.choices, default=Kind.COMPLETED)
    code = models.CharField(max_length=32, default=new_completion_code)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["worker", "project", "kind"], name="unique_code_per_worker_project_kind")
        ]

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
        # a model annotator's answers (annotation.model_annotators): never a slot, counted nowhere by default
        MODEL = "model", "Model answers (kept apart)"

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
    late_accepted_at = models.DateTimeField(
        null=True, blank=True, help_text="when staff accepted late answers (they count from then on)"
    )

    # Not stored: what the submission service read or did with this instance, declared here so that nothing is
    # stamped on it ad hoc. ``has_gold``: gold items were interleaved (None: not read yet;
    # :func:`annotation.services.submittable_assignment`); ``gold_scored``: this submission scored gold answers (only
    # then can it have blocked the worker; None: not submitted through the service); ``items_read``: the HIT's and
    # gold items already read (:class:`annotation.services.items.ItemsRead`, set only by ``items.remember``).
    has_gold: bool | None = None
    gold_scored: bool | None = None
    items_read: Any = None

    class Meta:
        ordering = ["-reserved_at", "id"]
        indexes = [
            models.Index(fields=["project", "worker", "status"]),
            models.Index(fields=["status", "expires_at"]),
        ]
        constraints = [models.UniqueConstraint(fields=["hit", "worker"], name="one_assignment_per_hit_worker")]

    def __str__(self) -> str:
        return f"assignment {self.pk} ({self.status})"

    @cached_property
    def hit_slot(self) -> int:
        """This assignment's place among the assignments of its HIT, by id (0, 1, ...), read once per instance: a
        task type that varies its page per slot asks for it per item (the pairwise placement)."""
        return Assignment.objects.filter(hit_id=self.hit_id, pk__lt=self.pk).count()


class AssignmentDraft(models.Model):
    """The answers and feedback of a reserved assignment as the worker gives them, saved as they go, so that a
    reload, a crash or another tab restores them. Deleted when the assignment is submitted or released."""

    assignment = models.OneToOneField(Assignment, on_delete=models.CASCADE, primary_key=True, related_name="draft")
    responses = models.JSONField(default=dict, help_text="{item id: the task type's (possibly partial) answer}")
    feedback = models.TextField(blank=True)
    revision = models.BigIntegerField(
        default=0,
        help_text=("the page's number for this save (hit.js: its clock in ms); a save with a smaller one is dropped"),
    )
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

    def __str__(self) -> str:
        return f"response of assignment {self.assignment_id} to item {self.item_id}"


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

    def __str__(self) -> str:
        return f"gold item {self.item_id} by worker {self.worker_id}: {'right' if self.correct else 'wrong'}"
