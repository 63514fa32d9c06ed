"""ValNov defaults that predict both classes of each head (issue 23).

On the shared task's training set novel conclusions are the rare class and the paper's recipe (uniform class
weights, threshold 0.5) ends with a novelty head that never says "novel". The planted set here has that shape: in
training a quarter of the conclusions are novel (they name a thing the premise does not mention; the others repeat
the premise's thing), half are valid (a weather word); the dev and test rows are balanced. With the default
settings (class-balanced task losses, thresholds calibrated on dev) each head predicts both classes on the test
rows and beats the random baseline; test rows are reported apart and never used for selection.
"""

from __future__ import annotations

import random

import pytest

from ml import registry
from ml.valnov import loss as L
from ml.valnov import score as S

THINGS = (
    "bicycles",
    "libraries",
    "gardens",
    "trains",
    "markets",
    "bridges",
    "museums",
    "schools",
    "parks",
    "buses",
    "hospitals",
    "ferries",
)
WHO = (
    "The city council",
    "Our neighbours",
    "The local school",
    "Many families",
    "The university",
    "Young people",
    "The newspaper",
    "A small village",
)
VALID, INVALID = ("sunny weather", "warm sunshine", "a dry summer"), ("heavy storms", "a cold flood", "thunder")


def planted(n: int, seed: int, *, novel_share: float, split: str) -> list[dict]:
    """``n`` rows; validity alternates (half valid), a ``novel_share`` of the rows are novel."""
    rng = random.Random(seed)
    n_novel = round(n * novel_share)
    novel_ids = set(rng.sample(range(n), n_novel))
    rows = []
    for i in range(n):
        v, nov = i % 2, int(i in novel_ids)
        who = rng.choice(WHO)
        said, other = rng.sample(THINGS, 2)
        thing = other if nov else said
        weather = rng.choice(VALID if v else INVALID)
        rows.append(
            {
                "topic": f"topic {i % 5}",
                "premise": f"{who} talked about {said} for next year.",
                "conclusion": f"{who} expects {weather} for the {thing}.",
                "validity": float(v),
                "novelty": float(nov),
                "weight": 1.0,
                "dataset": "task-internal",
                "synthetic": False,
                "split": split,
            }
        )
    return rows


def data():
    return (
        planted(96, 1, novel_share=0.25, split="train"),
        planted(24, 2, novel_share=0.5, split="dev"),
        planted(40, 3, novel_share=0.5, split="test"),
    )


def train(tmp_path, hp: dict):
    from ml.trainers import valnov as trainer

    rows_train, dev, test = data()
    out = tmp_path / "model"
    out.mkdir(parents=True)
    result = trainer.train(
        registry.TrainRequest(
            kind="valnov",
            rows_train=rows_train,
            rows_dev=dev + test,
            base_model=None,
            seed=3,
            hyperparameters=dict(hp),
            output_dir=out,
        )
    )
    return trainer, result, out


def test_class_weights_balance_a_task():
    w = L.class_weights([1.0, 0.0, 0.0, 0.0, None, 0.5])
    assert w == pytest.approx([2.0, 2 / 3, 2 / 3, 2 / 3, 1.0, 1.0])  # n=4: 4/(2*1), 4/(2*3); unknown / tie: 1
    assert L.class_weights([1.0, 1.0, None]) == [1.0, 1.0, 1.0]  # one class: nothing to balance


def test_calibrated_threshold_maximises_macro_f1():
    gold = [0, 0, 0, 1, 1, None]
    probs = [0.05, 0.1, 0.2, 0.3, 0.4, 0.9]  # all below 0.5: at 0.5 the head says "not" for everyone
    t = S.calibrate_threshold(gold, probs)
    assert 0.2 < t <= 0.3
    assert S.calibrate_threshold([1, 1], [0.2, 0.3]) == 0.5  # one gold class: the default stays


# the test rows' size (40) and the train size keep one run at 96 rows x 3 epochs = 36 steps of MiniLM
SMALL = {"runs": 1, "max_length": 40}


@pytest.mark.slow
def test_default_recipe_predicts_both_classes_of_each_head(tmp_path):
    trainer, result, out = train(tmp_path, SMALL)
    test = result.test_metrics
    assert test is not None and test["n"] == 40 and result.metrics["n"] == 24  # test apart from dev
    predicted = test["predicted_classes"]
    print(
        "\ndefault recipe, test:",
        predicted,
        {k: round(test[k], 3) for k in ("valnov", "validity_f1", "novelty_f1", "random_valnov")},
    )
    assert min(predicted.values()) > 0, predicted  # both classes of each head
    assert test["novelty_f1"] > test["random_novelty_f1"] and test["validity_f1"] > test["random_validity_f1"]
    assert set(result.metrics["thresholds"]) == {"validity", "novelty"}
    # the calibrated thresholds are folded into the saved heads: the loaded model scores the test rows the same at 0.5
    model = trainer.load(out)
    rows_test = data()[2]
    again = trainer.evaluate(model, rows_test)
    assert model.threshold == 0.5
    assert again["predicted_classes"] == predicted and again["valnov"] == pytest.approx(test["valnov"])
    both = trainer.evaluate(model, data()[1] + rows_test)
    assert both["n"] == 24 and both["test"]["n"] == 40


@pytest.mark.slow
def test_paper_recipe_misses_the_rare_novel_class(tmp_path):
    """The old defaults (uniform class weights, threshold 0.5) on the same rows: the novelty head hardly ever says
    "novel" (2 of the 40 test rows, of which 20 are novel, in the run that wrote this; none on the shared task's
    data) -- the failure the defaults above fix."""
    _, result, _ = train(tmp_path, dict(SMALL, class_weighting="none", calibrate=False))
    test = result.test_metrics
    predicted = test["predicted_classes"]
    print("\npaper recipe, test:", predicted)
    assert predicted["novel"] <= 5, predicted  # a quarter at most of the 20 novel rows
    assert set(result.metrics["thresholds"].values()) == {0.5}  # nothing calibrated
