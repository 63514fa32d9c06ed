"""The annotation engine: projects, items, HITs, assignments, responses, workers and gold.

Invariants live here as constraints; the state changes (allocation, submission, expiry) live in
:mod:`annotation.services` and run in transactions with row locks.

One counter on :class:`HIT` is denormalised on purpose, so that "give me the next HIT" is one indexed
row lock and not a count over assignments: ``taken`` = assignments that hold a slot (reserved + submitted
+ approved); never above the project's R (checked with ``taken < R`` in the same UPDATE that increments
it). Submission does not touch the HIT row, so submitting never blocks allocation.
"""
from __future__ import annotations

import re
import secrets

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q

from argora.errors import FieldError
from argora.html import clean_html

from . import task_types
from .task_types import get_task_type


def new_invite_token() -> str:
    return secrets.token_urlsafe(24)


def new_completion_code() -> str:
    # Upper-case, no look-alike characters: people copy it into Prolific / MTurk by hand.
    alphabet = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
    return "".join(secrets.choice(alphabet) for _ in range(10))


def validate_task_type(value: str) -> None:
    """A project's task type must be registered: the admin, the API, the studio, the CLI and ``Project.save`` all
    refuse any other (``sentence-label`` for ``sentence_label`` would otherwise make every page of the project
    fail)."""
    try:
        get_task_type(value)
    except KeyError as exc:
        raise ValidationError(str(exc.args[0]), code="unknown_task_type") from None


class Project(models.Model):
    class Status(models.TextChoices):
        DRAFT = "draft", "Draft"
        ACTIVE = "active", "Active"
        PAUSED = "paused", "Paused"
        CLOSED = "closed", "Closed"

    name = models.CharField(max_length=200)
    slug = models.SlugField(max_length=200, unique=True)
    task_type = models.CharField(max_length=100, validators=[validate_task_type],
                                 help_text="registry key of the task type, e.g. sentence_label")
    guidelines = models.TextField(blank=True, help_text="HTML shown in the instructions panel of every HIT")
    config = models.JSONField(default=dict, blank=True, help_text='task-type options, e.g. {"labels": ["pro", "con"]}')
    assignments_per_item = models.PositiveSmallIntegerField(default=3, help_text="R: responses wanted per item")
    items_per_hit = models.PositiveSmallIntegerField(default=5)
    gold_rate = models.FloatField(default=0.0, help_text="gold items added per HIT, as a fraction of its items (0..1)")
    max_hits_per_worker = models.PositiveIntegerField(null=True, blank=True, help_text="empty = unlimited")
    reward_cents = models.PositiveIntegerField(default=0)
    time_estimate_seconds = models.PositiveIntegerField(default=0)
    reservation_timeout_seconds = models.PositiveIntegerField(default=1800)
    gold_min_items = models.PositiveIntegerField(
        default=3, help_text="N: gold items a worker answers before accuracy can block them (0 = never block)")
    gold_min_accuracy = models.FloatField(default=0.7)
    invite_token = models.CharField(max_length=64, unique=True, default=new_invite_token)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.DRAFT, db_index=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="annotation_projects")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "id"]
        constraints = [
            models.CheckConstraint(condition=Q(assignments_per_item__gte=1), name="project_r_positive"),
            models.CheckConstraint(condition=Q(items_per_hit__gte=1), name="project_items_per_hit_positive"),
            models.CheckConstraint(condition=Q(gold_rate__gte=0) & Q(gold_rate__lte=1), name="project_gold_rate_0_1"),
            models.CheckConstraint(condition=Q(gold_min_accuracy__gte=0) & Q(gold_min_accuracy__lte=1),
                                   name="project_gold_accuracy_0_1"),
        ]

    def __str__(self) -> str:
        return self.name

    def save(self, *args, **kwargs):
        validate_task_type(self.task_type)  # no path writes a project of a task type that is not installed
        self.guidelines = clean_html(self.guidelines)  # nor guidelines with a script (API, admin, CLI: argora.html)
        super().save(*args, **kwargs)

    @property
    def is_active(self) -> bool:
        return self.status == self.Status.ACTIVE

    def get_task_type(self):
        return get_task_type(self.task_type)


