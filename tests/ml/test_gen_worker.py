"""Generation on workers (issue 37, point 5): ``POST /api/generate/`` answers with a queued run at once while a real
``celery worker`` writes the outputs; only the run's creator (and superusers) read it; the generation page's
"Train a generator" form queues ``ml.tasks.train`` on a release and activates the model."""

from __future__ import annotations

import json
import os
import time

import pytest
from django.contrib.auth.models import Group
from rest_framework.test import APIClient

from argora.roles import RESEARCHER_GROUP
from corpus.releases import build_release
from ml import registry, splits, versions
from ml.generation import generate as gen
from ml.models import ModelVersion
from tests.ml.test_gen_models import TINY, aspect_rows
from tests.worker_utils import eager_celery, start_worker

TINY_HP = {
    "from_config": TINY,
    "lr": 3e-3,
    "warmup_ratio": 0.0,
    "max_evals": 1,
    "patience": 100,
    "min_args": 2,
    "max_steps": 6,
    "batch_size": 4,
    "block_size": 32,
}
FAST_S = 0.100  # the acceptance figure: the request returns its run id within 100 ms


def researcher(django_user_model, name: str):
    user = django_user_model.objects.create_user(name, f"{name}@example.org", f"pw-{name}-123", is_staff=True)
    user.groups.add(Group.objects.get(name=RESEARCHER_GROUP))
    client = APIClient()
    client.force_authenticate(user)
    return user, client


def wait_done(client, run_id: str, timeout: float = 120.0) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        run = client.get(f"/api/generate/runs/{run_id}/").json()
        if run["status"] in ("done", "failed") or time.monotonic() > deadline:
            return run
        time.sleep(0.1)


@pytest.mark.slow
@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_generate_returns_a_run_at_once_and_a_worker_writes_the_outputs(tmp_path, settings, django_user_model):
    settings.ARTIFACT_ROOT = tmp_path / "artifacts"  # the worker gets the same root through the environment
    os.environ["ARGORA_ARTIFACT_ROOT"] = str(settings.ARTIFACT_ROOT)
    try:
        rows = aspect_rows()
        train, dev = splits.stable_split(rows, key="sentence", dev_fraction=0.2)
        version = versions.train_version("generator", rows_train=train, rows_dev=dev, seed=13, hyperparameters=TINY_HP)
        _user, api = researcher(django_user_model, "writer")
        body = {
            "mode": "arguments",
            "model_version": version.pk,
            "decoding": {"max_new_tokens": 6},
            "inputs": ["nuclear energy|pro|cost", "school uniforms|con|bullying", "nuclear energy|con|safety"],
        }
        with start_worker() as worker:
            # bad input: 400 naming the field, no run stored (so nothing for the worker)
            bad = api.post("/api/generate/", dict(body, inputs=["nuclear energy|maybe|cost"]), format="json")
            assert bad.status_code == 400 and list(bad.json()["errors"]) == ["inputs"]
            assert not gen.runs_root().exists() or not any(gen.runs_root().iterdir())

            warm = api.post("/api/generate/", body, format="json")  # first request: imports, broker connection
            assert warm.status_code == 202, warm.content
            # the fastest of up to three: the request's own cost, not the busy machine's (the worker decodes the
            # warm-up run meanwhile); one request already under FAST_S ends the tries
            took = []
            while len(took) < 3 and not (took and min(took) < FAST_S):
                started = time.perf_counter()
                resp = api.post("/api/generate/", body, format="json")
                took.append(time.perf_counter() - started)
                assert resp.status_code == 202, resp.content
            elapsed = min(took)
            data = resp.json()
            assert elapsed < FAST_S, f"POST /api/generate/ took {elapsed * 1000:.0f} ms"
            assert data["status"] == "queued" and data["url"] == f"/ml/generation/runs/{data['run']}/"
            assert gen.get_run(data["run"])["outputs"] == []  # nothing was decoded in the request

            run = wait_done(api, data["run"])
            assert run["status"] == "done", (run.get("error"), worker.log()[-3000:])
            assert [o["control_code"] for o in run["outputs"]] == [
                "nuclear energy PRO cost",
                "school uniforms CON bullying",
                "nuclear energy CON safety",
            ]
            assert all(o["raw"] for o in run["outputs"]) and run["progress"]["percent"] == 100.0
            assert run["config"]["model"]["kind"] == "generator" and run["task_id"] in run["job"]
            assert wait_done(api, warm.json()["run"])["status"] == "done"
            job = api.get(f"/api/jobs/{run['task_id']}/").json()
            assert job["state"] == "SUCCESS" and job["result"]["url"] == data["url"]

        # the run is its creator's: another researcher gets a 404 (and does not see it listed); a superuser reads it
        _, other = researcher(django_user_model, "other")
        assert other.get(f"/api/generate/runs/{data['run']}/").status_code == 404
        assert other.post(f"/api/generate/runs/{data['run']}/evaluate/").status_code == 404
        assert other.get("/api/generate/runs/").json()["runs"] == []
        root = APIClient()
        root.force_authenticate(django_user_model.objects.create_superuser("root", "r@example.org", "pw-root-123"))
        assert root.get(f"/api/generate/runs/{data['run']}/").json()["outputs"] == run["outputs"]
    finally:
        os.environ.pop("ARGORA_ARTIFACT_ROOT", None)
        registry.clear_model_cache()


