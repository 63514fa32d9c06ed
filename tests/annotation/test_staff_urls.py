"""No staff page answers 500 for any project state the models allow.

The pages are found from the URL resolver (every pattern of the ``annotation`` namespace -- the studio, /projects/...,
the dashboards and each task type's own pages -- except the crowdworkers' entry pages), not from a hand list. For
projects of every task type (made by the studio's import from tests/data/studio/), in each status draft / active /
paused / closed, with no response and with responses of two workers (and their feedback, and a blocked worker),
every page is fetched as a Researcher with every parameter it takes: no answer may be a server error. A task type's
page for a project of another type answers 404 ("Not a <kind>"), which is fine."""

from __future__ import annotations

import re
import shutil
import uuid
from pathlib import Path

import pytest
from django.contrib.auth.models import Group
from django.urls import URLPattern, URLResolver, get_resolver

from annotation import services
from annotation.dashboards import CSV_TABLES
from annotation.models import Item, Project, Worker
from annotation.studio import services as studio
from annotation.task_types import all_task_types, get_task_type
from argora.roles import RESEARCHER_GROUP
from corpus.importers import import_file
from corpus.models import FactVariable
from tests.conftest import join_every_project

pytestmark = pytest.mark.django_db

DATA = Path(__file__).resolve().parents[1] / "data" / "studio"
# the crowdworkers' pages (they reserve HITs for whoever opens them); everything else of the namespace is walked
WORKER_PAGES = {"invite", "work", "done", "instructions", "stop", "recover", "my-projects", "study", "study-step"}
SOURCES = {
    "sentence_label": ("uniforms.tsv", "ukp-tsv", {}, {}),
    "aspect": ("appf.jsonl", "appf-jsonl", {}, {}),
    "span_grounding": ("wage_arguments.jsonl", "arguments-jsonl", {}, {}),
    "bws_similarity": (
        "cloning_arguments.jsonl",
        "arguments-jsonl",
        {"pairs": 4},
        {"scorer": "jaccard", "tuples_per_pair": 1, "attention_checks": 1},
    ),
    "validity_novelty": ("valnov.csv", "valnov-csv", {}, {}),
    "pairwise_preference": ("pairs.jsonl", "pairs-jsonl", {}, {}),
    "likert_debate": ("debates.jsonl", "debates-jsonl", {}, {}),
}
# (url name, task type) -> why that page fails today (reported; fixed outside the studio): xfail, the rest runs
KNOWN_FAILURES: dict[tuple[str, str], str] = {}


def answer_for(project, item, assignment) -> dict:
    """A valid response of each task type (the test's own knowledge; the engine has none)."""
    payload, name = item.payload, project.task_type
    if name == "sentence_label":
        return {"label": get_task_type(name).labels(project)[0]}
    if name == "aspect":
        return {"aspects": [payload["candidates"][0]["id"]]}
    if name == "span_grounding":
        return {"spans": []}
    if name == "bws_similarity":
        ids = [p["id"] for p in payload["pairs"]]
        return {"best": ids[0], "worst": ids[-1]}
    if name == "validity_novelty":
        return {"validity": "yes", "novelty": "no"}
    if name == "pairwise_preference":
        return {"choice": "left", "fluent_left": True, "fluent_right": False}
    if name == "likert_debate":
        return {"style": 3, "content": 3, "strategy": 2, "overall": 3}
    raise AssertionError(f"no answer known for {name}: add one")


def test_every_registered_task_type_is_walked():
    assert set(SOURCES) == {t.name for t in all_task_types()}


def make_project(task_type: str, name: str, media: Path) -> Project:
    file_name, source_name, options, config = SOURCES[task_type]
    setup = studio.check_setup(
        name=name, task_type=task_type, config=config, values={"assignments_per_item": 2, "items_per_hit": 2}
    )
    folder = media / studio.UPLOAD_DIR / uuid.uuid4().hex
    folder.mkdir(parents=True)
    shutil.copy(DATA / file_name, folder / file_name)
    data = studio.source_input(
        studio.source_named(get_task_type(task_type), source_name),
        upload={"path": str(folder / file_name), "name": file_name},
        options=options,
    )
    return Project.objects.get(slug=studio.run_import(studio.import_spec(setup, data))["project"])


