from django import forms
from django.contrib import admin

from argora.errors import FieldError

from . import models, services
from .hashing import fact_hash


@admin.register(models.Topic)
class TopicAdmin(admin.ModelAdmin):
    list_display = ("name", "slug", "synonyms", "created_at")
    search_fields = ("name",)
    prepopulated_fields = {"slug": ("name",)}


@admin.register(models.Document)
class DocumentAdmin(admin.ModelAdmin):
    list_display = ("id", "title", "topic", "source", "created_at")
    list_filter = ("topic",)
    search_fields = ("title", "source", "text")
    readonly_fields = ("content_hash",)


@admin.register(models.Sentence)
class SentenceAdmin(admin.ModelAdmin):
    list_display = ("id", "short_text", "topic", "stance", "source")
    list_filter = ("topic", "stance")
    search_fields = ("text", "external_id", "content_hash")
    readonly_fields = ("content_hash", "created_at")
    raw_id_fields = ("document",)

    @admin.display(description="text")
    def short_text(self, obj):
        return obj.text[:100]


class FactVariableForm(forms.ModelForm):
    """Sets ``content_hash`` from topic + text (as the importers and the API do); a duplicate is a form error."""

    def clean(self):
        super().clean()
        data = self.cleaned_data
        topic, text = data.get("topic"), data.get("text")
        if topic is not None and text:
            digest = fact_hash(topic.name, text)
            if models.FactVariable.objects.filter(content_hash=digest).exclude(pk=self.instance.pk).exists():
                raise forms.ValidationError("This fact variable is already in the KB of that topic.")
            self.instance.content_hash = digest
        if topic is not None and data.get("status") == models.FactVariable.Status.MERGED:
            probe = models.FactVariable(pk=self.instance.pk, topic=topic)
            try:  # the service's rules, as a form error (the service checks them again under a row lock)
                services.check_merge(probe, data.get("merged_into"))
            except FieldError as exc:
                self.add_error("merged_into", exc.reason)
        return data


@admin.register(models.FactVariable)
class FactVariableAdmin(admin.ModelAdmin):
    form = FactVariableForm
    list_display = ("id", "text", "topic", "origin", "status")
    list_filter = ("topic", "origin", "status")
    search_fields = ("text",)
    readonly_fields = ("content_hash",)
    raw_id_fields = ("merged_into",)

    def save_model(self, request, obj, form, change):
        """Through :mod:`corpus.services` like the API and the review page (a merge is checked and re-points spans)."""
        fields = {name: form.cleaned_data[name] for name in form.changed_data if name in form.cleaned_data}
        if change:
            saved = services.update_fact(models.FactVariable.objects.get(pk=obj.pk), user=request.user, **fields)
        else:
            saved = services.create_fact(**{k: v for k, v in form.cleaned_data.items() if k != "content_hash"})
        obj.pk, obj.content_hash, obj.status = saved.pk, saved.content_hash, saved.status


class DebateNodeInline(admin.TabularInline):
    model = models.DebateNode
    fields = ("path", "stance", "text", "reference_path")
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True


@admin.register(models.DebateTree)
class DebateTreeAdmin(admin.ModelAdmin):
    list_display = ("id", "title", "topic", "source", "created_at")
    list_filter = ("topic",)
    search_fields = ("title",)
    readonly_fields = ("content_hash",)
    inlines = [DebateNodeInline]


@admin.register(models.DebateNode)
class DebateNodeAdmin(admin.ModelAdmin):
    list_display = ("id", "tree", "path", "stance", "text")
    list_filter = ("stance",)
    search_fields = ("text", "path")
    raw_id_fields = ("tree", "parent")


from . import admin_releases  # noqa: E402,F401  (Release admin and the publish action live there)
