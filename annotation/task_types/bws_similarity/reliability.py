"""Split-half reliability of BWS scores (AugSBERT sec. 4.1, Table 3).

Per repetition, each tuple's annotators are shuffled and split into two halves (floor(m/2) and ceil(m/2); an odd
one goes to a random half); all pairs are scored from each half with counting scores; Spearman's rho between the two
halves' scores is taken per topic and over the whole dataset (all pairs pooled). The reported figure is the mean over
``n_splits`` (default 25) seeded repetitions. Tuples with fewer than 2 annotators cannot be split and are left out.

:func:`split_half` is vectorised: all repetitions are drawn at once (``keys`` (S, A) and ``coins`` (S, T)), the
halves are counted with one ``bincount`` over ``S x P`` bins and the correlations are Pearson's r of
``rankdata(axis=1)`` ranks. :func:`split_half_loop` computes the same numbers from the same random draws with
plain Python loops and :func:`scipy.stats.spearmanr` (the reference the tests and ``bench/bws.py`` compare with).
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from .scoring import BWSData, counting_scores_loop

ALL = "all"


def draws(data: BWSData, n_splits: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The random numbers of ``n_splits`` repetitions: a shuffle key per judgement and a coin per tuple."""
    rng = np.random.default_rng(seed)
    keys = rng.random((n_splits, len(data.tup)))
    coins = rng.random((n_splits, len(data.tuples))) < 0.5
    return keys, coins


