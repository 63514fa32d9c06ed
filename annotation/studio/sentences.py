"""Items from corpus sentences, for any task type that builds its items from them (``TaskType.builds_from_sentences``).

The sources (:class:`annotation.task_types.base.Source`) a task type's ``sources`` module can offer as they are, and
what the studio offers a sentence-built task type that has no ``sources`` module:

- an uploaded corpus file (UKP TSV or JSONL arguments) that the corpus importers (:mod:`corpus.importers`) read and
  import into the corpus; the file's sentences, in file order, become the items;
- a Kialo discussion export (:func:`corpus.importers.parsers.parse_kialo`, debate trees §2.1): the tree goes into the
  corpus linked to its topic (the discussion's title unless one is given) and every claim becomes a sentence of that
  topic (:func:`kialo_records`);
- a selection of the corpus: the sentences of some topics (all topics when none is chosen), in id order, at most
  ``limit`` of them.

The gold share (``data.gold``, a :class:`~annotation.task_types.base.GoldShare`: none, the first N rows, N percent
drawn with a seed, or all) picks the rows that become gold items, whose expected answer the task type takes from
their corpus stance (``TaskType.gold_from_sentence``, as ``manage.py create_project --gold-from-stance N`` does); the
sources whose rows carry a stance say so in ``gold_label``. A share that leaves the workers no item is refused
(``gold_n``) unless it is "all" (a gold-only addition to a project that has items). ``write`` imports the file (one
transaction, nothing written on a bad row) and then adds the items with :func:`annotation.services.add_items_from_rows`
(all or nothing); the caller holds a transaction around both.
"""

from __future__ import annotations

from collections.abc import Callable

from annotation import services
from annotation.task_types import get_task_type
from annotation.task_types.base import GoldShare, Preview, Source, SourceInput, SourceOption
from argora.errors import FieldError
from corpus.hashing import normalise, sentence_hash
from corpus.importers import ImportFailed, import_file
from corpus.importers.base import ParsedFile, SentenceRecord
from corpus.importers.fields import MAX_TOPIC
from corpus.importers.parsers import PARSERS, parse_kialo
from corpus.importers.readers import read_text
from corpus.importers.writers import save
from corpus.models import Sentence, Stance, Topic

PREVIEW_ROWS = 10
GOLD_LABEL = "its corpus stance"
UKP_TSV = Source(
    "ukp-tsv",
    "UKP argument corpus (TSV)",
    "The UKP Sentential Argument Mining Corpus layout: a header, then one sentence a row with its topic and its "
    "annotation (Argument_for, Argument_against or NoArgument). Imported into the corpus first.",
    extensions=(".tsv",),
    rows="tsv",
    gold_label=GOLD_LABEL,
    example="topic\tretrievedUrl\tarchivedUrl\tsentenceHash\tsentence\tannotation\tset\n"
    "nuclear energy\thttps://example.org/a\t\th1\tNuclear plants emit almost no CO2.\tArgument_for\ttrain",
)
ARGUMENTS_JSONL = Source(
    "arguments-jsonl",
    "Arguments (JSONL)",
    "One JSON object a line with topic, sentence and stance (pro, con or none; UKP's labels work too); id, source "
    "and metadata are optional. Imported into the corpus first.",
    extensions=(".jsonl", ".ndjson"),
    rows="jsonl",
    gold_label=GOLD_LABEL,
    example='{"topic": "nuclear energy", "sentence": "Nuclear plants emit almost no CO2.", "stance": "pro"}',
)
KIALO = Source(
    "kialo",
    "Kialo discussion export (.txt)",
    'Kialo\'s plain-text export of one discussion ("Discussion Title: ...", then numbered claims 1., 1.1., 1.1.1. '
    'with Pro: / Con: towards their parent; "-> See 1.2." copies a claim, kept once). The tree goes into the '
    "corpus, linked to the topic (the discussion's title unless you give one), and every claim becomes a sentence of "
    "that topic, in the file's order. Stance: Kialo's Pro / Con says whether a claim supports its parent claim, not "
    "the topic, so a claim's stance is none -- except the claims answering the thesis directly (1.1., 1.2., ...) "
    "when the topic is the discussion's own title: they are pro or con of it. The Pro / Con towards the parent is "
    "kept in the sentence's metadata (kialo.relation). No gold share: the stances are not labels of the topic.",
    extensions=(".txt",),
    rows="",
    options=(
        SourceOption(
            "topic",
            "Topic",
            kind="text",
            help="default: the discussion's title (the stance of the thesis's replies is then kept)",
        ),
    ),
    example="Discussion Title: Should schools require uniforms?\n\n1. Schools should require uniforms.\n"
    "1.1. Pro: Uniforms reduce bullying over clothes.\n1.1.1. Con: Children are bullied for other things.\n"
    "1.2. Con: Uniforms cost families money.",
)
CORPUS = Source(
    "corpus",
    "Sentences already in the corpus",
    "The sentences of the topics you choose (all topics when you choose none), oldest first, at most the limit "
    "(gold items included).",
    gold_label=GOLD_LABEL,
)
SOURCES = (UKP_TSV, ARGUMENTS_JSONL, KIALO, CORPUS)
# source name -> the corpus importers' format
CORPUS_FORMATS = {UKP_TSV.name: "ukp-tsv", ARGUMENTS_JSONL.name: "jsonl", KIALO.name: "kialo"}

