"""Reads of the order in which items enter work (``Project.engine["item_order"]``; no writes:
:mod:`annotation.services.ordering` writes it)."""

from __future__ import annotations

import json
from typing import Any, cast

from django.db.models import Q

from argora.errors import FieldError

from ..models import (
    HIT,
    HITItem,
    Project,
    Response,
    Worker,
)
from .responses import counted_responses

__all__ = [
    "DEFAULT_MIN_AGREEMENT",
    "ITEM_ORDERS",
    "clean_item_order",
    "item_agreement",
    "item_order",
    "model_human_disagreement",
    "model_workers_q",
    "open_hits",
]


# --- the order in which items enter work (Project.engine["item_order"]; services.reorder_hits) ----------------
ITEM_ORDERS = ("random", "uncertainty", "disagreement", "model-human")
DEFAULT_MIN_AGREEMENT = 0.7


def clean_item_order(value: Any, *, assignments_per_item: int) -> dict | None:
    """The one check of ``Project.engine["item_order"]``: ``{"mode": one of ITEM_ORDERS, "r_min": int, "r_max":
    int, "min_agreement": float}`` (``r_*`` and ``min_agreement`` only for ``disagreement``). ``r_max`` defaults to
    and may not exceed the project's R (``assignments_per_item``: the cap every allocation path checks); ``r_min``
    defaults to ``r_max``. A bare string is the mode. ``None``/missing is ``random``. Raises
    :class:`~argora.errors.FieldError` named ``engine.item_order[.key]``."""
    if value is None:
        return None
    if isinstance(value, str):
        value = {"mode": value}
    if not isinstance(value, dict):
        raise FieldError("engine.item_order", f'give {{"mode": one of {", ".join(ITEM_ORDERS)}}}')
    unknown = set(value) - {"mode", "r_min", "r_max", "min_agreement"}
    if unknown:
        raise FieldError(f"engine.item_order.{sorted(unknown)[0]}", "unknown option")
    mode = value.get("mode", "random")
    if mode not in ITEM_ORDERS:
        raise FieldError("engine.item_order.mode", f"must be one of {', '.join(ITEM_ORDERS)}, got {mode!r}")
    out: dict[str, Any] = {"mode": mode}
    if mode != "disagreement":
        extra = {"r_min", "r_max", "min_agreement"} & set(value)
        if extra:
            raise FieldError(f"engine.item_order.{sorted(extra)[0]}", "only the disagreement order takes it")
        return out
    r = int(assignments_per_item)
    for key in ("r_max", "r_min"):
        v = value.get(key)
        if v is None:
            continue
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise FieldError(f"engine.item_order.{key}", f"must be a whole number of at least 1, got {v!r}")
    r_max = value.get("r_max")
    r_max = r if r_max is None else r_max
    if r_max > r:
        raise FieldError("engine.item_order.r_max", f"may not exceed the responses per item (R = {r})")
    r_min = value.get("r_min")
    r_min = r_max if r_min is None else r_min
    if r_min > r_max:
        raise FieldError("engine.item_order.r_min", f"must not exceed r_max ({r_max})")
    agree = value.get("min_agreement", DEFAULT_MIN_AGREEMENT)
    if isinstance(agree, bool) or not isinstance(agree, (int, float)) or not 0 < agree <= 1:
        raise FieldError("engine.item_order.min_agreement", f"must be above 0 and at most 1, got {agree!r}")
    out.update(r_min=r_min, r_max=r_max, min_agreement=float(agree))
    return out


def item_order(project: Project) -> dict:
    """The project's item order, normalised (``{"mode": "random"}`` when unset or no longer valid, e.g. R was
    lowered below a stored ``r_max``). ``adaptive`` is true for ``disagreement`` with ``r_min < r_max``; ``cap`` is
    the most slots a HIT may hold (``r_max`` there, else R)."""
    try:
        order = clean_item_order(
            (project.engine or {}).get("item_order"), assignments_per_item=project.assignments_per_item
        ) or {"mode": "random"}
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
    for item_id, data in (
        counted_responses(project, include_models=False)
        .filter(item_id__in=list(model_answers))
        .values_list("item_id", "data")
        .iterator()
    ):
        humans.setdefault(item_id, []).append(_answer_key(data))
    out = {}
    for item_id, keys in humans.items():
        mine = model_answers[item_id]
        out[item_id] = sum(sum(k != m for k in keys) / len(keys) for m in mine) / len(mine)
    return out


def open_hits(project: Project, cap: int) -> list[dict]:
    """HITs that may still take an assignment (``taken < cap``): ``{"id", "position", "taken", "items": [ids]}``,
    in allocation order."""
    # values() rows are plain dicts already; the cast only tells mypy they may take the "items" key added below
    rows = cast(
        list[dict],
        list(HIT.objects.filter(project=project, taken__lt=cap).order_by("position").values("id", "position", "taken")),
    )
    items: dict[int, list[int]] = {}
    for hit_id, item_id in (
        HITItem.objects.filter(hit_id__in=[r["id"] for r in rows])
        .order_by("hit_id", "position")
        .values_list("hit_id", "item_id")
    ):
        items.setdefault(hit_id, []).append(item_id)
    for r in rows:
        r["items"] = items.get(r["id"], [])
    return rows
