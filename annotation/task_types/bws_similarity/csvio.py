"""Reading BWS judgements from CSV: ``tuple,annotator,topic,best,worst,items`` (``items`` = the tuple's pair ids
joined by ``|``; ``best``/``worst`` are pair ids). A bad file raises :class:`BWSInputError` with ``file:line:
reason`` (the CLI prints it and exits 2)."""

from __future__ import annotations

import csv

from argora.errors import FileLineError

from .scoring import InvalidJudgement, Judgement, check_judgement, encode

COLUMNS = ("tuple", "annotator", "topic", "best", "worst", "items")


class BWSInputError(FileLineError):
    """A bad judgements file: ``str(e) == f"{file}:{line}: {reason}"``."""


def read_csv(path: str) -> list[Judgement]:
    """All judgements of the file, checked row by row and across rows (see :func:`.scoring.encode`)."""
    try:
        fh = open(path, newline="", encoding="utf-8-sig")
    except OSError as exc:
        raise BWSInputError(path, 0, f"cannot open: {exc.strerror or exc}") from None
    out: list[Judgement] = []
    lines: list[int] = []
    with fh:
        reader = csv.DictReader(fh)
        try:
            header = reader.fieldnames
        except (csv.Error, UnicodeDecodeError) as exc:
            raise BWSInputError(path, 1, f"not a CSV file ({exc})") from None
        if not header:
            raise BWSInputError(path, 1, "empty file (expected a header: " + ",".join(COLUMNS) + ")")
        missing = [c for c in COLUMNS if c not in [h.strip() for h in header]]
        if missing:
            raise BWSInputError(path, 1, f"missing column(s) {', '.join(missing)} (expected {','.join(COLUMNS)})")
        try:
            for row in reader:
                line = reader.line_num
                row = {(k or "").strip(): (v or "").strip() if isinstance(v, str) else v for k, v in row.items()}
                if None in row or row.get(""):
                    raise BWSInputError(path, line, "more fields than columns")
                for col in COLUMNS:
                    if not row.get(col):
                        raise BWSInputError(path, line, f"{col}: empty")
                items = tuple(p.strip() for p in row["items"].split("|"))
                if any(not p for p in items):
                    raise BWSInputError(path, line, "items: an empty pair id (pair ids are joined by '|')")
                j = Judgement(row["tuple"], row["annotator"], row["topic"], row["best"], row["worst"], items)
                try:
                    check_judgement(j)
                except ValueError as exc:
                    raise BWSInputError(path, line, str(exc)) from None
                out.append(j)
                lines.append(line)
        except csv.Error as exc:
            raise BWSInputError(path, reader.line_num, f"malformed CSV ({exc})") from None
        except UnicodeDecodeError:
            raise BWSInputError(path, reader.line_num + 1, "not UTF-8 text") from None
    if not out:
        raise BWSInputError(path, 2, "no judgements (only a header)")
    try:
        encode(out)  # checks across rows: tuple shown with other pairs, pair in two topics, an annotator twice
    except InvalidJudgement as exc:
        raise BWSInputError(path, lines[exc.index], exc.reason) from None
    return out
