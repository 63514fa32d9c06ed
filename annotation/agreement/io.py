"""CSV formats of the agreement CLI. Every error is an :class:`AgreementInputError` with ``path`` and ``line``.

* reliability matrix (``alpha``, ``kappa``): header ``coder,<unit ids...>``, one row per coder, an empty cell is a
  missing value;
* spans (``alpha-u``): header ``coder,item,begin,length,category``; ``begin``/``length`` are integer offsets inside
  the item (characters or tokens -- whatever the lengths file counts);
* item lengths (``alpha-u``): header ``item,length``; the continuum is the items in this file's order, end to end.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import numpy as np

from .alpha import LEVELS
from .errors import AgreementError, AgreementInputError
from .unitized import UnitizedResult, spans_on_continuum, unitized_alpha


@dataclass
class ReliabilityTable:
    """A reliability matrix read from a CSV file.

    ``matrix``: coders x units float64, NaN = missing; at the nominal level the values are codes into ``labels``
    (the distinct labels, sorted), at the other levels the numbers themselves. ``data`` gives the same cells as
    Python values (labels or floats, None = missing) for the functions that take labels (kappa).
    """

    coders: list[str]
    units: list[str]
    matrix: np.ndarray
    lines: list[int]  # file line of each coder row
    labels: list[str] | None = None

    @property
    def data(self) -> np.ndarray:
        """coders x units object array: the label (nominal) or number of each cell, None where it is empty."""
        present = ~np.isnan(self.matrix)
        out = np.full(self.matrix.shape, None, dtype=object)
        if self.labels is not None:
            out[present] = np.asarray(self.labels, dtype=object)[self.matrix[present].astype(np.intp)]
        else:
            out[present] = self.matrix[present].tolist()
        return out


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
        raise AgreementInputError(
            f"expected the header {','.join(expected)}, got {','.join(head)}", path=path, line=line
        )


def _matrix_rows(path: str) -> Iterator[tuple[int, list[str]]]:
    """``(line, cells)`` of a matrix file, read whole (the matrix is held whole anyway). A file without quotes,
    carriage returns or NUL characters is split on newlines and commas (what ``csv.reader`` makes of it, at
    ``str.split`` speed: 8 rows of 1,000,000 cells); any other file goes through ``csv.reader``."""
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        raise AgreementInputError(f"cannot read: {exc.strerror}", path=path) from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise AgreementInputError(
            f"not a readable CSV file: {exc}", path=path, line=data.count(b"\n", 0, exc.start) + 1
        ) from None
    del data
    if '"' in text or "\r" in text or "\x00" in text:
        reader = csv.reader(io.StringIO(text, newline=""))
        try:
            for row in reader:
                yield reader.line_num, row
        except csv.Error as exc:
            raise AgreementInputError(f"not a readable CSV file: {exc}", path=path, line=reader.line_num) from None
        return
    for line, raw in enumerate(text.split("\n"), start=1):
        yield line, raw.split(",") if raw else []


def _numbers_slow(path: str, line: int, units: list[str], cells: list[str], level: str) -> np.ndarray:
    """One row's numbers cell by cell: only for a row the vectorised path refused, to name the first bad cell (or
    to read what it could not: a cell of blanks)."""
    values = np.full(len(cells), np.nan)
    for i, (unit, cell) in enumerate(zip(units, cells)):
        cell = cell.strip()
        if cell == "":
            continue
        try:
            v = float(cell)
        except ValueError:
            raise AgreementInputError(
                f"unit {unit}: {cell!r} is not a number ({level} data)", path=path, line=line
            ) from None
        if v != v or v in (float("inf"), float("-inf")):
            raise AgreementInputError(f"unit {unit}: {cell!r} is not a finite number", path=path, line=line)
        if level == "ratio" and v < 0:
            raise AgreementInputError(f"unit {unit}: ratio data must be non-negative, got {cell}", path=path, line=line)
        values[i] = v
    return values


def _numbers(path: str, line: int, units: list[str], cells: list[str], level: str) -> np.ndarray:
    """One row's cells as float64 (NaN = empty), with no Python step per cell: a row of few distinct values (a
    scale) parses each distinct string once and maps the row through that table; a row of many (real-valued
    scores) goes through ``map(float)``. Anything either refuses (a word, NaN, infinity, a negative ratio value,
    a cell of blanks) is read again by :func:`_numbers_slow`, which names the cell."""
    distinct = set(cells)
    try:
        if len(distinct) * 4 <= len(cells):
            table = {raw: float(raw) if raw else np.nan for raw in distinct}
            values = np.fromiter(map(table.__getitem__, cells), np.float64, len(cells))
            parsed = np.array([v for raw, v in table.items() if raw], dtype=np.float64)
        else:
            obj = np.array(cells, dtype=object)
            filled = obj != ""
            parsed = np.fromiter(map(float, obj[filled]), np.float64, int(filled.sum()))
            values = np.full(len(cells), np.nan)
            values[filled] = parsed
    except ValueError:
        return _numbers_slow(path, line, units, cells, level)
    if not np.isfinite(parsed).all() or (level == "ratio" and (parsed < 0).any()):
        return _numbers_slow(path, line, units, cells, level)
    return values


def _codes(cells: list[str], index: dict[str, int]) -> np.ndarray:
    """One row's labels as codes (-1 = empty), in the order labels are first seen in ``index`` (which grows)."""
    table = {}
    for raw in set(cells):
        label = raw.strip()
        table[raw] = index.setdefault(label, len(index)) if label else -1
    return np.fromiter(map(table.__getitem__, cells), np.int64, len(cells))


