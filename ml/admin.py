from django.contrib import admin, messages

from annotation.admin_scope import TeamScopedAdmin

from . import pipeline, registry
from .models import ModelVersion, PipelineRun


@admin.register(ModelVersion)
class ModelVersionAdmin(TeamScopedAdmin):
    shared_rows = True
    list_display = (
        "id",
        "kind",
        "project",
        "status",
        "is_active",
        "primary",
        "n_train",
        "n_dev",
        "seed",
        "data_snapshot",
        "created_at",
        "trained_at",
    )
    list_filter = ("kind", "status", "is_active", "project")
    search_fields = ("kind", "data_snapshot", "data_hash", "task_id", "base_model")
    readonly_fields = [f.name for f in ModelVersion._meta.fields]
    actions = ["activate_selected", "rollback_selected"]

    @admin.display(description="dev primary")
    def primary(self, obj):
        return obj.primary_metric

    def has_add_permission(self, request):
        return False  # versions come from training (manage.py train, ml.tasks.train, the retrain loop)

    @admin.action(description="Activate (one per kind and project)")
    def activate_selected(self, request, queryset):
        queryset = self.changeable(request, queryset)  # only rows of projects the user may change
        for version in queryset:
            try:
                registry.activate(version)
                self.message_user(request, f"{version} activated")
            except ValueError as exc:
                self.message_user(request, str(exc), level=messages.ERROR)

    @admin.action(
        description="Roll back: archive the active version of each selected version's kind and project, "
        "re-activate the previous one"
    )
    def rollback_selected(self, request, queryset):
        queryset = self.changeable(request, queryset)  # only rows of projects the user may change
        """The same as ``manage.py models rollback <kind> [--project SLUG]`` (:func:`ml.registry.rollback`), once
        per (kind, project) among the selected versions."""
        scopes = {(v.kind, v.project_id): v.project for v in queryset.select_related("project")}
        for (kind, _), project in sorted(scopes.items(), key=lambda kv: (kv[0][0], kv[0][1] or 0)):
            where = f"{kind}" + (f" of project {project.slug}" if project is not None else " (global)")
            previous = registry.rollback(kind, project)
            if previous is None:
                self.message_user(
                    request,
                    f"{where}: no earlier ready version to roll back to; nothing changed",
                    level=messages.WARNING,
                )
            else:
                self.message_user(request, f"{where}: rolled back, version {previous.pk} is active")


@admin.register(PipelineRun)
class PipelineRunAdmin(TeamScopedAdmin):
    project_path = None
    """Arg-CTRL data pipelines (:mod:`ml.pipeline`); started with ``manage.py pipeline argctrl``. The action runs
    the chain from the first unfinished stage, sending the silver stages to the ``gpu`` workers (run it again once
    they are done to move on), like ``manage.py pipeline argctrl ... --queue``."""

    list_display = (
        "id",
        "kind",
        "topic_name",
        "stage",
        "status",
        "argument_run",
        "aspect_run",
        "release",
        "updated_at",
    )
    list_filter = ("kind", "status", "stage")
    search_fields = ("topic_name", "documents")
    readonly_fields = [f.name for f in PipelineRun._meta.fields]
    actions = ["continue_selected"]

    def has_add_permission(self, request):
        return False  # a pipeline starts from the command line (it reads a folder on the server)

    @admin.action(description="Run / continue the chain (silver stages on the gpu workers)")
    def continue_selected(self, request, queryset):
        queryset = self.changeable(request, queryset)  # only rows of projects the user may change
        for run in queryset:
            try:
                run = pipeline.advance(run, queue=True)
            except Exception as exc:  # noqa: BLE001 - shown to the user; the row keeps a failed stage's error
                self.message_user(request, f"pipeline {run.pk}: {type(exc).__name__}: {exc}", level=messages.ERROR)
                continue
            self.message_user(
                request,
                f"pipeline {run.pk}: {run.status} at stage {run.stage}" + (f" ({run.error})" if run.error else ""),
            )
