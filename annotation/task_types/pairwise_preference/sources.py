"""Where ``pairwise_preference`` items come from (the studio, ``/studio/``): a file of argument pairs (a generation
run's pairs, the reader of ``manage.py ratings pairwise --file``), or a file of candidate arguments that are each paired
with a corpus argument of the same topic and stance (``--from-corpus``); :mod:`annotation.task_types.ratings.items`.
Pairs carry no answer, so there are no gold items."""
from __future__ import annotations

from annotation.task_types.base import Preview, Source, SourceInput, SourceOption
from annotation.task_types.ratings import items

PREVIEW_ROWS = 10
PAIRS = Source(
    "pairs-jsonl", "Argument pairs (JSONL)",
    "One JSON object a line: topic, stance, and the two arguments a and b, each {system, text} (two different "
    "systems); an id is optional. Workers never see the systems.",
    extensions=(".jsonl", ".ndjson"), rows="jsonl",
    example='{"topic": "nuclear energy", "stance": "pro", "a": {"system": "arg-ctrl", "text": "..."}, '
            '"b": {"system": "reference", "text": "..."}}')
CANDIDATES = Source(
    "candidates-jsonl", "Candidate arguments against corpus arguments (JSONL)",
    "One JSON object a line: topic, stance (pro or con), text, optionally id and system. Each candidate is paired with "
    "a corpus argument of the same topic and stance (seeded choice), so the topic's arguments must be imported.",
    extensions=(".jsonl", ".ndjson"), rows="jsonl",
    options=(SourceOption("system", "System of candidates that name none", kind="text", default="candidate"),
             SourceOption("seed", "Seed of the reference choice", kind="int", default=13)),
    example='{"topic": "nuclear energy", "stance": "pro", "text": "Nuclear power keeps the lights on without CO2.", '
            '"system": "arg-ctrl"}')
SOURCES = (PAIRS, CANDIDATES)


def _payloads(data: SourceInput) -> list[dict]:
    if data.source.name == CANDIDATES.name:
        return items.read_corpus_pairs(data.path, system=data.options.get("system") or None,
                                       seed=int(data.options.get("seed") or 0))
    return items.read_pairs(data.path)


def preview(project, data: SourceInput) -> Preview:
    payloads = _payloads(data)
    rows = [[str(n), p["topic"], p["stance"], f"{p['a']['text']}  [{p['a']['system']}]",
             f"{p['b']['text']}  [{p['b']['system']}]"] for n, p in enumerate(payloads[:PREVIEW_ROWS], start=1)]
    systems = sorted({p[side]["system"] for p in payloads for side in ("a", "b")})
    return Preview(items=len(payloads), columns=["#", "topic", "stance", "argument a", "argument b"], rows=rows,
                   notes=[f"{len(payloads)} pair(s) of the systems {', '.join(systems)}"])


def write(project, data: SourceInput, progress) -> dict:
    return items.write_payloads(project, _payloads(data), progress, "importing pairs")


def summary(payload: dict) -> str:
    a, b = payload.get("a") or {}, payload.get("b") or {}
    return f"{payload.get('topic', '')}: {a.get('text', '')} | {b.get('text', '')}"
