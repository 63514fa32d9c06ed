"""Parsers: text -> validated records, one function per format. Nothing here touches the database.

Every parser checks everything it can without the database and raises :class:`ImportFailed` naming the
file and line of the first problem.
"""
from __future__ import annotations

import csv
import io
import re
from pathlib import Path
from typing import Callable

from argora.jsonl import read_jsonl
from corpus.hashing import content_hash, normalise

from .base import (
    FactRecord,
    ImportFailed,
    NodeRecord,
    ParsedFile,
    SentenceRecord,
    TreeRecord,
)

PROGRESS_EVERY = 500

# Field limits of corpus.models (kept in one place so a too-long value fails with its line, not in the DB).
MAX_TOPIC = 200
MAX_SOURCE = 1000
MAX_EXTERNAL_ID = 200
MAX_TITLE = 500
MAX_PATH = 200
MAX_TEXT = 20_000  # characters of one sentence, fact or debate node (the longest UKP sentence has ~1,100)

STANCES = {
    "pro": "pro", "con": "con", "none": "none",
    "argument_for": "pro", "argument_against": "con", "noargument": "none",
}
UKP_ANNOTATIONS = {"Argument_for": "pro", "Argument_against": "con", "NoArgument": "none"}
FACT_ORIGINS = ("seed", "expert", "proposed")


def _clean_str(path, line, value, name, *, required=True, limit=None) -> str:
    if value is None:
        value = ""
    if not isinstance(value, str):
        raise ImportFailed(path, line, f'"{name}" must be a string, got {type(value).__name__}')
    value = value.strip()
    if required and not value:
        raise ImportFailed(path, line, f'"{name}" is empty')
    if limit and len(value) > limit:
        raise ImportFailed(path, line, f'"{name}" is longer than {limit} characters')
    return value


def _topic(path, line, value, default: str | None) -> str:
    if (value is None or (isinstance(value, str) and not value.strip())) and default:
        value = default
    topic = _clean_str(path, line, value, "topic", limit=MAX_TOPIC)
    return normalise(topic)


def _tick(progress, done: int, total: int, what: str) -> None:
    if progress is not None and done % PROGRESS_EVERY == 0:
        progress(done, total, what)


# --- UKP Sentential Argument Mining Corpus (TSV) -----------------------------------------------------

UKP_COLUMNS = ("topic", "retrievedUrl", "archivedUrl", "sentenceHash", "sentence", "annotation", "set")


def _csv_rows(path, text: str, dialect: str, required: tuple[str, ...], optional: tuple[str, ...] = ()):
    """``(line, row dict)`` for a CSV/TSV text; checks the header and the column count of every row."""
    reader = csv.reader(io.StringIO(text, newline=""), dialect=dialect)
    try:
        header = next(reader)
    except StopIteration:
        raise ImportFailed(path, 1, f"empty file: expected a header with the columns {', '.join(required)}") from None
    except csv.Error as exc:
        raise ImportFailed(path, 1, f"unreadable header: {exc}") from None
    header = [h.strip() for h in header]
    for column in required:
        if column not in header:
            raise ImportFailed(path, 1, f'missing column "{column}" (header has: {", ".join(header) or "nothing"})')
    seen = set()
    for column in header:
        if column in seen and column in required + optional:
            raise ImportFailed(path, 1, f'column "{column}" appears twice')
        seen.add(column)
    last_end = reader.line_num
    while True:
        try:
            cells = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise ImportFailed(path, last_end + 1, f"malformed row: {exc}") from None
        line = last_end + 1
        last_end = reader.line_num
        if not cells or all(not c.strip() for c in cells):
            continue  # blank line
        if len(cells) != len(header):
            raise ImportFailed(path, line, f"expected {len(header)} columns, found {len(cells)}")
        yield line, dict(zip(header, cells))


def _count_lines(text: str) -> int:
    return text.count("\n") + 1


