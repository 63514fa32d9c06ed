"""Similarity evaluation and plumbing without training (ml.similarity.evaluation / data / views, the train CLI's
flags): Spearman x 100 and the Jaccard baseline on worked examples, Table 5's mean ± std over seeds on a hand-made
set of versions, the pair reader on the BWS export format with ``FILE:LINE: reason`` errors, ``--strategy`` / ``--k``
refusals (exit 2, nothing written), and the staff page /ml/similarity/."""

from __future__ import annotations

import json
import statistics
from io import StringIO
from types import SimpleNamespace

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from ml.errors import TrainerError
from ml.models import ModelVersion
from ml.similarity import data as D
from ml.similarity import evaluation as E

# --- metrics -----------------------------------------------------------------------------------------


def test_jaccard_and_spearman_on_worked_examples():
    assert E.jaccard("Cloning is wrong.", "cloning is WRONG") == 1.0
    assert E.jaccard("a b c", "b c d") == pytest.approx(2 / 4)
    assert E.jaccard("", "") == 0.0
    assert E.spearman100([0.1, 0.4, 0.3, 0.9], [1, 2, 3, 4]) == pytest.approx(80.0)  # ranks 1 3 2 4: 1 - 6*2/60
    assert E.spearman100([3, 2, 1], [1, 2, 3]) == pytest.approx(-100.0)
    assert E.spearman100([1, 1, 1], [1, 2, 3]) == 0.0  # undefined -> 0
    assert E.spearman100([1], [1]) == 0.0
    rows = [
        {"argument1": "a b", "argument2": "a b", "score": 0.9},  # jaccard 1
        {"argument1": "a b", "argument2": "a c", "score": 0.5},  # 1/3
        {"argument1": "a b", "argument2": "c d", "score": 0.1},
    ]  # 0
    assert E.jaccard_spearman(rows) == pytest.approx(100.0)
    m = E.metrics([0.1, 0.5, 0.9], rows)
    assert m == {"spearman": pytest.approx(-100.0), "jaccard_spearman": pytest.approx(100.0), "n": 3}


# --- Table 5 -----------------------------------------------------------------------------------------


def version(kind, test, *, setting="in-topic", strategy=None, data="d1", jaccard=5.0, mode="in-domain"):
    info = {"setting": setting}
    if strategy:
        info.update(strategy=strategy, k=3, mode=mode)
    return SimpleNamespace(
        kind=kind,
        data_hash=data,
        metrics={
            "dev": {"spearman": test + 1, "jaccard_spearman": jaccard, "n": 10},
            "test": {"spearman": test, "jaccard_spearman": jaccard, "n": 10},
            "info": info,
        },
    )


def test_table5_mean_and_sample_std_over_seeds_by_hand():
    vs = [
        version("augsbert", 60.0, strategy="bm25"),
        version("augsbert", 62.0, strategy="bm25"),
        version("augsbert", 67.0, strategy="bm25"),
        version("biencoder", 58.0),
        version("biencoder", 61.0),
        version("crossencoder", 65.0),
        version("augsbert", 50.0, strategy="kde", setting="cross-topic", data="d2", jaccard=7.0),
        version("augsbert", 54.0, strategy="kde", setting="cross-topic", data="d2", jaccard=7.0),
        version("augsbert", 70.0, strategy="bm25", mode="domain-adaptation"),
        SimpleNamespace(kind="biencoder", data_hash="x", metrics={"dev": {"spearman": 1.0}}),
    ]  # no test part
    t = E.table(vs)
    assert t["settings"] == ["in-topic", "cross-topic"]
    rows = {r["model"]: r["cells"] for r in t["rows"]}
    assert [r["model"] for r in t["rows"]] == [
        "Baseline (Jaccard)",
        "BERT",
        "SBERT",
        "AugSBERT-kde",
        "AugSBERT-bm25",
        "AugSBERT-bm25 (domain adaptation)",
    ]
    bm25 = rows["AugSBERT-bm25"]["in-topic"]
    # mean (60 + 62 + 67) / 3 = 63; sample std sqrt(((-3)^2 + (-1)^2 + 4^2) / 2) = sqrt(13) = 3.61
    assert bm25["mean"] == 63.0 and bm25["std"] == pytest.approx(3.61) and bm25["n"] == 3
    assert bm25["std"] == round(statistics.stdev([60, 62, 67]), 2)
    assert rows["SBERT"]["in-topic"]["mean"] == 59.5 and rows["SBERT"]["in-topic"]["std"] == pytest.approx(2.12)
    assert rows["BERT"]["in-topic"] == {"mean": 65.0, "std": 0.0, "n": 1, "values": [65.0]}
    assert rows["BERT"]["cross-topic"]["mean"] is None and rows["BERT"]["cross-topic"]["n"] == 0
    assert rows["AugSBERT-kde"]["cross-topic"]["mean"] == 52.0
    assert rows["AugSBERT-kde"]["cross-topic"]["std"] == pytest.approx(2.83)
    # the baseline counts each data set once per setting, not once per version
    assert rows["Baseline (Jaccard)"]["in-topic"] == {"mean": 5.0, "std": 0.0, "n": 1, "values": [5.0]}
    assert rows["Baseline (Jaccard)"]["cross-topic"]["mean"] == 7.0
    dev = {r["model"]: r["cells"] for r in E.table(vs, part="dev")["rows"]}
    assert dev["AugSBERT-bm25"]["in-topic"]["mean"] == 64.0
    text = E.format_table(t)
    assert "AugSBERT-bm25 | 63.00 ± 3.61 | —" in text and text.splitlines()[0].startswith("Model | BWS (in-topic)")


