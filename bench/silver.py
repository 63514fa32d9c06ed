"""Silver tagger throughput: our batched tagger (ml.inference) vs transformers.pipeline on the same model.

    python bench/silver.py [--n 2000] [--train-steps 150] [--batch-size 64]

Model: the packaged all-MiniLM-L6-v2 with a token-classification head trained briefly on planted aspects (the
aspect after "because of"), so both sides run the real 6-layer encoder and F1 is meaningful. On the same 2,000
sentences, in one process, it times

- ``pipeline("token-classification", model=..., tokenizer=...)`` called once per sentence, and with
  ``batch_size=32`` on the whole list;
- our ``TokenTagger`` in fp32 and int8 (dynamic quantisation of the encoder's Linear layers; length-sorted
  batches, dynamic padding, inference mode) -- int8 is what silver runs use on CPU;

and prints sentences/second, the ratios, the peak resident memory of each phase (sampled) and the dev macro F1
of the fp32 and the int8 tagger (targets: >= 3x per-sentence, >= 1.5x batched, |F1 delta| <= 0.5 points).
On CUDA the tagger runs in fp16 instead of int8.
"""
from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "argora.settings")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

ASPECTS = ["costs", "safety", "radioactive waste", "jobs", "crime rates", "freedom", "health risks", "pollution",
           "carbon emissions", "energy prices"]
WORDS = ("the a it is we they people should would many some this that policy country government law support oppose "
         "really very nuclear power plants school uniforms students teachers minimum wage workers death penalty "
         "justice guns control children parents cities future years").split()


def sentences(n: int, seed: int) -> list[dict]:
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


def rss_mb() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2 ** 20


class PeakRSS:
    def __enter__(self):
        self.peak, self._stop = rss_mb(), threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()
        return self

    def _run(self):
        while not self._stop.wait(0.02):
            self.peak = max(self.peak, rss_mb())

    def __exit__(self, *exc):
        self._stop.set()
        self._t.join()
        self.peak = max(self.peak, rss_mb())


def timed(label, fn, n):
    with PeakRSS() as mem:
        t = time.perf_counter()
        fn()
        dt = time.perf_counter() - t
    print(f"{label:<42} {n / dt:8.1f} sent/s   {dt:7.2f} s   peak RSS {mem.peak:7.0f} MB", flush=True)
    return n / dt


def main() -> None:
    import django

    django.setup()
    import torch
    from transformers import AutoModelForTokenClassification, AutoTokenizer, pipeline

    from ml.registry import TrainRequest
    from ml.trainers import tagger

    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--train-steps", type=int, default=80)
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0: leave as is)")
    ap.add_argument("--batch-size", type=int, default=64)
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, device {device}")

    out = Path(tempfile.mkdtemp(prefix="argora-bench-tagger-"))
    t = time.perf_counter()
    result = tagger.train(TrainRequest(kind="tagger", rows_train=sentences(1200, 1), rows_dev=sentences(200, 2),
                                       base_model=None, seed=13, output_dir=out,
                                       hyperparameters={"epochs": 1, "max_steps": args.train_steps, "lr": 1e-4,
                                                        "head_lr": 1e-3, "batch_size": 16, "max_length": 64}))
    print(f"trained the MiniLM token head for {args.train_steps} steps in {time.perf_counter() - t:.1f} s "
          f"(dev macro F1 {result.metrics['f1_macro']:.4f}, majority {result.metrics['majority_f1_macro']:.4f})")

    bench = sentences(args.n, 7)
    texts = [r["text"] for r in bench]
    dev = sentences(500, 3)

    model = AutoModelForTokenClassification.from_pretrained(str(out))
    tok = AutoTokenizer.from_pretrained(str(out))
    pipe = pipeline("token-classification", model=model, tokenizer=tok, device=0 if device == "cuda" else -1)
    pipe(texts[:8])  # warm-up
    base_one = timed("pipeline, one call per sentence", lambda: [pipe(x) for x in texts], len(texts))
    base_batch = timed("pipeline, batch_size=32", lambda: pipe(texts, batch_size=32), len(texts))
    del pipe, model

    fp32 = tagger.load(out, quantize=False)
    fp32.predict(texts[:8])
    ours_fp32 = timed(f"ours {fp32.precision}, length-sorted batch={args.batch_size}",
                      lambda: fp32.predict(texts, batch_size=args.batch_size), len(texts))
    fast = tagger.load(out)  # int8 on CPU, fp16 on CUDA: what silver runs use
    fast.predict(texts[:8])
    ours = timed(f"ours {fast.precision}, length-sorted batch={args.batch_size}",
                 lambda: fast.predict(texts, batch_size=args.batch_size), len(texts))

    f_fp32 = tagger.evaluate(fp32, dev)["f1_macro"]
    f_fast = tagger.evaluate(fast, dev)
    print(f"dev macro F1 (500 sentences): fp32 {f_fp32:.4f}, {fast.precision} {f_fast['f1_macro']:.4f} "
          f"(delta {100 * (f_fast['f1_macro'] - f_fp32):+.2f} points; majority {f_fast['majority_f1_macro']:.4f})")
    print(f"ratio ours {fast.precision} / pipeline per sentence: {ours / base_one:.2f}x (target >= 3x)")
    print(f"ratio ours {fast.precision} / pipeline batch_size=32: {ours / base_batch:.2f}x (target >= 1.5x)")
    print(f"ratio ours fp32 / pipeline batch_size=32: {ours_fp32 / base_batch:.2f}x")


if __name__ == "__main__":
    main()
