"""The argument-aspect span corpus in CoNLL (Ruckdeschel & Wiedemann 2022) as App. F rows.

One token and its label per line, a blank line between sentences, one file per topic. The corpus as published
(``Leibniz-HBI/argument-aspect-corpus-v1``: ``datasets/<ab|mj|mw|ne>_conll_gold_chunk.txt`` and the experiments'
``train.txt`` / ``dev.txt`` / ``test.txt``) numbers its tokens and labels each with its aspect category; a plain
``token<TAB>label`` file with BIO labels reads the same way::

    1	Nuclear	O                      Nuclear	O
    2	power	ECONOMIC IMPACT         power	B-ASP
    3	is	O                           is	O
    4	cheap	ECONOMIC IMPACT         cheap	B-ASP
    5	.	O                           .	O

- Columns: a sentence whose first line starts with the number ``1`` and has three or more fields numbers its tokens
  (``number<TAB>token<TAB>label[<TAB>...]``: the token is the second field, the label the third; further columns,
  such as the corpus's ``True`` / ``False`` whitespace flag, are ignored, and the numbers must run 1, 2, 3 ...).
  Otherwise the token is the first field and the label the last (a line without a tab is split on spaces).
- Labels: ``O``; ``B`` / ``I`` with an optional category (``B-ASP``, ``I-GOVERNMENT``); or a bare category
  (``GOVERNMENT``, ``UN/EMPLOYMENT RATE``), read as ``I-`` of it. A span is a ``B``, or an ``I`` after an ``O`` or
  after another category (the IOB1 reading: nothing is dropped), with the ``I``'s of its category that follow it, so
  a run of tokens with the same category is one span and two adjacent categories are two. The tagger and App. F are
  single-class: the category is kept on the sentence (``span_categories``), not in the rows. A label that is a
  number or ``True`` / ``False`` is refused (a column mix-up). ``-DOCSTART-`` lines and comment lines (``# ...``
  without a tab, or whose last field is not a label) end a sentence and are skipped.
- Files: ``.conll`` or ``.txt``; a folder's such files (sorted; hidden ones and README / LICENSE / NOTICE files left
  out). The topic is given, else from the file's name: one of the corpus's topic codes as a word of it
  (``mw_conll_gold_chunk.txt`` -> ``minimum wage``; ``ab`` abortion, ``mj`` marijuana legalization, ``ne``
  nuclear energy), for a split file (``train`` / ``dev`` / ``test``) of its folders' names (``exp1_mw/...``), else the
  name itself (``nuclear_energy.conll`` -> ``nuclear energy``: ``_`` and ``-`` read as spaces).
- The sentence is rebuilt from its tokens (:func:`detokenize`): the tokens exactly as written, one space between
  two tokens except before closing punctuation (``. , ; : ! ? ) ] } %``, ``...``) and contractions (``n't``,
  ``'s``, ``'re``...), after opening brackets, and inside straight quotes (``" the report "`` -> ``"the
  report"``). Every token keeps its character offsets, and a span is ``text[begin of its first token : end of its
  last]``, so ``aspect_pos_string`` is always exactly the span's text.
- Stance: the corpus's files carry none, and a stance is never invented. A sentence's stance is, in this order: its
  own from the file -- a comment line ``# stance = pro`` (``con``, ``unknown``; UKP's ``Argument_for`` /
  ``Argument_against`` also do; ``# stance: pro`` too) before the sentence's first token, as CoNLL-U writes
  ``# text = ...``; it applies to the next sentence only --, else the stance of the same sentence (topic + text) in
  the corpus when it is there as pro / con (import the UKP corpus first), else the ``stance`` given for the whole
  file (``pro`` / ``con`` / ``unknown``; it does not override a sentence's own ``unknown``), else **unknown**:
  App. F ``"stance": null``, the item payload's ``"unknown"`` (:mod:`.appf`). A file's stance that contradicts the
  corpus's pro / con for the same sentence is refused with the comment's line; a stance value that is none of these
  is refused with its line.
- The App. F ``hash`` is the corpus's sentence hash of (topic, text). The same sentence twice with the same spans
  is kept once (counted in ``duplicates``); with other spans it is refused (both lines named).

:func:`appf_rows` is what ``manage.py aspects import FILE|FOLDER --format conll`` and the studio's ``conll`` source
import (through :func:`annotation.task_types.aspect.appf.import_appf`, so gold, items and round trips are App. F's),
and what ``aspects convert`` writes; :func:`tagger_rows` what ``manage.py train tagger --data FILE.conll`` reads.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from corpus.hashing import normalise, sentence_hash
from corpus.importers.base import ImportFailed
from corpus.importers.readers import read_text
from corpus.models import Sentence

from .appf import APPF_STANCE, STANCE_FROM_APPF, UNKNOWN, AppFRow, format_pos

EXTENSIONS = (".conll", ".txt")
STANCES = ("pro", "con")
STANCE_CHOICES = ("pro", "con", UNKNOWN)  # what a file (or the whole-file option) may say
_STANCE_COMMENT = re.compile(r"^#\s*stance\s*[=:]\s*(.*?)\s*$", re.IGNORECASE)
# the corpus's topic codes (its file and experiment names: ab_conll_gold_chunk.txt, exp1_mw/...)
CORPUS_TOPICS = {"ab": "abortion", "mj": "marijuana legalization", "mw": "minimum wage", "ne": "nuclear energy"}
SPLIT_NAMES = ("train", "dev", "test")
_NOT_CORPUS_FILES = ("readme", "license", "licence", "notice", "changelog")

_CLOSING = re.compile(r"^(?:[.,;:!?)\]}%…]+|\.\.\.|n['’]t|['’](?:s|re|ve|ll|d|m|t))$", re.IGNORECASE)
_OPENING = {"(", "[", "{", "``", "“", "‘"}
_CLOSING_QUOTES = {"''", "”", "’"}
_QUOTES = {'"', "'"}


def detokenize(tokens: list[str]) -> tuple[str, list[tuple[int, int]]]:
    """``(text, [(begin, end) of each token])``: the tokens joined by the rules of the module docstring."""
    parts: list[str] = []
    offsets: list[tuple[int, int]] = []
    position = 0
    open_quotes: set[str] = set()
    glue_next = True  # no space before the first token
    for token in tokens:
        glue = glue_next
        glue_next = False
        if token in _QUOTES:
            if token in open_quotes:  # closing quote: onto the previous token
                open_quotes.discard(token)
                glue = True
            else:  # opening quote: the next token onto it
                open_quotes.add(token)
                glue_next = True
        elif _CLOSING.match(token) or token in _CLOSING_QUOTES:
            glue = True
        elif token in _OPENING:
            glue_next = True
        if parts and not glue:
            parts.append(" ")
            position += 1
        offsets.append((position, position + len(token)))
        parts.append(token)
        position += len(token)
    return "".join(parts), offsets


def _corpus_topic(name: str) -> str | None:
    words = re.split(r"[_\-\s.]+", name.lower())
    return next((CORPUS_TOPICS[w] for w in words if w in CORPUS_TOPICS), None)


def topic_of_file(path) -> str:
    """``mw_conll_gold_chunk.txt`` -> ``minimum wage``, ``exp1_mw/corpora/conll_gold_token/train.txt`` -> ``minimum
    wage``, ``nuclear_energy.conll`` -> ``nuclear energy`` (the module docstring)."""
    path = Path(path)
    names = [path.stem] + ([p.name for p in path.parents][:3] if path.stem.lower() in SPLIT_NAMES else [])
    for name in names:
        topic = _corpus_topic(name)
        if topic:
            return topic
    return normalise(re.sub(r"[_\-]+", " ", path.stem))


@dataclass
class ConllSentence:
    line: int  # the line of its first token
    topic: str
    tokens: list[str]
    labels: list[str]  # B / I / O
    text: str = ""
    offsets: list[tuple[int, int]] = field(default_factory=list)
    spans: list[tuple[int, int]] = field(default_factory=list)  # (begin, length), App. F's form
    file: str = ""
    categories: list[str | None] = field(default_factory=list)  # per token: its label's category, if any
    span_categories: list[str | None] = field(default_factory=list)  # per span
    stance: str | None = None  # the file's own (a ``# stance = ...`` line), if any
    stance_line: int = 0  # the line that said it

    def build(self) -> ConllSentence:
        self.text, self.offsets = detokenize(self.tokens)
        categories = self.categories or [None] * len(self.labels)
        spans, kinds, start, open_category = [], [], None, None
        for i, (label, category) in enumerate(zip(self.labels + ["O"], categories + [None])):
            if start is not None and (label != "I" or category != open_category):
                begin, end = self.offsets[start][0], self.offsets[i - 1][1]
                spans.append((begin, end - begin))
                kinds.append(open_category)
                start = None
            if label == "B" or (label == "I" and start is None):
                start, open_category = i, category
        self.spans, self.span_categories = spans, kinds
        return self


def parse_label(value: str) -> tuple[str, str | None] | None:
    """``(B | I | O, category or None)`` of a label cell (the module docstring), or None when it is not a label."""
    value = value.strip()
    low = value.lower()
    if not value or low in ("true", "false") or value.lstrip("+-").isdigit():
        return None
    if low == "o":
        return "O", None
    if low in ("b", "i"):
        return low.upper(), None
    if low[:2] in ("b-", "i-") and value[2:].strip():
        category = value[2:].strip()
        return low[0].upper(), (None if category.lower() == "asp" else category)
    return "I", value  # a bare category: the IO reading


def _numbered(lines: list[tuple[int, list[str]]]) -> bool:
    """Whether a sentence's lines number their tokens (first field 1, 2, ... with a token and a label after it)."""
    first = lines[0][1]
    return len(first) >= 3 and first[0] == "1" and (len(lines) == 1 or lines[1][1][0] == "2")


