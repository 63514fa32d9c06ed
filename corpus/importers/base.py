"""The pieces every importer shares: the error a person can act on, the summary, and the records
that parsers produce and the writer saves."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from argora.errors import FileLineError

CREATED_KEYS = ("topics", "sentences", "debate_trees", "debate_nodes", "facts", "documents")


class ImportFailed(FileLineError):
    """A file that cannot be imported. ``str(e) == f"{file}:{line}: {reason}"``.

    ``line`` is 1-based; 0 means the problem is not on a particular line (missing file, empty folder).
    """


@dataclass
class ImportSummary:
    """What an import did: rows created per table, rows skipped because they were already there (or
    repeated inside the import), rows a filter dropped (documents import only), and stored sentences whose
    metadata got the file's new keys (``updated``; formats with :attr:`ParsedFile.merge_metadata` only)."""

    created: dict[str, int] = field(default_factory=lambda: dict.fromkeys(CREATED_KEYS, 0))
    skipped: int = 0
    dropped: dict[str, int] = field(default_factory=dict)
    updated: int = 0

    def as_dict(self) -> dict:
        out = {"created": dict(self.created), "skipped": self.skipped, "dropped": dict(self.dropped)}
        if self.updated:  # only the formats that merge metadata can update; the others keep the old shape
            out["updated"] = self.updated
        return out

    def __str__(self) -> str:
        made = ", ".join(f"{n} {key.replace('_', ' ')}" for key, n in self.created.items() if n) or "nothing"
        text = f"created {made}; skipped {self.skipped} already present"
        if self.updated:
            text += f" ({self.updated} of them got this corpus's metadata)"
        if self.dropped:
            text += "; dropped " + ", ".join(f"{n} {key.replace('_', ' ')}" for key, n in self.dropped.items())
        return text


@dataclass
class SentenceRecord:
    line: int
    topic: str
    text: str
    stance: str
    source: str = ""
    external_id: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)
    position: int | None = None
    document_key: str | None = None  # content hash of the document it came from (documents import)


@dataclass
class FactRecord:
    line: int
    topic: str
    text: str
    origin: str = "seed"
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass
class NodeRecord:
    line: int
    path: str  # "1.2.3" (no trailing dot)
    stance: str  # pro / con / none (root)
    text: str
    reference_path: str = ""

    @property
    def depth(self) -> int:
        return self.path.count(".")

    @property
    def parent_path(self) -> str | None:
        return self.path.rsplit(".", 1)[0] if "." in self.path else None


@dataclass
class TreeRecord:
    line: int
    title: str
    content_hash: str
    source: str
    topic: str | None
    nodes: list[NodeRecord]
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass
class DocumentRecord:
    line: int
    key: str  # content hash
    title: str
    source: str
    text: str
    topic: str


@dataclass
class ParsedFile:
    """Everything a file holds, validated, ready for the writer."""

    sentences: list[SentenceRecord] = field(default_factory=list)
    facts: list[FactRecord] = field(default_factory=list)
    trees: list[TreeRecord] = field(default_factory=list)
    documents: list[DocumentRecord] = field(default_factory=list)
    skipped: int = 0  # found duplicate / already present before writing
    dropped: dict[str, int] = field(default_factory=dict)
    topics: list[str] = field(default_factory=list)  # topics to ensure even without rows (documents import)
    # A sentence already stored gets the metadata keys it lacks from this file (never a stored value changed):
    # corpora that keep their data under their own key (``argq``, ``argkp``, ``argsme``) add to one another.
    merge_metadata: bool = False

    @property
    def rows(self) -> int:
        return len(self.sentences) + len(self.facts) + len(self.documents) + sum(1 + len(t.nodes) for t in self.trees)
