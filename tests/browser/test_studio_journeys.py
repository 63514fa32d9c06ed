"""Issue 37 acceptance: a whole study of EACH task type run from the browser, on files in the field's published shapes
(written by the test). In headless Chromium the demo ``expert`` (a Researcher, as ``load_demo`` makes it) starts a
project in the studio from an upload, reads the preview, sets a gold share where the file carries labels, confirms,
waits for the import job that a real Celery worker runs, activates the project and copies its invite link. Two workers
complete HITs: one at 1366x768 with the keyboard (leaving feedback), one on a phone (390x844, touch only). The expert
then adds items from a file of a second published shape to the running project (new HITs, the answers untouched),
publishes an ``annotations`` release from the studio's Release step (licence and citation on its card), waits for the
release job and downloads ``annotations.jsonl`` from the page: its rows are the project's items and their annotations
are exactly the submitted answers. Every page the browsers load passes axe-core (the ``page`` / ``phone`` fixtures
check them) and the studio pages are screenshotted."""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field

import pytest
from playwright.sync_api import expect

from annotation.models import HIT, Assignment, Item, Project, Response
from annotation.task_types import all_task_types
from tests.browser.conftest import staff_screenshot
from tests.browser.test_studio import ANSWER, FEEDBACK, accounts_after_migrations, login
from tests.browser.test_touch_hits import tap_choices

JOB_TIMEOUT_MS = 120_000
CITATION = "@inproceedings{argora-test, title={A study run from the browser}}"


@dataclass
class Shape:
    source: str  # the studio's source name
    file_name: str
    content: str  # the file, in the published layout
    options: dict = field(default_factory=dict)  # source option -> value
    gold: tuple[str, int] | None = None  # (gold_mode, gold_n)


@dataclass
class Case:
    first: Shape
    added: Shape
    config: str = ""
    settings: dict = field(default_factory=dict)
    before: list[Shape] = field(default_factory=list)  # items added before activation (span grounding: the KB first)


def lines(*rows: dict) -> str:
    return "".join(json.dumps(r) + "\n" for r in rows)


