"""A crowdworker joins through an invite link and completes a validity_novelty HIT in headless Chromium with the
keyboard only (1/2/3 answer the highlighted question, V/N pick it), sees the completion code; the answers are in the
database. Screenshot at 1366x768: $ARGORA_VAR_DIR/artifacts/screenshots/valnov_hit.png."""

from __future__ import annotations

import os
import re

import pytest
from playwright.sync_api import expect

from annotation import services
from annotation.models import Assignment, Response, Worker
from annotation.task_types.validity_novelty import results

# the page's own input (keyboard, mouse) and what it sends; the answers' storage runs on both engines in
# test_no_lost_answers and the task type's page tests
pytestmark = pytest.mark.one_database

SHOTS = os.path.join(os.environ.get("ARGORA_VAR_DIR", "/tmp"), "artifacts", "screenshots")
CSV = """topic,Premise,Conclusion,Validity,Validity-Confidence,Novelty,Novelty-Confidence
Twin Towers reconstruction,"The Pentagon, hardly a symbol of peace, has been rebuilt. The Twin Towers weren't. The message that this sends to the public is hardly positive.",Rebuilding the Pentagon but not the towers sends the wrong message,1,majority,1,majority
Zoos,"Zoos keep wild animals in small enclosures for their whole lives. Many of them show signs of stress, such as pacing back and forth, that are never seen in the wild.",Zoos harm the animals they keep,1,very confident,-1,majority
School uniforms,"Uniforms take away one of the few ways in which teenagers can express who they are, and they cost families money that they would otherwise spend on ordinary clothes.",Uniforms improve students' grades,-1,very confident,1,confident
"""


def make_project(tmp_path):
    path = tmp_path / "valnov.csv"
    path.write_text(CSV, encoding="utf-8")
    project = results.get_project(
        "valnov-demo",
        create=True,
        assignments_per_item=1,
        items_per_hit=3,
        time_estimate_seconds=90,
        reward_cents=30,
        status="active",
    )
    project.name = "Validity and novelty of conclusions"
    project.save(update_fields=["name"])
    assert results.import_file(project, path)["hits"] == 1
    return project


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_complete_valnov_hit_with_keyboard_only(live_server, page, tmp_path):
    project = make_project(tmp_path)
    page.goto(f"{live_server.url}/invite/{project.invite_token}/")
    expect(page).to_have_url(re.compile(rf"/work/{project.slug}/$"))
    expect(page.locator(".hit-item")).to_have_count(3)
    worker = Worker.objects.get(source=Worker.Source.INVITE)
    assignment = Assignment.objects.get(worker=worker)
    items = services.assignment_items(assignment)
    first, second, third = (page.locator(f"#item-{i.pk}") for i in items)
    expect(page.locator("#instructions")).to_contain_text("Novelty")
    expect(page.locator("#hit-answered")).to_have_text("0 of 3 answered")
    assert "very confident" not in page.content()  # the imported labels are never shown

    # item 1: validity is highlighted first; 1 = yes moves the highlight to novelty; 2 = no completes the item
    expect(first).to_be_focused()
    expect(page.locator(f"#item-{items[0].pk}-validity")).to_have_class(re.compile(r"\bactive\b"))
    page.keyboard.press("1")
    expect(page.locator(f"#item-{items[0].pk}-novelty")).to_have_class(re.compile(r"\bactive\b"))
    expect(first).to_be_focused()
    expect(page.locator("#hit-answered")).to_have_text("0 of 3 answered")
    page.keyboard.press("2")
    expect(second).to_be_focused()
    expect(page.locator("#hit-position")).to_have_text("Item 2 of 3")
    expect(page.locator("#hit-answered")).to_have_text("1 of 3 answered")

    # item 2: N first (novelty yes), then the highlight goes back to validity: 3 = don't know
    page.keyboard.press("n")
    page.keyboard.press("1")
    expect(page.locator(f"#item-{items[1].pk}-validity")).to_have_class(re.compile(r"\bactive\b"))
    page.keyboard.press("3")
    expect(third).to_be_focused()
    os.makedirs(SHOTS, exist_ok=True)
    page.screenshot(path=os.path.join(SHOTS, "valnov_hit.png"))

    # Enter with an item open submits nothing and says what is missing
    page.keyboard.press("Enter")
    expect(page.locator("#hit-missing")).to_have_text("1 item still needs an answer.")
    expect(third).to_be_focused()
    assert Response.objects.count() == 0

    # item 3: V 2 (validity no), then 3 (novelty don't know) -> focus on Submit
    page.keyboard.press("v")
    page.keyboard.press("2")
    page.keyboard.press("3")
    expect(page.locator("#hit-answered")).to_have_text("3 of 3 answered")
    expect(page.locator("#hit-submit")).to_be_focused()

    # back to item 3 to correct validity: V 1 changes it and stays on the item
    page.keyboard.press("Shift+Tab")
    expect(page.locator("#feedback")).to_be_focused()
    page.keyboard.type("Item 2 was hard.")
    page.keyboard.press("Shift+Tab")
    expect(third).to_be_focused()
    page.keyboard.press("v")
    page.keyboard.press("1")
    expect(third).to_be_focused()
    expect(page.locator(f"#item-{items[2].pk} input[name$='-validity'][value=yes]")).to_be_checked()
    page.screenshot(path=os.path.join(SHOTS, "valnov_hit_done.png"))

    page.keyboard.press("Enter")  # everything answered: submits through the JSON API
    code = page.locator("#completion-code")
    expect(code).to_be_visible()
    assert code.inner_text().strip() == services.completion_code(project, worker)

    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.SUBMITTED
    assert assignment.feedback == "Item 2 was hard."
    stored = {r.item_id: r.data for r in Response.objects.filter(assignment=assignment)}
    assert stored == {
        items[0].pk: {"validity": "yes", "novelty": "no"},
        items[1].pk: {"validity": "dont_know", "novelty": "yes"},
        items[2].pk: {"validity": "yes", "novelty": "dont_know"},
    }
