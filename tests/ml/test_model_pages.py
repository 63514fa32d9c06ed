"""The model pages read as a table, not a JSON dump: metrics rounded to 3 decimals with readable names, a chart of the
primary metric across the versions of a kind, the training loss, and "Roll back" only where there is an earlier
version to go back to."""

from __future__ import annotations

import csv
import io
import re

import pytest
from django.utils import timezone

from annotation import services
from ml import registry
from ml.models import ModelVersion
from tests.ml.fakes import register_fake

pytestmark = pytest.mark.django_db


@pytest.fixture
def fake_kind():
    register_fake("fake")
    yield
    registry.unregister_trainer("fake")


@pytest.fixture
def staff(client, staff_user):
    client.force_login(staff_user)
    return client


def version(tmp_artifacts, acc: float, *, active=False, **metrics) -> ModelVersion:
    v = ModelVersion.objects.create(
        kind="fake",
        status="ready",
        n_train=1200,
        n_dev=300,
        seed=13,
        hyperparameters={"lr": 2e-5, "epochs": 3, "batch_size": 16},
        metrics={
            "dev": {"acc": acc, "f1_macro": acc / 2, "n_dev": 300, **metrics},
            "primary": acc,
            "primary_metric": "acc",
        },
    )
    folder = tmp_artifacts / "models" / "fake" / str(v.pk)
    folder.mkdir(parents=True)
    v.artifact_path = str(folder)
    v.trained_at = timezone.now()
    v.save()
    if active:
        registry.activate(v)
    return v


def group_html(page: str, kind="fake", scope="global") -> str:
    return re.search(rf'<section class="card model-group" id="group-{kind}-{scope}".*?</section>', page, re.S).group(0)


def test_the_list_shows_rounded_metrics_with_readable_names_and_a_chart(staff, fake_kind, tmp_artifacts):
    a = version(tmp_artifacts, 0.22424242424242424, active=True, **{"ndcg@5": 0.61818181818})
    b = version(tmp_artifacts, 0.3, **{"ndcg@5": 0.5})
    page = staff.get("/ml/models/").content.decode()
    group = group_html(page)
    assert "0.22424242424242424" not in re.sub(r'data-value="[^"]*"', "", group)  # full precision only in data
    row_a = re.search(rf'<tr class="active-version" data-version="{a.pk}">(.*?)</tr>', group, re.S).group(1)
    assert '<td class="num" data-value="0.22424242424242424">0.224</td>' in row_a
    assert ">0.112<" in row_a and ">0.618<" in row_a and "1200 / 300" in row_a
    headers = re.findall(r'<th class="num metric-col"[^>]*>(.*?)</th>', group)
    assert headers == ["Accuracy", "F1 macro", "nDCG@5"]  # primary first; row counts are no metric
    assert "{&quot;" not in group and '{"' not in group  # no JSON dump
    chart = re.search(r"<svg .*?</svg>", group, re.S).group(0)
    assert chart.count('class="mark"') == 3  # two versions, plus the active one marked
    assert f"active after {a.pk}: 0.224" in chart and f"after {b.pk}: 0.300" in chart


def test_roll_back_is_offered_only_with_an_earlier_version(staff, fake_kind, tmp_artifacts):
    only = version(tmp_artifacts, 0.5, active=True)
    page = staff.get("/ml/models/").content.decode()
    assert "Roll back" not in page and registry.rollback_target("fake") is None
    assert "Roll back" not in staff.get(f"/ml/models/{only.pk}/").content.decode()
    # the service refuses it too: nothing changes
    response = staff.post("/ml/models/rollback/", {"kind": "fake", "project": "-"}, follow=True)
    assert "No earlier ready fake version to roll back to." in response.content.decode()
    only.refresh_from_db()
    assert only.is_active and only.status == "ready"

    newer = version(tmp_artifacts, 0.7, active=True)
    assert registry.rollback_target("fake").pk == only.pk
    group = group_html(staff.get("/ml/models/").content.decode())
    assert f"<button>Roll back to version #{only.pk}</button>" in group
    assert f"Roll back to version #{only.pk}" in staff.get(f"/ml/models/{newer.pk}/").content.decode()
    assert "Roll back" not in staff.get(f"/ml/models/{only.pk}/").content.decode()  # not the active one
    staff.post("/ml/models/rollback/", {"kind": "fake", "project": "-"})
    assert registry.active_version("fake").pk == only.pk
    # back at the first version: nothing earlier, no button
    assert "Roll back" not in group_html(staff.get("/ml/models/").content.decode())


