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

Metrics of every kind beside their baselines (shared by ``manage.py models``, ``/ml/models/``)
    A kind reports each figure on the scale of its paper -- 0-1 for F1, precision, recall, recall@k and the ValNov
    score; x100 for Spearman / Pearson (the similarity kinds) -- and the baseline of that figure as
    ``<baseline>_<metric>`` (``majority_f1_macro`` beside ``f1_macro``, ``jaccard_spearman`` beside ``spearman``,
    ``cross_topic_majority_f1_macro`` beside ``cross_topic_f1_macro``; :data:`BASELINE_PREFIXES`). :func:`scale_of`
    names a metric's scale, :func:`baseline_of` finds its baseline and :func:`beside_baselines` lists
    ``{"metric", "value", "scale", "baseline", "baseline_metric"}`` rows, the primary metric first, without
    scaling anything.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence

from annotation.task_types.aspect.rankers import BaselineRanker

from .data import SentenceRows, group_sentences, leave_one_topic_out, split_by_sentence

KS = (5, 10, 15, 20)
PRIMARY = "recall@10"

# --- metrics beside their baselines (every kind) -----------------------------------------------------

BASELINE_PREFIXES = ("majority", "baseline", "jaccard", "lexical", "bm25", "random", "shared_task")
SETTING_PREFIXES = ("cross_topic_", "in_topic_")
COUNT_NAMES = {
    "n",
    "n_dev",
    "n_test",
    "n_train",
    "n_rows",
    "n_pairs",
    "n_tokens",
    "sentences",
    "no_aspect_sentences",
    "candidates",
    "steps",
    "epochs",
}
X100_WORDS = ("spearman", "pearson")
RAW_WORDS = ("mse", "loss", "perplexity", "seconds")


def scale_of(name: str) -> str:
    """The scale a kind reports ``name`` on: ``"x100"`` (Spearman / Pearson), ``"count"``, ``"raw"`` (losses,
    perplexity, MSE, times) or ``"0-1"`` (F1, precision, recall, accuracy, recall@k, the ValNov score...)."""
    lowered = str(name).lower()
    if lowered in COUNT_NAMES or lowered.startswith("n_"):
        return "count"
    if any(w in lowered for w in X100_WORDS):
        return "x100"
    if any(w in lowered for w in RAW_WORDS):
        return "raw"
    return "0-1"


def _split_setting(name: str) -> tuple[str, str]:
    for prefix in SETTING_PREFIXES:
        if name.startswith(prefix):
            return prefix, name[len(prefix) :]
    return "", name


def is_baseline(name: str, metrics: dict) -> bool:
    """``name`` is the baseline figure of another metric in ``metrics`` (``majority_f1_macro`` of ``f1_macro``)."""
    setting, rest = _split_setting(name)
    for prefix in BASELINE_PREFIXES:
        if rest.startswith(prefix + "_") and f"{setting}{rest[len(prefix) + 1 :]}" in metrics:
            return True
    return False


def baseline_of(name: str, metrics: dict) -> tuple[str, float] | None:
    """``(baseline key, value)`` reported beside metric ``name`` in ``metrics``, or None."""
    setting, rest = _split_setting(name)
    for prefix in BASELINE_PREFIXES:
        key = f"{setting}{prefix}_{rest}"
        value = metrics.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return key, float(value)
    return None


def beside_baselines(metrics: dict, primary: str | None = None, *, counts: bool = False) -> list[dict]:
    """One row per numeric metric that is not itself a baseline: ``{"metric", "value", "scale", "baseline",
    "baseline_metric"}`` (the primary metric first; counts left out unless ``counts``)."""
    rows = []
    for name, value in (metrics or {}).items():
        if not isinstance(value, (int, float)) or isinstance(value, bool) or is_baseline(name, metrics):
            continue
        scale = scale_of(name)
        if scale == "count" and not counts:
            continue
        found = baseline_of(name, metrics)
        rows.append(
            {
                "metric": name,
                "value": float(value),
                "scale": scale,
                "baseline": found[1] if found else None,
                "baseline_metric": found[0] if found else None,
            }
        )
    rows.sort(key=lambda r: r["metric"] != primary)
    return rows


def _num(value: float, scale: str) -> str:
    if scale == "x100":
        return f"{value:.1f}"
    if scale == "count":
        return f"{value:g}"
    return f"{value:.3f}" if abs(value) >= 0.001 or value == 0 else f"{value:.3g}"


def metric_line(row: dict) -> str:
    """One :func:`beside_baselines` row as text: ``f1_macro 0.912 [0-1] (majority 0.310)``."""
    text = f"{row['metric']} {_num(row['value'], row['scale'])} [{row['scale']}]"
    if row.get("baseline") is not None:
        name = row["baseline_metric"]
        _setting, rest = _split_setting(name)
        who = next((p for p in BASELINE_PREFIXES if rest.startswith(p + "_")), name)
        text += f" ({who} {_num(row['baseline'], row['scale'])})"
    return text


def ranking_order(spans: Sequence[tuple[int, int]], scores: Sequence[float], n_tokens: Sequence[int]) -> list[int]:
    """Indices of the candidates, best first (ties: more tokens, earlier begin, shorter length)."""
    return sorted(
        range(len(spans)), key=lambda i: (-round(float(scores[i]), 9), -n_tokens[i], spans[i][0], spans[i][1])
    )


def recall_at_k(ranked_spans: Sequence[tuple[int, int]], gold: Iterable[tuple[int, int]], k: int) -> float | None:
    """Share of the ``gold`` spans among the first ``k`` of ``ranked_spans``; ``None`` when there is no gold."""
    gold = {tuple(g) for g in gold}
    if not gold:
        return None
    top = {tuple(s) for s in ranked_spans[:k]}
    return len(gold & top) / len(gold)


def ranking_metrics(groups: Sequence[SentenceRows], scores: Sequence[Sequence[float]], ks: Sequence[int] = KS) -> dict:
    """``{"recall@k": mean over sentences with gold, ..., "mse": vs. the Step 2a targets, "sentences",
    "no_aspect_sentences", "candidates"}``."""
    if len(groups) != len(scores):
        raise ValueError(f"{len(scores)} score lists for {len(groups)} sentences")
    sums = dict.fromkeys(ks, 0.0)
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
    out.update(mse=(sq / n_cands if n_cands else 0.0), sentences=n_gold, no_aspect_sentences=n_none, candidates=n_cands)
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


def in_topic(
    train_fn: TrainFn, rows: Sequence[dict], *, dev_fraction: float = 0.2, seed: int = 13, ks: Sequence[int] = KS
) -> dict:
    """Train on a seeded random sentence split of all topics, evaluate on the held-out sentences."""
    rows_train, rows_test = split_by_sentence(rows, dev_fraction=dev_fraction, seed=seed)
    scorer = train_fn(rows_train, rows_test)
    return dict(evaluate_scorer(scorer, rows_test, ks), setting="in-topic")


def cross_topic(
    train_fn: TrainFn, rows: Sequence[dict], *, topics: Iterable[str] | None = None, ks: Sequence[int] = KS
) -> dict:
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