# --- the pair reader ---------------------------------------------------------------------------------


def export_line(pid, topic, a, b, score):
    from annotation.task_types.bws_similarity import export

    (row,) = export.rows(
        {pid: {"score": score, "best": 2, "worst": 0, "appearances": 4, "topic": topic}},
        {pid: {"topic": topic, "a": a, "b": b}},
    )
    return json.dumps(row)


def test_reader_takes_the_bws_export_and_cuts_it_in_topic(tmp_path):
    path = tmp_path / "bws.jsonl"
    lines = [export_line(f"p{i}", f"t{i % 2}", f"argument {i} one", f"argument {i} two", i / 40) for i in range(40)]
    path.write_text("\n".join(lines) + "\n\n")
    train, dev = D.rows_from_file(path)
    assert set(train[0]) == {"pair_id", "topic", "argument1", "argument2", "score", "split"}  # counts dropped
    assert {r["split"] for r in train} == {"train"}
    dev_rows, test_rows = D.split_eval(dev)
    assert dev_rows and test_rows and {r["split"] for r in test_rows} == {"test"}
    ids = [r["pair_id"] for r in train + dev]
    assert sorted(ids) == sorted(f"p{i}" for i in range(40)) and len(set(ids)) == 40  # a partition
    assert {r["topic"] for r in test_rows} == {"t0", "t1"}  # in-topic: every topic in every part
    assert D.setting_of(train, test_rows) == "in-topic"


def test_reader_keeps_given_splits_and_accepts_other_key_names(tmp_path):
    path = tmp_path / "s.jsonl"
    rows = [
        {"sentence1": "x", "sentence2": "y", "score": 0.5, "topic": "a", "split": "train"},
        {"argument 1": "x", "argument 2": "z", "score": 1, "topic": "b", "split": "dev"},
        {"argument_1": "y", "argument_2": "z", "score": 0, "topic": "c", "split": "test"},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    train, dev = D.rows_from_file(path)
    assert [(r["argument1"], r["pair_id"]) for r in train] == [("x", "L1")]
    assert [r["split"] for r in dev] == ["dev", "test"]
    assert D.setting_of(train, [dev[1]]) == "cross-topic"


@pytest.mark.parametrize(
    "line, reason",
    [
        ("not json", "invalid JSON: Expecting value (column 1)"),
        ('["a", "b"]', "expected a JSON object, got list"),
        ('{"argument1": "a", "score": 0.5}', "needs non-empty argument1 and argument2"),
        ('{"argument1": "a", "argument2": "b"}', "missing key score"),
        ('{"argument1": "a", "argument2": "b", "score": "high"}', "score must be a number"),
        ('{"argument1": "a", "argument2": "b", "score": 1.5}', "outside [0, 1]"),
        ('{"argument1": "a", "argument2": "b", "score": 0.5, "split": "val"}', "split 'val'"),
    ],
)
def test_reader_names_file_and_line(tmp_path, line, reason):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"argument1": "a", "argument2": "b", "score": 0.5}\n' + line + "\n")
    with pytest.raises(TrainerError) as err:
        D.rows_from_file(path)
    assert str(err.value).startswith(f"{path}:2: ") and reason in str(err.value)


def test_reader_refuses_missing_and_empty_files(tmp_path):
    with pytest.raises(TrainerError, match=r"missing\.jsonl:0: no such file"):
        D.rows_from_file(tmp_path / "missing.jsonl")
    (tmp_path / "empty.jsonl").write_text("\n")
    with pytest.raises(TrainerError, match=r"empty\.jsonl:0: no rows"):
        D.rows_from_file(tmp_path / "empty.jsonl")
    with pytest.raises(TrainerError, match=r":0: a data folder must hold"):
        D.rows_from_file(tmp_path)


def test_cross_topic_split_by_named_topics():
    rows = [
        {"pair_id": f"p{i}", "topic": f"t{i % 4}", "argument1": "a", "argument2": f"b{i}", "score": 0.5}
        for i in range(16)
    ]
    parts = D.split_rows(rows, "cross-topic", topics={"train": ["t0", "t1"], "dev": ["t2"], "test": ["t3"]})
    assert {r["topic"] for r in parts["test"]} == {"t3"} and len(parts["train"]) == 8
    assert D.setting_of(parts["train"], parts["test"]) == "cross-topic"
    with pytest.raises(TrainerError, match="t3"):
        D.split_rows(rows, "cross-topic", topics={"train": ["t0", "t1"], "dev": ["t2"], "test": ["t9"]})


# --- the CLI's flags and bad data (nothing is trained) ------------------------------------------------


