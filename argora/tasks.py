"""Platform-level Celery tasks: health checks for the broker, the workers and the ``gpu`` queue.

- ``argora.ping`` (default queue): answers ``{"pong": True, "worker": ..., ...}``. ``run_demo`` and the test
  worker helper send it through the broker and wait for the answer to know that a worker is consuming.
- ``ml.tasks.selfcheck`` (``gpu`` queue, by its ``ml.tasks.*`` name and :func:`argora.celery.gpu_task`):
  the GPU-queue health check. It reports which worker ran it and whether torch is installed and sees CUDA,
  so an operator can check that a machine listening on ``-Q gpu`` is really a GPU machine.
"""

from __future__ import annotations

import os
import platform
import socket

from celery import shared_task

from .celery import gpu_task


def _delivery_queue(request) -> str | None:
    info = getattr(request, "delivery_info", None) or {}
    return info.get("routing_key") or info.get("queue")


@shared_task(bind=True, name="argora.ping")
def ping(self) -> dict:
    """Round trip through broker, worker and result backend."""
    return {
        "pong": True,
        "worker": self.request.hostname or socket.gethostname(),
        "pid": os.getpid(),
        "queue": _delivery_queue(self.request),
        "task_id": self.request.id,
    }


def torch_status(import_torch: bool = True) -> dict:
    """Whether torch is importable and sees CUDA devices (plain function: also used outside Celery)."""
    status: dict = {"torch": None, "cuda": False, "devices": []}
    if not import_torch:
        return status
    try:
        import torch
    except Exception as exc:  # noqa: BLE001 - a broken install is a finding, not a crash
        status["error"] = repr(exc)
        return status
    status["torch"] = torch.__version__
    status["cuda"] = bool(torch.cuda.is_available())
    if status["cuda"]:
        status["devices"] = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    return status


@gpu_task(name="ml.tasks.selfcheck")
def selfcheck(self, import_torch: bool = True) -> dict:
    """GPU-queue health check: which worker took it from which queue, and torch / CUDA availability."""
    return {
        "ok": True,
        "worker": self.request.hostname or socket.gethostname(),
        "pid": os.getpid(),
        "queue": _delivery_queue(self.request),
        "python": platform.python_version(),
        **torch_status(import_torch),
    }
