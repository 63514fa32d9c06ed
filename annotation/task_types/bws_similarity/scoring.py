"""Counting scores for Best-Worst Scaling (Orme 2009; Kiritchenko & Mohammad 2016).

For every pair: ``raw = (#best - #worst) / #appearances`` in [-1, 1], mapped to ``score = (raw + 1) / 2`` in
[0, 1] (1 = always chosen as the most similar pair, 0 = always the least similar). Pairs are scored with their
counts, so a score can always be traced back to its votes.

Judgements are records ``(tuple id, annotator, topic, best, worst, items)`` (the CSV of ``manage.py bws score``);
:func:`encode` turns them into integer arrays (:class:`BWSData`) that the vectorised scorer and the split-half
code in :mod:`.reliability` share.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np


class Judgement(NamedTuple):
    tuple: Hashable
    annotator: Hashable
    topic: str
    best: Hashable
    worst: Hashable
    items: tuple


@dataclass
class BWSData:
    """Judgements as arrays: ``items[a]`` the pair indices shown in judgement ``a``, ``best[a]``/``worst[a]`` the
    chosen pair indices, ``tup[a]`` the tuple index; ``pairs[p]`` / ``pair_topic[p]`` name pair ``p``."""

    pairs: list
    pair_topic: list
    tuples: list
    tup: np.ndarray  # (A,) tuple index of each judgement
    items: np.ndarray  # (A, k) pair indices shown
    best: np.ndarray  # (A,)
    worst: np.ndarray  # (A,)

    @property
    def n_pairs(self) -> int:
        return len(self.pairs)

    @property
    def topics(self) -> list[str]:
        return sorted(set(self.pair_topic))


class InvalidJudgement(ValueError):
    """A judgement that cannot be scored; ``index`` is its position in the input."""

    def __init__(self, index: int, reason: str):
        super().__init__(f"judgement {index}: {reason}")
        self.index = index
        self.reason = reason


def check_judgement(j: Judgement) -> None:
    """Raise ``ValueError`` with a reason when one judgement is malformed on its own."""
    items = tuple(j.items)
    if len(items) < 2:
        raise ValueError("items: a tuple needs at least 2 pairs")
    if len(set(items)) != len(items):
        raise ValueError("items: a pair appears twice in the tuple")
    if j.best not in items:
        raise ValueError(f"best: {j.best!r} is not one of the tuple's pairs")
    if j.worst not in items:
        raise ValueError(f"worst: {j.worst!r} is not one of the tuple's pairs")
    if j.best == j.worst:
        raise ValueError("worst: the most and the least similar pair must differ")


def encode(judgements: Iterable[Judgement | Sequence]) -> BWSData:
    """Check and encode judgements (see :class:`Judgement`); raises :class:`InvalidJudgement` naming the index."""
    pair_index: dict = {}
    pair_topic: list = []
    tuple_index: dict = {}
    tuple_shape: list = []
    seen: set = set()
    tup, items, best, worst = [], [], [], []
    size = None
    for a, raw in enumerate(judgements):
        j = raw if isinstance(raw, Judgement) else Judgement(*raw)
        j = j._replace(items=tuple(j.items), topic=str(j.topic))
        try:
            check_judgement(j)
        except ValueError as exc:
            raise InvalidJudgement(a, str(exc)) from None
        if size is None:
            size = len(j.items)
        elif len(j.items) != size:
            raise InvalidJudgement(a, f"items: every tuple must have {size} pairs, this one has {len(j.items)}")
        t = tuple_index.get(j.tuple)
        if t is None:
            t = tuple_index[j.tuple] = len(tuple_shape)
            tuple_shape.append((frozenset(j.items), j.topic))
        elif tuple_shape[t] != (frozenset(j.items), j.topic):
            raise InvalidJudgement(a, f"tuple {j.tuple!r} was shown with other pairs or another topic before")
        if (t, j.annotator) in seen:
            raise InvalidJudgement(a, f"annotator {j.annotator!r} judged tuple {j.tuple!r} twice")
        seen.add((t, j.annotator))
        idx = []
        for pid in j.items:
            p = pair_index.get(pid)
            if p is None:
                p = pair_index[pid] = len(pair_topic)
                pair_topic.append(j.topic)
            elif pair_topic[p] != j.topic:
                raise InvalidJudgement(a, f"pair {pid!r} is in topic {pair_topic[p]!r} and in {j.topic!r}")
            idx.append(p)
        tup.append(t)
        items.append(idx)
        best.append(pair_index[j.best])
        worst.append(pair_index[j.worst])
    k = size or 4
    return BWSData(
        pairs=list(pair_index),
        pair_topic=pair_topic,
        tuples=list(tuple_index),
        tup=np.asarray(tup, dtype=np.int64),
        items=np.asarray(items, dtype=np.int64).reshape(-1, k),
        best=np.asarray(best, dtype=np.int64),
        worst=np.asarray(worst, dtype=np.int64),
    )


def count_arrays(data: BWSData, weights: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(best, worst, appearances)`` per pair index; ``weights`` (A,) selects / weights judgements."""
    p = data.n_pairs
    k = data.items.shape[1]
    w_items = None if weights is None else np.repeat(np.asarray(weights, dtype=np.float64), k)
    app = np.bincount(data.items.ravel(), weights=w_items, minlength=p)
    b = np.bincount(data.best, weights=weights, minlength=p)
    w = np.bincount(data.worst, weights=weights, minlength=p)
    return b, w, app


def scores_from_counts(best: np.ndarray, worst: np.ndarray, appearances: np.ndarray) -> np.ndarray:
    """Counting score in [0, 1] (NaN where a pair has no appearances)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return ((best - worst) / appearances + 1.0) / 2.0


def counting_scores(judgements: Iterable[Judgement | Sequence] | BWSData) -> dict:
    """``{pair: {"score", "raw", "best", "worst", "appearances", "topic"}}`` for every pair that was shown."""
    data = judgements if isinstance(judgements, BWSData) else encode(judgements)
    b, w, app = count_arrays(data)
    score = scores_from_counts(b, w, app)
    out = {}
    for p, pid in enumerate(data.pairs):
        if app[p] <= 0:
            continue
        out[pid] = {
            "score": float(score[p]),
            "raw": float(2 * score[p] - 1),
            "best": int(b[p]),
            "worst": int(w[p]),
            "appearances": int(app[p]),
            "topic": data.pair_topic[p],
        }
    return out


def counting_scores_loop(judgements: Iterable[tuple]) -> dict:
    """The same scores from ``(items, best, worst)`` triples with plain dictionaries (the reference and the score
    function for :func:`annotation.agreement.split_half_reliability`)."""
    best: dict = {}
    worst: dict = {}
    app: dict = {}
    for items, b, w in judgements:
        for pid in items:
            app[pid] = app.get(pid, 0) + 1
        best[b] = best.get(b, 0) + 1
        worst[w] = worst.get(w, 0) + 1
    return {pid: ((best.get(pid, 0) - worst.get(pid, 0)) / n + 1.0) / 2.0 for pid, n in app.items()}