def parse_ukp_tsv(path, text: str, *, topic: str | None = None, source: str | None = None,
                  progress=None) -> ParsedFile:
    parsed = ParsedFile()
    total = _count_lines(text)
    source = _clean_str(path, 1, source or "ukp", "source", limit=MAX_SOURCE)
    for n, (line, row) in enumerate(_csv_rows(path, text, "excel-tab", UKP_COLUMNS), start=1):
        label = row["annotation"].strip()
        if label not in UKP_ANNOTATIONS:
            raise ImportFailed(path, line, f'unknown annotation "{label}" '
                                           f'(expected one of {", ".join(UKP_ANNOTATIONS)})')
        parsed.sentences.append(SentenceRecord(
            line=line,
            topic=_topic(path, line, row["topic"], topic),
            text=_clean_str(path, line, row["sentence"], "sentence", limit=MAX_TEXT),
            stance=UKP_ANNOTATIONS[label],
            source=source,
            external_id=_clean_str(path, line, row["sentenceHash"], "sentenceHash", required=False,
                                   limit=MAX_EXTERNAL_ID),
            metadata={"retrievedUrl": row["retrievedUrl"].strip(), "archivedUrl": row["archivedUrl"].strip(),
                      "set": row["set"].strip()},
        ))
        _tick(progress, n, total, "parsing")
    return parsed


# --- JSONL arguments ---------------------------------------------------------------------------------

def _stance(path, line, value) -> str:
    if not isinstance(value, str):
        raise ImportFailed(path, line, f'"stance" must be a string, got {type(value).__name__}')
    stance = STANCES.get(value.strip().lower())
    if stance is None:
        raise ImportFailed(path, line, f'unknown stance "{value}" (expected pro, con, none, '
                                       f'Argument_for, Argument_against or NoArgument)')
    return stance


def parse_jsonl(path, text: str, *, topic: str | None = None, source: str | None = None,
                progress=None) -> ParsedFile:
    """Arguments, one JSON object a line: ``topic``, ``sentence``, ``stance`` required; ``id``, ``metadata``,
    ``source`` optional; other keys (``hash``, ``split``...) ignored."""
    parsed = ParsedFile()
    total = _count_lines(text)
    for n, (line, obj) in enumerate(read_jsonl(path, error=ImportFailed, text=text), start=1):
        for key in ("topic", "sentence", "stance"):
            if key not in obj and not (key == "topic" and topic):
                raise ImportFailed(path, line, f'missing key "{key}"')
        external_id = obj.get("id", "")
        if external_id is None:
            external_id = ""
        if isinstance(external_id, bool) or not isinstance(external_id, (str, int)):
            raise ImportFailed(path, line, f'"id" must be a string or an integer, got {type(external_id).__name__}')
        metadata = obj.get("metadata", {})
        if metadata is None:
            metadata = {}
        if not isinstance(metadata, dict):
            raise ImportFailed(path, line, f'"metadata" must be an object, got {type(metadata).__name__}')
        row_source = obj.get("source")
        parsed.sentences.append(SentenceRecord(
            line=line,
            topic=_topic(path, line, obj.get("topic"), topic),
            text=_clean_str(path, line, obj["sentence"], "sentence", limit=MAX_TEXT),
            stance=_stance(path, line, obj["stance"]),
            source=_clean_str(path, line, row_source if row_source not in (None, "") else (source or ""),
                              "source", required=False, limit=MAX_SOURCE),
            external_id=_clean_str(path, line, str(external_id), "id", required=False, limit=MAX_EXTERNAL_ID),
            metadata=metadata,
        ))
        _tick(progress, n, total, "parsing")
    return parsed


# --- fact knowledge base -------------------------------------------------------------------------------

def _fact(path, line, row: dict, topic: str | None) -> FactRecord:
    origin = row.get("origin")
    origin = "seed" if origin in (None, "") else origin
    if not isinstance(origin, str) or origin.strip().lower() not in FACT_ORIGINS:
        raise ImportFailed(path, line, f'unknown origin "{origin}" (expected one of {", ".join(FACT_ORIGINS)})')
    metadata = row.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise ImportFailed(path, line, f'"metadata" must be an object, got {type(metadata).__name__}')
    return FactRecord(line=line, topic=_topic(path, line, row.get("topic"), topic),
                      text=_clean_str(path, line, row.get("text"), "text", limit=MAX_TEXT),
                      origin=origin.strip().lower(), metadata=metadata)


def parse_facts_jsonl(path, text: str, *, topic: str | None = None, source: str | None = None,
                      progress=None) -> ParsedFile:
    parsed = ParsedFile()
    total = _count_lines(text)
    for n, (line, obj) in enumerate(read_jsonl(path, error=ImportFailed, text=text), start=1):
        for key in ("topic", "text"):
            if key not in obj and not (key == "topic" and topic):
                raise ImportFailed(path, line, f'missing key "{key}"')
        parsed.facts.append(_fact(path, line, obj, topic))
        _tick(progress, n, total, "parsing")
    return parsed


