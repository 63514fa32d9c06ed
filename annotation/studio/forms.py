"""Forms of the study studio. They read and check what a person typed; the checks that need the task type or the
database are :mod:`annotation.studio.services` calls, whose errors come back as errors of the field they name."""
from __future__ import annotations

import json

from django import forms

from annotation.task_types import all_task_types
from annotation.task_types.base import Source
from corpus.models import Topic

from . import services as studio

SOURCE_FIELD_SEPARATOR = "__"


def option_field_name(source: Source, option_name: str) -> str:
    return f"{source.name}{SOURCE_FIELD_SEPARATOR}{option_name}"


def attach(form: forms.Form, exc: studio.SetupRefused) -> None:
    """Show a refusal as an error of the field it names (``config.labels`` -> the ``config`` field, saying
    ``labels: ...``); one that names no field of the form is an error of the whole form, naming its field."""
    head, _, rest = exc.field.partition(".")
    if head in form.fields:
        form.add_error(head, f"{rest}: {exc.reason}" if rest else exc.reason)
    else:
        form.add_error(None, str(exc))


class NewProjectForm(forms.Form):
    name = forms.CharField(max_length=200, label="Name", widget=forms.TextInput(attrs={"autofocus": True}))
    task_type = forms.ChoiceField(label="Task type", error_messages={
        "invalid_choice": "unknown task type %(value)s: choose one of the task types listed"})
    config = forms.CharField(label="Task-type settings (JSON)", required=False,
                             widget=forms.Textarea(attrs={"rows": 6, "spellcheck": "false"}),
                             help_text="empty: the task type's defaults (shown below)")
    assignments_per_item = forms.IntegerField(label="Responses per item (R)", required=False, min_value=1,
                                              max_value=1000)
    items_per_hit = forms.IntegerField(label="Items per HIT", required=False, min_value=1, max_value=500)
    gold_rate = forms.FloatField(label="Gold rate (0-1)", required=False, min_value=0, max_value=1,
                                 help_text="gold items added to a HIT, as a fraction of its items")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["task_type"].choices = [(t.name, t.label) for t in all_task_types()]
        self.project = None

    def clean(self):
        data = super().clean()
        config = None
        raw = (data.get("config") or "").strip()
        if raw:
            try:
                config = json.loads(raw)
            except ValueError as exc:
                self.add_error("config", f"not JSON: {exc}")
                return data
            if not isinstance(config, dict):
                self.add_error("config", "expected a JSON object {key: value}")
                return data
        if self.errors:
            return data
        try:
            self.project = studio.check_setup(
                name=data.get("name", ""), task_type=data.get("task_type", ""), config=config,
                values={key: data.get(key) for key in studio.SETUP_FIELDS})
        except studio.SetupRefused as exc:
            attach(self, exc)
        return data


class ItemsForm(forms.Form):
    """Where the items come from: one of the task type's sources, its file or corpus selection, and its options."""

    source = forms.ChoiceField(label="Items from", widget=forms.RadioSelect)
    file = forms.FileField(label="File", required=False)
    topics = forms.ModelMultipleChoiceField(queryset=Topic.objects.order_by("name"), required=False,
                                            label="Topics", widget=forms.SelectMultiple(attrs={"size": 6}))
    limit = forms.IntegerField(label="At most (items)", required=False, min_value=1)

    def __init__(self, *args, sources: tuple[Source, ...], **kwargs):
        super().__init__(*args, **kwargs)
        self.sources = sources
        self.fields["source"].choices = [(s.name, s.label) for s in sources]
        if len(sources) == 1:
            self.fields["source"].initial = sources[0].name
        for source in sources:
            for option in source.options:
                name = option_field_name(source, option.name)
                if option.kind == "bool":
                    field = forms.BooleanField(required=False, initial=bool(option.default))
                elif option.kind == "int":
                    field = forms.IntegerField(required=False, initial=option.default, min_value=option.minimum,
                                               max_value=option.maximum)
                else:
                    field = forms.CharField(required=False, initial=option.default or "", max_length=200)
                field.label, field.help_text = option.label, option.help
                self.fields[name] = field

    def chosen(self) -> Source | None:
        name = self.cleaned_data.get("source") if hasattr(self, "cleaned_data") else None
        return next((s for s in self.sources if s.name == name), None)

    def options(self) -> dict:
        source = self.chosen()
        if source is None:
            return {}
        return {o.name: self.cleaned_data.get(option_field_name(source, o.name)) for o in source.options}

    def clean(self):
        data = super().clean()
        source = self.chosen()
        if source is not None and source.is_upload and not data.get("file") and not self.errors:
            self.add_error("file", f"choose a {source.label} file ({' or '.join(source.extensions)})")
        return data


class SettingsForm(forms.Form):
    guidelines = forms.CharField(label="Guidelines (Markdown)", required=False, strip=False,
                                 widget=forms.Textarea(attrs={"rows": 14, "spellcheck": "true"}),
                                 help_text="shown in the instructions panel of every HIT; HTML works too and is "
                                           "sanitised (no scripts)")
    assignments_per_item = forms.IntegerField(label="Responses per item (R)", min_value=1, max_value=1000)
    items_per_hit = forms.IntegerField(label="Items per HIT", min_value=1, max_value=500)
    gold_rate = forms.FloatField(label="Gold rate (0-1)", min_value=0, max_value=1)
    reward_cents = forms.IntegerField(label="Reward per HIT (cents)", min_value=0, max_value=100_000)
    time_estimate_seconds = forms.IntegerField(label="Time estimate per HIT (seconds)", min_value=0,
                                               max_value=24 * 3600)
    reservation_timeout_seconds = forms.IntegerField(label="Reservation timeout (seconds)", min_value=60,
                                                     max_value=7 * 24 * 3600,
                                                     help_text="how long a worker holds a HIT before it goes back")
    gold_min_items = forms.IntegerField(label="Gold items before blocking (N)", min_value=0, max_value=10_000,
                                        help_text="0 = never block")
    gold_min_accuracy = forms.FloatField(label="Minimum gold accuracy (0-1)", min_value=0, max_value=1)
    max_hits_per_worker = forms.IntegerField(label="Most HITs per worker", required=False, min_value=1,
                                             help_text="empty = unlimited")
