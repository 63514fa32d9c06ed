"""Per-project agreement (annotation.agreement: records, table, snapshots, scheduling), the recompute task, the dashboards and adjudication."""

from __future__ import annotations

import csv
import io
import json
from datetime import timedelta
from unittest import mock

import pytest
from django.core.cache import cache
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone

from annotation import services
from annotation.agreement import krippendorff_alpha, records, scheduling, snapshots
from annotation.agreement import table as agreement_table
from annotation.models import Adjudication, AgreementSnapshot, GoldItem, GoldRecord, Item, Project, Response, Worker
from annotation.selectors import EXPERT_GROUP

pytestmark = pytest.mark.django_db

LABELS = ["pro", "con", "none"]


def build_project(
    answers: dict[str, list[str]],
    *,
    topics: list[str] | None = None,
    slug: str = "stance",
    experts: tuple[str, ...] = (),
    now=None,
) -> Project:
    """A sentence_label project whose items are answered as ``answers`` says: {username: [label per item]}.

    All items are in one HIT; each user submits one assignment, in the order of ``answers`` (a minute apart)."""
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group

    n_items = len(next(iter(answers.values())))
    topics = topics or ["nuclear energy"] * n_items
    project = services.create_project(
        name=slug,
        slug=slug,
        task_type="sentence_label",
        config={"labels": LABELS},
        assignments_per_item=len(answers),
        items_per_hit=n_items,
        status=Project.Status.ACTIVE,
    )
    services.add_items(
        project, [{"sentence_id": None, "text": f"Sentence number {i}.", "topic": topics[i]} for i in range(n_items)]
    )
    services.build_hits(project)
    items = list(Item.objects.filter(project=project).order_by("position"))
    now = now or timezone.now()
    User = get_user_model()
    for k, (name, labels) in enumerate(answers.items()):
        user = User.objects.filter(username=name).first() or User.objects.create_user(name, password="pw-12345678")
        if name in experts:
            user.groups.add(Group.objects.get_or_create(name=EXPERT_GROUP)[0])
        worker = services.worker_for_user(user)
        t = now + timedelta(minutes=k)
        assignment = services.reserve_next_assignment(project, worker, now=t)
        responses = {str(item.pk): {"label": lab or "none"} for item, lab in zip(items, labels)}
        services.submit_assignment(assignment, worker, responses, now=t + timedelta(seconds=30))
        # None = a missing value (the HIT page requires every answer, so drop the stored one)
        Response.objects.filter(
            assignment=assignment, item__in=[item for item, lab in zip(items, labels) if lab is None]
        ).delete()
    return project


def coder(username: str) -> str:
    return records.coder_name(Worker.objects.get(user__username=username).pk)


# --- project_table on hand-made data --------------------------------------------------------------
def test_two_coders_known_kappa_and_percent_agreement():
    # a: pro pro con con ; b: pro con con con -> agree on 3 of 4; p_o = .75,
    # p_e = P(pro) P(pro) + P(con) P(con) = (2/4)(1/4) + (2/4)(3/4) = .5 -> kappa = (.75 - .5) / .5 = .5
    project = build_project({"a": ["pro", "pro", "con", "con"], "b": ["pro", "con", "con", "con"]})
    t = agreement_table.project_table(project.slug)
    assert t["n_units"] == 4 and t["n_coders"] == 2 and t["n_responses"] == 8 and t["based_on"] == 2
    assert t["percent_agreement"] == pytest.approx(0.75)
    assert t["kappa"] == pytest.approx(0.5)
    # nominal alpha, worked by hand: values pro 3, con 5 (n = 8); D_o = 2 disagreeing ordered pairs in one unit
    # (m = 2) -> 2; D_e: n^2 - sum n_c^2 = 64 - 9 - 25 = 30; alpha = 1 - (n - 1) * 2 / 30 = 1 - 14/30
    assert t["alpha"] == pytest.approx(1 - 14 / 30)
    assert t["level"] == "nominal"
    assert t["alpha_ci"]["low"] <= t["alpha"] <= t["alpha_ci"]["high"]
    # per item: one disagreement (item 2) -> 0, the others 1
    assert [it["agreement"] for it in t["items"]] == [1.0, 0.0, 1.0, 1.0]
    assert t["item_agreement_histogram"]["counts"][0] == 1 and t["item_agreement_histogram"]["counts"][9] == 3
    assert t["crowd_vs_expert"] is None
    json.dumps(t, allow_nan=False)  # what the CLI prints


