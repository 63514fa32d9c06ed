"""The study studio (``/studio/``), through Django's test client and its services: who may use it (anonymous, a
crowdworker, staff without permissions, a Researcher), every form error, a bad file that writes nothing and whose
preview names ``file:line``, the import of every task type (all or nothing), settings and the changes refused while
work runs, status changes, feedback and blocked workers, and an unknown task type refused on every path that writes a
project (model, admin, API, CLI, studio)."""

from __future__ import annotations

import json
import re
import shutil
from datetime import timedelta
from pathlib import Path

import pytest
from django.contrib.auth.models import Group
from django.core.exceptions import ValidationError
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.urls import reverse
from rest_framework.test import APIClient

from annotation import selectors, services
from annotation.models import HIT, Assignment, GoldItem, Item, Project, Worker
from annotation.studio import services as studio
from annotation.task_types import all_task_types, get_task_type, sources_of
from argora.roles import RESEARCHER_GROUP
from corpus.importers import import_file
from corpus.models import Sentence, Topic
from tests.conftest import join_every_project
from tests.worker_utils import eager_celery

pytestmark = pytest.mark.django_db

DATA = Path(__file__).resolve().parents[1] / "data" / "studio"
# per task type: the fixture file, its source, the source's options, the project's config and settings
CASES = {
    "sentence_label": ("uniforms.tsv", "ukp-tsv", {}, {}, {"assignments_per_item": 1, "items_per_hit": 3}),
    "aspect": ("appf.jsonl", "appf-jsonl", {}, {}, {"assignments_per_item": 1, "items_per_hit": 2}),
    "span_grounding": (
        "wage_arguments.jsonl",
        "arguments-jsonl",
        {},
        {},
        {"assignments_per_item": 1, "items_per_hit": 2},
    ),
    "bws_similarity": (
        "cloning_arguments.jsonl",
        "arguments-jsonl",
        {"pairs": 4},
        {"scorer": "jaccard", "tuples_per_pair": 1, "attention_checks": 0},
        {"assignments_per_item": 1, "items_per_hit": 4, "gold_rate": 0},
    ),
    "validity_novelty": ("valnov.csv", "valnov-csv", {}, {}, {"assignments_per_item": 1, "items_per_hit": 2}),
    "pairwise_preference": ("pairs.jsonl", "pairs-jsonl", {}, {}, {"assignments_per_item": 1, "items_per_hit": 2}),
    "likert_debate": ("debates.jsonl", "debates-jsonl", {}, {}, {"assignments_per_item": 1, "items_per_hit": 1}),
}


def test_every_registered_task_type_has_a_case():
    """A new task type gets a case here (and in the browser test) -- the studio offers every registered one."""
    assert set(CASES) == {t.name for t in all_task_types()}
    for tt in all_task_types():
        assert sources_of(tt.name) is not None, f"{tt.name} has no sources module"


@pytest.fixture
def researcher(django_user_model):
    user = django_user_model.objects.create_user("researcher", password="pw-research-123")
    user.groups.add(Group.objects.get(name=RESEARCHER_GROUP))
    leave = join_every_project(user)  # on the team of the projects the tests make
    yield user
    leave()


@pytest.fixture
def rclient(client, researcher):
    client.force_login(researcher)
    return client


@pytest.fixture
def kb():
    import_file(DATA / "wage_kb.jsonl", "facts-jsonl")


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


def upload(name: str, content: bytes | None = None) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, (DATA / name).read_bytes() if content is None else content)


def errors_of(resp, field: str) -> str:
    """The text of a field's error list on a studio page."""
    html = resp.content.decode()
    m = re.search(rf'<ul class="errorlist" id="{field}-errors">(.*?)</ul>', html, re.S)
    return re.sub(r"<[^>]+>", " ", m.group(1)) if m else ""


def start(client, name="Study", task_type="sentence_label", config="", **settings):
    data = {"name": name, "task_type": task_type, "config": config, **settings}
    resp = client.post(reverse("annotation:studio-new"), data)
    assert resp.status_code == 302, resp.content.decode()[:3000]
    return resp["Location"].split("/")[-3]


GOLD_FIELDS = ("gold_mode", "gold_n", "gold_seed")  # the gold share: fields of the form, not of a source


def items_post(client, token, source, file=None, **fields):
    data = {
        "source": source,
        **{f"{source}__{k}" if k not in ("topics", "limit", *GOLD_FIELDS) else k: v for k, v in fields.items()},
    }
    if file is not None:
        data["file"] = file
    return client.post(reverse("annotation:studio-new-items", args=[token]), data)


