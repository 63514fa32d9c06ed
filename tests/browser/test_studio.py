"""Issue 19 acceptance (studio): in headless Chromium at 1366x768, the demo ``expert`` (a Researcher, created as
``load_demo`` creates it) makes a project of EACH registered task type in the studio from a small uploaded file
(tests/data/studio/), reads the preview, confirms, waits for the import job that a real Celery worker runs, activates
the project, and copies its invite link; a worker opens the link in a second browser context, completes a HIT with the
keyboard (as tests/browser/test_*_hit.py do for that task type) and leaves feedback; the expert then sees the response
on the project's progress, its feedback with the items it was about, and the agreement page. Every studio page is
saved with ``staff_screenshot`` (no horizontal scroll at 1366 px)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.contrib.auth.models import Group
from playwright.sync_api import expect

from annotation.models import Assignment, Item, Project, Response
from annotation.task_types import all_task_types
from argora.management.commands.load_demo import DEMO_ACCOUNTS, ensure_accounts
from argora.roles import RESEARCHER_GROUP
from corpus.importers import import_file
from corpus.models import Sentence, Topic
from tests.browser.conftest import staff_screenshot

DATA = Path(__file__).resolve().parents[1] / "data" / "studio"
JOB_TIMEOUT_MS = 120_000
# per task type: file, source, source options {field: value}, config (JSON text), settings, what the preview counts
CASES = {
    "sentence_label": ("uniforms.tsv", "ukp-tsv", {}, "", {"assignments_per_item": "1", "items_per_hit": "3"}, 3),
    "aspect": ("appf.jsonl", "appf-jsonl", {}, "", {"assignments_per_item": "1", "items_per_hit": "2"}, 2),
    "span_grounding": ("wage_arguments.jsonl", "arguments-jsonl", {}, "",
                       {"assignments_per_item": "1", "items_per_hit": "2"}, 2),
    "bws_similarity": ("cloning_arguments.jsonl", "arguments-jsonl", {"pairs": "4"},
                       '{"scorer": "jaccard", "tuples_per_pair": 1, "attention_checks": 0}',
                       {"assignments_per_item": "1", "items_per_hit": "4", "gold_rate": "0"}, 4),
    "validity_novelty": ("valnov.csv", "valnov-csv", {}, "", {"assignments_per_item": "1", "items_per_hit": "2"}, 2),
    "pairwise_preference": ("pairs.jsonl", "pairs-jsonl", {}, "", {"assignments_per_item": "1", "items_per_hit": "2"},
                            2),
    "likert_debate": ("debates.jsonl", "debates-jsonl", {}, "", {"assignments_per_item": "1", "items_per_hit": "1"},
                      1),
}
FEEDBACK = "The second item was hard to read."


def expert_password() -> str:
    return next(a for a in DEMO_ACCOUNTS if a.username == "expert").password


def item_ids(page) -> list[int]:
    return [int(x) for x in page.locator(".hit-item").evaluate_all("els => els.map(e => e.dataset.itemId)")]


# --- completing one HIT, per task type (the keys of tests/browser/test_*_hit.py) -------------------------------
def answer_keys(page, keys_per_item: list[str]):
    ids = item_ids(page)
    expect(page.locator(f"#item-{ids[0]}")).to_be_focused()
    for _ in ids:
        for key in keys_per_item:
            page.keyboard.press(key)


def answer_aspect(page):
    for item_id in item_ids(page):
        candidate = Item.objects.get(pk=item_id).payload["candidates"][0]
        field = page.locator(f"#item-{item_id}-input")
        field.focus()
        page.keyboard.type(candidate["text"])
        expect(page.locator(f"#item-{item_id}-listbox [role=option][aria-selected=true]")).to_contain_text(
            candidate["text"])
        page.keyboard.press("Enter")
        expect(page.locator(f"#item-{item_id} .aspect-chip")).to_have_count(1)


def answer_spans(page):
    for item_id in item_ids(page):  # "this argument has no factual span", confirmed
        page.locator(f"#item-{item_id}-none").check()


ANSWER = {
    "sentence_label": lambda page: answer_keys(page, ["1"]),
    "aspect": answer_aspect,
    "span_grounding": answer_spans,
    "bws_similarity": lambda page: answer_keys(page, ["1", "Shift+Digit4"]),
    "validity_novelty": lambda page: answer_keys(page, ["1", "2"]),
    "pairwise_preference": lambda page: answer_keys(page, ["1", "y", "y"]),
    "likert_debate": lambda page: answer_keys(page, ["3", "4", "2", "3"]),
}


def test_every_registered_task_type_has_a_case():
    assert set(CASES) == set(ANSWER) == {t.name for t in all_task_types()}


def accounts_after_migrations() -> None:
    """The demo accounts as ``load_demo`` makes them (expert is a Researcher). A transactional test starts from a
    flushed database; the flush's post_migrate gave the Researcher group its permissions again (argora.roles)."""
    assert Group.objects.get(name=RESEARCHER_GROUP).permissions.filter(codename="add_project").exists()
    ensure_accounts()