def test_a_version_page_has_a_metrics_table_charts_and_no_json(staff, fake_kind, tmp_artifacts):
    first = version(tmp_artifacts, 0.4, active=True)
    v = version(tmp_artifacts, 0.22424242424242424, rouge_l=0.123456)
    v.metrics = {
        **v.metrics,
        "test": {"acc": 0.19999, "f1_macro": 0.1},
        "info": {"steps": 40, "history": [{"step": s, "epoch": 1, "loss": 1.0 / s} for s in range(1, 41)], "seed": 13},
    }
    v.save()
    page = staff.get(f"/ml/models/{v.pk}/").content.decode()
    table = re.search(r'<table class="grid metrics" id="metrics">(.*?)</table>', page, re.S).group(1)
    assert re.findall(r"<th class=\"num\">(\w+)</th>", table) == ["dev", "test"]
    rows = {m.group(1): m.group(2) for m in re.finditer(r'<tr data-metric="([^"]+)"[^>]*>(.*?)</tr>', table, re.S)}
    assert list(rows)[0] == "acc" and "Accuracy" in rows["acc"] and "(primary)" in rows["acc"]
    assert ">0.224</td>" in rows["acc"] and ">0.200</td>" in rows["acc"]
    assert "ROUGE-L" in rows["rouge_l"] and ">0.123</td>" in rows["rouge_l"] and ">—</td>" in rows["rouge_l"]
    assert "F1 macro" in rows["f1_macro"]
    assert '<pre class="json" id="metrics">' not in page and "{&quot;" not in page
    assert '<td id="primary" data-value="0.22424242424242424"><strong>0.224</strong>' in page
    # the primary metric over the versions of the kind, this version marked; the training loss by step
    versions_chart = re.search(rf'<svg id="chart-versions-{v.pk}".*?</svg>', page, re.S).group(0)
    assert f"version #{v.pk} after {v.pk}: 0.224" in versions_chart and f"after {first.pk}: 0.400" in versions_chart
    loss = re.search(rf'<svg id="chart-loss-{v.pk}".*?</svg>', page, re.S).group(0)
    assert loss.count('class="mark"') == 40
    hp = re.search(r'<dl class="facts" id="hyperparameters">(.*?)</dl>', page, re.S).group(1)
    assert "<dt>Learning rate</dt><dd>2e-05</dd>" in hp and "<dt>Batch size</dt><dd>16</dd>" in hp
    info = re.search(r'<dl class="facts" id="info">(.*?)</dl>', page, re.S).group(1)
    assert "<dt>Steps</dt><dd>40</dd>" in info and "History" not in info


def test_a_single_version_page_says_why_there_is_no_chart(staff, fake_kind, tmp_artifacts):
    v = version(tmp_artifacts, 0.5, active=True)
    page = staff.get(f"/ml/models/{v.pk}/").content.decode()
    assert "chart-versions-" not in page and "a chart over versions appears with the second one" in page
    failed = ModelVersion.objects.create(kind="fake", status="failed", error="boom")
    page = staff.get(f"/ml/models/{failed.pk}/").content.decode()
    assert "No metrics." in page and 'id="activate"' not in page
    assert staff.post(f"/ml/models/{failed.pk}/activate/").status_code == 400


def test_the_csv_download_writes_formula_cells_as_text(staff, fake_kind, tmp_artifacts):
    """A base model or data snapshot named like a formula shows as text in a spreadsheet; numbers stay numbers."""
    services.create_project(name="P", slug="p", task_type="sentence_label")  # the staff user is on its team
    v = version(tmp_artifacts, 0.5)
    ModelVersion.objects.filter(pk=v.pk).update(
        base_model='=HYPERLINK("http://evil.example","x")', data_snapshot="@SUM(A1:A9)"
    )
    r = staff.get("/ml/models/?format=csv")
    assert r.status_code == 200 and r["Content-Type"].startswith("text/csv")
    [row] = list(csv.DictReader(io.StringIO(r.content.decode())))
    assert row["base_model"] == '\'=HYPERLINK("http://evil.example","x")' and row["data_snapshot"] == "'@SUM(A1:A9)"
    assert (row["id"], row["primary"], row["n_train"]) == (str(v.pk), "0.5", "1200")
