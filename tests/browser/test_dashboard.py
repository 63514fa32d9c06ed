"""An expert opens the agreement dashboard of a demo-like project in headless Chromium: the figures shown equal
``manage.py agreement project <slug> --json``, the four charts are SVG with marks, the drill-down lists the
lowest-agreement items and an adjudication is recorded with who and when."""
from __future__ import annotations

import io
import json
import os
import random
import re

import pytest
from django.core.management import call_command
from playwright.sync_api import expect

from annotation import services
from annotation.models import Adjudication, GoldItem, Item, Project
from annotation.tasks import recompute_agreement

SCREENSHOT = os.path.join(os.environ.get("ARGORA_VAR_DIR", "/tmp"), "dashboard.png")
SCREENSHOT_CHARTS = os.path.join(os.environ.get("ARGORA_VAR_DIR", "/tmp"), "dashboard-charts.png")
SCREENSHOT_ITEMS = os.path.join(os.environ.get("ARGORA_VAR_DIR", "/tmp"), "dashboard-items.png")
LABELS = ["pro", "con", "none"]
TOPICS = {"nuclear energy": "Nuclear power", "school uniforms": "School uniforms"}


def build_demo_project(expert_user) -> Project:
    """18 items over 2 topics, 3 gold items, R = 4, HITs of 6; five crowdworkers of varying skill and one expert."""
    from django.contrib.auth import get_user_model

    rng = random.Random(7)
    project = services.create_project(
        name="Demo: stance (dashboard)", slug="demo-dashboard", task_type="sentence_label",
        config={"labels": LABELS}, assignments_per_item=4, items_per_hit=6, gold_rate=0.34, gold_min_items=0,
        status=Project.Status.ACTIVE)
    truth = {}
    payloads = []
    for topic, stem in TOPICS.items():
        for i in range(9):
            payloads.append({"sentence_id": None, "topic": topic,
                             "text": f"{stem}: argument sentence number {i + 1} about {topic}."})
    gold = [{"payload": {"sentence_id": None, "topic": "nuclear energy", "text": f"Gold sentence {k}."},
             "expected": {"label": LABELS[k % 3]}} for k in range(3)]
    services.add_items(project, payloads, gold=gold)
    services.build_hits(project)
    for item in Item.objects.filter(project=project, is_gold=False):
        truth[item.pk] = rng.choice(LABELS)
    for g in GoldItem.objects.filter(item__project=project):
        truth[g.item_id] = g.expected["label"]
    User = get_user_model()
    people = [(expert_user, 0.95)] + [
        (User.objects.create_user(f"crowd{k}", password="pw-crowd-123"), skill)
        for k, skill in enumerate([0.9, 0.8, 0.7, 0.55, 0.4], start=1)]
    for rnd in range(3):
        order = people[rnd:] + people[:rnd] if rnd else people
        for user, skill in order:
            worker = services.worker_for_user(user)
            assignment = services.reserve_next_assignment(project, worker)
            if assignment is None:
                continue
            answers = {}
            for item in services.assignment_items(assignment):
                label = truth[item.pk] if rng.random() < skill else rng.choice(LABELS)
                answers[str(item.pk)] = {"label": label}
            services.submit_assignment(assignment, worker, answers)
    return project


def cli_json(slug: str) -> dict:
    out = io.StringIO()
    call_command("agreement", "project", slug, "--json", stdout=out)
    return json.loads(out.getvalue())