def parse_facts_csv(path, text: str, *, topic: str | None = None, source: str | None = None,
                    progress=None) -> ParsedFile:
    parsed = ParsedFile()
    total = _count_lines(text)
    for n, (line, row) in enumerate(_csv_rows(path, text, "excel", ("topic", "text"), ("origin",)), start=1):
        parsed.facts.append(_fact(path, line, row, topic))
        _tick(progress, n, total, "parsing")
    return parsed


# --- Kialo plain-text export ---------------------------------------------------------------------------

_TITLE = re.compile(r"^\s*Discussion Title:\s*(.*)$", re.IGNORECASE)
_NODE = re.compile(r"^\s*(\d+(?:\.\d+)*)\.(?:\s+(.*))?$")
_STANCE = re.compile(r"^(Pro|Con)\s*:\s*(.*)$", re.IGNORECASE | re.DOTALL)
_REFERENCE = re.compile(r"^->\s*See\s+(\d+(?:\.\d+)*)\.?\s*$", re.IGNORECASE)
_REFERENCE_LINE = re.compile(r"^->\s*See\s+(\d+(?:\.\d+)*)\.?\s*$", re.IGNORECASE | re.MULTILINE)


def _misnumbered(number: str, parts: list[str], well_formed: bool, nodes: dict, last_child: dict) -> str:
    """Why a labelled numbered line (or the first node) cannot be a node of the tree read so far."""
    if not well_formed:
        return f'malformed node number "{number}."'
    node_path = ".".join(parts)
    if node_path in nodes:
        return f"node {node_path}. is defined twice (first on line {nodes[node_path].line})"
    if len(parts) == 1:
        return (f"node {node_path}. is a second thesis; a debate has one root (1.)" if nodes
                else f"the thesis must be numbered 1., found {node_path}.")
    parent = ".".join(parts[:-1])
    if parent not in nodes:
        return f"node {node_path}. has no parent: {parent}. is not defined before it (broken numbering)"
    return f"node {node_path}. is numbered out of order (it comes after {parent}.{last_child[parent]}.)"


def _fits(parts: list[str], nodes: dict, last_child: dict) -> bool:
    """Whether a numbered line continues the tree read so far: the first node ``1.``, or a child ``P.k`` of an
    existing node ``P`` numbered after P's children so far (the next sibling, or a first child)."""
    if len(parts) == 1:
        return not nodes and parts == ["1"]
    parent = ".".join(parts[:-1])
    return parent in nodes and int(parts[-1]) > last_child.get(parent, 0)