def test_three_coders_alpha_equals_library_alpha_on_the_same_matrix():
    answers = {
        "a": ["pro", "con", "none", "pro", "con", "pro"],
        "b": ["pro", "con", "con", "pro", "none", "pro"],
        "c": ["con", "con", "none", "pro", "con", None],
    }
    project = build_project(answers)
    t = agreement_table.project_table(project.slug)
    matrix = [answers[u] for u in ("a", "b", "c")]
    assert t["alpha"] == pytest.approx(krippendorff_alpha(matrix, "nominal"))
    assert t["n_coders"] == 3 and t["n_units"] == 6
    # Fleiss' kappa over the 5 units with 3 ratings (the most common count)
    assert t["fleiss_n_units"] == 5 and t["fleiss_kappa"] is not None
    # leave-one-out: c disagrees with the others' majority on item 1 (a, b say pro)
    workers = {w["coder"]: w for w in t["workers"]}
    assert set(workers) == {coder("a"), coder("b"), coder("c")}
    assert workers[coder("a")]["loo_agreement"] > workers[coder("c")]["loo_agreement"]
    assert all(w["competence"] is not None for w in workers.values())
    # cumulative over time: the last point is the whole project
    assert t["over_time"][-1]["assignments"] == 3
    assert t["over_time"][-1]["alpha"] == pytest.approx(t["alpha"])
    assert t["over_time"][0]["alpha"] is None  # one coder: nothing pairable yet
    assert t["over_time"][0]["reason"] == "no unit has values from 2 or more coders yet"
    assert "reason" not in t["over_time"][-1]


def test_topics_and_crowd_vs_expert():
    answers = {
        "crowd1": ["pro", "con", "pro", "con"],
        "crowd2": ["pro", "con", "con", "con"],
        "boss": ["pro", "con", "pro", "pro"],
    }
    project = build_project(answers, topics=["nuclear", "nuclear", "guns", "guns"], experts=("boss",))
    t = agreement_table.project_table(project.slug)
    topics = {row["topic"]: row for row in t["topics"]}
    assert set(topics) == {"nuclear", "guns"}
    assert topics["nuclear"]["percent_agreement"] == pytest.approx(1.0)
    assert topics["guns"]["n_units"] == 2
    cve = t["crowd_vs_expert"]
    assert cve["n_crowd"] == 2 and cve["n_experts"] == 1 and cve["expert_source"] == "staff"
    # crowd majority (ties -> alphabetical): pro con con con ; expert: pro con pro pro -> agree on 2 of 4
    assert cve["between"]["percent_agreement"] == pytest.approx(0.5)
    assert cve["crowd"]["percent_agreement"] == pytest.approx(0.75)
    assert {w["coder"]: w["is_expert"] for w in t["workers"]}[coder("boss")] is True


def test_gold_accuracy_in_worker_quality():
    project = build_project({"a": ["pro", "con"], "b": ["pro", "pro"]})
    gold_item = Item.objects.create(project=project, payload={"text": "gold", "topic": "t"}, is_gold=True, position=99)
    GoldItem.objects.create(item=gold_item, expected={"label": "pro"})
    a = Worker.objects.get(user__username="a")
    GoldRecord.objects.create(worker=a, item=gold_item, assignment=a.assignments.first(), correct=True, score=1.0)
    t = agreement_table.project_table(project.slug)
    w = {row["coder"]: row for row in t["workers"]}
    assert w[coder("a")]["gold_accuracy"] == 1.0 and w[coder("a")]["gold_n"] == 1
    assert w[coder("b")]["gold_accuracy"] is None


def test_undefined_coefficients_are_none_with_a_reason():
    project = build_project({"a": ["pro", "pro"], "b": ["pro", "pro"]})
    t = agreement_table.project_table(project.slug)
    assert t["alpha"] is None and "alpha" in t["reasons"]
    assert t["percent_agreement"] == 1.0
    json.dumps(t, allow_nan=False)


def test_unknown_project_is_a_lookup_error_and_cli_exit_2():
    with pytest.raises(LookupError):
        agreement_table.project_table("nope")
    from django.core.management.base import CommandError

    with pytest.raises(CommandError) as exc:
        call_command("agreement", "project", "nope", "--json")
    assert exc.value.returncode == 2


def test_cli_json_equals_project_table():
    project = build_project({"a": ["pro", "con", "con"], "b": ["pro", "con", "pro"], "c": ["pro", "none", "con"]})
    out = io.StringIO()
    call_command("agreement", "project", project.slug, "--json", stdout=out)
    printed = json.loads(out.getvalue())
    table = json.loads(json.dumps(agreement_table.project_table(project.slug), default=str))
    for key in ("alpha", "percent_agreement", "kappa", "n_units", "n_coders", "fleiss_kappa"):
        assert printed[key] == table[key]


def test_reliability_hook_default_raises():
    from annotation.task_types.base import TaskType

    with pytest.raises(NotImplementedError):
        TaskType().reliability_data(None, [])


