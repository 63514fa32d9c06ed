"""An expert opens the agreement dashboard of the demo project (``manage.py load_demo``: ``demo-stance`` with HITs
answered by seeded simulated workers) in headless Chromium: the figures shown equal
``manage.py agreement project demo-stance --json``, the four charts are SVG with marks, the drill-down lists the
lowest-agreement items and an adjudication is recorded with who and when. Then every dashboard and results page
(dashboards index, agreement, items, BWS, ValNov, pairwise and Likert results, KB review) is opened with small data:
each states its n, marks figures below the documented minimum "too few ratings", fits 1366 px, and is saved with
``staff_screenshot``."""

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
from annotation.models import Adjudication, GoldItem, GoldRecord, Item, Project, Worker
from annotation.task_types.bws_similarity import project as bws
from annotation.task_types.ratings import LIKERT, PAIRWISE
from annotation.task_types.ratings import items as rating_items
from annotation.task_types.validity_novelty import results as valnov
from corpus.hashing import sentence_hash
from corpus.models import Sentence, Topic
from tests.conftest import join_every_project

from .conftest import staff_screenshot

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
    for key, sel in (("alpha", "#fig-alpha"), ("percent_agreement", "#fig-percent-agreement"), ("kappa", "#fig-kappa")):
        cell = page.locator(sel)
        assert float(cell.get_attribute("data-value")) == pytest.approx(expected[key], abs=1e-12)
        assert cell.inner_text() == f"{expected[key]:.3f}"
    assert int(page.locator("#fig-n-units").inner_text()) == expected["n_units"]
    assert int(page.locator("#fig-n-coders").inner_text()) == expected["n_coders"]
    assert int(page.locator("#based-on").inner_text()) == expected["based_on"]
    row = page.locator('#figures tr[data-scope="project"]')
    assert float(row.locator('[data-key="fleiss_kappa"]').get_attribute("data-value")) == pytest.approx(
        expected["fleiss_kappa"], abs=1e-12
    )
    for topic in expected["topics"]:
        trow = page.locator(f'#figures tr[data-scope="topic:{topic["topic"]}"]')
        if topic["alpha"] is not None:
            assert float(trow.locator('[data-key="alpha"]').get_attribute("data-value")) == pytest.approx(
                topic["alpha"], abs=1e-12
            )
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
    assert page.locator("svg#chart-topics rect.mark").count() == sum(t["alpha"] is not None for t in expected["topics"])
    assert page.locator("#workers tbody tr").count() == len(expected["workers"])
    page.screenshot(path=SCREENSHOT, full_page=False)
    staff_screenshot(page, "agreement-demo")
    page.locator("#chart-histogram").scroll_into_view_if_needed()
    page.screenshot(path=SCREENSHOT_CHARTS, full_page=False)
    staff_screenshot(page, "agreement-demo-charts")
    page.locator("#workers").scroll_into_view_if_needed()
    staff_screenshot(page, "agreement-demo-workers")
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
    staff_screenshot(page, "agreement-items-demo")


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


# --- every dashboard and results page, with small data ------------------------------------------------------------
def _user_worker(django_user_model, name):
    return services.worker_for_user(django_user_model.objects.create_user(name, password="pw-12345678"))


def _do_hits(project, worker, answer, limit=None):
    done = 0
    while limit is None or done < limit:
        a = services.reserve_next_assignment(project, worker)
        if a is None:
            break
        services.submit_assignment(a, worker, {str(i.pk): answer(i) for i in services.assignment_items(a)})
        done += 1


def _bws_project(django_user_model):
    for name, texts in {
        "space travel": [
            "Space travel inspires children.",
            "Space travel wastes public money.",
            "Space travel drives new technology.",
            "Space travel risks lives.",
        ],
        "zoo animals": [
            "Zoos protect endangered species.",
            "Zoos keep animals in small cages.",
            "Zoos educate children.",
            "Zoo animals show signs of stress.",
        ],
    }.items():
        topic = Topic.objects.create(name=name)
        for i, t in enumerate(texts):
            Sentence.objects.create(
                topic=topic, text=t, content_hash=sentence_hash(name, t), stance="pro" if i % 2 else "con"
            )
    project = bws.create_project(
        name="BWS pilot",
        slug="bws-pilot",
        config={"scorer": "jaccard", "seed": 0},
        status=Project.Status.ACTIVE,
        gold_rate=0,
    )
    for topic in ("space travel", "zoo animals"):
        bws.sample(project, topic, 5, seed=0)
    bws.build(project)
    for k in range(2):
        _do_hits(
            project,
            _user_worker(django_user_model, f"bws{k}"),
            lambda i: {
                "best": min(p["id"] for p in i.payload["pairs"]),
                "worst": max(p["id"] for p in i.payload["pairs"]),
            },
        )
    return project


