"""Prolific: per-project study settings, participant sessions, submissions, bonuses, webhook events and the call log.

No credential is stored here: the API token comes from ``PROLIFIC_API_TOKEN`` in the environment (see
:mod:`prolific.client`). Every call that changes something on Prolific (create, publish, pause, add places, approve,
reject, set up and pay bonuses, subscribe a hook) first writes a :class:`ProlificOperation` row with a unique key,
then makes the call, then marks the row done; a crash in between leaves a ``pending`` row that the next sync resumes
(a call that is not safe to repeat, like paying bonuses, is looked up or left for a person to resolve), so nothing is
paid twice.

Identity: the ``PROLIFIC_PID`` / ``STUDY_ID`` / ``SESSION_ID`` of a study link are recorded on a
:class:`ProlificSession` with the *provisional* worker they were given (``annotation.services.provisional_worker``);
only a sync (or a signed webhook) that finds the submission ``SESSION_ID`` of participant ``PROLIFIC_PID`` on Prolific
binds it (:class:`ProlificSubmission`) and confirms the worker's assignments.
"""

from __future__ import annotations

import secrets

from django.conf import settings
from django.db import models
from django.db.models import Q

from annotation.crowd.models import Bonus, CallLog
from annotation.models import Assignment, Project, Worker

# Prolific's rejection categories (POST /api/v1/submissions/{id}/transition/, action REJECT)
REJECTION_CATEGORIES = [
    ("TOO_QUICKLY", "Too quickly"),
    ("TOO_SLOWLY", "Too slowly"),
    ("FAILED_INSTRUCTIONS", "Failed instructions"),
    ("INCOMP_LONGITUDINAL", "Incomplete longitudinal"),
    ("FAILED_CHECK", "Failed attention/quality checks"),
    ("LOW_EFFORT", "Low effort"),
    ("MALINGERING", "Malingering"),
    ("NO_CODE", "No completion code"),
    ("BAD_CODE", "Wrong completion code"),
    ("NO_DATA", "No data"),
    ("UNSUPP_DEVICE", "Unsupported device"),
    ("OTHER", "Other"),
]
MIN_REJECTION_MESSAGE = 100  # Prolific refuses a rejection message shorter than this
DEFAULT_REJECTION_MESSAGE = (
    "Thank you for taking part. We cannot approve this submission: your answers to the control questions with known "
    "answers (gold items) were mostly wrong, which our study's instructions said would lead to a rejection."
)


def new_completion_code() -> str:
    alphabet = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
    return "".join(secrets.choice(alphabet) for _ in range(8))


def default_completed_actions() -> list:
    return [{"action": "MANUALLY_REVIEW"}]  # the sync approves / rejects (approval policy)


def default_screened_out_actions() -> list:
    return [{"action": "MANUALLY_REVIEW"}]


