"""The generation page and a run page in headless Chromium (issue 37, point 5): a Researcher generates from the form,
lands on the run page at once (queued, nothing decoded yet), and the outputs appear there one after the other while
the worker's side (:func:`ml.generation.runs.execute_run`, called here) writes them, with the progress bar and the
state; once done the page shows the evaluation buttons. Both pages at 1366x768 and 390x844 (axe-core on each)."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import Group
from playwright.sync_api import expect

from argora.roles import RESEARCHER_GROUP
from ml import splits, versions
from ml.generation import generate as gen
from ml.generation import runs
from tests.ml.test_gen_models import aspect_rows
from tests.ml.test_gen_worker import TINY_HP

from .conftest import staff_screenshot
from .test_dashboard import login


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_the_run_page_shows_outputs_as_the_worker_writes_them(
    live_server, page, phone, tmp_artifacts, django_user_model
):
    train, dev = splits.stable_split(aspect_rows(), key="sentence", dev_fraction=0.2)
    version = versions.train_version("generator", rows_train=train, rows_dev=dev, seed=13, hyperparameters=TINY_HP)
    user = django_user_model.objects.create_user("researcher", password="pw-research-123", is_staff=True)
    user.groups.add(Group.objects.get(name=RESEARCHER_GROUP))
    login(page, live_server, "researcher", "pw-research-123", "/ml/generation/")
    expect(page).to_have_url(re.compile(r"/ml/generation/$"))
    expect(page.locator("#no-runs")).to_be_visible()
    page.select_option("#model_version", str(version.pk))
    page.fill("#inputs", "nuclear energy | pro | cost\nschool uniforms | con | bullying")
    page.fill("input[name=max_new_tokens]", "6")
    page.locator("#generate").click()  # no worker runs here: the run stays queued

    expect(page).to_have_url(re.compile(r"/ml/generation/runs/[\d-]+-[0-9a-f]{6}/$"))
    run_id = page.url.rstrip("/").rsplit("/", 1)[1]
    expect(page.locator("#run-status")).to_have_text("queued")
    expect(page.locator("#output-rows tr")).to_have_count(0)
    expect(page.locator("#evaluate")).to_have_count(0)
    staff_screenshot(page, "generation-run-queued")

    seen = []

    def after_each_input(done, total, description=""):
        if description != "generating":
            return
        # the page shows this input's output before the worker goes on with the next one
        expect(page.locator("#output-rows tr")).to_have_count(done)
        if done < total:
            expect(page.locator("#run-status")).to_have_text("running")
            expect(page.locator("#run-progress")).to_have_text(f"{done} of {total} input(s) generated")
        seen.append(page.locator("#output-rows tr").last.inner_text())

    runs.execute_run(run_id, progress=after_each_input)
    assert len(seen) == 2 and "nuclear energy PRO cost" in seen[0] and "school uniforms CON bullying" in seen[1]
    expect(page.locator("#run-status")).to_have_text("done")  # the page reloaded: the server renders the run
    expect(page.locator("#evaluate")).to_be_visible()
    expect(page.locator("#output-rows tr")).to_have_count(2)
    assert page.locator("#run-bar").get_attribute("value") == "100.0"
    assert gen.get_run(run_id)["status"] == "done"
    staff_screenshot(page, "generation-run-done")

    login(phone, live_server, "researcher", "pw-research-123", f"/ml/generation/runs/{run_id}/")
    expect(phone.locator("#run-status")).to_have_text("done")
    phone.goto(f"{live_server.url}/ml/generation/")
    expect(phone.locator(f'tr[data-run="{run_id}"]')).to_be_visible()
