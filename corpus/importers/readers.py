"""Readers: bytes on disk -> validated text. Strict UTF-8, so a bad byte is reported on its line."""
from __future__ import annotations

from pathlib import Path

from .base import ImportFailed


def read_text(path) -> str:
    """The whole file as text (UTF-8, a leading BOM dropped, newlines normalised to ``\\n``).

    Raises :class:`ImportFailed` for a missing/unreadable file (line 0) and for invalid UTF-8 (the line of the
    first bad byte).
    """
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise ImportFailed(path, 0, "file not found") from None
    except IsADirectoryError:
        raise ImportFailed(path, 0, "is a directory, expected a file") from None
    except OSError as exc:
        raise ImportFailed(path, 0, f"cannot read file: {exc.strerror or exc}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        bad = data[exc.start:exc.end].hex(" ")
        raise ImportFailed(path, line, f"invalid UTF-8 (byte(s) {bad}); save the file as UTF-8") from None
    if text.startswith("\ufeff"):
        text = text[1:]
    return text.replace("\r\n", "\n").replace("\r", "\n")