class Item(models.Model):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="items")
    payload = models.JSONField(default=dict)
    sentence = models.ForeignKey("corpus.Sentence", null=True, blank=True, on_delete=models.SET_NULL,
                                 related_name="annotation_items")
    external_key = models.CharField(max_length=200, blank=True)
    is_gold = models.BooleanField(default=False)
    # A training item is a gold item (expected answer + explanation) shown only in the study's training phase
    # (annotation.phases): never in a HIT, never interleaved as gold, in no count, agreement figure or item export.
    is_training = models.BooleanField(default=False,
                                      help_text="shown only in the training phase; never in a HIT or any count")
    position = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["project_id", "position", "id"]
        indexes = [models.Index(fields=["project", "is_gold", "position"])]
        constraints = [models.CheckConstraint(condition=Q(is_training=False) | Q(is_gold=True),
                                              name="training_item_is_gold")]

    def __str__(self) -> str:
        kind = "training " if self.is_training else "gold " if self.is_gold else ""
        return f"{kind}item {self.pk} of {self.project_id}"


class GoldItem(models.Model):
    item = models.OneToOneField(Item, on_delete=models.CASCADE, related_name="gold", limit_choices_to={"is_gold": True})
    expected = models.JSONField(help_text="the expected response, in the task type's response format")
    tolerance = models.FloatField(default=0.0)
    explanation = models.TextField(blank=True, help_text="shown to the worker after a miss (training items: after "
                                                         "every answer)")

    def __str__(self) -> str:
        return f"gold for item {self.item_id}"


class HIT(models.Model):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="hits")
    position = models.PositiveIntegerField(default=0)
    items = models.ManyToManyField(Item, through="HITItem", related_name="hits")
    taken = models.PositiveSmallIntegerField(default=0, help_text="assignments holding a slot (reserved/submitted/approved)")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = "HIT"
        ordering = ["project_id", "position", "id"]
        indexes = [models.Index(fields=["project", "taken", "position"])]
        constraints = [
            models.UniqueConstraint(fields=["project", "position"], name="unique_hit_position"),
        ]

    def __str__(self) -> str:
        return f"HIT {self.position} of {self.project}"


class HITItem(models.Model):
    hit = models.ForeignKey(HIT, on_delete=models.CASCADE, related_name="hit_items")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="hit_items")
    position = models.PositiveSmallIntegerField(default=0)

    class Meta:
        ordering = ["hit_id", "position"]
        constraints = [
            # every (non-gold) item is in exactly one HIT
            models.UniqueConstraint(fields=["item"], name="item_in_one_hit"),
            models.UniqueConstraint(fields=["hit", "position"], name="unique_hititem_position"),
        ]


class Worker(models.Model):
    class Source(models.TextChoices):
        LOCAL = "local", "Local account"
        INVITE = "invite", "Invite link"
        MTURK = "mturk", "Amazon MTurk"
        PROLIFIC = "prolific", "Prolific"
        MODEL = "model", "Model annotator"  # a registry model or an LLM (annotation.model_annotators)

    user = models.OneToOneField(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE,
                                related_name="annotation_worker")
    external_id = models.CharField(max_length=200, blank=True,
                                   help_text="e.g. MTurk WorkerId, Prolific PID, as the platform confirmed it")
    # A platform id somebody claimed (in a URL) that the platform has not confirmed yet: such a worker is
    # provisional -- its answers count nowhere, its gold answers are not scored, and it never touches the record of
    # the worker who really has that id -- until a sync confirms the claim (services.confirm_assignment).
    claimed_external_id = models.CharField(max_length=200, blank=True, db_index=True,
                                           help_text="platform id claimed but not (yet) confirmed by the platform")
    # An id the worker's invite link carried (``?PROLIFIC_PID=``), kept for the researcher and never trusted: it
    # names no one (anyone can type any PID), so it is neither ``external_id`` nor a claim a sync would confirm.
    link_id = models.CharField(max_length=200, blank=True,
                               help_text="an id the invite link carried (?PROLIFIC_PID=), recorded, never trusted")
    # The secret part of the worker's recovery code (annotation.identity.recovery_code: an HMAC of the worker id and
    # this salt, shown with the completion code): typing the code in again, in any browser, makes that browser this
    # worker again. A new salt revokes the old code.
    recovery_salt = models.CharField(max_length=32, blank=True)
    source = models.CharField(max_length=10, choices=Source.choices, default=Source.LOCAL)
    blocked = models.BooleanField(default=False, db_index=True)
    blocked_reason = models.TextField(blank=True)
    blocked_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["source", "external_id"], condition=~Q(external_id=""),
                                    name="unique_worker_external_id"),
        ]

    def __str__(self) -> str:
        if self.external_id:
            return f"{self.source}:{self.external_id}"
        if self.user_id:
            return getattr(self.user, "username", f"user {self.user_id}")
        return f"worker {self.pk}"