UKP_HEADER = "topic\tretrievedUrl\tarchivedUrl\tsentenceHash\tsentence\tannotation\tset\n"
UNIFORMS_TSV = UKP_HEADER + "".join(
    f"school uniforms\thttps://example.org/u{n}\t\tj-u{n}\t{text}\t{label}\ttrain\n"
    for n, (text, label) in enumerate(
        [
            ("School uniforms reduce bullying because nobody can be mocked for their clothes.", "Argument_for"),
            ("Uniforms take away one of the few ways teenagers have to express who they are.", "Argument_against"),
            ("Uniforms save parents money on school clothes every year.", "Argument_for"),
            ("The school board met on Tuesday evening.", "NoArgument"),
        ]
    )
)
KIALO_UNIFORMS = """Discussion Title: Should schools require uniforms?

1. Schools should require uniforms.
1.1. Pro: Uniforms make it harder to tell rich and poor students apart.
1.1.1. Con: Shoes and phones still show who has money.
1.2. Con: Uniforms stop students from choosing how they look.
1.2.1. Pro: Choosing clothes is part of growing up.
"""
APPF = lines(
    {
        "hash": "j-a1",
        "topic": "nuclear energy",
        "stance": "Argument_against",
        "sentence": "Nuclear power plants produce clean electricity but the waste stays dangerous for centuries.",
        "aspect_pos": ["(55,5)", "(67,9)"],
        "aspect_pos_string": ["waste", "dangerous"],
    },
    {
        "hash": "j-a2",
        "topic": "nuclear energy",
        "stance": "Argument_for",
        "sentence": "Modern reactors are safe and keep the lights on without burning coal.",
        "aspect_pos": ["(20,4)"],
        "aspect_pos_string": ["safe"],
    },
    {
        "hash": "j-a3",
        "topic": "nuclear energy",
        "stance": "Argument_for",
        "sentence": "Nuclear energy creates thousands of well paid jobs in rural regions.",
        "aspect_pos": ["(36,14)"],
        "aspect_pos_string": ["well paid jobs"],
    },
)
# the argument-aspect corpus's own layout: numbered tokens, each with its aspect category (O outside), no stance
CONLL = "".join(
    "\n".join(f"{n}\t{tok}\t{lab}" for n, (tok, lab) in enumerate(sent, start=1)) + "\n\n"
    for sent in [
        [
            ("Higher", "O"),
            ("wages", "O"),
            ("cost", "O"),
            ("small", "O"),
            ("businesses", "O"),
            ("jobs", "JOBS"),
            (".", "O"),
        ],
        [("A", "O"), ("living", "WAGE"), ("wage", "WAGE"), ("reduces", "O"), ("poverty", "POVERTY"), (".", "O")],
    ]
)
KB = lines(
    {"topic": "minimum wage", "text": "Minimum wage increases reduce employment of young workers."},
    {"topic": "minimum wage", "text": "Minimum wage increases reduce poverty."},
    {"topic": "minimum wage", "text": "Minimum wage increases raise prices."},
)
WAGE_ARGUMENTS = lines(
    {"topic": "minimum wage", "sentence": "Raising the minimum wage costs young workers their jobs.", "stance": "con"},
    {"topic": "minimum wage", "sentence": "A higher minimum wage lifts families out of poverty.", "stance": "pro"},
)
WAGE_TSV = UKP_HEADER + (
    "minimum wage\thttps://example.org/w1\t\tj-w1\tShops pass a higher minimum wage on to customers as higher prices."
    "\tArgument_against\ttrain\n"
)
ASPECT_TSV = "topic\tsentence_1\tsentence_2\tlabel\n" + "".join(
    f"cloning\t{a}\t{b}\t{label}\n"
    for a, b, label in [
        ("Cloning could save endangered species.", "Cloning can bring back animals close to extinction.", "HS"),
        ("Cloning could save endangered species.", "Cloned organs would end transplant waiting lists.", "NS"),
        ("Cloning is playing god.", "Humans should not interfere with the creation of life.", "SS"),
        ("Cloning is playing god.", "Cloned animals often suffer from severe illnesses.", "NS"),
        ("Cloned organs would end transplant waiting lists.", "Cloning could grow replacement organs.", "HS"),
        ("Cloned animals often suffer from severe illnesses.", "Cloning harms the animals involved.", "SS"),
        ("Humans should not interfere with the creation of life.", "Cloning could save endangered species.", "DTORCD"),
        ("Cloning can bring back animals close to extinction.", "Cloning harms the animals involved.", "NS"),
    ]
)
BWS_CSV = "id,topic,argument1,argument2,score\n" + "".join(
    f"z{n},zoos,{a},{b},{score}\n"
    for n, (a, b, score) in enumerate(
        [
            ("Zoos protect endangered species.", "Zoos breed animals that would otherwise die out.", 0.9),
            ("Zoos protect endangered species.", "Zoo animals live in small cages.", 0.1),
            ("Zoo animals live in small cages.", "Enclosures are far too small for large animals.", 0.8),
            ("Zoos educate children about wildlife.", "Zoo animals live in small cages.", 0.2),
        ]
    )
)
VALNOV_CSV = (
    "topic,Premise,Conclusion,Validity,Validity-Confidence,Novelty,Novelty-Confidence\n"
    'Zoos,"Zoos keep wild animals in small enclosures for their whole lives.",Zoos harm the animals they '
    "keep,1,very confident,-1,majority\n"
    'School uniforms,"Uniforms take away a way teenagers express who they are.",Uniforms improve '
    "students' grades,-1,very confident,1,confident\n"
    'Zoos,"Zoos fund conservation work in the wild.",Zoos help species survive,1,confident,1,majority\n'
)
VALNOV_JSONL = lines(
    {
        "topic": "Nuclear energy",
        "Premise": "Reactors emit almost no CO2 while running.",
        "Conclusion": "Nuclear energy helps the climate",
        "Validity": 1,
        "Validity-Confidence": "confident",
        "Novelty": 1,
        "Novelty-Confidence": "majority",
    },
    {
        "topic": "Nuclear energy",
        "Premise": "Nuclear waste stays dangerous for millennia.",
        "Conclusion": "Nuclear waste is a burden for future generations",
        "Validity": 1,
        "Validity-Confidence": "very confident",
        "Novelty": -1,
        "Novelty-Confidence": "confident",
    },
)
PAIRS = lines(
    {
        "id": "p1",
        "topic": "Nuclear energy",
        "stance": "pro",
        "a": {"system": "arg-ctrl", "text": "Nuclear plants produce a lot of electricity without greenhouse gases."},
        "b": {
            "system": "reference",
            "text": "Nuclear energy gives base-load power that does not depend on the weather.",
        },
    },
    {
        "id": "p2",
        "topic": "School uniforms",
        "stance": "con",
        "a": {"system": "reference", "text": "School uniforms take away a way teenagers express who they are."},
        "b": {"system": "arg-ctrl", "text": "Uniforms cost families a lot of money and students do not like them."},
    },
)
DEBATES = lines(
    *[
        {
            "id": f"d{n}",
            "system": "human",
            "topic": topic,
            "turns": [{"speaker": "Alice", "text": a}, {"speaker": "Bob", "text": b}],
        }
        for n, (topic, a, b) in enumerate(
            [
                (
                    "All zoos should be closed.",
                    "Zoos keep animals in cages far too small for them.",
                    "Modern zoos breed endangered species that would otherwise die out.",
                ),
                (
                    "Schools should require uniforms.",
                    "Uniforms stop bullying about clothes.",
                    "Bullies find other things to mock.",
                ),
            ]
        )
    ]
)

