"""ValNov classifier (issue 11.4/11.6): the ValNov score on a hand-computed confusion, the weighted multi-task loss
with unknown labels, rows and weights from the shared-task files, the trained classifier beating the majority
baseline on a planted signal, and ``manage.py train valnov --data FILE --json``."""

from __future__ import annotations

import csv
import json
import math
import random
from io import StringIO

import pytest
import torch
from django.core.management import call_command

from ml import errors, registry
from ml.valnov import data as D
from ml.valnov.loss import per_instance_loss, targets_tensor, valnov_loss
from ml.valnov.score import (
    NOT_VALID_NOT_NOVEL,
    NOT_VALID_NOVEL,
    VALID_NOT_NOVEL,
    VALID_NOVEL,
    majority_baseline,
    valnov_scores,
)

HEADER = ["topic", "Premise", "Conclusion", "Validity", "Validity-Confidence", "Novelty", "Novelty-Confidence"]


# --- the ValNov score (Eq. 3) ------------------------------------------------------------------------
def test_valnov_score_on_a_hand_computed_confusion():
    gold_v = [1, 1, 1, 0, 0, 0, 1, 0]
    gold_n = [1, 0, 0, 1, 0, 0, 0, 1]
    pred_v = [0.9, 0.8, 0.2, 0.1, 0.4, 0.7, 0.6, 0.5]  # >= 0.5 is valid
    pred_n = [0.7, 0.1, 0.3, 0.9, 0.5, 0.2, 0.0, 0.4]
    s = valnov_scores(gold_v, gold_n, pred_v, pred_n)
    # gold:  VN  VnN  VnN  nVN  nVnN nVnN VnN nVN
    # pred:  VN  VnN  nVnN nVN  nVN  VnN  VnN VnN
    assert s["f1"][VALID_NOVEL] == pytest.approx(1.0)  # tp 1
    assert s["f1"][VALID_NOT_NOVEL] == pytest.approx(4 / 7)  # tp 2, fp 2, fn 1
    assert s["f1"][NOT_VALID_NOVEL] == pytest.approx(0.5)  # tp 1, fp 1, fn 1
    assert s["f1"][NOT_VALID_NOT_NOVEL] == pytest.approx(0.0)  # tp 0, fp 1, fn 2
    assert s["valnov"] == pytest.approx((1 + 4 / 7 + 0.5 + 0) / 4)
    assert s["validity_f1"] == pytest.approx((2 / 3 + 4 / 7) / 2)  # valid: tp 3 fp 2 fn 1; not: tp 2 fp 1 fn 2
    assert s["novelty_f1"] == pytest.approx((2 / 3 + 0.8) / 2)  # novel: tp 2 fp 1 fn 1; not: tp 4 fp 1 fn 1
    assert s["confusion"][VALID_NOT_NOVEL] == {
        VALID_NOVEL: 0,
        VALID_NOT_NOVEL: 2,
        NOT_VALID_NOVEL: 0,
        NOT_VALID_NOT_NOVEL: 1,
    }
    assert s["n"] == 8


def test_valnov_score_leaves_unknown_gold_out():
    # the third instance's validity is unknown: out of the four classes and of the validity F1, in the novelty F1
    s = valnov_scores([1, 0, None, -1], [1, 0, 1, 0.5], [1, 0, 0, 0], [1, 0, 0, 1])
    assert s["n"] == 2 and s["n_validity"] == 3 and s["n_novelty"] == 3
    assert s["f1"][VALID_NOVEL] == 1.0 and s["f1"][NOT_VALID_NOT_NOVEL] == 1.0
    assert s["valnov"] == pytest.approx(0.5)  # the two absent classes count 0
    assert s["novelty_f1"] == pytest.approx((2 / 3 + 2 / 3) / 2)  # novel: tp1 fn1; not novel: tp1 fp1


def test_majority_baseline():
    train = [{"validity": 1.0, "novelty": 0.0}] * 3 + [{"validity": 0.0, "novelty": 0.0}]
    dev = [{"validity": 1.0, "novelty": 0.0}, {"validity": 0.0, "novelty": 1.0}]
    assert majority_baseline(train, dev)["valnov"] == pytest.approx((2 / 3) / 4)


