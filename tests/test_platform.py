import pytest


@pytest.mark.django_db
def test_home_admin_schema_answer(client, admin_user_obj):
    assert client.get("/").status_code == 200
    assert client.get("/healthz").json() == {"ok": True}
    schema = client.get("/api/schema/")
    assert schema.status_code == 200
    assert b"openapi" in schema.content
    assert client.get("/admin/").status_code == 302  # login first
    client.force_login(admin_user_obj)
    assert client.get("/admin/").status_code == 200


def test_gpu_tasks_route_to_gpu_queue_with_late_acks():
    from argora.celery import app, gpu_task

    @gpu_task(name="ml.tasks.test_probe")
    def probe(self):
        return 1

    task = app.tasks["ml.tasks.test_probe"]
    assert task.acks_late is True
    assert task.queue == "gpu"
    assert app.amqp.router.route({}, "ml.tasks.test_probe")["queue"].name == "gpu"
    assert app.amqp.router.route({}, "corpus.tasks.anything")["queue"].name == "default"


def test_celery_progress_is_throttled_but_never_skips_a_phase_or_the_end():
    from types import SimpleNamespace

    from argora.progress import celery_progress, read_progress

    states = []
    task = SimpleNamespace(
        request=SimpleNamespace(id="progress-test-task"),
        update_state=lambda state, meta: states.append((state, meta["description"], meta["done"])),
    )
    report = celery_progress(task, min_interval=60.0)
    report(1, 10, "parsing")
    report(2, 10, "parsing")  # within the interval, same phase: dropped
    report(3, 10, "writing")  # a new phase: reported
    report(4, 10, "writing")  # dropped
    report(10, 10, "writing")  # the end: reported
    assert states == [("PROGRESS", "parsing", 1), ("PROGRESS", "writing", 3), ("PROGRESS", "writing", 10)]
    assert read_progress("progress-test-task")["done"] == 10
