"""The Content-Security-Policy (django-csp, argora/settings.py): on every kind of response -- an HTML page, the JSON
API, a 404, a 400, the admin, a static file from WhiteNoise, the API docs and their script -- with scripts from this
origin or the response's nonce only; MTurk's ExternalQuestion pages may be framed by MTurk and post to it, no other
page may be framed; and every inline ``<script>`` of the templates carries the nonce (no inline handler, no
``javascript:`` URL anywhere), so the policy breaks none of our own scripts."""

from __future__ import annotations

import re
import runpy
from pathlib import Path

import pytest
from csp.utils import build_policy, default_config
from django.test import Client
from django.utils import timezone

from mturk.models import MTurkHIT
from tests.mturk.conftest import make_project

ROOT = Path(__file__).resolve().parents[1]
MTURK = ("https://www.mturk.com", "https://workersandbox.mturk.com")


def policy(response) -> dict[str, list[str]]:
    header = response.headers.get("Content-Security-Policy")
    assert header, f"{response.status_code} {response.get('Content-Type')}: no Content-Security-Policy"
    directives = [part.split() for part in header.split(";") if part.strip()]
    return {d[0]: d[1:] for d in directives}


def assert_strict(response) -> dict[str, list[str]]:
    p = policy(response)
    assert p["default-src"] == ["'self'"]
    assert p["script-src"][0] == "'self'" and all(s.startswith("'nonce-") for s in p["script-src"][1:])
    assert p["object-src"] == ["'none'"] and p["base-uri"] == ["'none'"]
    assert p["frame-ancestors"] == ["'none'"] and p["form-action"] == ["'self'"]
    return p


@pytest.mark.django_db
def test_every_kind_of_response_carries_the_strict_policy(admin_user_obj, settings):
    settings.WHITENOISE_USE_FINDERS = True  # WhiteNoise serves the static files without collectstatic
    anonymous = Client()
    responses = {
        "page": anonymous.get("/"),
        "api": anonymous.get("/api/projects/"),
        "api 404": anonymous.get("/api/no-such-thing/"),
        "404": anonymous.get("/no-such-page/"),
        "400": anonymous.get("/?q=%00"),
        "login": anonymous.get("/admin/login/"),
        "static": anonymous.get("/static/argora/argora.css"),
        "docs": anonymous.get("/api/docs/"),
        "docs script": anonymous.get("/api/docs/?script="),
        "schema": anonymous.get("/api/schema/"),
    }
    staff = Client()
    staff.force_login(admin_user_obj)
    responses["admin"] = staff.get("/admin/annotation/project/add/")
    statuses = {name: r.status_code for name, r in responses.items()}
    assert statuses == {
        "page": 200,
        "api": statuses["api"],
        "api 404": 404,
        "404": 404,
        "400": 400,
        "login": 200,
        "static": 200,
        "docs": 200,
        "docs script": 200,
        "schema": 200,
        "admin": 200,
    }
    assert statuses["api"] in (401, 403) and responses["api"]["Content-Type"] == "application/json"
    assert responses["static"]["Content-Type"].startswith("text/css")
    assert responses["docs script"]["Content-Type"] == "application/javascript"
    for _name, response in responses.items():
        assert_strict(response)
    # the docs page has no inline script: Swagger UI starts from /api/docs/?script= (same origin)
    docs = responses["docs"].content.decode()
    assert re.findall(r"<script(?![^>]*\bsrc=)", docs) == [] and 'src="/api/docs/?script=' in docs


