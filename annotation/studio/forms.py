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


SURVEY_EXAMPLE = """[
  {"name": "clarity", "label": "How clear were the instructions?", "kind": "likert",
   "scale": ["Very unclear", "Unclear", "Neutral", "Clear", "Very clear"], "required": true},
  {"name": "age_group", "label": "Your age group", "kind": "choice",
   "options": ["18-24", "25-34", "35-49", "50-64", "65 or older", "Prefer not to say"]},
  {"name": "years_english", "label": "Years you have spoken English", "kind": "number", "min": 0, "max": 100,
   "integer": true},
  {"name": "comments", "label": "Anything else you want to tell us?", "kind": "text"}
]"""


class PhasesForm(forms.Form):
    """The study phases of a project (``annotation.phases.configure``): consent, instructions, training with its
    items and qualification, screened-out message, exit survey. Gold items are offered as training items, each with
    its explanation (``training_items`` and ``explanation_<item id>``)."""

    consent_required = forms.BooleanField(label="Ask for consent first", required=False)
    consent_text = forms.CharField(label="Consent text (Markdown)", required=False, strip=False,
                                   widget=forms.Textarea(attrs={"rows": 8, "spellcheck": "true"}),
                                   help_text="what the study is, who runs it, what is recorded, how to withdraw; "
                                             "sanitised like the guidelines")
    instructions_required = forms.BooleanField(label="Workers must open the instructions", required=False,
                                               help_text="the guidelines, on a page of their own, before the "
                                                         "training and the HITs")
    training_enabled = forms.BooleanField(label="Training and qualification", required=False,
                                          help_text="the training items below, one at a time, each followed by "
                                                    "right/wrong, the expected answer and the explanation")
    pass_threshold = forms.FloatField(label="Pass threshold (0-1)", min_value=0, max_value=1,
                                      help_text="share of the counted training answers that must be right (0.8 = 80%)")
    window = forms.IntegerField(label="Count the last N training items", min_value=0, max_value=1000,
                                help_text="0 = all of them; e.g. 4 of 6: the first two are practice")
    max_attempts = forms.IntegerField(label="Attempts", min_value=1, max_value=20,
                                      help_text="tries before a worker is screened out (Prolific's policy allows 2)")
    screened_out_message = forms.CharField(label="Screened-out message (Markdown)", required=False, strip=False,
                                           widget=forms.Textarea(attrs={"rows": 4}),
                                           help_text="empty: a polite default; the worker also gets a screened-out "
                                                     "completion code")
    survey_enabled = forms.BooleanField(label="Exit survey", required=False,
                                        help_text="after the worker's last HIT, or when they stop")
    survey_questions = forms.CharField(label="Survey questions (JSON)", required=False,
                                       widget=forms.Textarea(attrs={"rows": 12, "spellcheck": "false"}))
    training_items = forms.MultipleChoiceField(label="Training items", required=False,
                                               widget=forms.CheckboxSelectMultiple)

    def __init__(self, *args, golds=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.golds = list(golds)
        self.fields["training_items"].choices = [(str(g.item_id), str(g.item_id)) for g in self.golds]
        for gold in self.golds:
            self.fields[f"explanation_{gold.item_id}"] = forms.CharField(
                required=False, max_length=5000, label=f"Explanation of item {gold.item_id}",
                widget=forms.Textarea(attrs={"rows": 2}), initial=gold.explanation)

    def clean_survey_questions(self):
        raw = (self.cleaned_data.get("survey_questions") or "").strip()
        if not raw:
            return []
        try:
            value = json.loads(raw)
        except ValueError as exc:
            raise forms.ValidationError(f"not JSON: {exc}") from None
        if not isinstance(value, list):
            raise forms.ValidationError("expected a JSON list of questions [{...}, ...]")
        return value

    def values(self) -> dict:
        keys = ("consent_required", "consent_text", "instructions_required", "training_enabled", "pass_threshold",
                "window", "max_attempts", "screened_out_message", "survey_enabled", "survey_questions")
        return {key: self.cleaned_data[key] for key in keys}

    def training_ids(self) -> list[int]:
        return [int(pk) for pk in self.cleaned_data.get("training_items") or []]

    def explanations(self) -> dict[int, str]:
        return {g.item_id: self.cleaned_data.get(f"explanation_{g.item_id}") or "" for g in self.golds}

    def attach(self, exc) -> None:
        """A refusal of ``annotation.phases.configure`` as an error of the field it names."""
        if exc.field.startswith("survey_questions"):
            self.add_error("survey_questions", str(exc) if exc.field != "survey_questions" else exc.reason)
        elif exc.field.startswith("explanation."):
            name = "explanation_" + exc.field.split(".", 1)[1]
            self.add_error(name if name in self.fields else None, exc.reason)
        elif exc.field in self.fields:
            self.add_error(exc.field, exc.reason)
        else:
            self.add_error(None, str(exc))

    def gold_rows(self) -> list[dict]:
        chosen = set(self["training_items"].value() or [])
        return [{"gold": g, "checked": str(g.item_id) in chosen, "explanation": self[f"explanation_{g.item_id}"]}
                for g in self.golds]
