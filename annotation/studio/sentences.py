"""Items from corpus sentences, for any task type that builds its items from them (``TaskType.builds_from_sentences``).

The sources (:class:`annotation.task_types.base.Source`) a task type's ``sources`` module can offer as they are, and
what the studio offers a sentence-built task type that has no ``sources`` module:

- an uploaded corpus file (UKP TSV or JSONL arguments) that the corpus importers (:mod:`corpus.importers`) read and
  import into the corpus; the file's sentences, in file order, become the items;
- a selection of the corpus: the sentences of some topics (all topics when none is chosen), in id order, at most
  ``limit`` of them.

The first ``gold`` sentences become gold items whose expected answer the task type takes from their corpus stance
(``TaskType.gold_from_sentence``; ``manage.py create_project --gold-from-stance N``). ``write`` imports the file (one
transaction, nothing written on a bad row) and then adds the items with :func:`annotation.services.add_items_from_rows`
(all or nothing); the caller holds a transaction around both.
"""
from __future__ import annotations

from typing import Callable

from annotation import services
from annotation.task_types import get_task_type
from annotation.task_types.base import Preview, Source, SourceInput, SourceOption
from argora.errors import FieldError
from corpus.hashing import normalise, sentence_hash
from corpus.importers import ImportFailed, import_file
from corpus.importers.parsers import PARSERS
from corpus.importers.readers import read_text
from corpus.models import Sentence, Topic

PREVIEW_ROWS = 10

GOLD = SourceOption(
    "gold", "Gold items from the corpus stance", kind="int", default=0,
    help="the first N sentences become gold items; their expected answer is their stance in the corpus "
         "(what the task type makes of it)")
UKP_TSV = Source(
    "ukp-tsv", "UKP argument corpus (TSV)",
    "The UKP Sentential Argument Mining Corpus layout: a header, then one sentence a row with its topic and its "
    "annotation (Argument_for, Argument_against or NoArgument). Imported into the corpus first.",
    extensions=(".tsv",), rows="tsv", options=(GOLD,),
    example="topic\tretrievedUrl\tarchivedUrl\tsentenceHash\tsentence\tannotation\tset\n"
            "nuclear energy\thttps://example.org/a\t\th1\tNuclear plants emit almost no CO2.\tArgument_for\ttrain")
ARGUMENTS_JSONL = Source(
    "arguments-jsonl", "Arguments (JSONL)",
    "One JSON object a line with topic, sentence and stance (pro, con or none; UKP's labels work too); id, source "
    "and metadata are optional. Imported into the corpus first.",
    extensions=(".jsonl", ".ndjson"), rows="jsonl", options=(GOLD,),
    example='{"topic": "nuclear energy", "sentence": "Nuclear plants emit almost no CO2.", "stance": "pro"}')
CORPUS = Source(
    "corpus", "Sentences already in the corpus",
    "The sentences of the topics you choose (all topics when you choose none), oldest first, at most the limit.",
    options=(GOLD,))
SOURCES = (UKP_TSV, ARGUMENTS_JSONL, CORPUS)
# source name -> the corpus importers' format
CORPUS_FORMATS = {UKP_TSV.name: "ukp-tsv", ARGUMENTS_JSONL.name: "jsonl"}

# ``check(project, sentences)``: what a task type also needs from the corpus (raises FieldError), e.g. a fact KB
Check = Callable[[object, list], None]


def parse_file(data: SourceInput) -> list:
    """The sentence records of an uploaded corpus file, validated by the corpus parser of its format (nothing is
    written); a sentence repeated in the file is kept once (the corpus keeps it once)."""
    text = read_text(data.path)
    parsed = PARSERS[CORPUS_FORMATS[data.source.name]](data.path, text)
    if not parsed.sentences:
        raise ImportFailed(data.path, 0, "no sentences in the file")
    seen, records = set(), []
    for record in parsed.sentences:
        key = sentence_hash(record.topic, record.text)
        if key not in seen:
            seen.add(key)
            records.append(record)
    return records


def selection(data: SourceInput) -> list[Sentence]:
    """The corpus sentences a selection names: the topics' sentences (all when no topic is chosen) in id order, the
    gold ones first, then at most ``limit``."""
    qs = Sentence.objects.select_related("topic").order_by("id")
    if data.topics:
        qs = qs.filter(topic__in=data.topics)
    gold = int(data.options.get("gold") or 0)
    return list(qs[: (data.limit or 10 ** 9) + gold])


