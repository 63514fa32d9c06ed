"""Export of span_grounding projects: one JSONL row per argument (ArgU's corpus shape), and the ``spans`` release kind.

Row (keys sorted when written)::

    {"item_id", "argument_id", "topic", "stance", "scheme" (the imported one, or null),
     "argument" (= "text"), "text", "variables": [{"id", "text"}],     # what the item offered
     "spans": [[begin, end, variable_id or null], ...],   # the aggregate (end exclusive; null = Others)
     "span_details": [{"begin", "end", "text", "variable", "variable_text", "votes"}],   # the same spans, annotated
     "facts": ["variable text", ...],                 # the distinct grounded variables, in span order (generator input)
     "schemes": [...] (aggregated; only when the project asked), "n_annotations",
     "annotations": [{"spans": [...], "schemes": [...]}]}   # every submitted response, as stored

Items without responses are exported with their suggestions as spans only with ``include_unannotated=True``
(then ``"source": "suggestions"``), else skipped.

Corpus filters of ArgU §3.2.4, off unless asked for (``filters=True`` for the paper's values, or a dict overriding
them): at most ``max_unnormalised`` (30%) of an example's spans ungrounded (Others), ``variables`` = [1, 4] distinct
fact variables per example, at most ``max_words`` (150) words of argument text. (The paper's further steps, "each
variable present 2-4 times" and a claim check with an external argument parser, are not applied.)
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable, Iterator

KIND = "spans"


def export_row(project, item, responses: list[dict], aggregate: dict) -> dict:
    payload = item.payload or {}
    names = {v["id"]: v["text"] for v in payload.get("variables") or []}
    facts: list[str] = []
    for s in aggregate["spans"]:
        if s["variable"] is not None and names.get(s["variable"]) not in facts:
            facts.append(names.get(s["variable"]))
    row = {"item_id": item.pk, "argument_id": payload.get("argument_id"), "topic": payload.get("topic", ""),
           "stance": payload.get("stance", ""), "scheme": payload.get("scheme"), "text": payload.get("text", ""),
           "argument": payload.get("text", ""), "variables": payload.get("variables") or [],
           "spans": [[sp["begin"], sp["end"], sp["variable"]] for sp in aggregate["spans"]],
           "span_details": aggregate["spans"], "facts": facts,
           "n_annotations": len(responses), "source": "annotations",
           "annotations": [{"spans": r.get("spans") or [], **({"schemes": r["schemes"]} if "schemes" in r else {})}
                           for r in responses]}
    if "schemes" in aggregate:
        row["schemes"] = aggregate["schemes"]["schemes"]
        row["scheme_votes"] = aggregate["schemes"]["counts"]
    return row


DEFAULT_FILTERS = {"max_unnormalised": 0.30, "variables": [1, 4], "max_words": 150}


def clean_filters(filters) -> dict | None:
    """None/False = no filtering; True = the paper's values; a dict overrides some of them (checked)."""
    if filters is None or filters is False:
        return None
    if filters is True:
        return dict(DEFAULT_FILTERS)
    if not isinstance(filters, dict):
        raise ValueError("config.filters: true, false or an object")
    unknown = set(filters) - set(DEFAULT_FILTERS)
    if unknown:
        raise ValueError(f"config.filters: unknown key(s) {', '.join(sorted(unknown))}")
    out = {**DEFAULT_FILTERS, **filters}
    share, (low, high), words = out["max_unnormalised"], out["variables"], out["max_words"]
    if not isinstance(share, (int, float)) or not 0 <= share <= 1:
        raise ValueError("config.filters.max_unnormalised: a share between 0 and 1")
    if not (isinstance(low, int) and isinstance(high, int) and 0 <= low <= high):
        raise ValueError("config.filters.variables: [min, max] whole numbers, min <= max")
    if not isinstance(words, int) or words < 1:
        raise ValueError("config.filters.max_words: a positive whole number")
    return out


def filter_reason(row: dict, filters: dict) -> str | None:
    """Why ArgU §3.2.4's filters drop this export row (None = keep it)."""
    words = len(row["text"].split())
    if words > filters["max_words"]:
        return f"{words} words > {filters['max_words']}"
    spans = row["span_details"]
    if spans:
        share = sum(sp["variable"] is None for sp in spans) / len(spans)
        if share > filters["max_unnormalised"]:
            return f"{share:.0%} of spans unnormalised > {filters['max_unnormalised']:.0%}"
    n_variables = len({sp["variable"] for sp in spans if sp["variable"] is not None})
    low, high = filters["variables"]
    if not low <= n_variables <= high:
        return f"{n_variables} fact variables, not {low}-{high}"
    return None


