"""``manage.py models evaluate VERSION --data FILE [--json]`` scores any registered version on any file of its kind,
beside the kind's baseline; ``models list --json`` and ``/ml/models/`` show the test metrics with their baselines."""

from __future__ import annotations

import json
import re
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from ml import loop, registry, splits, versions
from ml.models import ModelVersion
from tests.ml.fakes import fake_load, fake_train, register_fake
from tests.ml.test_taggers import TINY, planted_tagger_rows

pytestmark = pytest.mark.django_db


def run(*args):
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture
def scored_kind(tmp_artifacts):
    """A kind whose evaluate reports a metric and its majority baseline (and nothing on its own test rows)."""

    def train(req):
        result = fake_train(req)
        result.metrics.update(f1_macro=0.7, majority_f1_macro=0.4)
        return result

    registry.register_trainer(
        registry.TrainerSpec(
            kind="scored",
            train=train,
            load=fake_load,
            primary_metric="f1_macro",
            evaluate=lambda model, rows: {"f1_macro": 0.8, "majority_f1_macro": 0.3, "n": len(rows)},
        )
    )
    registry.clear_model_cache()
    yield
    registry.unregister_trainer("scored")
    registry.clear_model_cache()


@pytest.fixture(scope="module")
def tagger_file(tmp_path_factory):
    rows = planted_tagger_rows(30, 5)
    for i, row in enumerate(rows):  # any split: every row is scored
        row["split"] = ("train", "dev", "test")[i % 3]
    return write(tmp_path_factory.mktemp("eval") / "appf.jsonl", rows)


def test_evaluate_a_tiny_tagger_on_a_file_with_every_split(tmp_artifacts, tagger_file):
    version = versions.train_version(
        "tagger",
        rows_train=planted_tagger_rows(40, 1),
        rows_dev=planted_tagger_rows(10, 2),
        seed=3,
        hyperparameters=dict(TINY, epochs=1),
    )
    assert version.status == "ready", version.error
    out = json.loads(run("models", "evaluate", str(version.pk), "--data", str(tagger_file), "--json"))
    assert out["version"] == version.pk and out["kind"] == "tagger" and out["rows"] == 30
    assert out["primary_metric"] == "f1_macro" and 0.0 <= out["primary"] <= 1.0
    metrics = out["metrics"]
    assert {"f1_B", "precision_B", "recall_B", "majority_f1_macro"} <= set(metrics)
    primary = out["beside_baselines"][0]
    assert primary == {
        "metric": "f1_macro",
        "value": metrics["f1_macro"],
        "scale": "0-1",
        "baseline": metrics["majority_f1_macro"],
        "baseline_metric": "majority_f1_macro",
    }
    assert not any(r["metric"].startswith("majority_") for r in out["beside_baselines"])  # baselines sit beside
    # the same figures as the kind's own evaluate on all rows of the file
    train, dev, test = loop.rows_from_file_parts("tagger", tagger_file)
    direct = registry.get_trainer("tagger").evaluate(registry.load_model(version), splits.untagged(train + dev + test))
    assert direct["f1_macro"] == pytest.approx(metrics["f1_macro"])
    text = run("models", "evaluate", str(version.pk), "--data", str(tagger_file))
    assert f"version {version.pk} (tagger) on {tagger_file}: 30 rows" in text
    assert re.search(r"^\* f1_macro \d\.\d{3} \[0-1\] \(majority \d\.\d{3}\)$", text, re.M)