class WorkerProjectCode(models.Model):
    """The completion code a worker gets at the end of a project (pasted into Prolific / MTurk / a lab sheet): one
    per kind -- ``completed`` after their HITs, ``screened_out`` when the study's qualification screened them out
    (they never get a HIT, so never both in practice)."""

    class Kind(models.TextChoices):
        COMPLETED = "completed", "Completed"
        SCREENED_OUT = "screened_out", "Screened out"

    worker = models.ForeignKey(Worker, on_delete=models.CASCADE, related_name="completion_codes")
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="completion_codes")
    kind = models.CharField(max_length=20, choices=Kind.choices, default=Kind.COMPLETED)
    code = models.CharField(max_length=32, default=new_completion_code)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["worker", "project", "kind"],
                                               name="unique_code_per_worker_project_kind")]

    def __str__(self) -> str:
        return self.code


class Assignment(models.Model):
    class Status(models.TextChoices):
        RESERVED = "reserved", "Reserved"
        SUBMITTED = "submitted", "Submitted"
        APPROVED = "approved", "Approved"
        REJECTED = "rejected", "Rejected"
        EXPIRED = "expired", "Expired"
        # answers that arrived after the reservation ended: kept, counted in no aggregate unless staff accept them
        LATE = "late", "Late (not counted)"
        # a model annotator's answers (annotation.model_annotators): never a slot, counted nowhere by default
        MODEL = "model", "Model answers (kept apart)"

    # statuses that hold one of the HIT's R slots
    HOLDING = (Status.RESERVED, Status.SUBMITTED, Status.APPROVED)
    DONE = (Status.SUBMITTED, Status.APPROVED)

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="assignments")
    hit = models.ForeignKey(HIT, on_delete=models.CASCADE, related_name="assignments")
    worker = models.ForeignKey(Worker, on_delete=models.CASCADE, related_name="assignments")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.RESERVED, db_index=True)
    reserved_at = models.DateTimeField()
    expires_at = models.DateTimeField()
    submitted_at = models.DateTimeField(null=True, blank=True)
    work_seconds = models.FloatField(null=True, blank=True, help_text="server side: submitted_at - reserved_at")
    client_seconds = models.FloatField(null=True, blank=True, help_text="active time reported by the HIT page")
    gold_items = models.ManyToManyField(Item, blank=True, related_name="gold_assignments")
    external_id = models.CharField(max_length=200, blank=True, help_text="MTurk assignmentId")
    submission_key = models.CharField(max_length=64, blank=True, help_text="hash of the submitted payload")
    feedback = models.TextField(blank=True)
    late_accepted_at = models.DateTimeField(null=True, blank=True,
                                            help_text="when staff accepted late answers (they count from then on)")

    class Meta:
        ordering = ["-reserved_at", "id"]
        indexes = [
            models.Index(fields=["project", "worker", "status"]),
            models.Index(fields=["status", "expires_at"]),
        ]
        constraints = [models.UniqueConstraint(fields=["hit", "worker"], name="one_assignment_per_hit_worker")]

    def __str__(self) -> str:
        return f"assignment {self.pk} ({self.status})"


