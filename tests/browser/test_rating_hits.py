"""Crowdworkers join through invite links and complete one pairwise_preference HIT and one likert_debate HIT in
headless Chromium with the keyboard only, see their completion codes; the answers are in the database (the pairwise
ones with the placement they saw, mapped back to the right systems). Screenshots at 1366x768:
$ARGORA_VAR_DIR/artifacts/screenshots/rating_pairwise_hit.png, rating_likert_hit.png, rating_*_results.png."""

from __future__ import annotations

import json
import os
import re

import pytest
from playwright.sync_api import expect

from annotation import services
from annotation.models import Assignment, Response, Worker
from annotation.task_types.pairwise_preference.pairwise import judgement, left_side
from annotation.task_types.ratings import LIKERT, PAIRWISE, items

# the page's own input (keyboard, mouse) and what it sends; the answers' storage runs on both engines in
# test_no_lost_answers and the task type's page tests
pytestmark = pytest.mark.one_database

SHOTS = os.path.join(os.environ.get("ARGORA_VAR_DIR", "/tmp"), "artifacts", "screenshots")
PAIRS = [
    {
        "topic": "Nuclear energy",
        "stance": "pro",
        "a": {
            "system": "arg-ctrl",
            "text": "Nuclear power plants produce large amounts of electricity without emitting "
            "greenhouse gases, which makes them essential for fighting climate change.",
        },
        "b": {
            "system": "reference",
            "text": "Nuclear energy is a reliable source of base-load power and, unlike wind "
            "or solar, does not depend on the weather.",
        },
    },
    {
        "topic": "School uniforms",
        "stance": "con",
        "a": {
            "system": "reference",
            "text": "School uniforms take away one of the few ways teenagers have to express who they are.",
        },
        "b": {
            "system": "arg-ctrl",
            "text": "Uniforms is cost a lot of money for the families and the students they does not like them.",
        },
    },
]
TURNS = [
    "Religion has been used to justify wars and persecution for centuries, so a global ban would remove a major "
    "source of conflict.",
    "Banning religion would itself require persecution on a massive scale; you cannot outlaw belief without "
    "violating basic human rights.",
    "Human rights can be protected by secular institutions; religion is not needed for morality.",
    "Secular regimes that banned religion, such as the Soviet Union, committed atrocities of their own.",
    "Those atrocities came from totalitarian ideology, not from the absence of religion.",
    "Then the problem is totalitarian power, and the same applies to religious violence: ban the abuse, not "
    "the belief.",
    "Religious institutions often shield abusers and resist scientific education.",
    "Many religious communities run schools, hospitals and charities that secular states do not replace.",
    "Those services could be provided by secular charities with the same funding.",
    "Forcing that change worldwide would destroy communities that millions of people depend on.",
]
DEBATES = [
    {
        "id": "h1",
        "system": "human",
        "topic": "All religions should be banned on a global scale.",
        "turns": [{"speaker": "Alice" if k % 2 == 0 else "Bob", "text": t} for k, t in enumerate(TURNS)],
    },
    {
        "id": "g1",
        "system": "bart",
        "topic": "All religions should be banned on a global scale.",
        "turns": [
            {"speaker": "Alice" if k % 2 == 0 else "Bob", "text": t}
            for k, t in enumerate(
                [
                    "Religion is a global problem that cannot be solved in a bad way.",
                    "Religion is a personal and philosophical concept.",
                    "Religion is a form of tradition.",
                    "Not all people are the ones doing anything.",
                ]
            )
        ],
    },
]


def _write(tmp_path, name, rows):
    path = tmp_path / name
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _join(page, live_server, project):
    page.goto(f"{live_server.url}/invite/{project.invite_token}/")
    expect(page).to_have_url(re.compile(rf"/work/{project.slug}/$"))
    worker = Worker.objects.filter(assignments__project=project).get()
    assignment = Assignment.objects.get(worker=worker, project=project)
    return worker, assignment, services.assignment_items(assignment)


def _finish(page, project, worker, assignment):
    page.keyboard.press("Enter")
    code = page.locator("#completion-code")
    expect(code).to_be_visible()
    assert code.inner_text().strip() == services.completion_code(project, worker)
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.SUBMITTED
    return {r.item_id: r.data for r in Response.objects.filter(assignment=assignment)}


