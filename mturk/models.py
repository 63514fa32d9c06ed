"""Amazon Mechanical Turk: per-project settings, published HITs, MTurk assignments, bonuses and the call log.

No credential is stored here: the boto3 client reads AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_PROFILE
from the environment (see :mod:`mturk.client`). Every call that changes something on MTurk (create a HIT,
approve, reject, bonus, block, notify, expire) first writes an :class:`MTurkOperation` row with a unique key,
then makes the call, then marks the row done; a crash in between leaves a ``pending`` row that the next sync
resumes (with the same ``UniqueRequestToken`` where the API has one), so nothing is paid twice. The call log and the
bonus are the crowd platforms' shared ones (:mod:`annotation.crowd`), in MTurk's own tables.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from annotation.crowd.models import Bonus, CallLog
from annotation.models import HIT, Assignment, Project

# System qualification type ids (MTurk docs, "Qualification requirements").
QUAL_APPROVAL_RATE = "000000000000000000L0"  # PercentAssignmentsApproved
QUAL_APPROVED_HITS = "00000000000000000040"  # NumberHITsApproved
QUAL_LOCALE = "00000000000000000071"  # Worker_Locale
QUAL_MASTERS = {True: "2ARFPLSP75KLA8M8DH1HTEQVJT3SY6", False: "2F1QJWKUDD8XADTFD2Q0G6UTO95ALH"}  # sandbox / production


def default_sandbox() -> bool:
    return bool(getattr(settings, "ARGORA_MTURK_SANDBOX", True))


class MTurkProjectSettings(models.Model):
    class Approval(models.TextChoices):
        AUTO = "auto", "Approve every assignment with stored answers"
        GOLD = "gold", "Approve unless the worker failed the gold checks (then reject)"
        MANUAL = "manual", "Follow the staff review in Argora (approved/rejected assignments)"

    project = models.OneToOneField(Project, on_delete=models.CASCADE, related_name="mturk")
    sandbox = models.BooleanField(default=default_sandbox, help_text="publish to the MTurk sandbox (no real money)")
    title = models.CharField(max_length=128)
    description = models.CharField(max_length=2000)
    keywords = models.CharField(max_length=1000, blank=True, help_text="comma-separated")
    reward_cents = models.PositiveIntegerField(
        null=True, blank=True, help_text="reward per assignment; empty = computed from the target hourly wage"
    )
    target_hourly_wage_cents = models.PositiveIntegerField(
        default=760, help_text="wage floor in US cents per hour ($7.60/h as in Schiller et al. 2021, App. A)"
    )
    lifetime_seconds = models.PositiveIntegerField(default=7 * 24 * 3600)
    assignment_duration_seconds = models.PositiveIntegerField(default=3600)
    auto_approval_delay_seconds = models.PositiveIntegerField(default=3 * 24 * 3600)
    frame_height = models.PositiveIntegerField(null=True, blank=True, help_text="empty = ARGORA_MTURK_FRAME_HEIGHT")
    # qualification requirements
    min_approval_rate = models.PositiveSmallIntegerField(
        null=True, blank=True, default=95, help_text="percent; empty = no requirement"
    )
    min_approved_hits = models.PositiveIntegerField(
        null=True, blank=True, default=100, help_text="empty = no requirement"
    )
    locales = models.CharField(
        max_length=200,
        blank=True,
        default="US",
        help_text="comma-separated ISO country codes (e.g. US or US,CA); empty = anywhere",
    )
    require_masters = models.BooleanField(default=False, help_text="MTurk charges 5% more for Masters HITs")
    # optional custom qualification test (QuestionForm + AnswerKey XML)
    qualification_name = models.CharField(max_length=200, blank=True)
    qualification_test_xml = models.TextField(blank=True, help_text="QuestionForm XML")
    qualification_answer_key_xml = models.TextField(blank=True, help_text="AnswerKey XML")
    qualification_test_duration_seconds = models.PositiveIntegerField(default=1800)
    qualification_retry_delay_seconds = models.PositiveIntegerField(null=True, blank=True)
    qualification_min_score = models.PositiveIntegerField(default=1)
    qualification_type_id = models.CharField(max_length=100, blank=True, help_text="filled in when it is created")
    approval_policy = models.CharField(max_length=10, choices=Approval.choices, default=Approval.GOLD)
    reject_reason = models.CharField(
        max_length=1000,
        blank=True,
        default="Your answers failed our quality checks (control questions with known answers).",
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "MTurk project settings"
        verbose_name_plural = "MTurk project settings"
        constraints = [
            models.CheckConstraint(
                condition=Q(min_approval_rate__isnull=True) | Q(min_approval_rate__lte=100),
                name="mturk_approval_rate_0_100",
            ),
        ]

    def __str__(self) -> str:
        return f"MTurk settings of {self.project}"

    @property
    def locale_list(self) -> list[str]:
        return [c.strip().upper() for c in self.locales.split(",") if c.strip()]

    @property
    def has_qualification_test(self) -> bool:
        return bool(self.qualification_test_xml.strip())


class MTurkHIT(models.Model):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="mturk_hits")
    hit = models.ForeignKey(HIT, on_delete=models.CASCADE, related_name="mturk_hits", help_text="the Argora HIT")
    mturk_hit_id = models.CharField(max_length=100, unique=True)
    hit_type_id = models.CharField(max_length=100, blank=True)
    sandbox = models.BooleanField(default=True)
    status = models.CharField(max_length=30, default="Assignable", help_text="HITStatus as MTurk last reported it")
    max_assignments = models.PositiveSmallIntegerField(default=1)
    reward_cents = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField()
    expires_at = models.DateTimeField(null=True, blank=True)
    synced_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "MTurk HIT"
        ordering = ["project_id", "hit__position", "id"]
        indexes = [models.Index(fields=["project", "sandbox"])]

    def __str__(self) -> str:
        return self.mturk_hit_id


class MTurkAssignment(models.Model):
    """An MTurk assignment as the last sync saw it, matched with the Argora assignment (if any)."""

    mturk_hit = models.ForeignKey(MTurkHIT, on_delete=models.CASCADE, related_name="assignments")
    mturk_assignment_id = models.CharField(max_length=100, unique=True, help_text="MTurk AssignmentId")
    worker_id = models.CharField(max_length=100)
    status = models.CharField(max_length=20, help_text="Submitted / Approved / Rejected")
    assignment = models.OneToOneField(
        Assignment, null=True, blank=True, on_delete=models.SET_NULL, related_name="mturk_assignment"
    )
    accepted_at = models.DateTimeField(null=True, blank=True)
    submitted_at = models.DateTimeField(null=True, blank=True)
    synced_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "MTurk assignment"
        ordering = ["id"]

    def __str__(self) -> str:
        return self.mturk_assignment_id


class MTurkBonus(Bonus):
    """A bonus planned for an assignment; paid by the next sync through a logged, idempotent SendBonus (``status``:
    planned -> paid; MTurk has no set-up step)."""

    assignment_id = models.CharField(max_length=100)
    worker_id = models.CharField(max_length=100)
    reason = models.CharField(max_length=1000)

    class Meta(Bonus.Meta):
        verbose_name = "MTurk bonus"
        verbose_name_plural = "MTurk bonuses"
        constraints = [
            *Bonus.Meta.constraints,
            # at most one automatic wage top-up per assignment
            models.UniqueConstraint(
                fields=["assignment_id", "kind"], condition=Q(kind="wage-topup"), name="one_wage_topup_per_assignment"
            ),
        ]

    def __str__(self) -> str:
        return f"${self.amount_cents / 100:.2f} to {self.worker_id}"


class MTurkOperation(CallLog):
    """The log of every MTurk call that changes something (:mod:`annotation.crowd.calls`): written before the call,
    marked done after."""

    sandbox = models.BooleanField(default=True)

    class Meta:
        verbose_name = "MTurk call"
        ordering = ["-created_at", "id"]
