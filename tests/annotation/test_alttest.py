"""The alt-test (annotation.agreement.alttest) and ``manage.py agreement alt-test``.

The published numbers are the ones the reference repository's notebook (nitaytech/AltTest, alt_test_example.ipynb)
prints; they are read from ../shared/alttest/expected.json and the data from ../shared/alttest/<dataset>/ at test
time (never copied into the project).
"""

import io
import json
from pathlib import Path

import numpy as np
import pytest
from django.conf import settings
from django.core.management import call_command
from django.core.management.base import CommandError

from annotation.agreement import AgreementError
from annotation.agreement.alttest import MIN_HUMANS, AltTestInputError, alt_test, benjamini_yekutieli
from argora.errors import FieldError

SHARED = Path(settings.BASE_DIR).parent / "shared" / "alttest"
EXPECTED = json.loads((SHARED / "expected.json").read_text()) if (SHARED / "expected.json").exists() else None
needs_shared = pytest.mark.skipif(EXPECTED is None, reason=f"{SHARED} (the reference's worked examples) is missing")

CASES = [
    (ds, spec["scoring"], spec["epsilon"], llm, exp)
    for ds, spec in (EXPECTED or {"datasets": {}})["datasets"].items()
    for llm, exp in spec["expected"].items()
]


def _load(dataset):
    return (
        json.loads((SHARED / dataset / "human_annotations.json").read_text()),
        json.loads((SHARED / dataset / "llm_annotations.json").read_text()),
    )


@needs_shared
def test_every_published_dataset_is_covered():
    assert {c[0] for c in CASES} == {"framing", "cebab_aspects", "10k_prompts", "cebab_stars"}
    assert len(CASES) == 24


@needs_shared
@pytest.mark.parametrize("dataset,scoring,epsilon,llm,expected", CASES, ids=[f"{c[0]}-{c[3]}" for c in CASES])
def test_reproduces_the_published_numbers(dataset, scoring, epsilon, llm, expected):
    humans, llms = _load(dataset)
    res = alt_test(humans, llms[llm], scoring=scoring, epsilon=epsilon)
    # the notebook prints both numbers with :.2f
    assert f"{res.winning_rate:.2f}" == f"{expected['winning_rate']:.2f}"
    assert f"{res.advantage_probability:.2f}" == f"{expected['advantage_probability']:.2f}"
    assert res.passed is expected["passed"]
    assert res.problems == []
    assert res.n_tested == len(humans) >= MIN_HUMANS
    rejected = [r for r in res.per_annotator if r["rejected"]]
    assert len(rejected) / res.n_tested == res.winning_rate
    # a hypothesis is rejected exactly when its BY-corrected p-value is <= alpha
    for r in res.per_annotator:
        assert r["rejected"] == (r["corrected_p_value"] <= res.alpha)
        assert r["corrected_p_value"] >= r["p_value"]


def _crowd(n_humans=5, n_items=80, p_correct=0.7, labels=("a", "b", "c"), seed=0):
    rng = np.random.default_rng(seed)
    truth = {f"i{k}": labels[rng.integers(len(labels))] for k in range(n_items)}
    humans = {}
    for h in range(n_humans):
        anns = {}
        for i, t in truth.items():
            anns[i] = t if rng.random() < p_correct else rng.choice([x for x in labels if x != t]).item()
        humans[f"h{h}"] = anns
    return truth, humans, rng


def test_a_perfect_model_passes():
    truth, humans, _ = _crowd()
    res = alt_test(humans, truth)
    assert res.passed is True and res.winning_rate == 1.0
    assert res.advantage_probability > 0.9
    assert res.problems == [] and res.n_tested == 5 and res.n_instances == 80


def test_a_random_model_fails():
    truth, humans, rng = _crowd()
    model = {i: rng.choice(["a", "b", "c"]).item() for i in truth}
    res = alt_test(humans, model)
    assert res.passed is False and res.winning_rate == 0.0
    assert res.advantage_probability < 0.6
    assert not any(r["rejected"] for r in res.per_annotator)


def test_epsilon_is_a_handicap_for_the_humans():
    # a model that is as good as one more crowd worker: loses without a margin, wins with a large one
    _truth, humans, _ = _crowd(n_humans=6, n_items=200, seed=3)
    model = humans.pop("h5")
    strict = alt_test(humans, model, epsilon=0.0)
    lenient = alt_test(humans, model, epsilon=0.3)
    assert strict.passed is False and lenient.passed is True
    # the advantage probability does not depend on epsilon
    assert strict.advantage_probability == lenient.advantage_probability


