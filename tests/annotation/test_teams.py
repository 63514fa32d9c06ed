"""Project teams: every URL pattern and API operation, walked from the URL resolver (not a hand list), as a Researcher
who is NOT in the project's team (403 or 404 everywhere, nothing changed), as a viewer (reads, never writes), as an
editor and as an owner; the admin shows a Researcher only the rows of their projects; workers reach a project only
through its doors; releases and model versions follow their project's team; the audit log records who changed what.
"""

from __future__ import annotations

import io
import re
import uuid
from datetime import timedelta

import pytest
from django.apps import apps
from django.contrib.auth.models import Group
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from django.utils import timezone
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotation import access, services, teams
from annotation.models import (
    Assignment,
    AuditEntry,
    Item,
    ModelAnnotator,
    Project,
    ProjectMember,
    Worker,
)
from argora.roles import RESEARCHER_GROUP
from corpus.releases import build_release
from ml.models import ModelVersion

pytestmark = pytest.mark.django_db
Role = ProjectMember.Role

# Routes that are not a project team's: the crowd's doors and pages (they check the worker, the invite, the platform's
# signature: tests/annotation/test_pages.py, tests/mturk, tests/prolific and the admission test below), the sign-in
# pages, the API's schema and docs, the corpus and its fact KB (shared by every team of the server: corpus/api.py),
# a new project's set-up steps (kept in the maker's own session), and jobs named by the random id the page that
# started them links to.
NOT_TEAM_ROUTES = {
    "home",
    "healthz",
    "login",
    "logout",
    "password_change",
    "password_change_done",
    "password_reset",
    "password_reset_done",
    "password_reset_confirm",
    "password_reset_complete",
    "schema",
    "api-docs",
    "oidc_authentication_init",
    "oidc_authentication_callback",
    "oidc_logout",
    "api-token",
    "",
    "annotation:invite",
    "annotation:work",
    "annotation:done",
    "annotation:stop",
    "annotation:instructions",
    "annotation:recover",
    "annotation:my-projects",
    "annotation:study",
    "annotation:study-step",
    "mturk:external",
    "mturk:external-submit",
    "mturk:external-draft",
    "mturk:external-phase",
    "mturk:fake-turk",
    "prolific:webhook",
    "prolific:start",
    "api-annotation-next",
    "api-annotation-submit",
    "api-annotation-draft",
    "api-annotation-extend",
    "api-annotation-projects",  # creating a project: the Researcher role (tested below)
    "topic-list",
    "topic-detail",
    "sentence-list",
    "sentence-detail",
    "fact-list",
    "fact-detail",
    "debate-list",
    "debate-detail",
    "annotation:spans-kb-review-action",
    "annotation:studio-new-items",
    "annotation:studio-new-preview",
    "annotation:studio-job",
    "annotation:studio-job-state",
    "job-detail",
    "api-job-detail",
}
# models of no project (generation runs, the similarity results): the Researcher role (tests/ml)
GLOBAL_ROUTES = {
    "ml:generation",
    "ml:generation-evaluation",
    "ml:generation-train",
    "ml:generation-run",
    "ml:generation-run-evaluate",
    "ml:generation-run-ratings",
    "ml:similarity-results",
    "api-generate",
    "api-generate-runs",
    "api-generate-run",
    "api-generate-run-evaluate",
    "api-generate-run-ratings",
}
# pages that list what a user may see (no project in the URL): they answer, without the projects of other teams
LIST_ROUTES = {
    "annotation:studio",
    "annotation:project-list",
    "annotation:dashboards",
    "ml:models",
    "job-list",
    "annotation:studio-new",
    "annotation:studio-guidelines-preview",
    "annotation:spans-kb-review",
    "annotation:spans-kb-normalise",
    "ml:model-rollback",
    "release-list",
}
PARAM = re.compile(r"<(?:(\w+):)?(\w+)>")


