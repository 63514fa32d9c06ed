"""Bounded memory import (issue 25): ``manage.py import_corpus`` of 200,000 generated JSONL rows peaks at about the
same resident memory as 50,000 rows, and every row is stored.

Each import runs in its own ``manage.py`` child; its peak RSS is the kernel's ``ru_maxrss`` for that child alone
(``os.wait4`` in a small Python that forks it, so pytest's own size is not inherited). The bound does not grow with the row count: 40 MiB for everything the importer holds, plus, on
SQLite, the page cache the streamed import sets for its connection (a fixed
:data:`corpus.importers.writers.SQLITE_STREAM_CACHE_KIB`, filled as the database grows; PostgreSQL keeps its cache in
the server). Before the import streamed, 150,000 more rows cost ~300 MiB (~2 KB a row).
"""

import json
import random
import subprocess
import sys

import pytest
from django.db import connection

from corpus.importers.writers import SQLITE_STREAM_CACHE_KIB
from corpus.models import Sentence
from tests.worker_utils import ROOT, subprocess_env

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(600)]

MIB = 1024 * 1024
PYTHON_BOUND_MIB = 40
WORDS = "nuclear solar wind energy cheap safe waste cost power grid storage risk people should would many".split()


def write_rows(path, n: int, tag: str) -> None:
    rng = random.Random(n)
    with open(path, "w", encoding="utf-8") as fh:
        for i in range(n):
            sentence = " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 25))) + f" {tag}{i}."
            fh.write(
                json.dumps(
                    {
                        "topic": f"topic {i % 50}",
                        "sentence": sentence,
                        "stance": rng.choice(["pro", "con", "none"]),
                        "id": f"{tag}{i}",
                    }
                )
                + "\n"
            )


MEASURE = """
import os, sys
pid = os.fork()
if pid == 0:
    os.execv(sys.argv[2], sys.argv[2:])
_pid, status, usage = os.wait4(pid, 0)
open(sys.argv[1], "w").write(str(usage.ru_maxrss * 1024))
sys.exit(os.waitstatus_to_exitcode(status))
"""


def import_peak_rss(path) -> tuple[int, str]:
    """(peak RSS in bytes of the ``manage.py import_corpus`` child, its stdout)."""
    out, err, peak = path.with_suffix(".out"), path.with_suffix(".err"), path.with_suffix(".peak")
    command = [sys.executable, str(ROOT / "manage.py"), "import_corpus", str(path), "--format", "jsonl"]
    with open(out, "wb") as stdout, open(err, "wb") as stderr:
        # Linux keeps the larger of the pre-exec and post-exec high-water mark in ru_maxrss, and a child forked
        # from this (large) pytest process starts with pytest's RSS; a small Python in between forks the import.
        proc = subprocess.run(
            [sys.executable, "-c", MEASURE, str(peak), *command],
            cwd=ROOT,
            env=subprocess_env(),
            stdout=stdout,
            stderr=stderr,
        )
    assert proc.returncode == 0, err.read_text()[-2000:]
    return int(peak.read_text()), out.read_text()


def test_import_memory_does_not_grow_with_rows(tmp_path):
    small, large = tmp_path / "small.jsonl", tmp_path / "large.jsonl"
    write_rows(small, 50_000, "s")
    write_rows(large, 200_000, "l")

    rss_small, out_small = import_peak_rss(small)
    assert "created 50 topics, 50000 sentences; skipped 0" in out_small
    assert Sentence.objects.count() == 50_000
    rss_large, out_large = import_peak_rss(large)
    assert "created 200000 sentences; skipped 0" in out_large
    assert Sentence.objects.count() == 250_000
    assert Sentence.objects.filter(external_id="l199999").count() == 1

    cache = SQLITE_STREAM_CACHE_KIB * 1024 if connection.vendor == "sqlite" else 0
    growth = rss_large - rss_small
    assert growth < PYTHON_BOUND_MIB * MIB + cache, (
        f"peak RSS {rss_small / MIB:.0f} MiB at 50k rows, {rss_large / MIB:.0f} MiB at 200k rows"
    )
    assert rss_large < 300 * MIB