# ``check(project, sentences)``: what a task type also needs from the corpus (raises FieldError), e.g. a fact KB
Check = Callable[[object, list], None]


def kialo_file(data: SourceInput) -> ParsedFile:
    """What a Kialo export puts into the corpus: its tree (linked to the topic) and a sentence per claim
    (:func:`kialo_records`), all checked by the corpus's Kialo parser; nothing is written."""
    text = read_text(data.path)
    given = normalise(str(data.options.get("topic") or ""))
    tree = parse_kialo(data.path, text, source=data.file_name or data.path.name).trees[0]
    topic = given or tree.title
    if len(topic) > MAX_TOPIC:
        raise FieldError("topic", f"the discussion's title is longer than {MAX_TOPIC} characters; give a topic")
    tree.topic = topic
    return ParsedFile(trees=[tree], sentences=kialo_records(tree, topic, own_title=not given or given == tree.title))


def kialo_records(tree, topic: str, *, own_title: bool) -> list[SentenceRecord]:
    """A sentence of ``topic`` per claim of a parsed Kialo tree (file order; source ``kialo``, the node number as
    its id). Its stance is none unless it answers the thesis directly and the topic is the discussion's own title
    (``own_title``): a reply of the root thesis is then pro or con of the topic; deeper down a Pro / Con is towards
    the parent claim only (debate trees §2.1), so it is kept in ``metadata["kialo"]["relation"]``, not as a stance.
    In a multi-thesis discussion (the root is a question with unlabelled positions) no claim gets a stance."""
    single_thesis = not any(n.depth == 1 and n.stance not in (Stance.PRO, Stance.CON) for n in tree.nodes)
    records = []
    for node in tree.nodes:
        relation = node.stance if node.stance in (Stance.PRO, Stance.CON) else ""
        stance = relation if relation and node.depth == 1 and own_title and single_thesis else Stance.NONE
        metadata = {
            "kialo": {"path": node.path, "relation": relation, "tree": tree.content_hash, "discussion": tree.title}
        }
        if node.reference_path:
            metadata["kialo"]["reference"] = node.reference_path
        records.append(
            SentenceRecord(
                line=node.line,
                topic=topic,
                text=node.text,
                stance=stance,
                source="kialo",
                external_id=node.path,
                metadata=metadata,
            )
        )
    return records


def parse_file(data: SourceInput) -> list:
    """The sentence records of an uploaded corpus file, validated by the corpus parser of its format (nothing is
    written); a sentence repeated in the file is kept once (the corpus keeps it once)."""
    if data.source.name == KIALO.name:
        parsed = kialo_file(data)
    else:
        parsed = PARSERS[CORPUS_FORMATS[data.source.name]](data.path, read_text(data.path))
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
    """The corpus sentences a selection names: the topics' sentences (all when no topic is chosen) in id order, at
    most ``limit`` of them (the gold share is drawn from these)."""
    qs = Sentence.objects.select_related("topic").order_by("id")
    if data.topics:
        qs = qs.filter(topic__in=data.topics)
    return list(qs[: data.limit or 10**9])