def project_rows(project, *, include_unannotated: bool = False, filters=None) -> Iterator[dict]:
    """Export rows of a span_grounding project's non-gold items, in item order (optionally §3.2.4-filtered)."""
    filters = clean_filters(filters)
    for row in _project_rows(project, include_unannotated=include_unannotated):
        if filters is None or filter_reason(row, filters) is None:
            yield row


def _project_rows(project, *, include_unannotated: bool) -> Iterator[dict]:
    from annotation.models import Item
    from annotation.selectors import item_responses

    tt = project.get_task_type()
    responses = item_responses(project)
    for item in Item.objects.filter(project=project, is_gold=False).order_by("position", "id"):
        got = responses.get(item.pk, [])
        if got:
            yield tt.export_row(project, item, got)
        elif include_unannotated:
            payload = item.payload or {}
            names = {v["id"]: v["text"] for v in payload.get("variables") or []}
            spans = [{"begin": s["begin"], "end": s["end"], "text": payload.get("text", "")[s["begin"]:s["end"]],
                      "variable": s.get("variable"),
                      "variable_text": names.get(s.get("variable")) if s.get("variable") is not None else "Others",
                      "votes": 0} for s in payload.get("suggestions") or []]
            row = export_row(project, item, [], {"spans": spans})
            row["source"] = "suggestions"
            yield row


def write_jsonl(rows: Iterable[dict], path: str | Path) -> int:
    """Write rows as JSONL (keys sorted, UTF-8) atomically; returns the number of rows."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".part")
    n = 0
    with open(tmp, "w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, sort_keys=True, ensure_ascii=False) + "\n")
            n += 1
    tmp.replace(path)
    return n


# --- release kind "spans" ------------------------------------------------------------------------------
def prepare_release(config: dict) -> dict:
    """``{"projects": [slug, ...] (or "project"), "include_unannotated": false, "filters": false}``."""
    from annotation.models import Project

    unknown = set(config) - {"project", "projects", "include_unannotated", "filters"}
    if unknown:
        raise ValueError(f"config: unknown key(s) {', '.join(sorted(unknown))} (expected projects, "
                         f"include_unannotated, filters)")
    slugs = config.get("projects") or ([config["project"]] if config.get("project") else [])
    if isinstance(slugs, str):
        slugs = [s.strip() for s in slugs.split(",") if s.strip()]
    if not slugs or not all(isinstance(s, str) for s in slugs):
        raise ValueError("config.projects: name the span_grounding project(s) to export (their slugs)")
    for slug in slugs:
        project = Project.objects.filter(slug=slug).first()
        if project is None:
            raise ValueError(f"config.projects: no project with slug {slug!r}")
        if project.task_type != "span_grounding":
            raise ValueError(f"config.projects: project {slug!r} is a {project.task_type!r} project, "
                             f"not 'span_grounding'")
    flag = config.get("include_unannotated", False)
    if not isinstance(flag, bool):
        raise ValueError("config.include_unannotated: true or false")
    return {"projects": sorted(set(slugs)), "include_unannotated": flag,
            "filters": clean_filters(config.get("filters"))}


def release_rows(config: dict) -> Iterator[dict]:
    from annotation.models import Project

    for slug in config["projects"]:
        for row in project_rows(Project.objects.get(slug=slug), include_unannotated=config["include_unannotated"],
                                filters=config.get("filters")):
            yield {"project": slug, **row}


def count_release(config: dict) -> int:
    return sum(1 for _ in release_rows(config))


def release_card(ctx) -> list[tuple[str, str]]:
    fmt = ("JSONL (spans.jsonl), one row per argument: project, item_id, argument_id, topic, stance, scheme, text, "
           "variables (the KB variables offered), spans ([begin, end, variable_id or null] triples of the token-majority "
           "aggregate; character offsets, end exclusive; null = Others), span_details (the same with texts and "
           "votes), facts (grounded variable texts), schemes (when asked), "
           "n_annotations, annotations (every response). ArgU §3.1 (span detection + grounding).")
    return [("Format", fmt)]


def export_release(config: dict):
    yield "spans.jsonl", release_rows(config)


def register_release_kind() -> None:
    """Register the ``spans`` release kind (called from ``annotation/exporters.py``)."""
    from corpus.releases import register_exporter

    register_exporter(KIND, prepare=prepare_release, count=count_release, card=release_card,
                      count_by=("topic", "stance"),
                      description="KB-grounded factual spans (+ argument schemes) from span_grounding projects "
                                  "(ArgU §3.1).")(export_release)
