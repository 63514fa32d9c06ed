"""Admin for Prolific: study settings per project (with the panel link and actions), sessions, submissions, bonuses,
webhook events and the call log. Actions call the same services as the panel and the CLI; syncs run as Celery tasks
(on commit)."""

from django import forms
from django.contrib import admin, messages
from django.db import transaction
from django.urls import reverse
from django.utils.html import format_html

from annotation.admin_scope import TeamScopedAdmin
from argora.errors import FieldError

from . import publishing
from .client import ProlificError
from .models import (
    ProlificBonus,
    ProlificOperation,
    ProlificSession,
    ProlificStudy,
    ProlificSubmission,
    ProlificWebhookEvent,
)
from .tasks import sync_project_task


class StudyAdminForm(forms.ModelForm):
    """The settings, checked like the panel's form (prolific.publishing.apply_settings) before anything is saved."""

    class Meta:
        model = ProlificStudy
        fields = ("project", *publishing.EDITABLE)

    def clean(self):
        cleaned = super().clean()
        probe = ProlificStudy.objects.filter(pk=self.instance.pk).first() or ProlificStudy()
        try:
            publishing.apply_settings(probe, {f: cleaned[f] for f in publishing.EDITABLE if f in cleaned})
        except FieldError as exc:
            self.add_error(exc.field if exc.field in self.fields else None, exc.reason)
        return cleaned


@admin.register(ProlificStudy)
class ProlificStudyAdmin(TeamScopedAdmin):
    form = StudyAdminForm
    list_display = (
        "project",
        "study_id",
        "status",
        "places",
        "estimated_minutes",
        "reward_cents",
        "approval_policy",
        "panel",
    )
    list_filter = ("approval_policy", "status")
    readonly_fields = ("study_id", "status", "total_cost_cents", "synced_at", "updated_at")
    actions = ["sync_now", "publish_studies", "pause_studies"]

    def get_readonly_fields(self, request, obj=None):
        return self.readonly_fields + (("project",) if obj is not None else ())

    def save_model(self, request, obj, form, change):
        """Through the service (the form checked the values already)."""
        project = obj.project if change else form.cleaned_data["project"]
        saved = publishing.save_study_settings(project, {f: getattr(obj, f) for f in publishing.EDITABLE})
        obj.pk = saved.pk

    @admin.display(description="panel")
    def panel(self, obj):
        return format_html('<a href="{}">Prolific panel</a>', reverse("prolific:panel", args=[obj.project.slug]))

    @admin.action(description="Sync with Prolific (bind, approve/reject, free places, bonuses) as a background job")
    def sync_now(self, request, queryset):
        queryset = self.changeable(request, queryset)  # only rows of projects the user may change
        for cfg in queryset.exclude(study_id=""):
            transaction.on_commit(lambda pk=cfg.project_id: sync_project_task.delay(pk))
        self.message_user(request, f"queued {queryset.exclude(study_id='').count()} sync(s)")

    @admin.action(description="Publish (creates the draft first; the cost is shown on the Prolific panel)")
    def publish_studies(self, request, queryset):
        queryset = self.changeable(request, queryset)  # only rows of projects the user may change
        for cfg in queryset:
            try:
                cfg = publishing.publish(cfg.project)
                self.message_user(request, f"{cfg.project}: study {cfg.study_id} {cfg.status}")
            except (FieldError, ProlificError) as exc:
                self.message_user(request, f"{cfg.project}: {exc}", level=messages.ERROR)

    @admin.action(description="Pause the studies on Prolific")
    def pause_studies(self, request, queryset):
        queryset = self.changeable(request, queryset)  # only rows of projects the user may change
        for cfg in queryset:
            try:
                self.message_user(request, f"{cfg.project}: {publishing.pause(cfg.project).status}")
            except (FieldError, ProlificError) as exc:
                self.message_user(request, f"{cfg.project}: {exc}", level=messages.ERROR)


class ReadOnly(TeamScopedAdmin):
    def has_add_permission(self, request):
        return False

    def get_readonly_fields(self, request, obj=None):
        return [f.name for f in self.model._meta.fields]


@admin.register(ProlificSession)
class ProlificSessionAdmin(ReadOnly):
    """Study links as opened: what they claimed and the worker the browser became (provisional until confirmed)."""

    list_display = ("participant_id", "session_id", "project", "worker", "started_at", "confirmed_at", "released_at")
    list_filter = ("project",)
    search_fields = ("participant_id", "session_id")


@admin.register(ProlificSubmission)
class ProlificSubmissionAdmin(ReadOnly):
    list_display = (
        "submission_id",
        "participant_id",
        "project",
        "status",
        "session",
        "decision",
        "review_sent",
        "released_at",
    )
    list_filter = ("status", "review_sent", "project")
    search_fields = ("submission_id", "participant_id")


@admin.register(ProlificBonus)
class ProlificBonusAdmin(TeamScopedAdmin):
    list_display = ("submission", "amount_cents", "kind", "status", "bulk_id", "created_at", "paid_at")
    list_filter = ("status", "kind", "project")
    readonly_fields = ("status", "bulk_id", "paid_at")
    raw_id_fields = ("submission",)


@admin.register(ProlificOperation)
class ProlificOperationAdmin(ReadOnly):
    shared_rows = True
    superusers_only = True
    list_display = ("created_at", "operation", "key", "status", "http_status", "attempts", "error")
    list_filter = ("status", "operation")
    search_fields = ("key",)


@admin.register(ProlificWebhookEvent)
class ProlificWebhookEventAdmin(ReadOnly):
    project_path = None
    superusers_only = True
    list_display = ("received_at", "event_type", "resource_id", "outcome")
    list_filter = ("event_type",)
    search_fields = ("event_id", "resource_id")
