"""No worker loses an answer, in a real browser: a reload mid-HIT restores every answer and the feedback (for a
radio task type and for the span editor), an expired reservation whose place another worker took keeps the late
answers, "Log out" and the invite link again is the same worker with the same completion code, and the countdown
warns and extends."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from annotation import services
from annotation.models import Assignment, AssignmentDraft, Project, Response, Worker
from annotation.task_types.ratings import LIKERT, PAIRWISE, items
from tests.annotation.test_span_page import make_span_project, span_of
from tests.browser.conftest import staff_screenshot
from tests.browser.test_bws_hit import make_project as make_bws_project
from tests.browser.test_rating_hits import DEBATES, PAIRS, _write
from tests.browser.test_span_grounding_hit import drag, word
from tests.browser.test_valnov_hit import make_project as make_valnov_project
from tests.factories import ProjectFactory

LABELS = ["pro", "con", "none"]
TEXTS = [
    "Nuclear power emits almost no carbon dioxide.",
    "Nuclear waste stays dangerous for millennia.",
    "The plant opened in 1975.",
    "Reactors are among the safest sources of power.",
    "Uranium mining harms the land.",
    "Wind is cheaper than nuclear now.",
]


def make_project(**settings) -> Project:
    values = {
        "assignments_per_item": 1,
        "items_per_hit": 3,
        "reservation_timeout_seconds": 600,
        "status": Project.Status.ACTIVE,
    }
    values.update(settings)
    return ProjectFactory(
        name="Stance",
        config={"labels": LABELS},
        items=[{"text": t, "topic": "nuclear energy"} for t in TEXTS],
        **values,
    )


def join(page, live_server, project):
    page.goto(f"{live_server.url}/invite/{project.invite_token}/")
    expect(page).to_have_url(re.compile(rf"/work/{project.slug}/$"))
    expect(page.locator(".hit-item").first).to_be_visible()
    worker = Worker.objects.filter(source=Worker.Source.INVITE).order_by("-pk").first()
    return worker, Assignment.objects.filter(worker=worker, status="reserved").get()


def saved(page):
    expect(page.locator("#hit-saved")).to_have_text("Your answers are saved as you go.")


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_reload_mid_hit_restores_every_answer_and_the_feedback(live_server, page):
    project = make_project()
    _worker, assignment = join(page, live_server, project)
    items = services.assignment_items(assignment)
    page.keyboard.press("2")  # item 1: con, moves on
    page.keyboard.press("3")  # item 2: none
    page.locator("#feedback").fill("Item 2 has a typo.")
    saved(page)
    page.reload()
    expect(page.locator("#hit-saved")).to_have_text("Your saved answers are back.")
    expect(page.locator(f"#item-{items[0].pk} input[value=con]")).to_be_checked()
    expect(page.locator(f"#item-{items[1].pk} input[value=none]")).to_be_checked()
    expect(page.locator(f"#item-{items[2].pk} input:checked")).to_have_count(0)
    expect(page.locator("#feedback")).to_have_value("Item 2 has a typo.")
    expect(page.locator("#hit-answered")).to_have_text("2 of 3 answered")
    expect(page.locator(f"#item-{items[2].pk}")).to_be_focused()  # the first unanswered item
    # "saved" never shows over a change the server does not have yet: the status turns at once, before the save
    status_now = page.evaluate("""() => {
        const f = document.getElementById("feedback");
        f.value += " Thanks.";
        f.dispatchEvent(new Event("input", {bubbles: true}));
        return document.getElementById("hit-saved").textContent;
    }""")
    assert status_now == "Saving your answers…"
    saved(page)
    draft = AssignmentDraft.objects.get(assignment=assignment)
    assert draft.feedback == "Item 2 has a typo. Thanks." and draft.revision > 0
    # a change after the reload is saved too, then the HIT is submitted with all of it
    page.keyboard.press("1")
    saved(page)
    assert AssignmentDraft.objects.get(assignment=assignment).responses[str(items[2].pk)] == {"label": "pro"}
    with page.expect_navigation():  # the HIT page posts and lands on the same URL: wait for the new page
        page.keyboard.press("Enter")
    expect(page).to_have_url(re.compile(rf"/work/{project.slug}/$"))
    expect(page.locator(".hit-item").first).to_be_visible()
    stored = {r.item_id: r.data["label"] for r in Response.objects.filter(assignment=assignment)}
    assert stored == {items[0].pk: "con", items[1].pk: "none", items[2].pk: "pro"}
    assert Assignment.objects.get(pk=assignment.pk).feedback == "Item 2 has a typo. Thanks."


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_reload_restores_marked_spans(live_server, page):
    project = make_span_project()
    page.goto(f"{live_server.url}/invite/{project.invite_token}/")
    assignment = Assignment.objects.get()
    a, b = services.assignment_items(assignment)
    text = a.payload["text"]
    young = span_of(text, "young workers their jobs")
    drag(page, word(page, a.pk, young[0]), word(page, a.pk, text.index("jobs")))
    page.keyboard.press("2")
    page.keyboard.press("a")  # accept the suggestion
    chips = page.locator(f"#item-{a.pk} .sg-chip:not(.sg-chip-sugg)")
    expect(chips).to_have_count(2)
    saved(page)
    page.reload()
    expect(chips).to_have_count(2)
    expect(chips.filter(has_text="young workers their jobs")).to_contain_text("\u2192 2 ")
    expect(page.locator(f"#item-{a.pk} .sg-chip-sugg")).to_have_count(0)
    expect(page.locator("#hit-answered")).to_have_text("1 of 2 answered")
    page.locator(f"#item-{b.pk}-none").check()
    page.locator("#hit-submit").click()
    expect(page.locator("#completion-code")).to_be_visible()
    spans = Response.objects.get(assignment=assignment, item=a).data["spans"]
    assert sorted((s["begin"], s["end"]) for s in spans) == sorted(
        [young, (a.payload["suggestions"][0]["begin"], a.payload["suggestions"][0]["end"])]
    )


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_expired_reservation_taken_by_another_keeps_the_late_answers(live_server, page, django_user_model):
    project = make_project(items_per_hit=6)  # one HIT, R = 1
    worker, assignment = join(page, live_server, project)
    # the reservation ends while the page is open, and another worker gets the place
    Assignment.objects.filter(pk=assignment.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert services.expire_reservations() == 1
    other = services.worker_for_user(django_user_model.objects.create_user("other"))
    assert services.reserve_next_assignment(project, other).hit_id == assignment.hit_id
    for key in "123123":
        page.keyboard.press(key)
    page.keyboard.press("Enter")
    late = page.locator("#hit-late")
    expect(late).to_be_visible()
    expect(late).to_contain_text("kept as late answers")
    expect(page.locator("#hit-form")).to_be_hidden()
    staff_screenshot(page, "hit_late_answers")
    assignment.refresh_from_db()
    assert assignment.status == "late"
    assert sorted(Response.objects.filter(assignment=assignment).values_list("data__label", flat=True)) == sorted(
        ["pro", "con", "none"] * 2
    )
    page.locator("#hit-next").click()  # one click on: the next HIT, here none is left for this worker
    expect(page).to_have_url(re.compile(rf"/work/{project.slug}/done/\?finished=1$"))
    expect(page.locator("#completion-code")).to_have_text(services.completion_code(project, worker))


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_log_out_and_the_invite_link_again_is_the_same_worker(live_server, page, new_context):
    project = make_project()
    worker, assignment = join(page, live_server, project)
    for key in "123":
        page.keyboard.press(key)
    with page.expect_navigation():  # the submission lands on the next HIT (on a busy machine: wait for it)
        page.keyboard.press("Enter")
    expect(page.locator(".hit-item").first).to_be_visible()  # the next HIT
    assert Assignment.objects.filter(worker=worker, status="reserved").exclude(pk=assignment.pk).exists()
    page.get_by_role("button", name="Stop and get my completion code").click()
    code = page.locator("#completion-code")
    expect(code).to_be_visible()
    first_code = code.inner_text().strip()
    recovery = page.locator("#recovery-code").inner_text().strip()
    staff_screenshot(page, "done_with_recovery_code")
    assert Assignment.objects.filter(worker=worker, status="reserved").count() == 0  # stop freed the HIT
    page.get_by_role("button", name="Log out").click()
    page.goto(f"{live_server.url}/invite/{project.invite_token}/")
    # the same worker: the HIT they did and the one they stopped are not handed out to them again
    expect(page).to_have_url(re.compile(rf"/work/{project.slug}/done/\?finished=1$"))
    expect(page.locator("#completion-code")).to_have_text(first_code)
    assert Worker.objects.filter(source=Worker.Source.INVITE).count() == 1
    # another browser: the recovery code makes it the same worker
    context = new_context(viewport={"width": 1366, "height": 768})  # checked by axe-core as well (conftest)
    try:
        other = context.new_page()
        other.goto(f"{live_server.url}/work/recover/")
        other.locator("#recovery-code").fill(recovery)
        other.get_by_role("button", name="Continue").click()
        other.goto(f"{live_server.url}/work/{project.slug}/done/")
        expect(other.locator("#completion-code")).to_have_text(first_code)
    finally:
        context.close()
    assert Worker.objects.filter(source=Worker.Source.INVITE).count() == 1


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_countdown_warns_and_extend_keeps_the_hit(live_server, page):
    project = make_project()
    _worker, assignment = join(page, live_server, project)
    expect(page.locator("#hit-timer")).to_contain_text(re.compile(r"Reserved for you: (9|10):\d\d left"))
    expect(page.locator("#hit-expiry")).to_be_hidden()
    Assignment.objects.filter(pk=assignment.pk).update(expires_at=timezone.now() + timedelta(seconds=40))
    page.reload()
    expect(page.locator("#hit-expiry")).to_be_visible()
    expect(page.locator("#hit-expiry-text")).to_contain_text("Your reservation ends in 0:")
    expect(page.locator("#hit-timer")).to_have_class(re.compile(r"\bwarn\b"))
    staff_screenshot(page, "hit_reservation_ending")
    page.locator("#hit-extend").click()
    expect(page.locator("#hit-expiry")).to_be_hidden()
    expect(page.locator("#hit-timer")).to_contain_text(re.compile(r"Reserved for you: (9|10):\d\d left"))
    assert Assignment.objects.get(pk=assignment.pk).expires_at > timezone.now() + timedelta(seconds=500)
    # past the deadline, a page opened again shows the same HIT with its answers, says the reservation ended, and
    # still offers to keep the HIT
    page.locator(".hit-item").first.focus()
    page.keyboard.press("2")
    saved(page)
    Assignment.objects.filter(pk=assignment.pk).update(expires_at=timezone.now() - timedelta(seconds=5))
    page.reload()
    expect(page.locator("#hit-timer")).to_have_text("Your reservation has ended")
    expect(page.locator(".hit-item input:checked")).to_have_count(1)
    staff_screenshot(page, "hit_reservation_ended")
    expect(page.locator("#hit-expiry-text")).to_contain_text("Submit now: your answers are kept")
    page.locator("#hit-extend").click()
    expect(page.locator("#hit-expiry")).to_be_hidden()
    assert Assignment.objects.get(pk=assignment.pk).status == "reserved"


def _valnov(tmp_path):
    return make_valnov_project(tmp_path)


def _bws(tmp_path):
    return make_bws_project()


def _pairwise(tmp_path):
    project = items.get_project(
        "pairs", PAIRWISE, create=True, assignments_per_item=1, items_per_hit=2, status="active"
    )
    items.import_pairs(project, _write(tmp_path, "pairs.jsonl", PAIRS))
    return project


def _likert(tmp_path):
    project = items.get_project(
        "debates", LIKERT, create=True, assignments_per_item=5, items_per_hit=2, status="active"
    )
    items.import_debates(project, _write(tmp_path, "debates.jsonl", DEBATES))
    return project


FORM_STATE = "() => Array.from(new FormData(document.getElementById('hit-form'))).filter(e => /^item-/.test(e[0]))"


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("build", [_valnov, _bws, _pairwise, _likert], ids=lambda f: f.__name__.strip("_"))
def test_every_choice_of_a_task_type_survives_a_reload(live_server, page, tmp_path, build):
    """For each task type of choices: pick one answer per question of the first item (the k-th question's k-th
    choice, so that e.g. BWS's best and worst differ), reload, and find the form exactly as it was."""
    project = build(tmp_path)
    page.goto(f"{live_server.url}/invite/{project.invite_token}/")
    first = page.locator(".hit-item").first
    expect(first).to_be_visible()
    names = first.locator("input[type=radio]").evaluate_all("els => [...new Set(els.map(e => e.name))]")
    assert names, "no choices on the page"
    for k, name in enumerate(names):
        radios = first.locator(f"input[type=radio][name='{name}']")
        radios.nth(k % radios.count()).check()
    before = page.evaluate(FORM_STATE)
    assert len([e for e in before if e[0] in names]) == len(names)
    saved(page)
    page.reload()
    expect(page.locator("#hit-saved")).to_have_text("Your saved answers are back.")
    assert page.evaluate(FORM_STATE) == before
