"""Where ``span_grounding`` items come from (the studio, ``/studio/``): corpus sentences, from an uploaded corpus file
(UKP TSV, JSONL arguments, a Kialo export) or a selection of the corpus (:mod:`annotation.studio.sentences`), or the
topics' fact KB itself (``FACT_KB``: the importer of ``manage.py spans kb-import``, :func:`.kb.import_kb`).

Each item offers fact variables of its topic, so every topic needs enough active variables in the KB first: the
sentence sources' preview names each topic that has too few and points to the "Fact KB" source. The flow in the
browser: a new project from the "Fact KB (CSV / JSONL)" source imports the KB and makes items of the corpus's
sentences of the KB's topics (none yet: the project starts without items); the topics' arguments are then added
with "Add items" on the project page (any sentence source, whose preview now finds the KB)."""

from __future__ import annotations

from annotation import services
from annotation.studio import sentences
from annotation.task_types.base import Preview, Source, SourceInput, SourceOption
from argora.errors import FieldError
from corpus.hashing import fact_hash, normalise
from corpus.importers import ImportFailed
from corpus.importers.parsers import PARSERS
from corpus.importers.readers import read_text
from corpus.models import FactVariable, Sentence, Topic

from . import kb
from .task_type import config_of

PREVIEW_ROWS = 10
FACT_KB = Source(
    "fact-kb",
    "Fact KB (CSV / JSONL)",
    "The fact variables of one or more topics: a CSV with the columns topic, text and optionally origin (seed, "
    "expert or proposed), or one JSON object a line with the same keys (+ metadata) -- the files manage.py spans "
    "kb-export writes. The KB is imported (all or nothing; variables already there are kept; proposed ones wait for "
    "review), then every sentence the corpus has of the KB's topics becomes an item (at most the number below). "
    "Topics without sentences in the corpus yet: the project starts without their items; add them afterwards with "
    '"Add items" on the project page (UKP TSV, arguments JSONL or a Kialo export of the topic).',
    extensions=(".csv", ".jsonl"),
    rows="",
    options=(
        SourceOption(
            "limit", "At most (sentences)", kind="int", default=0, help="0: every corpus sentence of the KB's topics"
        ),
    ),
    example="topic,text,origin\nminimum wage,the minimum wage,seed\nminimum wage,unemployment,seed",
)
SOURCES = (*sentences.SOURCES, FACT_KB)


def _needed(project) -> int:
    return config_of(project)["variables_per_item"][0]


def check_kb(project, rows) -> None:
    """Every topic of the sentences has at least the project's minimum of active fact variables; the refusal names
    every topic that has too few and where to upload its KB."""
    needed = _needed(project)
    seen = {}
    for sentence in rows:
        topic = sentence.topic
        if topic is not None and topic.name.lower() not in seen:
            seen[topic.name.lower()] = topic
    short = []
    for topic in sorted(seen.values(), key=lambda t: t.name.lower()):
        n = FactVariable.objects.filter(topic_id=topic.pk, status=FactVariable.Status.ACTIVE).count() if topic.pk else 0
        if n < needed:
            short.append(f"topic {topic.name!r} has {n} active fact variable(s) in the KB")
    if short:
        raise FieldError(
            "variables",
            f"{'; '.join(short)}; an item needs at least {needed}. Upload the topic's KB "
            f'first: choose "{FACT_KB.label}" where the items come from (then add these '
            f'sentences with "Add items" on the project page), or run manage.py spans '
            f"kb-import",
        )


