"""Forms of the study studio. They read and check what a person typed; the checks that need the task type or the
database are :mod:`annotation.studio.services` calls, whose errors come back as errors of the field they name."""

from __future__ import annotations

import json

from django import forms

from annotation import selectors
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
    task_type = forms.ChoiceField(
        label="Task type",
        error_messages={"invalid_choice": "unknown task type %(value)s: choose one of the task types listed"},
    )
    config = forms.CharField(
        label="Task-type settings (JSON)",
        required=False,
        widget=forms.Textarea(attrs={"rows": 6, "spellcheck": "false"}),
        help_text="empty: the task type's defaults (shown below)",
    )
    assignments_per_item = forms.IntegerField(
        label="Responses per item (R)", required=False, min_value=1, max_value=1000
    )
    items_per_hit = forms.IntegerField(label="Items per HIT", required=False, min_value=1, max_value=500)
    gold_rate = forms.FloatField(
        label="Gold rate (0-1)",
        required=False,
        min_value=0,
        max_value=1,
        help_text="gold items added to a HIT, as a fraction of its items",
    )

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
                name=data.get("name", ""),
                task_type=data.get("task_type", ""),
                config=config,
                values={key: data.get(key) for key in studio.SETUP_FIELDS},
            )
        except studio.SetupRefused as exc:
            attach(self, exc)
        return data


GOLD_CHOICES = [("none", "none"), ("first", "the first N rows"), ("percent", "N% of the rows at random (seed)")]
GOLD_ALL = ("all", "every row (a gold-only addition)")
GOLD_FIELDS = ("gold_mode", "gold_n", "gold_seed")


class ItemsForm(forms.Form):
    """Where the items come from: one of the task type's sources, its file or corpus selection, and its options;
    for a source whose rows carry labels, the gold share (``gold_mode``, ``gold_n``, ``gold_seed``: which rows
    become gold items, :class:`~annotation.task_types.base.GoldShare`; "every row" only when ``adding``, items added
    to a project that has items for the workers)."""

    source = forms.ChoiceField(label="Items from", widget=forms.RadioSelect)
    file = forms.FileField(label="File", required=False)
    topics = forms.ModelMultipleChoiceField(
        queryset=Topic.objects.order_by("name"),
        required=False,
        label="Topics",
        widget=forms.SelectMultiple(attrs={"size": 6}),
    )
    limit = forms.IntegerField(label="At most (items)", required=False, min_value=1)
    gold_mode = forms.ChoiceField(label="Gold items", required=False, initial="none", widget=forms.RadioSelect)
    gold_n = forms.IntegerField(label="N (rows, or percent)", required=False, min_value=0)
    gold_seed = forms.IntegerField(
        label="Seed", required=False, initial=13, help_text="the same seed draws the same rows of the same file"
    )

    def __init__(self, *args, sources: tuple[Source, ...], gold_all: bool = False, **kwargs):
        super().__init__(*args, **kwargs)
        self.sources = sources
        self.fields["gold_mode"].choices = GOLD_CHOICES + ([GOLD_ALL] if gold_all else [])
        self.fields["source"].choices = [(s.name, s.label) for s in sources]
        if len(sources) == 1:
            self.fields["source"].initial = sources[0].name
        for source in sources:
            for option in source.options:
                name = option_field_name(source, option.name)
                if option.kind == "bool":
                    field = forms.BooleanField(required=False, initial=bool(option.default))
                elif option.kind == "int":
                    field = forms.IntegerField(
                        required=False, initial=option.default, min_value=option.minimum, max_value=option.maximum
                    )
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

    def gold(self) -> dict | None:
        """The gold share asked for (``{"mode", "n", "seed"}``), or None for a source whose rows carry no labels."""
        source = self.chosen()
        if source is None or not source.gold_label:
            return None
        return {
            "mode": self.cleaned_data.get("gold_mode") or "none",
            "n": self.cleaned_data.get("gold_n"),
            "seed": self.cleaned_data.get("gold_seed"),
        }

    def gold_sources(self) -> list[Source]:
        return [s for s in self.sources if s.gold_label]

    def clean(self):
        data = super().clean()
        source = self.chosen()
        if source is not None and source.is_upload and not data.get("file") and not self.errors:
            self.add_error("file", f"choose a {source.label} file ({' or '.join(source.extensions)})")
        return data


