"""The span_grounding task type: config, item building, validation (JSON + no-JS form shapes), aggregation, gold."""

import pytest

from annotation import services
from annotation.models import GoldItem, Item
from annotation.task_types import ResponseInvalid, get_task_type
from corpus.models import FactVariable, Sentence

from .helpers import FIG7, fig7_payload, fig7_spans, make_kb, make_project, make_sentence, span

pytestmark = pytest.mark.django_db
TT = get_task_type("span_grounding")


def test_config_defaults_and_refusals():
    config = TT.clean_config({})
    assert config["ask_schemes"] is False and config["variables_per_item"] == [2, 5]
    assert config["schemes"][-1] == "Others" and len(config["schemes"]) == 7
    for bad, field in [
        ({"ask_schemes": "yes"}, "ask_schemes"),
        ({"schemes": []}, "schemes"),
        ({"variables_per_item": [3, 2]}, "variables_per_item"),
        ({"variables_per_item": [1, 6]}, "variables_per_item"),
    ]:
        with pytest.raises(ResponseInvalid) as exc:
            TT.clean_config(bad)
        assert exc.value.field == field


def test_build_items_choose_2_to_5_active_variables_seeded():
    topic, facts = make_kb(8)
    pending = FactVariable.objects.create(
        topic=topic, text="pending one", content_hash="p1", status=FactVariable.Status.PENDING
    )
    make_kb(3, "Abortion")
    project = make_project()
    sentences = [make_sentence(topic, f"The death penalty argument number {i} is strong.") for i in range(20)]
    sentences.append(
        make_sentence(
            topic,
            FIG7,
            scheme="From Source Authority",
            variables=[facts[7].pk],
            spans=[{"begin": 0, "end": 14, "variable": facts[7].pk}],
        )
    )
    payloads = TT.build_items(project, Sentence.objects.filter(topic=topic).order_by("id"))
    active = {f.pk for f in facts}
    sizes = set()
    for p, s in zip(payloads, sentences):
        ids = [v["id"] for v in p["variables"]]
        assert 2 <= len(ids) <= 5 and len(set(ids)) == len(ids) and set(ids) <= active and pending.pk not in ids
        assert p["argument_id"] == s.pk and p["text"] == s.text and p["topic"] == "Death penalty"
        assert p["stance"] == "con" and p["tokens"][0] == [0, len(s.text.split()[0])]
        sizes.add(len(ids))
    assert len(sizes) > 1  # the number varies between items
    last = payloads[-1]
    assert facts[7].pk in [v["id"] for v in last["variables"]]  # the sentence's own variable is offered
    assert last["scheme"] == "From Source Authority"
    assert last["suggestions"] == [{"begin": 0, "end": 14, "variable": facts[7].pk, "source": "silver"}]
    again = TT.build_items(project, Sentence.objects.filter(topic=topic).order_by("id"))
    assert again == payloads  # seeded: a rebuild offers the same variables in the same order
    other = TT.build_items(make_project("spans2", config={"seed": 7}), Sentence.objects.filter(topic=topic))
    assert [p["variables"] for p in other] != [p["variables"] for p in payloads]


def test_build_items_refuses_topic_without_enough_variables():
    topic, _ = make_kb(1)
    make_sentence(topic, "A lonely argument.")
    with pytest.raises(services.ProjectInvalid) as exc:
        services.add_items_from_rows(make_project(), Sentence.objects.all())
    assert exc.value.field == "variables" and Item.objects.count() == 0


@pytest.fixture
def fig7_item():
    _, facts = make_kb(3)
    project = make_project(config={"ask_schemes": True})
    payload = fig7_payload(facts)
    payload["suggestions"] = [{"begin": 0, "end": 14, "variable": facts[0].pk, "source": "model:v1"}]
    (item,) = services.add_items(project, [payload])
    return project, item, facts


def test_validate_json_and_form_shapes(fig7_item):
    project, item, facts = fig7_item
    a, b = facts[0].pk, facts[1].pk
    json_data = {
        "spans": [
            span(FIG7, "effects of the DP on crime", b) | {"from_suggestion": False},
            span(FIG7, "Criminologists", a) | {"from_suggestion": True},
        ],
        "schemes": ["From Consequence"],
    }
    cleaned = TT.validate_response(project, item, json_data)
    assert cleaned == {
        "spans": [
            {"begin": 0, "end": 14, "variable": a, "from_suggestion": True, "text": "Criminologists"},
            {"begin": 33, "end": 59, "variable": b, "from_suggestion": False, "text": "effects of the DP on crime"},
        ],
        "schemes": ["From Consequence"],
    }
    form = {"spans": [f"33:59:{b}", f"0:14:{a}"], "suggested": ["0:14"], "schemes": ["From Consequence"]}
    assert TT.validate_response(project, item, form) == cleaned
    others = TT.validate_response(project, item, {"spans": ["0:14:other"], "schemes": []})
    assert others == {
        "spans": [{"begin": 0, "end": 14, "variable": None, "from_suggestion": False, "text": "Criminologists"}],
        "schemes": [],
    }
    # no factual span; the suggestion left undecided (no decision sent)
    assert TT.validate_response(project, item, {}) == {"spans": [], "schemes": []}
    # a claimed suggestion that is not one is not recorded as taken from a suggestion
    assert (
        TT.validate_response(
            project, item, {"spans": [{"begin": 33, "end": 59, "variable": b, "from_suggestion": True}]}
        )["spans"][0]["from_suggestion"]
        is False
    )


