"""Silver pair sampling strategies of AugSBERT §3.1 (the pairs the cross-encoder then labels).

The sentences are those of the gold training pairs (the paper's in-domain setting re-uses them); by default pairs
are drawn within a topic (BWS pairs are same-topic pairs; ``within_topic=False`` pools all sentences). A silver
candidate is never a self-pair, never a gold pair (in either order) and never drawn twice.

* ``random`` -- ``n`` pairs drawn uniformly (default ``k`` x #sentences).
* ``kde`` -- a large random set (default 10 x ``k`` x #sentences) is labelled, then a pair with silver score ``s``
  is kept with probability ``Q(s) = min(1, F_gold(s) / F_silver(s))`` (:func:`kde_acceptance`; Gaussian kernel
  density estimates, Scott's bandwidth unless given), so the silver scores follow the gold distribution. For
  classification labels, :func:`classification_select` keeps every positive and samples negatives to the gold
  negative / positive ratio.
* ``bm25`` -- every sentence is a query against the index of all sentences (BM25 via ``bm25s``); its top ``k``
  lexical neighbours with a positive score become pairs.
* ``semantic`` -- the top ``k`` cosine neighbours with a bi-encoder trained on the gold pairs.
* ``bm25+semantic`` -- the union of both.

Candidates are dicts ``{"topic", "argument1", "argument2", "source"}`` (``source``: bm25 / semantic / random);
:func:`select` applies the strategy's filter after labelling (only ``kde`` filters).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterable, Sequence

import numpy as np

from .data import pair_key, sentences

STRATEGIES = ("random", "kde", "bm25", "semantic", "bm25+semantic")
ALIASES = {
    "rs": "random",
    "r.s.": "random",
    "ss": "semantic",
    "s.s.": "semantic",
    "semantic-search": "semantic",
    "semantic_search": "semantic",
    "bm25-ss": "bm25+semantic",
    "bm25+ss": "bm25+semantic",
    "bm25_ss": "bm25+semantic",
    "bm25-semantic": "bm25+semantic",
    "bm25+s.s.": "bm25+semantic",
}
DEFAULT_K = 3


class SamplingError(ValueError):
    pass


def canonical(strategy: str) -> str:
    name = str(strategy or "").strip().lower()
    name = ALIASES.get(name, name)
    if name not in STRATEGIES:
        raise SamplingError(f"strategy: {strategy!r} is not one of {', '.join(STRATEGIES)}")
    return name


def needs_bi_encoder(strategy: str) -> bool:
    return canonical(strategy) in ("semantic", "bm25+semantic")


# --- grouping --------------------------------------------------------------------------------------


def sentence_groups(rows: Iterable[dict], *, within_topic: bool = True) -> dict[str, list[str]]:
    """``{topic: [unique sentences]}`` (one group ``""`` when not ``within_topic``)."""
    groups: dict[str, dict[str, None]] = {}
    for topic, text in sentences(rows):
        groups.setdefault(topic if within_topic else "", {}).setdefault(text, None)
    return {t: list(s) for t, s in groups.items()}


class _Pairs:
    """Collects unique unordered candidate pairs, refusing self-pairs and the excluded (gold) pairs."""

    def __init__(self, exclude: Iterable[tuple[str, str]] = ()):
        self.seen = {pair_key(a, b) for a, b in exclude}
        self.out: list[dict] = []

    def add(self, topic: str, a: str, b: str, source: str) -> bool:
        if a == b:
            return False
        key = pair_key(a, b)
        if key in self.seen:
            return False
        self.seen.add(key)
        self.out.append({"topic": topic, "argument1": a, "argument2": b, "source": source})
        return True


def gold_keys(rows: Iterable[dict]) -> set[tuple[str, str]]:
    return {pair_key(r["argument1"], r["argument2"]) for r in rows}


# --- BM25 ------------------------------------------------------------------------------------------


def bm25_neighbours(
    texts: Sequence[str], k: int = DEFAULT_K, *, stopwords: str | None = "en"
) -> list[list[tuple[int, float]]]:
    """For every text, its top ``k`` other texts by BM25 (index = all texts, query = the text itself), as
    ``[(index, score), ...]`` best first; texts sharing no term (score 0) are not neighbours."""
    import bm25s

    texts = list(texts)
    if len(texts) < 2 or k <= 0:
        return [[] for _ in texts]
    tokens = bm25s.tokenize(texts, stopwords=stopwords, show_progress=False)
    retriever = bm25s.BM25()
    retriever.index(tokens, show_progress=False)
    docs, scores = retriever.retrieve(tokens, k=min(len(texts), k + 1), show_progress=False)
    out = []
    for i in range(len(texts)):
        found = [(int(j), float(s)) for j, s in zip(docs[i], scores[i]) if int(j) != i and float(s) > 0]
        found.sort(key=lambda js: (-js[1], js[0]))
        out.append(found[:k])
    return out


def bm25_pairs(
    rows: Sequence[dict],
    k: int = DEFAULT_K,
    *,
    within_topic: bool = True,
    exclude: Iterable[tuple[str, str]] | None = None,
) -> list[dict]:
    """Every sentence with each of its top ``k`` BM25 neighbours (gold pairs excluded)."""
    pairs = _Pairs(gold_keys(rows) if exclude is None else exclude)
    for topic, texts in sentence_groups(rows, within_topic=within_topic).items():
        for i, neighbours in enumerate(bm25_neighbours(texts, k)):
            for j, _ in neighbours:
                pairs.add(topic, texts[i], texts[j], "bm25")
    return pairs.out


# --- semantic search -------------------------------------------------------------------------------


def semantic_neighbours(embeddings: np.ndarray, k: int = DEFAULT_K) -> list[list[tuple[int, float]]]:
    """Top ``k`` cosine neighbours (not itself) of every row of ``embeddings``."""
    emb = np.asarray(embeddings, dtype=np.float32)
    if len(emb) < 2 or k <= 0:
        return [[] for _ in range(len(emb))]
    norms = np.linalg.norm(emb, axis=1, keepdims=True)
    emb = emb / np.where(norms == 0, 1, norms)
    sims = emb @ emb.T
    np.fill_diagonal(sims, -np.inf)
    out = []
    for i in range(len(emb)):
        order = sorted(range(len(emb)), key=lambda j: (-sims[i, j], j))[:k]
        out.append([(j, float(sims[i, j])) for j in order if j != i])
    return out


def semantic_pairs(
    rows: Sequence[dict],
    encode: Callable[[list[str]], np.ndarray],
    k: int = DEFAULT_K,
    *,
    within_topic: bool = True,
    exclude: Iterable[tuple[str, str]] | None = None,
) -> list[dict]:
    """Every sentence with its top ``k`` cosine neighbours under ``encode`` (the gold-trained bi-encoder)."""
    pairs = _Pairs(gold_keys(rows) if exclude is None else exclude)
    for topic, texts in sentence_groups(rows, within_topic=within_topic).items():
        for i, neighbours in enumerate(semantic_neighbours(encode(texts), k)):
            for j, _ in neighbours:
                pairs.add(topic, texts[i], texts[j], "semantic")
    return pairs.out


# --- random ----------------------------------------------------------------------------------------


def random_pairs(
    rows: Sequence[dict],
    n: int,
    *,
    seed: int = 0,
    within_topic: bool = True,
    exclude: Iterable[tuple[str, str]] | None = None,
) -> list[dict]:
    """Up to ``n`` distinct random pairs (topics weighted by their number of possible pairs)."""
    pairs = _Pairs(gold_keys(rows) if exclude is None else exclude)
    groups = [(t, s) for t, s in sentence_groups(rows, within_topic=within_topic).items() if len(s) >= 2]
    if not groups or n <= 0:
        return []
    capacity = sum(len(s) * (len(s) - 1) // 2 for _, s in groups)
    target = min(int(n), max(0, capacity - len(pairs.seen)))
    weights = [len(s) * (len(s) - 1) / 2 for _, s in groups]
    rng = random.Random(seed)
    tries = 0
    while len(pairs.out) < target and tries < 50 * max(1, target) + 1000:
        tries += 1
        topic, texts = rng.choices(groups, weights=weights)[0]
        a, b = rng.sample(texts, 2)
        pairs.add(topic, a, b, "random")
    return pairs.out


# --- KDE -------------------------------------------------------------------------------------------


def scott_bandwidth(points: Sequence[float]) -> float:
    """Scott's rule for one dimension (as ``scipy.stats.gaussian_kde``): std (ddof 1) x n^(-1/5)."""
    x = np.asarray(points, dtype=float)
    if len(x) < 2:
        return 0.1
    std = float(np.std(x, ddof=1))
    return (std if std > 0 else 0.1) * len(x) ** (-0.2)


