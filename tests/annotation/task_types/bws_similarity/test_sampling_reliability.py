"""Pair sampling bins (seeded) and split-half reliability (consistent vs. random annotators, loop equivalence)."""

import numpy as np
import pytest

from annotation.task_types.bws_similarity import sampling
from annotation.task_types.bws_similarity.design import make_tuples
from annotation.task_types.bws_similarity.reliability import split_half, split_half_loop, table
from annotation.task_types.bws_similarity.scoring import Judgement, encode

WORDS = [f"w{i}" for i in range(60)]


def random_texts(n, seed=0):
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(WORDS, size=8, replace=False)) for _ in range(n)]


def test_bins_are_top1_top2_50_rest_by_rank():
    scores = np.arange(1000, dtype=float)[::-1]  # pair 0 is the best
    bins, ranks = sampling.bin_labels(scores)
    assert (ranks == np.arange(1000)).all()
    assert (bins[:10] == 0).all() and (bins[10:500] == 1).all() and (bins[500:] == 2).all()


def test_sampler_bin_proportions_on_a_seeded_run():
    texts = random_texts(300)  # 44,850 candidate pairs: top 1% = 449, enough for 50% of 600 draws
    pairs = sampling.sample_pairs(texts, 600, scorer="jaccard", seed=7)
    assert len(pairs) == len({(p.i, p.j) for p in pairs}) == 600
    counts = sampling.bin_counts(pairs)
    assert abs(counts["top1"] / 600 - 0.50) < 0.06
    assert abs(counts["top2_50"] / 600 - 0.25) < 0.06
    assert abs(counts["rest"] / 600 - 0.25) < 0.06
    # the bins mean what they say: every top-1% pair scores at least as high as every other pair drawn
    assert min(p.score for p in pairs if p.bin == "top1") >= max(p.score for p in pairs if p.bin == "rest")
    assert all(p.i < p.j for p in pairs)
    again = sampling.sample_pairs(texts, 600, scorer="jaccard", seed=7)
    assert again == pairs
    assert sampling.sample_pairs(texts, 600, scorer="jaccard", seed=8) != pairs


def test_sampler_takes_a_callable_and_moves_on_when_a_bin_is_empty():
    texts = random_texts(20)  # 190 pairs: top 1% = 2 pairs
    calls = []

    def length_gap(a, b):
        calls.append(len(a))
        return [-abs(len(x) - len(y)) for x, y in zip(a, b)]

    pairs = sampling.sample_pairs(texts, 100, scorer=length_gap, seed=0)
    assert calls == [190]
    assert len(pairs) == 100
    assert sampling.bin_counts(pairs)["top1"] == 2  # exhausted, the rest came from the other bins
    assert len(sampling.sample_pairs(texts, 1000, scorer="jaccard")) == 190  # no more than exist
    with pytest.raises(ValueError, match="unknown scorer"):
        sampling.sample_pairs(texts, 5, scorer="nope")
    with pytest.raises(ValueError, match="at least 2"):
        sampling.sample_pairs(texts[:1], 5, scorer="jaccard")


@pytest.mark.slow
def test_cosine_scorer_uses_the_packaged_encoder():
    s = sampling.get_scorer("cosine")(
        ["Nuclear power emits little CO2.", "Cats sleep a lot.", "Cats sleep a lot."],
        ["Nuclear energy has low carbon emissions.", "The stock market fell.", "Cats sleep a lot."],
    )
    assert s[0] > s[1] and s[2] == pytest.approx(1.0, abs=1e-5)


def simulate(noise, *, topics=3, pairs_per_topic=40, annotators=4, seed=0, random_votes=False):
    rng = np.random.default_rng(seed)
    js = []
    for t in range(topics):
        pairs = [f"t{t}p{i}" for i in range(pairs_per_topic)]
        truth = {p: rng.random() for p in pairs}
        for k, tup in enumerate(make_tuples(pairs, seed=t)):
            for a in range(annotators):
                if random_votes:
                    b, w = rng.choice(4, size=2, replace=False)
                    best, worst = tup[b], tup[w]
                else:
                    val = {p: truth[p] + rng.normal(0, noise) for p in tup} if noise else truth
                    best, worst = max(tup, key=val.get), min(tup, key=val.get)
                js.append(Judgement(f"{t}:{k}", a, f"topic {t}", best, worst, tup))
    return encode(js)


def test_split_half_is_one_for_perfectly_consistent_annotators():
    r = split_half(simulate(0.0), n_splits=25, seed=0)
    assert r["all"]["rho"] == pytest.approx(1.0)
    assert all(t["rho"] == pytest.approx(1.0) for t in r["topics"].values())
    assert r["all"]["n_splits_defined"] == 25 and len(r["all"]["per_split"]) == 25


def test_split_half_is_near_zero_for_random_annotators():
    r = split_half(simulate(0, random_votes=True, pairs_per_topic=200), n_splits=25, seed=1)
    assert abs(r["all"]["rho"]) < 0.1
    assert all(abs(t["rho"]) < 0.2 for t in r["topics"].values())


def test_split_half_vectorised_equals_the_loop_and_is_seeded():
    data = simulate(0.3, annotators=5)  # odd: the fifth annotator goes to a random half
    fast = split_half(data, n_splits=10, seed=4)
    slow = split_half_loop(data, n_splits=10, seed=4)
    assert fast["all"]["per_split"] == pytest.approx(slow["all"]["per_split"], abs=1e-12)
    for topic in fast["topics"]:
        assert fast["topics"][topic]["rho"] == pytest.approx(slow["topics"][topic]["rho"], abs=1e-12)
    assert 0.3 < fast["all"]["rho"] < 1.0
    assert split_half(data, n_splits=10, seed=4)["all"]["rho"] == fast["all"]["rho"]
    assert split_half(data, n_splits=10, seed=5)["all"]["rho"] != fast["all"]["rho"]
    rows = table(fast)
    assert [r[0] for r in rows] == ["topic 0", "topic 1", "topic 2", "Whole dataset"]


def test_split_half_agrees_with_the_generic_agreement_function():
    from annotation.agreement import split_half_reliability
    from annotation.task_types.bws_similarity.scoring import counting_scores_loop

    data = simulate(0.3, topics=1, pairs_per_topic=80)
    units = {}
    for a, t in enumerate(data.tup.tolist()):
        units.setdefault(t, []).append((a, (tuple(data.items[a]), data.best[a], data.worst[a])))
    generic = split_half_reliability(units, lambda js: counting_scores_loop([j for _, j in js]), n_splits=25)
    ours = split_half(data, n_splits=25)
    assert ours["all"]["rho"] == pytest.approx(generic["rho"], abs=0.05)  # different random splits, same estimate


def test_unsplittable_tuples_are_left_out():
    js = [Judgement(1, "w1", "T", "a", "b", ("a", "b", "c", "d"))]
    r = split_half(encode(js), n_splits=3)
    assert r["n_tuples_unsplittable"] == 1 and r["all"]["rho"] is None
