"""Release admin (read-only, published releases cannot be deleted) and the Topic action that publishes a
sentence release. Imported at the bottom of :mod:`corpus.admin`, after TopicAdmin is registered."""

from __future__ import annotations

import uuid

from django import forms
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.db import transaction
from django.db.models import Sum
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.html import format_html, format_html_join

from argora import access

from . import releases
from .models import Release, ReleaseFile, Topic
from .tasks.releases import build_release_task


class ReleaseFileInline(admin.TabularInline):
    model = ReleaseFile
    fields = ("name", "rows", "size", "sha256", "download")
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = False

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    @admin.display(description="download")
    def download(self, obj):
        if obj.pk is None or obj.release.status != Release.Status.PUBLISHED:
            return "—"
        return format_html('<a href="{}">download</a>', reverse("release-file", args=[obj.release_id, obj.name]))


@admin.register(Release)
class ReleaseAdmin(admin.ModelAdmin):
    """Releases are built by ``build_release`` (CLI, the Topic action, a task); the admin only shows them."""

    list_display = ("name", "version", "kind", "status", "total_rows", "published_at", "creator")
    list_filter = ("status", "kind")
    search_fields = ("name", "version")
    readonly_fields = (
        "name",
        "version",
        "kind",
        "status",
        "creator",
        "config",
        "created_at",
        "published_at",
        "directory",
        "error",
        "integrity",
    )
    inlines = [ReleaseFileInline]

    def get_queryset(self, request):
        qs = access.visible_releases(request.user, super().get_queryset(request))  # project releases: their teams
        return qs.select_related("creator").annotate(_rows=Sum("files__rows"))

    @admin.display(description="rows", ordering="_rows")
    def total_rows(self, obj):
        return obj._rows or 0

    @admin.display(description="integrity")
    def integrity(self, obj):
        if obj.status != Release.Status.PUBLISHED:
            return "—"
        problems = releases.verify_release(obj)
        if not problems:
            return "intact: every file matches its recorded sha256"
        return format_html("<ul>{}</ul>", format_html_join("", "<li>{}</li>", ((p,) for p in problems)))

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False  # view-only; a published release is immutable, a failed one is rebuilt, not edited

    def has_delete_permission(self, request, obj=None):
        if obj is not None and obj.status == Release.Status.PUBLISHED:
            return False
        return super().has_delete_permission(request, obj)

    def get_actions(self, request):
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)  # a bulk delete would not ask each release's permission
        return actions


# --- the Topic changelist action ------------------------------------------------------------------


