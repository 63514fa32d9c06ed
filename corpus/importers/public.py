"""Parsers for the field's public corpora that arrive as arguments: IBM ArgQ-Rank-30k, IBM ArgKP, args.me.

Each turns the published files, as they are, into corpus Sentences with a stance; what the corpus has no column
for (quality scores, the split, key points, the source context) is kept in the sentence's ``metadata`` under the
corpus's own key (``argq``, ``argkp``, ``argsme``), so that one argument imported from two corpora keeps both
(ArgKP's arguments are ArgQ-Rank-30k's: importing both adds the second one's key to the stored rows, see
:attr:`ParsedFile.merge_metadata`).

``ibm-argq``: ``arg_quality_rank_30k.csv`` (Gretz et al. 2020), columns ``argument, topic, set, WA, MACE-P,
stance_WA, stance_WA_conf``; ``stance_WA`` 1 -> pro, -1 -> con. Streamed (:func:`stream_ibm_argq`).

``ibm-argkp``: the ArgKP releases (Bar-Haim et al. 2020; the KPA 2021 shared task), either shape the public
release ships:

- one CSV ``topic, argument, key_point, stance, label`` (``ArgKP-2021_dataset.csv``; one row per (argument, key
  point) pair), or
- ``arguments_<set>.csv`` (``arg_id, argument, topic, stance``) with its ``key_points_<set>.csv`` (``key_point_id,
  key_point, topic, stance``) and ``labels_<set>.csv`` (``arg_id, key_point_id, label``) beside it: import the
  arguments file (a folder import takes the two others as its companions, :func:`companion_of`); ``<set>`` (train,
  dev, test) is kept as the argument's ``set``.

Every argument becomes one sentence (rows of the same argument are grouped) whose ``metadata["argkp"]["key_points"]``
lists its key points with their label (1 matching, 0 not).

``argsme-json``: an args.me JSON document (Wachsmuth et al. / Ajjour et al. 2019) ``{"arguments": [{"id",
"conclusion", "premises": [{"text", "stance": "PRO"|"CON"}], "context": {...}}]}``: the topic is the conclusion
(cut to 200 characters at a word boundary, the whole conclusion kept in the metadata when it was cut), each premise
a sentence with its stance; the id and the context are kept.
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from argora.inputs import InvalidJSON, loads
from corpus.hashing import normalise

from .base import ImportFailed, ParsedFile, SentenceRecord
from .fields import (
    MAX_EXTERNAL_ID,
    MAX_SOURCE,
    MAX_TEXT,
    MAX_TOPIC,
    clean_str,
    count_lines,
    csv_rows,
    number,
    text_lines,
    tick,
    topic_name,
)
from .readers import read_text

IBM_STANCES = {1: "pro", -1: "con", 0: "none"}
SETS = ("train", "dev", "test")


def ibm_stance(path, line, value, name: str = "stance") -> str:
    """IBM's stance numbers: 1 -> pro, -1 -> con (0 -> none)."""
    raw = value.strip() if isinstance(value, str) else value
    try:
        as_float = float(raw)
    except (TypeError, ValueError):
        as_float = None
    if as_float is None or as_float not in IBM_STANCES:
        raise ImportFailed(path, line, f'"{name}" must be 1 (pro) or -1 (con), got {value!r}')
    return IBM_STANCES[int(as_float)]


def _set(path, line, value) -> str:
    value = (value or "").strip()
    if value and value not in SETS:
        raise ImportFailed(path, line, f'"set" must be one of {", ".join(SETS)}, got {value!r}')
    return value


# --- IBM ArgQ-Rank-30k -----------------------------------------------------------------------------------

ARGQ_REQUIRED = ("argument", "topic", "WA", "MACE-P", "stance_WA")
ARGQ_OPTIONAL = ("set", "stance_WA_conf")


