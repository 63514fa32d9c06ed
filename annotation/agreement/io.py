"""CSV formats of the agreement CLI. Every error is an :class:`AgreementInputError` with ``path`` and ``line``.

* reliability matrix (``alpha``, ``kappa``): header ``coder,<unit ids...>``, one row per coder, an empty cell is a
  missing value;
* spans (``alpha-u``): header ``coder,item,begin,length,category``; ``begin``/``length`` are integer offsets inside
  the item (characters or tokens -- whatever the lengths file counts);
* item lengths (``alpha-u``): header ``item,length``; the continuum is the items in this file's order, end to end.
"""
from __future__ import annotations

import csv
from dataclasses import dataclass
from typing import Any, Iterable

from .alpha import LEVELS
from .errors import AgreementError, AgreementInputError
from .unitized import UnitizedResult, spans_on_continuum, unitized_alpha


@dataclass
class ReliabilityTable:
    coders: list[str]
    units: list[str]
    data: list[list[Any]]   # coders x units; None = missing; floats unless level == "nominal"
    lines: list[int]        # file line of each coder row


def _rows(path: str) -> Iterable[tuple[int, list[str]]]:
    try:
        fh = open(path, newline="", encoding="utf-8-sig")
    except OSError as exc:
        raise AgreementInputError(f"cannot read: {exc.strerror}", path=path) from None
    with fh:
        reader = csv.reader(fh)
        try:
            for row in reader:
                yield reader.line_num, row
        except (csv.Error, UnicodeDecodeError) as exc:
            raise AgreementInputError(f"not a readable CSV file: {exc}", path=path, line=reader.line_num) from None


def _header(path: str, rows, expected: list[str]) -> None:
    try:
        line, head = next(rows)
    except StopIteration:
        raise AgreementInputError(f"empty file; expected a header {','.join(expected)}", path=path, line=1) from None
    got = [h.strip().lower() for h in head]
    if got != expected:
        raise AgreementInputError(f"expected the header {','.join(expected)}, got {','.join(head)}", path=path,
                                  line=line)


def read_matrix_csv(path: str, level: str = "nominal") -> ReliabilityTable:
    """Read a reliability matrix; values are parsed as numbers unless ``level`` is nominal."""
    if level not in LEVELS:
        raise AgreementError(f"unknown level {level!r}")
    rows = _rows(path)
    try:
        line, head = next(rows)
    except StopIteration:
        raise AgreementInputError("empty file; expected a header coder,<unit ids...>", path=path, line=1) from None
    if not head or head[0].strip().lower() != "coder":
        raise AgreementInputError("the header must start with 'coder' followed by the unit ids", path=path, line=line)
    units = [u.strip() for u in head[1:]]
    if not units:
        raise AgreementInputError("the header names no units", path=path, line=line)
    seen: dict[str, int] = {}
    for i, u in enumerate(units):
        if not u:
            raise AgreementInputError(f"unit id in column {i + 2} is empty", path=path, line=line)
        if u in seen:
            raise AgreementInputError(f"unit id {u!r} appears twice (columns {seen[u] + 2} and {i + 2})",
                                      path=path, line=line)
        seen[u] = i
    coders: list[str] = []
    data: list[list[Any]] = []
    lines: list[int] = []
    coder_line: dict[str, int] = {}
    for line, row in rows:
        if not row or all(not c.strip() for c in row):
            continue
        coder = row[0].strip()
        if not coder:
            raise AgreementInputError("the coder name is empty", path=path, line=line)
        if coder in coder_line:
            raise AgreementInputError(f"coder {coder!r} already has a row (line {coder_line[coder]})",
                                      path=path, line=line)
        cells = row[1:]
        if len(cells) > len(units) and any(c.strip() for c in cells[len(units):]):
            raise AgreementInputError(f"{len(cells)} values but the header names {len(units)} units",
                                      path=path, line=line)
        cells = (cells + [""] * len(units))[: len(units)]
        values: list[Any] = []
        for unit, cell in zip(units, cells):
            cell = cell.strip()
            if cell == "":
                values.append(None)
            elif level == "nominal":
                values.append(cell)
            else:
                try:
                    v = float(cell)
                except ValueError:
                    raise AgreementInputError(f"unit {unit}: {cell!r} is not a number ({level} data)",
                                              path=path, line=line) from None
                if v != v or v in (float("inf"), float("-inf")):
                    raise AgreementInputError(f"unit {unit}: {cell!r} is not a finite number", path=path, line=line)
                if level == "ratio" and v < 0:
                    raise AgreementInputError(f"unit {unit}: ratio data must be non-negative, got {cell}",
                                              path=path, line=line)
                values.append(v)
        coder_line[coder] = line
        coders.append(coder)
        data.append(values)
        lines.append(line)
    if not coders:
        raise AgreementInputError("no coder rows after the header", path=path, line=2)
    return ReliabilityTable(coders=coders, units=units, data=data, lines=lines)


