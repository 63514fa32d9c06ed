"""The aspect candidates of a sentence (Arg-CTRL §3.1 Step 2c, App. A).

A candidate is any 1- to 4-gram of consecutive tokens. :func:`ngrams` gives all of them (used for the
Step 2a training labels, where "no other limitations or filtering mechanisms are applied"); :func:`candidates`
applies the App. A filters for what a worker is offered: a candidate is removed when

- any of its tokens is punctuation (a token with no letter or digit: ``.``, ``,``, ``-``, ``"``...),
- any of its tokens contains a digit,
- its first or its last token is a stopword (:data:`STOPWORDS`, case-insensitive).

Tokens are :func:`corpus.tokens.tokenize`'s (runs of word characters joined across an inner apostrophe or hyphen;
every other non-space character is a token of its own); stopwords are :data:`corpus.tokens.STOPWORDS`.
A candidate's ``begin``/``length`` are character offsets into the sentence exactly as given, and its
``text`` is ``sentence[begin:begin + length]`` (inner whitespace kept as written).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from corpus.tokens import STOPWORDS, Token, is_stopword, tokenize  # noqa: F401  (STOPWORDS: this module's API)

MAX_N = 4


@dataclass(frozen=True)
class Candidate:
    """An n-gram of a sentence: ``text == sentence[begin:begin + length]``; ``n`` tokens."""

    begin: int
    length: int
    text: str
    n: int

    @property
    def end(self) -> int:
        return self.begin + self.length

    @property
    def id(self) -> str:
        """The id the HIT page posts back: ``"<begin>:<length>"`` (unique within a sentence)."""
        return span_id(self.begin, self.length)

    def as_dict(self) -> dict:
        return {"id": self.id, "begin": self.begin, "length": self.length, "text": self.text}


def span_id(begin: int, length: int) -> str:
    return f"{begin}:{length}"


_SPAN = re.compile(r"^\s*\(?\s*(\d+)\s*[:,]\s*(\d+)\s*\)?\s*$")


def parse_span(raw) -> tuple[int, int] | None:
    """``"18:5"``, ``"(18,5)"``, ``[18, 5]`` or ``{"begin": 18, "length": 5}`` -> ``(18, 5)``; else None."""
    if isinstance(raw, str):
        m = _SPAN.match(raw)
        return (int(m.group(1)), int(m.group(2))) if m else None
    if isinstance(raw, dict):
        raw = (raw.get("begin"), raw.get("length"))
    if (
        isinstance(raw, (list, tuple))
        and len(raw) == 2
        and all(isinstance(v, int) and not isinstance(v, bool) for v in raw)
    ):
        return int(raw[0]), int(raw[1])
    return None


def ngrams(sentence: str, max_n: int = MAX_N, tokens: list[Token] | None = None) -> list[Candidate]:
    """Every 1..max_n-gram of consecutive tokens, unfiltered, ordered by (begin, length)."""
    tokens = tokenize(sentence) if tokens is None else tokens
    out: list[Candidate] = []
    for i in range(len(tokens)):
        for n in range(1, max_n + 1):
            if i + n > len(tokens):
                break
            begin, end = tokens[i].begin, tokens[i + n - 1].end
            out.append(Candidate(begin, end - begin, sentence[begin:end], n))
    out.sort(key=lambda c: (c.begin, c.length))
    return out


def keep(tokens: list[Token]) -> bool:
    """The App. A filter for the tokens of one n-gram."""
    if not tokens:
        return False
    if any(t.is_punct or t.has_digit for t in tokens):
        return False
    return not (tokens[0].is_stopword or tokens[-1].is_stopword)


def candidates(sentence: str, max_n: int = MAX_N) -> list[Candidate]:
    """The filtered 1..max_n-gram aspect candidates of ``sentence``, ordered by (begin, length)."""
    tokens = tokenize(sentence)
    out: list[Candidate] = []
    for i in range(len(tokens)):
        for n in range(1, max_n + 1):
            if i + n > len(tokens):
                break
            window = tokens[i : i + n]
            if keep(window):
                begin, end = window[0].begin, window[-1].end
                out.append(Candidate(begin, end - begin, sentence[begin:end], n))
    out.sort(key=lambda c: (c.begin, c.length))
    return out