def spec_for(task_type, *, name=None, source_options=None, path=None) -> dict:
    file_name, source_name, options, config, settings = CASES[task_type]
    project = studio.check_setup(name=name or f"{task_type} study", task_type=task_type, config=config, values=settings)
    tt = get_task_type(task_type)
    source = studio.source_named(tt, source_name)
    folder = Path(studio.settings.MEDIA_ROOT) / studio.UPLOAD_DIR / f"t-{task_type}"
    folder.mkdir(parents=True, exist_ok=True)
    stored = folder / file_name
    shutil.copy(path or DATA / file_name, stored)
    data = studio.source_input(
        source, upload={"path": str(stored), "name": file_name}, options={**options, **(source_options or {})}
    )
    return project, data


# --- who may use the studio ------------------------------------------------------------------------------------
def test_permissions(client, django_user_model, researcher):
    project = services.create_project(name="p", slug="p", task_type="sentence_label")
    pages = [
        reverse("annotation:studio"),
        reverse("annotation:studio-new"),
        reverse("annotation:studio-project", args=["p"]),
        reverse("annotation:studio-settings", args=["p"]),
        reverse("annotation:studio-status", args=["p", "active"]),
    ]
    for url in pages:  # anonymous: the login page
        resp = client.get(url)
        assert resp.status_code == 302 and resp["Location"].startswith("/accounts/login/"), url
    plain = django_user_model.objects.create_user("crowd", password="pw-crowd-123")
    staff = django_user_model.objects.create_user("staffer", password="pw-staff-123", is_staff=True)
    for user in (plain, staff):  # logged in, in no team and not a Researcher: 403 saying how to get in
        client.force_login(user)
        for url in pages:
            resp = client.get(url)
            assert resp.status_code == 403, url
            text = resp.content.decode()
            assert RESEARCHER_GROUP in text and "team" in text, url
        resp = client.post(reverse("annotation:studio-status", args=["p", "active"]))
        assert resp.status_code == 403
    client.force_login(researcher)
    for url in pages:
        assert client.get(url).status_code in (200, 400), url  # 400: activating a project without HITs
    project.refresh_from_db()
    assert project.status == Project.Status.DRAFT
    # the nav shows the studio to researchers (not to crowdworkers)
    assert 'href="/studio/"' in client.get(reverse("annotation:studio")).content.decode()
    client.force_login(plain)
    assert 'href="/studio/"' not in client.get("/work/").content.decode()


# --- a new project: every form error ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    "data,field,text",
    [
        ({"name": ""}, "name", "This field is required"),
        ({"task_type": "sentence-label"}, "task_type", "unknown task type sentence-label"),
        ({"config": "{labels: pro}"}, "config", "not JSON"),
        ({"config": "[1, 2]"}, "config", "expected a JSON object"),
        ({"config": '{"labels": []}'}, "config", "labels: give a non-empty list of labels"),
        ({"config": '{"labels": ["a", "a"]}'}, "config", "labels must be distinct"),
        ({"assignments_per_item": "0"}, "assignments_per_item", "greater than or equal to 1"),
        ({"items_per_hit": "x"}, "items_per_hit", "Enter a whole number"),
        ({"gold_rate": "1.5"}, "gold_rate", "less than or equal to 1"),
    ],
)
def test_new_project_form_errors_name_the_field(rclient, data, field, text):
    resp = rclient.post(reverse("annotation:studio-new"), {"name": "Study", "task_type": "sentence_label", **data})
    assert resp.status_code == 400
    assert text in errors_of(resp, field), resp.content.decode()[:4000]
    assert Project.objects.count() == 0


def test_new_project_form_shows_every_task_type_with_its_defaults(rclient):
    html = rclient.get(reverse("annotation:studio-new")).content.decode()
    for tt in all_task_types():
        assert f'<option value="{tt.name}"' in html
        assert f'id="type-{tt.name}"' in html
    assert "&quot;labels&quot;" in html or '"labels"' in html  # sentence_label's labels shown as its default


