"""Honest dashboards (issue 19, point 4): every figure states its n and is marked "too few ratings" below the
documented minimum (annotation.agreement.minimums); the observed bugs stay fixed -- "(, 1 responses)" in the
lowest-agreement lists, one ValNov vote out of R = 3 called "very confident" with weight 5.0 and replacing the
imported label, a Dawid-Skene competence of 1.000 for a worker nobody overlaps with, a 1-1 tie called a majority,
and an invisible "losses" colour."""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

import pytest
from django.urls import reverse

from annotation import services
from annotation.agreement import minimums, snapshots
from annotation.agreement import table as agreement_table
from annotation.agreement.quality import crowd_competence
from annotation.models import GoldItem, GoldRecord, Item, Worker
from annotation.task_types.bws_similarity.views import with_marks
from annotation.task_types.ratings import svg as ratings_svg
from annotation.task_types.validity_novelty import results as valnov
from annotation.task_types.validity_novelty.aggregation import (
    MIN_CONFIDENCE_VOTES,
    aggregate_dimension,
    aggregate_responses,
    expected_votes,
)

from .task_types.bws_similarity.helpers import make_project as make_bws_project
from .task_types.ratings.helpers import likert_project, run_worker
from .task_types.validity_novelty.helpers import ROWS, csv_text, write
from .test_project_agreement import build_project, coder

pytestmark = pytest.mark.django_db

Y, N, D = "yes", "no", "dont_know"


def page(client, name, *args, **query):
    url = reverse(name, args=args)
    if query:
        url += "?" + "&".join(f"{k}={v}" for k, v in query.items())
    r = client.get(url)
    assert r.status_code == 200, (url, r.status_code)
    return r.content.decode()


def section(html: str, start: str, end: str) -> str:
    part = html[html.index(start) :]
    return part[: part.index(end)]


# --- the minimums ---------------------------------------------------------------------------------
def test_minimums_mark_below_and_not_at_the_minimum():
    assert minimums.mark(9, 10, "units") == {
        "n": 9,
        "min": 10,
        "too_few": True,
        "why": "too few ratings: 9 units (minimum 10)",
    }
    assert minimums.mark(10, 10, "units")["too_few"] is False
    assert minimums.mark(None, 3, "responses") == {
        "n": 0,
        "min": 3,
        "too_few": True,
        "why": "too few ratings: 0 responses (minimum 3)",
    }


def test_readme_documents_every_minimum():
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    assert "too few ratings" in readme
    for name, (value, _unit) in minimums.MINIMUMS.items():
        assert re.search(rf"\b{value}\b", readme), name
    for const in (
        "MIN_UNITS",
        "MIN_ITEM_RESPONSES",
        "MIN_WORKER_UNITS",
        "MIN_SPLIT_HALF_PAIRS",
        "MIN_BWS_APPEARANCES",
        "MIN_COMPARISONS",
        "MIN_LIKERT_RATINGS",
        "MIN_ITEMS",
        "MIN_DECISIONS",
    ):
        assert getattr(minimums, const) in {v for v, _ in minimums.MINIMUMS.values()}


# --- agreement page: n and the mark -----------------------------------------------------------------
LABELS = ["pro", "con", "none"]


def test_small_project_is_marked_and_a_large_enough_one_is_not(client, staff_user):
    small = build_project(
        {"a": ["pro", "con", "con"], "b": ["pro", "con", "none"], "c": ["pro", "pro", "none"]}, slug="small"
    )
    client.force_login(staff_user)
    html = page(client, "annotation:agreement", small.slug)
    lead = section(html, 'id="overall"', "</p>")
    assert 'id="fig-n-units">3</strong> units' in lead and "too few ratings" in lead
    assert "too few ratings: 3 pairable units (minimum 10)" in lead
    row = section(html, 'data-scope="project"', "</tr>")
    assert "too few ratings" in row
    # every chart says its n
    for card, text in (
        ("card-histogram", "n = 3 items with 2 or more responses"),
        ("card-workers", "n = 3 of 3 workers"),
        ("card-time", "n = 3 pairable units"),
        ("card-topics", "n per topic"),
    ):
        assert text in section(html, f'id="{card}"', "</div>"), card
    assert "n = 3 items" in section(html, 'id="chart-histogram"', "</svg>")
    # the dashboards index marks it too
    index = page(client, "annotation:dashboards")
    assert "too few ratings" in section(index, f'data-project="{small.slug}"', "</tr>")

    answers = {
        name: [LABELS[(i + k) % 3] if i % 4 == k else LABELS[i % 3] for i in range(12)]
        for k, name in enumerate(("d", "e", "f"))
    }
    big = build_project(answers, slug="big")
    html = page(client, "annotation:agreement", big.slug)
    assert 'id="fig-n-units">12</strong>' in html
    assert "too few ratings" not in section(html, 'id="overall"', "</p>")
    assert "too few ratings" not in section(html, 'data-scope="project"', "</tr>")
    index = page(client, "annotation:dashboards")
    assert "too few ratings" not in section(index, f'data-project="{big.slug}"', "</tr>")