CASES = {
    "sentence_label": Case(
        Shape("ukp-tsv", "uniforms.tsv", UNIFORMS_TSV, gold=("first", 1)),
        Shape("kialo", "uniforms.txt", KIALO_UNIFORMS),
        settings={"assignments_per_item": "2", "items_per_hit": "3"},
    ),
    "aspect": Case(
        Shape("appf-jsonl", "aspects.jsonl", APPF, gold=("first", 1)),
        Shape("conll", "mw_conll_gold_chunk.txt", CONLL),
        settings={"assignments_per_item": "2", "items_per_hit": "2"},
    ),
    "span_grounding": Case(
        Shape("fact-kb", "wage_kb.jsonl", KB),
        Shape("ukp-tsv", "wage.tsv", WAGE_TSV),
        before=[Shape("arguments-jsonl", "wage_arguments.jsonl", WAGE_ARGUMENTS)],
        settings={"assignments_per_item": "2", "items_per_hit": "2"},
    ),
    "bws_similarity": Case(
        Shape("ukp-aspect-tsv", "UKP_ASPECT.tsv", ASPECT_TSV),
        Shape("bws-csv", "BWS_Argument_Similarity_Corpus.csv", BWS_CSV),
        config='{"scorer": "jaccard", "tuples_per_pair": 1, "attention_checks": 0}',
        settings={"assignments_per_item": "2", "items_per_hit": "2", "gold_rate": "0"},
    ),
    "validity_novelty": Case(
        Shape("valnov-csv", "valnov.csv", VALNOV_CSV, gold=("first", 1)),
        Shape("valnov-jsonl", "valnov.jsonl", VALNOV_JSONL),
        settings={"assignments_per_item": "2", "items_per_hit": "2"},
    ),
    "pairwise_preference": Case(
        Shape("pairs-jsonl", "pairs.jsonl", PAIRS),
        Shape("kialo", "uniforms.txt", KIALO_UNIFORMS),
        settings={"assignments_per_item": "2", "items_per_hit": "2"},
    ),
    "likert_debate": Case(
        Shape("debates-jsonl", "debates.jsonl", DEBATES),
        Shape("kialo", "uniforms.txt", KIALO_UNIFORMS, options={"length": "2"}),
        settings={"assignments_per_item": "2", "items_per_hit": "1"},
    ),
}