def test_items_form_errors(rclient, settings, monkeypatch):
    token = start(rclient)
    resp = items_post(rclient, token, "ukp-tsv")  # no file
    assert resp.status_code == 400 and "choose a UKP argument corpus (TSV) file" in errors_of(resp, "file")
    resp = items_post(rclient, token, "ukp-tsv", upload("appf.jsonl"))  # wrong kind of file
    assert resp.status_code == 400 and "ends with .tsv" in errors_of(resp, "file")
    resp = items_post(rclient, token, "ukp-tsv", upload("uniforms.tsv", b""))
    assert resp.status_code == 400 and "is empty" in errors_of(resp, "file")
    monkeypatch.setattr(studio, "MAX_UPLOAD_BYTES", 100)
    resp = items_post(rclient, token, "ukp-tsv", upload("uniforms.tsv"))
    assert resp.status_code == 400 and "the studio takes files up to" in errors_of(resp, "file")
    monkeypatch.setattr(studio, "MAX_UPLOAD_BYTES", 10 * 1024 * 1024)
    resp = items_post(rclient, token, "ukp-tsv", upload("uniforms.tsv"), gold_mode="first", gold_n="-1")
    assert resp.status_code == 400 and "greater than or equal to 0" in errors_of(resp, "gold_n")
    resp = items_post(rclient, token, "no-such-source")
    assert resp.status_code == 400 and "not one of the available choices" in errors_of(resp, "source")
    resp = items_post(rclient, token, "corpus", limit="0")
    assert resp.status_code == 400 and "greater than or equal to 1" in errors_of(resp, "limit")
    # a lost draft (another browser) starts again
    resp = rclient.get(reverse("annotation:studio-new-items", args=["nope"]))
    assert resp.status_code == 302 and resp["Location"] == reverse("annotation:studio-new")
    assert Project.objects.count() == 0 and Sentence.objects.count() == 0


# --- preview, import ---------------------------------------------------------------------------------------------
def test_upload_preview_confirm_import(rclient, settings, django_capture_on_commit_callbacks):
    token = start(
        rclient,
        name="Uniform stance",
        config='{"labels": ["pro", "con", "none"]}',
        assignments_per_item="2",
        items_per_hit="2",
    )
    resp = items_post(rclient, token, "ukp-tsv", upload("uniforms.tsv"), gold_mode="first", gold_n="1")
    assert resp.status_code == 302
    preview = rclient.get(resp["Location"])
    html = preview.content.decode()
    assert preview.status_code == 200
    assert re.search(r'id="count-items">2<', html) and re.search(r'id="count-gold">1<', html)
    assert re.search(r'id="count-hits">1<', html)
    assert "School uniforms reduce bullying" in html and "gold: pro" in html
    assert "new topic(s) for the corpus: school uniforms" in html
    assert Project.objects.count() == 0 and Sentence.objects.count() == 0 and Topic.objects.count() == 0
    with eager_celery(settings), django_capture_on_commit_callbacks(execute=True):
        resp = rclient.post(reverse("annotation:studio-new-preview", args=[token]))
    assert resp.status_code == 302 and "/studio/jobs/" in resp["Location"]
    project = Project.objects.get(name="Uniform stance")
    assert project.status == Project.Status.DRAFT and project.created_by.username == "researcher"
    assert (project.assignments_per_item, project.items_per_hit) == (2, 2)
    assert Item.objects.filter(project=project, is_gold=False).count() == 2
    gold = GoldItem.objects.get(item__project=project)
    assert gold.expected == {"label": "pro"}
    assert HIT.objects.filter(project=project).count() == 1
    assert Sentence.objects.filter(topic__name="school uniforms").count() == 3
    assert project.engine[studio.IMPORT_KEY]["file"] == "uniforms.tsv" and studio.IMPORT_KEY not in project.config
    # the upload is removed once imported; the draft is gone from the session
    assert not list((Path(settings.MEDIA_ROOT) / studio.UPLOAD_DIR).glob("*/uniforms.tsv"))
    assert rclient.get(reverse("annotation:studio-new-preview", args=[token])).status_code == 302
    # the job page of a studio import
    job = resp["Location"]
    assert rclient.get(job).status_code == 200
    assert rclient.get(job + "state/").json()["id"] == job.rstrip("/").split("/")[-1]


