"""A folder of Kialo exports in one command vs one command per file (issue 18, item 4), same files, one run.

    python bench/import_kialo.py [--files 1011] [--baseline-files 20] [--repeat 3]

Generates ``--files`` Kialo text exports shaped like the public crawl (about 35 KB and 168 lines each: a title, a
thesis, Pro/Con claims up to depth 6, every 16th a multi-thesis discussion, numbered lists inside some claims), then
into fresh migrated SQLite databases:

- **ours**: ``manage.py import_corpus FOLDER --format kialo`` (one process, every file all-or-nothing on its own);
- **baseline**: ``manage.py import_corpus FILE --format kialo`` once per file, as before folders were accepted, on
  the first ``--baseline-files`` files (each pays Django's start-up); its per-file time is multiplied out to the
  whole folder.

``--repeat`` interleaved rounds (ours, then the baseline, each on fresh databases; the order alternates between
rounds). Prints min / median / max of both and of the per-round ratio, the machine's load before and after, and
whether ours meets the target: the 1,011-file folder in under 3 minutes (its median).
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from bench.timing import load_line, spread  # noqa: E402

WORDS = (
    "the of to and a in is that for it as was with be by on not he this are or his from at which but have an "
    "they you were her she there one all we their can has more been if would no other so what when up time some "
    "out only into them could may then first any new these two"
).split()


def sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + "."


def write_exports(folder: Path, n_files: int) -> None:
    rng = random.Random(1)
    for f in range(n_files):
        lines = [f"Discussion Title: {sentence(rng, 8)}", "", f"1. {sentence(rng, 12)}"]
        paths, kids = ["1"], {"1": 0}
        multi = f % 16 == 0
        while len(lines) < 168:
            parent = rng.choice([p for p in paths if p.count(".") <= 5][-30:])
            kids[parent] += 1
            path = f"{parent}.{kids[parent]}"
            kids[path] = 0
            paths.append(path)
            label = "" if multi and parent == "1" else rng.choice(["Pro: ", "Con: "])
            lines.append(f"{path}. {label}{sentence(rng, rng.randint(30, 64))}")
            if rng.random() < 0.05:
                lines += ["1. " + sentence(rng, 10), "2. " + sentence(rng, 10)]
        (folder / f"debate-{f:04d}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")


def manage(env: dict, *args: str) -> float:
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), *args], check=True, env=env, cwd=ROOT, stdout=subprocess.DEVNULL
    )
    return time.perf_counter() - start


def fresh_env(var: str) -> dict:
    env = dict(os.environ, ARGORA_VAR_DIR=var)
    env.pop("DATABASE_URL", None)
    manage(env, "migrate", "-v0")
    return env


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=1011)
    parser.add_argument("--baseline-files", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3, help="interleaved rounds (min / median / max)")
    args = parser.parse_args()
    print(f"machine before: {load_line()}", flush=True)
    ours, baseline = [], []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "kialo"
        folder.mkdir()
        write_exports(folder, args.files)
        size = sum(p.stat().st_size for p in folder.iterdir()) / 1e6
        files = sorted(folder.iterdir())[: args.baseline_files]

        def run_ours():
            with tempfile.TemporaryDirectory() as var:
                ours.append(manage(fresh_env(var), "import_corpus", str(folder), "--format", "kialo"))

        def run_baseline():
            with tempfile.TemporaryDirectory() as var:
                env = fresh_env(var)
                per_file = sum(manage(env, "import_corpus", str(p), "--format", "kialo") for p in files) / len(files)
            baseline.append(per_file * args.files)

        for r in range(max(1, args.repeat)):
            for step in (run_ours, run_baseline) if r % 2 == 0 else (run_baseline, run_ours):
                step()
            print(f"round {r + 1}: ours {ours[-1]:.1f} s, baseline {baseline[-1]:.1f} s", flush=True)
    ratios = [b / o for b, o in zip(baseline, ours)]
    print(f"{args.files} Kialo exports, {size:.1f} MB, SQLite; {len(ours)} interleaved rounds, min / median / max")
    print(
        f"| method | seconds |\n| --- | --- |\n| ours: one command for the folder | {spread(ours)} |\n"
        f"| baseline: one command per file ({len(files)} timed, multiplied out) | {spread(baseline)} |"
    )
    print(
        f"baseline / ours: {spread(ratios)}x; target: the folder in under 180 s: "
        f"{'met' if statistics.median(ours) < 180 else 'NOT met'} (median {statistics.median(ours):.1f} s)"
    )
    print(f"machine after: {load_line()}")


if __name__ == "__main__":
    main()
