"""Issue 4 item 5 (page part): in a free-span project (config free_spans, Arg-CTRL §3.1 Step 1) the annotator marks
any words of a sentence, not only candidates: with the keyboard only (Shift+Tab to the sentence, arrows move a word
cursor, Shift+arrows extend it, Enter adds, Delete removes, an overlap is refused with the visible warning) and with
the mouse (a drag snaps to whole words and becomes an aspect; a double-click on a word overlapping a chosen aspect is
refused); the candidate field still works; the stored responses hold the spans ("list": "free"). Screenshot:
$ARGORA_VAR_DIR/artifacts/screenshots/aspect_free.png."""

from __future__ import annotations

import os
import re

import pytest
from playwright.sync_api import expect

from annotation import services
from annotation.models import Assignment, Response, Worker
from annotation.task_types.aspect.candidates import tokenize
from tests.annotation.test_aspect_page import make_aspect_project

# the page's own input (keyboard, mouse) and what it sends; the answers' storage runs on both engines in
# test_no_lost_answers and the task type's page tests
pytestmark = pytest.mark.one_database

SHOTS = os.path.join(os.environ.get("ARGORA_VAR_DIR", "/tmp"), "artifacts", "screenshots")


def words(text, lo, hi):
    """``(begin, length, text)`` of tokens lo..hi (inclusive) of ``text``."""
    toks = tokenize(text)
    b, e = toks[lo].begin, toks[hi].end
    return b, e - b, text[b:e]


