"""The writer: validated records -> rows, all in ONE transaction.

Rows whose ``content_hash`` is already stored (or repeated earlier in the same import) are skipped and
counted, which makes every import idempotent. Inserts go through ``bulk_create`` in batches, with a
progress report after each batch.

:func:`save` writes a whole :class:`ParsedFile`; :func:`save_stream` writes records as a parser yields them, in
batches of :data:`STREAM_BATCH`, inside the same one transaction (a bad line late in the file still rolls back
everything, and the hashes of earlier batches are seen by later ones through the open transaction, so nothing is
held but the current batch). The streamed sentences are inserted with one prepared ``INSERT`` run per batch
(:func:`_insert_sentences`: every column, with the values ``bulk_create`` would write) instead of ``bulk_create``,
whose per-row SQL compilation was 2/3 of a 1 M-row import's time.

With :attr:`ParsedFile.merge_metadata` (the public corpora that keep their data under their own key), a sentence
already stored gets the metadata keys it lacks from the file; a stored value is never changed.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from django.db import connection, transaction
from django.utils import timezone
from django.utils.text import slugify

from corpus.hashing import fact_hash, sentence_hash
from corpus.models import (
    DebateNode,
    DebateTree,
    Document,
    FactVariable,
    Sentence,
    Topic,
)
from corpus.ukp_topics import default_synonyms

from .base import FactRecord, ImportSummary, ParsedFile, SentenceRecord

BATCH_SIZE = 500
STREAM_BATCH = 5000
# SQLite's page cache while a stream is written (KiB, SQLite's negative form): the unique content-hash index takes
# random inserts, and the default 2 MB cache spills its pages to the WAL over and over (a fifth of a 1 M-row
# import's time). Bounded; the connection's own value comes back afterwards.
SQLITE_STREAM_CACHE_KIB = 65536
# The columns a streamed sentence fills from its record; every other column of the model gets its field's default
# (``created_at``: now), so a field added to Sentence later is written as ``bulk_create`` would write it.
SENTENCE_COLUMNS = ("topic", "text", "stance", "source", "external_id", "position", "content_hash", "metadata")


def _chunks(items: list, size: int = BATCH_SIZE):
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _existing(model, hashes: list[str]) -> set[str]:
    found: set[str] = set()
    for chunk in _chunks(sorted(set(hashes))):
        found.update(model.objects.filter(content_hash__in=chunk).values_list("content_hash", flat=True))
    return found


def _sentence_insert() -> tuple[str, tuple]:
    """``(INSERT statement, values of the columns after SENTENCE_COLUMNS)``: the statement writes
    :data:`SENTENCE_COLUMNS` then every other concrete column, which takes its field's default (prepared once)."""
    fields = {f.name: f for f in Sentence._meta.concrete_fields if not f.primary_key}
    rest = [f for name, f in fields.items() if name not in SENTENCE_COLUMNS]
    now = timezone.now()
    defaults = tuple(
        f.get_db_prep_save(
            now if getattr(f, "auto_now_add", False) or getattr(f, "auto_now", False) else f.get_default(), connection
        )
        for f in rest
    )
    columns = [fields[name] for name in SENTENCE_COLUMNS] + rest
    quote = connection.ops.quote_name
    sql = (
        f"INSERT INTO {quote(Sentence._meta.db_table)} ({', '.join(quote(str(f.column)) for f in columns)}) "
        f"VALUES ({', '.join(['%s'] * len(columns))})"
    )
    return sql, defaults


def _insert_sentences(sql: str, rows: list[tuple]) -> None:
    """One prepared ``INSERT`` run for many rows (values prepared for the database, in the statement's order)."""
    with connection.cursor() as cursor:
        cursor.executemany(sql, rows)


def _merged(stored: dict, new: dict) -> dict | None:
    """``stored`` plus the keys of ``new`` it lacks; None when it lacks none."""
    missing = {k: v for k, v in new.items() if k not in stored}
    return {**stored, **missing} if missing else None