def test_item_agreement_is_marked_below_three_responses(client, staff_user):
    project = build_project({"a": ["pro", "con"], "b": ["pro", "con"], "c": ["pro", None]}, slug="items3")
    items = list(Item.objects.filter(project=project).order_by("position"))
    client.force_login(staff_user)
    html = page(client, "annotation:agreement-items", project.slug)
    three = section(html, f'id="item-{items[0].pk}"', "</form>")
    two = section(html, f'id="item-{items[1].pk}"', "</form>")
    assert "n = 3 responses" in three and "too few ratings" not in three
    assert "n = 2 responses" in two and "too few ratings: 2 responses (minimum 3)" in two


# --- "(, 1 responses)" ------------------------------------------------------------------------------
def valnov_project(tmp_path, **settings):
    p = valnov.get_project("vn", create=True, items_per_hit=2, status="active", **settings)
    valnov.import_file(p, write(tmp_path, csv_text(ROWS[1:5])))
    return p


def one_valnov_response(project, answer=(Y, Y)):
    w = Worker.objects.create(external_id="solo", source="prolific")
    a = services.reserve_next_assignment(project, w)
    its = services.assignment_items(a)
    services.submit_assignment(a, w, {str(i.pk): {"validity": answer[0], "novelty": answer[1]} for i in its})
    return its


def test_valnov_lowest_agreement_with_one_response_says_so(client, staff_user, tmp_path):
    project = valnov_project(tmp_path)
    its = one_valnov_response(project)
    client.force_login(staff_user)
    html = page(client, "annotation:agreement", project.slug)
    lowest = section(html, "<h2>Lowest agreement</h2>", "</div>")
    assert "(, " not in lowest and "responses)" not in lowest
    assert "No item has 2 or more responses yet" in lowest
    items_html = page(client, "annotation:agreement-items", project.slug)
    card = section(items_html, f'id="item-{its[0].pk}"', "</form>")
    assert "only 1 response" in card and "n = 1 response<" in card
    # the aggregate shown is provisional, never "very confident"
    assert "provisional: 1 of 3 votes" in card and "very confident" not in card


def test_bws_lowest_agreement_says_the_task_type_has_none(client, staff_user, django_user_model):
    project = make_bws_project(pairs=4, gold_rate=0)
    user = django_user_model.objects.create_user("bw", password="pw-12345678")
    worker = services.worker_for_user(user)
    a = services.reserve_next_assignment(project, worker)
    services.submit_assignment(
        a,
        worker,
        {
            str(i.pk): {"best": i.payload["pairs"][0]["id"], "worst": i.payload["pairs"][1]["id"]}
            for i in services.assignment_items(a)
        },
    )
    client.force_login(staff_user)
    html = page(client, "annotation:agreement", project.slug)
    lowest = section(html, "<h2>Lowest agreement</h2>", "</div>")
    assert "(, " not in lowest and "This task type has no per-item agreement" in lowest
    assert reverse("annotation:bws", args=[project.slug]) in lowest
    # no "too few ratings" for coefficients that this task type does not have at all
    assert "too few ratings" not in section(html, 'data-scope="project"', "</tr>")
    items_html = page(client, "annotation:agreement-items", project.slug)
    assert "no per-item agreement for this task type" in items_html


# --- ValNov confidence and weights (ValNov §4.1: three annotators) -----------------------------------
@pytest.mark.parametrize(
    "votes, label, word",
    [
        ([Y], 0, "defeasible"),  # the other two could both say no
        ([Y, Y], 1, "majority"),  # decided, but the third could still say no
        ([Y, D], 0, "defeasible"),
        ([D, D], 0, "defeasible"),  # don't know wins whatever the third says
        ([Y, Y, Y], 1, "very confident"),  # the whole panel
        ([Y, Y, D], 1, "confident"),
    ],
)
def test_incomplete_panels_get_only_the_guaranteed_label_and_word(votes, label, word):
    res = aggregate_dimension("validity", votes, expected=3)
    assert (res.label, res.confidence, res.complete) == (label, word, len(votes) == 3)


