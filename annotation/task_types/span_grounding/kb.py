"""The fact knowledge base as files: export to CSV / JSONL, import through the corpus importers (facts-csv /
facts-jsonl: all or nothing, idempotent by content hash, ``file:line: reason`` on a bad row).

Export columns / keys: ``id, topic, text, origin, status, merged_into, content_hash`` and ``metadata`` (JSONL: an
object; CSV: ``metadata_json``, a JSON string -- the facts-csv importer reads ``topic, text, origin``). An exported
file imports back unchanged (rows already present are skipped). Imported rows with origin ``proposed`` that are
new are set to ``pending`` review.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from django.db import transaction

from annotation.models import Item
from argora.jsonl import dumps, write_jsonl
from argora.progress import null_progress
from corpus.hashing import fact_hash
from corpus.importers import ImportFailed, import_file
from corpus.importers.parsers import PARSERS
from corpus.importers.readers import read_text
from corpus.models import FactVariable

from . import NAME
from .models import SpanNormalisation

FORMATS = {"csv": "facts-csv", "jsonl": "facts-jsonl"}
COLUMNS = ["id", "topic", "text", "origin", "status", "merged_into", "content_hash", "metadata_json"]


def guess_format(path, fmt: str | None = None) -> str:
    if fmt:
        if fmt not in FORMATS:
            raise ValueError(f"format {fmt!r} is not one of {', '.join(FORMATS)}")
        return fmt
    suffix = Path(str(path)).suffix.lower().lstrip(".")
    if suffix in FORMATS:
        return suffix
    if suffix == "json":
        return "jsonl"
    raise ValueError(f"cannot tell the format of {path} from its name: give csv or jsonl")


def kb_rows(*, topic: str | None = None, statuses=("active",)) -> list[dict]:
    """The KB as dicts, by topic then id. ``statuses`` None = every status."""
    qs = FactVariable.objects.select_related("topic").order_by("topic__name", "id")
    if topic:
        qs = qs.filter(topic__name__iexact=topic) | qs.filter(topic__slug=topic)
    if statuses:
        qs = qs.filter(status__in=list(statuses))
    return [
        {
            "id": v.pk,
            "topic": v.topic.name,
            "text": v.text,
            "origin": v.origin,
            "status": v.status,
            "merged_into": v.merged_into_id,
            "content_hash": v.content_hash,
            "metadata": v.metadata or {},
        }
        for v in qs
    ]


def write_kb(rows: list[dict], fmt: str, stream) -> int:
    if fmt == "jsonl":
        for row in rows:
            stream.write(dumps(row) + "\n")
    else:
        writer = csv.writer(stream, lineterminator="\n")
        writer.writerow(COLUMNS)
        for r in rows:
            writer.writerow(
                [
                    r["id"],
                    r["topic"],
                    r["text"],
                    r["origin"],
                    r["status"],
                    "" if r["merged_into"] is None else r["merged_into"],
                    r["content_hash"],
                    json.dumps(r["metadata"], ensure_ascii=False, sort_keys=True),
                ]
            )
    return len(rows)


def export_kb(path, fmt: str | None = None, *, topic: str | None = None, statuses=("active",)) -> int:
    """Write the KB to ``path`` (``-`` is not handled here; see the command). Returns the number of rows."""
    fmt = guess_format(path, fmt)
    rows = kb_rows(topic=topic, statuses=statuses)
    if fmt == "jsonl":
        return write_jsonl(rows, path)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".part")
    with open(tmp, "w", encoding="utf-8", newline="") as fh:
        write_kb(rows, fmt, fh)
    tmp.replace(path)
    return len(rows)


def kb_text(fmt: str, *, topic: str | None = None, statuses=("active",)) -> str:
    buf = io.StringIO()
    write_kb(kb_rows(topic=topic, statuses=statuses), fmt, buf)
    return buf.getvalue()


def import_kb(path, fmt: str | None = None, *, topic: str | None = None, progress=null_progress):
    """Import a KB file through :func:`corpus.importers.import_file`; new ``proposed`` rows become ``pending``.

    Raises :class:`corpus.importers.ImportFailed` (nothing written) on a bad row. Returns the import summary.
    """
    try:
        fmt = guess_format(path, fmt)
    except ValueError as exc:
        raise ImportFailed(path, 0, str(exc)) from None
    parsed = PARSERS[FORMATS[fmt]](path, read_text(path), topic=topic)
    proposed = {fact_hash(r.topic, r.text) for r in parsed.facts if r.origin == "proposed"}
    with transaction.atomic():
        before = set(FactVariable.objects.filter(content_hash__in=proposed).values_list("content_hash", flat=True))
        summary = import_file(path, FORMATS[fmt], topic=topic, progress=progress)
        FactVariable.objects.filter(content_hash__in=proposed - before).update(status=FactVariable.Status.PENDING)
    return summary


def fact_uses(sender, fact=None, **kwargs) -> list[str]:
    """Receiver of :data:`corpus.signals.fact_uses` (connected in :mod:`.receivers`): span_grounding items that
    offer the variable (their responses and exports name its id) and normalised spans mapped to it or proposing it.
    A variable in use is retired by rejecting or merging it, never by deleting it."""
    uses = []
    offered = 0
    rows = Item.objects.filter(project__task_type=NAME).values_list("payload__variables", flat=True)
    for variables in rows.iterator(chunk_size=2000):
        if any(isinstance(v, dict) and v.get("id") == fact.pk for v in variables or []):
            offered += 1
    if offered:
        uses.append(f"{offered} {NAME} item{'s' if offered != 1 else ''} offer it")
    mapped = (
        SpanNormalisation.objects.filter(variable=fact).count()
        + SpanNormalisation.objects.filter(proposal=fact).count()
    )
    if mapped:
        uses.append(f"{mapped} normalised span{'s' if mapped != 1 else ''} refer to it")
    return uses
