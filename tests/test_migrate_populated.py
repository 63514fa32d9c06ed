"""A database made by the code before task types became packages (commit 98caeef: ``load_demo`` + one answered
project of every task type, ``tests/data/populate_db.py``; stored as ``tests/data/populated-98caeef.sqlite3.gz``)
migrates with the current code, and every project reads back: agreement tables, dashboards, results pages, stored
BWS scores, span normalisations, adjudications and release exports.

And a database at the state before ``span_grounding`` became an app of its own (``annotation`` 0010, its
``SpanNormalisation`` table made by ``annotation`` 0003) keeps every span normalisation row, its content type and the
Researcher role's permission on it when it migrates to ``span_grounding``'s own table."""

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


def _env(tmp_path, db):
    env = {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{db}",
        "ARGORA_VAR_DIR": str(tmp_path / "var"),
        "HF_HUB_OFFLINE": "1",
        "CELERY_BROKER_URL": "filesystem://",
    }
    env.pop("DJANGO_SETTINGS_MODULE", None)
    return env


def _manage(env, *args, stdin=None):
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        input=stdin,
        text=True,
        capture_output=True,
        timeout=600,
    )


@pytest.mark.slow
def test_a_database_of_the_previous_layout_migrates_and_reads_back(tmp_path):
    db = tmp_path / "old.sqlite3"
    with gzip.open(DATA / "populated-98caeef.sqlite3.gz") as src, open(db, "wb") as dst:
        shutil.copyfileobj(src, dst)
    env = _env(tmp_path, db)
    migrated = _manage(env, "migrate", "--noinput")
    assert migrated.returncode == 0, migrated.stderr
    pending = _manage(env, "makemigrations", "--check", "--dry-run")
    assert pending.returncode == 0 and "No changes detected" in pending.stdout, pending.stdout + pending.stderr
    verified = _manage(env, "shell", stdin=(DATA / "verify_populated.py").read_text())
    line = next((x for x in verified.stdout.splitlines() if x.startswith("VERIFY ")), None)
    assert line is not None, verified.stdout[-3000:] + verified.stderr[-3000:]
    out = json.loads(line[len("VERIFY ") :])
    projects = out["projects"]
    assert {p["task_type"] for p in projects.values()} == {
        "sentence_label",
        "aspect",
        "span_grounding",
        "bws_similarity",
        "validity_novelty",
        "pairwise_preference",
        "likert_debate",
    }
    for slug, p in projects.items():
        assert set(p["pages"].values()) == {200}, (slug, p["pages"])
        assert p["items"] > 0 and p["n_responses"] > 0, (slug, p)
    assert projects["pop-spans"]["level"] == "unitized" and projects["pop-aspect"]["level"] == "unitized"
    assert projects["demo-stance"]["level"] == "nominal" and projects["pop-likert"]["level"] == "ordinal"
    assert out["dashboards"] == 200 and out["adjudications"] == 1 and out["span_normalisations"] == 1
    assert out["bws_scores"] == 8
    assert out["spans_release_rows"] == projects["pop-spans"]["items"]
    assert out["annotations_release_rows"] == sum(p["items"] for p in projects.values())