def parse_stance(value: str) -> str | None:
    """``pro`` / ``con`` / ``unknown`` of a file's stance value (UKP's ``Argument_for`` / ``Argument_against`` read
    as pro / con), or None when it is none of them."""
    value = value.strip()
    if value in STANCE_FROM_APPF:
        return STANCE_FROM_APPF[value]
    return value.lower() if value.lower() in STANCE_CHOICES else None


def _sentence_lines(path: Path, text: str) -> list[tuple[list[tuple[int, list[str]]], str | None, int]]:
    """The token lines of each sentence, as ``(line number, fields)``, with the stance a ``# stance = ...`` line
    before it gave (and that line's number)."""
    groups: list[tuple[list[tuple[int, list[str]]], str | None, int]] = []
    current: list[tuple[int, list[str]]] | None = None
    stance, stance_line = None, 0
    for number, line in enumerate(text.split("\n"), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("-DOCSTART-"):
            current = None
            continue
        fields = line.rstrip("\r").split("\t") if "\t" in line else stripped.split()
        fields = [f.strip() for f in fields]
        if stripped.startswith("#") and ("\t" not in line or len(fields) < 2 or parse_label(fields[-1]) is None):
            current = None  # a comment line (a token line starting with # has a tab and a label)
            said = _STANCE_COMMENT.match(stripped)
            if said:
                stance, stance_line = parse_stance(said.group(1)), number
                if stance is None:
                    raise ImportFailed(
                        path,
                        number,
                        f"stance {said.group(1)!r} is not pro, con or unknown "
                        "(Argument_for / Argument_against also do)",
                    )
            continue
        if len(fields) < 2:
            raise ImportFailed(path, number, f"expected a token and its label (token<TAB>label), found {line!r}")
        if current is None:
            current = []
            groups.append((current, stance, stance_line))
            stance, stance_line = None, 0
        current.append((number, fields))
    return groups


def parse_conll(path, text: str | None = None, *, topic: str | None = None) -> list[ConllSentence]:
    """The sentences of one CoNLL file, validated (:class:`ImportFailed` ``file:line: reason`` on the first problem)."""
    path = Path(path)
    text = read_text(path) if text is None else text
    name = normalise(topic) if topic else topic_of_file(path)
    if not name:
        raise ImportFailed(path, 0, "no topic: give one (the file name has none)")
    sentences: list[ConllSentence] = []
    for lines, stance, stance_line in _sentence_lines(path, text):
        numbered = _numbered(lines)
        sentence = ConllSentence(
            line=lines[0][0], topic=name, tokens=[], labels=[], file=path.name, stance=stance, stance_line=stance_line
        )
        for position, (number, fields) in enumerate(lines, start=1):
            if numbered and (len(fields) < 3 or fields[0] != str(position)):
                found = "\t".join(fields)
                raise ImportFailed(
                    path,
                    number,
                    f"expected token number {position} then its token and label "
                    f"(this sentence numbers its tokens), found {found!r}",
                )
            token, cell = (fields[1], fields[2]) if numbered else (fields[0], fields[-1])
            label = parse_label(cell)
            if label is None:
                raise ImportFailed(
                    path,
                    number,
                    f"label {cell!r} is not a label: O, B or I (with an optional "
                    "category: B-ASP, I-GOVERNMENT) or a category name; the label is "
                    "the last column, or the third after a token number",
                )
            if not token:
                raise ImportFailed(path, number, "the token is empty")
            sentence.tokens.append(token)
            sentence.labels.append(label[0])
            sentence.categories.append(label[1])
        sentences.append(sentence.build())
    if not sentences:
        raise ImportFailed(path, 0, "no sentences: the file has no token lines")
    return sentences


def is_corpus_file(path: Path) -> bool:
    """A ``.conll`` / ``.txt`` file that is not hidden and not a README, LICENSE or NOTICE."""
    return (
        path.is_file()
        and not path.name.startswith(".")
        and path.suffix.lower() in EXTENSIONS
        and not path.stem.lower().startswith(_NOT_CORPUS_FILES)
    )


def conll_files(path) -> list[Path]:
    """A file as it is, or a folder's ``.conll`` / ``.txt`` files (:func:`is_corpus_file`, sorted)."""
    path = Path(path)
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if is_corpus_file(p))
        if not files:
            raise ImportFailed(path, 0, "folder has no .conll or .txt files")
        return files
    if not path.exists():
        raise ImportFailed(path, 0, "file not found")
    return [path]


