"""AugSBERT §3.1 sampling strategies on a small hand-built corpus (ml.similarity.sampling): BM25 neighbours,
semantic search neighbours, random pairs, KDE acceptance probabilities (hand-computed) and the classification
variant, and the strategy dispatch."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ml.similarity import sampling
from ml.similarity.data import pair_key

TEXTS = [
    "nuclear power plants produce radioactive waste",  # 0
    "radioactive nuclear waste storage is dangerous",  # 1
    "solar panels are cheap",  # 2
    "cheap solar energy for everyone",  # 3
    "wind turbines kill birds",  # 4
]


def rows_of(pairs, topic="energy"):
    return [{"topic": topic, "argument1": TEXTS[a], "argument2": TEXTS[b], "score": s} for a, b, s in pairs]


def keys(pairs):
    return {pair_key(p["argument1"], p["argument2"]) for p in pairs}


def k_(a, b):
    return pair_key(TEXTS[a], TEXTS[b])


def test_bm25_neighbours_are_the_lexical_ones():
    neighbours = sampling.bm25_neighbours(TEXTS, k=3)
    assert [j for j, _ in neighbours[0]] == [1]  # shares "nuclear", "radioactive", "waste"
    assert [j for j, _ in neighbours[1]] == [0]
    assert [j for j, _ in neighbours[2]] == [3]  # "solar", "cheap" ("are" is a stop word)
    assert [j for j, _ in neighbours[3]] == [2]
    assert neighbours[4] == []  # no term in common with anything: no neighbour
    assert all(s > 0 for ns in neighbours for _, s in ns)


def test_bm25_pairs_top_k_dedup_and_gold_excluded():
    gold = rows_of([(0, 4, 0.0), (2, 4, 0.1)])
    pairs = sampling.bm25_pairs(gold, k=1)
    assert keys(pairs) == set()  # 0, 2, 4 are the gold sentences; 0-2 and x-4 share no word
    gold = rows_of([(0, 2, 0.1), (1, 3, 0.0), (3, 4, 0.2)])
    pairs = sampling.bm25_pairs(gold, k=1)
    assert keys(pairs) == {k_(0, 1), k_(2, 3)}  # each found from both sides, kept once
    assert {p["source"] for p in pairs} == {"bm25"} and all(p["topic"] == "energy" for p in pairs)
    # a gold pair is never proposed again
    gold = rows_of([(0, 1, 0.9), (2, 3, 0.8), (3, 4, 0.2)])
    assert k_(0, 1) not in keys(sampling.bm25_pairs(gold, k=3))


def test_bm25_pairs_stay_within_a_topic_unless_told():
    rows = rows_of([(0, 2, 0.1)], topic="a") + rows_of([(1, 4, 0.1)], topic="b")
    assert keys(sampling.bm25_pairs(rows, k=3)) == set()  # 0 and 1 are in different topics
    assert keys(sampling.bm25_pairs(rows, k=3, within_topic=False)) == {k_(0, 1)}


def test_semantic_neighbours_by_cosine():
    emb = np.array([[1, 0], [0.9, 0.1], [0, 1], [0.1, 0.9], [-1, 0]], dtype=np.float32)
    got = sampling.semantic_neighbours(emb, k=2)
    assert [j for j, _ in got[0]] == [1, 3]
    assert [j for j, _ in got[2]] == [3, 1]
    assert math.isclose(got[0][0][1], float(emb[1] @ emb[0] / np.linalg.norm(emb[1])), rel_tol=1e-5)
    lookup = dict(zip(TEXTS, emb))
    gold = rows_of([(0, 2, 0.1), (1, 3, 0.0), (4, 2, 0.0)])
    pairs = sampling.semantic_pairs(gold, lambda texts: np.stack([lookup[t] for t in texts]), k=1)
    assert keys(pairs) == {k_(0, 1), k_(2, 3)}  # 4's nearest (2, cos 0) is a gold pair: not proposed again


def test_random_pairs_distinct_not_gold_not_self_seeded():
    gold = rows_of([(0, 1, 0.9), (2, 3, 0.8), (3, 4, 0.2)])
    a = sampling.random_pairs(gold, 5, seed=3)
    assert len(a) == 5 and len(keys(a)) == 5
    assert not keys(a) & {k_(0, 1), k_(2, 3), k_(3, 4)}
    assert all(p["argument1"] != p["argument2"] for p in a)
    assert a == sampling.random_pairs(gold, 5, seed=3)
    # only 10 - 3 = 7 pairs exist
    assert len(sampling.random_pairs(gold, 100, seed=1)) == 7


def test_kde_acceptance_hand_computed():
    # gold = {0}, silver = {0, 1}, bandwidth 0.5 for both:
    #   F_gold(0) = phi(0)/h, F_silver(0) = (phi(0) + phi(2)) / 2h -> F_gold >= F_silver -> Q = 1
    #   F_gold(1) = phi(2)/h, F_silver(1) = (phi(2) + phi(0)) / 2h -> Q = 2 e^-2 / (1 + e^-2)
    q = sampling.kde_acceptance([0.0], [0.0, 1.0], bandwidth=0.5)
    assert q[0] == 1.0
    assert math.isclose(q[1], 2 * math.exp(-2) / (1 + math.exp(-2)), rel_tol=1e-9)  # 0.2384
    # at chosen points
    q = sampling.kde_acceptance([0.2, 0.4], [0.2, 0.4, 0.6, 0.8], at=[0.3], bandwidth=0.1)
    f_gold = (math.exp(-0.5) * 2) / 2
    f_silver = (math.exp(-0.5) * 2 + math.exp(-4.5) + math.exp(-12.5)) / 4
    assert math.isclose(q[0], min(1.0, f_gold / f_silver), rel_tol=1e-9) and q[0] == 1.0
    q = sampling.kde_acceptance([0.2, 0.4], [0.2, 0.4, 0.6, 0.8], at=[0.7], bandwidth=0.1)
    ratio = (math.exp(-12.5) + math.exp(-4.5)) / 2 / ((math.exp(-12.5) + 2 * math.exp(-0.5) + math.exp(-4.5)) / 4)
    assert math.isclose(q[0], ratio, rel_tol=1e-9) and q[0] < 0.05


def test_kde_density_matches_scipy_with_scotts_rule():
    from scipy.stats import gaussian_kde

    pts = [0.1, 0.15, 0.3, 0.32, 0.5, 0.9]
    at = np.linspace(0, 1, 11)
    assert np.allclose(sampling.kde_density(pts, at), gaussian_kde(pts)(at), rtol=1e-9)


def test_kde_select_keeps_pairs_with_probability_q():
    rng = np.random.default_rng(0)
    gold = rng.normal(0.5, 0.15, 400).clip(0, 1)
    silver = np.concatenate([rng.normal(0.1, 0.05, 4000), rng.normal(0.5, 0.15, 1000)]).clip(0, 1)
    keep = sampling.kde_select(gold, silver, seed=1)
    assert keep == sampling.kde_select(gold, silver, seed=1)
    q = sampling.kde_acceptance(gold, silver)
    assert abs(len(keep) - q.sum()) < 4 * math.sqrt(q.sum())  # binomial: expected sum(Q)
    kept = silver[keep]
    assert abs(kept.mean() - 0.5) < abs(silver.mean() - 0.5) / 2  # the kept scores follow the gold distribution


def test_classification_keeps_positives_and_samples_negatives_to_the_gold_ratio():
    gold = [1, 1, 0, 0, 0, 0, 0, 0]  # 2 positives : 6 negatives = 1 : 3
    silver = [1, 0, 0, 1, 0, 1] + [0] * 20  # 3 positives, 23 negatives
    keep = sampling.classification_select(gold, silver, seed=0)
    assert {0, 3, 5} <= set(keep)
    assert sum(1 for i in keep if not silver[i]) == 9
    assert keep == sampling.classification_select(gold, silver, seed=0)


def test_candidates_dispatch_and_union():
    gold = rows_of([(0, 2, 0.1), (1, 3, 0.0), (4, 2, 0.0)])
    emb = dict(zip(TEXTS, np.eye(5, dtype=np.float32) + np.float32(0.01)))
    emb[TEXTS[4]] = emb[TEXTS[0]] + np.float32(0.1)  # semantically, 4 is next to 0

    def encode(texts):
        return np.stack([emb[t] for t in texts])

    bm25 = sampling.candidates("bm25", gold, k=1)
    sem = sampling.candidates("ss", gold, k=1, encode=encode)
    both = sampling.candidates("BM25+S.S.", gold, k=1, encode=encode)
    assert keys(bm25) == {k_(0, 1), k_(2, 3)}
    assert k_(0, 4) in keys(sem)
    assert keys(both) == keys(bm25) | keys(sem) and len(both) == len(keys(both))
    assert len(sampling.candidates("random", gold, k=1)) == 5  # default k x #sentences, capped by what exists (7)
    with pytest.raises(sampling.SamplingError):
        sampling.candidates("semantic", gold)
    with pytest.raises(sampling.SamplingError):
        sampling.canonical("nearest")
    assert sampling.select("bm25", bm25, [0.1, 0.2], [0.5]) == [0, 1]


def test_candidates_never_propose_an_evaluation_pair():
    gold = rows_of([(0, 2, 0.1), (1, 3, 0.0), (4, 2, 0.0)])
    held_out = {k_(0, 1)}  # a dev / test pair
    bm25 = sampling.candidates("bm25", gold, k=1, exclude=held_out)
    assert keys(bm25) == {k_(2, 3)}  # 0-1 would be BM25's first choice
    rand = sampling.candidates("random", gold, n_random=100, exclude=held_out)
    assert len(rand) == 10 - 3 - 1 and k_(0, 1) not in keys(rand)  # every other pair of the 5 sentences
    assert k_(0, 1) not in keys(sampling.candidates("kde", gold, exclude=held_out))
