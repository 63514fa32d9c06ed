"""Admin for the annotation engine. Actions call services (the same code as the API and the CLI)."""

from django import forms
from django.contrib import admin, messages

from argora.errors import FieldError

from . import model_annotators, phases, selectors, services, teams
from .admin_scope import TeamScopedAdmin, WorkerScopedAdmin
from .models import (
    HIT,
    Assignment,
    GoldItem,
    GoldRecord,
    HITItem,
    Item,
    ModelAnnotator,
    ModelAnswer,
    ModelAnswerFailure,
    Participation,
    Project,
    Response,
    StudyPhases,
    TrainingAnswer,
    Worker,
    WorkerProjectCode,
)


@admin.register(Project)
class ProjectAdmin(TeamScopedAdmin):
    project_path = ""
    # R, items per HIT and gold rate are on each project's page: the list fits 1366 px beside the filters
    list_display = ("name", "slug", "task_type", "status", "progress", "created_at")
    list_filter = ("status", "task_type")
    search_fields = ("name", "slug")
    prepopulated_fields = {"slug": ("name",)}
    # engine: the engine's own keys (item order, retraining, studio records), changed through their pages, not here
    readonly_fields = ("invite_token", "created_at", "progress_detail", "engine")
    actions = ["build_hits", "regenerate_invite_token", "expire_reservations", "activate", "close"]

    @admin.display(description="done / needed")
    def progress(self, obj):
        p = selectors.project_progress(obj)
        return f"{p['done']} / {p['needed']} ({p['percent']}%)"

    @admin.display(description="progress")
    def progress_detail(self, obj):
        if not obj.pk:
            return "-"
        p = selectors.project_progress(obj)
        statuses = ", ".join(f"{k} {v}" for k, v in p["assignments"].items())
        return (
            f"items {p['items']} (+{p['gold_items']} gold); responses {p['done']} / {p['needed']} "
            f"({p['percent']}%); HITs {p['hits_complete']} / {p['hits']} complete; assignments: {statuses}; "
            f"workers {len(p['workers'])}"
        )

    def save_model(self, request, obj, form, change):
        if not change and obj.created_by_id is None:
            obj.created_by = request.user
        changed = list(getattr(form, "changed_data", None) or [])
        before = {f: form.initial.get(f) for f in changed} if change else {}
        super().save_model(request, obj, form, change)
        if not change:
            teams.add_creator(obj, request.user)  # who made it owns it (annotation.access)
        elif changed:
            teams.record(
                obj, request.user, "settings", teams.changes(before, {f: form.cleaned_data.get(f) for f in changed})
            )
        for warning in obj.get_task_type().project_warnings(obj):  # e.g. likert_debate: 5-10 reviewers per debate
            self.message_user(request, warning, level=messages.WARNING)

    @admin.action(description="Build HITs from items not yet in a HIT")
    def build_hits(self, request, queryset):
        queryset = self.changeable(request, queryset)
        for project in queryset:
            n = services.build_hits(project)
            self.message_user(request, f"{project}: {n} HIT(s) built")

    @admin.action(description="Regenerate invite token (old invite links stop working)")
    def regenerate_invite_token(self, request, queryset):
        queryset = self.changeable(request, queryset)
        for project in queryset:
            services.regenerate_invite_token(project)
        self.message_user(request, f"{queryset.count()} invite token(s) regenerated")

    @admin.action(description="Expire stale reservations")
    def expire_reservations(self, request, queryset):
        queryset = self.changeable(request, queryset)
        n = sum(services.expire_reservations(project=project) for project in queryset)
        self.message_user(request, f"{n} reservation(s) expired")

    @admin.action(description="Activate")
    def activate(self, request, queryset):
        queryset = self.changeable(request, queryset)
        for project in queryset:
            try:
                services.set_project_status(project, Project.Status.ACTIVE)
            except services.ProjectInvalid as exc:  # e.g. no HITs yet
                self.message_user(request, f"{project}: {exc.reason}", level=messages.ERROR)

    @admin.action(description="Close")
    def close(self, request, queryset):
        queryset = self.changeable(request, queryset)
        for project in queryset:
            services.set_project_status(project, Project.Status.CLOSED)


class GoldInline(admin.StackedInline):
    model = GoldItem
    extra = 0


@admin.register(Item)
class ItemAdmin(TeamScopedAdmin):
    list_display = ("id", "project", "position", "is_gold", "is_training", "external_key", "short_payload")
    list_filter = ("project", "is_gold", "is_training")
    search_fields = ("external_key",)
    raw_id_fields = ("sentence",)
    inlines = [GoldInline]

    @admin.display(description="payload")
    def short_payload(self, obj):
        return str(obj.payload)[:100]


