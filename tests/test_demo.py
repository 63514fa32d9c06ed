"""`manage.py load_demo` (idempotent demo corpus + accounts) and `manage.py run_demo --smoke` (gunicorn + worker)."""

from __future__ import annotations

import io
import random
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from django.apps import apps
from django.core.management import call_command

ROOT = Path(__file__).resolve().parent.parent


def row_counts() -> dict[str, int]:
    return {model._meta.label: model.objects.count() for model in apps.get_models()}


@pytest.mark.django_db
def test_load_demo_twice_adds_nothing_the_second_time_and_creates_accounts(monkeypatch, django_user_model):
    from corpus.models import DebateNode, DebateTree, FactVariable, Sentence, Topic

    monkeypatch.delenv("ARGORA_DEMO_PASSWORD", raising=False)
    out = io.StringIO()
    call_command("load_demo", stdout=out)
    first = row_counts()
    assert Topic.objects.count() == 8
    assert Sentence.objects.filter(source="argora-demo").count() == 40
    assert set(Sentence.objects.values_list("stance", flat=True)) == {"pro", "con", "none"}
    assert FactVariable.objects.count() >= 8
    tree = DebateTree.objects.get()
    assert tree.topic.name == "school uniforms"
    see = DebateNode.objects.get(tree=tree, reference_path="1.1")
    assert see.text == DebateNode.objects.get(tree=tree, path="1.1").text

    users = {u.username: u for u in django_user_model.objects.all()}
    assert users["admin"].is_superuser and users["admin"].is_staff
    assert users["expert"].is_staff and not users["expert"].is_superuser
    # the expert is a Researcher: the studio's permissions, and an admin that shows them something
    assert users["expert"].groups.filter(name="Researcher").exists()
    assert users["expert"].has_perms(
        [
            "annotation.add_project",
            "annotation.change_project",
            "corpus.add_release",
            "corpus.view_sentence",
            "ml.view_modelversion",
        ]
    )
    assert not users["expert"].has_perm("auth.change_user")
    for name in ("worker1", "worker2"):
        assert not users[name].is_staff and not users[name].is_superuser
    assert users["admin"].check_password("argora-admin")
    assert users["expert"].check_password("argora-expert")
    assert users["worker1"].check_password("argora-worker")
    assert "argora-admin" in out.getvalue() and "worker2" in out.getvalue()

    out2 = io.StringIO()
    call_command("load_demo", stdout=out2)
    assert row_counts() == first
    assert "created nothing" in out2.getvalue()


@pytest.mark.django_db
def test_the_demo_expert_sees_the_studio_models_in_the_admin(client):
    call_command("load_demo", stdout=io.StringIO())
    client.login(username="expert", password="argora-expert")
    html = client.get("/admin/").content.decode()
    assert "have permission to view or edit anything" not in html
    for name in ("Projects", "Sentences", "Releases", "Model versions"):
        assert name in html, name
    assert "Users" not in html  # not a superuser


@pytest.mark.django_db
def test_demo_password_from_environment(monkeypatch, django_user_model):
    monkeypatch.setenv("ARGORA_DEMO_PASSWORD", "s3cret-demo-pw")
    call_command("load_demo", stdout=io.StringIO())
    for name in ("admin", "expert", "worker1", "worker2"):
        assert django_user_model.objects.get(username=name).check_password("s3cret-demo-pw")


@pytest.mark.django_db
def test_load_demo_calls_app_demo_hooks(monkeypatch):
    from argora.management.commands import load_demo

    called = []
    monkeypatch.setattr(load_demo, "run_app_demo_hooks", lambda stdout: called.append(stdout) or ["fake"])
    out = io.StringIO()
    call_command("load_demo", stdout=out)
    assert len(called) == 1
    assert "Demo data from apps: fake" in out.getvalue()


@pytest.mark.django_db
def test_run_demo_ends_its_start_up_output_with_full_invite_urls_and_the_logins(client):
    from annotation.models import Project
    from argora.management.commands.run_demo import Command

    call_command("load_demo", stdout=io.StringIO())
    out = io.StringIO()
    Command(stdout=out)._banner("http://127.0.0.1:8123")  # what run_demo prints once the server and worker answer
    text = out.getvalue()
    lines = text.splitlines()
    invites = [line.split()[0] for line in lines if "/invite/" in line]
    active = Project.objects.filter(status=Project.Status.ACTIVE)
    assert len(active) >= 2
    assert sorted(invites) == sorted(f"http://127.0.0.1:8123/invite/{p.invite_token}/" for p in active)
    assert invites[0] == f"http://127.0.0.1:8123/invite/{Project.objects.get(slug='demo-stance').invite_token}/"
    # at the end: the invite links, then the logins, then how to stop
    assert text.index("Invite links") < text.index("Logins") < text.index("argora-expert") < text.index("Ctrl-C")
    assert lines[-1] == "Press Ctrl-C to stop."
    for url in invites:  # each one opens its study for a new worker
        resp = client.get(url.removeprefix("http://127.0.0.1:8123"))
        assert resp.status_code == 302, url
        assert "/invite/" not in resp["Location"], resp["Location"]
        client.logout()


def free_port() -> int:
    """A free port in 18400-18499 (random start), else any free port."""
    start = random.randrange(100)
    for i in range(100):
        port = 18400 + (start + i) % 100
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.slow
@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_run_demo_smoke_serves_pages_admin_css_and_worker(tmp_path):
    from tests.worker_utils import subprocess_env

    port = free_port()
    proc = subprocess.run(
        [sys.executable, "manage.py", "run_demo", "--smoke", "--port", str(port), "--web-workers", "2"],
        cwd=ROOT,
        env=subprocess_env(ARGORA_STATIC_ROOT=str(tmp_path / "static")),
        capture_output=True,
        text=True,
        timeout=300,
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output
    assert "answered argora.ping" in output
    assert "/static/admin/css/base.css: 200 text/css" in output
    assert "Smoke test passed" in output
    assert (tmp_path / "static" / "admin" / "css" / "base.css").exists()  # collectstatic ran
    with socket.socket() as sock:  # everything stopped: nothing listens on the port any more
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # TIME_WAIT of the smoke requests is fine
        sock.bind(("127.0.0.1", port))


@pytest.mark.slow
@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_run_demo_smoke_fails_with_reason_when_port_is_taken():
    from tests.worker_utils import subprocess_env

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", free_port()))
        busy.listen()
        port = busy.getsockname()[1]
        proc = subprocess.run(
            [sys.executable, "manage.py", "run_demo", "--smoke", "--port", str(port)],
            cwd=ROOT,
            env=subprocess_env(),
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert proc.returncode == 1
    assert f"port {port}" in proc.stderr and "in use" in proc.stderr


@pytest.mark.django_db(transaction=True)
def test_the_researcher_role_survives_a_flush():
    """Transactional tests (and `manage.py flush`) empty every table; post_migrate gives the role back its rights."""
    from django.apps import apps as django_apps
    from django.contrib.auth.models import Group

    call_command("flush", interactive=False, verbosity=0)
    granted = set(Group.objects.get(name="Researcher").permissions.values_list("content_type__app_label", "codename"))
    wanted = {
        (config.label, codename)
        for config in django_apps.get_app_configs()
        for codename in getattr(config, "researcher_permissions", ())
    }
    assert wanted and granted == wanted