def test_corpus_selection(rclient, settings, django_capture_on_commit_callbacks):
    import_file(DATA / "uniforms.tsv", "ukp-tsv")
    import_file(DATA / "cloning_arguments.jsonl", "jsonl")
    topic = Topic.objects.get(name="cloning")
    token = start(rclient, name="Cloning stance")
    resp = items_post(rclient, token, "corpus", topics=[topic.pk], limit="3")
    assert resp.status_code == 302
    html = rclient.get(resp["Location"]).content.decode()
    assert re.search(r'id="count-items">3<', html) and "school" not in html.lower().split('id="preview"')[1]
    with eager_celery(settings), django_capture_on_commit_callbacks(execute=True):
        rclient.post(reverse("annotation:studio-new-preview", args=[token]))
    project = Project.objects.get(name="Cloning stance")
    assert [i.sentence.topic.name for i in Item.objects.filter(project=project)] == ["cloning"] * 3


@pytest.mark.parametrize(
    "name,lines",
    [
        ("bad_arguments.jsonl", [(2, 'unknown stance "maybe"'), (4, 'missing key "sentence"'), (5, "invalid JSON")]),
        ("bad_valnov.csv", [(3, "Validity: bad label 'yes'"), (4, "Premise: empty")]),
    ],
)
def test_bad_file_lists_every_problem_and_writes_nothing(rclient, name, lines):
    task_type, source = (
        ("validity_novelty", "valnov-csv") if name.endswith(".csv") else ("sentence_label", "arguments-jsonl")
    )
    token = start(rclient, task_type=task_type)
    resp = items_post(rclient, token, source, upload(name))
    assert resp.status_code == 302  # the file is stored; the preview reads it
    preview = rclient.get(resp["Location"])
    assert preview.status_code == 400
    problems = re.findall(r"<li>(.*?)</li>", preview.content.decode().split('class="problems"')[1].split("</ul>")[0])
    for (line, reason), shown in zip(lines, problems):
        assert shown.startswith(f"{name}:{line}: ") and reason in shown.replace("&quot;", '"').replace("&#x27;", "'"), (
            problems
        )
    assert len(problems) == len(lines)
    assert "nothing was written" in preview.content.decode()
    assert 'id="confirm-import"' not in preview.content.decode()
    resp = rclient.post(reverse("annotation:studio-new-preview", args=[token]))  # a forced confirm is refused
    assert resp.status_code == 400
    assert Project.objects.count() == 0 and Sentence.objects.count() == 0 and Topic.objects.count() == 0


def test_preview_says_what_the_corpus_lacks(rclient):
    token = start(rclient, task_type="span_grounding")
    resp = items_post(rclient, token, "arguments-jsonl", upload("wage_arguments.jsonl"))
    preview = rclient.get(resp["Location"])
    assert preview.status_code == 400
    assert "variables: topic &#x27;minimum wage&#x27; has 0 active fact variable(s)" in preview.content.decode()
    token = start(rclient, task_type="sentence_label", config='{"labels": ["good", "bad"]}')
    resp = items_post(rclient, token, "ukp-tsv", upload("uniforms.tsv"), gold_mode="first", gold_n="1")
    assert (
        "gold_mode: sentence 1" in rclient.get(resp["Location"]).content.decode()
    )  # "pro" is no label of this project
    assert Topic.objects.count() == 0


@pytest.mark.parametrize("task_type", sorted(CASES))
def test_every_task_type_previews_and_imports(task_type, kb):
    project, data = spec_for(task_type)
    preview, problems = studio.preview_import(project, data)
    assert problems == [] and preview.items > 0 and preview.rows
    result = studio.run_import(studio.import_spec(project, data), job="job-1")
    saved = Project.objects.get(slug=result["project"])
    assert saved.task_type == task_type and saved.status == Project.Status.DRAFT
    assert Item.objects.filter(project=saved, is_gold=False).count() == preview.items == result["items"]
    assert HIT.objects.filter(project=saved).count() == result["hits"] > 0
    assert result["url"] == reverse("annotation:studio-project", args=[saved.slug])
    # a retried job makes no second project
    assert studio.run_import(studio.import_spec(project, data), job="job-1")["project"] == saved.slug
    assert Project.objects.count() == 1


def test_import_is_all_or_nothing(settings):
    # the corpus import succeeds, then the gold answers fail: the corpus rows go too
    project = studio.check_setup(
        name="x", task_type="sentence_label", config={"labels": ["pro", "con", "none"]}, values={}
    )
    _, data = spec_for("sentence_label")
    spec = studio.import_spec(project, data)
    spec["config"] = {"labels": ["good", "bad"]}
    spec["gold"] = {"mode": "first", "n": 1}
    with pytest.raises(studio.StudioImportFailed, match="gold_mode: sentence 1"):
        studio.run_import(spec, job="j")
    assert Project.objects.count() == 0 and Sentence.objects.count() == 0 and Topic.objects.count() == 0
    # a file made bad after the preview: file:line with the uploaded name
    bad = Path(spec["path"])
    bad.write_text(bad.read_text().replace("Argument_for", "Maybe"))
    spec["gold"] = {"mode": "none"}
    spec["config"] = {}
    with pytest.raises(studio.StudioImportFailed, match=r'^uniforms\.tsv:2: unknown annotation "Maybe"'):
        studio.run_import(spec, job="k")
    assert Project.objects.count() == 0 and Sentence.objects.count() == 0


