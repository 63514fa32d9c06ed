"""Export of span_grounding projects: one JSONL row per argument (ArgU's corpus shape), and the ``spans`` release kind.

Row (keys sorted when written)::

    {"item_id", "argument_id", "topic", "stance", "scheme" (the imported one, or null),
     "argument" (= "text"), "text",
     "variables": [{"id", "text"}],            # the variables the item offered, then those normalisation mapped to
     "offered_variables": [id, ...],           # the ids the item offered (keys 1..5 on the page)
     "spans": [[begin, end, variable_id or null], ...],   # the aggregate, normalised (end exclusive; null = Others)
     "span_details": [{"begin", "end", "text", "variable", "variable_text", "votes",
                       "annotated_variable",   # what the annotators grounded it to (null = Others)
                       "normalised": null | "direct" | "indirect" | "new" | "merged", "normalisation_score"}],
     "facts": ["variable text", ...],                 # the distinct grounded variables, in span order (generator input)
     "n_unnormalised": n,                       # spans still Others, or mapped only to a new (proposed) variable
     "schemes": [...] (aggregated; only when the project asked), "n_annotations",
     "annotations": [{"spans": [...], "rejected": [...], "schemes": [...]}],   # every submitted response, as stored
     "suggestions": [{"begin", "end", "text", "variable", "source", "accepted", "accepted_same_variable",
                      "rejected", "undecided"}]}   # what the annotators did with each model / silver suggestion

Normalisation (ArgU §3.2.4; :mod:`annotation.task_types.span_grounding.normalisation`): a span the annotators grounded to Others that
``manage.py spans normalise --project`` mapped onto the KB (:class:`annotation.task_types.span_grounding.models.SpanNormalisation`, same
offsets) is exported with the mapped variable id: ``direct`` (cosine >= 0.85), ``indirect`` (community neighbour),
``merged`` (its proposal was merged into a KB variable by an expert) or ``new`` (its proposal was accepted as a new
KB variable). Spans grounded by the annotators are never remapped.

Items without responses are exported with their suggestions as spans only with ``include_unannotated=True``
(then ``"source": "suggestions"``), else skipped.

Corpus filters of ArgU §3.2.4, off unless asked for (``filters=True`` for the paper's values, or a dict overriding
them; a key set to null switches that filter off), computed on the normalised spans:

- ``max_unnormalised`` (0.30): at most 30% of an example's spans unnormalised -- still Others after mapping, or
  mapped only to a ``new`` variable (the paper keeps those examples and adds "those facts to the KB": a fact that
  was added is still an unnormalised span of the example);
- ``variables`` ([1, 4]): 1-4 distinct fact variables per example;
- ``mentions_per_variable`` ([2, 4]): "with each variable present 2-4 times" -- every distinct variable of the
  example is grounded by 2 to 4 of its spans (the count is per example: the sentence qualifies the 1-4 variables of
  *the example*; a corpus-wide count would not be an example filter);
- ``max_words`` (150): at most 150 words of argument text.

The paper applied these filters to the automatically annotated parallel corpus (P2), not to the human-annotated P1
examples (Figure 7's example grounds each variable once and would fail ``mentions_per_variable``). The last step,
"keep examples containing at least one claim" by the Dialo-AP argument parser, needs that external parser and is
not applied.
"""

from __future__ import annotations

from collections.abc import Iterator

from annotation.models import Item, Project
from annotation.releases import check_keys, config_projects
from annotation.selectors import item_responses

from . import NAME
from .models import SpanNormalisation
from .suggestions import suggestion_rows

KIND = "spans"
UNNORMALISED_METHODS = (None, "new")


def normalisation_by_item(item_ids) -> dict[int, dict[tuple[int, int], dict]]:
    """``{item id: {(begin, end): {"variable", "variable_text", "method", "score", "text"}}}`` of the mapped spans."""
    out: dict[int, dict] = {}
    rows = SpanNormalisation.objects.filter(item_id__in=list(item_ids), variable__isnull=False).values_list(
        "item_id", "begin", "end", "text", "variable_id", "variable__text", "method", "score"
    )
    for item_id, b, e, text, variable, variable_text, method, score in rows:
        out.setdefault(item_id, {})[(b, e)] = {
            "variable": variable,
            "variable_text": variable_text,
            "method": method,
            "score": score,
            "text": text,
        }
    return out


