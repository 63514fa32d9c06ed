"""Celery task of generation (issue 37, point 5): ``ml.tasks.generate`` fills one queued run.

An ``ml.tasks.*`` name, so it is routed to the ``gpu`` queue (:mod:`argora.celery`) with late acks and requeue on
worker loss (:func:`argora.celery.gpu_task`): a run whose worker died is delivered again and goes on after its
last stored input. ``argora.celery`` autodiscovers this module (``app.autodiscover_tasks(["ml.generation"])``);
:mod:`ml.generation.runs` sends it.
"""

from __future__ import annotations

from argora.celery import gpu_task
from argora.progress import celery_progress

from . import runs


@gpu_task(name="ml.tasks.generate")
def generate(self, run_id) -> dict:
    """Generate the outputs of run ``run_id`` one input after the other (:func:`ml.generation.runs.execute_run`)."""
    return runs.execute_run(str(run_id), progress=celery_progress(self), task_id=self.request.id or "")
