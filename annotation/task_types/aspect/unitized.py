"""The aspect task type's reliability data for the agreement engine (:func:`reliability_data`): per-annotator
spans in the shape Krippendorff's alpha_u takes, and a binary coders x units matrix for the other coefficients.

``reliability_data(...)["unitized"]``::

    {"items": [(item_id, length), ...],                      # each answered sentence, its length in characters
     "spans": [(coder, item_id, begin, length, category)],   # one per selected aspect, category "aspect"
     "coders": [coder, ...], "item_coders": {item_id: [coder, ...]}}

``coder`` is ``"worker:<Worker id>"`` (or the reference coder). A coder who answered an item but selected nothing
marks the whole item as gap (no span): ``item_coders`` lists, per item, who answered it, so gaps can be told from
items a coder never saw.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from annotation.agreement.records import build_matrix, coder_key
from annotation.models import Item

CATEGORY = "aspect"


def reliability_data(project, records: list[dict]) -> dict:
    """Spans: alpha_u over the per-annotator spans (category :data:`CATEGORY`; taken from ``records`` so that
    reference answers count too), and a binary nominal matrix for the other coefficients: one unit per (item, span chosen by anyone), 1 when the coder chose the span, 0 when the coder
    answered the item without it. A coder's later answer to the same item wins."""
    answered: dict[int, set[str]] = defaultdict(set)
    chosen: dict[int, set[tuple[int, int]]] = defaultdict(set)
    by_coder: dict[tuple[str, int], set[tuple[int, int]]] = {}
    for r in records:
        spans = {
            (int(a["begin"]), int(a["length"]))
            for a in (r["data"].get("aspects") or [])
            if isinstance(a, dict) and "begin" in a and "length" in a
        }
        answered[r["item_id"]].add(r["coder"])
        by_coder[(r["coder"], r["item_id"])] = spans
    for (_coder, item_id), spans in by_coder.items():
        chosen[item_id] |= spans
    cells: dict[tuple[str, Any], Any] = {}
    unit_item: dict[Any, int] = {}
    for item_id, spans in chosen.items():
        for span in spans:
            unit = f"{item_id}:{span[0]}:{span[1]}"
            unit_item[unit] = item_id
            for coder in answered[item_id]:
                cells[(coder, unit)] = "1" if span in by_coder[(coder, item_id)] else "0"
    out = build_matrix(cells, unit_item, "nominal")
    out["answered"] = {item_id: sorted(c, key=coder_key) for item_id, c in answered.items()}
    lengths = {
        pk: len(str((payload or {}).get("text", "")))
        for pk, payload in Item.objects.filter(pk__in=list(answered)).values_list("pk", "payload")
    }
    spans_u = [
        (coder, item_id, b, ln, CATEGORY)
        for (coder, item_id), spans in sorted(by_coder.items(), key=lambda kv: (kv[0][1], coder_key(kv[0][0])))
        for b, ln in sorted(spans)
        if item_id in lengths
    ]
    out["unitized"] = {
        "items": [(pk, lengths[pk]) for pk in sorted(lengths)],
        "spans": spans_u,
        "coders": sorted({r["coder"] for r in records}, key=coder_key),
        "item_coders": {pk: out["answered"].get(pk, []) for pk in sorted(lengths)},
    }
    return out
