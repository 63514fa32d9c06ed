"""Kind ``argument`` (issue 21.1): topic-dependent argument / stance classification (Stab et al. 2018). Metrics on a
hand-computed example, a tiny model learning a planted signal and beating the majority baseline (in-topic and on
held-out topics), both schemes, rows from UKP TSV / JSONL files with a split column and from a sentence_label
project, and activation only when better."""

from __future__ import annotations

import json
import random

import pytest

from annotation import services
from annotation.models import Item, Project
from ml import errors, loop, registry, versions
from ml.trainers import argument as A

TINY = {
    "from_config": {"hidden_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 64},
    "lr": 3e-3,
    "head_lr": 3e-3,
    "batch_size": 16,
    "max_length": 40,
    "epochs": 4,
}

TOPICS = ["nuclear energy", "school uniforms", "minimum wage", "gun control"]
PRO = ["it helps", "it benefits everyone", "we should support it", "it is good", "it saves lives"]
CON = ["it harms", "it hurts everyone", "we should oppose it", "it is bad", "it costs lives"]
NONE = ["the meeting starts at noon", "the weather was mild", "she read a book", "the train was late"]
FILLER = "today many people say that indeed in fact really".split()


def planted(n: int, seed: int, topics=TOPICS) -> list[dict]:
    """Sentences whose class shows in a fixed phrase: a signal a tiny model learns in a few epochs."""
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        topic = topics[i % len(topics)]
        label = ("pro", "con", "none", "none")[rng.randrange(4)]
        phrase = rng.choice({"pro": PRO, "con": CON, "none": NONE}[label])
        left = " ".join(rng.choice(FILLER) for _ in range(rng.randint(0, 3)))
        text = f"{left} {topic} : {phrase}." if label != "none" else f"{left} {phrase}."
        rows.append({"topic": topic, "sentence": text.strip().capitalize(), "label": label})
    return rows


# --- metrics -------------------------------------------------------------------------------------


def test_metrics_hand_computed_with_both_steps():
    gold = ["pro", "pro", "con", "none", "none", "con"]
    pred = ["pro", "con", "con", "none", "pro", "none"]
    m = A.classification_metrics(gold, pred, stances={"pro": "pro", "con": "con", "none": "none"})
    # pro: tp1 fp1 fn1 -> .5; con: tp1 fp1 fn1 -> .5; none: tp1 fp1 fn1 -> .5
    assert m["f1_pro"] == m["f1_con"] == m["f1_none"] == pytest.approx(0.5)
    assert m["f1_macro"] == pytest.approx(0.5) and m["accuracy"] == pytest.approx(0.5)
    # step 1: arg/no-arg gold [a a a n n a], pred [a a a n a n]: arg tp3 fp1 fn1 -> .75, no-arg tp1 fp1 fn1 -> .5
    assert m["step1_f1_macro"] == pytest.approx((0.75 + 0.5) / 2)
    # step 2 on the 4 gold arguments: gold [p p c c], pred [p c c none]: pro tp1 fn1 -> 2/3; con tp1 fp1 fn1 -> .5
    assert m["step2_f1_macro"] == pytest.approx((2 / 3 + 0.5 + 0.0) / 3) and m["n_arguments"] == 4
    base = A.majority_metrics(
        [{"label": "none"}] * 3 + [{"label": "pro"}],
        [{"label": g} for g in gold],
        {"pro": "pro", "con": "con", "none": "none"},
    )
    assert base["majority_f1_macro"] == pytest.approx((2 * 2 / 8) / 3)  # none: tp2 fp4 -> .5; pro, con 0


def test_stance_classes_and_project_labels():
    from ml.annotators import project_label

    assert A.class_order(["none", "con", "pro"]) == ["pro", "con", "none"]
    assert A.stance_map(["Argument_for", "Argument_against", "NoArgument"]) == {
        "Argument_for": "pro",
        "Argument_against": "con",
        "NoArgument": "none",
    }
    assert A.stance_map(["good", "bad"]) is None
    assert project_label("pro", ["Argument_for", "Argument_against", "NoArgument"]) == "Argument_for"
    assert project_label("none", ["pro", "con", "none"]) == "none"
    assert project_label("maybe", ["pro", "con", "none"]) == "maybe"  # refused later by validation


# --- training ------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.django_db
def test_learns_planted_signal_beats_majority_and_reports_cross_topic(tmp_artifacts):
    rows = planted(240, 1)
    test_rows = [dict(r, split="test") for r in planted(40, 9)]
    version = versions.train_version(
        "argument",
        rows_train=rows,
        rows_dev=planted(48, 2) + test_rows,
        seed=3,
        hyperparameters=dict(TINY, eval="cross-topic"),
    )
    assert version.status == "ready", version.error
    dev, info = version.metrics["dev"], version.metrics["info"]
    assert version.metrics["primary_metric"] == "f1_macro"
    assert dev["f1_macro"] > 0.8 and dev["f1_macro"] > dev["majority_f1_macro"] + 0.3
    assert {"f1_pro", "f1_con", "f1_none", "step1_f1_macro", "step2_f1_macro"} <= set(dev)
    assert version.metrics["test"]["f1_macro"] > version.metrics["test"]["majority_f1_macro"]
    assert version.metrics["test"]["n"] == 40 and dev["n"] == 48  # test rows never scored as dev rows
    # leave-one-topic-out: every topic held out once, a model trained on the others beats the majority there
    per_topic = info["cross_topic"]["per_topic"]
    assert sorted(per_topic) == sorted(TOPICS)
    assert dev["cross_topic_f1_macro"] > dev["cross_topic_majority_f1_macro"] + 0.3
    assert dev["cross_topic_f1_macro"] == pytest.approx(sum(m["f1_macro"] for m in per_topic.values()) / 4)
    assert all(m["f1_macro"] > m["majority_f1_macro"] for m in per_topic.values())

    model = registry.load_model(version)
    [pred] = model.predict([("gun control", "In fact gun control : we should oppose it.")])
    assert pred["label"] == "con" and set(pred["probs"]) == {"pro", "con", "none"}
    assert sum(pred["probs"].values()) == pytest.approx(1.0) and pred["probs"]["con"] == max(pred["probs"].values())
    assert A.evaluate(model, planted(48, 2) + test_rows)["n"] == 48


@pytest.mark.slow
@pytest.mark.django_db
def test_two_step_scheme_and_other_label_sets(tmp_artifacts):
    version = versions.train_version(
        "argument",
        rows_train=planted(200, 4),
        rows_dev=planted(40, 5),
        seed=3,
        hyperparameters=dict(TINY, scheme="two-step"),
    )
    assert version.status == "ready", version.error
    assert version.metrics["dev"]["f1_macro"] > version.metrics["dev"]["majority_f1_macro"]
    [pred] = registry.load_model(version).predict([("nuclear energy", "Nuclear energy : it saves lives.")])
    assert sum(pred["probs"].values()) == pytest.approx(1.0)
    # a project's own labels are the classes; two-step needs stance classes
    relabel = {"pro": "good", "con": "bad", "none": "bad"}
    rows = [dict(r, label=relabel[r["label"]]) for r in planted(60, 6)]
    with pytest.raises(errors.TrainerError, match="two-step needs"):
        versions.train_version(
            "argument",
            rows_train=rows,
            rows_dev=rows[:10],
            seed=3,
            hyperparameters=dict(TINY, scheme="two-step", epochs=1),
        )
    version = versions.train_version(
        "argument", rows_train=rows, rows_dev=rows[:10], seed=3, hyperparameters=dict(TINY, epochs=1)
    )
    assert version.status == "ready" and version.metrics["info"]["labels"] == ["bad", "good"]
    assert "step1_f1_macro" not in version.metrics["dev"]


@pytest.mark.slow
@pytest.mark.django_db
def test_activation_only_if_better(tmp_artifacts):
    good = loop.train_and_activate("argument", rows=(planted(200, 1), planted(40, 2)), seed=3, hyperparameters=TINY)
    assert good["activated"] and good["active"] == good["version"]
    worse = loop.train_and_activate(
        "argument",
        rows=(planted(200, 1), planted(40, 2)),
        seed=3,
        hyperparameters=dict(TINY, epochs=1, max_steps=1, lr=1e-6, head_lr=1e-6),
    )
    assert not worse["activated"] and worse["active"] == good["version"]
    assert worse["compared_with"]["how"] == "re-evaluated on the new dev rows"


# --- rows from files -----------------------------------------------------------------------------

NAMES = {"pro": "Argument_for", "con": "Argument_against", "none": "NoArgument"}
UKP_HEADER = "topic\tretrievedUrl\tarchivedUrl\tsentenceHash\tsentence\tannotation\tset\n"


def test_rows_from_ukp_tsv_keep_every_train_row_and_the_split(tmp_path):
    names = {"pro": "Argument_for", "con": "Argument_against", "none": "NoArgument"}
    sets = ["train"] * 7 + ["val", "test"]
    path = tmp_path / "ukp.tsv"
    with path.open("w") as fh:
        fh.write(UKP_HEADER)
        for i, r in enumerate(planted(27, 3)):
            fh.write(f"{r['topic']}\thttp://x\thttp://y\th{i}\t{r['sentence']}\t{names[r['label']]}\t{sets[i % 9]}\n")
    train, dev = A.rows_from_file(path)
    assert len(train) == 21 and all(r["split"] == "train" for r in train)
    assert sorted(r["split"] for r in dev) == ["dev"] * 3 + ["test"] * 3
    assert {r["label"] for r in train} <= {"pro", "con", "none"} and train[0]["topic"] in TOPICS

    bad = tmp_path / "bad.tsv"
    bad.write_text(UKP_HEADER + "t\tu\ta\th\tA sentence.\tMaybe\ttrain\n")
    with pytest.raises(errors.TrainerError, match=r"bad.tsv:2: unknown annotation"):
        A.rows_from_file(bad)


def test_rows_from_jsonl_with_and_without_a_split(tmp_path):
    rows = planted(30, 4)
    path = tmp_path / "args.jsonl"
    path.write_text(
        "".join(
            json.dumps(
                {
                    "topic": r["topic"],
                    "sentence": r["sentence"],
                    "stance": r["label"],
                    **({"split": "dev"} if i % 5 == 0 else {}),
                }
            )
            + "\n"
            for i, r in enumerate(rows)
        )
    )
    train, dev = A.rows_from_file(path)
    assert len(train) == 24 and len(dev) == 6  # rows without a split are train rows
    plain = tmp_path / "plain.jsonl"
    plain.write_text(
        "".join(json.dumps({"topic": r["topic"], "sentence": r["sentence"], "stance": r["label"]}) + "\n" for r in rows)
    )
    train, dev = A.rows_from_file(plain)
    assert len(train) + len(dev) == 30 and train and dev  # a stable sentence-hash split
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"topic": "t", "sentence": "s", "stance": "pro", "split": "holdout"}) + "\n")
    with pytest.raises(errors.TrainerError, match=r"bad.jsonl:1: unknown split"):
        A.rows_from_file(bad)
    with pytest.raises(errors.TrainerError, match=r"missing.jsonl:0: no such file"):
        A.rows_from_file(tmp_path / "missing.jsonl")