def kde_density(points: Sequence[float], at: Sequence[float], bandwidth: float | None = None) -> np.ndarray:
    """Gaussian kernel density of ``points`` at ``at``: mean_i N(at; x_i, h^2)."""
    x = np.asarray(points, dtype=float)
    s = np.asarray(at, dtype=float)
    h = float(bandwidth) if bandwidth else scott_bandwidth(x)
    z = (s[:, None] - x[None, :]) / h
    return np.exp(-0.5 * z * z).sum(axis=1) / (len(x) * h * math.sqrt(2 * math.pi))


def kde_acceptance(
    gold_scores: Sequence[float],
    silver_scores: Sequence[float],
    at: Sequence[float] | None = None,
    *,
    bandwidth: float | None = None,
    silver_bandwidth: float | None = None,
) -> np.ndarray:
    """``Q(s) = 1 if F_gold(s) >= F_silver(s) else F_gold(s) / F_silver(s)`` at ``at`` (default: the silver scores).
    ``bandwidth`` applies to both estimates unless ``silver_bandwidth`` is given."""
    at = silver_scores if at is None else at
    f_gold = kde_density(gold_scores, at, bandwidth)
    f_silver = kde_density(silver_scores, at, silver_bandwidth or bandwidth)
    with np.errstate(divide="ignore", invalid="ignore"):
        q = np.where(f_gold >= f_silver, 1.0, f_gold / f_silver)
    return np.nan_to_num(q, nan=1.0)


