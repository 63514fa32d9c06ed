"""Where ``validity_novelty`` items come from (the studio, ``/studio/``): a file in the ArgMining 2022 shared-task
layout, CSV or JSONL (the reader and importer of ``manage.py valnov import``: :mod:`.csvio`, :func:`.results.
import_table`). With "as gold" every row is a gold item whose expected answer is its decided labels."""
from __future__ import annotations

from annotation.task_types.base import Preview, Source, SourceInput, SourceOption
from corpus.importers import ImportFailed

from . import csvio, results

PREVIEW_ROWS = 10
AS_GOLD = SourceOption("as_gold", "Every row is a gold item (expected answer: its labels)",
                       help="valnov import --as-gold; labels 0 (tie / unknown) are not scored")
CSV = Source(
    "valnov-csv", "Shared-task CSV",
    "A header with topic, Premise, Conclusion, Validity, Validity-Confidence, Novelty, Novelty-Confidence (any "
    "order, extra columns kept); labels 1 (yes), -1 (no), 0 (tie); confidence: very confident, confident, majority "
    "or defeasible. The imported labels are never shown to workers.",
    extensions=(".csv",), rows="csv", options=(AS_GOLD,),
    example="topic,Premise,Conclusion,Validity,Validity-Confidence,Novelty,Novelty-Confidence\n"
            "Zoos,\"Zoos keep wild animals in small enclosures.\",Zoos harm animals,1,majority,-1,confident")
JSONL = Source(
    "valnov-jsonl", "Shared-task JSONL",
    "One JSON object a line with the same keys as the CSV header; labels as the numbers 1, -1, 0.",
    extensions=(".jsonl", ".ndjson"), rows="jsonl", options=(AS_GOLD,),
    example='{"topic": "Zoos", "Premise": "Zoos keep wild animals in small enclosures.", "Conclusion": "Zoos harm '
            'animals", "Validity": 1, "Validity-Confidence": "majority", "Novelty": -1, "Novelty-Confidence": '
            '"confident"}')
SOURCES = (CSV, JSONL)
LABELS = {1: "yes", -1: "no", 0: "tie"}


def _table(data: SourceInput):
    return csvio.read_file(data.path, "csv" if data.source.name == CSV.name else "jsonl")


def preview(project, data: SourceInput) -> Preview:
    table = _table(data)
    if not table.rows:
        raise ImportFailed(data.path, 0, "no rows in the file")
    as_gold = bool(data.options.get("as_gold"))
    rows = [[str(n), r.topic, r.premise, r.conclusion, LABELS.get(r.validity, str(r.validity)),
             LABELS.get(r.novelty, str(r.novelty))] for n, r in enumerate(table.rows[:PREVIEW_ROWS], start=1)]
    notes = [f"{len(table.rows)} row(s); columns: {', '.join(table.columns)}"]
    if as_gold:
        notes.append("every row becomes a gold item: add items for the workers (another import) before HITs exist")
    return Preview(items=0 if as_gold else len(table.rows), gold=len(table.rows) if as_gold else 0,
                   columns=["#", "topic", "premise", "conclusion", "validity (file)", "novelty (file)"], rows=rows,
                   notes=notes)


def write(project, data: SourceInput, progress) -> dict:
    table = _table(data)
    progress(0, len(table.rows), "importing rows")
    s = results.import_table(project, table, as_gold=bool(data.options.get("as_gold")))
    progress(len(table.rows), len(table.rows), "importing rows")
    return {"items": s["created"] - s["gold"], "gold": s["gold"]}


def summary(payload: dict) -> str:
    return f"{payload.get('premise', '')} → {payload.get('conclusion', '')}"