def normalised_spans(text: str, spans: list[dict], mapping: dict | None) -> list[dict]:
    """``spans`` (the aggregate's ``{"begin", "end", "variable", ...}``) with the mapping applied to the Others spans
    (same offsets and text); adds ``annotated_variable``, ``normalised`` and ``normalisation_score``."""
    out = []
    for sp in spans:
        sp = dict(sp)
        sp["annotated_variable"] = sp["variable"]
        sp["normalised"] = sp["normalisation_score"] = None
        m = (mapping or {}).get((sp["begin"], sp["end"])) if sp["variable"] is None else None
        if m and m["text"] == text[sp["begin"] : sp["end"]]:
            sp.update(
                variable=m["variable"],
                variable_text=m["variable_text"],
                normalised=m["method"],
                normalisation_score=m["score"],
            )
        out.append(sp)
    return out


def export_row(project, item, responses: list[dict], aggregate: dict, *, mapping: dict | None = None) -> dict:
    """One export row. ``mapping``: this item's normalised spans (:func:`normalisation_by_item`); looked up when None."""
    payload = item.payload or {}
    text = payload.get("text", "")
    if mapping is None:
        mapping = normalisation_by_item([item.pk]).get(item.pk, {})
    spans = normalised_spans(text, aggregate["spans"], mapping)
    offered = [{"id": v["id"], "text": v["text"]} for v in payload.get("variables") or []]
    variables = list(offered)
    names = {v["id"]: v["text"] for v in offered}
    for sp in spans:
        if sp["variable"] is not None and sp["variable"] not in names:
            names[sp["variable"]] = sp.get("variable_text") or ""
            variables.append({"id": sp["variable"], "text": names[sp["variable"]]})
    facts: list[str] = []
    for sp in spans:
        if sp["variable"] is not None and names.get(sp["variable"]) not in facts:
            facts.append(names.get(sp["variable"]))
    row = {
        "item_id": item.pk,
        "argument_id": payload.get("argument_id"),
        "topic": payload.get("topic", ""),
        "stance": payload.get("stance", ""),
        "scheme": payload.get("scheme"),
        "text": text,
        "argument": text,
        "variables": variables,
        "offered_variables": [v["id"] for v in offered],
        "spans": [[sp["begin"], sp["end"], sp["variable"]] for sp in spans],
        "span_details": spans,
        "facts": facts,
        "n_unnormalised": sum(1 for sp in spans if _unnormalised(sp)),
        "n_annotations": len(responses),
        "source": "annotations",
        "annotations": [
            {
                "spans": r.get("spans") or [],
                **({"rejected": r["rejected"]} if "rejected" in r else {}),
                **({"schemes": r["schemes"]} if "schemes" in r else {}),
            }
            for r in responses
        ],
        "suggestions": suggestion_rows(payload, responses),
    }
    if "schemes" in aggregate:
        row["schemes"] = aggregate["schemes"]["schemes"]
        row["scheme_votes"] = aggregate["schemes"]["counts"]
    return row


DEFAULT_FILTERS = {"max_unnormalised": 0.30, "variables": [1, 4], "mentions_per_variable": [2, 4], "max_words": 150}


def _range(value, name: str):
    if value is None:
        return None
    if not (
        isinstance(value, (list, tuple))
        and len(value) == 2
        and all(isinstance(v, int) and not isinstance(v, bool) for v in value)
        and 0 <= value[0] <= value[1]
    ):
        raise ValueError(f"config.filters.{name}: [min, max] whole numbers, 0 <= min <= max (or null: off)")
    return [int(value[0]), int(value[1])]


def clean_filters(filters) -> dict | None:
    """None/False = no filtering; True = the paper's values; a dict overrides some of them (checked; null = off)."""
    if filters is None or filters is False:
        return None
    if filters is True:
        return {k: (list(v) if isinstance(v, list) else v) for k, v in DEFAULT_FILTERS.items()}
    if not isinstance(filters, dict):
        raise ValueError("config.filters: true, false or an object")
    unknown = set(filters) - set(DEFAULT_FILTERS)
    if unknown:
        raise ValueError(
            f"config.filters: unknown key(s) {', '.join(sorted(unknown))} (known: {', '.join(DEFAULT_FILTERS)})"
        )
    out = {**DEFAULT_FILTERS, **filters}
    share, words = out["max_unnormalised"], out["max_words"]
    if share is not None and (not isinstance(share, (int, float)) or isinstance(share, bool) or not 0 <= share <= 1):
        raise ValueError("config.filters.max_unnormalised: a share between 0 and 1 (or null: off)")
    out["variables"] = _range(out["variables"], "variables")
    out["mentions_per_variable"] = _range(out["mentions_per_variable"], "mentions_per_variable")
    if words is not None and (not isinstance(words, int) or isinstance(words, bool) or words < 1):
        raise ValueError("config.filters.max_words: a positive whole number (or null: off)")
    return out


def _unnormalised(sp: dict) -> bool:
    return sp.get("variable") is None or sp.get("normalised") == "new"


