"""The argument-aspect span corpus in CoNLL (Ruckdeschel & Wiedemann 2022) as App. F rows.

One token and its BIO label per line, a blank line between sentences, one file per topic::

    Nuclear	O
    power	B-ASP
    is	O
    n't	O
    cheap	B-ASP
    .	O

- A line is ``token<TAB>label`` (more tab-separated columns are allowed: the token is the first, the label the
  last; a line without a tab is split on spaces). Labels: ``O``, ``B-ASP`` / ``I-ASP`` or ``B`` / ``I`` (any case).
  An ``I`` after an ``O`` starts a span (the IOB1 reading; nothing is dropped). ``-DOCSTART-`` lines and comment
  lines (``# ...`` whose last field is not a label) end a sentence and are skipped.
- The topic is the file name (``nuclear_energy.conll`` -> ``nuclear energy``: ``_`` and ``-`` read as spaces) unless
  one is given.
- The sentence is rebuilt from its tokens (:func:`detokenize`): the tokens exactly as written, one space between
  two tokens except before closing punctuation (``. , ; : ! ? ) ] } %``, ``...``) and contractions (``n't``,
  ``'s``, ``'re``...), after opening brackets, and inside straight quotes (``" the report "`` -> ``"the
  report"``). Every token keeps its character offsets, and a span is ``text[begin of its first token : end of its
  last]``, so ``aspect_pos_string`` is always exactly the span's text.
- App. F needs each sentence's stance (``Argument_for`` / ``Argument_against``), which CoNLL does not carry: it is
  the stance of the same sentence (topic + text) in the corpus when it is there (import the UKP corpus first), else
  the ``stance`` given (``pro`` / ``con``); without either the sentence is refused with its line.
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

from .appf import APPF_STANCE, AppFRow, format_pos

EXTENSIONS = (".conll",)
LABELS = {"o": "O", "b": "B", "i": "I", "b-asp": "B", "i-asp": "I"}
STANCES = ("pro", "con")

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


def topic_of_file(path) -> str:
    """``nuclear_energy.conll`` -> ``nuclear energy``."""
    return normalise(re.sub(r"[_\-]+", " ", Path(path).stem))


@dataclass
class ConllSentence:
    line: int                                   # the line of its first token
    topic: str
    tokens: list[str]
    labels: list[str]                           # B / I / O
    text: str = ""
    offsets: list[tuple[int, int]] = field(default_factory=list)
    spans: list[tuple[int, int]] = field(default_factory=list)  # (begin, length), App. F's form
    file: str = ""

    def build(self) -> "ConllSentence":
        self.text, self.offsets = detokenize(self.tokens)
        spans, start = [], None
        for i, label in enumerate(self.labels + ["O"]):
            if start is not None and label != "I":
                begin, end = self.offsets[start][0], self.offsets[i - 1][1]
                spans.append((begin, end - begin))
                start = None
            if label == "B" or (label == "I" and start is None):
                start = i
        self.spans = spans
        return self


def _label(fields: list[str]) -> str | None:
    return LABELS.get(fields[-1].lower()) if len(fields) >= 2 else None


def parse_conll(path, text: str | None = None, *, topic: str | None = None) -> list[ConllSentence]:
    """The sentences of one CoNLL file, validated (:class:`ImportFailed` ``file:line: reason`` on the first problem)."""
    path = Path(path)
    text = read_text(path) if text is None else text
    name = normalise(topic) if topic else topic_of_file(path)
    if not name:
        raise ImportFailed(path, 0, "no topic: give one (the file name has none)")
    sentences: list[ConllSentence] = []
    current: ConllSentence | None = None
    for number, line in enumerate(text.split("\n"), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("-DOCSTART-"):
            current = None
            continue
        fields = line.rstrip("\r").split("\t") if "\t" in line else stripped.split()
        fields = [f.strip() for f in fields]
        label = _label(fields)
        if label is None:
            if stripped.startswith("#"):
                current = None  # a comment line
                continue
            if len(fields) < 2:
                raise ImportFailed(path, number, f"expected a token and its label (token<TAB>label), found {line!r}")
            raise ImportFailed(path, number, f"label {fields[-1]!r} is not one of O, B-ASP, I-ASP, B, I")
        token = fields[0]
        if not token:
            raise ImportFailed(path, number, "the token is empty")
        if current is None:
            current = ConllSentence(line=number, topic=name, tokens=[], labels=[], file=path.name)
            sentences.append(current)
        current.tokens.append(token)
        current.labels.append(label)
    if not sentences:
        raise ImportFailed(path, 0, "no sentences: the file has no token lines")
    return [s.build() for s in sentences]


def conll_files(path) -> list[Path]:
    """A ``.conll`` file as it is, or a folder's ``.conll`` files (sorted; hidden ones left out)."""
    path = Path(path)
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.is_file() and not p.name.startswith(".")
                       and p.suffix.lower() in EXTENSIONS)
        if not files:
            raise ImportFailed(path, 0, "folder has no .conll files")
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
                raise ImportFailed(Path(path) / s.file if Path(path).is_dir() else path, s.line,
                                   f"this sentence is also on line {first.line} of {first.file} with other aspects")
    return out, duplicates


