"""The studio's gold share (none / the first N rows / N% drawn with a seed / every row on an addition) and "Add items"
to a saved project (``/studio/projects/<slug>/items/add/``): the form fields of a source whose rows carry labels, the
refused shares, the same rows for the same seed, new items and HITs on an active project whose HITs, assignments and
answers stay as they are, a row already in the project skipped, a bad file that adds nothing (``file:line``), who may
add (outsider 404, viewer 403), a closed project refused, the audit line."""

from __future__ import annotations

import re
import shutil
import uuid
from pathlib import Path

import pytest
from django.contrib.auth.models import Group
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from annotation import services, teams
from annotation.models import HIT, Assignment, AuditEntry, GoldItem, HITItem, Item, Project, ProjectMember, Response
from annotation.studio import services as studio
from annotation.task_types import get_task_type
from annotation.task_types.base import GoldShare
from argora.roles import RESEARCHER_GROUP
from corpus.models import Sentence
from tests.conftest import join_every_project
from tests.worker_utils import eager_celery

pytestmark = pytest.mark.django_db

DATA = Path(__file__).resolve().parents[2] / "data" / "studio"
LABELS = {"labels": ["pro", "con", "none"]}
CLONING = [line for line in (DATA / "cloning_arguments.jsonl").read_text().splitlines() if line.strip()]


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


@pytest.fixture
def researcher(django_user_model):
    user = django_user_model.objects.create_user("researcher", password="pw-research-123")
    user.groups.add(Group.objects.get(name=RESEARCHER_GROUP))
    leave = join_every_project(user)
    yield user
    leave()


@pytest.fixture
def rclient(client, researcher):
    client.force_login(researcher)
    return client


def upload(name: str, content: bytes | None = None) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, (DATA / name).read_bytes() if content is None else content)


def errors_of(resp, field: str) -> str:
    m = re.search(rf'<ul class="errorlist" id="{field}-errors">(.*?)</ul>', resp.content.decode(), re.S)
    return re.sub(r"<[^>]+>", " ", m.group(1)) if m else ""


def count(html: str, name: str) -> int:
    return int(re.search(rf'id="count-{name}">(\d+)<', html).group(1))


def stored(name: str, content: str | None = None) -> dict:
    """An upload as the items step stores it."""
    folder = Path(studio.settings.MEDIA_ROOT) / studio.UPLOAD_DIR / uuid.uuid4().hex[:12]
    folder.mkdir(parents=True)
    path = folder / name
    if content is None:
        shutil.copy(DATA / name, path)
    else:
        path.write_text(content, encoding="utf-8")
    return {"path": str(path), "name": name}


def source_of(task_type: str, name: str):
    return studio.source_named(get_task_type(task_type), name)


def new_spec(name: str, file: str, source: str, *, gold=None, task_type="sentence_label", config=LABELS, **values):
    project = studio.check_setup(
        name=name, task_type=task_type, config=config, values={"assignments_per_item": 1, "items_per_hit": 2, **values}
    )
    data = studio.source_input(source_of(task_type, source), upload=stored(file), gold=gold)
    return project, data


def gold_texts(project) -> list[str]:
    return [g.item.payload["text"] for g in GoldItem.objects.filter(item__project=project).order_by("item__position")]


# --- the gold share --------------------------------------------------------------------------------------------------
def test_the_items_step_offers_the_gold_share_only_for_sources_with_labels(rclient):
    resp = rclient.post(
        reverse("annotation:studio-new"),
        {"name": "Stance", "task_type": "sentence_label", "config": '{"labels": ["pro", "con", "none"]}'},
    )
    html = rclient.get(resp["Location"]).content.decode()
    tsv = source_of("sentence_label", "ukp-tsv")
    assert tsv.gold_label and 'id="gold-fields"' in html
    assert f"expected answer: {tsv.gold_label}" in html
    for mode in ("none", "first", "percent"):
        assert f'name="gold_mode" value="{mode}"' in html
    assert 'value="all"' not in html  # every row gold: only on an addition
    assert 'name="gold_n"' in html and 'name="gold_seed"' in html
    resp = rclient.post(reverse("annotation:studio-new"), {"name": "Pairs", "task_type": "pairwise_preference"})
    html = rclient.get(resp["Location"]).content.decode()
    assert 'id="gold-fields"' not in html and 'name="gold_mode"' not in html


