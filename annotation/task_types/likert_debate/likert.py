"""Likert rating of debates (debate trees §3, Table 6): plain functions over payloads and responses.

Item payload (built by :mod:`.items`)::

    {"debate_id": "d17", "system": "human" | "<model name>", "topic": "...", "key": "debate:d17",
     "turns": [{"speaker": "Alice", "text": "..."}, {"speaker": "Bob", "text": "..."}, ...],
     "source": {"tree": 3, "path": "1.2.1.4"}}            # trees only

Response: ``{"style": 1..4, "content": 1..4, "strategy": 1..4, "overall": 1..4}`` (ints; the no-JS form posts
digits). Workers never see ``system`` (:func:`public_payload`).

Reviewers: 5-10 per debate (§3); :func:`reviewer_warning` says so when a project's R is outside that range.

Results (:func:`criteria_table`): per criterion, mean and standard deviation of the individual ratings for human
debates, for all generated debates, and per model when there are several -- the layout of Table 6. The standard
deviation is the sample one (n - 1), as for a sample of raters. Krippendorff's alpha (ordinal) per criterion over a
workers x debates matrix comes from :func:`annotation.agreement.krippendorff_alpha`.
"""

from __future__ import annotations

import math
from collections import defaultdict

from annotation.agreement import AgreementError, krippendorff_alpha

from ..base import ResponseInvalid

CRITERIA = ("style", "content", "strategy", "overall")
TITLES = {"style": "Style", "content": "Content", "strategy": "Strategy", "overall": "Overall"}
# key that moves the highlight to a criterion in the HIT
KEYS = {"style": "S", "content": "C", "strategy": "T", "overall": "O"}
QUESTIONS = {
    "style": "Is the language clear, fluent and appropriate for a debate?",
    "content": "Are the arguments relevant, sound and well supported?",
    "strategy": "Do the speakers respond to each other and advance their side?",
    "overall": "How good is this debate as a whole?",
}
SCALE = (1, 2, 3, 4)
SCALE_WORDS = {1: "poor", 2: "fair", 3: "good", 4: "very good"}
HUMAN = "human"
GENERATED = "generated"
# reviewers per debate in the debate-trees evaluation (§3): 5 to 10
REVIEWERS = (5, 10)


class Invalid(ResponseInvalid):
    """A Likert rating response that breaks the schema (``field``: ``reason``)."""


def public_payload(payload: dict) -> dict:
    payload = payload or {}
    return {
        "topic": payload.get("topic", ""),
        "turns": [{"speaker": t.get("speaker", ""), "text": t.get("text", "")} for t in payload.get("turns") or []],
    }


def reviewer_warning(project) -> str | None:
    """A warning (not an error) when a ``likert_debate`` project asks for fewer than 5 or more than 10 reviewers
    per debate (R = ``assignments_per_item``); None otherwise and for other task types. Shown by the CLI
    (``manage.py ratings debates``), the admin (on save) and the results page."""
    if getattr(project, "task_type", None) != "likert_debate":
        return None
    r = project.assignments_per_item
    low, high = REVIEWERS
    if r is None or low <= r <= high:
        return None
    return (
        f"project {project.slug!r}: R = {r} reviewer{'s' if r != 1 else ''} per debate is outside the "
        f"{low}-{high} of the debate-trees evaluation (§3); "
        f"{'means and alpha rest on few ratings' if r < low else 'more reviewers than the protocol asks for'}"
        f" (set assignments_per_item, e.g. --r {low})"
    )


def is_human(system: str) -> bool:
    return str(system).strip().lower() == HUMAN


def clean_response(data, *, partial: bool = False) -> dict:
    """``{criterion: int 1..4}`` for every criterion, or :class:`Invalid` naming the field (``partial``: criteria may
    be left out, for a gold answer that scores only some)."""
    if not isinstance(data, dict):
        raise Invalid("style", 'expected an object {"style": 1-4, "content": ..., "strategy": ..., "overall": ...}')
    extra = set(data) - set(CRITERIA)
    if extra:
        raise Invalid(sorted(map(str, extra))[0], "unknown field")
    cleaned = {}
    for criterion in CRITERIA:
        value = data.get(criterion)
        if isinstance(value, list):  # a repeated form field
            value = value[-1] if value else None
        if value is None or value == "":
            if partial:
                continue
            raise Invalid(criterion, f"rate {criterion} from 1 to 4")
        if isinstance(value, bool):
            raise Invalid(criterion, f"{value!r} is not a rating from 1 to 4")
        if isinstance(value, str) and value.strip().isdigit():
            value = int(value.strip())
        elif isinstance(value, float) and value.is_integer():
            value = int(value)
        if not isinstance(value, int) or value not in SCALE:
            raise Invalid(criterion, f"{value!r} is out of range: a rating from 1 to 4")
        cleaned[criterion] = value
    return cleaned