def read_matrix_csv(path: str, level: str = "nominal") -> ReliabilityTable:
    """Read a reliability matrix; values are parsed as numbers unless ``level`` is nominal (then labels, coded).

    Vectorised: no Python step per cell (see :func:`_numbers`, :func:`_codes`); a bad cell is still reported as
    ``file:line: unit <id>: reason``.
    """
    if level not in LEVELS:
        raise AgreementError(f"unknown level {level!r}")
    rows = _matrix_rows(path)
    try:
        line, head = next(rows)
    except StopIteration:
        raise AgreementInputError("empty file; expected a header coder,<unit ids...>", path=path, line=1) from None
    if not head or head[0].strip().lower() != "coder":
        raise AgreementInputError("the header must start with 'coder' followed by the unit ids", path=path, line=line)
    units = list(map(str.strip, head[1:]))
    if not units:
        raise AgreementInputError("the header names no units", path=path, line=line)
    if len(set(units)) != len(units) or "" in units:
        seen: dict[str, int] = {}
        for i, u in enumerate(units):
            if not u:
                raise AgreementInputError(f"unit id in column {i + 2} is empty", path=path, line=line)
            if u in seen:
                raise AgreementInputError(
                    f"unit id {u!r} appears twice (columns {seen[u] + 2} and {i + 2})", path=path, line=line
                )
            seen[u] = i
    coders: list[str] = []
    values: list[np.ndarray] = []
    lines: list[int] = []
    coder_line: dict[str, int] = {}
    index: dict[str, int] = {}
    n = len(units)
    for line, row in rows:
        if not row or all(not c.strip() for c in row):
            continue
        coder = row[0].strip()
        if not coder:
            raise AgreementInputError("the coder name is empty", path=path, line=line)
        if coder in coder_line:
            raise AgreementInputError(
                f"coder {coder!r} already has a row (line {coder_line[coder]})", path=path, line=line
            )
        cells = row[1:]
        if len(cells) > n and any(c.strip() for c in cells[n:]):
            raise AgreementInputError(f"{len(cells)} values but the header names {n} units", path=path, line=line)
        if len(cells) != n:
            cells = (cells + [""] * n)[:n]
        values.append(_codes(cells, index) if level == "nominal" else _numbers(path, line, units, cells, level))
        coder_line[coder] = line
        coders.append(coder)
        lines.append(line)
    if not coders:
        raise AgreementInputError("no coder rows after the header", path=path, line=2)
    if level != "nominal":
        return ReliabilityTable(coders=coders, units=units, matrix=np.vstack(values), lines=lines)
    codes = np.vstack(values)
    labels = sorted(index)
    order = np.empty(len(index) + 1, dtype=np.float64)  # first-seen code -> sorted code; the last slot: missing
    order[[index[label] for label in labels]] = np.arange(len(labels))
    order[-1] = np.nan
    return ReliabilityTable(coders=coders, units=units, matrix=order[codes], lines=lines, labels=labels)


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
            raise AgreementInputError(
                f"expected 5 fields (coder,item,begin,length,category), got {len(row)}", path=path, line=line
            )
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
                reason = (
                    f"overlaps the span on line {lines[idx[0]]} (same coder and category); merge or drop one: "
                    "alpha_u needs non-overlapping units per coder and category"
                )
            elif reason.startswith("span #"):
                reason = reason.split(": ", 1)[1]
            raise AgreementInputError(reason, path=spans_path, line=where) from None
        raise
    result.extra["n_items"] = len(lengths)
    return result