def login(page, live_server, next_url: str):
    page.goto(f"{live_server.url}/accounts/login/?next={next_url}")
    page.fill("input[name=username]", "expert")
    page.fill("input[name=password]", expert_password())
    page.click("button[type=submit]")


@pytest.mark.browser
@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("task_type", sorted(CASES))
def test_a_study_of_each_task_type_from_the_studio(task_type, live_server, page, browser, celery_worker_proc):
    file_name, source, options, config, settings, n_items = CASES[task_type]
    accounts_after_migrations()
    if task_type == "span_grounding":  # its items offer fact variables of their topic: the KB comes first
        import_file(DATA / "wage_kb.jsonl", "facts-jsonl")
    shot = f"studio-{task_type.replace('_', '-')}"

    # the studio's list, then a new project: name, task type, its config and settings
    login(page, live_server, "/studio/")
    expect(page.locator("h1")).to_have_text("Studio")
    staff_screenshot(page, f"{shot}-0-index")
    page.click("#new-project")
    name = f"Studio test: {task_type}"
    page.fill("#id_name", name)
    page.select_option("#id_task_type", task_type)
    if config:
        page.fill("#id_config", config)
    else:  # the task type's defaults are shown in the box
        assert page.locator("#id_config").input_value().strip().startswith("{")
    for field, value in settings.items():
        page.fill(f"#id_{field}", value)
    staff_screenshot(page, f"{shot}-1-new")
    page.click("#setup-next")

    # items: the upload and the source's options
    expect(page.locator("#items-form")).to_be_visible()
    page.check(f"#source-{source}")
    page.set_input_files("input[name=file]", str(DATA / file_name))
    for option, value in options.items():
        page.fill(f"input[name='{source}__{option}']", value)
    staff_screenshot(page, f"{shot}-2-items")
    page.click("#items-next")

    # the preview: counts and the first items, nothing written yet
    expect(page.locator("#count-items")).to_have_text(str(n_items))
    assert page.locator("#preview tbody tr").count() >= 1
    assert not Project.objects.filter(name=name).exists()
    staff_screenshot(page, f"{shot}-3-preview")
    page.click("#confirm-import")

    # the import job on the worker, with its progress bar
    expect(page).to_have_url(re.compile(r"/studio/jobs/[0-9a-f-]+/$"))
    expect(page.locator("#job-done")).to_be_visible(timeout=JOB_TIMEOUT_MS)
    staff_screenshot(page, f"{shot}-4-job")
    project = Project.objects.get(name=name)
    assert project.task_type == task_type and project.items.filter(is_gold=False).count() == n_items
    page.click("#job-project")

    # the project page: activate (with a confirmation step), copy the invite link
    expect(page.locator("h1")).to_have_text(name)
    expect(page.locator("#project-status")).to_have_text("Draft")
    staff_screenshot(page, f"{shot}-5-project-draft")
    page.click("#status-active")
    expect(page.locator("#confirm-status")).to_be_visible()
    staff_screenshot(page, f"{shot}-6-activate")
    page.click("#confirm-status")
    expect(page.locator("#project-status")).to_have_text("Active")
    page.click("#copy-invite")
    expect(page.locator("#copy-done")).to_have_text("Copied.")
    invite = page.locator("#invite-url").inner_text().strip()
    assert invite.endswith(f"/invite/{project.invite_token}/")

    # a worker, in a browser context of their own, completes one HIT and leaves feedback
    context = browser.new_context(viewport={"width": 1366, "height": 768})
    try:
        worker_page = context.new_page()
        worker_page.set_default_timeout(15000)
        worker_page.goto(invite)
        expect(worker_page).to_have_url(re.compile(rf"/work/{project.slug}/$"))
        ANSWER[task_type](worker_page)
        worker_page.locator("#feedback").fill(FEEDBACK)
        worker_page.locator("#hit-submit").click()
        expect(worker_page.locator("#completion-code")).to_be_visible()
    finally:
        context.close()
    assignment = Assignment.objects.get(project=project)
    assert assignment.status == Assignment.Status.SUBMITTED and assignment.feedback == FEEDBACK
    answered = Response.objects.filter(assignment=assignment, item__is_gold=False).count()
    assert answered == min(n_items, project.items_per_hit)

    # the expert sees the response on the progress, the feedback with its items, and the agreement page
    page.reload()
    expect(page.locator("#progress-done")).to_have_text(str(answered))
    feedback = page.locator("#feedback .feedback-row")
    expect(feedback).to_have_count(1)
    expect(feedback.locator(".feedback-text")).to_have_text(FEEDBACK)
    expect(feedback.locator(".feedback-items li")).to_have_count(assignment.hit.hit_items.count())
    full = staff_screenshot(page, f"{shot}-7-project")
    page.screenshot(path=str(full.with_name(f"{shot}-7-project-full.png")), full_page=True)
    page.click("#project-pages a.page-agreement")
    expect(page.locator("h1")).to_contain_text(f"Agreement · {name}")
    staff_screenshot(page, f"{shot}-8-agreement")
    page.go_back()
    page.click("#project-pages a.page-progress")
    expect(page.locator("#progress-done")).to_have_text(str(answered))

    # settings: the guidelines' Markdown previewed live as workers will see it
    page.goto(f"{live_server.url}/studio/projects/{project.slug}/settings/")
    page.fill("#id_guidelines", "## How to\n\nRead **each** item twice.")
    expect(page.locator("#guidelines-preview strong")).to_have_text("each")
    staff_screenshot(page, f"{shot}-9-settings")
    page.click("#save-settings")
    expect(page.locator("#project-status")).to_have_text("Active")
    project.refresh_from_db()
    assert "<strong>each</strong>" in project.guidelines


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_a_bad_file_is_refused_with_every_problem_before_anything_is_written(live_server, page):
    accounts_after_migrations()
    login(page, live_server, "/studio/new/")
    page.fill("#id_name", "Broken upload")
    page.select_option("#id_task_type", "sentence_label")
    page.click("#setup-next")
    page.check("#source-arguments-jsonl")
    page.set_input_files("input[name=file]", str(DATA / "bad_arguments.jsonl"))
    page.click("#items-next")
    problems = page.locator("#problems .problems li")
    expect(problems).to_have_count(3)
    assert [t.split(": ", 1)[0] for t in problems.all_inner_texts()] == [
        "bad_arguments.jsonl:2", "bad_arguments.jsonl:4", "bad_arguments.jsonl:5"]
    expect(page.locator("#confirm-import")).to_have_count(0)
    staff_screenshot(page, "studio-problems")
    assert not Project.objects.exists() and not Sentence.objects.exists() and not Topic.objects.exists()