def _int(path: str, line: int, name: str, cell: str) -> int:
    try:
        return int(cell.strip())
    except ValueError:
        raise AgreementInputError(f"{name} {cell!r} is not an integer", path=path, line=line) from None


def read_spans_csv(path: str) -> tuple[list[tuple[str, str, int, int, str]], list[int]]:
    """``coder,item,begin,length,category`` rows -> (spans, file line of each span)."""
    rows = _rows(path)
    _header(path, rows, ["coder", "item", "begin", "length", "category"])
    spans, lines = [], []
    for line, row in rows:
        if not row or all(not c.strip() for c in row):
            continue
        if len(row) != 5:
            raise AgreementInputError(f"expected 5 fields (coder,item,begin,length,category), got {len(row)}",
                                      path=path, line=line)
        coder, item, b, ln, cat = (c.strip() for c in row)
        if not coder or not item or not cat:
            raise AgreementInputError("coder, item and category must not be empty", path=path, line=line)
        begin, length = _int(path, line, "begin", b), _int(path, line, "length", ln)
        if begin < 0:
            raise AgreementInputError(f"begin must be >= 0, got {begin}", path=path, line=line)
        if length <= 0:
            raise AgreementInputError(f"length must be positive, got {length}", path=path, line=line)
        spans.append((coder, item, begin, length, cat))
        lines.append(line)
    return spans, lines


def read_lengths_csv(path: str) -> list[tuple[str, int]]:
    """``item,length`` rows, in file order (the continuum order)."""
    rows = _rows(path)
    _header(path, rows, ["item", "length"])
    out, seen = [], {}
    for line, row in rows:
        if not row or all(not c.strip() for c in row):
            continue
        if len(row) != 2:
            raise AgreementInputError(f"expected 2 fields (item,length), got {len(row)}", path=path, line=line)
        item, ln = row[0].strip(), _int(path, line, "length", row[1])
        if not item:
            raise AgreementInputError("item must not be empty", path=path, line=line)
        if item in seen:
            raise AgreementInputError(f"item {item!r} already listed (line {seen[item]})", path=path, line=line)
        if ln < 0:
            raise AgreementInputError(f"length must be >= 0, got {ln}", path=path, line=line)
        seen[item] = line
        out.append((item, ln))
    if not out:
        raise AgreementInputError("no items after the header", path=path, line=2)
    return out


def unitized_alpha_from_csv(spans_path: str, lengths_path: str, coders: list[str] | None = None) -> UnitizedResult:
    """alpha_u of a spans CSV over the continuum of a lengths CSV; errors point at the offending span's line."""
    spans, lines = read_spans_csv(spans_path)
    lengths = read_lengths_csv(lengths_path)
    try:
        flat, total = spans_on_continuum(spans, lengths)
        if total <= 0:
            raise AgreementInputError("all items have length 0: the continuum is empty", path=lengths_path)
        result = unitized_alpha(flat, total, coders=coders)
    except AgreementInputError as exc:
        idx = getattr(exc, "span_indices", None)
        if idx and exc.path is None:
            where = lines[idx[-1]]
            reason = exc.reason
            if len(idx) == 2:
                reason = (f"overlaps the span on line {lines[idx[0]]} (same coder and category); merge or drop one: "
                          "alpha_u needs non-overlapping units per coder and category")
            elif reason.startswith("span #"):
                reason = reason.split(": ", 1)[1]
            raise AgreementInputError(reason, path=spans_path, line=where) from None
        raise
    result.extra["n_items"] = len(lengths)
    return result