def test_first_n_gold_through_the_forms(rclient, settings, django_capture_on_commit_callbacks):
    resp = rclient.post(
        reverse("annotation:studio-new"),
        {
            "name": "Uniform stance",
            "task_type": "sentence_label",
            "config": '{"labels": ["pro", "con", "none"]}',
            "items_per_hit": "2",
        },
    )
    items_url = resp["Location"]
    resp = rclient.post(
        items_url,
        {"source": "ukp-tsv", "file": upload("uniforms.tsv"), "gold_mode": "first", "gold_n": "1", "gold_seed": "13"},
    )
    assert resp.status_code == 302, resp.content.decode()[:3000]
    html = rclient.get(resp["Location"]).content.decode()
    assert count(html, "items") == 2 and count(html, "gold") == 1 and count(html, "hits") == 1
    assert "the first 1 row(s) are gold items" in html
    with eager_celery(settings), django_capture_on_commit_callbacks(execute=True):
        rclient.post(resp["Location"])
    project = Project.objects.get(name="Uniform stance")
    assert gold_texts(project) == ["School uniforms reduce bullying because nobody can be mocked for their clothes."]
    assert GoldItem.objects.get(item__project=project).expected == {"label": "pro"}
    assert Item.objects.filter(project=project, is_gold=False).count() == 2


def test_percent_gold_draws_the_same_rows_for_the_same_seed():
    share = {"mode": "percent", "n": 40, "seed": 7}
    slugs = []
    for name in ("First", "Second"):
        project, data = new_spec(name, "cloning_arguments.jsonl", "arguments-jsonl", gold=share)
        assert data.gold == GoldShare("percent", 40, 7)
        preview, problems = studio.preview_import(project, data)
        assert problems == [] and (preview.items, preview.gold) == (3, 2)
        slugs.append(studio.run_import(studio.import_spec(project, data))["project"])
    first, second = (Project.objects.get(slug=s) for s in slugs)
    chosen = sorted(GoldShare("percent", 40, 7).rows(len(CLONING)))
    expected = [re.search(r'"sentence": "([^"]+)"', CLONING[i]).group(1) for i in chosen]
    assert gold_texts(first) == gold_texts(second) == expected
    # another seed, other rows (for this file and these seeds)
    other = sorted(GoldShare("percent", 40, 9).rows(len(CLONING)))
    assert other != chosen
    project, data = new_spec(
        "Third", "cloning_arguments.jsonl", "arguments-jsonl", gold={"mode": "percent", "n": 40, "seed": 9}
    )
    third = Project.objects.get(slug=studio.run_import(studio.import_spec(project, data))["project"])
    assert gold_texts(third) == [re.search(r'"sentence": "([^"]+)"', CLONING[i]).group(1) for i in other]


