"""Gold scoring: a worker's answers to gold items are scored once, and a worker whose gold accuracy falls below the
project's minimum is blocked (:func:`annotation.services.workers.block_worker`, inside the caller's transaction)."""

from __future__ import annotations

from django.db.models import Count, Q

from ..models import Assignment, GoldItem, GoldRecord, Response, Worker
from ..task_types import get_task_type
from .workers import block_worker


def score_stored_gold(assignment: Assignment, worker: Worker, now) -> bool:
    """Score the stored answers of an assignment's gold items (an answer counted after it was stored: a confirmed
    claim, an accepted late assignment); ``False`` when it has none."""
    project = assignment.project
    golds = {g.item_id: g for g in GoldItem.objects.filter(item__in=assignment.gold_items.all())}
    answers = {
        r.item_id: (None, r.data) for r in Response.objects.filter(assignment=assignment, item_id__in=list(golds))
    }
    golds = {item_id: g for item_id, g in golds.items() if item_id in answers}
    if golds:
        score_gold(assignment, worker, project, get_task_type(project.task_type), golds, answers, now)
    return bool(golds)


def score_gold(assignment: Assignment, worker: Worker, project, tt, golds: dict, cleaned: dict, now) -> None:
    """Record a score per gold answer the worker had not been scored on (``cleaned``: ``{item id: (item, answer)}``)
    and block the worker (first block kept) once their accuracy on at least ``gold_min_items`` gold items is below
    ``gold_min_accuracy``. Runs inside the caller's transaction (the submission's, a confirmation's)."""
    seen = set(GoldRecord.objects.filter(worker=worker, item_id__in=list(golds)).values_list("item_id", flat=True))
    records = []
    for item_id, gold in golds.items():
        if item_id in seen:
            continue
        score = float(tt.score_gold(project, gold, cleaned[item_id][1]))
        records.append(
            GoldRecord(worker=worker, item_id=item_id, assignment=assignment, score=score, correct=score >= 0.5)
        )
    GoldRecord.objects.bulk_create(records)
    if project.gold_min_items <= 0:
        return
    stats = GoldRecord.objects.filter(worker=worker, item__project=project).aggregate(
        n=Count("pk"), right=Count("pk", filter=Q(correct=True))
    )
    if stats["n"] >= project.gold_min_items:
        accuracy = stats["right"] / stats["n"]
        if accuracy < project.gold_min_accuracy:
            block_worker(
                worker,
                f"gold accuracy {accuracy:.0%} on {stats['n']} gold items in project "
                f"{project.slug!r} is below {project.gold_min_accuracy:.0%}",
                now=now,
                keep_first=True,
            )
