"""A database made by the code before task types became packages (commit 98caeef: ``load_demo`` + one answered
project of every task type, ``tests/data/populate_db.py``; stored as ``tests/data/populated-98caeef.sqlite3.gz``)
migrates with the current code, and every project reads back: agreement tables, dashboards, results pages, stored
BWS scores, span normalisations, adjudications and release exports."""
from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"


def _manage(env, *args, stdin=None):
    return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, input=stdin, text=True,
                          capture_output=True, timeout=600)


@pytest.mark.slow
def test_a_database_of_the_previous_layout_migrates_and_reads_back(tmp_path):
    db = tmp_path / "old.sqlite3"
    with gzip.open(DATA / "populated-98caeef.sqlite3.gz") as src, open(db, "wb") as dst:
        shutil.copyfileobj(src, dst)
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{db}", "ARGORA_VAR_DIR": str(tmp_path / "var"),
           "HF_HUB_OFFLINE": "1", "CELERY_BROKER_URL": "filesystem://"}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    migrated = _manage(env, "migrate", "--noinput")
    assert migrated.returncode == 0, migrated.stderr
    pending = _manage(env, "makemigrations", "--check", "--dry-run")
    assert pending.returncode == 0 and "No changes detected" in pending.stdout, pending.stdout + pending.stderr
    verified = _manage(env, "shell", stdin=(DATA / "verify_populated.py").read_text())
    line = next((x for x in verified.stdout.splitlines() if x.startswith("VERIFY ")), None)
    assert line is not None, verified.stdout[-3000:] + verified.stderr[-3000:]
    out = json.loads(line[len("VERIFY "):])
    projects = out["projects"]
    assert {p["task_type"] for p in projects.values()} == {
        "sentence_label", "aspect", "span_grounding", "bws_similarity", "validity_novelty", "pairwise_preference",
        "likert_debate"}
    for slug, p in projects.items():
        assert set(p["pages"].values()) == {200}, (slug, p["pages"])
        assert p["items"] > 0 and p["n_responses"] > 0, (slug, p)
    assert projects["pop-spans"]["level"] == "unitized" and projects["pop-aspect"]["level"] == "unitized"
    assert projects["demo-stance"]["level"] == "nominal" and projects["pop-likert"]["level"] == "ordinal"
    assert out["dashboards"] == 200 and out["adjudications"] == 1 and out["span_normalisations"] == 1
    assert out["bws_scores"] == 8
    assert out["spans_release_rows"] == projects["pop-spans"]["items"]
    assert out["annotations_release_rows"] == sum(p["items"] for p in projects.values())
