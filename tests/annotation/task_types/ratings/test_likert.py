"""Likert debate ratings: validation, and Table 6 on a small hand-computed set (means, sample SDs, Krippendorff's
alpha ordinal per criterion, checked against annotation.agreement on the same matrix)."""

import math

import pytest

from annotation import agreement
from annotation.agreement.reference import naive_alpha
from annotation.models import Item, Worker
from annotation.task_types.likert_debate import likert
from annotation.task_types.likert_debate.likert import Invalid, clean_response
from annotation.task_types.ratings import results

from .helpers import likert_project, run_worker

# ratings[worker][debate] = (style, content, strategy, overall); debates d1, d2 human, d3, d4 generated ("bart")
RATINGS = {
    "w1": {"d1": (4, 3, 3, 4), "d2": (2, 3, 3, 3), "d3": (1, 2, 1, 1), "d4": (3, 2, 2, 2)},
    "w2": {"d1": (3, 3, 2, 3), "d2": (3, 2, 2, 2), "d3": (2, 2, 2, 2), "d4": (2, 3, 1, 2)},
    "w3": {"d1": (4, 4, 3, 4), "d2": (3, 3, 3, 3), "d3": (1, 1, 1, 1), "d4": (2, 2, 2, 3)},
}


def test_clean_response():
    assert clean_response({"style": "4", "content": 1, "strategy": 2.0, "overall": 3}) == {
        "style": 4,
        "content": 1,
        "strategy": 2,
        "overall": 3,
    }


@pytest.mark.parametrize(
    "bad, field, reason",
    [
        ({"style": 5, "content": 1, "strategy": 2, "overall": 3}, "style", "out of range"),
        ({"style": 0, "content": 1, "strategy": 2, "overall": 3}, "style", "out of range"),
        ({"style": 2, "content": "x", "strategy": 2, "overall": 3}, "content", "out of range"),
        ({"style": 2, "content": 2.5, "strategy": 2, "overall": 3}, "content", "out of range"),
        ({"style": 2, "content": True, "strategy": 2, "overall": 3}, "content", "not a rating"),
        ({"style": 2, "content": 2, "overall": 3}, "strategy", "rate strategy"),
        ({"style": 2, "content": 2, "strategy": 2, "overall": 3, "fluency": 2}, "fluency", "unknown field"),
        ("4", "style", "expected an object"),
    ],
)
def test_clean_response_refuses(bad, field, reason):
    with pytest.raises(Invalid) as exc:
        clean_response(bad)
    assert exc.value.field == field and reason in exc.value.reason


def test_mean_sd():
    assert likert.mean_sd([]) == {"n": 0, "mean": None, "sd": None}
    assert likert.mean_sd([3]) == {"n": 1, "mean": 3.0, "sd": None}
    assert likert.mean_sd([1, 3]) == {"n": 2, "mean": 2.0, "sd": pytest.approx(math.sqrt(2))}


@pytest.mark.django_db
def test_table6_by_hand(tmp_path):
    project = likert_project(tmp_path, assignments_per_item=3, items_per_hit=1)

    def answer_for(name):
        def answer(item, a):
            s, c, t, o = RATINGS[name][item.payload["debate_id"]]
            return {"style": s, "content": c, "strategy": t, "overall": o}

        return answer

    for name in RATINGS:
        w = Worker.objects.create(source="prolific", external_id=name)
        assert len(run_worker(project, w, answer_for(name))) == 4
    res = results.likert_results(project)
    cols = [c["key"] for c in res["table"]["columns"]]
    assert cols == ["human", "generated"]  # one model: no per-model columns
    assert [(c["debates"], c["ratings"]) for c in res["table"]["columns"]] == [(2, 6), (2, 6)]
    rows = {r["criterion"]: dict(zip(cols, r["cells"])) for r in res["table"]["rows"]}
    # human style: 4 3 4 2 3 3 -> mean 19/6, squared deviations sum 17/6, sample SD sqrt(17/30)
    assert rows["style"]["human"]["mean"] == pytest.approx(19 / 6)
    assert rows["style"]["human"]["sd"] == pytest.approx(math.sqrt(17 / 30))
    # generated style: 1 2 1 3 2 2 -> 11/6, SD sqrt(17/30)
    assert rows["style"]["generated"]["mean"] == pytest.approx(11 / 6)
    assert rows["style"]["generated"]["sd"] == pytest.approx(math.sqrt(17 / 30))
    # human overall: 4 3 4 3 2 3 -> 19/6; squares (5/6)^2 (1/6)^2 (5/6)^2 (1/6)^2 (7/6)^2 (1/6)^2 = 102/36 -> /5
    assert rows["overall"]["human"]["mean"] == pytest.approx(19 / 6)
    assert rows["overall"]["human"]["sd"] == pytest.approx(math.sqrt(102 / 36 / 5))
    # generated strategy: 1 2 2 1 1 2 -> 1.5, SD sqrt(1.5 / 5)
    assert rows["strategy"]["generated"]["mean"] == pytest.approx(1.5)
    assert rows["strategy"]["generated"]["sd"] == pytest.approx(math.sqrt(0.3))
    assert rows["content"]["human"]["n"] == 6
    # alpha (ordinal) per criterion = annotation.agreement on the workers x debates matrix
    for k, criterion in enumerate(likert.CRITERIA):
        matrix = [[RATINGS[w][d][k] for d in ("d1", "d2", "d3", "d4")] for w in ("w1", "w2", "w3")]
        want = agreement.krippendorff_alpha(matrix, "ordinal")
        assert res["alpha"][criterion]["alpha"] == pytest.approx(want)
        assert want == pytest.approx(naive_alpha(matrix, "ordinal"))
        assert res["alpha"][criterion]["n_units"] == 4 and res["alpha"][criterion]["n_coders"] == 3
    assert res["alpha"]["style"]["alpha"] > 0.4  # the raters agree that the generated debates are worse
    # the summary CSV carries the same figures
    summary = results.summary_rows(res)
    assert summary[0][:4] == ["criterion", "Human mean", "Human sd", "Human n"]
    style = next(r for r in summary if r[0] == "Style")
    assert style[1:4] == [f"{19 / 6:.3f}", f"{math.sqrt(17 / 30):.3f}", "6"]
    text = results.text_report(res)
    assert "Style" in text and f"{19 / 6:.3f} ± {math.sqrt(17 / 30):.3f}" in text


@pytest.mark.django_db
def test_per_model_columns_and_undefined_alpha(tmp_path):
    from .helpers import debate

    project = likert_project(
        tmp_path,
        rows=[debate(1, "human"), debate(2, "bart"), debate(3, "gpt2")],
        assignments_per_item=1,
        items_per_hit=3,
    )
    w = Worker.objects.create(source="prolific", external_id="solo")
    run_worker(project, w, lambda item, a: {"style": 3, "content": 3, "strategy": 3, "overall": 3})
    res = results.likert_results(project)
    assert [c["title"] for c in res["table"]["columns"]] == ["Human", "Generated", "bart", "gpt2"]
    assert res["table"]["rows"][0]["cells"][1] == {"n": 2, "mean": 3.0, "sd": 0.0}
    assert res["alpha"]["style"]["alpha"] is None and "two ratings" in res["alpha"]["style"]["reason"]
    assert Item.objects.filter(project=project).count() == 3