@pytest.mark.parametrize(
    "data,field,needle",
    [
        ({"spans": ["0:13:other"]}, "spans", "token boundary"),
        ({"spans": ["1:14:other"]}, "spans", "token boundary"),
        ({"spans": ["0:500:other"]}, "spans", "outside"),
        ({"spans": ["-1:14:other"]}, "spans", "outside"),
        ({"spans": ["14:14:other"]}, "spans", "empty"),
        ({"spans": ["0:28:other", "15:23:other"]}, "spans", "spans overlap"),
        ({"spans": ["0:14:other", "0:14:other"]}, "spans", "spans overlap"),
        ({"spans": ["0:14:999999"]}, "variable", "not offered"),
        ({"spans": ["0:14:abc"]}, "variable", "not a variable"),
        ({"spans": ["garbage"]}, "spans", "begin:end"),
        ({"schemes": ["Appeal to pity"]}, "schemes", "unknown scheme"),
        ({"label": "x"}, "label", "unknown field"),
    ],
)
def test_validate_refusals(fig7_item, data, field, needle):
    project, item, _ = fig7_item
    with pytest.raises(ResponseInvalid) as exc:
        TT.validate_response(project, item, data)
    assert exc.value.field == field and needle in exc.value.reason


def test_schemes_refused_when_not_asked(fig7_item):
    _, item, _facts = fig7_item
    project = make_project("noschemes")
    with pytest.raises(ResponseInvalid) as exc:
        TT.validate_response(project, item, {"spans": [], "schemes": ["From Consequence"]})
    assert exc.value.field == "schemes"
    assert TT.validate_response(project, item, {"spans": []}) == {"spans": []}


def test_aggregate_token_majority_and_schemes(fig7_item):
    project, item, facts = fig7_item
    human, model = fig7_spans(*(f.pk for f in facts))
    responses = [
        {"spans": human, "schemes": ["From Consequence"]},
        {"spans": model, "schemes": ["Others"]},
        {"spans": human, "schemes": ["From Consequence", "Others"]},
    ]
    agg = TT.aggregate(project, item, responses)
    assert [(s["text"], s["variable"]) for s in agg["spans"]] == [
        ("Criminologists", facts[0].pk),
        ("effects of the DP on crime", facts[1].pk),
        ("DP does not deter crime", facts[2].pk),
    ]
    assert agg["schemes"]["schemes"] == ["From Consequence", "Others"] and agg["n"] == 3
    assert TT.aggregate(project, item, [])["spans"] == []
    # two annotators: a token needs both (strict majority of 2)
    two = TT.aggregate(project, item, responses[:2])
    assert [s["text"] for s in two["spans"]] == ["Criminologists", "the DP on crime", "DP does not deter crime"]
    assert two["spans"][0]["variable"] == facts[0].pk  # 1-1 tie: the first offered variable


def test_score_gold_uses_figure7_metrics(fig7_item):
    project, item, facts = fig7_item
    human, model = fig7_spans(*(f.pk for f in facts))
    gold_payload = dict(item.payload)
    services.add_items(project, [], gold=[{"payload": gold_payload, "expected": {"spans": human, "schemes": []}}])
    gold = GoldItem.objects.get()
    got = TT.validate_response(project, gold.item, {"spans": model, "schemes": []})
    assert TT.score_gold(project, gold, got) == pytest.approx((20 / 23 + 2 / 3) / 2)
    assert TT.score_gold(project, gold, TT.validate_response(project, gold.item, {"spans": human})) == 1.0
    gold.expected = {"spans": [], "schemes": []}
    assert TT.score_gold(project, gold, {"spans": []}) == 1.0 and TT.score_gold(project, gold, got) == 0.0