# --- the loss (Eq. 2) --------------------------------------------------------------------------------
def test_weighted_multitask_loss_ignores_unknown_labels():
    pv = torch.tensor([0.8, 0.3, 0.6], requires_grad=True)
    pn = torch.tensor([0.4, 0.9, 0.5], requires_grad=True)
    tv = targets_tensor([1.0, None, 0.0])
    tn = targets_tensor([0.0, 1.0, None])
    w = torch.tensor([1.0, 2.0, 0.5])
    # row 1: Lval .04, Lnov .16 -> .5*.0064 + .5*.04 + .5*.16 = .1032 (w 1)
    # row 2: validity unknown -> Lval 0 (and the product 0); Lnov .01 -> .005 * w 2 = .01
    # row 3: novelty unknown -> Lnov 0; Lval .36 -> .18 * w .5 = .09
    per = per_instance_loss(pv, pn, tv, tn, w)
    assert per.tolist() == pytest.approx([0.1032, 0.01, 0.09])
    loss = valnov_loss(pv, pn, tv, tn, w)
    assert loss.item() == pytest.approx((0.1032 + 0.01 + 0.09) / 3)
    loss.backward()
    assert pv.grad[1].item() == 0.0 and pn.grad[2].item() == 0.0  # no update from an unknown label
    assert pv.grad[0].item() != 0.0 and pn.grad[1].item() != 0.0
    # other alpha / beta / gamma, no weights: row 1 = 1*.04*.16 + 2*.04 + 3*.16
    per = per_instance_loss(pv.detach(), pn.detach(), tv, tn, alpha=1, beta=2, gamma=3)
    assert per.tolist() == pytest.approx([0.0064 + 0.08 + 0.48, 3 * 0.01, 2 * 0.36])
    assert not math.isnan(valnov_loss(pv, pn, targets_tensor([None] * 3), targets_tensor([None] * 3)).item())


# --- rows and weights --------------------------------------------------------------------------------
def _write_csv(path, rows, extra=()):
    with open(path, "w", encoding="utf-8", newline="") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(HEADER + list(extra))
        w.writerows(rows)


def test_rows_and_weights_from_a_shared_task_file(tmp_path):
    path = tmp_path / "train.csv"
    _write_csv(
        path,
        [
            ["t1", "P one.", "C one", 1, "majority", 1, "majority", "", "", "train"],
            ["t1", "P two.", "C two", -1, "very confident", -1, "majority", "", "", "train"],
            ["t2", "P three.", "C three", 0, "defeasible", 0, "defeasible", "", "", "dev"],
            ["t3", "P four.", "C four", 1, "very confident", -1, "confident", "0.75", "1", "train"],
            ["t4", "P five.", "C five", 1, "very confident", -1, "very confident", "", "", "test"],
        ],
        extra=("Instance-Weight", "Synthetic", "split"),
    )
    train, dev = D.rows_from_file(path)
    assert [r["conclusion"] for r in train] == ["C one", "C two", "C four"]
    assert [r["conclusion"] for r in dev] == ["C three", "C five"]  # test rows ride along, tagged (issue 23)
    assert [r["split"] for r in dev] == ["dev", "test"]
    assert (train[0]["validity"], train[0]["novelty"]) == (1.0, 1.0)
    assert (train[1]["validity"], train[1]["novelty"]) == (0.0, 0.0)
    assert (dev[0]["validity"], dev[0]["novelty"]) == (None, 0.5)  # tie: validity unknown, novelty 1/2
    assert [r["weight"] for r in train] == [1.5, 3.25, 0.75]  # App. A.1: 1.5 and 3.25; the column wins
    assert train[2]["synthetic"] is True
    assert D.effective_weights(train, "uniform") == [1.0, 1.0, 1.0]
    assert D.effective_weights(train, "dataset") == [3.0, 3.0, 1.5]  # task-internal 3, synthetic x 0.5
    assert D.effective_weights(train, "individual") == [1.5, 3.25, 0.75]
    assert D.effective_weights(train, "dataset", dataset_weights={"task-internal": 2}, synthetic_factor=0.25) == [
        2.0,
        2.0,
        0.5,
    ]


def test_rows_without_a_split_go_to_dev_by_topic_and_bad_files_say_where(tmp_path):
    path = tmp_path / "train.jsonl"
    with open(path, "w", encoding="utf-8") as fh:
        for i in range(40):
            fh.write(
                json.dumps(dict(zip(HEADER, [f"topic {i % 10}", f"P {i}.", f"C {i}", 1, "majority", -1, "majority"])))
                + "\n"
            )
    train, dev = D.rows_from_file(path)
    assert train and dev and len(train) + len(dev) == 40
    assert not {r["topic"] for r in train} & {r["topic"] for r in dev}
    bad = tmp_path / "bad.csv"
    _write_csv(bad, [["t", "P", "C", 1, "majority", 1, "majority"], ["t", "", "C", 1, "majority", 1, "majority"]])
    with pytest.raises(errors.TrainerError, match=rf"^{bad}:3: Premise: empty"):
        D.rows_from_file(bad)


