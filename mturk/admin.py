"""Admin for MTurk: settings per project (with the panel link and actions), HITs, assignments, bonuses and the
call log. Actions call the same services as the panel and the CLI; syncs run as Celery tasks (on commit)."""

from django.contrib import admin, messages
from django.db import transaction
from django.urls import reverse
from django.utils.html import format_html

from annotation.admin_scope import TeamScopedAdmin

from . import publishing
from .client import MTurkError
from .models import (
    MTurkAssignment,
    MTurkBonus,
    MTurkHIT,
    MTurkOperation,
    MTurkProjectSettings,
)
from .tasks import sync_project_task


@admin.register(MTurkProjectSettings)
class MTurkProjectSettingsAdmin(TeamScopedAdmin):
    list_display = (
        "project",
        "sandbox",
        "title",
        "reward_cents",
        "target_hourly_wage_cents",
        "approval_policy",
        "panel",
    )
    list_filter = ("sandbox", "approval_policy")
    readonly_fields = ("qualification_type_id", "updated_at")
    actions = ["sync_now", "publish_hits", "sync_block_list", "expire_hits"]

    @admin.display(description="panel")
    def panel(self, obj):
        return format_html('<a href="{}">MTurk panel</a>', reverse("mturk:panel", args=[obj.project.slug]))

    @admin.action(description="Sync with MTurk (list, approve/reject, pay bonuses) as a background job")
    def sync_now(self, request, queryset):
        queryset = self.changeable(request, queryset)  # only rows of projects the user may change
        for cfg in queryset:
            transaction.on_commit(lambda pk=cfg.project_id: sync_project_task.delay(pk))
        self.message_user(request, f"queued {queryset.count()} sync(s)")

    @admin.action(description="Publish unpublished HITs (cost shown on the MTurk panel first)")
    def publish_hits(self, request, queryset):
        queryset = self.changeable(request, queryset)  # only rows of projects the user may change
        for cfg in queryset:
            try:
                rows = publishing.publish_project(cfg.project)
                self.message_user(request, f"{cfg.project}: published {len(rows)} HIT(s)")
            except (publishing.PublishError, MTurkError) as exc:
                self.message_user(request, f"{cfg.project}: {exc}", level=messages.ERROR)

    @admin.action(description="Block Argora's blocked workers on MTurk")
    def sync_block_list(self, request, queryset):
        queryset = self.changeable(request, queryset)  # only rows of projects the user may change
        for cfg in queryset:
            try:
                n = publishing.sync_blocks(sandbox=cfg.sandbox, project=cfg.project)
                self.message_user(request, f"{cfg.project}: blocked {n} worker(s)")
            except MTurkError as exc:
                self.message_user(request, f"{cfg.project}: {exc}", level=messages.ERROR)

    @admin.action(description="Expire the project's HITs now")
    def expire_hits(self, request, queryset):
        queryset = self.changeable(request, queryset)  # only rows of projects the user may change
        for cfg in queryset:
            try:
                self.message_user(request, f"{cfg.project}: expired {publishing.expire_hits(cfg.project)} HIT(s)")
            except MTurkError as exc:
                self.message_user(request, f"{cfg.project}: {exc}", level=messages.ERROR)


@admin.register(MTurkHIT)
class MTurkHITAdmin(TeamScopedAdmin):
    """Rows made by publishing and refreshed by the sync (GetHIT): read-only; the mapping to the Argora HIT is what
    the ExternalQuestion binding relies on."""

    list_display = (
        "mturk_hit_id",
        "project",
        "hit",
        "sandbox",
        "status",
        "max_assignments",
        "reward_cents",
        "created_at",
        "expires_at",
        "synced_at",
    )
    list_filter = ("sandbox", "status", "project")
    search_fields = ("mturk_hit_id", "hit_type_id")
    readonly_fields = [f.name for f in MTurkHIT._meta.fields]
    actions = ["refresh_status"]

    def has_add_permission(self, request):
        return False

    @admin.action(description="Refresh status and expiry from MTurk (GetHIT)")
    def refresh_status(self, request, queryset):
        queryset = self.changeable(request, queryset)  # only rows of projects the user may change
        done = 0
        for row in queryset:
            try:
                publishing.refresh_hit(row)
                done += 1
            except Exception as exc:  # noqa: BLE001 - botocore errors, no credentials here
                self.message_user(request, f"{row}: {exc}", level=messages.ERROR)
        self.message_user(request, f"refreshed {done} HIT(s)")


@admin.register(MTurkAssignment)
class MTurkAssignmentAdmin(TeamScopedAdmin):
    project_path = "mturk_hit__project"
    """What the last sync saw on MTurk: read-only (linking an Argora assignment here is what verifies it)."""

    list_display = ("mturk_assignment_id", "worker_id", "mturk_hit", "status", "assignment", "submitted_at")
    list_filter = ("status",)
    search_fields = ("mturk_assignment_id", "worker_id")
    readonly_fields = [f.name for f in MTurkAssignment._meta.fields]

    def has_add_permission(self, request):
        return False


@admin.register(MTurkBonus)
class MTurkBonusAdmin(TeamScopedAdmin):
    list_display = ("worker_id", "assignment_id", "amount_cents", "kind", "status", "created_at", "paid_at")
    list_filter = ("status", "kind", "project")
    search_fields = ("worker_id", "assignment_id")
    readonly_fields = ("status", "paid_at")


@admin.register(MTurkOperation)
class MTurkOperationAdmin(TeamScopedAdmin):
    shared_rows = True
    superusers_only = True
    list_display = ("created_at", "operation", "key", "status", "attempts", "sandbox", "error")
    list_filter = ("status", "operation", "sandbox")
    search_fields = ("key",)
    readonly_fields = [f.name for f in MTurkOperation._meta.fields]

    def has_add_permission(self, request):
        return False
