"""Platform hardening (issue 22): a hung cache does not hang or fail a submission (item 7); the local secret key is
made once, privately, whatever the number of processes starting at once (item 8); HTTPS settings come from the
environment and ``check --deploy`` is clean with them."""

from __future__ import annotations

import os
import runpy
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import global_settings
from django.core.cache import caches
from django.test import override_settings
from rest_framework.test import APIClient

from annotation import services

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.django_db(transaction=True)
def test_a_hung_cache_does_not_fail_a_submission(hung_redis, django_user_model, django_capture_on_commit_callbacks):
    from argora.settings import cache_settings

    hung = cache_settings(hung_redis)  # what CACHE_URL=redis://... gives in production
    project = services.create_project(
        name="Hung", task_type="sentence_label", status="active", items_per_hit=2, config={"labels": ["pro", "con"]}
    )
    services.add_items(project, [{"text": f"s{i}", "topic": "t"} for i in range(2)])
    services.build_hits(project)
    user = django_user_model.objects.create_user("w")
    api = APIClient()
    api.force_authenticate(user)
    with override_settings(CACHES=hung):
        # the cache itself cannot answer: a read is a miss, a lock raises (argora.budget) ...
        assert caches["default"].get("probe", "miss") == "miss"
        with pytest.raises(Exception):  # noqa: B017 - whatever the hung cache client raises
            caches["default"].add("probe", 1)
        body = api.post(f"/api/projects/{project.slug}/next/").json()
        r = api.post(
            f"/api/assignments/{body['assignment']}/submit/",
            {"responses": {str(i["id"]): {"label": "pro"} for i in body["items"]}},
            format="json",
        )
    assert r.status_code == 200 and r.json()["status"] == "submitted"  # ... the submission does not


def test_the_local_secret_key_is_made_once_and_private(tmp_path):
    """Six processes start at once on a fresh var/ folder: one key, readable by its owner only."""
    code = "import os, sys; sys.path.insert(0, os.getcwd()); from argora import settings; print(settings.SECRET_KEY)"
    env = {**os.environ, "ARGORA_VAR_DIR": str(tmp_path)}
    env.pop("DJANGO_SECRET_KEY", None)
    procs = [
        subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True)
        for _ in range(6)
    ]
    keys = {p.communicate(timeout=120)[0].strip() for p in procs}
    assert len(keys) == 1 and len(keys.pop()) >= 50
    mode = stat.S_IMODE((tmp_path / "secret_key").stat().st_mode)
    assert mode == 0o600, oct(mode)
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".secret_key")] == []


def test_check_deploy_is_clean_with_the_documented_production_settings(tmp_path):
    env = {
        **os.environ,
        "ARGORA_VAR_DIR": str(tmp_path),
        "DJANGO_DEBUG": "0",
        "DJANGO_HTTPS": "1",
        "DJANGO_SECURE_PROXY_SSL_HEADER": "1",
        "DJANGO_SECURE_HSTS_PRELOAD": "1",
        "DJANGO_SECRET_KEY": "k" * 20 + "-production-secret-" + "x" * 30,
        "DJANGO_ALLOWED_HOSTS": "argora.example.org",
        "DJANGO_CSRF_TRUSTED_ORIGINS": "https://argora.example.org",
    }
    env.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)  # the test suite's own setting (Playwright), never a deployment's
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


@pytest.fixture
def staff_api(staff_user):
    api = APIClient()
    api.force_authenticate(staff_user)
    return api


