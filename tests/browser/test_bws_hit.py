"""A worker completes a BWS argument-similarity HIT in headless Chromium with the keyboard only: 1-4 mark the most
similar pair, Shift+1-4 the least similar; the same pair for both is refused on the page (visible warning) and, from
a tampered page, by the server (400, nothing written)."""

from __future__ import annotations

import os
import re

import pytest
from playwright.sync_api import expect

from annotation import services
from annotation.models import Assignment, Project, Response, Worker
from annotation.task_types.bws_similarity import project as bws
from corpus.hashing import sentence_hash
from corpus.models import Sentence, Topic

# the page's own input (keyboard, mouse) and what it sends; the answers' storage runs on both engines in
# test_no_lost_answers and the task type's page tests
pytestmark = pytest.mark.one_database

SCREENSHOT = os.path.join(os.environ.get("ARGORA_VAR_DIR", "/tmp"), "artifacts", "screenshots", "bws_hit.png")
ARGS = [
    "Cloning treats children as objects and encourages parents to regard them as property.",
    "Reproductive cloning lets infertile couples have children who are genetically their own.",
    "Cloned animals often suffer from serious health problems and die young.",
    "Cloning could bring back extinct species and help protect endangered ones.",
    "A cloned child would be treated as a copy of someone else rather than as a person in their own right.",
    "Cloning reduces genetic diversity, which makes populations vulnerable to disease.",
]
GUIDELINES = (
    "<p>Each task shows four pairs of arguments on one topic. Mark the pair whose two arguments are the "
    "<b>most similar</b> (they make the same point, perhaps in other words) and the pair whose arguments are "
    "the <b>least similar</b> (they talk about different aspects).</p>"
)


def make_project() -> Project:
    topic = Topic.objects.create(name="cloning")
    for t in ARGS:
        Sentence.objects.create(topic=topic, text=t, content_hash=sentence_hash("cloning", t))
    project = bws.create_project(
        name="Argument similarity",
        slug="similarity",
        guidelines=GUIDELINES,
        config={"scorer": "jaccard", "tuples_per_pair": 1, "attention_checks": 0},
        assignments_per_item=1,
        items_per_hit=2,
        gold_rate=0,
        time_estimate_seconds=90,
        reward_cents=25,
        status=Project.Status.ACTIVE,
    )
    bws.sample(project, "cloning", 8, seed=0)
    bws.build(project)
    return project


def join(page, live_server, project):
    page.goto(f"{live_server.url}/invite/{project.invite_token}/")
    expect(page).to_have_url(re.compile(rf"/work/{project.slug}/$"))
    expect(page.locator(".hit-item")).to_have_count(2)
    worker = Worker.objects.get(source=Worker.Source.INVITE)
    assignment = Assignment.objects.get(worker=worker)
    return worker, assignment, services.assignment_items(assignment)


def pair_ids(item):
    return [p["id"] for p in item.payload["pairs"]]


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_complete_bws_hit_with_keyboard_and_refuse_same_pair(live_server, page):
    project = make_project()
    _worker, assignment, items = join(page, live_server, project)
    first, second = items
    expect(page.locator(f"#item-{first.pk} .bws-pair")).to_have_count(4)
    expect(page.locator(f"#item-{first.pk}")).to_be_focused()
    expect(page.locator("#hit-answered")).to_have_text("0 of 2 answered")

    page.keyboard.press("2")  # most similar: pair 2
    expect(
        page.locator(f"#item-{first.pk} input[name=item-{first.pk}-best][value='{pair_ids(first)[1]}']")
    ).to_be_checked()
    page.keyboard.press("Shift+Digit2")  # least similar: pair 2 too -> refused, visibly
    warning = page.locator(f"#item-{first.pk}-warning")
    expect(warning).to_be_visible()
    expect(warning).to_contain_text("Pair 2 is already your most similar pair")
    expect(page.locator(f"#item-{first.pk} input[name=item-{first.pk}-worst]:checked")).to_have_count(0)
    expect(page.locator("#hit-answered")).to_have_text("0 of 2 answered")
    expect(page.locator(f"#item-{first.pk}")).to_be_focused()  # stays on the task
    os.makedirs(os.path.dirname(SCREENSHOT), exist_ok=True)
    page.screenshot(path=SCREENSHOT)

    page.keyboard.press("Shift+Digit4")  # least similar: pair 4 -> answered, moves on
    expect(warning).to_be_hidden()
    expect(page.locator(f"#item-{second.pk}")).to_be_focused()
    expect(page.locator("#hit-answered")).to_have_text("1 of 2 answered")

    # a click on the pair already chosen for the other end is refused as well
    page.keyboard.press("Shift+Digit3")
    page.locator(f"#item-{second.pk}-pair-3 .bws-best").click()
    expect(page.locator(f"#item-{second.pk}-warning")).to_contain_text("Pair 3 is already your least similar pair")
    expect(page.locator(f"#item-{second.pk} input[name=item-{second.pk}-best]:checked")).to_have_count(0)
    page.locator(f"#item-{second.pk}").focus()
    page.keyboard.press("1")  # most similar: pair 1 -> both answered, focus on Submit
    expect(page.locator("#hit-answered")).to_have_text("2 of 2 answered")
    expect(page.locator("#hit-submit")).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.locator("#hit-count")).to_contain_text("1 submitted")  # the next HIT of the project

    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.SUBMITTED
    stored = {r.item_id: r.data for r in Response.objects.filter(assignment=assignment)}
    assert stored == {
        first.pk: {"best": pair_ids(first)[1], "worst": pair_ids(first)[3]},
        second.pk: {"best": pair_ids(second)[0], "worst": pair_ids(second)[2]},
    }


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_server_refuses_same_pair_from_a_tampered_page(live_server, page):
    project = make_project()
    _worker, assignment, items = join(page, live_server, project)
    for key in ("1", "Shift+Digit2", "1", "Shift+Digit2"):
        page.keyboard.press(key)
    expect(page.locator("#hit-answered")).to_have_text("2 of 2 answered")
    # the page will not send the same pair twice (it counts the task as unanswered), so send what a tampered
    # client would: the server, not the page, decides
    first, second = items
    result = page.evaluate(
        """async ([url, responses]) => {
        const csrf = document.querySelector("input[name=csrfmiddlewaretoken]").value;
        const r = await fetch(url, {method: "POST", credentials: "same-origin",
            headers: {"Content-Type": "application/json", "X-CSRFToken": csrf},
            body: JSON.stringify({responses})});
        return {status: r.status, body: await r.json()};
    }""",
        [
            f"/api/assignments/{assignment.pk}/submit/",
            {
                str(first.pk): {"best": pair_ids(first)[0], "worst": pair_ids(first)[1]},
                str(second.pk): {"best": pair_ids(second)[0], "worst": pair_ids(second)[0]},
            },
        ],
    )
    assert result["status"] == 400
    assert result["body"]["errors"] == {
        f"responses.{second.pk}.worst": "the most and the least similar pair must differ"
    }
    assert Response.objects.count() == 0
    assert Assignment.objects.get(pk=assignment.pk).status == Assignment.Status.RESERVED
    # the page itself never offered that: with the tampered radio value it still asks for an answer
    page.evaluate(
        f"document.querySelector('#item-{second.pk} input[name=item-{second.pk}-worst]:checked').value = "
        f"'{pair_ids(second)[0]}'"
    )
    page.keyboard.press("Enter")
    expect(page.locator(f"#item-{second.pk}-error")).to_have_text("Please answer this item.")
    assert Response.objects.count() == 0
