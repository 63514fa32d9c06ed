"""The team page as its owner uses it: add a colleague as viewer, make them editor, see it all in the audit log;
the colleague sees the project, the outsider does not. Screenshots at 1366x768 and 390x844; axe-core finds no
serious or critical violation on the team page and the project page."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from axe_playwright_python.sync_playwright import Axe
from django.conf import settings
from playwright.sync_api import expect

from annotation import access, services
from annotation.models import ProjectMember

from .conftest import staff_screenshot
from .test_dashboard import login as dashboard_login

pytestmark = pytest.mark.django_db(transaction=True)


def login(page, live_server, username: str, password: str, next_url: str) -> None:
    page.context.clear_cookies()  # the next user, in the same browser
    dashboard_login(page, live_server, username, password, next_url)
    page.wait_for_load_state()


def serious(page) -> list[str]:
    results = Axe().run(page)
    return [
        f"{v['id']}: {v['help']} ({len(v['nodes'])})"
        for v in results.response["violations"]
        if v.get("impact") in ("serious", "critical")
    ]


def test_an_owner_builds_the_team_and_reads_the_audit_log(live_server, page, django_user_model):
    owner = django_user_model.objects.create_user("ada", "ada@uni.example", "pw-ada-12345", is_staff=True)
    django_user_model.objects.create_user("grace", "grace@uni.example", "pw-grace-12345", is_staff=True)
    django_user_model.objects.create_user("eve", "eve@uni.example", "pw-eve-12345", is_staff=True)
    project = services.create_project(
        name="Stance of minimum-wage arguments",
        slug="wage",
        task_type="sentence_label",
        config={"labels": ["pro", "con"]},
        created_by=owner,
    )
    team_url = f"/studio/projects/{project.slug}/team/"
    login(page, live_server, "ada", "pw-ada-12345", f"/studio/projects/{project.slug}/")
    page.locator("#team-link").click()
    expect(page).to_have_url(re.compile(rf"{team_url}$"))
    page.fill("#new-user", "grace")
    page.select_option("#new-role", "viewer")
    page.locator("#add-member button[type=submit]").click()
    row = page.locator('#members tr[data-user="grace"]')
    expect(row).to_contain_text("Viewer")
    row.locator("select").select_option("editor")
    row.locator("button[value=set]").click()
    expect(page.locator('#members tr[data-user="grace"]')).to_contain_text("Editor")
    page.fill("#new-user", "nobody")
    page.locator("#add-member button[type=submit]").click()
    expect(page.locator("#team-error")).to_contain_text("user: no active account named 'nobody'")
    expect(page.locator("#audit-log")).to_contain_text("member.role")
    expect(page.locator("#audit-log")).to_contain_text("viewer → editor")
    assert access.role_of(django_user_model.objects.get(username="grace"), project) == ProjectMember.Role.EDITOR
    assert serious(page) == []
    staff_screenshot(page, "team-1366")
    page.set_viewport_size({"width": 390, "height": 844})
    shot = Path(settings.VAR_DIR) / "screenshots" / "team-390.png"
    page.screenshot(path=str(shot), full_page=True)
    overflow = page.evaluate("() => document.scrollingElement.scrollWidth - document.scrollingElement.clientWidth")
    assert overflow <= 0, f"the team page is {overflow}px wider than a 390px phone"
    page.set_viewport_size({"width": 1366, "height": 768})

    page.goto(f"{live_server.url}/studio/projects/{project.slug}/")
    expect(page.locator("#audit-log")).to_contain_text("member.add")
    assert serious(page) == []

    login(page, live_server, "grace", "pw-grace-12345", "/studio/")
    expect(page.locator("main")).to_contain_text("Stance of minimum-wage arguments")
    login(page, live_server, "eve", "pw-eve-12345", f"/studio/projects/{project.slug}/")
    assert "Stance of minimum-wage arguments" not in page.content()