def run_cli(*args):
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


@pytest.mark.django_db
def test_train_cli_bad_data_and_bad_flags_exit_2_and_write_nothing(tmp_path, tmp_artifacts):
    bad = tmp_path / "bws.jsonl"
    bad.write_text('{"argument1": "a", "argument2": "b", "score": 0.5}\n{"argument1": "a", "argument2": "b"}\n')
    with pytest.raises(CommandError) as err:
        run_cli("train", "augsbert", "--data", str(bad), "--strategy", "bm25", "--json")
    assert err.value.returncode == 2 and str(err.value) == f"{bad}:2: missing key score"
    good = tmp_path / "ok.jsonl"
    good.write_text('{"argument1": "a", "argument2": "b", "score": 0.5}\n')
    for args, message in [
        (("augsbert", "--strategy", "nearest"), "--strategy: 'nearest' is not one of"),
        (("augsbert", "--k", "0"), "--k: must be >= 1"),
        (("biencoder", "--strategy", "bm25"), "--strategy: only for augsbert"),
        (("ranker", "--k", "3"), "--k: only for augsbert"),
    ]:
        with pytest.raises(CommandError) as err:
            run_cli("train", *args, "--data", str(good))
        assert err.value.returncode == 2 and message in str(err.value), str(err.value)
    assert ModelVersion.objects.count() == 0
    assert not (tmp_artifacts / "models").exists() or not any((tmp_artifacts / "models").iterdir())


def test_strategy_and_k_flags_become_hyperparameters():
    from ml.management.commands.train import sampling_options

    assert sampling_options("augsbert", "BM25+S.S.", 5) == {"strategy": "bm25+semantic", "k": 5}
    assert sampling_options("augsbert", None, None) == {}
    assert sampling_options("ranker", None, None) == {}  # other kinds are untouched without the flags


# --- the staff page ----------------------------------------------------------------------------------


def stored(kind, test, seed, *, strategy=None, data="bws-a", setting="in-topic", status=ModelVersion.Status.READY):
    info = {"setting": setting, "seed": seed, "n_gold": 40}
    if strategy:
        info.update(strategy=strategy, k=3, mode="in-domain", n_silver=120)
    return ModelVersion.objects.create(
        kind=kind,
        seed=seed,
        status=status,
        data_snapshot=data,
        data_hash="h-" + data,
        metrics={
            "dev": {"spearman": test + 2, "jaccard_spearman": 6.0, "n": 20},
            "test": {"spearman": test, "jaccard_spearman": 5.5, "n": 30},
            "primary": test + 2,
            "primary_metric": "spearman",
            "info": info,
        },
    )


@pytest.mark.django_db
def test_results_page_shows_mean_and_std_across_seeds_for_staff_only(client, staff_user, django_user_model):
    url = reverse("ml:similarity-results")
    assert url == "/ml/similarity/"
    for seed, test in [(1, 60.0), (2, 62.0), (3, 67.0)]:
        stored("augsbert", test, seed, strategy="bm25")
    stored("augsbert", 55.0, 1, strategy="random")
    stored("biencoder", 58.0, 1)
    stored("biencoder", 61.0, 2)
    stored("crossencoder", 66.0, 1)
    stored("crossencoder", 10.0, 9, status=ModelVersion.Status.FAILED)  # not counted
    stored("ranker", 99.0, 1)  # another kind: not shown

    response = client.get(url)
    assert response.status_code == 302 and "/login" in response["Location"]
    django_user_model.objects.create_user("worker", "w@example.org", "pw-worker-123")
    client.login(username="worker", password="pw-worker-123")
    assert client.get(url).status_code == 403

    client.force_login(staff_user)
    response = client.get(url)
    assert response.status_code == 200
    html = response.content.decode()
    assert 'data-model="AugSBERT-bm25"' in html and "63.00 ± 3.61" in html  # 3 seeds of the same strategy
    assert "59.50 ± 2.12" in html and "66.00 ± 0.00" in html and "55.00 ± 0.00" in html
    assert "5.50 ± 0.00" in html  # the Jaccard baseline
    assert 'title="3 seed(s)"' in html
    assert "99.00" not in html and "10.00" not in html
    assert html.count('data-kind="augsbert"') == 4 and html.count("data-version=") == 7
    # the best AugSBERT strategy is marked
    assert 'class="num best" data-setting="in-topic" data-mean="63.0"' in html

    data = client.get(url, {"format": "json"}).json()
    rows = {r["model"]: r["cells"]["in-topic"] for r in data["test"]["rows"]}
    assert rows["AugSBERT-bm25"]["mean"] == 63.0 and rows["AugSBERT-bm25"]["n"] == 3
    assert len(data["versions"]) == 7
    filtered = client.get(url, {"data": "other", "format": "json"}).json()
    assert filtered["versions"] == [] and filtered["test"]["rows"] == []


@pytest.mark.django_db
def test_results_page_without_versions(client, staff_user):
    client.force_login(staff_user)
    html = client.get(reverse("ml:similarity-results")).content.decode()
    assert 'id="no-similarity-models"' in html and "No results with test scores yet" in html
