"""Researcher-set HTML goes through the one sanitiser (argora.html) on every path that writes it -- services, the
API, the admin's form, the studio's settings -- and again where it is shown, so rows stored raw before the sanitiser
existed (written here with a queryset ``.update()``) reach no page with a script: the HIT page, the instructions,
the consent and screened-out pages. Plain text a Researcher sets (the name, labels, items) is escaped; the
survey's questions and the training explanations are checked in tests/browser/test_xss.py."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import Group
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from annotation import phases
from annotation.models import Participation, Project, StudyPhases, Worker
from annotation.studio import services as studio
from argora.html import markdown_html
from argora.roles import RESEARCHER_GROUP
from tests.factories import ProjectFactory

pytestmark = pytest.mark.django_db

RUN = "window.__xss=1"
DIRTY = (
    f"<p>Mark <b>each</b> sentence.</p><img src=x onerror={RUN}><script>{RUN}</script>"
    f'<a href="javascript:{RUN}">link</a>"><svg onload={RUN}>'
)
CLEAN = '<p>Mark <b>each</b> sentence.</p><img src="x"><a rel="noopener noreferrer">link</a>"&gt;'
LABELS = [f'pro"><script>{RUN}</script>', f"con<img src=x onerror={RUN}>", "none"]


def injected(html: str) -> list[str]:
    """Tags of a page that could run script: an inline script without the response's nonce, an event handler, a
    ``javascript:`` URL."""
    bad = []
    for tag in re.findall(r"<[a-z][^>]*>", html, flags=re.IGNORECASE):
        names = re.sub(r"=\s*(\"[^\"]*\"|'[^']*')", "=", tag)  # the attribute names, without their (escaped) values
        if tag.startswith("<script") and "src=" not in tag and "nonce=" not in tag:
            bad.append(tag)
        elif re.search(r"\son[a-z]+\s*=", names, flags=re.IGNORECASE) or re.search(
            r"""(href|src|action)\s*=\s*["']?\s*javascript:""", tag, flags=re.IGNORECASE
        ):
            bad.append(tag)
    return bad


@pytest.fixture
def researcher(django_user_model):
    user = django_user_model.objects.create_user("researcher", password="pw-research-123")
    user.groups.add(Group.objects.get(name=RESEARCHER_GROUP))
    return user


def make_project(**extra) -> Project:
    return ProjectFactory(
        name=f"Study<script>{RUN}</script>",
        config={"labels": LABELS},
        guidelines=DIRTY,
        assignments_per_item=1,
        items_per_hit=2,
        text=f"Text {{i}}<img src=x onerror={RUN}>",
        topic=f"<script>{RUN}</script>",
        items=2,
        **extra,
    )


def test_services_store_guidelines_sanitised():
    project = make_project()
    assert project.guidelines == CLEAN and Project.objects.get(pk=project.pk).guidelines == CLEAN
    project.guidelines = DIRTY  # any later save (a command, a script) too
    project.save()
    assert Project.objects.get(pk=project.pk).guidelines == CLEAN


def test_the_api_stores_guidelines_sanitised(researcher):
    api = APIClient()
    api.force_authenticate(researcher)
    resp = api.post(
        reverse("api-annotation-projects"),
        {"name": "API study", "task_type": "sentence_label", "guidelines": DIRTY},
        format="json",
    )
    assert resp.status_code == 201, resp.content
    assert Project.objects.get(slug=resp.json()["slug"]).guidelines == CLEAN


