"""Study phases: consent, instructions, training + qualification and the exit survey (the service is
:mod:`annotation.phases`), with the survey's own validation.
"""

from __future__ import annotations

import re

from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q

from argora.errors import FieldError

from .projects import Item, Project
from .work import Worker

SURVEY_KINDS = ("text", "likert", "choice", "number")
SURVEY_MAX_QUESTIONS = 40
SURVEY_TEXT_MAX = 5000
_SURVEY_NAME = re.compile(r"^[a-z][a-z0-9_]{0,49}$")
_SURVEY_KEYS = {"name", "label", "kind", "required", "help"}
_SURVEY_KIND_KEYS = {
    "text": {"max_length"},
    "likert": {"scale"},
    "choice": {"options"},
    "number": {"min", "max", "integer"},
}


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
        default=False, help_text="workers must open the instructions (the guidelines) before the training / HITs"
    )
    training_enabled = models.BooleanField(
        default=False,
        help_text="training items (gold items marked as training) with explanations, then the qualification decides",
    )
    pass_threshold = models.FloatField(
        default=0.8,
        help_text="share of the counted training answers that must be right to qualify (0-1; 0 = everyone who trains)",
    )
    window = models.PositiveSmallIntegerField(
        default=0, help_text="count only the last N training items of an attempt (0 = all of them)"
    )
    max_attempts = models.PositiveSmallIntegerField(
        default=2, help_text="tries at the training before a worker is screened out"
    )
    screened_out_message = models.TextField(
        blank=True, help_text="what a screened-out worker reads (empty: a polite default)"
    )
    survey_enabled = models.BooleanField(default=False, help_text="an exit survey after the last HIT (or on stop)")
    survey_questions = models.JSONField(
        default=list, blank=True, help_text="the survey's questions (annotation.models.clean_survey_questions)"
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "study phases"
        verbose_name_plural = "study phases"
        constraints = [
            models.CheckConstraint(
                condition=Q(pass_threshold__gte=0) & Q(pass_threshold__lte=1), name="phases_threshold_0_1"
            ),
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
    the confirmed worker (:func:`annotation.services.merge_claim`)."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="participations")
    worker = models.ForeignKey(Worker, on_delete=models.CASCADE, related_name="participations")
    consent_at = models.DateTimeField(null=True, blank=True)
    consent_version = models.CharField(
        max_length=64, blank=True, help_text="sha256 of the consent text the worker agreed to (first 16 hex)"
    )
    instructions_opened_at = models.DateTimeField(null=True, blank=True)
    attempt = models.PositiveSmallIntegerField(default=1, help_text="the training attempt the worker is on")
    attempts_finished = models.PositiveSmallIntegerField(default=0, help_text="training attempts answered in full")
    training_score = models.FloatField(
        null=True, blank=True, help_text="share right of the counted answers of the last finished attempt"
    )
    qualified_at = models.DateTimeField(null=True, blank=True)
    screened_out_at = models.DateTimeField(null=True, blank=True)
    survey = models.JSONField(default=dict, blank=True, help_text="{question name: answer}")
    survey_at = models.DateTimeField(null=True, blank=True)
    drafts = models.JSONField(
        default=dict, blank=True, help_text="what the worker typed and did not send yet (training item, survey)"
    )
    platform_assignment = models.CharField(
        max_length=200,
        blank=True,
        help_text="the platform's assignment (MTurk assignmentId) the phases were "
        "done in, while the platform has not confirmed the worker",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["project_id", "id"]
        constraints = [
            models.UniqueConstraint(fields=["project", "worker"], name="one_participation_per_project_worker"),
            models.CheckConstraint(
                condition=Q(qualified_at__isnull=True) | Q(screened_out_at__isnull=True),
                name="participation_qualified_or_screened_out",
            ),
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
        constraints = [
            models.UniqueConstraint(
                fields=["participation", "attempt", "item"], name="one_training_answer_per_attempt_item"
            )
        ]

    def __str__(self) -> str:
        return f"training answer to item {self.item_id} (attempt {self.attempt})"
