"""Rankers order the aspect candidates of a sentence (Arg-CTRL §3.1 Step 2b-2c).

Interface: ``ranker.score(sentence_text, topic, candidates) -> list[float]``, one score per candidate
(higher = more likely an aspect), same order as ``candidates`` (:class:`~.candidates.Candidate` objects).
:func:`rank` turns scores into the ranked list with deterministic tie breaks.

Which ranker a project uses: :func:`get_active_ranker` asks the ``ranker`` slot of :mod:`annotation.providers`
(filled by the ML side with the active trained ranker); when it is empty or answers ``None`` the project's
``config["ranker"]`` names a ranker known here (only ``"baseline"``).

:class:`BaselineRanker` (no training needed) scores a candidate as a weighted sum, each part in [0, 1]:

- ``0.45 * topic_df``: document frequency of the candidate (case-insensitive, token-wise) among the
  sentences of the same topic, ``log(1 + df) / log(1 + N)``; recurring phrases ("cost", "background
  checks") are typical aspects (Table 1). With no topic sentences known this part is 0.
- ``0.25 * content``: share of the candidate's tokens that are not stopwords.
- ``0.20 * nounish``: share of tokens that look like nouns/adjectives (not an ``-ly`` adverb, at least 3
  letters, not a modal/auxiliary-like word).
- ``-0.5 * topic``: share of tokens that are tokens of the topic name itself (the topic is never its
  own aspect: "nuclear energy" in a sentence about nuclear energy).
- ``0.10 * length``: ``(n - 1) / 3`` — a gentle preference for multi-token candidates (§3.2 notes that the
  paper's ranker put multi-token aspects on top).

Ties (equal scores, rounded to 9 decimals) go to the longer n-gram, then to the earlier position.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import Protocol

from annotation import providers
from corpus.models import Sentence

from .candidates import Candidate, is_stopword


class Ranker(Protocol):
    name: str

    def score(self, sentence_text: str, topic: str, candidates: Sequence[Candidate]) -> list[float]: ...


def rank(
    ranker: Ranker, sentence_text: str, topic: str, candidates: Sequence[Candidate]
) -> list[tuple[Candidate, float]]:
    """Candidates with their scores, best first (ties: longer n-gram, then earlier begin)."""
    scores = ranker.score(sentence_text, topic, candidates)
    if len(scores) != len(candidates):
        raise ValueError(
            f"ranker {getattr(ranker, 'name', ranker)!r} returned {len(scores)} scores for {len(candidates)} candidates"
        )
    pairs = list(zip(candidates, (float(s) for s in scores)))
    pairs.sort(key=lambda cs: (-round(cs[1], 9), -cs[0].n, cs[0].begin, cs[0].length))
    return pairs


_WORD = re.compile(r"\w+(?:['’\-]\w+)*")
_NOT_NOUNISH = frozenset(
    """would could should might must may shall will can also even still just really
very quite rather much many often always never ever however therefore thus hence""".split()
)


def _words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


class BaselineRanker:
    """Heuristic ranker (see the module docstring). ``topic_sentences`` maps a topic name (any case) to the
    texts used for document frequencies; when a topic is not in it, the texts are read once from
    ``corpus.Sentence`` rows of that topic (``load_from_db=True``)."""

    name = "baseline"

    def __init__(self, topic_sentences: dict[str, Iterable[str]] | None = None, *, load_from_db: bool = True):
        self._df: dict[str, tuple[Counter, int]] = {}
        self._load_from_db = load_from_db
        for topic, texts in (topic_sentences or {}).items():
            self._df[topic.lower()] = self._count(texts)

    @staticmethod
    def _count(texts: Iterable[str]) -> tuple[Counter, int]:
        df: Counter = Counter()
        n = 0
        for text in texts:
            n += 1
            words = _words(text)
            seen = set()
            for i in range(len(words)):
                for k in range(1, 5):
                    if i + k <= len(words):
                        seen.add(" ".join(words[i : i + k]))
            df.update(seen)
        return df, n

    def _topic_df(self, topic: str) -> tuple[Counter, int]:
        key = (topic or "").lower()
        if key not in self._df:
            texts: list[str] = []
            if self._load_from_db and key:
                texts = list(Sentence.objects.filter(topic__name__iexact=topic).values_list("text", flat=True))
            self._df[key] = self._count(texts)
        return self._df[key]

    def score(self, sentence_text: str, topic: str, candidates: Sequence[Candidate]) -> list[float]:
        df, n_docs = self._topic_df(topic)
        topic_words = {w for w in _words(topic or "") if not is_stopword(w)}
        out: list[float] = []
        for cand in candidates:
            words = _words(cand.text) or [cand.text.lower()]
            k = len(words)
            freq = df.get(" ".join(words), 0)
            topic_df = math.log1p(freq) / math.log1p(n_docs) if n_docs > 0 and freq else 0.0
            content = sum(1 for w in words if not is_stopword(w)) / k
            nounish = (
                sum(
                    1
                    for w in words
                    if len(w) >= 3 and not w.endswith("ly") and w not in _NOT_NOUNISH and not is_stopword(w)
                )
                / k
            )
            on_topic = sum(1 for w in words if w in topic_words) / k
            length = (min(cand.n, 4) - 1) / 3
            out.append(0.45 * min(topic_df, 1.0) + 0.25 * content + 0.20 * nounish - 0.5 * on_topic + 0.10 * length)
        return out


# --- registry ----------------------------------------------------------------------------------------
_RANKERS: dict[str, Callable[[], Ranker]] = {"baseline": BaselineRanker}


def ranker_names() -> list[str]:
    return sorted(_RANKERS)


def get_ranker(name: str = "baseline") -> Ranker:
    try:
        return _RANKERS[name]()
    except KeyError:
        raise KeyError(f"unknown ranker {name!r} (known: {', '.join(ranker_names())})") from None


def get_active_ranker(project=None) -> Ranker:
    """A trained ranker from the ``ranker`` slot (:mod:`annotation.providers`, filled by the ML side), else the
    ranker named in ``project.config["ranker"]`` (default: :class:`BaselineRanker`)."""
    trained = providers.ranker.get(project)
    if trained is not None:
        return trained
    name = ((getattr(project, "config", None) or {}).get("ranker") or "baseline") if project is not None else "baseline"
    return get_ranker(name)
