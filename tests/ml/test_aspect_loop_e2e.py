"""End to end on the demo data: aspect labels submitted through HITs -> the retrain loop enqueued through the broker
-> a real worker trains and activates rankers -> the next aspect HIT's first list comes from the new ranker.

The worker trains a tiny BERT (random weights, the MiniLM tokenizer; ``ARGORA_DEFAULT_ENCODER``) for a few steps
(``ARGORA_TRAINER_HYPERPARAMETERS``): the point is the plumbing, learning is tested in test_rankers.py.
"""

from __future__ import annotations

import json
import time

import pytest

from annotation import services
from annotation.models import Item
from annotation.task_types.aspect.rankers import rank
from corpus.models import Sentence
from ml import rankers, registry
from ml.models import ModelVersion
from tests.worker_utils import start_worker

pytestmark = [pytest.mark.slow, pytest.mark.worker]

N_LABELLED = 25
WAIT_SECONDS = 600  # upper bound for the worker to train two tiny models (not a timing assertion)


@pytest.fixture
def tiny_bert(tmp_path):
    import torch
    from transformers import AutoTokenizer, BertConfig, BertModel

    from ml.encoders import default_encoder_path

    torch.manual_seed(0)
    path = tmp_path / "tiny-bert"
    tokenizer = AutoTokenizer.from_pretrained(default_encoder_path())
    BertModel(
        BertConfig(
            vocab_size=tokenizer.vocab_size,
            hidden_size=32,
            num_hidden_layers=1,
            num_attention_heads=2,
            intermediate_size=64,
            max_position_embeddings=128,
        )
    ).save_pretrained(str(path))
    tokenizer.save_pretrained(str(path))
    return str(path)


def planted_answer(payload: dict) -> dict:
    """A worker's rule: the last single-word candidate offered (first or second list) is the aspect."""
    offered = [c for c in payload["candidates"] + payload["more"] if " " not in c["text"]]
    last = max(offered, key=lambda c: c["begin"])
    return {"aspects": [last["id"]], "no_aspect": False, "not_in_lists": False}


def submit_next(project, worker):
    assignment = services.reserve_next_assignment(project, worker)
    assert assignment is not None
    items = services.assignment_items(assignment)
    services.submit_assignment(assignment, worker, {str(i.pk): planted_answer(i.payload) for i in items})
    return items


def wait_for_active(kind, project, worker_proc):
    deadline = time.monotonic() + WAIT_SECONDS
    while time.monotonic() < deadline:
        version = ModelVersion.objects.filter(kind=kind, project=project, is_active=True).first()
        if version is not None:
            return version
        failed = ModelVersion.objects.filter(kind=kind, project=project, status="failed").first()
        assert failed is None, failed.error
        assert worker_proc.alive(), worker_proc.log()
        time.sleep(0.5)
    raise AssertionError(f"no active {kind} version for the project after {WAIT_SECONDS} s:\n{worker_proc.log()}")


@pytest.mark.django_db(transaction=True)
def test_labels_retrain_activate_and_rank_the_next_hit(tiny_bert, tmp_path, settings, monkeypatch, django_user_model):
    import annotation.task_types.aspect.task_type  # noqa: F401
    from corpus.demo import import_demo_files

    import_demo_files()
    arguments = list(Sentence.objects.select_related("topic").exclude(stance="none").order_by("id"))
    assert len(arguments) >= N_LABELLED + 5
    labelled, later = arguments[:N_LABELLED], arguments[N_LABELLED : N_LABELLED + 5]

    settings.ARGORA_RETRAIN_DEBOUNCE_SECONDS = 1
    project = services.create_project(
        name="Demo aspects",
        slug="demo-aspects-loop",
        task_type="aspect",
        status="active",
        assignments_per_item=1,
        items_per_hit=5,
        config={
            "top_k": 10,
            "top_k_cross_topic": 10,  # later items' topics may be unseen in training
        },
        engine={"retrain_every": N_LABELLED, "retrain_kinds": ["ranker", "span_ranker"]},
    )
    services.add_items_from_rows(project, labelled)
    services.build_hits(project)
    assert {i.payload["ranker"] for i in Item.objects.filter(project=project)} == {"baseline"}

    monkeypatch.setenv("ARGORA_DEFAULT_ENCODER", tiny_bert)
    monkeypatch.setenv("ARGORA_ARTIFACT_ROOT", str(tmp_path / "artifacts"))
    monkeypatch.setenv(
        "ARGORA_TRAINER_HYPERPARAMETERS",
        json.dumps(
            {
                "ranker": {"max_steps": 4, "batch_size": 16, "max_length": 64, "lr": 1e-3},
                "span_ranker": {"max_steps": 4, "batch_size": 4, "max_length": 64, "lr": 1e-3},
            }
        ),
    )
    w1 = services.worker_for_user(django_user_model.objects.create_user("w1"))
    w2 = services.worker_for_user(django_user_model.objects.create_user("w2"))

    with start_worker() as worker_proc:
        try:
            n_hits = N_LABELLED // project.items_per_hit
            for _ in range(n_hits - 1):
                submit_next(project, w1)
            # the receiver enqueues a debounced ml.tasks.maybe_retrain after commit; those checks find fewer than
            # retrain_every labels and skip. Past the debounce window, the last HIT's submission enqueues the one
            # that finds all of them.
            time.sleep(settings.ARGORA_RETRAIN_DEBOUNCE_SECONDS + 0.5)
            submit_next(project, w1)

            span_version = wait_for_active("span_ranker", project, worker_proc)
            ranker_version = wait_for_active("ranker", project, worker_proc)
        except BaseException:
            print(worker_proc.log())
            raise

    for version in (span_version, ranker_version):
        assert version.status == "ready" and version.snapshot_labels == N_LABELLED
        assert version.data_snapshot == f"project:{project.slug}@{N_LABELLED}"
        assert version.metrics["primary_metric"] == "recall@10" and 0 <= version.metrics["primary"] <= 1
        assert version.base_model == tiny_bert

    # new items built after activation are ranked by the project's active span ranker
    services.add_items_from_rows(project, later)
    assert services.build_hits(project) == 1
    items = submit_next(project, w2)
    active = rankers.active_ranker(project)
    assert active.name == f"span_ranker#{span_version.pk}"
    for item in items:
        payload = item.payload
        assert payload["ranker"] == active.name
        from annotation.task_types.aspect.candidates import candidates as make_candidates

        ranked = rank(active, payload["text"], payload["topic"], make_candidates(payload["text"]))[:10]
        assert [c["id"] for c in payload["candidates"]] == [c.id for c, _ in ranked]
        assert [c["score"] for c in payload["candidates"]] == pytest.approx([s for _, s in ranked], abs=1e-5)

    # without an active span ranker the cross-encoder version ranks the next items
    registry.deactivate("span_ranker", project)
    payload = project.get_task_type().build_items(project, later[:1])[0]
    assert payload["ranker"] == f"ranker#{ranker_version.pk}"
