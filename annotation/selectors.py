"""Read side of the annotation engine (no writes)."""
from __future__ import annotations

import json
from typing import Any, Callable

from django.db.models import Count, Min, Q, QuerySet
from django.utils import timezone

from argora.errors import FieldError
from argora.roles import RESEARCHER_GROUP

from . import providers
from .auth import cached_worker
from .models import (
    HIT,
    Assignment,
    GoldRecord,
    HITItem,
    Item,
    Participation,
    Project,
    Response,
    StudyPhases,
    TrainingAnswer,
    Worker,
)

EXPERT_GROUP = RESEARCHER_GROUP  # experts = Researchers (the group argora.roles defines), staff and superusers


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


def model_q(prefix: str = "", *, included_only: bool = True) -> Q:
    """Assignments holding a model annotator's answers (:mod:`annotation.model_annotators`): status ``model``, and
    with ``included_only`` only those of annotators the researcher included in the results. ``prefix`` as for
    :func:`unverified_q`."""
    q = Q(**{f"{prefix}status": Assignment.Status.MODEL})
    if included_only:
        q &= Q(**{f"{prefix}worker__model_annotator__include_in_results": True})
    return q


def counted_responses(project: Project, *, include_gold: bool = False, include_unverified: bool = False,
                      include_models: bool | None = None) -> QuerySet[Response]:
    """Responses that count: of submitted/approved assignments, non-gold items, MTurk-confirmed (see
    :func:`unverified_q`). Model annotators' answers are kept apart (:func:`model_q`): ``include_models=None`` (the
    default) adds those of the annotators the researcher included, ``True`` every model's, ``False`` none."""
    done = Q(assignment__status__in=Assignment.DONE)
    if include_models is not False:
        done |= model_q("assignment__", included_only=include_models is None)
    qs = Response.objects.filter(done, assignment__project=project)
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
    rows = (Worker.objects.filter(assignments__project=project).exclude(source=Worker.Source.MODEL).distinct()
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


# --- the order in which items enter work (Project.config["item_order"]; services.reorder_hits) ----------------
ITEM_ORDERS = ("random", "uncertainty", "disagreement", "model-human")
DEFAULT_MIN_AGREEMENT = 0.7


def clean_item_order(value: Any, *, assignments_per_item: int) -> dict | None:
    """The one check of ``Project.config["item_order"]``: ``{"mode": one of ITEM_ORDERS, "r_min": int, "r_max":
    int, "min_agreement": float}`` (``r_*`` and ``min_agreement`` only for ``disagreement``). ``r_max`` defaults to
    and may not exceed the project's R (``assignments_per_item``: the cap every allocation path checks); ``r_min``
    defaults to ``r_max``. A bare string is the mode. ``None``/missing is ``random``. Raises
    :class:`~argora.errors.FieldError` named ``config.item_order[.key]``."""
    if value is None:
        return None
    if isinstance(value, str):
        value = {"mode": value}
    if not isinstance(value, dict):
        raise FieldError("config.item_order", f'give {{"mode": one of {", ".join(ITEM_ORDERS)}}}')
    unknown = set(value) - {"mode", "r_min", "r_max", "min_agreement"}
    if unknown:
        raise FieldError(f"config.item_order.{sorted(unknown)[0]}", "unknown option")
    mode = value.get("mode", "random")
    if mode not in ITEM_ORDERS:
        raise FieldError("config.item_order.mode", f"must be one of {', '.join(ITEM_ORDERS)}, got {mode!r}")
    out: dict[str, Any] = {"mode": mode}
    if mode != "disagreement":
        extra = {"r_min", "r_max", "min_agreement"} & set(value)
        if extra:
            raise FieldError(f"config.item_order.{sorted(extra)[0]}", "only the disagreement order takes it")
        return out
    r = int(assignments_per_item)
    for key in ("r_max", "r_min"):
        v = value.get(key)
        if v is None:
            continue
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise FieldError(f"config.item_order.{key}", f"must be a whole number of at least 1, got {v!r}")
    r_max = value.get("r_max") if value.get("r_max") is not None else r
    if r_max > r:
        raise FieldError("config.item_order.r_max", f"may not exceed the responses per item (R = {r})")
    r_min = value.get("r_min") if value.get("r_min") is not None else r_max
    if r_min > r_max:
        raise FieldError("config.item_order.r_min", f"must not exceed r_max ({r_max})")
    agree = value.get("min_agreement", DEFAULT_MIN_AGREEMENT)
    if isinstance(agree, bool) or not isinstance(agree, (int, float)) or not 0 < agree <= 1:
        raise FieldError("config.item_order.min_agreement", f"must be above 0 and at most 1, got {agree!r}")
    out.update(r_min=r_min, r_max=r_max, min_agreement=float(agree))
    return out


def item_order(project: Project) -> dict:
    """The project's item order, normalised (``{"mode": "random"}`` when unset or no longer valid, e.g. R was
    lowered below a stored ``r_max``). ``adaptive`` is true for ``disagreement`` with ``r_min < r_max``; ``cap`` is
    the most slots a HIT may hold (``r_max`` there, else R)."""
    try:
        order = clean_item_order((project.config or {}).get("item_order"),
                                 assignments_per_item=project.assignments_per_item) or {"mode": "random"}
    except ValueError:
        order = {"mode": "random"}
    adaptive = order["mode"] == "disagreement" and order["r_min"] < order["r_max"]
    return {**order, "adaptive": adaptive, "cap": order["r_max"] if adaptive else project.assignments_per_item}


def _answer_key(data: Any) -> str:
    return json.dumps(data, sort_keys=True, default=str)


def item_agreement(project: Project, item_ids=None) -> dict[int, tuple[float, int]]:
    """Per item: ``(share of the most common answer, n)`` over the counted human responses (model annotators' left
    out); two answers agree when they are the same JSON. Items without responses are absent."""
    qs = counted_responses(project, include_models=False)
    if item_ids is not None:
        qs = qs.filter(item_id__in=list(item_ids))
    answers: dict[int, dict[str, int]] = {}
    for item_id, data in qs.values_list("item_id", "data").iterator():
        counts = answers.setdefault(item_id, {})
        key = _answer_key(data)
        counts[key] = counts.get(key, 0) + 1
    return {i: (max(c.values()) / sum(c.values()), sum(c.values())) for i, c in answers.items()}


def model_workers_q(prefix: str = "") -> Q:
    """Assignments of model annotators (workers whose source is ``model``), whatever the researcher included."""
    return Q(**{f"{prefix}worker__source": Worker.Source.MODEL})


def model_human_disagreement(project: Project, item_ids=None) -> dict[int, float]:
    """Per item that a model annotator answered and humans answered: the share of the human responses whose answer
    differs from the model's (the mean over models when several answered). 0 = the humans all gave the model's
    answer; items without both are absent."""
    models_qs = Response.objects.filter(model_workers_q("assignment__"), assignment__project=project)
    if item_ids is not None:
        models_qs = models_qs.filter(item_id__in=list(item_ids))
    model_answers: dict[int, list[str]] = {}
    for item_id, data in models_qs.values_list("item_id", "data").iterator():
        model_answers.setdefault(item_id, []).append(_answer_key(data))
    if not model_answers:
        return {}
    humans: dict[int, list[str]] = {}
    for item_id, data in (counted_responses(project, include_models=False).filter(item_id__in=list(model_answers))
                          .values_list("item_id", "data").iterator()):
        humans.setdefault(item_id, []).append(_answer_key(data))
    out = {}
    for item_id, keys in humans.items():
        mine = model_answers[item_id]
        out[item_id] = sum(sum(k != m for k in keys) / len(keys) for m in mine) / len(mine)
    return out


def open_hits(project: Project, cap: int) -> list[dict]:
    """HITs that may still take an assignment (``taken < cap``): ``{"id", "position", "taken", "items": [ids]}``,
    in allocation order."""
    rows = list(HIT.objects.filter(project=project, taken__lt=cap).order_by("position").values("id", "position", "taken"))
    items: dict[int, list[int]] = {}
    for hit_id, item_id in (HITItem.objects.filter(hit_id__in=[r["id"] for r in rows])
                            .order_by("hit_id", "position").values_list("hit_id", "item_id")):
        items.setdefault(hit_id, []).append(item_id)
    for r in rows:
        r["items"] = items.get(r["id"], [])
    return rows
