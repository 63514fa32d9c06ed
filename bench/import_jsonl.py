"""Streamed JSONL import vs the plain Django ORM way, same file, same machine, one run (issue 18, item 4).

    python bench/import_jsonl.py [--rows 200000] [--repeat 3]

Writes N argument rows (50 topics, 8-25 words each, stance and id) to a temporary file, then, each in a fresh child
process with a fresh migrated SQLite database:

- **ours**: ``corpus.importers.import_file(FILE, "jsonl")`` (streamed, batches of 5,000, one transaction, content
  hashes checked against earlier batches), then the same file again (every row skipped);
- **baseline**: the ORM way a Django project writes first -- read the file, ``json.loads`` each line, build the
  ``Sentence`` objects (topic looked up, content hash computed), ``bulk_create(batch_size=1000)`` in one transaction
  (what Argora's importer did before it streamed).

The two run interleaved, ``--repeat`` rounds. Prints rows/second (wall) and the child's peak resident memory for
each as min / median / max over the rounds, the ratio ours / baseline per round, and the load average. Target:
>= 20,000 rows/s for 1 M rows (``--rows 1000000``) under 300 MB, with memory that does not grow with N (compare
``--rows 100000``; tests/corpus/test_import_memory.py asserts it for 50k vs 200k).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def write_rows(path: Path, n: int) -> None:
    rng = random.Random(1)
    words = "nuclear solar wind energy cheap safe waste cost power grid storage risk people should would many".split()
    with open(path, "w", encoding="utf-8") as fh:
        for i in range(n):
            sentence = " ".join(rng.choice(words) for _ in range(rng.randint(8, 25))) + f" #{i}."
            fh.write(
                json.dumps(
                    {
                        "topic": f"topic {i % 50}",
                        "sentence": sentence,
                        "stance": rng.choice(["pro", "con", "none"]),
                        "id": f"a{i}",
                    }
                )
                + "\n"
            )


def baseline_import(path: Path) -> int:
    from django.db import transaction

    from corpus.hashing import sentence_hash
    from corpus.models import Sentence, Topic

    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    with transaction.atomic():
        topics = {}
        objects = []
        for row in rows:
            name = row["topic"]
            if name not in topics:
                topics[name] = Topic.objects.get_or_create(name=name, defaults={"slug": name.replace(" ", "-")})[0]
            objects.append(
                Sentence(
                    topic=topics[name],
                    text=row["sentence"],
                    stance=row["stance"],
                    external_id=row["id"],
                    content_hash=sentence_hash(name, row["sentence"]),
                )
            )
        Sentence.objects.bulk_create(objects, batch_size=1000)
    return len(objects)


def child(method: str, path: Path) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "argora.settings")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from corpus.importers import import_file

    runs = []
    passes = ("first import", "second import (all skipped)") if method == "ours" else ("first import",)
    for name in passes:
        wall = time.perf_counter()
        if method == "ours":
            summary = import_file(path, "jsonl")
            n = summary.created["sentences"] + summary.skipped
        else:
            n = baseline_import(path)
        wall = time.perf_counter() - wall
        runs.append(
            {
                "pass": name,
                "rows": n,
                "seconds": wall,
                "rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
            }
        )
    print(json.dumps(runs))


def run_child(method: str, path: Path) -> list[dict]:
    with tempfile.TemporaryDirectory() as var:
        env = dict(os.environ, ARGORA_VAR_DIR=var)
        env.pop("DATABASE_URL", None)
        subprocess.run(
            [sys.executable, str(ROOT / "manage.py"), "migrate", "-v0", "--skip-checks"], check=True, env=env, cwd=ROOT
        )
        out = subprocess.run(
            [sys.executable, __file__, "--child", method, "--file", str(path)],
            check=True,
            env=env,
            cwd=ROOT,
            capture_output=True,
            text=True,
        ).stdout
        return json.loads(out.strip().splitlines()[-1])


def spread(xs, fmt="{:,.0f}") -> str:
    return " / ".join(fmt.format(v) for v in (min(xs), statistics.median(xs), max(xs)))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=3, help="interleaved rounds (baseline, then ours), each fresh")
    parser.add_argument("--child", choices=("ours", "baseline"))
    parser.add_argument("--file")
    args = parser.parse_args()
    if args.child:
        child(args.child, Path(args.file))
        return
    results: dict[str, list[list[dict]]] = {"baseline": [], "ours": []}
    loads = []
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "rows.jsonl"
        write_rows(data, args.rows)
        for _ in range(args.repeat):
            loads.append(os.getloadavg())
            for method in ("baseline", "ours"):
                results[method].append(run_child(method, data))
    for method, rounds in results.items():
        for runs in rounds:
            assert runs[0]["rows"] == args.rows, (method, runs[0])
    print(
        f"{args.rows:,} JSONL rows, SQLite, {args.repeat} interleaved rounds (baseline, ours; each a fresh process "
        f"and database); load average at the rounds' start: "
        + ", ".join(" ".join(f"{v:.2f}" for v in la) for la in loads)
        + f" on {os.cpu_count()} CPUs"
    )
    print("| method | pass | rows/s min / median / max | peak RSS min / median / max |\n| --- | --- | --- | --- |")
    for method, rounds in results.items():
        for k, name in enumerate(p["pass"] for p in rounds[0]):
            speed = [r[k]["rows"] / r[k]["seconds"] for r in rounds]
            rss = [r[k]["rss_mib"] for r in rounds]
            print(f"| {method} | {name} | {spread(speed)} | {spread(rss, '{:,.0f} MiB')} |")
    speed = [
        (o[0]["rows"] / o[0]["seconds"]) / (b[0]["rows"] / b[0]["seconds"])
        for o, b in zip(results["ours"], results["baseline"])
    ]
    memory = [o[0]["rss_mib"] / b[0]["rss_mib"] for o, b in zip(results["ours"], results["baseline"])]
    ours = [r[0]["rows"] / r[0]["seconds"] for r in results["ours"]]
    print(
        f"ours / baseline, per round (min / median / max): {spread(speed, '{:.2f}x')} rows per second, "
        f"{spread(memory, '{:.2f}x')} peak memory; ours median {statistics.median(ours):,.0f} rows/s "
        f"(target >= 20,000 at 1 M rows, under 300 MB)"
    )


if __name__ == "__main__":
    main()
