"""Pair sampling per topic (AugSBERT sec. 4.1): all pairs of the topic's arguments (regardless of stance) are
scored by a distant-supervision scorer, binned into the top 1%, the top 2-50% and the rest, and drawn with
probabilities 50% / 25% / 25% (without replacement) up to a target number of pairs.

A scorer is a callable ``(texts_a, texts_b) -> scores`` (one float per pair, higher = more similar). Registered
scorers: ``"cosine"`` (cosine of the active bi-encoder's normalised embeddings; each distinct text encoded once)
and ``"jaccard"`` (token-set overlap, cheap, for tests). :func:`register_scorer` adds more; :func:`resolve_scorer`
binds a name to a project and says which model it uses.

"The active bi-encoder" is what the ``pair_encoder`` slot of :mod:`annotation.providers` gives (the ml app fills it:
the project's, then the global active ``augsbert`` / ``biencoder`` version, :mod:`ml.bi_encoders`); with none, the
default encoder of the ``encode`` slot (the packaged all-MiniLM-L6-v2).

Binning is by rank (ties broken by a seeded shuffle, so a constant scorer still gives 1% / 49% / 50% bins):
``top = ceil(1% of P)`` pairs, ``mid`` = the next pairs up to ``ceil(50% of P)``, ``rest`` = the others.
When a bin runs out, its probability goes to the bins that still have pairs (renormalised), so asking for more
pairs than the top bin holds still returns the target number (and the report says how many came from each bin).
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from functools import partial

import numpy as np

from annotation import providers

Scorer = Callable[[Sequence[str], Sequence[str]], Sequence[float]]
log = logging.getLogger(__name__)

DEFAULT_ENCODER_NAME = "default encoder"  # providers.default_encoder(): the packaged MiniLM

BIN_NAMES = ("top1", "top2_50", "rest")
DEFAULT_PROBS = (0.5, 0.25, 0.25)
DEFAULT_CUTS = (0.01, 0.50)

_SCORERS: dict[str, Scorer] = {}
_TOKEN = re.compile(r"\w+", re.UNICODE)


def register_scorer(name: str):
    def decorator(fn: Scorer) -> Scorer:
        _SCORERS[name] = fn
        return fn

    return decorator


def scorer_names() -> list[str]:
    return sorted(_SCORERS)


def get_scorer(scorer: str | Scorer | None = None) -> Scorer:
    """A registered scorer by name (default ``"cosine"``) or the callable itself."""
    if callable(scorer):
        return scorer
    name = scorer or "cosine"
    try:
        return _SCORERS[name]
    except KeyError:
        raise ValueError(f"unknown scorer {name!r} (known: {', '.join(scorer_names())})") from None


def _unique(texts_a: Sequence[str], texts_b: Sequence[str]) -> tuple[list[str], np.ndarray, np.ndarray]:
    index: dict[str, int] = {}
    ia = np.fromiter((index.setdefault(t, len(index)) for t in texts_a), dtype=np.int64, count=len(texts_a))
    ib = np.fromiter((index.setdefault(t, len(index)) for t in texts_b), dtype=np.int64, count=len(texts_b))
    return list(index), ia, ib


@register_scorer("cosine")
def cosine_scorer(
    texts_a: Sequence[str], texts_b: Sequence[str], *, encoder: str | None = None, model=None, project=None
) -> np.ndarray:
    """Cosine similarity of (normalised) embeddings; each distinct text encoded once. The encoder: ``model`` (a
    loaded one with ``encode``), else ``encoder`` (a name or path), else the active bi-encoder of ``project``
    (``providers.pair_encoder``), else the default encoder (``providers.encode``)."""
    texts, ia, ib = _unique(texts_a, texts_b)
    if not texts:
        return np.zeros(0)
    if model is None and encoder is None:
        active = providers.pair_encoder.get(project)
        model = active[0] if active is not None else None
    if model is not None:
        emb = model.encode(
            list(texts), batch_size=64, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
        )
    else:
        emb = providers.encode(texts, encoder)
    emb = np.asarray(emb, dtype=np.float32)
    return np.einsum("ij,ij->i", emb[ia], emb[ib]).astype(np.float64)


def resolve_scorer(scorer: str | Scorer | None = None, project=None) -> tuple[Scorer, str]:
    """``(callable, label)`` for a scorer name or callable: ``"cosine"`` is bound to the active bi-encoder of
    ``project`` now (label e.g. ``"cosine (biencoder#7)"`` or ``"cosine (default encoder)"``)."""
    if callable(scorer):
        return scorer, getattr(scorer, "__name__", "custom")
    name = scorer or "cosine"
    fn = get_scorer(name)
    if fn is cosine_scorer:
        active = providers.pair_encoder.get(project)
        if active is None:
            return (partial(cosine_scorer, encoder=providers.default_encoder()), f"{name} ({DEFAULT_ENCODER_NAME})")
        model, label = active
        return partial(cosine_scorer, model=model), f"{name} ({label})"
    return fn, name


@register_scorer("jaccard")
def jaccard_scorer(texts_a: Sequence[str], texts_b: Sequence[str]) -> np.ndarray:
    """Jaccard overlap of lower-cased word sets (a cheap stand-in for tests and for the paper's baseline)."""
    texts, ia, ib = _unique(texts_a, texts_b)
    sets = [frozenset(_TOKEN.findall(t.lower())) for t in texts]
    out = np.empty(len(ia))
    for k, (i, j) in enumerate(zip(ia.tolist(), ib.tolist())):
        a, b = sets[i], sets[j]
        union = len(a | b)
        out[k] = len(a & b) / union if union else 1.0
    return out


@dataclass(frozen=True)
class SampledPair:
    i: int  # index of argument 1 in the topic's list (i < j)
    j: int  # index of argument 2
    score: float  # the distant-supervision score
    bin: str  # one of BIN_NAMES
    rank: int  # 0 = the highest-scored pair of the topic

    def as_dict(self) -> dict:
        return asdict(self)


def all_pairs(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Index arrays ``(i, j)`` of every unordered pair ``i < j`` of ``n`` items."""
    return np.triu_indices(n, k=1)


def bin_labels(
    scores: np.ndarray, *, cuts: tuple[float, float] = DEFAULT_CUTS, rng: np.random.Generator | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """``(bins, ranks)``: bin 0/1/2 and rank (0 = best) of every score; ties broken by ``rng`` (or by index)."""
    scores = np.asarray(scores, dtype=np.float64)
    p = len(scores)
    tiebreak = rng.random(p) if rng is not None else np.arange(p, dtype=np.float64)
    order = np.lexsort((tiebreak, -scores))  # by score descending, then the tiebreak
    ranks = np.empty(p, dtype=np.int64)
    ranks[order] = np.arange(p)
    n_top = min(p, max(1, math.ceil(cuts[0] * p))) if p else 0
    n_mid = min(p, max(n_top, math.ceil(cuts[1] * p)))
    bins = np.where(ranks < n_top, 0, np.where(ranks < n_mid, 1, 2))
    return bins, ranks


def draw(bins: np.ndarray, n: int, *, probs: Sequence[float] = DEFAULT_PROBS, rng: np.random.Generator) -> np.ndarray:
    """Indices of ``n`` distinct pairs: each draw picks a bin with ``probs`` (renormalised over the bins that still
    have pairs), then a pair of that bin uniformly. Returns them in draw order."""
    probs = np.asarray(probs, dtype=np.float64)
    if probs.shape != (3,) or (probs < 0).any() or probs.sum() <= 0:
        raise ValueError("probs: three non-negative numbers (top 1%, top 2-50%, rest) with a positive sum")
    pools = [rng.permutation(np.flatnonzero(bins == b)) for b in range(3)]  # drawing = popping a shuffled pool
    taken = [0, 0, 0]
    n = min(int(n), len(bins))
    out = np.empty(n, dtype=np.int64)
    for k in range(n):
        left = np.array([len(pools[b]) - taken[b] for b in range(3)])
        weights = np.where(left > 0, probs, 0.0)
        if weights.sum() <= 0:  # only bins with probability 0 are left: take from them uniformly
            weights = (left > 0).astype(np.float64)
        b = int(rng.choice(3, p=weights / weights.sum()))
        out[k] = pools[b][taken[b]]
        taken[b] += 1
    return out


def sample_pairs(
    texts: Sequence[str],
    n_pairs: int,
    *,
    scorer: str | Scorer | None = "cosine",
    seed: int = 0,
    probs: Sequence[float] = DEFAULT_PROBS,
    cuts: tuple[float, float] = DEFAULT_CUTS,
    scores: np.ndarray | None = None,
) -> list[SampledPair]:
    """Sample ``n_pairs`` argument pairs of one topic (see the module doc); reproducible for a seed.

    ``scores`` (one per pair of :func:`all_pairs`) skips the scorer. Duplicate texts are allowed (they make a pair
    of identical arguments, which the scorer ranks first); pairs are returned in draw order.
    """
    texts = list(texts)
    if len(texts) < 2:
        raise ValueError(f"a topic needs at least 2 arguments to pair, it has {len(texts)}")
    if n_pairs < 1:
        raise ValueError("n_pairs must be at least 1")
    ii, jj = all_pairs(len(texts))
    if scores is None:
        fn = get_scorer(scorer)
        scores = np.asarray(fn([texts[i] for i in ii], [texts[j] for j in jj]), dtype=np.float64)
    scores = np.asarray(scores, dtype=np.float64)
    if scores.shape != ii.shape:
        raise ValueError(f"the scorer gave {scores.shape[0] if scores.ndim else 0} scores for {len(ii)} pairs")
    if not np.isfinite(scores).all():
        raise ValueError("the scorer gave a non-finite score")
    rng = np.random.default_rng(seed)
    bins, ranks = bin_labels(scores, cuts=cuts, rng=rng)
    chosen = draw(bins, n_pairs, probs=probs, rng=rng)
    return [
        SampledPair(i=int(ii[k]), j=int(jj[k]), score=float(scores[k]), bin=BIN_NAMES[int(bins[k])], rank=int(ranks[k]))
        for k in chosen
    ]


def bin_counts(pairs: Sequence[SampledPair]) -> dict[str, int]:
    counts = dict.fromkeys(BIN_NAMES, 0)
    for p in pairs:
        counts[p.bin] += 1
    return counts