def _valnov_project(tmp_path):
    rows = ["topic,Premise,Conclusion,Validity,Validity-Confidence,Novelty,Novelty-Confidence"]
    rows += [
        f"Zoos,Zoos keep animals number {k} in cages.,Zoos are cruel {k},1,majority,-1,confident" for k in range(4)
    ]
    path = tmp_path / "vn.csv"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    project = valnov.get_project("vn-pilot", create=True, items_per_hit=2, status="active")
    valnov.import_file(project, path)
    for k in range(4):  # three workers complete one HIT, a fourth starts the other one
        w = Worker.objects.create(external_id=f"vn{k}", source="prolific")
        _do_hits(project, w, lambda i, k=k: {"validity": "yes" if k != 1 else "no", "novelty": "no"}, limit=1)
    return project


def _rating_projects(tmp_path):
    pairs = [
        {
            "topic": "Energy",
            "stance": "pro",
            "a": {"system": "arg-ctrl", "text": f"Generated argument {k}."},
            "b": {"system": "reference", "text": f"Reference argument {k}."},
        }
        for k in range(5)
    ]
    debates = [
        {
            "id": f"d{k}",
            "system": "human" if k < 2 else "bart",
            "topic": "Ban zoos",
            "turns": [{"speaker": "Alice", "text": f"Opening {k}."}, {"speaker": "Bob", "text": f"Reply {k}."}],
        }
        for k in range(4)
    ]
    (tmp_path / "pairs.jsonl").write_text("".join(json.dumps(p) + "\n" for p in pairs), encoding="utf-8")
    (tmp_path / "debates.jsonl").write_text("".join(json.dumps(d) + "\n" for d in debates), encoding="utf-8")
    pp = rating_items.get_project("pp-pilot", PAIRWISE, create=True, status="active", assignments_per_item=2)
    rating_items.import_pairs(pp, tmp_path / "pairs.jsonl")
    ld = rating_items.get_project("ld-pilot", LIKERT, create=True, status="active", assignments_per_item=2)
    rating_items.import_debates(ld, tmp_path / "debates.jsonl")
    pair_number = {
        pk: n for n, pk in enumerate(Item.objects.filter(project=pp).order_by("pk").values_list("pk", flat=True))
    }
    for k in range(2):
        w = Worker.objects.create(external_id=f"r{k}", source="prolific")
        # fluency in system terms, whatever side the server placed each argument on (a coin seeded by the item id,
        # and ids depend on what ran before): worker 0 finds every argument fluent, worker 1 those of even pairs, so
        # each system's fluency kappa is defined (and marked: 5 pairs)
        while (a := services.reserve_next_assignment(pp, w)) is not None:
            answers = {}
            for i in services.assignment_items(a):
                fluent = k == 0 or pair_number[i.pk] % 2 == 0
                answers[str(i.pk)] = {
                    "choice": "equal" if i.position == 0 else "left",
                    "fluent_left": fluent,
                    "fluent_right": fluent,
                }
            services.submit_assignment(a, w, answers)
        _do_hits(
            ld,
            w,
            lambda i: {
                "style": 3 if i.payload["system"] == "human" else 2,
                "content": 3,
                "strategy": 2 + k,  # noqa: B023 - called within this loop pass
                "overall": 3,
            },
        )
    return pp, ld