class AssignmentDraft(models.Model):
    """The answers and feedback of a reserved assignment as the worker gives them, saved as they go, so that a
    reload, a crash or another tab restores them. Deleted when the assignment is submitted or released."""

    assignment = models.OneToOneField(Assignment, on_delete=models.CASCADE, primary_key=True, related_name="draft")
    responses = models.JSONField(default=dict, help_text="{item id: the task type's (possibly partial) answer}")
    feedback = models.TextField(blank=True)
    revision = models.BigIntegerField(default=0, help_text=(
        "the page's number for this save (hit.js: its clock in ms); a save with a smaller one is dropped"))
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"draft of assignment {self.assignment_id}"


class Response(models.Model):
    assignment = models.ForeignKey(Assignment, on_delete=models.CASCADE, related_name="responses")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="responses")
    data = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["assignment_id", "id"]
        constraints = [models.UniqueConstraint(fields=["assignment", "item"], name="one_response_per_item")]


class GoldRecord(models.Model):
    worker = models.ForeignKey(Worker, on_delete=models.CASCADE, related_name="gold_records")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="gold_records")
    assignment = models.ForeignKey(Assignment, on_delete=models.CASCADE, related_name="gold_records")
    correct = models.BooleanField()
    score = models.FloatField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["worker_id", "id"]
        constraints = [models.UniqueConstraint(fields=["worker", "item"], name="one_gold_record_per_worker_item")]


# --- model annotators: registry models and LLMs answering a project's items (annotation.model_annotators) -------
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
    options = models.JSONField(default=dict, blank=True,
                               help_text="registry: registry_kind, version; llm: base_url, model, api_key_env, "
                               "temperature, timeout, max_attempts, batch_size")
    prompt_template = models.TextField(blank=True, help_text="LLM only: the current prompt ($text, $labels, ...)")
    prompt_version = models.PositiveIntegerField(default=0, help_text="version of the current prompt (LLM only)")
    include_in_results = models.BooleanField(
        default=False, help_text="count its answers in aggregates and releases like a human's (off: kept apart)")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.IDLE)
    task_id = models.CharField(max_length=255, blank=True)
    error = models.TextField(blank=True)
    processed = models.PositiveIntegerField(default=0, help_text="items answered (valid answers stored)")
    failed = models.PositiveIntegerField(default=0, help_text="items left without a valid answer after the retries")
    total = models.PositiveIntegerField(default=0)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
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
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
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


# --- study phases: consent, instructions, training + qualification, exit survey (annotation.phases) -------------
SURVEY_KINDS = ("text", "likert", "choice", "number")
SURVEY_MAX_QUESTIONS = 40
SURVEY_TEXT_MAX = 5000
_SURVEY_NAME = re.compile(r"^[a-z][a-z0-9_]{0,49}$")
_SURVEY_KEYS = {"name", "label", "kind", "required", "help"}
_SURVEY_KIND_KEYS = {"text": {"max_length"}, "likert": {"scale"}, "choice": {"options"},
                     "number": {"min", "max", "integer"}}


def _labels(value, where: str, *, least: int, most: int, what: str) -> list[str]:
    if not isinstance(value, list) or not least <= len(value) <= most:
        raise FieldError(where, f"give a list of {least} to {most} {what}")
    cleaned = [str(v).strip() if isinstance(v, (str, int, float)) and not isinstance(v, bool) else "" for v in value]
    if any(not v or len(v) > 200 for v in cleaned):
        raise FieldError(where, f"each of the {what} is a text of 1 to 200 characters")
    if len(set(cleaned)) != len(cleaned):
        raise FieldError(where, f"the {what} must be distinct")
    return cleaned


def _number(value, where: str):
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise FieldError(where, "a number (or leave it out)")
    return value


