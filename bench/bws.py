"""Benchmark: BWS counting scores + 25 split-half repetitions, vectorised (ours) vs. straightforward loops.

    .venv/bin/python bench/bws.py [--tuples 3400] [--annotators 4] [--splits 25] [--topics 8] [--seed 0] [--repeat 3]

Data: AugSBERT-sized synthetic judgements -- 3,400 tuples of 4 pairs (8 topics; 2N design, so 1,700 pairs, each in 8
tuples) x 4 annotators whose best/worst follow a hidden similarity plus noise. Timed on the same input:

* ours:      ``annotation.task_types.bws_similarity.scoring.counting_scores`` + ``annotation.task_types.bws_similarity.reliability.split_half`` (numpy: one bincount
             over S x P bins per half, row-wise rank correlation), from the encoded arrays;
* loop:      ``counting_scores_loop`` + ``split_half_loop`` (dicts and scipy.stats.spearmanr per topic and split) --
             the same random splits, so its numbers must equal ours (checked);
* generic:   ``annotation.agreement.split_half_reliability`` with the BWS counting score function, once per topic and
             once for the whole dataset (other random splits: its rho is an estimate of the same quantity).

Timed in ``--repeat`` interleaved rounds (each round times ours, the loop and the generic path once, in a rotated
order, same process, warm after one untimed call each); prints min / median / max of each and of the per-round
ratios, and the machine's load before and after (wall clock, this machine); no assertions on speed.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from annotation.task_types.bws_similarity.design import make_tuples  # noqa: E402
from annotation.task_types.bws_similarity.reliability import split_half, split_half_loop  # noqa: E402
from annotation.task_types.bws_similarity.scoring import Judgement, counting_scores, counting_scores_loop, encode  # noqa: E402
from bench.timing import load_line, spread  # noqa: E402


def synthetic(n_tuples: int, annotators: int, topics: int, seed: int) -> list[Judgement]:
    rng = np.random.default_rng(seed)
    per_topic = n_tuples // topics
    out = []
    for t in range(topics):
        size = per_topic + (1 if t < n_tuples % topics else 0)
        pairs = [f"t{t}-p{i}" for i in range(max(4, size // 2))]
        truth = dict(zip(pairs, rng.random(len(pairs))))
        for k, tup in enumerate(make_tuples(pairs, size, seed=seed + t)):
            for a in range(annotators):
                noisy = {p: truth[p] + rng.normal(0, 0.45) for p in tup}
                out.append(
                    Judgement(f"t{t}-{k}", f"w{a}", f"topic {t}", max(tup, key=noisy.get), min(tup, key=noisy.get), tup)
                )
    return out


def timed(fn):
    t0 = time.perf_counter()
    result = fn()
    return time.perf_counter() - t0, result


def interleaved(contenders: dict, rounds: int) -> tuple[dict, dict]:
    """``({name: [seconds per round]}, {name: result})``: one untimed call of each, then ``rounds`` rounds timing
    each once, the order rotated every round."""
    results = {name: fn() for name, fn in contenders.items()}
    times: dict = {name: [] for name in contenders}
    names = list(contenders)
    for r in range(max(1, rounds)):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            times[name].append(timed(contenders[name])[0])
    return times, results


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tuples", type=int, default=3400)
    ap.add_argument("--annotators", type=int, default=4)
    ap.add_argument("--splits", type=int, default=25)
    ap.add_argument("--topics", type=int, default=8)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)

    from scipy.stats import rankdata, spearmanr  # noqa: F401  (import once, outside the timings)

    from annotation.agreement import split_half_reliability

    print(f"machine before: {load_line()}")
    js = synthetic(args.tuples, args.annotators, args.topics, args.seed)
    t_enc, data = timed(lambda: encode(js))
    print(
        f"{len(js)} judgements: {len(data.tuples)} tuples x {args.annotators} annotators, {data.n_pairs} pairs, "
        f"{len(data.topics)} topics; {args.splits} split-half repetitions"
    )

    def ours():
        return counting_scores(data), split_half(data, n_splits=args.splits, seed=args.seed)

    def loop():
        triples = list(zip(map(tuple, data.items.tolist()), data.best.tolist(), data.worst.tolist()))
        return counting_scores_loop(triples), split_half_loop(data, n_splits=args.splits, seed=args.seed)

    def generic():
        units: dict = {}
        for a, t in enumerate(data.tup.tolist()):
            units.setdefault(t, []).append((a, (tuple(data.items[a].tolist()), int(data.best[a]), int(data.worst[a]))))

        def score_fn(judgements):
            return counting_scores_loop([j for _, j in judgements])

        topic_of_tuple = {}
        for a, t in enumerate(data.tup.tolist()):
            topic_of_tuple[t] = data.pair_topic[int(data.items[a][0])]
        out = {}
        for topic in data.topics:
            sub = {t: v for t, v in units.items() if topic_of_tuple[t] == topic}
            out[topic] = split_half_reliability(sub, score_fn, n_splits=args.splits, seed=args.seed)["rho"]
        out["all"] = split_half_reliability(units, score_fn, n_splits=args.splits, seed=args.seed)["rho"]
        return out

    times, results = interleaved({"ours": ours, "loop": loop, "generic": generic}, args.repeat)
    scores, sh = results["ours"]
    scores_loop, sh_loop = results["loop"]
    gen = results["generic"]

    same_scores = all(abs(scores[data.pairs[p]]["score"] - v) < 1e-12 for p, v in scores_loop.items())
    same_rho = all(abs(a - b) < 1e-9 for a, b in zip(sh["all"]["per_split"], sh_loop["all"]["per_split"])) and all(
        abs(sh["topics"][t]["rho"] - sh_loop["topics"][t]["rho"]) < 1e-9 for t in sh["topics"]
    )
    print(f"{'topic':<12} {'ours':>7} {'loop':>7} {'generic':>8}")
    for topic in data.topics:
        print(f"{topic:<12} {sh['topics'][topic]['rho']:7.4f} {sh_loop['topics'][topic]['rho']:7.4f} {gen[topic]:8.4f}")
    print(f"{'all':<12} {sh['all']['rho']:7.4f} {sh_loop['all']['rho']:7.4f} {gen['all']:8.4f}")
    print(f"scores identical: {same_scores}; split-half identical to the loop (same splits): {same_rho}")
    print(f"encode (CSV rows -> arrays, once):           {t_enc * 1000:8.1f} ms")
    print(f"{args.repeat} interleaved rounds, min / median / max:")
    print(f"ours    (vectorised scores + split-half):    {spread(times['ours'], '8.1f', 1000)} ms")
    for name, what in (("loop", "dicts + spearmanr, same splits"), ("generic", "agreement.split_half_reliability")):
        ratios = [t / o for t, o in zip(times[name], times["ours"])]
        print(
            f"{name:<7} ({what + '):':<37} {spread(times[name], '8.1f', 1000)} ms   ratio {name}/ours {spread(ratios)}x"
        )
    print(f"machine after: {load_line()}")
    if not (same_scores and same_rho):
        print("MISMATCH between ours and the loop", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