def walk(patterns=None, prefix="", namespace=None):
    for p in get_resolver().url_patterns if patterns is None else patterns:
        if isinstance(p, URLResolver):
            if str(p.pattern) == "admin/":
                continue  # the admin: its own test below
            ns = ":".join(filter(None, [namespace, p.namespace])) if p.namespace else namespace
            yield from walk(p.url_patterns, prefix + str(p.pattern), ns)
        elif isinstance(p, URLPattern):
            name = f"{namespace}:{p.name}" if namespace and p.name else (p.name or "")
            yield name, prefix + str(p.pattern)


def fill(route: str, values: dict[str, str]) -> str:
    """The URL of ``route`` (a path or a regex route of DRF's router) with ``values`` for its parameters."""
    out = "/" + route.replace("^", "").replace("$", "")
    out = re.sub(r"\(\?P<(\w+)>[^)]*\)", lambda m: str(values.get(m[1], "1")), out)
    for converter, name in PARAM.findall(out):
        token = f"<{converter + ':' if converter else ''}{name}>"
        out = out.replace(token, str(values.get(name, "1")), 1)
    assert not re.search(r"[\\()\[\]?*+<>]", out), out
    return out


def answer(project, worker, label="pro"):
    assignment = services.reserve_next_assignment(project, worker)
    items = services.assignment_items(assignment)
    return services.submit_assignment(assignment, worker, {i.pk: {"label": label} for i in items}, feedback="fine")


@pytest.fixture
def study(django_user_model, tmp_artifacts):
    """A project with items, HITs, answers, a late answer, a blocked worker, a model annotator, a model version and a
    published release; and one user per role plus an outsider Researcher."""
    group = Group.objects.get(name=RESEARCHER_GROUP)
    users = {}
    for name in ("outsider", "viewer", "editor", "owner"):
        users[name] = django_user_model.objects.create_user(
            name, f"{name}@example.org", f"pw-{name}-123", is_staff=True
        )
        users[name].groups.add(group)
    project = services.create_project(
        name="Secret study",
        slug="secret",
        task_type="sentence_label",
        config={"labels": ["pro", "con"]},
        items_per_hit=2,
        assignments_per_item=2,
        created_by=users["owner"],
        guidelines="<p>hidden guidelines</p>",
    )
    teams.add_member(project, "viewer", Role.VIEWER, by=users["owner"])
    teams.add_member(project, "editor", Role.EDITOR, by=users["owner"])
    services.add_items(project, [{"text": f"sentence {i}", "topic": "t"} for i in range(6)])
    services.build_hits(project)
    services.set_project_status(project, Project.Status.ACTIVE)
    w1 = services.worker_for_user(django_user_model.objects.create_user("crowdworker-one", password="pw-w1-12345"))
    w2 = services.worker_for_user(django_user_model.objects.create_user("crowdworker-two", password="pw-w2-12345"))
    answer(project, w1)
    late = services.reserve_next_assignment(project, w2)
    Assignment.objects.filter(pk=late.pk).update(expires_at=timezone.now() - timedelta(seconds=5))
    services.submit_assignment(
        Assignment.objects.get(pk=late.pk), w2, {i.pk: {"label": "con"} for i in services.assignment_items(late)}
    )
    services.block_worker(w2, "gold accuracy too low")
    model_worker = Worker.objects.create(source=Worker.Source.MODEL)
    annotator = ModelAnnotator.objects.create(
        project=project,
        name="m1",
        kind=ModelAnnotator.Kind.LLM,
        worker=model_worker,
        options={"model": "x"},
        prompt_template="$text",
    )
    version = ModelVersion.objects.create(kind="argument", project=project, status="ready")
    release = build_release("secret-answers", "1.0", kind="annotations", config={"project": project.slug})
    other = services.create_project(
        name="Open study",
        slug="open",
        task_type="sentence_label",
        config={"labels": ["pro", "con"]},
        created_by=users["outsider"],
    )
    return {
        "project": project,
        "users": users,
        "annotator": annotator,
        "version": version,
        "release": release,
        "late": late,
        "blocked": w2,
        "item": Item.objects.filter(project=project).first(),
        "other": other,
    }