def test_the_admin_form_stores_guidelines_sanitised(client, admin_user_obj):
    client.force_login(admin_user_obj)
    form = {
        "name": "Admin study",
        "slug": "admin-study",
        "task_type": "sentence_label",
        "guidelines": DIRTY,
        "config": '{"labels": ["pro", "con"]}',
        "assignments_per_item": 3,
        "items_per_hit": 5,
        "gold_rate": 0,
        "reward_cents": 0,
        "time_estimate_seconds": 0,
        "reservation_timeout_seconds": 1800,
        "gold_min_items": 3,
        "gold_min_accuracy": 0.7,
        "status": "draft",
    }
    resp = client.post("/admin/annotation/project/add/", form)
    assert resp.status_code == 302, resp.context["adminform"].form.errors if resp.context else resp
    project = Project.objects.get(slug="admin-study")
    assert project.guidelines == CLEAN
    resp = client.post(f"/admin/annotation/project/{project.pk}/change/", {**form, "guidelines": DIRTY + "<p>2</p>"})
    assert resp.status_code == 302
    assert Project.objects.get(pk=project.pk).guidelines == CLEAN + "<p>2</p>"
    page = client.get(f"/admin/annotation/project/{project.pk}/change/").content.decode()
    assert injected(page) == [] and "&lt;p&gt;Mark &lt;b&gt;each" in page  # the textarea shows the HTML, escaped


def test_the_studio_stores_guidelines_sanitised(client, admin_user_obj):
    project = make_project()
    client.force_login(admin_user_obj)
    markdown = f"# Read\n\n{DIRTY}\n\n[bad](javascript:{RUN})"
    data = {key: getattr(project, key) if getattr(project, key) is not None else "" for key in studio.SETTINGS_FIELDS}
    resp = client.post(reverse("annotation:studio-settings", args=[project.slug]), {**data, "guidelines": markdown})
    assert resp.status_code == 302
    project.refresh_from_db()
    assert project.guidelines == markdown_html(markdown) and project.guidelines.startswith("<h1>Read</h1>")
    assert injected(project.guidelines) == [] and project.engine[studio.GUIDELINES_KEY] == markdown
    preview = client.post(reverse("annotation:studio-guidelines-preview"), {"guidelines": markdown}).json()["html"]
    assert preview == project.guidelines
    page = client.get(reverse("annotation:studio-settings", args=[project.slug])).content.decode()
    assert injected(page) == [] and "<h1>Read</h1>" in page


def test_rows_stored_raw_before_the_fix_are_cleaned_where_they_are_shown(client):
    project = make_project()
    Project.objects.filter(pk=project.pk).update(guidelines=DIRTY)  # as an older version stored it
    invite = reverse("annotation:invite", args=[project.invite_token])
    assert client.get(invite).status_code == 302
    for url in (
        reverse("annotation:work", args=[project.slug]),
        reverse("annotation:instructions", args=[project.slug]),
    ):
        html = client.get(url).content.decode()
        assert CLEAN in html and injected(html) == [], url
        assert f"Study&lt;script&gt;{RUN}&lt;/script&gt;" in html  # the name: plain text, escaped
    hit = client.get(reverse("annotation:work", args=[project.slug])).content.decode()
    assert f'value="pro&quot;&gt;&lt;script&gt;{RUN}&lt;/script&gt;"' in hit  # a label cannot break its attribute
    assert f"Text 0&lt;img src=x onerror={RUN}&gt;" in hit and f"&lt;script&gt;{RUN}&lt;/script&gt;" in hit


def test_phase_texts_stored_raw_are_cleaned_on_the_consent_and_screened_out_pages(client):
    project = make_project(gold_min_items=0)
    phases.configure(project, {"consent_required": True, "consent_text": "# Consent\n\nYes."})
    StudyPhases.objects.filter(project=project).update(
        consent_text=f"# Consent\n\n{DIRTY}", screened_out_message=f"Sorry.\n\n{DIRTY}"
    )
    client.get(reverse("annotation:invite", args=[project.invite_token]))
    consent = client.get(reverse("annotation:study-step", args=[project.slug, "consent"])).content.decode()
    assert "<h1>Consent</h1>" in consent and "<b>each</b>" in consent and injected(consent) == []
    worker = Worker.objects.get(source=Worker.Source.INVITE)
    Participation.objects.create(project=project, worker=worker, screened_out_at=timezone.now())
    out = client.get(reverse("annotation:study-step", args=[project.slug, "screened-out"])).content.decode()
    assert "<p>Sorry.</p>" in out and "<b>each</b>" in out and injected(out) == []
