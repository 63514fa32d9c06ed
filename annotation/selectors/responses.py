"""Reads of projects, workers and their counted responses, progress and exports (no writes)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.db.models import Count, Min, Q, QuerySet
from django.utils import timezone

from argora.roles import RESEARCHER_GROUP

from ..auth import cached_worker
from ..models import (
    HIT,
    Assignment,
    GoldRecord,
    Item,
    Project,
    Response,
    Worker,
)

__all__ = [
    "EXPERT_GROUP",
    "aggregated_items",
    "counted_responses",
    "export_rows",
    "hits_held_by_others",
    "item_annotations",
    "item_responses",
    "model_q",
    "project_of_type",
    "project_progress",
    "status_note",
    "unsent_assignment",
    "unverified_q",
    "worker_of_user",
    "worker_project_counts",
    "wrong_task_type",
]


EXPERT_GROUP = RESEARCHER_GROUP  # experts = Researchers (the group argora.roles defines), staff and superusers


def wrong_task_type(project, task_types: str | tuple[str, ...]) -> str | None:
    """Why ``project`` is not a project of ``task_types`` (a name, or a tuple of names any of which will do);
    ``None`` when it is. E.g. ``'p2' is a 'x' project, not 'y'``."""
    names = (task_types,) if isinstance(task_types, str) else tuple(task_types)
    if project.task_type in names:
        return None
    return f"{project.slug!r} is a {project.task_type!r} project, not {' or '.join(map(repr, names))}"


def project_of_type(
    slug: str,
    task_types: str | tuple[str, ...],
    *,
    error: Callable[[str], Exception] = ValueError,
    create: Callable[[], Any] | None = None,
    hint: str = "",
):
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
    available = (
        HIT.objects.filter(project=project, taken__lt=project.assignments_per_item)
        .exclude(pk__in=Assignment.objects.filter(project=project, worker=worker).values("hit_id"))
        .count()
    )
    if project.max_hits_per_worker is not None:
        used = (
            Assignment.objects.filter(project=project, worker=worker).exclude(status=Assignment.Status.EXPIRED).count()
        )
        available = min(available, max(0, project.max_hits_per_worker - used))
    return {"submitted": done, "available": available, "max": project.max_hits_per_worker}


def status_note(project: Project) -> str:
    """One line for a command's output: the project's status and what it means for workers."""
    if project.status == Project.Status.ACTIVE:
        return f"status active: workers join at /invite/{project.invite_token}/"
    if project.status == Project.Status.DRAFT:
        return (
            "status draft: workers cannot start yet; activate it in the studio (/studio/) or with --activate "
            "once its HITs are built"
        )
    return f"status {project.status}: no new HITs are handed out"


def unsent_assignment(project: Project, worker: Worker, *, now=None) -> Assignment | None:
    """The worker's reservation in this project that ended (past its deadline, swept or not) with answers saved as a
    draft and not sent -- unless they hold a live reservation, which comes first. The HIT page shows it again, so
    that the answers can still be sent (late) or the HIT kept (extended)."""
    now = now or timezone.now()
    mine = Assignment.objects.filter(project=project, worker=worker)
    if mine.filter(status=Assignment.Status.RESERVED, expires_at__gt=now).exists():
        return None
    return (
        mine.filter(Q(status=Assignment.Status.EXPIRED) | Q(status=Assignment.Status.RESERVED), draft__isnull=False)
        .select_related("hit", "project")
        .order_by("-expires_at")
        .first()
    )


def hits_held_by_others(project: Project, worker: Worker, *, now=None) -> dict:
    """When no HIT is free for a worker: how many HITs they have not done are held only by other workers'
    reservations (their places come back if those workers do not submit in time) and the earliest deadline among
    them; and whether the worker has reached the project's limit of HITs per worker."""
    now = now or timezone.now()
    mine = Assignment.objects.filter(project=project, worker=worker)
    held = Assignment.objects.filter(project=project, status=Assignment.Status.RESERVED, expires_at__gt=now).exclude(
        hit_id__in=mine.values("hit_id")
    )
    figures = held.aggregate(hits=Count("hit_id", distinct=True), until=Min("expires_at"))
    quota = project.max_hits_per_worker
    used = mine.exclude(status=Assignment.Status.EXPIRED).count() if quota is not None else 0
    return {
        "hits": figures["hits"],
        "until": figures["until"],
        "quota_reached": quota is not None and used >= quota,
        "quota": quota,
    }


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


def counted_responses(
    project: Project,
    *,
    include_gold: bool = False,
    include_unverified: bool = False,
    include_models: bool | None = None,
) -> QuerySet[Response]:
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


