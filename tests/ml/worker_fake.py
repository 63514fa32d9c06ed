"""Imported by test workers (``celery worker --include tests.ml.worker_fake``): registers the ``fake_worker`` kind."""

from tests.ml.fakes import register_fake

register_fake("fake_worker")
