"""Span grounding acceptance (page part): in headless Chromium at 1366x768, a crowdworker joins a span_grounding
project through its invite link, highlights two factual spans with the MOUSE (drags that start and end inside
words snap to whole tokens), grounds one to a variable and one to Others with the KEYBOARD, sees an overlapping
drag refused (role=alert), accepts the suggestion (A), confirms "no factual span" for the second argument, submits
and gets the completion code; the stored offsets are exactly the words dragged over. A second test drives resize
(keys and a handle drag), delete, reject and the refusal of an overlapping resize; rejected suggestions are stored
with the answer. Screenshots are saved under $ARGORA_VAR_DIR/artifacts/screenshots/."""

from __future__ import annotations

import os
import re

import pytest
from playwright.sync_api import expect

from annotation import services
from annotation.models import Assignment, Response, Worker
from tests.annotation.test_span_page import make_span_project, span_of

# the page's own input (keyboard, mouse) and what it sends; the answers' storage runs on both engines in
# test_no_lost_answers and the task type's page tests
pytestmark = pytest.mark.one_database

SHOTS = os.path.join(os.environ.get("ARGORA_VAR_DIR", "/tmp"), "artifacts", "screenshots")


def screenshot(page, name):
    os.makedirs(SHOTS, exist_ok=True)
    path = os.path.join(SHOTS, name)
    page.screenshot(path=path)
    print(f"screenshot: {path}")
    return path


def word(page, item_id, begin):
    """The rendered segment of the token starting at ``begin`` (the span_grounding hit.js renders the text as segments)."""
    return page.locator(f'#item-{item_id}-text span[data-b="{begin}"]')


def drag(page, start, end, *, inset=3):
    """A real mouse drag from inside the first word (``inset`` px from its left edge) to inside the last one."""
    a, b = start.bounding_box(), end.bounding_box()
    page.mouse.move(a["x"] + inset, a["y"] + a["height"] / 2)
    page.mouse.down()
    page.mouse.move((a["x"] + b["x"]) / 2, b["y"] + b["height"] / 2, steps=4)
    page.mouse.move(b["x"] + b["width"] - inset, b["y"] + b["height"] / 2, steps=4)
    page.mouse.up()