# --- rows from a project + the retrain loop's kind --------------------------------------------------


def labelled_project(django_user_model, rows, engine=None):
    """A sentence_label project with UKP label names, one gold item, and two workers who agree on every item but
    the first (a tie)."""
    project = services.create_project(
        name="Args",
        slug="args",
        task_type="sentence_label",
        status=Project.Status.ACTIVE,
        assignments_per_item=2,
        items_per_hit=len(rows) + 1,
        config={"labels": ["Argument_for", "Argument_against", "NoArgument"]},
        engine=engine,
    )
    names = NAMES
    services.add_items(
        project,
        [{"text": r["sentence"], "topic": r["topic"]} for r in rows],
        gold=[
            {
                "payload": {"text": "Gold sentence : it helps.", "topic": "gun control"},
                "expected": {"label": "Argument_for"},
            }
        ],
    )
    services.build_hits(project)
    truth = {r["sentence"]: names[r["label"]] for r in rows}
    for name, tie in (("ann", False), ("bea", True)):
        worker = services.worker_for_user(django_user_model.objects.create_user(name, password="pw-12345678"))
        assignment = services.reserve_next_assignment(project, worker)
        answers = {}
        for item in Item.objects.filter(hit_items__hit=assignment.hit):
            label = truth.get(item.payload["text"], "Argument_for")
            if tie and item.payload["text"] == rows[0]["sentence"]:  # one item the two disagree on: a tie
                label = next(v for v in names.values() if v != label)
            answers[str(item.pk)] = {"label": label}
        services.submit_assignment(assignment, worker, answers)
    return project


