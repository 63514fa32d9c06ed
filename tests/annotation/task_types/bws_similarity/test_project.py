"""The bws_similarity task type in the database: sample, build, validation (API and plain form), gold
attention checks, scores/split-half page, CSV, release export."""

import csv
import io
import json

import pytest
from rest_framework.test import APIClient

from annotation import services
from annotation.models import HIT, Assignment, GoldItem, Item, Response
from annotation.task_types.bws_similarity import project as bws

from .helpers import ARGS, make_project

pytestmark = pytest.mark.django_db


def test_sample_and_build_store_pairs_tuples_items_and_hits():
    project = make_project(pairs=8)
    pairs = project.config["pairs"]
    assert len(pairs) == 16
    assert {p["topic"] for p in pairs.values()} == set(ARGS)
    assert project.config["sampling"]["cloning"]["bins"]["top1"] >= 1
    assert project.assignments_per_item == 4
    items = list(Item.objects.filter(project=project, is_gold=False))
    assert len(items) == 2 * 16  # 2N tuples per topic
    freq = {}
    for item in items:
        ids = [p["id"] for p in item.payload["pairs"]]
        assert len(ids) == 4 == len(set(ids))
        assert {pairs[i]["topic"] for i in ids} == {item.payload["topic"]}
        for i in ids:
            freq[i] = freq.get(i, 0) + 1
    assert set(freq.values()) == {8}
    gold = list(GoldItem.objects.filter(item__project=project).select_related("item"))
    assert len(gold) == 4  # 2 attention checks per topic
    for g in gold:
        same = [p for p in g.item.payload["pairs"] if p["id"] == g.expected["best"]][0]
        assert same["a"] == same["b"]
    assert HIT.objects.filter(project=project).count() == 7  # 32 tasks / 5 per HIT
    assert bws.build(project)["topics"] == {}  # nothing left to build
    with pytest.raises(bws.BWSProjectError, match="already has tasks"):
        bws.sample(project, "cloning", 4)


def test_sampling_is_reproducible_and_refuses_unknown_topics():
    project = make_project(pairs=6, build=False)
    first = dict(project.config["pairs"])
    bws.sample(project, "cloning", 6, seed=0)
    assert project.config["pairs"] == first
    with pytest.raises(bws.BWSProjectError, match="no topic"):
        bws.sample(project, "nothing here", 3)


def worker_client(django_user_model, name):
    user = django_user_model.objects.create_user(name, password="pw-12345678")
    client = APIClient()
    client.force_authenticate(user)
    return client, services.worker_for_user(user)


def answer_all(assignment, choose):
    out = {}
    for item in services.assignment_items(assignment):
        ids = [p["id"] for p in item.payload["pairs"]]
        out[str(item.pk)] = choose(item, ids)
    return out


def test_api_refuses_the_same_pair_as_best_and_worst_and_writes_nothing(django_user_model):
    project = make_project(pairs=8, gold_rate=0)
    client, worker = worker_client(django_user_model, "w1")
    assignment = services.reserve_next_assignment(project, worker)
    responses = answer_all(assignment, lambda item, ids: {"best": ids[0], "worst": ids[1]})
    first = next(iter(responses))
    responses[first] = {"best": responses[first]["best"], "worst": responses[first]["best"]}
    r = client.post(f"/api/assignments/{assignment.pk}/submit/", {"responses": responses}, format="json")
    assert r.status_code == 400
    assert r.json()["errors"] == {f"responses.{first}.worst": "the most and the least similar pair must differ"}
    assert Response.objects.count() == 0
    assert Assignment.objects.get(pk=assignment.pk).status == Assignment.Status.RESERVED
    responses[first] = {"best": "nope", "worst": responses[first]["best"]}
    r = client.post(f"/api/assignments/{assignment.pk}/submit/", {"responses": responses}, format="json")
    assert r.status_code == 400 and "not one of this task's pairs" in json.dumps(r.json())
    responses = answer_all(assignment, lambda item, ids: {"best": ids[0], "worst": ids[1]})
    r = client.post(f"/api/assignments/{assignment.pk}/submit/", {"responses": responses}, format="json")
    assert r.status_code == 200, r.content
    assert Response.objects.count() == 5


def test_plain_form_post_refuses_same_pair_and_accepts_a_good_answer(client, django_user_model):
    project = make_project(pairs=8, gold_rate=0)
    user = django_user_model.objects.create_user("formy", password="pw-12345678")
    client.force_login(user)
    page = client.get(f"/work/{project.slug}/")
    assert page.status_code == 200
    html = page.content.decode()
    assert 'class="bws-pair"' in html and "Most similar" in html and "Least similar" in html
    assignment = Assignment.objects.get(worker__user=user)
    items = services.assignment_items(assignment)
    data = {"assignment": assignment.pk}
    for item in items:
        ids = [p["id"] for p in item.payload["pairs"]]
        data[f"item-{item.pk}-best"] = ids[2]
        data[f"item-{item.pk}-worst"] = ids[2]
    r = client.post(f"/work/{project.slug}/", data)
    assert r.status_code == 400
    assert "must differ" in r.content.decode()
    assert Response.objects.count() == 0
    for item in items:
        data[f"item-{item.pk}-worst"] = item.payload["pairs"][3]["id"]
    r = client.post(f"/work/{project.slug}/", data)
    assert r.status_code == 302
    assert Response.objects.count() == len(items)