class SettingsForm(forms.Form):
    guidelines = forms.CharField(
        label="Guidelines (Markdown)",
        required=False,
        strip=False,
        widget=forms.Textarea(attrs={"rows": 14, "spellcheck": "true"}),
        help_text="shown in the instructions panel of every HIT; HTML works too and is sanitised (no scripts)",
    )
    assignments_per_item = forms.IntegerField(label="Responses per item (R)", min_value=1, max_value=1000)
    items_per_hit = forms.IntegerField(label="Items per HIT", min_value=1, max_value=500)
    gold_rate = forms.FloatField(label="Gold rate (0-1)", min_value=0, max_value=1)
    reward_cents = forms.IntegerField(label="Reward per HIT (cents)", min_value=0, max_value=100_000)
    time_estimate_seconds = forms.IntegerField(
        label="Time estimate per HIT (seconds)", min_value=0, max_value=24 * 3600
    )
    reservation_timeout_seconds = forms.IntegerField(
        label="Reservation timeout (seconds)",
        min_value=60,
        max_value=7 * 24 * 3600,
        help_text="how long a worker holds a HIT before it goes back",
    )
    gold_min_items = forms.IntegerField(
        label="Gold items before blocking (N)", min_value=0, max_value=10_000, help_text="0 = never block"
    )
    gold_min_accuracy = forms.FloatField(label="Minimum gold accuracy (0-1)", min_value=0, max_value=1)
    max_hits_per_worker = forms.IntegerField(
        label="Most HITs per worker", required=False, min_value=1, help_text="empty = unlimited"
    )
    # the order in which items enter work (annotation.services.set_item_order; Project.engine["item_order"])
    item_order = forms.ChoiceField(
        label="Item order",
        required=False,
        initial="random",
        choices=[
            ("random", "Random (as imported)"),
            ("uncertainty", "Uncertainty: least confident under the model"),
            ("disagreement", "Disagreement: most disagreeing items get more responses first"),
            ("model-human", "Model-human: items where a model annotator and the humans differ"),
        ],
        help_text="uncertainty needs an active model for the task type, else the order stays random",
    )
    r_min = forms.IntegerField(
        label="Disagreement: fewest responses per item (r_min)",
        required=False,
        min_value=1,
        max_value=1000,
        help_text="empty = R (no adaptive R)",
    )
    r_max = forms.IntegerField(
        label="Disagreement: most responses per item (r_max)",
        required=False,
        min_value=1,
        max_value=1000,
        help_text="empty = R; at most R",
    )
    min_agreement = forms.FloatField(
        label="Disagreement: agreement that settles an item (0-1)",
        required=False,
        min_value=0.01,
        max_value=1,
        help_text="empty = 0.7",
    )

    def clean(self):
        data = super().clean()
        mode = data.get("item_order") or "random"
        value = {"mode": mode}
        if mode == "disagreement":
            value.update({k: data.get(k) for k in ("r_min", "r_max", "min_agreement") if data.get(k) is not None})
        r = data.get("assignments_per_item")
        if r is not None:
            try:
                self.item_order_value = selectors.clean_item_order(value, assignments_per_item=r)
            except ValueError as exc:
                field = getattr(exc, "field", "engine.item_order").rpartition(".")[2]
                self.add_error(
                    field if field in self.fields and field != "mode" else "item_order",
                    getattr(exc, "reason", str(exc)),
                )
        return data

    @staticmethod
    def item_order_initial(project) -> dict:
        """The form's initial values of the item order fields for ``project``."""
        order = selectors.item_order(project)
        out = {"item_order": order["mode"]}
        if order["mode"] == "disagreement":
            out.update(r_min=order["r_min"], r_max=order["r_max"], min_agreement=order["min_agreement"])
        return out


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
    consent_text = forms.CharField(
        label="Consent text (Markdown)",
        required=False,
        strip=False,
        widget=forms.Textarea(attrs={"rows": 8, "spellcheck": "true"}),
        help_text="what the study is, who runs it, what is recorded, how to withdraw; sanitised like the guidelines",
    )
    instructions_required = forms.BooleanField(
        label="Workers must open the instructions",
        required=False,
        help_text="the guidelines, on a page of their own, before the training and the HITs",
    )
    training_enabled = forms.BooleanField(
        label="Training and qualification",
        required=False,
        help_text="the training items below, one at a time, each followed by "
        "right/wrong, the expected answer and the explanation",
    )
    pass_threshold = forms.FloatField(
        label="Pass threshold (0-1)",
        min_value=0,
        max_value=1,
        help_text="share of the counted training answers that must be right (0.8 = 80%)",
    )
    window = forms.IntegerField(
        label="Count the last N training items",
        min_value=0,
        max_value=1000,
        help_text="0 = all of them; e.g. 4 of 6: the first two are practice",
    )
    max_attempts = forms.IntegerField(
        label="Attempts",
        min_value=1,
        max_value=20,
        help_text="tries before a worker is screened out (Prolific's policy allows 2)",
    )
    screened_out_message = forms.CharField(
        label="Screened-out message (Markdown)",
        required=False,
        strip=False,
        widget=forms.Textarea(attrs={"rows": 4}),
        help_text="empty: a polite default; the worker also gets a screened-out completion code",
    )
    survey_enabled = forms.BooleanField(
        label="Exit survey", required=False, help_text="after the worker's last HIT, or when they stop"
    )
    survey_questions = forms.CharField(
        label="Survey questions (JSON)",
        required=False,
        widget=forms.Textarea(attrs={"rows": 12, "spellcheck": "false"}),
    )
    training_items = forms.MultipleChoiceField(
        label="Training items", required=False, widget=forms.CheckboxSelectMultiple
    )

    def __init__(self, *args, golds=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.golds = list(golds)
        self.fields["training_items"].choices = [(str(g.item_id), str(g.item_id)) for g in self.golds]
        for gold in self.golds:
            self.fields[f"explanation_{gold.item_id}"] = forms.CharField(
                required=False,
                max_length=5000,
                label=f"Explanation of item {gold.item_id}",
                widget=forms.Textarea(attrs={"rows": 2}),
                initial=gold.explanation,
            )

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
        keys = (
            "consent_required",
            "consent_text",
            "instructions_required",
            "training_enabled",
            "pass_threshold",
            "window",
            "max_attempts",
            "screened_out_message",
            "survey_enabled",
            "survey_questions",
        )
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
        return [
            {"gold": g, "checked": str(g.item_id) in chosen, "explanation": self[f"explanation_{g.item_id}"]}
            for g in self.golds
        ]


# --- model annotators (annotation.model_annotators checks every value; its FieldError names the field) ---------
def _number_input(step: str) -> forms.NumberInput:
    return forms.NumberInput(attrs={"step": step})


class LLMAnnotatorForm(forms.Form):
    """A new LLM annotator: what ``create_annotator(kind="llm")`` takes. Empty fields: the ``ARGORA_LLM_*``
    settings (or the annotator's defaults)."""

    name = forms.CharField(label="Name", required=False, max_length=200)
    model = forms.CharField(label="Model", required=False, max_length=300)
    base_url = forms.CharField(label="Base URL", required=False, max_length=500)
    api_key_env = forms.CharField(
        label="API key variable",
        required=False,
        max_length=200,
        help_text="the environment variable that holds the key, its name starting with "
        "ARGORA_LLM_KEY_PREFIX (default ARGORA_LLM_KEY_); empty: "
        "ARGORA_LLM_API_KEY, sent only to ARGORA_LLM_BASE_URL",
    )
    temperature = forms.CharField(
        label="Temperature (0-2)",
        required=False,
        widget=_number_input("0.1"),
        help_text="empty: 0 (the most likely answer)",
    )
    batch_size = forms.CharField(
        label="Batch size",
        required=False,
        widget=_number_input("1"),
        help_text="items per transaction of a run; empty: 4",
    )
    prompt_template = forms.CharField(
        label="Prompt", required=False, strip=False, widget=forms.Textarea(attrs={"rows": 14, "spellcheck": "false"})
    )
    OPTIONS = ("model", "base_url", "api_key_env", "temperature", "batch_size")

    def __init__(self, *args, default_model: str = "", default_base_url: str = "", **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["model"].help_text = f"empty: ARGORA_LLM_MODEL ({default_model or 'not set'})"
        self.fields["base_url"].help_text = (
            f"the OpenAI-compatible endpoint; empty: ARGORA_LLM_BASE_URL "
            f"({default_base_url or 'not set'}). Another host must not be of the "
            f"server's own networks unless ARGORA_OUTBOUND_ALLOWED_HOSTS allows it"
        )

    def options(self) -> dict:
        return {key: self.cleaned_data.get(key) for key in self.OPTIONS}


class RegistryAnnotatorForm(forms.Form):
    """A new registry annotator: one of the ready model versions of ``catalogue(project)``."""

    name = forms.CharField(label="Name", required=False, max_length=200)
    version = forms.CharField(label="Model version", required=False)
    batch_size = forms.CharField(
        label="Batch size",
        required=False,
        widget=_number_input("1"),
        help_text="items per transaction of a run; empty: 64",
    )

    def __init__(self, *args, catalogue: list[dict] = (), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["version"].widget = forms.Select(
            choices=[("", "choose a model")]
            + [(str(m["version"]), m.get("label") or f"{m['kind']} #{m['version']}") for m in catalogue]
        )

    def options(self) -> dict:
        return {key: self.cleaned_data.get(key) for key in ("version", "batch_size")}


class PromptForm(forms.Form):
    prompt_template = forms.CharField(
        label="Prompt", required=False, strip=False, widget=forms.Textarea(attrs={"rows": 16, "spellcheck": "false"})
    )