# --- recompute task --------------------------------------------------------------------------------
def test_recompute_task_stores_snapshots_and_is_idempotent():
    from annotation.tasks import recompute_agreement

    project = build_project({"a": ["pro", "con", "pro"], "b": ["pro", "con", "con"]}, topics=["x", "x", "y"])
    result = recompute_agreement(project.pk)
    assert result["stored"] == 3  # project, topic:x, topic:y
    snap = snapshots.latest_snapshot(project)
    assert snap.based_on == 2 and snap.n_units == 3 and snap.n_coders == 2 and snap.computed_at is not None
    assert snap.figures["alpha"] == pytest.approx(agreement_table.project_table(project)["alpha"])
    assert AgreementSnapshot.objects.filter(project=project, scope="topic:y").count() == 1
    # nothing new submitted: a retry stores nothing
    assert recompute_agreement(project.pk)["stored"] == 0
    assert AgreementSnapshot.objects.filter(project=project, scope="project").count() == 1
    assert recompute_agreement(project.pk, force=True)["stored"] == 3
    assert recompute_agreement(123456)["stored"] == 0


def test_submission_signal_schedules_a_debounced_recompute(django_capture_on_commit_callbacks):
    from annotation.models import Assignment
    from annotation.signals import assignment_submitted

    project = build_project({"a": ["pro", "con"], "b": ["pro", "pro"]})
    cache.delete(scheduling.DEBOUNCE_KEY.format(project.pk))
    assignment = Assignment.objects.filter(project=project).first()
    with mock.patch("annotation.tasks.recompute_agreement.apply_async") as apply_async:
        with django_capture_on_commit_callbacks(execute=True):
            for _ in range(5):
                assignment_submitted.send(sender=Assignment, assignment=assignment)
        assert apply_async.call_count == 1
        assert apply_async.call_args.kwargs["args"] == [project.pk]
        assert apply_async.call_args.kwargs["countdown"] == scheduling.DEBOUNCE_SECONDS
        # the window is over (lock gone): the next submission schedules again
        cache.delete(scheduling.DEBOUNCE_KEY.format(project.pk))
        with django_capture_on_commit_callbacks(execute=True):
            assignment_submitted.send(sender=Assignment, assignment=assignment)
        assert apply_async.call_count == 2
    cache.delete(scheduling.DEBOUNCE_KEY.format(project.pk))


# --- pages ---------------------------------------------------------------------------------------
@pytest.fixture
def project3():
    return build_project(
        {"a": ["pro", "con", "none", "pro"], "b": ["pro", "con", "con", "pro"], "c": ["pro", "none", "con", "con"]},
        topics=["nuclear", "nuclear", "guns", "guns"],
    )


def test_pages_are_staff_only(client, django_user_model, project3):
    urls = [
        reverse("annotation:dashboards"),
        reverse("annotation:agreement", args=[project3.slug]),
        reverse("annotation:agreement-items", args=[project3.slug]),
        reverse("annotation:agreement-csv", args=[project3.slug, "summary"]),
    ]
    for url in urls:
        assert client.get(url).status_code == 302  # anonymous -> login
    client.force_login(django_user_model.objects.get(username="a"))  # a crowdworker
    for url in urls:
        assert client.get(url).status_code == 403
    assert client.post(reverse("annotation:agreement-recompute", args=[project3.slug])).status_code == 403
    item = Item.objects.filter(project=project3).first()
    assert (
        client.post(reverse("annotation:adjudicate", args=[project3.slug, item.pk]), {"label": "pro"}).status_code
        == 403
    )
    assert not Adjudication.objects.exists()


def test_agreement_page_shows_figures_and_charts(client, staff_user, project3):
    client.force_login(staff_user)
    r = client.get(reverse("annotation:agreement", args=[project3.slug]))
    assert r.status_code == 200
    html = r.content.decode()
    t = agreement_table.project_table(project3.slug)
    assert f"{t['alpha']:.3f}" in html and f"{t['percent_agreement']:.3f}" in html
    for chart in ("chart-histogram", "chart-workers", "chart-time", "chart-topics"):
        assert f'id="{chart}"' in html
    assert html.count("<svg") >= 4
    assert AgreementSnapshot.objects.filter(project=project3).exists()  # the first view stored one
    r = client.get(reverse("annotation:dashboards"))
    assert r.status_code == 200 and project3.name in r.content.decode()


def test_recompute_now_enqueues_on_commit(client, staff_user, project3, django_capture_on_commit_callbacks):
    client.force_login(staff_user)
    with mock.patch("annotation.tasks.recompute_agreement.apply_async") as apply_async:
        with django_capture_on_commit_callbacks(execute=True) as callbacks:
            r = client.post(reverse("annotation:agreement-recompute", args=[project3.slug]))
        assert r.status_code == 302
        assert len(callbacks) == 1
        apply_async.assert_called_once()
        assert apply_async.call_args.kwargs["kwargs"] == {"force": True}
    assert client.get(reverse("annotation:agreement-recompute", args=[project3.slug])).status_code == 405


