"""Issue 4 acceptance (page part): in headless Chromium at 1366x768, a crowdworker joins an aspect project through
its invite link and completes a HIT with the keyboard only: type-ahead + Enter from the first list, Alt+M for the
second list and a pick from it, the overlap warning, Backspace to remove, "contains no aspect" with the sum
(digits only), submit, the completion code; the stored responses hold the spans. Screenshots of the HIT are
saved under $ARGORA_VAR_DIR/artifacts/screenshots/."""

from __future__ import annotations

import os
import re

import pytest
from playwright.sync_api import expect

from annotation import services
from annotation.models import Assignment, Response, Worker
from tests.annotation.test_aspect_page import make_aspect_project

# the page's own input (keyboard, mouse) and what it sends; the answers' storage runs on both engines in
# test_no_lost_answers and the task type's page tests
pytestmark = pytest.mark.one_database

SHOTS = os.path.join(os.environ.get("ARGORA_VAR_DIR", "/tmp"), "artifacts", "screenshots")


def overlap(a, b):
    return a["begin"] < b["begin"] + b["length"] and b["begin"] < a["begin"] + a["length"]


def first_option(payload, chosen, revealed, typed):
    """The candidate the page highlights after typing ``typed`` (the order of the aspect hit.js: a candidate typed in
    full, case aside, first; else matching first-list candidates by rank, then, once revealed, matching second-list
    candidates in sentence order)."""
    t = typed.strip().lower()
    pool = list(payload["candidates"]) + (
        sorted(payload["more"], key=lambda c: (c["begin"], c["length"])) if revealed else []
    )
    pool = [c for c in pool if c["id"] not in chosen]
    return next((c for c in pool if c["text"].lower() == t), None) or next(
        (c for c in pool if t in c["text"].lower()), None
    )


