"""Model-in-the-loop bookkeeping: what annotators did with the suggested spans of span_grounding items.

Each stored response says it: a span with ``from_suggestion`` took that suggestion (accepted; its grounding may
have been changed), ``rejected`` (stored when not empty) lists the suggestions turned down; anything else was left
undecided (an API client that sends no decisions, or a response stored before decisions were recorded). The HIT page makes every
suggestion decided before an item counts as answered; resizing an accepted suggestion makes it the annotator's own
span and the suggestion rejected.

:func:`suggestion_rows` -- per suggestion of one item, the counts over its responses (the export's
``suggestions``); :func:`project_suggestion_stats` -- a project's totals and acceptance rate (the KB review page).
"""

from __future__ import annotations

from collections.abc import Iterable

from annotation.models import Item, Project
from annotation.selectors import item_responses

ACCEPTED, REJECTED = "accepted", "rejected"


def decision(suggestion: dict, response: dict) -> str | None:
    """``"accepted"`` / ``"rejected"`` / None (undecided) for one suggestion in one stored response."""
    b, e = int(suggestion["begin"]), int(suggestion["end"])
    for s in response.get("spans") or []:
        if s.get("from_suggestion") and (int(s["begin"]), int(s["end"])) == (b, e):
            return ACCEPTED
    for r in response.get("rejected") or []:
        if (int(r["begin"]), int(r["end"])) == (b, e):
            return REJECTED
    return None


def _same_grounding(suggestion: dict, response: dict) -> bool:
    b, e = int(suggestion["begin"]), int(suggestion["end"])
    return any(
        s.get("from_suggestion")
        and (int(s["begin"]), int(s["end"])) == (b, e)
        and s.get("variable") == suggestion.get("variable")
        for s in response.get("spans") or []
    )


def suggestion_rows(payload: dict, responses: Iterable[dict]) -> list[dict]:
    """``[{"begin", "end", "text", "variable", "source", "accepted", "accepted_same_variable", "rejected",
    "undecided"}]``, one per suggestion of the item, counted over ``responses``."""
    responses = list(responses)
    text = payload.get("text", "")
    out = []
    for g in payload.get("suggestions") or []:
        row = {
            "begin": g["begin"],
            "end": g["end"],
            "text": text[g["begin"] : g["end"]],
            "variable": g.get("variable"),
            "source": g.get("source", ""),
            ACCEPTED: 0,
            "accepted_same_variable": 0,
            REJECTED: 0,
            "undecided": 0,
        }
        for r in responses:
            d = decision(g, r)
            row[d or "undecided"] += 1
            if d == ACCEPTED and _same_grounding(g, r):
                row["accepted_same_variable"] += 1
        out.append(row)
    return out


def totals(rows: Iterable[dict]) -> dict:
    """Summed counts of :func:`suggestion_rows` rows, with ``acceptance_rate`` = accepted / (accepted + rejected)
    and ``grounding_kept`` = accepted with the suggested variable / accepted (None when there is nothing to divide)."""
    out = {"suggestions": 0, ACCEPTED: 0, "accepted_same_variable": 0, REJECTED: 0, "undecided": 0}
    for r in rows:
        out["suggestions"] += 1
        for k in (ACCEPTED, "accepted_same_variable", REJECTED, "undecided"):
            out[k] += r[k]
    decided = out[ACCEPTED] + out[REJECTED]
    out["decisions"] = decided
    out["acceptance_rate"] = out[ACCEPTED] / decided if decided else None
    out["grounding_kept"] = out["accepted_same_variable"] / out[ACCEPTED] if out[ACCEPTED] else None
    return out


def project_suggestion_stats(project) -> dict:
    """Totals over the non-gold items of a span_grounding project that offered suggestions (counted responses),
    plus ``items`` (items with suggestions) and ``by_source`` (``"model:<version>"`` / ``"silver"`` -> totals)."""
    responses = item_responses(project)
    rows: list[dict] = []
    items = 0
    for pk, payload in Item.objects.filter(project=project, is_gold=False).order_by("id").values_list("pk", "payload"):
        if not (payload or {}).get("suggestions"):
            continue
        items += 1
        rows.extend(suggestion_rows(payload, responses.get(pk, [])))
    by_source: dict[str, list[dict]] = {}
    for r in rows:
        by_source.setdefault(r["source"] or "unknown", []).append(r)
    return {
        "project": project.slug,
        "items": items,
        **totals(rows),
        "by_source": {k: totals(v) for k, v in sorted(by_source.items())},
    }


def span_projects_suggestion_stats() -> list[dict]:
    """:func:`project_suggestion_stats` of every span_grounding project whose items carry suggestions (newest
    first), each with its ``project_obj``; projects without suggestions are left out."""
    out = []
    for project in Project.objects.filter(task_type="span_grounding").order_by("-created_at", "id"):
        stats = project_suggestion_stats(project)
        if stats["items"]:
            out.append({**stats, "project_obj": project})
    return out