def test_recompute_needs_csrf(staff_user, project3):
    from django.test import Client

    c = Client(enforce_csrf_checks=True)
    c.force_login(staff_user)
    assert c.post(reverse("annotation:agreement-recompute", args=[project3.slug])).status_code == 403


def test_items_drilldown_lowest_first_and_adjudication(client, staff_user, project3):
    client.force_login(staff_user)
    r = client.get(reverse("annotation:agreement-items", args=[project3.slug]))
    assert r.status_code == 200
    html = r.content.decode()
    items = list(Item.objects.filter(project=project3).order_by("position"))
    # item 3 (none/con/con) and item 2 (con/con/none) have agreement 1/3; item 1 all pro -> listed last
    assert html.index(f'id="item-{items[1].pk}"') < html.index(f'id="item-{items[0].pk}"')
    before = timezone.now()
    r = client.post(
        reverse("annotation:adjudicate", args=[project3.slug, items[2].pk]), {"label": "con", "note": "clearly against"}
    )
    assert r.status_code == 302
    adj = Adjudication.objects.get(item=items[2])
    assert adj.answer == {"label": "con"} and adj.expert == staff_user and adj.created_at >= before
    assert adj.note == "clearly against"
    html = client.get(reverse("annotation:agreement-items", args=[project3.slug])).content.decode()
    assert "adjudicated: con" in html and staff_user.username in html
    # a label outside the project's labels is refused with the field and reason
    r = client.post(reverse("annotation:adjudicate", args=[project3.slug, items[2].pk]), {"label": "maybe"})
    assert r.status_code == 400 and "label" in r.content.decode()
    assert Adjudication.objects.filter(item=items[2]).count() == 1
    # an item of another project is 404
    other = build_project({"x": ["pro"], "y": ["con"]}, slug="other")
    oi = Item.objects.filter(project=other).first()
    assert (
        client.post(reverse("annotation:adjudicate", args=[project3.slug, oi.pk]), {"label": "pro"}).status_code == 404
    )


def _csv(client, url):
    r = client.get(url)
    assert r.status_code == 200 and r["Content-Type"].startswith("text/csv")
    return list(csv.DictReader(io.StringIO(r.content.decode())))


def test_csv_downloads_parse_and_match_the_figures(client, staff_user, project3):
    client.force_login(staff_user)
    t = agreement_table.project_table(project3.slug)
    summary = _csv(client, reverse("annotation:agreement-csv", args=[project3.slug, "summary"]))
    assert summary == _csv(client, reverse("annotation:agreement", args=[project3.slug]) + "?format=csv")
    overall = summary[0]
    assert overall["scope"] == "project"
    assert float(overall["alpha"]) == pytest.approx(t["alpha"], abs=1e-9)
    assert float(overall["percent_agreement"]) == pytest.approx(t["percent_agreement"], abs=1e-9)
    assert float(overall["kappa"]) == pytest.approx(t["kappa"], abs=1e-9)
    assert int(overall["n_units"]) == t["n_units"] and int(overall["n_coders"]) == t["n_coders"]
    assert {row["scope"] for row in summary} == {"project", "topic:nuclear", "topic:guns"}
    workers = _csv(client, reverse("annotation:agreement-csv", args=[project3.slug, "workers"]))
    assert {w["coder"] for w in workers} == {w["coder"] for w in t["workers"]}
    items = _csv(client, reverse("annotation:agreement-csv", args=[project3.slug, "items"]))
    assert len(items) == 4
    assert items == _csv(client, reverse("annotation:agreement-items", args=[project3.slug]) + "?format=csv")
    by_id = {int(row["item_id"]): row for row in items}
    for it in t["items"]:
        assert float(by_id[it["item_id"]]["agreement"]) == pytest.approx(it["agreement"])
    over_time = _csv(client, reverse("annotation:agreement-csv", args=[project3.slug, "over_time"]))
    assert int(over_time[-1]["assignments"]) == 3
    topics = _csv(client, reverse("annotation:agreement-csv", args=[project3.slug, "topics"]))
    assert {row["topic"] for row in topics} == {"nuclear", "guns"}
    assert client.get(reverse("annotation:agreement-csv", args=[project3.slug, "nope"])).status_code == 404


