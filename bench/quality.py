"""Model quality against the papers' baselines: trains each kind on a local corpus file with its default recipe and
prints ours vs baseline (issue 23).

    python bench/quality.py --data ../shared/data/ukp_aspect/UKP_ASPECT.tsv \
        [--kinds crossencoder,biencoder,augsbert] [--seeds 1,2,3] [--max-train 600] [--max-eval 400] \
        [--epochs N] [--recipe new|cls|old] [--test-topics T1,T2 --dev-topics T3] [--split-seed 0] [--threads 1] \
        [--tagger-data FILE] [--json]

Similarity kinds (``crossencoder`` = BERT, ``biencoder`` = SBERT, ``augsbert`` = AugSBERT-BM25, whose teacher is the
``crossencoder`` trained for the same seed): the file is read by the trainers' own reader (UKP ASPECT TSV, BWS CSV
or JSONL: :mod:`ml.similarity.data`) and cut **cross-topic by topic** (``--test-topics`` / ``--dev-topics``, else the
paper's 5 / 1 / 2 topic proportions drawn with ``--split-seed``); every model is scored on the test topics in
Spearman x 100 beside the Jaccard word-overlap baseline (AugSBERT Table 5), mean ± std over ``--seeds``; the table
ends with the ordering checks of the issue (BERT > SBERT, AugSBERT > SBERT) and the AugSBERT teacher check.

``--tagger-data FILE`` trains the ``tagger`` kind (when it is registered) on FILE with its default recipe and
prints its dev / test metrics and every baseline it reports.

Time box for a 2-core machine: ``--max-train`` (training pairs, drawn with the seed), ``--max-eval`` (dev and test
pairs each), ``--epochs`` (every kind's epochs, the AugSBERT cross-encoder's too), ``--kinds``, one seed. The
machine's load is printed before and after (a shared machine slows every run; the figures do not depend on it).
``--recipe`` picks the cross-encoder (AugSBERT's teacher too): ``new`` the default, the gated cross-encoder
(:mod:`ml.similarity.gated`); ``cls`` the paper's [CLS]-head CrossEncoder with the issue-23 recipe; ``old`` that
CrossEncoder with the defaults from before issue 23 (lr 1e-5, head at the same rate, 1 epoch, pooler as loaded).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.timing import load_line, spread  # noqa: E402

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "argora.settings")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

SIM_KINDS = ("crossencoder", "biencoder", "augsbert")
LABELS = {"crossencoder": "BERT (cross-encoder)", "biencoder": "SBERT (bi-encoder)", "augsbert": "AugSBERT-BM25"}


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", help="similarity corpus file (UKP ASPECT .tsv, BWS .csv / .jsonl)")
    p.add_argument("--kinds", default=",".join(SIM_KINDS), help="comma list of crossencoder, biencoder, augsbert")
    p.add_argument("--seeds", default="1", help="comma list of seeds (default 1)")
    p.add_argument("--max-train", type=int, default=0, help="at most this many training pairs (0: all)")
    p.add_argument("--max-eval", type=int, default=0, help="at most this many dev and test pairs each (0: all)")
    p.add_argument("--epochs", type=int, default=0, help="every kind's epochs (0: the kind's default)")
    p.add_argument(
        "--recipe",
        choices=("new", "cls", "old"),
        default="new",
        help="cross-encoder: new (the gated default), cls (the [CLS] CrossEncoder, issue-23 recipe) or "
        "old (the [CLS] CrossEncoder with the paper's BERT-base values)",
    )
    p.add_argument("--test-topics", default="", help="comma list of test topics (default: drawn)")
    p.add_argument("--dev-topics", default="", help="comma list of dev topics (default: drawn)")
    p.add_argument("--split-seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=1, help="torch threads (default 1: best on a busy 2-core machine)")
    p.add_argument("--max-length", type=int, default=0, help="token limit of a pair / sentence (0: default 128)")
    p.add_argument("--tagger-data", default="", help="also train the tagger kind on this file")
    p.add_argument("--json", action="store_true", help="print the results as JSON too")
    return p.parse_args(argv)


def cross_topic_parts(rows, args):
    from ml.similarity import data as sim_data

    topics = None
    if args.test_topics or args.dev_topics:
        test = [t.strip() for t in args.test_topics.split(",") if t.strip()]
        dev = [t.strip() for t in args.dev_topics.split(",") if t.strip()]
        known = {r["topic"] for r in rows}
        unknown = sorted(set(test + dev) - known)
        if unknown or not test or not dev:
            raise SystemExit(f"--test-topics / --dev-topics: both needed, from the file's topics; unknown: {unknown}")
        topics = {"test": test, "dev": dev, "train": sorted(known - set(test) - set(dev))}
    return sim_data.split_rows(rows, "cross-topic", seed=args.split_seed, topics=topics)


def sample(rows, n, seed):
    rows = list(rows)
    if n and len(rows) > n:
        rows = random.Random(f"quality:{seed}").sample(rows, n)
    return rows


def hyperparameters(kind: str, args, cross_model: str | None) -> dict:
    from ml.similarity import models as sim_models

    hp: dict = {}
    if args.epochs:
        hp["epochs"] = args.epochs
    if args.max_length:
        hp["max_length"] = args.max_length
    recipe = {
        "new": {},
        "cls": {"architecture": "cls"},
        "old": {
            k: v
            for k, v in sim_models.OLD_CROSS_DEFAULTS.items()
            if k in ("architecture", "lr", "head_lr", "epochs", "pooler_init")
        },
    }[args.recipe]
    if kind == "crossencoder":
        hp = dict(recipe, **hp)
    if kind == "augsbert":
        if cross_model:
            hp["cross_encoder"] = cross_model
        else:
            hp.update({f"cross_{k}": v for k, v in recipe.items()})
        if args.epochs:
            hp["cross_epochs"] = args.epochs
    return hp


def train_similarity(args) -> dict:
    from ml import registry
    from ml.similarity import data as sim_data
    from ml.similarity.evaluation import jaccard_spearman

    rows = sim_data.read_pairs(args.data)
    parts = cross_topic_parts(rows, args)
    kinds = [k.strip() for k in args.kinds.split(",") if k.strip()]
    bad = [k for k in kinds if k not in SIM_KINDS]
    if bad:
        raise SystemExit(f"--kinds: unknown {bad} (known: {', '.join(SIM_KINDS)})")
    seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    dev, test = sample(parts["dev"], args.max_eval, "dev"), sample(parts["test"], args.max_eval, "test")
    topics = {part: sorted({r["topic"] for r in parts[part]}) for part in ("train", "dev", "test")}
    print(
        f"{args.data}: {len(rows)} pairs; cross-topic: train {len(parts['train'])} pairs / {len(topics['train'])} "
        f"topics, dev {len(dev)} / {len(topics['dev'])}, test {len(test)} / {len(topics['test'])}; "
        f"test topics: {', '.join(topics['test'])}",
        flush=True,
    )
    results: dict = {
        "data": str(args.data),
        "topics": topics,
        "seeds": seeds,
        "recipe": args.recipe,
        "jaccard_test": jaccard_spearman(test),
        "jaccard_dev": jaccard_spearman(dev),
        "runs": [],
    }
    for seed in seeds:
        train = sample(parts["train"], args.max_train, seed)
        with tempfile.TemporaryDirectory(prefix="argora-quality-") as tmp:
            cross_model = None
            for kind in kinds:
                spec = registry.get_trainer(kind)
                out = Path(tmp) / kind
                out.mkdir()
                hp = hyperparameters(kind, args, cross_model)
                started = time.monotonic()
                result = spec.train(
                    registry.TrainRequest(
                        kind=kind,
                        rows_train=train,
                        rows_dev=dev,
                        rows_test=test,
                        base_model=spec.base_model_for(None),
                        seed=seed,
                        hyperparameters=hp,
                        output_dir=out,
                        progress=lambda done, total, text: None,
                    )
                )
                seconds = time.monotonic() - started
                if kind == "crossencoder":
                    cross_model = str(out / "model")
                run = {
                    "kind": kind,
                    "seed": seed,
                    "n_train": len(train),
                    "test": result.test_metrics["spearman"],
                    "dev": result.metrics["spearman"],
                    "seconds": round(seconds, 1),
                    "hyperparameters": hp,
                }
                if kind == "augsbert":
                    info = result.info
                    run.update(
                        teacher_dev=info.get("cross_encoder_dev"),
                        teacher_test=info.get("cross_encoder_test"),
                        teacher_baselines_dev=info.get("teacher_baselines_dev"),
                        teacher_ok=info.get("teacher_ok"),
                        warnings=info.get("warnings"),
                        n_silver=info.get("n_silver"),
                    )
                results["runs"].append(run)
                print(
                    f"  seed {seed} {kind}: test Spearman {run['test']:.1f} (dev {run['dev']:.1f}), "
                    f"{len(train)} training pairs, {seconds:.0f} s",
                    flush=True,
                )
                for warning in run.get("warnings") or []:
                    print(f"  WARNING: {warning}", flush=True)
    return results


def cell(values) -> str:
    values = list(values)
    if not values:
        return "—"
    std = statistics.stdev(values) if len(values) > 1 else 0.0
    return f"{statistics.fmean(values):.1f} ± {std:.1f}"


def print_similarity(results: dict) -> None:
    runs = results["runs"]
    by_kind = {}
    for r in runs:
        by_kind.setdefault(r["kind"], []).append(r)
    print()
    print(
        f"Similarity, cross-topic test ({len(results['topics']['test'])} topics), Spearman x 100, "
        f"seeds {results['seeds']}, recipe {results['recipe']}"
    )
    print(
        f"{'model':<24} | {'test':>12} | {'dev':>12} | baseline (Jaccard test {results['jaccard_test']:.1f}, "
        f"dev {results['jaccard_dev']:.1f})"
    )
    for kind in SIM_KINDS:
        rs = by_kind.get(kind)
        if not rs:
            continue
        test = [r["test"] for r in rs]
        beats = sum(1 for v in test if v > results["jaccard_test"])
        print(
            f"{LABELS[kind]:<24} | {cell(test):>12} | {cell(r['dev'] for r in rs):>12} | "
            f"above Jaccard in {beats}/{len(rs)} seeds; {statistics.fmean(r['seconds'] for r in rs):.0f} s a run"
        )
    checks = []
    for better, worse in (("crossencoder", "biencoder"), ("augsbert", "biencoder")):
        if better in by_kind and worse in by_kind:
            pairs = [(a["test"], b["test"]) for a in by_kind[better] for b in by_kind[worse] if a["seed"] == b["seed"]]
            diffs = [a - b for a, b in pairs]
            wins = sum(1 for d in diffs if d > 0)
            mean = statistics.fmean(diffs) if diffs else 0.0
            checks.append(
                f"{LABELS[better]} > {LABELS[worse]}: {wins}/{len(pairs)} seeds (mean difference "
                f"{mean:+.1f}" + (f"; per seed min / median / max {spread(diffs, '+.1f')}" if diffs else "") + ")"
            )
    for line in checks:
        print(line)
    for r in by_kind.get("augsbert", []):
        base = r.get("teacher_baselines_dev") or {}
        print(
            f"AugSBERT teacher (seed {r['seed']}): dev {r['teacher_dev']:.1f} vs "
            + ", ".join(f"{k} {v:.1f}" for k, v in base.items())
            + (" -- ok" if r.get("teacher_ok") else " -- WORSE (see warning)")
        )
    results["checks"] = checks


def train_tagger(path: str, args) -> dict | None:
    from ml import registry, splits

    if "tagger" not in registry.trainer_kinds():
        print("--tagger-data: no tagger kind is registered; skipped")
        return None
    spec = registry.get_trainer("tagger")
    rows_train, rows_dev = spec.rows_from_file(Path(path))
    rows_dev, rows_test = splits.split_test(rows_dev)
    hp = {"epochs": args.epochs} if args.epochs else {}
    with tempfile.TemporaryDirectory(prefix="argora-quality-") as tmp:
        started = time.monotonic()
        result = spec.train(
            registry.TrainRequest(
                kind="tagger",
                rows_train=rows_train,
                rows_dev=rows_dev,
                rows_test=rows_test,
                base_model=spec.base_model_for(None),
                seed=1,
                hyperparameters=hp,
                output_dir=Path(tmp),
            )
        )
        seconds = time.monotonic() - started
    out = {"dev": result.metrics, "test": result.test_metrics, "seconds": round(seconds, 1)}
    print()
    print(
        f"Tagger on {path} ({len(rows_train)} train / {len(rows_dev)} dev / {len(rows_test)} test rows, "
        f"{seconds:.0f} s), primary {spec.primary_metric}"
    )
    for part in ("dev", "test"):
        m = out[part] or {}
        if not m:
            continue
        baselines = {k: v for k, v in m.items() if "baseline" in k and isinstance(v, (int, float))}
        print(f"  {part}: {spec.primary_metric} {m.get(spec.primary_metric)}; baselines {baselines}")
    return out


def main(argv=None) -> int:
    args = parse_args(argv)
    if not args.data and not args.tagger_data:
        raise SystemExit("give --data FILE (a similarity corpus) and / or --tagger-data FILE")
    import django

    django.setup()
    import torch

    torch.set_num_threads(max(1, args.threads))
    print(f"machine: {load_line()}; torch threads {torch.get_num_threads()}", flush=True)
    started = time.monotonic()
    report: dict = {"machine_before": load_line()}
    if args.data:
        report["similarity"] = train_similarity(args)
        print_similarity(report["similarity"])
    if args.tagger_data:
        report["tagger"] = train_tagger(args.tagger_data, args)
    report["machine_after"] = load_line()
    report["seconds"] = round(time.monotonic() - started, 1)
    print(f"\nmachine after: {report['machine_after']}; {report['seconds']:.0f} s in all")
    if args.json:
        print(json.dumps(report, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
