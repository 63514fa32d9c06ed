"""Where ``validity_novelty`` items come from (the studio, ``/studio/``): a file in the ArgMining 2022 shared-task
layout, CSV or JSONL (the reader and importer of ``manage.py valnov import``: :mod:`.csvio`, :func:`.results.
import_table`). The gold share (``data.gold``: none, the first N rows, N percent drawn with a seed, or all) makes rows
gold items whose expected answer is their decided labels (``valnov import --as-gold``: every row); a share that leaves
the workers no row is refused (``gold_n``) unless it is "all"."""

from __future__ import annotations

from annotation.task_types.base import Preview, Source, SourceInput
from argora.errors import FieldError
from corpus.importers import ImportFailed

from . import csvio, results

PREVIEW_ROWS = 10
GOLD_LABEL = "its validity and novelty labels"
CSV = Source(
    "valnov-csv",
    "Shared-task CSV",
    "A header with topic, Premise, Conclusion, Validity, Validity-Confidence, Novelty, Novelty-Confidence (any "
    "order, extra columns kept); labels 1 (yes), -1 (no), 0 (tie); confidence: very confident, confident, majority "
    "or defeasible. The imported labels are never shown to workers; a gold row's expected answer is its labels (a 0 "
    "is not scored).",
    extensions=(".csv",),
    rows="csv",
    gold_label=GOLD_LABEL,
    example="topic,Premise,Conclusion,Validity,Validity-Confidence,Novelty,Novelty-Confidence\n"
    'Zoos,"Zoos keep wild animals in small enclosures.",Zoos harm animals,1,majority,-1,confident',
)
JSONL = Source(
    "valnov-jsonl",
    "Shared-task JSONL",
    "One JSON object a line with the same keys as the CSV header; labels as the numbers 1, -1, 0.",
    extensions=(".jsonl", ".ndjson"),
    rows="jsonl",
    gold_label=GOLD_LABEL,
    example='{"topic": "Zoos", "Premise": "Zoos keep wild animals in small enclosures.", "Conclusion": "Zoos harm '
    'animals", "Validity": 1, "Validity-Confidence": "majority", "Novelty": -1, "Novelty-Confidence": '
    '"confident"}',
)
SOURCES = (CSV, JSONL)
LABELS = {1: "yes", -1: "no", 0: "tie"}


def _table(data: SourceInput):
    table = csvio.read_file(data.path, "csv" if data.source.name == CSV.name else "jsonl")
    if not table.rows:
        raise ImportFailed(data.path, 0, "no rows in the file")
    return table


def gold_rows(data: SourceInput, table) -> set[int]:
    """The 0-based indexes of the rows the gold share makes gold items; refused (``gold_n``) when no row would be
    left for the workers, unless the share is "all"."""
    chosen = data.gold.rows(len(table.rows))
    if chosen and len(chosen) == len(table.rows) and data.gold.mode != "all":
        raise FieldError(
            "gold_n", f"{data.gold.describe()}: that is all {len(table.rows)} row(s); leave some rows for the workers"
        )
    return chosen


def preview(project, data: SourceInput) -> Preview:
    table = _table(data)
    gold = gold_rows(data, table)
    rows = [
        [
            str(n),
            r.topic,
            r.premise,
            r.conclusion,
            LABELS.get(r.validity, str(r.validity)),
            LABELS.get(r.novelty, str(r.novelty)),
        ]
        + (["gold" if n - 1 in gold else ""] if gold else [])
        for n, r in enumerate(table.rows[:PREVIEW_ROWS], start=1)
    ]
    notes = [f"{len(table.rows)} row(s); columns: {', '.join(table.columns)}"]
    if gold:
        notes.append(
            f"gold share: {data.gold.describe()} (expected answer: {data.source.gold_label}): {len(gold)} gold item(s)"
        )
    if gold and len(gold) == len(table.rows):
        notes.append("every row becomes a gold item: the project needs items for the workers too")
    return Preview(
        items=len(table.rows) - len(gold),
        gold=len(gold),
        columns=["#", "topic", "premise", "conclusion", "validity (file)", "novelty (file)"]
        + (["gold"] if gold else []),
        rows=rows,
        notes=notes,
    )


def write(project, data: SourceInput, progress) -> dict:
    table = _table(data)
    gold = gold_rows(data, table)
    progress(0, len(table.rows), "importing rows")
    s = results.import_table(project, table, gold_rows=gold)
    progress(len(table.rows), len(table.rows), "importing rows")
    return {"items": s["created"] - s["gold"], "gold": s["gold"]}


def summary(payload: dict) -> str:
    return f"{payload.get('premise', '')} → {payload.get('conclusion', '')}"
