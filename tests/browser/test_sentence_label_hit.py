"""A crowdworker joins through an invite link and completes a sentence_label HIT in headless Chromium
with the keyboard only, then sees the completion code; the responses are in the database."""

from __future__ import annotations

import os
import re

import pytest
from playwright.sync_api import expect

from annotation import services
from annotation.models import Assignment, Project, Response, Worker
from corpus.hashing import sentence_hash
from corpus.models import Sentence, Topic

# the page's own input (keyboard, mouse) and what it sends; the answers' storage runs on both engines in
# test_no_lost_answers and the task type's page tests
pytestmark = pytest.mark.one_database

SCREENSHOT = os.path.join(os.environ.get("ARGORA_VAR_DIR", "/tmp"), "hit.png")
TEXTS = [
    "Nuclear power plants emit almost no carbon dioxide while they run.",
    "Nuclear waste stays dangerous for thousands of years and nobody wants it stored nearby.",
    "The plant in the valley opened in 1975.",
    "Modern reactors are among the safest ways to produce electricity per unit of energy.",
]


def make_project() -> Project:
    topic = Topic.objects.create(name="nuclear energy", slug="nuclear-energy")
    sentences = [Sentence.objects.create(topic=topic, text=t, content_hash=sentence_hash(topic.name, t)) for t in TEXTS]
    project = services.create_project(
        name="Nuclear energy: stance",
        task_type="sentence_label",
        config={"labels": ["pro", "con", "none"]},
        guidelines=(
            "<p>For each sentence, decide whether it is an argument <b>for</b> (pro) or <b>against</b> (con) "
            "nuclear energy, or <b>no argument</b> (none).</p>"
        ),
        assignments_per_item=1,
        items_per_hit=4,
        time_estimate_seconds=60,
        reward_cents=30,
        max_hits_per_worker=3,
        status=Project.Status.ACTIVE,
    )
    services.add_items_from_rows(project, sentences)
    assert services.build_hits(project) == 1
    return project


def join(page, live_server, project):
    page.goto(f"{live_server.url}/invite/{project.invite_token}/")
    expect(page).to_have_url(re.compile(rf"/work/{project.slug}/$"))
    expect(page.locator(".hit-item")).to_have_count(len(TEXTS))
    worker = Worker.objects.get(source=Worker.Source.INVITE)
    return worker, Assignment.objects.get(worker=worker)


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_complete_sentence_label_hit_with_keyboard_only(live_server, page):
    project = make_project()
    worker, assignment = join(page, live_server, project)
    items = services.assignment_items(assignment)
    expect(page.locator("#instructions")).to_have_attribute("open", "")
    page.keyboard.press("?")  # hides the instructions, and shows them again
    expect(page.locator("#instructions")).not_to_have_attribute("open", "")
    page.keyboard.press("?")
    expect(page.locator("#instructions")).to_have_attribute("open", "")
    expect(page.locator("#hit-answered")).to_have_text("0 of 4 answered")

    # focus starts on item 1; a digit picks a label and moves on to the next item
    expect(page.locator(f"#item-{items[0].pk}")).to_be_focused()
    page.keyboard.press("1")  # item 1: pro
    page.keyboard.press("2")  # item 2: con
    expect(page.locator(f"#item-{items[2].pk}")).to_be_focused()
    expect(page.locator("#hit-position")).to_have_text("Item 3 of 4")
    expect(page.locator("#hit-answered")).to_have_text("2 of 4 answered")
    page.screenshot(path=SCREENSHOT)

    # Enter before everything is answered submits nothing and says what is missing
    page.keyboard.press("ArrowDown")
    page.keyboard.press("Enter")
    expect(page.locator("#hit-missing")).to_have_text("2 items still need an answer.")
    expect(page.locator(f"#item-{items[2].pk}-error")).to_have_text("Please answer this item.")
    expect(page.locator(f"#item-{items[2].pk}")).to_be_focused()  # the first unanswered item
    assert Assignment.objects.get(pk=assignment.pk).status == Assignment.Status.RESERVED
    page.keyboard.press("3")  # item 3: none
    expect(page.locator(f"#item-{items[2].pk}-error")).to_have_text("")
    expect(page.locator("#hit-missing")).to_have_text("1 item still needs an answer.")
    page.keyboard.press("1")  # item 4: pro -> focus goes to Submit
    expect(page.locator("#hit-answered")).to_have_text("4 of 4 answered")
    expect(page.locator("#hit-submit")).to_be_focused()
    expect(page.locator("#hit-errors")).to_be_hidden()

    # back into the feedback box (digits typed there are text, not labels), then up to item 2 to change it
    page.keyboard.press("Shift+Tab")
    expect(page.locator("#feedback")).to_be_focused()
    page.keyboard.type("Sentence 3 was easy, 10/10.")
    page.keyboard.press("Shift+Tab")
    expect(page.locator(f"#item-{items[3].pk}")).to_be_focused()
    page.keyboard.press("ArrowUp")
    page.keyboard.press("ArrowUp")
    expect(page.locator(f"#item-{items[1].pk}")).to_be_focused()
    page.keyboard.press("ArrowRight")  # con -> none
    expect(page.locator(f"#item-{items[1].pk} input[value=none]")).to_be_checked()
    expect(page.locator(f"#item-{items[3].pk} input[value=pro]")).to_be_checked()

    page.keyboard.press("Enter")  # all answered: submits through the JSON API
    code = page.locator("#completion-code")
    expect(code).to_be_visible()
    assert code.inner_text().strip() == services.completion_code(project, worker)
    page.screenshot(path=SCREENSHOT.replace("hit.png", "done.png"))

    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.SUBMITTED
    assert assignment.feedback == "Sentence 3 was easy, 10/10."
    assert assignment.client_seconds is not None and assignment.client_seconds >= 0
    stored = {r.item_id: r.data["label"] for r in Response.objects.filter(assignment=assignment)}
    assert stored == {items[0].pk: "pro", items[1].pk: "none", items[2].pk: "none", items[3].pk: "pro"}


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_server_rejection_is_shown_next_to_the_item_and_nothing_is_written(live_server, page):
    project = make_project()
    _worker, assignment = join(page, live_server, project)
    items = services.assignment_items(assignment)
    for key in "1231":
        page.keyboard.press(key)
    # a tampered page: the server, not the page, decides what a valid label is
    page.evaluate(f"document.querySelector('#item-{items[2].pk} input:checked').value = 'maybe'")
    page.keyboard.press("Enter")
    error = page.locator(f"#item-{items[2].pk}-error")
    expect(error).to_contain_text("must be one of: pro, con, none")
    expect(page.locator(f"#item-{items[2].pk}")).to_be_focused()
    assert Response.objects.count() == 0
    assert Assignment.objects.get(pk=assignment.pk).status == Assignment.Status.RESERVED
