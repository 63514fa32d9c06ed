"""The agreement dashboard's model-annotator section (issue 24): an LLM behind a local fake OpenAI-compatible server
annotates a project beside three humans; the section shows alpha / kappa with and without it, its agreement with
each human and the majority, and the alt-test (winning rate, advantage probability, epsilon, verdict, n), fits
1366 px, and is screenshotted."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from annotation import model_annotators as ma
from annotation import teams
from tests.annotation.test_model_annotators import FakeLLM, three_humans

from .conftest import staff_screenshot
from .test_dashboard import login


@pytest.mark.django_db(transaction=True)
def test_model_annotator_section_shows_its_alt_test(live_server, page, httpserver, settings, django_user_model):
    settings.ARGORA_LLM_BASE_URL = httpserver.url_for("/v1")
    settings.ARGORA_LLM_MODEL = "fake-7b"
    truth = {i: ["pro", "con", "none", "pro", "con", "pro"][i % 6] for i in range(36)}
    httpserver.expect_request("/v1/chat/completions", method="POST").respond_with_handler(FakeLLM(truth))
    project = three_humans(n_items=36)
    annotator = ma.create_annotator(project, name="fake LLM", kind="llm", options={"batch_size": 12})
    ma.run(annotator.pk)
    django_user_model.objects.create_user("expert", "e@example.org", "pw-expert-123", is_staff=True)
    teams.add_member(project, "expert", "viewer", by=None)  # the project's team: its dashboard opens

    url = f"/projects/{project.slug}/agreement/"
    login(page, live_server, "expert", "pw-expert-123", url)
    page.goto(f"{live_server.url}{url}#model-{annotator.pk}")
    section = page.locator(f"#model-{annotator.pk}")
    expect(section).to_contain_text("fake LLM")
    expect(section.locator(".verdict")).to_have_text("passed: it may replace a human")
    expect(section.locator("[data-key=winning_rate]")).to_have_text("1.000")
    expect(section.locator("tr[data-key=without]")).to_contain_text("3")  # n coders without the model
    expect(section.locator("tr[data-key=majority]")).to_contain_text("1.000")
    expect(section).to_contain_text("ε = 0.2")
    section.scroll_into_view_if_needed()
    staff_screenshot(page, "model-annotator-dashboard")

    page.goto(f"{live_server.url}{url}?epsilon=0.1#model-{annotator.pk}")
    expect(section).to_contain_text("ε = 0.1")
