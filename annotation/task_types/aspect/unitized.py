"""Per-annotator aspect spans in the shape a unitized agreement coefficient (Krippendorff's alpha_u) takes.

``unitized_data(project)`` returns::

    {"items": [(item_id, length), ...],                      # each annotated sentence, its length in characters
     "spans": [(coder, item_id, begin, length, category)]}   # one per selected aspect, category "aspect"

``coder`` is ``"worker:<Worker id>"``. Only submitted / approved responses count. A coder who answered an
item but selected nothing marks the whole item as gap (no span): the item is listed, the coder has no span
on it; ``"coders"`` lists, per item, who answered it, so gaps can be told from items a coder never saw.
"""
from __future__ import annotations

CATEGORY = "aspect"


def unitized_data(project, *, include_gold: bool = False, item_ids=None) -> dict:
    from annotation.models import Assignment, Item, Response
    from annotation.selectors import unverified_q

    items_qs = Item.objects.filter(project=project)
    if not include_gold:
        items_qs = items_qs.filter(is_gold=False)
    if item_ids is not None:
        items_qs = items_qs.filter(pk__in=list(item_ids))
    lengths = {pk: len((payload or {}).get("text", "")) for pk, payload in items_qs.values_list("pk", "payload")}
    responses = (Response.objects.filter(item_id__in=list(lengths), assignment__status__in=Assignment.DONE)
                 .exclude(unverified_q("assignment__"))
                 .order_by("item_id", "assignment__worker_id", "id")
                 .values_list("item_id", "assignment__worker_id", "data"))
    spans: list[tuple[str, int, int, int, str]] = []
    coders: dict[int, list[str]] = {}
    for item_id, worker_id, data in responses:
        coder = f"worker:{worker_id}"
        coders.setdefault(item_id, []).append(coder)
        for a in sorted((data or {}).get("aspects") or [], key=lambda a: (a["begin"], a["length"])):
            spans.append((coder, item_id, int(a["begin"]), int(a["length"]), CATEGORY))
    return {"items": [(pk, lengths[pk]) for pk in sorted(coders)], "spans": spans,
            "coders": {pk: coders[pk] for pk in sorted(coders)}}
