"""The whole worker journey of a study with every phase on, in headless Chromium at 1366x768: consent -> instructions
-> training (the explanation after each answer) -> qualification passed -> the HIT -> exit survey -> the end page with
the completion code; and a worker who fails the qualification twice is screened out with the screened-out code and
never sees a HIT. Answers typed on a training item and in the survey survive a reload."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from annotation import phases, services, teams
from annotation.models import Assignment, Participation, Project, Response, Worker, WorkerProjectCode
from tests.factories import ProjectFactory

from .conftest import staff_screenshot

LABELS = ["pro", "con", "none"]
TEXTS = ["Wind farms cut carbon emissions.", "Wind turbines kill thousands of birds.", "The farm has 12 turbines."]
TRAINING = [
    ("Solar panels lower electricity bills.", "pro", "It gives a reason in favour of solar power."),
    ("Solar panels need rare metals that are mined at great cost.", "con", "It gives a reason against solar power."),
    ("The roof of the school faces south.", "none", "A plain fact: no reason for or against."),
]
SURVEY = [
    {
        "name": "clarity",
        "label": "How clear were the instructions?",
        "kind": "likert",
        "scale": ["Very unclear", "Unclear", "Neither", "Clear", "Very clear"],
        "required": True,
    },
    {
        "name": "age_group",
        "label": "Your age group",
        "kind": "choice",
        "options": ["18-24", "25-34", "35-49", "50 or older", "Prefer not to say"],
        "required": True,
    },
    {"name": "comments", "label": "Anything else you want to tell us?", "kind": "text"},
]


def make_project() -> Project:
    gold = [
        {
            "payload": {"text": t, "topic": "solar power"},
            "expected": {"label": label},
            "explanation": why,
            "training": True,
        }
        for t, label, why in TRAINING
    ]
    project = ProjectFactory(
        name="Wind energy: stance",
        config={"labels": LABELS},
        guidelines="<p>Is each sentence an argument <b>for</b> (pro) or <b>against</b> (con) the topic, or none?</p>",
        assignments_per_item=1,
        items_per_hit=3,
        gold_min_items=0,
        reward_cents=40,
        time_estimate_seconds=120,
        items=[{"text": t, "topic": "wind power"} for t in TEXTS],
        gold=gold,
    )
    phases.configure(
        project,
        {
            "consent_required": True,
            "consent_text": "## About this study\n\nWe record your answers for research. **You may stop at any time.**",
            "instructions_required": True,
            "training_enabled": True,
            "pass_threshold": 0.6,
            "max_attempts": 2,
            "survey_enabled": True,
            "survey_questions": SURVEY,
        },
    )
    return project


def start(page, live_server, project):
    page.goto(f"{live_server.url}/invite/{project.invite_token}/")
    expect(page).to_have_url(re.compile(rf"/work/{project.slug}/study/consent/$"))
    expect(page.locator("#consent-text h2")).to_have_text("About this study")
    expect(page.locator("#phase-steps li.current")).to_have_text("Consent")


def consent_and_instructions(page, project):
    page.locator("#consent-continue").click()  # without the tick: refused, naming the field
    expect(page.locator("#consent-error")).to_contain_text("consent: tick the box")
    page.locator("#consent-box").focus()
    page.keyboard.press("Space")
    page.locator("#consent-continue").focus()
    page.keyboard.press("Enter")
    expect(page).to_have_url(re.compile(r"/study/instructions/$"))
    expect(page.locator("#instructions .guidelines")).to_contain_text("against")
    expect(page.locator("#instructions-read")).to_be_focused()
    page.keyboard.press("Enter")
    expect(page).to_have_url(re.compile(r"/study/training/$"))


def answer_training(page, key: str):
    """On a training item: choose with a digit key, send with Enter; returns on the feedback page."""
    expect(page.locator("#hit.js")).to_have_count(1)  # hit.js is ready: the item has the focus
    expect(page.locator(".hit-item")).to_be_focused()
    page.keyboard.press(key)
    expect(page.locator("#hit-submit")).to_be_focused()
    page.keyboard.press("Enter")
    expect(page).to_have_url(re.compile(r"answered=\d+"))


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_the_whole_worker_journey_ends_with_the_completion_code(live_server, page):
    project = make_project()
    start(page, live_server, project)
    staff_screenshot(page, "phases-consent")
    consent_and_instructions(page, project)
    worker = Worker.objects.get(source=Worker.Source.INVITE)
    assert not Assignment.objects.filter(worker=worker).exists()

    # training item 1: a choice survives a reload (saved as a draft), then the answer and its explanation
    expect(page.locator("#training-intro")).to_contain_text("Training item 1 of 3")
    expect(page.locator(".hit-item")).to_be_focused()  # hit.js is ready (it focuses the item): keys are its now
    page.keyboard.press("2")
    expect(page.locator("#hit-saved")).to_have_text("Your answers are saved as you go.")
    page.reload()
    expect(page.locator(".hit-item input[value=con]")).to_be_checked()
    expect(page.locator("#hit-saved")).to_have_text("Your saved answer is back.")
    page.locator(".hit-item input[value=pro]").check()
    page.locator("#hit-submit").click()
    expect(page.locator("#verdict-title")).to_have_text("Right!")
    expect(page.locator("#explanation")).to_contain_text("It gives a reason in favour of solar power.")
    staff_screenshot(page, "phases-training-feedback")
    page.keyboard.press("Enter")

    answer_training(page, "1")  # wrong: the expected answer is "con"
    expect(page.locator("#verdict-title")).to_have_text("Not quite.")
    expect(page.locator("#expected-answer")).to_have_text("con")
    expect(page.locator("#explanation")).to_contain_text("a reason against solar power")
    staff_screenshot(page, "phases-training-wrong")
    page.locator("#training-continue").click()
    answer_training(page, "3")
    expect(page.locator("#training-continue")).to_have_text("See your result")
    page.keyboard.press("Enter")
    expect(page.locator("#result-title")).to_contain_text("You qualified")
    expect(page.locator("#result-score")).to_contain_text("2 of the 3")
    staff_screenshot(page, "phases-qualified")
    page.locator("#start-task").click()

    # the HIT
    expect(page).to_have_url(re.compile(rf"/work/{project.slug}/$"))
    expect(page.locator(".hit-item")).to_have_count(3)
    for key in ("1", "2", "3"):
        page.keyboard.press(key)
    page.keyboard.press("Enter")

    # no HIT left: the exit survey, whose answers survive a reload
    expect(page).to_have_url(re.compile(r"/study/survey/\?finished=1$"))
    expect(page.locator("#phase-steps li.current")).to_have_text("Survey")
    page.locator("#q-comments").fill("The training helped.")
    page.locator("input[name=q-clarity][value='4']").check()
    expect(page.locator("#survey-saved")).to_have_text("Your answers are saved as you type.")
    page.reload()
    expect(page.locator("#q-comments")).to_have_value("The training helped.")
    expect(page.locator("input[name=q-clarity][value='4']")).to_be_checked()
    page.locator("#survey-submit").click()  # the demographics question is required
    expect(page.locator("#q-age_group-error")).to_have_text("age_group: please answer this question")
    expect(page.locator("#q-comments")).to_have_value("The training helped.")
    staff_screenshot(page, "phases-survey")
    page.locator("input[name=q-age_group][value='25-34']").check()
    page.locator("#survey-submit").click()

    expect(page).to_have_url(re.compile(rf"/work/{project.slug}/done/\?finished=1$"))
    code = services.completion_code(project, worker)
    expect(page.locator("#completion-code")).to_have_text(code)
    staff_screenshot(page, "phases-done")
    p = Participation.objects.get(project=project, worker=worker)
    assert p.consent_at and p.instructions_opened_at and p.qualified_at
    assert p.survey == {"clarity": 4, "age_group": "25-34", "comments": "The training helped."}
    assert p.training_answers.count() == 3
    assert Response.objects.filter(assignment__worker=worker).count() == 3


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_a_worker_who_fails_twice_is_screened_out_with_its_code_and_never_sees_a_hit(live_server, page):
    project = make_project()
    start(page, live_server, project)
    consent_and_instructions(page, project)
    for attempt in (1, 2):
        for key in ("3", "3", "1"):  # all wrong
            answer_training(page, key)
            expect(page.locator("#verdict-title")).to_have_text("Not quite.")
            page.keyboard.press("Enter")
        if attempt == 1:
            expect(page.locator("#result-title")).to_contain_text("try once more")
            expect(page.locator("#result-score")).to_contain_text("0 of the 3")
            staff_screenshot(page, "phases-retry")
            page.locator("#retry").click()
            expect(page.locator("#training-intro")).to_contain_text("attempt 2 of 2")
    expect(page).to_have_url(re.compile(r"/study/screened-out/$"))
    worker = Worker.objects.get(source=Worker.Source.INVITE)
    code = WorkerProjectCode.objects.get(project=project, worker=worker)
    assert code.kind == WorkerProjectCode.Kind.SCREENED_OUT
    expect(page.locator("#screened-out-code")).to_have_text(code.code)
    expect(page.locator("#screened-out-message")).to_contain_text("Thank you for taking the time")
    staff_screenshot(page, "phases-screened-out")
    page.goto(f"{live_server.url}/work/{project.slug}/")  # no way round it
    expect(page).to_have_url(re.compile(r"/study/screened-out/$"))
    assert not Assignment.objects.filter(worker=worker).exists()


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_the_researcher_sets_up_the_phases_in_the_studio_and_reads_the_counts(live_server, page):
    from argora.management.commands.load_demo import DEMO_ACCOUNTS, ensure_accounts

    ensure_accounts()
    project = make_project()
    teams.add_member(project, "expert", "editor", by=None)  # the study's team
    phases.configure(project, {"training_enabled": False, "survey_enabled": False}, training_items=[])
    page.goto(f"{live_server.url}/accounts/login/?next=/studio/projects/{project.slug}/phases/")
    page.fill("input[name=username]", "expert")
    page.fill("input[name=password]", next(a for a in DEMO_ACCOUNTS if a.username == "expert").password)
    page.click("button[type=submit]")
    expect(page.locator("#training-items tbody tr")).to_have_count(3)
    staff_screenshot(page, "studio-phases")
    page.locator("#id_training_enabled").check()
    page.locator("#id_survey_enabled").check()
    page.locator("#id_survey_questions").fill('[{"name": "clarity", "label": "Clear?", "kind": "likert"}]')
    page.locator("#save-phases").click()
    expect(page.locator("#survey_questions-errors")).to_contain_text("survey_questions[0].scale")
    page.locator("#id_survey_questions").fill(
        '[{"name": "clarity", "label": "Clear?", "kind": "likert", "scale": ["No", "Yes"]}]'
    )
    page.locator("#save-phases").click()
    expect(page.locator("#training_items-errors")).to_contain_text("no training items")
    for row in page.locator("#training-items tbody tr").all()[:2]:
        row.locator("input[type=checkbox]").check()
    page.locator("#training-items textarea").first.fill("Because it argues for solar power.")
    page.locator("#save-phases").click()
    expect(page).to_have_url(re.compile(rf"/studio/projects/{project.slug}/#phases$"))
    expect(page.locator("#phase-counts")).to_be_visible()
    expect(page.locator("#count-qualified")).to_have_text("0")
    staff_screenshot(page, "studio-project-phases")
    cfg = project.phases.__class__.objects.get(project=project)
    assert cfg.training_enabled and cfg.survey_questions[0]["scale"] == ["No", "Yes"]
    training = list(phases.selectors.training_items(project))
    assert len(training) == 2 and training[0].gold.explanation == "Because it argues for solar power."