def _stances(hashes: list[str]) -> dict[str, str]:
    """``{content hash: stance}`` of the corpus sentences among ``hashes``."""
    out: dict[str, str] = {}
    for start in range(0, len(hashes), 500):
        out.update(Sentence.objects.filter(content_hash__in=hashes[start:start + 500])
                   .values_list("content_hash", "stance"))
    return out


def appf_rows(path, *, topic: str | None = None, stance: str | None = None, stats: dict | None = None
              ) -> list[AppFRow]:
    """App. F rows of a CoNLL file or folder (see the module docstring); ``stats`` (optional) receives
    ``{"sentences", "duplicates", "stance_from_corpus"}``."""
    if stance is not None and stance not in STANCES:
        raise ImportFailed(path, 0, f"stance must be pro or con, got {stance!r}")
    sentences, duplicates = read_sentences(path, topic=topic)
    known = _stances([sentence_hash(s.topic, s.text) for s in sentences])
    rows, from_corpus = [], 0
    for s in sentences:
        key = sentence_hash(s.topic, s.text)
        row_stance = known.get(key) if known.get(key) in STANCES else None
        if row_stance is not None:
            from_corpus += 1
        else:
            row_stance = stance
        if row_stance is None:
            where = Path(path) / s.file if Path(path).is_dir() else Path(path)
            raise ImportFailed(where, s.line, "no stance for this sentence: it is not in the corpus as an argument on "
                                              f"{s.topic!r}; import the corpus first or give the stance (pro or con)")
        positions = [format_pos(b, n) for b, n in s.spans]
        rows.append(AppFRow(line=s.line, hash=key, sentence=s.text, topic=s.topic, stance=row_stance,
                            aspect_pos=positions, aspect_pos_string=[s.text[b:b + n] for b, n in s.spans],
                            spans=list(s.spans), raw_stance=APPF_STANCE[row_stance]))
    if stats is not None:
        stats.update(sentences=len(rows), duplicates=duplicates, stance_from_corpus=from_corpus)
    return rows


def appf_dict(row: AppFRow) -> dict:
    """An App. F row as the JSONL line ``aspects export`` writes."""
    return {"hash": row.hash, "aspect_pos": list(row.aspect_pos), "aspect_pos_string": list(row.aspect_pos_string),
            "stance": row.raw_stance, "topic": row.topic, "sentence": row.sentence}


def tagger_rows(path, *, topic: str | None = None) -> list[dict]:
    """Tagger rows (App. F's ``sentence`` + ``aspect_pos``, with ``topic`` and ``hash``) of a CoNLL file or folder;
    no stance is needed."""
    sentences, _ = read_sentences(path, topic=topic)
    return [{"hash": sentence_hash(s.topic, s.text), "topic": s.topic, "sentence": s.text,
             "aspect_pos": [format_pos(b, n) for b, n in s.spans],
             "aspect_pos_string": [s.text[b:b + n] for b, n in s.spans]} for s in sentences]
