"""bench/active_learning.py (issue 24): its core runs the three item orders on the same tiny data through the real
allocation and retrain loop and reports each of them (the ratios' values are the bench's to measure, not checked)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from annotation.models import Item, Project, Response

pytestmark = [pytest.mark.slow]

BENCH = Path(__file__).resolve().parents[1] / "bench" / "active_learning.py"
FAST = {
    "from_config": {"hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 32},
    "lr": 3e-3,
    "head_lr": 3e-3,
    "batch_size": 8,
    "max_length": 40,
    "epochs": 2,
    "max_steps": 6,
}


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_active_learning", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.django_db
def test_core_reports_the_three_orders_on_the_same_data(bench, tmp_artifacts):
    pool, test = bench.synthetic_data(18, 20, seed=5)
    lines = []
    result = bench.run(
        pool,
        test,
        seeds=(3,),
        target=1.0,
        r=3,
        items_per_hit=1,
        workers=3,
        noise=0.3,
        retrain_every=6,
        hyperparameters=FAST,
        say=lines.append,
    )

    assert list(result["orders"]) == ["random", "uncertainty", "disagreement"]
    assert set(result["ratios"]) == {"uncertainty / random", "disagreement / random"}
    for ratio in result["ratios"].values():  # one ratio per seed, from that seed's two studies side by side
        assert len(ratio["per_seed"]) == 1
    assert [(r["order"], r["seed"]) for r in result["runs"]] == [("random", 3), ("uncertainty", 3), ("disagreement", 3)]
    for run in result["runs"]:
        project = Project.objects.get(slug=run["project"])
        assert project.task_type == "aspect"
        # the loop's settings are engine keys, beside (not in) the task type's options
        assert project.engine["retrain_every"] == 6 and "retrain_every" not in project.config
        # the same pool in every study; answers went through the allocation: never more than R per item
        assert Item.objects.filter(project=project).count() == len(pool)
        per_item = [Response.objects.filter(item=item).count() for item in Item.objects.filter(project=project)]
        assert max(per_item) <= 3 and sum(per_item) == run["responses"] > 0
        # the retrain loop trained and activated a tagger, scored on the held-out sentences
        assert run["trainings"] >= 1 and run["curve"]
        assert all(0 <= point["f1"] <= 1 and point["labelled"] >= 6 for point in run["curve"])
        assert (run["labels_to_target"] is None) == (run["curve"][-1]["f1"] < 1.0)
    uncertainty = next(r for r in result["runs"] if r["order"] == "uncertainty")
    assert any(note.startswith("least confident first") for note in uncertainty["notes"])  # the model ordered HITs
    disagreement = next(r for r in result["runs"] if r["order"] == "disagreement")
    assert any(note.startswith("most disagreement first") for note in disagreement["notes"])

    table = bench.format_result(result)
    for order in ("random", "uncertainty", "disagreement"):
        assert f"| {order} |" in table
    assert "uncertainty / random" in table and "disagreement / random" in table
    assert any("held-out F1" in line for line in lines)


def test_file_data_reads_a_local_appf_file_and_drops_non_arguments(bench, tmp_path):
    import json

    from ml.data import synthetic_appf

    rows = synthetic_appf(40, seed=2)
    rows[0]["stance"] = "NoArgument"
    path = tmp_path / "appf.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    pool, test = bench.file_data(path, 0.3)
    assert len(pool) + len(test) == 39 and pool and test
    assert {r["text"] for r in pool}.isdisjoint(r["text"] for r in test)
    some = next(r for r in pool + test if r["spans"])
    assert some["text"][some["spans"][0]["begin"] : some["spans"][0]["end"]]
