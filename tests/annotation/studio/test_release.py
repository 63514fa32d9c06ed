"""The studio's Release step (/studio/projects/<slug>/release/): an editor publishes the crowd's answers with a dataset
card (licence, citation, description) through the same build_release_task the CLI and the admin use; the job page
links back to the project's releases, whose files the team downloads. Outsiders get 404, viewers cannot publish,
bad values are a 400 on the field with nothing queued; each task type offers its own release kinds."""

from __future__ import annotations

import json
import re

import pytest
from django.contrib.auth.models import Group
from django.test import Client
from django.urls import reverse

from annotation import services, teams
from annotation.models import ProjectMember, StudyPhases
from annotation.studio import releases as studio_releases
from annotation.task_types import all_task_types
from argora.errors import FieldError
from argora.roles import RESEARCHER_GROUP
from corpus.models import Release
from corpus.releases import build_release, get_exporter, release_file_path
from tests.annotation.task_types.aspect.helpers import aspect_project
from tests.worker_utils import eager_celery

pytestmark = pytest.mark.django_db
Role = ProjectMember.Role
LABELS = {"w-a": ["pro", "con"], "w-b": ["pro", "pro"]}
CITATION = "@misc{pilot2026,\n  title = {Stance pilot},\n  year = {2026}\n}"


@pytest.fixture
def team(django_user_model):
    """A sentence_label project with study phases and two workers' submitted answers; an editor who is NOT a
    Researcher (a colleague added to the team), a viewer and an outsider Researcher."""
    owner = django_user_model.objects.create_user("owner", password="pw-owner-123", is_staff=True)
    users = {
        name: django_user_model.objects.create_user(name, password=f"pw-{name}-123", is_staff=True)
        for name in ("editor", "viewer", "outsider")
    }
    users["outsider"].groups.add(Group.objects.get(name=RESEARCHER_GROUP))
    project = services.create_project(
        name="Stance pilot",
        slug="pilot",
        task_type="sentence_label",
        config={"labels": ["pro", "con"]},
        assignments_per_item=2,
        items_per_hit=1,
        status="active",
        created_by=owner,
    )
    teams.add_member(project, "editor", Role.EDITOR, by=owner)
    teams.add_member(project, "viewer", Role.VIEWER, by=owner)
    StudyPhases.objects.create(project=project)
    items = services.add_items(
        project, [{"text": "Wind is cheap.", "topic": "energy"}, {"text": "Coal is dirty.", "topic": "energy"}]
    )
    services.build_hits(project)
    answers = {}
    for name, labels in LABELS.items():
        worker = services.worker_for_user(django_user_model.objects.create_user(name))
        for _ in labels:
            a = services.reserve_next_assignment(project, worker)
            [item] = services.assignment_items(a)
            label = labels[items.index(item)]
            services.submit_assignment(a, worker, {item.pk: {"label": label}})
            answers[(item.pk, worker.pk)] = {"label": label}
    return {"project": project, "users": users, "items": items, "answers": answers}