def _results_shot(page, live_server, project, staff, name):
    page.context.clear_cookies()
    page.goto(f"{live_server.url}/accounts/login/?next=/projects/{project.slug}/results/")
    page.fill("input[name=username]", staff.username)
    page.fill("input[name=password]", "pw-expert-123")
    page.keyboard.press("Enter")
    expect(page.locator("#ratings-chart")).to_be_visible()
    page.screenshot(path=os.path.join(SHOTS, name), full_page=True)


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_pairwise_hit_with_keyboard_only(live_server, page, tmp_path, staff_user):
    project = items.get_project(
        "human-eval-pairs",
        PAIRWISE,
        create=True,
        name="Which argument is more persuasive?",
        assignments_per_item=1,
        items_per_hit=2,
        status="active",
        time_estimate_seconds=120,
    )
    items.import_pairs(project, _write(tmp_path, "pairs.jsonl", PAIRS))
    worker, assignment, its = _join(page, live_server, project)
    first, second = (page.locator(f"#item-{i.pk}") for i in its)
    expect(page.locator(".hit-item")).to_have_count(2)
    assert "arg-ctrl" not in page.content() and "reference" not in page.locator("#hit-form").inner_text()
    # the left argument is the one the seeded placement says; the hidden input records it
    for item in its:
        left = left_side(assignment.pk, item.pk)
        expect(page.locator(f"#item-{item.pk}-left-text")).to_have_text(item.payload[left]["text"])
        expect(page.locator(f"#item-{item.pk} input[name=item-{item.pk}-left]")).to_have_value(left)

    expect(first).to_be_focused()
    expect(page.locator(f"#item-{its[0].pk}-choice")).to_have_class(re.compile(r"\bactive\b"))
    page.keyboard.press("1")  # argument 1 (left) more persuasive
    expect(page.locator(f"#item-{its[0].pk}-fluent_left")).to_have_class(re.compile(r"\bactive\b"))
    page.keyboard.press("y")
    expect(page.locator(f"#item-{its[0].pk}-fluent_right")).to_have_class(re.compile(r"\bactive\b"))
    page.keyboard.press("n")
    expect(second).to_be_focused()
    expect(page.locator("#hit-answered")).to_have_text("1 of 2 answered")
    # item 2: 3 = equally persuasive, then 1 (fluent) for argument 1; arrow back to change the choice to 2
    page.keyboard.press("3")
    page.keyboard.press("1")
    page.keyboard.press("ArrowLeft")
    page.keyboard.press("ArrowLeft")
    expect(page.locator(f"#item-{its[1].pk}-choice")).to_have_class(re.compile(r"\bactive\b"))
    page.keyboard.press("2")
    expect(page.locator(f"#item-{its[1].pk}-fluent_right")).to_have_class(re.compile(r"\bactive\b"))
    os.makedirs(SHOTS, exist_ok=True)
    page.screenshot(path=os.path.join(SHOTS, "rating_pairwise_hit.png"))
    page.keyboard.press("Enter")  # one question open: nothing is sent
    expect(page.locator("#hit-missing")).to_have_text("1 item still needs an answer.")
    assert Response.objects.count() == 0
    page.keyboard.press("y")
    expect(page.locator("#hit-answered")).to_have_text("2 of 2 answered")
    expect(page.locator("#hit-submit")).to_be_focused()
    stored = _finish(page, project, worker, assignment)
    want = [
        {"choice": "left", "fluent_left": True, "fluent_right": False},
        {"choice": "right", "fluent_left": True, "fluent_right": True},
    ]
    for item, expected in zip(its, want):
        left = left_side(assignment.pk, item.pk)
        assert stored[item.pk] == {"left": left, "left_system": item.payload[left]["system"], **expected}
    # mapped back: pair 1's winner is whichever system was on the left
    j = judgement(its[0].payload, stored[its[0].pk])
    assert j["winner"] == its[0].payload[left_side(assignment.pk, its[0].pk)]["system"]
    _results_shot(page, live_server, project, staff_user, "rating_pairwise_results.png")
    expect(page.locator("#ratings-systems tbody tr")).to_have_count(2)


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_likert_hit_with_keyboard_only(live_server, page, tmp_path, staff_user):
    project = items.get_project(
        "human-eval-debates",
        LIKERT,
        create=True,
        name="Rate the debate",
        assignments_per_item=5,
        items_per_hit=2,
        status="active",
        time_estimate_seconds=300,
    )
    items.import_debates(project, _write(tmp_path, "debates.jsonl", DEBATES))
    worker, assignment, its = _join(page, live_server, project)
    first, second = (page.locator(f"#item-{i.pk}") for i in its)
    expect(page.locator(f"#item-{its[0].pk} .ld-turn")).to_have_count(10)
    assert "bart" not in page.content()
    expect(first).to_be_focused()
    page.screenshot(path=os.path.join(SHOTS, "rating_likert_hit_start.png"))
    box = page.locator(f"#item-{its[0].pk}-transcript")
    page.keyboard.press("PageDown")  # scroll the transcript
    assert box.evaluate("el => el.scrollTop") > 0
    for key in "3423":  # style, content, strategy, overall
        page.keyboard.press(key)
    expect(second).to_be_focused()
    page.keyboard.press("o")  # overall first, then back to the others in turn
    page.keyboard.press("1")
    expect(page.locator(f"#item-{its[1].pk}-style")).to_have_class(re.compile(r"\bactive\b"))
    page.keyboard.press("2")
    page.keyboard.press("1")
    page.screenshot(path=os.path.join(SHOTS, "rating_likert_hit.png"))
    page.keyboard.press("2")
    expect(page.locator("#hit-answered")).to_have_text("2 of 2 answered")
    expect(page.locator("#hit-submit")).to_be_focused()
    stored = _finish(page, project, worker, assignment)
    assert stored == {
        its[0].pk: {"style": 3, "content": 4, "strategy": 2, "overall": 3},
        its[1].pk: {"style": 2, "content": 1, "strategy": 2, "overall": 1},
    }
    _results_shot(page, live_server, project, staff_user, "rating_likert_results.png")
    cell = page.locator('#ratings-table tr[data-criterion="overall"] td.cell').first
    expect(cell).to_contain_text("3.000 (n = 1)")
    expect(cell.locator(".too-few")).to_be_visible()  # one rating: below the documented minimum of 5