class ProlificStudy(models.Model):
    """A project's Prolific study: what Argora sends when it creates the draft, and what Prolific last reported."""

    class Approval(models.TextChoices):
        AUTO = "auto", "Approve every submission with stored answers"
        GOLD = "gold", "Approve unless the participant failed the gold checks (then reject)"
        MANUAL = "manual", "Follow the staff review in Argora (approved/rejected assignments)"

    project = models.OneToOneField(Project, on_delete=models.CASCADE, related_name="prolific")
    study_id = models.CharField(
        max_length=64, blank=True, db_index=True, help_text="Prolific's study id (filled in when the draft is created)"
    )
    name = models.CharField(max_length=255, help_text="the public title participants see")
    description = models.TextField(help_text="shown to participants before they take part")
    places = models.PositiveIntegerField(default=10, help_text="total_available_places")
    estimated_minutes = models.PositiveIntegerField(default=10, help_text="estimated_completion_time (minutes)")
    maximum_allowed_minutes = models.PositiveIntegerField(
        null=True, blank=True, help_text="maximum_allowed_time; empty = Prolific's default"
    )
    reward_cents = models.PositiveIntegerField(
        null=True, blank=True, help_text="reward per place in cents; empty = computed from the hourly wage"
    )
    hourly_wage_cents = models.PositiveIntegerField(
        null=True, blank=True, help_text="target pay per hour in cents; empty = ARGORA_PROLIFIC_MIN_HOURLY_CENTS"
    )
    device_compatibility = models.CharField(
        max_length=100, default="desktop", help_text="comma-separated: desktop, tablet, mobile"
    )
    completed_code = models.CharField(
        max_length=64,
        default=new_completion_code,
        help_text="the COMPLETED code a participant who finished is sent back with",
    )
    completed_actions = models.JSONField(
        default=default_completed_actions,
        blank=True,
        help_text='Prolific actions, e.g. [{"action": "MANUALLY_REVIEW"}]',
    )
    screened_out_code = models.CharField(
        max_length=64, default=new_completion_code, blank=True, help_text="empty = no screened-out code"
    )
    screened_out_code_type = models.CharField(
        max_length=40, default="SCREENED_OUT", blank=True, help_text="Prolific code_type of the screened-out code"
    )
    screened_out_actions = models.JSONField(
        default=default_screened_out_actions,
        blank=True,
        help_text='e.g. [{"action": "FIXED_SCREEN_OUT_PAYMENT", "fixed_screen_out_reward": 10, "slots": 20}]',
    )
    approval_policy = models.CharField(max_length=10, choices=Approval.choices, default=Approval.GOLD)
    rejection_message = models.TextField(
        default=DEFAULT_REJECTION_MESSAGE, help_text=f"at least {MIN_REJECTION_MESSAGE} characters (Prolific's rule)"
    )
    rejection_category = models.CharField(max_length=30, choices=REJECTION_CATEGORIES, default="FAILED_CHECK")
    status = models.CharField(max_length=40, blank=True, help_text="the study status as Prolific last reported it")
    total_cost_cents = models.PositiveIntegerField(
        null=True, blank=True, help_text="Prolific's study-cost-calculator at the last preview"
    )
    synced_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "Prolific study"
        verbose_name_plural = "Prolific studies"

    def __str__(self) -> str:
        return f"Prolific study of {self.project}"

    @property
    def devices(self) -> list[str]:
        return [d.strip().lower() for d in self.device_compatibility.split(",") if d.strip()]


