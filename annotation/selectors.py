"""Read side of the annotation engine (no writes)."""
from __future__ import annotations

from typing import Any, Callable

from django.db.models import Count, Min, Q, QuerySet
from django.utils import timezone

from argora.roles import RESEARCHER_GROUP

from . import providers
from .auth import cached_worker
from .models import (
    HIT,
    Assignment,
    GoldRecord,
    Item,
    Participation,
    Project,
    Response,
    StudyPhases,
    TrainingAnswer,
    Worker,
)

EXPERT_GROUP = RESEARCHER_GROUP  # experts = Researchers (the group argora.roles defines), staff and superusers


def user_is_expert(user) -> bool:
    """Staff, superusers and Researchers see projects and dashboards."""
    if not getattr(user, "is_authenticated", False):
        return False
    return bool(user.is_staff or user.is_superuser or user.groups.filter(name=EXPERT_GROUP).exists())


def project_list() -> QuerySet[Project]:
    return Project.objects.order_by("-created_at", "id")


def wrong_task_type(project, task_types: str | tuple[str, ...]) -> str | None:
    """Why ``project`` is not a project of ``task_types`` (a name, or a tuple of names any of which will do);
    ``None`` when it is. E.g. ``'p2' is a 'x' project, not 'y'``."""
    names = (task_types,) if isinstance(task_types, str) else tuple(task_types)
    if project.task_type in names:
        return None
    return f"{project.slug!r} is a {project.task_type!r} project, not {' or '.join(map(repr, names))}"


def project_of_type(slug: str, task_types: str | tuple[str, ...], *,
                    error: Callable[[str], Exception] = ValueError, create: Callable[[], Any] | None = None,
                    hint: str = ""):
    """The project ``slug`` when it is of ``task_types`` (:func:`wrong_task_type`). A missing project is made by
    ``create()`` when given, else raises ``error("no project with slug 'x'" + hint)``; a project of another task
    type raises ``error("project 'x' is a ... project, not ...")``. ``error``: the caller's exception class (or a
    function returning the exception, e.g. a CLI's exit-2 ``CommandError``)."""
    project = Project.objects.filter(slug=slug).first()
    if project is None:
        if create is None:
            raise error(f"no project with slug {slug!r}{hint}")
        return create()
    reason = wrong_task_type(project, task_types)
    if reason:
        raise error(f"project {reason}")
    return project


def worker_of_user(user) -> Worker | None:
    if not getattr(user, "is_authenticated", False):
        return None

    known, worker = cached_worker(user)
    return worker if known else Worker.objects.filter(user=user).first()


def worker_project_counts(project: Project, worker: Worker) -> dict:
    """For the progress bar inside a HIT: HITs this worker submitted here, and how many they may still do."""
    done = Assignment.objects.filter(project=project, worker=worker, status__in=Assignment.DONE).count()
    available = (HIT.objects.filter(project=project, taken__lt=project.assignments_per_item)
                 .exclude(pk__in=Assignment.objects.filter(project=project, worker=worker).values("hit_id")).count())
    if project.max_hits_per_worker is not None:
        used = Assignment.objects.filter(project=project, worker=worker).exclude(
            status=Assignment.Status.EXPIRED).count()
        available = min(available, max(0, project.max_hits_per_worker - used))
    return {"submitted": done, "available": available, "max": project.max_hits_per_worker}


def status_note(project: Project) -> str:
    """One line for a command's output: the project's status and what it means for workers."""
    if project.status == Project.Status.ACTIVE:
        return f"status active: workers join at /invite/{project.invite_token}/"
    if project.status == Project.Status.DRAFT:
        return ("status draft: workers cannot start yet; activate it in the studio (/studio/) or with --activate "
                "once its HITs are built")
    return f"status {project.status}: no new HITs are handed out"


def unsent_assignment(project: Project, worker: Worker, *, now=None) -> Assignment | None:
    """The worker's reservation in this project that ended (past its deadline, swept or not) with answers saved as a
    draft and not sent -- unless they hold a live reservation, which comes first. The HIT page shows it again, so
    that the answers can still be sent (late) or the HIT kept (extended)."""
    now = now or timezone.now()
    mine = Assignment.objects.filter(project=project, worker=worker)
    if mine.filter(status=Assignment.Status.RESERVED, expires_at__gt=now).exists():
        return None
    return (mine.filter(Q(status=Assignment.Status.EXPIRED) | Q(status=Assignment.Status.RESERVED),
                        draft__isnull=False).select_related("hit", "project").order_by("-expires_at").first())