def kde_select(
    gold_scores: Sequence[float], silver_scores: Sequence[float], *, seed: int = 0, bandwidth: float | None = None
) -> list[int]:
    """Indices of the silver pairs kept: each with probability ``Q(s)`` (seeded)."""
    if len(silver_scores) == 0:
        return []
    q = kde_acceptance(gold_scores, silver_scores, bandwidth=bandwidth)
    draws = np.random.default_rng(seed).random(len(q))
    return [i for i in range(len(q)) if draws[i] < q[i]]


def classification_select(gold_labels: Sequence[int], silver_labels: Sequence[int], *, seed: int = 0) -> list[int]:
    """KDE for classification: every silver positive, and negatives sampled to the gold ratio negatives/positives."""
    gold_pos = sum(1 for y in gold_labels if y)
    gold_neg = len(gold_labels) - gold_pos
    pos = [i for i, y in enumerate(silver_labels) if y]
    neg = [i for i, y in enumerate(silver_labels) if not y]
    n_neg = len(neg) if gold_pos == 0 else min(len(neg), round(len(pos) * gold_neg / gold_pos))
    keep = pos + random.Random(seed).sample(neg, n_neg)
    return sorted(keep)


# --- dispatch --------------------------------------------------------------------------------------


def candidates(
    strategy: str,
    rows: Sequence[dict],
    *,
    k: int = DEFAULT_K,
    seed: int = 0,
    encode: Callable[[list[str]], np.ndarray] | None = None,
    n_random: int = 0,
    within_topic: bool = True,
    exclude: Iterable[tuple[str, str]] = (),
) -> list[dict]:
    """The pairs the cross-encoder is to label for ``strategy`` (before :func:`select`); never a gold pair nor one
    of ``exclude`` (:func:`pair_key` s: the dev / test pairs, so that no evaluation pair is trained on as silver)."""
    strategy = canonical(strategy)
    n_sentences = sum(len(s) for s in sentence_groups(rows, within_topic=within_topic).values())
    exclude = gold_keys(rows) | set(exclude)
    if strategy == "random":
        return random_pairs(rows, n_random or k * n_sentences, seed=seed, within_topic=within_topic, exclude=exclude)
    if strategy == "kde":
        return random_pairs(
            rows, n_random or 10 * k * n_sentences, seed=seed, within_topic=within_topic, exclude=exclude
        )
    out: list[dict] = []
    if strategy in ("bm25", "bm25+semantic"):
        out += bm25_pairs(rows, k, within_topic=within_topic, exclude=exclude)
        exclude |= gold_keys(out)
    if strategy in ("semantic", "bm25+semantic"):
        if encode is None:
            raise SamplingError(f"strategy {strategy}: semantic search needs a bi-encoder trained on the gold pairs")
        out += semantic_pairs(rows, encode, k, within_topic=within_topic, exclude=exclude)
    return out


def select(
    strategy: str,
    pairs: Sequence[dict],
    silver_scores: Sequence[float],
    gold_scores: Sequence[float],
    *,
    seed: int = 0,
    bandwidth: float | None = None,
) -> list[int]:
    """Indices of the labelled candidates that go into the silver set (all but for ``kde``)."""
    if canonical(strategy) == "kde":
        return kde_select(gold_scores, silver_scores, seed=seed, bandwidth=bandwidth)
    return list(range(len(pairs)))
