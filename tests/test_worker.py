"""A real celery worker subprocess: ping round trip, a long import with observable progress, gpu routing."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


def test_ping_round_trip_through_broker_and_worker(celery_worker_proc):
    from argora.tasks import ping

    result = ping.delay()
    answer = result.get(timeout=60)
    assert answer["pong"] is True
    assert answer["worker"] == celery_worker_proc.hostname
    assert answer["queue"] == "default"
    assert result.state == "SUCCESS"


def write_ukp_tsv(path, rows: int) -> None:
    labels = ("Argument_for", "Argument_against", "NoArgument")
    topics = ("nuclear energy", "school uniforms", "minimum wage")
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write("topic\tretrievedUrl\tarchivedUrl\tsentenceHash\tsentence\tannotation\tset\n")
        for i in range(rows):
            topic = topics[i % len(topics)]
            f.write(
                f"{topic}\thttps://example.org/{i}\t\th{i:06d}\t"
                f"Generated sentence number {i} about {topic} for the worker progress test.\t"
                f"{labels[i % 3]}\ttrain\n"
            )


def test_import_job_reports_progress_then_success(celery_worker_proc, tmp_path, client, staff_user, django_user_model):
    import time

    from django.db import transaction

    from corpus.models import Sentence
    from corpus.tasks.imports import import_corpus_file

    # 30,000 rows: six written batches, each "writing" report visible until the parser's next report (500 rows
    # later), so a poller slowed by a busy machine still sees one
    rows = 30000
    path = tmp_path / "generated.tsv"
    write_ukp_tsv(path, rows)
    client.force_login(staff_user)

    sent = {}
    transaction.on_commit(
        lambda: sent.update(result=import_corpus_file.delay(str(path), "ukp-tsv", source="worker-test"))
    )
    task_id = sent["result"].id

    progress_seen, progress_page, states = [], None, []
    deadline = time.monotonic() + 180
    while True:
        response = client.get(f"/api/jobs/{task_id}/")
        assert response.status_code == 200
        job = response.json()
        if not states or states[-1] != job["state"]:
            states.append(job["state"])
        if job["state"] == "PROGRESS":
            progress_seen.append(job["progress"])
            if progress_page is None:
                progress_page = client.get(f"/jobs/{task_id}/").content.decode()
        if job["state"] in ("SUCCESS", "FAILURE"):
            break
        assert time.monotonic() < deadline, f"job did not finish; states seen: {states}"
        time.sleep(0.002)

    print("states:", states, "progress:", progress_seen[:1], progress_seen[-1:], len(progress_seen))
    assert job["state"] == "SUCCESS", job
    assert progress_seen, f"no PROGRESS state observed; states seen: {states}"
    meta = progress_seen[0]
    assert set(meta) >= {"done", "total", "description", "percent"}
    assert 0 < meta["done"] <= meta["total"] and meta["total"] >= rows
    assert meta["percent"] == round(100.0 * meta["done"] / meta["total"], 1)
    assert meta["description"]
    assert "PROGRESS" in progress_page
    # The import writes everything in one transaction; its progress goes through the cache, so the
    # writing phase is visible to others while the transaction is still open.
    assert "writing" in {m["description"] for m in progress_seen}, progress_seen

    summary = job["result"]
    assert summary["created"]["sentences"] == rows
    assert summary["created"]["topics"] == 3
    assert Sentence.objects.filter(source="worker-test").count() == rows
    assert sent["result"].get(timeout=10) == summary

    page = client.get(f"/jobs/{task_id}/")
    assert page.status_code == 200
    assert "SUCCESS" in page.content.decode()
    assert client.get("/jobs/").status_code == 403  # every team's jobs: the operator's list
    client.force_login(django_user_model.objects.create_superuser("root", "root@example.org", "pw-root-123"))
    listing = client.get("/jobs/").content.decode()
    assert task_id in listing


def test_job_endpoints_are_for_staff_only(celery_worker_proc, client, django_user_model):
    from argora.tasks import ping

    result = ping.delay()
    result.get(timeout=60)
    assert client.get(f"/api/jobs/{result.id}/").status_code in (401, 403)
    client.force_login(django_user_model.objects.create_user("plain", password="pw-plain-123"))
    assert client.get(f"/api/jobs/{result.id}/").status_code == 403
    assert client.get(f"/jobs/{result.id}/").status_code == 403  # in no team: not the staff side


def test_ml_tasks_route_to_gpu_queue_and_a_gpu_only_worker_runs_them(transactional_db):
    from argora.celery import app
    from argora.tasks import selfcheck
    from tests.worker_utils import start_worker

    with start_worker(queues=("gpu",)) as worker:
        worker_log = worker.log
        # by name only: the ml.tasks.* route in argora/celery.py decides the queue
        by_name = app.send_task("ml.tasks.selfcheck", kwargs={"import_torch": False})
        answer = by_name.get(timeout=120)
        assert answer["queue"] == "gpu" and answer["worker"] == worker.hostname, worker_log()
        assert answer["torch"] is None and answer["ok"] is True

        report = selfcheck.delay().get(timeout=300)  # imports torch in the worker
        assert report["queue"] == "gpu" and report["worker"] == worker.hostname
        assert isinstance(report["torch"], str) and report["torch"]
        assert isinstance(report["cuda"], bool)
        assert report["cuda"] == bool(report["devices"])