def test_refused_gold_shares(rclient):
    tsv = source_of("sentence_label", "ukp-tsv")
    for gold, field in [
        ({"mode": "first", "n": ""}, "gold_n"),
        ({"mode": "percent", "n": 0}, "gold_n"),
        ({"mode": "percent", "n": 101}, "gold_n"),
        ({"mode": "first", "n": "x"}, "gold_n"),
        ({"mode": "some"}, "gold_mode"),
        ({"mode": "all"}, "gold_mode"),
        ({"mode": "first", "n": 1, "seed": "s"}, "gold_seed"),
    ]:
        with pytest.raises(studio.SetupRefused) as refused:
            studio.source_input(tsv, upload=stored("uniforms.tsv"), gold=gold)
        assert refused.value.field == field, gold
    # a source whose rows carry no answers takes no gold share
    pairs = source_of("pairwise_preference", "pairs-jsonl")
    assert not pairs.gold_label
    with pytest.raises(studio.SetupRefused, match="gold_mode: .* carry no answers"):
        studio.source_input(pairs, upload=stored("pairs.jsonl"), gold={"mode": "first", "n": 1})
    assert studio.source_input(pairs, upload=stored("pairs.jsonl"), gold={"mode": "none"}).gold.active is False
    # every row gold on a new project: no item for the workers
    project, data = new_spec("All gold", "uniforms.tsv", "ukp-tsv", gold={"mode": "first", "n": 3})
    preview, problems = studio.preview_import(project, data)
    assert preview is None and len(problems) == 1 and problems[0].startswith("gold_n")
    assert "leave some" in problems[0]
    # through the form: the error on its field, nothing stored
    resp = rclient.post(reverse("annotation:studio-new"), {"name": "S", "task_type": "sentence_label"})
    token_url = resp["Location"]
    resp = rclient.post(
        token_url, {"source": "ukp-tsv", "file": upload("uniforms.tsv"), "gold_mode": "percent", "gold_n": "150"}
    )
    assert resp.status_code == 400 and "0 to 100" in errors_of(resp, "gold_n")
    resp = rclient.post(
        token_url, {"source": "ukp-tsv", "file": upload("uniforms.tsv"), "gold_mode": "first", "gold_n": "-1"}
    )
    assert resp.status_code == 400 and "greater than or equal to 0" in errors_of(resp, "gold_n")
    resp = rclient.post(token_url, {"source": "ukp-tsv", "file": upload("uniforms.tsv"), "gold_mode": "all"})
    assert resp.status_code == 400 and errors_of(resp, "gold_mode")
    # a share that leaves no worker items: the preview refuses it and the confirm writes nothing
    resp = rclient.post(
        token_url, {"source": "ukp-tsv", "file": upload("uniforms.tsv"), "gold_mode": "first", "gold_n": "5"}
    )
    assert resp.status_code == 302
    preview = rclient.get(resp["Location"])
    assert preview.status_code == 400 and "gold_n" in preview.content.decode()
    assert rclient.post(resp["Location"]).status_code == 400
    assert Project.objects.count() == 0 and Sentence.objects.count() == 0


# --- add items to a saved project ---------------------------------------------------------------------------------
@pytest.fixture
def running(django_user_model):
    """An active sentence_label project of uniforms.tsv (3 items, 2 HITs of 2) with one submitted HIT."""
    project, data = new_spec("Uniforms", "uniforms.tsv", "ukp-tsv")
    project = Project.objects.get(slug=studio.run_import(studio.import_spec(project, data))["project"])
    services.set_project_status(project, Project.Status.ACTIVE)
    worker = services.worker_for_user(django_user_model.objects.create_user("w1"))
    assignment = services.reserve_next_assignment(project, worker)
    services.submit_assignment(
        assignment, worker, {i.pk: {"label": "pro"} for i in services.assignment_items(assignment)}
    )
    project.refresh_from_db()
    return project


def snapshot(project) -> dict:
    return {
        "hits": list(HIT.objects.filter(project=project).order_by("pk").values_list("pk", "position", "taken")),
        "hit_items": list(
            HITItem.objects.filter(hit__project=project)
            .order_by("pk")
            .values_list("pk", "hit_id", "item_id", "position")
        ),
        "assignments": list(
            Assignment.objects.filter(project=project)
            .order_by("pk")
            .values_list("pk", "hit_id", "worker_id", "status", "submitted_at")
        ),
        "responses": list(
            Response.objects.filter(assignment__project=project).order_by("pk").values_list("pk", "item_id", "data")
        ),
        "items": list(Item.objects.filter(project=project).order_by("pk").values_list("pk", "payload", "is_gold")),
    }


