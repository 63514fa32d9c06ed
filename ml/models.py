"""The model registry: one :class:`ModelVersion` row per trained model.

A version is trained into a temporary folder and renamed into ``ARTIFACT_ROOT/models/<kind>/<id>/`` only when
training finished, so ``status == "ready"`` always means the artifact is complete (see :mod:`ml.versions`).
At most one version per ``(kind, project)`` is active (two partial unique constraints: one for project-specific
versions, one for global ones, since NULLs never collide in a plain unique constraint).
"""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.db import models
from django.db.models import Q


class ModelVersion(models.Model):
    class Status(models.TextChoices):
        TRAINING = "training", "training"
        READY = "ready", "ready"
        FAILED = "failed", "failed"
        ARCHIVED = "archived", "archived"

    kind = models.CharField(
        max_length=64, db_index=True, help_text='trainer kind, e.g. "ranker", "span_ranker", "tagger", "argspan"'
    )
    project = models.ForeignKey(
        "annotation.Project",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="model_versions",
        help_text="empty = a global model",
    )
    base_model = models.CharField(max_length=500, blank=True, default="", help_text="name or path it started from")
    data_snapshot = models.CharField(
        max_length=500,
        blank=True,
        default="",
        help_text='what it was trained on, e.g. "project:<slug>@<n labels>" or a file',
    )
    data_hash = models.CharField(
        max_length=64, blank=True, default="", help_text="sha256 of the canonical training + dev rows"
    )
    snapshot_labels = models.PositiveIntegerField(
        null=True, blank=True, help_text="aggregated labels of the project when the data was taken (retrain loop)"
    )
    n_train = models.PositiveIntegerField(default=0)
    n_dev = models.PositiveIntegerField(default=0)
    hyperparameters = models.JSONField(default=dict, blank=True)
    seed = models.IntegerField(default=13)
    metrics = models.JSONField(default=dict, blank=True, help_text='e.g. {"dev": {...}, "primary": 0.81}')
    artifact_path = models.CharField(
        max_length=1000, blank=True, default="", help_text="the final folder (absolute), set when ready"
    )
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.TRAINING, db_index=True)
    is_active = models.BooleanField(default=False)
    activated_at = models.DateTimeField(null=True, blank=True)
    task_id = models.CharField(
        max_length=255,
        blank=True,
        default="",
        db_index=True,
        help_text="the Celery task that trains it (a redelivered task reuses its row)",
    )
    request = models.JSONField(
        default=dict,
        blank=True,
        help_text="the train call (kind, project, data, seed, ...) so an interrupted run can be re-sent",
    )
    attempts = models.PositiveSmallIntegerField(default=0, help_text="training runs started for this version")
    heartbeat_at = models.DateTimeField(
        null=True, blank=True, help_text="last sign of life of the run training it (stale = worker lost)"
    )
    error = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    trained_at = models.DateTimeField(null=True, blank=True)
    parent = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="children",
        help_text="the version this one was retrained from",
    )

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["kind", "project", "status"])]
        constraints = [
            models.UniqueConstraint(
                fields=["kind", "project"],
                condition=Q(is_active=True, project__isnull=False),
                name="ml_one_active_per_kind_project",
            ),
            models.UniqueConstraint(
                fields=["kind"], condition=Q(is_active=True, project__isnull=True), name="ml_one_active_global_per_kind"
            ),
            models.CheckConstraint(condition=Q(is_active=False) | Q(status="ready"), name="ml_active_is_ready"),
        ]

    def __str__(self) -> str:
        scope = (
            self.project.slug
            if self.project_id and hasattr(self.project, "slug")
            else (f"project {self.project_id}" if self.project_id else "global")
        )
        return f"{self.kind} #{self.pk} ({scope}, {self.status}{', active' if self.is_active else ''})"

    @property
    def primary_metric(self) -> float | None:
        value = (self.metrics or {}).get("primary")
        return float(value) if isinstance(value, (int, float)) else None

    @property
    def path(self) -> Path | None:
        return Path(self.artifact_path) if self.artifact_path else None

    @staticmethod
    def models_root() -> Path:
        return Path(settings.ARTIFACT_ROOT) / "models"


# --- silver annotation (issue 10, item 4) ------------------------------------------------------------


