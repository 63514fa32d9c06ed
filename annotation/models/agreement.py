"""Stored agreement figures (a snapshot per scope, its per-item rows) and expert adjudications."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from .projects import Item, Project


class AgreementSnapshot(models.Model):
    """Agreement figures of a project computed at one moment (``annotation.recompute_agreement``), so that the
    dashboards read a stored row instead of recomputing on every page view.

    Three sizes: ``summary`` holds the few numbers the dashboards list (level, alpha, percent agreement, kappa,
    n_units, n_coders, unsupported; see :data:`SUMMARY_KEYS`), ``figures`` the project table without its per-item
    rows (topics, workers, charts: it grows with workers and topics, not with items), and the per-item rows are
    :class:`AgreementItemRow` rows of the snapshot (scope ``"project"`` only), read a page at a time."""

    SUMMARY_KEYS = ("level", "alpha", "percent_agreement", "kappa", "n_units", "n_coders", "unsupported")

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="agreement_snapshots")
    scope = models.CharField(
        max_length=200, default="project", help_text='"project", "topic:<name>" or "crowd-vs-expert"'
    )
    figures = models.JSONField(default=dict)
    summary = models.JSONField(default=dict, blank=True, help_text="the figures the dashboards list (SUMMARY_KEYS)")
    n_items = models.PositiveIntegerField(default=0, help_text="answered items (AgreementItemRow rows stored)")
    n_units = models.PositiveIntegerField(default=0)
    n_coders = models.PositiveIntegerField(default=0)
    computed_at = models.DateTimeField(auto_now_add=True, db_index=True)
    based_on = models.PositiveIntegerField(default=0, help_text="submitted assignments when it was computed")

    class Meta:
        ordering = ["-computed_at", "-id"]
        indexes = [models.Index(fields=["project", "scope", "computed_at"])]

    def __str__(self) -> str:
        return f"agreement of {self.project_id} ({self.scope}) at {self.computed_at:%Y-%m-%d %H:%M}"


class AgreementItemRow(models.Model):
    """One answered item of a project :class:`AgreementSnapshot`: its agreement, responses and majority as they
    were when the snapshot was computed. ``rank`` orders the rows lowest agreement first (items without a figure
    last; ties by position, then id), 0-based and without gaps, so a page is ``rank >= k`` on an index."""

    snapshot = models.ForeignKey(AgreementSnapshot, on_delete=models.CASCADE, related_name="item_rows")
    rank = models.PositiveIntegerField()
    # no constraint: the row records the item as it was; a deleted item leaves its row in older figures
    item = models.ForeignKey(Item, on_delete=models.DO_NOTHING, db_constraint=False, related_name="+")
    position = models.PositiveIntegerField(default=0)
    topic = models.TextField(blank=True)
    text = models.TextField(blank=True)
    n = models.PositiveIntegerField(default=0, help_text="responses")
    agreement = models.FloatField(null=True, blank=True)
    majority = models.TextField(blank=True)
    responses = models.JSONField(default=list, help_text='[{"coder", "data", "is_expert"}, ...]')
    adjudication = models.JSONField(null=True, blank=True)

    class Meta:
        ordering = ["snapshot_id", "rank"]
        constraints = [models.UniqueConstraint(fields=["snapshot", "rank"], name="one_item_row_per_rank")]

    def __str__(self) -> str:
        return f"item {self.item_id} in agreement snapshot {self.snapshot_id}"

    def as_dict(self) -> dict:
        """The row as the project table's ``items`` entry (:func:`annotation.agreement.table.project_table`)."""
        out = {
            "item_id": self.item_id,
            "position": self.position,
            "topic": self.topic,
            "text": self.text,
            "n": self.n,
            "agreement": self.agreement,
            "majority": self.majority,
        }
        deferred = self.get_deferred_fields()  # a page listing items only leaves the per-item JSON unread
        out.update({f: getattr(self, f) for f in ("responses", "adjudication") if f not in deferred})
        return out


class Adjudication(models.Model):
    """An expert's final answer for an item (the latest one counts), recorded with who and when."""

    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="adjudications")
    answer = models.JSONField(help_text="the final answer, in the task type's response format")
    expert = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="adjudications"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    note = models.TextField(blank=True)

    class Meta:
        ordering = ["item_id", "-created_at", "-id"]

    def __str__(self) -> str:
        return f"adjudication of item {self.item_id}"
