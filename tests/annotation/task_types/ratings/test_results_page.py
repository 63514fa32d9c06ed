"""The staff results page /projects/<slug>/results/ (both task types): permissions, tables, SVG chart, CSV."""

import csv
import io

import pytest

from annotation.models import Worker
from annotation.task_types.pairwise_preference.pairwise import left_side

from .helpers import likert_project, pairwise_project, run_worker

pytestmark = pytest.mark.django_db


def test_permissions_and_wrong_type(tmp_path, client, django_user_model, staff_user):
    pairwise_project(tmp_path)
    assert client.get("/projects/pp/results/").status_code == 302
    client.force_login(django_user_model.objects.create_user("bob", password="pw-bob-12345"))
    for url in ("/projects/pp/results/", "/projects/pp/results/summary.csv", "/projects/pp/results/responses.csv"):
        assert client.get(url).status_code == 403
    client.force_login(staff_user)
    from annotation import services

    services.create_project(name="labels", slug="labels", task_type="sentence_label")
    response = client.get("/projects/labels/results/")
    assert response.status_code == 404
    assert (
        "Project &#x27;labels&#x27; is a &#x27;sentence_label&#x27; project, not &#x27;pairwise_preference&#x27; "
        "or &#x27;likert_debate&#x27;." in response.content.decode()
    )
    assert client.get("/projects/none/results/").status_code == 404


def test_pairwise_results_page_and_csv(tmp_path, client, staff_user):
    project = pairwise_project(tmp_path, assignments_per_item=2, items_per_hit=4)
    for name in ("w1", "w2"):
        w = Worker.objects.create(source="prolific", external_id=name)

        def answer(item, a):  # always the reference, wherever it was shown; arg-ctrl is never fluent
            left = left_side(a.pk, item.pk)
            ref_left = item.payload[left]["system"] == "reference"
            return {
                "left": left,
                "choice": "left" if ref_left else "right",
                "fluent_left": ref_left,
                "fluent_right": not ref_left,
            }

        run_worker(project, w, answer)
    client.force_login(staff_user)
    r = client.get("/projects/pp/results/")
    html = r.content.decode()
    assert r.status_code == 200
    row = html[html.index('<tr data-system="reference">') :]
    row = row[: row.index("</tr>")]
    assert '<td class="rt-num">8</td>' in row and "too few ratings: 8 comparisons (minimum 10)" in row
    assert '<td class="rt-num wins">8 (100%)</td>' in html and '<td class="rt-num fluency">0 (0%)</td>' in html
    assert '<svg id="ratings-chart"' in html and "<script" not in html.split("<main")[-1].split("</main>")[0]
    assert 'data-question="persuasiveness"' in html
    rows = list(csv.reader(io.StringIO(client.get("/projects/pp/results/summary.csv").content.decode())))
    assert rows[0][:3] == ["system", "comparisons", "wins"]
    assert rows[1][:5] == ["reference", "8", "8", "0", "0"] and rows[2][:5] == ["arg-ctrl", "8", "0", "0", "8"]
    resp = client.get("/projects/pp/results/responses.csv")
    assert resp["Content-Disposition"] == 'attachment; filename="pp-responses.csv"'
    rows = list(csv.DictReader(io.StringIO(resp.content.decode())))
    assert len(rows) == 8 and {r["winner"] for r in rows} == {"reference"}
    assert {r["left_system"] for r in rows} <= {"reference", "arg-ctrl"}


def test_likert_results_page(tmp_path, client, staff_user):
    project = likert_project(tmp_path, assignments_per_item=2, items_per_hit=2)
    for name, base in (("w1", 1), ("w2", 2)):
        w = Worker.objects.create(source="prolific", external_id=name)
        run_worker(
            project,
            w,
            lambda item, a, b=base: {
                "style": b + (2 if item.payload["system"] == "human" else 0),
                "content": 3,
                "strategy": 2,
                "overall": b,
            },
        )
    client.force_login(staff_user)
    html = client.get("/projects/ld/results/").content.decode()
    # human style: 3, 3, 4, 4 -> 3.5 ± 0.577; generated: 1, 1, 2, 2 -> 1.5 ± 0.577
    assert '<tr data-criterion="style"><td>Style</td>' in html
    assert "3.500 ± 0.577" in html and "1.500 ± 0.577" in html
    assert 'data-column="human"' in html and 'data-column="generated"' in html
    assert "Krippendorff" in html and '<svg id="ratings-chart"' in html
    rows = list(csv.reader(io.StringIO(client.get("/projects/ld/results/summary.csv").content.decode())))
    assert rows[1][0] == "Style" and rows[1][1:4] == ["3.500", "0.577", "4"]