def add_url(project, name="studio-add-items", *args):
    return reverse(f"annotation:{name}", args=[project.slug, *args])


def confirm(client, settings, capture, preview_url):
    with eager_celery(settings), capture(execute=True):
        return client.post(preview_url)


def test_add_items_to_an_active_project_with_answers(rclient, running, settings, django_capture_on_commit_callbacks):
    before = snapshot(running)
    page = rclient.get(reverse("annotation:studio-project", args=[running.slug])).content.decode()
    assert f'id="add-items-link" href="{add_url(running)}"' in page
    html = rclient.get(add_url(running)).content.decode()
    assert "Add items: Uniforms" in html and "3 items, 0 gold, 2 HITs" in html
    assert 'name="gold_mode" value="all"' in html  # the project has items for the workers
    resp = rclient.post(
        add_url(running),
        {"source": "arguments-jsonl", "file": upload("cloning_arguments.jsonl"), "gold_mode": "first", "gold_n": "1"},
    )
    assert resp.status_code == 302, resp.content.decode()[:3000]
    preview_url = resp["Location"]
    preview = rclient.get(preview_url)
    html = preview.content.decode()
    assert preview.status_code == 200 and 'id="confirm-import"' in html
    assert count(html, "items") == 4 and count(html, "gold") == 1 and count(html, "hits") == 2
    assert snapshot(running) == before  # the preview wrote nothing
    resp = confirm(rclient, settings, django_capture_on_commit_callbacks, preview_url)
    assert resp.status_code == 302
    job_url = resp["Location"]
    task_id = job_url.rstrip("/").split("/")[-1]
    assert job_url == add_url(running, "studio-add-job", task_id)
    # the new items and their HITs; everything the project had is as it was
    after = snapshot(running)
    for key in ("hits", "hit_items", "assignments", "responses", "items"):
        assert after[key][: len(before[key])] == before[key], key
    assert len(after["responses"]) == len(before["responses"]) and len(after["assignments"]) == 1
    new_items = Item.objects.filter(project=running, pk__gt=before["items"][-1][0])
    assert new_items.filter(is_gold=False).count() == 4 and new_items.filter(is_gold=True).count() == 1
    assert GoldItem.objects.get(item__in=new_items).expected == {"label": "con"}
    new_hits = HIT.objects.filter(project=running).exclude(pk__in=[h[0] for h in before["hits"]])
    assert new_hits.count() == 2
    assert set(HITItem.objects.filter(hit__in=new_hits).values_list("item_id", flat=True)) == set(
        new_items.filter(is_gold=False).values_list("pk", flat=True)
    )
    running.refresh_from_db()
    assert running.status == Project.Status.ACTIVE
    addition = running.engine[studio.ADDITIONS_KEY][-1]
    assert addition["file"] == "cloning_arguments.jsonl" and addition["summary"] == {
        "items": 4,
        "gold": 1,
        "skipped": 0,
        "hits": 2,
    }
    entry = AuditEntry.objects.get(project=running, action="items.add")
    assert entry.user.username == "researcher" and entry.detail["new_items"] == 4 and entry.detail["job"] == task_id
    page = rclient.get(reverse("annotation:studio-project", args=[running.slug])).content.decode()
    assert 'data-action="items.add"' in page and "new_items: 4" in page
    assert "cloning_arguments.jsonl</code> — 4 item(s), 1 gold, 2 new HIT(s)" in page.split('id="additions"')[1]
    # the upload is gone once added, the draft with it; the job pages answer for this project only
    assert not list((Path(settings.MEDIA_ROOT) / studio.UPLOAD_DIR).glob("*/cloning_arguments.jsonl"))
    assert rclient.get(preview_url).status_code == 302
    assert rclient.get(job_url).status_code == 200
    assert rclient.get(add_url(running, "studio-add-job-state", task_id)).json()["id"] == task_id
    other = services.create_project(name="Other", task_type="sentence_label", config=LABELS)
    assert rclient.get(add_url(other, "studio-add-job", task_id)).status_code == 404
    assert rclient.get(add_url(running, "studio-add-job", uuid.uuid4())).status_code == 404
    # a worker gets the new HITs
    worker = services.worker_for_user(type(entry.user).objects.create_user("w2"))
    assignment = services.reserve_next_assignment(running, worker)
    assert assignment is not None


