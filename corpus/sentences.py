"""Sentence splitting and the Arg-CTRL topic-relevance filter (Schiller et al. 2021, §4 and App. B).

- :func:`split_sentences` splits a document offline with pysbd (rule-based, no data download), paragraph by
  paragraph, and strips the pieces.
- :func:`token_count` is what "very short" is measured in (word tokens).
- :class:`RelevanceFilter` keeps a sentence only when it contains at least one token of the topic name or of
  one of the topic's synonyms: case-insensitive, a match starts on a token boundary and may be a prefix
  ("reproduct" matches "reproduction", "abort" matches "anti-abortion"), and a multi-word synonym matches
  as a phrase ("capital punishment", whatever whitespace between the words).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

from corpus.hashing import normalise

MIN_TOKENS = 3

_TOKEN = re.compile(r"\w+(?:['’\-]\w+)*")
_PARAGRAPH = re.compile(r"\n\s*\n")
# Function words never count as "a token of the topic" (a topic such as "Legalization of marijuana").
_STOPWORDS = frozenset("""a an and are as at be by for from in into is it of on or the to vs with""".split())


@lru_cache(maxsize=1)
def _segmenter():
    import pysbd

    return pysbd.Segmenter(language="en", clean=False)


def split_sentences(text: str) -> list[str]:
    """Sentences of ``text``: paragraphs (blank-line separated) are split with pysbd, whitespace collapsed."""
    out: list[str] = []
    for paragraph in _PARAGRAPH.split(text):
        paragraph = normalise(paragraph)
        if not paragraph:
            continue
        for piece in _segmenter().segment(paragraph):
            piece = normalise(piece)
            if piece:
                out.append(piece)
    return out


def token_count(text: str) -> int:
    return len(_TOKEN.findall(text))


def relevance_terms(topic_name: str, synonyms: Iterable[str] = ()) -> list[str]:
    """The terms that make a sentence relevant: every token of the topic name (function words left out) and
    every synonym as written (a multi-word synonym stays one phrase). Lower-cased, de-duplicated."""
    terms: list[str] = []
    for token in _TOKEN.findall(topic_name.lower()):
        if token not in _STOPWORDS and token not in terms:
            terms.append(token)
    for synonym in synonyms:
        phrase = " ".join(_TOKEN.findall(str(synonym).lower()))
        if phrase and phrase not in terms:
            terms.append(phrase)
    return terms


class RelevanceFilter:
    """``RelevanceFilter("Cloning", ["clone", "reproduct"])("Reproduction is natural.") -> True``."""

    def __init__(self, topic_name: str, synonyms: Iterable[str] = ()):
        self.terms = relevance_terms(topic_name, synonyms)
        if not self.terms:
            raise ValueError(f"topic {topic_name!r} has no token to filter on")
        alternatives = sorted(
            (r"\s+".join(re.escape(w) for w in term.split(" ")) for term in self.terms), key=len, reverse=True
        )
        # Starts on a token boundary; may end inside a token (prefix match).
        self.pattern = re.compile(r"(?<!\w)(?:" + "|".join(alternatives) + ")", re.IGNORECASE)

    def __call__(self, sentence: str) -> bool:
        return self.pattern.search(sentence) is not None

    def matches(self, sentence: str) -> list[str]:
        return [m.group(0) for m in self.pattern.finditer(sentence)]