def open_hit(page, live_server, project):
    page.goto(f"{live_server.url}/invite/{project.invite_token}/")
    expect(page).to_have_url(re.compile(rf"/work/{project.slug}/$"))
    worker = Worker.objects.get(source=Worker.Source.INVITE)
    assignment = Assignment.objects.get(worker=worker)
    return worker, assignment, services.assignment_items(assignment)


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_highlight_ground_accept_and_submit(live_server, page):
    project = make_span_project()
    worker, assignment, items = open_hit(page, live_server, project)
    a, b = items
    p = a.payload
    text = p["text"]
    loc = page.locator
    expect(loc(".hit-item")).to_have_count(2)
    # the variables with their keys stand beside the argument; the suggestion is a dashed pre-annotation
    expect(loc(f"#item-{a.pk} .sg-var kbd")).to_have_text(["1", "2", "3", "0"])
    expect(loc(f"#item-{a.pk} .sg-var-text").first).to_have_text(p["variables"][0]["text"])
    expect(loc(f"#item-{a.pk} .sg-side")).to_be_in_viewport()
    sugg = p["suggestions"][0]
    shown = text[sugg["begin"] : sugg["end"]].split(" ")
    expect(loc(f"#item-{a.pk}-text .sg-sugg.sg-sugg-first")).to_have_text(shown[0])
    expect(loc(f"#item-{a.pk}-text .sg-sugg.sg-sugg-last")).to_have_text(shown[-1])
    expect(loc(f"#item-{a.pk} .sg-chip-sugg")).to_have_count(1)
    expect(loc(f"#item-{a.pk} .sg-nojs")).to_be_hidden()
    expect(loc(f"#item-{a.pk}-text")).to_be_focused()
    expect(loc("#hit-answered")).to_have_text("0 of 2 answered")

    # 1) drag from inside "young" to inside "jobs": the span snaps to "young workers their jobs"; key 2 grounds it
    young = span_of(text, "young workers their jobs")
    drag(page, word(page, a.pk, young[0]), word(page, a.pk, text.index("jobs")))
    chips = loc(f"#item-{a.pk} .sg-chip:not(.sg-chip-sugg)")
    expect(chips).to_have_count(1)
    expect(chips.first).to_contain_text("\u201cyoung workers their jobs\u201d")
    expect(chips.first).to_contain_text("not grounded yet")
    expect(loc(f"#item-{a.pk}-text")).to_be_focused()
    page.keyboard.press("2")
    expect(chips.first).to_contain_text("\u2192 2 " + p["variables"][1]["text"])
    expect(loc(f"#item-{a.pk} .sg-var[data-key='2']")).to_have_attribute("aria-pressed", "true")

    # 2) a drag over words that are already marked is refused with a visible warning; nothing changes
    drag(page, word(page, a.pk, text.index("workers")), word(page, a.pk, text.index("their")))
    warning = loc(f"#item-{a.pk}-warning")
    expect(warning).to_be_visible()
    expect(warning).to_have_attribute("role", "alert")
    expect(warning).to_contain_text("overlap")
    expect(chips).to_have_count(1)
    screenshot(page, "span_hit_overlap.png")

    # 3) a drag inside one word ("economists", 3 px in from both ends) snaps to the whole word; 0 grounds it to Others
    eco = span_of(text, "economists")
    drag(page, word(page, a.pk, eco[0]), word(page, a.pk, eco[0]))
    expect(chips).to_have_count(2)
    expect(chips.nth(1)).to_contain_text("\u201ceconomists\u201d")
    expect(warning).to_be_empty()
    page.keyboard.press("0")
    expect(chips.nth(1)).to_contain_text("\u2192 0 Others")

    # 4) A accepts the suggestion: it becomes a span grounded to its suggested variable
    page.keyboard.press("a")
    expect(loc(f"#item-{a.pk} .sg-chip-sugg")).to_have_count(0)
    expect(chips).to_have_count(3)
    expect(loc(f"#item-{a.pk}-text .sg-sugg")).to_have_count(0)
    expect(loc(f"#item-{a.pk}-todo")).to_be_empty()
    expect(loc("#hit-answered")).to_have_text("1 of 2 answered")

    # 5) the second argument has no factual span: submitting asks for the confirmation first
    loc("#hit-submit").click()
    expect(loc(f"#item-{b.pk}-error")).to_contain_text("Please answer this item.")
    expect(loc(f"#item-{b.pk}-todo")).to_contain_text("tick the box")
    assert Response.objects.count() == 0
    loc(f"#item-{b.pk}-none").check()
    expect(loc("#hit-answered")).to_have_text("2 of 2 answered")
    loc(f"#item-{a.pk}-text").focus()
    page.mouse.move(0, 0)
    screenshot(page, "span_hit.png")
    loc("#hit-submit").click()

    code = loc("#completion-code")
    expect(code).to_be_visible()
    assert code.inner_text().strip() == services.completion_code(project, worker)
    stored = {r.item_id: r.data for r in Response.objects.filter(assignment=assignment)}
    spans = stored[a.pk]["spans"]
    assert [(s["begin"], s["end"]) for s in spans] == [(sugg["begin"], sugg["end"]), young, eco]
    assert [text[s["begin"] : s["end"]] for s in spans] == [
        text[sugg["begin"] : sugg["end"]],
        "young workers their jobs",
        "economists",
    ]
    assert [s["variable"] for s in spans] == [sugg["variable"], p["variables"][1]["id"], None]
    assert [s["from_suggestion"] for s in spans] == [True, False, False]
    assert "rejected" not in stored[a.pk]  # the one suggestion was accepted: nothing rejected
    assert stored[b.pk]["spans"] == []


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_keyboard_marking_resize_delete_and_reject(live_server, page):
    project = make_span_project(n=1)
    _worker, assignment, (a,) = open_hit(page, live_server, project)
    p, text, loc = a.payload, a.payload["text"], page.locator
    chips = loc(f"#item-{a.pk} .sg-chip:not(.sg-chip-sugg)")
    expect(loc(f"#item-{a.pk}-text")).to_be_focused()

    # keyboard: move the cursor to "cost", extend over "young", Enter marks "cost young", 3 grounds it
    for _ in range(text[: text.index("cost")].count(" ") + 1):  # "$15" is two tokens: one more step
        page.keyboard.press("ArrowRight")
    expect(loc(f"#item-{a.pk}-text .sg-cursor")).to_have_text(["cost"])
    page.keyboard.press("Shift+ArrowRight")
    page.keyboard.press("Enter")
    expect(chips).to_have_count(1)
    expect(chips.first).to_contain_text("\u201ccost young\u201d")
    page.keyboard.press("3")
    # Shift+arrows move its end, Alt+Shift+arrows its start
    page.keyboard.press("Shift+ArrowRight")
    expect(chips.first).to_contain_text("\u201ccost young workers\u201d")
    page.keyboard.press("Alt+Shift+ArrowRight")
    expect(chips.first).to_contain_text("\u201cyoung workers\u201d")
    page.keyboard.press("Alt+Shift+ArrowLeft")
    page.keyboard.press("Alt+Shift+ArrowLeft")
    expect(chips.first).to_contain_text("\u201cwould cost young workers\u201d")
    expect(chips.first).to_contain_text("\u2192 3 " + p["variables"][2]["text"])  # the grounding stays
    # the accepted suggestion blocks a resize into it
    page.keyboard.press("Escape")
    page.keyboard.press("Home")
    page.keyboard.press("a")  # accepts the suggestion under the cursor ("Raising the minimum wage")
    expect(chips).to_have_count(2)
    page.keyboard.press("ArrowRight")  # leaves the suggestion's span: onto "to"
    page.keyboard.press("ArrowRight")  # "$"
    page.keyboard.press("ArrowRight")  # "15"
    page.keyboard.press("ArrowRight")  # onto "would cost young workers": selects it
    expect(loc(f"#item-{a.pk} .sg-chip.sg-selected")).to_contain_text("would cost young workers")
    page.keyboard.press("Alt+Shift+ArrowLeft")  # "15 would cost young workers": fine
    page.keyboard.press("Alt+Shift+ArrowLeft")
    page.keyboard.press("Alt+Shift+ArrowLeft")
    page.keyboard.press("Alt+Shift+ArrowLeft")  # would reach "wage": refused
    warning = loc(f"#item-{a.pk}-warning")
    expect(warning).to_contain_text("overlap")
    expect(loc(f"#item-{a.pk} .sg-chip.sg-selected")).to_contain_text("\u201cto $15 would cost young workers\u201d")
    # the end handle, dragged with the mouse onto "jobs", moves the end there
    handle = loc(f"#item-{a.pk}-text .sg-handle-end")
    expect(handle).to_have_count(1)
    h, target = handle.bounding_box(), word(page, a.pk, text.index("jobs")).bounding_box()
    page.mouse.move(h["x"] + 1, h["y"] + h["height"] / 2)
    page.mouse.down()
    page.mouse.move(target["x"] + target["width"] / 2, target["y"] + target["height"] / 2, steps=6)
    page.mouse.up()
    expect(loc(f"#item-{a.pk} .sg-chip.sg-selected")).to_contain_text(
        "\u201cto $15 would cost young workers their jobs\u201d"
    )
    # Delete removes the selected span; the accepted suggestion stays
    page.keyboard.press("Delete")
    expect(chips).to_have_count(1)
    expect(chips.first).to_contain_text("Raising the minimum wage")
    # the ✗ of a chip: remove the accepted span too; with no span the box asks for confirmation
    chips.first.locator("button[data-act=remove]").click()
    expect(chips).to_have_count(0)
    expect(loc(f"#item-{a.pk}-none")).to_be_visible()
    expect(loc("#hit-answered")).to_have_text("0 of 1 answered")
    loc(f"#item-{a.pk}-none").check()
    expect(loc("#hit-answered")).to_have_text("1 of 1 answered")
    loc(f"#item-{a.pk}-text").focus()
    page.keyboard.press("Control+Enter")
    expect(loc("#completion-code")).to_be_visible()
    data = Response.objects.get(assignment=assignment).data
    assert data["spans"] == []
    # the suggestion was taken and then removed: recorded as rejected
    sugg = p["suggestions"][0]
    assert data["rejected"] == [{"begin": sugg["begin"], "end": sugg["end"]}]


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_rejecting_a_suggestion_is_stored(live_server, page):
    """R rejects the outlined suggestion: it disappears from the text and the chips, and the stored answer lists
    it under "rejected" (the model-in-the-loop record); the grounded suggestion is shown first (screenshot)."""
    project = make_span_project(n=1)
    _worker, assignment, (a,) = open_hit(page, live_server, project)
    p, text, loc = a.payload, a.payload["text"], page.locator
    sugg = p["suggestions"][0]
    assert sugg["variable"] == p["variables"][0]["id"]  # grounded: the chip names the suggested variable
    chip = loc(f"#item-{a.pk} .sg-chip-sugg")
    expect(chip).to_have_count(1)
    expect(chip).to_contain_text("\u201c" + text[sugg["begin"] : sugg["end"]] + "\u201d")
    expect(chip).to_contain_text("\u2192 1 " + p["variables"][0]["text"])
    expect(loc(f"#item-{a.pk}-todo")).to_contain_text("accept or reject 1 suggestion")
    page.mouse.move(0, 0)
    screenshot(page, "span_hit_suggestion.png")
    page.keyboard.press("r")
    expect(chip).to_have_count(0)
    expect(loc(f"#item-{a.pk}-text .sg-sugg")).to_have_count(0)
    expect(loc(f"#item-{a.pk}-todo")).to_contain_text("tick the box")
    loc(f"#item-{a.pk}-none").check()
    expect(loc("#hit-answered")).to_have_text("1 of 1 answered")
    loc("#hit-submit").click()
    expect(loc("#completion-code")).to_be_visible()
    data = Response.objects.get(assignment=assignment).data
    assert data == {"spans": [], "rejected": [{"begin": sugg["begin"], "end": sugg["end"]}]}


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_schemes_are_asked_and_stored(live_server, page):
    project = make_span_project(n=1, config={"ask_schemes": True})
    _worker, assignment, (a,) = open_hit(page, live_server, project)
    loc = page.locator
    boxes = loc(f"#item-{a.pk} input[name='item-{a.pk}-schemes[]']")
    expect(boxes).to_have_count(len(project.config["schemes"]))
    page.keyboard.press("a")  # the suggestion, grounded as suggested
    expect(loc(f"#item-{a.pk} .sg-chip:not(.sg-chip-sugg)")).to_have_count(1)
    expect(loc(f"#item-{a.pk}-todo")).to_contain_text("scheme")
    expect(loc("#hit-answered")).to_have_text("0 of 1 answered")
    boxes.nth(2).check()
    expect(loc("#hit-answered")).to_have_text("1 of 1 answered")
    screenshot(page, "span_hit_schemes.png")
    loc("#hit-submit").click()
    expect(loc("#completion-code")).to_be_visible()
    data = Response.objects.get(assignment=assignment).data
    assert data["schemes"] == [project.config["schemes"][2]]
    assert [s["from_suggestion"] for s in data["spans"]] == [True]