class SilverRun(models.Model):
    """One silver annotation job: an active model over a corpus selection, in batches (see :mod:`ml.silver`).

    ``last_sentence_id`` is the checkpoint: the highest Sentence id whose labels are stored, committed in the same
    transaction as each batch's labels, so a resumed run continues after it and never labels a sentence twice
    (the unique (run, sentence) constraint is the last guard).
    """

    class Status(models.TextChoices):
        PENDING = "pending", "pending"
        RUNNING = "running", "running"
        DONE = "done", "done"
        FAILED = "failed", "failed"
        CANCELLED = "cancelled", "cancelled"

    kind = models.CharField(max_length=64, help_text='trainer kind: "tagger", "argspan", "argspanscheme" or "argument"')
    model_version = models.ForeignKey(ModelVersion, on_delete=models.PROTECT, related_name="silver_runs")
    project = models.ForeignKey(
        "annotation.Project",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="silver_runs",
        help_text="the scope the active model came from",
    )
    topic = models.ForeignKey(
        "corpus.Topic",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="silver_runs",
        help_text="empty with source empty = all sentences",
    )
    source = models.CharField(max_length=1000, blank=True, default="", help_text="Sentence.source to select")
    options = models.JSONField(
        default=dict, blank=True, help_text="batch_size, shards, arguments_only, arguments_from_run, scheme_ratio, ..."
    )
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING, db_index=True)
    cancel_requested = models.BooleanField(default=False)
    last_sentence_id = models.BigIntegerField(default=0, help_text="checkpoint: labels stored up to this id")
    processed = models.PositiveIntegerField(default=0)
    labelled = models.PositiveIntegerField(default=0, help_text="sentences with at least one span / scheme")
    total = models.PositiveIntegerField(null=True, blank=True)
    batches = models.PositiveIntegerField(default=0)
    scheme_sums = models.JSONField(
        default=dict, blank=True, help_text="sum of each scheme's probability over the processed sentences"
    )
    task_id = models.CharField(max_length=255, blank=True, default="")
    error = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"silver {self.kind} run #{self.pk} ({self.status}, {self.processed}/{self.total or '?'})"

    def scheme_means(self) -> dict:
        n = self.processed or 0
        return {s: v / n for s, v in (self.scheme_sums or {}).items()} if n else {}


class SilverShard(models.Model):
    """One contiguous Sentence id range ``[first_id, last_id]`` of a silver run, processed by one Celery task
    (``ml.tasks.silver_shard``) and checkpointed like a whole run: ``last_sentence_id`` moves in the same transaction
    as each batch's labels, with this row locked (see :mod:`ml.silver`)."""

    Status = SilverRun.Status

    run = models.ForeignKey(SilverRun, on_delete=models.CASCADE, related_name="shards")
    index = models.PositiveIntegerField(help_text="0-based position in the run")
    first_id = models.BigIntegerField(help_text="lowest Sentence id of the range")
    last_id = models.BigIntegerField(help_text="highest Sentence id of the range")
    last_sentence_id = models.BigIntegerField(default=0, help_text="checkpoint: labels stored up to this id")
    total = models.PositiveIntegerField(default=0, help_text="selected sentences in the range")
    processed = models.PositiveIntegerField(default=0)
    labelled = models.PositiveIntegerField(default=0)
    batches = models.PositiveIntegerField(default=0)
    scheme_sums = models.JSONField(default=dict, blank=True)
    status = models.CharField(
        max_length=16, choices=SilverRun.Status.choices, default=SilverRun.Status.PENDING, db_index=True
    )
    task_id = models.CharField(max_length=255, blank=True, default="")
    worker = models.CharField(max_length=255, blank=True, default="", help_text="hostname of the last worker on it")
    attempts = models.PositiveSmallIntegerField(default=0, help_text="times a task started on it")
    error = models.TextField(blank=True, default="")
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["run_id", "index"]
        constraints = [models.UniqueConstraint(fields=["run", "index"], name="ml_silver_one_shard_per_index")]

    def __str__(self) -> str:
        return f"silver run {self.run_id} shard {self.index} ({self.status}, {self.processed}/{self.total})"


class SilverLabel(models.Model):
    """A model's prediction for one sentence in one silver run; kept apart from gold and crowd labels."""

    run = models.ForeignKey(SilverRun, on_delete=models.CASCADE, related_name="labels")
    sentence = models.ForeignKey("corpus.Sentence", on_delete=models.CASCADE, related_name="silver_labels")
    spans = models.JSONField(
        default=list,
        blank=True,
        help_text='[{"begin", "end", "text", "confidence"[, "variable", "variable_confidence"]}]',
    )
    schemes = models.JSONField(default=dict, blank=True, help_text="{scheme: probability} (argspanscheme)")
    confidence = models.FloatField(default=0.0, help_text="mean probability of the predicted word tags")
    stance = models.CharField(
        max_length=8,
        blank=True,
        default="",
        help_text='argument runs: predicted "pro", "con" or "none" (never Sentence.stance)',
    )
    stance_probability = models.FloatField(null=True, blank=True, help_text="argument runs: P(predicted stance)")
    stance_probs = models.JSONField(default=dict, blank=True, help_text='argument runs: {"pro", "con", "none": p}')
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["run_id", "sentence_id"]
        constraints = [models.UniqueConstraint(fields=["run", "sentence"], name="ml_silver_one_label_per_sentence")]

    def __str__(self) -> str:
        return f"silver label run {self.run_id} sentence {self.sentence_id}"