def test_unitized_figures_equal_alpha_u_of_the_same_spans():
    """Span tasks: alpha is alpha_u (one group of items answered by the same coders = plain alpha_u)."""
    from annotation.agreement import spans_on_continuum, unitized_alpha

    spans = [
        ("worker:1", 10, 0, 4, "aspect"),
        ("worker:2", 10, 0, 4, "aspect"),
        ("worker:1", 11, 5, 3, "aspect"),
        ("worker:2", 11, 6, 3, "aspect"),
        ("worker:3", 10, 1, 3, "aspect"),
    ]
    items = [(10, 20), (11, 15)]
    coders = ["worker:1", "worker:2", "worker:3"]
    rel = {
        "level": "nominal",
        "coders": coders,
        "units": ["u1", "u2"],
        "unit_item": [10, 11],
        "matrix": [["1", "1"], ["1", "0"], ["1", None]],
        "unitized": {"items": items, "spans": spans, "coders": coders, "item_coders": {10: coders, 11: coders}},
    }
    flat, total = spans_on_continuum(spans, items)
    f = agreement_table.figures(rel, bootstrap=0)
    assert f["level"] == "unitized"
    assert f["alpha"] == pytest.approx(unitized_alpha(flat, total, coders=coders).alpha_u)
    # items answered by different coder sets are separate groups: a coder who never saw an item is not a gap there
    rel["unitized"]["item_coders"] = {10: coders, 11: ["worker:1", "worker:2"]}
    f2 = agreement_table.figures(rel, bootstrap=0)
    assert f2["alpha_u_groups"] == 2
    a10 = unitized_alpha(*spans_on_continuum([s for s in spans if s[1] == 10], [items[0]]), coders=coders).alpha_u
    a11 = unitized_alpha(
        *spans_on_continuum([s for s in spans if s[1] == 11], [items[1]]), coders=["worker:1", "worker:2"]
    ).alpha_u
    assert f2["alpha"] == pytest.approx((a10 * 20 + a11 * 15) / 35)


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_recompute_runs_on_a_real_worker(celery_worker_proc):
    from annotation.tasks import recompute_agreement

    project = build_project({"a": ["pro", "con", "pro"], "b": ["pro", "con", "con"]}, slug="on-worker")
    AgreementSnapshot.objects.filter(project=project).delete()  # whatever the submissions scheduled
    result = recompute_agreement.apply_async(args=[project.pk], kwargs={"force": True})
    assert result.get(timeout=120)["stored"] == 2
    assert snapshots.latest_snapshot(project).based_on == 2


# --- gaps closed after the audit -------------------------------------------------------------------------------
def submit_raw(project, answers: dict[str, dict[int, dict]], *, staff: tuple[str, ...] = ()):
    """``{username: {item id: response data}}`` stored as submitted assignments of one HIT, a minute apart (written
    directly: these tests are about the reading side, the submission path has its own tests)."""
    from django.contrib.auth import get_user_model

    from annotation.models import HIT, Assignment

    User = get_user_model()
    hit = HIT.objects.create(project=project, position=1000 + HIT.objects.filter(project=project).count())
    now = timezone.now()
    for k, (name, by_item) in enumerate(answers.items()):
        user = User.objects.filter(username=name).first() or User.objects.create_user(name, is_staff=name in staff)
        worker = services.worker_for_user(user)
        a = Assignment.objects.create(
            project=project,
            hit=hit,
            worker=worker,
            status=Assignment.Status.SUBMITTED,
            reserved_at=now,
            expires_at=now + timedelta(hours=1),
            submitted_at=now + timedelta(minutes=k),
        )
        Response.objects.bulk_create(
            [Response(assignment=a, item_id=item_id, data=data) for item_id, data in by_item.items()]
        )


def test_reference_answers_are_the_expert_when_no_staff_submitted(django_user_model):
    """No expert submitted HITs: gold expected answers and the latest adjudications stand in as one expert coder."""
    project = build_project(
        {"a": ["pro", "con", "none", "pro"], "b": ["pro", "con", "con", "con"], "c": ["con", "con", "none", "pro"]}
    )
    items = list(Item.objects.filter(project=project).order_by("position"))
    boss = django_user_model.objects.create_user("boss", is_staff=True)
    Adjudication.objects.create(item=items[0], answer={"label": "pro"}, expert=boss)
    Adjudication.objects.create(item=items[2], answer={"label": "none"}, expert=boss)
    Adjudication.objects.create(item=items[2], answer={"label": "con"}, expert=boss)  # the latest one counts
    gold_item = Item.objects.create(
        project=project, payload={"text": "gold", "topic": "nuclear energy"}, is_gold=True, position=99
    )
    GoldItem.objects.create(item=gold_item, expected={"label": "con"})
    for name, label in (("a", "con"), ("b", "con"), ("c", "pro")):  # the crowd's answers to the gold item
        Response.objects.create(
            assignment=Worker.objects.get(user__username=name).assignments.get(), item=gold_item, data={"label": label}
        )
    t = agreement_table.project_table(project.slug)
    assert t["n_units"] == 4  # gold responses stay out of the project's own figures
    cve = t["crowd_vs_expert"]
    assert cve["expert_source"] == "reference" and cve["n_reference_items"] == 3
    assert cve["n_crowd"] == 3 and cve["n_experts"] == 1
    # on items 1, 3 and gold: crowd majority pro / none / con, reference pro / con / con
    between = cve["between"]
    assert between["n_units"] == 3 and between["percent_agreement"] == pytest.approx(2 / 3)
    # p_o = 2/3; margins crowd pro 1, none 1, con 1 / reference pro 1, con 2: p_e = (1 + 2) / 9 = 1/3
    assert between["kappa"] == pytest.approx((2 / 3 - 1 / 3) / (1 - 1 / 3))
    # alpha: n = 6 values (pro 2, none 1, con 3), one disagreeing unit: 1 - 5 * 2 / (36 - 4 - 1 - 9) = 12/22
    assert between["alpha"] == pytest.approx(12 / 22)
    # among the crowd on those 3 items every unit has 1 agreeing pair of 3
    assert cve["crowd"]["percent_agreement"] == pytest.approx(1 / 3)
    assert cve["expert"]["alpha"] is None and cve["expert"]["n_coders"] == 1
    # once an expert submits, the experts are the staff again
    submit_raw(project, {"boss": {items[0].pk: {"label": "pro"}, items[1].pk: {"label": "con"}}})
    assert agreement_table.project_table(project.slug)["crowd_vs_expert"]["expert_source"] == "staff"