def clean_survey_questions(questions) -> list[dict]:
    """The exit survey's questions, checked and normalised. Each question is ``{"name", "label", "kind",
    "required"}`` (``required`` defaults to false; an optional ``help`` line) plus, by kind: ``text``
    (``max_length``, default and at most 5000), ``likert`` (``scale``: 2-11 labels, first = lowest), ``choice``
    (``options``: 2-50 labels) or ``number`` (optional ``min`` / ``max``, ``integer``: whole numbers only). Raises
    :class:`~argora.errors.FieldError` naming the question and key, e.g. ``survey_questions[2].scale``."""
    if questions in (None, ""):
        return []
    if not isinstance(questions, list):
        raise FieldError("survey_questions", "expected a JSON list of questions [{...}, ...]")
    if len(questions) > SURVEY_MAX_QUESTIONS:
        raise FieldError("survey_questions", f"at most {SURVEY_MAX_QUESTIONS} questions")
    out, names = [], set()
    for i, q in enumerate(questions):
        at = f"survey_questions[{i}]"
        if not isinstance(q, dict):
            raise FieldError(at, 'expected an object {"name": ..., "label": ..., "kind": ...}')
        kind = q.get("kind")
        if kind not in SURVEY_KINDS:
            raise FieldError(f"{at}.kind", f"one of {', '.join(SURVEY_KINDS)}")
        unknown = set(q) - _SURVEY_KEYS - _SURVEY_KIND_KEYS[kind]
        if unknown:
            known = ", ".join(sorted(_SURVEY_KEYS | _SURVEY_KIND_KEYS[kind]))
            raise FieldError(f"{at}.{sorted(unknown)[0]}", f"not a key of a {kind} question (known: {known})")
        name = q.get("name")
        if not isinstance(name, str) or not _SURVEY_NAME.match(name):
            raise FieldError(f"{at}.name", "lower-case letters, digits and _ (starting with a letter, at most 50)")
        if name in names:
            raise FieldError(f"{at}.name", f"{name!r} is the name of an earlier question; names must be distinct")
        names.add(name)
        label = q.get("label")
        if not isinstance(label, str) or not label.strip() or len(label) > 1000:
            raise FieldError(f"{at}.label", "the question as the worker reads it (1 to 1000 characters)")
        required = q.get("required", False)
        if not isinstance(required, bool):
            raise FieldError(f"{at}.required", "true or false")
        help_text = q.get("help", "")
        if not isinstance(help_text, str) or len(help_text) > 1000:
            raise FieldError(f"{at}.help", "a text of at most 1000 characters")
        clean = {"name": name, "label": label.strip(), "kind": kind, "required": required}
        if help_text.strip():
            clean["help"] = help_text.strip()
        if kind == "text":
            most = q.get("max_length", SURVEY_TEXT_MAX)
            if isinstance(most, bool) or not isinstance(most, int) or not 1 <= most <= SURVEY_TEXT_MAX:
                raise FieldError(f"{at}.max_length", f"a whole number from 1 to {SURVEY_TEXT_MAX}")
            clean["max_length"] = most
        elif kind == "likert":
            clean["scale"] = _labels(q.get("scale"), f"{at}.scale", least=2, most=11, what="scale labels")
        elif kind == "choice":
            clean["options"] = _labels(q.get("options"), f"{at}.options", least=2, most=50, what="options")
        else:
            low, high = _number(q.get("min"), f"{at}.min"), _number(q.get("max"), f"{at}.max")
            if low is not None and high is not None and low > high:
                raise FieldError(f"{at}.max", f"must not be below min ({low})")
            integer = q.get("integer", False)
            if not isinstance(integer, bool):
                raise FieldError(f"{at}.integer", "true or false")
            clean.update({key: value for key, value in (("min", low), ("max", high)) if value is not None})
            clean["integer"] = integer
        out.append(clean)
    return out


