"""What every parser checks a value with: field limits, strings, topics, CSV rows, JSONL lines, progress ticks.

Nothing here touches the database. Each helper raises :class:`ImportFailed` naming the file and line.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Iterator

from argora.inputs import InvalidJSON, loads
from corpus.hashing import normalise

from .base import ImportFailed

PROGRESS_EVERY = 500

# Field limits of corpus.models (kept in one place so a too-long value fails with its line, not in the DB).
MAX_TOPIC = 200
MAX_SOURCE = 1000
MAX_EXTERNAL_ID = 200
MAX_TITLE = 500
MAX_PATH = 200
MAX_TEXT = 20_000  # characters of one sentence, fact or debate node (the longest UKP sentence has ~1,100)


def clean_str(path, line, value, name, *, required=True, limit=None) -> str:
    """``value`` stripped; refused when it is not a string, empty (``required``) or longer than ``limit``."""
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


def topic_name(path, line, value, default: str | None) -> str:
    """The topic of a row (``default`` when the row names none), whitespace-normalised."""
    if (value is None or (isinstance(value, str) and not value.strip())) and default:
        value = default
    topic = clean_str(path, line, value, "topic", limit=MAX_TOPIC)
    return normalise(topic)


def tick(progress, done: int, total: int, what: str) -> None:
    if progress is not None and done % PROGRESS_EVERY == 0:
        progress(done, total, what)


def count_lines(text: str) -> int:
    return text.count("\n") + 1


def text_lines(text: str) -> Iterator[str]:
    """The lines of a text already read (each with its ``\\n``), as the streaming parsers take them."""
    return iter(io.StringIO(text, newline=""))


def csv_rows(path, lines: Iterable[str], dialect: str, required: tuple[str, ...], optional: tuple[str, ...] = ()):
    """``(line, row dict)`` for CSV/TSV ``lines`` (an iterable of text lines, each with its ``\\n``: a file's lines
    or :func:`text_lines`); checks the header and the column count of every row."""
    reader = csv.reader(lines, dialect=dialect)
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


def jsonl_objects(path, lines: Iterable[str]) -> Iterator[tuple[int, dict]]:
    """``(line number, object)`` of every non-blank line, under the rules (and with the messages) of
    :func:`argora.jsonl.read_jsonl`, but over lines streamed from the file: nothing past the current line is held."""
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            obj = loads(line.rstrip("\r\n"))
        except json.JSONDecodeError as exc:
            raise ImportFailed(path, number, f"invalid JSON: {exc.msg} (column {exc.colno})") from None
        except InvalidJSON as exc:
            raise ImportFailed(path, number, str(exc)) from None
        if not isinstance(obj, dict):
            raise ImportFailed(path, number, f"expected a JSON object, got {type(obj).__name__}")
        yield number, obj


def number(path, line, value, name, *, low: float | None = None, high: float | None = None) -> float:
    """A number from a CSV cell (or a JSON number), within ``[low, high]`` when given."""
    if isinstance(value, bool):
        raise ImportFailed(path, line, f'"{name}" must be a number, got {value!r}')
    try:
        out = float(value.strip() if isinstance(value, str) else value)
    except (TypeError, ValueError):
        raise ImportFailed(path, line, f'"{name}" must be a number, got {value!r}') from None
    if out != out or out in (float("inf"), float("-inf")):
        raise ImportFailed(path, line, f'"{name}" must be a finite number, got {value!r}')
    if (low is not None and out < low) or (high is not None and out > high):
        raise ImportFailed(path, line, f'"{name}" {out:g} is outside [{low:g}, {high:g}]')
    return out