def test_crowd_vs_expert_alpha_u_on_aspect_spans_by_hand():
    """The groups' majority spans (_group_spans) as two coders, alpha_u worked out by hand."""
    crowd, experts = {"worker:1", "worker:2", "worker:3"}, {"worker:9"}
    coders = ["worker:1", "worker:2", "worker:3", "worker:9"]
    spans = [
        ("worker:1", 10, 2, 3, "aspect"),
        ("worker:2", 10, 2, 3, "aspect"),
        ("worker:3", 10, 5, 2, "aspect"),
        ("worker:9", 10, 2, 4, "aspect"),
    ]
    rel = {
        "level": "nominal",
        "coders": coders,
        "units": ["10:2:3", "10:5:2", "10:2:4"],
        "unit_item": [10, 10, 10],
        "matrix": [["1", "0", "0"], ["1", "0", "0"], ["0", "1", "0"], ["0", "0", "1"]],
        "unitized": {"items": [(10, 10)], "spans": spans, "coders": coders, "item_coders": {10: coders}},
    }
    # crowd: [2, 5) chosen by 2 of 3 (a strict majority), [5, 7) by 1 of 3 (dropped); expert: [2, 6)
    assert agreement_table._group_spans(spans, {10: coders}, crowd, experts) == [
        ("crowd", 10, 2, 3, "aspect"),
        ("expert", 10, 2, 4, "aspect"),
    ]
    out = agreement_table._crowd_vs_expert(rel, crowd, experts, 0)
    between = out["between"]
    assert between["level"] == "unitized" and between["alpha_u"] == between["alpha"]
    # R = 2 coders, L = 10. D_o: one intersecting pair, (2-2)^2 + (5-6)^2 = 1 -> 2 * 1 / (2 * 1 * 10^2) = 0.01.
    # D_e: units l = 3 and 4 (N = 2), gaps 2, 5 (crowd) and 2, 4 (expert):
    #   l=3: (2-1)(54-27+3)/3 = 10, + 9 * [(5-3+1) + (4-3+1)] = 45 -> 55
    #   l=4: (2-1)(128-48+4)/3 = 28, + 16 * [(5-4+1) + (4-4+1)] = 48 -> 76
    #   numerator 2/10 * 131 = 26.2, denominator 2*10*(2*10-1) - (3*2 + 4*3) = 362
    assert between["alpha_u"] == pytest.approx(1 - 0.01 / (26.2 / 362))
    assert out["crowd"]["alpha_u"] is not None and out["expert"]["alpha"] is None