def test_one_of_three_votes_is_not_very_confident_and_weighs_the_minimum():
    one = aggregate_responses([{"validity": Y, "novelty": Y}], expected=3)
    assert one["complete"] is False and one["weight"] == 1.0
    assert {one["validity"]["confidence"], one["novelty"]["confidence"]} == {"defeasible"}
    two = aggregate_responses([{"validity": Y, "novelty": N}] * 2, expected=3)
    assert two["weight"] == 1.5 and two["validity"]["confidence"] == "majority"  # never 5.0 before the panel
    full = aggregate_responses([{"validity": Y, "novelty": N}] * 3, expected=3)
    assert full["complete"] is True and full["weight"] == 5.0


def test_panel_is_r_and_never_below_the_papers_three(tmp_path):
    assert MIN_CONFIDENCE_VOTES == 3
    p1 = valnov.get_project("vn1", create=True, assignments_per_item=1)
    p5 = valnov.get_project("vn5", create=True, assignments_per_item=5)
    assert (expected_votes(p1), expected_votes(p5)) == (3, 5)
    # R = 1: a single unanimous vote is the whole project's panel, but still below the documented minimum
    item = Item(project=p1, payload={})
    agg = p1.get_task_type().aggregate(p1, item, [{"validity": Y, "novelty": Y}])
    assert agg["weight"] == 1.0 and agg["validity"]["confidence"] != "very confident"


def test_one_response_does_not_replace_the_imported_label_in_the_export(tmp_path, client, staff_user):
    project = valnov_project(tmp_path)
    its = one_valnov_response(project, answer=(Y, Y))  # the first two rows were imported as -1 / -1 and 1 / -1
    _columns, records, summary = valnov.export_records(project, labels="auto", with_weights=True)
    by_conclusion = {r["Conclusion"]: r for r in records}
    for item in its:
        ref = item.payload["reference"]
        row = by_conclusion[item.payload["conclusion"]]
        assert (row["Validity"], row["Validity-Confidence"]) == (ref["validity"], ref["validity_confidence"])
        assert row["Novelty-Confidence"] == ref["novelty_confidence"]
        assert row["Instance-Weight"] != 5.0 or (ref["validity_confidence"], ref["novelty_confidence"]) == (
            "very confident",
            "very confident",
        )
    assert summary["kept_reference"] == 2 and summary["crowd"] == 0
    # "crowd" labels: the guaranteed ones, counted as incomplete
    _, crowd, crowd_summary = valnov.export_records(project, labels="crowd", with_weights=True)
    first = next(r for r in crowd if r["Conclusion"] == its[0].payload["conclusion"])
    assert (first["Validity"], first["Validity-Confidence"], first["Instance-Weight"]) == (0, "defeasible", 1.0)
    assert crowd_summary["incomplete"] == len(crowd)
    # the results page counts the item apart and the crowd distribution is marked as resting on too few items
    res = valnov.project_results(project)
    assert res["n_incomplete"] == 2 and res["n_annotated"] == 0 and res["crowd_mark"]["too_few"]
    client.force_login(staff_user)
    html = page(client, "annotation:valnov", project.slug)
    assert "2 with fewer (provisional, not counted below)" in html
    assert "too few ratings" in section(html, 'id="valnov-agreement"', "</table>")
    # the complete panel replaces the imported labels as before
    for k in range(2):
        w = Worker.objects.create(external_id=f"w{k}", source="prolific")
        a = services.reserve_next_assignment(project, w)
        services.submit_assignment(
            a, w, {str(i.pk): {"validity": Y, "novelty": Y} for i in services.assignment_items(a)}
        )
    _, records, summary = valnov.export_records(project, labels="auto", with_weights=True)
    row = next(r for r in records if r["Conclusion"] == its[0].payload["conclusion"])
    assert (row["Validity"], row["Validity-Confidence"], row["Instance-Weight"]) == (1, "very confident", 5.0)
    assert summary["crowd"] == 2 and summary["kept_reference"] == 0