class StudyPhases(models.Model):
    """The phases a worker goes through around the HITs of a project, whatever channel brought them (invite link,
    Prolific, MTurk's ExternalQuestion): consent, instructions, training with a qualification, an exit survey. Every
    phase is off by default; :mod:`annotation.phases` runs them and is the one place that changes this row."""

    project = models.OneToOneField(Project, on_delete=models.CASCADE, primary_key=True, related_name="phases")
    consent_required = models.BooleanField(default=False, help_text="workers must tick their consent first")
    consent_text = models.TextField(blank=True, help_text="Markdown (sanitised like the guidelines)")
    instructions_required = models.BooleanField(
        default=False, help_text="workers must open the instructions (the guidelines) before the training / HITs")
    training_enabled = models.BooleanField(
        default=False, help_text="training items (gold items marked as training) with explanations, then the "
                                 "qualification decides")
    pass_threshold = models.FloatField(default=0.8, help_text="share of the counted training answers that must be "
                                                              "right to qualify (0-1; 0 = everyone who trains)")
    window = models.PositiveSmallIntegerField(default=0, help_text="count only the last N training items of an "
                                                                   "attempt (0 = all of them)")
    max_attempts = models.PositiveSmallIntegerField(default=2, help_text="tries at the training before a worker is "
                                                                         "screened out")
    screened_out_message = models.TextField(blank=True, help_text="what a screened-out worker reads (empty: a "
                                                                  "polite default)")
    survey_enabled = models.BooleanField(default=False, help_text="an exit survey after the last HIT (or on stop)")
    survey_questions = models.JSONField(default=list, blank=True, help_text="the survey's questions "
                                                                            "(annotation.models.clean_survey_questions)")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "study phases"
        verbose_name_plural = "study phases"
        constraints = [
            models.CheckConstraint(condition=Q(pass_threshold__gte=0) & Q(pass_threshold__lte=1),
                                   name="phases_threshold_0_1"),
            models.CheckConstraint(condition=Q(max_attempts__gte=1), name="phases_attempts_positive"),
        ]

    def __str__(self) -> str:
        return f"study phases of {self.project}"

    @property
    def any_on(self) -> bool:
        return self.consent_required or self.instructions_required or self.training_enabled or self.survey_enabled

    def clean(self):
        try:
            self.survey_questions = clean_survey_questions(self.survey_questions)
        except FieldError as exc:
            raise ValidationError({"survey_questions": f"{exc.field}: {exc.reason}"}) from None
        if self.consent_required and not self.consent_text.strip():
            raise ValidationError({"consent_text": "write the consent text the workers agree to"})
        if self.survey_enabled and not self.survey_questions:
            raise ValidationError({"survey_questions": "the survey is on: give at least one question"})


