"""Words of a text with their character offsets, the one tokenizer every part of Argora uses for spans: the aspect
candidates and free spans, the span-grounding editor's snapping, the taggers' word labels and span metrics.

Tokens are runs of word characters, joined across an inner apostrophe or hyphen (``don't``, ``anti-abortion`` are one
token each); every other non-space character is a one-character token. Offsets index the text exactly as given.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# NLTK's English stopword list (179 words, nltk 3.x ``stopwords.words("english")``), shipped here because
# the NLTK data download is not available offline. Matching is case-insensitive; ’ counts as '.
STOPWORDS: frozenset[str] = frozenset(
    """
i me my myself we our ours ourselves you you're you've you'll you'd your yours yourself yourselves he him his
himself she she's her hers herself it it's its itself they them their theirs themselves what which who whom
this that that'll these those am is are was were be been being have has had having do does did doing a an
the and but if or because as until while of at by for with about against between into through during before
after above below to from up down in out on off over under again further then once here there when where why
how all any both each few more most other some such no nor not only own same so than too very s t can will
just don don't should should've now d ll m o re ve y ain aren aren't couldn couldn't didn didn't doesn
doesn't hadn hadn't hasn hasn't haven haven't isn isn't ma mightn mightn't mustn mustn't needn needn't shan
shan't shouldn shouldn't wasn wasn't weren weren't won won't wouldn wouldn't
""".split()
)

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


def is_stopword(word: str) -> bool:
    return word.lower().replace("’", "'") in STOPWORDS


def tokenize(sentence: str) -> list[Token]:
    """Tokens of ``sentence`` with their character offsets."""
    return [Token(m.group(0), m.start(), m.end()) for m in _TOKEN.finditer(sentence)]


def token_offsets(text: str) -> list[list[int]]:
    """``[[begin, end], ...]``: the character offsets of every token of ``text`` (what span editors snap to)."""
    return [[t.begin, t.end] for t in tokenize(text)]
