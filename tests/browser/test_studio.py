"""The studio in headless Chromium: the helpers every studio browser test shares (the demo ``expert``'s log-in, how
one HIT of each task type is answered with the keyboard, as tests/browser/test_*_hit.py do), and a bad upload refused
with every problem before anything is written. The whole study of each task type from the studio -- upload, preview,
gold share, two workers, items added, a release -- is tests/browser/test_studio_journeys.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.contrib.auth.models import Group
from playwright.sync_api import expect

from annotation.models import Item, Project
from argora.management.commands.load_demo import DEMO_ACCOUNTS, ensure_accounts
from argora.roles import RESEARCHER_GROUP
from corpus.models import Sentence, Topic
from tests.browser.conftest import staff_screenshot

DATA = Path(__file__).resolve().parents[1] / "data" / "studio"
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
            candidate["text"]
        )
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
        "bad_arguments.jsonl:2",
        "bad_arguments.jsonl:4",
        "bad_arguments.jsonl:5",
    ]
    expect(page.locator("#confirm-import")).to_have_count(0)
    staff_screenshot(page, "studio-problems")
    assert not Project.objects.exists() and not Sentence.objects.exists() and not Topic.objects.exists()