def test_span_grounding_token_kappa_by_hand_and_cli_alpha_u():
    """Token-level Cohen's kappa of a span_grounding project (annotation.task_types.span_grounding.agreement), and the CLI's alpha_u."""
    project = services.create_project(
        name="Spans", slug="spans-kappa", task_type="span_grounding", status=Project.Status.ACTIVE, config={}
    )
    text = "a b c d e f g h i j"  # token i = [2i, 2i+1)
    item = Item.objects.create(
        project=project,
        position=0,
        payload={"text": text, "topic": "t", "tokens": [[2 * i, 2 * i + 1] for i in range(10)], "variables": []},
    )
    submit_raw(
        project,
        {
            "s1": {
                item.pk: {"spans": [{"begin": 0, "end": 3, "variable": 7}, {"begin": 8, "end": 11, "variable": None}]}
            },
            "s2": {
                item.pk: {"spans": [{"begin": 0, "end": 5, "variable": 7}, {"begin": 10, "end": 13, "variable": 9}]}
            },
        },
    )
    rel = agreement_table.reliability_data(project, records.load_responses(project))
    # tokens:  0   1   2   3   4      5      6   7  8  9
    # s1:      v7  v7  O   O   other  other  O   O  O  O
    # s2:      v7  v7  v7  O   O      v9     v9  O  O  O
    assert rel["matrix"] == [
        ["v7", "v7", "O", "O", "other", "other", "O", "O", "O", "O"],
        ["v7", "v7", "v7", "O", "O", "v9", "v9", "O", "O", "O"],
    ]
    f = agreement_table.figures(rel, bootstrap=0)
    # p_o = 6/10; p_e = (v7 2*3 + O 6*5) / 100 = 0.36; kappa = (0.6 - 0.36) / 0.64 = 0.375
    assert f["percent_agreement"] == pytest.approx(0.6)
    assert f["kappa"] == pytest.approx(0.375)
    out = io.StringIO()
    call_command("agreement", "project", project.slug, "--json", stdout=out)
    printed = json.loads(out.getvalue())
    assert printed["level"] == "unitized" and printed["alpha_u"] is not None
    assert printed["alpha_u"] == printed["alpha"] == pytest.approx(f["alpha"])
    assert (printed["n_units"], printed["n_coders"]) == (10, 2) and printed["kappa"] == pytest.approx(0.375)


def test_adjudicate_an_aspect_project_from_the_dashboard(client, staff_user):
    from tests.annotation.task_types.aspect.helpers import aspect_project, span

    project = aspect_project("asp-adjudicate", r=2)
    item = Item.objects.filter(project=project).order_by("position").first()
    text = item.payload["text"]
    sid = span(text, "background checks")
    b, ln = map(int, sid.split(":"))
    submit_raw(
        project,
        {
            "w1": {item.pk: {"aspects": [{"begin": b, "length": ln, "text": text[b : b + ln]}], "no_aspect": False}},
            "w2": {item.pk: {"aspects": [], "no_aspect": True}},
        },
    )
    client.force_login(staff_user)
    url = reverse("annotation:adjudicate", args=[project.slug, item.pk])
    r = client.post(url, {"aspects": [sid], "note": "the checks"})
    assert r.status_code == 302
    adj = Adjudication.objects.get(item=item)
    assert adj.expert == staff_user and adj.note == "the checks"
    assert adj.answer == {"aspects": [{"begin": b, "length": ln, "text": "background checks"}], "no_aspect": False}
    item.refresh_from_db()
    assert item.payload["adjudicated"]["aspects"][0]["text"] == "background checks"
    html = client.get(reverse("annotation:agreement-items", args=[project.slug])).content.decode()
    assert "adjudicated: background checks" in html and staff_user.username in html
    # a span outside the sentence, and aspects together with "no aspect", are refused with the field
    r = client.post(url, {"aspects": [f"0:{len(text) + 5}"]})
    assert r.status_code == 400 and "aspects[0]" in r.content.decode()
    r = client.post(url, {"aspects": [sid], "no_aspect": "1"})
    assert r.status_code == 400 and "no_aspect" in r.content.decode()
    assert Adjudication.objects.filter(item=item).count() == 1


def test_dashboards_index_csv(client, staff_user, project3):
    from annotation.tasks import recompute_agreement

    recompute_agreement(project3.pk)
    empty = services.create_project(name="Empty", slug="empty", task_type="sentence_label")
    client.force_login(staff_user)
    rows = _csv(client, reverse("annotation:dashboards") + "?format=csv")
    by_slug = {row["project"]: row for row in rows}
    assert set(by_slug) == {project3.slug, empty.slug}
    snap = snapshots.latest_snapshot(project3)
    row = by_slug[project3.slug]
    assert row["task_type"] == "sentence_label" and row["submitted_assignments"] == "3" and row["based_on"] == "3"
    assert float(row["alpha"]) == pytest.approx(snap.figures["alpha"], abs=1e-12)
    assert float(row["kappa"]) == pytest.approx(snap.figures["kappa"], abs=1e-12)
    assert int(row["n_units"]) == snap.n_units and row["computed_at"] == snap.computed_at.isoformat()
    assert by_slug[empty.slug]["alpha"] == "" and by_slug[empty.slug]["computed_at"] == ""