def _no_overlap_project(django_user_model):
    """A worker with gold accuracy 0.50 who shares no item with anybody, beside two who share six."""
    project = services.create_project(
        name="Stance pilot (no overlap)",
        slug="no-overlap",
        task_type="sentence_label",
        assignments_per_item=2,
        items_per_hit=4,
        status=Project.Status.ACTIVE,
    )
    services.add_items(
        project,
        [{"sentence_id": None, "text": f"Sentence {k} about wind power.", "topic": "energy"} for k in range(12)],
    )
    services.build_hits(project)
    solo, b, c = (_user_worker(django_user_model, n) for n in ("solo", "bee", "cee"))
    _do_hits(project, b, lambda i: {"label": "pro"}, limit=2)  # b and c fill the first two HITs (R = 2) ...
    _do_hits(project, c, lambda i: {"label": "pro" if i.position % 3 else "none"}, limit=2)
    _do_hits(project, solo, lambda i: {"label": "pro" if i.position % 2 else "con"}, limit=1)  # ... solo the third
    for k, ok in enumerate((True, False)):
        gold = Item.objects.create(
            project=project, payload={"text": f"gold {k}", "topic": "energy"}, is_gold=True, position=100 + k
        )
        GoldItem.objects.create(item=gold, expected={"label": "pro"})
        GoldRecord.objects.create(
            worker=solo, item=gold, assignment=solo.assignments.first(), correct=ok, score=float(ok)
        )
    return project


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_every_dashboard_and_results_page_states_its_n_and_fits(
    live_server, page, tmp_path, django_user_model, request
):
    call_command("load_demo", stdout=io.StringIO())
    request.addfinalizer(join_every_project(django_user_model.objects.get(username="expert")))  # the team of each
    bws_project = _bws_project(django_user_model)
    vn = _valnov_project(tmp_path)
    pp, ld = _rating_projects(tmp_path)
    lone = _no_overlap_project(django_user_model)
    login(page, live_server, "expert", demo_expert_password(), "/dashboards/")
    expect(page).to_have_url(re.compile(r"/dashboards/$"))

    def visit(url, name):
        page.goto(f"{live_server.url}{url}")
        expect(page.locator("h1")).to_be_visible()
        staff_screenshot(page, name)

    visit("/dashboards/", "dashboards-index-before")
    assert page.locator("#dashboard-projects tbody tr").count() == Project.objects.count()

    # a lone worker: gold accuracy 0.50, no overlap -> competence n/a, never 1.000
    visit(f"/projects/{lone.slug}/agreement/", "agreement-no-overlap")
    page.locator("#card-histogram").evaluate("e => e.scrollIntoView()")
    staff_screenshot(page, "agreement-no-overlap-charts")
    page.locator("#workers").evaluate("e => e.scrollIntoView()")
    staff_screenshot(page, "agreement-no-overlap-workers")
    solo = Worker.objects.get(user__username="solo")
    row = page.locator(f'#workers tr[data-coder="worker:{solo.pk}"]')
    expect(row.locator('[data-key="competence"]')).to_have_text("n/a (no overlap)")
    expect(row.locator('[data-key="gold"]')).to_contain_text("0.500")
    expect(row.locator('[data-key="gold"] .too-few')).to_be_visible()
    expect(page.locator("#fig-too-few .too-few")).to_be_visible()
    for card in ("#card-histogram", "#card-workers", "#card-time", "#card-topics"):
        expect(page.locator(f"{card} .chart-n")).to_contain_text("n ")

    # ValNov: one HIT has its whole panel, the other a single response
    visit(f"/projects/{vn.slug}/agreement/", "agreement-valnov")
    expect(page.locator("#lowest")).not_to_contain_text("(, ")
    expect(page.locator("#lowest")).to_contain_text("n = 3 responses")
    visit(f"/projects/{vn.slug}/agreement/items/", "agreement-items-valnov")
    expect(page.locator("body")).to_contain_text("only 1 response")
    expect(page.locator("body")).to_contain_text("provisional: 1 of 3 votes")
    visit(f"/projects/{vn.slug}/valnov/", "valnov-results")
    expect(page.locator("#valnov-incomplete")).to_contain_text("2 with fewer")
    expect(page.locator("#valnov-agreement .too-few").first).to_be_visible()
    page.locator("#valnov-weights").evaluate("e => e.scrollIntoView()")
    staff_screenshot(page, "valnov-results-weights")

    # BWS: no per-item agreement; split-half over a few pairs is marked
    visit(f"/projects/{bws_project.slug}/agreement/", "agreement-bws")
    expect(page.locator("#lowest-none")).to_contain_text("no per-item agreement")
    visit(f"/projects/{bws_project.slug}/bws/", "bws-report")
    expect(page.locator("#bws-split-half .too-few").first).to_be_visible()
    page.locator("#bws-scores").evaluate("e => e.scrollIntoView()")
    staff_screenshot(page, "bws-report-scores")

    # ratings: comparisons and ratings are the n; losses are drawn in a visible colour
    visit(f"/projects/{pp.slug}/results/", "ratings-pairwise")
    expect(page.locator('#ratings-systems tr[data-system="arg-ctrl"] td').nth(1)).to_have_text("10")
    expect(page.locator("#ratings-systems td:first-child .too-few")).to_have_count(0)  # 10 comparisons: the minimum
    expect(page.locator("#ratings-systems .fluency-kappa .too-few")).to_have_count(2)  # kappa over 5 pairs
    expect(page.locator('#ratings-agreement tr[data-question="persuasiveness"] .too-few')).to_be_visible()  # 5 pairs
    loss = page.locator("svg#ratings-chart rect.loss").first
    assert loss.get_attribute("fill") == "#c2410c" and "weak" not in loss.get_attribute("class")
    page.locator("svg#ratings-chart").evaluate("e => e.scrollIntoView()")
    staff_screenshot(page, "ratings-pairwise-chart")
    visit(f"/projects/{ld.slug}/results/", "ratings-likert")
    expect(page.locator('#ratings-table tr[data-criterion="style"]')).to_contain_text("(n = 4)")
    page.locator("svg#ratings-chart").evaluate("e => e.scrollIntoView()")
    staff_screenshot(page, "ratings-likert-chart")

    visit("/spans/kb/review/", "kb-review")

    visit(f"/projects/{DEMO_SLUG}/agreement/items/", "agreement-items-demo-list")
    expect(page.locator(".item-n").first).to_contain_text("n = ")

    # the index, now that the pages above stored snapshots: small projects are marked, per row
    visit("/dashboards/", "dashboards-index")
    expect(page.locator(f'tr[data-project="{vn.slug}"] .too-few')).to_be_visible()
    expect(page.locator(f'tr[data-project="{lone.slug}"] .too-few')).to_be_visible()
    expect(page.locator(f'tr[data-project="{bws_project.slug}"] .too-few')).to_have_count(0)  # has no alpha at all