def values_for(study) -> dict[str, str]:
    project = study["project"]
    return {
        "slug": project.slug,
        "status": "paused",
        "worker_id": study["blocked"].pk,
        "assignment_id": study["late"].pk,
        "annotator_id": study["annotator"].pk,
        "item_id": study["item"].pk,
        "pk": study["version"].pk,
        "table": "workers",
        "name": "README.md",
        "run_id": "no-run",
        "step": "consent",
        "token": "x",
        "task_id": str(uuid.uuid4()),
        "variable_id": "1",
    }


# what reading a page may store: the agreement figures computed for it (a cache of what the answers say)
DERIVED = {"annotation.AgreementSnapshot", "annotation.AgreementItemRow"}


def state() -> dict:
    """What a request could change: row counts of every model of the apps, and the rows that matter most."""
    out = {}
    for label in ("annotation", "corpus", "ml", "mturk", "prolific"):
        for model in apps.get_app_config(label).get_models():
            if model._meta.label not in DERIVED:
                out[model._meta.label] = model.objects.count()
    out["projects"] = list(Project.objects.order_by("pk").values())
    out["assignments"] = list(Assignment.objects.order_by("pk").values_list("pk", "status", "late_accepted_at"))
    out["workers"] = list(Worker.objects.order_by("pk").values_list("pk", "blocked"))
    out["members"] = list(ProjectMember.objects.order_by("pk").values_list("pk", "role"))
    out["annotators"] = list(
        ModelAnnotator.objects.order_by("pk").values_list("pk", "include_in_results", "prompt_version", "task_id")
    )
    out["versions"] = list(ModelVersion.objects.order_by("pk").values_list("pk", "is_active", "status"))
    return out


def team_routes(study):
    routes = []
    for name, route in walk():
        if name in NOT_TEAM_ROUTES or name in LIST_ROUTES or name in GLOBAL_ROUTES:
            continue
        values = values_for(study)
        if name.startswith("release-"):  # a release's id; other <pk>s are the model version's
            values["pk"] = study["release"].pk
        routes.append((name, fill(route, values)))
    return routes


def test_every_route_is_classified(study):
    """A new route must be put in a class here: a project route (walked below), a list page, or not a team's."""
    names = {name for name, _ in walk()}
    walked = {name for name, _ in team_routes(study)}
    assert {
        "annotation:studio-project",
        "annotation:studio-settings",
        "annotation:studio-team",
        "annotation:agreement",
        "annotation:agreement-csv",
        "annotation:project-progress",
        "mturk:panel",
        "prolific:panel",
        "ml:model-detail",
        "release-file",
        "api-annotation-progress",
    } <= walked
    assert LIST_ROUTES | GLOBAL_ROUTES <= names and NOT_TEAM_ROUTES - {"oidc_logout"} <= names
    assert len(walked) >= 30


def test_an_outsider_researcher_gets_403_or_404_everywhere_and_changes_nothing(study):
    outsider = study["users"]["outsider"]
    client = Client()
    client.force_login(outsider)
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=outsider).key}")
    before = state()
    seen = 0
    for name, url in team_routes(study):
        for c in (client, api) if url.startswith("/api/") else (client,):  # pages: session; the API: a token too
            for method in ("get", "post"):
                resp = getattr(c, method)(
                    url,
                    {
                        "action": "publish",
                        "confirm": "yes",
                        "include": "1",
                        "op": "add",
                        "user": "outsider",
                        "role": "owner",
                    },
                )
                seen += 1
                if resp.status_code == 405:  # the route takes no such method from anyone: says nothing of the project
                    assert method.upper() not in resp.get("Allow", ""), url
                    continue
                assert resp.status_code in (403, 404), f"{method.upper()} {url} ({name}): {resp.status_code}"
                assert b"Secret study" not in resp.content and b"hidden guidelines" not in resp.content, url
    assert state() == before
    assert seen >= 60
    # the list pages answer, without the project of another team (its own project is there)
    for name in LIST_ROUTES - {
        "annotation:studio-guidelines-preview",
        "annotation:spans-kb-review-action",
        "annotation:spans-kb-normalise",
        "ml:model-rollback",
        "job-list",
    }:
        resp = client.get(reverse(name))
        assert resp.status_code == 200, name
        assert b"Secret study" not in resp.content and b"/secret/" not in resp.content, name
    assert b"Open study" in client.get(reverse("annotation:studio")).content
    assert client.get(reverse("job-list")).status_code == 403  # every team's jobs: the operator's page only
    assert client.post(reverse("ml:model-rollback"), {"kind": "argument", "project": "secret"}).status_code == 404


