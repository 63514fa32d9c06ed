"""Sharded silver runs on 1, 2, ... real ``celery worker`` processes on this machine: sentences/s and the ratio.

    python bench/silver_workers.py [--workers 1,2] [--n 2000] [--shards 8] [--batch-size 32] [--repeats 3]
        [--model packaged|tiny] [--train-steps 40] [--database-url URL --broker-url URL] [--keep]

(``python bench/silver.py --workers 1,2 ...`` runs this.) One ``argument`` model is trained first (``packaged``: the
packaged all-MiniLM-L6-v2 encoder for ``--train-steps`` steps, the cost of a real silver run; ``tiny``: a 1-layer
BERT from a config, for a quick check). ``--n`` generated sentences over two topics are stored, then for each worker
count k: k worker processes (``celery -A argora worker -Q default,gpu --pool solo -c 1``, each with ONE torch thread:
``OMP_NUM_THREADS=MKL_NUM_THREADS=ARGORA_TORCH_THREADS=1``) are started, a small warm-up run lets each load the model,
and one silver run of ``--shards`` shards over the n sentences is enqueued (one ``ml.tasks.silver_shard`` task per
shard, a chord) and timed from the enqueue to ``done``; ``--repeats`` rounds, each timing every k once (the order
alternating). Prints sentences/s per k and run, then min / median / max per k and of the per-round ratio to k = 1,
and the machine load before and after each run. On a 2-core machine two one-thread workers can give at most about 2x;
the load average says how busy the machine was.

By default everything lives in a temporary folder: an SQLite database and kombu's filesystem broker (no server
needed); ``--database-url`` / ``--broker-url`` (e.g. PostgreSQL + Redis) use those instead -- give a database that
may be migrated and written (the bench adds its topics, sentences, one model version and its runs, and deletes them
at the end unless ``--keep``).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.timing import load_line, spread  # noqa: E402

TOPICS = ["nuclear energy", "school uniforms"]
PRO = ["it helps families", "it creates jobs", "we should support it", "it is cheap and clean", "it saves lives"]
CON = ["it harms families", "it destroys jobs", "we should oppose it", "it is costly and dirty", "it costs lives"]
NONE = ["the meeting starts at noon", "the weather was mild", "she read a book", "the train was late"]
FILLER = (
    "today many people say that indeed in fact really the government experts argue recent studies show critics claim"
).split()


def generated(n: int, seed: int) -> list[dict]:
    """``{"topic", "sentence", "label"}`` rows whose class shows in a fixed phrase."""
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        topic = TOPICS[i % len(TOPICS)]
        label = ("pro", "con", "none")[rng.randrange(3)]
        phrase = rng.choice({"pro": PRO, "con": CON, "none": NONE}[label])
        left = " ".join(rng.choice(FILLER) for _ in range(rng.randint(2, 12)))
        right = " ".join(rng.choice(FILLER) for _ in range(rng.randint(0, 8)))
        text = f"{left} {topic} {phrase} {right}" if label != "none" else f"{left} {phrase} {right}"
        rows.append({"topic": topic, "sentence": text.strip().capitalize() + ".", "label": label})
    return rows


def parse(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workers", default="1,2", help="worker counts to time, e.g. 1,2")
    ap.add_argument("--n", type=int, default=2000, help="sentences in the timed run")
    ap.add_argument("--shards", type=int, default=8, help="shards of the timed run (the same for every k)")
    ap.add_argument("--batch-size", dest="batch_size", type=int, default=32)
    ap.add_argument("--model", choices=["packaged", "tiny"], default="packaged")
    ap.add_argument("--train-steps", dest="train_steps", type=int, default=40)
    ap.add_argument("--database-url", dest="database_url", help="default: SQLite in a temporary folder")
    ap.add_argument("--broker-url", dest="broker_url", help="default: kombu's filesystem broker in that folder")
    ap.add_argument("--repeats", type=int, default=3, help="interleaved repeats (min / median / max)")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds to wait for one run")
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder and the rows")
    args, rest = ap.parse_known_args(argv)
    counts = [int(x) for x in str(args.workers).split(",") if x.strip()]
    if not counts or min(counts) < 1:
        ap.error("--workers: give worker counts >= 1, e.g. 1,2")
    return args, counts, rest


def wait_done(run_pk: int, timeout: float) -> None:
    from ml.models import SilverRun

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = SilverRun.objects.filter(pk=run_pk).values_list("status", flat=True).first()
        if status == "done":
            return
        if status in ("failed", "cancelled"):
            raise RuntimeError(
                f"silver run {run_pk} {status}: {SilverRun.objects.get(pk=run_pk).error or 'see the worker logs'}"
            )
        time.sleep(0.2)
    raise RuntimeError(f"silver run {run_pk} not done within {timeout:.0f} s")


def main(argv: list[str] | None = None) -> int:
    args, counts, rest = parse(list(sys.argv[1:] if argv is None else argv))
    if rest:
        print(f"(ignored here: {' '.join(rest)})")
    tmp = Path(tempfile.mkdtemp(prefix="argora-bench-workers-"))
    os.environ["ARGORA_VAR_DIR"] = str(tmp / "var")
    os.environ["ARGORA_ARTIFACT_ROOT"] = str(tmp / "artifacts")
    os.environ.pop("DATABASE_URL", None) if not args.database_url else os.environ.update(DATABASE_URL=args.database_url)
    os.environ.pop("CELERY_BROKER_URL", None) if not args.broker_url else os.environ.update(
        CELERY_BROKER_URL=args.broker_url
    )
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "ARGORA_TORCH_THREADS"):
        os.environ[name] = "1"  # the workers inherit it: one torch thread each
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "argora.settings")
    os.environ["CELERY_TASK_ALWAYS_EAGER"] = "0"

    import django

    django.setup()
    import torch
    from django.core.management import call_command

    torch.set_num_threads(1)
    from corpus.models import Sentence, Topic
    from ml import silver
    from ml.models import SilverRun
    from ml.versions import train_version
    from tests.worker_utils import start_worker

    call_command("migrate", verbosity=0)
    print(
        f"machine: {load_line()}; database {django.db.connection.vendor}, "
        f"broker {os.environ.get('CELERY_BROKER_URL', 'filesystem://')}"
    )
    hp = {"epochs": 1, "max_steps": args.train_steps, "batch_size": 16, "max_length": 64}
    if args.model == "tiny":
        hp["from_config"] = {
            "hidden_size": 32,
            "num_hidden_layers": 1,
            "num_attention_heads": 2,
            "intermediate_size": 64,
        }
    t0 = time.monotonic()
    version = train_version(
        "argument", rows_train=generated(400, 1), rows_dev=generated(80, 2), seed=3, hyperparameters=hp
    )
    print(
        f"model: argument ({args.model}), version {version.pk}, trained in {time.monotonic() - t0:.0f} s, "
        f"dev f1_macro {version.metrics.get('dev', {}).get('f1_macro', float('nan')):.3f}"
    )
    topics = {name: Topic.objects.get_or_create(name=f"bench {name}")[0] for name in TOPICS}
    warm_topic = Topic.objects.get_or_create(name="bench warm-up")[0]
    stamp = f"bench-workers-{os.getpid()}"
    Sentence.objects.bulk_create(
        [
            Sentence(topic=topics[r["topic"]], text=r["sentence"], source=stamp, content_hash=f"{stamp}-{i}")
            for i, r in enumerate(generated(args.n, 7))
        ]
    )
    Sentence.objects.bulk_create(
        [
            Sentence(topic=warm_topic, text=r["sentence"], source=stamp + "-warm", content_hash=f"{stamp}-w{i}")
            for i, r in enumerate(generated(8 * max(counts), 8))
        ]
    )
    results: dict[int, list[float]] = {k: [] for k in counts}
    try:
        for rep in range(args.repeats):
            # interleaved: every repeat times each worker count once, the order alternating between repeats
            for k in counts if rep % 2 == 0 else counts[::-1]:
                before = load_line()
                with contextlib.ExitStack() as stack:
                    workers = [
                        stack.enter_context(start_worker(queues=("default", "gpu"), purge=(i == 0))) for i in range(k)
                    ]
                    warm = silver.start(
                        "argument", source=stamp + "-warm", version=version, batch_size=4, shards=2 * k, enqueue=True
                    )
                    wait_done(warm.pk, args.timeout)
                    start = time.monotonic()
                    run = silver.start(
                        "argument",
                        source=stamp,
                        version=version,
                        batch_size=args.batch_size,
                        shards=args.shards,
                        enqueue=True,
                    )
                    wait_done(run.pk, args.timeout)
                    wall = time.monotonic() - start
                    run = SilverRun.objects.get(pk=run.pk)
                    by_worker: dict[str, int] = {}
                    for shard in run.shards.all():
                        by_worker[shard.worker] = by_worker.get(shard.worker, 0) + shard.processed
                    results[k].append(run.processed / wall)
                    print(
                        f"repeat {rep + 1}, workers={k}: {run.processed} sentences in {wall:.1f} s = "
                        f"{results[k][-1]:.1f} sentences/s ({args.shards} shards; per worker "
                        f"{sorted(by_worker.values(), reverse=True)}); before: {before}; after: {load_line()}",
                        flush=True,
                    )
                    if len(by_worker) < k:
                        print(f"  note: only {len(by_worker)} of {k} workers took a shard")
                    del workers
        base_k = 1 if 1 in results else counts[0]
        print(f"\n{args.repeats} interleaved repeat(s), sentences/s min / median / max:")
        for k in counts:
            ratios = [a / b for a, b in zip(results[k], results[base_k])]
            print(
                f"workers={k}: {spread(results[k])} sentences/s; ratio to workers={base_k} per repeat "
                f"{spread(ratios, '.2f')}x"
            )
    finally:
        if not args.keep:
            SilverRun.objects.filter(model_version=version).delete()
            Sentence.objects.filter(source__startswith=stamp).delete()
            version.delete()
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            print(f"kept: {tmp}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