def item_responses(
    project: Project, *, include_gold: bool = False, include_unverified: bool = False
) -> dict[int, list[dict]]:
    """Response data of submitted/approved assignments per item id (MTurk assignments that no sync has
    confirmed yet are left out unless ``include_unverified``)."""
    qs = counted_responses(project, include_gold=include_gold, include_unverified=include_unverified)
    out: dict[int, list[dict]] = {}
    for item_id, data in qs.order_by("item_id", "id").values_list("item_id", "data"):
        out.setdefault(item_id, []).append(data)
    return out


def item_annotations(
    project: Project, *, include_gold: bool = False, include_unverified: bool = False
) -> dict[int, list[dict]]:
    """Per item id, one record per counted response, ordered by worker: ``{"worker": Worker id, "assignment":
    Assignment id, "status": "submitted" | "approved", "response": data}``. Worker ids are Argora's own
    (never an MTurk WorkerId, a Prolific PID or a user name), so the records can be released."""
    qs = counted_responses(project, include_gold=include_gold, include_unverified=include_unverified)
    out: dict[int, list[dict]] = {}
    rows = qs.order_by("item_id", "assignment__worker_id", "id").values_list(
        "item_id", "assignment__worker_id", "assignment_id", "assignment__status", "data"
    )
    for item_id, worker_id, assignment_id, status, data in rows:
        out.setdefault(item_id, []).append(
            {"worker": worker_id, "assignment": assignment_id, "status": status, "response": data}
        )
    return out


def aggregated_items(project: Project) -> list[dict]:
    """``task_type.aggregate`` for every non-gold item."""
    tt = project.get_task_type()
    responses = item_responses(project)
    return [
        {"item": item.pk, **tt.aggregate(project, item, responses.get(item.pk, []))}
        for item in Item.objects.filter(project=project, is_gold=False).order_by("position")
    ]


def export_rows(project: Project) -> list[dict]:
    tt = project.get_task_type()
    responses = item_responses(project)
    return [
        tt.export_row(project, item, responses.get(item.pk, []))
        for item in Item.objects.filter(project=project, is_gold=False).order_by("position")
    ]


def project_progress(project: Project) -> dict:
    """``{"items", "needed", "done", "hits", "assignments": {status: n}, "workers": [...]}``."""
    items = Item.objects.filter(project=project, is_gold=False).count()
    gold_items = Item.objects.filter(project=project, is_gold=True, is_training=False).count()
    training_items = Item.objects.filter(project=project, is_training=True).count()
    needed = items * project.assignments_per_item
    done = Response.objects.filter(
        assignment__project=project, assignment__status__in=Assignment.DONE, item__is_gold=False
    ).count()
    by_status = dict.fromkeys(Assignment.Status.values, 0)
    for row in Assignment.objects.filter(project=project).values("status").annotate(n=Count("pk")):
        by_status[row["status"]] = row["n"]
    gold = {
        row["worker_id"]: row
        for row in GoldRecord.objects.filter(item__project=project)
        .values("worker_id")
        .annotate(n=Count("pk"), right=Count("pk", filter=Q(correct=True)))
    }
    workers = []
    rows = (
        Worker.objects.filter(assignments__project=project)
        .exclude(source=Worker.Source.MODEL)
        .distinct()
        .annotate(
            submitted=Count(
                "assignments", filter=Q(assignments__project=project, assignments__status__in=Assignment.DONE)
            ),
            reserved=Count(
                "assignments", filter=Q(assignments__project=project, assignments__status=Assignment.Status.RESERVED)
            ),
        )
        .select_related("user")
        .order_by("id")
    )
    for worker in rows:
        g = gold.get(worker.pk)
        workers.append(
            {
                "worker": worker.pk,
                "name": str(worker),
                "source": worker.source,
                "submitted": worker.submitted,
                "reserved": worker.reserved,
                "gold_items": g["n"] if g else 0,
                "gold_accuracy": (g["right"] / g["n"]) if g and g["n"] else None,
                "blocked": worker.blocked,
                "reason": worker.blocked_reason,
            }
        )
    unverified = Assignment.objects.filter(project=project, status__in=Assignment.DONE).filter(unverified_q()).count()
    return {
        "project": project.slug,
        "status": project.status,
        "items": items,
        "gold_items": gold_items,
        "training_items": training_items,
        "needed": needed,
        "done": done,
        "unverified_assignments": unverified,
        "percent": round(100.0 * done / needed, 1) if needed else 0.0,
        "hits": HIT.objects.filter(project=project).count(),
        "hits_complete": HIT.objects.filter(project=project)
        .annotate(n=Count("assignments", filter=Q(assignments__status__in=Assignment.DONE)))
        .filter(n__gte=project.assignments_per_item)
        .count(),
        "assignments": by_status,
        "workers": workers,
    }