def _kb(data: SourceInput) -> dict:
    """The KB file's facts (checked by the corpus's facts parser; nothing written) and, per topic, what the import
    leaves: ``{"facts", "new", "topics": [{"name", "topic", "active", "new"}]}``."""
    try:
        fmt = kb.guess_format(data.path)
    except ValueError as exc:
        raise ImportFailed(data.path, 0, str(exc)) from None
    facts = PARSERS[kb.FORMATS[fmt]](data.path, read_text(data.path)).facts
    if not facts:
        raise ImportFailed(data.path, 0, "no fact variables in the file")
    hashes = [fact_hash(f.topic, f.text) for f in facts]
    present = set(FactVariable.objects.filter(content_hash__in=hashes).values_list("content_hash", flat=True))
    topics: dict[str, dict] = {}
    new, seen = 0, set()
    for fact, digest in zip(facts, hashes):
        key = normalise(fact.topic).lower()
        if key not in topics:
            row = Topic.objects.filter(name__iexact=key).order_by("id").first()
            topics[key] = {
                "name": row.name if row else fact.topic,
                "topic": row,
                "new": 0,
                "active": FactVariable.objects.filter(topic=row, status=FactVariable.Status.ACTIVE).count()
                if row
                else 0,
            }
        if digest in present or digest in seen:
            continue
        seen.add(digest)
        new += 1
        topics[key]["new"] += 1
        if fact.origin != FactVariable.Origin.PROPOSED:  # new proposed variables wait for review
            topics[key]["active"] += 1
    return {"facts": len(facts), "new": new, "topics": sorted(topics.values(), key=lambda t: t["name"].lower())}


def _sentences(data: SourceInput, found: dict) -> list[Sentence]:
    """The corpus sentences of the KB's topics that are already in the corpus, in id order, at most ``limit``."""
    topics = [t["topic"] for t in found["topics"] if t["topic"] is not None]
    limit = int(data.options.get("limit") or 0) or None
    qs = Sentence.objects.select_related("topic").filter(topic__in=topics).order_by("id")
    return list(qs[:limit] if limit else qs)


def _kb_preview(project, data: SourceInput) -> Preview:
    found = _kb(data)
    needed = _needed(project)
    rows_of = _sentences(data, found)
    counts: dict[int, int] = {}
    for sentence in rows_of:
        counts[sentence.topic_id] = counts.get(sentence.topic_id, 0) + 1
    short = [
        t for t in found["topics"] if t["topic"] is not None and counts.get(t["topic"].pk) and t["active"] < needed
    ]
    if short:
        raise FieldError(
            "variables",
            "; ".join(
                f"topic {t['name']!r} would have {t['active']} active fact variable(s) after the import" for t in short
            )
            + f"; an item needs at least {needed}: add variables to the file",
        )
    notes = [
        f"{found['facts']} fact variable(s) of {len(found['topics'])} topic(s) in the file, {found['new']} of "
        f"them new to the KB"
    ]
    waiting = [t["name"] for t in found["topics"] if not (t["topic"] is not None and counts.get(t["topic"].pk))]
    if waiting:
        notes.append(
            f"no sentence of {', '.join(waiting)} in the corpus yet: once the KB is imported, add the "
            f'topic\'s arguments with "Add items" on the project page'
        )
    rows = [
        [t["name"], str(t["new"]), str(t["active"]), str(counts.get(t["topic"].pk, 0) if t["topic"] else 0)]
        for t in found["topics"][:PREVIEW_ROWS]
    ]
    return Preview(
        items=len(rows_of),
        columns=["topic", "new variables", "active after the import", "corpus sentences (items)"],
        rows=rows,
        notes=notes,
    )


def preview(project, data: SourceInput) -> Preview:
    if data.source.name == FACT_KB.name:
        return _kb_preview(project, data)
    return sentences.preview(project, data, check=check_kb)


def write(project, data: SourceInput, progress) -> dict:
    if data.source.name != FACT_KB.name:
        return sentences.write(project, data, progress)
    _kb_preview(project, data)  # the same checks as the preview, before anything is written
    summary = kb.import_kb(data.path, progress=progress)
    found = _kb(data)
    rows = _sentences(data, found)
    progress(0, len(rows), "building items")
    services.add_items_from_rows(project, rows)
    progress(len(rows), len(rows), "building items")
    return {"items": len(rows), "gold": 0, "facts_created": summary.created["facts"]}


def summary(payload: dict) -> str:
    return str(payload.get("text", ""))