# --- settings ----------------------------------------------------------------------------------------------------
def settings_data(project, **changes):
    data = {key: getattr(project, key) if getattr(project, key) is not None else "" for key in studio.SETTINGS_FIELDS}
    data["guidelines"] = ""
    data.update(changes)
    return data


@pytest.fixture
def built():
    project, data = spec_for("sentence_label")
    result = studio.run_import(studio.import_spec(project, data))
    return Project.objects.get(slug=result["project"])


@pytest.mark.parametrize(
    "field,value,text",
    [
        ("assignments_per_item", "0", "greater than or equal to 1"),
        ("gold_rate", "1.5", "less than or equal to 1"),
        ("gold_min_accuracy", "-0.1", "greater than or equal to 0"),
        ("reservation_timeout_seconds", "10", "greater than or equal to 60"),
        ("reward_cents", "lots", "Enter a whole number"),
        ("max_hits_per_worker", "0", "greater than or equal to 1"),
        ("items_per_hit", "7", "HIT(s) are built with 3 item(s) each"),
        ("guidelines", "x" * 100_001, "at most 100,000 characters"),
    ],
)
def test_settings_errors_name_the_field(rclient, built, field, value, text):
    url = reverse("annotation:studio-settings", args=[built.slug])
    resp = rclient.post(url, settings_data(built, **{field: value}))
    assert resp.status_code == 400
    assert text in errors_of(resp, field), resp.content.decode()[:3000]
    fresh = Project.objects.get(pk=built.pk)
    assert [getattr(fresh, k) for k in studio.SETTINGS_FIELDS] == [getattr(built, k) for k in studio.SETTINGS_FIELDS]


def test_settings_save_guidelines_markdown_sanitised(rclient, built):
    url = reverse("annotation:studio-settings", args=[built.slug])
    md = "# Read this\n\nMark **every** sentence.<script>alert(1)</script>\n\n- [guide](https://example.org)\n"
    resp = rclient.post(
        url, settings_data(built, guidelines=md, assignments_per_item="3", reward_cents="40", max_hits_per_worker="")
    )
    assert resp.status_code == 302
    built.refresh_from_db()
    assert built.assignments_per_item == 3 and built.reward_cents == 40 and built.max_hits_per_worker is None
    assert "<h1>Read this</h1>" in built.guidelines and "<strong>every</strong>" in built.guidelines
    assert "<script" not in built.guidelines and "alert" not in built.guidelines
    assert built.engine[studio.GUIDELINES_KEY] == md and built.config["labels"] == ["pro", "con", "none"]
    assert studio.GUIDELINES_KEY not in built.config
    assert md.split("\n")[0] in rclient.get(url).content.decode()  # the Markdown, not the HTML, is edited
    # what workers see: the HIT page's instructions
    assert "<h1>Read this</h1>" in rclient.get(reverse("annotation:instructions", args=[built.slug])).content.decode()
    preview = rclient.post(
        reverse("annotation:studio-guidelines-preview"), {"guidelines": "*hi* <img src=x onerror=alert(1)>"}
    )
    assert preview.json()["html"] == '<p><em>hi</em> <img src="x"></p>'


def test_r_cannot_go_below_the_workers_a_hit_has(rclient, built, django_user_model):
    Project.objects.filter(pk=built.pk).update(status=Project.Status.ACTIVE, assignments_per_item=3)
    built.refresh_from_db()
    for n in range(2):
        worker = services.worker_for_user(django_user_model.objects.create_user(f"w{n}"))
        services.reserve_next_assignment(built, worker)
    resp = rclient.post(
        reverse("annotation:studio-settings", args=[built.slug]), settings_data(built, assignments_per_item="1")
    )
    assert resp.status_code == 400
    assert "a HIT already has 2 worker(s)" in errors_of(resp, "assignments_per_item")
    assert Project.objects.get(pk=built.pk).assignments_per_item == 3
    assert (
        rclient.post(
            reverse("annotation:studio-settings", args=[built.slug]), settings_data(built, assignments_per_item="2")
        ).status_code
        == 302
    )