def test_a_row_already_in_the_project_is_skipped(running):
    known = Item.objects.filter(project=running).order_by("position").first().sentence
    rows = '{"topic": "%s", "sentence": "%s", "stance": "pro"}\n' % (known.topic.name, known.text) + CLONING[0] + "\n"
    data = studio.source_input(
        source_of("sentence_label", "arguments-jsonl"), upload=stored("mixed.jsonl", rows), adding_to=running
    )
    items_before = Item.objects.filter(project=running).count()
    hits_before = HIT.objects.filter(project=running).count()
    result = studio.run_addition(studio.addition_spec(running, data), job="add-1")
    assert (result["items"], result["gold"], result["skipped"], result["hits"]) == (1, 0, 1, 1)
    assert result["added"] is True
    assert Item.objects.filter(project=running).count() == items_before + 1
    assert Item.objects.filter(project=running, sentence=known).count() == 1
    assert HIT.objects.filter(project=running).count() == hits_before + 1
    # a retried job adds nothing twice
    assert studio.run_addition(studio.addition_spec(running, data), job="add-1")["items"] == 1
    assert Item.objects.filter(project=running).count() == items_before + 1
    # the same file again: nothing new, refused, nothing written
    data = studio.source_input(source_of("sentence_label", "ukp-tsv"), upload=stored("uniforms.tsv"), adding_to=running)
    with pytest.raises(studio.StudioImportFailed, match="every row is in the project already"):
        studio.run_addition(studio.addition_spec(running, data), job="add-2")
    assert Item.objects.filter(project=running).count() == items_before + 1
    assert AuditEntry.objects.filter(project=running, action="items.add").count() == 1


def test_a_bad_file_adds_nothing(rclient, running):
    before, sentences = snapshot(running), Sentence.objects.count()
    resp = rclient.post(add_url(running), {"source": "arguments-jsonl", "file": upload("bad_arguments.jsonl")})
    assert resp.status_code == 302
    preview = rclient.get(resp["Location"])
    html = preview.content.decode()
    assert preview.status_code == 400 and "nothing was written" in html and 'id="confirm-import"' not in html
    assert "bad_arguments.jsonl:2: unknown stance &quot;maybe&quot;" in html
    assert rclient.post(resp["Location"]).status_code == 400  # a forced confirm is refused
    # a file made bad after the preview: the job fails naming file:line, nothing is added
    data = studio.source_input(
        source_of("sentence_label", "arguments-jsonl"), upload=stored("cloning_arguments.jsonl"), adding_to=running
    )
    data.path.write_text(data.path.read_text().replace('"stance": "pro"', '"stance": "maybe"', 1))
    with pytest.raises(studio.StudioImportFailed, match=r'^cloning_arguments\.jsonl:2: unknown stance "maybe"'):
        studio.run_addition(studio.addition_spec(running, data), job="bad")
    assert snapshot(running) == before and Sentence.objects.count() == sentences
    assert not AuditEntry.objects.filter(project=running, action="items.add").exists()


