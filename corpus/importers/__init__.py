"""Corpus importers: all-or-nothing, idempotent.

A small pipeline in the manner of doccano's ``data_import``: a reader (:mod:`.readers`, strict UTF-8) hands
text to the parser of the format (:mod:`.parsers`), which validates every row and raises
:class:`ImportFailed` naming ``file:line`` on the first problem; only then does the writer (:mod:`.writers`)
save everything in one transaction, skipping rows whose content hash is already stored.

    import_file("ukp/abortion.tsv", "ukp-tsv")
    import_documents("crawl/cloning/", "Cloning")
"""
from __future__ import annotations

from argora.progress import null_progress

from .base import ImportFailed, ImportSummary
from .documents import parse_documents
from .parsers import PARSERS
from .readers import read_text
from .writers import save

__all__ = ["FORMATS", "ImportFailed", "ImportSummary", "import_documents", "import_file"]

FORMATS = ("ukp-tsv", "jsonl", "kialo", "facts-jsonl", "facts-csv")


def import_file(path, fmt: str, *, topic: str | None = None, source: str | None = None,
                progress=null_progress) -> ImportSummary:
    """Import one corpus file of format ``fmt`` (one of :data:`FORMATS`).

    ``topic``: for ``kialo`` the topic the tree is linked to; for the other formats the topic of rows that
    name none. ``source``: stored as the rows' source where the file gives none (``ukp-tsv``: default
    ``"ukp"``; ``kialo``: default the file path). Raises :class:`ImportFailed` (and writes nothing) when any
    row is invalid; re-importing the same file adds nothing.
    """
    if fmt not in PARSERS:
        raise ImportFailed(path, 0, f'unknown format "{fmt}" (expected one of {", ".join(FORMATS)})')
    text = read_text(path)
    parsed = PARSERS[fmt](path, text, topic=topic, source=source, progress=progress)
    return save(parsed, progress=progress)


def import_documents(directory, topic: str, *, progress=null_progress, relevance_filter: bool = True) -> ImportSummary:
    """Import every ``*.txt`` file of ``directory`` as a Document of ``topic`` plus its topic-relevant sentences
    (stance none). ``summary.dropped`` says how many fragments were too short and how many sentences the
    relevance filter removed."""
    parsed = parse_documents(directory, topic, progress=progress, relevance_filter=relevance_filter)
    return save(parsed, progress=progress)
