"""Registry models as model annotators (issue 24): a tiny trained tagger annotates an aspect project and a tiny
ValNov classifier a validity/novelty project, as model workers; their answers go through the task type's
validation, are kept apart from the crowd's, and the agreement dashboard and the CLI show their alt-test."""

from __future__ import annotations

import json
import random
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.urls import reverse

from annotation import model_annotators as ma
from annotation import selectors, services
from annotation.agreement.records import load_responses
from annotation.models import Item, ModelAnswer, Project
from tests.ml.test_taggers import ASPECTS, FILLER, TINY, planted_tagger_rows
from tests.ml.test_valnov_model import planted_rows

pytestmark = pytest.mark.django_db


def _submit_all(project, answers_by_user: dict[str, callable]):
    """Each user reserves the project's one HIT and answers every item with ``answer(item)``."""
    User = get_user_model()
    for name, answer in answers_by_user.items():
        user = User.objects.create_user(name, password="pw-12345678")
        worker = services.worker_for_user(user)
        assignment = services.reserve_next_assignment(project, worker)
        items = Item.objects.filter(hit_items__hit=assignment.hit).order_by("position")
        services.submit_assignment(assignment, worker, {str(i.pk): answer(i) for i in items})


def _aspect_of(item) -> str:
    text = item.payload["text"]
    begin = text.index(" because of ") + len(" because of ")
    aspect = next(a for a in sorted(ASPECTS, key=len, reverse=True) if text[begin:].startswith(a))
    return f"{begin}:{len(aspect)}"


def _aspect_sentences(n: int, seed: int) -> list[dict]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        left = " ".join(rng.choice(FILLER) for _ in range(rng.randint(2, 6)))
        out.append(
            {
                "text": f"{left.capitalize()} because of {rng.choice(ASPECTS)} {rng.choice(FILLER)}.",
                "topic": "nuclear energy",
            }
        )
    return out


def test_registry_tagger_annotates_an_aspect_project_and_the_dashboard_and_cli_show_its_alt_test(
    tmp_artifacts, client, staff_user
):
    from annotation.task_types.aspect.items import build_payload
    from ml.versions import train_version

    version = train_version(
        "tagger",
        rows_train=planted_tagger_rows(160, 1),
        rows_dev=planted_tagger_rows(40, 2),
        seed=3,
        hyperparameters=dict(TINY, epochs=3),
    )
    assert version.status == "ready", version.error
    sentences = _aspect_sentences(32, 5)
    project = services.create_project(
        name="Aspects",
        slug="aspects-models",
        task_type="aspect",
        status=Project.Status.ACTIVE,
        assignments_per_item=3,
        items_per_hit=32,
        config={"free_spans": True},
    )
    services.add_items(project, [build_payload(s["text"], s["topic"]) for s in sentences])
    services.build_hits(project)
    _submit_all(
        project,
        {
            "ann": lambda i: {"aspects": [_aspect_of(i)]},
            "bea": lambda i: {"aspects": [_aspect_of(i)]},
            "cid": lambda i: {"aspects": [_aspect_of(i)]},
        },
    )

    assert [m["version"] for m in ma.catalogue(project)] == [version.pk]
    annotator = ma.create_annotator(project, name="tiny tagger", kind="registry", options={"version": version.pk})
    out = ma.run(annotator.pk)
    assert out["answered"] + out["failures"] >= 32 and out["answered"] >= 28, out
    answer = ModelAnswer.objects.filter(annotator=annotator).select_related("response", "item").first()
    assert answer.model_id == f"tagger#{version.pk}" and 0 < answer.confidence <= 1
    assert answer.response.data["aspects"][0]["text"] in ASPECTS  # the task type's cleaned answer
    assert answer.response.assignment.status == "model"
    assert len(load_responses(project)) == 96 and selectors.counted_responses(project).count() == 96

    [rep] = ma.report(project)
    assert rep["with"]["n_coders"] == 4 and rep["without"]["n_coders"] == 3
    # the humans agree on every unit, so the model's agreement with each of them is its agreement with the majority
    assert rep["majority"]["n"] >= 32 and 0.5 < rep["majority"]["accuracy"] <= 1.0
    assert all(h["accuracy"] == rep["majority"]["accuracy"] for h in rep["per_human"])
    alt = rep["alt_test"]  # 3 humans sharing 30+ instances: a verdict, either way
    assert alt["n_humans"] == alt["n_tested"] == 3 and alt["passed"] is not None and not alt["problems"]
    assert alt["advantage_probability"] == pytest.approx(rep["majority"]["accuracy"])

    client.force_login(staff_user)
    page = client.get(reverse("annotation:agreement", args=[project.slug]))
    html = page.content.decode()
    assert page.status_code == 200 and f'id="model-{annotator.pk}"' in html and "Alt-test" in html
    assert "winning rate" in html and "advantage probability" in html and "human majority" in html
    assert client.get(reverse("annotation:agreement", args=[project.slug]) + "?epsilon=3").status_code == 400

    buf = StringIO()
    call_command("model_annotators", "report", project.slug, "--json", stdout=buf)
    alt = json.loads(buf.getvalue())["models"]["tiny tagger"]["alt_test"]
    assert alt["winning_rate"] == rep["alt_test"]["winning_rate"] and "advantage_probability" in alt


