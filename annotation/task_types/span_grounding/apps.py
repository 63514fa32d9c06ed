"""``span_grounding`` as a Django app (label ``span_grounding``): it owns the table of its KB normalisation
(:class:`.models.SpanNormalisation`) and its migrations, and ``manage.py spans`` (``management/commands/``)."""

from __future__ import annotations

from django.apps import AppConfig


class SpanGroundingConfig(AppConfig):
    name = "annotation.task_types.span_grounding"
    label = "span_grounding"
    verbose_name = "Span grounding"
    # what the Researcher role may do here (argora.roles)
    researcher_permissions = ("view_spannormalisation",)