class HITItemInline(admin.TabularInline):
    model = HITItem
    extra = 0
    raw_id_fields = ("item",)


@admin.register(HIT)
class HITAdmin(TeamScopedAdmin):
    list_display = ("id", "project", "position", "taken", "created_at")
    list_filter = ("project",)
    readonly_fields = ("taken",)
    inlines = [HITItemInline]


class ResponseInline(admin.TabularInline):
    model = Response
    extra = 0
    can_delete = False
    readonly_fields = ("item", "data", "created_at")

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Assignment)
class AssignmentAdmin(TeamScopedAdmin):
    """Assignments are made by allocation (``reserve_next_assignment``, MTurk's binding) and change state through
    services only, because ``HIT.taken`` counts the ones holding a slot: here every field is read-only, nothing
    can be added, approve / reject are actions (``set_assignment_status``) and delete goes through
    ``do_release_assignment`` (which gives the slot back)."""

    # the HIT names its project; reservation time and client seconds are on each assignment's page (fits 1366 px)
    list_display = ("id", "hit", "worker", "status", "submitted_at", "work_seconds")
    list_filter = ("status", "project")
    search_fields = ("external_id", "worker__external_id", "worker__user__username")
    readonly_fields = (
        "project",
        "hit",
        "worker",
        "status",
        "reserved_at",
        "expires_at",
        "submitted_at",
        "work_seconds",
        "client_seconds",
        "gold_items",
        "external_id",
        "submission_key",
        "feedback",
    )
    inlines = [ResponseInline]
    actions = ["approve", "reject"]

    def has_add_permission(self, request):
        return False

    def delete_model(self, request, obj):
        services.do_release_assignment(obj)

    def delete_queryset(self, request, queryset):
        for assignment in self.changeable(request, queryset):
            services.do_release_assignment(assignment)

    @admin.action(description="Approve submitted assignments")
    def approve(self, request, queryset):
        queryset = self.changeable(request, queryset)
        self._review(request, queryset, Assignment.Status.APPROVED)

    @admin.action(description="Reject submitted assignments (frees their slot)")
    def reject(self, request, queryset):
        queryset = self.changeable(request, queryset)
        self._review(request, queryset, Assignment.Status.REJECTED)

    def _review(self, request, queryset, status):
        done = 0
        for assignment in queryset:
            try:
                services.set_assignment_status(assignment, status)
                done += 1
            except services.SubmissionError as exc:
                self.message_user(request, f"{assignment}: {exc}", level=messages.WARNING)
        self.message_user(request, f"{done} assignment(s) {status}")


@admin.register(Response)
class ResponseAdmin(TeamScopedAdmin):
    project_path = "assignment__project"
    list_display = ("id", "assignment", "item", "data", "created_at")
    list_filter = ("assignment__project",)
    raw_id_fields = ("assignment", "item")

    def get_readonly_fields(self, request, obj=None):
        return [f.name for f in self.model._meta.fields]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(Worker)
class WorkerAdmin(WorkerScopedAdmin):
    list_display = ("id", "__str__", "source", "blocked", "blocked_reason", "blocked_at", "created_at")
    list_filter = ("blocked", "source")
    search_fields = ("external_id", "claimed_external_id", "link_id", "user__username", "blocked_reason")
    readonly_fields = ("external_id", "claimed_external_id", "link_id", "recovery_salt")
    raw_id_fields = ("user",)
    actions = ["unblock"]

    # Deleting a worker would cascade to their assignments without giving the HIT slots back: release them first.
    # Blocking is global: a worker blocked by one project's gold checks gets no new HIT in any project.
    def delete_model(self, request, obj):
        self._release(obj)
        super().delete_model(request, obj)

    def delete_queryset(self, request, queryset):
        for worker in queryset:
            self._release(worker)
        super().delete_queryset(request, queryset)

    @staticmethod
    def _release(worker):
        for assignment in Assignment.objects.filter(worker=worker):
            services.do_release_assignment(assignment)

    @admin.action(description="Unblock (allow new HITs again)")
    def unblock(self, request, queryset):
        for worker in queryset:
            services.unblock_worker(worker)
        self.message_user(request, f"{queryset.count()} worker(s) unblocked")


@admin.register(WorkerProjectCode)
class WorkerProjectCodeAdmin(TeamScopedAdmin):
    list_display = ("worker", "project", "kind", "code", "created_at")
    list_filter = ("project", "kind")
    search_fields = ("code",)


@admin.register(GoldItem)
class GoldItemAdmin(TeamScopedAdmin):
    project_path = "item__project"
    list_display = ("id", "item", "expected", "tolerance")
    list_filter = ("item__project",)
    raw_id_fields = ("item",)