# --- status ------------------------------------------------------------------------------------------------------
def test_status_changes_with_confirmation(rclient, built, django_user_model):
    empty = services.create_project(name="empty", slug="empty", task_type="sentence_label")
    resp = rclient.post(reverse("annotation:studio-status", args=["empty", "active"]))
    assert resp.status_code == 400 and "cannot activate a project with no HITs" in resp.content.decode()
    assert Project.objects.get(pk=empty.pk).status == Project.Status.DRAFT

    url = lambda status: reverse("annotation:studio-status", args=[built.slug, status])  # noqa: E731
    page = rclient.get(url("active"))  # the confirmation step changes nothing
    assert page.status_code == 200 and 'id="confirm-status"' in page.content.decode()
    assert Project.objects.get(pk=built.pk).status == Project.Status.DRAFT
    for status in ("active", "paused", "active", "paused", "closed"):
        resp = rclient.post(url(status))
        assert resp.status_code == 302, (status, resp.content.decode()[:2000])
        assert Project.objects.get(pk=built.pk).status == status
        if status == "paused":  # a paused project hands out no new HITs
            worker = services.worker_for_user(django_user_model.objects.create_user(f"late-{Worker.objects.count()}"))
            with pytest.raises(services.ProjectNotActive):
                services.reserve_next_assignment(Project.objects.get(pk=built.pk), worker)
    resp = rclient.post(url("active"))  # closed stays closed
    assert resp.status_code == 400 and "a closed project cannot become active" in resp.content.decode()
    assert rclient.get(reverse("annotation:studio-status", args=[built.slug, "open"])).status_code == 404
    with pytest.raises(studio.SetupRefused, match="cannot become draft"):
        studio.change_status(Project.objects.get(pk=built.pk), "draft")


# --- the project page: progress, feedback, blocked workers, links ------------------------------------------------
def test_project_page_feedback_blocked_and_links(rclient, built, django_user_model):
    services.set_project_status(built, Project.Status.ACTIVE)
    worker = services.worker_for_user(django_user_model.objects.create_user("w1"))
    assignment = services.reserve_next_assignment(built, worker)
    items = services.assignment_items(assignment)
    services.submit_assignment(
        assignment, worker, {i.pk: {"label": "pro"} for i in items}, feedback="Sentence 3 is not an argument at all."
    )
    services.block_worker(worker, "gold accuracy 0.20 after 5 gold items")
    html = rclient.get(reverse("annotation:studio-project", args=[built.slug])).content.decode()
    assert re.search(r'id="progress-done">3<', html)
    feedback = html.split('id="feedback"')[1].split('id="blocked"')[0]
    assert "Sentence 3 is not an argument at all." in feedback
    assert "School uniforms reduce bullying" in feedback and "The school board met on Tuesday evening." in feedback
    blocked = html.split('id="blocked"')[1]
    assert "gold accuracy 0.20 after 5 gold items" in blocked
    for name in ("agreement", "agreement-items", "project-progress"):
        assert reverse(f"annotation:{name}", args=[built.slug]) in html
    assert 'id="copy-invite"' in html and built.invite_token in html
    resp = rclient.post(reverse("annotation:studio-unblock", args=[built.slug, worker.pk]))
    assert resp.status_code == 302
    worker.refresh_from_db()
    assert not worker.blocked
    assert rclient.get(reverse("annotation:studio-unblock", args=[built.slug, worker.pk])).status_code == 405


def test_staff_pages_link_to_agreement_and_results(client, staff_user):
    project, data = spec_for("validity_novelty")
    slug = studio.run_import(studio.import_spec(project, data))["project"]
    client.force_login(staff_user)
    for url in (reverse("annotation:project-list"), reverse("annotation:project-progress", args=[slug])):
        html = client.get(url).content.decode()
        assert reverse("annotation:agreement", args=[slug]) in html, url
        assert reverse("annotation:valnov", args=[slug]) in html, url  # the task type's results page
        assert reverse("annotation:studio-project", args=[slug]) in html, url


