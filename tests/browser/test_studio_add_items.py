"""Issue 37 (studio, "Add items" and the gold share) in headless Chromium: the demo ``expert`` opens an active project
that has answers, follows "Add items", sees the gold share only for the sources whose rows carry labels (and what the
expected answer is), uploads a file with the first row as gold, reads the preview, confirms, and the job's page says
what was added; the project's old HITs and answers are untouched. The add page and its preview pass axe-core at
1366x768 and 390x844 (the ``page`` / ``phone`` fixtures check every page they load)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from annotation import services
from annotation.models import HIT, GoldItem, Item, Project, ProjectMember, Response
from tests.browser.conftest import staff_screenshot
from tests.browser.test_studio import accounts_after_migrations, expert_password, login
from tests.worker_utils import eager_celery

DATA = Path(__file__).resolve().parents[1] / "data" / "studio"


def running_project(django_user_model) -> Project:
    project = services.create_project(
        name="Running study",
        task_type="sentence_label",
        config={"labels": ["pro", "con", "none"]},
        items_per_hit=2,
        assignments_per_item=1,
    )
    ProjectMember.objects.create(
        project=project, user=django_user_model.objects.get(username="expert"), role=ProjectMember.Role.EDITOR
    )
    services.add_items(project, [{"text": f"Old sentence {i}.", "topic": "t"} for i in range(4)])
    services.build_hits(project)
    services.set_project_status(project, Project.Status.ACTIVE)
    worker = services.worker_for_user(django_user_model.objects.create_user("w-old"))
    assignment = services.reserve_next_assignment(project, worker)
    services.submit_assignment(
        assignment, worker, {i.pk: {"label": "pro"} for i in services.assignment_items(assignment)}
    )
    return project


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_add_items_with_a_gold_share_to_a_running_project(
    live_server, page, phone, settings, store_eager, django_user_model
):
    accounts_after_migrations()
    project = running_project(django_user_model)
    old_hits = list(HIT.objects.filter(project=project).order_by("pk").values_list("pk", "taken"))
    old_responses = list(Response.objects.order_by("pk").values_list("pk", "item_id", "data"))

    login(page, live_server, f"/studio/projects/{project.slug}/")
    page.click("#add-items-link")
    expect(page.locator("h1")).to_have_text("Add items: Running study")
    # the gold share follows the chosen source: shown for a source with labels, saying what the expected answer is
    page.check("#source-arguments-jsonl")
    gold = page.locator("#gold-fields")
    expect(gold).to_be_visible()
    expect(gold.locator(".gold-label:visible")).to_have_text(re.compile(r"Arguments \(JSONL\): expected answer: "))
    page.check("#source-kialo")  # Kialo's Pro / Con are no labels of the topic: no gold share
    expect(gold).to_be_hidden()
    page.check("#source-arguments-jsonl")
    page.set_input_files("input[name=file]", str(DATA / "cloning_arguments.jsonl"))
    page.check("#id_gold_mode_1")  # the first N rows
    page.fill("#id_gold_n", "1")
    staff_screenshot(page, "studio-add-items")
    page.click("#items-next")

    expect(page.locator("#count-items")).to_have_text("4")
    expect(page.locator("#count-gold")).to_have_text("1")
    expect(page.locator("#count-hits")).to_have_text("2")
    expect(page.locator("#gold-share")).to_have_text("the first 1 row(s) are gold items")
    staff_screenshot(page, "studio-add-items-preview")
    preview_url = page.url

    # the same pages on a phone
    phone.goto(f"{live_server.url}/accounts/login/?next=/studio/projects/{project.slug}/items/add/")
    phone.fill("input[name=username]", "expert")
    phone.fill("input[name=password]", expert_password())
    phone.locator("button[type=submit]").tap()
    expect(phone.locator("h1")).to_have_text("Add items: Running study")
    phone.locator("#source-arguments-jsonl").tap()
    phone.set_input_files("input[name=file]", str(DATA / "cloning_arguments.jsonl"))
    assert phone.evaluate("() => document.scrollingElement.scrollWidth - document.scrollingElement.clientWidth") <= 0
    phone.locator("#items-next").tap()
    expect(phone.locator("#count-items")).to_have_text("5")  # no gold share asked for on the phone
    phone.goto(preview_url)  # another browser's draft: not this session's, back to the items step
    expect(phone.locator("h1")).to_have_text("Add items: Running study")
    assert Item.objects.filter(project=project).count() == 4  # two previews, nothing written

    with eager_celery(settings):  # the job runs in the live server's thread; store_eager keeps its state
        page.click("#confirm-import")
        expect(page.locator("#job-done")).to_be_visible()
    expect(page).to_have_url(re.compile(rf"/studio/projects/{project.slug}/items/add/jobs/[0-9a-f-]+/$"))
    expect(page.locator("#job-done")).to_be_visible()
    expect(page.locator("#job-summary")).to_contain_text("4 item(s) and 1 gold item(s) added")
    staff_screenshot(page, "studio-add-items-job")
    page.click("#job-project")
    expect(page.locator("h1")).to_have_text("Running study")
    expect(page.locator("#project-status")).to_have_text("Active")
    expect(page.locator("#audit")).to_contain_text("items.add")

    assert Item.objects.filter(project=project, is_gold=False).count() == 8
    assert GoldItem.objects.get(item__project=project).expected == {"label": "con"}
    hits = list(HIT.objects.filter(project=project).order_by("pk").values_list("pk", "taken"))
    assert hits[:2] == old_hits and len(hits) == 4
    assert list(Response.objects.order_by("pk").values_list("pk", "item_id", "data")) == old_responses