def _unsaved(records) -> tuple[list[Sentence], list[str], int]:
    """Sentences for the records as the import would make them (unsaved, on the corpus topic of the same name when
    there is one), the names of the topics the import would create, and how many sentences the corpus has already."""
    names = {normalise(r.topic).lower() for r in records}
    topics = {}
    for name in names:
        topics[name] = Topic.objects.filter(name__iexact=name).order_by("id").first()
    new_topics = sorted({r.topic for r in records if topics[normalise(r.topic).lower()] is None}, key=str.lower)
    for r in records:
        key = normalise(r.topic).lower()
        if topics[key] is None:
            topics[key] = Topic(name=r.topic)
    hashes = [sentence_hash(r.topic, r.text) for r in records]
    present = set(Sentence.objects.filter(content_hash__in=hashes).values_list("content_hash", flat=True))
    sentences = [Sentence(topic=topics[normalise(r.topic).lower()], text=r.text, stance=r.stance, source=r.source,
                          external_id=r.external_id, metadata=r.metadata, content_hash=h)
                 for r, h in zip(records, hashes)]
    return sentences, new_topics, len(present)


def preview(project, data: SourceInput, *, check: Check | None = None) -> Preview:
    """Read and check the file (or the selection) and the gold answers; writes nothing."""
    tt = get_task_type(project.task_type)
    notes = []
    if data.source.is_upload:
        records = parse_file(data)
        sentences, new_topics, present = _unsaved(records)
        notes.append(f"{len(records)} sentence(s) in the file, {present} of them already in the corpus (reused)")
        if new_topics:
            notes.append(f"new topic(s) for the corpus: {', '.join(new_topics)}")
    else:
        sentences = selection(data)
        if not sentences:
            raise FieldError("topics", "no corpus sentence matches; import some first or choose other topics")
        topics = sorted({s.topic.name for s in sentences if s.topic_id}, key=str.lower)
        notes.append(f"{len(sentences)} sentence(s) of {len(topics)} topic(s): {', '.join(topics[:10])}"
                     + (" ..." if len(topics) > 10 else ""))
    n_gold = int(data.options.get("gold") or 0)
    if n_gold >= len(sentences):
        raise FieldError("gold", f"{n_gold} gold item(s) asked for, but there are only {len(sentences)} "
                                 f"sentence(s); leave some for the workers")
    gold = services.gold_from_sentences(project, sentences[:n_gold])
    if check is not None:
        check(project, sentences)
    rows = []
    for n, sentence in enumerate(sentences[:PREVIEW_ROWS]):
        row = [str(n + 1), sentence.topic.name if sentence.topic else "", sentence.stance, sentence.text]
        if n_gold:
            row.append(f"gold: {tt.answer_text(gold[n]['expected'])}" if n < n_gold else "")
        rows.append(row)
    columns = ["#", "topic", "stance", "sentence"] + (["gold"] if n_gold else [])
    return Preview(items=len(sentences) - n_gold, gold=n_gold, columns=columns, rows=rows, notes=notes)


def sentences_of_file(data: SourceInput) -> list[Sentence]:
    """The corpus sentences of an imported file, in file order."""
    records = parse_file(data)
    hashes = [sentence_hash(r.topic, r.text) for r in records]
    by_hash = {s.content_hash: s for s in Sentence.objects.select_related("topic").filter(content_hash__in=hashes)}
    return [by_hash[h] for h in hashes if h in by_hash]


def write_corpus(data: SourceInput, progress) -> dict:
    """Import the uploaded corpus file (the corpus importers: all or nothing, a sentence already stored is reused)."""
    summary = import_file(data.path, CORPUS_FORMATS[data.source.name], progress=progress)
    return {"sentences_created": summary.created["sentences"], "topics_created": summary.created["topics"]}


def write(project, data: SourceInput, progress) -> dict:
    """Import the file into the corpus (or read the selection), then the items and gold items of ``project``."""
    if data.source.is_upload:
        corpus = write_corpus(data, progress)
        sentences = sentences_of_file(data)
    else:
        sentences, corpus = selection(data), {}
        if not sentences:
            raise FieldError("topics", "no corpus sentence matches; import some first or choose other topics")
    n_gold = int(data.options.get("gold") or 0)
    gold_rows, rows = sentences[:n_gold], sentences[n_gold:]
    progress(0, len(sentences), "building items")
    gold = services.gold_from_sentences(project, gold_rows)
    services.add_items_from_rows(project, rows, gold=gold)
    progress(len(sentences), len(sentences), "building items")
    return {"items": len(rows), "gold": len(gold), **corpus}

