"""The generic ``annotations`` release kind: any task type, every item with its aggregate and its responses per
worker, published through corpus releases (immutable folder, per-file SHA-256)."""

from __future__ import annotations

import hashlib
import json

import pytest
from django.core.management import CommandError, call_command

from annotation import selectors, services
from annotation.models import Assignment
from corpus.releases import build_release, get_exporter, release_file_path, verify_release

pytestmark = pytest.mark.django_db

# Three workers label two sentences (R = 3, one item per HIT); worked example of the majority vote:
#   item 0: pro, pro, con -> "pro", share 2/3;   item 1: con, none, none -> "none", share 2/3
LABELS = {"a": ["pro", "con"], "b": ["pro", "none"], "c": ["con", "none"]}


@pytest.fixture
def labelled(django_user_model):
    project = services.create_project(
        name="Stance pilot",
        slug="stance-pilot",
        task_type="sentence_label",
        config={"labels": ["pro", "con", "none"]},
        assignments_per_item=3,
        items_per_hit=1,
        status="active",
    )
    items = services.add_items(
        project,
        [
            {"text": "Wind power is cheap.", "topic": "energy"},
            {"text": "The mill was built in 1900.", "topic": "energy"},
        ],
    )
    services.build_hits(project)
    workers = {}
    for name, labels in LABELS.items():
        worker = services.worker_for_user(django_user_model.objects.create_user(name))
        workers[name] = worker
        for _ in labels:
            a = services.reserve_next_assignment(project, worker)
            [item] = services.assignment_items(a)
            services.submit_assignment(a, worker, {item.pk: {"label": labels[items.index(item)]}})
    return project, items, workers


def read_rows(release):
    path = release_file_path(release, "annotations.jsonl")
    return path, [json.loads(line) for line in path.read_text().splitlines()]


def test_sentence_label_release_rows_and_checksums(labelled, tmp_artifacts):
    project, items, workers = labelled
    release = build_release("stance-pilot-labels", "1.0", kind="annotations", config={"project": project.slug})
    assert release.status == "published" and release.config == {"projects": ["stance-pilot"], "include_gold": False}
    path, rows = read_rows(release)
    assert [r["item_id"] for r in rows] == [items[0].pk, items[1].pk]
    first, second = rows
    assert (first["label"], first["share"], first["n"]) == ("pro", pytest.approx(2 / 3), 3)
    assert first["aggregate"] == {"label": "pro", "counts": {"pro": 2, "con": 1}, "share": pytest.approx(2 / 3), "n": 3}
    assert (second["label"], second["aggregate"]["counts"]) == ("none", {"con": 1, "none": 2})
    assert first["project"] == "stance-pilot" and first["task_type"] == "sentence_label" and not first["is_gold"]
    assert first["text"] == "Wind power is cheap."
    # responses per worker, ordered by worker id, and the export row's labels in the same order
    order = sorted(workers, key=lambda n: workers[n].pk)
    assert [a["worker"] for a in first["annotations"]] == [workers[n].pk for n in order]
    assert [a["response"] for a in first["annotations"]] == [{"label": LABELS[n][0]} for n in order]
    assert first["labels"] == [LABELS[n][0] for n in order]
    assert {a["status"] for a in second["annotations"]} == {"submitted"}
    assert all(Assignment.objects.get(pk=a["assignment"]).worker_id == a["worker"] for a in first["annotations"])
    # checksums: the recorded sha256 is the file's, the card lists it, and verify_release finds nothing wrong
    recorded = {f.name: f for f in release.files.all()}
    assert set(recorded) == {"annotations.jsonl", "README.md"}
    assert recorded["annotations.jsonl"].sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert recorded["annotations.jsonl"].rows == 2
    card = release_file_path(release, "README.md").read_text()
    assert recorded["annotations.jsonl"].sha256 in card and "| stance-pilot | sentence_label | 2 |" in card
    assert verify_release(release) == []
    # the rows are what the selectors give (the export is the project's aggregate, not a second implementation)
    assert [r["aggregate"] for r in rows] == [
        {k: v for k, v in a.items() if k != "item"} for a in selectors.aggregated_items(project)
    ]
    assert [r["labels"] for r in rows] == [r["labels"] for r in selectors.export_rows(project)]


def test_rejected_work_and_gold_items(labelled, tmp_artifacts):
    project, items, workers = labelled
    # staff reject worker c's answer to item 0: item 0 becomes pro 2/2
    rejected = Assignment.objects.get(worker=workers["c"], hit__hit_items__item=items[0])
    services.set_assignment_status(rejected, Assignment.Status.REJECTED)
    services.add_items(
        project,
        [],
        gold=[{"payload": {"text": "Gold: coal is dirty.", "topic": "energy"}, "expected": {"label": "con"}}],
    )
    release = build_release(
        "stance-pilot-labels", "1.1", kind="annotations", config={"projects": "stance-pilot", "include_gold": True}
    )
    _, rows = read_rows(release)
    assert len(rows) == 3 and [r["is_gold"] for r in rows] == [False, False, True]
    assert rows[0]["aggregate"]["counts"] == {"pro": 2} and len(rows[0]["annotations"]) == 2
    assert rows[2]["annotations"] == [] and rows[2]["label"] is None


def test_bad_config_names_the_key_and_writes_nothing(labelled, tmp_artifacts):
    exporter = get_exporter("annotations")
    with pytest.raises(ValueError, match=r"^config\.projects: name the project"):
        exporter.prepare({})
    with pytest.raises(ValueError, match=r"^config\.projects: no project with slug 'nope'"):
        exporter.prepare({"projects": ["nope"]})
    with pytest.raises(ValueError, match=r"^config: unknown key\(s\) split"):
        exporter.prepare({"project": "stance-pilot", "split": "none"})
    with pytest.raises(ValueError, match=r"^config\.include_gold"):
        exporter.prepare({"project": "stance-pilot", "include_gold": "yes"})
    cfg = tmp_artifacts.parent / "release.json"
    cfg.write_text(json.dumps({"projects": ["nope"]}))
    with pytest.raises(CommandError) as exc:
        call_command("export_release", "--name", "x", "--version", "1", "--kind", "annotations", "--config", str(cfg))
    assert exc.value.returncode == 2 and "config.projects" in str(exc.value)
    assert not (tmp_artifacts / "releases" / "x").exists()