def read_sentences(path, *, topic: str | None = None) -> tuple[list[ConllSentence], int]:
    """``(sentences, duplicates)`` of a file or folder, one per (topic, text): a repeat with the same spans is
    dropped and counted, one with other spans refused."""
    out: list[ConllSentence] = []
    seen: dict[str, ConllSentence] = {}
    duplicates = 0
    for file in conll_files(path):
        for s in parse_conll(file, topic=topic):
            key = sentence_hash(s.topic, s.text)
            first = seen.get(key)
            if first is None:
                seen[key] = s
                out.append(s)
            elif sorted(first.spans) == sorted(s.spans):
                duplicates += 1
            else:
                raise ImportFailed(
                    Path(path) / s.file if Path(path).is_dir() else path,
                    s.line,
                    f"this sentence is also on line {first.line} of {first.file} with other aspects",
                )
    return out, duplicates


def _stances(hashes: list[str]) -> dict[str, str]:
    """``{content hash: stance}`` of the corpus sentences among ``hashes``."""
    out: dict[str, str] = {}
    for start in range(0, len(hashes), 500):
        out.update(
            Sentence.objects.filter(content_hash__in=hashes[start : start + 500]).values_list("content_hash", "stance")
        )
    return out


def appf_rows(path, *, topic: str | None = None, stance: str | None = None, stats: dict | None = None) -> list[AppFRow]:
    """App. F rows of a CoNLL file or folder (see the module docstring; ``stance``: the whole file's, for sentences
    that have none of their own and are not in the corpus; none given: unknown); ``stats`` (optional) receives
    ``{"sentences", "duplicates", "stance_from_file", "stance_from_corpus", "stance_unknown"}``."""
    if stance is not None and stance not in STANCE_CHOICES:
        raise ImportFailed(path, 0, f"stance must be pro, con or unknown, got {stance!r}")
    sentences, duplicates = read_sentences(path, topic=topic)
    known = _stances([sentence_hash(s.topic, s.text) for s in sentences])
    rows = []
    counts = {"stance_from_file": 0, "stance_from_corpus": 0, "stance_unknown": 0}
    for s in sentences:
        key = sentence_hash(s.topic, s.text)
        corpus_stance = known.get(key) if known.get(key) in STANCES else None
        if s.stance in STANCES and corpus_stance not in (None, s.stance):
            where = Path(path) / s.file if Path(path).is_dir() else Path(path)
            raise ImportFailed(
                where,
                s.stance_line,
                f"stance {s.stance} here, but the corpus has this sentence on {s.topic!r} as {corpus_stance}",
            )
        if s.stance in STANCES:
            row_stance = s.stance
            counts["stance_from_file"] += 1
        elif corpus_stance is not None:
            row_stance = corpus_stance
            counts["stance_from_corpus"] += 1
        else:
            row_stance = stance if stance in STANCES and s.stance is None else UNKNOWN
        if row_stance == UNKNOWN:
            counts["stance_unknown"] += 1
        positions = [format_pos(b, n) for b, n in s.spans]
        rows.append(
            AppFRow(
                line=s.line,
                hash=key,
                sentence=s.text,
                topic=s.topic,
                stance=row_stance,
                aspect_pos=positions,
                aspect_pos_string=[s.text[b : b + n] for b, n in s.spans],
                spans=list(s.spans),
                raw_stance=APPF_STANCE.get(row_stance),
            )
        )
    if stats is not None:
        stats.update(sentences=len(rows), duplicates=duplicates, **counts)
    return rows


def appf_dict(row: AppFRow) -> dict:
    """An App. F row as the JSONL line ``aspects export`` writes (``"stance": null`` when it is unknown)."""
    return {
        "hash": row.hash,
        "aspect_pos": list(row.aspect_pos),
        "aspect_pos_string": list(row.aspect_pos_string),
        "stance": row.raw_stance,
        "topic": row.topic,
        "sentence": row.sentence,
    }


def tagger_rows(path, *, topic: str | None = None) -> list[dict]:
    """Tagger rows (App. F's ``sentence`` + ``aspect_pos``, with ``topic`` and ``hash``) of a CoNLL file or folder;
    no stance is needed."""
    sentences, _ = read_sentences(path, topic=topic)
    return [
        {
            "hash": sentence_hash(s.topic, s.text),
            "topic": s.topic,
            "sentence": s.text,
            "aspect_pos": [format_pos(b, n) for b, n in s.spans],
            "aspect_pos_string": [s.text[b : b + n] for b, n in s.spans],
        }
        for s in sentences
    ]
