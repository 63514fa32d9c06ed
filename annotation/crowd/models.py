"""The abstract models a crowd platform's call log and bonuses are made of (concrete: ``mturk.MTurkOperation`` /
``prolific.ProlificOperation``, ``mturk.MTurkBonus`` / ``prolific.ProlificBonus``; each keeps its own table).

One vocabulary for both platforms, so a call or a bonus means the same on either panel and one set of functions
(:mod:`annotation.crowd.calls`, :mod:`annotation.crowd.pay`) serves both."""

from __future__ import annotations

from django.db import models


class CallStatus(models.TextChoices):
    PENDING = "pending", "Pending (written before the call; resumed by the next sync)"
    DONE = "done", "Done"
    FAILED = "failed", "Failed (the platform refused; see error)"
    UNCERTAIN = "uncertain", "Outcome unknown (not repeated automatically: check on the platform, then resolve)"


class CallLog(models.Model):
    """One call that changes something on a crowd platform: written (and committed) before the call under a unique
    ``key``, marked done after it, so a crash in between leaves a ``pending`` row that the next sync resumes and no
    call keyed alike is made twice (:func:`annotation.crowd.calls.call_once`)."""

    Status = CallStatus

    key = models.CharField(max_length=255, unique=True, help_text="what makes this call unique, e.g. bonus:<id>")
    operation = models.CharField(max_length=60)
    project = models.ForeignKey(
        "annotation.Project", null=True, blank=True, on_delete=models.SET_NULL, related_name="%(app_label)s_operations"
    )
    request = models.JSONField(default=dict, blank=True)
    response = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=10, choices=CallStatus.choices, default=CallStatus.PENDING, db_index=True)
    repeatable = models.BooleanField(default=True, help_text="safe to send again when the outcome is unknown")
    error = models.TextField(blank=True)
    attempts = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    done_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        abstract = True

    def __str__(self) -> str:
        return f"{self.operation} {self.key} ({self.status})"


class BonusStatus(models.TextChoices):
    PLANNED = "planned", "Planned"
    SET_UP = "set-up", "Set up on the platform (not paid yet)"
    PAID = "paid", "Paid"


class Bonus(models.Model):
    """A bonus planned for one piece of work; the next sync pays it through the call log (never twice). ``kind``
    ``wage-topup`` is the automatic top-up to the wage floor (:func:`annotation.crowd.pay.topup_cents`)."""

    Status = BonusStatus
    WAGE_TOPUP = "wage-topup"

    project = models.ForeignKey("annotation.Project", on_delete=models.CASCADE, related_name="%(app_label)s_bonuses")
    amount_cents = models.PositiveIntegerField()
    kind = models.CharField(max_length=30, default="manual", help_text="manual / wage-topup")
    status = models.CharField(max_length=10, choices=BonusStatus.choices, default=BonusStatus.PLANNED, db_index=True)
    created_at = models.DateTimeField(auto_now_add=True)
    paid_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        abstract = True
        ordering = ["id"]
        # a platform's Meta extends this one (``class Meta(Bonus.Meta)``) and adds its one-top-up-per-work rule
        constraints = [
            models.CheckConstraint(condition=models.Q(amount_cents__gte=1), name="%(app_label)s_bonus_positive")
        ]

    @property
    def paid(self) -> bool:
        return self.status == BonusStatus.PAID