def halves(data: BWSData, keys: np.ndarray, coins: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Boolean masks ``(in_a, in_b)`` of shape (S, A): which judgements each half gets in each repetition."""
    s, a = keys.shape
    m = np.bincount(data.tup, minlength=len(data.tuples))  # annotators per tuple
    start = np.concatenate(([0], np.cumsum(m)[:-1]))
    k = m // 2 + ((m % 2 == 1) & coins)  # (S, T): size of half a
    splittable = (m >= 2)[data.tup]  # (A,)
    rows = np.arange(s)[:, None]
    order = np.argsort(data.tup[None, :] + keys, axis=1)  # (S, A): by tuple, then key (keys lie in [0, 1))
    pos = np.empty_like(order)
    pos[rows, order] = np.arange(a)[None, :] - start[data.tup[order]]  # rank inside the tuple
    in_a = (pos < k[rows, data.tup[None, :]]) & splittable
    in_b = ~in_a & splittable
    return in_a, in_b


def _half_scores(data: BWSData, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Counting scores (S, P) of the judgements in ``mask`` (S, A), and the appearances (S, P)."""
    s = mask.shape[0]
    p = data.n_pairs
    kk = data.items.shape[1]
    off = (np.arange(s) * p)[:, None]
    w = mask.astype(np.float64)
    app = np.bincount(
        (data.items.ravel()[None, :] + off).ravel(), weights=np.repeat(w, kk, axis=1).ravel(), minlength=s * p
    ).reshape(s, p)
    b = np.bincount((data.best[None, :] + off).ravel(), weights=w.ravel(), minlength=s * p).reshape(s, p)
    wo = np.bincount((data.worst[None, :] + off).ravel(), weights=w.ravel(), minlength=s * p).reshape(s, p)
    with np.errstate(invalid="ignore", divide="ignore"):
        return ((b - wo) / app + 1.0) / 2.0, app


def _rowwise_spearman(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Spearman's rho of each row of x with the same row of y (average ranks for ties; NaN if a row is constant)."""
    from scipy.stats import rankdata

    if x.shape[1] < 2:
        return np.full(x.shape[0], np.nan)
    rx = rankdata(x, axis=1)
    ry = rankdata(y, axis=1)
    rx -= rx.mean(axis=1, keepdims=True)
    ry -= ry.mean(axis=1, keepdims=True)
    den = np.sqrt((rx * rx).sum(axis=1) * (ry * ry).sum(axis=1))
    with np.errstate(invalid="ignore", divide="ignore"):
        r = (rx * ry).sum(axis=1) / den
    r[den == 0] = np.nan
    return np.clip(r, -1.0, 1.0)


def _summary(rhos: np.ndarray, n_pairs: int, min_pairs: int) -> dict[str, Any]:
    rhos = np.asarray(rhos, dtype=np.float64)
    ok = rhos[~np.isnan(rhos)] if n_pairs >= min_pairs else np.zeros(0)
    return {
        "rho": float(ok.mean()) if ok.size else None,
        "rho_std": float(ok.std()) if ok.size else None,
        "n_pairs": int(n_pairs),
        "n_splits_defined": int(ok.size),
        "per_split": [None if math.isnan(v) else float(v) for v in rhos.tolist()],
    }


def split_half(data: BWSData, *, n_splits: int = 25, seed: int = 0, min_pairs: int = 3) -> dict[str, Any]:
    """``{"topics": {topic: summary}, "all": summary, "mean_of_topics": float|None, ...}``; a summary is
    ``{"rho", "rho_std", "n_pairs", "n_splits_defined", "per_split"}`` (``rho`` None when undefined: fewer than
    ``min_pairs`` pairs, or constant scores in every repetition)."""
    if n_splits < 1:
        raise ValueError("n_splits must be at least 1")
    keys, coins = draws(data, n_splits, seed)
    in_a, in_b = halves(data, keys, coins)
    sa, app_a = _half_scores(data, in_a)
    sb, app_b = _half_scores(data, in_b)
    valid = (app_a > 0).all(axis=0) & (app_b > 0).all(axis=0)  # pairs scored in both halves (every repetition)
    topic_arr = np.asarray(data.pair_topic, dtype=object)
    out: dict[str, Any] = {"topics": {}}
    for topic in data.topics:
        cols = np.flatnonzero(valid & (topic_arr == topic))
        out["topics"][topic] = _summary(_rowwise_spearman(sa[:, cols], sb[:, cols]), len(cols), min_pairs)
    cols = np.flatnonzero(valid)
    out[ALL] = _summary(_rowwise_spearman(sa[:, cols], sb[:, cols]), len(cols), min_pairs)
    defined = [t["rho"] for t in out["topics"].values() if t["rho"] is not None]
    out["mean_of_topics"] = float(np.mean(defined)) if defined else None
    out.update(
        n_splits=n_splits,
        seed=seed,
        n_judgements=int(len(data.tup)),
        n_tuples=len(data.tuples),
        n_tuples_unsplittable=int((np.bincount(data.tup, minlength=len(data.tuples)) < 2).sum()),
        method="mean Spearman rho between the counting scores of random halves of each tuple's annotators",
    )
    return out


def split_half_loop(data: BWSData, *, n_splits: int = 25, seed: int = 0, min_pairs: int = 3) -> dict[str, Any]:
    """:func:`split_half` written as plain loops over the same random draws (reference; slow)."""
    from scipy.stats import spearmanr

    keys, coins = draws(data, n_splits, seed)
    by_tuple: dict[int, list[int]] = {}
    for a, t in enumerate(data.tup.tolist()):
        by_tuple.setdefault(t, []).append(a)
    items = data.items.tolist()
    best = data.best.tolist()
    worst = data.worst.tolist()
    topics = data.topics
    per: dict[str, list[float]] = {t: [] for t in topics + [ALL]}
    n_pairs: dict[str, int] = {}
    for s in range(n_splits):
        half_a, half_b = [], []
        for t, members in by_tuple.items():
            if len(members) < 2:
                continue
            ordered = sorted(members, key=lambda a: keys[s, a])
            k = len(ordered) // 2 + (1 if len(ordered) % 2 and coins[s, t] else 0)
            half_a += [(items[a], best[a], worst[a]) for a in ordered[:k]]
            half_b += [(items[a], best[a], worst[a]) for a in ordered[k:]]
        sa, sb = counting_scores_loop(half_a), counting_scores_loop(half_b)
        common = sorted(p for p in sa if p in sb)
        for topic in topics + [ALL]:
            chosen = [p for p in common if topic == ALL or data.pair_topic[p] == topic]
            n_pairs[topic] = len(chosen)
            if len(chosen) < 2:
                per[topic].append(float("nan"))
                continue
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                rho = spearmanr([sa[p] for p in chosen], [sb[p] for p in chosen]).statistic
            per[topic].append(float(rho))
    out: dict[str, Any] = {"topics": {t: _summary(np.array(per[t]), n_pairs.get(t, 0), min_pairs) for t in topics}}
    out[ALL] = _summary(np.array(per[ALL]), n_pairs.get(ALL, 0), min_pairs)
    defined = [t["rho"] for t in out["topics"].values() if t["rho"] is not None]
    out["mean_of_topics"] = float(np.mean(defined)) if defined else None
    out.update(n_splits=n_splits, seed=seed)
    return out


def table(result: dict[str, Any]) -> list[tuple[str, float | None, int]]:
    """Rows ``(topic, rho, n_pairs)`` like the paper's Table 3, the whole dataset last."""
    rows = [(topic, r["rho"], r["n_pairs"]) for topic, r in sorted(result["topics"].items())]
    rows.append(("Whole dataset", result[ALL]["rho"], result[ALL]["n_pairs"]))
    return rows
