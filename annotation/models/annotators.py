"""Model annotators: registry models and LLMs answering a project's items beside the crowd (the service is
:mod:`annotation.model_annotators`).
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from .projects import Item, Project
from .work import Response, Worker


class ModelAnnotator(models.Model):
    """A model that answers a project's items beside the crowd: an active registry model of a kind that can answer
    the task type (``kind="registry"``, ``options["registry_kind"]`` / ``options["version"]``), or an LLM behind an
    OpenAI-compatible chat endpoint (``kind="llm"``; base URL, model and key from the settings ``ARGORA_LLM_*`` unless
    ``options`` overrides them) with a prompt template per task type, versioned (:class:`ModelPromptVersion`).

    It answers as its own :class:`Worker` (source ``model``); its answers are Responses of assignments with status
    ``model``, which no count, aggregate, agreement figure or release reads unless the researcher includes them
    (``include_in_results``). :mod:`annotation.model_annotators` is the one place that changes these rows."""

    class Kind(models.TextChoices):
        REGISTRY = "registry", "Registry model"
        LLM = "llm", "LLM (OpenAI-compatible endpoint)"

    class Status(models.TextChoices):
        IDLE = "idle", "Not run yet"
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="model_annotators")
    name = models.CharField(max_length=100)
    kind = models.CharField(max_length=10, choices=Kind.choices)
    worker = models.OneToOneField(Worker, on_delete=models.PROTECT, related_name="model_annotator")
    options = models.JSONField(
        default=dict,
        blank=True,
        help_text="registry: registry_kind, version; llm: base_url, model, api_key_env, "
        "temperature, timeout, max_attempts, batch_size",
    )
    prompt_template = models.TextField(blank=True, help_text="LLM only: the current prompt ($text, $labels, ...)")
    prompt_version = models.PositiveIntegerField(default=0, help_text="version of the current prompt (LLM only)")
    include_in_results = models.BooleanField(
        default=False, help_text="count its answers in aggregates and releases like a human's (off: kept apart)"
    )
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.IDLE)
    task_id = models.CharField(max_length=255, blank=True)
    error = models.TextField(blank=True)
    processed = models.PositiveIntegerField(default=0, help_text="items answered (valid answers stored)")
    failed = models.PositiveIntegerField(default=0, help_text="items left without a valid answer after the retries")
    total = models.PositiveIntegerField(default=0)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["project_id", "id"]
        constraints = [models.UniqueConstraint(fields=["project", "name"], name="unique_model_annotator_name")]

    def __str__(self) -> str:
        return f"{self.name} ({self.get_kind_display()})"


class ModelPromptVersion(models.Model):
    """Every prompt an LLM annotator has had: answers name the version they were asked with."""

    annotator = models.ForeignKey(ModelAnnotator, on_delete=models.CASCADE, related_name="prompt_versions")
    version = models.PositiveIntegerField()
    template = models.TextField()
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["annotator_id", "version"]
        constraints = [models.UniqueConstraint(fields=["annotator", "version"], name="unique_prompt_version")]

    def __str__(self) -> str:
        return f"prompt v{self.version} of {self.annotator_id}"


class ModelAnswer(models.Model):
    """A model annotator's valid answer to one item (at most one per annotator and item: a resumed run never asks
    again), with what produced it and what it cost."""

    annotator = models.ForeignKey(ModelAnnotator, on_delete=models.CASCADE, related_name="answers")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="model_answers")
    response = models.OneToOneField(Response, on_delete=models.CASCADE, related_name="model_answer")
    model_id = models.CharField(max_length=300, help_text='e.g. "tagger#12" or "llm:qwen2.5-7b@http://..."')
    prompt_version = models.PositiveIntegerField(null=True, blank=True)
    confidence = models.FloatField(null=True, blank=True, help_text="the model's probability / mean token prob")
    seconds = models.FloatField(default=0.0, help_text="time spent on this item")
    tokens = models.PositiveIntegerField(null=True, blank=True)
    cost = models.FloatField(null=True, blank=True, help_text="in ARGORA_LLM_COST_CURRENCY, when a price is set")
    raw = models.TextField(blank=True, help_text="the model's reply as it came")
    attempts = models.PositiveSmallIntegerField(default=1)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["annotator_id", "item_id"]
        constraints = [models.UniqueConstraint(fields=["annotator", "item"], name="one_model_answer_per_item")]

    def __str__(self) -> str:
        return f"answer of {self.annotator_id} to item {self.item_id}"


class ModelAnswerFailure(models.Model):
    """One failed attempt of a model annotator at an item, with the raw reply: never a label."""

    class Kind(models.TextChoices):
        MALFORMED = "malformed", "Malformed reply"
        INVALID = "invalid", "Answer refused by the task type"
        TIMEOUT = "timeout", "Time-out"
        RATE_LIMITED = "rate_limited", "Rate-limited (429)"
        HTTP = "http", "HTTP / network error"
        ERROR = "error", "Model error"

    annotator = models.ForeignKey(ModelAnnotator, on_delete=models.CASCADE, related_name="failures")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="model_failures")
    kind = models.CharField(max_length=20, choices=Kind.choices)
    error = models.TextField(blank=True)
    raw = models.TextField(blank=True)
    model_id = models.CharField(max_length=300, blank=True)
    prompt_version = models.PositiveIntegerField(null=True, blank=True)
    attempt = models.PositiveSmallIntegerField(default=1)
    seconds = models.FloatField(default=0.0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["annotator_id", "item_id", "id"]
        indexes = [models.Index(fields=["annotator", "item"])]

    def __str__(self) -> str:
        return f"{self.kind} of {self.annotator_id} at item {self.item_id}"