def stream_ibm_argq(
    path, lines: Iterable[str], *, topic: str | None = None, source: str | None = None, progress=None, total: int = 0
) -> Iterator[SentenceRecord]:
    """One sentence per row: ``argument`` on ``topic`` with the stance of ``stance_WA``; ``metadata["argq"]`` keeps
    ``set``, ``WA``, ``MACE-P``, ``stance_WA`` and ``stance_WA_conf``."""
    source = clean_str(path, 1, source or "ibm-argq-rank-30k", "source", limit=MAX_SOURCE)
    for n, (line, row) in enumerate(csv_rows(path, lines, "excel", ARGQ_REQUIRED, ARGQ_OPTIONAL), start=1):
        stance = ibm_stance(path, line, row["stance_WA"], "stance_WA")
        argq: dict[str, Any] = {
            "WA": number(path, line, row["WA"], "WA", low=0, high=1),
            "MACE-P": number(path, line, row["MACE-P"], "MACE-P", low=0, high=1),
            "stance_WA": {"pro": 1, "con": -1, "none": 0}[stance],
        }
        if "stance_WA_conf" in row and row["stance_WA_conf"].strip():
            argq["stance_WA_conf"] = number(path, line, row["stance_WA_conf"], "stance_WA_conf", low=0, high=1)
        if "set" in row:
            argq["set"] = _set(path, line, row["set"])
        yield SentenceRecord(
            line=line,
            topic=topic_name(path, line, row["topic"], topic),
            text=clean_str(path, line, row["argument"], "argument", limit=MAX_TEXT),
            stance=stance,
            source=source,
            metadata={"argq": argq},
        )
        tick(progress, n, total, "parsing")


# --- IBM ArgKP ---------------------------------------------------------------------------------------------

ARGKP_PAIRS = ("topic", "argument", "key_point", "stance", "label")
ARGKP_ARGUMENTS = ("arg_id", "argument", "topic", "stance")
ARGKP_KEY_POINTS = ("key_point_id", "key_point", "topic", "stance")
ARGKP_LABELS = ("arg_id", "key_point_id", "label")
_COMPANION = re.compile(r"^(key_points|labels)_(.+)\.csv$", re.IGNORECASE)
_ARGUMENTS = re.compile(r"^arguments(?:_(.+))?\.csv$", re.IGNORECASE)


def companion_of(path) -> Path | None:
    """For ``key_points_<set>.csv`` / ``labels_<set>.csv``: the ``arguments_<set>.csv`` they belong to (whether or
    not it exists); else None."""
    path = Path(path)
    m = _COMPANION.match(path.name)
    return path.with_name(f"arguments_{m.group(2)}.csv") if m else None


def _header(text: str) -> list[str]:
    try:
        return [h.strip() for h in next(csv.reader(text_lines(text)), [])]
    except csv.Error:
        return []


def _label(path, line, value) -> int:
    raw = value.strip() if isinstance(value, str) else value
    if raw not in ("0", "1", "0.0", "1.0"):
        raise ImportFailed(path, line, f'"label" must be 1 (matching) or 0 (not matching), got {value!r}')
    return int(float(raw))


class _Arguments:
    """Arguments grouped by (topic, text): the rows of one argument become one sentence."""

    def __init__(self, path, source: str):
        self.path, self.source = path, source
        self.records: list[SentenceRecord] = []
        self.by_key: dict[tuple[str, str], SentenceRecord] = {}

    def add(self, line: int, topic: str, text: str, stance: str, argkp: dict) -> SentenceRecord:
        key = (topic.lower(), normalise(text))
        record = self.by_key.get(key)
        if record is None:
            record = SentenceRecord(
                line=line, topic=topic, text=text, stance=stance, source=self.source, metadata={"argkp": argkp}
            )
            self.by_key[key] = record
            self.records.append(record)
        elif record.stance != stance:
            raise ImportFailed(
                self.path, line, f"this argument has stance {stance} here but {record.stance} on line {record.line}"
            )
        return record


