"""Silver tagger throughput: ours (ml.inference, the engine silver runs use) vs the best transformers.pipeline set-up.

    python bench/silver.py [--n 1000] [--repeats 3] [--threads 1] [--batch-size 64] [--texts FILE] [--data FILE]
    python bench/silver.py --workers 1,2 [...]     # sharded silver runs on 1 and 2 worker processes
                                                    # (bench/silver_workers.py)

Model: the packaged all-MiniLM-L6-v2 with a token-classification head trained briefly (``--train-steps``) on
planted aspects, or on ``--data FILE`` (any file or folder ``manage.py train tagger --data`` reads: App. F JSONL,
CoNLL, the argument-aspect corpus as published, e.g. its ``experiments/exp1_mw/corpora/conll_gold_token/`` folder;
then the tagger's own recipe unless ``--train-steps``, and the F1 below is on that data's held-out rows, dev and
test). Training is untimed and uses every core. Both sides run the same trained 6-layer encoder on the same
sentences, with the same number of threads (``--threads``, default 1: one per worker process, as silver workers run).

Sentences: ``--texts FILE`` (one sentence per line, or a TSV whose columns hold sentences), by default the real
arguments of ``../shared/data/ukp_aspect/UKP_ASPECT.tsv`` when present, else planted ones (the bench says which).

Contenders, timed interleaved ``--repeats`` times (each round runs every contender once, in a rotated order):

- baseline ``pipeline fp32``: ``pipeline("token-classification")`` on the length-sorted list, ``batch_size``;
- baseline ``pipeline int8``: the same after ``torch.ao.quantization.quantize_dynamic`` of the model's Linear layers
  (the two lines a user would add: this is the best PyTorch set-up, the one the ratio is taken against);
- ``ours torch int8``: :class:`ml.inference.TokenTagger` on torch (length-sorted batches, dynamic padding);
- ``ours onnx int8``: the same on ONNX Runtime (exported once, int8 weights) -- what silver runs use on CPU.

Prints sentences/s per contender and round, the ratio ours / best baseline (min / median / max over the rounds),
the machine load before and after, and the F1 of each of ours against the fp32 model: token macro F1 and exact span
F1 on the held-out rows, and on the real sentences the span-level agreement of each int8 engine with the fp32
model's spans (no gold there).
Targets (issue 25): >= 1.5x the best pipeline set-up, F1 within 0.5 points.
"""

from __future__ import annotations

import argparse
import csv
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "argora.settings")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from bench.timing import load_line  # noqa: E402

UKP_ASPECT = Path(__file__).resolve().parents[2] / "shared" / "data" / "ukp_aspect" / "UKP_ASPECT.tsv"
ASPECTS = [
    "costs",
    "safety",
    "radioactive waste",
    "jobs",
    "crime rates",
    "freedom",
    "health risks",
    "pollution",
    "carbon emissions",
    "energy prices",
]
WORDS = (
    "the a it is we they people should would many some this that policy country government law support oppose "
    "really very nuclear power plants school uniforms students teachers minimum wage workers death penalty "
    "justice guns control children parents cities future years"
).split()


def planted(n: int, seed: int) -> list[dict]:
    """Sentences with one aspect after "because of" (the tagger rows of ml.trainers.tagger)."""
    rng = random.Random(seed)
    rows = []
    for _ in range(n):
        left = " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 22)))
        aspect = rng.choice(ASPECTS)
        right = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 14)))
        text = f"{left.capitalize()} because of {aspect} {right}."
        begin = text.index(" because of ") + len(" because of ")
        rows.append({"text": text, "spans": [{"begin": begin, "end": begin + len(aspect)}]})
    return rows


