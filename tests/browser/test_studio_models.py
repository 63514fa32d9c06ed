"""The studio's model-annotator pages in headless Chromium at 1366x768 (issue 24 item 1, researcher side): a
Researcher opens them from the project's studio page, adds an LLM annotator (a bad temperature first: refused, naming
the field), runs it (Run queues the job and shows its page; the job's work is then done here by the service, against a
local fake OpenAI-compatible server), sees its answers and failed-attempt counts, reads a failure's raw reply, saves a
new prompt version and counts the answers in results. Every page is saved with ``staff_screenshot``."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import Group
from playwright.sync_api import expect

from annotation import model_annotators as ma
from annotation import teams
from annotation.models import ModelAnnotator
from argora.roles import RESEARCHER_GROUP
from tests.annotation import test_model_annotators
from tests.annotation.test_model_annotators import FakeLLM, three_humans

from .conftest import staff_screenshot
from .test_dashboard import login

llm_server = test_model_annotators.llm_server  # the fake OpenAI-compatible server (a fixture)

LABELS = ["pro", "con", "none", "pro", "con", "pro"]


@pytest.mark.django_db(transaction=True)
def test_researcher_adds_runs_and_inspects_an_llm_annotator(live_server, page, llm_server, django_user_model):
    llm_server(FakeLLM(dict(enumerate(LABELS)), script={1: ["malformed"]}))
    project = three_humans()
    user = django_user_model.objects.create_user("researcher", password="pw-research-123", is_staff=True)
    user.groups.add(Group.objects.get(name=RESEARCHER_GROUP))
    teams.add_member(project, user.username, "editor", by=None)
    studio_url = f"/studio/projects/{project.slug}/"
    login(page, live_server, "researcher", "pw-research-123", studio_url)
    expect(page).to_have_url(re.compile(rf"{studio_url}$"))

    page.locator("#models-link").click()
    expect(page).to_have_url(re.compile(rf"{studio_url}models/$"))
    expect(page.locator("#no-models")).to_be_visible()
    page.locator("#add-model").click()

    # the LLM form: the prompt prefilled with the task type's default, the placeholders listed
    prompt = page.locator("#id_prompt_template")
    expect(prompt).to_have_value(ma.default_prompt(project))
    expect(page.locator("#placeholders")).to_contain_text("$labels")
    page.fill("#id_name", "fake LLM")
    page.fill("#id_temperature", "9")
    page.locator("#add-llm").click()
    expect(page.locator("#temperature-errors")).to_contain_text("Temperature (0-2): a number from 0 to 2")
    expect(page.locator("#id_name")).to_have_value("fake LLM")  # what was typed stays
    staff_screenshot(page, "studio-models-new")
    assert not ModelAnnotator.objects.exists()
    page.fill("#id_temperature", "0")
    page.fill("#id_batch_size", "2")
    page.locator("#add-llm").click()
    expect(page).to_have_url(re.compile(rf"{studio_url}models/#annotator-\d+$"))
    annotator = ModelAnnotator.objects.get(project=project, name="fake LLM")
    row = page.locator(f"#annotator-{annotator.pk}")
    expect(row.locator(".answers")).to_have_text("0")
    expect(row.locator(".included")).to_have_text("kept apart")

    # Run: the job is queued and its page shown; the job's work is the service's run
    row.locator("button.run").click()
    expect(page).to_have_url(re.compile(r"/jobs/[0-9a-f-]{36}/$"))
    annotator.refresh_from_db()
    assert annotator.status == "queued" and page.url.endswith(f"/jobs/{annotator.task_id}/")
    ma.run(annotator.pk, task_id=annotator.task_id)

    page.goto(f"{live_server.url}{studio_url}models/")
    expect(row.locator(".answers")).to_have_text("6")
    expect(row.locator(".failures")).to_contain_text("1")
    expect(row.locator(".run-status")).to_have_text("Done")
    expect(row.locator(".job-link")).to_have_attribute("href", f"/jobs/{annotator.task_id}/")
    expect(page.locator("#agreement-models-link")).to_have_attribute(
        "href", f"/projects/{project.slug}/agreement/#models"
    )
    staff_screenshot(page, "studio-models")

    row.locator(".failures a").click()
    failure = page.locator("tr.failure")
    expect(failure).to_have_count(1)
    expect(failure.locator("pre.raw")).to_have_text("I think it is pro, probably.")
    expect(failure.locator(".kind")).to_have_text("Malformed reply")
    expect(failure.locator(".attempt")).to_have_text("1")
    staff_screenshot(page, "studio-model-failures")

    page.goto(f"{live_server.url}{studio_url}models/")
    row.locator(".edit-prompt").click()
    expect(page.locator("#current-version")).to_have_text("v1")
    page.fill("#id_prompt_template", "Stance of: $text\nLabels: $labels\nAnswer as $format")
    page.locator("#save-prompt").click()
    expect(page.locator(".messages")).to_contain_text("Prompt v2 saved")
    expect(page.locator("#current-version")).to_have_text("v2")
    expect(page.locator("details.prompt-version")).to_have_count(2)
    staff_screenshot(page, "studio-model-prompt")

    page.goto(f"{live_server.url}{studio_url}models/")
    row.locator("button.include").click()
    expect(row.locator(".included")).to_have_text("counted")
    expect(row.locator(".prompt-version")).to_have_text("v2")
    annotator.refresh_from_db()
    assert annotator.include_in_results