# --- an unknown task type: refused on every path that writes a project ----------------------------------------
def test_unknown_task_type_is_refused_everywhere(client, rclient, admin_user_obj, django_user_model):
    bad = "sentence-label"
    # the model
    with pytest.raises(ValidationError, match="unknown task type 'sentence-label'"):
        Project.objects.create(name="x", slug="x", task_type=bad)
    # the studio
    resp = rclient.post(reverse("annotation:studio-new"), {"name": "x", "task_type": bad})
    assert resp.status_code == 400 and "unknown task type sentence-label" in errors_of(resp, "task_type")
    with pytest.raises(studio.SetupRefused, match="task_type: unknown task type"):
        studio.check_setup(name="x", task_type=bad, config={}, values={})
    # the API: 400 naming task_type; the right name works; permissions
    api = APIClient()
    url = reverse("api-annotation-projects")
    assert api.post(url, {"name": "x", "task_type": "sentence_label"}, format="json").status_code in (401, 403)
    api.force_authenticate(django_user_model.objects.create_user("crowd"))
    assert api.post(url, {"name": "x", "task_type": "sentence_label"}, format="json").status_code == 403
    api.force_authenticate(django_user_model.objects.get(username="researcher"))
    resp = api.post(url, {"name": "x", "task_type": bad}, format="json")
    assert resp.status_code == 400 and set(resp.json()["errors"]) == {"task_type"}
    assert "unknown task type 'sentence-label'" in resp.json()["errors"]["task_type"]
    resp = api.post(url, {"name": "x", "task_type": "sentence_label", "config": {"labels": []}}, format="json")
    assert resp.status_code == 400 and set(resp.json()["errors"]) == {"config.labels"}
    resp = api.post(url, {"name": "API study", "task_type": "sentence_label", "assignments_per_item": 2}, format="json")
    assert resp.status_code == 201 and resp.json()["status"] == "draft"
    assert Project.objects.get(slug=resp.json()["slug"]).assignments_per_item == 2
    # the CLI: exit status 2
    with pytest.raises(CommandError) as exc:
        call_command("create_project", "x", "--task-type", bad)
    assert exc.value.returncode == 2 and "unknown task type" in str(exc.value)
    # the admin: an error on the task_type field, nothing saved
    client.force_login(admin_user_obj)
    resp = client.post(
        "/admin/annotation/project/add/",
        {
            "name": "typo",
            "slug": "typo",
            "task_type": bad,
            "guidelines": "",
            "config": "{}",
            "assignments_per_item": 3,
            "items_per_hit": 5,
            "gold_rate": 0,
            "reward_cents": 0,
            "time_estimate_seconds": 0,
            "reservation_timeout_seconds": 1800,
            "gold_min_items": 3,
            "gold_min_accuracy": 0.7,
            "status": "draft",
        },
    )
    assert resp.status_code == 200
    errors = resp.context["adminform"].form.errors
    assert list(errors) == ["task_type"] and "unknown task type 'sentence-label'" in errors["task_type"][0]
    assert set(Project.objects.values_list("slug", flat=True)) == {"api-study"}


def test_sources_contract_for_every_task_type():
    for tt in all_task_types():
        module = sources_of(tt.name)
        names = [s.name for s in module.SOURCES]
        assert len(names) == len(set(names)) and names, tt.name
        for source in module.SOURCES:
            assert source.label and source.description
            if source.is_upload:
                assert source.example and all(e.startswith(".") for e in source.extensions)
        assert callable(module.preview) and callable(module.write)
        assert json.dumps(studio.default_config(tt))  # shown on the new-project page