@pytest.mark.slow
def test_registry_classifier_annotates_a_validity_novelty_project(tmp_artifacts):
    from ml.versions import train_version

    version = train_version(
        "valnov",
        rows_train=planted_rows(16, 1),
        rows_dev=planted_rows(8, 2),
        seed=7,
        hyperparameters={"epochs": 1, "max_steps": 2, "runs": 1, "max_length": 24, "eval_every": 1},
    )
    assert version.status == "ready", version.error
    rows = planted_rows(12, 3)
    project = services.create_project(
        name="VN",
        slug="vn-models",
        task_type="validity_novelty",
        status=Project.Status.ACTIVE,
        assignments_per_item=3,
        items_per_hit=12,
    )
    services.add_items_from_rows(
        project, [{"topic": r["topic"], "premise": r["premise"], "conclusion": r["conclusion"]} for r in rows]
    )
    services.build_hits(project)
    truth = {r["conclusion"]: r for r in rows}

    def human(item):
        r = truth[item.payload["conclusion"]]
        return {"validity": "yes" if r["validity"] else "no", "novelty": "yes" if r["novelty"] else "no"}

    _submit_all(project, {"ann": human, "bea": human})
    annotator = ma.create_annotator(project, name="valnov", kind="registry", options={"version": version.pk})
    out = ma.run(annotator.pk)
    assert out["answered"] == 12 and out["failures"] == 0
    data = [a.response.data for a in ModelAnswer.objects.filter(annotator=annotator).select_related("response")]
    assert all(set(d) == {"validity", "novelty"} and {d["validity"], d["novelty"]} <= {"yes", "no"} for d in data)
    [rep] = ma.report(project)
    assert rep["without"]["n_coders"] == 2 and rep["with"]["n_coders"] == 3
    assert rep["alt_test"]["passed"] is None  # two humans: the test says what it needs
    assert any("fewer than 3 humans" in p for p in rep["alt_test"]["problems"])


@pytest.mark.slow
def test_registry_cross_encoder_answers_a_bws_project_with_best_and_worst_pairs(tmp_artifacts):
    """A similarity model (AugSBERT §4) as a BWS annotator: each 4-tuple's pairs scored, best = the highest, worst =
    the lowest; the answers pass the task type's validation and are kept apart from the crowd's."""
    from ml.similarity import models as sim_models
    from ml.versions import train_version
    from tests.annotation.task_types.bws_similarity.helpers import make_project

    rows = [
        {
            "pair_id": f"p{i}",
            "topic": "t",
            "argument1": f"Argument {i} about cost.",
            "score": (i % 5) / 4,
            "argument2": f"Argument {i} about cost." if i % 5 == 4 else f"Something else {i}.",
        }
        for i in range(24)
    ]
    version = train_version(
        "crossencoder",
        rows_train=rows[:16],
        rows_dev=rows[16:],
        seed=1,
        hyperparameters={"max_steps": 2, "max_length": 24},
    )
    assert version.status == "ready", version.error
    project = make_project(pairs=8)
    assert [m["version"] for m in ma.catalogue(project)] == [version.pk]
    annotator = ma.create_annotator(project, name="cross", kind="registry", options={"version": version.pk})
    out = ma.run(annotator.pk)
    items = list(Item.objects.filter(project=project, is_gold=False, is_training=False))
    assert out["answered"] == len(items) and out["failures"] == 0, out
    from ml import registry

    model = registry.load_model(version)
    for answer in ModelAnswer.objects.filter(annotator=annotator).select_related("response", "item")[:5]:
        pairs = answer.item.payload["pairs"]
        scores = sim_models.predict(model, [(p["a"], p["b"]) for p in pairs]).tolist()
        ids = [p["id"] for p in pairs]
        assert answer.response.data == {"best": ids[scores.index(max(scores))], "worst": ids[scores.index(min(scores))]}
        assert answer.model_id == f"crossencoder#{version.pk}" and answer.response.assignment.status == "model"
    assert selectors.counted_responses(project).count() == 0  # kept apart from the crowd


@pytest.mark.slow
def test_registry_argspan_grounds_the_spans_of_a_span_grounding_project(tmp_artifacts):
    """ArgSpan (ArgU §3.1.2) as a span grounding annotator: its spans grounded to the item's KB variables (or Others)
    go through the task type's validation; an answer the task type refuses would be a failure with the raw spans."""
    from annotation.task_types.span_grounding.task_type import token_offsets
    from ml.versions import train_version
    from tests.annotation.task_types.span_grounding.helpers import TOPIC, make_kb
    from tests.annotation.task_types.span_grounding.helpers import make_project as make_span_project
    from tests.ml.test_taggers import planted_span_rows

    version = train_version(
        "argspan",
        rows_train=planted_span_rows(120, 1),
        rows_dev=planted_span_rows(50, 2),
        seed=3,
        hyperparameters=dict(TINY, epochs=3, proj_dim=32),
    )
    assert version.status == "ready", version.error
    _, facts = make_kb(3)
    project = make_span_project(slug="argspan-annotator", items_per_hit=4, assignments_per_item=1)
    variables = [{"id": v.pk, "text": v.text} for v in facts]
    texts = [f"People say that experts say that {facts[i % 3].text} really." for i in range(8)]
    services.add_items(
        project,
        [
            {
                "argument_id": None,
                "text": t,
                "topic": TOPIC,
                "stance": "con",
                "tokens": token_offsets(t),
                "suggestions": [],
                "variables": variables,
            }
            for t in texts
        ],
    )
    services.build_hits(project)
    assert [m["version"] for m in ma.catalogue(project)] == [version.pk]
    annotator = ma.create_annotator(project, name="argspan", kind="registry", options={"version": version.pk})
    out = ma.run(annotator.pk)
    assert out["answered"] + out["failures"] == 8 and out["answered"] >= 1, out
    offered = {v["id"] for v in variables}
    for answer in ModelAnswer.objects.filter(annotator=annotator).select_related("response", "item"):
        text = answer.item.payload["text"]
        for s in answer.response.data["spans"]:
            assert s["variable"] in offered | {None} and s["text"] == text[s["begin"] : s["end"]]
        assert answer.model_id == f"argspan#{version.pk}"