def test_every_registered_task_type_has_a_journey():
    assert set(CASES) == set(ANSWER) == {t.name for t in all_task_types()}


# --- the phone worker: touch only -------------------------------------------------------------------------------
def tap_aspect(phone, items):
    for item in items:
        listbox = phone.locator(f"#item-{item.pk}-listbox")
        phone.locator(f"#item-{item.pk}-input").tap()
        expect(listbox).to_be_visible()
        listbox.locator("[role=option]").first.tap()
        expect(phone.locator(f"#item-{item.pk} .aspect-chip")).to_have_count(1)
        expect(listbox).to_be_hidden()


def tap_spans(phone, items):
    for item in items:  # "this argument has no factual span"
        phone.locator(f"#item-{item.pk} label.sg-none").tap()
        expect(phone.locator(f"#item-{item.pk}-none")).to_be_checked()


TAP = {"aspect": tap_aspect, "span_grounding": tap_spans}


def submit_and_stop(page, press) -> None:
    """Submit the HIT (``press``: click or tap), then take the completion code: the page goes to it at once when no
    HIT is left, else it shows the next HIT (reserved for the worker), where "Stop and get my completion code" does."""
    submitted = Assignment.objects.filter(status=Assignment.Status.SUBMITTED).count()
    reserved = set(Assignment.objects.filter(status=Assignment.Status.RESERVED).values_list("pk", flat=True))
    press(page.locator("#hit-submit"))
    deadline = time.monotonic() + 15
    while Assignment.objects.filter(status=Assignment.Status.SUBMITTED).count() == submitted:
        assert time.monotonic() < deadline, "the HIT was not submitted"
        page.wait_for_timeout(100)
    code = page.locator("#completion-code")
    while not code.is_visible():
        assert time.monotonic() < deadline, "neither the completion code nor the next HIT came"
        if Assignment.objects.filter(status=Assignment.Status.RESERVED).exclude(pk__in=reserved).exists():
            expect(page.locator("#hit-answered")).to_contain_text("0 of")  # the next HIT's page, loaded
            press(page.locator("#hit-stop-button"))
            break
        page.wait_for_timeout(100)
    expect(code).to_be_visible()


def hit_items(page) -> list[Item]:
    expect(page.locator(".hit-item").first).to_be_visible()
    ids = [int(x) for x in page.locator(".hit-item").evaluate_all("els => els.map(e => e.dataset.itemId)")]
    by_id = Item.objects.in_bulk(ids)
    return [by_id[i] for i in ids]


# --- the expert's steps -----------------------------------------------------------------------------------------
def choose_upload(page, shape: Shape, tmp_path) -> None:
    """The items step: the source, the file written in its published layout, its options and the gold share."""
    expect(page.locator("#items-form")).to_be_visible()
    page.check(f"#source-{shape.source}")
    path = tmp_path / shape.file_name
    path.write_text(shape.content, encoding="utf-8")
    page.set_input_files("input[name=file]", str(path))
    for option, value in shape.options.items():
        page.fill(f"input[name='{shape.source}__{option}']", value)
    if shape.gold is not None:
        mode, n = shape.gold
        expect(page.locator("#gold-fields")).to_be_visible()
        page.check(f"input[name=gold_mode][value={mode}]")
        page.fill("#id_gold_n", str(n))
    page.click("#items-next")