def hits_held_by_others(project: Project, worker: Worker, *, now=None) -> dict:
    """When no HIT is free for a worker: how many HITs they have not done are held only by other workers'
    reservations (their places come back if those workers do not submit in time) and the earliest deadline among
    them; and whether the worker has reached the project's limit of HITs per worker."""
    now = now or timezone.now()
    mine = Assignment.objects.filter(project=project, worker=worker)
    held = (Assignment.objects.filter(project=project, status=Assignment.Status.RESERVED, expires_at__gt=now)
            .exclude(hit_id__in=mine.values("hit_id")))
    figures = held.aggregate(hits=Count("hit_id", distinct=True), until=Min("expires_at"))
    quota = project.max_hits_per_worker
    used = mine.exclude(status=Assignment.Status.EXPIRED).count() if quota is not None else 0
    return {"hits": figures["hits"], "until": figures["until"], "quota_reached": quota is not None and used >= quota,
            "quota": quota}


def unverified_q(prefix: str = "") -> Q:
    """Assignments done by a provisional worker: one whose platform id (an MTurk workerId, a Prolific PID) was
    claimed in a URL and not yet confirmed by the platform (:func:`annotation.services.provisional_worker`). A
    made-up claim can get a HIT and submit; its answers stay out of the aggregates and exports until a sync of the
    platform confirms it (:func:`annotation.services.confirm_assignment`), and a sync rejects it once the platform
    still does not know it after the assignment duration.

    ``prefix`` is the lookup path to the assignment, e.g. ``"assignment__"`` for a Response queryset.
    """
    return Q(**{f"{prefix}worker__claimed_external_id__gt": ""})


def counted_responses(project: Project, *, include_gold: bool = False, include_unverified: bool = False
                      ) -> QuerySet[Response]:
    """Responses that count: of submitted/approved assignments, non-gold items, MTurk-confirmed (see
    :func:`unverified_q`)."""
    qs = Response.objects.filter(assignment__project=project, assignment__status__in=Assignment.DONE)
    if not include_gold:
        qs = qs.filter(item__is_gold=False)
    if not include_unverified:
        qs = qs.exclude(unverified_q("assignment__"))
    return qs


def item_responses(project: Project, *, include_gold: bool = False,
                   include_unverified: bool = False) -> dict[int, list[dict]]:
    """Response data of submitted/approved assignments per item id (MTurk assignments that no sync has
    confirmed yet are left out unless ``include_unverified``)."""
    qs = counted_responses(project, include_gold=include_gold, include_unverified=include_unverified)
    out: dict[int, list[dict]] = {}
    for item_id, data in qs.order_by("item_id", "id").values_list("item_id", "data"):
        out.setdefault(item_id, []).append(data)
    return out


def item_annotations(project: Project, *, include_gold: bool = False,
                     include_unverified: bool = False) -> dict[int, list[dict]]:
    """Per item id, one record per counted response, ordered by worker: ``{"worker": Worker id, "assignment":
    Assignment id, "status": "submitted" | "approved", "response": data}``. Worker ids are Argora's own
    (never an MTurk WorkerId, a Prolific PID or a user name), so the records can be released."""
    qs = counted_responses(project, include_gold=include_gold, include_unverified=include_unverified)
    out: dict[int, list[dict]] = {}
    rows = qs.order_by("item_id", "assignment__worker_id", "id").values_list(
        "item_id", "assignment__worker_id", "assignment_id", "assignment__status", "data")
    for item_id, worker_id, assignment_id, status, data in rows:
        out.setdefault(item_id, []).append({"worker": worker_id, "assignment": assignment_id, "status": status,
                                            "response": data})
    return out


def aggregated_items(project: Project) -> list[dict]:
    """``task_type.aggregate`` for every non-gold item."""
    tt = project.get_task_type()
    responses = item_responses(project)
    return [{"item": item.pk, **tt.aggregate(project, item, responses.get(item.pk, []))}
            for item in Item.objects.filter(project=project, is_gold=False).order_by("position")]


def export_rows(project: Project) -> list[dict]:
    tt = project.get_task_type()
    responses = item_responses(project)
    return [tt.export_row(project, item, responses.get(item.pk, []))
            for item in Item.objects.filter(project=project, is_gold=False).order_by("position")]