READ_PAGES = {
    "annotation:studio-project",
    "annotation:studio-models",
    "annotation:studio-team",
    "annotation:studio-model-failures",
    "annotation:agreement",
    "annotation:agreement-items",
    "annotation:agreement-csv",
    "annotation:project-progress",
    "ml:model-detail",
    "release-file",
    "release-detail",
    "api-annotation-progress",
    "prolific:panel",
    "mturk:panel",
}


def test_a_viewer_reads_every_page_and_changes_nothing(study):
    client = Client()
    client.force_login(study["users"]["viewer"])
    before = state()
    walked = set()
    for name, url in team_routes(study):
        walked.add(name)
        resp = client.get(url)
        # 403: a form that changes the project (settings, phases, status, a new model); 405: a POST-only route; 404:
        # a task type's page for a project of another type -- never "no such project"
        assert resp.status_code in (200, 302, 403, 405) or b"Not a " in resp.content, (
            f"GET {url} ({name}): {resp.status_code}"
        )
        if name in READ_PAGES:
            assert resp.status_code == 200, f"GET {url} ({name}): {resp.status_code}"
        resp = client.post(
            url,
            {
                "action": "publish",
                "confirm": "yes",
                "include": "1",
                "op": "add",
                "user": "viewer",
                "role": "owner",
                "guidelines": "x",
            },
        )
        assert resp.status_code in (403, 405) or (resp.status_code == 404 and b"Not a " in resp.content), (
            f"POST {url} ({name}): {resp.status_code}"
        )
    assert READ_PAGES <= walked
    assert state() == before
    assert b"Secret study" in client.get(reverse("annotation:studio")).content


def test_an_editor_changes_the_study_but_not_its_team(study):
    project = study["project"]
    client = Client()
    client.force_login(study["users"]["editor"])
    resp = client.post(reverse("annotation:studio-status", args=[project.slug, "paused"]))
    assert resp.status_code == 302
    project.refresh_from_db()
    assert project.status == Project.Status.PAUSED
    resp = client.post(reverse("annotation:studio-accept-late", args=[project.slug, study["late"].pk]))
    assert resp.status_code == 302 and Assignment.objects.get(pk=study["late"].pk).late_accepted_at is not None
    resp = client.post(reverse("annotation:studio-unblock", args=[project.slug, study["blocked"].pk]))
    assert resp.status_code == 302 and not Worker.objects.get(pk=study["blocked"].pk).blocked
    resp = client.post(
        reverse("annotation:studio-team", args=[project.slug]), {"op": "add", "user": "outsider", "role": "owner"}
    )
    assert (
        resp.status_code == 403
        and not ProjectMember.objects.filter(user__username="outsider", project=project).exists()
    )
    actions = list(AuditEntry.objects.filter(project=project).values_list("action", "user__username"))
    assert ("status", "editor") in actions and ("late.accept", "editor") in actions
    assert ("worker.unblock", "editor") in actions
    entry = AuditEntry.objects.get(project=project, action="status")
    assert entry.detail == {"status": ["active", "paused"]}
    # the audit log is on the project page, with who did it
    html = client.get(reverse("annotation:studio-project", args=[project.slug])).content.decode()
    assert 'id="audit-log"' in html and "late.accept" in html and "editor" in html


