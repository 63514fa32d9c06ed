"""The studio's model-annotator pages (``/studio/projects/<slug>/models/``, issue 24 item 1, researcher side), through
Django's test client: the list with its counts, an LLM annotator added from the page and run against a local fake
OpenAI-compatible server, a registry annotator from the catalogue, every refusal naming its field (HTTP 400, nothing
written), prompt versions, Run (a queued job and its page), counted / kept apart, the failures with their raw reply
escaped, and who may do what."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import Group
from django.urls import reverse

from annotation import model_annotators as ma
from annotation import services, teams
from annotation.models import (
    ModelAnnotator,
    ModelAnswerFailure,
    ModelPromptVersion,
    Project,
    Worker,
)
from argora.roles import RESEARCHER_GROUP
from ml.models import ModelVersion
from tests.annotation import test_model_annotators
from tests.annotation.test_model_annotators import FakeLLM, three_humans
from tests.conftest import join_every_project

pytestmark = pytest.mark.django_db

llm_server = test_model_annotators.llm_server  # the fake OpenAI-compatible server (a fixture)

LABELS = ["pro", "con", "none", "pro", "con", "pro"]


@pytest.fixture
def researcher(django_user_model):
    user = django_user_model.objects.create_user("researcher", password="pw-research-123", is_staff=True)
    user.groups.add(Group.objects.get(name=RESEARCHER_GROUP))
    leave = join_every_project(user)  # on the team of the projects the tests make
    yield user
    leave()


@pytest.fixture
def rclient(client, researcher):
    client.force_login(researcher)
    return client


def url(name: str, project: Project, annotator: ModelAnnotator | None = None) -> str:
    args = [project.slug] + ([annotator.pk] if annotator is not None else [])
    return reverse(f"annotation:studio-{name}", args=args)


def llm_post(**values) -> dict:
    return {
        "kind": "llm",
        "name": "fake LLM",
        "model": "",
        "base_url": "",
        "api_key_env": "",
        "temperature": "",
        "batch_size": "",
        **values,
    }


def errors_of(page: str, field: str) -> str:
    found = re.search(rf'id="{field}-errors">(.*?)</ul>', page, re.S)
    return found.group(1) if found else ""


def test_llm_annotator_added_from_the_page_runs_against_a_fake_server(llm_server, rclient, researcher):
    project = three_humans()
    fake = llm_server(FakeLLM(dict(enumerate(LABELS)), script={1: ["malformed"]}))
    page = rclient.get(url("model-new", project)).content.decode()
    assert "fake-7b" in page  # ARGORA_LLM_MODEL, the empty model's default
    assert "$labels" in page and "$text" in page and "$format" in page  # the placeholders listed
    assert ma.default_prompt(project).split("\n")[0] in page  # the textarea prefilled with the default

    template = "Label the sentence: $text\nLabels: $labels\nReply as $format"
    resp = rclient.post(
        url("model-new", project), llm_post(temperature="0.2", batch_size="2", prompt_template=template)
    )
    annotator = ModelAnnotator.objects.get(project=project, name="fake LLM")
    assert resp.status_code == 302 and resp.url.endswith(f"/models/#annotator-{annotator.pk}")
    assert annotator.kind == "llm" and annotator.created_by == researcher and not annotator.include_in_results
    assert annotator.options == {"temperature": 0.2, "batch_size": 2}
    assert annotator.prompt_template == template and annotator.prompt_version == 1

    ma.run(annotator.pk)  # what the queued job does
    assert fake.bodies[0]["temperature"] == 0.2
    assert fake.bodies[0]["messages"][-1]["content"].startswith("Label the sentence: Sentence number 0.")
    page = rclient.get(url("models", project)).content.decode()
    row = re.search(rf'<tr class="model-annotator" id="annotator-{annotator.pk}".*?</tr>', page, re.S).group(0)
    assert re.search(r'class="num answers">6<', row)
    assert re.search(r'class="num failures"><a href="[^"]+/failures/">1</a>', row)
    assert "kept apart" in row and "Count in results" in row and "v1" in row and "llm:fake-7b@" in row
    assert reverse("annotation:agreement", args=[project.slug]) + "#models" in page


def test_every_refusal_names_its_field_and_writes_nothing(llm_server, rclient):
    project = three_humans()
    workers = Worker.objects.count()
    cases = [
        (llm_post(name=""), "name", "a name of 1 to 100 characters"),
        (llm_post(temperature="9"), "temperature", "a number from 0 to 2"),
        (llm_post(temperature="warm"), "temperature", "a number from 0 to 2"),
        (llm_post(batch_size="0"), "batch_size", "a whole number from 1 to 1024"),
        (llm_post(base_url="ftp://example.org"), "base_url", "the endpoint&#x27;s base URL"),
        (llm_post(api_key_env="MY KEY"), "api_key_env", "environment variable"),
        (llm_post(prompt_template="Say $nonsense"), "prompt_template", "unknown placeholder $nonsense"),
        (llm_post(prompt_template="   "), "prompt_template", "write the prompt"),
    ]
    for data, field, reason in cases:
        resp = rclient.post(url("model-new", project), data)
        assert resp.status_code == 400, field
        assert reason in errors_of(resp.content.decode(), field), field
    resp = rclient.post(url("model-new", project), {**llm_post(), "kind": "robot"})
    assert resp.status_code == 400 and "kind: one of registry, llm" in resp.content.decode()
    # no ready registry model answers sentence labels: the form says so, and a post is refused naming ``kind``
    page = rclient.get(url("model-new", project)).content.decode()
    assert 'id="no-registry"' in page
    resp = rclient.post(url("model-new", project), {"kind": "registry", "name": "tagger", "version": "1"})
    assert resp.status_code == 400 and "kind: no ready registry model answers" in resp.content.decode()
    assert not ModelAnnotator.objects.exists() and Worker.objects.count() == workers
    assert not ModelPromptVersion.objects.exists()

    ma.create_annotator(project, name="taken", kind="llm")
    resp = rclient.post(url("model-new", project), llm_post(name="taken"))
    assert resp.status_code == 400 and "has a model annotator named" in errors_of(resp.content.decode(), "name")
    assert ModelAnnotator.objects.count() == 1


def test_registry_annotator_from_the_catalogue(rclient):
    project = services.create_project(name="Validity", slug="valnov", task_type="validity_novelty")
    version = ModelVersion.objects.create(kind="valnov", status=ModelVersion.Status.READY)
    ModelVersion.objects.create(kind="valnov", status=ModelVersion.Status.FAILED)  # not offered
    page = rclient.get(url("model-new", project)).content.decode()
    assert f'<option value="{version.pk}">valnov #{version.pk}' in page and 'id="no-registry"' not in page

    resp = rclient.post(url("model-new", project), {"kind": "registry", "name": "vn", "version": "999999"})
    assert resp.status_code == 400
    assert "is not a ready valnov model" in errors_of(resp.content.decode(), "version")
    resp = rclient.post(url("model-new", project), {"kind": "registry", "name": "vn", "version": ""})
    assert resp.status_code == 400 and "choose a ready valnov model" in errors_of(resp.content.decode(), "version")
    assert not ModelAnnotator.objects.exists()

    resp = rclient.post(
        url("model-new", project), {"kind": "registry", "name": "vn", "version": str(version.pk), "batch_size": "16"}
    )
    assert resp.status_code == 302
    annotator = ModelAnnotator.objects.get(project=project)
    assert annotator.options == {"registry_kind": "valnov", "version": version.pk, "batch_size": 16}
    page = rclient.get(url("models", project)).content.decode()
    assert f"valnov#{version.pk}" in page and "Edit prompt" not in page
    assert rclient.get(url("model-prompt", project, annotator)).status_code == 404  # no prompt to edit


def test_prompt_edits_are_versions(llm_server, rclient, researcher):
    project = three_humans()
    annotator = ma.create_annotator(project, name="versions", kind="llm")
    page = rclient.get(url("model-prompt", project, annotator)).content.decode()
    assert 'id="current-version">v1<' in page and "$item_json" in page

    resp = rclient.post(url("model-prompt", project, annotator), {"prompt_template": "Say $nonsense"})
    assert resp.status_code == 400
    assert "unknown placeholder $nonsense" in errors_of(resp.content.decode(), "prompt_template")
    annotator.refresh_from_db()
    assert annotator.prompt_version == 1 and annotator.prompt_versions.count() == 1

    new = "Is it pro, con or none? $text\nAnswer as $format"
    resp = rclient.post(url("model-prompt", project, annotator), {"prompt_template": new}, follow=True)
    page = resp.content.decode()
    assert resp.status_code == 200 and "Prompt v2 saved" in page and 'id="current-version">v2<' in page
    assert re.findall(r'class="prompt-version" data-version="(\d+)"', page) == ["2", "1"]
    assert annotator.prompt_versions.get(version=2).created_by == researcher
    resp = rclient.post(url("model-prompt", project, annotator), {"prompt_template": new}, follow=True)
    assert "No change: the prompt is still v2" in resp.content.decode()
    assert annotator.prompt_versions.count() == 2


def test_run_queues_a_job_and_the_list_links_it(llm_server, rclient):
    project = three_humans()
    annotator = ma.create_annotator(project, name="runner", kind="llm")
    resp = rclient.post(url("model-run", project, annotator))
    annotator.refresh_from_db()
    assert resp.status_code == 302 and annotator.status == "queued" and annotator.task_id
    assert resp.url == reverse("job-detail", args=[annotator.task_id]) == f"/jobs/{annotator.task_id}/"
    assert rclient.get(resp.url).status_code == 200  # the jobs page (a waiting job)
    page = rclient.get(url("models", project)).content.decode()
    assert f'class="job-link" href="/jobs/{annotator.task_id}/"' in page and "Queued" in page
    # queued a moment ago: a second Run is refused, naming what is wrong, and queues nothing
    resp = rclient.post(url("model-run", project, annotator))
    assert resp.status_code == 400 and "status: runner is already queued" in resp.content.decode()
    assert rclient.get(url("model-run", project, annotator)).status_code == 405


def test_count_in_results_and_keep_apart(llm_server, rclient):
    project = three_humans()
    annotator = ma.create_annotator(project, name="apart", kind="llm")
    resp = rclient.post(url("model-include", project, annotator), {"include": "1"}, follow=True)
    annotator.refresh_from_db()
    assert annotator.include_in_results and "count in results now" in resp.content.decode()
    assert "Keep apart</button>" in resp.content.decode()
    rclient.post(url("model-include", project, annotator), {"include": "0"})
    annotator.refresh_from_db()
    assert not annotator.include_in_results
    resp = rclient.post(url("model-include", project, annotator), {"include": "yes"})
    assert resp.status_code == 400 and "include: 1 (count in results) or 0 (keep apart)" in resp.content.decode()
    annotator.refresh_from_db()
    assert not annotator.include_in_results


def test_failures_show_the_raw_reply_escaped(llm_server, rclient):
    project = three_humans()
    annotator = ma.create_annotator(project, name="broken", kind="llm")
    item = ma.runnable_items(annotator).first()
    ma.store_answers(
        annotator,
        [item],
        [
            {
                "item": item.pk,
                "failure": "malformed",
                "error": "no JSON object",
                "raw": "<script>alert('x')</script> I think <b>pro</b>",
                "model_id": "llm:fake",
                "prompt_version": 1,
            }
        ],
    )
    ma.store_answers(annotator, [item], [{"item": item.pk, "data": {"label": "maybe"}, "raw": '{"label": "maybe"}'}])
    page = rclient.get(url("model-failures", project, annotator)).content.decode()
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt; I think &lt;b&gt;pro&lt;/b&gt;" in page
    assert "<script>alert" not in page
    rows = re.findall(r'<tr class="failure" data-failure="\d+" data-kind="(\w+)">', page)
    assert rows == ["invalid", "malformed"]  # newest first
    assert "Malformed reply" in page and "no JSON object" in page and "label: must be one of" in page
    assert re.findall(r'class="attempt">(\d+)<', page) == ["2", "1"]
    assert "Sentence number 0." in page
    assert ModelAnswerFailure.objects.filter(annotator=annotator).count() == 2


def test_ids_of_another_project_are_not_found(llm_server, rclient):
    project = three_humans()
    other = services.create_project(
        name="Other", slug="other", task_type="sentence_label", config={"labels": ["pro", "con"]}
    )
    annotator = ma.create_annotator(project, name="mine", kind="llm")
    for name in ("model-prompt", "model-failures"):
        assert rclient.get(url(name, other, annotator)).status_code == 404
    for name in ("model-run", "model-include"):
        assert rclient.post(url(name, other, annotator), {"include": "1"}).status_code == 404
    annotator.refresh_from_db()
    assert annotator.status == "idle" and not annotator.include_in_results


def test_who_may_do_what(llm_server, client, django_user_model):
    project = three_humans()
    annotator = ma.create_annotator(project, name="guarded", kind="llm")
    gets = [
        url("models", project),
        url("model-new", project),
        url("model-prompt", project, annotator),
        url("model-failures", project, annotator),
    ]
    posts = [url("model-new", project), url("model-run", project, annotator), url("model-include", project, annotator)]
    for target in gets:
        resp = client.get(target)
        assert resp.status_code == 302 and resp.url.startswith("/accounts/login/"), target
    assert client.post(posts[1]).status_code == 302

    crowd = django_user_model.objects.create_user("crowd", password="pw-crowd-12345")
    client.force_login(crowd)
    for target in gets:  # in no team: the staff side is closed, saying how to get in
        resp = client.get(target)
        assert resp.status_code == 403 and "team" in resp.content.decode(), target

    viewer = django_user_model.objects.create_user("viewer", password="pw-viewer-12345")
    teams.add_member(project, "viewer", "viewer", by=None)  # the project's viewer: reads, changes nothing
    client.force_login(viewer)
    page = client.get(url("models", project)).content.decode()
    assert "guarded" in page and "Run</button>" not in page and 'id="add-model"' not in page
    assert client.get(url("model-failures", project, annotator)).status_code == 200
    for target in (url("model-new", project), url("model-prompt", project, annotator)):
        resp = client.get(target)
        assert resp.status_code == 403 and "role owner or editor" in resp.content.decode()
    for target in posts:
        assert client.post(target, {"include": "1", **llm_post(name="sneaky")}).status_code == 403
    annotator.refresh_from_db()
    assert annotator.status == "idle" and not annotator.include_in_results
    assert ModelAnnotator.objects.count() == 1


def test_the_project_page_links_the_model_annotators(rclient):
    project = three_humans()
    page = rclient.get(reverse("annotation:studio-project", args=[project.slug])).content.decode()
    assert f'id="models-link" href="{url("models", project)}"' in page
    page = rclient.get(url("models", project)).content.decode()
    assert 'id="no-models"' in page and url("model-new", project) in page