def project_progress(project: Project) -> dict:
    """``{"items", "needed", "done", "hits", "assignments": {status: n}, "workers": [...]}``."""
    items = Item.objects.filter(project=project, is_gold=False).count()
    gold_items = Item.objects.filter(project=project, is_gold=True, is_training=False).count()
    training_items = Item.objects.filter(project=project, is_training=True).count()
    needed = items * project.assignments_per_item
    done = Response.objects.filter(assignment__project=project, assignment__status__in=Assignment.DONE,
                                   item__is_gold=False).count()
    by_status = {status: 0 for status in Assignment.Status.values}
    for row in Assignment.objects.filter(project=project).values("status").annotate(n=Count("pk")):
        by_status[row["status"]] = row["n"]
    gold = {row["worker_id"]: row for row in GoldRecord.objects.filter(item__project=project)
            .values("worker_id").annotate(n=Count("pk"), right=Count("pk", filter=Q(correct=True)))}
    workers = []
    rows = (Worker.objects.filter(assignments__project=project).distinct()
            .annotate(submitted=Count("assignments", filter=Q(assignments__project=project,
                                                              assignments__status__in=Assignment.DONE)),
                      reserved=Count("assignments", filter=Q(assignments__project=project,
                                                             assignments__status=Assignment.Status.RESERVED)))
            .select_related("user").order_by("id"))
    for worker in rows:
        g = gold.get(worker.pk)
        workers.append({
            "worker": worker.pk, "name": str(worker), "source": worker.source,
            "submitted": worker.submitted, "reserved": worker.reserved,
            "gold_items": g["n"] if g else 0,
            "gold_accuracy": (g["right"] / g["n"]) if g and g["n"] else None,
            "blocked": worker.blocked, "reason": worker.blocked_reason,
        })
    unverified = (Assignment.objects.filter(project=project, status__in=Assignment.DONE).filter(unverified_q())
                  .count())
    return {
        "project": project.slug, "status": project.status,
        "items": items, "gold_items": gold_items, "training_items": training_items, "needed": needed, "done": done,
        "unverified_assignments": unverified,
        "percent": round(100.0 * done / needed, 1) if needed else 0.0,
        "hits": HIT.objects.filter(project=project).count(),
        "hits_complete": HIT.objects.filter(project=project).annotate(
            n=Count("assignments", filter=Q(assignments__status__in=Assignment.DONE)))
        .filter(n__gte=project.assignments_per_item).count(),
        "assignments": by_status,
        "workers": workers,
    }


# --- study phases (written by annotation.phases) ----------------------------------------------------------------
# HITs a worker did (a completion code is due), counted or not: late and rejected answers were work too
WORKED_STATUSES = (Assignment.Status.SUBMITTED, Assignment.Status.APPROVED, Assignment.Status.REJECTED,
                   Assignment.Status.LATE)

# the pages of the phases, in the order a worker meets them
CONSENT, INSTRUCTIONS, TRAINING, RETRY, WORK, SURVEY, DONE, SCREENED_OUT = (
    "consent", "instructions", "training", "result", "work", "survey", "done", "screened-out")


def hits_worked(project: Project, worker: Worker) -> int:
    return Assignment.objects.filter(project=project, worker=worker, status__in=WORKED_STATUSES).count()


def phase_config(project: Project) -> StudyPhases | None:
    """The project's phase settings (``None``: no phase was ever configured), read once per project instance."""
    if not hasattr(project, "_argora_phases"):
        project._argora_phases = StudyPhases.objects.filter(project_id=project.pk).first()
    return project._argora_phases


def gates_work(cfg: StudyPhases | None) -> bool:
    """Some phase comes before the HITs (consent, instructions or training)."""
    return cfg is not None and (cfg.consent_required or cfg.instructions_required or cfg.training_enabled)


def training_items(project: Project) -> QuerySet[Item]:
    """The project's training items (with their gold answer and explanation), in the order a worker answers them."""
    return (Item.objects.filter(project=project, is_training=True, gold__isnull=False).select_related("gold")
            .order_by("position", "id"))


def participation_of(project: Project, worker: Worker) -> Participation | None:
    return Participation.objects.filter(project=project, worker=worker).first()


