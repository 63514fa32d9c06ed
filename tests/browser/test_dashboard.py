"""An expert opens the agreement dashboard of the demo project (``manage.py load_demo``: ``demo-stance`` with HITs
answered by seeded simulated workers) in headless Chromium: the figures shown equal
``manage.py agreement project demo-stance --json``, the four charts are SVG with marks, the drill-down lists the
lowest-agreement items and an adjudication is recorded with who and when."""
from __future__ import annotations

import io
import json
import os
import re

import pytest
from django.core.management import call_command
from playwright.sync_api import expect

from annotation import services
from annotation.demo import DEMO_SLUG
from annotation.models import Adjudication, Project

SCREENSHOT = os.path.join(os.environ.get("ARGORA_VAR_DIR", "/tmp"), "dashboard.png")
SCREENSHOT_CHARTS = os.path.join(os.environ.get("ARGORA_VAR_DIR", "/tmp"), "dashboard-charts.png")
SCREENSHOT_ITEMS = os.path.join(os.environ.get("ARGORA_VAR_DIR", "/tmp"), "dashboard-items.png")


def cli_json(slug: str) -> dict:
    out = io.StringIO()
    call_command("agreement", "project", slug, "--json", stdout=out)
    return json.loads(out.getvalue())


def login(page, live_server, username: str, password: str, next_url: str):
    page.goto(f"{live_server.url}/accounts/login/?next={next_url}")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", password)
    page.click("button[type=submit]")


def demo_expert_password() -> str:
    from argora.management.commands.load_demo import DEMO_ACCOUNTS

    return next(a for a in DEMO_ACCOUNTS if a.username == "expert").password


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_expert_reads_the_demo_agreement_dashboard(live_server, page):
    call_command("load_demo", stdout=io.StringIO())
    project = Project.objects.get(slug=DEMO_SLUG)
    expected = cli_json(DEMO_SLUG)
    assert expected["n_responses"] > 0 and expected["n_coders"] >= 4 and expected["n_units"] >= 10
    assert expected["alpha"] is not None and expected["kappa"] is not None

    url = f"/projects/{DEMO_SLUG}/agreement/"
    login(page, live_server, "expert", demo_expert_password(), url)
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
    assert int(page.locator("#based-on").inner_text()) == expected["based_on"]
    row = page.locator('#figures tr[data-scope="project"]')
    assert float(row.locator('[data-key="fleiss_kappa"]').get_attribute("data-value")) == pytest.approx(
        expected["fleiss_kappa"], abs=1e-12)
    for topic in expected["topics"]:
        trow = page.locator(f'#figures tr[data-scope="topic:{topic["topic"]}"]')
        if topic["alpha"] is not None:
            assert float(trow.locator('[data-key="alpha"]').get_attribute("data-value")) == pytest.approx(
                topic["alpha"], abs=1e-12)
        assert int(trow.locator('[data-key="n_units"]').inner_text()) == topic["n_units"]
    # crowd vs expert: the demo's expert account answered a HIT
    cve = expected["crowd_vs_expert"]
    assert cve is not None and cve["expert_source"] == "staff"
    between = page.locator('#figures tr[data-scope="crowd-vs-expert"] [data-key="percent_agreement"]')
    assert float(between.get_attribute("data-value")) == pytest.approx(cve["between"]["percent_agreement"], abs=1e-12)

    # four SVG charts, each with data marks
    for chart in ("#chart-histogram", "#chart-workers", "#chart-time", "#chart-topics"):
        expect(page.locator(f"svg{chart}")).to_be_visible()
        assert page.locator(f"svg{chart} .mark").count() > 0, chart
    assert page.locator("svg#chart-histogram rect.mark").count() >= 1
    plotted = [w for w in expected["workers"] if w["loo_agreement"] is not None and w["gold_accuracy"] is not None]
    assert page.locator("svg#chart-workers circle.mark").count() == len(plotted) >= 4
    assert page.locator("svg#chart-topics rect.mark").count() == sum(t["alpha"] is not None
                                                                     for t in expected["topics"])
    assert page.locator("#workers tbody tr").count() == len(expected["workers"])
    page.screenshot(path=SCREENSHOT, full_page=False)
    page.locator("#chart-histogram").scroll_into_view_if_needed()
    page.screenshot(path=SCREENSHOT_CHARTS, full_page=False)
    page.screenshot(path=SCREENSHOT_CHARTS.replace("-charts", "-full"), full_page=True)

    # drill-down: lowest agreement first; adjudicate the first item
    page.click("text=All items, lowest agreement first, with adjudication →")
    expect(page).to_have_url(re.compile(r"/agreement/items/$"))
    values = [float(v) for v in page.locator(".item-agreement").all_inner_texts() if v != "—"]
    assert values == sorted(values)
    assert len(values) == sum(1 for it in expected["items"] if it["agreement"] is not None)
    first = page.locator("div.card[id^=item-]").first
    item_id = int(first.get_attribute("id").split("-")[1])
    first.locator("select[name=label]").select_option("con")
    first.locator("input[name=note]").fill("expert decision")
    first.locator("button", has_text="Set final answer").click()
    expect(page.locator(f"#item-{item_id} .adjudicated")).to_contain_text("adjudicated: con — by expert")
    adj = Adjudication.objects.get(item_id=item_id)
    assert adj.expert.username == "expert" and adj.answer == {"label": "con"} and adj.note == "expert decision"
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
