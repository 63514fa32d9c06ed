"""Reads of a study's phases: a worker's step, training items and scores, claims (no writes; the phases
service, :mod:`annotation.phases`, writes them)."""

from __future__ import annotations

from django.db.models import Count, Q, QuerySet

from .. import providers
from ..models import (
    Assignment,
    Item,
    Participation,
    Project,
    StudyPhases,
    TrainingAnswer,
    Worker,
)

__all__ = [
    "CONSENT",
    "DONE",
    "INSTRUCTIONS",
    "RETRY",
    "SCREENED_OUT",
    "SURVEY",
    "TRAINING",
    "WORK",
    "WORKED_STATUSES",
    "attempt_score",
    "claim_admission",
    "claim_participations",
    "claim_survey_pending",
    "completion_return",
    "current_training_item",
    "gates_work",
    "hits_worked",
    "participant_records",
    "participation_of",
    "phase_config",
    "phase_counts",
    "phase_step",
    "step_of",
    "training_items",
    "training_window",
]


# --- study phases (written by annotation.phases) ----------------------------------------------------------------
# HITs a worker did (a completion code is due), counted or not: late and rejected answers were work too
WORKED_STATUSES = (
    Assignment.Status.SUBMITTED,
    Assignment.Status.APPROVED,
    Assignment.Status.REJECTED,
    Assignment.Status.LATE,
)

# the pages of the phases, in the order a worker meets them
CONSENT, INSTRUCTIONS, TRAINING, RETRY, WORK, SURVEY, DONE, SCREENED_OUT = (
    "consent",
    "instructions",
    "training",
    "result",
    "work",
    "survey",
    "done",
    "screened-out",
)


def hits_worked(project: Project, worker: Worker) -> int:
    return Assignment.objects.filter(project=project, worker=worker, status__in=WORKED_STATUSES).count()


def phase_config(project: Project) -> StudyPhases | None:
    """The project's phase settings (``None``: no phase was ever configured), read once per project instance: Django
    caches the reverse one-to-one ``project.phases`` on the instance, its absence too (and
    :func:`annotation.services.submittable_assignment` fills that cache from its one statement)."""
    try:
        return project.phases
    except StudyPhases.DoesNotExist:
        return None


def gates_work(cfg: StudyPhases | None) -> bool:
    """Some phase comes before the HITs (consent, instructions or training)."""
    return cfg is not None and (cfg.consent_required or cfg.instructions_required or cfg.training_enabled)


def training_items(project: Project) -> QuerySet[Item]:
    """The project's training items (with their gold answer and explanation), in the order a worker answers them."""
    return (
        Item.objects.filter(project=project, is_training=True, gold__isnull=False)
        .select_related("gold")
        .order_by("position", "id")
    )


def participation_of(project: Project, worker: Worker) -> Participation | None:
    return Participation.objects.filter(project=project, worker=worker).first()


def step_of(
    project: Project,
    cfg: StudyPhases | None,
    participation: Participation | None,
    *,
    finished: bool = False,
    hits_done: int | None = None,
    worker: Worker | None = None,
) -> str:
    """The page a worker with this participation row must see now (see :func:`phase_step`)."""
    p = participation
    if cfg is None or not cfg.any_on:
        return DONE if finished else WORK
    if p is not None and p.screened_out_at:
        return SCREENED_OUT
    if cfg.consent_required and not (p and p.consent_at):
        return CONSENT
    if cfg.instructions_required and not (p and p.instructions_opened_at):
        return INSTRUCTIONS
    if cfg.training_enabled and not (p and p.qualified_at) and training_items(project).exists():
        return RETRY if p is not None and p.attempts_finished >= p.attempt else TRAINING
    if not finished:
        return WORK
    if cfg.survey_enabled and cfg.survey_questions and not (p and p.survey_at):
        if hits_done is None:
            hits_done = hits_worked(project, worker) if worker is not None else 0
        if hits_done:
            return SURVEY
    return DONE