def _pairs_file(path, text: str, topic, source: str, progress) -> ParsedFile:
    """``ArgKP-2021_dataset.csv``: one row per (argument, key point) pair."""
    args = _Arguments(path, source)
    total = count_lines(text)
    for n, (line, row) in enumerate(csv_rows(path, text_lines(text), "excel", ARGKP_PAIRS, ("set",)), start=1):
        set_name = _set(path, line, row.get("set"))
        record = args.add(
            line,
            topic_name(path, line, row["topic"], topic),
            clean_str(path, line, row["argument"], "argument", limit=MAX_TEXT),
            ibm_stance(path, line, row["stance"]),
            {"key_points": []},
        )
        if set_name:
            record.metadata["argkp"]["set"] = set_name
        record.metadata["argkp"]["key_points"].append(
            {
                "key_point": clean_str(path, line, row["key_point"], "key_point", limit=MAX_TEXT),
                "label": _label(path, line, row["label"]),
            }
        )
        tick(progress, n, total, "parsing")
    return ParsedFile(sentences=args.records, merge_metadata=True)


def _arguments_file(path, text: str, topic, source: str, progress) -> ParsedFile:
    """``arguments_<set>.csv`` and, beside it, ``key_points_<set>.csv`` and ``labels_<set>.csv``."""
    path = Path(path)
    m = _ARGUMENTS.match(path.name)
    suffix = (m.group(1) if m else None) or ""
    set_name = suffix.lower() if suffix.lower() in SETS else ""
    args = _Arguments(path, source)
    by_id: dict[str, SentenceRecord] = {}
    total = count_lines(text)
    for n, (line, row) in enumerate(csv_rows(path, text_lines(text), "excel", ARGKP_ARGUMENTS), start=1):
        arg_id = clean_str(path, line, row["arg_id"], "arg_id", limit=MAX_EXTERNAL_ID)
        if arg_id in by_id:
            raise ImportFailed(path, line, f"arg_id {arg_id!r} appears twice (first on line {by_id[arg_id].line})")
        argkp: dict[str, Any] = {"arg_ids": [], "key_points": []}
        if set_name:
            argkp["set"] = set_name
        record = args.add(
            line,
            topic_name(path, line, row["topic"], topic),
            clean_str(path, line, row["argument"], "argument", limit=MAX_TEXT),
            ibm_stance(path, line, row["stance"]),
            argkp,
        )
        record.metadata["argkp"]["arg_ids"].append(arg_id)
        record.external_id = record.external_id or arg_id
        by_id[arg_id] = record
        tick(progress, n, total, "parsing")

    key_points: dict[str, str] = {}
    kp_path = path.with_name(f"key_points_{suffix}.csv") if suffix else path.with_name("key_points.csv")
    labels_path = path.with_name(f"labels_{suffix}.csv") if suffix else path.with_name("labels.csv")
    if kp_path.exists():
        kp_text = read_text(kp_path)
        for line, row in csv_rows(kp_path, text_lines(kp_text), "excel", ARGKP_KEY_POINTS):
            kp_id = clean_str(kp_path, line, row["key_point_id"], "key_point_id", limit=MAX_EXTERNAL_ID)
            if kp_id in key_points:
                raise ImportFailed(kp_path, line, f"key_point_id {kp_id!r} appears twice")
            ibm_stance(kp_path, line, row["stance"])
            key_points[kp_id] = clean_str(kp_path, line, row["key_point"], "key_point", limit=MAX_TEXT)
    if labels_path.exists():
        if not kp_path.exists():
            raise ImportFailed(labels_path, 0, f"the labels need their key points: {kp_path.name} is not beside them")
        labels_text = read_text(labels_path)
        seen: dict[tuple[str, str], int] = {}
        for line, row in csv_rows(labels_path, text_lines(labels_text), "excel", ARGKP_LABELS):
            arg_id, kp_id = row["arg_id"].strip(), row["key_point_id"].strip()
            if arg_id not in by_id:
                raise ImportFailed(labels_path, line, f"arg_id {arg_id!r} is not in {path.name}")
            if kp_id not in key_points:
                raise ImportFailed(labels_path, line, f"key_point_id {kp_id!r} is not in {kp_path.name}")
            if (arg_id, kp_id) in seen:
                raise ImportFailed(
                    labels_path,
                    line,
                    f"the pair ({arg_id}, {kp_id}) is labelled twice (first on line {seen[arg_id, kp_id]})",
                )
            seen[arg_id, kp_id] = line
            by_id[arg_id].metadata["argkp"]["key_points"].append(
                {
                    "key_point_id": kp_id,
                    "key_point": key_points[kp_id],
                    "label": _label(labels_path, line, row["label"]),
                }
            )
    return ParsedFile(sentences=args.records, merge_metadata=True)