# --- Dawid-Skene without overlap ----------------------------------------------------------------------
def no_overlap_project():
    """Worker "solo" answers items 0-3 alone; "b" and "c" answer items 4-9 together. Solo has gold accuracy 0.5."""
    solo = ["pro", "con", "pro", "con"] + [None] * 6
    b = [None] * 4 + ["pro", "con", "pro", "none", "con", "pro"]
    c = [None] * 4 + ["pro", "con", "con", "none", "con", "pro"]
    project = build_project({"solo": solo, "b": b, "c": c}, slug="ds")
    worker = Worker.objects.get(user__username="solo")
    for k, ok in enumerate((True, False)):
        gold = Item.objects.create(
            project=project, payload={"text": f"gold {k}", "topic": "t"}, is_gold=True, position=100 + k
        )
        GoldItem.objects.create(item=gold, expected={"label": "pro"})
        GoldRecord.objects.create(
            worker=worker, item=gold, assignment=worker.assignments.first(), correct=ok, score=float(ok)
        )
    return project


def test_crowd_kit_rates_a_worker_without_overlap_as_perfect():
    """Why the table must not report it: crowd-kit's DS makes a lone worker their own majority."""
    recs = [("solo", u, ["pro", "con"][u % 2]) for u in range(4)]
    recs += [(w, u, "pro" if (w == "b" or u % 3) else "con") for u in range(4, 10) for w in ("b", "c")]
    assert crowd_competence(recs)["competence"]["solo"] == pytest.approx(1.0, abs=1e-6)


def test_competence_without_overlap_is_na_not_1(client, staff_user):
    project = no_overlap_project()
    t = agreement_table.project_table(project)
    solo = next(w for w in t["workers"] if w["coder"] == coder("solo"))
    assert solo["gold_accuracy"] == 0.5 and solo["overlap_n"] == 0
    assert solo["competence"] is None and solo["competence_reason"] == "no overlap with other workers"
    b = next(w for w in t["workers"] if w["coder"] == coder("b"))
    assert b["overlap_n"] == 6 and b["competence"] is not None

    client.force_login(staff_user)
    html = page(client, "annotation:agreement", project.slug)
    row = section(html, f'data-coder="{coder("solo")}"', "</tr>")
    comp = section(row, 'data-key="competence"', "</td>")
    assert "n/a (no overlap)" in comp and "1.000" not in comp
    assert 'data-key="overlap_n">0<' in row
    brow = section(html, f'data-coder="{coder("b")}"', "</tr>")
    assert 'data-key="overlap_n">6<' in brow and "n/a" not in brow
    # b's LOO agreement rests on 6 shared units (>= 5): not marked; solo's gold accuracy rests on 2 gold items
    assert "too few ratings" not in section(brow, 'data-key="loo"', "</td>")
    assert "too few ratings: 2 gold items (minimum 5)" in section(row, 'data-key="gold"', "</td>")

    rows = list(csv.DictReader(io.StringIO(page(client, "annotation:agreement-csv", project.slug, "workers"))))
    solo_csv = next(r for r in rows if r["coder"] == coder("solo"))
    assert solo_csv["competence"] == "" and solo_csv["overlap_n"] == "0"
    assert solo_csv["competence_reason"] == "no overlap with other workers"


def test_old_snapshots_without_overlap_are_shown_honestly_too(client, staff_user):
    """A snapshot stored before ``overlap_n`` existed (competence 1.0, loo_n 0) is shown as n/a as well."""
    project = no_overlap_project()
    snapshots.store_snapshots(project)
    snap = snapshots.latest_snapshot(project)
    figures = dict(snap.figures)
    for w in figures["workers"]:
        w.pop("overlap_n", None)
        w.pop("competence_reason", None)
        if w["coder"] == coder("solo"):
            w["competence"] = 1.0
    type(snap).objects.filter(pk=snap.pk).update(figures=figures)
    client.force_login(staff_user)
    html = page(client, "annotation:agreement", project.slug)
    comp = section(section(html, f'data-coder="{coder("solo")}"', "</tr>"), 'data-key="competence"', "</td>")
    assert "n/a (no overlap)" in comp and "1.000" not in comp


# --- a tie is a tie --------------------------------------------------------------------------------
def test_a_one_one_tie_is_not_a_majority(client, staff_user):
    project = build_project({"a": ["pro", "pro"], "b": ["con", "pro"]}, slug="tie")
    items = list(Item.objects.filter(project=project).order_by("position"))
    tt = project.get_task_type()
    agg = tt.aggregate(project, items[0], [{"label": "pro"}, {"label": "con"}])
    assert agg["tied"] == ["pro", "con"] and tt.aggregate_text(agg) == "tie: pro / con (1 each of 2)"
    assert tt.aggregate_text(tt.aggregate(project, items[1], [{"label": "pro"}] * 2)) == "majority: pro (2 of 2)"
    client.force_login(staff_user)
    html = page(client, "annotation:agreement-items", project.slug)
    tie = section(html, f'id="item-{items[0].pk}"', "</form>")
    assert "tie: pro / con" in tie and "majority: pro" not in tie
    assert "majority: pro (2 of 2)" in section(html, f'id="item-{items[1].pk}"', "</form>")
    rows = list(csv.DictReader(io.StringIO(page(client, "annotation:agreement-csv", project.slug, "items"))))
    assert {r["item_id"]: r["majority"] for r in rows}[str(items[0].pk)] == "tie: pro / con (1 each of 2)"