def test_neg_rmse_on_numbers():
    rng = np.random.default_rng(1)
    truth = {f"i{k}": int(rng.integers(1, 6)) for k in range(60)}
    humans = {f"h{h}": {i: int(np.clip(t + rng.integers(-1, 2), 1, 5)) for i, t in truth.items()} for h in range(4)}
    close = alt_test(humans, {i: float(t) for i, t in truth.items()}, scoring="neg_rmse", epsilon=0.1)
    far = alt_test(humans, {i: 6 - t for i, t in truth.items()}, scoring="neg_rmse", epsilon=0.1)
    assert close.passed is True and close.scoring == "neg_rmse"
    assert far.passed is False and far.advantage_probability < close.advantage_probability
    with pytest.raises(AltTestInputError) as exc:
        alt_test({"h0": {"i0": "five"}}, {"i0": 5}, scoring="neg_rmse")
    assert exc.value.field == "humans.h0.i0" and isinstance(exc.value, FieldError)
    assert isinstance(exc.value, AgreementError)


def test_too_few_humans_gives_no_verdict_and_says_why():
    truth, humans, _ = _crowd(n_humans=2)
    res = alt_test(humans, truth)
    assert res.passed is None
    assert any("fewer than 3 humans" in p for p in res.problems)
    json.dumps(res.as_dict(), allow_nan=False)


def test_too_few_shared_instances_gives_no_verdict():
    truth, humans, _ = _crowd(n_humans=4, n_items=100)
    # two annotators saw only 20 items each: left out, leaving 2 tested humans
    for h in ("h2", "h3"):
        humans[h] = dict(list(humans[h].items())[:20])
    res = alt_test(humans, truth)
    assert res.passed is None and res.n_tested == 2
    assert any("only 2 of 4 humans" in p for p in res.problems)
    assert any("annotator h2 has 20 shared instances, fewer than 30" in n for n in res.notes)
    skipped = {r["annotator"]: r for r in res.per_annotator if not r["tested"]}
    assert set(skipped) == {"h2", "h3"} and skipped["h2"]["p_value"] is None
    # with a lower minimum they are tested
    assert alt_test(humans, truth, min_instances=20).n_tested == 4


def test_instances_the_model_or_only_one_human_answered_are_left_out():
    truth, humans, _ = _crowd(n_humans=3, n_items=50)
    humans["h0"]["solo"] = "a"
    model = dict(truth)
    del model["i0"]
    model["i1"] = None  # a missing answer, not a label
    res = alt_test(humans, model)
    assert res.n_instances == 48
    assert {r["n"] for r in res.per_annotator} == {48}


def test_bad_parameters_name_the_field():
    truth, humans, _ = _crowd()
    for kwargs, field in [
        ({"scoring": "f1"}, "scoring"),
        ({"epsilon": 1.5}, "epsilon"),
        ({"epsilon": "x"}, "epsilon"),
        ({"alpha": 0}, "alpha"),
        ({"min_instances": 1}, "min_instances"),
    ]:
        with pytest.raises(AltTestInputError) as exc:
            alt_test(humans, truth, **kwargs)
        assert exc.value.field == field


def test_a_custom_scoring_function():
    truth, humans, _ = _crowd()

    def lenient(pred, anns):  # credit for matching any of the others
        return float(pred in anns)

    res = alt_test(humans, truth, scoring=lenient)
    assert res.scoring == "lenient" and res.passed is not None


def test_benjamini_yekutieli_is_step_up():
    # m = 3, H_3 = 11/6: thresholds k/3 * 0.05 / H_3 = 0.00909, 0.01818, 0.02727. 0.01 is above its own threshold
    # but is rejected because the next p-value (0.012) is below its own: step-up, as in the reference
    rejected, adjusted = benjamini_yekutieli([0.5, 0.012, 0.01], 0.05)
    assert rejected == [False, True, True]
    assert [a <= 0.05 for a in adjusted] == rejected
    assert benjamini_yekutieli([0.02, 0.03, 0.04], 0.05)[0] == [False, False, False]
    # a p-value the t-test could not give is never rejected but still counts
    assert benjamini_yekutieli([float("nan"), 0.0001], 0.05)[0] == [False, True]


