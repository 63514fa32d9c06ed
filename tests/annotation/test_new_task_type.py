"""Adding a task type touches only its own package: ``tests/fixtures/claim_check/`` exists only in the tests and runs
end to end -- project from corpus sentences (``create_project``), HITs, the HIT page (its own template and static
file), submissions through the page and the API, gold, aggregation, the agreement table and dashboards (with its
results page linked), adjudication, and release exports (the generic ``annotations`` kind and its own ``claims``) --
and, as the Django app the settings make of it, brings its own model (with its migration), management command and
item source."""

from __future__ import annotations

import importlib
import json
import subprocess
from pathlib import Path

import pytest
from django.apps import apps
from django.conf import settings as django_settings
from django.contrib.staticfiles import finders
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from django.test import override_settings
from django.urls import clear_url_caches, reverse
from rest_framework.test import APIClient

from annotation import selectors, services, task_types
from annotation.agreement.table import project_table
from annotation.models import Adjudication, Assignment, GoldRecord, Item, Project
from annotation.task_types.base import SourceInput
from argora.settings import task_type_apps
from corpus.models import Sentence, Topic
from corpus.releases import build_release, release_path

PACKAGE = "tests.fixtures.claim_check"
ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.django_db


def _reload_urls():
    import annotation.urls
    import argora.urls

    clear_url_caches()
    importlib.reload(annotation.urls)
    importlib.reload(argora.urls)


@pytest.fixture
def claim_check(settings):
    """What start-up does for a package named in ARGORA_TASK_TYPE_PACKAGES (the registry, then the URLconf and the
    release kinds, which are read after it)."""
    settings.ARGORA_TASK_TYPE_PACKAGES = [PACKAGE]
    task_types.load_package(PACKAGE)
    # a second test finds the module imported already (its @register ran once): register its class again
    task_types.register(importlib.import_module(f"{PACKAGE}.task_type").ClaimCheck)
    importlib.import_module(f"{PACKAGE}.release")
    _reload_urls()
    yield task_types.get_task_type("claim_check")
    task_types.unregister("claim_check")
    _reload_urls()


@pytest.fixture
def claim_check_app(transactional_db):
    """What the settings do for a package named in ARGORA_TASK_TYPE_PACKAGES at start-up: install it as a Django app
    (``argora.settings.task_type_apps``), whose migration ``migrate`` then applies. Installed here for one test only
    (the test database of the session has no such app); its table is dropped again afterwards."""
    installed = [a for a in django_settings.INSTALLED_APPS if a not in django_settings.TASK_TYPE_APPS]
    at = installed.index("annotation") + 1
    installed[at:at] = task_type_apps([PACKAGE])
    with override_settings(INSTALLED_APPS=installed, ARGORA_TASK_TYPE_PACKAGES=[PACKAGE]):
        call_command("migrate", "claim_check", verbosity=0)
        yield apps.get_app_config("claim_check")
        call_command("migrate", "claim_check", "zero", verbosity=0)


@pytest.fixture
def sentences():
    topic = Topic.objects.create(name="School uniforms", slug="school-uniforms")
    texts = [
        ("Uniforms reduce bullying.", "pro"),
        ("Uniforms cost families money.", "con"),
        ("The school opens at eight.", "none"),
        ("Uniforms limit self-expression.", "con"),
        ("Uniforms help students focus.", "pro"),
    ]
    return [
        Sentence.objects.create(topic=topic, text=t, stance=s, content_hash=f"h{i}") for i, (t, s) in enumerate(texts)
    ]


def _api(user):
    c = APIClient()
    c.force_authenticate(user)
    return c