def read_preview(page, shape: Shape) -> tuple[int, int]:
    expect(page.locator("#count-items")).to_be_visible()
    items, gold = int(page.locator("#count-items").inner_text()), int(page.locator("#count-gold").inner_text())
    assert page.locator("#preview tbody tr").count() >= 1
    if shape.gold is not None:
        assert gold == shape.gold[1] and page.locator("#gold-share").inner_text().startswith(f"the first {gold}")
    return items, gold


def run_job(page, shot: str) -> None:
    page.click("#confirm-import")
    expect(page).to_have_url(re.compile(r"/jobs/[0-9a-f-]+/$"))
    expect(page.locator("#job-done")).to_be_visible(timeout=JOB_TIMEOUT_MS)
    staff_screenshot(page, shot)


def add_items(page, live_server, project: Project, shape: Shape, tmp_path, shot: str) -> tuple[int, int]:
    page.goto(f"{live_server.url}/studio/projects/{project.slug}/")
    page.click("#add-items-link")
    choose_upload(page, shape, tmp_path)
    items, gold = read_preview(page, shape)
    assert items >= 1, f"{shape.file_name}: no new items in the preview"
    staff_screenshot(page, f"{shot}-preview")
    run_job(page, f"{shot}-job")
    return items, gold


def counts(project: Project) -> tuple[int, int]:
    qs = Item.objects.filter(project=project, is_training=False)
    return qs.filter(is_gold=False).count(), qs.filter(is_gold=True).count()