# Run in ``manage.py shell`` on a new database: migrate to the state before the move (no post_migrate: the content
# type and permission rows are written the way that state's ``migrate`` wrote them), fill it, print what it holds.
BEFORE_MOVE = """
import json
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

executor = MigrationExecutor(connection)
graph = executor.loader.graph
targets = [("annotation", "0010_teams"), *(graph.leaf_nodes(app)[0] for app in ("auth", "contenttypes"))]
executor.migrate(targets)
old = MigrationExecutor(connection).loader.project_state(targets).apps
Topic, Fact = old.get_model("corpus", "Topic"), old.get_model("corpus", "FactVariable")
Project, Item = old.get_model("annotation", "Project"), old.get_model("annotation", "Item")
Span = old.get_model("annotation", "SpanNormalisation")
ContentType, Permission = old.get_model("contenttypes", "ContentType"), old.get_model("auth", "Permission")
topic = Topic.objects.create(name="Nuclear energy", slug="nuclear-energy")
facts = [Fact.objects.create(topic=topic, text=t, content_hash=t) for t in ("Reactors emit no CO2.", "Waste lasts.")]
project = Project.objects.create(name="Spans", slug="spans", task_type="span_grounding")
items = [Item.objects.create(project=project, payload={"text": f"Sentence {k}."}, position=k) for k in range(2)]
Span.objects.create(item=items[0], begin=0, end=8, text="Sentence", variable=facts[0], method="direct", score=0.9)
Span.objects.create(item=items[0], begin=9, end=10, text="0", proposal=facts[1], community="c1")
Span.objects.create(item=items[1], begin=0, end=8, text="Sentence", variable=facts[1], method="merged",
                    proposal=facts[1])
ct = ContentType.objects.create(app_label="annotation", model="spannormalisation")
perm = Permission.objects.create(content_type=ct, codename="view_spannormalisation", name="Can view span normalisation")
group = old.get_model("auth", "Group").objects.create(name="Researcher")
group.permissions.add(perm)
rows = list(Span.objects.order_by("pk").values())
print("BEFORE " + json.dumps({"rows": rows, "ct": ct.pk, "perm": perm.pk}, default=str))
"""

# Then, in the same process: migrate (post_migrate included), print what the moved model holds, check that no
# migration is missing, and migrate span_grounding back to zero.
AFTER_MOVE = """
from django.contrib.auth.models import Group
from django.contrib.contenttypes.models import ContentType
from django.core.management import call_command
from annotation.task_types.span_grounding.models import SpanNormalisation

call_command("migrate", interactive=False, verbosity=0)
ct = ContentType.objects.get_for_model(SpanNormalisation)
after = {
    "rows": list(SpanNormalisation.objects.order_by("pk").values()), "ct": ct.pk, "label": ct.app_label,
    "stale": ContentType.objects.filter(app_label="annotation", model="spannormalisation").count(),
    "researcher": sorted(Group.objects.get(name="Researcher").permissions.filter(content_type=ct)
                         .values_list("pk", "codename")),
    "tables": sorted(t for t in connection.introspection.table_names() if t.endswith("spannormalisation"))}
print("AFTER " + json.dumps(after, default=str))
call_command("makemigrations", check=True, dry_run=True, verbosity=0)  # exits 1 when the models and migrations differ
# and back: the table and the content type return to the annotation app, the rows with them
call_command("migrate", "span_grounding", "zero", interactive=False, verbosity=0)
c = connection.cursor()
c.execute("SELECT COUNT(*) FROM annotation_spannormalisation")
n = c.fetchone()[0]
c.execute("SELECT app_label FROM django_content_type WHERE id = %s", [ct.pk])
print("BACK " + json.dumps([n, c.fetchone()[0]]))
"""


def _printed(result, prefix):
    line = next((x for x in result.stdout.splitlines() if x.startswith(prefix)), None)
    assert line is not None, result.stdout[-3000:] + result.stderr[-3000:]
    return json.loads(line[len(prefix) :])


@pytest.mark.slow
def test_span_normalisations_move_to_their_task_types_app_with_every_row(tmp_path):
    env = _env(tmp_path, tmp_path / "before-move.sqlite3")
    moved = _manage(env, "shell", stdin=BEFORE_MOVE + AFTER_MOVE)  # one process: migrating dominates its time
    before, after = _printed(moved, "BEFORE "), _printed(moved, "AFTER ")
    assert len(before["rows"]) == 3
    assert after["rows"] == before["rows"]  # every row, field by field, with its id and its foreign keys
    assert after["tables"] == ["span_grounding_spannormalisation"]
    # the content type moved (same id: permissions, group grants and admin log entries follow), none is left behind
    assert (after["ct"], after["label"], after["stale"]) == (before["ct"], "span_grounding", 0)
    assert after["researcher"] == [[before["perm"], "view_spannormalisation"]]
    assert _printed(moved, "BACK ") == [3, "annotation"], moved.stderr[-3000:]