# --- training ----------------------------------------------------------------------------------------
VALID_WORDS, INVALID_WORDS = ("sunshine", "sunny weather"), ("thunderstorm", "stormy weather")
NOVEL_WORDS, OLD_WORDS = ("bicycle", "new bicycles"), ("furniture", "old furniture")
FILLER = (
    "the city council",
    "our neighbours",
    "the local school",
    "many families",
    "the university",
    "young people",
    "the newspaper",
    "a small village",
)


def planted_rows(n: int, seed: int, *, labelled_ties: bool = False) -> list[dict]:
    """Validity is planted as weather words, novelty as object words in the conclusion."""
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        v, nov = i % 2, (i // 2) % 2
        who = rng.choice(FILLER)
        vw = rng.choice(VALID_WORDS if v else INVALID_WORDS)
        nw = rng.choice(NOVEL_WORDS if nov else OLD_WORDS)
        rows.append(
            {
                "topic": f"topic {i % 6}",
                "premise": f"{who.capitalize()} talked about the plans for next year.",
                "conclusion": f"{who.capitalize()} expects {vw} and {nw}.",
                "validity": float(v),
                "novelty": float(nov),
                "weight": 1.0,
                "dataset": "task-internal",
                "synthetic": False,
            }
        )
    return rows


@pytest.mark.slow
def test_classifier_learns_a_planted_signal(tmp_path):
    from ml.trainers import valnov as trainer

    train, dev, test = planted_rows(32, 1), planted_rows(12, 2), planted_rows(24, 3)
    train[0] = dict(train[0], validity=None)  # an unknown label is simply not learned from
    out = tmp_path / "model"
    out.mkdir()
    hp = {
        "epochs": 5,
        "lr": 1e-4,
        "head_lr": 3e-3,
        "max_length": 24,
        "runs": 1,
        "patience": 5,
        "eval_every": 1,
        "weighting": "uniform",
    }
    result = trainer.train(
        registry.TrainRequest(
            kind="valnov", rows_train=train, rows_dev=dev, base_model=None, seed=7, hyperparameters=hp, output_dir=out
        )
    )
    assert result.info["seed"] == 7 and result.info["best_step"] <= result.info["steps"]
    model = trainer.load(out)  # the artifact round-trips
    held_out = trainer.evaluate(model, test)
    baseline = majority_baseline(train, test)["valnov"]
    assert baseline == pytest.approx((2 * 6 / (2 * 6 + 18)) / 4)  # one class of four, F1 2*6/(2*6+18+0)
    assert held_out["valnov"] > baseline + 0.3, held_out
    assert held_out["validity_f1"] > 0.75 and held_out["novelty_f1"] > 0.75, held_out


def _write_planted_csv(path, rows):
    _write_csv(
        path,
        [
            [
                r["topic"],
                r["premise"],
                r["conclusion"],
                1 if r["validity"] else -1,
                "very confident",
                1 if r["novelty"] else -1,
                "majority",
            ]
            for r in rows
        ],
    )


@pytest.mark.slow
@pytest.mark.django_db
def test_train_command_json(tmp_path, tmp_artifacts):
    data = tmp_path / "valnov_train.csv"
    _write_planted_csv(data, planted_rows(40, 4))
    out = StringIO()
    call_command(
        "train",
        "valnov",
        "--data",
        str(data),
        "--json",
        "--epochs",
        "1",
        "--hp",
        "max_length=24",
        "--hp",
        "runs=2",
        "--hp",
        "max_steps=2",
        stdout=out,
    )
    outcome = json.loads(out.getvalue())
    assert outcome["kind"] == "valnov" and outcome["status"] == "ready" and outcome["activated"] is True
    metrics = outcome["metrics"]
    assert metrics["primary_metric"] == "valnov"
    assert {"valnov", "validity_f1", "novelty_f1", "f1", "baseline_valnov"} <= set(metrics["dev"])
    runs = metrics["info"]["runs"]  # several runs, the best on dev kept
    assert [r["seed"] for r in runs] == [13, 14]
    assert metrics["dev"]["valnov"] == max(r["valnov"] for r in runs)
    assert metrics["info"]["seed"] == next(r["seed"] for r in runs if r["valnov"] == metrics["dev"]["valnov"])
    from ml.models import ModelVersion

    version = ModelVersion.objects.get(pk=outcome["version"])
    model = registry.load_model(version)
    probs = model.predict([("A premise.", "A conclusion.")])
    assert len(probs) == 1 and all(0.0 <= p <= 1.0 for p in probs[0])
