"""The Prolific staff panel in headless Chromium at 1366x768 with a study, submissions, a bonus and the call log in it:
it fits the window (no horizontal scroll), is saved as a screenshot, and a button (pause) works through the page."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.conf import settings
from playwright.sync_api import expect

from prolific import publishing, sync
from tests.browser.conftest import staff_screenshot
from tests.prolific.conftest import STUDY_ID, fake, make_project  # noqa: F401  (fake: the fake Prolific API fixture)
from tests.prolific.test_sync import participant, pid, sid


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_the_panel_fits_1366_px_and_pauses_the_study(live_server, page, fake, staff_user):  # noqa: F811
    project = make_project()
    publishing.publish(project)
    for n in (1, 2, 3):
        participant(project, n, submit=n != 3)
        fake.add_submission(pid(n), sid(n), status="AWAITING REVIEW" if n != 3 else "RETURNED")
    fake.add_submission(pid(4), sid(4), status="ACTIVE")
    sync.sync_project(project)
    sync.grant_bonus(project, sid(1), 40, "very clear free-text feedback on the ambiguous sentences")

    page.goto(f"{live_server.url}/accounts/login/?next=/prolific/projects/{project.slug}/")
    page.fill("input[name=username]", "expert")
    page.fill("input[name=password]", "pw-expert-123")
    page.click("button[type=submit]")
    expect(page.locator("#prolific-status")).to_have_text("ACTIVE")
    expect(page.locator("#prolific-submissions tbody tr")).to_have_count(4)
    expect(page.locator("#cost-preview")).to_contain_text("total with Prolific's fees and VAT: £21.00")
    expect(page.locator("#prolific-bonuses")).to_contain_text("£0.40")
    staff_screenshot(page, "prolific-panel")
    page.screenshot(path=str(Path(settings.VAR_DIR) / "screenshots" / "prolific-panel-full.png"), full_page=True)

    page.locator("#prolific-settings-card summary").click()  # the settings form, opened, fits too
    expect(page.locator("#id_rejection_message")).to_be_visible()
    page.locator("#prolific-settings-card").scroll_into_view_if_needed()
    staff_screenshot(page, "prolific-panel-settings")

    page.get_by_role("button", name="Pause").click()
    expect(page.locator(".messages")).to_contain_text("study paused (PAUSED)")
    expect(page.locator("#prolific-status")).to_have_text("PAUSED")
    assert fake.studies[STUDY_ID]["status"] == "PAUSED"
    staff_screenshot(page, "prolific-panel-paused")