class Participation(models.Model):
    """One worker's way through the phases of one project: when they consented (and to which text), opened the
    instructions, their training attempts and the qualification decision, their survey answers. A worker of a
    platform not confirmed yet (an MTurk claim) has their own row until the platform confirms them; then it moves to
    the confirmed worker (:func:`annotation.phases.merge_participation`)."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="participations")
    worker = models.ForeignKey(Worker, on_delete=models.CASCADE, related_name="participations")
    consent_at = models.DateTimeField(null=True, blank=True)
    consent_version = models.CharField(max_length=64, blank=True,
                                       help_text="sha256 of the consent text the worker agreed to (first 16 hex)")
    instructions_opened_at = models.DateTimeField(null=True, blank=True)
    attempt = models.PositiveSmallIntegerField(default=1, help_text="the training attempt the worker is on")
    attempts_finished = models.PositiveSmallIntegerField(default=0, help_text="training attempts answered in full")
    training_score = models.FloatField(null=True, blank=True,
                                       help_text="share right of the counted answers of the last finished attempt")
    qualified_at = models.DateTimeField(null=True, blank=True)
    screened_out_at = models.DateTimeField(null=True, blank=True)
    survey = models.JSONField(default=dict, blank=True, help_text="{question name: answer}")
    survey_at = models.DateTimeField(null=True, blank=True)
    drafts = models.JSONField(default=dict, blank=True,
                              help_text="what the worker typed and did not send yet (training item, survey)")
    platform_assignment = models.CharField(max_length=200, blank=True,
                                           help_text="the platform's assignment (MTurk assignmentId) the phases were "
                                                     "done in, while the platform has not confirmed the worker")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["project_id", "id"]
        constraints = [
            models.UniqueConstraint(fields=["project", "worker"], name="one_participation_per_project_worker"),
            models.CheckConstraint(condition=Q(qualified_at__isnull=True) | Q(screened_out_at__isnull=True),
                                   name="participation_qualified_or_screened_out"),
        ]

    def __str__(self) -> str:
        return f"participation of {self.worker} in {self.project}"

    @property
    def outcome(self) -> str:
        if self.screened_out_at:
            return "screened_out"
        if self.qualified_at:
            return "qualified"
        return ""


class TrainingAnswer(models.Model):
    """A worker's answer to one training item in one attempt, scored against the item's gold answer."""

    participation = models.ForeignKey(Participation, on_delete=models.CASCADE, related_name="training_answers")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="training_answers")
    attempt = models.PositiveSmallIntegerField()
    answer = models.JSONField()
    score = models.FloatField()
    correct = models.BooleanField()
    answered_at = models.DateTimeField()

    class Meta:
        ordering = ["participation_id", "attempt", "answered_at", "id"]
        constraints = [models.UniqueConstraint(fields=["participation", "attempt", "item"],
                                               name="one_training_answer_per_attempt_item")]

    def __str__(self) -> str:
        return f"training answer to item {self.item_id} (attempt {self.attempt})"


class AgreementSnapshot(models.Model):
    """Agreement figures of a project computed at one moment (``annotation.recompute_agreement``), so that the
    dashboards read a stored row instead of recomputing on every page view.

    Three sizes: ``summary`` holds the few numbers the dashboards list (level, alpha, percent agreement, kappa,
    n_units, n_coders, unsupported; see :data:`SUMMARY_KEYS`), ``figures`` the project table without its per-item
    rows (topics, workers, charts: it grows with workers and topics, not with items), and the per-item rows are
    :class:`AgreementItemRow` rows of the snapshot (scope ``"project"`` only), read a page at a time."""

    SUMMARY_KEYS = ("level", "alpha", "percent_agreement", "kappa", "n_units", "n_coders", "unsupported")

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="agreement_snapshots")
    scope = models.CharField(max_length=200, default="project",
                             help_text='"project", "topic:<name>" or "crowd-vs-expert"')
    figures = models.JSONField(default=dict)
    summary = models.JSONField(default=dict, blank=True, help_text="the figures the dashboards list (SUMMARY_KEYS)")
    n_items = models.PositiveIntegerField(default=0, help_text="answered items (AgreementItemRow rows stored)")
    n_units = models.PositiveIntegerField(default=0)
    n_coders = models.PositiveIntegerField(default=0)
    computed_at = models.DateTimeField(auto_now_add=True, db_index=True)
    based_on = models.PositiveIntegerField(default=0, help_text="submitted assignments when it was computed")

    class Meta:
        ordering = ["-computed_at", "-id"]
        indexes = [models.Index(fields=["project", "scope", "computed_at"])]

    def __str__(self) -> str:
        return f"agreement of {self.project_id} ({self.scope}) at {self.computed_at:%Y-%m-%d %H:%M}"


class AgreementItemRow(models.Model):
    """One answered item of a project :class:`AgreementSnapshot`: its agreement, responses and majority as they
    were when the snapshot was computed. ``rank`` orders the rows lowest agreement first (items without a figure
    last; ties by position, then id), 0-based and without gaps, so a page is ``rank >= k`` on an index."""

    snapshot = models.ForeignKey(AgreementSnapshot, on_delete=models.CASCADE, related_name="item_rows")
    rank = models.PositiveIntegerField()
    # no constraint: the row records the item as it was; a deleted item leaves its row in older figures
    item = models.ForeignKey(Item, on_delete=models.DO_NOTHING, db_constraint=False, related_name="+")
    position = models.PositiveIntegerField(default=0)
    topic = models.TextField(blank=True)
    text = models.TextField(blank=True)
    n = models.PositiveIntegerField(default=0, help_text="responses")
    agreement = models.FloatField(null=True, blank=True)
    majority = models.TextField(blank=True)
    responses = models.JSONField(default=list, help_text='[{"coder", "data", "is_expert"}, ...]')
    adjudication = models.JSONField(null=True, blank=True)

    class Meta:
        ordering = ["snapshot_id", "rank"]
        constraints = [models.UniqueConstraint(fields=["snapshot", "rank"], name="one_item_row_per_rank")]

    def __str__(self) -> str:
        return f"item {self.item_id} in agreement snapshot {self.snapshot_id}"

    def as_dict(self) -> dict:
        """The row as the project table's ``items`` entry (:func:`annotation.agreement.table.project_table`)."""
        out = {"item_id": self.item_id, "position": self.position, "topic": self.topic, "text": self.text,
               "n": self.n, "agreement": self.agreement, "majority": self.majority}
        deferred = self.get_deferred_fields()  # a page listing items only leaves the per-item JSON unread
        out.update({f: getattr(self, f) for f in ("responses", "adjudication") if f not in deferred})
        return out


