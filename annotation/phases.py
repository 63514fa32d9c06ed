"""Study phases around the HITs of a project, for every recruitment channel (invite link, Prolific, MTurk's
ExternalQuestion): consent, instructions, training with a qualification, an exit survey. This module is the one
place that changes them; the pages (:mod:`annotation.phase_views`, MTurk's frame in :mod:`mturk.views`) call it, and
:func:`next_step` says which page a worker must see.

A worker goes through, in this order, the phases the researcher turned on (:class:`~annotation.models.StudyPhases`):

1. **consent**: the consent text (Markdown, sanitised like the guidelines) and a tick that is required; the time and
   a hash of the text agreed to are recorded (:func:`record_consent`);
2. **instructions**: the project's guidelines, opened and confirmed (:func:`record_instructions_opened`);
3. **training**: the project's training items (gold items marked as training, never in a HIT), one at a time; after
   each answer the worker sees whether it was right, the expected answer and the explanation
   (:func:`answer_training_item`). When an attempt is answered in full, the **qualification** decides on the last N
   answers (the window; 0 = all): at least ``pass_threshold`` right admits the worker; below it, another attempt
   while attempts are left (:func:`start_retry`), else the worker is screened out -- politely, with a completion
   code of its own kind (``screened_out``) and never a HIT;
4. the HITs (``reserve_next_assignment`` refuses a worker who has not passed: ``services.PhasesPending``);
5. **exit survey** after the worker's last HIT or when they stop (:func:`record_survey`), then the done page.

Every answer is kept across reloads: a training answer or the survey's answers typed and not sent are saved as drafts
(:func:`save_training_draft`, :func:`save_survey_draft`). Double posts change nothing twice: the participation row is
locked (``select_for_update``) around each change, and a training answer is unique per attempt and item.

A platform id that is only claimed (an MTurk workerId in a URL) does the phases on a record of its own, owned by a
provisional worker (:func:`claim_record`); when the platform confirms the id (``services.confirm_assignment``) the
record moves to the confirmed worker (:func:`annotation.services.merge_claim`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from argora.errors import FieldError

from . import selectors, services
from .models import (
    GoldItem,
    Item,
    Participation,
    Project,
    StudyPhases,
    TrainingAnswer,
    Worker,
    WorkerProjectCode,
    clean_survey_questions,
)
from .phase_rules import PhaseNotNow, PhaseRefused, clean_survey_answers  # noqa: F401 (callers ask phases)
from .selectors import CONSENT, DONE, INSTRUCTIONS, RETRY, SCREENED_OUT, SURVEY, TRAINING, WORK  # noqa: F401
from .task_types import ResponseInvalid

CONFIG_FIELDS = (
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
MAX_ATTEMPTS = 20
MAX_TEXT = 50_000
DRAFT_MAX_BYTES = 64 * 1024
DEFAULT_SCREENED_OUT = (
    "Thank you for taking the time to do the training. Your answers did not reach the level this "
    "study needs, so we cannot offer you its tasks -- the items are hard, and this says nothing "
    "about you. Please finish with the code below: it tells the research team that you took part "
    "in the training."
)


def next_step(project: Project, worker: Worker, *, finished: bool = False, hits_done: int | None = None) -> str:
    """The page the worker must see now (:func:`annotation.selectors.phase_step`): ``consent``, ``instructions``,
    ``training``, ``result`` (retry), ``work``, and once ``finished`` ``survey`` or ``done``; ``screened-out``."""
    return selectors.phase_step(project, worker, finished=finished, hits_done=hits_done)


def _locked(project: Project, worker: Worker) -> Participation:
    """The worker's participation row, created on first use and locked for the rest of the caller's transaction."""
    if not Participation.objects.filter(project=project, worker=worker).exists():
        try:
            with transaction.atomic():
                Participation.objects.create(project=project, worker=worker)
        except IntegrityError:  # created by a concurrent request
            pass
    return Participation.objects.select_for_update().get(project=project, worker=worker)


def _config(project: Project) -> StudyPhases:
    cfg = selectors.phase_config(project)
    if cfg is None:
        raise PhaseNotNow("this study has no phases", selectors.WORK)
    return cfg


def _refuse_unless(project: Project, worker: Worker, step: str, p: Participation | None = None, **kwargs) -> str:
    """Raise :class:`PhaseNotNow` unless the worker is at ``step``."""
    cfg = _config(project)
    now_at = selectors.step_of(
        project, cfg, p if p is not None else selectors.participation_of(project, worker), worker=worker, **kwargs
    )
    if now_at != step:
        raise PhaseNotNow(f"this is not the study's current step for you (you are at: {now_at})", now_at)
    return now_at


# --- the researcher's set-up ---------------------------------------------------------------------------------------
def _bool(values: dict, key: str, current: bool) -> bool:
    value = values.get(key, current)
    if not isinstance(value, bool):
        raise PhaseRefused(key, "true or false")
    return value


def _int(values: dict, key: str, current: int, low: int, high: int) -> int:
    value = values.get(key, current)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise PhaseRefused(key, f"a whole number from {low} to {high}")
    return value


def _text(values: dict, key: str, current: str) -> str:
    value = values.get(key, current)
    if value is None:
        value = ""
    if not isinstance(value, str) or len(value) > MAX_TEXT:
        raise PhaseRefused(key, f"a text of at most {MAX_TEXT:,} characters")
    return value


def configure(
    project: Project,
    values: dict[str, Any],
    *,
    training_items: Iterable[int] | None = None,
    explanations: dict[int, str] | None = None,
) -> StudyPhases:
    """Set the project's phases (any of :data:`CONFIG_FIELDS`; the others keep their value) and, when given, its
    training items (``training_items``: exactly these gold items of the project; the others go back to the gold pool
    of the HITs) and the explanations of gold items (``{item id: text}``). Everything is checked before anything is
    written, in one transaction; raises :class:`PhaseRefused` naming the field (``consent_text``,
    ``survey_questions[2].scale``, ``training_items``, ``explanation.<id>``...). Workers who started already meet the
    phases turned on from their next page on; those who passed a phase keep that."""
    with transaction.atomic():
        Project.objects.select_for_update().filter(pk=project.pk).values_list("pk").first()
        cfg, wanted, golds, explanations = _checked(project, values, training_items, explanations)
        cfg.save()
        if training_items is not None:
            Item.objects.filter(project=project, is_training=True).exclude(pk__in=wanted).update(is_training=False)
            Item.objects.filter(project=project, pk__in=wanted, is_training=False).update(is_training=True)
        for pk, text in explanations.items():
            if golds[pk].explanation != text.strip():
                GoldItem.objects.filter(pk=golds[pk].pk).update(explanation=text.strip())
    project.phases = cfg  # what selectors.phase_config reads from now on
    return cfg


def check(project: Project, values: dict[str, Any], *, training_items: Iterable[int] | None = None) -> StudyPhases:
    """What :func:`configure` would store, checked the same way; writes nothing (the admin's form)."""
    return _checked(project, values, training_items, None)[0]


def _checked(project: Project, values: dict[str, Any], training_items, explanations):
    """The phase row as ``values`` would make it (unsaved), the training item ids, the gold items and the
    explanations, all checked (:class:`PhaseRefused`)."""
    unknown = set(values) - set(CONFIG_FIELDS)
    if unknown:
        raise PhaseRefused(sorted(unknown)[0], f"not a phase setting (known: {', '.join(CONFIG_FIELDS)})")
    explanations = {int(k): v for k, v in (explanations or {}).items()}
    cfg = StudyPhases.objects.filter(project_id=project.pk).first() or StudyPhases(project=project)
    cfg.consent_required = _bool(values, "consent_required", cfg.consent_required)
    cfg.consent_text = _text(values, "consent_text", cfg.consent_text)
    cfg.instructions_required = _bool(values, "instructions_required", cfg.instructions_required)
    cfg.training_enabled = _bool(values, "training_enabled", cfg.training_enabled)
    threshold = values.get("pass_threshold", cfg.pass_threshold)
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0 <= threshold <= 1:
        raise PhaseRefused("pass_threshold", "a share from 0 to 1 (0.8 = 80% right)")
    cfg.pass_threshold = float(threshold)
    cfg.window = _int(values, "window", cfg.window, 0, 1000)
    cfg.max_attempts = _int(values, "max_attempts", cfg.max_attempts, 1, MAX_ATTEMPTS)
    cfg.screened_out_message = _text(values, "screened_out_message", cfg.screened_out_message)
    cfg.survey_enabled = _bool(values, "survey_enabled", cfg.survey_enabled)
    try:
        cfg.survey_questions = clean_survey_questions(values.get("survey_questions", cfg.survey_questions))
    except FieldError as exc:
        raise PhaseRefused(exc.field, exc.reason) from None
    if cfg.consent_required and not cfg.consent_text.strip():
        raise PhaseRefused("consent_text", "write the consent text the workers agree to (or turn consent off)")
    if cfg.survey_enabled and not cfg.survey_questions:
        raise PhaseRefused("survey_questions", "the survey is on: give at least one question (or turn it off)")
    golds = {g.item_id: g for g in GoldItem.objects.filter(item__project=project)}
    if training_items is None:
        wanted = set(Item.objects.filter(project=project, is_training=True).values_list("pk", flat=True))
    else:
        wanted = {int(pk) for pk in training_items}
        stray = sorted(wanted - set(golds))
        if stray:
            raise PhaseRefused(
                "training_items",
                f"item {stray[0]} is no gold item of this project (only gold "
                f"items, with an expected answer, can be training items)",
            )
    for pk, text in explanations.items():
        if pk not in golds:
            raise PhaseRefused(f"explanation.{pk}", "no gold item of this project")
        if not isinstance(text, str) or len(text) > 5000:
            raise PhaseRefused(f"explanation.{pk}", "a text of at most 5000 characters")
    if cfg.training_enabled and not wanted:
        raise PhaseRefused(
            "training_enabled" if training_items is None else "training_items",
            "training is on but the project has no training items: mark gold items as training "
            "items (or turn training off)",
        )
    if cfg.training_enabled and cfg.window > len(wanted):
        raise PhaseRefused(
            "window", f"the project has {len(wanted)} training item(s): count at most that many (0 = all)"
        )
    return cfg, wanted, golds, explanations


def set_training_items(project: Project, item_ids: Iterable[int], *, explanations: dict[int, str] | None = None) -> int:
    """Make exactly ``item_ids`` (gold items of the project) its training items (:func:`configure`); returns how
    many it has now."""
    configure(project, {}, training_items=item_ids, explanations=explanations)
    return len(set(item_ids))


# --- consent and instructions --------------------------------------------------------------------------------------
def consent_version(text: str) -> str:
    return hashlib.sha256((text or "").encode("utf-8")).hexdigest()[:16]


def record_consent(project: Project, worker: Worker, *, agreed: bool, now=None) -> Participation:
    """The worker ticked their consent (``agreed``; else :class:`PhaseRefused` on ``consent``): the time and the
    version of the text are recorded once (a second post changes nothing)."""
    now = now or timezone.now()
    cfg = _config(project)
    if not cfg.consent_required:
        raise PhaseNotNow("this study asks for no consent", next_step(project, worker))
    if agreed is not True:
        raise PhaseRefused("consent", "tick the box to agree before you continue (or leave the study)")
    with transaction.atomic():
        p = _locked(project, worker)
        if p.screened_out_at:
            raise PhaseNotNow("your part in this study has ended", SCREENED_OUT)
        if p.consent_at is None:
            p.consent_at, p.consent_version = now, consent_version(cfg.consent_text)
            p.save(update_fields=["consent_at", "consent_version", "updated_at"])
    return p


def record_instructions_opened(project: Project, worker: Worker, *, now=None) -> Participation:
    """The worker opened the instructions and said they read them (recorded once)."""
    now = now or timezone.now()
    cfg = _config(project)
    if not cfg.instructions_required:
        raise PhaseNotNow("this study asks for no instructions step", next_step(project, worker))
    with transaction.atomic():
        p = _locked(project, worker)
        if cfg.consent_required and p.consent_at is None:
            raise PhaseNotNow("please give your consent first", CONSENT)
        if p.instructions_opened_at is None:
            p.instructions_opened_at = now
            p.save(update_fields=["instructions_opened_at", "updated_at"])
    return p


# --- training and qualification -------------------------------------------------------------------------------------
@dataclass
class TrainingFeedback:
    """What the worker sees after answering a training item."""

    item: Item
    number: int
    total: int
    attempt: int
    answer: dict
    answer_text: str
    correct: bool
    score: float
    expected: Any
    expected_text: str
    explanation: str
    attempt_finished: bool
    outcome: str  # after the attempt: "qualified", "retry", "screened-out" or "" (attempt goes on)


def feedback_for(project: Project, participation: Participation, answer: TrainingAnswer) -> TrainingFeedback:
    """The feedback of a stored training answer (the page after the answer, and again on a reload)."""
    tt = project.get_task_type()
    items = list(selectors.training_items(project))
    numbers = {item.pk: n for n, item in enumerate(items, start=1)}
    item = next((i for i in items if i.pk == answer.item_id), None) or Item.objects.select_related("gold").get(
        pk=answer.item_id
    )
    gold = item.gold
    finished = participation.attempts_finished >= answer.attempt
    outcome = ""
    if finished and answer.attempt == participation.attempts_finished:
        outcome = (
            "qualified" if participation.qualified_at else SCREENED_OUT if participation.screened_out_at else "retry"
        )
    return TrainingFeedback(
        item=item,
        number=numbers.get(item.pk, 0),
        total=len(items),
        attempt=answer.attempt,
        answer=answer.answer,
        answer_text=tt.answer_text(answer.answer),
        correct=answer.correct,
        score=answer.score,
        expected=gold.expected,
        expected_text=tt.answer_text(gold.expected),
        explanation=gold.explanation,
        attempt_finished=finished,
        outcome=outcome,
    )


def answer_training_item(project: Project, worker: Worker, item_id: Any, data: Any, *, now=None) -> TrainingFeedback:
    """Check the worker's answer to a training item with the task type (``validate_response``), score it against
    the item's gold answer (``score_gold``; right = score >= 0.5) and store it for the current attempt. The answer
    that completes an attempt brings the qualification decision (:func:`_decide`). Answering the same item of the
    same attempt again (a double post) returns the first answer's feedback and counts nothing twice.

    Raises :class:`PhaseRefused` (``item``, ``responses.<id>.<field>``) or :class:`PhaseNotNow` (the worker is not
    training: not there yet, qualified, or their attempt is over)."""
    now = now or timezone.now()
    cfg = _config(project)
    try:
        item = selectors.training_items(project).get(pk=int(item_id))
    except (TypeError, ValueError, Item.DoesNotExist):
        raise PhaseRefused("item", "not a training item of this study") from None
    tt = project.get_task_type()
    try:
        cleaned = tt.validate_response(project, item, data)
    except ResponseInvalid as exc:
        raise PhaseRefused(f"responses.{item.pk}.{exc.field}", exc.reason) from None
    with transaction.atomic():
        p = _locked(project, worker)
        done = TrainingAnswer.objects.filter(participation=p, attempt=p.attempt, item=item).first()
        if done is not None:
            return feedback_for(project, p, done)  # a double post
        _refuse_unless(project, worker, TRAINING, p)
        score = float(tt.score_gold(project, item.gold, cleaned))
        answer = TrainingAnswer.objects.create(
            participation=p,
            item=item,
            attempt=p.attempt,
            answer=cleaned,
            score=score,
            correct=score >= 0.5,
            answered_at=now,
        )
        drafts = dict(p.drafts or {})
        training = dict(drafts.get("training") or {})
        if training.pop(str(item.pk), None) is not None:
            drafts["training"] = training
            p.drafts = drafts
            p.save(update_fields=["drafts", "updated_at"])
        if selectors.current_training_item(project, p) is None:
            _decide(project, cfg, p, now)
    return feedback_for(project, p, answer)


def _decide(project: Project, cfg: StudyPhases, p: Participation, now) -> None:
    """The attempt is answered in full: qualified (at least ``pass_threshold`` of the window right), another attempt
    (attempts left) or screened out with a ``screened_out`` completion code. Runs with ``p`` locked."""
    figures = selectors.attempt_score(project, p, p.attempt)
    p.attempts_finished = p.attempt
    p.training_score = figures["score"]
    fields = ["attempts_finished", "training_score", "updated_at"]
    if figures["score"] >= cfg.pass_threshold - 1e-9:
        p.qualified_at = now
        fields.append("qualified_at")
    elif p.attempts_finished >= cfg.max_attempts:
        p.screened_out_at = now
        fields.append("screened_out_at")
        services.completion_code(project, p.worker, kind=WorkerProjectCode.Kind.SCREENED_OUT)
    p.save(update_fields=fields)


def start_retry(project: Project, worker: Worker, *, attempt: int, now=None) -> Participation:
    """Begin the next training attempt after attempt ``attempt`` failed (the page's "try again" names the attempt it
    saw, so a double post starts one attempt only). :class:`PhaseNotNow` unless a retry is due."""
    with transaction.atomic():
        p = _locked(project, worker)
        if p.attempt == attempt + 1 and p.attempts_finished == attempt:
            return p  # started already (a double post)
        _refuse_unless(project, worker, RETRY, p)
        if p.attempt != attempt:
            raise PhaseNotNow("that attempt is not the one you are on; reload the page", RETRY)
        Participation.objects.filter(pk=p.pk).update(attempt=F("attempt") + 1, updated_at=now or timezone.now())
        p.refresh_from_db()
    return p


def save_training_draft(project: Project, worker: Worker, fields: Any) -> None:
    """Keep what the worker chose on a training item and did not send (``{item id: {field: value}}``, as the HIT
    form's fields), so that a reload shows it again."""
    if not isinstance(fields, dict):
        raise PhaseRefused("fields", "expected an object keyed by item id")
    ids = {item.pk for item in selectors.training_items(project)}
    clean = {}
    for key, value in fields.items():
        if not str(key).isdigit() or int(key) not in ids:
            raise PhaseRefused(f"fields.{key}", "not a training item of this study")
        if not isinstance(value, dict) or not all(
            isinstance(v, str) or (isinstance(v, list) and all(isinstance(x, str) for x in v)) for v in value.values()
        ):
            raise PhaseRefused(f"fields.{key}", "expected {field: text or list of texts}")
        clean[str(int(key))] = value
    _save_draft(project, worker, "training", clean, merge=True)


def save_survey_draft(project: Project, worker: Worker, answers: Any) -> None:
    """Keep the survey answers typed so far (``{question name: text}``), unchecked, for a reload."""
    cfg = _config(project)
    if not isinstance(answers, dict):
        raise PhaseRefused("answers", "expected an object keyed by question name")
    names = {q["name"] for q in cfg.survey_questions}
    for key, value in answers.items():
        if key not in names:
            raise PhaseRefused(f"answers.{key}", "not a question of this survey")
        if not isinstance(value, str):
            raise PhaseRefused(f"answers.{key}", "expected text")
    _save_draft(project, worker, "survey", dict(answers), merge=False)


def _save_draft(project: Project, worker: Worker, key: str, value: dict, *, merge: bool) -> None:
    with transaction.atomic():
        p = _locked(project, worker)
        if key == "survey" and p.survey_at:
            return  # sent already: nothing to keep
        drafts = dict(p.drafts or {})
        drafts[key] = {**(drafts.get(key) or {}), **value} if merge else value
        if len(json.dumps(drafts, ensure_ascii=False)) > DRAFT_MAX_BYTES:
            raise PhaseRefused("fields", f"a draft holds at most {DRAFT_MAX_BYTES // 1024} KB")
        p.drafts = drafts
        p.save(update_fields=["drafts", "updated_at"])


def drafts_of(participation: Participation | None, key: str) -> dict:
    if participation is None:
        return {}
    value = (participation.drafts or {}).get(key)
    return value if isinstance(value, dict) else {}


# --- exit survey -----------------------------------------------------------------------------------------------------
def record_survey(
    project: Project, worker: Worker, answers: Any, *, now=None, finished_check: bool = True
) -> Participation:
    """Store the worker's exit survey (checked by :func:`clean_survey_answers`; :class:`PhaseRefused` naming the
    question otherwise). Once: a second post keeps the first answers. ``finished_check=False``: the caller has
    checked that the survey is due (a platform's page after a HIT)."""
    now = now or timezone.now()
    cfg = _config(project)
    if not cfg.survey_enabled or not cfg.survey_questions:
        raise PhaseNotNow("this study has no survey", next_step(project, worker, finished=True))
    cleaned = clean_survey_answers(cfg.survey_questions, answers)
    with transaction.atomic():
        p = _locked(project, worker)
        if p.survey_at:
            return p  # sent already (a double post)
        if finished_check:
            _refuse_unless(project, worker, SURVEY, p, finished=True)
        drafts = dict(p.drafts or {})
        drafts.pop("survey", None)
        p.survey, p.survey_at, p.drafts = cleaned, now, drafts
        p.save(update_fields=["survey", "survey_at", "drafts", "updated_at"])
    return p


# --- platform ids that are only claimed (MTurk) ---------------------------------------------------------------------
CLAIM_RECORDS_KEY = "argora:phase-claims:{}:{}"


def claim_record(
    project: Project, *, source: str, claimed_id: str, platform_assignment: str, client: str = ""
) -> Participation:
    """The phase record of a platform id that is claimed and not confirmed (an MTurk workerId in the URL of an
    accepted HIT): the claim's existing record (the latest), else a new one of a new provisional worker -- never the
    record of the confirmed worker with that id. ``platform_assignment`` (the assignmentId the worker has open now)
    is noted on it. ``client`` (the request's address) may start at most ``ARGORA_UNCONFIRMED_PER_ADDRESS`` x 2 new
    claim records of the project an hour (``services.TooManyUnconfirmed`` beyond): made-up ids cost a row each."""
    if not claimed_id or len(claimed_id) > 200 or len(platform_assignment) > 200:
        raise PhaseRefused("workerId", "a platform worker id of 1 to 200 characters")
    with transaction.atomic():
        record = selectors.claim_participations(project, source, claimed_id).select_for_update().first()
        if record is None and client:
            key = CLAIM_RECORDS_KEY.format(project.pk, hashlib.sha256(client.encode()).hexdigest()[:16])
            cache.add(key, 0, timeout=3600)
            if cache.incr(key) > 2 * int(getattr(settings, "ARGORA_UNCONFIRMED_PER_ADDRESS", 6)):
                raise services.TooManyUnconfirmed(
                    "too many new workers of this study came from your network; try again later"
                )
        if record is None:
            record = Participation.objects.create(
                project=project, worker=services.provisional_worker(source, claimed_id)
            )
        if record.platform_assignment != platform_assignment:
            record.platform_assignment = platform_assignment
            record.save(update_fields=["platform_assignment", "updated_at"])
    return record