def parse_kialo(path, text: str, *, topic: str | None = None, source: str | None = None,
                progress=None) -> ParsedFile:
    """One debate tree from Kialo's text export (debate-trees §2.1): numbered nodes ``1.2.3.``, ``Pro:``/``Con:``
    relative to the parent, continuation lines, ``-> See 1.4.2.`` references (copied, may point forward).

    A numbered line is a node only when its number fits the tree read so far (:func:`_fits`); otherwise it is
    text of the node above (a numbered list inside a claim: ``1. The existence of ...``). A line that does not
    fit but carries a ``Pro:``/``Con:`` label is broken numbering and refused with its line. A node without a
    label is a *thesis* (stance ``none``): the positions of a multi-thesis discussion (the root's children
    ``1.1.``, ``1.2.`` ... with no label) and the unlabelled nodes real exports carry deeper down."""
    total = _count_lines(text)
    title = ""
    title_line = 0
    nodes: dict[str, NodeRecord] = {}
    last_child: dict[str, int] = {}
    order: list[str] = []
    current: list[str] | None = None  # text lines of the node (or title) being read
    texts: dict[str, list[str]] = {}
    title_parts: list[str] = []

    for line, raw in enumerate(text.split("\n"), start=1):
        _tick(progress, line, total, "parsing")
        if not order and not title_line and (m := _TITLE.match(raw)):
            title_line = line
            title_parts = [m.group(1).strip()]
            current = title_parts
            continue
        m = _NODE.match(raw)
        if m:
            parts = m.group(1).split(".")
            well_formed = all(p == str(int(p)) and int(p) > 0 for p in parts)
            if well_formed and len(parts) > 1 and not order and title_line:
                # A title but no "1." node: the title is the thesis.
                nodes["1"] = NodeRecord(line=title_line, path="1", stance="none", text="")
                order.append("1")
                texts["1"] = title_parts
            if well_formed and _fits(parts, nodes, last_child):
                node_path = ".".join(parts)
                if len(node_path) > MAX_PATH:
                    raise ImportFailed(path, line, f"node number longer than {MAX_PATH} characters")
                if len(parts) > 1:
                    last_child[".".join(parts[:-1])] = int(parts[-1])
                nodes[node_path] = NodeRecord(line=line, path=node_path, stance="none", text="")
                order.append(node_path)
                current = texts[node_path] = [m.group(2) or ""]
                continue
            if not order or _STANCE.match(m.group(2) or ""):
                raise ImportFailed(path, line, _misnumbered(m.group(1), parts, well_formed, nodes, last_child))
            # otherwise: a numbered line inside a claim's text, read below as text
        if not raw.strip():
            if current is not None:
                current.append("")
            continue
        if current is None:
            raise ImportFailed(path, line, 'text before the first node (expected "Discussion Title: ..." '
                                           'or a numbered node such as "1. ...")')
        current.append(raw.strip())

    if not nodes:
        if title_line:
            nodes["1"] = NodeRecord(line=title_line, path="1", stance="none", text="")
            order.append("1")
            texts["1"] = title_parts
        else:
            raise ImportFailed(path, 1, "no debate found: expected a \"Discussion Title:\" line or a node \"1.\"")

    # Node texts, stances and references.
    title = normalise(" ".join(p for p in title_parts if p))
    for node_path in order:
        node = nodes[node_path]
        body = "\n".join(texts[node_path]).strip()
        body = re.sub(r"\n{2,}", "\n\n", body)
        if node.depth > 0 and (sm := _STANCE.match(body)):
            node.stance = sm.group(1).lower()
            body = sm.group(2).strip()
        rm = _REFERENCE.match(body)
        if rm:
            node.reference_path = ".".join(str(int(p)) for p in rm.group(1).split("."))
            body = ""
        elif not body:
            raise ImportFailed(path, node.line, f"node {node_path}. has no text")
        else:  # a reference line below the node's own text must point at a node of the file too
            for ref in _REFERENCE_LINE.findall(body):
                ref = ".".join(str(int(p)) for p in ref.split("."))
                if ref not in nodes:
                    raise ImportFailed(path, node.line, f"node {node_path}. refers to {ref}., which does not exist")
        if len(body) > MAX_TEXT:
            raise ImportFailed(path, node.line, f"node {node_path}. is longer than {MAX_TEXT} characters")
        node.text = body

    for node_path in order:
        node = nodes[node_path]
        if not node.reference_path:
            continue
        seen = {node_path}
        target = node
        while target.reference_path:
            ref = target.reference_path
            if ref not in nodes:
                raise ImportFailed(path, target.line, f"node {target.path}. refers to {ref}., which does not exist")
            if ref in seen:
                raise ImportFailed(path, node.line, f"node {node_path}. is part of a reference cycle")
            seen.add(ref)
            target = nodes[ref]
        node.text = target.text

    root = nodes["1"]
    title = title or root.text
    if len(title) > MAX_TITLE:
        title = title[: MAX_TITLE - 1] + "…"
    source = source if source is not None else str(path)
    if len(source) > MAX_SOURCE:
        raise ImportFailed(path, 1, f'"source" is longer than {MAX_SOURCE} characters')
    tree = TreeRecord(
        line=title_line or root.line,
        title=title,
        content_hash=content_hash("kialo", text),
        source=source,
        topic=normalise(topic) if topic else None,
        nodes=[nodes[p] for p in order],
        metadata={"format": "kialo", "file": Path(path).name},
    )
    if tree.topic and len(tree.topic) > MAX_TOPIC:
        raise ImportFailed(path, 0, f"topic is longer than {MAX_TOPIC} characters")
    return ParsedFile(trees=[tree])


PARSERS: dict[str, Callable[..., ParsedFile]] = {
    "ukp-tsv": parse_ukp_tsv,
    "jsonl": parse_jsonl,
    "kialo": parse_kialo,
    "facts-jsonl": parse_facts_jsonl,
    "facts-csv": parse_facts_csv,
}
