"""Parsers: text -> validated records, one function per format. Nothing here touches the database.

Every parser checks everything it can without the database and raises :class:`ImportFailed` naming the
file and line of the first problem.

The line-oriented formats (``ukp-tsv``, ``jsonl``, ``facts-jsonl``, ``facts-csv``, ``ibm-argq``) are written once,
as generators over lines (:data:`STREAMS`: ``stream(path, lines, topic=, source=, progress=)`` yields records one
at a time); :func:`corpus.importers.import_file` feeds them the file's lines as it reads them and writes in batches
(bounded memory), while ``PARSERS[fmt](path, text)`` collects the same records into one :class:`ParsedFile` (what
the studio's preview and the other callers take). The other formats need the whole file (a Kialo tree, ArgKP's
rows grouped by argument, an args.me JSON document) and are in :data:`PARSERS` only.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from corpus.hashing import content_hash, normalise

from .base import (
    FactRecord,
    ImportFailed,
    NodeRecord,
    ParsedFile,
    SentenceRecord,
    TreeRecord,
)
from .fields import (  # noqa: F401  (the limits are imported from here by other modules)
    MAX_EXTERNAL_ID,
    MAX_PATH,
    MAX_SOURCE,
    MAX_TEXT,
    MAX_TITLE,
    MAX_TOPIC,
    PROGRESS_EVERY,
    clean_str,
    count_lines,
    csv_rows,
    jsonl_objects,
    text_lines,
    tick,
    topic_name,
)
from .public import parse_argsme_json, parse_ibm_argkp, stream_ibm_argq

STANCES = {
    "pro": "pro",
    "con": "con",
    "none": "none",
    "argument_for": "pro",
    "argument_against": "con",
    "noargument": "none",
}
UKP_ANNOTATIONS = {"Argument_for": "pro", "Argument_against": "con", "NoArgument": "none"}
FACT_ORIGINS = ("seed", "expert", "proposed")

Record = SentenceRecord | FactRecord


# --- UKP Sentential Argument Mining Corpus (TSV) -----------------------------------------------------

UKP_COLUMNS = ("topic", "retrievedUrl", "archivedUrl", "sentenceHash", "sentence", "annotation", "set")


def stream_ukp_tsv(
    path, lines: Iterable[str], *, topic: str | None = None, source: str | None = None, progress=None, total: int = 0
) -> Iterator[SentenceRecord]:
    source = clean_str(path, 1, source or "ukp", "source", limit=MAX_SOURCE)
    for n, (line, row) in enumerate(csv_rows(path, lines, "excel-tab", UKP_COLUMNS), start=1):
        label = row["annotation"].strip()
        if label not in UKP_ANNOTATIONS:
            raise ImportFailed(
                path, line, f'unknown annotation "{label}" (expected one of {", ".join(UKP_ANNOTATIONS)})'
            )
        yield SentenceRecord(
            line=line,
            topic=topic_name(path, line, row["topic"], topic),
            text=clean_str(path, line, row["sentence"], "sentence", limit=MAX_TEXT),
            stance=UKP_ANNOTATIONS[label],
            source=source,
            external_id=clean_str(
                path, line, row["sentenceHash"], "sentenceHash", required=False, limit=MAX_EXTERNAL_ID
            ),
            metadata={
                "retrievedUrl": row["retrievedUrl"].strip(),
                "archivedUrl": row["archivedUrl"].strip(),
                "set": row["set"].strip(),
            },
        )
        tick(progress, n, total, "parsing")


# --- JSONL arguments ---------------------------------------------------------------------------------


def _stance(path, line, value) -> str:
    if not isinstance(value, str):
        raise ImportFailed(path, line, f'"stance" must be a string, got {type(value).__name__}')
    stance = STANCES.get(value.strip().lower())
    if stance is None:
        raise ImportFailed(
            path,
            line,
            f'unknown stance "{value}" (expected pro, con, none, Argument_for, Argument_against or NoArgument)',
        )
    return stance


def stream_jsonl(
    path, lines: Iterable[str], *, topic: str | None = None, source: str | None = None, progress=None, total: int = 0
) -> Iterator[SentenceRecord]:
    """Arguments, one JSON object a line: ``topic``, ``sentence``, ``stance`` required; ``id``, ``metadata``,
    ``source`` optional; other keys (``hash``, ``split``...) ignored."""
    default_source = None
    for n, (line, obj) in enumerate(jsonl_objects(path, lines), start=1):
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
        if row_source in (None, ""):  # the same for every such row: checked once
            if default_source is None:
                default_source = clean_str(path, line, source or "", "source", required=False, limit=MAX_SOURCE)
            row_source = default_source
        else:
            row_source = clean_str(path, line, row_source, "source", required=False, limit=MAX_SOURCE)
        yield SentenceRecord(
            line=line,
            topic=topic_name(path, line, obj.get("topic"), topic),
            text=clean_str(path, line, obj["sentence"], "sentence", limit=MAX_TEXT),
            stance=_stance(path, line, obj["stance"]),
            source=row_source,
            external_id=clean_str(path, line, str(external_id), "id", required=False, limit=MAX_EXTERNAL_ID)
            if external_id != ""
            else "",
            metadata=metadata,
        )
        tick(progress, n, total, "parsing")


# --- fact knowledge base -------------------------------------------------------------------------------


def _fact(path, line, row: dict, topic: str | None) -> FactRecord:
    origin = row.get("origin")
    origin = "seed" if origin in (None, "") else origin
    if not isinstance(origin, str) or origin.strip().lower() not in FACT_ORIGINS:
        raise ImportFailed(path, line, f'unknown origin "{origin}" (expected one of {", ".join(FACT_ORIGINS)})')
    metadata = row.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise ImportFailed(path, line, f'"metadata" must be an object, got {type(metadata).__name__}')
    return FactRecord(
        line=line,
        topic=topic_name(path, line, row.get("topic"), topic),
        text=clean_str(path, line, row.get("text"), "text", limit=MAX_TEXT),
        origin=origin.strip().lower(),
        metadata=metadata,
    )


def stream_facts_jsonl(
    path, lines: Iterable[str], *, topic: str | None = None, source: str | None = None, progress=None, total: int = 0
) -> Iterator[FactRecord]:
    for n, (line, obj) in enumerate(jsonl_objects(path, lines), start=1):
        for key in ("topic", "text"):
            if key not in obj and not (key == "topic" and topic):
                raise ImportFailed(path, line, f'missing key "{key}"')
        yield _fact(path, line, obj, topic)
        tick(progress, n, total, "parsing")


def stream_facts_csv(
    path, lines: Iterable[str], *, topic: str | None = None, source: str | None = None, progress=None, total: int = 0
) -> Iterator[FactRecord]:
    for n, (line, row) in enumerate(csv_rows(path, lines, "excel", ("topic", "text"), ("origin",)), start=1):
        yield _fact(path, line, row, topic)
        tick(progress, n, total, "parsing")


# --- whole-text wrappers of the streamed formats -------------------------------------------------------


def _collect(stream) -> Callable[..., ParsedFile]:
    def parse(path, text: str, *, topic: str | None = None, source: str | None = None, progress=None) -> ParsedFile:
        parsed = ParsedFile()
        for record in stream(
            path, text_lines(text), topic=topic, source=source, progress=progress, total=count_lines(text)
        ):
            (parsed.facts if isinstance(record, FactRecord) else parsed.sentences).append(record)
        return parsed

    parse.__name__ = stream.__name__.replace("stream_", "parse_")
    parse.__doc__ = f"All records of ``text`` in one :class:`ParsedFile` (:func:`{stream.__name__}`)."
    return parse


parse_ukp_tsv = _collect(stream_ukp_tsv)
parse_jsonl = _collect(stream_jsonl)
parse_facts_jsonl = _collect(stream_facts_jsonl)
parse_facts_csv = _collect(stream_facts_csv)
parse_ibm_argq = _collect(stream_ibm_argq)


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
        return (
            f"node {node_path}. is a second thesis; a debate has one root (1.)"
            if nodes
            else f"the thesis must be numbered 1., found {node_path}."
        )
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


def parse_kialo(path, text: str, *, topic: str | None = None, source: str | None = None, progress=None) -> ParsedFile:
    """One debate tree from Kialo's text export (debate-trees §2.1): numbered nodes ``1.2.3.``, ``Pro:``/``Con:``
    relative to the parent, continuation lines, ``-> See 1.4.2.`` references (copied, may point forward).

    A numbered line is a node only when its number fits the tree read so far (:func:`_fits`); otherwise it is
    text of the node above (a numbered list inside a claim: ``1. The existence of ...``). A line that does not
    fit but carries a ``Pro:``/``Con:`` label is broken numbering and refused with its line. A node without a
    label is a *thesis* (stance ``none``): the positions of a multi-thesis discussion (the root's children
    ``1.1.``, ``1.2.`` ... with no label) and the unlabelled nodes real exports carry deeper down."""
    total = count_lines(text)
    title = ""
    title_line = 0
    nodes: dict[str, NodeRecord] = {}
    last_child: dict[str, int] = {}
    order: list[str] = []
    current: list[str] | None = None  # text lines of the node (or title) being read
    texts: dict[str, list[str]] = {}
    title_parts: list[str] = []

    for line, raw in enumerate(text.split("\n"), start=1):
        tick(progress, line, total, "parsing")
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
            raise ImportFailed(
                path,
                line,
                'text before the first node (expected "Discussion Title: ..." or a numbered node such as "1. ...")',
            )
        current.append(raw.strip())

    if not nodes:
        if title_line:
            nodes["1"] = NodeRecord(line=title_line, path="1", stance="none", text="")
            order.append("1")
            texts["1"] = title_parts
        else:
            raise ImportFailed(path, 1, 'no debate found: expected a "Discussion Title:" line or a node "1."')

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


STREAMS: dict[str, Callable[..., Iterator[Record]]] = {
    "ukp-tsv": stream_ukp_tsv,
    "jsonl": stream_jsonl,
    "facts-jsonl": stream_facts_jsonl,
    "facts-csv": stream_facts_csv,
    "ibm-argq": stream_ibm_argq,
}

PARSERS: dict[str, Callable[..., ParsedFile]] = {
    "ukp-tsv": parse_ukp_tsv,
    "jsonl": parse_jsonl,
    "kialo": parse_kialo,
    "facts-jsonl": parse_facts_jsonl,
    "facts-csv": parse_facts_csv,
    "ibm-argq": parse_ibm_argq,
    "ibm-argkp": parse_ibm_argkp,
    "argsme-json": parse_argsme_json,
}