def step_of(project: Project, cfg: StudyPhases | None, participation: Participation | None, *,
            finished: bool = False, hits_done: int | None = None, worker: Worker | None = None) -> str:
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
    return step_of(project, cfg, participation_of(project, worker), finished=finished, hits_done=hits_done,
                   worker=worker)


def current_training_item(project: Project, participation: Participation | None) -> tuple[Item, int, int] | None:
    """The next training item the worker has not answered in their current attempt, its number and the total."""
    items = list(training_items(project))
    done = set()
    if participation is not None:
        done = set(TrainingAnswer.objects.filter(participation=participation, attempt=participation.attempt)
                   .values_list("item_id", flat=True))
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
    counted = items[len(items) - training_window(cfg, len(items)):] if cfg is not None else items
    right = sum(1 for pk in counted if pk in answers and answers[pk].correct)
    return {"right": right, "counted": len(counted), "score": right / len(counted) if counted else 0.0,
            "answered": sum(1 for pk in items if pk in answers), "total": len(items)}


def claim_participations(project: Project, source: str, claimed_id: str) -> QuerySet[Participation]:
    """The phase records of a platform id that is claimed and not confirmed yet (an MTurk workerId in a URL)."""
    return (Participation.objects.filter(project=project, worker__source=source,
                                         worker__claimed_external_id=claimed_id, worker__external_id="")
            .select_related("worker").order_by("-updated_at", "-id"))


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
    return not Participation.objects.filter(project=project, worker__source=source, worker__external_id=claimed_id,
                                            survey_at__isnull=False).exists()


def phase_counts(project: Project) -> dict:
    """How many workers passed each phase (the studio's project page): ``participants`` (a record exists),
    ``consented``, ``instructions`` (opened), ``trained`` (finished at least one training attempt), ``retrying``
    (failed an attempt, may try again), ``qualified``, ``screened_out``, ``surveyed``, and ``unconfirmed``: records of
    platform ids nobody has confirmed yet (MTurk claims), counted in the others too."""
    has = lambda field: Count("pk", filter=Q(**{f"{field}__isnull": False}))  # noqa: E731
    figures = Participation.objects.filter(project=project).aggregate(
        participants=Count("pk"), consented=has("consent_at"), instructions=has("instructions_opened_at"),
        trained=Count("pk", filter=Q(attempts_finished__gte=1)), qualified=has("qualified_at"),
        screened_out=has("screened_out_at"), surveyed=has("survey_at"),
        retrying=Count("pk", filter=Q(attempts_finished__gte=1, qualified_at__isnull=True,
                                       screened_out_at__isnull=True)),
        unconfirmed=Count("pk", filter=Q(worker__claimed_external_id__gt="")))
    return figures


def participant_records(project: Project) -> list[dict]:
    """One record per participant of the project's phases, for a release: Argora's worker id (never a platform id or
    a user name), consent time and version, instructions, every training answer with its attempt, the score of each
    finished attempt, the qualification outcome and the survey answers. Records of platform ids not confirmed yet
    are left out, like their answers (:func:`unverified_q`), and so are records that hold nothing sent yet (a draft
    only)."""
    rows = (Participation.objects.filter(project=project).exclude(worker__claimed_external_id__gt="")
            .order_by("worker_id"))
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
        out.append({
            "worker": p.worker_id, "consent_at": iso(p.consent_at), "consent_version": p.consent_version or None,
            "instructions_opened_at": iso(p.instructions_opened_at),
            "training": {"attempts": attempts, "score": p.training_score,
                         "answers": [{"item_id": a.item_id, "attempt": a.attempt, "answer": a.answer,
                                      "correct": a.correct, "score": a.score, "answered_at": iso(a.answered_at)}
                                     for a in mine]},
            "outcome": p.outcome or None, "qualified_at": iso(p.qualified_at),
            "screened_out_at": iso(p.screened_out_at), "survey": p.survey if p.survey_at else None,
            "survey_at": iso(p.survey_at),
        })
    return out


def completion_return(project: Project, worker: Worker, outcome: str) -> dict | None:
    """``{"url", "code"}``: where the worker's recruitment platform wants them back at the end (``outcome``
    ``"completed"`` or ``"screened_out"``) and the code that platform expects (:data:`providers.completion_return`,
    filled by the Prolific app); ``None`` when the worker stays here with Argora's own code."""
    back = providers.completion_return.get(project, worker, outcome)
    return back if isinstance(back, dict) and back.get("url") and back.get("code") else None