def mean_sd(values: list[float]) -> dict:
    """``{"n", "mean", "sd"}``: the sample standard deviation (n - 1); ``sd`` None for fewer than two values."""
    n = len(values)
    if not n:
        return {"n": 0, "mean": None, "sd": None}
    mean = sum(values) / n
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1)) if n > 1 else None
    return {"n": n, "mean": mean, "sd": sd}


def aggregate(responses: list[dict]) -> dict:
    """One debate: mean and SD per criterion over its ratings."""
    return {
        "n": len(responses),
        **{c: mean_sd([r[c] for r in responses if isinstance(r.get(c), int)]) for c in CRITERIA},
    }


def groups_of(systems: set[str]) -> list[tuple[str, str]]:
    """The columns of the table: ``(key, title)`` -- human, generated (all models), then each model when several."""
    models = sorted(s for s in systems if not is_human(s))
    cols = [(HUMAN, "Human"), (GENERATED, "Generated")]
    if len(models) > 1:
        cols += [(f"model:{m}", m) for m in models]
    return cols


def criteria_table(pairs: list[tuple[dict, dict]]) -> dict:
    """Table 6 from ``(payload, response)`` pairs: ``{"columns": [{"key", "title", "debates", "ratings"}],
    "rows": [{"criterion", "title", "cells": [{"n", "mean", "sd"} per column]}]}``."""
    values: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    debates: dict[str, set] = defaultdict(set)
    systems = set()
    for payload, data in pairs:
        system = str((payload or {}).get("system", ""))
        systems.add(system)
        keys = [HUMAN] if is_human(system) else [GENERATED, f"model:{system}"]
        for key in keys:
            debates[key].add((payload or {}).get("key") or (payload or {}).get("debate_id") or id(payload))
            for c in CRITERIA:
                if isinstance(data.get(c), int):
                    values[key][c].append(data[c])
    columns = [
        {
            "key": key,
            "title": title,
            "debates": len(debates.get(key, ())),
            "ratings": len(values[key]["overall"]) if key in values else 0,
        }
        for key, title in groups_of(systems)
    ]
    rows = [
        {
            "criterion": c,
            "title": TITLES[c],
            "cells": [mean_sd(values[col["key"]][c]) if col["key"] in values else mean_sd([]) for col in columns],
        }
        for c in CRITERIA
    ]
    return {"columns": columns, "rows": rows}


def rating_matrix(records: list[dict], criterion: str) -> tuple[list[str], list[int], list[list]]:
    """``(coders, item ids, coders x items matrix of ratings, None = missing)`` for one criterion."""
    cells = {}
    for r in records:
        value = (r.get("data") or {}).get(criterion)
        if isinstance(value, int) and not isinstance(value, bool):
            cells[(r["coder"], r["item_id"])] = value
    coders = sorted({c for c, _ in cells}, key=lambda c: (len(str(c)), str(c)))
    items = sorted({i for _, i in cells})
    return coders, items, [[cells.get((c, i)) for i in items] for c in coders]


def alpha_ordinal(records: list[dict]) -> dict:
    """Per criterion: ``{"alpha", "n_units", "n_coders", "reason"}`` (Krippendorff's alpha, ordinal level)."""
    out = {}
    for c in CRITERIA:
        coders, items, M = rating_matrix(records, c)
        pairable = sum(1 for j in range(len(items)) if sum(row[j] is not None for row in M) >= 2)
        entry = {"alpha": None, "n_units": pairable, "n_coders": len(coders), "reason": ""}
        if len(coders) < 2 or not pairable:
            entry["reason"] = "needs two ratings of at least one debate"
        else:
            try:
                a = krippendorff_alpha(M, "ordinal")
                entry["alpha"] = a if math.isfinite(a) else None
                if entry["alpha"] is None:
                    entry["reason"] = "undefined on this data"
            except AgreementError as exc:
                entry["reason"] = str(exc)
        out[c] = entry
    return out


__all__ = [
    "CRITERIA",
    "GENERATED",
    "HUMAN",
    "SCALE",
    "TITLES",
    "Invalid",
    "aggregate",
    "alpha_ordinal",
    "clean_response",
    "criteria_table",
    "groups_of",
    "is_human",
    "mean_sd",
    "public_payload",
    "rating_matrix",
]
