"""Readers: bytes on disk -> validated text. Strict UTF-8, so a bad byte is reported on its line.

:func:`read_text` gives the whole file (what the parsers that need all of it take: Kialo trees, ArgKP's grouped
rows, args.me JSON); :func:`iter_lines` streams it line by line (the line-oriented formats: nothing past the
current line is held, which keeps a 1 M-row import's memory bounded).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from .base import ImportFailed


def _open(path: Path):
    try:
        return path.open("rb")
    except FileNotFoundError:
        raise ImportFailed(path, 0, "file not found") from None
    except IsADirectoryError:
        raise ImportFailed(path, 0, "is a directory, expected a file") from None
    except OSError as exc:
        raise ImportFailed(path, 0, f"cannot read file: {exc.strerror or exc}") from None


def _bad_utf8(path, line: int, data: bytes, exc: UnicodeDecodeError) -> ImportFailed:
    bad = data[exc.start : exc.end].hex(" ")
    return ImportFailed(path, line, f"invalid UTF-8 (byte(s) {bad}); save the file as UTF-8")


def read_text(path) -> str:
    """The whole file as text (UTF-8, a leading BOM dropped, newlines normalised to ``\\n``).

    Raises :class:`ImportFailed` for a missing/unreadable file (line 0) and for invalid UTF-8 (the line of the
    first bad byte).
    """
    path = Path(path)
    with _open(path) as fh:
        try:
            data = fh.read()
        except IsADirectoryError:
            raise ImportFailed(path, 0, "is a directory, expected a file") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _bad_utf8(path, data.count(b"\n", 0, exc.start) + 1, data, exc) from None
    if text.startswith("\ufeff"):
        text = text[1:]
    return text.replace("\r\n", "\n").replace("\r", "\n")


def iter_lines(path) -> Iterator[str]:
    """The file's lines, each ending in ``\\n`` (the last one maybe not), read and decoded one at a time: the same
    text and line numbers as :func:`read_text` (BOM dropped, ``\\r\\n`` and ``\\r`` are line ends), the same
    errors, raised when the reader gets there."""
    path = Path(path)
    fh = _open(path)
    number = 0
    with fh:
        try:
            for raw in fh:
                try:
                    line = raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    raise _bad_utf8(path, number + 1 + raw.count(b"\r", 0, exc.start), raw, exc) from None
                if number == 0 and line.startswith("\ufeff"):
                    line = line[1:]
                if "\r" in line:
                    line = line.replace("\r\n", "\n").replace("\r", "\n")
                    pieces = line.split("\n")
                    for piece in pieces[:-1]:
                        number += 1
                        yield piece + "\n"
                    if pieces[-1]:
                        number += 1
                        yield pieces[-1]
                    continue
                number += 1
                yield line
        except IsADirectoryError:
            raise ImportFailed(path, 0, "is a directory, expected a file") from None


def count_rows(path) -> int:
    """Non-blank lines of a file (a progress total for the streamed formats; cheap: no decoding)."""
    with _open(Path(path)) as fh:
        return sum(1 for raw in fh if raw.strip())
