"""Streamed JSONL import vs the plain Django ORM way, same file, same machine, one run (issue 18, item 4).

    python bench/import_jsonl.py [--rows 200000]

Writes N argument rows (50 topics, 8-25 words each, stance and id) to a temporary file, then, each in a fresh child
process with a fresh migrated SQLite database:

- **ours**: ``corpus.importers.import_file(FILE, "jsonl")`` (streamed, batches of 5,000, one transaction, content
  hashes checked against earlier batches), then the same file again (every row skipped);
- **baseline**: the ORM way a Django project writes first -- read the file, ``json.loads`` each line, build the
  ``Sentence`` objects (topic looked up, content hash computed), ``bulk_create(batch_size=1000)`` in one transaction
  (what Argora's importer did before it streamed).

Prints rows/second (wall) and the child's peak resident memory for each, and the ratios. Target: >= 20,000 rows/s
for 1 M rows (``--rows 1000000``), with memory that does not grow with N (compare ``--rows 100000``).
"""
from __future__ import annotations

import argparse
import json
import os
import random
import resource
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
            fh.write(json.dumps({"topic": f"topic {i % 50}", "sentence": sentence,
                                 "stance": rng.choice(["pro", "con", "none"]), "id": f"a{i}"}) + "\n")


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
            objects.append(Sentence(topic=topics[name], text=row["sentence"], stance=row["stance"],
                                    external_id=row["id"], content_hash=sentence_hash(name, row["sentence"])))
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
        runs.append({"pass": name, "rows": n, "seconds": wall,
                     "rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024})
    print(json.dumps(runs))


def run_child(method: str, path: Path) -> list[dict]:
    with tempfile.TemporaryDirectory() as var:
        env = dict(os.environ, ARGORA_VAR_DIR=var)
        env.pop("DATABASE_URL", None)
        subprocess.run([sys.executable, str(ROOT / "manage.py"), "migrate", "-v0", "--skip-checks"], check=True,
                       env=env, cwd=ROOT)
        out = subprocess.run([sys.executable, __file__, "--child", method, "--file", str(path)], check=True, env=env,
                             cwd=ROOT, capture_output=True, text=True).stdout
        return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--child", choices=("ours", "baseline"))
    parser.add_argument("--file")
    args = parser.parse_args()
    if args.child:
        child(args.child, Path(args.file))
        return
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "rows.jsonl"
        write_rows(data, args.rows)
        results = {method: run_child(method, data) for method in ("baseline", "ours")}
    print(f"{args.rows:,} JSONL rows, SQLite, load average {' '.join(Path('/proc/loadavg').read_text().split()[:3])}")
    print("| method | pass | rows/s | peak RSS |\n| --- | --- | --- | --- |")
    for method, runs in results.items():
        for r in runs:
            print(f"| {method} | {r['pass']} | {r['rows'] / r['seconds']:,.0f} | {r['rss_mib']} MiB |")
    ours, base = results["ours"][0], results["baseline"][0]
    speed = (ours["rows"] / ours["seconds"]) / (base["rows"] / base["seconds"])
    print(f"ours / baseline: {speed:.2f}x rows per second, {ours['rss_mib'] / base['rss_mib']:.2f}x peak memory; "
          f"ours {ours['rows'] / ours['seconds']:,.0f} rows/s (target >= 20,000 at 1 M rows)")


if __name__ == "__main__":
    main()