@admin.register(GoldRecord)
class GoldRecordAdmin(TeamScopedAdmin):
    project_path = "item__project"
    list_display = ("id", "worker", "item", "assignment", "correct", "score", "created_at")
    list_filter = ("correct", "item__project")
    raw_id_fields = ("worker", "item", "assignment")


# --- study phases ----------------------------------------------------------------------------------------------------
class StudyPhasesForm(forms.ModelForm):
    class Meta:
        model = StudyPhases
        fields = ("project",) + phases.CONFIG_FIELDS

    def clean(self):
        data = super().clean()
        project = data.get("project") or getattr(self.instance, "project", None)
        if project is not None and not self.errors:
            try:
                phases.check(project, {key: data.get(key) for key in phases.CONFIG_FIELDS})
            except phases.PhaseRefused as exc:
                head = exc.field.split("[", 1)[0].split(".", 1)[0]
                self.add_error(head if head in self.fields else None, str(exc))
        return data


@admin.register(StudyPhases)
class StudyPhasesAdmin(TeamScopedAdmin):
    """A project's phases (the studio's "Study phases" page does the same, with the training items); saved through
    :func:`annotation.phases.configure`."""

    form = StudyPhasesForm
    list_display = (
        "project",
        "consent_required",
        "instructions_required",
        "training_enabled",
        "pass_threshold",
        "max_attempts",
        "survey_enabled",
        "updated_at",
    )
    raw_id_fields = ("project",)

    def get_readonly_fields(self, request, obj=None):
        return ("project",) if obj is not None else ()

    def save_model(self, request, obj, form, change):
        phases.configure(obj.project, {key: getattr(obj, key) for key in phases.CONFIG_FIELDS})


class TrainingAnswerInline(admin.TabularInline):
    model = TrainingAnswer
    extra = 0
    can_delete = False
    fields = readonly_fields = ("attempt", "item", "answer", "correct", "score", "answered_at")

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Participation)
class ParticipationAdmin(TeamScopedAdmin):
    """What a worker did in a project's phases: read-only (workers write it through the phase pages)."""

    list_display = (
        "id",
        "project",
        "worker",
        "consent_at",
        "attempts_finished",
        "training_score",
        "outcome_label",
        "survey_at",
    )
    list_filter = ("project",)
    search_fields = ("worker__external_id", "worker__claimed_external_id", "worker__user__username")
    inlines = [TrainingAnswerInline]

    @admin.display(description="outcome")
    def outcome_label(self, obj):
        return obj.outcome.replace("_", " ") or "-"

    def get_readonly_fields(self, request, obj=None):
        return [f.name for f in self.model._meta.fields]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


# --- model annotators (annotation.model_annotators changes them; the admin reads and starts runs) ---------------
@admin.register(ModelAnnotator)
class ModelAnnotatorAdmin(TeamScopedAdmin):
    list_display = ("name", "project", "kind", "status", "processed", "failed", "include_in_results", "created_at")
    list_filter = ("kind", "status", "include_in_results")
    search_fields = ("name", "project__slug")
    readonly_fields = [f.name for f in ModelAnnotator._meta.fields]
    actions = ["run_selected", "include_selected", "keep_apart_selected"]

    def has_add_permission(self, request):
        return False  # made by the studio or the CLI (model_annotators.create_annotator checks the settings)

    @admin.action(description="Run the selected model annotators (a job each)")
    def run_selected(self, request, queryset):
        queryset = self.changeable(request, queryset)
        for annotator in queryset:
            try:
                model_annotators.start_run(annotator)
            except FieldError as exc:
                self.message_user(request, f"{annotator.name}: {exc.reason}", messages.WARNING)

    @admin.action(description="Count their answers in aggregates and releases")
    def include_selected(self, request, queryset):
        queryset = self.changeable(request, queryset)
        for annotator in queryset:
            model_annotators.set_included(annotator, True)

    @admin.action(description="Keep their answers apart (default)")
    def keep_apart_selected(self, request, queryset):
        queryset = self.changeable(request, queryset)
        for annotator in queryset:
            model_annotators.set_included(annotator, False)


@admin.register(ModelAnswer)
class ModelAnswerAdmin(TeamScopedAdmin):
    project_path = "annotator__project"
    list_display = ("annotator", "item", "model_id", "prompt_version", "confidence", "seconds", "cost", "created_at")
    list_filter = ("annotator",)
    readonly_fields = [f.name for f in ModelAnswer._meta.fields]

    def has_add_permission(self, request):
        return False


@admin.register(ModelAnswerFailure)
class ModelAnswerFailureAdmin(TeamScopedAdmin):
    project_path = "annotator__project"
    list_display = ("annotator", "item", "kind", "attempt", "error", "created_at")
    list_filter = ("kind", "annotator")
    readonly_fields = [f.name for f in ModelAnswerFailure._meta.fields]

    def has_add_permission(self, request):
        return False
