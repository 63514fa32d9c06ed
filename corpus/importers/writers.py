"""The writer: validated records -> rows, all in ONE transaction.

Rows whose ``content_hash`` is already stored (or repeated earlier in the same import) are skipped and
counted, which makes every import idempotent. Inserts go through ``bulk_create`` in batches, with a
progress report after each batch.
"""
from __future__ import annotations

from django.db import transaction
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

from .base import ImportSummary, ParsedFile

BATCH_SIZE = 500


def _chunks(items: list, size: int = BATCH_SIZE):
    for start in range(0, len(items), size):
        yield items[start:start + size]


def _existing(model, hashes: list[str]) -> set[str]:
    found: set[str] = set()
    for chunk in _chunks(sorted(set(hashes))):
        found.update(model.objects.filter(content_hash__in=chunk).values_list("content_hash", flat=True))
    return found


class _Writer:
    def __init__(self, parsed: ParsedFile, progress):
        self.parsed = parsed
        self.progress = progress
        self.summary = ImportSummary(skipped=parsed.skipped, dropped=dict(parsed.dropped))
        self.total = max(parsed.rows, 1)
        self.done = 0
        self.topics: dict[str, Topic] = {}

    def tick(self, n: int) -> None:
        if n <= 0:
            return  # a "done = 0" report would read as no progress at all
        self.done += n
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
        by_key: dict[str, Document] = {d.content_hash: d for d in Document.objects.filter(
            content_hash__in=[r.key for r in records])} if records else {}
        new = []
        for record in records:
            if record.key in by_key:
                self.summary.skipped += 1
                continue
            doc = Document(topic=self.topic(record.topic), title=record.title[:500], source=record.source,
                           text=record.text, content_hash=record.key)
            by_key[record.key] = doc
            new.append(doc)
        for chunk in _chunks(new):
            Document.objects.bulk_create(chunk)
            self.tick(len(chunk))
        self.summary.created["documents"] += len(new)
        self.tick(len(records) - len(new))
        return by_key

    def sentences(self, documents: dict[str, Document]) -> None:
        records = self.parsed.sentences
        hashes = [sentence_hash(r.topic, r.text) for r in records]
        present = _existing(Sentence, hashes)
        new = []
        for record, digest in zip(records, hashes):
            if digest in present:
                self.summary.skipped += 1
                continue
            present.add(digest)
            document = documents.get(record.document_key) if record.document_key else None
            new.append(Sentence(topic=self.topic(record.topic), text=record.text, stance=record.stance,
                                source=record.source, external_id=record.external_id, document=document,
                                position=record.position, content_hash=digest, metadata=record.metadata))
        self.tick(len(records) - len(new))
        for chunk in _chunks(new):
            Sentence.objects.bulk_create(chunk)
            self.tick(len(chunk))
        self.summary.created["sentences"] += len(new)

    def facts(self) -> None:
        records = self.parsed.facts
        hashes = [fact_hash(r.topic, r.text) for r in records]
        present = _existing(FactVariable, hashes)
        new = []
        for record, digest in zip(records, hashes):
            if digest in present:
                self.summary.skipped += 1
                continue
            present.add(digest)
            new.append(FactVariable(topic=self.topic(record.topic), text=record.text, origin=record.origin,
                                    content_hash=digest, metadata=record.metadata))
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
                title=record.title, topic=self.topic(record.topic) if record.topic else None, source=record.source,
                content_hash=record.content_hash, metadata=record.metadata)
            self.summary.created["debate_trees"] += 1
            self.tick(1)
            saved: dict[str, DebateNode] = {}
            # Parents before children: one bulk insert per depth, so every parent has its primary key.
            for depth in sorted({n.depth for n in record.nodes}):
                level = [DebateNode(tree=tree, parent=saved[n.parent_path] if n.parent_path else None, path=n.path,
                                    depth=n.depth, stance=n.stance, text=n.text, reference_path=n.reference_path)
                         for n in record.nodes if n.depth == depth]
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


def save(parsed: ParsedFile, *, progress) -> ImportSummary:
    """Write everything ``parsed`` holds in one transaction; on any error nothing is written."""
    return _Writer(parsed, progress).write()