def login(page, live_server, username: str, password: str, next_url: str):
    page.goto(f"{live_server.url}/accounts/login/?next={next_url}")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", password)
    page.click("button[type=submit]")


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_expert_reads_the_agreement_dashboard(live_server, page, staff_user):
    project = build_demo_project(staff_user)
    assert recompute_agreement(project.pk)["stored"] >= 3
    expected = cli_json(project.slug)
    assert expected["n_coders"] == 6 and expected["n_units"] == 18

    url = f"/projects/{project.slug}/agreement/"
    login(page, live_server, "expert", "pw-expert-123", url)
    expect(page).to_have_url(re.compile(re.escape(url) + "$"))
    expect(page.locator("h1")).to_have_text(f"Agreement · {project.name}")

    # the figures shown are the CLI's figures (full precision in data-value, 3 decimals in the text)
    for key, sel in (("alpha", "#fig-alpha"), ("percent_agreement", "#fig-percent-agreement"),
                     ("kappa", "#fig-kappa")):
        cell = page.locator(sel)
        assert float(cell.get_attribute("data-value")) == pytest.approx(expected[key], abs=1e-12)
        assert cell.inner_text() == f"{expected[key]:.3f}"
    assert int(page.locator("#fig-n-units").inner_text()) == expected["n_units"]
    assert int(page.locator("#fig-n-coders").inner_text()) == expected["n_coders"]
    row = page.locator('#figures tr[data-scope="project"]')
    assert float(row.locator('[data-key="fleiss_kappa"]').get_attribute("data-value")) == pytest.approx(
        expected["fleiss_kappa"], abs=1e-12)
    for topic in expected["topics"]:
        trow = page.locator(f'#figures tr[data-scope="topic:{topic["topic"]}"]')
        assert float(trow.locator('[data-key="alpha"]').get_attribute("data-value")) == pytest.approx(
            topic["alpha"], abs=1e-12)
        assert int(trow.locator('[data-key="n_units"]').inner_text()) == topic["n_units"]
    # crowd vs expert rows exist (the staff user annotated too)
    assert expected["crowd_vs_expert"] is not None
    between = page.locator('#figures tr[data-scope="crowd-vs-expert"] [data-key="percent_agreement"]')
    assert float(between.get_attribute("data-value")) == pytest.approx(
        expected["crowd_vs_expert"]["between"]["percent_agreement"], abs=1e-12)

    # four SVG charts, each with data marks
    for chart in ("#chart-histogram", "#chart-workers", "#chart-time", "#chart-topics"):
        expect(page.locator(f"svg{chart}")).to_be_visible()
        assert page.locator(f"svg{chart} .mark").count() > 0, chart
    assert page.locator("svg#chart-histogram rect.mark").count() >= 1
    assert page.locator("svg#chart-workers circle.mark").count() == 6  # every worker answered gold items
    assert page.locator("svg#chart-topics rect.mark").count() == 2
    assert page.locator("#workers tbody tr").count() == 6
    page.screenshot(path=SCREENSHOT, full_page=False)
    page.locator("#chart-histogram").scroll_into_view_if_needed()
    page.screenshot(path=SCREENSHOT_CHARTS, full_page=False)
    page.screenshot(path=SCREENSHOT_CHARTS.replace("-charts", "-full"), full_page=True)

    # drill-down: lowest agreement first; adjudicate the first item
    page.click("text=All items, lowest agreement first, with adjudication →")
    expect(page).to_have_url(re.compile(r"/agreement/items/$"))
    values = [float(v) for v in page.locator(".item-agreement").all_inner_texts() if v != "—"]
    assert values == sorted(values) and len(values) == 18
    first = page.locator("div.card[id^=item-]").first
    item_id = int(first.get_attribute("id").split("-")[1])
    first.locator("select[name=label]").select_option("con")
    first.locator("input[name=note]").fill("expert decision")
    first.locator("button", has_text="Set final answer").click()
    expect(page.locator(f"#item-{item_id} .adjudicated")).to_contain_text("adjudicated: con — by expert")
    adj = Adjudication.objects.get(item_id=item_id)
    assert adj.expert == staff_user and adj.answer == {"label": "con"} and adj.note == "expert decision"
    page.screenshot(path=SCREENSHOT_ITEMS, full_page=False)


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_crowdworker_gets_403_on_the_dashboard(live_server, page, django_user_model):
    project = services.create_project(name="p", slug="p", task_type="sentence_label", status="active")
    django_user_model.objects.create_user("crowdy", password="pw-crowd-123")
    url = f"/projects/{project.slug}/agreement/"
    login(page, live_server, "crowdy", "pw-crowd-123", url)
    response = page.goto(f"{live_server.url}{url}")
    assert response.status == 403
    expect(page.locator("body")).to_contain_text("research team")
