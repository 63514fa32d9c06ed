"""Corpus importers: all-or-nothing, idempotent.

A small pipeline in the manner of doccano's ``data_import``: a reader (:mod:`.readers`, strict UTF-8) hands
text to the parser of the format (:mod:`.parsers`, :mod:`.public`), which validates every row and raises
:class:`ImportFailed` naming ``file:line`` on the first problem; the writer (:mod:`.writers`) saves everything in
one transaction, skipping rows whose content hash is already stored.

The line-oriented formats (:data:`.parsers.STREAMS`: ``ukp-tsv``, ``jsonl``, ``facts-jsonl``, ``facts-csv``,
``ibm-argq``) are streamed: the file is read line by line and written in batches inside that one transaction, so
memory stays bounded whatever the file's size (a 1 M-row JSONL file), and a bad line anywhere still writes nothing.
The others (``kialo``, ``ibm-argkp``, ``argsme-json``) are parsed whole first, then written.

    import_file("ukp/abortion.tsv", "ukp-tsv")
    import_file("arg_quality_rank_30k.csv", "ibm-argq")
    import_documents("crawl/cloning/", "Cloning")
"""

from __future__ import annotations

import glob
import time
from dataclasses import dataclass, field
from pathlib import Path

from argora.progress import null_progress

from .base import ImportFailed, ImportSummary
from .documents import parse_documents
from .parsers import PARSERS, STREAMS
from .public import companion_of
from .readers import count_rows, iter_lines, read_text
from .writers import save, save_stream

__all__ = [
    "FORMATS",
    "BatchSummary",
    "ImportFailed",
    "ImportSummary",
    "expand_paths",
    "import_documents",
    "import_file",
    "import_paths",
]

FORMATS = ("ukp-tsv", "jsonl", "kialo", "facts-jsonl", "facts-csv", "ibm-argq", "ibm-argkp", "argsme-json")
# The files a folder contributes, per format (a file named on the command line is taken whatever its name).
EXTENSIONS = {
    "ukp-tsv": (".tsv",),
    "jsonl": (".jsonl",),
    "kialo": (".txt",),
    "facts-jsonl": (".jsonl",),
    "facts-csv": (".csv",),
    "ibm-argq": (".csv",),
    "ibm-argkp": (".csv",),
    "argsme-json": (".json",),
}
# Formats whose files may come with companions that are read with their main file, not on their own
# (ArgKP's key_points_<set>.csv and labels_<set>.csv beside arguments_<set>.csv).
COMPANIONS = {"ibm-argkp": companion_of}
# Formats that keep their data under their own metadata key and add it to sentences already stored.
MERGE_METADATA = {"ibm-argq"}


def import_file(
    path, fmt: str, *, topic: str | None = None, source: str | None = None, progress=null_progress
) -> ImportSummary:
    """Import one corpus file of format ``fmt`` (one of :data:`FORMATS`).

    ``topic``: for ``kialo`` the topic the tree is linked to; for the other formats the topic of rows that
    name none. ``source``: stored as the rows' source where the file gives none (``ukp-tsv``: default
    ``"ukp"``; ``kialo``: default the file path). Raises :class:`ImportFailed` (and writes nothing) when any
    row is invalid; re-importing the same file adds nothing.
    """
    if fmt not in PARSERS:
        raise ImportFailed(path, 0, f'unknown format "{fmt}" (expected one of {", ".join(FORMATS)})')
    if fmt in STREAMS:
        total = count_rows(path)
        records = STREAMS[fmt](path, iter_lines(path), topic=topic, source=source, progress=progress, total=total)
        return save_stream(records, progress=progress, total=total, merge_metadata=fmt in MERGE_METADATA)
    text = read_text(path)
    parsed = PARSERS[fmt](path, text, topic=topic, source=source, progress=progress)
    return save(parsed, progress=progress)


def import_documents(directory, topic: str, *, progress=null_progress, relevance_filter: bool = True) -> ImportSummary:
    """Import every ``*.txt`` file of ``directory`` as a Document of ``topic`` plus its topic-relevant sentences
    (stance none). ``summary.dropped`` says how many fragments were too short and how many sentences the
    relevance filter removed."""
    parsed = parse_documents(directory, topic, progress=progress, relevance_filter=relevance_filter)
    return save(parsed, progress=progress)


@dataclass
class BatchSummary:
    """What importing many files did: per file its summary or its refusal (``file:line: reason``)."""

    files: list[tuple[str, ImportSummary]] = field(default_factory=list)
    refused: list[ImportFailed] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def created(self) -> dict[str, int]:
        total: dict[str, int] = {}
        for _name, summary in self.files:
            for key, n in summary.created.items():
                total[key] = total.get(key, 0) + n
        return total

    @property
    def skipped(self) -> int:
        return sum(summary.skipped for _name, summary in self.files)

    @property
    def unchanged(self) -> int:
        """Files that were imported before: nothing of them was new."""
        return sum(1 for _name, summary in self.files if not any(summary.created.values()) and not summary.updated)

    @property
    def updated(self) -> int:
        return sum(summary.updated for _name, summary in self.files)


def expand_paths(paths, fmt: str) -> list[Path]:
    """Files for ``paths``: a file as it is, a folder's files with the format's extension (:data:`EXTENSIONS`,
    not recursive, hidden files left out), a glob pattern (``**`` recursive) its matching files; sorted, each once;
    a companion file (:data:`COMPANIONS`) left out when its main file is in the list (it is read with it).
    A path that names nothing raises :class:`ImportFailed` (line 0)."""
    out: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found = sorted(
                p
                for p in path.iterdir()
                if p.is_file() and not p.name.startswith(".") and p.suffix.lower() in EXTENSIONS.get(fmt, ())
            )
            if not found:
                raise ImportFailed(
                    path, 0, f"folder has no {' or '.join(EXTENSIONS.get(fmt, ()))} files for --format {fmt}"
                )
        elif path.exists():
            found = [path]
        elif glob.has_magic(str(raw)):
            found = sorted(Path(p) for p in glob.glob(str(raw), recursive=True) if Path(p).is_file())
            if not found:
                raise ImportFailed(raw, 0, "no file matches this pattern")
        else:
            raise ImportFailed(path, 0, "file not found")
        out.extend(found)
    out = list(dict.fromkeys(out))
    main_of = COMPANIONS.get(fmt)
    if main_of is not None:  # a companion goes with its main file when that is imported too
        listed = set(out)
        out = [p for p in out if main_of(p) not in listed]
    return out


def import_paths(
    paths, fmt: str, *, topic: str | None = None, source: str | None = None, progress=null_progress
) -> BatchSummary:
    """Import every file of ``paths`` (files, folders, glob patterns: :func:`expand_paths`) in one process; each
    file is all-or-nothing on its own, a refused file is reported and the others still import. ``progress``
    counts files."""
    files = expand_paths(paths, fmt)
    batch = BatchSummary()
    started = time.perf_counter()
    for n, path in enumerate(files):
        progress(n, len(files), path.name)
        try:
            batch.files.append((str(path), import_file(path, fmt, topic=topic, source=source)))
        except ImportFailed as exc:
            batch.refused.append(exc)
    progress(len(files), len(files), "done")
    batch.seconds = time.perf_counter() - started
    return batch
