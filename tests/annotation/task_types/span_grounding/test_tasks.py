"""The normalisation Celery tasks: discoverable through annotation.tasks, on the gpu queue, calling the services."""

import pytest

from corpus.models import FactVariable

from .helpers import make_kb

pytestmark = pytest.mark.django_db


def test_tasks_registered_on_gpu_queue_and_run():
    import annotation.tasks  # noqa: F401  (imports every task type's tasks module, as the worker does)
    from annotation.task_types.span_grounding import tasks
    from argora.celery import app

    assert {"annotation.spans.normalise_pending", "annotation.spans.normalise_project"} <= set(app.tasks)
    assert tasks.normalise_pending_task.name == "annotation.spans.normalise_pending"
    assert tasks.normalise_project_task.queue == "gpu" and tasks.normalise_pending_task.queue == "gpu"
    topic, facts = make_kb(1, "Nuclear energy")
    FactVariable.objects.filter(pk=facts[0].pk).update(text="Nuclear power plants produce radioactive waste.")
    v = FactVariable.objects.create(
        topic=topic,
        text="nuclear power plants produce radioactive waste",
        content_hash="p",
        origin="proposed",
        status="pending",
    )
    result = tasks.normalise_pending_task.apply(args=[topic.pk]).get()
    assert result == {"pending": 1, "merge": 1, "accept": 0}
    v.refresh_from_db()
    assert v.metadata["normalisation"]["into"] == facts[0].pk