def answer(project: Project, users) -> None:
    """Two workers answer the first HIT (with feedback); the second is then blocked."""
    services.set_project_status(project, Project.Status.ACTIVE)
    for n, user in enumerate(users):
        worker = services.worker_for_user(user)
        assignment = services.reserve_next_assignment(project, worker)
        items = services.assignment_items(assignment)
        services.submit_assignment(
            assignment,
            worker,
            {i.pk: answer_for(project, i, assignment) for i in items},
            feedback=f"feedback {n} on {project.slug}",
        )
    services.block_worker(worker, "gold accuracy too low")


def walk_patterns(patterns=None, prefix="", namespace=None):
    """``(url name, route regex, converters)`` of every pattern under the ``annotation`` namespace."""
    for p in get_resolver().url_patterns if patterns is None else patterns:
        if isinstance(p, URLResolver):
            yield from walk_patterns(p.url_patterns, prefix + str(p.pattern), p.namespace or namespace)
        elif isinstance(p, URLPattern) and namespace == "annotation" and p.name not in WORKER_PAGES:
            yield p.name, prefix + str(p.pattern)


PARAM = re.compile(r"<(?:(\w+):)?(\w+)>")


def urls_for(route: str, values: dict[str, list[str]]) -> list[str]:
    """Every URL of a route with each value of each of its parameters (``values[name]``)."""
    out = ["/" + route]
    for converter, name in PARAM.findall(route):
        options = values.get(name) or ["1"]
        token = f"<{converter + ':' if converter else ''}{name}>"
        out = [u.replace(token, str(v), 1) for u in out for v in options]
    assert all("<" not in u for u in out), out
    return out


@pytest.fixture
def researcher(client, django_user_model):
    user = django_user_model.objects.create_user("researcher", password="pw-research-123")
    user.groups.add(Group.objects.get(name=RESEARCHER_GROUP))
    client.force_login(user)
    leave = join_every_project(user)  # on the team of every project made here: the pages really render
    yield user
    leave()


@pytest.mark.parametrize("task_type", sorted(SOURCES))
def test_no_staff_page_fails_for_any_project_state(
    task_type, client, researcher, django_user_model, settings, tmp_path, request
):
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.CELERY_TASK_ALWAYS_EAGER = False
    import_file(DATA / "wage_kb.jsonl", "facts-jsonl")
    empty = make_project(task_type, f"{task_type} empty", settings.MEDIA_ROOT)
    answered = make_project(task_type, f"{task_type} answered", settings.MEDIA_ROOT)
    answer(answered, [django_user_model.objects.create_user(f"w{n}") for n in range(2)])
    routes = list(walk_patterns())
    names = {name for name, _ in routes}
    assert {"studio", "studio-project", "project-list", "project-progress", "agreement"} <= names
    if get_task_type(task_type).results_page:
        assert get_task_type(task_type).results_page[0].split(":")[1] in names
    client.raise_request_exception = False  # a failing page is a 500 answer here, listed with the others
    failures, known, fetched = [], [], 0
    assert answered.assignments.filter(status="submitted").count() == 2
    for project in (empty, answered):
        values = {
            "slug": [project.slug],
            "status": list(Project.Status.values),
            "table": list(CSV_TABLES),
            "item_id": [str(i) for i in Item.objects.filter(project=project).values_list("pk", flat=True)[:2]] or ["1"],
            "worker_id": [
                str(w)
                for w in Worker.objects.filter(assignments__project=project).values_list("pk", flat=True).distinct()[:1]
            ]
            or ["1"],
            "variable_id": [str(FactVariable.objects.values_list("pk", flat=True).first())],
            "task_id": [str(uuid.uuid4())],
            "token": ["no-such-draft"],
        }
        for status in Project.Status.values:
            Project.objects.filter(pk=project.pk).update(status=status)  # any status the model allows
            for name, route in routes:
                for url in urls_for(route, values):
                    resp = client.get(url)
                    fetched += 1
                    if resp.status_code >= 500:
                        where = (name, task_type)
                        (known if where in KNOWN_FAILURES else failures).append(
                            f"{url} ({status}, {project.slug}): {resp.status_code}"
                        )
                    elif name.startswith("studio") and resp.status_code == 403:
                        failures.append(f"{url}: 403 for a researcher")
    assert fetched > 100
    print(f"{task_type}: {fetched} pages fetched")
    if known and not failures:
        request.applymarker(
            pytest.mark.xfail(
                reason="; ".join(KNOWN_FAILURES[k] for k in KNOWN_FAILURES if k[1] == task_type), strict=True
            )
        )
        raise AssertionError("known failures: " + "; ".join(known))
    assert failures == []
