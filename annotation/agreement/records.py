"""Step 1 of the project table: a project's submitted responses as plain records, and the coders x units matrix
that task types build their reliability data with.

Each record: ``item_id, worker_id, coder, assignment_id, submitted_at, data, topic, is_expert`` (:func:`load_responses`).
Coders are named ``"worker:<Worker id>"`` everywhere (:func:`coder_name`, ordered by :func:`coder_key`); the project's
reference answers (gold expected answers + adjudications) are the records of one expert coder named
:data:`REFERENCE_CODER` (:func:`reference_records`).
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.db.models import Q

from annotation.models import Adjudication, Assignment, GoldItem, Item, Response
from annotation.selectors import EXPERT_GROUP, unverified_q

REFERENCE_CODER = "reference"  # gold expected answers + adjudications, as one expert coder


def coder_name(worker_id: int) -> str:
    return f"worker:{worker_id}"


def coder_key(c: str):
    """Sort key of coder names: by kind, then by worker id as a number."""
    head, _, tail = str(c).partition(":")
    return (head, int(tail)) if tail.isdigit() else (head, 0, tail)


def build_matrix(cells: dict[tuple[str, Any], Any], unit_item: dict[Any, int], level: str) -> dict:
    """Reliability data from cells ``{(coder, unit): value}`` and ``{unit: item id}``: coders in :func:`coder_key`
    order, units by item then name, the coders x units ``matrix`` (``None`` = no value) at ``level``."""
    coders = sorted({c for c, _ in cells}, key=coder_key)
    units = sorted(unit_item, key=lambda u: (unit_item[u], str(u)))
    ci = {c: i for i, c in enumerate(coders)}
    ui = {u: j for j, u in enumerate(units)}
    M: list[list[Any]] = [[None] * len(units) for _ in coders]
    for (c, u), v in cells.items():
        M[ci[c]][ui[u]] = v
    return {"level": level, "coders": coders, "units": units, "unit_item": [unit_item[u] for u in units], "matrix": M}


def load_responses(project, *, gold: bool = False) -> list[dict]:
    """Submitted/approved responses to the project's non-gold items (``gold=True``: to its gold items), oldest
    submission first.

    Each record: ``item_id, worker_id, coder, assignment_id, submitted_at, data, topic, is_expert``.
    """

    assignments = list(
        Assignment.objects.filter(project=project, status__in=Assignment.DONE)
        .order_by("submitted_at", "id")
        .values_list("id", "worker_id", "submitted_at", "worker__user_id")
    )
    order = {a[0]: k for k, a in enumerate(assignments)}
    items = {
        pk: (position, topic)
        for pk, position, topic in Item.objects.filter(project=project, is_gold=gold).values_list(
            "pk", "position", "payload__topic"
        )
    }
    rows = list(
        Response.objects.filter(assignment__project=project, assignment__status__in=Assignment.DONE, item__is_gold=gold)
        .exclude(unverified_q("assignment__"))
        .values_list("item_id", "assignment_id", "data")
    )
    rows.sort(key=lambda r: (order[r[1]], items[r[0]][0], r[0]))  # submission order, then the item's position
    # answers of staff, superusers and Researchers are experts' answers: for all of the project's users in one query
    user_ids = {a[3] for a in assignments if a[3] is not None}
    experts = (
        set(
            get_user_model()
            .objects.filter(pk__in=user_ids)
            .filter(Q(is_staff=True) | Q(is_superuser=True) | Q(groups__name=EXPERT_GROUP))
            .values_list("pk", flat=True)
        )
        if user_ids
        else set()
    )
    by_assignment = {a[0]: (a[1], a[2], a[3] in experts) for a in assignments}
    out = []
    for item_id, assignment_id, data in rows:
        worker_id, submitted_at, is_expert = by_assignment[assignment_id]
        topic = items[item_id][1]
        out.append(
            {
                "item_id": item_id,
                "worker_id": worker_id,
                "coder": coder_name(worker_id),
                "assignment_id": assignment_id,
                "submitted_at": submitted_at,
                "data": data or {},
                "topic": "" if topic is None else str(topic),
                "is_expert": is_expert,
            }
        )
    return out


def reference_records(project) -> list[dict]:
    """The project's reference answers as records of the coder :data:`REFERENCE_CODER`: every gold item's expected
    answer, then the latest adjudication of each item (which replaces a gold answer of the same item)."""
    answers: dict[int, dict] = {}
    for item_id, expected in GoldItem.objects.filter(item__project=project).values_list("item_id", "expected"):
        if isinstance(expected, dict):
            answers[item_id] = expected
    for item_id, answer in (
        Adjudication.objects.filter(item__project=project).order_by("created_at", "id").values_list("item_id", "answer")
    ):
        if isinstance(answer, dict):
            answers[item_id] = answer
    topics = {
        pk: str((payload or {}).get("topic") or "")
        for pk, payload in Item.objects.filter(pk__in=list(answers)).values_list("pk", "payload")
    }
    return [
        {
            "item_id": item_id,
            "worker_id": None,
            "coder": REFERENCE_CODER,
            "assignment_id": None,
            "submitted_at": None,
            "data": answers[item_id],
            "topic": topics.get(item_id, ""),
            "is_expert": True,
        }
        for item_id in sorted(answers)
    ]
