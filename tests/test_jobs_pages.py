"""The jobs pages read as a person reads them: a progress bar and "412 of 1,000 (41%) — writing" while a job runs,
its state as a badge, and when it is done its result as label/value rows (no JSON) with a link to what it made
(corpus import, release, model training put ``url`` / ``link_text`` in their results)."""

from __future__ import annotations

import json
import re
import uuid

import pytest
from django.urls import reverse
from django_celery_results.models import TaskResult

from argora import jobs, readable
from argora.celery import app
from argora.progress import write_progress
from corpus.hashing import sentence_hash
from corpus.models import Release, Sentence, Topic

pytestmark = pytest.mark.django_db


def stored_job(state: str, result, name: str = "corpus.import_corpus_file") -> str:
    task_id = str(uuid.uuid4())
    app.backend.store_result(task_id, result, state)
    TaskResult.objects.filter(task_id=task_id).update(task_name=name)
    return task_id


@pytest.fixture
def staff(client, admin_user_obj):
    """The operator: the list of every team's jobs is theirs (a researcher opens the jobs their pages link to)."""
    client.force_login(admin_user_obj)
    return client


def text_of(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def test_readable_numbers_labels_and_progress():
    assert readable.number(6000) == "6,000" and readable.number(0.22424242424242424) == "0.224"
    assert readable.number(1234.5678) == "1,234.568" and readable.number(2.0) == "2"
    assert readable.number(0.0000123) == "1.23e-05" and readable.number(True) == "yes"
    assert readable.label("n_train") == "Train rows" and readable.label("f1_macro") == "F1 macro"
    assert readable.label("ndcg@5") == "nDCG@5" and readable.label("rouge_l") == "ROUGE-L"
    assert readable.progress_text({"done": 412, "total": 1000, "percent": 41.2, "description": "writing"}) == (
        "412 of 1,000 (41%) — writing"
    )
    assert readable.progress_text({"done": 7, "total": None, "description": "grouping"}) == "7 so far — grouping"
    assert readable.summary(
        {
            "created": {"topics": 3, "sentences": 6000},
            "skipped": 0,
            "dropped": {},
            "metrics": {"dev": {"acc": 0.5}},
            "url": "/x",
        },
        skip=("url",),
    ) == [
        ("Created", "3 topics · 6,000 sentences"),
        ("Skipped", "0"),
        ("Dropped", "none"),
        ("Metrics · dev · accuracy", "0.500"),
    ]


def test_a_running_job_shows_a_bar_and_a_line_of_progress(staff):
    meta = {"done": 412, "total": 1000, "description": "writing", "percent": 41.2}
    task_id = stored_job("PROGRESS", meta)
    write_progress(task_id, meta)
    listing = staff.get("/jobs/").content.decode()
    row = re.search(rf'<tr data-job="{task_id}" data-state="PROGRESS">(.*?)</tr>', listing, re.S).group(1)
    assert '<progress max="100" value="41.2"' in row
    assert "412 of 1,000 (41%) — writing" in row
    assert 'class="badge badge-running"' in row and ">running<" in row
    assert "{" not in text_of(row)  # no raw JSON
    assert "Import corpus file" in row
    detail = staff.get(f"/jobs/{task_id}/").content.decode()
    assert 'id="job-bar" max="100" value="41.2"' in detail and "412 of 1,000 (41%) — writing" in detail
    assert 'data-state="PROGRESS"' in detail and "poll()" in detail  # the page keeps polling the API
    api = staff.get(f"/api/jobs/{task_id}/").json()
    assert api["progress_text"] == "412 of 1,000 (41%) — writing" and api["badge"]["text"] == "running"
    assert api["percent"] == 41.2 and api["link"] is None


def test_a_failed_job_shows_its_error_in_a_line(staff):
    task_id = stored_job("FAILURE", ValueError("line 3: topic is empty"))
    row = staff.get("/jobs/").content.decode()
    assert "badge badge-bad" in row and "ValueError: line 3: topic is empty" in row
    detail = staff.get(f"/jobs/{task_id}/").content.decode()
    assert 'id="job-error-line">ValueError: line 3: topic is empty<' in detail
    assert 'id="job-result"' not in detail


def test_an_import_job_links_to_the_imported_sentences(staff, store_eager, tmp_path, admin_user_obj, client):
    from corpus.tasks.imports import import_corpus_file

    path = tmp_path / "rows.tsv"
    path.write_text(
        "topic\tretrievedUrl\tarchivedUrl\tsentenceHash\tsentence\tannotation\tset\n"
        + "".join(
            f"{t}\thttps://example.org/{i}\t\th{i}\tSentence {i} about {t} for the jobs page.\tArgument_for\ttrain\n"
            for i, t in enumerate(["cloning", "school uniforms", "cloning"])
        ),
        encoding="utf-8",
    )
    Topic.objects.create(name="zoos")
    Sentence.objects.create(
        topic=Topic.objects.get(name="zoos"),
        text="Not from this import.",
        stance="pro",
        content_hash=sentence_hash("zoos", "Not from this import."),
        source="other",
    )
    result = import_corpus_file.apply(args=[str(path), "ukp-tsv"], kwargs={"source": "jobs-test"})
    assert result.state == "SUCCESS"
    summary = result.result
    assert {k: n for k, n in summary["created"].items() if n} == {"topics": 2, "sentences": 3}
    assert summary["url"] == "/admin/corpus/sentence/?source=jobs-test"
    assert summary["link_text"] == "Imported sentences"

    detail = staff.get(f"/jobs/{result.id}/").content.decode()
    assert f'<a class="button primary" id="job-link" href="{summary["url"]}">Imported sentences</a>' in detail
    dl = re.search(r'<dl class="facts" id="job-summary">(.*?)</dl>', detail, re.S).group(1)
    assert "<dt>Created</dt><dd>2 topics · 3 sentences</dd>" in dl and "<dt>Skipped</dt><dd>0</dd>" in dl
    assert "link_text" not in detail and '"created"' not in detail and "{" not in text_of(dl)
    assert 'id="job-running" hidden' in detail and "badge badge-ok" in detail
    listing = staff.get("/jobs/").content.decode()
    assert f'<a class="result-link" href="{summary["url"]}">Imported sentences</a>' in listing
    # the link opens the list of exactly what the import made
    client.force_login(admin_user_obj)
    page = client.get(summary["url"]).content.decode()
    assert "Sentence 0 about cloning" in page and "Not from this import" not in page


def test_a_release_job_links_to_its_release(staff, store_eager, tmp_artifacts):
    from corpus.tasks.releases import build_release_task

    topic = Topic.objects.create(name="cloning")
    for i, stance in enumerate(["pro", "con", "pro"]):
        Sentence.objects.create(
            topic=topic,
            text=f"Cloning argument {i}.",
            stance=stance,
            content_hash=sentence_hash("cloning", f"Cloning argument {i}."),
        )
    result = build_release_task.apply(kwargs={"name": "jobs", "version": "1.0", "config": {"topics": ["cloning"]}})
    assert result.state == "SUCCESS", result.result
    release = Release.objects.get(name="jobs", version="1.0")
    assert result.result["release_id"] == release.pk and result.result["files"]
    assert result.result["url"] == reverse("admin:corpus_release_change", args=[release.pk])
    detail = staff.get(f"/jobs/{result.id}/").content.decode()
    assert f'href="{result.result["url"]}">Release jobs 1.0</a>' in detail
    # digests are shortened, never dumped
    for _name, digest in result.result["files"].items():
        assert digest not in detail and f"<dd>{digest[:12]}…</dd>" in detail


def test_a_training_job_links_to_its_model_version(staff, store_eager, tmp_artifacts, tmp_path):
    from ml import registry
    from ml.tasks import train
    from tests.ml.fakes import register_fake

    register_fake("fake")
    try:
        data = tmp_path / "rows.jsonl"
        data.write_text("".join(json.dumps({"sentence": f"s{i}", "label": i % 2}) + "\n" for i in range(10)))
        result = train.apply(kwargs={"kind": "fake", "data": str(data), "hyperparameters": {"score": 0.22424242}})
    finally:
        registry.unregister_trainer("fake")
    assert result.state == "SUCCESS", result.result
    version = result.result["version"]
    assert result.result["url"] == f"/ml/models/{version}/"
    detail = staff.get(f"/jobs/{result.id}/").content.decode()
    assert f'href="/ml/models/{version}/">Model version #{version} (fake)</a>' in detail
    assert "<dd>0.224</dd>" in detail and "0.22424242" not in detail


def test_a_result_link_must_be_a_path_on_this_site(staff):
    assert jobs.link_of({"url": "/admin/", "link_text": "Admin"}) == {"url": "/admin/", "text": "Admin"}
    assert jobs.link_of({"url": "/x/"}) == {"url": "/x/", "text": "Open the result"}
    for bad in ("javascript:alert(1)", "//evil.example/", "https://evil.example/", "/\\evil.example", 7):
        assert jobs.link_of({"url": bad, "link_text": "x"}) is None, bad
    task_id = stored_job("SUCCESS", {"url": "javascript:alert(1)", "link_text": "click", "rows": 1200})
    detail = staff.get(f"/jobs/{task_id}/").content.decode()
    assert "javascript:" not in detail and 'id="job-link"' not in detail
    assert "<dt>Rows</dt><dd>1,200</dd>" in detail


def test_jobs_pages_are_for_staff_only(client, django_user_model, staff_user):
    task_id = stored_job("SUCCESS", {"rows": 1})
    assert client.get("/jobs/").status_code == 302
    client.force_login(django_user_model.objects.create_user("plain", password="pw-plain-123"))
    assert client.get(f"/jobs/{task_id}/").status_code == 403  # in no team: not the staff side
    client.force_login(staff_user)  # a researcher: the job a page of theirs links to; not every team's jobs
    assert client.get(f"/jobs/{task_id}/").status_code == 200
    assert client.get("/jobs/").status_code == 403