def filter_reason(row: dict, filters: dict) -> str | None:
    """Why ArgU §3.2.4's filters drop this export row (None = keep it). Counts the normalised spans."""
    words = len(row["text"].split())
    if filters.get("max_words") is not None and words > filters["max_words"]:
        return f"{words} words > {filters['max_words']}"
    spans = row["span_details"]
    if spans and filters.get("max_unnormalised") is not None:
        share = sum(_unnormalised(sp) for sp in spans) / len(spans)
        if share > filters["max_unnormalised"] + 1e-9:
            return f"{share:.0%} of spans unnormalised > {filters['max_unnormalised']:.0%}"
    counts: dict = {}
    for sp in spans:
        if sp["variable"] is not None:
            counts[sp["variable"]] = counts.get(sp["variable"], 0) + 1
    if filters.get("variables") is not None:
        low, high = filters["variables"]
        if not low <= len(counts) <= high:
            return f"{len(counts)} fact variables, not {low}-{high}"
    if filters.get("mentions_per_variable") is not None:
        low, high = filters["mentions_per_variable"]
        for variable, n in counts.items():
            if not low <= n <= high:
                return f"variable {variable} present {n} time{'s' if n != 1 else ''}, not {low}-{high}"
    return None


def project_rows(project, *, include_unannotated: bool = False, filters=None) -> Iterator[dict]:
    """Export rows of a span_grounding project's non-gold items, in item order (optionally §3.2.4-filtered)."""
    filters = clean_filters(filters)
    for row in _project_rows(project, include_unannotated=include_unannotated):
        if filters is None or filter_reason(row, filters) is None:
            yield row


def _project_rows(project, *, include_unannotated: bool) -> Iterator[dict]:
    tt = project.get_task_type()
    responses = item_responses(project)
    items = list(Item.objects.filter(project=project, is_gold=False).order_by("position", "id"))
    mapping = normalisation_by_item([i.pk for i in items])
    for item in items:
        got = responses.get(item.pk, [])
        if got:
            yield export_row(project, item, got, tt.aggregate(project, item, got), mapping=mapping.get(item.pk, {}))
        elif include_unannotated:
            payload = item.payload or {}
            names = {v["id"]: v["text"] for v in payload.get("variables") or []}
            spans = [
                {
                    "begin": s["begin"],
                    "end": s["end"],
                    "text": payload.get("text", "")[s["begin"] : s["end"]],
                    "variable": s.get("variable"),
                    "variable_text": names.get(s.get("variable")) if s.get("variable") is not None else "Others",
                    "votes": 0,
                }
                for s in payload.get("suggestions") or []
            ]
            row = export_row(project, item, [], {"spans": spans}, mapping=mapping.get(item.pk, {}))
            row["source"] = "suggestions"
            yield row


# --- release kind "spans" ------------------------------------------------------------------------------
def prepare_release(config: dict) -> dict:
    """``{"projects": [slug, ...] (or "project"), "include_unannotated": false, "filters": false}``."""
    check_keys(config, ("project", "projects", "include_unannotated", "filters"))
    slugs = config_projects(config, task_type=NAME)
    flag = config.get("include_unannotated", False)
    if not isinstance(flag, bool):
        raise ValueError("config.include_unannotated: true or false")
    return {
        "projects": sorted(set(slugs)),
        "include_unannotated": flag,
        "filters": clean_filters(config.get("filters")),
    }


def release_rows(config: dict) -> Iterator[dict]:
    for slug in config["projects"]:
        for row in project_rows(
            Project.objects.get(slug=slug),
            include_unannotated=config["include_unannotated"],
            filters=config.get("filters"),
        ):
            yield {"project": slug, **row}


def count_release(config: dict) -> int:
    return sum(1 for _ in release_rows(config))


def release_card(ctx) -> list[tuple[str, str]]:
    fmt = (
        "JSONL (spans.jsonl), one row per argument: project, item_id, argument_id, topic, stance, scheme, text, "
        "variables (the KB variables offered, then those the KB normalisation mapped spans to), offered_variables, "
        "spans ([begin, end, variable_id or null] triples of the token-majority aggregate after KB normalisation; "
        "character offsets, end exclusive; null = Others), span_details (the same with texts, votes, the "
        "annotated variable and the normalisation: direct / indirect / merged / new), facts (grounded variable "
        "texts), n_unnormalised, schemes (when asked), n_annotations, annotations (every response, with the "
        "rejected suggestions), suggestions (per suggestion: accepted / rejected / undecided counts). "
        "ArgU §3.1 (span detection + grounding), §3.2.4 (normalisation)."
    )
    return [("Format", fmt)]


def export_release(config: dict):
    yield "spans.jsonl", release_rows(config)
