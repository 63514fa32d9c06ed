"""The studio's Release page and the admin's release pages in a real browser: axe-core finds no serious or critical
violation (labels on every input, links told apart from text not only by colour) at 1366x768 and 390x844, and the
Release page fits a phone."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.conf import settings
from playwright.sync_api import expect

from annotation import services, teams
from annotation.models import ProjectMember
from corpus.models import Sentence, Topic
from corpus.releases import build_release

from .conftest import staff_screenshot
from .test_team_page import login, serious

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_release_page_and_the_admin_release_pages_pass_axe(live_server, page, django_user_model, tmp_artifacts):
    owner = django_user_model.objects.create_user("ada", "ada@uni.example", "pw-ada-12345", is_staff=True)
    root = django_user_model.objects.create_superuser("root", "root@uni.example", "pw-root-12345")
    project = services.create_project(
        name="Stance pilot",
        slug="pilot",
        task_type="sentence_label",
        config={"labels": ["pro", "con"]},
        created_by=owner,
    )
    services.add_items(project, [{"text": "Wind is cheap.", "topic": "energy"}])
    teams.add_member(project, "ada", ProjectMember.Role.OWNER, by=root)
    release = build_release(
        "pilot",
        "1.0",
        kind="annotations",
        config={"project": "pilot"},
        card={"license": "CC-BY-4.0", "citation": "@misc{p}"},
    )
    topic = Topic.objects.create(name="energy")
    Sentence.objects.create(topic=topic, text="Wind is cheap.", stance="pro", content_hash="h1")

    login(page, live_server, "ada", "pw-ada-12345", f"/studio/projects/{project.slug}/")
    page.locator("#release-link").click()
    expect(page.locator(f"#release-{release.pk}")).to_contain_text("annotations.jsonl")
    expect(page.locator("#id_kind_annotations")).to_be_checked()
    assert serious(page) == []
    staff_screenshot(page, "release-1366")
    page.set_viewport_size({"width": 390, "height": 844})
    page.screenshot(path=str(Path(settings.VAR_DIR) / "screenshots" / "release-390.png"), full_page=True)
    overflow = page.evaluate("() => document.scrollingElement.scrollWidth - document.scrollingElement.clientWidth")
    assert overflow <= 0, f"the release page is {overflow}px wider than a 390px phone"
    assert serious(page) == []
    page.set_viewport_size({"width": 1366, "height": 768})
    page.fill("#id_version", "1 0")
    page.locator("#publish-release").click()
    expect(page.locator("#version-errors")).to_contain_text("is not a valid release version")
    assert serious(page) == []

    login(page, live_server, "root", "pw-root-12345", "/admin/corpus/release/")
    found = {}
    for url in ("/admin/corpus/release/", f"/admin/corpus/release/{release.pk}/change/"):
        page.goto(f"{live_server.url}{url}")
        found[url] = serious(page)
    page.goto(f"{live_server.url}/admin/corpus/topic/")
    page.locator(f'input[name="_selected_action"][value="{topic.pk}"]').check()
    page.select_option('select[name="action"]', "publish_sentence_release")
    page.locator('button[name="index"]').click()
    expect(page.locator("h1")).to_contain_text("Publish a sentence release")
    found["publish form"] = serious(page)
    page.fill("#id_release_name", "energy")
    page.fill("#id_release_version", "1.0")
    page.select_option("#id_split_mode", "in-topic")
    page.locator('input[type="submit"][value="Publish"]').click()  # refused: the sizes are missing
    expect(page.locator(".errorlist").first).to_contain_text("required for an in-topic split")
    found["publish form with errors"] = serious(page)
    assert found == {url: [] for url in found}