def test_who_may_add_items_and_a_closed_project(client, running, django_user_model):
    group = Group.objects.get(name=RESEARCHER_GROUP)
    users = {}
    for name in ("outsider", "viewer", "owner"):
        users[name] = django_user_model.objects.create_user(name, password=f"pw-{name}-123")
        users[name].groups.add(group)
    ProjectMember.objects.create(project=running, user=users["owner"], role=ProjectMember.Role.OWNER)
    teams.add_member(running, "viewer", ProjectMember.Role.VIEWER, by=users["owner"])
    before = snapshot(running)
    post = {"source": "arguments-jsonl", "file": upload("cloning_arguments.jsonl")}
    for name, status in (("outsider", 404), ("viewer", 403)):
        client.force_login(users[name])
        assert client.get(add_url(running)).status_code == status, name
        assert client.post(add_url(running), post).status_code == status, name
        assert client.get(add_url(running, "studio-add-preview", "x")).status_code == status, name
    client.force_login(users["viewer"])
    page = client.get(reverse("annotation:studio-project", args=[running.slug])).content.decode()
    assert 'id="add-items-link"' not in page
    client.force_login(users["owner"])
    assert client.get(add_url(running)).status_code == 200
    resp = client.post(add_url(running), {**post, "file": upload("cloning_arguments.jsonl")})
    assert resp.status_code == 302
    preview_url = resp["Location"]
    data = studio.source_input(
        source_of("sentence_label", "arguments-jsonl"), upload=stored("cloning_arguments.jsonl"), adding_to=running
    )
    # closed: refused on every step, and by a job queued before
    services.set_project_status(running, Project.Status.CLOSED)
    page = client.get(reverse("annotation:studio-project", args=[running.slug])).content.decode()
    assert 'id="add-items-link"' not in page
    for resp in (
        client.get(add_url(running)),
        client.post(add_url(running), post),
        client.get(preview_url),
        client.post(preview_url),
    ):
        assert resp.status_code == 400 and "closed" in resp.content.decode()
    with pytest.raises(studio.StudioImportFailed, match="closed"):
        studio.run_addition(studio.addition_spec(running, data), job="late")
    assert snapshot(running) == before


def test_add_items_to_draft_and_paused_projects_and_gold_only(running):
    valnov, data = new_spec("ValNov", "valnov.csv", "valnov-csv", task_type="validity_novelty", config={})
    valnov = Project.objects.get(slug=studio.run_import(studio.import_spec(valnov, data))["project"])
    assert valnov.status == Project.Status.DRAFT
    n = Item.objects.filter(project=valnov).count()
    # the same rows again as gold only (every row): the importer skips the rows the project has
    data = studio.source_input(
        source_of("validity_novelty", "valnov-csv"), upload=stored("valnov.csv"), gold={"mode": "all"}, adding_to=valnov
    )
    preview, problems = studio.preview_import(valnov, data)
    assert problems == [] and preview.items == 0 and preview.gold == n
    with pytest.raises(studio.StudioImportFailed, match="every row is in the project already|nothing to add"):
        studio.run_addition(studio.addition_spec(valnov, data), job="v1")
    # new rows as gold only, to the paused project of sentences: gold items, no HIT
    services.set_project_status(running, Project.Status.PAUSED)
    hits = HIT.objects.filter(project=running).count()
    data = studio.source_input(
        source_of("sentence_label", "arguments-jsonl"),
        upload=stored("cloning_arguments.jsonl"),
        gold={"mode": "all"},
        adding_to=running,
    )
    result = studio.run_addition(studio.addition_spec(running, data), job="g1")
    assert (result["items"], result["gold"], result["hits"]) == (0, len(CLONING), 0)
    assert HIT.objects.filter(project=running).count() == hits
    assert GoldItem.objects.filter(item__project=running).count() == len(CLONING)
    # every row gold on a project without worker items: refused
    empty = services.create_project(name="Empty", task_type="sentence_label", config=LABELS)
    with pytest.raises(studio.SetupRefused, match="gold_mode"):
        studio.source_input(
            source_of("sentence_label", "ukp-tsv"), upload=stored("uniforms.tsv"), gold={"mode": "all"}, adding_to=empty
        )