def test_corpus_sources_of_the_rating_types(tmp_path):
    """Debates from the corpus's debate trees (``ratings debates --from-trees``) and candidates paired with corpus
    arguments (``ratings pairwise --from-corpus``)."""
    root = Path(__file__).resolve().parents[2]
    import_file(root / "argora" / "demo_data" / "school-uniforms.kialo.txt", "kialo", topic="school uniforms")
    import_file(DATA / "cloning_arguments.jsonl", "jsonl")
    tt = get_task_type("likert_debate")
    project = studio.check_setup(name="Tree debates", task_type=tt.name, config={}, values={"items_per_hit": 1})
    topic = Topic.objects.get(name="school uniforms")
    data = studio.source_input(
        studio.source_named(tt, "debate-trees"), topics=[topic.pk], limit=2, options={"length": 3}
    )
    preview, problems = studio.preview_import(project, data)
    assert problems == [] and 1 <= preview.items <= 2 and all(row[2] == "human" for row in preview.rows)
    assert all(row[4] == "3" for row in preview.rows)
    result = studio.run_import(studio.import_spec(project, data))
    assert result["items"] == result["hits"] == preview.items
    too_long = studio.source_input(studio.source_named(tt, "debate-trees"), options={"length": 50})
    assert "no root-to-leaf path of 50 turns" in studio.preview_import(project, too_long)[1][0]

    tt = get_task_type("pairwise_preference")
    project = studio.check_setup(name="Candidates", task_type=tt.name, config={}, values={})
    candidates = tmp_path / "candidates.jsonl"
    candidates.write_text(
        json.dumps({"topic": "Cloning", "stance": "pro", "text": "Cloning saves species."})
        + "\n"
        + json.dumps({"topic": "Zoos", "stance": "pro", "text": "Zoos teach children."})
        + "\n"
    )
    folder = Path(studio.settings.MEDIA_ROOT) / studio.UPLOAD_DIR / "c"
    folder.mkdir(parents=True)
    shutil.copy(candidates, folder / "candidates.jsonl")
    data = studio.source_input(
        studio.source_named(tt, "candidates-jsonl"),
        upload={"path": str(folder / "candidates.jsonl"), "name": "candidates.jsonl"},
        options={"system": "arg-ctrl"},
    )
    preview, problems = studio.preview_import(project, data)
    assert preview is None and problems == [
        'candidates.jsonl:2: topic "Zoos" is not in the corpus (import its arguments first or check the spelling)'
    ]
    (folder / "candidates.jsonl").write_text(candidates.read_text().splitlines()[0] + "\n")
    preview, problems = studio.preview_import(project, data)
    assert problems == [] and preview.items == 1 and "[arg-ctrl]" in preview.rows[0][3]
    assert studio.run_import(studio.import_spec(project, data))["hits"] == 1


def test_late_answers_are_listed_and_accepted_from_the_project_page(rclient, django_user_model):
    project = services.create_project(
        name="Late",
        task_type="sentence_label",
        config={"labels": ["pro", "con"]},
        assignments_per_item=1,
        items_per_hit=2,
        status="active",
    )
    services.add_items(project, [{"text": f"s{i}", "topic": "t"} for i in range(2)])
    services.build_hits(project)
    worker = services.worker_for_user(django_user_model.objects.create_user("slow"))
    a = services.reserve_next_assignment(project, worker)
    answers = {i.pk: {"label": "pro"} for i in services.assignment_items(a)}
    services.submit_assignment(a, worker, answers, now=a.expires_at + timedelta(minutes=3))
    page = rclient.get(reverse("annotation:studio-project", args=[project.slug])).content.decode()
    assert f'class="late-row" data-assignment="{a.pk}"' in page and "3 min" in page
    assert selectors.project_progress(project)["done"] == 0
    resp = rclient.post(reverse("annotation:studio-accept-late", args=[project.slug, a.pk]))
    assert resp.status_code == 302 and resp["Location"].endswith("#late")
    assert Assignment.objects.get(pk=a.pk).status == "submitted" and selectors.project_progress(project)["done"] == 2
    assert "No late answers." in rclient.get(reverse("annotation:studio-project", args=[project.slug])).content.decode()
    # a worker cannot accept anything
    rclient.force_login(django_user_model.objects.create_user("nobody"))
    assert rclient.post(reverse("annotation:studio-accept-late", args=[project.slug, a.pk])).status_code == 403


def test_the_item_order_is_set_from_the_settings_page(rclient, built):
    url = reverse("annotation:studio-settings", args=[built.slug])
    resp = rclient.post(
        url, settings_data(built, assignments_per_item="4", item_order="disagreement", r_min="2", r_max="9")
    )
    assert resp.status_code == 400 and "r_max" in resp.content.decode()  # above R: refused, naming the field
    assert "item_order" not in (Project.objects.get(pk=built.pk).engine or {})
    resp = rclient.post(
        url, settings_data(built, assignments_per_item="4", item_order="disagreement", r_min="2", r_max="4")
    )
    assert resp.status_code == 302
    built.refresh_from_db()
    assert built.engine["item_order"]["mode"] == "disagreement" and "item_order" not in built.config
    assert (built.engine["item_order"]["r_min"], built.engine["item_order"]["r_max"]) == (2, 4)
    page = rclient.get(url).content.decode()
    assert 'value="disagreement" selected' in page and 'name="r_min" value="2"' in page
    assert rclient.post(url, settings_data(built, item_order="random")).status_code == 302
    built.refresh_from_db()
    assert "item_order" not in built.engine