def test_attention_check_scores_gold():
    project = make_project(pairs=8)
    tt = project.get_task_type()
    gold = GoldItem.objects.filter(item__project=project).first()
    same = gold.expected["best"]
    other = [p["id"] for p in gold.item.payload["pairs"] if p["id"] != same]
    assert tt.score_gold(project, gold, {"best": same, "worst": other[0]}) == 1.0
    assert tt.score_gold(project, gold, {"best": other[0], "worst": same}) == 0.0


def submit_everything(project, django_user_model, n_workers=4, choose=None):
    """n_workers workers do every HIT; by default they agree on a fixed ranking (shorter pair id = better)."""
    choose = choose or (lambda item, ids: {"best": min(ids), "worst": max(ids)})
    for k in range(n_workers):
        user = django_user_model.objects.create_user(f"w{k}", password="pw-12345678")
        worker = services.worker_for_user(user)
        while True:
            assignment = services.reserve_next_assignment(project, worker)
            if assignment is None:
                break
            services.submit_assignment(assignment, worker, answer_all(assignment, choose))


def test_report_page_csv_and_cli_agree(client, staff_user, django_user_model):
    project = make_project(pairs=8, gold_rate=0)
    submit_everything(project, django_user_model)
    report = bws.report(project)
    assert report["judgements"] == 32 * 4
    assert report["split_half"]["all"]["rho"] == pytest.approx(1.0)  # everyone agrees
    assert len(report["rows"]) == 16
    row = report["rows"][0]
    assert set(row) == {"pair_id", "topic", "argument1", "argument2", "score", "best", "worst", "appearances"}
    assert row["appearances"] == 8 * 4

    client.force_login(staff_user)
    page = client.get(f"/projects/{project.slug}/bws/")
    assert page.status_code == 200
    html = page.content.decode()
    assert 'id="bws-split-half"' in html and "Whole dataset" in html and "cloning" in html
    assert 'id="bws-rho-all">1.00<' in html
    r = client.get(f"/projects/{project.slug}/bws/scores.csv")
    assert r.status_code == 200 and r["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(r.content.decode())))
    assert len(rows) == 16
    assert {x["pair_id"]: float(x["score"]) for x in rows} == pytest.approx(
        {x["pair_id"]: x["score"] for x in report["rows"]}, abs=1e-6
    )
    assert client.get(f"/projects/{project.slug}/bws/?splits=abc").status_code == 400


def test_report_page_is_for_staff_only(client, django_user_model):
    make_project(pairs=8, build=False)
    client.force_login(django_user_model.objects.create_user("crowd", password="pw-12345678"))
    assert client.get("/projects/bws/bws/").status_code == 403
    client.logout()
    assert client.get("/projects/bws/bws/").status_code == 302


def test_report_page_of_another_task_type_is_404(client, staff_user):
    services.create_project(name="Other", slug="other", task_type="sentence_label")
    client.force_login(staff_user)
    response = client.get("/projects/other/bws/")
    assert response.status_code == 404
    assert (
        "Project &#x27;other&#x27; is a &#x27;sentence_label&#x27; project, not &#x27;bws_similarity&#x27;."
        in response.content.decode()
    )


def test_report_page_without_judgements(client, staff_user):
    make_project(pairs=8)
    client.force_login(staff_user)
    html = client.get("/projects/bws/bws/").content.decode()
    assert 'id="bws-no-data"' in html and 'id="bws-sampling"' in html


def test_release_export_cross_topic_and_in_topic(django_user_model, tmp_artifacts):
    from corpus.releases import build_release, release_path

    project = make_project(pairs=8, gold_rate=0)
    submit_everything(project, django_user_model, n_workers=2)
    with pytest.raises(ValueError, match="split"):
        build_release("bws", "0.1", kind="bws", config={"project": "bws"})
    release = build_release(
        "bws",
        "1.0",
        kind="bws",
        config={
            "project": "bws",
            "split": {"mode": "cross-topic", "train": ["cloning"], "dev": ["x"], "test": ["school uniforms"]},
        },
    )
    folder = release_path(release)
    train = [json.loads(line) for line in open(folder / "train.jsonl")]
    test = [json.loads(line) for line in open(folder / "test.jsonl")]
    assert {r["topic"] for r in train} == {"cloning"} and {r["topic"] for r in test} == {"school uniforms"}
    assert len(train) == len(test) == 8
    assert set(train[0]) == {"pair_id", "topic", "argument1", "argument2", "score", "best", "worst", "appearances"}
    release = build_release("bws", "1.1", kind="bws", config={"project": "bws", "split": {"mode": "in-topic"}})
    parts = {
        p: [json.loads(line) for line in open(release_path(release) / f"{p}.jsonl")] for p in ("train", "dev", "test")
    }
    assert sum(len(v) for v in parts.values()) == 16
    assert {r["topic"] for r in parts["train"]} == set(ARGS)