@pytest.mark.django_db
def test_nul_bytes_and_deep_bodies_are_400s_not_server_errors(staff_api, client):
    """PostgreSQL refuses NUL in text (it was a 500 there); a 10,000-deep JSON body was a RecursionError."""
    for path in ("/api/sentences/?topic=%00", "/api/facts/?search=a%00b", "/api/debates/?topic=x%00"):
        r = staff_api.get(path)
        assert r.status_code == 400 and "NUL" in str(r.json()), (path, r.content)
    r = staff_api.post("/api/topics/", {"name": "Nuclear\x00energy"}, format="json")
    assert r.status_code == 400 and r.json() == {"errors": {"body": "contains a NUL character"}}
    deep = "[" * 10000 + "]" * 10000
    r = staff_api.post("/api/topics/", deep, content_type="application/json")
    assert r.status_code == 400 and "nested deeper than 64 levels" in r.json()["errors"]["body"]
    r = staff_api.post("/api/assignments/1/submit/", "{not json", content_type="application/json")
    assert r.status_code == 400 and set(r.json()) == {"errors"}  # the documented 400 body of submit
    assert client.post("/accounts/login/", {"username": "a\x00", "password": "x"}).status_code == 400


@pytest.mark.django_db
def test_unknown_api_paths_answer_json(staff_api):
    r = staff_api.get("/api/no-such-thing/")
    assert r.status_code == 404 and r["Content-Type"].startswith("application/json")


@pytest.mark.django_db
def test_job_ids_that_celery_never_makes_are_404s(staff_api, staff_user, client):
    """Schemathesis sent a job id of Thai text and spaces: it reached the cache as a key memcached would refuse."""
    for bad in ("ก ำกำ", "a b", "-x", "x" * 256):
        r = staff_api.get(f"/api/jobs/{bad}/")
        assert r.status_code == 404 and r["Content-Type"].startswith("application/json"), bad
    client.force_login(staff_user)
    assert client.get("/jobs/a b/").status_code == 404
    for good in ("0b6f8e5c-6c35-4c55-9d3e-6a1d2f0f4d11", "0b6f8e5c-6c35-4c55-9d3e-6a1d2f0f4d11:ranker"):
        r = staff_api.get(f"/api/jobs/{good}/")
        assert r.status_code == 200 and r.json()["id"] == good and r.json()["state"] == "PENDING"
        assert client.get(f"/jobs/{good}/").status_code == 200


def test_password_hashers_are_django_s_unless_the_operator_lists_others(monkeypatch):
    """``ARGORA_PASSWORD_HASHERS``: unset, Django's own list (PBKDF2 first, 1,000,000 rounds); set, the operator's,
    whose first hashes new passwords. (The suite sets it for itself: tests/conftest.py.)"""
    monkeypatch.delenv("ARGORA_PASSWORD_HASHERS", raising=False)
    unset = runpy.run_path(str(ROOT / "argora" / "settings.py"))
    assert "PASSWORD_HASHERS" not in unset  # Django's default applies
    assert global_settings.PASSWORD_HASHERS[0] == "django.contrib.auth.hashers.PBKDF2PasswordHasher"
    monkeypatch.setenv(
        "ARGORA_PASSWORD_HASHERS",
        " django.contrib.auth.hashers.ScryptPasswordHasher, django.contrib.auth.hashers.PBKDF2PasswordHasher ",
    )
    chosen = runpy.run_path(str(ROOT / "argora" / "settings.py"))["PASSWORD_HASHERS"]
    assert chosen == [
        "django.contrib.auth.hashers.ScryptPasswordHasher",
        "django.contrib.auth.hashers.PBKDF2PasswordHasher",
    ]


@pytest.mark.django_db
def test_a_server_the_suite_starts_checks_the_passwords_the_suite_hashed(django_user_model):
    """The test process and the processes it starts hash and check with the same hashers (tests/conftest.py), so a
    user made here logs in on a gunicorn or manage.py of the test."""
    user = django_user_model.objects.create_user("hash-check", password="pw-hash-check-1")
    assert user.password.startswith("md5$")
    code = (
        "import django, sys; django.setup(); from django.contrib.auth.hashers import check_password; "
        "sys.exit(0 if check_password(sys.argv[1], sys.argv[2]) else 1)"
    )
    env = dict(os.environ, DJANGO_SETTINGS_MODULE="argora.settings")
    done = subprocess.run([sys.executable, "-c", code, "pw-hash-check-1", user.password], env=env, cwd=ROOT)
    assert done.returncode == 0