def test_an_owner_manages_the_team_and_keeps_one_owner(study):
    project, owner = study["project"], study["users"]["owner"]
    client = Client()
    client.force_login(owner)
    url = reverse("annotation:studio-team", args=[project.slug])
    assert client.post(url, {"op": "add", "user": "outsider", "role": "viewer"}).status_code == 302
    assert access.role_of(study["users"]["outsider"], project) == Role.VIEWER
    resp = client.post(url, {"op": "add", "user": "nobody", "role": "viewer"})
    assert resp.status_code == 400 and "user: no active account named" in resp.content.decode()
    resp = client.post(url, {"op": "add", "user": "outsider", "role": "god"})
    assert resp.status_code == 400 and "role: one of owner, editor, viewer" in resp.content.decode()
    resp = client.post(url, {"op": "set", "user": "owner", "role": "viewer"})  # the last owner
    assert resp.status_code == 400 and "last owner" in resp.content.decode()
    resp = client.post(url, {"op": "remove", "user": "owner"})
    assert resp.status_code == 400 and access.role_of(owner, project) == Role.OWNER
    assert client.post(url, {"op": "set", "user": "editor", "role": "owner"}).status_code == 302
    assert client.post(url, {"op": "remove", "user": "owner"}).status_code == 302
    assert access.role_of(type(owner).objects.get(pk=owner.pk), project) is None
    assert client.get(reverse("annotation:studio-project", args=[project.slug])).status_code == 404
    log = list(
        AuditEntry.objects.filter(project=project, action__startswith="member.")
        .order_by("id")
        .values_list("action", "detail")
    )
    assert log[-3:] == [
        ("member.add", {"user": "outsider", "role": "viewer"}),
        ("member.role", {"user": "editor", "role": ["editor", "owner"]}),
        ("member.remove", {"user": "owner", "role": "owner"}),
    ]


def test_a_worker_account_cannot_join_a_team(study, django_user_model):
    django_user_model.objects.create_user("crowd-1")  # passwordless, as an invite link makes them
    services.worker_for_user(django_user_model.objects.get(username="crowd-1"))
    with pytest.raises(teams.TeamRefused, match="crowdworker"):
        teams.add_member(study["project"], "crowd-1", Role.VIEWER, by=study["users"]["owner"])


def test_the_admin_shows_a_researcher_only_the_rows_of_their_projects(study, django_user_model):
    outsider, viewer = study["users"]["outsider"], study["users"]["viewer"]
    client = Client()
    client.force_login(outsider)
    project = study["project"]
    for model in (
        "project",
        "item",
        "hit",
        "assignment",
        "response",
        "worker",
        "golditem",
        "goldrecord",
        "modelannotator",
    ):
        resp = client.get(f"/admin/annotation/{model}/")
        assert resp.status_code in (200, 403), model
        assert (
            b"Secret study" not in resp.content and b"secret" not in resp.content.lower()
        ) or resp.status_code == 403
    assert client.get(f"/admin/annotation/project/{project.pk}/change/").status_code in (302, 403, 404)
    assert client.get(f"/admin/annotation/assignment/{study['late'].pk}/change/").status_code in (302, 403, 404)
    assert client.get(f"/admin/ml/modelversion/{study['version'].pk}/change/").status_code in (302, 403, 404)
    assert client.get(f"/admin/corpus/release/{study['release'].pk}/change/").status_code in (302, 403, 404)
    assert b"secret-answers" not in client.get("/admin/corpus/release/").content
    workers = client.get("/admin/annotation/worker/").content.decode()
    # names no random token (a CSRF token, a nonce) can contain by chance
    assert "crowdworker-one" not in workers and "crowdworker-two" not in workers
    # an admin action on a row of another team's project changes nothing
    before = state()
    client.post("/admin/annotation/project/", {"action": "close", "_selected_action": [project.pk]})
    assert state() == before
    # a viewer sees the rows, and may change none of them
    client.force_login(viewer)
    assert b"Secret study" in client.get("/admin/annotation/project/").content
    assert b"crowdworker-one" in client.get("/admin/annotation/worker/").content
    resp = client.post(f"/admin/annotation/project/{project.pk}/change/", {"name": "renamed"})
    assert resp.status_code == 403
    client.post("/admin/annotation/project/", {"action": "close", "_selected_action": [project.pk]})
    assert state() == before


def test_a_superuser_sees_every_project(study, admin_user_obj):
    client = Client()
    client.force_login(admin_user_obj)
    for project in (study["project"], study["other"]):
        assert client.get(reverse("annotation:studio-project", args=[project.slug])).status_code == 200
    assert access.role_of(admin_user_obj, study["project"]) == Role.OWNER


