"""Training labels for an aspect ranker (Arg-CTRL §3.1 Step 2a).

Every 1- to 4-gram of a sentence (unfiltered: "no other limitations or filtering mechanisms are applied")
gets the score ``# aspect tokens in the n-gram / N``, in [0, 1]. A token is an aspect token when it overlaps
one of the sentence's aspect spans. Example: with the aspect "background checks" in "We need background
checks for buyers", the 2-gram "background checks" and the 1-gram "checks" score 1.0, the 3-gram
"need background checks" 2/3, the 4-gram "We need background checks" 2/4, "for buyers" 0.

:func:`label_rows` gives the JSONL rows the trainer reads: ``{"sentence", "candidate", "score"}`` plus
``"begin"``, ``"length"`` and ``"topic"``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from .appf import _POS, parse_appf, project_rows
from .candidates import MAX_N, Candidate, tokenize


def ngram_scores(sentence: str, spans: Iterable[tuple[int, int]], max_n: int = MAX_N) -> list[tuple[Candidate, float]]:
    """``(n-gram, score)`` for every 1..max_n-gram of ``sentence``, ordered by (begin, length)."""
    spans = [(int(b), int(l)) for b, l in spans]
    tokens = tokenize(sentence)
    aspect = [any(t.begin < b + l and b < t.end for b, l in spans) for t in tokens]
    out: list[tuple[Candidate, float]] = []
    for i in range(len(tokens)):
        for n in range(1, max_n + 1):
            if i + n > len(tokens):
                break
            begin, end = tokens[i].begin, tokens[i + n - 1].end
            cand = Candidate(begin, end - begin, sentence[begin:end], n)
            out.append((cand, sum(aspect[i : i + n]) / n))
    out.sort(key=lambda cs: (cs[0].begin, cs[0].length))
    return out


def label_rows(sentence: str, spans: Iterable[tuple[int, int]], *, topic: str = "", max_n: int = MAX_N) -> list[dict]:
    return [
        {
            "sentence": sentence,
            "candidate": cand.text,
            "score": score,
            "begin": cand.begin,
            "length": cand.length,
            "topic": topic,
        }
        for cand, score in ngram_scores(sentence, spans, max_n)
    ]


def appf_label_rows(path) -> Iterator[dict]:
    """Label rows of every sentence of an App. F file (validated first)."""
    for row in parse_appf(path):
        yield from label_rows(row.sentence, row.spans, topic=row.topic)


def project_label_rows(project) -> Iterator[dict]:
    """Label rows of every item of ``project`` that has a resolved final answer (crowd / gold / adjudicated /
    reference); a "no aspect" sentence gives all-zero rows (negatives)."""
    for row in project_rows(project):
        spans = [tuple(int(x) for x in _POS.match(p).groups()) for p in row["aspect_pos"]]
        yield from label_rows(row["sentence"], spans, topic=row["topic"])