class PublishReleaseForm(forms.Form):
    release_name = forms.CharField(max_length=200, label="Name", help_text="letters, digits, '.', '_' and '-'")
    release_version = forms.CharField(max_length=50, label="Version", help_text="e.g. 1.0")
    split_mode = forms.ChoiceField(
        label="Split",
        initial="none",
        choices=[
            ("none", "none: one sentences.jsonl"),
            ("cross-topic", "cross-topic: whole topics in train / dev / test"),
            ("in-topic", "in-topic: random rows with a seed"),
        ],
    )
    dev_topics = forms.CharField(
        required=False,
        label="Dev topics (cross-topic)",
        help_text="comma-separated; default: death penalty (Arg-CTRL App. F)",
    )
    test_topics = forms.CharField(
        required=False,
        label="Test topics (cross-topic)",
        help_text="comma-separated; default: gun control, school uniforms",
    )
    seed = forms.IntegerField(required=False, initial=13, label="Seed (in-topic)")
    train_size = forms.IntegerField(required=False, min_value=0, label="Train rows (in-topic)")
    dev_size = forms.IntegerField(required=False, min_value=0, label="Dev rows (in-topic)")
    test_size = forms.IntegerField(required=False, min_value=0, label="Test rows (in-topic)")
    include_non_arguments = forms.BooleanField(required=False, label="Include non-arguments (stance none)")

    def __init__(self, *args, topics: list[str], **kwargs):
        super().__init__(*args, **kwargs)
        self.topics = topics
        self.release_config: dict | None = None

    def clean(self):
        super().clean()
        data = self.cleaned_data
        if self.errors:
            return data
        try:
            name = releases._check_name("name", data["release_name"])
        except ValueError as exc:
            self.add_error("release_name", str(exc))
            return data
        try:
            version = releases._check_name("version", data["release_version"])
        except ValueError as exc:
            self.add_error("release_version", str(exc))
            return data
        try:
            releases.check_release_free(name, version)
        except releases.ReleaseExists as exc:
            self.add_error("release_version", str(exc))
            return data
        split: dict = {"mode": data["split_mode"]}
        if split["mode"] == "cross-topic":
            for part in ("dev", "test"):
                if data.get(f"{part}_topics"):
                    split[part] = [t.strip() for t in data[f"{part}_topics"].split(",") if t.strip()]
        elif split["mode"] == "in-topic":
            missing = [f"{p}_size" for p in ("train", "dev", "test") if data.get(f"{p}_size") is None]
            for field in missing:
                self.add_error(field, "required for an in-topic split")
            if missing:
                return data
            split["seed"] = data["seed"] if data.get("seed") is not None else 13
            split["sizes"] = {p: data[f"{p}_size"] for p in ("train", "dev", "test")}
        config = {"topics": self.topics, "split": split, "include_non_arguments": data["include_non_arguments"]}
        try:  # validate now, so the person sees the reason here instead of in a failed job
            prepare = releases.get_exporter("sentences").prepare
            self.release_config = prepare(config) if prepare is not None else config
        except ValueError as exc:
            bad = {"dev": "dev_topics", "test": "test_topics", "sizes": "train_size"}.get(
                str(exc).split(":")[0].rsplit(".", 1)[-1]
            )
            self.add_error(bad if bad in self.fields else None, str(exc))
        data["release_name"], data["release_version"] = name, version
        return data


@admin.action(description="Publish a sentence release of the selected topics")
def publish_sentence_release(modeladmin, request, queryset):
    if not request.user.has_perm("corpus.add_release"):
        modeladmin.message_user(request, "You need the permission to add releases.", messages.ERROR)
        return None
    topics = sorted(queryset.values_list("name", flat=True))
    form = PublishReleaseForm(request.POST if "apply" in request.POST else None, topics=topics)
    if form.is_bound and form.is_valid():
        data = form.cleaned_data
        task_id = str(uuid.uuid4())
        kwargs = {
            "name": data["release_name"],
            "version": data["release_version"],
            "kind": "sentences",
            "config": form.release_config,
            "creator_id": request.user.pk,
        }
        transaction.on_commit(lambda: build_release_task.apply_async(kwargs=kwargs, task_id=task_id))
        modeladmin.message_user(
            request,
            format_html(
                'Publishing release {} {} of {} topic(s) in the background: <a href="{}">follow the job</a>, '
                'then find it under <a href="{}">Releases</a>.',
                data["release_name"],
                data["release_version"],
                len(topics),
                reverse("job-detail", args=[task_id]),
                reverse("admin:corpus_release_changelist"),
            ),
            messages.SUCCESS,
        )
        return None
    context = {
        **modeladmin.admin_site.each_context(request),
        "title": "Publish a sentence release",
        "opts": modeladmin.model._meta,
        "form": form,
        "topics": topics,
        "selected": request.POST.getlist(helpers.ACTION_CHECKBOX_NAME),
        "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
        "action": "publish_sentence_release",
    }
    return TemplateResponse(request, "corpus/publish_release.html", context)


_topic_admin = admin.site._registry[Topic]
if publish_sentence_release not in (_topic_admin.actions or ()):
    _topic_admin.actions = [*(_topic_admin.actions or ()), publish_sentence_release]