class _Writer:
    def __init__(self, parsed: ParsedFile, progress, *, fast: bool = False, total: int | None = None):
        self.parsed = parsed
        self.progress = progress
        self.fast = fast
        self.summary = ImportSummary(skipped=parsed.skipped, dropped=dict(parsed.dropped))
        self.total = max(parsed.rows if total is None else total, 1)
        self.done = 0
        self.topics: dict[str, Topic] = {}

    def tick(self, n: int) -> None:
        if n <= 0:
            return  # a "done = 0" report would read as no progress at all
        self.done += n
        self.total = max(self.total, self.done)
        self.progress(min(self.done, self.total), self.total, "writing")

    # -- topics ------------------------------------------------------------------------------------
    def topic(self, name: str) -> Topic:
        key = name.lower()
        if key not in self.topics:
            topic = Topic.objects.filter(name__iexact=name).order_by("id").first()
            if topic is None:
                topic = Topic.objects.create(name=name, slug=self._free_slug(name), synonyms=default_synonyms(name))
                self.summary.created["topics"] += 1
            self.topics[key] = topic
        return self.topics[key]

    @staticmethod
    def _free_slug(name: str) -> str:
        base = slugify(name)[:190] or "topic"
        slug, n = base, 1
        while Topic.objects.filter(slug=slug).exists():
            n += 1
            slug = f"{base}-{n}"
        return slug

    # -- rows --------------------------------------------------------------------------------------
    def documents(self) -> dict[str, Document]:
        records = self.parsed.documents
        by_key: dict[str, Document] = (
            {d.content_hash: d for d in Document.objects.filter(content_hash__in=[r.key for r in records])}
            if records
            else {}
        )
        new = []
        for record in records:
            if record.key in by_key:
                self.summary.skipped += 1
                continue
            doc = Document(
                topic=self.topic(record.topic),
                title=record.title[:500],
                source=record.source,
                text=record.text,
                content_hash=record.key,
            )
            by_key[record.key] = doc
            new.append(doc)
        for chunk in _chunks(new):
            Document.objects.bulk_create(chunk)
            self.tick(len(chunk))
        self.summary.created["documents"] += len(new)
        self.tick(len(records) - len(new))
        return by_key

    def sentences(self, documents: dict[str, Document], records: list[SentenceRecord] | None = None) -> None:
        records = self.parsed.sentences if records is None else records
        hashes = [sentence_hash(r.topic, r.text) for r in records]
        present = _existing(Sentence, hashes)
        stored = present.copy()
        new: list = []
        merge: dict = {}
        for record, digest in zip(records, hashes):
            if digest in present:
                self.summary.skipped += 1
                if self.parsed.merge_metadata and digest in stored and record.metadata:
                    merge.setdefault(digest, {}).update(record.metadata)
                continue
            present.add(digest)
            new.append((record, digest))
        self.tick(len(records) - len(new))
        if merge:
            self.merge_metadata(merge)
        if self.fast:
            sql, defaults = _sentence_insert()
            metadata = Sentence._meta.get_field("metadata")
            empty = metadata.get_db_prep_save({}, connection)
            rows = [
                (
                    self.topic(r.topic).pk,
                    r.text,
                    r.stance,
                    r.source,
                    r.external_id,
                    r.position,
                    digest,
                    metadata.get_db_prep_save(r.metadata, connection) if r.metadata else empty,
                )
                + defaults
                for r, digest in new
            ]
            for chunk in _chunks(rows):
                _insert_sentences(sql, chunk)
                self.tick(len(chunk))
        else:
            objs = [
                Sentence(
                    topic=self.topic(r.topic),
                    text=r.text,
                    stance=r.stance,
                    source=r.source,
                    external_id=r.external_id,
                    position=r.position,
                    content_hash=digest,
                    metadata=r.metadata,
                    document=documents.get(r.document_key) if r.document_key else None,
                )
                for r, digest in new
            ]
            for chunk in _chunks(objs):
                Sentence.objects.bulk_create(chunk)
                self.tick(len(chunk))
        self.summary.created["sentences"] += len(new)

    def merge_metadata(self, new: dict[str, dict]) -> None:
        changed = []
        for chunk in _chunks(sorted(new)):
            for sentence in Sentence.objects.filter(content_hash__in=chunk).only("id", "content_hash", "metadata"):
                merged = _merged(
                    sentence.metadata if isinstance(sentence.metadata, dict) else {}, new[sentence.content_hash]
                )
                if merged is not None:
                    sentence.metadata = merged
                    changed.append(sentence)
        Sentence.objects.bulk_update(changed, ["metadata"], batch_size=BATCH_SIZE)
        self.summary.updated += len(changed)

    def facts(self, records: list[FactRecord] | None = None) -> None:
        records = self.parsed.facts if records is None else records
        hashes = [fact_hash(r.topic, r.text) for r in records]
        present = _existing(FactVariable, hashes)
        new = []
        for record, digest in zip(records, hashes):
            if digest in present:
                self.summary.skipped += 1
                continue
            present.add(digest)
            new.append(
                FactVariable(
                    topic=self.topic(record.topic),
                    text=record.text,
                    origin=record.origin,
                    content_hash=digest,
                    metadata=record.metadata,
                )
            )
        self.tick(len(records) - len(new))
        for chunk in _chunks(new):
            FactVariable.objects.bulk_create(chunk)
            self.tick(len(chunk))
        self.summary.created["facts"] += len(new)

    def trees(self) -> None:
        for record in self.parsed.trees:
            existing = DebateTree.objects.filter(content_hash=record.content_hash).first()
            if existing is not None:
                self.summary.skipped += 1 + existing.nodes.count()
                self.tick(1 + len(record.nodes))
                continue
            tree = DebateTree.objects.create(
                title=record.title,
                topic=self.topic(record.topic) if record.topic else None,
                source=record.source,
                content_hash=record.content_hash,
                metadata=record.metadata,
            )
            self.summary.created["debate_trees"] += 1
            self.tick(1)
            saved: dict[str, DebateNode] = {}
            # Parents before children: one bulk insert per depth, so every parent has its primary key.
            for depth in sorted({n.depth for n in record.nodes}):
                level = [
                    DebateNode(
                        tree=tree,
                        parent=saved[n.parent_path] if n.parent_path else None,
                        path=n.path,
                        depth=n.depth,
                        stance=n.stance,
                        text=n.text,
                        reference_path=n.reference_path,
                    )
                    for n in record.nodes
                    if n.depth == depth
                ]
                for chunk in _chunks(level):
                    DebateNode.objects.bulk_create(chunk)
                    self.tick(len(chunk))
                for node in level:
                    assert node.pk is not None, "bulk_create must return primary keys (PostgreSQL, SQLite >= 3.35)"
                    saved[node.path] = node
            self.summary.created["debate_nodes"] += len(record.nodes)

    def write(self) -> ImportSummary:
        with transaction.atomic():
            for name in self.parsed.topics:
                self.topic(name)
            documents = self.documents()
            self.sentences(documents)
            self.facts()
            self.trees()
        self.progress(self.total, self.total, "done")
        return self.summary

    def write_stream(self, records: Iterable[SentenceRecord | FactRecord]) -> ImportSummary:
        def flush(batch: list) -> None:
            sentences = [r for r in batch if isinstance(r, SentenceRecord)]
            if sentences:
                self.sentences({}, sentences)
            facts = [r for r in batch if isinstance(r, FactRecord)]
            if facts:
                self.facts(facts)

        with transaction.atomic():
            batch: list = []
            for record in records:
                batch.append(record)
                if len(batch) >= STREAM_BATCH:
                    flush(batch)
                    batch = []
            flush(batch)
        if self.done:
            self.progress(self.done, self.done, "writing")
        self.total = max(self.done, 1)
        self.progress(self.total, self.total, "done")
        return self.summary


def save(parsed: ParsedFile, *, progress) -> ImportSummary:
    """Write everything ``parsed`` holds in one transaction; on any error nothing is written."""
    return _Writer(parsed, progress).write()


@contextmanager
def _stream_cache() -> Iterator[None]:
    if connection.vendor != "sqlite":
        yield
        return
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA cache_size")
        before = int(cursor.fetchone()[0])
        cursor.execute(f"PRAGMA cache_size = {-SQLITE_STREAM_CACHE_KIB}")
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute(f"PRAGMA cache_size = {before}")


def save_stream(
    records: Iterable[SentenceRecord | FactRecord], *, progress, total: int = 0, merge_metadata: bool = False
) -> ImportSummary:
    """Write the sentences and facts ``records`` yields, in batches, in ONE transaction: an error raised by the
    iterator (a bad line) or by the database rolls back every batch written before it. ``total``: the expected
    number of records (progress only)."""
    with _stream_cache():
        return _Writer(ParsedFile(merge_metadata=merge_metadata), progress, fast=True, total=total).write_stream(
            records
        )