def parse_ibm_argkp(
    path, text: str, *, topic: str | None = None, source: str | None = None, progress=None
) -> ParsedFile:
    source = clean_str(path, 1, source or "ibm-argkp", "source", limit=MAX_SOURCE)
    header = set(_header(text))
    if set(ARGKP_PAIRS) <= header:
        return _pairs_file(path, text, topic, source, progress)
    if set(ARGKP_ARGUMENTS) <= header:
        return _arguments_file(path, text, topic, source, progress)
    if set(ARGKP_KEY_POINTS) <= header or set(ARGKP_LABELS) <= header:
        main = companion_of(path)
        raise ImportFailed(
            path,
            1,
            f"this is an ArgKP {'labels' if 'label' in header else 'key-points'} file: import "
            f"{main.name if main else 'the arguments_<set>.csv beside it'} (its key points "
            f"and labels are read with it)",
        )
    raise ImportFailed(
        path,
        1,
        f"not an ArgKP file: expected the columns {', '.join(ARGKP_PAIRS)} "
        f"(ArgKP-2021_dataset.csv) or {', '.join(ARGKP_ARGUMENTS)} (arguments_<set>.csv); "
        f"the header has: {', '.join(sorted(header)) or 'nothing'}",
    )


# --- args.me JSON ------------------------------------------------------------------------------------------

_WS = re.compile(r"[ \t\n\r]*")
ARGSME_STANCES = {"pro": "pro", "con": "con"}


def _skip(text: str, i: int) -> int:
    found = _WS.match(text, i)  # the pattern matches the empty string too: always a match
    return found.end() if found else i


class _Lines:
    """Line numbers of offsets visited in increasing order (no rescan from the start)."""

    def __init__(self, text: str):
        self.text, self.pos, self.line = text, 0, 1

    def at(self, i: int) -> int:
        if i < self.pos:
            return self.text.count("\n", 0, i) + 1
        self.line += self.text.count("\n", self.pos, i)
        self.pos = i
        return self.line


def argsme_objects(path, text: str) -> Iterator[tuple[int, dict]]:
    """``(line, argument object)`` of an args.me document (``{"arguments": [...]}``, other top-level keys skipped;
    a bare list of arguments too), each element checked under :func:`argora.inputs.loads`' rules."""
    decoder = json.JSONDecoder()
    lines = _Lines(text)

    def expect(i: int, chars: str, what: str) -> int:
        i = _skip(text, i)
        if i >= len(text) or text[i] not in chars:
            found = repr(text[i]) if i < len(text) else "the end of the file"
            raise ImportFailed(path, lines.at(i), f"expected {what}, found {found}")
        return i

    def value(i: int):
        try:
            return decoder.raw_decode(text, i)
        except json.JSONDecodeError as exc:
            raise ImportFailed(path, exc.lineno, f"invalid JSON: {exc.msg} (column {exc.colno})") from None

    def elements(i: int):
        i = _skip(text, i + 1)  # after "["
        if i < len(text) and text[i] == "]":
            return i + 1
        while True:
            start = _skip(text, i)
            _, end = value(start)
            line = lines.at(start)
            try:
                obj = loads(text[start:end])
            except InvalidJSON as exc:
                raise ImportFailed(path, line, str(exc)) from None
            if not isinstance(obj, dict):
                raise ImportFailed(path, line, f"an argument must be a JSON object, got {type(obj).__name__}")
            yield line, obj
            i = expect(end, ",]", '"," or "]" after an argument')
            if text[i] == "]":
                return i + 1
            i += 1

    i = expect(0, "{[", 'a JSON object {"arguments": [...]}')
    if text[i] == "[":
        end = yield from elements(i)
    else:
        found, i = False, _skip(text, i + 1)
        if i < len(text) and text[i] == "}":
            end = i + 1
        else:
            while True:
                i = expect(i, '"', "a key")
                key, i = value(i)
                i = expect(i, ":", '":"')
                if key == "arguments":
                    i = expect(i + 1, "[", 'a list of arguments after "arguments"')
                    found = True
                    i = yield from elements(i)
                else:
                    _, i = value(_skip(text, i + 1))
                i = expect(i, ",}", '"," or "}"')
                if text[i] == "}":
                    end = i + 1
                    break
                i += 1
        if not found:
            raise ImportFailed(path, 1, 'no "arguments" list (an args.me file is {"arguments": [...]})')
    rest = _skip(text, end)
    if rest < len(text):
        raise ImportFailed(path, lines.at(rest), "text after the end of the JSON document")