def token_index(text, word):
    return next(i for i, t in enumerate(tokenize(text)) if t.text == word)


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_free_spans_with_keyboard_and_mouse(live_server, page):
    project = make_aspect_project(slug="aspects-free", config={"free_spans": True})
    page.goto(f"{live_server.url}/invite/{project.invite_token}/")
    expect(page).to_have_url(re.compile(rf"/work/{project.slug}/$"))
    expect(page.locator(".hit-item")).to_have_count(3)
    worker = Worker.objects.get(source=Worker.Source.INVITE)
    assignment = Assignment.objects.get(worker=worker)
    items = services.assignment_items(assignment)
    ids = [i.pk for i in items]
    t0, t1, _t2 = (i.payload["text"] for i in items)
    kb = page.keyboard

    def loc(sel):
        return page.locator(sel)

    def chips(n):
        return loc(f"#item-{ids[n]} .aspect-chip")

    # --- sentence 1, keyboard only ------------------------------------------------------------------------
    expect(loc(f"#item-{ids[0]}-input")).to_be_focused()
    expect(loc(f"#item-{ids[0]}-add")).to_be_disabled()
    kb.press("Shift+Tab")  # the sentence is a tab stop just before the field
    sent0 = loc(f"#item-{ids[0]}-text")
    expect(sent0).to_be_focused()
    cursor0 = loc(f"#item-{ids[0]}-cursor")
    expect(cursor0).to_have_text("Selected: \u201cNuclear\u201d")  # the word cursor starts on the first word
    expect(loc(f"#item-{ids[0]}-add")).to_be_enabled()
    i = token_index(t0, "reactors")
    for _ in range(i):
        kb.press("ArrowRight")
    for _ in range(4):
        kb.press("Shift+ArrowRight")
    b0, l0, s0 = words(t0, i, i + 4)
    assert s0 == "reactors can easily be targeted"  # 5 words: never a candidate
    expect(cursor0).to_have_text(f"Selected: \u201c{s0}\u201d (5 words)")
    expect(loc(f"#item-{ids[0]}-text .cursor")).to_have_count(9)  # 5 words and the 4 spaces between them
    kb.press("Enter")
    expect(chips(0)).to_have_text([s0 + "×"])
    expect(loc(f"#item-{ids[0]} .aspect-chip.free")).to_have_count(1)
    expect(loc(f"#item-{ids[0]}-text mark.free")).to_have_text([s0])
    expect(sent0).to_be_focused()
    expect(loc("#hit-answered")).to_have_text("1 of 3 answered")
    # the cursor went on to the next word; back onto the aspect, Enter is refused with the overlap warning
    expect(cursor0).to_have_text("Selected: \u201cby\u201d")
    kb.press("ArrowLeft")
    kb.press("Shift+ArrowRight")
    kb.press("Enter")
    warning0 = loc(f"#item-{ids[0]}-warning")
    expect(warning0).to_be_visible()
    expect(warning0).to_have_attribute("role", "alert")
    expect(warning0).to_contain_text("overlaps your aspect \u201c" + s0 + "\u201d")
    expect(loc(f"#item-{ids[0]}-text mark.flash")).to_have_text([s0])
    expect(chips(0)).to_have_count(1)
    # Escape shrinks the cursor to one word (and moving on clears the warning); "attacks ." added, then Delete
    kb.press("Escape")
    expect(warning0).to_be_empty()
    expect(cursor0).to_have_text("Selected: \u201cby\u201d")
    kb.press("ArrowRight")
    kb.press("ArrowRight")
    kb.press("Shift+ArrowRight")
    expect(cursor0).to_have_text("Selected: \u201cattacks.\u201d (2 words)")
    kb.press("Enter")
    expect(chips(0)).to_have_count(2)
    expect(cursor0).to_have_text("Selected: \u201c.\u201d")  # the last word: the cursor stays in the new aspect
    kb.press("ArrowLeft")  # onto "attacks"
    kb.press("Delete")
    expect(chips(0)).to_have_text([s0 + "×"])
    assert Assignment.objects.get(pk=assignment.pk).status == Assignment.Status.RESERVED  # Enter never submitted

    # --- sentence 2, the mouse: a drag from inside one word to inside another snaps to whole words -----------
    first, last = token_index(t1, "uncle"), token_index(t1, "station")
    box_a = loc(f'#item-{ids[1]}-text .aspect-tok[data-i="{first}"]').bounding_box()
    box_b = loc(f'#item-{ids[1]}-text .aspect-tok[data-i="{last}"]').bounding_box()
    page.mouse.move(box_a["x"] + box_a["width"] * 0.5, box_a["y"] + box_a["height"] / 2)
    page.mouse.down()
    page.mouse.move(box_b["x"] + box_b["width"] * 0.4, box_b["y"] + box_b["height"] / 2, steps=8)
    page.mouse.up()
    b1, l1, s1 = words(t1, first, last)
    assert s1 == "uncle visited a power station"
    expect(chips(1)).to_have_text([s1 + "×"])
    expect(loc(f"#item-{ids[1]}-text mark.free")).to_have_text([s1])
    assert page.evaluate("window.getSelection().toString()") == ""  # the text selection became the aspect
    # a double-click on a word of it selects that word: refused, the same warning
    loc(f'#item-{ids[1]}-text .aspect-tok[data-i="{token_index(t1, "power")}"]').dblclick()
    warning1 = loc(f"#item-{ids[1]}-warning")
    expect(warning1).to_contain_text("\u201cpower\u201d overlaps your aspect \u201c" + s1 + "\u201d")
    expect(chips(1)).to_have_count(1)
    # a click puts the cursor on a word, Shift+click extends it, the button adds it
    loc(f'#item-{ids[1]}-text .aspect-tok[data-i="{token_index(t1, "last")}"]').click()
    loc(f'#item-{ids[1]}-text .aspect-tok[data-i="{token_index(t1, "summer")}"]').click(modifiers=["Shift"])
    expect(loc(f"#item-{ids[1]}-cursor")).to_have_text("Selected: \u201clast summer\u201d (2 words)")
    loc(f"#item-{ids[1]}-add").click()
    expect(chips(1)).to_have_text([s1 + "×", "last summer×"])
    expect(loc(f"#item-{ids[1]}-text mark")).to_have_count(2)
    loc(f"#item-{ids[1]} .aspect-chip button").last.click()  # chips stay removable
    expect(chips(1)).to_have_text([s1 + "×"])
    # the overlap refusal, for the screenshot
    loc(f'#item-{ids[1]}-text .aspect-tok[data-i="{token_index(t1, "visited")}"]').dblclick()
    expect(warning1).to_contain_text("overlaps")

    # --- sentence 3: the candidate field works as before -----------------------------------------------------
    loc(f"#item-{ids[2]}-input").focus()
    kb.press("ArrowDown")
    kb.press("Enter")
    c2 = items[2].payload["candidates"][0]
    expect(chips(2)).to_have_text([c2["text"] + "×"])
    kb.press("Escape")
    expect(loc("#hit-answered")).to_have_text("3 of 3 answered")
    loc(f"#item-{ids[0]}-text").focus()  # shows sentence 1's word cursor in the screenshot
    os.makedirs(SHOTS, exist_ok=True)
    path = os.path.join(SHOTS, "aspect_free.png")
    page.screenshot(path=path)
    print(f"screenshot: {path}")
    assert os.path.getsize(path) > 10_000

    # a reload keeps every aspect, free spans included (the draft), and the answered count
    expect(loc("#hit-saved")).to_have_text("Your answers are saved as you go.")
    page.reload()
    expect(loc("#hit-saved")).to_have_text("Your saved answers are back.")
    expect(chips(0)).to_have_text([s0 + "×"])
    expect(chips(1)).to_have_text([s1 + "×"])
    expect(chips(2)).to_have_text([c2["text"] + "×"])
    expect(loc(f"#item-{ids[0]} .aspect-chip.free")).to_have_count(1)
    expect(loc(f"#item-{ids[0]}-text mark.free")).to_have_text([s0])
    expect(loc("#hit-answered")).to_have_text("3 of 3 answered")
    loc(f"#item-{ids[2]}-input").focus()

    kb.press("Control+Enter")
    expect(loc("#completion-code")).to_be_visible()
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.SUBMITTED
    stored = {r.item_id: r.data for r in Response.objects.filter(assignment=assignment)}
    assert stored[ids[0]]["aspects"] == [{"begin": b0, "length": l0, "text": s0, "list": "free"}]
    assert stored[ids[1]]["aspects"] == [{"begin": b1, "length": l1, "text": s1, "list": "free"}]
    assert [(a["begin"], a["length"], a["list"]) for a in stored[ids[2]]["aspects"]] == [
        (c2["begin"], c2["length"], "ranked")
    ]
