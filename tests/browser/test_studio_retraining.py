"""The retraining panel as a researcher uses it: the project page says a retrain was refused over the row budget and
why; the retraining page refuses a bad value on its field, saves a higher budget, and the project page shows it.
axe-core runs on every page loaded (tests/browser/conftest.py); screenshots at 1366x768 and 390x844, no horizontal
scroll on a phone."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.conf import settings
from playwright.sync_api import expect

from annotation import services
from ml import loop
from ml.models import RetrainAttempt

from .conftest import staff_screenshot
from .test_dashboard import login

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_researcher_sees_a_refused_retrain_and_raises_the_budget(live_server, page, django_user_model):
    owner = django_user_model.objects.create_user("ada", "ada@uni.example", "pw-ada-12345", is_staff=True)
    project = services.create_project(
        name="Aspects of nuclear energy",
        slug="nuclear",
        task_type="aspect",
        engine={"retrain_every": 6, "retrain_max_rows": 100},
        created_by=owner,
    )
    loop.record_attempt(
        project,
        "ranker",
        state=RetrainAttempt.State.REFUSED,
        n_labels=6,
        new_labels=6,
        rows=240,
        reason="240 rows from 6 labels exceed the budget of 100 rows (retrain_max_rows): not trained",
    )
    login(page, live_server, "ada", "pw-ada-12345", f"/studio/projects/{project.slug}/")
    panel = page.locator("#retraining")
    expect(panel).to_contain_text("Every 6 new human labels")
    expect(panel).to_contain_text("at most 100 rows")
    expect(panel.locator('tr[data-kind="ranker"]')).to_contain_text("refused")
    expect(panel.locator('tr[data-kind="ranker"]')).to_contain_text("exceed the budget of 100 rows")
    staff_screenshot(page, "retraining-project-1366")

    page.locator("#retraining-link").click()
    expect(page).to_have_url(re.compile(rf"/studio/projects/{project.slug}/retraining/$"))
    page.fill("#id_retrain_max_rows", "-5")
    page.locator("#retraining-save").click()
    expect(page.locator("#retrain_max_rows-errors")).to_be_visible()
    page.fill("#id_retrain_max_rows", "5000")
    page.locator("#retraining-save").click()
    expect(page.locator("#retrain-budget")).to_contain_text("at most 5000 rows")
    staff_screenshot(page, "retraining-1366")
    page.set_viewport_size({"width": 390, "height": 844})
    shot = Path(settings.VAR_DIR) / "screenshots" / "retraining-390.png"
    page.screenshot(path=str(shot), full_page=True)
    overflow = page.evaluate("() => document.scrollingElement.scrollWidth - document.scrollingElement.clientWidth")
    assert overflow <= 0, f"the retraining page is {overflow}px wider than a 390px phone"
    page.goto(f"{live_server.url}/studio/projects/{project.slug}/")
    expect(page.locator("#retrain-budget")).to_contain_text("at most 5000 rows")
    project.refresh_from_db()
    assert project.engine["retrain_max_rows"] == 5000 and "retrain_max_rows" not in project.config