def test_the_api_answers_json_403_404_for_the_team_routes(study):
    api = APIClient()
    api.force_authenticate(study["users"]["outsider"])
    resp = api.get(f"/api/projects/{study['project'].slug}/progress/")
    assert resp.status_code == 404 and resp["Content-Type"].startswith("application/json")
    api.force_authenticate(study["users"]["viewer"])
    assert api.get(f"/api/projects/{study['project'].slug}/progress/").status_code == 200


def test_a_new_project_is_its_makers_and_only_researchers_make_projects(study, django_user_model):
    api = APIClient()
    api.force_authenticate(study["users"]["viewer"])
    resp = api.post(
        "/api/projects/",
        {"name": "Mine", "task_type": "sentence_label", "config": {"labels": ["a", "b"]}},
        format="json",
    )
    assert resp.status_code == 201
    assert access.role_of(study["users"]["viewer"], Project.objects.get(slug=resp.json()["slug"])) == Role.OWNER
    nobody = django_user_model.objects.create_user("plain", password="pw-plain-123", is_staff=True)
    api.force_authenticate(nobody)
    assert api.post("/api/projects/", {"name": "No", "task_type": "sentence_label"}, format="json").status_code == 403


def test_a_worker_reaches_a_project_only_through_its_doors(study, django_user_model):
    """An invite worker of one study cannot take HITs of another by its slug (page or API), until its invite link."""
    project = study["project"]
    other = services.create_project(
        name="Other",
        slug="other",
        task_type="sentence_label",
        status="active",
        config={"labels": ["pro", "con"]},
        items_per_hit=1,
    )
    services.add_items(other, [{"text": "x", "topic": "t"}])
    services.build_hits(other)
    client = Client()
    assert client.get(reverse("annotation:invite", args=[other.invite_token])).status_code == 302
    assert client.get(reverse("annotation:work", args=[other.slug])).status_code == 200
    resp = client.get(reverse("annotation:work", args=[project.slug]))
    assert resp.status_code == 403 and b"invite link" in resp.content
    assert client.get(reverse("annotation:study", args=[project.slug])).status_code == 403
    user = django_user_model.objects.get(pk=client.session["_auth_user_id"])
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    before = Assignment.objects.filter(project=project).count()
    resp = api.post(f"/api/projects/{project.slug}/next/")
    assert resp.status_code == 403 and "invite link" in resp.json()["detail"]
    assert Assignment.objects.filter(project=project).count() == before
    # through its invite link: in
    assert client.get(reverse("annotation:invite", args=[project.invite_token])).status_code == 302
    assert api.post(f"/api/projects/{project.slug}/next/").status_code == 200


def test_the_team_command_gives_a_project_made_by_a_command_its_owner(django_user_model):
    from django.core.management import CommandError, call_command

    project = services.create_project(
        name="From the CLI", slug="cli", task_type="sentence_label", config={"labels": ["pro", "con"]}
    )  # no maker: superusers only
    ada = django_user_model.objects.create_user("ada", password="pw-ada-12345")
    assert not access.can(ada, project)
    out = io.StringIO()
    call_command("team", "cli", "--add", "ada", "--role", "owner", stdout=out)
    assert "ada (owner)" in out.getvalue() and "member.add" in out.getvalue()
    assert access.role_of(django_user_model.objects.get(pk=ada.pk), project) == Role.OWNER
    with pytest.raises(CommandError) as refused:
        call_command("team", "cli", "--remove", "ada")  # the last owner
    assert refused.value.returncode == 2 and "last owner" in str(refused.value)
    with pytest.raises(CommandError, match="no project with slug 'nope'"):
        call_command("team", "nope")


def test_publishing_a_release_of_the_project_is_in_its_audit_log(study):
    release = build_release(
        "secret-answers", "2.0", kind="annotations", config={"project": "secret"}, creator=study["users"]["editor"]
    )
    entry = AuditEntry.objects.filter(project=study["project"], action="release.publish").latest("id")
    assert entry.user == study["users"]["editor"] and entry.detail["release"] == f"{release.name} 2.0"