def read_texts(path: Path | None, n: int) -> tuple[list[str], str]:
    if path is None and UKP_ASPECT.exists():
        path = UKP_ASPECT
    if path is None:
        return [r["text"] for r in planted(n, 7)], "planted sentences (no --texts, no UKP ASPECT on this machine)"
    seen: dict[str, None] = {}
    with open(path, encoding="utf-8", newline="") as fh:
        if path.suffix == ".tsv":
            for row in csv.reader(fh, delimiter="\t"):
                for cell in row:
                    if len(cell.split()) >= 5:  # sentence columns, not topic / label columns
                        seen.setdefault(cell.strip(), None)
        else:
            for line in fh:
                if line.strip():
                    seen.setdefault(line.strip(), None)
    texts = list(seen)
    if not texts:
        raise SystemExit(f"{path}:1: no sentences")
    texts = (texts * (n // len(texts) + 1))[:n]
    return texts, f"{path} ({len(seen)} distinct real sentences)"


def span_f1(reference: list[dict], predicted: list[dict]) -> float:
    """Exact-match span F1 of ``predicted`` against ``reference`` predictions (1.0 when both are empty)."""
    tp = fp = fn = 0
    for ref, pred in zip(reference, predicted):
        r = {(s["begin"], s["end"]) for s in ref["spans"]}
        p = {(s["begin"], s["end"]) for s in pred["spans"]}
        tp, fp, fn = tp + len(r & p), fp + len(p - r), fn + len(r - p)
    return 1.0 if tp + fp + fn == 0 else 2 * tp / (2 * tp + fp + fn)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=1000, help="sentences per timing")
    ap.add_argument("--repeats", type=int, default=3, help="interleaved rounds")
    ap.add_argument(
        "--train-steps",
        dest="train_steps",
        type=int,
        help="optimisation steps of 16 sentences (default: 80 on planted aspects; with --data the "
        "tagger's own recipe, 5 epochs of 32)",
    )
    ap.add_argument("--threads", type=int, default=1, help="torch and ONNX Runtime threads (default 1)")
    ap.add_argument("--batch-size", dest="batch_size", type=int, default=64)
    ap.add_argument("--texts", type=Path, help="sentences to tag (default: UKP ASPECT's arguments when present)")
    ap.add_argument("--data", type=Path, help="a labelled tagger file to train on and take the dev F1 from")
    ap.add_argument("--workers", help="e.g. 1,2: time sharded silver runs on that many worker processes instead")
    args, rest = ap.parse_known_args(argv)
    if args.workers:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        import silver_workers

        return silver_workers.main(list(argv if argv is not None else sys.argv[1:]))
    if rest:
        ap.error(f"unrecognised arguments: {' '.join(rest)}")
    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))

    import django

    django.setup()
    import torch
    from torch import nn
    from torch.ao.quantization import quantize_dynamic
    from transformers import AutoModelForTokenClassification, AutoTokenizer, pipeline

    from ml import loop
    from ml.registry import TrainRequest
    from ml.trainers import tagger

    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s); before: {load_line()}", flush=True)

    if args.data:
        rows_train, rows_dev, rows_test = loop.rows_from_file_parts("tagger", args.data)
        data_note = (
            f"trained on {args.data} ({len(rows_train)} train rows; F1 on {len(rows_dev) + len(rows_test)} "
            f"held-out rows: {len(rows_dev)} dev + {len(rows_test)} test)"
        )
    else:
        rows_train, rows_dev, rows_test = planted(1200, 1), planted(300, 3), []
        data_note = "trained on planted aspects (give --data FILE for a real labelled corpus)"
    out = Path(tempfile.mkdtemp(prefix="argora-bench-tagger-"))
    steps = args.train_steps or (None if args.data else 80)
    hp = {"max_length": 128}
    if steps:
        hp.update(epochs=1, min_steps=steps, max_steps=steps, batch_size=16)
    t = time.perf_counter()
    torch.set_num_threads(os.cpu_count() or 1)  # training is not what is timed: every core
    trained = tagger.train(
        TrainRequest(
            kind="tagger",
            rows_train=rows_train,
            rows_dev=rows_dev,
            base_model=None,
            seed=13,
            output_dir=out,
            hyperparameters=hp,
        )
    )
    torch.set_num_threads(args.threads)
    print(
        f"{data_note}; {trained.info['steps']} steps ({trained.info['epochs']} epochs) on "
        f"{os.cpu_count()} threads in {time.perf_counter() - t:.0f} s",
        flush=True,
    )

    texts, source = read_texts(args.texts, args.n)
    ordered = sorted(texts, key=len)  # what a user does for the pipeline: sort by length
    print(f"tagging {len(texts)} sentences from {source}", flush=True)

    tok = AutoTokenizer.from_pretrained(str(out))
    device = -1
    pipe32 = pipeline(
        "token-classification",
        model=AutoModelForTokenClassification.from_pretrained(str(out)).eval(),
        tokenizer=tok,
        device=device,
    )
    m8 = quantize_dynamic(
        AutoModelForTokenClassification.from_pretrained(str(out)).eval(), {nn.Linear}, dtype=torch.qint8
    )
    pipe8 = pipeline("token-classification", model=m8, tokenizer=tok, device=device)
    os.environ["ARGORA_TAGGER_ENGINE"] = "torch"
    ours_torch = tagger.load(out, quantize=True)
    fp32 = tagger.load(out, quantize=False)
    os.environ["ARGORA_TAGGER_ENGINE"] = "onnx"
    ours_onnx = tagger.load(out, quantize=True)
    contenders = {
        "baseline pipeline fp32 (sorted, batched)": lambda: pipe32(ordered, batch_size=args.batch_size),
        "baseline pipeline int8 (sorted, batched)": lambda: pipe8(ordered, batch_size=args.batch_size),
        "ours torch int8": lambda: ours_torch.predict(texts, batch_size=args.batch_size),
        "ours onnx int8": lambda: ours_onnx.predict(texts, batch_size=args.batch_size),
    }
    # warm-up, untimed, on the longest batch (the largest shapes: every allocator and arena grows to it before the
    # first timed round, so the round that happens to come first is not charged for it)
    longest = ordered[-args.batch_size :]
    pipe32(longest, batch_size=args.batch_size), pipe8(longest, batch_size=args.batch_size)
    ours_torch.predict(longest, batch_size=args.batch_size), ours_onnx.predict(longest, batch_size=args.batch_size)

    rates: dict[str, list[float]] = {name: [] for name in contenders}
    names = list(contenders)
    for r in range(args.repeats):
        order = names[r % len(names) :] + names[: r % len(names)]
        for name in order:
            t = time.perf_counter()
            contenders[name]()
            rates[name].append(len(texts) / (time.perf_counter() - t))
        print(f"round {r + 1}: " + ", ".join(f"{n.split(' (')[0]} {rates[n][-1]:.1f}/s" for n in names), flush=True)

    print(f"\n{'contender':<44} {'sent/s min':>10} {'median':>8} {'max':>8}")
    for name in names:
        v = rates[name]
        print(f"{name:<44} {min(v):10.1f} {statistics.median(v):8.1f} {max(v):8.1f}")
    base_names = [n for n in names if n.startswith("baseline")]
    for ours in ("ours onnx int8", "ours torch int8"):
        # per round: ours / the best baseline of that round
        ratios = [rates[ours][i] / max(rates[b][i] for b in base_names) for i in range(args.repeats)]
        print(
            f"ratio {ours} / best pipeline: min {min(ratios):.2f}x  median {statistics.median(ratios):.2f}x  "
            f"max {max(ratios):.2f}x  (target >= 1.5x)"
        )

    held_out = rows_dev + rows_test  # int8 vs fp32 on dev and test alike: more rows, a steadier F1
    m32 = tagger.evaluate(fp32, held_out)
    print(
        f"F1 fp32 on the held-out rows: token macro F1 {m32['f1_macro']:.4f} (all-O baseline "
        f"{m32['majority_f1_macro']:.4f}), exact span F1 {m32['span_f1']:.4f} ({m32['n_spans']} gold spans)"
    )
    reference = fp32.predict(texts[:500])
    for name, model in (("onnx int8", ours_onnx), ("torch int8", ours_torch)):
        m = tagger.evaluate(model, held_out)
        agree = span_f1(reference, model.predict(texts[:500]))
        print(
            f"F1 {name}: token macro F1 {m['f1_macro']:.4f} vs fp32 {m32['f1_macro']:.4f} "
            f"(delta {100 * (m['f1_macro'] - m32['f1_macro']):+.2f} points), span F1 {m['span_f1']:.4f} vs "
            f"{m32['span_f1']:.4f} (delta {100 * (m['span_f1'] - m32['span_f1']):+.2f}); "
            f"span agreement with fp32 on the tagged sentences {agree:.4f}"
        )
    print(f"after: {load_line()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
