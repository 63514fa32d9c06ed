"""The order in which a project's items enter work (``Project.engine["item_order"]``): the open HITs get new
positions (:func:`reorder_hits`), which the allocation hands out lowest first."""

from __future__ import annotations

from django.db import transaction

from .. import providers, rawsql, selectors
from ..models import HIT, Project
from .errors import ProjectInvalid

ITEM_ORDER_MARK = 1 << 30  # HIT positions from here on: HITs marked for responses beyond r_min (adaptive R)


def item_confidence(project: Project, item_ids: list[int]) -> dict[int, float]:
    """The active model's confidence per item (:data:`providers.item_confidence`); ``{}`` when there is none."""
    got = providers.item_confidence.get(project, item_ids)
    return {int(k): float(v) for k, v in (got or {}).items() if v is not None}


def _hit_keys(project: Project, order: dict, hits: list[dict]) -> tuple[dict[int, float], set[int], str]:
    """Sort key per open HIT (lower = offered sooner), the HITs marked for more responses, and a note."""
    item_ids = [i for h in hits for i in h["items"]]
    mode = order["mode"]
    if mode == "uncertainty":
        conf = item_confidence(project, item_ids)
        if not conf:
            return {}, set(), "no model gives confidences for this task type: random order (as imported)"
        return (
            {h["id"]: min((conf.get(i, 1.0) for i in h["items"]), default=1.0) for h in hits},
            set(),
            f"least confident first ({len(conf)} items scored)",
        )
    if mode == "model-human":
        diff = selectors.model_human_disagreement(project, item_ids)
        if not diff:
            return {}, set(), "no item has both a model annotator's and a human answer yet: order unchanged"
        return (
            {h["id"]: -max((diff.get(i, 0.0) for i in h["items"]), default=0.0) for h in hits},
            set(),
            f"model-human disagreement first ({len(diff)} items)",
        )
    agreement = selectors.item_agreement(project, item_ids)
    keys, marked = {}, set()
    for h in hits:
        shares = [agreement[i] for i in h["items"] if i in agreement]
        # the most disagreeing item of the HIT decides; HITs nobody answered yet come after those with answers
        keys[h["id"]] = min((share for share, _ in shares), default=2.0)
        if (
            order["adaptive"]
            and h["taken"] >= order["r_min"]
            and any(n >= order["r_min"] and share < order["min_agreement"] for share, n in shares)
        ):
            marked.add(h["id"])
    return keys, marked, f"most disagreement first; {len(marked)} HITs marked for more than r_min responses"


@transaction.atomic
def reorder_hits(project: Project) -> dict:
    """Put the project's open HITs (``taken`` below the cap) in the order of its item order
    (``Project.engine["item_order"]``; see :func:`annotation.selectors.clean_item_order`) by giving them new
    ``position`` values -- the allocation hands out the lowest free position, so nothing else changes there.

    - ``random``: nothing (the import order, today's behaviour);
    - ``uncertainty``: least confident first under the active model (:data:`providers.item_confidence`; without one:
      unchanged, and the note says so); ``build_hits`` also groups the least confident items into the first HITs;
    - ``disagreement``: HITs whose answered items disagree most (share of the most common answer) first, then the
      HITs nobody answered; with ``r_min < r_max`` a HIT that has ``r_min`` slots taken takes more (up to ``r_max``)
      only while an item with ``r_min`` answers agrees less than ``min_agreement``: such HITs are *marked* by a
      position at or above :data:`ITEM_ORDER_MARK`, which the allocation offers before any new HIT;
    - ``model-human``: HITs where a model annotator's answer differs most from the humans' first.

    New positions are above the current highest of their band, so the unique (project, position) constraint never
    sees a collision; a HIT that an allocation is taking right now (row locked on PostgreSQL) keeps its position.
    Returns ``{"mode", "moved", "marked", "note"}``. Safe to call at any time (a debounced task after submissions,
    after a model is activated, after ``build_hits``).
    """
    Project.objects.select_for_update(no_key=True).filter(pk=project.pk).first()  # one reorder/builder at a time
    order = selectors.item_order(project)
    if order["mode"] == "random":
        return {"mode": "random", "moved": 0, "marked": 0, "note": "random order (as imported)"}
    hits = selectors.open_hits(project, order["cap"])
    keys, marked, note = _hit_keys(project, order, hits)
    if not keys:
        return {"mode": order["mode"], "moved": 0, "marked": 0, "note": note}
    ids: set[int] = {h["id"] for h in hits}
    if rawsql.skip_locked():  # FOR UPDATE: also skips HITs whose assignment row is being inserted (FOR KEY SHARE)
        ids = set(HIT.objects.select_for_update(skip_locked=True).filter(pk__in=ids).values_list("pk", flat=True))
    by_position = sorted((h for h in hits if h["id"] in ids), key=lambda h: (keys.get(h["id"], 0.0), h["position"]))
    normal = [h for h in by_position if h["id"] not in marked]
    flagged = [h for h in by_position if h["id"] in marked]
    top = (
        HIT.objects.filter(project=project, position__lt=ITEM_ORDER_MARK)
        .order_by("-position")
        .values_list("position", flat=True)
        .first()
    )
    top_marked = (
        HIT.objects.filter(project=project, position__gte=ITEM_ORDER_MARK)
        .order_by("-position")
        .values_list("position", flat=True)
        .first()
    )
    base = 0 if top is None else top + 1
    base_marked = ITEM_ORDER_MARK if top_marked is None else top_marked + 1
    if base + len(normal) >= ITEM_ORDER_MARK:
        raise ProjectInvalid("item_order", "HIT positions are exhausted; rebuild the project's HITs")
    updates = [HIT(pk=h["id"], position=base + n) for n, h in enumerate(normal)]
    updates += [HIT(pk=h["id"], position=base_marked + n) for n, h in enumerate(flagged)]
    HIT.objects.bulk_update(updates, ["position"], batch_size=500)
    return {"mode": order["mode"], "moved": len(updates), "marked": len(flagged), "note": note}
