"""A Prolific participant's whole journey in headless Chromium: the study link (PROLIFIC_PID, STUDY_ID, SESSION_ID)
-> consent -> instructions -> training with explanations -> qualified -> the HIT -> exit survey -> sent back to
Prolific's completion URL with the study's COMPLETED code (no copy-paste); and one who fails the qualification twice
is sent back with the study's screened-out code and never gets a HIT. Prolific's app URL points at this test server
(nothing leaves the machine)."""

from __future__ import annotations

import re
from urllib.parse import urlencode

import pytest
from playwright.sync_api import expect

from annotation.models import Assignment, Participation, Response, Worker
from prolific.models import ProlificSession, ProlificStudy

from .conftest import staff_screenshot
from .test_phases import answer_training, consent_and_instructions, make_project

STUDY_ID = "60f6acb180a7b59ac0621f9e"
SESSION_ID = "64b1c2d3e4f5a6b7c8d9e0f1"


def prolific_project(live_server, settings):
    settings.ARGORA_PROLIFIC_APP_URL = f"{live_server.url}/_prolific"
    project = make_project()
    ProlificStudy.objects.create(
        project=project,
        study_id=STUDY_ID,
        name="Wind energy",
        description="Stances.",
        completed_code="C1DONE26",
        screened_out_code="C1SCRN26",
        status="ACTIVE",
    )
    return project


def enter(page, live_server, project, pid: str):
    page.goto(
        f"{live_server.url}/prolific/{project.slug}/start/?"
        + urlencode({"PROLIFIC_PID": pid, "STUDY_ID": STUDY_ID, "SESSION_ID": SESSION_ID})
    )
    expect(page).to_have_url(re.compile(rf"/work/{project.slug}/study/consent/$"))


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_a_prolific_participant_goes_through_every_phase_and_back_to_prolific_with_the_code(
    live_server, page, settings
):
    project = prolific_project(live_server, settings)
    enter(page, live_server, project, "5f1a2b3c4d5e6f7a8b9c0d1e")
    consent_and_instructions(page, project)
    worker = Worker.objects.get(claimed_external_id="5f1a2b3c4d5e6f7a8b9c0d1e")  # provisional until a sync
    assert ProlificSession.objects.get(worker=worker).session_id == SESSION_ID
    for key in ("1", "2", "1"):  # two of three right: qualified (threshold 0.6)
        answer_training(page, key)
        expect(page.locator("#explanation")).not_to_be_empty()
        page.keyboard.press("Enter")
    expect(page.locator("#result-title")).to_contain_text("You qualified")
    page.locator("#start-task").click()
    expect(page.locator(".hit-item")).to_have_count(3)
    for key in ("1", "2", "3"):
        page.keyboard.press(key)
    page.keyboard.press("Enter")
    expect(page).to_have_url(re.compile(r"/study/survey/\?finished=1$"))
    page.locator("input[name=q-clarity][value='5']").check()
    page.locator("input[name=q-age_group][value='18-24']").check()
    page.locator("#survey-submit").click()

    # the end page shows the study's code and sends the participant back to Prolific with it
    expect(page.locator("#completion-code")).to_have_text("C1DONE26")
    expect(page.locator("#back-to-platform-link")).to_have_attribute(
        "href", f"{live_server.url}/_prolific/submissions/complete?cc=C1DONE26"
    )
    staff_screenshot(page, "prolific-done")
    expect(page).to_have_url(f"{live_server.url}/_prolific/submissions/complete?cc=C1DONE26", timeout=15000)
    p = Participation.objects.get(project=project, worker=worker)
    assert p.consent_at and p.qualified_at and p.survey["clarity"] == 5
    assert Response.objects.filter(assignment__worker=worker).count() == 3


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_a_prolific_participant_who_fails_twice_goes_back_with_the_screened_out_code(live_server, page, settings):
    project = prolific_project(live_server, settings)
    enter(page, live_server, project, "5f1a2b3c4d5e6f7a8b9c0d2f")
    consent_and_instructions(page, project)
    for attempt in (1, 2):
        for key in ("3", "3", "1"):  # all wrong
            answer_training(page, key)
            page.keyboard.press("Enter")
        if attempt == 1:
            page.locator("#retry").click()
    expect(page).to_have_url(re.compile(r"/study/screened-out/$"))
    expect(page.locator("#screened-out-code")).to_have_text("C1SCRN26")
    expect(page.locator("#back-to-platform-link")).to_have_attribute(
        "href", f"{live_server.url}/_prolific/submissions/complete?cc=C1SCRN26"
    )
    staff_screenshot(page, "prolific-screened-out")
    expect(page).to_have_url(f"{live_server.url}/_prolific/submissions/complete?cc=C1SCRN26", timeout=15000)
    worker = Worker.objects.get(claimed_external_id="5f1a2b3c4d5e6f7a8b9c0d2f")
    assert not Assignment.objects.filter(worker=worker).exists()