def phase_step(project: Project, worker: Worker, *, finished: bool = False, hits_done: int | None = None) -> str:
    """Which page the worker must see now: ``consent``, ``instructions``, ``training``, ``result`` (a failed attempt
    with another one left), ``work`` (the HITs), or -- once the worker is ``finished`` (no HIT left, or they
    stopped) -- ``survey`` (after at least one HIT) or ``done``; ``screened-out`` whenever the qualification screened
    them out. No phase configured: ``work`` / ``done``."""
    cfg = phase_config(project)
    if cfg is None or not cfg.any_on:
        return DONE if finished else WORK
    return step_of(
        project, cfg, participation_of(project, worker), finished=finished, hits_done=hits_done, worker=worker
    )


def current_training_item(project: Project, participation: Participation | None) -> tuple[Item, int, int] | None:
    """The next training item the worker has not answered in their current attempt, its number and the total."""
    items = list(training_items(project))
    done = set()
    if participation is not None:
        done = set(
            TrainingAnswer.objects.filter(participation=participation, attempt=participation.attempt).values_list(
                "item_id", flat=True
            )
        )
    for number, item in enumerate(items, start=1):
        if item.pk not in done:
            return item, number, len(items)
    return None


def training_window(cfg: StudyPhases, n_items: int) -> int:
    """How many of an attempt's last training items count for the qualification."""
    return min(cfg.window, n_items) if cfg.window else n_items


def attempt_score(project: Project, participation: Participation, attempt: int) -> dict:
    """``{"right", "counted", "score", "answered", "total"}`` of one attempt: the last N training items count (N =
    the window)."""
    cfg = phase_config(project)
    items = [item.pk for item in training_items(project)]
    answers = {a.item_id: a for a in TrainingAnswer.objects.filter(participation=participation, attempt=attempt)}
    counted = items[len(items) - training_window(cfg, len(items)) :] if cfg is not None else items
    right = sum(1 for pk in counted if pk in answers and answers[pk].correct)
    return {
        "right": right,
        "counted": len(counted),
        "score": right / len(counted) if counted else 0.0,
        "answered": sum(1 for pk in items if pk in answers),
        "total": len(items),
    }


def claim_participations(project: Project, source: str, claimed_id: str) -> QuerySet[Participation]:
    """The phase records of a platform id that is claimed and not confirmed yet (an MTurk workerId in a URL)."""
    return (
        Participation.objects.filter(
            project=project, worker__source=source, worker__claimed_external_id=claimed_id, worker__external_id=""
        )
        .select_related("worker")
        .order_by("-updated_at", "-id")
    )


def claim_admission(project: Project, source: str, claimed_id: str) -> tuple[str, Participation | None]:
    """Whether a platform id that is only claimed may get a HIT of the project: ``("admitted", row)`` when the
    phases before the HITs are done, ``("screened-out", row)``, or ``("phases", row or None)`` -- the record to go
    on with. The confirmed worker with that id decides first (as for a block); else the claim's own record."""
    cfg = phase_config(project)
    if not gates_work(cfg):
        return "admitted", None
    real = Worker.objects.filter(source=source, external_id=claimed_id).first() if claimed_id else None
    if real is not None:
        mine = participation_of(project, real)
        step = step_of(project, cfg, mine) if mine is not None else None
        if step == SCREENED_OUT:
            return SCREENED_OUT, mine
        if step == WORK:
            return "admitted", mine
    record = claim_participations(project, source, claimed_id).first()
    step = step_of(project, cfg, record)
    if step == SCREENED_OUT:
        return SCREENED_OUT, record
    if step == WORK:
        return "admitted", record
    return "phases", record


def claim_survey_pending(project: Project, source: str, claimed_id: str) -> bool:
    """The exit survey is on and no record of this (claimed or confirmed) platform id has answered it."""
    cfg = phase_config(project)
    if cfg is None or not cfg.survey_enabled or not cfg.survey_questions:
        return False
    if claim_participations(project, source, claimed_id).filter(survey_at__isnull=False).exists():
        return False
    return not Participation.objects.filter(
        project=project, worker__source=source, worker__external_id=claimed_id, survey_at__isnull=False
    ).exists()