def test_evaluate_refuses_unknown_versions_kinds_without_evaluate_and_bad_files(scored_kind, tmp_path):
    with pytest.raises(CommandError) as err:
        run("models", "evaluate", "999999", "--data", str(tmp_path / "x.jsonl"))
    assert err.value.returncode == 2 and "no model version 999999" in str(err.value)

    register_fake("noeval")
    try:
        v = versions.train_version("noeval", rows_train=[{"label": 1}], rows_dev=[{"label": 1}])
        with pytest.raises(CommandError) as err:
            run("models", "evaluate", str(v.pk), "--data", str(tmp_path / "x.jsonl"))
        assert err.value.returncode == 2 and "'noeval' cannot score a file" in str(err.value)
    finally:
        registry.unregister_trainer("noeval")

    v = versions.train_version("scored", rows_train=[{"label": 1}], rows_dev=[{"label": 1}])
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "ok"}\nnot json\n')
    with pytest.raises(CommandError) as err:
        run("models", "evaluate", str(v.pk), "--data", str(bad))
    assert err.value.returncode == 2 and f"{bad}:2:" in str(err.value)
    with pytest.raises(CommandError) as err:
        run("models", "evaluate", str(v.pk), "--data", str(tmp_path / "missing.jsonl"))
    assert err.value.returncode == 2 and "missing.jsonl:0: no such file" in str(err.value)

    failed = ModelVersion.objects.create(kind="scored", status="failed", error="boom")
    with pytest.raises(CommandError) as err:
        run("models", "evaluate", str(failed.pk), "--data", str(bad))
    assert err.value.returncode == 2 and "is failed" in str(err.value)

    good = write(tmp_path / "good.jsonl", [{"text": f"t{i}", "split": "test"} for i in range(4)])
    out = json.loads(run("models", "evaluate", str(v.pk), "--data", str(good), "--json"))
    assert out["rows"] == 4 and out["metrics"]["n"] == 4


def test_list_json_and_the_page_show_test_metrics_beside_the_baseline(scored_kind, tmp_path, client, staff_user):
    rows = (
        [{"text": f"t{i}", "label": 1} for i in range(8)]
        + [{"text": "d", "label": 1, "split": "dev"}]
        + [{"text": f"x{i}", "label": 0, "split": "test"} for i in range(3)]
    )
    for r in rows[:8]:
        r["split"] = "train"
    text = run("train", "scored", "--data", str(write(tmp_path / "all.jsonl", rows)))
    assert "test (3 rows): f1_macro 0.800 [0-1] (majority 0.300)" in text
    out = {"version": ModelVersion.objects.get().pk}
    [row] = json.loads(run("models", "list", "--json", "--kind", "scored"))
    assert row["id"] == out["version"] and row["status"] == "ready" and row["n_test"] == 3
    assert row["primary_metric"] == "f1_macro" and row["test_primary"] == 0.8 and row["test_primary_baseline"] == 0.3
    assert row["test"][0] == {
        "metric": "f1_macro",
        "value": 0.8,
        "scale": "0-1",
        "baseline": 0.3,
        "baseline_metric": "majority_f1_macro",
    }
    assert "test=0.8" in run("models", "list", "--kind", "scored")

    client.force_login(staff_user)
    page = client.get("/ml/models/?kind=scored").content.decode()
    tr = re.search(rf'<tr class="active-version" data-version="{out["version"]}">(.*?)</tr>', page, re.S).group(1)
    assert '<td class="num test" data-value="0.8">0.800</td>' in tr
    assert re.search(r'data-part="test" data-value="0.3" title="majority F1 macro">0.300</td>', tr), tr
    assert re.search(r'data-part="dev" data-value="0.4" title="majority F1 macro">0.400</td>', tr), tr
    # the baseline's name once, in each baseline column's heading
    assert re.search(r'Dev baseline<br><span class="muted small">majority F1 macro</span></th>', page)
    assert re.search(r'Test baseline<br><span class="muted small">majority F1 macro</span></th>', page)
    assert "Test F1 macro" in page and 'data-scale="0–1"' in page and "/ 3</td>" in tr
    csv_text = client.get("/ml/models/?kind=scored&format=csv").content.decode()
    header, line = csv_text.splitlines()[:2]
    values = dict(zip(header.split(","), line.split(",")))
    assert values["test_primary"] == "0.8" and values["test_primary_baseline"] == "0.3" and values["scale"] == "0-1"