def screenshot(page, name):
    os.makedirs(SHOTS, exist_ok=True)
    path = os.path.join(SHOTS, name)
    page.screenshot(path=path)
    print(f"screenshot: {path}")
    return path


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_complete_aspect_hit_with_keyboard_only(live_server, page):
    project = make_aspect_project()
    page.goto(f"{live_server.url}/invite/{project.invite_token}/")
    expect(page).to_have_url(re.compile(rf"/work/{project.slug}/$"))
    expect(page.locator(".hit-item")).to_have_count(3)
    worker = Worker.objects.get(source=Worker.Source.INVITE)
    assignment = Assignment.objects.get(worker=worker)
    items = services.assignment_items(assignment)
    ids = [i.pk for i in items]
    p0, p1, p2 = (i.payload for i in items)

    def loc(sel):
        return page.locator(sel)

    # the page opens with the cursor in the field of sentence 1; nothing is listed until the worker types
    inp0 = loc(f"#item-{ids[0]}-input")
    expect(inp0).to_be_focused()
    expect(loc(f"#item-{ids[0]}-listbox")).to_be_hidden()
    expect(loc("#hit-answered")).to_have_text("0 of 3 answered")
    expect(loc(f"#item-{ids[0]} .aspect-lists")).to_be_hidden()  # the plain-form checkboxes are behind the widget
    expect(loc("#instructions")).to_have_attribute("open", "")
    # the page's global keys (? instructions, j/k items, digits, Enter) stay out of the way while typing
    page.keyboard.type("?j1")
    expect(inp0).to_have_value("?j1")
    expect(inp0).to_be_focused()
    expect(loc("#instructions")).to_have_attribute("open", "")
    expect(loc(f"#item-{ids[0]}-listbox")).to_contain_text("No match in the first list.")
    page.keyboard.press("Escape")  # closes the list
    expect(loc(f"#item-{ids[0]}-listbox")).to_be_hidden()
    page.keyboard.press("Enter")  # nothing highlighted, text in the field: neither a pick nor a submission
    page.keyboard.press("Escape")  # clears the field
    expect(inp0).to_have_value("")
    expect(loc("#hit-errors")).to_be_hidden()

    # 1) first list, type-ahead + Enter: the top-ranked candidate
    c1 = p0["candidates"][0]
    page.keyboard.type(c1["text"][:4])
    active = loc(f"#item-{ids[0]}-listbox [role=option][aria-selected=true]")
    expect(active).to_contain_text(c1["text"])
    expect(loc(f"#item-{ids[0]}-listbox")).to_contain_text("show more candidates")  # the second list is offered
    page.keyboard.press("Enter")
    expect(loc(f"#item-{ids[0]} .aspect-chip")).to_have_text([c1["text"] + "×"])
    expect(loc(f"#item-{ids[0]}-text mark")).to_have_text([c1["text"]])
    expect(inp0).to_have_value("")
    expect(inp0).to_be_focused()
    expect(loc("#hit-answered")).to_have_text("1 of 3 answered")

    # 2) Alt+M shows the second list; candidates from both lists are offered from then on
    page.keyboard.press("Alt+m")
    expect(loc(f"#item-{ids[0]} .aspect-more")).to_have_attribute("aria-pressed", "true")
    expect(loc(f"#item-{ids[0]}-listbox")).to_contain_text("More candidates (second list)")
    expect(inp0).to_be_focused()

    # 3) an aspect overlapping the chosen one is refused with a visible warning
    chosen = {c1["id"]}
    o = next(
        (
            c
            for c in p0["candidates"] + p0["more"]
            if c["id"] != c1["id"] and overlap(c, c1) and first_option(p0, chosen, True, c["text"]) == c
        ),
        None,
    )
    assert o is not None, "the sentence offers no reachable candidate overlapping the first aspect"
    page.keyboard.type(o["text"])
    expect(active).to_contain_text("overlaps")
    page.keyboard.press("Enter")
    warning = loc(f"#item-{ids[0]}-warning")
    expect(warning).to_be_visible()
    expect(warning).to_have_attribute("role", "alert")
    expect(warning).to_contain_text("overlaps")
    expect(warning).to_contain_text(c1["text"])
    expect(loc(f"#item-{ids[0]} .aspect-chip")).to_have_count(1)
    expect(loc(f"#item-{ids[0]}-listbox")).to_be_hidden()  # the list closes so it does not cover the warning
    screenshot(page, "aspect_hit_overlap.png")
    page.keyboard.press("Escape")  # clears the field
    expect(inp0).to_have_value("")

    # 4) a candidate only in the second list, picked by type-ahead + Tab
    m = next(
        (
            c
            for c in p0["more"]
            if not overlap(c, c1)
            and first_option(p0, chosen, True, c["text"]) == c
            and first_option(p0, chosen, False, c["text"]) is None
        ),
        None,
    )
    assert m is not None, "no second-list candidate to pick"
    page.keyboard.type(m["text"])
    expect(warning).to_be_empty()  # typing on clears the warning
    expect(active).to_contain_text(m["text"])
    screenshot(page, "aspect_hit_lists.png")  # the list open with both lists
    page.keyboard.press("Tab")
    expect(loc(f"#item-{ids[0]} .aspect-chip")).to_have_count(2)
    expect(loc(f"#item-{ids[0]} .aspect-chip.second")).to_have_text([m["text"] + "×"])
    expect(loc(f"#item-{ids[0]}-text mark")).to_have_count(2)
    chosen.add(m["id"])

    # 5) sentence 2: Tab to "contains no aspect", Space ticks it and the sum appears; digits only
    page.keyboard.press("Escape")
    page.keyboard.press("Tab")
    expect(loc(f"#item-{ids[0]} .aspect-more")).to_be_focused()
    page.keyboard.press("Tab")
    expect(loc(f"#item-{ids[0]}-no_aspect")).to_be_focused()
    page.keyboard.press("Tab")
    expect(loc(f"#item-{ids[0]}-not_in_lists")).to_be_focused()
    page.keyboard.press("Tab")
    expect(loc(f"#item-{ids[1]}-input")).to_be_focused()
    expect(loc(f"#item-{ids[1]} .aspect-question")).to_be_hidden()
    page.keyboard.press("Tab")
    page.keyboard.press("Tab")
    expect(loc(f"#item-{ids[1]}-no_aspect")).to_be_focused()
    page.keyboard.press("Space")
    expect(loc(f"#item-{ids[1]}-no_aspect")).to_be_checked()
    expect(loc(f"#item-{ids[1]} .aspect-question")).to_be_visible()
    expect(loc(f"#item-{ids[1]} .aspect-question")).to_contain_text(p1["check"]["question"])
    answer = loc(f"#item-{ids[1]}-check")
    expect(answer).to_be_focused()
    expect(loc("#hit-answered")).to_have_text("1 of 3 answered")  # ticked, but the sum is missing
    page.keyboard.type("x")
    expect(answer).to_have_value("")
    expect(loc(f"#item-{ids[1]}-warning")).to_contain_text("digits only")
    page.keyboard.type(str(p1["check"]["a"] + p1["check"]["b"]))
    expect(loc(f"#item-{ids[1]}-warning")).to_be_empty()
    expect(loc("#hit-answered")).to_have_text("2 of 3 answered")

    # 6) sentence 3: ArrowDown + Enter picks the top candidate, Backspace removes it, the second one instead
    page.keyboard.press("Tab")
    inp2 = loc(f"#item-{ids[2]}-input")
    expect(inp2).to_be_focused()
    page.keyboard.press("ArrowDown")
    page.keyboard.press("Enter")
    expect(loc(f"#item-{ids[2]} .aspect-chip")).to_have_text([p2["candidates"][0]["text"] + "×"])
    page.keyboard.press("Backspace")
    expect(loc(f"#item-{ids[2]} .aspect-chip")).to_have_count(0)
    expect(loc("#hit-answered")).to_have_text("2 of 3 answered")
    second = p2["candidates"][1]
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")
    expect(loc(f"#item-{ids[2]}-listbox [role=option][aria-selected=true]")).to_contain_text(second["text"])
    page.keyboard.press("Enter")
    expect(loc(f"#item-{ids[2]} .aspect-chip")).to_have_text([second["text"] + "×"])
    page.keyboard.press("Escape")
    expect(loc("#hit-answered")).to_have_text("3 of 3 answered")
    # digits typed in the fields were text, not shortcuts of other task types; nothing was submitted yet
    assert Assignment.objects.get(pk=assignment.pk).status == Assignment.Status.RESERVED
    path = screenshot(page, "aspect_hit.png")
    assert os.path.getsize(path) > 10_000

    # 7) Enter in the empty field submits (the JSON API); the completion code follows
    page.keyboard.press("Enter")
    code = loc("#completion-code")
    expect(code).to_be_visible()
    assert code.inner_text().strip() == services.completion_code(project, worker)

    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.SUBMITTED
    stored = {r.item_id: r.data for r in Response.objects.filter(assignment=assignment)}
    spans0 = sorted((a["begin"], a["length"], a["text"], a["list"]) for a in stored[ids[0]]["aspects"])
    assert spans0 == sorted(
        [(c1["begin"], c1["length"], c1["text"], "ranked"), (m["begin"], m["length"], m["text"], "more")]
    )
    assert stored[ids[0]]["no_aspect"] is False and stored[ids[0]]["not_in_lists"] is False
    assert stored[ids[1]] == {"aspects": [], "no_aspect": True, "not_in_lists": False}
    assert [(a["begin"], a["length"]) for a in stored[ids[2]]["aspects"]] == [(second["begin"], second["length"])]


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_wrong_sum_is_refused_by_the_server_and_shown_at_the_sentence(live_server, page):
    project = make_aspect_project(slug="aspects-wrong-sum")
    page.goto(f"{live_server.url}/invite/{project.invite_token}/")
    expect(page.locator(".hit-item")).to_have_count(3)
    assignment = Assignment.objects.get(worker__source=Worker.Source.INVITE)
    ids = [i.pk for i in services.assignment_items(assignment)]
    kb = page.keyboard

    # sentence 1: the button (Tab, Enter) shows the second list and hands focus back to the field
    expect(page.locator(f"#item-{ids[0]}-input")).to_be_focused()
    kb.press("Tab")
    expect(page.locator(f"#item-{ids[0]} .aspect-more")).to_be_focused()
    kb.press("Enter")
    expect(page.locator(f"#item-{ids[0]} .aspect-more")).to_have_attribute("aria-pressed", "true")
    expect(page.locator(f"#item-{ids[0]}-input")).to_be_focused()
    expect(page.locator(f"#item-{ids[0]}-listbox")).to_contain_text("More candidates (second list)")
    kb.press("ArrowDown")
    kb.press("Enter")
    kb.press("Escape")
    for _ in range(4):  # button, two boxes, next sentence
        kb.press("Tab")

    # sentence 2: "not in any list" with a wrong sum (the page cannot know it is wrong)
    kb.press("Tab")  # the button
    kb.press("Tab")  # "no aspect"
    kb.press("Tab")  # "not in any list"
    kb.press("Space")
    expect(page.locator(f"#item-{ids[1]}-check")).to_be_focused()
    kb.type("9999")  # never a sum of two digits
    kb.press("Tab")

    # sentence 3: text matching nothing offers "show more" as the highlighted entry; Enter takes it
    expect(page.locator(f"#item-{ids[2]}-input")).to_be_focused()
    kb.type("zzz")
    expect(page.locator(f"#item-{ids[2]}-listbox [aria-selected=true]")).to_contain_text("show more candidates")
    kb.press("Enter")
    expect(page.locator(f"#item-{ids[2]} .aspect-more")).to_have_attribute("aria-pressed", "true")
    expect(page.locator(f"#item-{ids[2]}-listbox")).to_contain_text("No candidate contains")
    kb.press("Escape")
    kb.press("Escape")
    kb.press("ArrowDown")
    kb.press("Enter")
    kb.press("Escape")
    expect(page.locator("#hit-answered")).to_have_text("3 of 3 answered")
    page.keyboard.press("Control+Enter")
    error = page.locator(f"#item-{ids[1]}-error")
    expect(error).to_contain_text("the sum is not right")
    expect(page.locator(f"#item-{ids[1]}-input")).to_be_focused()  # hit.js focuses the item; it hands over to the field
    assert Response.objects.count() == 0
    assert Assignment.objects.get(pk=assignment.pk).status == Assignment.Status.RESERVED


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_gold_item_shows_its_instruction_above_the_sentence(live_server, page):
    """App. A's quality checks: the gold item asks for specific words ("Select 'kill birds' as the aspect of this
    sentence."); the instruction is visible above its sentence while the widget works as for any other sentence."""
    from annotation.task_types.aspect.items import build_payload
    from annotation.task_types.aspect.rankers import BaselineRanker

    project = make_aspect_project(slug="aspects-gold-instruction")
    text = "Wind turbines kill birds."
    payload = build_payload(text, "nuclear energy", stance="con", ranker=BaselineRanker(load_from_db=False), top_k=5)
    begin = text.index("kill birds")
    services.add_items(
        project,
        [],
        gold=[{"payload": payload, "expected": {"aspects": [{"begin": begin, "length": 10}], "no_aspect": False}}],
    )
    project.gold_rate = 1 / 3
    project.save()
    page.goto(f"{live_server.url}/invite/{project.invite_token}/")
    expect(page.locator(".hit-item")).to_have_count(4)
    gold = next(
        i for i in services.assignment_items(Assignment.objects.get(worker__source=Worker.Source.INVITE)) if i.is_gold
    )
    note = page.locator(f"#item-{gold.pk}-instruction")
    expect(note).to_be_visible()
    expect(note).to_have_text("Note: Select 'kill birds' as the aspect of this sentence.")
    expect(page.locator(".aspect-instruction")).to_have_count(1)
    sentence = page.locator(f"#item-{gold.pk}-text")
    assert note.bounding_box()["y"] < sentence.bounding_box()["y"]
    expect(sentence).to_have_attribute("aria-describedby", f"item-{gold.pk}-instruction")
    field = page.locator(f"#item-{gold.pk}-input")
    field.focus()
    page.keyboard.type("kill birds")
    expect(page.locator(f"#item-{gold.pk}-listbox")).to_be_visible()
    note.scroll_into_view_if_needed()
    screenshot(page, "aspect_gold_instruction.png")


