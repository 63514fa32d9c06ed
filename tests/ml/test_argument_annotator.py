"""An ``argument`` model (issue 21.1) as a model annotator of a sentence_label project: its answers are the
project's own label names, pass the task type's validation and are kept apart from the crowd's; the active model
gives the ``uncertainty`` item order its confidences."""

from __future__ import annotations

import pytest

from annotation import model_annotators as ma
from annotation import selectors, services
from annotation.models import Item, ModelAnswer, Project
from ml import registry, versions
from ml.item_confidence import item_confidence
from tests.ml.test_argument import TINY, planted

pytestmark = [pytest.mark.django_db, pytest.mark.slow]

NAMES = {"pro": "Argument_for", "con": "Argument_against", "none": "NoArgument"}


def test_argument_model_annotates_a_sentence_label_project(tmp_artifacts, django_user_model):
    version = versions.train_version(
        "argument", rows_train=planted(240, 1), rows_dev=planted(48, 2), seed=3, hyperparameters=TINY
    )
    assert version.status == "ready", version.error
    rows = planted(24, 11)
    project = services.create_project(
        name="Args",
        slug="args-model",
        task_type="sentence_label",
        status=Project.Status.ACTIVE,
        assignments_per_item=2,
        items_per_hit=24,
        config={"labels": list(NAMES.values())},
    )
    services.add_items(project, [{"text": r["sentence"], "topic": r["topic"]} for r in rows])
    services.build_hits(project)
    truth = {r["sentence"]: NAMES[r["label"]] for r in rows}

    # before any model answered: the active model's confidence orders the items
    assert item_confidence(project, Item.objects.filter(project=project).values_list("pk", flat=True)) is None
    registry.activate(version)
    conf = item_confidence(project, list(Item.objects.filter(project=project).values_list("pk", flat=True)))
    assert len(conf) == 24 and all(1 / 3 <= c <= 1 for c in conf.values())

    for name in ("ann", "bea"):
        worker = services.worker_for_user(django_user_model.objects.create_user(name, password="pw-12345678"))
        assignment = services.reserve_next_assignment(project, worker)
        items = Item.objects.filter(hit_items__hit=assignment.hit)
        services.submit_assignment(assignment, worker, {str(i.pk): {"label": truth[i.payload["text"]]} for i in items})

    assert [m["version"] for m in ma.catalogue(project)] == [version.pk]
    annotator = ma.create_annotator(project, name="tiny argument", kind="registry", options={"version": version.pk})
    out = ma.run(annotator.pk)
    assert out["answered"] == 24 and out["failures"] == 0, out
    answers = list(ModelAnswer.objects.filter(annotator=annotator).select_related("response", "item"))
    assert {a.response.data["label"] for a in answers} <= set(NAMES.values())  # the project's label names
    assert all(0 < a.confidence <= 1 and a.model_id == f"argument#{version.pk}" for a in answers)
    right = sum(a.response.data["label"] == truth[a.item.payload["text"]] for a in answers)
    assert right >= 20
    assert all(a.response.assignment.status == "model" for a in answers)
    assert selectors.counted_responses(project, include_models=False).count() == 48
    # answered items: the stored confidence of the model's answer
    stored = item_confidence(project, [answers[0].item_id])
    assert stored == {answers[0].item_id: pytest.approx(answers[0].confidence)}