def test_export_row_and_reliability(fig7_item):
    project, item, facts = fig7_item
    human, model = fig7_spans(*(f.pk for f in facts))
    row = TT.export_row(project, item, [{"spans": human, "schemes": ["Others"]}])
    assert row["facts"] == [f.text for f in facts] and row["n_annotations"] == 1 and row["schemes"] == ["Others"]
    assert row["span_details"][1]["variable_text"] == facts[1].text
    assert row["spans"] == [[d["begin"], d["end"], d["variable"]] for d in row["span_details"]]
    assert row["argument"] == row["text"] == item.payload["text"]
    rel = TT.reliability_data(
        project,
        [
            {"item_id": item.pk, "coder": "worker:1", "data": {"spans": human}},
            {"item_id": item.pk, "coder": "worker:2", "data": {"spans": model}},
        ],
    )
    assert rel["level"] == "nominal" and rel["coders"] == ["worker:1", "worker:2"]
    n_tokens = len(item.payload["tokens"])
    assert len(rel["units"]) == n_tokens
    first = rel["units"].index(f"{item.pk}:0")
    assert rel["matrix"][0][first] == f"v{facts[0].pk}" and rel["matrix"][1][first] == f"v{facts[1].pk}"
    assert len(rel["unitized"]["spans"]) == 6


# --- model suggestions (model-in-the-loop) ----------------------------------------------------------------------


def test_build_items_give_the_suggestion_hook_the_offered_variables(monkeypatch):
    """The hook (ml.spans.suggest) gets each item's offered variables, so its suggestions arrive grounded: the
    variable ids reach the payload; an id that was not offered becomes Others (null)."""
    import ml.spans

    topic, facts = make_kb(6)
    project = make_project(config={"variables_per_item": [3, 3]})
    texts = ["The death penalty deters crime.", "Executions cost more than life sentences."]
    for t in texts:
        make_sentence(topic, t)
    calls = []

    def fake_suggest(project_arg, texts_arg, variables=None):
        calls.append((project_arg, list(texts_arg), variables))
        return [
            [
                {"begin": 0, "end": 3, "variable": offered[1]["id"], "source": "model:7", "confidence": 0.91234},
                {"begin": 4, "end": 9, "variable": 999999, "source": "model:7"},
            ]
            for offered in variables
        ]

    monkeypatch.setattr(ml.spans, "suggest", fake_suggest)
    payloads = TT.build_items(project, Sentence.objects.filter(topic=topic).order_by("id"))
    [(got_project, got_texts, got_variables)] = calls
    assert got_project == project and got_texts == texts
    assert got_variables == [p["variables"] for p in payloads] and all(len(v) == 3 for v in got_variables)
    for p in payloads:
        assert p["suggestions"] == [
            {"begin": 0, "end": 3, "variable": p["variables"][1]["id"], "source": "model:7", "confidence": 0.9123},
            {"begin": 4, "end": 9, "variable": None, "source": "model:7"},
        ]
    assert {v["id"] for p in payloads for v in p["variables"]} <= {f.pk for f in facts}


@pytest.mark.slow
def test_build_items_with_an_active_tiny_argspan_model_suggest_grounded_spans(tmp_artifacts):
    """End to end through ml.spans.suggest: a tiny ArgSpan trained on planted rows and activated for the project
    suggests the planted span of each argument grounded to the offered KB variable with that text."""
    from ml.registry import activate
    from ml.versions import train_version
    from tests.ml.test_taggers import TINY, VARS, planted_span_rows

    version = train_version(
        "argspan",
        rows_train=planted_span_rows(120, 1),
        rows_dev=planted_span_rows(20, 2),
        seed=3,
        hyperparameters=dict(TINY, epochs=3, proj_dim=32),
    )
    assert version.status == "ready", version.error
    project = make_project(config={"variables_per_item": [3, 3]})
    version.project = project
    version.save(update_fields=["project"])
    assert activate(version)
    topic, _ = make_kb(0, "Nuclear energy")
    facts = {
        text: FactVariable.objects.create(topic=topic, text=text, content_hash=f"v{k}") for k, text in VARS.items()
    }
    wanted = {
        "People say that experts say that energy costs really.": "energy costs",
        "We think it leads to because it leads to nuclear waste some.": "nuclear waste",
    }
    for text, phrase in wanted.items():
        make_sentence(topic, text, variables=[facts[phrase].pk])
    payloads = TT.build_items(project, Sentence.objects.filter(topic=topic).order_by("id"))
    for p in payloads:
        phrase = wanted[p["text"]]
        assert facts[phrase].pk in [v["id"] for v in p["variables"]]
        grounded = [s for s in p["suggestions"] if s["variable"] is not None]
        assert grounded, p["suggestions"]
        assert all(s["source"] == f"model:{version.pk}" for s in p["suggestions"])
        assert {s["variable"] for s in grounded} == {facts[phrase].pk}
        assert phrase in " ".join(p["text"][s["begin"] : s["end"]] for s in grounded)