def test_first_view_of_a_large_project_enqueues_and_says_computing(
    client, staff_user, project3, monkeypatch, django_capture_on_commit_callbacks
):
    from annotation.dashboards import views as dashboards
    from annotation.tasks import recompute_agreement

    monkeypatch.setattr(dashboards, "SYNC_MAX_RESPONSES", 5)  # project3 has 12 responses: "large"
    cache.delete(scheduling.FIRST_VIEW_KEY.format(project3.pk))
    client.force_login(staff_user)
    url = reverse("annotation:agreement", args=[project3.slug])
    with mock.patch("annotation.tasks.recompute_agreement.apply_async") as apply_async:
        with django_capture_on_commit_callbacks(execute=True):
            r = client.get(url)
        assert r.status_code == 200 and 'id="computing"' in r.content.decode()
        apply_async.assert_called_once()
        assert apply_async.call_args.kwargs["args"] == [project3.pk]
        with django_capture_on_commit_callbacks(execute=True):
            assert 'id="computing"' in client.get(url).content.decode()
        assert apply_async.call_count == 1  # enqueued once, not on every reload
        r = client.get(reverse("annotation:agreement-csv", args=[project3.slug, "summary"]))
        assert r.status_code == 503 and r["Retry-After"] == str(dashboards.COMPUTING_RETRY_SECONDS)
        assert (
            'id="computing"' in client.get(reverse("annotation:agreement-items", args=[project3.slug])).content.decode()
        )
    assert not AgreementSnapshot.objects.filter(project=project3).exists()  # nothing computed in the request
    recompute_agreement(project3.pk)  # what the worker does
    html = client.get(url).content.decode()
    assert 'id="computing"' not in html and 'id="fig-alpha"' in html
    cache.delete(scheduling.FIRST_VIEW_KEY.format(project3.pk))


def test_worker_scatter_uses_competence_without_gold_and_gold_accuracy_with_it(client, staff_user, project3):
    client.force_login(staff_user)
    html = client.get(reverse("annotation:agreement", args=[project3.slug])).content.decode()
    scatter = html[html.index('id="chart-workers"') :]
    scatter = scatter[: scatter.index("</svg>")]
    assert "Workers: LOO vs Dawid-Skene competence, n = 3 workers" in scatter
    assert scatter.count('class="mark') == 3  # every worker has both values
    assert scatter.count('class="mark weak"') == 3  # 4 shared units each: fewer than MIN_WORKER_UNITS
    gold_item = Item.objects.create(project=project3, payload={"text": "gold", "topic": "t"}, is_gold=True, position=99)
    GoldItem.objects.create(item=gold_item, expected={"label": "pro"})
    a = Worker.objects.get(user__username="a")
    GoldRecord.objects.create(worker=a, item=gold_item, assignment=a.assignments.first(), correct=True, score=1.0)
    snapshots.store_snapshots(project3)
    html = client.get(reverse("annotation:agreement", args=[project3.slug])).content.decode()
    scatter = html[html.index('id="chart-workers"') :]
    scatter = scatter[: scatter.index("</svg>")]
    assert "Workers: LOO vs gold accuracy, n = 1 worker" in scatter and scatter.count('class="mark') == 1


@pytest.mark.parametrize(
    "task_type,url_name",
    [
        ("bws_similarity", "annotation:bws"),
        ("validity_novelty", "annotation:valnov"),
        ("pairwise_preference", "annotation:ratings-results"),
        ("likert_debate", "annotation:ratings-results"),
    ],
)
def test_task_types_with_their_own_results_page_are_linked(client, staff_user, task_type, url_name):
    project = services.create_project(name=f"P {task_type}", slug=task_type.replace("_", "-"), task_type=task_type)
    client.force_login(staff_user)
    target = reverse(url_name, args=[project.slug])
    assert f'href="{target}"' in client.get(reverse("annotation:dashboards")).content.decode()
    r = client.get(reverse("annotation:agreement", args=[project.slug]))
    assert r.status_code == 200
    html = r.content.decode()
    assert f'id="results-page" href="{target}"' in html
    if task_type == "bws_similarity":  # no coders x units data: the page says so and points to split-half
        assert "reports its reliability on its own page" in html
        assert "own results page" in agreement_table.project_table(project.slug)["reasons"]["alpha"]


def test_csv_cells_a_spreadsheet_would_run_are_neutralised(client, staff_user, project3):
    """An item text that starts like a formula (a worker's or an importer's) is written as text; numbers, also
    negative ones, stay numbers."""
    item = Item.objects.filter(project=project3).order_by("position").first()
    Item.objects.filter(pk=item.pk).update(payload={**item.payload, "text": '=HYPERLINK("http://evil","x")'})
    snapshots.store_snapshots(project3)
    client.force_login(staff_user)
    rows = _csv(client, reverse("annotation:agreement-items", args=[project3.slug]) + "?format=csv")
    texts = {r["item_id"]: r["text"] for r in rows}
    assert texts[str(item.pk)] == '\'=HYPERLINK("http://evil","x")'
    summary = _csv(client, reverse("annotation:agreement-csv", args=[project3.slug, "summary"]))
    alpha = float(summary[0]["alpha"])  # still a number (project3's alpha is negative on some scopes)
    assert alpha == pytest.approx(agreement_table.project_table(project3)["alpha"])
