"""Tokens with character offsets and the aspect candidates of a sentence (Arg-CTRL §3.1 Step 2c, App. A).

A candidate is any 1- to 4-gram of consecutive tokens. :func:`ngrams` gives all of them (used for the
Step 2a training labels, where "no other limitations or filtering mechanisms are applied"); :func:`candidates`
applies the App. A filters for what a worker is offered: a candidate is removed when

- any of its tokens is punctuation (a token with no letter or digit: ``.``, ``,``, ``-``, ``"``...),
- any of its tokens contains a digit,
- its first or its last token is a stopword (:data:`STOPWORDS`, case-insensitive).

Tokens are runs of word characters, joined across an inner apostrophe or hyphen (``don't``,
``anti-abortion`` are one token each); every other non-space character is a one-character token.
A candidate's ``begin``/``length`` are character offsets into the sentence exactly as given, and its
``text`` is ``sentence[begin:begin + length]`` (inner whitespace kept as written).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

MAX_N = 4

# NLTK's English stopword list (179 words, nltk 3.x ``stopwords.words("english")``), shipped here because
# the NLTK data download is not available offline. Matching is case-insensitive; ’ counts as '.
STOPWORDS: frozenset[str] = frozenset("""
i me my myself we our ours ourselves you you're you've you'll you'd your yours yourself yourselves he him his
himself she she's her hers herself it it's its itself they them their theirs themselves what which who whom
this that that'll these those am is are was were be been being have has had having do does did doing a an
the and but if or because as until while of at by for with about against between into through during before
after above below to from up down in out on off over under again further then once here there when where why
how all any both each few more most other some such no nor not only own same so than too very s t can will
just don don't should should've now d ll m o re ve y ain aren aren't couldn couldn't didn didn't doesn
doesn't hadn hadn't hasn hasn't haven haven't isn isn't ma mightn mightn't mustn mustn't needn needn't shan
shan't shouldn shouldn't wasn wasn't weren weren't won won't wouldn wouldn't
""".split())

_TOKEN = re.compile(r"\w+(?:['’\-]\w+)*|[^\w\s]")


@dataclass(frozen=True)
class Token:
    text: str
    begin: int
    end: int

    @property
    def is_punct(self) -> bool:
        return not any(ch.isalnum() for ch in self.text)

    @property
    def has_digit(self) -> bool:
        return any(ch.isdigit() for ch in self.text)

    @property
    def is_stopword(self) -> bool:
        return is_stopword(self.text)


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
    if isinstance(raw, (list, tuple)) and len(raw) == 2 and all(
            isinstance(v, int) and not isinstance(v, bool) for v in raw):
        return int(raw[0]), int(raw[1])
    return None


def is_stopword(word: str) -> bool:
    return word.lower().replace("’", "'") in STOPWORDS


def tokenize(sentence: str) -> list[Token]:
    """Tokens of ``sentence`` with their character offsets."""
    return [Token(m.group(0), m.start(), m.end()) for m in _TOKEN.finditer(sentence)]


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
            window = tokens[i:i + n]
            if keep(window):
                begin, end = window[0].begin, window[-1].end
                out.append(Candidate(begin, end - begin, sentence[begin:end], n))
    out.sort(key=lambda c: (c.begin, c.length))
    return out


def tokens_in_span(tokens: list[Token], begin: int, length: int) -> list[Token]:
    """The tokens that overlap the character span ``[begin, begin + length)``."""
    end = begin + length
    return [t for t in tokens if t.begin < end and t.end > begin]