@pytest.mark.django_db
def test_an_inline_script_runs_only_with_the_nonce_of_its_own_response(admin_user_obj):
    staff = Client()
    staff.force_login(admin_user_obj)
    nonces = []
    for _ in range(2):
        response = staff.get("/studio/new/")  # a page with an inline script
        assert response.status_code == 200
        (nonce,) = [s for s in assert_strict(response)["script-src"] if s.startswith("'nonce-")]
        html = response.content.decode()
        inline = re.findall(r"<script(?![^>]*\b(?:src=|type=\"application/json\"))([^>]*)>", html)  # json_script: data
        assert inline and all(f'nonce="{nonce[7:-1]}"' in attrs for attrs in inline), (nonce, inline)
        nonces.append(nonce)
    assert nonces[0] != nonces[1]
    # a page without an inline script names no nonce at all
    assert policy(staff.get("/jobs/"))["script-src"] == ["'self'"]


@pytest.mark.django_db
def test_only_the_mturk_pages_may_be_framed_and_only_by_mturk():
    project = make_project(hits=1, r=2)
    MTurkHIT.objects.create(
        project=project,
        hit=project.hits.get(),
        mturk_hit_id="3CSPHIT",
        reward_cents=26,
        max_assignments=2,
        created_at=timezone.now(),
    )
    c = Client()
    preview = c.get(f"/mturk/external/{project.slug}/?assignmentId=ASSIGNMENT_ID_NOT_AVAILABLE&hitId=3CSPHIT")
    accepted = c.get(
        f"/mturk/external/{project.slug}/?assignmentId=3CSPASSIGN&hitId=3CSPHIT&workerId=AWORKER"
        f"&turkSubmitTo=https://workersandbox.mturk.com"
    )
    for response in (preview, accepted):
        assert response.status_code == 200 and "X-Frame-Options" not in response.headers
        p = policy(response)
        assert p["frame-ancestors"] == list(MTURK)
        assert p["form-action"] == ["'self'", *MTURK]  # the hand-off posts to turkSubmitTo/mturk/externalSubmit
        assert p["script-src"][0] == "'self'" and p["object-src"] == ["'none'"] and p["base-uri"] == ["'none'"]
    assert_strict(c.get(f"/invite/{project.invite_token}/", follow=True))  # the same study outside MTurk


def test_an_operator_adds_image_sources_and_a_report_uri(monkeypatch):
    monkeypatch.setenv("ARGORA_CSP_IMG_SRC", "https://images.example.org, https://cdn.example.org")
    monkeypatch.setenv("ARGORA_CSP_REPORT_URI", "https://csp.example.org/report")
    configured = runpy.run_path(str(ROOT / "argora" / "settings.py"))["CONTENT_SECURITY_POLICY"]["DIRECTIVES"]
    header = build_policy(config=default_config(configured))
    p = {d.split()[0]: d.split()[1:] for d in header.split("; ")}
    assert p["img-src"] == ["'self'", "data:", "https://images.example.org", "https://cdn.example.org"]
    assert p["report-uri"] == ["https://csp.example.org/report"] and p["script-src"] == ["'self'"]


def template_files() -> list[Path]:
    folders = [
        ROOT / "templates",
        *ROOT.glob("*/templates"),
        *ROOT.glob("annotation/task_types/*/templates"),
        ROOT / "tests" / "fixtures",
    ]
    return sorted(p for folder in folders for p in folder.rglob("*.html"))


def test_every_inline_script_of_the_templates_has_the_nonce_and_no_inline_handler_exists():
    files = template_files()
    assert len(files) > 50
    problems = []
    for path in files:
        text = path.read_text(encoding="utf-8")
        for tag in re.findall(r"<script\b[^>]*>", text):
            if "src=" not in tag and 'nonce="{{ request.csp_nonce }}"' not in tag and "application/json" not in tag:
                problems.append(f"{path.relative_to(ROOT)}: {tag} without the nonce")
        for handler in re.findall(r"<[a-z][^>]*\son[a-z]+\s*=[^>]*>", text, flags=re.IGNORECASE):
            problems.append(f"{path.relative_to(ROOT)}: inline event handler {handler}")
        if re.search(r"""(?:href|src|action)\s*=\s*["']?\s*javascript:""", text, flags=re.IGNORECASE):
            problems.append(f"{path.relative_to(ROOT)}: a javascript: URL")
    assert problems == []