# --- the pairwise chart's colours -------------------------------------------------------------------
def _luminance(hex_colour: str) -> float:
    r, g, b = (int(hex_colour.lstrip("#")[k : k + 2], 16) / 255 for k in (0, 2, 4))
    lin = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in (r, g, b)]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def contrast(a: str, b: str) -> float:
    hi, lo = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def test_win_tie_loss_colours_are_visible_on_the_card():
    for colour in (ratings_svg.WIN, ratings_svg.TIE, ratings_svg.LOSS):
        assert contrast(colour, "#ffffff") >= 3.0, colour  # WCAG 1.4.11: graphical objects
    assert contrast(ratings_svg.TIE, ratings_svg.LOSS) > 1.0 and ratings_svg.WIN != ratings_svg.LOSS
    chart = ratings_svg.shares(
        "c",
        [
            {"label": "gen", "win": 0.25, "tie": 0.25, "loss": 0.5, "n": 12},
            {"label": "few", "win": 0.5, "tie": 0, "loss": 0.5, "n": 2, "weak": True},
        ],
        title="t",
    )
    assert 'class="mark loss" x=' in chart and f'fill="{ratings_svg.LOSS}"' in chart
    assert "gen (n = 12)" in chart and "few (n = 2)" in chart
    assert 'class="mark loss weak"' in chart and "too few ratings" in chart


# --- the results pages ------------------------------------------------------------------------------
def test_likert_results_mark_cells_below_five_ratings(tmp_path, client, staff_user):
    project = likert_project(tmp_path, assignments_per_item=2, items_per_hit=2)
    for name in ("w1", "w2"):
        w = Worker.objects.create(source="prolific", external_id=name)
        run_worker(
            project,
            w,
            lambda item, a: {
                "style": 4 if item.payload["system"] == "human" else 2,
                "content": 3,
                "strategy": 2,
                "overall": 2,
            },
        )
    client.force_login(staff_user)
    html = page(client, "annotation:ratings-results", project.slug)
    row = section(html, 'data-criterion="style"', "</tr>")
    assert "(n = 4)" in row and "too few ratings: 4 ratings (minimum 5)" in row
    assert "(n = 4 debates)" in row and "too few ratings: 4 debates rated by 2+ reviewers (minimum 10)" in row
    assert 'class="mark weak"' in section(html, '<svg id="ratings-chart"', "</svg>")


def test_bws_report_marks_small_split_half_and_scores(client, staff_user, django_user_model):
    project = make_bws_project(pairs=4, gold_rate=0)
    for k in range(2):
        user = django_user_model.objects.create_user(f"b{k}", password="pw-12345678")
        worker = services.worker_for_user(user)
        while (a := services.reserve_next_assignment(project, worker)) is not None:
            services.submit_assignment(
                a,
                worker,
                {
                    str(i.pk): {
                        "best": min(p["id"] for p in i.payload["pairs"]),
                        "worst": max(p["id"] for p in i.payload["pairs"]),
                    }
                    for i in services.assignment_items(a)
                },
            )
    client.force_login(staff_user)
    html = page(client, "annotation:bws", project.slug)
    split = section(html, 'id="bws-split-half"', "</table>")
    assert split.count('class="too-few"') == 3  # two topics + the whole dataset, 4 pairs each / 8 pairs < 10
    scores = section(html, 'id="bws-scores"', "</table>")
    shown = [int(n) for n in re.findall(r"<td>(\d+)</td></tr>", scores)]
    assert shown and min(shown) >= minimums.MIN_BWS_APPEARANCES  # 8 tuples x 2 workers per pair
    assert "too few ratings" not in scores and "Shown = the n of a score" in html
    # a score shown by fewer judgements than the minimum is marked
    marked = with_marks({"rows": [{"pair_id": "p", "appearances": 3}, {"pair_id": "q", "appearances": 4}]})
    assert [r["mark"]["too_few"] for r in marked["rows"]] == [True, False]
