"""One HIT of every HIT task type completed by touch on a phone: a 390x844 context with ``is_mobile`` and
``has_touch`` (the ``phone`` fixture), every answer given with ``locator.tap()`` only -- no keyboard, no mouse
click -- and the stored answer checked. Choices are tapped on their labels (BWS: the most and the least similar pair
of each task), aspects picked by tapping the field and an option of its list (the list then closes) or, with free
spans, by tapping the first and the last word and "Add selected span"; span grounding marks words the same way
("Mark selected words"), grounds by tapping a variable and accepts the suggestion by tapping its ✓. No page scrolls
sideways. Screenshots: $ARGORA_VAR_DIR/screenshots/touch-<task type>.png (the whole page, 390 px wide)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from django.conf import settings
from playwright.sync_api import expect

from annotation import services
from annotation.models import Assignment, Response, Worker
from tests.annotation.test_aspect_page import make_aspect_project
from tests.annotation.test_span_page import make_span_project, span_of
from tests.browser.test_aspect_free_spans import token_index, words
from tests.browser.test_no_lost_answers import _bws, _likert, _pairwise, _valnov
from tests.browser.test_sentence_label_hit import make_project as make_sentence_project

# what these test is touch input on the page (the answers' storage is tested on both engines in test_no_lost_answers)
pytestmark = [pytest.mark.browser, pytest.mark.one_database, pytest.mark.django_db(transaction=True)]

YES = {"yes": True, "no": False}


def open_hit(phone, live_server, project):
    phone.goto(f"{live_server.url}/invite/{project.invite_token}/")
    expect(phone.locator(".hit-item").first).to_be_visible()
    worker = Worker.objects.filter(source=Worker.Source.INVITE).order_by("-pk").first()
    assignment = Assignment.objects.get(worker=worker, project=project, status=Assignment.Status.RESERVED)
    return assignment, services.assignment_items(assignment)


def fits(phone, name: str) -> None:
    """No sideways scrolling on the phone; a screenshot of the whole page."""
    overflow = phone.evaluate("() => document.scrollingElement.scrollWidth - document.scrollingElement.clientWidth")
    out = Path(settings.VAR_DIR) / "screenshots" / f"touch-{name}.png"
    out.parent.mkdir(parents=True, exist_ok=True)
    phone.screenshot(path=str(out), full_page=True)
    wide = phone.evaluate("""() => [...document.querySelectorAll("body *")]
        .filter(e => e.getBoundingClientRect().right > document.documentElement.clientWidth + 1)
        .slice(-3).map(e => e.tagName + "." + e.className + " " + Math.round(e.getBoundingClientRect().right))""")
    assert overflow <= 0, f"{name}: the HIT page is {overflow}px wider than the 390px phone: {wide}"


def submit(phone, assignment) -> dict:
    """Tap Submit; the stored responses ``{item id: data}`` once the assignment is submitted."""
    phone.locator("#hit-submit").tap()
    deadline = time.monotonic() + 15
    while Assignment.objects.get(pk=assignment.pk).status != Assignment.Status.SUBMITTED:
        assert time.monotonic() < deadline, "the tapped Submit did not submit the HIT"
        phone.wait_for_timeout(100)
    # the page goes on: the worker's next HIT, or the completion code when none is left
    expect(phone.locator("#completion-code").or_(phone.locator(".hit-item").first)).to_be_visible()
    return {r.item_id: r.data for r in Response.objects.filter(assignment=assignment)}


def tap_choices(phone, items) -> dict:
    """Tap one choice of every question of every item on its label (the k-th question: its k-th choice, so that
    BWS's most and least similar pair differ); returns ``{item id: {field: value}}``."""
    chosen = {}
    for item in items:
        box = phone.locator(f"#item-{item.pk}")
        names = box.locator("input[type=radio]").evaluate_all("els => [...new Set(els.map(e => e.name))]")
        assert names, f"item {item.pk}: no choices"
        for k, name in enumerate(names):
            radios = box.locator(f"input[type=radio][name='{name}']")
            radio = radios.nth(k % radios.count())
            radio.locator("xpath=ancestor::label[1]").tap()
            expect(radio).to_be_checked()
            chosen.setdefault(item.pk, {})[name.split("-", 2)[2]] = radio.get_attribute("value")
    return chosen


@pytest.mark.parametrize(
    "build",
    [
        lambda tmp_path: make_sentence_project(),
        _valnov,
        _bws,
        _pairwise,
        _likert,
    ],
    ids=["sentence_label", "validity_novelty", "bws_similarity", "pairwise_preference", "likert_debate"],
)
def test_a_hit_of_choices_by_touch(live_server, phone, tmp_path, build, request):
    name = request.node.callspec.id
    project = build(tmp_path)
    assignment, items = open_hit(phone, live_server, project)
    chosen = tap_choices(phone, items)
    expect(phone.locator("#hit-answered")).to_have_text(f"{len(items)} of {len(items)} answered")
    fits(phone, name)
    stored = submit(phone, assignment)
    assert set(stored) == {i.pk for i in items}
    for pk, fields in chosen.items():
        for field, value in fields.items():
            want = YES.get(value, value) if isinstance(stored[pk][field], bool) else value
            assert (stored[pk][field] if isinstance(want, bool) else str(stored[pk][field])) == want, (name, field)


def test_an_aspect_hit_by_touch_free_words_and_candidates(live_server, phone):
    project = make_aspect_project(slug="aspects-touch", config={"free_spans": True})
    assignment, items = open_hit(phone, live_server, project)
    ids = [i.pk for i in items]
    # sentence 1: tap "reactors", then "targeted": the five words between; "Add selected span" makes them an aspect
    t0 = items[0].payload["text"]
    i = token_index(t0, "reactors")
    b0, l0, s0 = words(t0, i, i + 4)
    phone.locator(f"#item-{ids[0]}-text .aspect-tok[data-i='{i}']").tap()
    phone.locator(f"#item-{ids[0]}-text .aspect-tok[data-i='{i + 4}']").tap()
    expect(phone.locator(f"#item-{ids[0]}-cursor")).to_have_text(f"Selected: \u201c{s0}\u201d (5 words)")
    phone.locator(f"#item-{ids[0]}-add").tap()
    expect(phone.locator(f"#item-{ids[0]} .aspect-chip")).to_have_text([s0 + "×"])
    # sentences 2 and 3: tap the field, the list opens; tap its first candidate: picked, and the list closes
    picked = {}
    for pk, item in zip(ids[1:], items[1:]):
        listbox = phone.locator(f"#item-{pk}-listbox")
        phone.locator(f"#item-{pk}-input").tap()
        expect(listbox).to_be_visible()
        cand = item.payload["candidates"][0]
        listbox.locator("[role=option]", has_text=cand["text"]).first.tap()
        expect(phone.locator(f"#item-{pk} .aspect-chip")).to_have_text([cand["text"] + "×"])
        expect(listbox).to_be_hidden()
        picked[pk] = cand
    expect(phone.locator("#hit-answered")).to_have_text("3 of 3 answered")
    fits(phone, "aspect")
    stored = submit(phone, assignment)
    assert stored[ids[0]]["aspects"] == [{"begin": b0, "length": l0, "text": s0, "list": "free"}]
    for pk, cand in picked.items():
        assert [(a["begin"], a["length"]) for a in stored[pk]["aspects"]] == [(cand["begin"], cand["length"])]


def test_a_span_grounding_hit_by_touch(live_server, phone):
    project = make_span_project(slug="spans-touch")
    assignment, (a, b) = open_hit(phone, live_server, project)
    p, text, loc = a.payload, a.payload["text"], phone.locator
    chips = loc(f"#item-{a.pk} .sg-chip:not(.sg-chip-sugg)")
    # tap "young", then "jobs": the words between are under the cursor; "Mark selected words" makes them a span
    young = span_of(text, "young workers their jobs")
    loc(f'#item-{a.pk}-text span[data-b="{young[0]}"]').tap()
    loc(f'#item-{a.pk}-text span[data-b="{text.index("jobs")}"]').tap()
    loc(f"#item-{a.pk}-mark").tap()
    expect(chips).to_have_count(1)
    expect(chips.first).to_contain_text("\u201cyoung workers their jobs\u201d")
    # the new span is selected: tapping variable 2 grounds it
    loc(f"#item-{a.pk} .sg-var[data-key='2']").tap()
    expect(chips.first).to_contain_text("\u2192 2 " + p["variables"][1]["text"])
    # the suggestion: tap its ✓
    loc(f"#item-{a.pk} .sg-chip-sugg button[data-act=accept]").tap()
    expect(chips).to_have_count(2)
    # the second argument has no factual span: tap the box
    loc(f"#item-{b.pk} label.sg-none").tap()
    expect(loc(f"#item-{b.pk}-none")).to_be_checked()
    expect(loc("#hit-answered")).to_have_text("2 of 2 answered")
    fits(phone, "span_grounding")
    stored = submit(phone, assignment)
    sugg = p["suggestions"][0]
    assert sorted((s["begin"], s["end"], s["variable"]) for s in stored[a.pk]["spans"]) == sorted(
        [(sugg["begin"], sugg["end"], sugg["variable"]), (*young, p["variables"][1]["id"])]
    )
    assert stored[b.pk]["spans"] == []