@pytest.mark.slow
@pytest.mark.django_db
def test_the_train_form_queues_a_training_job_on_a_release_and_activates_the_model(
    tmp_artifacts, tmp_path, client, staff_user, settings, django_user_model
):
    data = tmp_path / "aspects.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in aspect_rows()), encoding="utf-8")
    release = build_release("tiny-aspects", "1.0", kind="aspect-docs", config={"rows_file": str(data), "min_args": 2})
    client.login(username="expert", password="pw-expert-123")
    page = client.get("/ml/generation/").content.decode()
    assert 'id="train-form"' in page and f'<option value="{release.pk}">tiny-aspects 1.0 (aspect-docs)' in page

    # the wrong kind for the release, or no release: 400 naming the field, nothing trained
    bad = client.post("/ml/generation/train/", {"release": release.pk, "kind": "seq2seq", "size": "tiny"})
    assert bad.status_code == 400 and 'data-field="kind"' in bad.content.decode()
    bad = client.post("/ml/generation/train/", {"release": "", "kind": "generator"})
    assert bad.status_code == 400 and 'data-field="release"' in bad.content.decode()
    bad = client.post("/ml/generation/train/", {"release": release.pk, "kind": "generator", "max_steps": "lots"})
    assert bad.status_code == 400 and 'data-field="max_steps"' in bad.content.decode()
    assert not ModelVersion.objects.exists()

    with eager_celery(settings):  # the training task runs in this process
        resp = client.post(
            "/ml/generation/train/", {"release": release.pk, "kind": "generator", "size": "tiny", "max_steps": "3"}
        )
    assert resp.status_code == 302 and resp.url.startswith("/jobs/")
    version = ModelVersion.objects.get(kind="generator")
    assert version.status == "ready" and version.is_active and version.task_id == resp.url.split("/")[2]
    assert version.hyperparameters["max_steps"] == 3 and version.hyperparameters["from_config"]
    assert version.data_snapshot.endswith("releases/tiny-aspects/1.0/aspect-docs.jsonl")
    assert registry.active_version("generator").pk == version.pk

    # users without the Researcher role cannot train
    django_user_model.objects.create_user("crowd", "c@example.org", "pw-crowd-123")
    client.login(username="crowd", password="pw-crowd-123")
    assert client.post("/ml/generation/train/", {"release": release.pk, "kind": "generator"}).status_code == 403
    assert ModelVersion.objects.count() == 1