class ProlificSession(models.Model):
    """A study link opened in a browser: what the URL claimed, and the provisional worker that browser became."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="prolific_sessions")
    study_id = models.CharField(max_length=64)
    participant_id = models.CharField(max_length=64, db_index=True, help_text="PROLIFIC_PID (claimed)")
    session_id = models.CharField(max_length=64, db_index=True, help_text="SESSION_ID = Prolific's submission id")
    worker = models.ForeignKey(
        Worker,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="prolific_sessions",
        help_text="provisional until a sync confirms it, then the confirmed worker",
    )
    client = models.CharField(max_length=64, blank=True, help_text="hash of the client address")
    started_at = models.DateTimeField()
    confirmed_at = models.DateTimeField(null=True, blank=True)
    released_at = models.DateTimeField(
        null=True, blank=True, help_text="when its reservations were given back (returned / timed out)"
    )

    class Meta:
        verbose_name = "Prolific session"
        ordering = ["-started_at", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["session_id", "participant_id", "worker"], name="prolific_one_session_row_per_worker"
            )
        ]

    def __str__(self) -> str:
        return f"{self.participant_id} / {self.session_id}"


class ProlificSubmission(models.Model):
    """A submission as Prolific last reported it (sync or webhook), bound to the session whose ids it carries."""

    ACTIVE = ("RESERVED", "ACTIVE")
    RELEASING = ("RETURNED", "TIMED-OUT")

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="prolific_submissions")
    submission_id = models.CharField(max_length=64, unique=True, help_text="= the SESSION_ID of the study link")
    participant_id = models.CharField(max_length=64, db_index=True)
    study_id = models.CharField(max_length=64, blank=True)
    status = models.CharField(max_length=30, db_index=True)
    started_at = models.DateTimeField(null=True, blank=True)
    completed_at = models.DateTimeField(null=True, blank=True)
    entered_code = models.CharField(max_length=64, blank=True)
    session = models.ForeignKey(
        ProlificSession, null=True, blank=True, on_delete=models.SET_NULL, related_name="submissions"
    )
    worker = models.ForeignKey(
        Worker,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="prolific_submissions",
        help_text="the confirmed worker",
    )
    assignments = models.ManyToManyField(Assignment, blank=True, related_name="prolific_submissions")
    decision = models.CharField(max_length=10, blank=True, help_text="approve / reject / wait (last sync)")
    decision_reason = models.CharField(max_length=300, blank=True)
    review_sent = models.CharField(
        max_length=10, blank=True, help_text="approve / reject: sent to Prolific (done), never sent again"
    )
    released_at = models.DateTimeField(null=True, blank=True)
    synced_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "Prolific submission"
        ordering = ["id"]

    def __str__(self) -> str:
        return f"{self.submission_id} ({self.status})"

    @property
    def bound(self) -> bool:
        return self.session_id is not None


class ProlificBonus(Bonus):
    """A bonus planned for a submission; the next sync sets it up and pays it (logged, never twice)."""

    submission = models.ForeignKey(ProlificSubmission, on_delete=models.PROTECT, related_name="bonuses")
    reason = models.CharField(max_length=500, help_text="for the research team (Prolific bonuses carry no text)")
    bulk_id = models.CharField(max_length=64, blank=True, help_text="Prolific's bulk bonus payment id")

    class Meta(Bonus.Meta):
        verbose_name = "Prolific bonus"
        verbose_name_plural = "Prolific bonuses"
        constraints = [
            *Bonus.Meta.constraints,
            models.UniqueConstraint(
                fields=["submission", "kind"],
                condition=Q(kind="wage-topup"),
                name="prolific_one_wage_topup_per_submission",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.amount_cents / 100:.2f} {settings.ARGORA_PROLIFIC_CURRENCY} to {self.submission.participant_id}"


class ProlificOperation(CallLog):
    """The log of every Prolific call that changes something (:mod:`annotation.crowd.calls`): written before the
    call, marked done after."""

    method = models.CharField(max_length=10)
    path = models.CharField(max_length=300)
    http_status = models.PositiveSmallIntegerField(
        default=0, help_text="Prolific's last answer (0: none, e.g. a crash or a network error)"
    )
    context = models.JSONField(default=dict, blank=True, help_text="Argora's own bookkeeping (e.g. the bonus ids)")

    class Meta:
        verbose_name = "Prolific call"
        ordering = ["-created_at", "-id"]


class ProlificWebhookEvent(models.Model):
    """A webhook delivery whose signature was valid, handled once: once per ``X-Event-ID`` (Prolific retries a
    delivery) and once per ``delivery`` -- what it says, signed (a replay under a fresh X-Event-ID is the same)."""

    event_id = models.CharField(
        max_length=100, unique=True, null=True, blank=True, help_text="X-Event-ID (empty when the delivery had none)"
    )
    delivery = models.CharField(
        max_length=64,
        unique=True,
        null=True,
        blank=True,
        help_text="SHA-256 of the signed timestamp and the body's JSON (prolific.webhooks)",
    )
    event_type = models.CharField(max_length=60)
    resource_id = models.CharField(max_length=64, blank=True)
    payload = models.JSONField(default=dict)
    outcome = models.CharField(max_length=300, blank=True)
    received_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = "Prolific webhook event"
        ordering = ["-received_at", "-id"]

    def __str__(self) -> str:
        return f"{self.event_type} {self.resource_id}"
