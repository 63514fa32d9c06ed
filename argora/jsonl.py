"""The one JSONL reader and writer: one JSON object per line, ``file:line: reason`` errors, atomic writes.

- :func:`read_jsonl` yields ``(line number, object)``; blank lines are skipped; a line that is not JSON (or JSON
  Argora does not take: :func:`argora.inputs.loads`) or not an object raises :class:`~argora.errors.FileLineError` (or the subclass a caller names, e.g. ``ImportFailed``)
  naming the file and line; ``require_rows`` refuses an empty file (line 0). Nothing is yielded past a bad line, so a
  caller that collects first and writes afterwards writes nothing from a bad file.
- :func:`write_jsonl` writes rows with sorted keys and real UTF-8 to a temporary file beside the target and moves it
  into place: a crash never leaves a half-written file under the target's name.
- :func:`dumps` is the line format both use (and what a release or a streamed CLI output writes).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path

from .errors import FileLineError
from .inputs import InvalidJSON, loads


def dumps(row: dict) -> str:
    """One row as a JSONL line (no newline): sorted keys, UTF-8 kept, values JSON cannot write as ``str``."""
    return json.dumps(row, sort_keys=True, ensure_ascii=False, default=str)


def read_jsonl(
    path, *, error: type[FileLineError] = FileLineError, require_rows: bool = False, text: str | None = None
) -> Iterator[tuple[int, dict]]:
    """``(line number, object)`` for every non-blank line of ``path`` (or of ``text`` already read from it)."""
    handle = None
    lines: Iterable[str]
    if text is None:
        try:
            lines = handle = open(path, encoding="utf-8")
        except OSError as exc:
            raise error(path, 0, f"cannot read ({exc.strerror or exc})") from None
    else:
        lines = text.split("\n")
    seen = False
    try:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                obj = loads(line.rstrip("\r\n"))
            except json.JSONDecodeError as exc:
                raise error(path, number, f"invalid JSON: {exc.msg} (column {exc.colno})") from None
            except InvalidJSON as exc:
                raise error(path, number, str(exc)) from None
            except UnicodeDecodeError:
                raise error(path, number, "not UTF-8 text") from None
            if not isinstance(obj, dict):
                raise error(path, number, f"expected a JSON object, got {type(obj).__name__}")
            seen = True
            yield number, obj
    except UnicodeDecodeError:
        raise error(path, 0, "not UTF-8 text") from None
    finally:
        if handle is not None:
            handle.close()
    if require_rows and not seen:
        raise error(path, 0, "no rows: the file is empty")


def write_jsonl(rows: Iterable[dict], path) -> int:
    """Write ``rows`` to ``path`` atomically (temporary file + rename); returns the number of rows."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    n = 0
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            for row in rows:
                fh.write(dumps(row) + "\n")
                n += 1
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return n
