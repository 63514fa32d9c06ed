"""The ArgMining 2022 shared-task layout (Task A) as CSV and as JSONL: strict reading, exact writing.

CSV header (the seven columns below, in any order, plus any extra columns, which are kept and written back)::

    topic,Premise,Conclusion,Validity,Validity-Confidence,Novelty,Novelty-Confidence

``Validity`` / ``Novelty``: ``1`` (yes), ``-1`` (no), ``0`` (tie or unknown). ``*-Confidence``: ``very confident``,
``confident``, ``majority`` or ``defeasible`` (:mod:`annotation.task_types.validity_novelty.aggregation`). JSONL: one object per line with
the same keys; labels are the numbers 1 / -1 / 0 (the strings "1" / "-1" / "0" are read too).

Reading is all-or-nothing: the first problem raises :class:`corpus.importers.ImportFailed` with ``file:line: reason``
(strict UTF-8, a BOM is allowed; a missing column; a bad label or confidence word; an empty premise or conclusion;
a row with too many or too few fields). Values are kept exactly as written (no stripping), so that
``write_csv(read_csv(f))`` gives the same rows, values and column order.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from argora import jsonl
from corpus.importers.base import ImportFailed

from .confidence import CONFIDENCE_WORDS

TOPIC, PREMISE, CONCLUSION = "topic", "Premise", "Conclusion"
VALIDITY, VALIDITY_CONF, NOVELTY, NOVELTY_CONF = "Validity", "Validity-Confidence", "Novelty", "Novelty-Confidence"
COLUMNS = (TOPIC, PREMISE, CONCLUSION, VALIDITY, VALIDITY_CONF, NOVELTY, NOVELTY_CONF)
LABEL_TEXT = {"1": 1, "-1": -1, "0": 0}
FORMATS = ("csv", "jsonl")


@dataclass
class Row:
    """One shared-task row. ``extra``: the other columns, in file order (CSV: strings; JSONL: any JSON value)."""

    line: int
    topic: str
    premise: str
    conclusion: str
    validity: int
    validity_confidence: str
    novelty: int
    novelty_confidence: str
    extra: dict[str, Any] = field(default_factory=dict)

    def as_columns(self) -> dict[str, Any]:
        """Column name -> value (labels as ints), the seven shared-task columns first, then the extra ones."""
        out = {
            TOPIC: self.topic,
            PREMISE: self.premise,
            CONCLUSION: self.conclusion,
            VALIDITY: self.validity,
            VALIDITY_CONF: self.validity_confidence,
            NOVELTY: self.novelty,
            NOVELTY_CONF: self.novelty_confidence,
        }
        out.update(self.extra)
        return out


@dataclass
class Table:
    columns: list[str]  # the header, in file order (JSONL: keys in order of first appearance)
    rows: list[Row]
    fmt: str


def guess_format(path) -> str:
    return "jsonl" if str(path).lower().endswith((".jsonl", ".ndjson", ".json")) else "csv"


def read_file(path, fmt: str | None = None) -> Table:
    fmt = fmt or guess_format(path)
    if fmt not in FORMATS:
        raise ImportFailed(path, 0, f"unknown format {fmt!r} (expected csv or jsonl)")
    return read_csv(path) if fmt == "csv" else read_jsonl(path)


def _read_text(path) -> str:
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise ImportFailed(path, 0, f"cannot read: {exc.strerror or exc}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ImportFailed(path, line, f"not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start})") from None
    return text[1:] if text.startswith("\ufeff") else text


def _label(path, line: int, column: str, value: Any) -> int:
    if isinstance(value, bool):
        value = None
    if isinstance(value, int) and value in (1, -1, 0):
        return value
    if isinstance(value, str) and value in LABEL_TEXT:
        return LABEL_TEXT[value]
    raise ImportFailed(path, line, f"{column}: bad label {value!r} (expected 1, -1 or 0)")


def _confidence(path, line: int, column: str, value: Any) -> str:
    if isinstance(value, str) and value in CONFIDENCE_WORDS:
        return value
    raise ImportFailed(
        path, line, f"{column}: bad confidence {value!r} (expected one of: {', '.join(CONFIDENCE_WORDS)})"
    )


def _text(path, line: int, column: str, value: Any, *, required: bool) -> str:
    if not isinstance(value, str):
        raise ImportFailed(path, line, f"{column}: expected text, got {type(value).__name__}")
    if required and not value.strip():
        raise ImportFailed(path, line, f"{column}: empty")
    return value


def _row(path, line: int, values: dict[str, Any], extra_columns: Iterable[str]) -> Row:
    return Row(
        line=line,
        topic=_text(path, line, TOPIC, values[TOPIC], required=False),
        premise=_text(path, line, PREMISE, values[PREMISE], required=True),
        conclusion=_text(path, line, CONCLUSION, values[CONCLUSION], required=True),
        validity=_label(path, line, VALIDITY, values[VALIDITY]),
        validity_confidence=_confidence(path, line, VALIDITY_CONF, values[VALIDITY_CONF]),
        novelty=_label(path, line, NOVELTY, values[NOVELTY]),
        novelty_confidence=_confidence(path, line, NOVELTY_CONF, values[NOVELTY_CONF]),
        extra={c: values[c] for c in extra_columns if c in values},
    )


def read_csv(path) -> Table:
    text = _read_text(path)
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        header = next(reader, None)
    except csv.Error as exc:
        raise ImportFailed(path, 1, f"malformed CSV header ({exc})") from None
    if not header or header == [""] * len(header):
        raise ImportFailed(path, 1, f"empty file (expected a header: {','.join(COLUMNS)})")
    seen: set[str] = set()
    for name in header:
        if name in seen:
            raise ImportFailed(path, 1, f"column {name!r} appears twice")
        seen.add(name)
    missing = [c for c in COLUMNS if c not in seen]
    if missing:
        raise ImportFailed(path, 1, f"missing column(s) {', '.join(missing)} (expected {','.join(COLUMNS)})")
    extra_columns = [c for c in header if c not in COLUMNS]
    rows: list[Row] = []
    start = reader.line_num + 1
    while True:
        try:
            record = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            raise ImportFailed(path, start, f"malformed CSV ({exc})") from None
        line, start = start, reader.line_num + 1
        if not record:  # a blank line
            continue
        if len(record) != len(header):
            raise ImportFailed(path, line, f"{len(record)} fields, the header has {len(header)}")
        rows.append(_row(path, line, dict(zip(header, record)), extra_columns))
    if not rows:
        raise ImportFailed(path, 2, "no rows (only a header)")
    return Table(columns=list(header), rows=rows, fmt="csv")


def read_jsonl(path) -> Table:
    columns: list[str] = []
    rows: list[Row] = []
    for line, obj in jsonl.read_jsonl(path, error=ImportFailed, require_rows=True, text=_read_text(path)):
        missing = [c for c in COLUMNS if c not in obj]
        if missing:
            raise ImportFailed(path, line, f"missing key(s) {', '.join(missing)}")
        for key in obj:
            if key not in columns:
                columns.append(key)
        rows.append(_row(path, line, obj, [k for k in obj if k not in COLUMNS]))
    return Table(columns=columns, rows=rows, fmt="jsonl")


# --- writing ----------------------------------------------------------------------------------------
def merge_columns(*headers: Iterable[str]) -> list[str]:
    """The union of headers, in order of first appearance; the seven shared-task columns when all are empty."""
    out: list[str] = []
    for header in headers:
        for name in header or ():
            if name not in out:
                out.append(name)
    for name in COLUMNS:
        if name not in out:
            out.append(name)
    return out


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def csv_rows(columns: list[str], records: Iterable[dict[str, Any]]) -> Iterator[list[str]]:
    """The header, then one row of cells per record (column -> value; absent = empty)."""
    yield list(columns)
    for record in records:
        yield [_cell(record.get(c)) for c in columns]


def write_csv(fh: TextIO, columns: list[str], records: Iterable[dict[str, Any]]) -> int:
    """Write a header and one line per record, exactly (a data file for programs; the staff page's download goes
    through :mod:`argora.spreadsheet` instead). Returns the rows written. ``fh`` must be opened with
    ``newline=""``; lines end in ``\\n``, fields are quoted only where needed."""
    writer = csv.writer(fh, lineterminator="\n")
    n = -1  # the header is not a row
    for row in csv_rows(columns, records):
        writer.writerow(row)
        n += 1
    return n


def write_jsonl(fh: TextIO, columns: list[str], records: Iterable[dict[str, Any]]) -> int:
    """One JSON object per line with the record's keys in ``columns`` order (keys a record lacks stay absent)."""
    n = 0
    for record in records:
        obj = {c: record[c] for c in columns if c in record}
        obj.update({k: v for k, v in record.items() if k not in obj})
        fh.write(json.dumps(obj, ensure_ascii=False) + "\n")
        n += 1
    return n