class Adjudication(models.Model):
    """An expert's final answer for an item (the latest one counts), recorded with who and when."""

    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="adjudications")
    answer = models.JSONField(help_text="the final answer, in the task type's response format")
    expert = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                               related_name="adjudications")
    created_at = models.DateTimeField(auto_now_add=True)
    note = models.TextField(blank=True)

    class Meta:
        ordering = ["item_id", "-created_at", "-id"]

    def __str__(self) -> str:
        return f"adjudication of item {self.item_id}"


class ProjectMember(models.Model):
    """A user's role in one project's team (:mod:`annotation.access` answers every question of who may do what;
    :mod:`annotation.teams` makes every change). Superusers are in every team as owners without a row."""

    class Role(models.TextChoices):
        OWNER = "owner", "Owner"      # everything an editor may, and the team itself
        EDITOR = "editor", "Editor"   # settings, status, items, phases, models, releases, late answers, workers
        VIEWER = "viewer", "Viewer"   # every page, result and download of the project; changes nothing

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="members")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="project_roles")
    role = models.CharField(max_length=10, choices=Role.choices, default=Role.VIEWER)
    added_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                 related_name="+")
    added_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["project_id", "id"]
        constraints = [models.UniqueConstraint(fields=["project", "user"], name="unique_project_member")]

    def __str__(self) -> str:
        return f"{self.user} ({self.role}) in {self.project}"


class AuditEntry(models.Model):
    """One staff action on a project, as :func:`annotation.teams.record` wrote it: who, what, when, and the
    values it changed. Shown on the project's studio page; never edited."""

    project = models.ForeignKey(Project, null=True, blank=True, on_delete=models.CASCADE, related_name="audit")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                             related_name="+")
    action = models.CharField(max_length=60, help_text="e.g. settings, status, member.add, release.publish")
    detail = models.JSONField(default=dict, blank=True, help_text="what changed: {field: [before, after]} etc.")
    at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-at", "-id"]

    def __str__(self) -> str:
        return f"{self.action} by {self.user or 'system'} at {self.at:%Y-%m-%d %H:%M}"


class Admission(models.Model):
    """A worker let into a project by one of its doors (its invite link, an MTurk HIT, its Prolific study link).
    A passwordless invite worker takes HITs only of projects it was admitted to (``annotation.access``)."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="admissions")
    worker = models.ForeignKey(Worker, on_delete=models.CASCADE, related_name="admissions")
    via = models.CharField(max_length=20, default="invite")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["project", "worker"], name="unique_admission")]


# Models that belong to one task type live in its package (annotation/task_types/<name>/models.py), in this app.
task_types.package_modules("models")