def test_a_task_type_from_its_own_package_runs_end_to_end(
    claim_check, sentences, client, staff_user, django_user_model, tmp_artifacts
):
    # no code outside the package names it (the README may): the engine found it through the registry only
    tracked = subprocess.run(
        [
            "git",
            "grep",
            "-l",
            "claim_check",
            "--",
            "*.py",
            "*.html",
            "*.js",
            "*.css",
            "*.cfg",
            "*.ini",
            "*.toml",
            "Makefile",
            ":!tests/fixtures/claim_check",
            ":!tests/annotation/test_new_task_type.py",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert tracked.stdout.split() == []

    # project from corpus sentences: the task type's defaults (R = 2, 2 per HIT) and gold from the corpus stance
    call_command(
        "create_project",
        "Claims",
        "--slug",
        "claims",
        "--task-type",
        "claim_check",
        "--gold-from-stance",
        "1",
        "--gold-rate",
        "0.5",
        "--activate",
    )
    project = Project.objects.get(slug="claims")
    assert (project.assignments_per_item, project.items_per_hit) == (2, 2)
    assert Item.objects.filter(project=project, is_gold=False).count() == 4
    gold = Item.objects.get(project=project, is_gold=True)
    assert gold.gold.expected == {"claim": "yes"}  # the first sentence is a pro argument
    assert project.hits.count() == 2

    # the HIT page renders the package's template and links its static file, which the finder serves
    alice = django_user_model.objects.create_user("alice", password="pw-alice-123")
    client.force_login(alice)
    page = client.get(reverse("annotation:work", args=[project.slug]))
    html = page.content.decode()
    assert page.status_code == 200 and 'name="item-' in html and "-claim" in html
    assert "/static/task_types/claim_check/hit.js" in html
    assert finders.find("task_types/claim_check/hit.js")
    head = html.split("</head>")[0]  # its stylesheet slot: linked in the page's head, served by the same finder
    assert head.count('href="/static/task_types/claim_check/hit.css"') == 1
    assert finders.find("task_types/claim_check/hit.css")
    collected = [
        f"{storage.prefix}/{path}"
        for path, storage in finders.get_finder("annotation.task_types.assets.Finder").list([])
    ]  # what collectstatic copies, and where
    assert "task_types/claim_check/hit.js" in collected and "task_types/aspect/hit.js" in collected

    # alice answers by the plain form (no script): every item, the gold item right
    assignment = Assignment.objects.get(project=project, worker__user=alice)
    items = services.assignment_items(assignment)
    answers = {
        f"item-{it.pk}-claim": ("yes" if it.is_gold or "Uniforms" in it.payload["text"] else "no") for it in items
    }
    bad = client.post(
        reverse("annotation:work", args=[project.slug]),
        {"assignment": assignment.pk, **dict.fromkeys(answers, "maybe")},
    )
    assert bad.status_code == 400 and "claim: answer yes or no" in bad.content.decode()
    ok = client.post(reverse("annotation:work", args=[project.slug]), {"assignment": assignment.pk, **answers})
    assert ok.status_code == 302
    assert GoldRecord.objects.filter(worker__user=alice, correct=True).count() == len([i for i in items if i.is_gold])

    # bob and carol through the JSON API; bob disagrees on every item
    for name, flip in (("bob", True), ("carol", False), ("dave", False)):
        user = django_user_model.objects.create_user(name, password=f"pw-{name}-123")
        api = _api(user)
        while True:
            nxt = api.post(f"/api/projects/{project.slug}/next/")
            if nxt.status_code == 204:
                break
            body = nxt.json()
            responses = {}
            for it in body["items"]:
                claim = "Uniforms" in it["payload"]["text"]
                responses[str(it["id"])] = {"claim": "yes" if claim != flip else "no"}
            r = api.post(f"/api/assignments/{body['assignment']}/submit/", {"responses": responses}, format="json")
            assert r.status_code == 200, r.content
    assert all(h.taken == 2 for h in project.hits.all())

    # aggregation through the task type
    agg = {row["item"]: row["claim"] for row in selectors.aggregated_items(project)}
    assert len(agg) == 4 and set(agg.values()) <= {"yes", "no"}

    # the agreement table from its reliability data (nominal, 3+ coders)
    table = project_table(project)
    assert table["task_type"] == "claim_check" and table["level"] == "nominal"
    assert table["n_coders"] >= 3 and table["alpha"] is not None and table["alpha"] < 1

    # dashboards: agreement page, its results page linked and served by its own urls module
    client.force_login(staff_user)
    results_url = reverse("annotation:claim-check-results", args=[project.slug])
    agreement = client.get(reverse("annotation:agreement", args=[project.slug])).content.decode()
    assert f'href="{results_url}"' in agreement
    results = client.get(results_url)
    assert results.status_code == 200 and "items are claims" in results.content.decode()

    # adjudication through the default (JSON) form of the base contract
    item = Item.objects.filter(project=project, is_gold=False).first()
    url = reverse("annotation:adjudicate", args=[project.slug, item.pk])
    assert client.post(url, {"answer": json.dumps({"claim": "perhaps"})}).status_code == 400
    assert client.post(url, {"answer": json.dumps({"claim": "no"})}).status_code == 302
    assert Adjudication.objects.get(item=item).answer == {"claim": "no"}

    # releases: the generic kind and the package's own
    generic = build_release("claims-all", "v1", kind="annotations", config={"projects": ["claims"]})
    rows = [json.loads(line) for line in (release_path(generic) / "annotations.jsonl").read_text().splitlines()]
    assert len(rows) == 4 and {r["task_type"] for r in rows} == {"claim_check"}
    assert all(len(r["annotations"]) == 2 for r in rows)
    own = build_release("claims", "v1", kind="claims", config={"project": "claims"})
    rows = [json.loads(line) for line in (release_path(own) / "claims.jsonl").read_text().splitlines()]
    assert [r["claim"] for r in rows] == [agg[r["item_id"]] for r in rows]
    with pytest.raises(ValueError, match="not 'claim_check'"):
        build_release("claims-bad", "v1", kind="claims", config={"project": _other_project().slug})


@pytest.mark.django_db(transaction=True)
def test_a_task_type_package_brings_its_model_migration_command_and_source(
    claim_check_app, claim_check, sentences, tmp_path, capsys
):
    from tests.fixtures.claim_check.models import ClaimNote  # importable only while its app is installed

    # the settings make every task type package an app labelled by its folder, the built-in ones included
    assert claim_check_app.name == PACKAGE and PACKAGE in task_type_apps([PACKAGE])
    assert {"span_grounding", "aspect"} <= {c.label for c in apps.get_app_configs()}
    # its model is in its own app, and its migration made the table
    assert ClaimNote._meta.app_label == "claim_check" and ClaimNote._meta.db_table == "claim_check_claimnote"
    assert "claim_check_claimnote" in connection.introspection.table_names()
    call_command("makemigrations", "claim_check", "--check", "--dry-run", verbosity=0)  # the migration is complete

    # its item source (the studio's upload) imports rows
    project = services.create_project(name="Claims", slug="claims", task_type="claim_check")
    upload = tmp_path / "claims.txt"
    upload.write_text(
        "Uniforms reduce bullying.\n\nThe school opens at eight.\nUniforms cost money.\n", encoding="utf-8"
    )
    source = task_types.sources_of("claim_check")
    data = SourceInput(source=source.SOURCES[0], path=upload, file_name="claims.txt", options={"topic": "uniforms"})
    assert source.preview(project, data).items == 3 and not Item.objects.filter(project=project).exists()
    assert source.write(project, data, lambda *a: None) == {"items": 3, "gold": 0}
    assert [i.payload for i in Item.objects.filter(project=project).order_by("position")] == [
        {"text": t, "topic": "uniforms"}
        for t in ("Uniforms reduce bullying.", "The school opens at eight.", "Uniforms cost money.")
    ]

    # its management command, found by Django in the package, writes its model; the rows read back
    call_command("claim_notes", "--project", "claims", "--note", "checked")
    assert capsys.readouterr().out.strip() == "3 note(s) on claims"
    notes = list(ClaimNote.objects.filter(item__project=project))
    assert [n.text for n in notes] == ["checked"] * 3 and notes[0].item.claim_notes.get() == notes[0]
    with pytest.raises(CommandError, match="no claim_check project 'nope'"):
        call_command("claim_notes", "--project", "nope", "--note", "x")


def _other_project():
    return services.create_project(name="Labels", slug="labels", task_type="sentence_label")


def test_create_project_refuses_task_types_that_do_not_build_from_sentences(sentences):
    with pytest.raises(CommandError, match="does not build its items from corpus sentences; sample pairs") as exc:
        call_command("create_project", "BWS", "--task-type", "bws_similarity")
    assert exc.value.returncode == 2
    with pytest.raises(CommandError, match="unknown task type 'nope'"):
        call_command("create_project", "X", "--task-type", "nope")
    call_command("create_project", "Aspects", "--slug", "asp", "--task-type", "aspect", "--limit", "2")
    assert Item.objects.filter(project__slug="asp").count() == 2
