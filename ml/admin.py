from django.contrib import admin, messages

from . import registry
from .models import ModelVersion


@admin.register(ModelVersion)
class ModelVersionAdmin(admin.ModelAdmin):
    list_display = ("id", "kind", "project", "status", "is_active", "primary", "n_train", "n_dev", "seed",
                    "data_snapshot", "created_at", "trained_at")
    list_filter = ("kind", "status", "is_active", "project")
    search_fields = ("kind", "data_snapshot", "data_hash", "task_id", "base_model")
    readonly_fields = [f.name for f in ModelVersion._meta.fields]
    actions = ["activate_selected"]

    @admin.display(description="dev primary")
    def primary(self, obj):
        return obj.primary_metric

    def has_add_permission(self, request):
        return False  # versions come from training (manage.py train, ml.tasks.train, the retrain loop)

    @admin.action(description="Activate (one per kind and project)")
    def activate_selected(self, request, queryset):
        for version in queryset:
            try:
                registry.activate(version)
                self.message_user(request, f"{version} activated")
            except ValueError as exc:
                self.message_user(request, str(exc), level=messages.ERROR)
