"""Evaluation of aspect rankers: recall@k (Arg-CTRL §3.1 Step 2b, Table 2), in-topic and cross-topic.

recall@k, precisely
    For one sentence with gold aspect spans ``G`` (``(begin, length)`` character spans, ``|G| >= 1``) and ranked
    candidates ``c_1, c_2, ...`` (sorted by score, best first; ties go to the longer n-gram, then the earlier
    ``begin``, then the shorter ``length`` -- the order :func:`annotation.task_types.aspect.rankers.rank` shows workers)::

        recall@k(sentence) = |{ g in G : g == span(c_i) for some i <= k }| / |G|

    A gold aspect counts as found only when a top-k candidate has exactly its span (same begin and length); a gold
    aspect that is no candidate at all (longer than 4 tokens) is never found. The reported ``recall@k`` is the
    mean over the sentences that have at least one gold aspect (macro average); sentences without aspects are
    skipped (their count is ``no_aspect_sentences``). Example: gold {A, B}, ranking [A, x, y, B, ...] gives
    recall@1 = 1/2 and recall@4 = 2/2.

Evaluation settings (Table 2)
    * in-topic: :func:`in_topic` -- a seeded random split of the sentences of all topics;
    * cross-topic: :func:`cross_topic` -- leave-one-topic-out: for every topic, train on the other topics and test
      on it; the figures are the mean over the topics (per-topic figures are kept too).

A *scorer* is anything with ``score(sentence_text, topic, candidates) -> list[float]`` (the Ranker interface of
:mod:`annotation.task_types.aspect.rankers`); when it also has ``score_groups(groups)`` (the trained models of
:mod:`ml.rankers`) that batched path is used.
"""
from __future__ import annotations

import math
from typing import Callable, Iterable, Sequence

from annotation.task_types.aspect.rankers import BaselineRanker

from .data import SentenceRows, group_sentences, leave_one_topic_out, split_by_sentence

KS = (5, 10, 15, 20)
PRIMARY = "recall@10"


def ranking_order(spans: Sequence[tuple[int, int]], scores: Sequence[float], n_tokens: Sequence[int]) -> list[int]:
    """Indices of the candidates, best first (ties: more tokens, earlier begin, shorter length)."""
    return sorted(range(len(spans)), key=lambda i: (-round(float(scores[i]), 9), -n_tokens[i], spans[i][0],
                                                    spans[i][1]))


def recall_at_k(ranked_spans: Sequence[tuple[int, int]], gold: Iterable[tuple[int, int]], k: int) -> float | None:
    """Share of the ``gold`` spans among the first ``k`` of ``ranked_spans``; ``None`` when there is no gold."""
    gold = {tuple(g) for g in gold}
    if not gold:
        return None
    top = {tuple(s) for s in ranked_spans[:k]}
    return len(gold & top) / len(gold)


def ranking_metrics(groups: Sequence[SentenceRows], scores: Sequence[Sequence[float]], ks: Sequence[int] = KS
                    ) -> dict:
    """``{"recall@k": mean over sentences with gold, ..., "mse": vs. the Step 2a targets, "sentences",
    "no_aspect_sentences", "candidates"}``."""
    if len(groups) != len(scores):
        raise ValueError(f"{len(scores)} score lists for {len(groups)} sentences")
    sums = {k: 0.0 for k in ks}
    n_gold = n_none = n_cands = 0
    sq = 0.0
    for group, group_scores in zip(groups, scores):
        if len(group_scores) != len(group.spans):
            raise ValueError(f"{len(group_scores)} scores for {len(group.spans)} candidates of {group.sentence!r}")
        n_cands += len(group.spans)
        sq += sum((float(s) - t) ** 2 for s, t in zip(group_scores, group.scores))
        if not group.gold:
            n_none += 1
            continue
        order = ranking_order(group.spans, group_scores, group.n_tokens)
        ranked = [group.spans[i] for i in order]
        n_gold += 1
        for k in ks:
            sums[k] += recall_at_k(ranked, group.gold, k)
    out = {f"recall@{k}": (sums[k] / n_gold if n_gold else 0.0) for k in ks}
    out.update(mse=(sq / n_cands if n_cands else 0.0), sentences=n_gold, no_aspect_sentences=n_none,
               candidates=n_cands)
    return out


def score_groups(scorer, groups: Sequence[SentenceRows]) -> list[list[float]]:
    """Scores of every candidate of every group (batched when the scorer can)."""
    batched = getattr(scorer, "score_groups", None)
    if batched is not None:
        return [list(map(float, s)) for s in batched(groups)]
    return [list(map(float, scorer.score(g.sentence, g.topic, g.candidates()))) for g in groups]


def evaluate_scorer(scorer, rows: Iterable[dict] | Sequence[SentenceRows], ks: Sequence[int] = KS) -> dict:
    """:func:`ranking_metrics` of ``scorer`` on ranker rows (or already grouped sentences)."""
    rows = list(rows)
    groups = rows if rows and isinstance(rows[0], SentenceRows) else group_sentences(rows)
    return ranking_metrics(groups, score_groups(scorer, groups), ks)


def baseline_scorer(rows_train: Iterable[dict]):
    """:class:`annotation.task_types.aspect.rankers.BaselineRanker` with document frequencies from the training sentences
    (no database), the reference a trained ranker must beat."""
    texts: dict[str, list[str]] = {}
    for group in group_sentences(rows_train):
        texts.setdefault(group.topic, []).append(group.sentence)
    return BaselineRanker(texts, load_from_db=False)


class RandomScorer:
    """Seeded random scores (a floor for recall@k)."""

    name = "random"

    def __init__(self, seed: int = 13):
        import random

        self._rng = random.Random(seed)

    def score(self, sentence_text, topic, candidates):
        return [self._rng.random() for _ in candidates]


TrainFn = Callable[[list[dict], list[dict]], object]  # (rows_train, rows_dev) -> scorer


def in_topic(train_fn: TrainFn, rows: Sequence[dict], *, dev_fraction: float = 0.2, seed: int = 13,
             ks: Sequence[int] = KS) -> dict:
    """Train on a seeded random sentence split of all topics, evaluate on the held-out sentences."""
    rows_train, rows_test = split_by_sentence(rows, dev_fraction=dev_fraction, seed=seed)
    scorer = train_fn(rows_train, rows_test)
    return dict(evaluate_scorer(scorer, rows_test, ks), setting="in-topic")


def cross_topic(train_fn: TrainFn, rows: Sequence[dict], *, topics: Iterable[str] | None = None,
                ks: Sequence[int] = KS) -> dict:
    """Leave-one-topic-out: per held-out topic metrics and their mean (``{"recall@k": mean, ..., "per_topic":
    {topic: metrics}}``). The held-out topic is also what ``train_fn`` gets as dev rows."""
    per_topic = {}
    for topic, rows_train, rows_test in leave_one_topic_out(rows, topics):
        if not rows_train or not rows_test:
            continue
        per_topic[topic] = evaluate_scorer(train_fn(rows_train, rows_test), rows_test, ks)
    out: dict = {"setting": "cross-topic", "per_topic": per_topic}
    for k in ks:
        vals = [m[f"recall@{k}"] for m in per_topic.values() if m["sentences"]]
        out[f"recall@{k}"] = sum(vals) / len(vals) if vals else math.nan
    return out
