"""manage.py train / manage.py models, the default data readers, and the staff page of metrics over versions."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from ml import loop, registry
from ml.models import ModelVersion
from tests.ml.fakes import register_fake
from tests.ml.test_loop import SENTENCES, Scores, write_appf

pytestmark = pytest.mark.django_db


@pytest.fixture
def kinds(tmp_artifacts, monkeypatch):
    import importlib.util

    if importlib.util.find_spec("ml.rankers") is not None:  # fake "ranker" versions are no real rankers
        monkeypatch.setattr("ml.rankers.active_ranker", lambda project=None: None)
    previous = registry._TRAINERS.get("ranker")
    register_fake("fake")
    fake_ranker = Scores([0.4, 0.6, 0.5, 0.9])
    registry.register_trainer(fake_ranker.spec)
    yield fake_ranker
    registry.unregister_trainer("fake")
    registry.unregister_trainer("ranker")
    if previous is not None:
        registry.register_trainer(previous)


def run(*args):
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def test_train_ranker_from_an_appf_file_with_json_output(kinds, tmp_path):
    data = write_appf(tmp_path / "appf.jsonl", SENTENCES)
    out = json.loads(run("train", "ranker", "--data", str(data), "--seed", "7", "--epochs", "2", "--json"))
    v = ModelVersion.objects.get(pk=out["version"])
    assert out["activated"] and out["active"] == v.pk and out["metrics"]["primary"] == 0.4
    assert v.seed == 7 and v.hyperparameters == {"epochs": 2} and v.data_snapshot == str(data.resolve())
    n_train, n_dev = kinds.seen[0]
    assert n_train + n_dev == v.n_train + v.n_dev and n_dev > 0
    # App. F -> Step 2a label rows: every 1..4-gram of every sentence
    train, dev = loop.rows_from_file("ranker", data)
    assert {r["sentence"] for r in train}.isdisjoint({r["sentence"] for r in dev})
    assert {"sentence", "candidate", "score", "begin", "length", "topic"} <= set(train[0])

    text = run("train", "ranker", "--data", str(data), "--activate", "never")
    assert "not activated" in text
    text = run("train", "ranker", "--data", str(data), "--activate", "always")  # 0.5 < 0.6, activated anyway
    assert "activated" in text


def test_train_from_a_folder_with_train_and_dev(kinds, tmp_path):
    folder = tmp_path / "split"
    folder.mkdir()
    write_appf(folder / "train.jsonl", SENTENCES[:7])
    write_appf(folder / "dev.jsonl", SENTENCES[7:])
    _train, dev = loop.rows_from_file("ranker", folder)
    assert {r["sentence"] for r in dev} == {s for _, s, _ in SENTENCES[7:]}
    out = json.loads(run("train", "ranker", "--data", str(folder), "--json"))
    assert out["status"] == "ready"


def test_generic_jsonl_uses_its_split_field(kinds, tmp_path):
    path = tmp_path / "spans.jsonl"
    rows = [{"text": f"t{i}", "label": 1, "split": "dev" if i < 2 else "test" if i == 2 else "train"} for i in range(6)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    train, dev = loop.rows_from_file("fake", path)
    assert [r["text"] for r in dev] == ["t0", "t1"] and [r["text"] for r in train] == ["t3", "t4", "t5"]


def test_bad_data_exits_2_with_file_and_line(kinds, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "ok"}\nnot json\n')
    with pytest.raises(CommandError) as err:
        run("train", "fake", "--data", str(bad))
    assert err.value.returncode == 2 and f"{bad}:2:" in str(err.value)
    with pytest.raises(CommandError) as err:
        run("train", "nope", "--data", str(bad))
    assert err.value.returncode == 2 and "unknown trainer kind" in str(err.value)
    with pytest.raises(CommandError) as err:
        run("train", "fake", "--data", str(tmp_path / "missing.jsonl"))
    assert err.value.returncode == 2 and "missing.jsonl:0: no such file" in str(err.value)
    with pytest.raises(CommandError) as err:
        run("train", "fake", "--data", str(bad), "--project", "no-such")
    assert err.value.returncode == 2
    assert ModelVersion.objects.count() == 0


def test_models_list_activate_rollback(kinds, tmp_path):
    data = write_appf(tmp_path / "appf.jsonl", SENTENCES)
    first = json.loads(run("train", "ranker", "--data", str(data), "--json"))["version"]  # 0.4, activated
    second = json.loads(run("train", "ranker", "--data", str(data), "--json"))["version"]  # 0.6, better
    listing = json.loads(run("models", "list", "--json"))
    assert [(r["id"], r["active"]) for r in listing] == [(first, False), (second, True)]
    assert "ranker" in run("models", "list")
    assert f"version {first} is the active" in run("models", "activate", str(first))
    assert registry.active_version("ranker").pk == first
    run("models", "activate", str(second))
    assert f"version {first} is the active" in run("models", "rollback", "ranker")
    with pytest.raises(CommandError) as err:
        run("models", "rollback", "ranker")
    assert err.value.returncode == 2
    with pytest.raises(CommandError):
        run("models", "activate", "999999")
    assert "fake" in run("models", "kinds")


def test_metrics_page_is_staff_only_and_charts_versions(kinds, tmp_path, client, staff_user, django_user_model):
    data = write_appf(tmp_path / "appf.jsonl", SENTENCES)
    ids = [json.loads(run("train", "ranker", "--data", str(data), "--json"))["version"] for _ in range(3)]
    assert client.get("/ml/models/").status_code == 302  # anonymous -> login
    django_user_model.objects.create_user("crowd", "c@example.org", "pw-crowd-123")
    client.login(username="crowd", password="pw-crowd-123")
    assert client.get("/ml/models/").status_code == 403
    client.login(username="expert", password="pw-expert-123")
    page = client.get("/ml/models/").content.decode()
    assert "<svg" in page and "dev ndcg" in page
    for pk in ids:
        assert f'data-version="{pk}"' in page
    assert 'class="active-version" data-version="%d"' % ids[1] in page  # 0.4, 0.6 (active), 0.5 not better
    csv_text = client.get("/ml/models/?format=csv").content.decode()
    assert csv_text.count("\n") == 4 and "ranker" in csv_text
    detail = client.get(f"/ml/models/{ids[2]}/").content.decode()
    assert "ndcg" in detail and "activate" in detail
    assert client.post(f"/ml/models/{ids[2]}/activate/").status_code == 302
    assert registry.active_version("ranker").pk == ids[2]
    assert client.post("/ml/models/rollback/", {"kind": "ranker", "project": "-"}).status_code == 302
    assert registry.active_version("ranker").pk == ids[1]
    failed = ModelVersion.objects.create(kind="ranker", status="failed", error="boom")
    assert client.post(f"/ml/models/{failed.pk}/activate/").status_code == 400