@pytest.mark.browser
@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("task_type", sorted(CASES))
def test_a_whole_study_of_each_task_type_from_the_browser(
    task_type, tmp_artifacts, live_server, page, phone, new_context, celery_worker_proc, tmp_path
):
    case = CASES[task_type]
    accounts_after_migrations()
    shot = f"journey-{task_type.replace('_', '-')}"

    # a new project: name, task type, config, settings; the upload, its preview with the gold share; the import job
    login(page, live_server, "/studio/")
    expect(page.locator("h1")).to_have_text("Studio")
    page.click("#new-project")
    name = f"Journey: {task_type}"
    page.fill("#id_name", name)
    page.select_option("#id_task_type", task_type)
    if case.config:
        page.fill("#id_config", case.config)
    for key, value in case.settings.items():
        page.fill(f"#id_{key}", value)
    page.click("#setup-next")
    choose_upload(page, case.first, tmp_path)
    n_items, n_gold = read_preview(page, case.first)
    assert not Project.objects.filter(name=name).exists()  # the preview wrote nothing
    staff_screenshot(page, f"{shot}-1-preview")
    run_job(page, f"{shot}-2-job")
    project = Project.objects.get(name=name)
    assert counts(project) == (n_items, n_gold)
    for n, shape in enumerate(case.before):  # span grounding: the arguments after their fact KB
        added, gold = add_items(page, live_server, project, shape, tmp_path, f"{shot}-2{n}-before")
        n_items, n_gold = n_items + added, n_gold + gold
        assert counts(project) == (n_items, n_gold)

    # activate (a confirmation step); the invite link
    page.goto(f"{live_server.url}/studio/projects/{project.slug}/")
    expect(page.locator("#project-status")).to_have_text("Draft")
    page.click("#status-active")
    expect(page.locator("#confirm-status")).to_be_visible()
    page.click("#confirm-status")
    expect(page.locator("#project-status")).to_have_text("Active")
    page.click("#copy-invite")
    expect(page.locator("#copy-done")).to_have_text("Copied.")
    invite = page.locator("#invite-url").inner_text().strip()
    assert invite.endswith(f"/invite/{project.invite_token}/")

    # worker 1 at a desk, with the keyboard, leaves feedback; worker 2 on a phone, by touch
    worker_page = new_context(viewport={"width": 1366, "height": 768}).new_page()
    worker_page.set_default_timeout(15000)
    worker_page.goto(invite)
    expect(worker_page).to_have_url(re.compile(rf"/work/{project.slug}/$"))
    ANSWER[task_type](worker_page)
    worker_page.locator("#feedback").fill(FEEDBACK)
    submit_and_stop(worker_page, lambda button: button.click())
    phone.goto(invite)
    items = hit_items(phone)
    TAP.get(task_type, tap_choices)(phone, items)
    expect(phone.locator("#hit-answered")).to_have_text(f"{len(items)} of {len(items)} answered")
    submit_and_stop(phone, lambda button: button.tap())
    submitted = Assignment.objects.filter(project=project, status=Assignment.Status.SUBMITTED)
    assert submitted.values("worker").distinct().count() == 2
    answers = {
        (r.assignment_id, r.item_id): r.data
        for r in Response.objects.filter(assignment__in=submitted, item__is_gold=False)
    }
    assert answers
    page.reload()
    expect(page.locator("#progress-done")).to_have_text(str(len(answers)))
    expect(page.locator("#feedback .feedback-row .feedback-text")).to_have_text(FEEDBACK)
    staff_screenshot(page, f"{shot}-3-project")
    page.click("#project-pages a.page-agreement")
    expect(page.locator("h1")).to_contain_text(f"Agreement · {name}")
    staff_screenshot(page, f"{shot}-3-agreement")

    # settings: the guidelines' Markdown previewed live as workers will see it
    page.goto(f"{live_server.url}/studio/projects/{project.slug}/settings/")
    page.fill("#id_guidelines", "## How to\n\nRead **each** item twice.")
    expect(page.locator("#guidelines-preview strong")).to_have_text("each")
    page.click("#save-settings")
    expect(page.locator("#project-status")).to_have_text("Active")
    project.refresh_from_db()
    assert "<strong>each</strong>" in project.guidelines

    # more items while the study runs: new HITs; the HITs and answers so far stay as they are
    hits_before = set(HIT.objects.filter(project=project).values_list("pk", flat=True))
    added, gold = add_items(page, live_server, project, case.added, tmp_path, f"{shot}-4-add")
    assert counts(project) == (n_items + added, n_gold + gold)
    assert hits_before < set(HIT.objects.filter(project=project).values_list("pk", flat=True))
    assert {
        (r.assignment_id, r.item_id): r.data
        for r in Response.objects.filter(assignment__in=submitted, item__is_gold=False)
    } == answers

    # the release from the studio: the card's fields, the job, the download from the page
    page.goto(f"{live_server.url}/studio/projects/{project.slug}/")
    page.click("#release-link")
    page.check("#id_kind_annotations")
    page.fill("#id_version", "1.0")
    page.fill("#id_license", "CC-BY-4.0")
    page.fill("#id_citation", CITATION)
    staff_screenshot(page, f"{shot}-5-release")
    page.click("#publish-release")
    expect(page.locator("#job-done")).to_be_visible(timeout=JOB_TIMEOUT_MS)
    page.click("#job-project")
    link = page.locator("a.release-file", has_text="annotations.jsonl")
    expect(link).to_be_visible()
    staff_screenshot(page, f"{shot}-6-released")
    with page.expect_download() as download:
        link.click()
    rows = [json.loads(line) for line in open(download.value.path(), encoding="utf-8") if line.strip()]
    with page.expect_download() as card_download:
        page.locator("a.release-file", has_text="README.md").click()
    card = open(card_download.value.path(), encoding="utf-8").read()
    assert "CC-BY-4.0" in card and CITATION in card

    # the release rows are the project's items; their annotations are the submitted answers, exactly
    assert sorted(r["item_id"] for r in rows) == sorted(
        Item.objects.filter(project=project, is_gold=False, is_training=False).values_list("pk", flat=True)
    )
    released = {(a["assignment"], r["item_id"]): a["response"] for r in rows for a in r["annotations"]}
    assert released == answers
    assert {r["project"] for r in rows} == {project.slug} and not any(r["is_gold"] for r in rows)
