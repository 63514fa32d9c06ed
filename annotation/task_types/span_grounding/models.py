"""The stored result of KB normalisation (ArgU §3.2.4): one row per Others span of a span_grounding item.

This package is the Django app ``span_grounding`` (:mod:`.apps`), which owns the table (``migrations/``: 0001
took it over from the ``annotation`` app, which made it in its 0003, with its rows).
:func:`annotation.task_types.span_grounding.normalisation.normalise_project` writes the rows (all of a project's rows are replaced by
each run), the review actions (:mod:`annotation.task_types.span_grounding.review`) re-point the rows of a proposal when an expert accepts
or merges it, and :mod:`annotation.task_types.span_grounding.export` reads them to emit the mapped variable ids.
"""

from __future__ import annotations

from django.db import models
from django.db.models import F, Q


class SpanNormalisation(models.Model):
    """How one span that annotators (or suggestions) grounded to Others was mapped onto the fact KB.

    ``method``: ``direct`` (cosine >= threshold to ``variable``), ``indirect`` (through the nearest directly mapped
    neighbour of its community), ``new`` (its community's ``proposal`` was accepted into the KB: ``variable`` is the
    proposal), ``merged`` (the proposal was merged into ``variable``), or ``""`` (unmapped: no variable; pending or
    rejected proposal, or none).
    """

    class Method(models.TextChoices):
        DIRECT = "direct", "Direct (cosine)"
        INDIRECT = "indirect", "Indirect (community neighbour)"
        NEW = "new", "New KB variable (accepted proposal)"
        MERGED = "merged", "Merged proposal"
        NONE = "", "Unmapped"

    item = models.ForeignKey("annotation.Item", on_delete=models.CASCADE, related_name="span_normalisations")
    begin = models.PositiveIntegerField()
    end = models.PositiveIntegerField()
    text = models.TextField()
    variable = models.ForeignKey(
        "corpus.FactVariable", null=True, blank=True, on_delete=models.PROTECT, related_name="normalised_spans"
    )
    proposal = models.ForeignKey(
        "corpus.FactVariable",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="proposal_spans",
        help_text="the proposed variable created for this span's unmapped community",
    )
    method = models.CharField(max_length=10, choices=Method.choices, blank=True, default="")
    score = models.FloatField(
        null=True,
        blank=True,
        help_text="cosine to the variable (direct) or to the neighbour it was mapped through (indirect)",
    )
    community = models.CharField(max_length=300, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["item_id", "begin"]
        constraints = [
            models.UniqueConstraint(fields=["item", "begin", "end"], name="span_normalisation_unique_span"),
            models.CheckConstraint(condition=Q(begin__lt=F("end")), name="span_normalisation_begin_before_end"),
            models.CheckConstraint(
                condition=Q(method="") | Q(variable__isnull=False), name="span_normalisation_method_has_variable"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.text[:40]!r} -> {self.variable_id} ({self.method or 'unmapped'})"