FOCUSED = (
    "() => { const a = document.activeElement; return a === document.body || a === null ? 'BODY' : "
    "(a.id || a.className || a.tagName) + (a.offsetParent === null ? ' (hidden)' : ''); }"
)


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_typing_a_candidate_in_full_picks_it_not_a_longer_one(live_server, page):
    project = make_aspect_project()
    page.goto(f"{live_server.url}/invite/{project.invite_token}/")
    expect(page.locator(".hit-item")).to_have_count(3)
    assignment = Assignment.objects.get(worker=Worker.objects.get(source=Worker.Source.INVITE))
    items = services.assignment_items(assignment)
    ids, payloads = [i.pk for i in items], [i.payload for i in items]

    # sentence 1 ranks "terrorist attacks" above "terrorist": typing "TERRORIST" in full picks "terrorist"
    ranked = [c["text"] for c in payloads[0]["candidates"]]
    longer = next(t for t in ranked if t != "terrorist" and "terrorist" in t)
    assert ranked.index(longer) < ranked.index("terrorist"), ranked  # the bug's case: a longer match ranks higher
    inp0 = page.locator(f"#item-{ids[0]}-input")
    expect(inp0).to_be_focused()
    page.keyboard.type("TERRORIST")
    active = page.locator(f"#item-{ids[0]}-listbox [role=option][aria-selected=true]")
    expect(active).to_have_text("terrorist")
    expect(page.locator(f"#item-{ids[0]}-listbox [role=option]").first).to_have_text("terrorist")
    page.keyboard.press("Enter")
    expect(page.locator(f"#item-{ids[0]} .aspect-chip")).to_have_text(["terrorist×"])
    # text that is no candidate in full keeps the ranked order: the top-ranked match is highlighted
    page.keyboard.type("reac")
    expect(active).to_have_text("reactors")

    # sentence 2: "power station" is only in the second list, while first-list candidates contain it
    page.locator(f"#item-{ids[1]}-input").focus()
    page.keyboard.type("power station")
    assert any("power station" in c["text"] and c["text"] != "power station" for c in payloads[1]["candidates"])
    assert any(c["text"] == "power station" for c in payloads[1]["more"])
    active1 = page.locator(f"#item-{ids[1]}-listbox [role=option][aria-selected=true]")
    expect(active1).to_have_text(first_option(payloads[1], set(), False, "power station")["text"])
    page.keyboard.press("Alt+m")  # the second list joins: the exact match wins over the first list's
    expect(active1).to_have_text("power station")
    page.keyboard.press("Tab")  # Tab picks the highlighted candidate
    expect(page.locator(f"#item-{ids[1]} .aspect-chip.second")).to_have_text(["power station×"])
    page.keyboard.press("Escape")
    page.keyboard.press("Escape")
    page.keyboard.press("Enter")  # submit (sentence 3 is unanswered: the page says so and stores nothing)
    expect(page.locator("#hit-errors")).to_be_visible()
    assert Assignment.objects.get(pk=assignment.pk).status == Assignment.Status.RESERVED


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_tab_after_picking_moves_to_the_next_control(live_server, page):
    project = make_aspect_project()
    page.goto(f"{live_server.url}/invite/{project.invite_token}/")
    expect(page.locator(".hit-item")).to_have_count(3)
    assignment = Assignment.objects.get(worker=Worker.objects.get(source=Worker.Source.INVITE))
    ids = [i.pk for i in services.assignment_items(assignment)]
    listbox = page.locator(f"#item-{ids[0]}-listbox")
    expect(listbox).to_have_attribute("tabindex", "-1")

    # with both lists shown, pick with Enter: the list closes (it would cover the next sentence); typing opens it
    # again, long enough to scroll (a scroller is a tab stop in Chromium); Tab then leaves the field for the next
    # control
    page.keyboard.press("Alt+m")
    page.keyboard.type("clean")
    page.keyboard.press("Enter")
    expect(page.locator(f"#item-{ids[0]} .aspect-chip")).to_have_text(["clean×"])
    expect(listbox).to_be_hidden()
    page.keyboard.type("c")
    page.keyboard.press("Backspace")  # an empty field: the whole list, nothing highlighted
    expect(listbox).to_be_visible()
    assert listbox.evaluate("el => el.scrollHeight > el.clientHeight")
    page.keyboard.press("Tab")
    expect(page.locator(f"#item-{ids[0]} .aspect-more")).to_be_focused()
    expect(listbox).to_be_hidden()
    assert page.evaluate(FOCUSED) == "aspect-more"

    # the last sentence: pick, then Tab walks its controls to the submit button, never through <body>
    page.locator(f"#item-{ids[2]}-input").focus()
    page.keyboard.press("Alt+m")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("Enter")
    expect(page.locator(f"#item-{ids[2]} .aspect-chip")).to_have_count(1)
    expect(page.locator(f"#item-{ids[2]}-listbox")).to_be_hidden()  # picked: the list closed
    walked = []
    for _ in range(8):
        page.keyboard.press("Tab")
        walked.append(page.evaluate(FOCUSED))
        assert walked[-1] != "BODY" and "(hidden)" not in walked[-1], walked
        if walked[-1] == "hit-submit":
            break
    assert walked[0] == "aspect-more" and walked[-1] == "hit-submit", walked
    expect(page.locator("#hit-submit")).to_be_focused()


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_the_suggestion_list_closes_on_a_pick_and_when_the_field_loses_focus(live_server, page):
    project = make_aspect_project()
    page.goto(f"{live_server.url}/invite/{project.invite_token}/")
    expect(page.locator(".hit-item")).to_have_count(3)
    assignment = Assignment.objects.get(worker=Worker.objects.get(source=Worker.Source.INVITE))
    items = services.assignment_items(assignment)
    ids = [i.pk for i in items]
    first = items[0].payload["candidates"][0]
    second = next(c for c in items[0].payload["candidates"][1:] if not overlap(c, first))
    listbox, field = page.locator(f"#item-{ids[0]}-listbox"), page.locator(f"#item-{ids[0]}-input")

    # Enter on the highlighted candidate: picked, and the list no longer covers the next sentence
    page.keyboard.type(first["text"])
    expect(listbox).to_be_visible()
    page.keyboard.press("Enter")
    expect(page.locator(f"#item-{ids[0]} .aspect-chip")).to_have_text([first["text"] + "×"])
    expect(listbox).to_be_hidden()
    expect(field).to_be_focused()
    expect(page.locator(f"#item-{ids[1]}-text")).to_be_visible()
    # a click on an option picks it and closes the list too
    page.keyboard.press("ArrowDown")
    expect(listbox).to_be_visible()
    listbox.locator("[role=option]", has_text=second["text"]).first.click()
    expect(page.locator(f"#item-{ids[0]} .aspect-chip")).to_have_count(2)
    expect(listbox).to_be_hidden()
    expect(field).to_have_attribute("aria-expanded", "false")
    # open, then focus leaves the field (a click on the next sentence's field): the list closes
    page.keyboard.type("a")
    expect(listbox).to_be_visible()
    page.locator(f"#item-{ids[1]}-input").click()
    expect(listbox).to_be_hidden()
    expect(field).to_have_attribute("aria-expanded", "false")
    assert Response.objects.count() == 0  # nothing was submitted on the way
