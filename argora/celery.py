"""The Celery application: two queues, ``default`` and ``gpu``.

Training and model inference run on ``gpu`` (route by decorating with :func:`gpu_task`): late
acknowledgement, so a task whose worker dies is redelivered instead of lost, and prefetch 1 (set in
settings and on the gpu worker's command line), so one long job never holds others hostage.
"""

import os

from celery import Celery, shared_task
from kombu import Queue

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "argora.settings")

app = Celery("argora")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.conf.task_queues = (Queue("default"), Queue("gpu"))
app.conf.task_default_queue = "default"
app.conf.task_routes = {"ml.tasks.*": {"queue": "gpu"}}
app.autodiscover_tasks()
app.autodiscover_tasks(["ml.generation"])  # ml.generation.tasks (ml.tasks.generate): a package, not an app


def gpu_task(*args, **opts):
    """``shared_task`` for training / inference: ``gpu`` queue, late acks, requeue on worker loss."""
    opts.setdefault("queue", "gpu")
    opts.setdefault("acks_late", True)
    opts.setdefault("reject_on_worker_lost", True)
    opts.setdefault("bind", True)
    return shared_task(*args, **opts)