def phase_counts(project: Project) -> dict:
    """How many workers passed each phase (the studio's project page): ``participants`` (a record exists),
    ``consented``, ``instructions`` (opened), ``trained`` (finished at least one training attempt), ``retrying``
    (failed an attempt, may try again), ``qualified``, ``screened_out``, ``surveyed``, and ``unconfirmed``: records of
    platform ids nobody has confirmed yet (MTurk claims), counted in the others too."""
    has = lambda field: Count("pk", filter=Q(**{f"{field}__isnull": False}))  # noqa: E731
    figures = Participation.objects.filter(project=project).aggregate(
        participants=Count("pk"),
        consented=has("consent_at"),
        instructions=has("instructions_opened_at"),
        trained=Count("pk", filter=Q(attempts_finished__gte=1)),
        qualified=has("qualified_at"),
        screened_out=has("screened_out_at"),
        surveyed=has("survey_at"),
        retrying=Count(
            "pk", filter=Q(attempts_finished__gte=1, qualified_at__isnull=True, screened_out_at__isnull=True)
        ),
        unconfirmed=Count("pk", filter=Q(worker__claimed_external_id__gt="")),
    )
    return figures


def participant_records(project: Project) -> list[dict]:
    """One record per participant of the project's phases, for a release: Argora's worker id (never a platform id or
    a user name), consent time and version, instructions, every training answer with its attempt, the score of each
    finished attempt, the qualification outcome and the survey answers. Records of platform ids not confirmed yet
    are left out, like their answers (:func:`unverified_q`), and so are records that hold nothing sent yet (a draft
    only)."""
    rows = (
        Participation.objects.filter(project=project).exclude(worker__claimed_external_id__gt="").order_by("worker_id")
    )
    answers: dict[int, list[TrainingAnswer]] = {}
    for a in TrainingAnswer.objects.filter(participation__in=rows).order_by("attempt", "answered_at", "id"):
        answers.setdefault(a.participation_id, []).append(a)
    iso = lambda value: value.isoformat() if value else None  # noqa: E731
    out = []
    for p in rows:
        mine = answers.get(p.pk, [])
        if not (mine or p.consent_at or p.instructions_opened_at or p.survey_at or p.outcome):
            continue  # a record of drafts only: nothing was given yet
        attempts = [{"attempt": n, **attempt_score(project, p, n)} for n in range(1, p.attempts_finished + 1)]
        out.append(
            {
                "worker": p.worker_id,
                "consent_at": iso(p.consent_at),
                "consent_version": p.consent_version or None,
                "instructions_opened_at": iso(p.instructions_opened_at),
                "training": {
                    "attempts": attempts,
                    "score": p.training_score,
                    "answers": [
                        {
                            "item_id": a.item_id,
                            "attempt": a.attempt,
                            "answer": a.answer,
                            "correct": a.correct,
                            "score": a.score,
                            "answered_at": iso(a.answered_at),
                        }
                        for a in mine
                    ],
                },
                "outcome": p.outcome or None,
                "qualified_at": iso(p.qualified_at),
                "screened_out_at": iso(p.screened_out_at),
                "survey": p.survey if p.survey_at else None,
                "survey_at": iso(p.survey_at),
            }
        )
    return out


def completion_return(project: Project, worker: Worker, outcome: str) -> dict | None:
    """``{"url", "code"}``: where the worker's recruitment platform wants them back at the end (``outcome``
    ``"completed"`` or ``"screened_out"``) and the code that platform expects (:data:`providers.completion_return`,
    filled by the Prolific app); ``None`` when the worker stays here with Argora's own code."""
    back = providers.completion_return.get(project, worker, outcome)
    return back if isinstance(back, dict) and back.get("url") and back.get("code") else None