def _short_topic(conclusion: str) -> str:
    """A conclusion as a topic name: at most 200 characters, cut at a word boundary with an ellipsis."""
    if len(conclusion) <= MAX_TOPIC:
        return conclusion
    cut = conclusion[: MAX_TOPIC - 1]
    if " " in cut[MAX_TOPIC // 2 :]:
        cut = cut[: cut.rindex(" ")]
    return cut.rstrip() + "…"


def parse_argsme_json(
    path, text: str, *, topic: str | None = None, source: str | None = None, progress=None
) -> ParsedFile:
    """Each premise of each argument a sentence on the argument's conclusion (see the module doc)."""
    source = clean_str(path, 1, source or "args.me", "source", limit=MAX_SOURCE)
    parsed = ParsedFile(merge_metadata=True)
    total = count_lines(text)
    for n, (line, obj) in enumerate(argsme_objects(path, text), start=1):
        arg_id = obj.get("id", "")
        if isinstance(arg_id, bool) or not isinstance(arg_id, (str, int)):
            raise ImportFailed(path, line, f'"id" must be a string, got {type(arg_id).__name__}')
        arg_id = clean_str(path, line, str(arg_id), "id", required=False, limit=MAX_EXTERNAL_ID)
        conclusion = obj.get("conclusion")
        if conclusion is not None and not isinstance(conclusion, str):
            raise ImportFailed(path, line, f'"conclusion" must be a string, got {type(conclusion).__name__}')
        conclusion = normalise(conclusion or "")
        if not conclusion and not topic:
            raise ImportFailed(path, line, '"conclusion" is empty (give --topic for arguments without one)')
        name = topic_name(path, line, _short_topic(conclusion) if conclusion else None, topic)
        premises = obj.get("premises")
        if not isinstance(premises, list) or not premises:
            raise ImportFailed(path, line, '"premises" must be a non-empty list of {"text", "stance"}')
        context = obj.get("context", {})
        if context is None:
            context = {}
        if not isinstance(context, dict):
            raise ImportFailed(path, line, f'"context" must be an object, got {type(context).__name__}')
        for k, premise in enumerate(premises):
            if not isinstance(premise, dict):
                raise ImportFailed(path, line, f"premises[{k}] must be an object")
            stance = premise.get("stance")
            if not isinstance(stance, str) or stance.strip().lower() not in ARGSME_STANCES:
                raise ImportFailed(path, line, f'premises[{k}].stance must be "PRO" or "CON", got {stance!r}')
            meta: dict[str, Any] = {"id": arg_id, "context": context}
            if len(premises) > 1:
                meta["premise"] = k
            if conclusion and name != conclusion:
                meta["conclusion"] = conclusion
            parsed.sentences.append(
                SentenceRecord(
                    line=line,
                    topic=name,
                    stance=ARGSME_STANCES[stance.strip().lower()],
                    source=source,
                    text=clean_str(path, line, premise.get("text"), f"premises[{k}].text", limit=MAX_TEXT),
                    external_id=arg_id,
                    metadata={"argsme": meta},
                )
            )
        tick(progress, n, total, "parsing")
    if not parsed.sentences:
        raise ImportFailed(path, 0, "no arguments: the list is empty")
    return parsed