# -- the CLI ---------------------------------------------------------------------------------------------------------


def run(*args):
    out = io.StringIO()
    call_command("agreement", "alt-test", *args, stdout=out)
    return out.getvalue()


@needs_shared
@pytest.mark.parametrize("dataset", ["cebab_aspects", "cebab_stars"])
def test_cli_json_on_the_published_data(dataset):
    spec = EXPECTED["datasets"][dataset]
    res = json.loads(
        run(
            "--humans",
            str(SHARED / dataset / "human_annotations.json"),
            "--models",
            str(SHARED / dataset / "llm_annotations.json"),
            "--scoring",
            spec["scoring"],
            "--epsilon",
            str(spec["epsilon"]),
            "--json",
        )
    )
    assert set(res["models"]) == set(spec["expected"])
    for llm, exp in spec["expected"].items():
        got = res["models"][llm]
        assert f"{got['winning_rate']:.2f}" == f"{exp['winning_rate']:.2f}"
        assert f"{got['advantage_probability']:.2f}" == f"{exp['advantage_probability']:.2f}"
        assert got["passed"] is exp["passed"]
    assert (res["scoring"], res["epsilon"], res["alpha"]) == (spec["scoring"], spec["epsilon"], 0.05)


@needs_shared
def test_cli_table_and_a_single_model_file(tmp_path):
    spec = EXPECTED["datasets"]["framing"]
    llms = json.loads((SHARED / "framing" / "llm_annotations.json").read_text())
    one = tmp_path / "mistral.json"
    one.write_text(json.dumps(llms["mistral-v03"]))
    args = [
        "--humans",
        str(SHARED / "framing" / "human_annotations.json"),
        "--models",
        str(one),
        "--epsilon",
        str(spec["epsilon"]),
    ]
    res = json.loads(run(*args, "--json"))
    assert list(res["models"]) == ["mistral"]
    assert res["models"]["mistral"]["passed"] is spec["expected"]["mistral-v03"]["passed"]
    text = run(*args)
    assert "mistral" in text and "FAILED" in text
    assert f"{spec['expected']['mistral-v03']['winning_rate']:.2f}" in text


def test_cli_says_why_there_is_no_verdict(tmp_path):
    truth, humans, _ = _crowd(n_humans=2)
    (tmp_path / "h.json").write_text(json.dumps(humans))
    (tmp_path / "m.json").write_text(json.dumps({"perfect": truth}))
    text = run("--humans", str(tmp_path / "h.json"), "--models", str(tmp_path / "m.json"))
    assert "n/a" in text and "fewer than 3 humans" in text


@pytest.mark.parametrize(
    "humans,models,args,message",
    [
        ("not json", '{"m": {"a": 1}}', [], "h.json:1: not valid JSON"),
        ("[1, 2]", '{"m": {"a": 1}}', [], "h.json: expected a JSON object"),
        ('{"a": [1]}', '{"m": {"a": 1}}', [], "h.json: annotator 'a': expected an object"),
        ('{"a": {"x": 1}}', '{"m": {"x": 1}, "x": 2}', [], "m.json: mixes models"),
        ('{"a": {"x": 1}}', "{}", [], "m.json: expected a JSON object"),
        ('{"a": {"x": "one"}}', '{"x": 1}', ["--scoring", "neg_rmse"], "humans.a.x: neg_rmse needs numbers"),
        ('{"a": {"x": 1}}', '{"x": 1}', ["--epsilon", "-0.1"], "epsilon: must be at least 0"),
    ],
)
def test_cli_bad_input_exits_2(tmp_path, humans, models, args, message):
    (tmp_path / "h.json").write_text(humans)
    (tmp_path / "m.json").write_text(models)
    with pytest.raises(CommandError) as exc:
        run("--humans", str(tmp_path / "h.json"), "--models", str(tmp_path / "m.json"), *args)
    assert exc.value.returncode == 2
    assert message in str(exc.value)


def test_cli_missing_file_exits_2(tmp_path):
    with pytest.raises(CommandError) as exc:
        run("--humans", str(tmp_path / "nope.json"), "--models", str(tmp_path / "nope.json"))
    assert exc.value.returncode == 2 and "nope.json: cannot read" in str(exc.value)