def gold_split(data: SourceInput, rows: list) -> tuple[list, list]:
    """``(gold rows, worker rows)`` of ``rows`` by the source's gold share; a source without a ``gold_label`` takes
    none. Refused (``gold_n``) when it leaves the workers no row, unless the share is "all"."""
    share = data.gold if data.source.gold_label else GoldShare()
    gold, rest = share.split(rows)
    if gold and not rest and share.mode != "all":
        raise FieldError(
            "gold_n", f"{share.describe()}: that is all {len(rows)} row(s); leave some rows for the workers"
        )
    return gold, rest


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
    sentences = [
        Sentence(
            topic=topics[normalise(r.topic).lower()],
            text=r.text,
            stance=r.stance,
            source=r.source,
            external_id=r.external_id,
            metadata=r.metadata,
            content_hash=h,
        )
        for r, h in zip(records, hashes)
    ]
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
        notes.append(
            f"{len(sentences)} sentence(s) of {len(topics)} topic(s): {', '.join(topics[:10])}"
            + (" ..." if len(topics) > 10 else "")
        )
    gold_rows, worker_rows = gold_split(data, sentences)
    gold = services.gold_from_sentences(project, gold_rows, field="gold_mode")
    if check is not None:
        check(project, sentences)
    if gold_rows:
        notes.append(
            f"gold share: {data.gold.describe()} (expected answer: {data.source.gold_label}): "
            f"{len(gold_rows)} gold item(s)"
        )
    expected = {id(sentence): g["expected"] for sentence, g in zip(gold_rows, gold)}
    rows = []
    for n, sentence in enumerate(sentences[:PREVIEW_ROWS]):
        row = [str(n + 1), sentence.topic.name if sentence.topic else "", sentence.stance, sentence.text]
        if gold_rows:
            row.append(f"gold: {tt.answer_text(expected[id(sentence)])}" if id(sentence) in expected else "")
        rows.append(row)
    columns = ["#", "topic", "stance", "sentence"] + (["gold"] if gold_rows else [])
    return Preview(items=len(worker_rows), gold=len(gold_rows), columns=columns, rows=rows, notes=notes)


def sentences_of_file(data: SourceInput, records: list | None = None) -> list[Sentence]:
    """The corpus sentences of an imported file (its ``records``, read again when not given), in file order."""
    records = parse_file(data) if records is None else records
    hashes = [sentence_hash(r.topic, r.text) for r in records]
    by_hash = {s.content_hash: s for s in Sentence.objects.select_related("topic").filter(content_hash__in=hashes)}
    return [by_hash[h] for h in hashes if h in by_hash]


def write_corpus(data: SourceInput, progress) -> dict:
    """Import the uploaded corpus file (the corpus importers: all or nothing, a sentence already stored is reused;
    a Kialo export: its tree and its claims' sentences, :func:`kialo_file`, in one transaction)."""
    if data.source.name == KIALO.name:
        summary = save(kialo_file(data), progress=progress)
    else:
        summary = import_file(data.path, CORPUS_FORMATS[data.source.name], progress=progress)
    return {"sentences_created": summary.created["sentences"], "topics_created": summary.created["topics"]}


def write(project, data: SourceInput, progress) -> dict:
    """Import the file into the corpus (or read the selection), then the items and gold items of ``project``."""
    if data.source.is_upload:
        records = parse_file(data)
        gold_split(data, records)  # a share refused before anything is written
        corpus = write_corpus(data, progress)
        sentences = sentences_of_file(data, records)
    else:
        sentences, corpus = selection(data), {}
        if not sentences:
            raise FieldError("topics", "no corpus sentence matches; import some first or choose other topics")
    gold_rows, rows = gold_split(data, sentences)
    progress(0, len(sentences), "building items")
    gold = services.gold_from_sentences(project, gold_rows, field="gold_mode")
    services.add_items_from_rows(project, rows, gold=gold)
    progress(len(sentences), len(sentences), "building items")
    return {"items": len(rows), "gold": len(gold), **corpus}
