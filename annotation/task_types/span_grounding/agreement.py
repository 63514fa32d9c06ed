"""Reliability data of span_grounding projects (for :mod:`annotation.agreement.table`).

The paper reports Cohen's kappa between two experts (0.79 over 66 samples, ArgU §3.1.1). The units here are
tokens: every token of an answered item is one unit, its value the coder's label for it -- ``"O"`` outside any
span, ``"v<id>"`` grounded to variable ``id``, ``"other"`` grounded to Others. Kappa / alpha over that matrix
measure detection and grounding together. ``"unitized"`` carries the spans themselves (category = the label) for
alpha_u.
"""

from __future__ import annotations

from collections import defaultdict

from annotation.agreement.records import build_matrix, coder_key
from annotation.models import Item
from corpus.tokens import token_offsets

from .metrics import covered_tokens


def token_label(variable) -> str:
    return "other" if variable is None else f"v{variable}"


def reliability_data(project, records: list[dict]) -> dict:
    item_ids = sorted({r["item_id"] for r in records})
    payloads = dict(Item.objects.filter(pk__in=item_ids).values_list("pk", "payload"))
    cells: dict = {}
    unit_item: dict = {}
    answered: dict[int, list[str]] = defaultdict(list)
    spans_u = []
    for r in records:
        payload = payloads.get(r["item_id"]) or {}
        text = payload.get("text", "")
        tokens = payload.get("tokens") or token_offsets(text)
        spans = r["data"].get("spans") or []
        cov = covered_tokens(tokens, spans)
        if r["coder"] not in answered[r["item_id"]]:
            answered[r["item_id"]].append(r["coder"])
        for i in range(len(tokens)):
            unit = f"{r['item_id']}:{i}"
            unit_item[unit] = r["item_id"]
            cells[(r["coder"], unit)] = token_label(cov[i][1]) if i in cov else "O"
        for s in spans:
            spans_u.append(
                (
                    r["coder"],
                    r["item_id"],
                    int(s["begin"]),
                    int(s["end"]) - int(s["begin"]),
                    token_label(s.get("variable")),
                )
            )
    out = build_matrix(cells, unit_item, "nominal")
    coders = sorted({r["coder"] for r in records}, key=coder_key)
    out["answered"] = {pk: sorted(c, key=coder_key) for pk, c in answered.items()}
    out["unitized"] = {
        "items": [(pk, len((payloads.get(pk) or {}).get("text", ""))) for pk in item_ids],
        "spans": spans_u,
        "coders": coders,
        "item_coders": dict(out["answered"]),
    }
    return out