def client_of(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def url(project) -> str:
    return reverse("annotation:studio-release", args=[project.slug])


def form(**values) -> dict:
    return {
        "kind": "annotations",
        "name": "",
        "version": "1.0",
        "license": "CC-BY-4.0",
        "citation": CITATION,
        "description": "Two workers labelled the stance of two sentences.",
        **values,
    }


@pytest.fixture
def stored_eager(settings, store_eager):
    """Eager tasks, their results stored in the result backend as a worker stores them (the job page reads them)."""
    with eager_celery(settings):
        yield


def test_an_editor_publishes_the_answers_and_the_team_downloads_them(
    team, tmp_artifacts, stored_eager, django_capture_on_commit_callbacks
):
    project, editor = team["project"], team["users"]["editor"]
    client = client_of(editor)
    page = client.get(url(project))
    html = page.content.decode()
    assert (
        page.status_code == 200 and 'id="release-form"' in html and 'value="pilot"' in html
    )  # the name's default: the slug
    assert 'id="id_kind_annotations"' in html and 'id="no-releases"' in html
    with django_capture_on_commit_callbacks(execute=True) as queued:
        resp = client.post(url(project), form(annotations__include_gold=""))
    assert len(queued) == 1
    assert resp.status_code == 302 and re.fullmatch(r"/studio/jobs/[0-9a-f-]+/\?for=release", resp["Location"])
    release = Release.objects.get()
    assert (release.name, release.version, release.kind, release.status) == ("pilot", "1.0", "annotations", "published")
    assert release.config == {"projects": ["pilot"], "include_gold": False} and release.creator == editor
    assert release.card == {
        "license": "CC-BY-4.0",
        "citation": CITATION,
        "description": "Two workers labelled the stance of two sentences.",
    }
    # the rows are the submitted answers
    rows = [json.loads(line) for line in release_file_path(release, "annotations.jsonl").read_text().splitlines()]
    assert [r["item_id"] for r in rows] == [i.pk for i in team["items"]]
    got = {(r["item_id"], a["worker"]): a["response"] for r in rows for a in r["annotations"]}
    assert got == team["answers"]
    assert {f.name for f in release.files.all()} == {"annotations.jsonl", "participants.jsonl", "README.md"}
    card = release_file_path(release, "README.md").read_text()
    assert "## License\n\nCC-BY-4.0" in card and f"## Citation\n\n```\n{CITATION}\n```" in card
    assert card.index("Two workers labelled") < card.index("## Configuration")
    # the job page (any member of the team: the editor is no Researcher) says it is done and links to the list
    job = client.get(resp["Location"])
    assert job.status_code == 200 and "Publishing a release" in job.content.decode()
    state = client.get(resp["Location"].replace("/?for=", "/state/?for=")).json()
    assert state["state"] == "SUCCESS" and state["kind"] == "release"
    assert state["link"]["url"] == f"{url(project)}#release-{release.pk}"
    # the list shows the release with its files, which a viewer of the team downloads
    html = client_of(team["users"]["viewer"]).get(url(project)).content.decode()
    download = reverse("release-file", args=[release.pk, "annotations.jsonl"])
    assert f'id="release-{release.pk}"' in html and download in html and 'id="release-form"' not in html
    resp = client_of(team["users"]["viewer"]).get(download)
    assert resp.status_code == 200
    assert b"".join(resp.streaming_content) == release_file_path(release, "annotations.jsonl").read_bytes()
    assert client_of(team["users"]["outsider"]).get(download).status_code == 404
    # the project page links to the Release step
    assert f'href="{url(project)}"' in client.get(reverse("annotation:studio-project", args=["pilot"])).content.decode()


def test_an_outsider_gets_404_and_a_viewer_cannot_publish(team, tmp_artifacts, django_capture_on_commit_callbacks):
    project = team["project"]
    outsider = client_of(team["users"]["outsider"])
    assert outsider.get(url(project)).status_code == 404
    assert outsider.post(url(project), form()).status_code == 404
    viewer = client_of(team["users"]["viewer"])
    assert viewer.get(url(project)).status_code == 200
    with django_capture_on_commit_callbacks() as queued:
        resp = viewer.post(url(project), form())
    assert resp.status_code == 403 and "owner or editor" in resp.content.decode()
    assert queued == [] and not Release.objects.exists()


@pytest.mark.parametrize(
    ("values", "field", "reason"),
    [
        ({"version": "1 0"}, "version", "is not a valid release version"),
        ({"version": ""}, "version", "This field is required"),
        ({"name": "../up"}, "name", "is not a valid release name"),
        ({"license": "CC-BY\nand more"}, "license", "one line"),
        ({"kind": "aspects"}, "kind", "Select a valid choice"),
        ({"version": "0.9"}, "version", "already exists"),
    ],
)
def test_a_bad_value_is_a_400_on_its_field_and_nothing_is_queued(
    team, tmp_artifacts, values, field, reason, django_capture_on_commit_callbacks
):
    existing = build_release("pilot", "0.9", kind="annotations", config={"project": "pilot"})
    with django_capture_on_commit_callbacks() as queued:
        resp = client_of(team["users"]["editor"]).post(url(team["project"]), form(**values))
    html = resp.content.decode()
    assert resp.status_code == 400 and queued == []
    errors = re.search(rf'<ul class="errorlist" id="{field}-errors">(.*?)</ul>', html, re.S)
    assert errors and reason in errors.group(1), html[:3000]
    assert list(Release.objects.values_list("pk", flat=True)) == [existing.pk]
    assert sorted(p.name for p in (tmp_artifacts / "releases").iterdir()) == ["pilot"]


def test_an_aspect_project_offers_aspects_and_its_release_follows_the_team(
    django_user_model, tmp_artifacts, stored_eager, django_capture_on_commit_callbacks
):
    project = aspect_project("asp-pilot")
    owner = django_user_model.objects.create_user("owner", password="pw-owner-123", is_staff=True)
    viewer = django_user_model.objects.create_user("viewer", password="pw-viewer-123", is_staff=True)
    teams.add_member(project, "owner", Role.OWNER, by=None)
    teams.add_member(project, "viewer", Role.VIEWER, by=owner)
    kinds = studio_releases.release_kinds(project)
    assert [k.kind for k in kinds] == ["annotations", "aspects"]
    assert [o.name for o in kinds[1].options] == ["split", "seed"]
    client = client_of(owner)
    assert 'id="id_kind_aspects"' in client.get(url(project)).content.decode()
    # a split the exporter refuses is the error of that kind's field
    with django_capture_on_commit_callbacks() as queued:
        resp = client.post(url(project), form(kind="aspects", aspects__split="sideways"))
    assert resp.status_code == 400 and queued == [] and 'id="aspects__split-errors"' in resp.content.decode()
    with django_capture_on_commit_callbacks(execute=True):
        resp = client.post(url(project), form(kind="aspects", name="asp", aspects__split="none"))
    assert resp.status_code == 302
    release = Release.objects.get(name="asp")
    assert release.kind == "aspects" and release.config == {"projects": ["asp-pilot"], "split": {"mode": "none"}}
    assert release.status == "published" and {f.name for f in release.files.all()} == {"aspects.jsonl", "README.md"}
    resp = client_of(viewer).get(reverse("release-file", args=[release.pk, "aspects.jsonl"]))
    assert resp.status_code == 200


def test_every_release_kind_of_a_task_type_is_a_registered_exporter():
    kinds = {tt.name: tt.release_kinds for tt in all_task_types()}
    assert kinds["aspect"] == ("aspects",) and kinds["bws_similarity"] == ("bws",)
    assert kinds["span_grounding"] == ("spans",) and kinds["sentence_label"] == ()
    for tt_kinds in kinds.values():
        for kind in tt_kinds:
            assert get_exporter(kind).description


def test_the_options_of_bws_and_spans_are_checked_by_their_exporters(db):
    bws = services.create_project(
        name="BWS", slug="bws-pilot", task_type="bws_similarity", config={"scorer": "jaccard", "seed": 0}
    )
    assert [k.kind for k in studio_releases.release_kinds(bws)] == ["annotations", "bws"]
    with pytest.raises(FieldError) as exc:  # cross-topic needs topics: the project names none
        studio_releases.kind_config(bws, "bws", {"split": "cross-topic"})
    assert exc.value.field == "split" and "train / dev / test topics" in exc.value.reason
    assert studio_releases.kind_config(bws, "bws", {"split": "in-topic", "seed": 4}) == {
        "project": "bws-pilot",
        "split": {"mode": "in-topic", "seed": 4},
    }
    with pytest.raises(FieldError) as exc:
        studio_releases.kind_config(bws, "aspects", {})
    assert exc.value.field == "kind"
    spans = services.create_project(name="Spans", slug="spans-pilot", task_type="span_grounding")
    config = studio_releases.kind_config(spans, "spans", {"include_unannotated": True, "filters": True})
    assert config["projects"] == ["spans-pilot"] and config["include_unannotated"] is True
    assert config["filters"]["max_unnormalised"] == 0.30  # the paper's filters