# --- the Arg-CTRL data pipeline (issue 21, item 2) ---------------------------------------------------


class PipelineRun(models.Model):
    """One run of a chained data pipeline (``argctrl``: import -> relevance -> argument -> aspects -> documents),
    see :mod:`ml.pipeline`. ``stages`` holds each stage's state and figures; a re-run continues from the first
    stage that is not done, so every stage is resumable and a finished pipeline adds nothing."""

    class Status(models.TextChoices):
        PENDING = "pending", "pending"
        RUNNING = "running", "running"
        WAITING = "waiting", "waiting"
        DONE = "done", "done"
        FAILED = "failed", "failed"

    kind = models.CharField(max_length=32, default="argctrl", db_index=True)
    documents = models.CharField(max_length=1000, help_text="the folder of *.txt documents (absolute)")
    topic_name = models.CharField(max_length=200, help_text="the topic as given (slug, name or id)")
    topic = models.ForeignKey(
        "corpus.Topic", null=True, blank=True, on_delete=models.PROTECT, related_name="pipeline_runs"
    )
    options = models.JSONField(
        default=dict, blank=True, help_text="model versions, relevance terms, batch size, document bounds, release"
    )
    stage = models.CharField(max_length=32, default="import", help_text="the first stage that is not done")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING, db_index=True)
    stages = models.JSONField(
        default=dict, blank=True, help_text='{stage: {"status", "counts", "started_at", "finished_at"}}'
    )
    argument_run = models.ForeignKey(
        "ml.SilverRun",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        help_text="the argument / stance silver run",
    )
    aspect_run = models.ForeignKey(
        "ml.SilverRun",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        help_text="the aspect tagger's silver run",
    )
    release = models.ForeignKey(
        "corpus.Release",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        help_text="the training-documents release (aspect-docs)",
    )
    error = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["kind", "documents", "topic_name"])]

    def __str__(self) -> str:
        return f"{self.kind} pipeline #{self.pk} ({self.topic_name}: {self.stage}, {self.status})"


# --- the retrain loop's attempts (issue 37, point 4) -------------------------------------------------


class RetrainAttempt(models.Model):
    """One retrain of a kind from a project's labels, as the studio shows it (:mod:`ml.loop`): ``queued`` when the
    check is enqueued after a submission, then ``running`` / ``finished`` (a version was trained) / ``refused`` (over
    the budget, with the reason) / ``failed`` (the trainer raised) / ``skipped`` (too few new labels). Written only
    by :func:`ml.loop.record_attempt`."""

    class State(models.TextChoices):
        QUEUED = "queued", "queued"
        RUNNING = "running", "running"
        FINISHED = "finished", "finished"
        REFUSED = "refused", "refused"
        FAILED = "failed", "failed"
        SKIPPED = "skipped", "skipped"

    project = models.ForeignKey("annotation.Project", on_delete=models.CASCADE, related_name="retrain_attempts")
    kind = models.CharField(max_length=64, blank=True, default="", help_text='trainer kind; "" = the queued check')
    state = models.CharField(max_length=16, choices=State.choices, default=State.QUEUED, db_index=True)
    reason = models.TextField(blank=True, default="")
    n_labels = models.PositiveIntegerField(null=True, blank=True, help_text="human labels of the project")
    new_labels = models.IntegerField(null=True, blank=True, help_text="human labels since the last version")
    rows = models.PositiveIntegerField(null=True, blank=True, help_text="training + dev rows")
    steps = models.PositiveIntegerField(null=True, blank=True, help_text="optimisation steps run (budgeted kinds)")
    capped = models.CharField(
        max_length=32,
        blank=True,
        default="",
        help_text='"max_steps" / "max_seconds" when the budget stopped training early',
    )
    version = models.ForeignKey(
        ModelVersion, null=True, blank=True, on_delete=models.SET_NULL, related_name="retrain_attempts"
    )
    task_id = models.CharField(max_length=255, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["project", "kind", "state"])]

    def __str__(self) -> str:
        return f"retrain {self.kind or '(check)'} of project {self.project_id}: {self.state}"