@pytest.mark.django_db
def test_rows_from_a_sentence_label_project(django_user_model):
    rows = planted(12, 7)
    names = set(NAMES.values())
    project = labelled_project(django_user_model, rows)
    train, dev, n = A.rows_from_project(project)
    got = train + dev
    assert n == len(got) == 12  # 11 agreed items + the gold item; the tie is left out
    assert {r["label"] for r in got} <= names
    assert rows[0]["sentence"] not in {r["sentence"] for r in got}
    assert {"sentence": "Gold sentence : it helps.", "label": "Argument_for"}.items() <= next(
        r for r in got if r["sentence"].startswith("Gold")
    ).items()
    assert loop.retrain_kinds(project) == ["argument"]
    assert loop.rows_from_project("argument", project)[2] == 12


@pytest.mark.slow
@pytest.mark.django_db
def test_the_retrain_loop_trains_argument_when_a_projects_labels_grow(django_user_model, tmp_artifacts, monkeypatch):
    monkeypatch.setenv("ARGORA_TRAINER_HYPERPARAMETERS", json.dumps({"argument": TINY}))  # tiny model, no download
    project = labelled_project(django_user_model, planted(40, 8), engine={"retrain_every": 10})
    [outcome] = loop.maybe_retrain(project)
    assert outcome["kind"] == "argument" and outcome["labels"] == 40 and outcome["activated"], outcome
    version = registry.active_version("argument", project, exact=True)
    assert version.pk == outcome["version"] and version.snapshot_labels == 40
    assert set(version.metrics["info"]["labels"]) <= set(NAMES.values())
    [again] = loop.maybe_retrain(project)  # no new labels: nothing trained
    assert "skipped" in again and again["new"] == 0


@pytest.mark.django_db
def test_train_cli_reports_each_held_out_topic(tmp_path, tmp_artifacts):
    from io import StringIO

    from django.core.management import call_command

    names = {"pro": "Argument_for", "con": "Argument_against", "none": "NoArgument"}
    path = tmp_path / "ukp.tsv"
    with path.open("w") as fh:
        fh.write(UKP_HEADER)
        for i, r in enumerate(planted(160, 5, topics=TOPICS[:3])):
            fh.write(
                f"{r['topic']}\thttp://x\thttp://y\th{i}\t{r['sentence']}\t{names[r['label']]}\t"
                f"{'train' if i % 5 else 'val'}\n"
            )
    out = StringIO()
    call_command(
        "train",
        "argument",
        "--data",
        str(path),
        "--eval",
        "cross-topic",
        *[a for k, v in TINY.items() for a in ("--hp", f"{k}={json.dumps(v)}")],
        stdout=out,
    )
    text = out.getvalue()
    assert "cross-topic macro F1" in text and "in-topic macro F1" in text
    assert [line.split(":")[0].strip() for line in text.splitlines() if "held out" in line] == [
        f"held out {t}" for t in sorted(TOPICS[:3])
    ]
